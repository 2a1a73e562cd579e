"""BBSched solvers on real scheduling windows: accuracy (GD) and time (the paper's Figure 4).

Windows are cut from a simulation of a real trace (KTH-SP2 by default) with a generated
burst-buffer workload: the ``bbsched`` policy (exact backend, W = 50) runs and every window it
solves with at least 20 queued jobs is recorded (all its jobs, fitting now or not) with its
free nodes and burst buffer; the W = 10 and 20 windows are the first 10 and 20 jobs of the
same windows, W = 50 is measured on the windows that hold 50 jobs.  On each window:

- ``pareto-exact`` gives the true front and its time (W = 10, 20, 50);
- ``bbsched-ga`` and ``nsga2`` run for G in --generations and P in --populations (W = 20):
  generational distance to the exact front (pymoo's GD on objectives scaled to the free
  capacities, so nodes and GB weigh alike) and time per decision.

Targets (issue #3): exact two-objective front at W = 20 in <= 20 ms median; GA with G = 500,
P = 20, W = 20 in <= 0.2 s median.

    python benchmarks/bbsched_solvers.py [--trace KTH] [--workload S2] [--windows 30]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import hpcopt
from hpcopt.policies.multi_resource import BBSchedPolicy, window_model

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
TRACES = {
    "KTH": SHARED / "hpc_swf" / "pwa" / "KTH-SP2-1996-2.1-cln.swf.gz",
    "HPC2N": SHARED / "hpc_swf" / "pwa_subsets" / "HPC2N-2002-2.2-alea-subset.swf.gz",
}


class _Recorder(BBSchedPolicy):
    """The bbsched policy, keeping every window it hands to the solver."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.models = []

    def decide(self, window):
        if len(window.jobs) >= 20:  # jobs that cannot fit now stay in the window
            self.models.append(window_model(window, window.jobs, 2))
        return super().decide(window)


def cut_windows(trace: str, workload: str, n_windows: int, seed: int, w_max: int = 50):
    """``n_windows`` windows of ``w_max`` jobs, spread over a simulation of ``trace``."""
    from hpcopt.workloads import bb_system, make_workload

    tr = hpcopt.load_trace(TRACES[trace], max_jobs=6000)
    system = bb_system(tr.system.nodes)
    jobs = make_workload(tr.jobs, workload, system=system, seed=seed)
    rec = _Recorder(window=w_max)
    hpcopt.simulate(jobs, system=system, policy=rec)
    if not rec.models:
        raise SystemExit(f"no windows of >= 20 queued jobs in {trace}/{workload}")
    pick = np.linspace(0, len(rec.models) - 1, min(n_windows, len(rec.models))).astype(int)
    return [rec.models[i] for i in pick], system


def prefix(model, w: int):
    """The same window cut to its first ``w`` jobs."""
    from hpcopt.models.bbsched import BBSchedModel

    return BBSchedModel(model.nodes[:w], model.bb[:w], model.ssd[:w],
                        free_nodes=model.free_nodes, free_bb=model.free_bb,
                        ids=model.ids[:w], capacity=model.capacity)


def timed(model, backend, **kw):
    t0 = time.perf_counter()
    res = hpcopt.solve(model, backend, **kw)
    return res, time.perf_counter() - t0


def gd(model, pareto, exact) -> float:
    from pymoo.indicators.gd import GD

    scale = np.array([max(model.free_nodes, 1), max(model.free_bb, 1e-9)])
    ref = np.array([p.objectives for p in exact]) / scale
    got = np.array([p.objectives for p in pareto]) / scale
    return float(GD(-ref).do(-got))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", choices=sorted(TRACES), default="KTH")
    ap.add_argument("--workload", default="S2")
    ap.add_argument("--windows", type=int, default=30)
    ap.add_argument("--generations", default="50,100,250,500,1000")
    ap.add_argument("--populations", default="10,20,40")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    from tqdm.auto import tqdm

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    models, system = cut_windows(args.trace, args.workload, args.windows, args.seed)
    print(f"{len(models)} windows (>= 20 queued jobs, {sum(m.n_items == 50 for m in models)} "
          f"with 50) from {args.trace}/{args.workload} on {system}")
    gens = [int(g) for g in args.generations.split(",")]
    pops = [int(p) for p in args.populations.split(",")]
    rows = []
    for k, big in enumerate(tqdm(models, desc="windows")):
        for w in (10, 20, 50):
            if big.n_items < w:
                continue
            res, sec = timed(prefix(big, w), "pareto-exact")
            rows.append(dict(window=k, W=w, backend="pareto-exact", G=None, P=None,
                             seconds=sec, points=len(res.pareto), gd=0.0,
                             status=res.status.value))
        model = prefix(big, 20)
        exact = hpcopt.solve(model, "pareto-exact").pareto
        for backend in ("bbsched-ga", "nsga2"):
            for g in gens:
                for p in pops:
                    res, sec = timed(model, backend, seed=args.seed + k,
                                     solver_options={"generations": g, "population": p})
                    rows.append(dict(window=k, W=20, backend=backend, G=g, P=p, seconds=sec,
                                     points=len(res.pareto), gd=gd(model, res.pareto, exact),
                                     status=res.status.value))
    df = pd.DataFrame(rows)
    tag = f"{args.trace}_{args.workload}"
    df.to_csv(out / f"bbsched_solvers_{tag}.csv", index=False)
    exact = df[df.backend == "pareto-exact"].groupby("W")["seconds"].describe(
        percentiles=[0.5, 0.9])[["count", "50%", "90%", "max"]] * [1, 1e3, 1e3, 1e3]
    exact.columns = ["windows", "median_ms", "p90_ms", "max_ms"]
    heur = df[df.backend != "pareto-exact"].groupby(["backend", "P", "G"]).agg(
        median_s=("seconds", "median"), mean_gd=("gd", "mean"),
        exact_share=("gd", lambda s: (s == 0).mean()))
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
