"""Regenerate the bundled knapsack instances and their optima (seeded, deterministic).

Run from the repository root::

    python instances/knapsack/make_instances.py

It writes ``instances/knapsack/*.json`` and ``instances/knapsack/optima.csv``.  Each optimum
is accepted only when the ``dp`` and ``cpsat`` backends agree on it (and, up to 20 items, a
brute-force enumeration too).
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from hpcopt.instances import save_instance
from hpcopt.models.knapsack import KnapsackModel
from hpcopt.models.knapsack import brute_force_optimum as brute_force
from hpcopt.solvers import solve

HERE = Path(__file__).resolve().parent
SYSTEM_NODES = 4360  # a Theta-sized machine
SEED = 20240501


def hpc_sizes(rng: np.random.Generator, n: int, system: int = SYSTEM_NODES) -> np.ndarray:
    """Job sizes like a real HPC mix: log-uniform in 1..system, half rounded to powers of 2."""
    sizes = np.exp(rng.uniform(0.0, np.log(system), n)).astype(int).clip(1, system)
    pow2 = 2 ** np.floor(np.log2(sizes)).astype(int)
    return np.where(rng.random(n) < 0.5, pow2, sizes)


def build(rng: np.random.Generator) -> list[tuple[str, KnapsackModel, str]]:
    """(name, model, description) for every bundled instance."""
    out = [(
        "bb_table1",
        KnapsackModel([80, 10, 40, 10, 20], [[80, 10, 40, 10, 20], [20, 85, 5, 0, 0]], [100, 100],
                      ids=["J1", "J2", "J3", "J4", "J5"], resources=["nodes", "bb_tb"]),
        "Table 1 of the BBSched paper (Fan et al.): 5 jobs, 100 nodes, 100 TB burst buffer; "
        "maximize nodes used. Optimum 100 with {J1, J5}.",
    ), (
        "ks1_tiny_5",
        KnapsackModel([10, 40, 30, 50, 35], [5, 4, 6, 3, 5], 10),
        "5 items, one resource (textbook example).",
    )]
    w = rng.integers(1, 101, 10)
    out.append(("ks1_uncorrelated_10", KnapsackModel(rng.integers(1, 101, 10), w, w.sum() // 2),
                "10 items, uncorrelated values and weights in 1..100, capacity half the weight."))
    w = rng.integers(1, 1001, 20)
    out.append(("ks1_strongly_correlated_20", KnapsackModel(w + 100, w, w.sum() // 2),
                "20 items, strongly correlated (value = weight + 100)."))
    w = rng.integers(1, 1001, 40)
    out.append(("ks1_subset_sum_40", KnapsackModel(w, w, w.sum() // 2),
                "40 items, value = weight (subset sum)."))
    nodes = hpc_sizes(rng, 50)
    free = int(rng.integers(SYSTEM_NODES // 4, SYSTEM_NODES + 1))
    ids = [f"job{i}" for i in range(50)]
    out.append(("ks1_window50_nodes",
                KnapsackModel(nodes, nodes, free, ids=ids, resources=["nodes"]),
                f"window of 50 jobs on a {SYSTEM_NODES}-node system with {free} free nodes; "
                "maximize nodes used."))
    hours = rng.integers(1, 25, 50)
    out.append(("ks1_window50_nodehours",
                KnapsackModel(nodes * hours, nodes, free, ids=ids, resources=["nodes"]),
                "same window; maximize node-hours requested (nodes x walltime hours)."))
    out.append(("ks1_decimal_values_12",
                KnapsackModel(np.round(rng.uniform(0, 10, 12), 2), rng.integers(1, 30, 12), 60),
                "12 items, priority scores with two decimals, integer weights."))
    out.append(("ks1_edge_cases_8",
                KnapsackModel([-5, 0, 7, 12, 3, 9, 4, 20], [2, 1, 0, 4, 3, 5, 0, 50], 10),
                "negative and zero values, weightless items, an item larger than the capacity."))
    nodes = hpc_sizes(rng, 30, 512)
    bb = np.where(rng.random(30) < 0.4, rng.integers(1, 33, 30), 0)
    out.append(("ks2_nodes_bb_30",
                KnapsackModel(nodes, [nodes, bb], [512, 64], resources=["nodes", "bb_tb"]),
                "30 jobs on a 512-node partition with 64 TB burst buffer; maximize nodes."))
    w = rng.integers(1, 60, (2, 60))
    out.append(("ks2_random_60",
                KnapsackModel(rng.integers(1, 100, 60), w, (w.sum(1) * 0.4).astype(int)),
                "60 items, two resources, capacities 40% of the weight, random values."))
    nodes = hpc_sizes(rng, 25, 256)
    bb = np.where(rng.random(25) < 0.5, rng.integers(1, 17, 25), 0)
    ssd = np.where(rng.random(25) < 0.3, nodes, 0)
    out.append(("ks3_nodes_bb_ssd_25",
                KnapsackModel(nodes, [nodes, bb, ssd], [256, 40, 128],
                              resources=["nodes", "bb_tb", "ssd_nodes"]),
                "25 jobs, 256 nodes, 40 TB burst buffer, 128 large-SSD nodes; maximize nodes."))
    return out



def main() -> None:
    rng = np.random.default_rng(SEED)
    rows = []
    for name, model, description in build(rng):
        save_instance(HERE / f"{name}.json", model, name, description=description,
                      meta={"generator": "instances/knapsack/make_instances.py", "seed": SEED})
        values = {solve(model, b).objective for b in ("dp", "cpsat")}
        if model.n_items <= 20:
            values.add(brute_force(model))
        if len(values) != 1:
            raise SystemExit(f"{name}: exact methods disagree: {values}")
        optimum = values.pop()
        rows.append((name, int(optimum) if optimum.is_integer() else round(optimum, 9)))
        print(f"{name}: {model.n_items} items, {model.n_resources} resources, optimum {optimum}")
    with open(HERE / "optima.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["instance", "optimum"])
        writer.writerows(rows)


if __name__ == "__main__":
    main()
