"""Safe defaults for the learned schedulers (issue #11): DRAS with default options on unseen data.

For each trace this runs FCFS + EASY (policy ``fcfs``), ``dras-pg`` and ``dras-dql`` with
the shipped checkpoints (trained on Theta 2022 months 1-2, validated on month 3), once with
DEFAULT options (no ``reserve`` argument: the library's default rule, ``"oldest"``) and once
with the paper's rule ``reserve="picked"``.  ``--bounds 5,20,50`` adds runs of both rules
with the driver's starvation bound ``starvation_bound=K``.  Every run: ``seed=0``, window
W = 50 (the policies' default), from an empty machine.

The target of issue #11: with default options on unseen data, average wait below FCFS+EASY's
AND maximum wait at most 1.5x FCFS+EASY's.

Traces (``--traces``, comma-separated):

- ``theta``: Theta 2022, the test months (``split_months(trace.jobs).test``: April-December,
  never used in training or checkpoint selection);
- ``kth``, ``hpc2n``, ``nasa``, ``llnl``: whole real traces (first ``--jobs N`` only if
  given) that the shipped checkpoints never saw.  The Theta checkpoints are used as is on
  these machines of other sizes (size-independent encoding).

``--scaled-load L`` adds, for each unseen trace whose offered load (node-seconds of work over
nodes x submit span) is below L, a stress variant with the submit times compressed about the
first submit so that the offered load is L (runtimes, sizes and requests unchanged); these
rows are labelled ``..., load L`` and are not real data.

Written to ``benchmarks/results/``: ``dras_safe_defaults.csv`` (one row per run),
``dras_safe_defaults.md`` (markdown tables) and ``dras_safe_defaults_meta.json`` (command,
git commit, traces, load average, wall times).

    python benchmarks/dras_safe_defaults.py [--traces theta,kth,hpc2n,nasa,llnl]
        [--jobs N] [--bounds 5,20,50] [--scaled-load 0.9] [--tag NAME]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import hpcopt
from hpcopt.datadir import data_root, missing_data

HERE = Path(__file__).resolve().parent
SHARED = data_root() / "hpc_swf"  # the data directory (hpcopt.datadir)
OUT = HERE / "results"
TRACES = {
    "theta": SHARED / "alcf" / "theta_2022.swf.gz",
    "kth": SHARED / "pwa" / "KTH-SP2-1996-2.1-cln.swf.gz",
    "hpc2n": SHARED / "pwa_subsets" / "HPC2N-2002-2.2-alea-subset.swf.gz",
    "nasa": SHARED / "pwa" / "NASA-iPSC-1993-3.1-cln.swf.gz",
    "llnl": SHARED / "pwa" / "LLNL-Atlas-2006-2.1-cln.swf.gz",
}
LABEL = {"theta": "Theta 2022 test months", "kth": "KTH-SP2 (whole)",
         "hpc2n": "HPC2N-2002 Alea subset (whole)", "nasa": "NASA-iPSC (whole)",
         "llnl": "LLNL-Atlas (whole)"}
SEED = 0
AVG_TARGET, MAX_TARGET = 1.0, 1.5  # avg wait < 1.0x FCFS, max wait <= 1.5x FCFS


def load_jobs(name: str, cap: int | None):
    from hpcopt.trainers.jobsets import split_months

    trace = hpcopt.load_trace(TRACES[name])
    jobs = list(split_months(trace.jobs).test) if name == "theta" else list(trace.jobs)
    if cap:
        jobs = jobs[:cap]
    return jobs, trace.system


def offered_load(jobs, nodes: int) -> float:
    span = max(j.submit for j in jobs) - min(j.submit for j in jobs)
    return sum(j.nodes * j.runtime for j in jobs) / (nodes * span)


def compress(jobs, factor: float):
    """Submit times compressed by ``factor`` about the first submit (a stress variant)."""
    t0 = min(j.submit for j in jobs)
    return [dataclasses.replace(j, submit=t0 + (j.submit - t0) / factor) for j in jobs]


def runs(bounds: list[int]) -> list[tuple[str, str, int | None, dict]]:
    """(method, rule, K, simulate kwargs); rule "oldest (default)" passes no reserve."""
    out = [("FCFS+EASY", "-", None, dict(policy="fcfs"))]
    for k in [None, *bounds]:
        for pol in ("dras-pg", "dras-dql"):
            out.append((pol, "oldest (default)", k, dict(policy=pol)))
            out.append((pol, "picked", k, dict(policy=pol, reserve="picked")))
    return out


def run_one(jobs, system, kw: dict, k: int | None) -> tuple[dict, float]:
    t0 = time.perf_counter()
    res = hpcopt.simulate(jobs, system=system, seed=SEED, starvation_bound=k, **kw)
    wall = time.perf_counter() - t0
    s, table = res.summary, res.jobs
    i = int(np.argmax(table["wait"].to_numpy()))
    opts = res.settings.get("policy_options", {})
    row = dict(avg_wait_h=s["avg_wait"] / 3600, max_wait_h=s["max_wait"] / 3600,
               avg_bsld=s["avg_bounded_slowdown"], utilization=s["utilization"],
               max_wait_job_nodes_pct=100 * float(table["nodes"].iloc[i]) / system.nodes,
               reserve_used=opts.get("reserve", "-"),
               starvation_bound_used=res.settings.get("starvation_bound"), wall_s=wall)
    return row, wall


def run_trace(rows: list, label: str, jobs, system, bounds: list[int]) -> None:
    fcfs = None
    for method, rule, k, kw in runs(bounds):
        row, wall = run_one(jobs, system, kw, k)
        if fcfs is None:
            fcfs = row
        row = dict(trace=label, jobs=len(jobs), nodes=system.nodes, method=method,
                   rule=rule, starvation_bound=k, **row)
        for m in ("avg", "max"):  # no ratio when FCFS+EASY never makes a job wait
            base = fcfs[f"{m}_wait_h"]
            row[f"{m}_wait_vs_fcfs"] = row[f"{m}_wait_h"] / base if base > 0 else np.nan
        row["meets_target"] = ("n/a" if np.isnan(row["avg_wait_vs_fcfs"]) else "yes"
                               if row["avg_wait_vs_fcfs"] < AVG_TARGET
                               and row["max_wait_vs_fcfs"] <= MAX_TARGET else "no")
        rows.append(row)
        print(f"  {method:9s} {rule:16s} K={k!s:4s} avg wait {hours(row['avg_wait_h']):>7s} h "
              f"({row['avg_wait_vs_fcfs']:.3f}x)  max wait {row['max_wait_h']:7.1f} h "
              f"({row['max_wait_vs_fcfs']:.2f}x)  bsld {row['avg_bsld']:7.1f}  "
              f"{row['meets_target'] if method != 'FCFS+EASY' else '':3s} {wall:5.1f} s",
              flush=True)


def hours(x: float) -> str:
    """Two decimals, or three significant digits below 1 h (light traces wait seconds)."""
    return f"{x:.2f}" if x >= 1 else f"{x:.3g}"


def _cells(r) -> list[str]:
    return [hours(r.avg_wait_h), f"{r.max_wait_h:.1f}", f"{r.avg_bsld:.1f}",
            "n/a" if pd.isna(r.avg_wait_vs_fcfs) else f"{r.avg_wait_vs_fcfs:.3f}",
            "n/a" if pd.isna(r.max_wait_vs_fcfs) else f"{r.max_wait_vs_fcfs:.2f}",
            "-" if r.method == "FCFS+EASY" else r.meets_target]


def markdown(df: pd.DataFrame) -> str:
    """Table 1: FCFS+EASY and both rules without a starvation bound; table 2: the bounds."""
    cols = ["trace", "jobs", "nodes", "method", "rule", "avg wait (h)", "max wait (h)",
            "avg bsld", "avg wait / FCFS", "max wait / FCFS", "meets target"]
    right = ("jobs", "nodes", "avg wait (h)", "max wait (h)", "avg bsld", "avg wait / FCFS",
             "max wait / FCFS")
    out = ["| " + " | ".join(cols) + " |",
           "|" + "|".join("---:" if c in right else "---" for c in cols) + "|"]
    for r in df[df["starvation_bound"].isna()].itertuples(index=False):
        out.append("| " + " | ".join([r.trace, f"{r.jobs:,}", f"{r.nodes:,}", r.method,
                                      r.rule, *_cells(r)]) + " |")
    bounded = df[df["starvation_bound"].notna()]
    if len(bounded):
        ks = sorted(int(k) for k in bounded["starvation_bound"].unique())
        out += ["", "Starvation bound K: avg wait / FCFS, max wait / FCFS (meets target) "
                "[`starvation_bound=None` first]", ""]
        head = ["trace", "method", "rule", "no bound", *[f"K = {k}" for k in ks]]
        out += ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * len(head)) + "|"]
        learned = df[df["method"] != "FCFS+EASY"]
        for (trace, method, rule), g in learned.groupby(["trace", "method", "rule"],
                                                       sort=False):
            cells = []
            for k in [None, *ks]:
                r = g[g["starvation_bound"].isna()] if k is None else \
                    g[g["starvation_bound"] == k]
                if not len(r):
                    cells.append("")
                    continue
                r = r.iloc[0]
                mark = "**yes**" if r.meets_target == "yes" else r.meets_target
                cells.append("n/a" if pd.isna(r.avg_wait_vs_fcfs) else
                             f"{r.avg_wait_vs_fcfs:.2f} / {r.max_wait_vs_fcfs:.2f} ({mark})")
            out.append("| " + " | ".join([trace, method, rule, *cells]) + " |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default="theta,kth,hpc2n,nasa,llnl")
    ap.add_argument("--jobs", type=int, default=None, help="first N jobs of each trace only")
    ap.add_argument("--bounds", default="", help="starvation bounds K to add, e.g. 5,20,50")
    ap.add_argument("--scaled-load", type=float, default=None,
                    help="add stress variants of the unseen traces at this offered load")
    ap.add_argument("--render-only", action="store_true",
                    help="only rewrite the .md tables from the saved .csv")
    ap.add_argument("--tag", default="", help="suffix of the output file names")
    args = ap.parse_args()
    try:  # one torch thread: on a shared 2-core machine more threads only add contention
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    OUT.mkdir(parents=True, exist_ok=True)
    bounds = [int(b) for b in args.bounds.split(",") if b.strip()]
    stem = "dras_safe_defaults" + (f"_{args.tag}" if args.tag else "")
    if args.render_only:
        df = pd.read_csv(OUT / f"{stem}.csv", keep_default_na=False,
                         na_values={c: [""] for c in ("starvation_bound", "avg_wait_vs_fcfs",
                                                      "max_wait_vs_fcfs")})
        (OUT / f"{stem}.md").write_text(markdown(df) + "\n")
        print(markdown(df))
        return
    t_start = time.time()
    rows, meta_traces = [], {}
    for name in [t.strip() for t in args.traces.split(",") if t.strip()]:
        if not TRACES[name].exists():
            print(f"skip {name}: {missing_data(TRACES[name].relative_to(data_root()))}")
            continue
        jobs, system = load_jobs(name, args.jobs)
        base = LABEL[name] if not args.jobs else \
            LABEL[name].replace("(whole)", "") + f" (first {len(jobs):,})"
        variants = [(base, jobs, 1.0)]
        load = offered_load(jobs, system.nodes)
        if args.scaled_load and name != "theta" and load < args.scaled_load:
            f = args.scaled_load / load
            variants.append((f"{base}, load {args.scaled_load:g}", compress(jobs, f), f))
        for label, jobs, factor in variants:
            meta_traces[label] = dict(path=str(TRACES[name]), jobs=len(jobs),
                                      nodes=system.nodes, cap=args.jobs,
                                      part="split_months test" if name == "theta" else "whole",
                                      offered_load=round(offered_load(jobs, system.nodes), 4),
                                      submit_compression=round(factor, 4))
            print(f"== {label}: {len(jobs):,} jobs on {system.nodes:,} nodes, offered load "
                  f"{offered_load(jobs, system.nodes):.3f} ==", flush=True)
            run_trace(rows, label, jobs, system, bounds)
    df = pd.DataFrame(rows)
    df["starvation_bound"] = df["starvation_bound"].astype("Int64")
    df.to_csv(OUT / f"{stem}.csv", index=False)
    md = markdown(df)
    (OUT / f"{stem}.md").write_text(md + "\n")
    print(md)
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = ""
    (OUT / f"{stem}_meta.json").write_text(json.dumps(dict(
        command="python " + " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        git_commit=commit, seed=SEED, window=50, traces=meta_traces,
        wall_seconds=round(time.time() - t_start, 1),
        loadavg_at_end=os.getloadavg(), cpu_count=os.cpu_count(),
        target=f"avg wait < {AVG_TARGET}x FCFS+EASY and max wait <= {MAX_TARGET}x"), indent=2))
    print(f"wall {time.time() - t_start:.0f} s; written {OUT / stem}.csv/.md/_meta.json")


if __name__ == "__main__":
    main()
