"""Simulator speed: FCFS+EASY and the knapsack policy on whole real traces, jobs per second.

Target (issue #2): the whole KTH-SP2 trace (28,476 jobs) under FCFS+EASY in at most 3 s.

    python benchmarks/simulator_speed.py [--repeat 3] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import hpcopt

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hpc_swf"
TRACES = {
    "KTH-SP2": (DATA / "pwa" / "KTH-SP2-1996-2.1-cln.swf.gz", {}),
    "lublin_256": (DATA / "lublin_model" / "lublin_256.swf.gz", {"nodes": 256}),
}
POLICIES = {
    "fcfs+easy": dict(policy="fcfs"),
    "knapsack(W=20,dp)+easy": dict(policy="knapsack", backend="dp"),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per case; the best is reported")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    rows = []
    for tname, (path, kw) in TRACES.items():
        t0 = time.perf_counter()
        trace = hpcopt.load_trace(path, **kw)
        load_s = time.perf_counter() - t0
        for pname, pkw in POLICIES.items():
            best, res = float("inf"), None
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                res = hpcopt.simulate(trace, **pkw)
                best = min(best, time.perf_counter() - t0)
            n = res.summary["job_count"]
            rows.append(dict(trace=tname, policy=pname, jobs=n, load_s=round(load_s, 3),
                             simulate_s=round(best, 3), jobs_per_s=round(n / best),
                             avg_wait=round(res.summary["avg_wait"], 1),
                             utilization=round(res.summary["utilization"], 4)))
            print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / "simulator_speed.csv", index=False)
    print(df.to_string(index=False))
    ax = df.pivot(index="trace", columns="policy", values="jobs_per_s").plot.bar(rot=0)
    ax.set_ylabel("simulated jobs per second")
    ax.set_title(f"hpcopt driver speed (best of {args.repeat})")
    plt.tight_layout()
    plt.savefig(out / "simulator_speed.png", dpi=120)
    print(f"wrote {out / 'simulator_speed.csv'} and {out / 'simulator_speed.png'}")


if __name__ == "__main__":
    main()
