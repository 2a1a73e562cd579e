"""Topology-aware allocation solvers on the paper's windows (Lan et al., Tables III and IV).

Each epoch runs the window-period driver (tau = 60 s, SCAS optimum placement) on a fresh
1,000-node fat-tree with a freshly generated workload
(``hpcopt.policies.tjap.generate_windows``) and keeps its first ``--windows`` windows.
On every window it solves:

- ``seq``: sequential placement (the paper's "Seq.", also the SA start);
- ``sa-500`` / ``sa-1000``: the paper's SA from Seq. (T_max 2500, T_min 2.5, n_D 2), run as
  the paper ran it: ``dcas_sa.anneal`` itself, without the library's floor (``hpcopt.solve``
  returns the better of its answer and the DCAS greedy start, which holds the SCAS optimum);
  ``sa-3500`` takes about as long as ``nsa-500`` here (one network call per repair);
- ``nsa-500``: SA with the learned repair operator (shipped CNN checkpoint), from Seq., run
  the same way;
- ``scas-exact``: SCAS proved optimal by the constrained-shortest-path DP;
- ``scip``: SCAS by SCIP on the paper's 0-1 ILP (plus node rows), on the first
  ``--scip-windows`` windows of each epoch, with ``--scip-time-limit``;
- ``scip-compact``, ``cpsat``, ``cpsat-paper`` (by ``--methods`` only): SCIP on the compact
  form, CP-SAT on the compact form (its default) and on the paper's, with the same limit;
- ``dcas-warm``: SA-500 started from the SCAS optimum (never worse than it), through
  ``hpcopt.solve``.

``--big N`` adds N windows of 20 jobs (idle sets met by the driver under a lighter load, job
sizes U[1, 40] drawn until they fill 75-100% of the idle nodes) for scas-exact, scip and
sa-500, to show how each scales.  Writes results/tjap_solvers.csv (one row per window and
method), results/tjap_solvers_summary.csv and results/tjap_solvers.png.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

import hpcopt
from hpcopt.models.dcas import DCASModel
from hpcopt.models.scas import SCASModel
from hpcopt.policies.tjap import generate_windows
from hpcopt.solvers import get_solver
from hpcopt.solvers.dcas_nsa import learned_repair
from hpcopt.solvers.dcas_sa import REPAIRS, anneal, sequential_decision
from hpcopt.workloads.tjap import generate_tjap_jobs

RESULTS = Path(__file__).resolve().parent / "results"


def methods(nsa: bool, scip_limit: float):
    """name -> (model kind, backend, solver_options, time_limit)."""
    out = {
        "seq": ("dcas", "sequential", {}, None),
        "sa-500": ("paper-sa", "random", {"t_max": 500}, None),
        "sa-1000": ("paper-sa", "random", {"t_max": 1000}, None),
        "sa-3500": ("paper-sa", "random", {"t_max": 3500}, None),
        "scas-exact": ("scas", "scas-exact", {}, None),
        "scip": ("scas", "scip", {}, scip_limit),
        "scip-compact": ("scas", "scip", {"formulation": "compact"}, scip_limit),
        "cpsat": ("scas", "cpsat", {}, scip_limit),
        "cpsat-paper": ("scas", "cpsat", {"formulation": "paper"}, scip_limit),
        "dcas-warm": ("dcas", "sa", {"t_max": 500}, None),
    }
    if nsa:
        out["nsa-500"] = ("paper-sa", "learned", {"t_max": 500}, None)
    return out


def solve_row(window, method, spec, seed):
    kind, backend, options, limit = spec
    if kind == "paper-sa":  # the paper's (N)SA from Seq.: Algorithm 1 alone, no floor
        repair = learned_repair() if backend == "learned" else REPAIRS[backend]()
        t0 = time.perf_counter()
        res = anneal(window, sequential_decision(window), repair, rng=seed, **options)
        wall = time.perf_counter() - t0
        check = window.evaluate(res.decision)
        return dict(method=method, cost=check.objective, time_s=wall, status="FEASIBLE",
                    certified=check.feasible)
    model = window if kind == "dcas" else SCASModel(window.topology, window.idle_nodes,
                                                    window.sizes, ids=window.ids)
    t0 = time.perf_counter()
    res = hpcopt.solve(model, backend, seed=seed, solver_options=dict(options),
                       time_limit=limit)
    wall = time.perf_counter() - t0
    return dict(method=method, cost=res.objective, time_s=wall, status=res.status.value,
                certified=res.certified)


def nsa_ready() -> bool:
    """Whether the ``nsa`` backend runs here (torch and its default checkpoint present)."""
    from hpcopt.errors import HpcoptError

    if "nsa" not in hpcopt.solvers.names() or not get_solver("nsa").available():
        print("nsa: backend not available (needs torch); skipped")
        return False
    try:
        hpcopt.solve(DCASModel("paper-1000", range(10), [4, 3]), "nsa", seed=0,
                     solver_options={"t_max": 1, "init": "sequential"})
    except HpcoptError as err:
        print(f"nsa: skipped ({err})")
        return False
    return True


def big_windows(n: int, seed: int) -> list[DCASModel]:
    """Windows of 20 jobs on idle sets of a lightly loaded machine (see the docstring)."""
    rng = np.random.default_rng(seed)
    jobs = generate_tjap_jobs(600, seed=seed, interarrival=(12, 30))
    pool = [w for w in generate_windows(150, seed=seed, jobs=jobs) if w.n_idle >= 300]
    out = []
    for w in pool:
        for _ in range(500):
            sizes = rng.integers(1, 41, 20)
            if 0.75 * w.n_idle <= sizes.sum() <= w.n_idle:
                out.append(DCASModel(w.topology, w.idle_nodes, sizes))
                break
        if len(out) == n:
            break
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--windows", type=int, default=100, help="windows per epoch")
    ap.add_argument("--scip-windows", type=int, default=10, help="windows per epoch for scip")
    ap.add_argument("--scip-time-limit", type=float, default=60.0)
    ap.add_argument("--big", type=int, default=10, help="windows of 20 jobs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--methods", default=None,
                    help="comma-separated subset of the methods (default: all)")
    ap.add_argument("--tag", default="", help="suffix of the result file names")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    specs = methods(nsa_ready(), args.scip_time_limit)
    if args.methods:
        wanted = [m.strip() for m in args.methods.split(",")]
        unknown = sorted(set(wanted) - set(specs))
        if unknown:
            raise SystemExit(f"unknown method(s) {unknown}; expected {sorted(specs)}")
        specs = {m: specs[m] for m in wanted}
    rows = []
    for epoch in range(args.epochs):
        windows = generate_windows(args.windows, seed=args.seed + epoch)
        for wi, w in enumerate(tqdm(windows, desc=f"epoch {epoch + 1}", unit="window")):
            for name, spec in specs.items():
                if name.startswith("scip") and wi >= args.scip_windows:
                    continue
                rows.append(dict(set="paper", epoch=epoch + 1, window=wi, jobs=w.n_jobs,
                                 idle=w.n_idle, **solve_row(w, name, spec, args.seed + wi)))
    if args.big:
        big_specs = {k: specs[k] for k in ("scas-exact", "scip", "scip-compact", "cpsat",
                                           "cpsat-paper", "sa-500") if k in specs}
        if "scas-exact" in big_specs:
            big_specs["scas-exact"] = ("scas", "scas-exact", {}, 60.0)
        for wi, w in enumerate(tqdm(big_windows(args.big, args.seed), desc="20-job windows")):
            for name, spec in big_specs.items():
                rows.append(dict(set="20 jobs", epoch=0, window=wi, jobs=w.n_jobs,
                                 idle=w.n_idle, **solve_row(w, name, spec, args.seed + wi)))
    df = pd.DataFrame(rows)
    df.to_csv(out / f"tjap_solvers{args.tag}.csv", index=False)
    summary = summarize(df)
    summary.to_csv(out / f"tjap_solvers{args.tag}_summary.csv", index=False)
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(summary.to_string(index=False))
        print(per_epoch(df).to_string())
    plot(df, out / f"tjap_solvers{args.tag}.png")


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """Per set and method: mean cost, cost relative to the SCAS optimum on the same windows,
    median / p90 / max time, share proved optimal."""
    rows = []
    for (set_, method), g in df.groupby(["set", "method"], sort=False):
        ref = df[(df["set"] == set_) & (df["method"] == "scas-exact")].set_index(
            ["epoch", "window"])["cost"]
        rel = g.set_index(["epoch", "window"])["cost"] / ref.reindex(
            g.set_index(["epoch", "window"]).index)
        rows.append(dict(set=set_, method=method, windows=len(g), mean_cost=g["cost"].mean(),
                         cost_vs_scas_opt=rel.mean(), median_ms=1e3 * g["time_s"].median(),
                         p90_ms=1e3 * g["time_s"].quantile(0.9), max_ms=1e3 * g["time_s"].max(),
                         optimal=(g["status"] == "OPTIMAL").mean(),
                         certified=g["certified"].mean()))
    return pd.DataFrame(rows)


def per_epoch(df: pd.DataFrame) -> pd.DataFrame:
    """The paper's Table III layout: mean cost and time per epoch and method."""
    paper = df[df["set"] == "paper"]
    cost = paper.pivot_table(index="epoch", columns="method", values="cost", aggfunc="mean")
    secs = paper.pivot_table(index="epoch", columns="method", values="time_s", aggfunc="mean")
    table = cost.round(0).astype("Int64").astype(str) + " / " + secs.round(3).astype(str) + "s"
    if {"nsa-500", "sa-1000"} <= set(cost):
        table["impr nsa-500 vs sa-1000"] = (
            100 * (cost["sa-1000"] - cost["nsa-500"]) / cost["sa-1000"]).round(2).astype(str) + "%"
    return table


def plot(df: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, set_ in zip(axes, ["paper", "20 jobs"]):
        g = df[df["set"] == set_]
        if g.empty:
            ax.set_visible(False)
            continue
        names = list(dict.fromkeys(g["method"]))
        ax.boxplot([1e3 * g[g["method"] == m]["time_s"] for m in names], tick_labels=names)
        ax.set_yscale("log")
        ax.set_ylabel("time per window (ms)")
        ax.set_title(f"{set_} windows")
        ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
