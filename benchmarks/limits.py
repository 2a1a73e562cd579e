"""Time limits, memory and the greedy floor on large windows, every backend, one limit.

Usage::

    python benchmarks/limits.py [--time-limit 2] [--only scas700,osdec-day,...]

Instances (built deterministically; the SCAS/DCAS windows and the OSDEC day need the real
data directory next to the checkout):

- ``scas700`` / ``dcas700``: one window of 28 jobs on 700 idle nodes of the paper-1000
  fat-tree: the job sizes are the lzk23 TJAP job file's (``topology_alloc``), the busy nodes
  are placed by the file's earlier jobs at random positions (seed 1), the window is the next
  28 jobs that fit.
- ``osdec-day``: ``hpcopt workload osdec v1.dev.txt.gz --slots 288 --seed 1
  --deferrable-share 0.15`` (11,888 jobs).
- ``knapsack500``: 500 items, 3 resources, integer data (seed 0).
- ``bbsched300``: 300 jobs of Theta-like sizes, two objectives, integer burst buffer (seed
  0); ``bbsched50x4``: 50 such jobs with SSD requests, four objectives.

Each (instance, backend) runs in a fresh process (``--one``), so the wall time includes the
first import of the backend's library, as a user's first solve does, and the peak memory is
that process's maximum resident set.  Prints, per row: limit, wall, peak RSS, status,
objective, the greedy objective of the same model, the best heuristic's objective at the same
limit (``HEURISTICS``: the least an anytime backend may answer) and the bound; writes
``benchmarks/results/limits/limits_<limit>s.csv`` and prints the Markdown table.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from hpcopt.datadir import data_root

REPO = Path(__file__).resolve().parents[1]
DATA = data_root()  # the data directory (hpcopt.datadir)
LZK23 = DATA / "topology_alloc" / "lzk23_hpcschedule" / "data_large_1800_40.txt.gz"
AZURE = DATA / "cloud" / "azure_v1_vmtable_derived" / "v1.dev.txt.gz"
OUT = REPO / "benchmarks" / "results" / "limits"

BACKENDS = {
    "scas700": ["sequential", "scas-exact", "cpsat", "scip", "pyomo:appsi_highs",
                "pyomo:scip_direct"],
    "dcas700": ["sequential", "sa", "nsa"],
    "osdec-day": ["osdec-greedy", "cpsat", "scip", "pyomo:appsi_highs", "pyomo:scip_direct"],
    "knapsack500": ["greedy", "dp", "ortools", "cpsat", "scip", "pyomo:appsi_highs",
                    "pyomo:scip_direct"],
    "bbsched300": ["pareto-exact", "bbsched-ga", "nsga2"],
    "bbsched50x4": ["pareto-exact", "bbsched-ga", "nsga2"],
}
GREEDY = {"scas": "sequential", "dcas": "sequential", "osdec": "osdec-greedy",
          "knapsack": "greedy"}
GREEDY_OPTIONS = {"osdec": {"lp": False, "passes": 0}}  # the greedy's first complete pass
# the project's heuristics per model kind: the "heuristic" column is the best of them at the
# same time limit, the least an anytime backend may answer
HEURISTICS = {"scas": ["sequential"], "dcas": ["sequential", "sa"], "osdec": ["osdec-greedy"],
              "knapsack": ["greedy"]}


def allocation_window(kind: str = "scas", n_idle: int = 700, n_jobs: int = 28, seed: int = 1):
    """A SCAS (or DCAS) window from the lzk23 job sizes on the hpcschedule-1000 machine."""
    from hpcopt.models.dcas import DCASModel
    from hpcopt.models.scas import SCASModel
    from hpcopt.traces.tjap import load_tjap_jobs

    sizes = [j.nodes for j in load_tjap_jobs(LZK23, max_jobs=2000)]
    rng = np.random.default_rng(seed)
    busy = np.zeros(1000, dtype=bool)
    k = 0
    while busy.sum() < 1000 - n_idle:
        n = min(sizes[k], 1000 - n_idle - int(busy.sum()))
        k += 1
        free = np.flatnonzero(~busy)
        first = int(rng.integers(0, free.size - n + 1))
        busy[free[first:first + n]] = True
    window: list[int] = []
    for n in sizes[k:]:
        if sum(window) + n <= n_idle:
            window.append(n)
        if len(window) == n_jobs:
            break
    cls = SCASModel if kind == "scas" else DCASModel
    return cls("paper-1000", idle_nodes=np.flatnonzero(~busy), sizes=window)


def osdec_day(slots: int = 288, share: float = 0.15):
    from hpcopt.workloads import deferrable_model

    return deferrable_model(AZURE, slots=slots, seed=1, deferrable_share=share)


def knapsack(n: int = 500, m: int = 3, seed: int = 0):
    from hpcopt.models.knapsack import KnapsackModel

    rng = np.random.default_rng(seed)
    weights = rng.integers(1, 1001, size=(m, n))
    values = weights.sum(axis=0) // m + rng.integers(0, 101, size=n)
    return KnapsackModel(values, weights, weights.sum(axis=1) // 2)


def bbsched(n: int = 300, seed: int = 0, four: bool = False):
    """A BBSched window: Theta-like node counts, integer burst buffer on 60% of the jobs;
    ``four``: SSD requests and half 128 GB / half 256 GB nodes, four objectives."""
    from hpcopt.models.bbsched import BBSchedModel

    rng = np.random.default_rng(seed)
    nodes = rng.choice([1, 2, 4, 8, 16, 32, 128, 256], size=n)
    bb = np.where(rng.random(n) < 0.6, np.ceil(rng.uniform(250, 8000, n)), 0.0)
    if four:
        ssd = np.where(rng.random(n) < 0.5, rng.integers(0, 129, n), rng.integers(129, 257, n))
        return BBSchedModel(nodes, bb, ssd, free_bb=20000.0,
                            ssd_classes={128: 1000, 256: 1000}, objectives=4)
    return BBSchedModel(nodes, bb, free_nodes=2000, free_bb=20000.0)


INSTANCES = {"scas700": lambda: allocation_window("scas"),
             "dcas700": lambda: allocation_window("dcas"),
             "osdec-day": osdec_day, "knapsack500": knapsack, "bbsched300": bbsched,
             "bbsched50x4": lambda: bbsched(50, four=True)}


def one(name: str, backend: str, limit: float, margin: float | None = None) -> dict:
    """Solve one instance with one backend (in this process) and return the row; ``margin``
    replaces the registry's ``BUILD_MARGIN`` (1: a build starts when its estimate fits)."""
    import hpcopt
    from hpcopt.solvers import registry

    if margin is not None:
        registry.BUILD_MARGIN = margin

    model = INSTANCES[name]()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    res = hpcopt.solve(model, backend=backend, time_limit=limit)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    greedy = None
    if model.kind in GREEDY:
        g = hpcopt.solve(model, backend=GREEDY[model.kind],
                         solver_options=GREEDY_OPTIONS.get(model.kind))
        greedy = g.objective
    heuristic = None
    if model.kind in HEURISTICS:  # each at the same limit, after the timed solve
        values = [hpcopt.solve(model, backend=h, time_limit=limit).objective
                  for h in HEURISTICS[model.kind]]
        heuristic = max(values) if model.sense == "max" else min(values)
    bound = res.bound if res.bound is not None and math.isfinite(res.bound) else None
    return {"instance": name, "backend": backend, "limit_s": limit, "wall_s": round(wall, 2),
            "overshoot_s": round(wall - limit, 2), "peak_rss_mb": round(peak),
            "rss_before_mb": round(before), "status": res.status.value,
            "limit": res.limit.value if res.limit else "",
            "objective": res.objective, "greedy": greedy, "heuristic": heuristic,
            "bound": bound,
            "note": res.extra.get("refused", "greedy fallback"
                                  if res.extra.get("greedy_fallback") else "")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--time-limit", type=float, default=2.0)
    ap.add_argument("--only", default=",".join(INSTANCES))
    ap.add_argument("--backends", default=None, help="only these backends (comma-separated)")
    ap.add_argument("--build-margin", type=float, default=None,
                    help="start a build when this many times its estimate fits (default: "
                         "the registry's BUILD_MARGIN; 1 is the rule before it)")
    ap.add_argument("--one", nargs=2, metavar=("INSTANCE", "BACKEND"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(*args.one, args.time_limit, args.build_margin)))
        return
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.only.split(","):
        for backend in BACKENDS[name]:
            if args.backends and backend not in args.backends.split(","):
                continue
            margin = [] if args.build_margin is None else ["--build-margin",
                                                           str(args.build_margin)]
            proc = subprocess.run([sys.executable, __file__, "--one", name, backend,
                                   "--time-limit", str(args.time_limit), *margin],
                                  capture_output=True, text=True, cwd=REPO)
            if proc.returncode:
                row = {"instance": name, "backend": backend, "limit_s": args.time_limit,
                       "status": "CRASH", "note": proc.stderr.strip().splitlines()[-1]}
            else:
                row = json.loads(proc.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(" ".join(f"{k}={row.get(k)}" for k in (
                "instance", "backend", "limit_s", "wall_s", "peak_rss_mb", "status", "limit",
                "objective", "greedy", "heuristic", "bound", "note")), flush=True)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    tag = "" if args.build_margin is None else f"_margin{args.build_margin:g}"
    path = OUT / f"limits_{args.time_limit:g}s{tag}.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {path}")
    print(markdown(rows))
    print(f"most past the limit: {max(r.get('overshoot_s') or 0 for r in rows):.2f} s")


def _num(value, digits: int = 0) -> str:
    if value in (None, ""):
        return ""
    return f"{float(value):,.{digits}f}"


def short_note(note: str) -> str:
    """A refusal as the table words it."""
    import re

    m = re.match(r"(.*) takes about ([\d.]+) s and cannot be stopped; it starts only when "
                 r"([\d.]+)x that fits the .* left", note or "")
    if m:
        return f"not started: {m[1]} takes about {m[2]} s ({m[3]}x that is over the time left)"
    if (note or "").startswith("no time left after the heuristic start"):
        return "not started: the heuristic start used the whole limit (its answer)"
    return note or ""


def markdown(rows: list[dict]) -> str:
    """The rows as the Markdown table of benchmarks/README.md ("Limits")."""
    head = ("| instance | backend | wall s | peak RSS MB | status | stopped by | objective | "
            "greedy | heuristic | bound | note |")
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for r in rows:
        lines.append("| " + " | ".join([
            r["instance"], r["backend"], _num(r.get("wall_s"), 2), _num(r.get("peak_rss_mb")),
            r.get("status", ""), r.get("limit") or "", _num(r.get("objective")),
            _num(r.get("greedy")), _num(r.get("heuristic")), _num(r.get("bound")),
            short_note(r.get("note"))]) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
