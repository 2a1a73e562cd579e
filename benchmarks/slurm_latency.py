"""How soon a job starts after the one before it ends, or after its submission, under
``hpcopt slurm run``: polling alone against cycles woken by Slurm's EpilogSlurmctld and the
submit script (``--wake-port``), at the adapter's default interval (5 s), side by side on
fresh testbeds.

Part ``sequence``: whole-machine jobs (8 nodes each, sleeps 3-8 s) queued at once; each
start can only follow the previous end, so every gap is the scheduler's latency.  Part
``replay``: a scaled slice of a real trace (``slurm_validation.py``'s replay, FCFS with
EASY); the latency of a start is its time minus the last end before it, over the starts
that came within 10 s of an end (Slurm's records are whole seconds).  Slurm's own
backfill scheduler (no hpcopt) is the reference of all parts.  Part ``submit``: one-node
jobs submitted one by one to an idle machine (every ``--every`` seconds); each job writes the
time it began running (``date +%s.%N``), so its submit-to-start latency is measured to the
millisecond from ``sbatch``'s call to its first line running.

    python benchmarks/slurm_latency.py sequence --out results/slurm/latency      (root)
    python benchmarks/slurm_latency.py replay --out results/slurm/latency
    python benchmarks/slurm_latency.py submit --out results/slurm/latency

Writes ``OUT/<part>.json`` (the gaps of each run) and prints the rows.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from slurm_validation import HPCOPT, completed_jobs, free_udp_port  # noqa: E402

SLEEPS = (3, 5, 4, 6, 3, 8, 5, 4)


def run(mode: str, submit, n_jobs: int, interval: float, nodes: int, workdir: Path,
        minutes: float = 20, batch_sched_delay: int | None = None) -> dict:
    """One run on a fresh testbed: ``mode`` is ``poll``, ``wake`` or ``slurm`` (Slurm's own
    backfill); ``submit(env)`` submits the jobs; ``batch_sched_delay``: Slurm's parameter
    (default 3 s).  Returns the finished jobs (jobcomp)."""
    from hpcopt import testbed

    d = workdir / mode
    port = free_udp_port() if mode == "wake" else None
    testbed.start(d, nodes, scheduler="backfill" if mode == "slurm" else "builtin",
                  hold=mode != "slurm", wake_port=port, batch_sched_delay=batch_sched_delay)
    env = testbed.env(d)
    proc = None
    try:
        if mode != "slurm":
            proc = subprocess.Popen(
                [HPCOPT, "slurm", "run", "--policy", "fcfs", "--interval", str(interval),
                 "--lock", str(d / "adapter.lock"), "--log", str(d / "adapter.jsonl"),
                 *(["--wake-port", str(port)] if port else [])],
                env=env, stdout=subprocess.DEVNULL)
        t0 = time.time()
        submit(env)
        while len(completed_jobs(d, by="JobId")) < n_jobs:
            if time.time() - t0 > minutes * 60:
                raise SystemExit(f"{mode}: not done in {minutes} minutes")
            time.sleep(1)
        return completed_jobs(d, by="JobId")
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
        testbed.stop(d)


def gaps_after_ends(done: dict, window: float = 10.0) -> list[float]:
    """For each start, its time minus the latest end at or before it, where that is within
    ``window`` seconds (a start that waited for no end is not a latency)."""
    ends = sorted(j["end"] for j in done.values())
    out = []
    for j in done.values():
        before = [e for e in ends if e <= j["start"]]
        if before and j["start"] - before[-1] <= window and j["start"] > min(ends):
            out.append(j["start"] - before[-1])
    return sorted(out)


def summary(gaps: list[float]) -> dict:
    return {"starts": len(gaps),
            "median_s": round(statistics.median(gaps), 3) if gaps else None,
            "mean_s": round(statistics.fmean(gaps), 2) if gaps else None,
            "max_s": max(gaps) if gaps else None}


def part_sequence(args) -> dict:
    rows = {}
    for mode in args.modes:
        with tempfile.TemporaryDirectory(prefix="hpcopt-lat-") as tmp:
            def submit(env):
                for s in SLEEPS:
                    subprocess.run(["sbatch", "-N", str(args.nodes), "-t", "1", "-o",
                                    "/dev/null", "--wrap", f"sleep {s}"], env=env,
                                   check=True, capture_output=True)
            done = run(mode, submit, len(SLEEPS), args.interval, args.nodes, Path(tmp))
        jobs = sorted(done.values(), key=lambda j: j["start"])
        gaps = [b["start"] - a["end"] for a, b in zip(jobs, jobs[1:])]
        rows[mode] = {"gaps_s": gaps, **summary(gaps)}
        print(mode, rows[mode], flush=True)
    return rows


def submit_spaced(env: dict, starts: Path, submitted: list[float], jobs: int,
                  every: float) -> None:
    """``jobs`` one-node jobs, one every ``every`` seconds, each writing the time it began
    running into ``starts/I``; the time of each ``sbatch`` call goes to ``submitted``."""
    for i in range(jobs):
        submitted.append(time.time())
        subprocess.run(["sbatch", "-N", "1", "-t", "1", "-o", "/dev/null",
                        "--wrap", f"date +%s.%N > {starts}/{i}; sleep 1"],
                       env=env, check=True, capture_output=True)
        time.sleep(max(0.0, submitted[-1] + every - time.time()))


def part_submit(args) -> dict:
    rows = {}
    for mode in args.modes:
        with tempfile.TemporaryDirectory(prefix="hpcopt-lat-") as tmp:
            starts, submitted = Path(tmp) / "starts", []
            starts.mkdir()
            run(mode, lambda env, s=starts, t=submitted: submit_spaced(env, s, t, args.jobs,
                                                                       args.every),
                args.jobs, args.interval, args.nodes, Path(tmp),
                batch_sched_delay=args.batch_sched_delay)
            gaps = sorted(round(float((starts / str(i)).read_text()) - t, 3)
                          for i, t in enumerate(submitted))
        rows[mode] = {"latency_s": gaps, **summary(gaps)}
        print(mode, {k: v for k, v in rows[mode].items() if k != "latency_s"}, flush=True)
    return rows


def part_replay(args) -> dict:
    from slurm_validation import scaled_slice, submit_all

    jobs = scaled_slice(args)
    rows = {}
    for mode in args.modes:
        with tempfile.TemporaryDirectory(prefix="hpcopt-lat-") as tmp:
            done = run(mode, lambda env: submit_all(jobs, env), len(jobs), args.interval,
                       args.nodes, Path(tmp), args.max_minutes)
        gaps = gaps_after_ends(done)
        rows[mode] = {"gaps_s": gaps, **summary(gaps)}
        print(mode, {k: v for k, v in rows[mode].items() if k != "gaps_s"}, flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="part", required=True)
    for name in ("sequence", "replay", "submit"):
        p = sub.add_parser(name)
        p.add_argument("--modes", nargs="+", default=["poll", "wake", "slurm"],
                       choices=["poll", "wake", "slurm"])
        p.add_argument("--interval", type=float, default=5.0, help="the adapter's interval")
        p.add_argument("--nodes", type=int, default=8)
        p.add_argument("--out", default="results/slurm/latency")
    r = sub.choices["replay"]
    from slurm_validation import DEFAULT_TRACE

    r.add_argument("--trace", default=str(DEFAULT_TRACE))
    r.add_argument("--first", type=int, default=5000)
    r.add_argument("--jobs", type=int, default=60)
    r.add_argument("--run-min", type=float, default=5)
    r.add_argument("--run-max", type=float, default=25)
    r.add_argument("--limit-max", type=int, default=2)
    r.add_argument("--load", type=float, default=1.1)
    r.add_argument("--max-minutes", type=float, default=20)
    s = sub.choices["submit"]
    s.add_argument("--jobs", type=int, default=20)
    s.add_argument("--every", type=float, default=3.0,
                   help="seconds between two submissions (each job runs about 1 s)")
    s.add_argument("--batch-sched-delay", type=int, default=None, metavar="S",
                   help="Slurm's batch_sched_delay (default: Slurm's, 3 s)")
    args = ap.parse_args()
    rows = {"sequence": part_sequence, "replay": part_replay,
            "submit": part_submit}[args.part](args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = args.part + ("" if getattr(args, "batch_sched_delay", None) is None
                        else f"_delay{args.batch_sched_delay}")
    (out / f"{name}.json").write_text(json.dumps(
        {"args": {k: v for k, v in vars(args).items() if k != "part"}, "rows": rows},
        indent=1))
    print(f"wrote {out / (name + '.json')}")


if __name__ == "__main__":
    main()
