"""Start-up cost of the ``hpcopt`` command, this checkout against a baseline commit.

Each command runs as a whole process (``python -m hpcopt.cli ...``), the two code versions
interleaved run by run (which goes first swapped every run), ``--repeat`` times each after
one warm-up run (which writes the bytecode caches); the table gives medians of the wall time
and of the CPU time (user + system: less moved by other work on a shared machine), this
checkout's first, then the baseline's and their ratio.  ``import
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


def one_run(args: list[str], tree: Path, cwd: Path) -> tuple[float, float]:
    """``(wall seconds, CPU seconds)`` of one process: the CPU time (user + system, from the
    child's rusage) is what the command itself costs, less moved by other work on the
    machine than the wall time."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("HPCOPT_DATA", None)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *args], cwd=cwd, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(args)} failed with exit code {proc.returncode}")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


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
            times: dict[str, list[tuple[float, float]]] = {v: [] for v in trees}
            for tree in trees.values():
                one_run(cmd, tree, work)  # warm-up: bytecode caches, file cache
            for i in range(args.repeat):
                # interleaved, the order swapped every run: the same load for both
                for version, tree in list(trees.items())[::1 if i % 2 == 0 else -1]:
                    times[version].append(one_run(cmd, tree, work))
            medians = {}
            for version, ts in times.items():
                wall, cpu = ([t[i] for t in ts] for i in (0, 1))
                medians[version] = (statistics.median(wall), statistics.median(cpu))
                rows.append({"command": name, "version": version, "runs": len(ts),
                             "median_wall_s": round(medians[version][0], 4),
                             "min_wall_s": round(min(wall), 4),
                             "median_cpu_s": round(medians[version][1], 4),
                             "min_cpu_s": round(min(cpu), 4)})
            (hw, hc), (bw, bc) = medians.values()
            print(f"{name:40s} wall {hw:6.3f} / {bw:6.3f} s ({hw / bw:4.2f}x)   "
                  f"cpu {hc:6.3f} / {bc:6.3f} s ({hc / bc:4.2f}x)", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
