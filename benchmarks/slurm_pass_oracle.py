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

``--shared``: the same on partitions that share nodes core by core (each job ``sbatch -n
K``: K one-core tasks; the oracle compares also each started job's cores per node), and
writes ``OUT/summary_shared.json``:

    python benchmarks/slurm_pass_oracle.py --shared --jobs 3000 \
        --out benchmarks/results/slurm_pass_oracle

Shared-core traces: the testbed's shared-core replays (benchmarks/results/slurm: slices of
KTH-SP2 and LLNL Atlas scaled to 8 nodes x 4 cores, each simulated with the slurm.conf
its testbed ran, its submissions on whole seconds and no launch latency, under that
file's SchedulerParameters and with ``bf_job_part_count_reserve=1`` on top), KTH-SP2's
jobs as processors on 25 nodes x 4 cores and the burst-buffer KTH workload's on 24 x 4
(licenses), NASA iPSC/860's (jobs of 1-128 processors) on 16 x 8, each the first
``--jobs`` jobs, and LLNL Atlas's processors on its 1152 nodes x 8 cores (every 10th
window of its first 1000 jobs), under the four settings above.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.slurm_pass_oracle import DEFAULTS, compare, dump  # noqa: E402

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


# the testbed's shared-core replays (benchmarks/results/slurm)
REPLAYS = ("again/shared", "alone-shared6000", "alone-shared6500-2411", "heldout-shared7500",
           "heldout-shared7500-2411")


def replay(folder: Path):
    """(jobs, clock origin, the ``SlurmConf`` of the shared partition its testbed ran, its
    Slurm release) of a shared-core replay folder: each job a ``sbatch -p shared -n K``
    submitted at its replay time rounded to the second, running its ``sleep``."""
    from hpcopt.domain import Job
    from hpcopt.sim.slurmconf import parse_slurm_conf

    jobs = json.loads((folder / "replay_jobs.json").read_text())
    run = json.loads((folder / "replay_slurm.json").read_text())
    base = parse_slurm_conf(run["slurm_conf"], str(folder / "replay_slurm.json"), "shared")
    origin = min(sub for sub, _, _ in run["real"].values())
    return ([Job(k, float(round(j["at"])), float(max(j["sleep"], 1)), j["limit"] * 60.0,
                 j["nodes"]) for k, j in enumerate(jobs)],
            origin, base, run["testbed"].get("slurm", "22.05"))


def own_settings(base) -> dict:
    """A testbed's own pass options (its slurm.conf's), and with one reservation."""
    own = {"bf_resolution": int(base.bf_resolution), "bf_window": int(base.bf_window // 60),
           "bf_max_job_test": base.bf_max_job_test,
           "bf_job_part_count_reserve": base.bf_job_part_count_reserve,
           "bf_running_job_reserve": base.bf_running_job_reserve,
           "bf_licenses": base.bf_licenses}
    return {"testbed": own, "testbed+pcr1": {**own, "bf_job_part_count_reserve": 1}}


def shared_traces(jobs: int):
    """(name, jobs, system in cores, clock origin, cores per node, base ``SlurmConf`` or
    None, {setting: options}, sampling, releases) of each shared-core case (module
    docstring)."""
    import hpcopt
    from hpcopt.datadir import data_path
    from hpcopt.domain import System
    from hpcopt.scenario import trace_clock_origin
    from hpcopt.workloads.burst_buffer import load_batsim

    for name in REPLAYS:
        run_jobs, origin, base, version = replay(ROOT / "benchmarks/results/slurm" / name)
        yield (f"replay:{name}", run_jobs, System(base.nodes * base.cpus_per_node), origin,
               base.cpus_per_node, base, own_settings(base), 1, ("22.05", "24.11"))

    def swf(name):
        return data_path(f"hpc_swf/pwa/{name}", "benchmarks/slurm_pass_oracle.py")

    def procs(path):
        return hpcopt.load_trace(path, cores_per_node=1)

    kth = procs(swf("KTH-SP2-1996-2.1-cln.swf.gz"))
    yield ("KTH-SP2 25x4", kth.jobs[:jobs], System(100), trace_clock_origin(kth), 4, None,
           SETTINGS, 1, ("22.05", "24.11"))
    bb = load_batsim()
    yield ("KTH-bb-licenses 24x4", bb.jobs[:jobs], System(96, bb=bb.system.bb),
           trace_clock_origin(bb), 4, None, SETTINGS, 1, ("22.05", "24.11"))
    nasa = procs(swf("NASA-iPSC-1993-3.1-cln.swf.gz"))
    yield ("NASA-iPSC 16x8", nasa.jobs[:jobs], System(128), trace_clock_origin(nasa), 8,
           None, SETTINGS, 1, ("22.05", "24.11"))
    atlas = procs(swf("LLNL-Atlas-2006-2.1-cln.swf.gz"))
    yield ("Atlas 1152x8", atlas.jobs[:min(jobs, 1000)], System(9216),
           trace_clock_origin(atlas), 8, None, SETTINGS, 10, ("22.05", "24.11"))


def check(name, jobs, system, origin, version, setting, params, every, out, cores=0,
          base=None) -> dict:
    """One row: the windows of one simulation, compared (module docstring); the first
    mismatching windows go to ``out``."""
    conf = {"version": version, **params}
    t0 = time.perf_counter()
    windows = dump(jobs, system, conf, origin, every=every, cores=cores, base=base)
    bad = [(w, d) for w in windows if (d := compare(w, conf))]
    row = {"trace": name, "nodes": system.nodes // (cores or 1),
           **({"cores": cores} if cores else {}), "licenses": system.bb,
           "jobs": len(jobs), "slurm": version, "setting": setting,
           "windows": len(windows), "mismatches": len(bad),
           "first": bad[0][1] if bad else "",
           "seconds": round(time.perf_counter() - t0, 1)}
    print(json.dumps(row), flush=True)
    if bad:
        key = f"{name}_{version}_{setting}".replace(" ", "_").replace("/", "-").replace(":", "-")
        (out / f"mismatch_{key}.json").write_text(
            json.dumps({"conf": {**DEFAULTS, **conf}, "windows": [w for w, _ in bad[:20]]}))
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=1500, help="jobs of each trace (default 1500)")
    ap.add_argument("--every", type=int, default=1, help="every N-th window (default 1)")
    ap.add_argument("--out", default="benchmarks/results/slurm_pass_oracle")
    ap.add_argument("--shared", action="store_true",
                    help="the shared-core cases instead (partitions that share nodes by core)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from hpcopt.errors import HpcoptError

    rows = []
    try:
        if args.shared:
            runs = list(shared_traces(args.jobs))
        else:
            runs = [(name, jobs, system, origin, 0, None, SETTINGS, sampling,
                     ("22.05", "24.11"))
                    for name, jobs, system, origin, sampling in traces(args.jobs)]
    except HpcoptError as e:
        print(f"slurm_pass_oracle.py: {e}", file=sys.stderr)
        return 2
    for name, jobs, system, origin, cores, base, settings, sampling, versions in runs:
        for version in versions:
            for setting, params in settings.items():
                rows.append(check(name, jobs, system, origin, version, setting, params,
                                  args.every * sampling, out, cores, base))
    (out / ("summary_shared.json" if args.shared else "summary.json")).write_text(
        json.dumps(rows, indent=1))
    total = sum(r["windows"] for r in rows)
    kind = "shared-core " if args.shared else ""
    print(f"{total} {kind}windows, {sum(r['mismatches'] for r in rows)} mismatches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
