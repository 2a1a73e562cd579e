"""Window-period allocation vs per-job FCFS and EASY on a fat-tree (Lan et al., Figure 6).

Each epoch is a slice of ``--jobs`` consecutive jobs of the authors' workload file
(../shared/data/topology_alloc/lzk23_hpcschedule/data_large_1800_40.txt.gz, arrivals shifted
to start at 0) on the paper's 1,000-node fat-tree, started on an idle machine.  Methods:
FCFS and EASY backfilling with first-fit contiguous allocation, and the window-period policy
(``tjap-window``: NWP order, greedy selection, SCAS optimum by ``scas-exact``) for each tau.
Reports the average communication-hop cost per job and the average wait; writes
results/tjap_policies.csv and results/tjap_policies.png.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import pandas as pd
from tqdm import tqdm

import hpcopt
from hpcopt.datadir import data_root
from hpcopt.traces.tjap import load_tjap_jobs
from hpcopt.workloads.tjap import tjap_system

RESULTS = Path(__file__).resolve().parent / "results"
DATA = data_root() / "topology_alloc" / "lzk23_hpcschedule" / "data_large_1800_40.txt.gz"


def epochs(n_epochs: int, n_jobs: int) -> list[list]:
    jobs = load_tjap_jobs(DATA, max_jobs=n_epochs * n_jobs)
    out = []
    for e in range(n_epochs):
        part = jobs[e * n_jobs:(e + 1) * n_jobs]
        t0 = part[0].submit
        out.append([replace(j, submit=j.submit - t0) for j in part])
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=300, help="jobs per epoch")
    ap.add_argument("--taus", default="10,20,30,40,50,60")
    ap.add_argument("--backend", default="scas-exact")
    ap.add_argument("--out", default=str(RESULTS))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    system = tjap_system("paper-1000")
    methods = [("FCFS", dict(policy="fcfs", backfill="none")),
               ("EASY", dict(policy="fcfs", backfill="easy"))]
    for tau in (float(t) for t in args.taus.split(",")):
        methods.append((f"window tau={tau:g}", dict(policy="tjap-window", tau=tau,
                                                    backend=args.backend)))
    rows = []
    for e, jobs in enumerate(tqdm(epochs(args.epochs, args.jobs), desc="epochs")):
        for name, kw in methods:
            s = hpcopt.simulate(jobs, system=system, seed=0, **kw).summary
            rows.append(dict(epoch=e + 1, method=name, avg_comm_cost=s["avg_comm_cost"],
                             avg_wait=s["avg_wait"], max_wait=s["max_wait"],
                             utilization=s["utilization"]))
    df = pd.DataFrame(rows)
    df.to_csv(out / "tjap_policies.csv", index=False)
    summary = df.groupby("method", sort=False)[["avg_comm_cost", "avg_wait", "max_wait",
                                                 "utilization"]].mean()
    print(summary.round(1).to_string())
    plot(df, out / "tjap_policies.png")


def plot(df: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(df["method"]))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, col, label in zip(axes, ["avg_comm_cost", "avg_wait"],
                              ["average CH cost per job", "average wait (s)"]):
        ax.boxplot([df[df["method"] == m][col] for m in names], tick_labels=names)
        ax.set_ylabel(label)
        ax.tick_params(axis="x", rotation=30)
    fig.suptitle(f"{df['epoch'].nunique()} epochs: FCFS, EASY and window-based allocation")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
