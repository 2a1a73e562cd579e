"""BBSched heuristics on hard real-queue windows: the paper's GA vs the seeded GA, and NSGA-II
time vs the window size (issue #10, items 7 and 8).

Windows come from the *recorded* queue of ALCF Theta 2022 (``hpc_swf/alcf/theta_2022.swf.gz``,
first --jobs jobs): at an instant t the queue is every job submitted by t whose recorded start
(submit + SWF wait) is later, in submit order, and the free nodes are the 4,360 less those of
the jobs recorded running at t.  Burst-buffer requests are the paper's S1-S4 workloads
(``hpcopt.workloads.make_workload``, Theta system with 5 GB per node = 21,800 GB) and the free
burst buffer is drawn uniformly from [0, 21,800] GB.  Instants are drawn at random among the
submit times at which the queue holds >= W jobs of which >= 2 fit now; a window is its first
W queued jobs.  Unlike the simulated windows of ``bbsched_solvers.py`` (where the scheduler has
already packed the machine, so most fronts have one point), many jobs fit at once here.

- ``ga``: ``pareto-exact`` (with --exact-limit seconds; windows whose front it does not prove
  are skipped and counted) gives the front; ``bbsched-ga`` with ``variant="paper"`` (the
  paper's GA, as it was) and the default ``variant="seeded"`` run on the same windows with the
  same seed, G and P; generational distance (pymoo's GD, objectives scaled to the free
  capacities, as in ``bbsched_solvers.py``) and time per window, side by side.
- ``nsga2``: ``nsga2`` (default budget G = 500, P = 20) time vs W on the same kind of
  windows, W in --nsga-sizes (3, 5, 8, 10, 20, 50), plus the 5-job Table 1 instance.

    nice python benchmarks/bbsched_heuristics.py [--part ga,nsga2] [--windows 10]
        [--workloads S1,S2,S3,S4] [--sizes 20,50] [--generations 500] [--population 20]
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

import numpy as np
from bbsched_policies import TRACES  # the sibling benchmarks: traces, GD, timing
from bbsched_solvers import gd, timed

import hpcopt
from hpcopt.models.bbsched import BBSchedModel

INSTANCE = Path(__file__).resolve().parents[1] / "instances" / "bbsched" / "table1.json"


def recorded_jobs(n_jobs: int, workload: str, seed: int):
    """Theta's first ``n_jobs`` jobs under ``workload``, with their recorded starts."""
    from hpcopt.workloads.burst_buffer import bb_system, make_workload

    path = TRACES["Theta"]
    tr = hpcopt.load_trace(path, max_jobs=n_jobs)
    system = bb_system(tr.system.nodes)
    jobs = make_workload(tr.jobs, workload, system=system, seed=seed)
    with gzip.open(path, "rt") as fh:
        rows = [line.split()[:4] for line in fh if line.strip() and not line.startswith(";")]
    rec = {int(r[0]): (float(r[1]), float(r[2]), float(r[3])) for r in rows[: 2 * n_jobs]}
    keep = [j for j in jobs if j.id in rec and rec[j.id][1] >= 0]
    sub, wait, run = np.array([rec[j.id] for j in keep]).T
    return keep, sub, sub + wait, sub + wait + np.maximum(run, 0), system


def queue_windows(workload: str, w: int, count: int, n_jobs: int = 8000, seed: int = 0,
                  min_fitting: int = 2) -> list[BBSchedModel]:
    """Up to ``count`` windows of the first ``w`` jobs of Theta's recorded queue (module
    doc), at random instants; the free burst buffer is uniform in [0, capacity]."""
    jobs, sub, start, end, system = recorded_jobs(n_jobs, workload, seed)
    nodes = np.array([j.nodes for j in jobs])
    bb = np.array([j.bb for j in jobs])
    order = np.argsort(sub, kind="stable")
    rng = np.random.default_rng([seed, w, int(workload.lstrip("S") or 0)])
    out = []
    for t in rng.permutation(np.unique(sub)):
        queued = order[(sub[order] <= t) & (start[order] > t)][:w]
        if len(queued) < w:
            continue
        free = int(np.clip(system.nodes - nodes[(start <= t) & (end > t)].sum(), 0,
                           system.nodes))
        if (nodes[queued] <= free).sum() < min_fitting:
            continue
        out.append(BBSchedModel(nodes[queued], bb[queued], free_nodes=free,
                                free_bb=float(rng.uniform(0, system.bb)),
                                ids=[jobs[i].id for i in queued],
                                capacity={"nodes": system.nodes, "bb": system.bb}))
        if len(out) == count:
            break
    return out


def ga_part(args, rows: list) -> None:
    """Paper GA vs seeded GA against the exact front, W in --sizes."""
    options = {"generations": args.generations, "population": args.population}
    skipped = {}
    for w in args.sizes:
        for wl in args.workloads:
            for k, model in enumerate(queue_windows(wl, w, args.windows, args.jobs, args.seed)):
                exact, sec, _ = timed(model, "pareto-exact", time_limit=args.exact_limit)
                if exact.status.value != "OPTIMAL":
                    skipped[w] = skipped.get(w, 0) + 1
                    continue
                base = dict(W=w, workload=wl, window=k, free_nodes=model.free_nodes,
                            free_bb=round(model.free_bb), front=len(exact.pareto))
                rows.append(dict(base, backend="pareto-exact", seconds=sec, gd=0.0,
                                 points=len(exact.pareto)))
                for variant in ("paper", "seeded"):
                    res, sec, cpu = timed(model, "bbsched-ga", seed=args.seed + k,
                                          solver_options={**options, "variant": variant})
                    rows.append(dict(base, backend=f"bbsched-ga {variant}", seconds=sec,
                                     cpu_seconds=cpu, gd=gd(model, res.pareto, exact.pareto),
                                     points=len(res.pareto)))
            print(f"W={w} {wl}: done", flush=True)
    if skipped:
        print(f"skipped (pareto-exact did not prove the front in {args.exact_limit} s): "
              f"{skipped}")


def nsga2_part(args, rows: list) -> None:
    """NSGA-II time vs W (default budget), enumerated or searched; with --nsga-before also
    the pymoo search on the small windows (as before enumeration, one window per W)."""
    from hpcopt.solvers import pymoo_nsga2

    cases = [("table1", 5, hpcopt.load_instance(INSTANCE).model)]
    for w in args.nsga_sizes:
        cases += [("S2", w, m) for m in queue_windows("S2", w, args.nsga_windows, args.jobs,
                                                       args.seed)]
    searched = pymoo_nsga2.small_space
    hpcopt.solve(cases[0][2], "nsga2", seed=args.seed)  # warm-up: pymoo's imports
    for name, w, model in cases:
        modes = ["now"] + (["before"] if args.nsga_before and w <= 10 else [])
        for mode in modes:
            if mode == "before":
                if any(r.get("mode") == "before" and r["W"] == w and r["workload"] == name
                       for r in rows):
                    continue
                pymoo_nsga2.small_space = lambda n, p, g: False
            try:
                res, sec, cpu = timed(model, "nsga2", seed=args.seed)
            finally:
                pymoo_nsga2.small_space = searched
            rows.append(dict(backend="nsga2", mode=mode, workload=name, W=w, seconds=sec,
                             cpu_seconds=cpu, n_evals=res.n_evals,
                             enumerated=bool(res.extra.get("enumerated")),
                             points=len(res.pareto), status=res.status.value))
            print(f"nsga2 {name} W={w} ({mode}): {sec:.2f} s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="ga,nsga2")
    ap.add_argument("--workloads", default="S1,S2,S3,S4")
    ap.add_argument("--sizes", default="20,50", help="window sizes of the GA comparison")
    ap.add_argument("--windows", type=int, default=10, help="windows per workload and W")
    ap.add_argument("--jobs", type=int, default=8000, help="first N jobs of Theta 2022")
    ap.add_argument("--generations", type=int, default=500)
    ap.add_argument("--population", type=int, default=20)
    ap.add_argument("--exact-limit", type=float, default=10.0,
                    help="seconds for pareto-exact; windows it does not prove are skipped")
    ap.add_argument("--nsga-sizes", default="3,5,8,10,20,50")
    ap.add_argument("--nsga-windows", type=int, default=3, help="S2 windows per W for nsga2")
    ap.add_argument("--nsga-before", action="store_true",
                    help="also time the pymoo search on W <= 10 (slow: ~20 s per window)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args()
    args.workloads = args.workloads.split(",")
    args.sizes = [int(w) for w in args.sizes.split(",")]
    args.nsga_sizes = [int(w) for w in args.nsga_sizes.split(",")]
    import pandas as pd

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    parts = args.part.split(",")
    if "ga" in parts:
        rows: list = []
        ga_part(args, rows)
        df = pd.DataFrame(rows)
        df.to_csv(out / "bbsched_heuristics_ga.csv", index=False)
        table = df.groupby(["W", "backend"]).agg(
            windows=("gd", "size"), mean_gd=("gd", "mean"), max_gd=("gd", "max"),
            exact_share=("gd", lambda s: (s == 0).mean()), median_s=("seconds", "median"),
            cpu_median_s=("cpu_seconds", "median"), front_median=("front", "median"))
        print("\nGD to the exact front (scaled to the free capacities) and time per window, "
              f"G = {args.generations}, P = {args.population}:\n" + table.round(4).to_string())
        by_wl = df[df.backend != "pareto-exact"].pivot_table(
            index=["W", "workload"], columns="backend", values="gd", aggfunc="mean")
        print("\nmean GD per workload:\n" + by_wl.round(4).to_string())
    if "nsga2" in parts:
        rows = []
        nsga2_part(args, rows)
        df = pd.DataFrame(rows)
        df.to_csv(out / "bbsched_heuristics_nsga2.csv", index=False)
        table = df.groupby(["mode", "W"]).agg(
            windows=("seconds", "size"), median_s=("seconds", "median"),
            max_s=("seconds", "max"), cpu_median_s=("cpu_seconds", "median"),
            n_evals=("n_evals", "median"), enumerated=("enumerated", "mean"))
        print("\nnsga2 (G = 500, P = 20) time vs W:\n" + table.round(3).to_string())
    print(f"wrote {out}/bbsched_heuristics_*.csv")


if __name__ == "__main__":
    main()
