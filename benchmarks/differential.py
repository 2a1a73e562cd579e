"""Differential testing at scale: every exact backend against the independent oracles of
``tests/oracles.py`` on thousands of windows per model (issue #10, the slow tier).

Windows per model (each half generated, half met by simulations of the shared traces):

- knapsack: seeded generator (1-24 items, 1-2 resources, zero / tiny / 1e10 coefficients);
  ``--policy knapsack`` on KTH-SP2 (values nodes and capability), HPC2N (nodes), Theta 2022
  (wait) and KTH-SP2 with S2 burst buffers (two resources), recorded through the policy's
  solver;
- bbsched: seeded generator (two and four objectives, SSD classes); the bbsched policy on
  Theta 2022 (S1-S4), HPC2N (S2) and KTH-SP2 (S5-S7, four objectives), each window cut to its
  first --bbsched-jobs jobs (the oracle enumerates 2^n selections), plus --bbsched-w20
  whole 20-job windows of Theta (S1-S4); with exact data (burst buffer and SSD in multiples
  of 0.001) each front point's decision must be the canonical one (``BBSchedModel``);
- scas: seeded generator (2-5 jobs, 20-150 idle nodes, mixed sizes, wrap-around); windows
  dumped by ``hpcopt simulate <lzk23 job file> --topology P --policy tjap-window --tau 60
  --model scas --jobs N --dump-windows DIR`` for both presets (placed by scas-exact);
  windows too big for the oracle's DP are counted as skipped; on windows of at most 20,000
  placements an OPTIMAL decision must be the canonical one (exact-fraction brute force).

Each backend runs the windows in a seeded shuffled order until it has done them all or
spent --budget seconds (MIP backends on SCAS: --mip-budget), so slow backends run on a
subset (on SCAS only windows of <= --mip-idle idle nodes, 20 s per solve).  Integer-only
backends refusing fractional data with a clean ``ModelError`` count as "refused", not as
mismatches.  A window is a mismatch when the backend's optimum differs from the oracle's (or it
raised, or its decision fails the oracle's own feasibility check, or -- knapsack with integer
values -- an OPTIMAL decision is not the canonical one); "optimal_worse" counts OPTIMAL
claims with a worse objective, "max_excess" the largest relative shortfall (bbsched: share of
the front missed).  Writes results/differential.csv (one row per backend and window) and
results/differential_summary.csv.

    nice python benchmarks/differential.py [--quick] [--knapsack 3000] [--bbsched 3000]
        [--scas 3000] [--budget 600] [--mip-budget 120] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests import oracles as orc  # noqa: E402 - the oracles live with the tests

RESULTS = Path(__file__).resolve().parent / "results"


def _interleave(groups: dict[str, list], count: int, rng) -> list[tuple[str, object]]:
    """Up to ``count`` (source, model) pairs taking evenly from every source, shuffled."""
    per = max(1, count // max(len(groups), 1))
    out = []
    for name, models in groups.items():
        idx = np.linspace(0, len(models) - 1, min(per, len(models))).astype(int) \
            if models else []
        out += [(name, models[i]) for i in sorted(set(idx))]
    rng.shuffle(out)
    return out[:count]


def knapsack_windows(n: int, seed: int, quick: bool) -> list:
    rng = np.random.default_rng(seed)
    jobs = 1500 if quick else 6000
    traced = {
        "KTH/nodes": orc.knapsack_windows_from_trace("KTH", jobs),
        "KTH/capability": orc.knapsack_windows_from_trace("KTH", jobs, value="capability"),
        "HPC2N/nodes": orc.knapsack_windows_from_trace("HPC2N", jobs),
        "Theta/wait": orc.knapsack_windows_from_trace("Theta", jobs, value="wait"),
        "KTH-S2/nodes+bb": orc.knapsack_windows_from_trace("KTH", jobs, workload="S2",
                                                            seed=seed),
    }
    out = _interleave(traced, n - n // 2, rng)
    out += [("generated", orc.random_knapsack(rng)) for _ in range(n // 2)]
    rng.shuffle(out)
    return out


def bbsched_windows(n: int, seed: int, quick: bool, max_jobs: int, n20: int) -> list:
    rng = np.random.default_rng(seed + 1)
    jobs = 1500 if quick else 6000
    runs = [("Theta", w) for w in ("S1", "S2", "S3", "S4")] + [("HPC2N", "S2")] + [
        ("KTH", w) for w in ("S5", "S6", "S7")]
    if quick:
        runs = [("Theta", "S2"), ("KTH", "S6")]
    traced = {f"{t}-{w}": orc.bbsched_windows_from_trace(t, jobs, w, seed=seed,
                                                         max_jobs=max_jobs) for t, w in runs}
    out = _interleave(traced, n - n // 2, rng)
    out += [("generated", orc.random_bbsched(rng, max_jobs=min(max_jobs, 14)))
            for _ in range(n // 2)]
    if n20:  # full W = 20 windows of Theta (2^20 selections each)
        full = {f"Theta-{w}/W20": [m for m in orc.bbsched_windows_from_trace(
            "Theta", jobs, w, seed=seed, max_jobs=20) if m.n_items == 20]
            for w in ("S1", "S2", "S3", "S4")}
        out += _interleave(full, n20, rng)
    rng.shuffle(out)
    return out


def scas_windows(n: int, seed: int, quick: bool, tmp: Path, max_work: int) -> tuple:
    rng = np.random.default_rng(seed + 2)
    jobs = 600 if quick else 3000
    traced = {}
    for preset in orc.HOP_RULES:
        models = orc.scas_windows_from_trace(preset, jobs, tmp / preset)
        traced[f"lzk23/{preset}"] = [m for m in models if orc.scas_dp_work(m) <= max_work]
        print(f"  {preset}: {len(models)} windows dumped, "
              f"{len(models) - len(traced[f'lzk23/{preset}'])} too big for the oracle")
    out = _interleave(traced, n - n // 2, rng)
    out += [("generated", orc.random_scas(rng)) for _ in range(n // 2)]
    rng.shuffle(out)
    return out


def run_model(kind: str, windows: list, backends, budget: dict, rows: list,
              mip_idle: int | None = None) -> None:
    """Oracle once per window, then every backend until its budget is spent (SCAS MIP
    backends only on windows of at most ``mip_idle`` idle nodes)."""
    from tqdm.auto import tqdm

    compare = {"knapsack": orc.compare_knapsack, "bbsched": orc.compare_bbsched,
               "scas": orc.compare_scas}[kind]
    oracles = []
    for _source, m in tqdm(windows, desc=f"{kind} oracle", unit="window"):
        if kind == "knapsack":
            oracles.append({"oracle": orc.knapsack_oracle(m)})
        elif kind == "bbsched":
            front, canonical = orc.bbsched_oracle(m)
            oracles.append({"front": front, "canonical": canonical})
        else:
            oracles.append({"oracle": orc.scas_oracle(m)[0]})
    for backend in backends:
        if not orc_available(backend):
            print(f"{kind}/{backend}: not installed, skipped")
            continue
        spent, limit = 0.0, budget.get(backend, budget["default"])
        for k, ((source, m), extra) in enumerate(tqdm(list(zip(windows, oracles)),
                                                      desc=f"{kind} {backend}", unit="window")):
            if spent > limit:
                break
            mip = kind == "scas" and backend != "scas-exact"
            if mip and mip_idle and m.n_idle > mip_idle:
                continue
            t0 = time.perf_counter()
            if kind == "scas":  # canonical decision on brute-force-size windows
                extra = dict(extra, canonical=True)
            chk = compare(m, backend, source, time_limit=20 if mip else 60, **extra)
            spent += time.perf_counter() - t0
            row = asdict(chk)
            row.update(window=k, size=getattr(m, "n_items", None) or m.n_jobs,
                       extra=str(row["extra"]) if row["extra"] else "",
                       instance=json.dumps(m.to_dict()) if chk.mismatch else "")
            rows.append(row)


def orc_available(name: str) -> bool:
    from hpcopt.solvers import get_solver

    try:
        return bool(get_solver(name).available())
    except Exception:  # noqa: BLE001
        return False


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    g = df.groupby(["model", "backend"], sort=False)
    return pd.DataFrame({
        "windows": g.size(),
        "mismatches": g.mismatch.sum(),
        "optimal_worse": g.optimal_but_worse.sum(),
        "better_than_oracle": g.better_than_oracle.sum(),
        "decision_differs": g.decision_differs.sum(),
        "refused": g.refused.sum(),
        "not_optimal": g.status.apply(lambda s: int((s != "OPTIMAL").sum())),
        "max_excess": g.excess.max(),
        "median_ms": g.seconds.median() * 1e3,
    }).reset_index()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="~200 windows per model, short budgets")
    ap.add_argument("--knapsack", type=int, default=None, help="windows (default 3000)")
    ap.add_argument("--bbsched", type=int, default=None, help="windows (default 3000)")
    ap.add_argument("--scas", type=int, default=None, help="windows (default 3000)")
    ap.add_argument("--bbsched-jobs", type=int, default=16, help="jobs per bbsched window")
    ap.add_argument("--bbsched-w20", type=int, default=None,
                    help="extra Theta windows of 20 jobs (default 200, --quick 10)")
    ap.add_argument("--scas-work", type=int, default=3_000_000,
                    help="largest SCAS oracle DP (positions x sizes x states)")
    ap.add_argument("--budget", type=float, default=None, help="seconds per backend (600)")
    ap.add_argument("--mip-budget", type=float, default=None,
                    help="seconds per MIP backend on scas and for pyomo (120)")
    ap.add_argument("--mip-idle", type=int, default=80,
                    help="SCAS MIP backends only on windows of at most this many idle nodes")
    ap.add_argument("--models", default="knapsack,bbsched,scas")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    default_n = 200 if args.quick else 3000
    if args.bbsched_w20 is None:
        args.bbsched_w20 = 10 if args.quick else 200
    budget = args.budget or (60.0 if args.quick else 600.0)
    mip = args.mip_budget or (15.0 if args.quick else 120.0)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    kinds = [k.strip() for k in args.models.split(",")]
    rows: list = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        if "knapsack" in kinds:
            wins = knapsack_windows(args.knapsack or default_n, args.seed, args.quick)
            run_model("knapsack", wins, orc.KNAPSACK_EXACT,
                      {"default": budget, "pyomo:appsi_highs": mip}, rows)
        if "bbsched" in kinds:
            wins = bbsched_windows(args.bbsched or default_n, args.seed, args.quick,
                                   args.bbsched_jobs, args.bbsched_w20)
            run_model("bbsched", wins, orc.BBSCHED_EXACT, {"default": budget}, rows)
        if "scas" in kinds:
            wins = scas_windows(args.scas or default_n, args.seed, args.quick, Path(tmp),
                                args.scas_work)
            run_model("scas", wins, orc.SCAS_EXACT, {"default": mip, "scas-exact": budget},
                      rows, mip_idle=args.mip_idle)
    df = pd.DataFrame(rows)
    df.to_csv(out / "differential.csv", index=False)
    table = summarize(df)
    table.to_csv(out / "differential_summary.csv", index=False)
    with pd.option_context("display.width", 200):
        print(table.round({"max_excess": 4, "median_ms": 1}).to_string(index=False))
    bad = df[df.mismatch]
    for _, r in bad.head(20).iterrows():
        print(f"MISMATCH {r.model}/{r.backend} {r.source}: status {r.status} objective "
              f"{r.objective} oracle {r.oracle} {r.error} {r.extra}")
    print(f"{len(df)} checks in {time.perf_counter() - t0:.0f} s; wrote "
          f"{out / 'differential.csv'} and {out / 'differential_summary.csv'}")


if __name__ == "__main__":
    main()
