"""DRAS against the paper's baselines on the Theta 2022 test months and on KTH-SP2
(Fan et al., IPDPS'21, section V: Figure 6, Table IV, Figure 7, decision latency).

Each trace is split by months as in the paper: the first two train, the third validates, the
rest is the test period that is simulated here (from an empty machine).  Methods, all with
window W = 50:

- FCFS: FCFS + EASY backfilling (the driver's exact EASY);
- BinPacking, Random, Optimization (knapsack, DP backend, value ``capability`` = Eq. (1)
  split per job): start window jobs that fit now, no reservation and no backfilling, as in
  the paper's Table IV;
- Decima-PG, DRAS-PG, DRAS-DQL: the learned policies with the paper's reservation of the
  agent's non-fitting pick (``reserve="picked"``); ``/oldest`` rows run the same DRAS
  checkpoints with the reservation given to the oldest waiting job (``reserve="oldest"``,
  the library's default since issue #11);
  ``+adapt`` rows keep training while they schedule (online adaptation, section V-D).
  On Theta they load the checkpoints shipped in ``hpcopt/agents/checkpoints``; on KTH-SP2
  they are trained first on KTH's own
  first two months (small config, ``--kth-synthetic`` synthetic jobsets), unless
  ``--kth-models DIR`` holds ``dras-pg.pt``, ``dras-dql.pt`` and ``decima-pg.pt``.

Written to ``benchmarks/results/``: ``dras_<trace>.csv`` (one row per method: average and
maximum wait, response, bounded slowdown, utilization, wall time, decision latency, and the
share of jobs and node-hours started ready / reserved / backfilled), ``dras_<trace>_by_size.csv``
(wait by job-size class, Figure 7), ``dras_<trace>_kiviat.png`` (Figure 6: reciprocals of
average wait, maximum wait, average bounded slowdown and average response, and utilization,
each normalized over the methods to [0, 1], 1 = best) and ``dras_<trace>_by_size.png``.

    python benchmarks/dras_theta.py [--traces theta,kth] [--methods FCFS,DRAS-PG,...]
        [--jobs N] [--kth-models DIR] [--kth-synthetic 30]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

import hpcopt
from hpcopt.datadir import data_root, missing_data

HERE = Path(__file__).resolve().parent
SHARED = data_root()  # the data directory (hpcopt.datadir)
OUT = HERE / "results"
TRACES = {
    "theta": SHARED / "hpc_swf" / "alcf" / "theta_2022.swf.gz",
    "kth": SHARED / "hpc_swf" / "pwa" / "KTH-SP2-1996-2.1-cln.swf.gz",
}
W = 50
METHODS = {
    "FCFS": dict(policy="fcfs"),
    "BinPacking": dict(policy="largest-first", window=W, backfill="none"),
    "Random": dict(policy="random", window=W, backfill="none", seed=0),
    "Optimization": dict(policy="knapsack", window=W, backfill="none", value="capability",
                         backend="dp"),
    "Decima-PG": dict(policy="decima-pg"),
    "DRAS-PG": dict(policy="dras-pg", reserve="picked"),
    "DRAS-DQL": dict(policy="dras-dql", reserve="picked"),
    "DRAS-PG/oldest": dict(policy="dras-pg", reserve="oldest"),
    "DRAS-DQL/oldest": dict(policy="dras-dql", reserve="oldest"),
    "DRAS-PG/oldest+adapt": dict(policy="dras-pg", reserve="oldest", adapt=True),
    "DRAS-DQL/oldest+adapt": dict(policy="dras-dql", reserve="oldest", adapt=True),
}
LEARNED = {"Decima-PG": ("pg", "decima"), "DRAS-PG": ("pg", "dras"),
           "DRAS-DQL": ("dql", "dras")}
TRAINED_AS = {"DRAS-PG/oldest": "DRAS-PG", "DRAS-DQL/oldest": "DRAS-DQL",
              "DRAS-PG/oldest+adapt": "DRAS-PG", "DRAS-DQL/oldest+adapt": "DRAS-DQL"}
MODES = ("ready", "reserved", "backfilled")
SIZES = ("<=1/32", "<=1/8", "<=1/4", "<=1/2", ">1/2")


def size_class(nodes: np.ndarray, system_nodes: int) -> np.ndarray:
    """Job-size classes as fractions of the machine: <=1/32, <=1/8, <=1/4, <=1/2, >1/2."""
    edges = np.array([1 / 32, 1 / 8, 1 / 4, 1 / 2]) * system_nodes
    return np.array(SIZES)[np.searchsorted(edges, nodes, side="left")]


def train_kth_models(trace_path: Path, out: Path, synthetic: int) -> dict[str, Path]:
    """Train the three learned methods on KTH-SP2's first two months (small config)."""
    import torch

    from hpcopt.trainers.dras_train import train_dras

    torch.set_num_threads(1)
    paths = {}
    for name, (kind, levels) in LEARNED.items():
        run = out / name.lower()
        doc = train_dras(trace_path, agent=kind, levels=levels, out=run, sampled=9, real=None,
                         synthetic=synthetic, jobs_per_set=2000, select="avg_wait", seed=0,
                         progress=True)
        print(f"  {name}: {doc['episodes']} episodes in {doc['train_seconds']:.0f} s, best "
              f"episode {doc['best_episode']}")
        paths[name] = run / "best.pt"
    return paths


def run_method(name: str, jobs, system, checkpoint: Path | None) -> tuple[dict, pd.DataFrame]:
    opts = dict(METHODS[name])
    policy = hpcopt.make_policy(opts.pop("policy"), **(
        {"checkpoint": str(checkpoint)} if checkpoint else {}),
        **{k: opts.pop(k) for k in ("value", "backend", "reserve", "adapt") if k in opts})
    t0 = time.perf_counter()
    res = hpcopt.simulate(jobs, system=system, policy=policy, **opts)
    wall = time.perf_counter() - t0
    s, table = res.summary, res.jobs
    row = dict(method=name, jobs=s["job_count"], avg_wait_h=s["avg_wait"] / 3600,
               max_wait_h=s["max_wait"] / 3600, avg_response_h=s["avg_response"] / 3600,
               avg_bsld=s["avg_bounded_slowdown"], utilization=s["utilization"],
               wall_s=wall)
    stats = getattr(policy, "last_stats", {})
    row["ms_per_decision"] = stats.get("ms_per_decision", np.nan)
    nh = table["nodes"] * table["runtime"]
    for mode in MODES:
        sel = table["mode"] == mode
        row[f"{mode}_jobs_pct"] = 100 * sel.mean()
        row[f"{mode}_node_hours_pct"] = 100 * nh[sel].sum() / nh.sum()
    return row, table


def kiviat(df: pd.DataFrame, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    axes = {"1/avg wait": 1 / df["avg_wait_h"].clip(lower=1e-9),
            "1/max wait": 1 / df["max_wait_h"].clip(lower=1e-9),
            "1/avg bsld": 1 / df["avg_bsld"], "1/avg response": 1 / df["avg_response_h"],
            "utilization": df["utilization"]}
    norm = {}
    for k, v in axes.items():
        span = v.max() - v.min()
        norm[k] = (v - v.min()) / span if span > 0 else v * 0 + 1
    ang = np.linspace(0, 2 * np.pi, len(axes), endpoint=False).tolist()
    fig, ax = plt.subplots(figsize=(6, 6), subplot_kw={"polar": True})
    for i, method in enumerate(df["method"]):
        vals = [norm[k].iloc[i] for k in axes]
        ax.plot(ang + ang[:1], vals + vals[:1], label=method)
        ax.fill(ang + ang[:1], vals + vals[:1], alpha=0.05)
    ax.set_xticks(ang)
    ax.set_xticklabels(list(axes))
    ax.set_yticklabels([])
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper right", bbox_to_anchor=(1.3, 1.1))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def by_size_plot(by: pd.DataFrame, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axs = plt.subplots(1, 2, figsize=(11, 4))
    for ax, col in zip(axs, ("mean_wait_h", "max_wait_h")):
        table = by.pivot(index="size", columns="method", values=col)
        table = table.reindex(index=[s for s in SIZES if s in table.index],
                              columns=list(dict.fromkeys(by["method"])))
        table.plot.bar(ax=ax, rot=0)
        ax.set_ylabel(col.replace("_", " "))
        ax.set_xlabel("job size (fraction of the machine)")
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default="theta,kth")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--jobs", type=int, default=None, help="first N test jobs only")
    ap.add_argument("--kth-models", default=None, help="dir with dras-pg.pt, dras-dql.pt, "
                                                       "decima-pg.pt trained on KTH-SP2")
    ap.add_argument("--kth-synthetic", type=int, default=30)
    args = ap.parse_args()
    from hpcopt.trainers.jobsets import split_months

    OUT.mkdir(parents=True, exist_ok=True)
    try:  # one torch thread: on a shared 2-core machine more threads only add contention
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    for trace_name in [t.strip() for t in args.traces.split(",") if t.strip()]:
        path = TRACES[trace_name]
        if not path.exists():
            print(f"skip {trace_name}: {missing_data(path.relative_to(SHARED))}")
            continue
        trace = hpcopt.load_trace(path)
        split = split_months(trace.jobs)
        jobs = list(split.test[: args.jobs] if args.jobs else split.test)
        checkpoints: dict[str, Path | None] = {m: None for m in METHODS}
        if trace_name != "theta" and any(m in LEARNED or m in TRAINED_AS for m in methods):
            if args.kth_models:
                d = Path(args.kth_models)
                checkpoints.update({m: d / f"{m.lower()}.pt" for m in LEARNED})
            else:
                print(f"training the learned methods on {trace_name}'s first two months")
                checkpoints.update(train_kth_models(path, OUT / f"dras_{trace_name}_models",
                                                    args.kth_synthetic))
            checkpoints.update({m: checkpoints[base] for m, base in TRAINED_AS.items()})
        print(f"== {trace_name}: {len(jobs)} test jobs on {trace.system.nodes} nodes ==")
        rows, sizes = [], []
        for m in methods:
            row, table = run_method(m, jobs, trace.system, checkpoints[m])
            rows.append(row)
            print(f"  {m:13s} avg wait {row['avg_wait_h']:7.2f} h  max wait "
                  f"{row['max_wait_h']:8.1f} h  bsld {row['avg_bsld']:7.2f}  util "
                  f"{row['utilization']:.3f}  {row['wall_s']:.0f} s")
            table["size"] = size_class(table["nodes"].to_numpy(), trace.system.nodes)
            g = table.groupby("size")["wait"]
            sizes.append(pd.DataFrame({"method": m, "size": g.mean().index,
                                       "jobs": g.size().values,
                                       "mean_wait_h": g.mean().values / 3600,
                                       "max_wait_h": g.max().values / 3600}))
        df = pd.DataFrame(rows)
        by = pd.concat(sizes, ignore_index=True)
        df.to_csv(OUT / f"dras_{trace_name}.csv", index=False)
        by.to_csv(OUT / f"dras_{trace_name}_by_size.csv", index=False)
        kiviat(df, OUT / f"dras_{trace_name}_kiviat.png", f"{trace_name}: test months")
        by_size_plot(by, OUT / f"dras_{trace_name}_by_size.png",
                     f"{trace_name}: wait by job size")
        with pd.option_context("display.width", 250, "display.max_columns", 30):
            print(df.round(3).to_string(index=False))
        (OUT / f"dras_{trace_name}_meta.json").write_text(json.dumps(
            {"trace": str(path), "test_jobs": len(jobs), "nodes": trace.system.nodes,
             "checkpoints": {k: str(v) for k, v in checkpoints.items() if v}}, indent=2))


if __name__ == "__main__":
    main()
