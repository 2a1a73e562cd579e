"""Start-up cost of the ``hpcopt`` command, this checkout against a baseline commit.

Each command runs as a whole process (``python -m hpcopt.cli ...``), the two code versions
interleaved run by run (which goes first swapped every run), ``--repeat`` times each after
one warm-up run (which writes the bytecode caches); the table gives medians.  ``import
hpcopt.cli`` is timed the same way, and a bare ``python -c pass`` is the floor every command
pays.  Both versions run from a folder of links laid out as the installed package
(``models/`` and ``solvers/`` inside ``hpcopt``, ``instances/`` as ``hpcopt/_bundled``), with
the same interpreter and libraries, from a folder outside the checkout; the baseline's files
come from ``git archive``.

    python benchmarks/startup.py --baseline afd649b --repeat 11 \
        --large "$HPCOPT_DATA/hpc_swf/pwa/LLNL-Atlas-2006-2.1-cln.swf.gz"

Writes ``benchmarks/results/startup.csv`` (one row per command and version).
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DEMO = ROOT / "instances" / "traces" / "demo.swf"


def package_tree(source: Path, into: Path) -> Path:
    """A folder whose ``hpcopt`` is the package of ``source`` (a checkout) as installed:
    links to its files, with ``models``, ``solvers`` and ``_bundled`` mapped in."""
    package = into / "hpcopt"
    package.mkdir(parents=True)
    mapped = {"models": source / "models", "solvers": source / "solvers",
              "_bundled": source / "instances"}
    for entry in (source / "hpcopt").iterdir():
        if entry.name not in mapped and entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    for name, target in mapped.items():
        (package / name).symlink_to(target)
    return into


def checkout(commit: str, into: Path) -> Path:
    """The files of ``commit`` (``git archive``) in ``into``."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def commands(large: str | None) -> dict[str, list[str]]:
    """name -> the arguments after ``python``."""
    out = {
        "python -c pass (floor)": ["-c", "pass"],
        "import hpcopt.cli": ["-c", "import hpcopt.cli"],
        "hpcopt --version": ["-m", "hpcopt.cli", "--version"],
        "hpcopt policies": ["-m", "hpcopt.cli", "policies"],
        "hpcopt simulate demo.swf": ["-m", "hpcopt.cli", "simulate", str(DEMO),
                                     "--no-progress"],
    }
    if large:
        out[f"hpcopt simulate {Path(large).name}"] = ["-m", "hpcopt.cli", "simulate", large,
                                                      "--no-progress"]
    return out


def one_run(args: list[str], tree: Path, cwd: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("HPCOPT_DATA", None)
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=cwd, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--baseline", default="afd649b", help="commit to compare against")
    p.add_argument("--repeat", type=int, default=11, help="runs of each command and version")
    p.add_argument("--large", default=None, metavar="TRACE",
                   help="a large trace to simulate too (e.g. an SWF of the data directory)")
    p.add_argument("--out", default=str(RESULTS / "startup.csv"))
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        trees = {"this checkout": package_tree(ROOT, tmp / "current"),
                 args.baseline: package_tree(checkout(args.baseline, tmp / "src"),
                                             tmp / "baseline")}
        work = tmp / "work"
        work.mkdir()
        rows = []
        for name, cmd in commands(args.large).items():
            times: dict[str, list[float]] = {v: [] for v in trees}
            for tree in trees.values():
                one_run(cmd, tree, work)  # warm-up: bytecode caches, file cache
            for i in range(args.repeat):
                # interleaved, the order swapped every run: the same load for both
                for version, tree in list(trees.items())[::1 if i % 2 == 0 else -1]:
                    times[version].append(one_run(cmd, tree, work))
            for version, ts in times.items():
                rows.append({"command": name, "version": version, "runs": len(ts),
                             "median_s": round(statistics.median(ts), 4),
                             "min_s": round(min(ts), 4)})
            here, base = (statistics.median(times[v]) for v in trees)
            print(f"{name:45s} this {here:7.3f} s   {args.baseline} {base:7.3f} s   "
                  f"ratio {here / base:5.2f}", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
