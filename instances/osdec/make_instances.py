"""Regenerate the bundled OSDEC instances (seeded, deterministic), or write a one-day one.

Run from the repository root::

    python instances/osdec/make_instances.py                 # the bundled files + optima.csv
    python instances/osdec/make_instances.py --day OUT.json  # 288 slots, ~3,000 jobs
        [--slots 288] [--jobs 3000] [--seed 1] [--max-defer 6] [--window 12]

The jobs are synthetic (the Azure workload generator of issue #13 is not this script):

- capacity: ``C_t = total - on-demand_t`` with a diurnal on-demand load ``total * (0.55 +
  0.25 sin(2 pi t / T - pi / 2))`` plus 5% noise, clipped to ``[0, total]``;
- arrivals: ``jobs`` submission slots drawn with the same diurnal shape (more by day);
- cores over {1, 2, 4, 8} with the Azure v1 train mix [0.450, 0.278, 0.113, 0.158] (spec);
- durations in slots: 60% U{1..6}, 30% U{7..24}, 10% U{25..72};
- ``earliest = submit + U{0..max_defer}``, ``latest = earliest + U{0..window}`` (spec recipe);
- ``total`` is set so that the jobs' core-slots are ~1.25x the capacity left over the day
  (oversubscribed: what to drop and when to start matters).

Each bundled optimum is accepted only when ``scip`` and ``cpsat`` prove the same value.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

from hpcopt.instances import save_instance
from hpcopt.models.osdec import OSDECModel
from hpcopt.solvers import solve

HERE = Path(__file__).resolve().parent
SEED = 20260113
CORES = (1, 2, 4, 8)
CORE_MIX = (0.450, 0.278, 0.113, 0.158)


def synthetic(slots: int, n_jobs: int, seed: int, *, max_defer: int = 6, window: int = 12,
              oversubscription: float = 1.25, w1: float = 2, w2: float = 10) -> OSDECModel:
    """A synthetic day (see the module docstring)."""
    rng = np.random.default_rng(seed)
    t = np.arange(slots)
    shape = 0.55 + 0.25 * np.sin(2 * np.pi * t / slots - np.pi / 2)
    cores = rng.choice(CORES, n_jobs, p=np.array(CORE_MIX) / sum(CORE_MIX))  # sums to 0.999
    kind = rng.random(n_jobs)
    duration = np.where(kind < 0.6, rng.integers(1, 7, n_jobs),
                        np.where(kind < 0.9, rng.integers(7, 25, n_jobs),
                                 rng.integers(25, 73, n_jobs)))
    duration = np.minimum(duration, max(1, slots // 2))
    arrival_p = shape / shape.sum()  # deferrable demand follows the day like on-demand
    submit = np.sort(rng.choice(slots, n_jobs, p=arrival_p))
    earliest = submit + rng.integers(0, max_defer + 1, n_jobs)
    latest = earliest + rng.integers(0, window + 1, n_jobs)
    demand = float((cores * duration).sum())
    free_share = (1.0 - shape).sum()  # capacity left per unit of total, summed over slots
    total = max(1, int(round(demand / oversubscription / free_share)))
    on_demand = total * (shape + rng.normal(0, 0.05, slots))
    capacity = np.clip(np.round(total - on_demand), 0, total).astype(int)
    jobs = [{"id": f"j{i}", "cores": int(cores[i]), "duration": int(duration[i]),
             "submit": int(submit[i]), "earliest": int(earliest[i]), "latest": int(latest[i])}
            for i in range(n_jobs)]
    return OSDECModel.from_dict({"slots": slots, "capacity": capacity.tolist(), "w1": w1,
                                 "w2": w2, "jobs": jobs})


def tiny() -> OSDECModel:
    """Hand-made: 4 jobs on 6 slots; optimum 14, reached two ways: a@0, b@2, d@4 (b and d a
    slot late, c dropped) or a@0, c@2, d@4 (b dropped)."""
    return OSDECModel.from_dict({"slots": 6, "capacity": [4, 4, 2, 2, 4, 4], "w1": 2, "w2": 10,
                                 "jobs": [
        {"id": "a", "cores": 4, "duration": 2, "submit": 0, "earliest": 0, "latest": 2},
        {"id": "b", "cores": 2, "duration": 3, "submit": 0, "earliest": 1, "latest": 3},
        {"id": "c", "cores": 2, "duration": 2, "submit": 1, "earliest": 2, "latest": 2},
        {"id": "d", "cores": 1, "duration": 4, "submit": 2, "earliest": 3, "latest": 5}]})


BUNDLED = (
    ("tiny_4jobs", tiny, "4 hand-made jobs on 6 slots (capacity dips at slots 2-3)"),
    ("small_12slots_20jobs", lambda: synthetic(12, 20, SEED, max_defer=2, window=3),
     "synthetic: 12 slots, 20 jobs, defer <= 2, window <= 3 (make_instances.synthetic)"),
    ("quarter_day_72slots_150jobs", lambda: synthetic(72, 150, SEED + 1),
     "synthetic: 72 slots (6 hours of 5-minute slots), 150 jobs, defer <= 6, window <= 12"),
)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--day", metavar="OUT", help="write one synthetic day instance here")
    ap.add_argument("--slots", type=int, default=288)
    ap.add_argument("--jobs", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-defer", type=int, default=6)
    ap.add_argument("--window", type=int, default=12)
    args = ap.parse_args(argv)
    if args.day:
        m = synthetic(args.slots, args.jobs, args.seed, max_defer=args.max_defer,
                      window=args.window)
        path = save_instance(args.day, m, Path(args.day).stem,
                             description=f"synthetic day: {args.slots} slots, {args.jobs} jobs",
                             meta={"generator": "instances/osdec/make_instances.py",
                                   "seed": args.seed, "max_defer": args.max_defer,
                                   "window": args.window})
        print(f"wrote {path}")
        return
    rows = []
    for name, build, description in BUNDLED:
        m = build()
        a, b = solve(m, "scip"), solve(m, "cpsat")
        assert a.status.value == b.status.value == "OPTIMAL", (name, a.status, b.status)
        assert a.objective == b.objective, (name, a.objective, b.objective)
        save_instance(HERE / f"{name}.json", m, name, description=description,
                      meta={"generator": "instances/osdec/make_instances.py", "seed": SEED})
        rows.append({"instance": name, "optimum": a.objective, "slots": m.slots,
                     "jobs": m.n_jobs})
        print(name, a.objective, f"scip {a.wall_time:.2f}s cpsat {b.wall_time:.2f}s")
    with open(HERE / "optima.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["instance", "optimum", "slots", "jobs"])
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
