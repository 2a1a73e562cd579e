"""hpcopt's published comparisons with Slurm, rerun on equal terms: each side in its default
and in its best documented simple setting, on the same jobs at the same time, twice.

The three comparisons of benchmarks/README.md, each on its own slice as first published:

- ``kth``: 150 jobs of KTH-SP2 on the 8-node testbed (``slurm_validation.py replay``'s
  slice), hpcopt ``knapsack`` against Slurm's backfill;
- ``bb``: 100 jobs of the KTH burst-buffer workload with a ``bb:100`` license
  (``slurm_bb_topology.py bb``'s slice), hpcopt ``bbsched`` against Slurm's backfill;
- ``topo``: 100 jobs of KTH-SP2 on a 32-node testbed with ``topology/tree``
  (``slurm_bb_topology.py topo``'s slice), hpcopt ``tjap-window`` (pinning each job to the
  nodes it chose) against Slurm's switch-aware backfill.

The runs (``slurm_validation.kind_setting``): ``slurm`` (Slurm alone, the testbed's
``sched/backfill``), ``slurm-best`` (with ``bf_job_part_count_reserve=1``, and
``bf_licenses`` where there are licenses), the policy under the adapter polling every
``--interval`` s, and ``<policy>-wake`` (the adapter's wake-up, ``--wake-port``, and
``batch_sched_delay=0`` as docs/slurm.md asks of a site running it). Every run of every
repetition starts at the same time, each on its own fresh testbed.

Per run: mean and max wait, mean bounded slowdown (tau 10 s), makespan (first submission to
last end), node utilization (node-seconds over nodes x makespan), for ``bb`` the license's,
for ``topo`` the total communication-hop cost of the TJAP paper; and the machine's load
average while it ran.

    python benchmarks/slurm_equal_terms.py run kth --out benchmarks/results/slurm/equal-kth
    python benchmarks/slurm_equal_terms.py report benchmarks/results/slurm/equal-*

Writes ``OUT/rep<R>/replay_<kind>.json`` (``slurm_validation.replay``'s record: Slurm's
times, the adapter's cycles that released a job or failed, the slurm.conf; node lists) and
``OUT/rep<R>/replay_jobs.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import slurm_bb_topology as bbt  # noqa: E402  (its node lists)
import slurm_validation as sv  # noqa: E402  (its slices, replay and latencies)

PARTS = {
    # part: (policy, trace, first, jobs, nodes, run_min, run_max, limit_max, interval)
    "kth": ("knapsack", sv.DEFAULT_TRACE, 5000, 150, 8, 10, 60, 4, 0.5),
    "bb": ("bbsched", sv.BB_TRACE, 600, 100, 8, 5, 30, 2, 0.5),
    "topo": ("tjap-window", sv.DEFAULT_TRACE, 5000, 100, 32, 5, 30, 2, 1.0),
}
BB_TOTAL = 100
TAU = 10.0  # bounded slowdown threshold, seconds


def part_setup(part: str, args) -> tuple[list[dict], dict, tuple]:
    """The part's slice, its testbed options and the adapter's options."""
    policy, trace, first, jobs, nodes, run_min, run_max, limit_max, _ = PARTS[part]
    args.trace, args.first, args.nodes = str(trace), first, nodes
    args.jobs = args.jobs or jobs
    args.run_min, args.run_max, args.limit_max, args.load = run_min, run_max, limit_max, 1.1
    if part == "bb":
        args.bb_total = BB_TOTAL
        return sv.bb_slice(args), {"licenses": f"bb:{BB_TOTAL}"}, ("--bb-license", "bb")
    if part == "topo":
        return (sv.scaled_slice(args), {"switch_size": 4, "pod_size": 2},
                ("--topology", "--tau", "1"))
    return sv.scaled_slice(args), {}, ()


class LoadWatch(bbt.Watch):
    """The machine's 1-minute load average, sampled every 10 s while the runs go."""

    def __init__(self):
        super().__init__(10.0)
        self.samples: list[float] = []

    def sample(self):
        self.samples.append(os.getloadavg()[0])


def cmd_run(args) -> None:
    policy, *_, interval = PARTS[args.part]
    jobs, testbed_opts, adapter_args = part_setup(args.part, args)
    args.interval = interval if args.interval is None else args.interval
    kinds = args.kinds or ["slurm", "slurm-best", policy, f"{policy}-wake"]
    out = Path(args.out)
    work = Path(tempfile.mkdtemp(prefix="hpcopt-equal-"))  # kept: each testbed's logs
    print(f"{args.part}: {len(jobs)} jobs, arrivals over {jobs[-1]['at']:.0f} s; runs "
          f"{kinds} x reps {args.reps}, testbeds in {work}", flush=True)
    from concurrent.futures import ThreadPoolExecutor

    todo = [(rep, kind) for rep in args.reps for kind in kinds]
    for rep in args.reps:
        (work / f"rep{rep}").mkdir()
    t0 = time.time()
    with LoadWatch() as load, ThreadPoolExecutor(len(todo)) as pool:
        futures = {(rep, kind): pool.submit(sv.replay, jobs, kind, args, work / f"rep{rep}",
                                            testbed_opts, adapter_args)
                   for rep, kind in todo}
        failed = []
        for (rep, kind), f in futures.items():
            try:
                run = f.result()
            except (SystemExit, RuntimeError, OSError, ValueError) as e:  # the others stay
                failed.append(f"rep{rep} {kind}: {e}")
                continue
            run["nodelist"] = bbt.node_lists(work / f"rep{rep}" / kind)
            bbt.compact(run)  # the cycles that released a job or failed
            d = out / f"rep{rep}"
            d.mkdir(parents=True, exist_ok=True)
            (d / "replay_jobs.json").write_text(json.dumps(jobs, indent=1))
            (d / f"replay_{kind}.json").write_text(json.dumps(run))
    info = dict(part=args.part, kinds=kinds, reps=args.reps, interval=args.interval,
                minutes=round((time.time() - t0) / 60, 1),
                load_mean=round(float(np.mean(load.samples)), 2) if load.samples else None,
                load_max=round(float(np.max(load.samples)), 2) if load.samples else None)
    out.mkdir(parents=True, exist_ok=True)
    (out / "info.json").write_text(json.dumps(info, indent=1))
    print(json.dumps(info), flush=True)
    if failed:
        raise SystemExit("\n".join(failed))


def run_metrics(jobs: list[dict], run: dict, nodes: int, topo=None) -> dict:
    """One run's mean and max wait, bounded slowdown, makespan, utilization (module
    docstring)."""
    names = [j["name"] for j in jobs]
    size = np.array([j["nodes"] for j in jobs], float)
    sub, start, end = (np.array([run["real"][n][i] for n in names], float) for i in range(3))
    wait, runtime = start - sub, end - start
    span = end.max() - sub.min()
    row = dict(jobs=len(names), wait_mean=float(wait.mean()), wait_max=float(wait.max()),
               bsld=float(np.maximum(1.0, (wait + runtime) / np.maximum(runtime, TAU)).mean()),
               makespan=float(span), util=float((size * runtime).sum() / (nodes * span)))
    if "bb" in jobs[0]:
        bb = np.array([j["bb"] for j in jobs], float)
        row["bb_util"] = float((bb * runtime).sum() / (BB_TOTAL * span))
    if topo is not None:
        row["ch_cost"] = float(sum(topo.tree.cost(topo.ids(run["nodelist"][n])) for n in names))
    return row


def part_rows(out: Path) -> tuple[dict, list[dict]]:
    """Every saved run of a part's ``--out`` folder, as ``run_metrics`` rows."""
    info = json.loads((out / "info.json").read_text())
    topo = None
    if info["part"] == "topo":
        from hpcopt.slurm.topology import read_topology
        from hpcopt.testbed import topology_conf

        with tempfile.TemporaryDirectory() as tmp:  # the testbed's file, read as hpcopt does
            conf = Path(tmp) / "topology.conf"
            conf.write_text(topology_conf(PARTS["topo"][4], 4, 2))
            topo = read_topology(conf)
    rows = []
    for rep in info["reps"]:
        d = out / f"rep{rep}"
        jobs = json.loads((d / "replay_jobs.json").read_text())
        for kind in info["kinds"]:
            f = d / f"replay_{kind}.json"
            if f.exists():
                run = json.loads(f.read_text())
                rows.append(dict(rep=rep, kind=kind, **run_metrics(
                    jobs, run, PARTS[info["part"]][4], topo)))
    return info, rows


def label(kind: str, policy: str) -> str:
    return {"slurm": "Slurm alone, default", "slurm-best": "Slurm alone, best",
            policy: f"hpcopt {policy}, polling", f"{policy}-wake": f"hpcopt {policy}, wake-up"
            }[kind]


def cmd_report(args) -> None:
    summary = []
    for d in args.dirs:
        info, rows = part_rows(Path(d))
        policy = PARTS[info["part"]][0]
        extra = ("bb_util", "bb util") if info["part"] == "bb" else \
            ("ch_cost", "CH cost") if info["part"] == "topo" else None
        print(f"\n{info['part']} ({Path(d).name}; load average {info['load_mean']} mean, "
              f"{info['load_max']} max, {info['minutes']} min)\n")
        print("| run | mean wait (s) | max wait (s) | mean bsld | makespan (s) | node util |"
              + (f" {extra[1]} |" if extra else ""))
        print("|---|---|---|---|---|---|" + ("---|" if extra else ""))
        for kind in info["kinds"]:
            mine = [r for r in rows if r["kind"] == kind]
            if not mine:
                continue

            def both(key, fmt, mine=mine):
                return " / ".join(format(r[key], fmt) for r in mine)

            print(f"| {label(kind, policy)} | {both('wait_mean', '.1f')} | "
                  f"{both('wait_max', '.0f')} | {both('bsld', '.2f')} | "
                  f"{both('makespan', '.0f')} | {both('util', '.3f')} |"
                  + (f" {both(extra[0], ',.0f' if extra[0] == 'ch_cost' else '.3f')} |"
                     if extra else ""))
        summary += [dict(part=info["part"], **r) for r in rows]
    if args.save:
        Path(args.save).write_text(json.dumps(summary, indent=1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="the runs of a part on fresh testbeds (root)")
    r.add_argument("part", choices=sorted(PARTS))
    r.add_argument("--reps", nargs="+", type=int, default=[1, 2])
    r.add_argument("--kinds", nargs="+", help="default: slurm, slurm-best, the policy, "
                   "the policy with its wake-up")
    r.add_argument("--interval", type=float, help="the adapter's cycle, seconds (default: "
                   "the part's published runs')")
    r.add_argument("--jobs", type=int, help="the first N jobs of the slice only (a try)")
    r.add_argument("--slurm", default="22.05", choices=["22.05", "24.11"])
    r.add_argument("--max-minutes", type=float, default=60)
    r.add_argument("--out", required=True)
    t = sub.add_parser("report", help="the tables of saved runs (no Slurm)")
    t.add_argument("dirs", nargs="+", help="--out folders of runs")
    t.add_argument("--save", help="write every run's metrics here (JSON)")
    args = p.parse_args()
    {"run": cmd_run, "report": cmd_report}[args.cmd](args)


if __name__ == "__main__":
    main()
