"""hpcopt's simulator against a real Slurm: replay a real trace slice on the testbed.

Part ``replay``: a slice of a real trace (SWF) is scaled to the 8-node testbed (sizes on a
log scale to 1..8 nodes, run times on a log scale to sleeps of ``--run-min``..``--run-max``
seconds, requested times on a log scale to whole-minute limits of 1..``--limit-max``, arrivals
compressed to an offered load of ``--load``) and submitted at its scaled times to a fresh
testbed, scheduled by

- ``hpcopt slurm run --policy fcfs`` (EASY) and ``--policy knapsack`` (Slurm FIFO only starts
  what hpcopt releases), and
- Slurm's own ``sched/backfill`` (``bf_interval=1``), no hpcopt.

Each run is compared with hpcopt's own simulation of the same jobs (Slurm's recorded submit
times, the real run times end - start, the Slurm limits as walltimes; the policy the run
used, FCFS+EASY for Slurm's backfill): Kendall tau of the start order, the sets of jobs that
started ahead of an earlier-submitted job, start-time drift, and the deviation of mean wait
and mean bounded slowdown (tau 10 s).  With ``--launch-delay`` the simulation also runs with
each start delayed by that many seconds (the driver's ``launch_delay``: the adapter's cycle
and Slurm's launch).

Part ``cost``: a testbed with N held jobs (10, 100, 1,000) and ``hpcopt slurm run --dry-run``
cycles: Slurm read time and decision time per cycle.

    python benchmarks/slurm_validation.py replay --out results/slurm   (root, Slurm installed)
    python benchmarks/slurm_validation.py cost --out results/slurm

Writes ``OUT/replay_<run>.csv`` (one row per job: real and simulated start), ``OUT/*.json``
and prints the tables of benchmarks/README.md ("real Slurm").
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HPCOPT = str(Path(sys.executable).with_name("hpcopt"))
DEFAULT_TRACE = Path(__file__).resolve().parents[2] / "shared" / "data" / "hpc_swf" / "pwa" / \
    "KTH-SP2-1996-2.1-cln.swf.gz"


def log_map(x: np.ndarray, lo: float, hi: float, out_lo: float, out_hi: float) -> np.ndarray:
    """Map [lo, hi] to [out_lo, out_hi] on a log scale (monotone)."""
    x = np.clip(x, lo, hi)
    frac = np.log(x / lo) / math.log(hi / lo) if hi > lo else np.zeros_like(x)
    return out_lo + frac * (out_hi - out_lo)


def scaled_slice(args) -> list[dict]:
    """The slice, scaled to the testbed (module docstring)."""
    from hpcopt import load_trace

    trace = load_trace(args.trace)
    jobs = trace.jobs[args.first:args.first + args.jobs]
    n = np.array([j.nodes for j in jobs], float)
    run = np.array([max(j.runtime, 1.0) for j in jobs])
    wall = np.array([max(j.walltime, j.runtime, 1.0) for j in jobs])
    size = np.clip(np.rint(log_map(n, 1, trace.system.nodes, 1, args.nodes)), 1, args.nodes)
    sleep = np.rint(log_map(run, run.min(), run.max(), args.run_min, args.run_max))
    limit = np.ceil(log_map(wall, wall.min(), wall.max(), 0.5, args.limit_max))
    limit = np.maximum(limit, np.ceil(sleep / 60))
    sub = np.array([j.submit for j in jobs])
    work = float((size * sleep).sum())
    span = work / (args.nodes * args.load)
    arrive = (sub - sub[0]) * (span / max(sub[-1] - sub[0], 1.0))
    return [dict(name=f"j{i}", trace_id=j.id, nodes=int(size[i]), sleep=int(sleep[i]),
                 limit=int(limit[i]), at=float(arrive[i])) for i, j in enumerate(jobs)]


def submit_all(jobs: list[dict], env: dict) -> None:
    t0 = time.monotonic()
    for job in jobs:
        delay = job["at"] - (time.monotonic() - t0)
        if delay > 0:
            time.sleep(delay)
        subprocess.run(["sbatch", "--parsable", "-o", "/dev/null", "-J", job["name"],
                        "-N", str(job["nodes"]), "-t", str(job["limit"]), "--wrap",
                        f"sleep {job['sleep']}"], env=env, check=True, capture_output=True,
                       timeout=60)


def finished(env: dict) -> dict[str, dict]:
    out = subprocess.run(["squeue", "--json"], env=env, capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return {j["name"]: j for j in json.loads(out)["jobs"]}


def replay(jobs: list[dict], kind: str, args, workdir: Path) -> dict:
    """One run on a fresh testbed; returns {name: (submit, start, end)} and the adapter log."""
    from hpcopt.slurm import testbed

    d = workdir / kind
    conf = testbed.start(d, args.nodes, scheduler="backfill" if kind == "slurm" else "builtin",
                         hold=kind != "slurm")
    env = {**os.environ, "SLURM_CONF": str(conf)}
    log = d / "adapter.jsonl"
    proc = None
    try:
        if kind != "slurm":
            proc = subprocess.Popen(["nice", "-n", "5", HPCOPT, "slurm", "run", "--policy",
                                     kind, "--interval", str(args.interval), "--log", str(log)],
                                    env=env, stdout=subprocess.DEVNULL)
            wait_until = time.time() + 60
            while not (log.exists() and log.read_text()):  # the adapter's first cycle
                if time.time() > wait_until:
                    raise SystemExit(f"{kind}: the adapter did not start")
                time.sleep(0.2)
        t0 = time.time()
        submit_all(jobs, env)
        while True:
            state = finished(env)
            if len(state) == len(jobs) and all(j["job_state"] not in
                                               ("PENDING", "RUNNING", "COMPLETING")
                                               for j in state.values()):
                break
            if time.time() - t0 > args.max_minutes * 60:
                raise SystemExit(f"{kind}: not done in {args.max_minutes} minutes")
            time.sleep(1)
        wall = time.time() - t0
    finally:
        try:
            if proc is not None:  # SIGTERM: a background shell ignores SIGINT for its jobs
                proc.send_signal(signal.SIGTERM)
                proc.wait(30)
        finally:
            testbed.stop(d)
    bad = [n for n, j in state.items() if j["job_state"] != "COMPLETED"]
    if bad:
        raise SystemExit(f"{kind}: jobs not COMPLETED: {bad[:5]}")
    real = {n: (float(j["submit_time"]), float(j["start_time"]), float(j["end_time"]))
            for n, j in state.items()}
    cycles = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return dict(real=real, cycles=cycles, wall=wall)


def simulate_same(jobs: list[dict], real: dict, policy: str, nodes: int,
                  delay: float = 0.0) -> dict[str, float]:
    """hpcopt's simulation of the jobs as Slurm saw them (start time by name), with each
    start ``delay`` seconds after its decision (the driver's ``launch_delay``)."""
    from hpcopt.domain import Job, System
    from hpcopt.policies import make_policy
    from hpcopt.sim.driver import Simulator

    t0 = min(s for s, _, _ in real.values())
    by_name = {j["name"]: j for j in jobs}
    names = sorted(real, key=lambda n: (real[n][0], n))
    sim_jobs = []
    for i, name in enumerate(names):
        sub, start, end = real[name]
        limit = by_name[name]["limit"] * 60.0
        sim_jobs.append(Job(i, sub - t0, min(max(end - start, 0.0), limit), limit,
                            by_name[name]["nodes"]))
    sim = Simulator(sim_jobs, System(nodes), make_policy(policy), launch_delay=delay).run()
    return {name: sim.records[i].start + t0 for i, name in enumerate(names)}


def ahead(order: list[str], start: dict[str, float]) -> set[str]:
    """Jobs that started before some job submitted earlier (strictly)."""
    out, latest = set(), -math.inf
    for name in order:
        if start[name] < latest:
            out.add(name)
        latest = max(latest, start[name])
    return out


def compare(real: dict, sim: dict[str, float]) -> dict:
    from scipy.stats import kendalltau

    names = sorted(real, key=lambda n: (real[n][0], int(n[1:])))
    r_start = np.array([real[n][1] for n in names])
    s_start = np.array([sim[n] for n in names])
    sub = np.array([real[n][0] for n in names])
    run = np.array([real[n][2] - real[n][1] for n in names])
    tau = kendalltau(r_start, s_start).statistic
    a_real = ahead(names, {n: real[n][1] for n in names})
    a_sim = ahead(names, sim)
    drift = r_start - s_start
    w_real, w_sim = r_start - sub, s_start - sub

    def bsld(wait):
        return np.maximum(1.0, (wait + run) / np.maximum(run, 10.0))

    def dev(a, b):
        return 100.0 * (a.mean() - b.mean()) / b.mean() if b.mean() else float("nan")

    union = a_real | a_sim
    return dict(jobs=len(names), tau=round(float(tau), 4),
                ahead_real=len(a_real), ahead_sim=len(a_sim), ahead_both=len(a_real & a_sim),
                ahead_jaccard=round(len(a_real & a_sim) / len(union), 3) if union else 1.0,
                drift_mean=round(float(drift.mean()), 2),
                drift_median=round(float(np.median(drift)), 2),
                drift_abs_p90=round(float(np.percentile(np.abs(drift), 90)), 2),
                wait_real=round(float(w_real.mean()), 2), wait_sim=round(float(w_sim.mean()), 2),
                wait_dev_pct=round(dev(w_real, w_sim), 2),
                bsld_real=round(float(bsld(w_real).mean()), 3),
                bsld_sim=round(float(bsld(w_sim).mean()), 3),
                bsld_dev_pct=round(dev(bsld(w_real), bsld(w_sim)), 2))


def measured_latency(run: dict, interval: float) -> float | None:
    """The adapter's latency per start, from its own log and Slurm's start times (no fit):
    release to start (Slurm's start times are whole seconds: + 0.5 s), plus half a cycle
    (a job becomes startable on average that long before the next read) and the read."""
    released = {j: c["time"] for c in run["cycles"] if c.get("ok") for j in c["released"]}
    if not released:
        return None
    ids = {name: int(name[1:]) + 1 for name in run["real"]}  # submitted in order: ids 1..N
    lag = [st - released[ids[n]] + 0.5 for n, (_, st, _) in run["real"].items()
           if ids[n] in released]
    read = float(np.mean([c["read_s"] for c in run["cycles"] if c.get("ok")]))
    return round(float(np.mean(lag)) + interval / 2 + read, 2)


def analyze(jobs: list[dict], kind: str, run: dict, args, out: Path) -> list[dict]:
    """The comparison rows of one run (with and without the launch delay)."""
    rows = []
    real = {k: tuple(v) for k, v in run["real"].items()}
    policy = "fcfs" if kind == "slurm" else kind
    delays = {0.0, *args.launch_delay}
    measured = measured_latency(run, args.interval)
    if measured is not None:
        delays.add(measured)
    for delay in sorted(delays):
        sim = simulate_same(jobs, real, policy, args.nodes, delay)
        row = dict(run=kind if kind == "slurm" else f"hpcopt {kind}",
                   simulated=f"{policy}+easy" if policy == "fcfs" else policy,
                   launch_delay=delay, measured=delay == measured,
                   wall_s=round(run["wall"], 1), **compare(real, sim))
        ok = [c for c in run["cycles"] if c.get("ok")]
        if ok:
            row.update(cycles=len(run["cycles"]), failed_cycles=len(run["cycles"]) - len(ok),
                       read_ms=round(1000 * float(np.mean([c["read_s"] for c in ok])), 1),
                       decide_ms=round(1000 * float(np.mean([c["decide_s"] for c in ok])), 2))
        rows.append(row)
        print(json.dumps(row), flush=True)
        with open(out / f"replay_{kind}_delay{delay:g}.csv", "w") as f:
            f.write("name,submit,real_start,real_end,sim_start\n")
            for name, (s, st, e) in sorted(real.items(), key=lambda kv: kv[1][0]):
                f.write(f"{name},{s:.0f},{st:.0f},{e:.0f},{sim[name]:.1f}\n")
    return rows


def cmd_replay(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = scaled_slice(args)
    (out / "replay_jobs.json").write_text(json.dumps(jobs, indent=1))
    print(f"{len(jobs)} jobs of {Path(args.trace).name} from record {args.first}: "
          f"nodes {min(j['nodes'] for j in jobs)}-{max(j['nodes'] for j in jobs)}, sleeps "
          f"{min(j['sleep'] for j in jobs)}-{max(j['sleep'] for j in jobs)} s, limits "
          f"{min(j['limit'] for j in jobs)}-{max(j['limit'] for j in jobs)} min, arrivals over "
          f"{jobs[-1]['at']:.0f} s", flush=True)
    rows = []
    work = Path(tempfile.mkdtemp(prefix="hpcopt-slurm-"))  # kept: logs of each testbed
    for kind in args.runs:
        saved = out / f"replay_{kind}.json"
        if args.analyze_only:
            run = json.loads(saved.read_text())
        else:
            run = replay(jobs, kind, args, work)
            saved.write_text(json.dumps(run))
        rows += analyze(jobs, kind, run, args, out)
    (out / "replay.json").write_text(json.dumps(rows, indent=1))


def cmd_cost(args) -> None:
    from hpcopt.slurm import testbed

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="hpcopt-slurm-cost-") as tmp:
        conf = testbed.start(Path(tmp) / "tb", 8)
        env = {**os.environ, "SLURM_CONF": str(conf)}
        try:
            have = 0
            for target in args.pending:
                for i in range(have, target):  # held by the job_submit.lua
                    subprocess.run(["sbatch", "-o", "/dev/null", "-N", str(1 + i % 8), "-t",
                                    str(1 + i % 5), "--wrap", "sleep 1"], env=env, check=True,
                                   capture_output=True, timeout=60)
                have = target
                for policy in args.policies:
                    log = Path(tmp) / f"cost_{target}_{policy}.jsonl"
                    for _ in range(args.cycles):
                        subprocess.run([HPCOPT, "slurm", "run", "--policy", policy, "--once",
                                        "--dry-run", "--log", str(log)], env=env, check=True,
                                       capture_output=True, timeout=120)
                    recs = [json.loads(line) for line in log.read_text().splitlines()]
                    assert all(r["pending"] == target for r in recs), recs[0]
                    read = np.array([r["read_s"] for r in recs]) * 1000
                    dec = np.array([r["decide_s"] for r in recs]) * 1000
                    row = dict(pending=target, policy=policy, cycles=len(recs),
                               read_ms_median=round(float(np.median(read)), 1),
                               read_ms_max=round(float(read.max()), 1),
                               decide_ms_median=round(float(np.median(dec)), 2),
                               decide_ms_max=round(float(dec.max()), 2),
                               cycle_ms_median=round(float(np.median(read + dec)), 1))
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        finally:
            testbed.stop(Path(tmp) / "tb")
    (out / "cost.json").write_text(json.dumps(rows, indent=1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="part", required=True)
    r = sub.add_parser("replay")
    r.add_argument("--trace", default=str(DEFAULT_TRACE))
    r.add_argument("--first", type=int, default=5000, help="first record of the slice")
    r.add_argument("--jobs", type=int, default=150)
    r.add_argument("--nodes", type=int, default=8)
    r.add_argument("--run-min", type=float, default=2)
    r.add_argument("--run-max", type=float, default=12)
    r.add_argument("--limit-max", type=int, default=4, help="longest limit in minutes")
    r.add_argument("--load", type=float, default=1.1, help="offered load of the arrivals")
    r.add_argument("--interval", type=float, default=0.5, help="adapter cycle, seconds")
    r.add_argument("--launch-delay", type=float, nargs="+", default=[],
                   help="also simulate with each start this many seconds later (the "
                        "adapter's cycle and Slurm's launch); several values allowed")
    r.add_argument("--runs", nargs="+", default=["fcfs", "knapsack", "slurm"])
    r.add_argument("--max-minutes", type=float, default=10)
    r.add_argument("--analyze-only", action="store_true",
                   help="compare the runs saved in --out again (no Slurm)")
    r.add_argument("--out", default="results/slurm")
    c = sub.add_parser("cost")
    c.add_argument("--pending", type=int, nargs="+", default=[10, 100, 1000])
    c.add_argument("--policies", nargs="+", default=["fcfs", "knapsack"])
    c.add_argument("--cycles", type=int, default=5)
    c.add_argument("--out", default="results/slurm")
    args = p.parse_args()
    (cmd_replay if args.part == "replay" else cmd_cost)(args)


if __name__ == "__main__":
    main()
