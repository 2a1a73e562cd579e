"""The BBSched paper's policies on real traces and burst-buffer workloads (Figs. 6-13,
Table 3).

For each trace (KTH-SP2 and HPC2N by default; the first --jobs jobs) and workload every
policy runs with EASY backfilling, window W = 20, starvation bound 50 and the base order of
--order.  Workloads (``hpcopt.workloads.burst_buffer``):

- ``original``, ``S1``-``S4``: the trace's jobs, with the paper's generated burst-buffer
  requests for S1-S4, on the trace's nodes and a shared burst buffer (``bb_system``); the
  nine policies less ``constrained-ssd``;
- ``S5``-``S7``: S2 plus local-SSD requests on a half-128 GB / half-256 GB system
  (``bb_system(nodes, ssd=True)``); the paper's seven section-5 methods;
- ``kopanski``: the real burst-buffer workload of Kopanski & Rzadca (KTH-SP2 jobs 15-1014
  with their modelled burst-buffer requests, ``load_batsim``) on its own system (96 nodes,
  480 GB); it does not depend on --traces and is run once, as trace ``Kopanski``.

Reported per run: node usage, burst-buffer usage, SSD usage and wasted SSD (S5-S7), average
wait, average bounded slowdown (the first and last --trim of the jobs are left out, as the
paper drops half a month at each end).  One Kiviat plot per workload normalizes each metric
over the policies to [0, 1] (1 = best; wait and slowdown as reciprocals, wasted SSD negated),
as the paper's Figure 13.  The window-size table (Table 3) runs BBSched with W = 10, 20, 50
on the workload of --window-sizes (S4 by default).

    python benchmarks/bbsched_policies.py [--jobs 5000] [--workers 2] [--traces KTH,HPC2N]
        [--workloads original,S1,S2,S3,S4] [--window-sizes S4|none]
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

import hpcopt
from hpcopt.datadir import data_root

SHARED = data_root()  # the data directory (hpcopt.datadir)
TRACES = {
    "KTH": SHARED / "hpc_swf" / "pwa" / "KTH-SP2-1996-2.1-cln.swf.gz",
    "HPC2N": SHARED / "hpc_swf" / "pwa_subsets" / "HPC2N-2002-2.2-alea-subset.swf.gz",
    "Theta": SHARED / "hpc_swf" / "alcf" / "theta_2022.swf.gz",
}
POLICIES = ["baseline", "weighted", "weighted-cpu", "weighted-bb", "constrained-cpu",
            "constrained-bb", "alignment-first", "bbsched"]
# section 5 (local SSD, S5-S7): the seven methods of the paper
SSD_POLICIES = ["baseline", "weighted", "constrained-cpu", "constrained-bb", "constrained-ssd",
                "alignment-first", "bbsched"]
SSD_WORKLOADS = ("S5", "S6", "S7")
WORKLOADS = ["original", "S1", "S2", "S3", "S4"]
KOPANSKI = "kopanski"
# summary key per reported metric; lower is better for the last three
METRICS = {"node_usage": "utilization", "bb_usage": "bb_usage", "ssd_usage": "ssd_usage",
           "wasted_ssd": "wasted_ssd", "avg_wait": "avg_wait",
           "avg_bsld": "avg_bounded_slowdown"}


def load_jobs(trace: str, name: str, n_jobs: int | None, seed: int):
    """Jobs and system of ``trace``'s first ``n_jobs`` jobs under workload ``name``."""
    from hpcopt.workloads.burst_buffer import bb_system, load_batsim, make_workload

    if name == KOPANSKI:
        tr = load_batsim()
        return list(tr.jobs)[:n_jobs], tr.system
    tr = hpcopt.load_trace(TRACES[trace], max_jobs=n_jobs)
    system = bb_system(tr.system.nodes, ssd=name in SSD_WORKLOADS)
    return make_workload(tr.jobs, name, system=system, seed=seed), system


def run(case: tuple) -> dict:
    trace, name, policy, window, n_jobs, order, trim, seed = case
    jobs, system = load_jobs(trace, name, n_jobs, seed)
    t0 = time.perf_counter()
    res = hpcopt.simulate(jobs, system=system, policy=policy, window=window, order=order,
                          warmup=trim, cooldown=trim, seed=seed)
    s = res.summary
    return dict(trace=trace, workload=name, policy=policy, W=window, jobs=s["job_count"],
                seconds=round(time.perf_counter() - t0, 2),
                **{k: s.get(v, 0.0) for k, v in METRICS.items()})


def kiviat(df, path: Path, title: str) -> None:
    import matplotlib.pyplot as plt

    axes = [m for m in METRICS if not m.endswith("ssd") or df[m].astype(float).any()]
    labels = {"node_usage": "node usage", "bb_usage": "BB usage", "ssd_usage": "SSD usage",
              "wasted_ssd": "-wasted SSD", "avg_wait": "1/avg wait", "avg_bsld": "1/avg bsld"}
    vals = df.set_index("policy")[axes].astype(float).copy()
    for col in ("avg_wait", "avg_bsld"):
        vals[col] = 1.0 / vals[col].clip(lower=1e-9)
    if "wasted_ssd" in vals:
        vals["wasted_ssd"] = -vals["wasted_ssd"]
    lo, hi = vals.min(), vals.max()
    norm = (vals - lo) / (hi - lo).replace(0, 1)
    angles = np.linspace(0, 2 * np.pi, len(axes), endpoint=False).tolist()
    fig, ax = plt.subplots(figsize=(5, 5), subplot_kw={"polar": True})
    for policy, row in norm.iterrows():
        v = row.tolist()
        ax.plot(angles + angles[:1], v + v[:1], lw=2 if policy == "bbsched" else 1,
                label=policy)
    ax.set_xticks(angles)
    ax.set_xticklabels([labels[a] for a in axes])
    ax.set_yticks([0.25, 0.5, 0.75, 1.0])
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper right", bbox_to_anchor=(1.35, 1.1))
    plt.tight_layout()
    plt.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default="KTH,HPC2N", help=f"among {sorted(TRACES)}")
    ap.add_argument("--workloads", default=",".join(WORKLOADS),
                    help=f"among original, S1-S7, {KOPANSKI}")
    ap.add_argument("--jobs", type=int, default=5000, help="first N jobs of each trace")
    ap.add_argument("--order", default="fcfs", choices=["fcfs", "wfp"])
    ap.add_argument("--trim", type=float, default=0.05, help="warm-up/cool-down share")
    ap.add_argument("--window-sizes", default="S4",
                    help="workload of the W = 10/20/50 table (Table 3), or 'none'")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    ap.add_argument("--tag", default="", help="suffix of the output files")
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd
    from tqdm.auto import tqdm

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    traces, loads = args.traces.split(","), args.workloads.split(",")
    unknown = sorted(set(traces) - set(TRACES))
    if unknown:
        ap.error(f"unknown trace(s) {unknown}; expected among {sorted(TRACES)}")

    def case(trace, name, policy, window):
        return (trace, name, policy, window, args.jobs, args.order, args.trim, args.seed)

    cases = [case(t, w, p, 20)
             for w in loads for t in (["Kopanski"] if w == KOPANSKI else traces)
             for p in (SSD_POLICIES if w in SSD_WORKLOADS else POLICIES)]
    ws = args.window_sizes
    if ws != "none":
        cases += [case(t, ws, "bbsched", w) for t in traces
                  for w in ((10, 50) if ws in loads else (10, 20, 50))]
    with ProcessPoolExecutor(args.workers) as pool:
        rows = list(tqdm(pool.map(run, cases), total=len(cases), desc="simulations"))
    df = pd.DataFrame(rows)
    tag = f"_{args.tag}" if args.tag else ""
    df.to_csv(out / f"bbsched_policies{tag}.csv", index=False)
    main_runs = df[(df.W == 20) & df.workload.isin(loads)]
    for (trace, name), grp in main_runs.groupby(["trace", "workload"]):
        label = trace if name == KOPANSKI else f"{trace}-{name}"
        kiviat(grp, out / f"bbsched_kiviat_{label}{tag}.png", label)
        base = grp.set_index("policy").loc["baseline"]
        print(f"\n== {label} (relative to baseline) ==")
        view = grp.set_index("policy")[list(METRICS) + ["seconds"]].copy()
        view["wait_vs_base"] = view["avg_wait"] / base["avg_wait"] - 1
        print(view.round(4).to_string())
    if ws != "none":
        table3 = df[(df.workload == ws) & (df.policy == "bbsched")].set_index(
            ["trace", "W"])[list(METRICS)].sort_index()
        print(f"\n== BBSched window size on {ws} (Table 3) ==\n" + table3.round(4).to_string())
        table3.to_csv(out / f"bbsched_window_sizes{tag}.csv")
    print(f"wrote {out}/bbsched_policies{tag}.csv, bbsched_kiviat_*{tag}.png"
          + (f", bbsched_window_sizes{tag}.csv" if ws != "none" else ""))


if __name__ == "__main__":
    main()
