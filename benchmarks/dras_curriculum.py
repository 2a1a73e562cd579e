"""DRAS-PG trained with the curriculum phases in different orders (the paper's Figure 4).

For each order (sampled-real-synthetic, real-sampled-synthetic, synthetic-sampled-real) the
small PG agent is trained on Theta 2022's first two months (seed 0, the default curriculum
sizes) and validated on March after every episode; the plot shows the validation total
reward and average wait per episode.  Runs already in ``--runs DIR/<order>/curve.csv`` (for
example from ``hpcopt train dras --phases <order> --out DIR/<order>``) are reused.

    python benchmarks/dras_curriculum.py [--runs DIR] [--reward capacity]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from hpcopt.datadir import data_root, missing_data

HERE = Path(__file__).resolve().parent
THETA = "hpc_swf/alcf/theta_2022.swf.gz"
TRACE = data_root() / THETA
OUT = HERE / "results"
ORDERS = ["sampled,real,synthetic", "real,sampled,synthetic", "synthetic,sampled,real"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default=str(OUT / "dras_curriculum"))
    ap.add_argument("--reward", default="capacity", help="capability (Eq. 1) or capacity")
    args = ap.parse_args()
    if missing_data(THETA):
        print(f"skip: {missing_data(THETA)}")
        return
    runs = Path(args.runs)
    curves = {}
    for order in ORDERS:
        csv = runs / order / "curve.csv"
        if not csv.exists():
            import torch

            from hpcopt.trainers.dras_train import train_dras

            torch.set_num_threads(1)
            train_dras(TRACE, agent="pg", out=runs / order, phases=order.split(","),
                       reward=args.reward, progress=True)
        curves[order] = pd.read_csv(csv)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axs = plt.subplots(1, 2, figsize=(11, 4))
    rows = []
    for order, c in curves.items():
        axs[0].plot(c["episode"], c["val_reward"], label=order)
        axs[1].plot(c["episode"], c["val_avg_wait"] / 3600, label=order)
        rows.append(dict(order=order, episodes=len(c),
                         best_val_reward=c["val_reward"].max(),
                         best_episode=int(c["val_reward"].idxmax()),
                         last10_val_reward=c["val_reward"].tail(10).mean(),
                         min_val_avg_wait_h=c["val_avg_wait"].min() / 3600,
                         last10_val_avg_wait_h=c["val_avg_wait"].tail(10).mean() / 3600,
                         train_seconds=c["seconds"].sum()))
    axs[0].set_ylabel("validation total reward")
    axs[1].set_ylabel("validation average wait (h)")
    for ax in axs:
        ax.set_xlabel("training episode")
        ax.legend(fontsize=8)
    fig.suptitle("DRAS-PG on Theta 2022: curriculum order (Figure 4)")
    fig.tight_layout()
    OUT.mkdir(parents=True, exist_ok=True)
    fig.savefig(OUT / "dras_curriculum.png", dpi=120)
    table = pd.DataFrame(rows)
    table.to_csv(OUT / "dras_curriculum.csv", index=False)
    print(table.round(3).to_string(index=False))


if __name__ == "__main__":
    main()
