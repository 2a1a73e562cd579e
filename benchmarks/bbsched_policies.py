"""The BBSched paper's nine policies on real traces and burst-buffer workloads (Figs. 6-13,
Table 3).

For each trace (KTH-SP2 and HPC2N by default; the first --jobs jobs) and workload (original,
S1-S4, see ``hpcopt.workloads``) every policy runs with EASY backfilling, window W = 20,
starvation bound 50 and the base order of --order, on a system with the trace's nodes and a
shared burst buffer (``hpcopt.workloads.bb_system``).  Reported per run: node usage,
burst-buffer usage, average wait, average bounded slowdown (the first and last --trim of the
jobs are left out, as the paper drops half a month at each end).  One Kiviat plot per
workload normalizes each metric over the policies to [0, 1] (1 = best; wait and slowdown as
reciprocals), as the paper's Figure 13.  The window-size table (Table 3) reruns BBSched with
W = 10, 20, 50 on S4.

    python benchmarks/bbsched_policies.py [--jobs 5000] [--workers 2] [--traces KTH,HPC2N]
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

import hpcopt

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
TRACES = {
    "KTH": SHARED / "hpc_swf" / "pwa" / "KTH-SP2-1996-2.1-cln.swf.gz",
    "HPC2N": SHARED / "hpc_swf" / "pwa_subsets" / "HPC2N-2002-2.2-alea-subset.swf.gz",
}
POLICIES = ["baseline", "weighted", "weighted_cpu", "weighted_bb", "constrained_cpu",
            "constrained_bb", "bin_packing", "bbsched"]
# section 5 (local SSD, S5-S7): the seven methods of the paper
SSD_POLICIES = ["baseline", "weighted", "constrained_cpu", "constrained_bb", "constrained_ssd",
                "bin_packing", "bbsched"]
WORKLOADS = ["original", "S1", "S2", "S3", "S4"]
METRICS = {"node_usage": "utilization", "bb_usage": "bb_usage", "avg_wait": "avg_wait",
           "avg_bsld": "avg_bounded_slowdown"}


def workload(trace: str, name: str, n_jobs: int, seed: int):
    from hpcopt.workloads import bb_system, make_workload

    tr = hpcopt.load_trace(TRACES[trace], max_jobs=n_jobs)
    system = bb_system(tr.system.nodes)
    return make_workload(tr.jobs, name, system=system, seed=seed), system


def run(case: tuple) -> dict:
    trace, name, policy, window, n_jobs, order, trim, seed = case
    jobs, system = workload(trace, name, n_jobs, seed)
    t0 = time.perf_counter()
    res = hpcopt.simulate(jobs, system=system, policy=policy, window=window, order=order,
                          warmup=trim, cooldown=trim, seed=seed)
    s = res.summary
    return dict(trace=trace, workload=name, policy=policy, W=window, jobs=s["job_count"],
                seconds=round(time.perf_counter() - t0, 2),
                **{k: s.get(v, 0.0) for k, v in METRICS.items()})


def kiviat(df, path: Path, title: str) -> None:
    import matplotlib.pyplot as plt

    axes = list(METRICS)
    vals = df.set_index("policy")[axes].astype(float).copy()
    for col in ("avg_wait", "avg_bsld"):
        vals[col] = 1.0 / vals[col].clip(lower=1e-9)
    lo, hi = vals.min(), vals.max()
    norm = (vals - lo) / (hi - lo).replace(0, 1)
    angles = np.linspace(0, 2 * np.pi, len(axes), endpoint=False).tolist()
    fig, ax = plt.subplots(figsize=(5, 5), subplot_kw={"polar": True})
    for policy, row in norm.iterrows():
        v = row.tolist()
        ax.plot(angles + angles[:1], v + v[:1], lw=2 if policy == "bbsched" else 1,
                label=policy)
    ax.set_xticks(angles)
    ax.set_xticklabels(["node usage", "BB usage", "1/avg wait", "1/avg bsld"])
    ax.set_yticks([0.25, 0.5, 0.75, 1.0])
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper right", bbox_to_anchor=(1.35, 1.1))
    plt.tight_layout()
    plt.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", default="KTH,HPC2N")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--jobs", type=int, default=5000, help="first N jobs of each trace")
    ap.add_argument("--order", default="fcfs", choices=["fcfs", "wfp"])
    ap.add_argument("--trim", type=float, default=0.05, help="warm-up/cool-down share")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd
    from tqdm.auto import tqdm

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    traces, loads = args.traces.split(","), args.workloads.split(",")
    cases = [(t, w, p, 20, args.jobs, args.order, args.trim, args.seed)
             for t in traces for w in loads
             for p in (SSD_POLICIES if w in ("S5", "S6", "S7") else POLICIES)]
    cases += [(t, "S4", "bbsched", w, args.jobs, args.order, args.trim, args.seed)
              for t in traces for w in (10, 50)]
    with ProcessPoolExecutor(args.workers) as pool:
        rows = list(tqdm(pool.map(run, cases), total=len(cases), desc="simulations"))
    df = pd.DataFrame(rows)
    df.to_csv(out / "bbsched_policies.csv", index=False)
    main_runs = df[df.W == 20]
    for (trace, name), grp in main_runs.groupby(["trace", "workload"]):
        kiviat(grp, out / f"bbsched_kiviat_{trace}_{name}.png", f"{trace}-{name}")
        base = grp.set_index("policy").loc["baseline"]
        print(f"\n== {trace}-{name} (relative to baseline) ==")
        view = grp.set_index("policy")[list(METRICS) + ["seconds"]].copy()
        view["wait_vs_base"] = view["avg_wait"] / base["avg_wait"] - 1
        print(view.round(4).to_string())
    table3 = df[(df.workload == "S4") & (df.policy == "bbsched")].set_index(
        ["trace", "W"])[list(METRICS)].sort_index()
    print("\n== BBSched window size on S4 (Table 3) ==\n" + table3.round(4).to_string())
    table3.to_csv(out / "bbsched_window_sizes.csv")
    print(f"wrote {out}/bbsched_policies.csv, bbsched_kiviat_*.png, bbsched_window_sizes.csv")


if __name__ == "__main__":
    main()
