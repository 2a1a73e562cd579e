"""Batch-solve throughput (instances per second): serial vs a local pool vs Dask (issue #12).

Generates ``--n`` small knapsack instance files (20-60 jobs, one or two resources; seeded)
into a temporary folder that is deleted afterwards, then solves all of them with
``run_batch`` (the engine of ``hpcopt solve``; rows stream to a JSONL file as in
``hpcopt solve --out``) in each mode:

``serial``          this process (``hpcopt solve``)
``pool-N``          ``--workers N`` local processes
``dask-local-N``    ``--dask local:N`` (a LocalCluster of N single-threaded processes,
                    started and warmed up (imports) before the clock; that start-up time
                    is reported apart)
``dask-local-N-chunk1``  the same with ``--chunk 1``: one Dask task per instance

Every mode's rows are checked identical to the serial rows (wall times aside).  Best wall
time of ``--repeat`` interleaved rounds, and the CPU seconds that round used (this process,
the pool's workers, the Dask workers).  Writes ``OUT/batch_throughput.csv`` and prints a
Markdown table.

    python benchmarks/batch_throughput.py [--n 2000] [--workers 2] [--backend dp]
                                          [--repeat 2] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from hpcopt.batch import RowWriter, run_batch
from hpcopt.instances import save_instance
from hpcopt.models.knapsack import KnapsackModel

HERE = Path(__file__).resolve().parent


def make_instances(folder: Path, n: int, seed: int = 12) -> None:
    """``n`` knapsack windows like the bundled ones: job sizes in 1..512 nodes of a free
    pool of a quarter to a half of their sum, values = node counts or node-hours; every
    fourth one has a burst-buffer constraint too (1..64 nodes, 0..20 TB)."""
    rng = np.random.default_rng(seed)
    for i in range(n):
        jobs = int(rng.integers(20, 61))
        nodes = rng.integers(1, 513, jobs)
        if i % 4 == 3:  # a second resource, burst buffer (TB), on a smaller machine
            nodes = rng.integers(1, 65, jobs)
            bb = rng.integers(0, 21, jobs)
            model = KnapsackModel(nodes, [nodes, bb],
                                  [int(nodes.sum() // 3), int(bb.sum() // 3) + 1])
        else:
            hours = rng.integers(1, 49, jobs)
            model = KnapsackModel(nodes * hours if i % 2 else nodes, nodes,
                                  int(nodes.sum() * rng.uniform(0.25, 0.5)))
        save_instance(folder / f"w{i:05d}.json", model, f"w{i:05d}")


def warm_up() -> None:
    """Import what a solve needs (a spawned Dask worker starts cold)."""
    from hpcopt.batch import solve_item  # noqa: F401
    from hpcopt.instances import instance_from_dict  # noqa: F401
    from hpcopt.models.knapsack import KnapsackModel as _Model
    from hpcopt.solvers import solve

    solve(_Model([1, 2], [1, 1], 1), "dp")


def worker_cpu() -> float:
    """CPU seconds of the calling (Dask worker) process."""
    import psutil

    times = psutil.Process().cpu_times()
    return times.user + times.system


def cpu_seconds(client=None) -> float:
    """CPU seconds of this process, its finished children (pool workers) and, with a Dask
    client, its workers."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        use = resource.getrusage(who)
        total += use.ru_utime + use.ru_stime
    if client is not None:
        total += sum(client.run(worker_cpu).values())
    return total


def timed(files, backend, out: Path, client=None, **kw) -> tuple[float, float, list[dict]]:
    writer = RowWriter(out)
    cpu0 = cpu_seconds(client)
    t0 = time.perf_counter()
    try:
        run = run_batch(files, [backend], writer=writer, **kw)
    finally:
        writer.close()
    wall = time.perf_counter() - t0
    return wall, cpu_seconds(client) - cpu0, run.rows


def strip(rows):
    return [json.dumps({k: v for k, v in r.items() if k != "wall_time_s"}, sort_keys=True)
            for r in rows]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--backend", default="dp")
    ap.add_argument("--repeat", type=int, default=2, help="best of R runs per mode")
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--out", default=str(HERE / "results"))
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="hpcopt-throughput-"))
    results = []
    try:
        folder = tmp / "instances"
        folder.mkdir()
        t0 = time.perf_counter()
        make_instances(folder, args.n)
        print(f"generated {args.n} instances in {time.perf_counter() - t0:.1f} s under {tmp}")
        files = [str(folder / "w*.json")]
        modes = [("serial", {}), (f"pool-{args.workers}", {"workers": args.workers})]
        client = None
        if not args.no_dask:
            from hpcopt.executors import DaskExecutor, dask_client

            t0 = time.perf_counter()
            client, cluster = dask_client(f"local:{args.workers}")
            client.wait_for_workers(args.workers)
            client.run(warm_up)  # imports in each fresh worker process (a pool forks them)
            startup = time.perf_counter() - t0
            print(f"Dask LocalCluster of {args.workers} workers started in {startup:.1f} s")
            ex = DaskExecutor(client=client)
            modes += [(f"dask-local-{args.workers}", {"executor": ex}),
                      (f"dask-local-{args.workers}-chunk1", {"executor": ex, "chunk": 1})]
        reference = None
        best: dict[str, float] = {}
        cpu: dict[str, float] = {}
        for rep in range(args.repeat):
            for name, kw in modes:
                wall, used, rows = timed(files, args.backend, tmp / f"{name}.jsonl",
                                         client if "executor" in kw else None, **kw)
                assert len(rows) == args.n and all(r["status"] == "OPTIMAL" for r in rows), \
                    [r for r in rows if r["status"] != "OPTIMAL"][:1]
                if reference is None:
                    reference = strip(rows)
                assert strip(rows) == reference, f"{name}: rows differ from serial"
                if wall < best.get(name, float("inf")):
                    best[name], cpu[name] = wall, used
                print(f"  run {rep + 1}: {name:24s} {wall:7.2f} s  {args.n / wall:8.0f} inst/s"
                      f"  cpu {used:6.1f} s  load {os.getloadavg()[0]:.1f}", flush=True)
        if client is not None:
            client.close()
            cluster.close()
        serial = best["serial"]
        for name, _ in modes:
            results.append({"mode": name, "instances": args.n, "backend": args.backend,
                            "wall_s": round(best[name], 3),
                            "instances_per_s": round(args.n / best[name], 1),
                            "speedup_vs_serial": round(serial / best[name], 2),
                            "cpu_s": round(cpu[name], 1)})
        if not args.no_dask:
            results.append({"mode": "dask-cluster-startup", "instances": 0,
                            "backend": "", "wall_s": round(startup, 3),
                            "instances_per_s": "", "speedup_vs_serial": "", "cpu_s": ""})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "batch_throughput.csv"
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(results[0]))
        w.writeheader()
        w.writerows(results)
    print(f"\nwrote {path} (cores: {os.cpu_count()}, load average "
          f"{os.getloadavg()[0]:.1f})\n")
    print("| mode | wall (s) | instances/s | vs serial | CPU (s) |\n|---|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['mode']} | {r['wall_s']} | {r['instances_per_s']} | "
              f"{r['speedup_vs_serial']} | {r['cpu_s']} |")


if __name__ == "__main__":
    main()
