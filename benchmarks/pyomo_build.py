"""The pyomo backends' build against its estimate: model build, the solver's load, memory.

Usage::

    python benchmarks/pyomo_build.py [--only osdec-day,scas700,...] [--solvers appsi_highs]
        [--late 3,5,8]

A ``pyomo:<solver>`` solve builds the pyomo model (``model.to_pyomo()``) and then hands it to
the solver (appsi's ``set_instance``; the direct interfaces' load inside ``solve``); neither
can be stopped, so the backend estimates both from the model's size before it starts
(``footprint``) and refuses a build that cannot fit the time left.  This prints, per instance
and solver, the measured build and load seconds and the memory they added next to the
estimate, and the ratio; writes ``benchmarks/results/limits/pyomo_build.csv``
(``pyomo_build_late_<solvers>.csv`` with ``--late``).  Each row runs
in a fresh process (pyomo imported before the clock starts, as in a second solve).

``--late``: the loaded model is also solved at each of these time limits (seconds of the
solver's own clock, after the load), and the row says how far past each the solver ran (the
most, and all of them) next to the estimate the backend keeps off the solver's limit for it
(``est_stop_s``).  SCIP is timed by pyomo's timer around its ``optimize`` (its interface
reloads the model for every solve).

Instances are ``benchmarks/limits.py``'s, plus cuts of them (``osdec-day96``: the day at 96
slots; ``scas400``: the 16-job window on 400 idle nodes of ``tests/test_limits.py``).
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "limits"
SOLVERS = ("appsi_highs", "scip_direct")


def instances() -> dict:
    import limits

    return {
        "knapsack500": (limits.knapsack, None),
        "scas400": (lambda: limits.allocation_window("scas", n_idle=400, n_jobs=16), None),
        "scas400-compact": (lambda: limits.allocation_window("scas", n_idle=400, n_jobs=16),
                            "compact"),
        "scas700": (lambda: limits.allocation_window("scas"), None),
        "scas700-compact": (lambda: limits.allocation_window("scas"), "compact"),
        "osdec-day96": (lambda: limits.osdec_day(slots=96), None),
        "osdec-day": (limits.osdec_day, None),
    }


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def late(solver: str, opt, pm, limit: float) -> float:
    """Seconds ``solver`` ran past ``limit`` (its own time limit) on the loaded ``pm``."""
    if solver == "scip_direct":
        from pyomo.common.timing import HierarchicalTimer
        from pyomo.contrib.solver.solvers.scip.scip_direct import ScipDirect

        timer = HierarchicalTimer()
        ScipDirect().solve(pm, time_limit=limit, timer=timer, load_solutions=False,
                           raise_exception_on_nonoptimal_result=False)
        return timer.timers["optimize"].total_time - limit
    opt.options["time_limit"] = limit  # appsi's HiGHS, loaded by the backend's ``_load``
    t0 = time.perf_counter()
    opt.solve(pm, load_solutions=False)
    return time.perf_counter() - t0 - limit


def one(name: str, solver: str, limits: list[float]) -> dict:
    """Build and load one instance for one solver in this process; the measured row."""
    import pyomo.environ  # noqa: F401  (imported before the clock, as in a second solve)
    from pyomo.opt import SolverFactory

    from hpcopt.solvers.pyomo_backend import OPTION_NAMES, Pyomo, loads_first
    from hpcopt.solvers.registry import get_solver

    make, form = instances()[name]
    model = make()
    est = get_solver(f"pyomo:{solver}").build_estimate(model, form)
    vars_, rows, nz = model.algebraic_size(form) if form else model.algebraic_size()
    before = rss_mb()
    t0 = time.perf_counter()
    pm = model.to_pyomo() if form is None else model.to_pyomo(form)
    build = time.perf_counter() - t0
    opt = SolverFactory(solver)
    t1 = time.perf_counter()
    if loads_first(opt):  # the backend's own load
        Pyomo._load(opt, pm, est, build)
    else:  # the direct interfaces load inside solve: a solve stopped at once
        opt.options[OPTION_NAMES[solver][0]] = 0.01
        opt.solve(pm, load_solutions=False)
    load = time.perf_counter() - t1
    mb = rss_mb() - before
    row = {"instance": name, "solver": solver, "vars": vars_, "rows": rows, "nonzeros": nz,
            "build_s": round(build, 2), "load_s": round(load, 2),
            "est_build_s": round(est.build_s, 2), "est_load_s": round(est.load_s, 2),
            "time_ratio": round((build + load) / (est.build_s + est.load_s), 2),
            "mb": round(mb), "est_mb": round(est.megabytes),
            "mb_ratio": round(mb / est.megabytes, 2)}
    if limits:
        lates = [round(late(solver, opt, pm, limit), 2) for limit in limits]
        row.update(late_max_s=max(lates), est_stop_s=round(est.stop_s, 2),
                   late_s=" ".join(f"{limit:g}:{d:g}" for limit, d in zip(limits, lates)))
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default=None, help="instances (comma-separated; default all)")
    ap.add_argument("--solvers", default=",".join(SOLVERS))
    ap.add_argument("--late", default="", help="time limits (comma-separated) to solve at")
    ap.add_argument("--one", nargs=2, metavar=("INSTANCE", "SOLVER"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    limits = [float(v) for v in args.late.split(",") if v]
    if args.one:
        print(json.dumps(one(*args.one, limits)))
        return
    names = args.only.split(",") if args.only else list(instances())
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in names:
        for solver in args.solvers.split(","):
            proc = subprocess.run([sys.executable, __file__, "--one", name, solver,
                                   "--late", args.late],
                                  capture_output=True, text=True, cwd=REPO)
            if proc.returncode:
                print(f"{name} {solver}: {proc.stderr.strip().splitlines()[-1]}", flush=True)
                continue
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    tag = "_late_" + args.solvers.replace(",", "_") if limits else ""
    path = OUT / f"pyomo_build{tag}.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(dict.fromkeys(k for r in rows for k in r)))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]
    main()
