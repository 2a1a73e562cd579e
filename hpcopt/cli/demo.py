"""``hpcopt demo``: a short simulation and a batch solve on the bundled files."""

from __future__ import annotations

from pathlib import Path

from ..cliargs import out_path
from .common import instances_dir, print_rows, print_summary


def register(sub) -> None:
    d = sub.add_parser("demo", help="a short simulation and a batch solve on bundled data")
    d.add_argument("--out", type=out_path, default=None, help="directory for the demo's outputs")
    d.set_defaults(run=run)


def run(args) -> int:
    from ..api import simulate
    from ..batch import solve_batch, write_rows

    base = instances_dir()
    trace = base / "traces" / "demo.swf"
    print(f"== simulation: {trace.name}, FCFS+EASY vs knapsack (W=20, dp) + EASY ==")
    runs = {"fcfs+easy": simulate(trace, policy="fcfs"),
            "knapsack+easy": simulate(trace, policy="knapsack", backend="dp")}
    print_summary({name: r.summary for name, r in runs.items()})
    print("\n== batch solve: the bundled knapsack/*.json with dp and cpsat ==")
    rows = solve_batch([str(base / "knapsack" / "*.json")], ["dp", "cpsat"])
    print_rows(rows)
    if args.out:
        for name, r in runs.items():
            r.write(Path(args.out) / name)
        write_rows(rows, Path(args.out) / "solve.csv")
        print(f"wrote results under {args.out}")
    return 1 if any(r["status"] == "ERROR" for r in rows) else 0
