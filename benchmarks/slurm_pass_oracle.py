"""``--policy slurm``'s whole pass against an oracle written from Slurm's source, on windows
of real traces.

The oracle (tests/slurm_pass_oracle.py) is a transcription of Slurm 22.05.8's and 24.11.5's
``_attempt_backfill`` and the node selection's will-run test on plain sets, written apart
from the model.  Each trace is simulated under ``--policy slurm`` (Slurm's defaults, and
``bf_job_part_count_reserve=1``, ``bf_resolution=300,bf_window=240,bf_max_job_test=10``
and ``bf_licenses``, which implies ``bf_running_job_reserve``; each Slurm release's rules);
every ``--every``-th state in
which jobs wait (time, running jobs with their starts, limits and nodes, the queue in
priority order with sizes, limits and licenses) is given to the model (a fresh policy, one
decision) and to the oracle, and the two are compared: the jobs started now, and the start
of every job the backfill pass tested.

    python benchmarks/slurm_pass_oracle.py --jobs 1500 --out benchmarks/results/slurm_pass_oracle

Traces: KTH-SP2 (100 nodes, its first ``--jobs`` jobs), the burst-buffer KTH workload
(96 nodes, each job asking burst buffer as licenses of one pool of 480), LLNL Atlas (1152
nodes, its first ``--jobs`` jobs; lightly loaded) and ALCF Theta 2022 (4,360 nodes, every
10th window of its first 1000 jobs).  Prints one row per trace and setting (windows,
mismatches, the first mismatch) and writes ``OUT/summary.json`` and, for each row with
mismatches, its first windows (``OUT/mismatch_<row>.json``) to rerun by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.slurm_pass_oracle import compare, dump  # noqa: E402

# Slurm's defaults; one reservation; coarse slots, a short window and few jobs tested;
# licenses in the plan (running jobs reserved in it: bf_running_job_reserve)
SETTINGS = {"defaults": {}, "pcr1": {"bf_job_part_count_reserve": 1},
            "tuned": {"bf_resolution": 300, "bf_window": 240, "bf_max_job_test": 10},
            "bflic": {"bf_licenses": True}}


def traces(jobs: int):
    """(name, jobs, system, clock origin, sampling) of each real trace: every window, or
    on Theta (4,360 nodes, a long queue: each window costs more) every 10th of its first
    1000 jobs' windows."""
    import hpcopt
    from hpcopt.datadir import data_path
    from hpcopt.scenario import trace_clock_origin
    from hpcopt.workloads.burst_buffer import load_batsim

    def swf(name):
        return data_path(f"hpc_swf/pwa/{name}", "benchmarks/slurm_pass_oracle.py")

    kth = hpcopt.load_trace(swf("KTH-SP2-1996-2.1-cln.swf.gz"))
    yield "KTH-SP2", kth.jobs[:jobs], kth.system, trace_clock_origin(kth), 1
    bb = load_batsim()
    yield "KTH-bb-licenses", bb.jobs[:jobs], bb.system, trace_clock_origin(bb), 1
    atlas = hpcopt.load_trace(swf("LLNL-Atlas-2006-2.1-cln.swf.gz"))
    yield "Atlas", atlas.jobs[:jobs], atlas.system, trace_clock_origin(atlas), 1
    theta = hpcopt.load_trace(data_path("hpc_swf/alcf/theta_2022.swf.gz",
                                        "benchmarks/slurm_pass_oracle.py"))
    yield "Theta", theta.jobs[:min(jobs, 1000)], theta.system, trace_clock_origin(theta), 10


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=1500, help="jobs of each trace (default 1500)")
    ap.add_argument("--every", type=int, default=1, help="every N-th window (default 1)")
    ap.add_argument("--out", default="benchmarks/results/slurm_pass_oracle")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from hpcopt.errors import HpcoptError

    rows = []
    try:
        runs = list(traces(args.jobs))
    except HpcoptError as e:
        print(f"slurm_pass_oracle.py: {e}", file=sys.stderr)
        return 2
    for name, jobs, system, origin, sampling in runs:
        for version in ("22.05", "24.11"):
            for setting, params in SETTINGS.items():
                conf = {"version": version, **params}
                t0 = time.perf_counter()
                windows = dump(jobs, system, conf, origin, every=args.every * sampling)
                bad = [(w, d) for w in windows if (d := compare(w, conf))]
                row = {"trace": name, "nodes": system.nodes, "licenses": system.bb,
                       "jobs": len(jobs), "slurm": version, "setting": setting,
                       "windows": len(windows), "mismatches": len(bad),
                       "first": bad[0][1] if bad else "",
                       "seconds": round(time.perf_counter() - t0, 1)}
                rows.append(row)
                print(json.dumps(row), flush=True)
                if bad:
                    key = f"{name}_{version}_{setting}"
                    (out / f"mismatch_{key}.json").write_text(
                        json.dumps({"conf": conf, "windows": [w for w, _ in bad[:20]]}))
    (out / "summary.json").write_text(json.dumps(rows, indent=1))
    total = sum(r["windows"] for r in rows)
    print(f"{total} windows, {sum(r['mismatches'] for r in rows)} mismatches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
