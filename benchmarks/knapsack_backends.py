"""Time every knapsack backend on random scheduling windows and check that they agree.

Each window holds ``--items`` queued jobs on a ``--system``-node machine with a random number of
free nodes (uniform in 1..system).  Job sizes (and requested walltimes) are sampled from the
ALCF Theta 2022 trace when it is readable (``--sizes theta``), or drawn log-uniformly in
1..system.  The value of a job is its node count (``--value nodes``: maximize node utilization)
or its requested node-hours (``--value nodehours``).

For each backend: median and p90 time of ``solver.solve`` (the registry call, certificate
included; per window the best of ``--repeat`` runs; backends interleaved window by window),
agreement with ``dp`` (fraction of windows with the same optimum, and with the very same
decision: exact backends return the canonical optimum), and for ``greedy`` the mean ratio to
the optimum.  ``dp-pure`` is the
DP algorithm alone (``solve_arrays`` on the reduced data), without the Result wrapper.

    python benchmarks/knapsack_backends.py --n-windows 200 --seed 0

Writes ``benchmarks/results/knapsack_backends_<value>_<sizes>.csv`` (one row per result),
``..._summary.csv`` and ``....png`` (box plot of solve times).
"""

from __future__ import annotations

import argparse
import csv
import time
from functools import partial
from pathlib import Path

import numpy as np

import hpcopt.solvers as S
from hpcopt.datadir import data_root, missing_data
from hpcopt.models.knapsack import KnapsackModel
from hpcopt.solvers.knapsack_dp import solve_arrays

THETA = data_root() / "hpc_swf" / "alcf" / "theta_2022.swf.gz"  # hpcopt.datadir
RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_BACKENDS = ["dp", "ortools", "cpsat", "scip", "pyomo:appsi_highs", "pyomo:scip_direct",
                    "greedy"]


def theta_jobs() -> np.ndarray | None:
    """(nodes, requested hours) of every Theta 2022 job, or None when the trace is absent."""
    if not THETA.is_file():
        return None
    table = np.loadtxt(THETA, comments=";", usecols=(4, 8))
    table = table[(table[:, 0] > 0) & (table[:, 1] > 0)]
    return np.column_stack([table[:, 0], np.ceil(table[:, 1] / 3600)]).astype(np.int64)


def windows(args) -> list[KnapsackModel]:
    rng = np.random.default_rng(args.seed)
    pool = theta_jobs() if args.sizes == "theta" else None
    if args.sizes == "theta" and pool is None:
        raise SystemExit(f"--sizes theta {missing_data(THETA.relative_to(data_root()))} (or "
                         "use --sizes loguniform)")
    out = []
    for _ in range(args.n_windows):
        if pool is not None:
            jobs = pool[rng.integers(0, len(pool), args.items)]
            nodes, hours = jobs[:, 0].clip(1, args.system), jobs[:, 1]
        else:
            nodes = np.exp(rng.uniform(0, np.log(args.system), args.items)).astype(np.int64)
            hours = rng.integers(1, 25, args.items)
        free = int(rng.integers(1, args.system + 1))
        values = nodes if args.value == "nodes" else nodes * hours
        out.append(KnapsackModel(values, nodes, free))
    return out


def best_of(repeat: int, fn):
    """(best wall time of ``repeat`` calls, last return value)."""
    best, value = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - t0)
    return best, value


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-windows", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--backends", default=",".join(DEFAULT_BACKENDS),
                        help="comma-separated backend names (dp is always run: the reference)")
    parser.add_argument("--items", type=int, default=50, help="jobs per window")
    parser.add_argument("--system", type=int, default=4360, help="nodes in the machine")
    parser.add_argument("--value", choices=["nodes", "nodehours"], default="nodes")
    parser.add_argument("--sizes", choices=["theta", "loguniform"], default="theta")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per window (best kept)")
    parser.add_argument("--tie-break", choices=["dp", "resolve"], default="dp",
                        help="how the MIP backends (cpsat, scip, pyomo:*) reach the canonical "
                             "optimum: the dp (default) or their own re-solves")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)

    models = windows(args)
    names = [b for b in args.backends.split(",") if b]
    if "dp" not in names:
        names.insert(0, "dp")
    solvers = {name: S.get_solver(name) for name in names}
    options = {name: {"tie_break": args.tie_break} if "tie_break" in s.OPTIONS else {}
               for name, s in solvers.items()}
    for name, solver in solvers.items():
        solver.solve(models[0], seed=0, solver_options=options[name])  # warm-up: imports
    rows = []
    for w, model in enumerate(models):  # interleaved, so machine noise hits every backend alike
        for name, solver in solvers.items():
            t, res = best_of(args.repeat, partial(solver.solve, model, seed=0,
                                                  solver_options=options[name]))
            rows.append(dict(window=w, backend=name, status=res.status.value,
                             objective=res.objective, seconds=t, certified=res.certified,
                             decision="".join(map(str, res.decision or ()))))
        red = model.reduced(integer_weights=True, backend="dp")
        t, _ = best_of(args.repeat, partial(solve_arrays, red.values, red.weights, red.capacities))
        rows.append(dict(window=w, backend="dp-pure", status="", objective=None, seconds=t,
                         certified=None, decision=""))

    optimum = {r["window"]: r["objective"] for r in rows if r["backend"] == "dp"}
    canonical = {r["window"]: r["decision"] for r in rows if r["backend"] == "dp"}
    summary = []
    for name in names + ["dp-pure"]:
        mine = [r for r in rows if r["backend"] == name]
        times = np.array([r["seconds"] for r in mine]) * 1e3
        row = dict(backend=name, median_ms=np.median(times), p90_ms=np.percentile(times, 90))
        if name != "dp-pure":
            row["agree_with_dp"] = np.mean([abs(r["objective"] - optimum[r["window"]]) <= 1e-6
                                            for r in mine])
            row["same_decision"] = np.mean([r["decision"] == canonical[r["window"]]
                                            for r in mine])
            row["optimal"] = np.mean([r["status"] == "OPTIMAL" for r in mine])
            row["certified"] = np.mean([bool(r["certified"]) for r in mine])
            row["mean_ratio"] = np.mean([r["objective"] / optimum[r["window"]] for r in mine
                                         if optimum[r["window"]] > 0])
        summary.append(row)

    print(f"{args.n_windows} windows of {args.items} jobs, {args.system}-node system, "
          f"sizes={args.sizes}, value={args.value}, seed={args.seed}, best of {args.repeat}, "
          f"tie_break={args.tie_break}")
    header = (f"{'backend':<20}{'median ms':>11}{'p90 ms':>10}{'agree':>8}{'same x':>8}"
              f"{'optimal':>9}{'ratio':>8}")
    print(header)
    print("-" * len(header))
    for row in summary:
        extra = ("" if row["backend"] == "dp-pure" else
                 f"{row['agree_with_dp']:>8.3f}{row['same_decision']:>8.3f}{row['optimal']:>9.3f}"
                 f"{row['mean_ratio']:>8.4f}")
        print(f"{row['backend']:<20}{row['median_ms']:>11.3f}{row['p90_ms']:>10.3f}{extra}")

    args.out.mkdir(parents=True, exist_ok=True)
    tag = "" if args.tie_break == "dp" else f"_{args.tie_break}"
    stem = args.out / f"knapsack_backends_{args.value}_{args.sizes}{tag}"
    for path, table in ((Path(f"{stem}.csv"), rows), (Path(f"{stem}_summary.csv"), summary)):
        with open(path, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(table[0]))
            writer.writeheader()
            writer.writerows(table)
    plot(rows, names + ["dp-pure"], f"{stem}.png", args)
    print(f"wrote {stem}.csv, {stem}_summary.csv, {stem}.png")


def plot(rows, names, path, args) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = [[r["seconds"] * 1e3 for r in rows if r["backend"] == n] for n in names]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.boxplot(data, showfliers=False)
    ax.set_xticks(range(1, len(names) + 1), names, rotation=20)
    ax.set_yscale("log")
    ax.axhline(0.2, color="red", linestyle="--", linewidth=1, label="0.2 ms target")
    ax.set_ylabel("solve time per window (ms, log)")
    ax.set_title(f"{args.n_windows} windows x {args.items} jobs, {args.system} nodes, "
                 f"value={args.value}, sizes={args.sizes}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
