"""BBSched solvers on real scheduling windows: accuracy (GD) and time (the paper's Figure 4).

Windows are cut from a simulation of a real trace (the first --jobs jobs of KTH-SP2, HPC2N or
ALCF Theta 2022) with a generated burst-buffer workload: the ``bbsched`` policy (exact
backend, W = 50) runs and every window of at least 20 queued jobs of which at least
--min-fitting (2) fit the free resources now is recorded (all its jobs, fitting now or not)
with its free nodes and burst buffer; with fewer fitting jobs the front is trivial and the
policy calls no solver.  The W = 10 and 20 windows are the first 10 and 20 jobs of such
windows; W = 50 needs windows that hold 50 jobs, which the KTH-SP2 and HPC2N queues rarely
do, but Theta's does (its recorded queue, from the SWF wait times, held >= 50 jobs 40% of
the time in its first 8,000 jobs, 67% over 2022; the script prints the share).  On up to
--windows windows per W, spread over the run:

- ``pareto-exact`` gives the true front and its time (W = 10, 20, 50);
- ``bbsched-ga`` and ``nsga2`` run for G in --generations and P in --populations (W = 20):
  generational distance to the exact front (pymoo's GD on objectives scaled to the free
  capacities, so nodes and GB weigh alike) and time per decision.

Targets (issue #3): exact two-objective front at W = 20 in <= 20 ms median; GA with G = 500,
P = 20, W = 20 in <= 0.2 s median.

With ``--recorded N`` the script instead times ``pareto-exact`` on windows cut from the
trace's *recorded* queue (issue #10 item 4): at random moments, the first W jobs queued then
(SWF submit and wait times), with the burst-buffer requests of each workload of
--recorded-workloads (S1-S4), a random number of free nodes (uniform in [N/4, N]) and a random
free burst buffer (uniform in [0, B]); N windows per workload.  Both algorithms run on every
window in the same process: the bitset DP (the default) and the state DP it replaced
(``algorithm="states"``, bounded by --states-limit seconds and --states-memory MB); the
fronts are compared where both finish.  Four-objective windows (S5: SSD requests on half 128
/ half 256 GB nodes) are timed with --four (the states algorithm, the only one for them).
--synthetic adds windows harder than the trace's (``synthetic_windows``); the new
algorithm's peak memory (tracemalloc, one extra untimed solve) is reported too.  Target:
W = 50, p90 <= 100 ms and max <= 2 s, exact.

    python benchmarks/bbsched_solvers.py [--trace KTH|HPC2N|Theta] [--workload S2]
        [--windows 30] [--jobs 6000]
    python benchmarks/bbsched_solvers.py --trace Theta --recorded 10 [--jobs 20000]
        [--recorded-sizes 20,50] [--four 5] [--synthetic 3]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from bbsched_policies import TRACES, load_jobs  # the sibling benchmark: traces, workloads

import hpcopt
from hpcopt.policies.multi_resource import BBSchedPolicy, window_model

SIZES = (10, 20, 50)


class _Recorder(BBSchedPolicy):
    """The bbsched policy, keeping every window of >= 20 jobs in which >= ``min_fitting``
    jobs fit the free resources now (with fewer the front is trivial: the policy would not
    call a solver)."""

    def __init__(self, min_fitting: int = 2, **kw) -> None:
        super().__init__(**kw)
        self.min_fitting = min_fitting
        self.models = []

    def decide(self, window):
        fitting = sum(window.resources.fits(j) for j in window.jobs)
        if len(window.jobs) >= 20 and fitting >= self.min_fitting:
            # jobs that cannot fit now stay in the window (the paper's W first queued jobs)
            self.models.append(window_model(window, window.jobs, 2))
        return super().decide(window)


def recorded_queue(path: Path, n_jobs: int) -> tuple[int, float]:
    """Longest queue and share of the time with >= 50 queued jobs in the trace's own record
    (SWF fields 2 and 3: submit and wait) of its first ``n_jobs`` jobs."""
    import gzip

    with gzip.open(path, "rt") as fh:
        rows = [line.split()[1:3] for line in fh if line.strip() and not line.startswith(";")]
    sub, wait = np.array(rows[:n_jobs], dtype=float).T
    ok = wait >= 0
    times = np.concatenate([sub[ok], sub[ok] + wait[ok]])
    steps = np.concatenate([np.ones(ok.sum()), -np.ones(ok.sum())])
    order = np.lexsort((steps, times))  # a start before a submit at the same second
    queue, times = np.cumsum(steps[order]), times[order]
    span = np.diff(times)
    return int(queue.max()), float(span[queue[:-1] >= 50].sum() / max(span.sum(), 1e-9))


def cut_windows(trace: str, workload: str, n_jobs: int, seed: int, w_max: int = 50,
                min_fitting: int = 2):
    """Every window of >= 20 queued jobs (up to ``w_max``) of a simulation of ``trace`` in
    which >= ``min_fitting`` of them fit now."""
    jobs, system = load_jobs(trace, workload, n_jobs, seed)
    rec = _Recorder(min_fitting, window=w_max)
    hpcopt.simulate(jobs, system=system, policy=rec)
    if not rec.models:
        raise SystemExit(f"no windows of >= 20 queued jobs in {trace}/{workload}")
    return rec.models, system


def spread(models, w: int, count: int) -> list:
    """Up to ``count`` of the windows holding ``w`` jobs, evenly spread over the run."""
    full = [k for k, m in enumerate(models) if m.n_items >= w]
    if not full:
        return []
    pick = np.linspace(0, len(full) - 1, min(count, len(full))).astype(int)
    return sorted({full[i] for i in pick})


def prefix(model, w: int):
    """The same window cut to its first ``w`` jobs."""
    from hpcopt.models.bbsched import BBSchedModel

    return BBSchedModel(model.nodes[:w], model.bb[:w], model.ssd[:w],
                        free_nodes=model.free_nodes, free_bb=model.free_bb,
                        ids=model.ids[:w], capacity=model.capacity)


def timed(model, backend, **kw):
    """Result, wall seconds and CPU seconds of one solve (CPU time is what a loaded machine
    distorts least)."""
    t0, c0 = time.perf_counter(), time.process_time()
    res = hpcopt.solve(model, backend, **kw)
    return res, time.perf_counter() - t0, time.process_time() - c0


def gd(model, pareto, exact) -> float:
    from pymoo.indicators.gd import GD

    scale = np.array([max(model.free_nodes, 1), max(model.free_bb, 1e-9)])
    ref = np.array([p.objectives for p in exact]) / scale
    got = np.array([p.objectives for p in pareto]) / scale
    return float(GD(-ref).do(-got))


def recorded_windows(trace: str, workload: str, n_jobs: int, count: int, w: int,
                     seed: int) -> list:
    """``count`` windows of the first ``w`` jobs of the trace's recorded queue at random
    moments (submit <= t < submit + wait, front first), with ``workload``'s requests, free
    nodes uniform in [N/4, N] and free burst buffer uniform in [0, B]; S5-S7 give
    four-objective windows on half 128 / half 256 GB SSD nodes."""
    import gzip

    from hpcopt.models.bbsched import BBSchedModel

    jobs, system = load_jobs(trace, workload, n_jobs, seed)
    with gzip.open(TRACES[trace], "rt") as fh:
        wait = {int(f[0]): float(f[2]) for f in (line.split() for line in fh)
                if f and not f[0].startswith(";")}
    sub = np.array([j.submit for j in jobs])
    end = sub + np.array([wait.get(j.id, -1.0) for j in jobs])
    rng = np.random.default_rng(seed)
    four = bool(system.ssd_classes)
    out = []
    for t in rng.permutation(sub[end > sub]):
        queued = np.flatnonzero((sub <= t) & (end > t))
        if len(queued) < w:
            continue
        q = queued[np.argsort(sub[queued], kind="stable")][:w]
        free = int(rng.integers(system.nodes // 4, system.nodes + 1))
        kw = dict(free_nodes=free)
        if four:
            kw = dict(ssd_classes={128: free // 2, 256: free - free // 2}, objectives=4)
        out.append(BBSchedModel([jobs[i].nodes for i in q], [jobs[i].bb for i in q],
                                [jobs[i].ssd for i in q], free_bb=float(rng.uniform(0, system.bb)),
                                ids=[jobs[i].id for i in q], **kw))
        if len(out) == count:
            break
    return out


def synthetic_windows(count: int, w: int, seed: int) -> list:
    """Harder than the trace: ``w`` jobs of 100-1,200 nodes (any size, so the node totals
    fill every value), 75% with 200-9,000 GB of burst buffer, the whole Theta-sized machine
    free (4,360 nodes, 21,800 GB)."""
    from hpcopt.models.bbsched import BBSchedModel

    rng = np.random.default_rng(seed)
    return [BBSchedModel(rng.integers(100, 1201, w),
                         np.where(rng.random(w) < 0.75, rng.integers(200, 9001, w), 0),
                         free_nodes=4360, free_bb=21800) for _ in range(count)]


def peak_mb(model, opts) -> float:
    """Peak traced memory (MB) of one more, untimed solve (tracemalloc sees numpy's
    buffers)."""
    import tracemalloc

    tracemalloc.start()
    hpcopt.solve(model, "pareto-exact", solver_options=opts)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def recorded_benchmark(args) -> None:
    """Old (states) and new (bitset) pareto-exact side by side on recorded-queue windows."""
    import pandas as pd
    from tqdm.auto import tqdm

    from hpcopt.models.bbsched import BBSchedModel

    warm = BBSchedModel([1, 2], [1, 2], free_nodes=2, free_bb=2)  # imports out of the timing
    for algorithm in ("bitset", "states"):
        hpcopt.solve(warm, "pareto-exact", solver_options={"algorithm": algorithm})
    rows = []
    sizes = [int(w) for w in args.recorded_sizes.split(",")]
    old_opts = {"algorithm": "states", "max_memory_mb": args.states_memory}
    cases = [(wl, w) for wl in args.recorded_workloads.split(",") for w in sizes]
    if args.four:
        cases += [("S5", w) for w in sizes]
    if args.synthetic:
        cases += [("synthetic", w) for w in sizes]
    for wl, w in cases:
        if wl == "synthetic":
            models = synthetic_windows(args.synthetic, w, args.seed)
        else:
            count = args.four if wl == "S5" else args.recorded
            models = recorded_windows(args.trace, wl, args.jobs, count, w, args.seed)
        for k, model in enumerate(tqdm(models, desc=f"{wl} W={w}")):
            runs = [("new", None, None)] if model.objectives == 2 else []
            runs.append(("old", old_opts, args.states_limit))
            fronts = {}
            for name, opts, limit in runs:
                res, sec, cpu = timed(model, "pareto-exact", solver_options=opts,
                                      time_limit=limit)
                fronts[name] = [p.objectives for p in res.pareto]
                rows.append(dict(source="synthetic" if wl == "synthetic" else "recorded",
                                 workload=wl, W=w, window=k, objectives=model.objectives,
                                 algorithm=res.extra["algorithm"], seconds=sec,
                                 cpu_seconds=cpu, status=res.status.value,
                                 limit=res.limit.value if res.limit else "",
                                 points=len(res.pareto),
                                 states=res.extra.get("states_peak", 0),
                                 peak_mb=peak_mb(model, opts) if name == "new" else np.nan))
            if len(fronts) == 2 and rows[-1]["status"] == "OPTIMAL":
                assert fronts["old"] == fronts["new"], (wl, w, k)  # exact: the same front
    df = pd.DataFrame(rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / f"bbsched_exact_recorded_{args.trace}.csv", index=False)
    g = df.groupby(["source", "objectives", "W", "algorithm"])
    table = pd.DataFrame({
        "windows": g.size(), "median_ms": g.seconds.median() * 1e3,
        "p90_ms": g.seconds.quantile(0.9) * 1e3, "max_ms": g.seconds.max() * 1e3,
        "cpu_median_ms": g.cpu_seconds.median() * 1e3,
        "optimal": g.status.apply(lambda s: int((s == "OPTIMAL").sum())),
        "time_limit": g.limit.apply(lambda s: int((s == "TIME").sum())),
        "memory_limit": g.limit.apply(lambda s: int((s == "MEMORY").sum())),
        "front_median": g.points.median(), "front_max": g.points.max(),
        "states_max": g.states.max(), "peak_mb_max": g.peak_mb.max()})
    print(f"\npareto-exact on windows of the recorded {args.trace} queue "
          f"(states: limit {args.states_limit:g} s, {args.states_memory:g} MB):")
    print(table.round(1).to_string())
    table.to_csv(out / f"bbsched_exact_recorded_{args.trace}_summary.csv")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", choices=sorted(TRACES), default="KTH")
    ap.add_argument("--workload", default="S2")
    ap.add_argument("--windows", type=int, default=30, help="windows per window size")
    ap.add_argument("--jobs", type=int, default=6000, help="first N jobs of the trace")
    ap.add_argument("--min-fitting", type=int, default=2,
                    help="record windows in which at least this many jobs fit now")
    ap.add_argument("--generations", default="50,100,250,500,1000")
    ap.add_argument("--populations", default="10,20,40")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    ap.add_argument("--recorded", type=int, default=0,
                    help="time pareto-exact, old and new, on N recorded-queue windows per "
                         "workload and size instead")
    ap.add_argument("--recorded-workloads", default="S1,S2,S3,S4")
    ap.add_argument("--recorded-sizes", default="50")
    ap.add_argument("--states-limit", type=float, default=20.0,
                    help="time limit (s) of the old state algorithm")
    ap.add_argument("--states-memory", type=float, default=3000.0,
                    help="memory cap (MB) of the old state algorithm")
    ap.add_argument("--exact-only", action="store_true",
                    help="time pareto-exact only (no GA / NSGA-II runs)")
    ap.add_argument("--synthetic", type=int, default=0,
                    help="also N synthetic worst-case windows per size (synthetic_windows)")
    ap.add_argument("--four", type=int, default=0,
                    help="also N four-objective (S5) recorded windows per size")
    args = ap.parse_args()
    if args.recorded:
        recorded_benchmark(args)
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    from tqdm.auto import tqdm

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    models, system = cut_windows(args.trace, args.workload, args.jobs, args.seed,
                                 min_fitting=args.min_fitting)
    longest, share = recorded_queue(TRACES[args.trace], args.jobs)
    print(f"{args.trace}, first {args.jobs} jobs: recorded queue up to {longest} jobs, "
          f">= 50 jobs {share:.0%} of the time; simulated ({args.workload} on {system}): "
          f"{len(models)} windows of >= 20 queued jobs with >= {args.min_fitting} fitting now, "
          f"{sum(m.n_items == 50 for m in models)} of 50")
    gens = [int(g) for g in args.generations.split(",")]
    pops = [int(p) for p in args.populations.split(",")]
    rows = []
    for w in SIZES:
        for k in tqdm(spread(models, w, args.windows), desc=f"pareto-exact W={w}"):
            res, sec, cpu = timed(prefix(models[k], w), "pareto-exact")
            rows.append(dict(window=k, W=w, backend="pareto-exact", G=None, P=None,
                             seconds=sec, cpu_seconds=cpu, points=len(res.pareto), gd=0.0,
                             status=res.status.value))
    for k in tqdm([] if args.exact_only else spread(models, 20, args.windows),
                  desc="GA and NSGA-II, W=20"):
        model = prefix(models[k], 20)
        exact = hpcopt.solve(model, "pareto-exact").pareto
        for backend in ("bbsched-ga", "nsga2"):
            for g in gens:
                for p in pops:
                    res, sec, cpu = timed(model, backend, seed=args.seed + k,
                                          solver_options={"generations": g, "population": p})
                    rows.append(dict(window=k, W=20, backend=backend, G=g, P=p, seconds=sec,
                                     cpu_seconds=cpu,
                                     points=len(res.pareto), gd=gd(model, res.pareto, exact),
                                     status=res.status.value))
    df = pd.DataFrame(rows)
    tag = f"{args.trace}_{args.workload}"
    df.to_csv(out / f"bbsched_solvers_{tag}.csv", index=False)
    by_w = df[df.backend == "pareto-exact"].groupby("W")
    exact = pd.DataFrame({"windows": by_w.size(),
                          "median_ms": by_w.seconds.median() * 1e3,
                          "p90_ms": by_w.seconds.quantile(0.9) * 1e3,
                          "max_ms": by_w.seconds.max() * 1e3,
                          "cpu_median_ms": by_w.cpu_seconds.median() * 1e3,
                          "front_median": by_w.points.median(),
                          "front_max": by_w.points.max()})
    if args.exact_only:
        print("\npareto-exact (two objectives) time per window:\n" + exact.round(2).to_string())
        exact.to_csv(out / f"bbsched_exact_{tag}.csv")
        return
    heur = df[df.backend != "pareto-exact"].groupby(["backend", "P", "G"]).agg(
        median_s=("seconds", "median"), cpu_median_s=("cpu_seconds", "median"),
        mean_gd=("gd", "mean"), exact_share=("gd", lambda s: (s == 0).mean()))
    print("\npareto-exact (two objectives) time per window:\n" + exact.round(2).to_string())
    print("\nGA and NSGA-II at W = 20:\n" + heur.round(4).to_string())
    exact.to_csv(out / f"bbsched_exact_{tag}.csv")
    heur.to_csv(out / f"bbsched_heuristics_{tag}.csv")

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    for (backend, p), grp in heur.reset_index().groupby(["backend", "P"]):
        style = "-" if backend == "bbsched-ga" else "--"
        a1.plot(grp.G, grp.mean_gd, style, marker="o", label=f"{backend} P={p}")
        a2.plot(grp.G, grp.median_s, style, marker="o", label=f"{backend} P={p}")
    a2.axhline(exact.loc[20, "median_ms"] / 1e3, color="k", lw=1, label="pareto-exact")
    a1.set(xlabel="generations G", ylabel="mean GD to the exact front (scaled)",
           title=f"accuracy, W = 20 ({tag})")
    a2.set(xlabel="generations G", ylabel="median seconds per decision", yscale="log",
           title="time per decision")
    a1.legend(fontsize=7)
    a2.legend(fontsize=7)
    plt.tight_layout()
    plt.savefig(out / f"bbsched_solvers_{tag}.png", dpi=120)
    print(f"wrote {out}/bbsched_solvers_{tag}.csv/.png")


if __name__ == "__main__":
    main()
