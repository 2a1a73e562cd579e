"""hpcopt's simulator against a real Slurm: replay a real trace slice on the testbed.

Part ``replay``: a slice of a real trace (SWF) is scaled to the 8-node testbed (sizes on a
log scale to 1..8 nodes, run times on a log scale to sleeps of ``--run-min``..``--run-max``
seconds, requested times on a log scale to whole-minute limits of 1..``--limit-max``, arrivals
compressed to an offered load of ``--load``) and submitted at its scaled times to a fresh
testbed, scheduled by

- ``hpcopt slurm run --policy fcfs`` (EASY) and ``--policy knapsack`` (Slurm FIFO only starts
  what hpcopt releases), and
- Slurm's own ``sched/backfill`` (``bf_interval=1``), no hpcopt.

Each run is compared with hpcopt's own simulation of the same jobs (the submit, start and
end times Slurm recorded in its jobcomp log, the real run times end - start, the Slurm limits
as walltimes; the policy the run used, FCFS+EASY for Slurm's backfill): Kendall tau of the
start order, the sets of jobs that started ahead of an earlier-submitted job, start-time
drift, and the deviation of mean wait and mean bounded slowdown (tau 10 s).  The simulation
takes the start latency (a job's end to the next start, read off Slurm's records) as none,
as a constant (its mean), with the adapter's cycle, and drawn per start (``--draws`` seeds);
``--launch-delay`` adds constants of one's own (``analyze``).

With ``--shown-every S`` the Slurm-alone run also samples what ``squeue --start`` shows of
every pending job every S seconds (``ShownSampler``).  Part ``shown`` sets those samples
beside what the model of Slurm (``--policy slurm``, set up as part ``alone`` sets it up)
shows at the same moments: the plan of its last backfill pass.

Part ``logged``: runs that kept their controller's log (``replay --controller-log``)
simulated under ``--policy slurm`` twice, with the model's own timing and with the log's
(its submissions, ends and passes to the millisecond), to tell the pass rules apart from
when the passes fall.

Part ``cost``: a testbed with N held jobs (10, 100, 1,000) and ``hpcopt slurm run --dry-run``
cycles: Slurm read time and decision time per cycle.  Part ``report``: the markdown table of
saved replays.

    python benchmarks/slurm_validation.py replay --parallel --out results/slurm   (root)
    python benchmarks/slurm_validation.py replay --analyze-only --out results/slurm
    python benchmarks/slurm_validation.py report results/slurm
    python benchmarks/slurm_validation.py replay --runs slurm --shown-every 2 --out DIR (root)
    python benchmarks/slurm_validation.py shown DIR... --out results/slurm/shown
    python benchmarks/slurm_validation.py replay --runs slurm --controller-log --out DIR (root)
    python benchmarks/slurm_validation.py logged DIR...
    python benchmarks/slurm_validation.py cost --out results/slurm

Writes ``OUT/replay_<run>.json`` (the real times and the adapter's cycles), ``OUT/replay.json``
(the comparison rows), ``OUT/replay_<run>_<model><delay>.csv`` (one row per job: real and
simulated start) and prints the rows.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from hpcopt.datadir import data_root
from hpcopt.slurm.service import read_log

HPCOPT = str(Path(sys.executable).with_name("hpcopt"))
_STARTING = threading.Lock()
SHARED = "shared"  # the testbed's partition whose jobs share nodes core by core (--shared)
CPUS = 4  # cores per testbed node
DATA = data_root()  # the data directory (hpcopt.datadir)
DEFAULT_TRACE = DATA / "hpc_swf" / "pwa" / "KTH-SP2-1996-2.1-cln.swf.gz"
BB_TRACE = DATA / "burst_buffer" / "kopanski_kth_batsim" / \
    "KTH-SP2-1996-2.1-cln-io-aware-1000.json.gz"


def log_map(x: np.ndarray, lo: float, hi: float, out_lo: float, out_hi: float) -> np.ndarray:
    """Map [lo, hi] to [out_lo, out_hi] on a log scale (monotone)."""
    x = np.clip(x, lo, hi)
    frac = np.log(x / lo) / math.log(hi / lo) if hi > lo else np.zeros_like(x)
    return out_lo + frac * (out_hi - out_lo)


def slice_arguments(parser, *, first: int, jobs: int, nodes: int, run_min: float,
                    run_max: float, limit_max: int, load: float) -> None:
    """The options ``scaled_slice`` reads (``--trace``, ``--first``, ``--jobs``, ``--nodes``,
    ``--run-min``, ``--run-max``, ``--limit-max``, ``--load``), with a benchmark's defaults."""
    parser.add_argument("--trace", default=str(DEFAULT_TRACE))
    parser.add_argument("--first", type=int, default=first, help="first record of the slice")
    parser.add_argument("--jobs", type=int, default=jobs)
    parser.add_argument("--nodes", type=int, default=nodes)
    parser.add_argument("--run-min", type=float, default=run_min)
    parser.add_argument("--run-max", type=float, default=run_max)
    parser.add_argument("--limit-max", type=int, default=limit_max,
                        help="longest limit in minutes")
    parser.add_argument("--load", type=float, default=load,
                        help="offered load of the arrivals")


def scaled_slice(args) -> list[dict]:
    """The slice, scaled to the testbed (module docstring)."""
    from hpcopt import load_trace

    trace = load_trace(args.trace)
    jobs = trace.jobs[args.first:args.first + args.jobs]
    n = np.array([j.nodes for j in jobs], float)
    run = np.array([max(j.runtime, 1.0) for j in jobs])
    wall = np.array([max(j.walltime, j.runtime, 1.0) for j in jobs])
    most = machine_size(args)  # nodes, or cores on the shared partition
    size = np.clip(np.rint(log_map(n, 1, trace.system.nodes, 1, most)), 1, most)
    sleep = np.rint(log_map(run, run.min(), run.max(), args.run_min, args.run_max))
    limit = np.ceil(log_map(wall, wall.min(), wall.max(), 0.5, args.limit_max))
    limit = np.maximum(limit, np.ceil(sleep / 60))
    sub = np.array([j.submit for j in jobs])
    work = float((size * sleep).sum())
    span = work / (most * args.load)
    arrive = (sub - sub[0]) * (span / max(sub[-1] - sub[0], 1.0))
    return [dict(name=f"j{i}", trace_id=j.id, nodes=int(size[i]), sleep=int(sleep[i]),
                 limit=int(limit[i]), at=float(arrive[i]),
                 **({"partition": SHARED} if getattr(args, "shared", False) else {}))
            for i, j in enumerate(jobs)]


def bb_slice(args) -> list[dict]:
    """``scaled_slice`` of the burst-buffer workload (``args.trace``: Kopanski's KTH Batsim
    JSON), each job with a ``bb`` license count: its share of the machine's burst buffer per
    node, times its scaled nodes, of ``args.bb_total``."""
    from hpcopt import load_trace

    trace = load_trace(args.trace)
    by_id = {j.id: j for j in trace.jobs}
    per_node = trace.system.bb / trace.system.nodes
    jobs = scaled_slice(args)
    for job in jobs:
        orig = by_id[job["trace_id"]]
        share = (orig.bb / orig.nodes) / per_node  # its burst buffer per node, machine = 1
        job["bb"] = int(np.clip(math.ceil(args.bb_total * share * job["nodes"] / args.nodes),
                                1, args.bb_total))
        job["licenses"] = f"bb:{job['bb']}"
    return jobs


def machine_size(args) -> int:
    """The machine the jobs are sized for: nodes, or with ``--shared`` the cores of the
    shared partition (nodes x ``CPUS``)."""
    return args.nodes * CPUS if getattr(args, "shared", False) else args.nodes


def submit_all(jobs: list[dict], env: dict) -> None:
    """Each job at its scaled time; a job with ``licenses`` (``"bb:12"``) asks them (``-L``);
    one of the shared partition asks its size in cores (``-p shared -n N``: N tasks of one
    core each, anywhere), the others in whole nodes."""
    t0 = time.monotonic()
    for job in jobs:
        delay = job["at"] - (time.monotonic() - t0)
        if delay > 0:
            time.sleep(delay)
        subprocess.run(["sbatch", "--parsable", "-o", "/dev/null", "-J", job["name"],
                        *(["-p", job["partition"], "-n", str(job["nodes"])]
                          if job.get("partition") else ["-N", str(job["nodes"])]),
                        "-t", str(job["limit"]),
                        *(["-L", job["licenses"]] if job.get("licenses") else []), "--wrap",
                        f"sleep {job['sleep']}"], env=env, check=True, capture_output=True,
                       timeout=60)


def squeue_starts(env: dict) -> tuple[float, list[tuple]] | None:
    """One ``squeue --start`` of the pending jobs (``SLURM_TIME_FORMAT=%s``): the time it
    was asked, and (job id, name, start, nodes) per job, the start ``None`` where it shows
    none (``N/A``), the nodes those the backfill plan holds for it (``%Y``, ``sched_nodes``;
    ``None`` where it holds none); ``None`` if squeue failed (a controller busy past its
    timeout)."""
    now = time.time()
    try:
        got = subprocess.run(["squeue", "--start", "-h", "-t", "PENDING", "-o",
                              "%i|%j|%S|%Y"],
                             env={**env, "SLURM_TIME_FORMAT": "%s"}, capture_output=True,
                             text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return None
    if got.returncode:
        return None
    rows = []
    for line in got.stdout.splitlines():
        jid, _, rest = line.partition("|")
        rest, _, nodes = rest.rpartition("|")
        name, _, start = rest.rpartition("|")
        start, nodes = start.strip(), nodes.strip()
        rows.append((jid.strip(), name, float(start) if start.isdigit() and int(start) > 0
                     else None, nodes if nodes and nodes != "(null)" else None))
    return now, rows


class ShownSampler(threading.Thread):
    """What ``squeue --start`` shows, every ``every`` seconds from ``start()`` on: ``rows``
    [time, job name, start or None, planned nodes or None] and ``times`` (every sample's,
    those that found no pending job too).  After ``submitted`` is set, the first sample
    with no pending job is the last (every job has started); ``halt()`` ends it sooner.
    One squeue per sample."""

    def __init__(self, env: dict, every: float) -> None:
        super().__init__(daemon=True)
        self.env, self.every = env, every
        self.rows: list[list] = []
        self.times: list[float] = []
        self.submitted = threading.Event()
        self._halt = threading.Event()

    def run(self) -> None:
        due = time.time()
        while not self._halt.is_set():
            all_in = self.submitted.is_set()
            got = squeue_starts(self.env)
            if got is not None:
                now, rows = got
                self.times.append(now)
                self.rows.extend([now, name, start, nodes] for _, name, start, nodes in rows)
                if all_in and not rows:
                    return
            due += self.every
            self._halt.wait(max(0.0, due - time.time()))

    def halt(self) -> None:
        self._halt.set()
        self.join(60)


def completed_jobs(testbed_dir: Path, by: str = "Name") -> dict[str, dict]:
    """The jobs the testbed finished, by name (or by another jobcomp field: ``by="JobId"``
    for array tasks, which share their name), from its ``jobcomp/filetxt`` log (Slurm's own
    record of every finished job; ``squeue`` forgets a job ``MinJobAge`` after it ends), read
    as hpcopt's own jobcomp trace reader reads it; ``nodes`` is Slurm's NodeCnt and
    ``array_task`` an array task's ``A_T`` (ArrayJobId, ArrayTaskId)."""
    from hpcopt.traces.slurm import jobcomp_fields
    from hpcopt.traces.tables import iso_seconds

    log = testbed_dir / "log" / "jobcomp.txt"
    out = {}
    for line in log.read_text().splitlines() if log.exists() else ():
        rec = jobcomp_fields(line)
        if by in rec:
            out[rec[by]] = {"state": rec["JobState"], "name": rec.get("Name", ""),
                            "nodes": int(rec.get("NodeCnt") or 0),
                            "array_task": f"{rec['ArrayJobId']}_{rec['ArrayTaskId']}"
                            if rec.get("ArrayTaskId", "").isdigit() else None, **{
                k: iso_seconds(rec[f"{k.title()}Time"], str(log), f"{k.title()}Time")
                for k in ("submit", "start", "end")}}
    return out


def run_record(d: Path, n_jobs: int, kind: str) -> dict:
    """A finished run, read from its testbed directory: {name: (submit, start, end)}, the
    adapter's cycle log and the wall time from the first submission to the last end."""
    done = completed_jobs(d)
    if len(done) != n_jobs:
        raise SystemExit(f"{kind}: {len(done)} of {n_jobs} jobs finished in {d}")
    bad = [n for n, j in done.items() if j["state"] != "COMPLETED"]
    if bad:
        raise SystemExit(f"{kind}: jobs not COMPLETED: {bad[:5]}")
    real = {n: (j["submit"], j["start"], j["end"]) for n, j in done.items()}
    log = d / "adapter.jsonl"
    cycles = [c.as_json() for c in read_log(log)[0]] if log.exists() else []  # cycle records
    wall = max(e for _, _, e in real.values()) - min(s for s, _, _ in real.values())
    return dict(real=real, cycles=cycles, wall=wall)


def stop_run(proc, d: Path) -> None:
    """Stop a run's adapter ``proc`` (if any; SIGTERM: a background shell ignores SIGINT for
    its jobs), then its testbed in ``d``, whatever the adapter does."""
    from hpcopt import testbed

    try:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    finally:
        testbed.stop(d)


def free_udp_port() -> int:
    """A UDP port free on this machine now (the adapter's wake-up listens on it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


BEST = "bf_job_part_count_reserve=1"
"""Slurm's best documented simple setting: a backfill reservation for the top job only."""


def kind_setting(kind: str) -> tuple[str, str]:
    """A run's scheduler and setting: ``slurm``, ``slurm-best`` (Slurm alone with
    ``best_parameters``), a policy (``knapsack``: the adapter polling) or a policy with its
    wake-up (``knapsack-wake``)."""
    for setting in ("best", "wake"):
        if kind.endswith(f"-{setting}"):
            return kind[:-len(setting) - 1], setting
    return kind, ""


def best_parameters(testbed_opts: dict) -> str:
    """``BEST``, with ``bf_licenses`` where the testbed has licenses."""
    return BEST + (",bf_licenses" if testbed_opts.get("licenses") else "")


def replay(jobs: list[dict], kind: str, args, workdir: Path, testbed_opts: dict | None = None,
           adapter_args: tuple = ()) -> dict:
    """One run on a fresh testbed; returns {name: (submit, start, end)} and the adapter log.
    ``testbed_opts`` go to ``testbed.start`` (``licenses``, ``switch_size``), ``adapter_args``
    to ``hpcopt slurm run`` (``--bb-license bb``, ``--topology``); ``kind`` as
    ``kind_setting`` reads it."""
    from slurm_latency import free_udp_port

    from hpcopt import testbed

    d = workdir / kind
    policy, setting = kind_setting(kind)
    opts = dict(testbed_opts or {})
    opts.setdefault("slurm", getattr(args, "slurm", "22.05"))
    if policy == "slurm" and getattr(args, "scheduler_parameters", None):
        opts["scheduler_parameters"] = args.scheduler_parameters
    if setting == "best":
        opts["scheduler_parameters"] = best_parameters(opts)
    logged = policy == "slurm" and getattr(args, "controller_log", False)
    if logged:
        opts["conf_extra"] = (*opts.get("conf_extra", ()), *CONTROLLER_DEBUG)
    if setting == "wake":  # the adapter's wake-up, and the batch_sched_delay it asks of a site
        opts.update(wake_port=free_udp_port(), batch_sched_delay=0)
        adapter_args = (*adapter_args, "--wake-port", str(opts["wake_port"]))
    with _STARTING:  # one testbed starts at a time: each takes the next free ports
        conf = testbed.start(d, args.nodes,
                             scheduler="backfill" if policy == "slurm" else "builtin",
                             hold=policy != "slurm", **opts)
    conf_text = conf.read_text()
    env = testbed.env(d)  # SLURM_CONF, and 24.11's clients (the chroot's) first on PATH
    log = d / "adapter.jsonl"
    proc = None
    sampler = ShownSampler(env, args.shown_every) \
        if policy == "slurm" and getattr(args, "shown_every", None) else None
    try:
        if policy != "slurm":
            proc = subprocess.Popen(["nice", "-n", "5", HPCOPT, "slurm", "run", "--policy",
                                     policy, "--interval", str(args.interval), "--log", str(log),
                                     *adapter_args],
                                    env=env, stdout=subprocess.DEVNULL)
            wait_until = time.time() + 60
            while not (log.exists() and log.read_text()):  # the adapter's first cycle
                if time.time() > wait_until:
                    raise SystemExit(f"{kind}: the adapter did not start")
                time.sleep(0.2)
        t0 = time.time()
        if sampler is not None:
            sampler.start()
        submit_all(jobs, env)
        if sampler is not None:
            sampler.submitted.set()
        while len(completed_jobs(d)) < len(jobs):
            if time.time() - t0 > args.max_minutes * 60:
                raise SystemExit(f"{kind}: not done in {args.max_minutes} minutes")
            time.sleep(1)
    finally:
        if sampler is not None:
            sampler.halt()
        stop_run(proc, d)
    record = run_record(d, len(jobs), kind)
    if sampler is not None:  # what squeue --start showed (``shown`` subcommand)
        record.update(shown_every=args.shown_every, shown_at=sampler.times, shown=sampler.rows)
    record["slurm_conf"] = conf_text  # what the testbed ran (the model of Slurm reads it)
    record["testbed"] = {k: v for k, v in opts.items() if isinstance(v, (str, int, bool))}
    if logged:
        record["controller_log"] = str(d / "log" / "slurmctld.log")  # cmd_replay keeps it
    if any(j.get("partition") == SHARED for j in jobs):
        record["read_back"] = cores_read_back(d, jobs)
    return record


def cores_read_back(d: Path, jobs: list[dict]) -> dict:
    """The shared run's jobcomp log read by hpcopt's trace reader in cores (``sizes="cores"``,
    ``partition="shared"``, the machine ``nodes x CPUS`` cores): the jobs whose size or run
    time it reads otherwise than submitted and recorded."""
    from hpcopt import load_trace

    n_nodes = len(list((d / "spool").iterdir()))
    trace = load_trace(d / "log" / "jobcomp.txt", fmt="jobcomp", sizes="cores",
                       partition=SHARED, nodes=n_nodes, cores_per_node=CPUS, rebase=False)
    size = {j["name"]: j["nodes"] for j in jobs}
    read = {str(j.id): j for j in trace.jobs}
    wrong = sorted(rec["name"] for jid, rec in completed_jobs(d, by="JobId").items()
                   if jid not in read or read[jid].nodes != size[rec["name"]]
                   or read[jid].runtime != rec["end"] - rec["start"])
    return {"jobs_read": len(trace.jobs), "machine_cores": trace.system.nodes,
            "wrong": wrong}


def replay_all(jobs: list[dict], args, workdir: Path, testbed_opts: dict | None = None,
               adapter_args: tuple = ()) -> dict[str, dict]:
    """Every run of ``args.runs``: one after another, or with ``--parallel`` all at once,
    each on its own testbed (``replay``'s options for each)."""
    if not args.parallel:
        return {kind: replay(jobs, kind, args, workdir, testbed_opts, adapter_args)
                for kind in args.runs}
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(len(args.runs)) as pool:
        futures = {kind: pool.submit(replay, jobs, kind, args, workdir, testbed_opts,
                                     adapter_args) for kind in args.runs}
        return {kind: f.result() for kind, f in futures.items()}


def simulate_same(jobs: list[dict], real: dict, policy: str, nodes: int,
                  delay=0.0, period: float | None = None, bb: float = 0.0,
                  options: dict | None = None, follow=None) -> dict[str, float]:
    """hpcopt's simulation of the jobs as Slurm saw them (start time by name), with each
    start ``delay`` seconds after its decision (the driver's ``launch_delay``: seconds, or a
    callable giving each job its own) and, with
    ``period``, scheduling passes only every ``period`` seconds (the adapter's cycle);
    ``bb``: the system's burst buffer, each job's request its ``bb``; ``options``: the
    policy's (``slurm_conf`` for ``slurm``); ``follow(sim, names)``, if given, is called
    before the run (to subscribe to its events; job ``i`` is ``names[i]``)."""
    from hpcopt.domain import Job, System
    from hpcopt.policies import make_policy
    from hpcopt.sim.driver import Simulator

    t0 = min(s for s, _, _ in real.values())
    by_name = {j["name"]: j for j in jobs}
    names = sorted(real, key=lambda n: (real[n][0], int(n[1:])))  # Slurm id order
    sim_jobs = []
    for i, name in enumerate(names):
        sub, start, end = real[name]
        limit = by_name[name]["limit"] * 60.0
        sim_jobs.append(Job(i, sub - t0, min(max(end - start, 0.0), limit), limit,
                            by_name[name]["nodes"], bb=by_name[name].get("bb", 0.0)))
    sim = Simulator(sim_jobs, System(nodes, bb=bb), make_policy(policy, **(options or {})),
                    launch_delay=delay, period=period)
    if follow is not None:
        follow(sim, names)
    sim.run()
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


def latency_sample(real: dict) -> np.ndarray:
    """The start latencies, read off Slurm's own records (no fit): for every job that waited,
    the gap from the last job end at or before its start to its start.  On a full queue a
    waiting job starts because nodes came free, so the gap is everything between a real end
    and the next start: the end's cleanup, the adapter's half cycle and read (or Slurm's
    scheduling interval) and Slurm's launch.  Both times are whole seconds."""
    ends = np.sort(np.array([e for _, _, e in real.values()]))
    gaps = []
    for sub, st, _ in real.values():
        i = np.searchsorted(ends, st, side="right")
        if st - sub >= 1 and i:
            gaps.append(st - ends[i - 1])
    return np.array(gaps, float)


def latency_kept(real: dict) -> np.ndarray:
    """``latency_sample`` trimmed by 10% on each side (a start some other event caused, long
    after the last end, is not a latency); whole-second times round both ways, so its mean is
    not biased by them."""
    from scipy.stats import trimboth

    gaps = latency_sample(real)
    return np.sort(trimboth(gaps, 0.1)) if len(gaps) else gaps


def cycle_length(run: dict) -> float | None:
    """The adapter's cycle, from its log: the median time between two cycles' starts."""
    times = [c["time"] for c in run["cycles"]]
    return round(float(np.median(np.diff(times))), 3) if len(times) > 1 else None


def analyze(jobs: list[dict], kind: str, run: dict, args, out: Path) -> list[dict]:
    """The comparison rows of one run: the simulation with no latency, with each
    ``--launch-delay``, with the measured latency as a constant delay, with each start's delay
    drawn from the kept latencies (``--draws`` seeded simulations: their mean, and where
    the real run falls among them) and (runs the adapter drove) with the adapter's cycle:
    passes every measured cycle and the rest of the measured latency (less the half cycle the
    passes now wait on average) as the delay."""
    rows = []
    real = {k: tuple(v) for k, v in run["real"].items()}
    base = kind_setting(kind)[0]  # Slurm alone is simulated as FCFS+EASY
    policy = "fcfs" if base == "slurm" else base
    gaps = latency_kept(real)
    measured = round(float(gaps.mean()), 2) if len(gaps) else None  # the constant delay
    models = [("none", 0.0, None)] + [("given", d, None) for d in args.launch_delay]
    if measured is not None:
        models.append(("measured", measured, None))
        cycle = cycle_length(run)
        if cycle is not None:
            models.append(("cycle", round(max(0.0, measured - cycle / 2), 2), cycle))
    ok = [c for c in run["cycles"] if c.get("ok")]
    label = dict(run=kind if base == "slurm" else f"hpcopt {kind}",
                 simulated=f"{policy}+easy" if policy == "fcfs" else policy)
    adapter = {} if not ok else dict(
        cycles=len(run["cycles"]), failed_cycles=len(run["cycles"]) - len(ok),
        read_ms=round(1000 * float(np.mean([c["read_s"] for c in ok])), 1),
        decide_ms=round(1000 * float(np.mean([c["decide_s"] for c in ok])), 2))
    for model, delay, period in models:
        sim = simulate_same(jobs, real, policy, machine_size(args), delay, period,
                            bb=float(getattr(args, "bb_total", 0)))
        row = dict(label, model=model, launch_delay=delay, period=period,
                   wall_s=round(run["wall"], 1), **compare(real, sim), **adapter)
        rows.append(row)
        print(json.dumps(row), flush=True)
        with open(out / f"replay_{kind}_{model}{delay:g}.csv", "w") as f:
            f.write("name,submit,real_start,real_end,sim_start\n")
            for name, (s, st, e) in sorted(real.items(), key=lambda kv: kv[1][0]):
                f.write(f"{name},{s:.0f},{st:.0f},{e:.0f},{sim[name]:.1f}\n")
    if args.draws and len(gaps):
        runs = []
        for seed in range(args.draws):
            rng = np.random.default_rng(seed)
            sim = simulate_same(jobs, real, policy, machine_size(args),
                                lambda job, rng=rng: float(rng.choice(gaps)),
                                bb=float(getattr(args, "bb_total", 0)))
            runs.append(compare(real, sim))
        row = dict(label, model="drawn", launch_delay=round(float(gaps.mean()), 2),
                   period=None, wall_s=round(run["wall"], 1), draws=args.draws, **adapter)
        for key in runs[0]:
            row[key] = round(float(np.mean([r[key] for r in runs])), 4)
        sim_wait = np.array([r["wait_sim"] for r in runs])
        sim_bsld = np.array([r["bsld_sim"] for r in runs])
        row.update(wait_dev_pct=round(100 * (row["wait_real"] / sim_wait.mean() - 1), 2),
                   bsld_dev_pct=round(100 * (row["bsld_real"] / sim_bsld.mean() - 1), 2),
                   wait_sim_sd=round(float(sim_wait.std(ddof=1)), 2),
                   bsld_sim_sd=round(float(sim_bsld.std(ddof=1)), 3),
                   tau_min=min(r["tau"] for r in runs), tau_max=max(r["tau"] for r in runs),
                   wait_real_rank=round(float((sim_wait < row["wait_real"]).mean()), 3))
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def cmd_replay(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.shared and args.runs != ["slurm"]:
        raise SystemExit("--shared: hpcopt schedules whole nodes; give --runs slurm (Slurm's "
                         "own scheduler on the shared partition)")
    jobs = bb_slice(args) if args.bb_total else scaled_slice(args)
    (out / "replay_jobs.json").write_text(json.dumps(jobs, indent=1))
    print(f"{len(jobs)} jobs of {Path(args.trace).name} from record {args.first}: "
          f"nodes {min(j['nodes'] for j in jobs)}-{max(j['nodes'] for j in jobs)}, sleeps "
          f"{min(j['sleep'] for j in jobs)}-{max(j['sleep'] for j in jobs)} s, limits "
          f"{min(j['limit'] for j in jobs)}-{max(j['limit'] for j in jobs)} min, arrivals over "
          f"{jobs[-1]['at']:.0f} s", flush=True)
    if args.from_testbeds:  # the testbeds of an earlier run, kept: read them again
        runs = {kind: run_record(Path(args.from_testbeds) / kind, len(jobs), kind)
                for kind in args.runs}
    elif not args.analyze_only:
        work = Path(tempfile.mkdtemp(prefix="hpcopt-slurm-"))  # kept: each testbed's logs
        print(f"testbeds in {work}", flush=True)
        opts = {"shared": True} if args.shared else {}
        if args.bb_total:
            opts["licenses"] = f"bb:{args.bb_total}"
        runs = replay_all(jobs, args, work, opts)
    if not args.analyze_only:
        for kind, run in runs.items():
            log = run.pop("controller_log", None)
            if log is not None:
                keep_controller_log(Path(log), out / f"slurmctld_{kind}.log.gz")
            (out / f"replay_{kind}.json").write_text(json.dumps(run))
    rows = []
    for kind in args.runs:
        run = json.loads((out / f"replay_{kind}.json").read_text())
        rows += analyze(jobs, kind, run, args, out)
    (out / "replay.json").write_text(json.dumps(rows, indent=1))


def cmd_cost(args) -> None:
    from hpcopt import testbed

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
                    recs = read_log(log)[0]
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


def saved_run(d: Path, kind: str) -> dict:
    """A saved run of replay folder ``d``, from its per-job file (the real submit, start
    and end of every job, as Slurm's jobcomp recorded them)."""

    files = sorted(d.glob(f"replay_{kind}_measured*.csv"))
    if not files:
        raise SystemExit(f"{d}: no replay_{kind}_measured*.csv (run the replay first)")
    with open(files[0]) as f:
        return {r["name"]: (float(r["submit"]), float(r["real_start"]), float(r["real_end"]))
                for r in csv.DictReader(f)}


def driver(kind: str) -> str:
    """Who started a run's jobs: the adapter (fcfs, knapsack) or Slurm's own scheduler."""
    return "slurm" if kind == "slurm" else "adapter"


def rank_text(real: float, sims: np.ndarray) -> str:
    """Where the real value falls among the drawn simulations, in words that do not call a
    value outside all of them "within": the share of simulations below it, or above/below
    all N."""
    below = float((sims < real).mean())
    if below == 1.0:
        return f"above all {len(sims)}"
    if (sims > real).all():
        return f"below all {len(sims)}"
    return f"rank {below:.2f}"


def rank_words(row: dict) -> str:
    """``rank_text`` of a saved drawn row (its share of simulations below the real run)."""
    below, n = row["wait_real_rank"], row.get("draws", 20)
    return (f"above all {n}" if below == 1.0 else f"below all {n}" if below == 0.0
            else f"rank {below:.2f}")


def cmd_crossval(args) -> None:
    """Out of sample: each run simulated with the latency measured on the runs of the OTHER
    replay folders that the same driver started (the adapter's runs, or Slurm's own), never
    on the run it predicts nor on the runs of its own replay; per run its deviations, per
    slice and run kind the signed mean and the mean absolute deviation over the runs."""
    dirs = [Path(d) for d in args.dirs]
    runs = []  # (folder, kind, jobs, real)
    for d in dirs:
        jobs = json.loads((d / "replay_jobs.json").read_text())
        for f in sorted(d.glob("replay_*_measured*.csv")):
            kind = f.name[len("replay_"):].split("_measured")[0]
            runs.append((d, kind, jobs, saved_run(d, kind)))
    rows = []
    for d, kind, jobs, real in runs:
        pool = [g for d2, k2, _, r2 in runs if d2 != d and driver(k2) == driver(kind)
                for g in latency_kept(r2)]
        if not pool:
            print(f"{d.name} {kind}: no other run of the same driver: left out", flush=True)
            continue
        gaps = np.array(pool)
        shared = any(j.get("partition") == SHARED for j in jobs)
        machine = args.nodes * CPUS if shared else args.nodes
        policy = "fcfs" if kind == "slurm" else kind
        delay = round(float(gaps.mean()), 2)
        const = compare(real, simulate_same(jobs, real, policy, machine, delay))
        draws = []
        for seed in range(args.draws):
            rng = np.random.default_rng(seed)
            draws.append(compare(real, simulate_same(
                jobs, real, policy, machine, lambda job, rng=rng, g=gaps: float(rng.choice(g)))))
        sim_wait = np.array([r["wait_sim"] for r in draws])
        sim_bsld = np.array([r["bsld_sim"] for r in draws])
        others = sorted({f"{d2.name}/{k2}" for d2, k2, _, _ in runs
                         if d2 != d and driver(k2) == driver(kind)})
        row = dict(replay=d.name, run=kind if kind == "slurm" else f"hpcopt {kind}",
                   kind=kind, slice=d.name.split("-")[0], shared=shared,
                   latency_from=others, latency_starts=len(gaps), launch_delay=delay,
                   jobs=const["jobs"], tau=const["tau"],
                   wait_real=const["wait_real"], wait_sim=const["wait_sim"],
                   wait_dev_pct=const["wait_dev_pct"], bsld_real=const["bsld_real"],
                   bsld_sim=const["bsld_sim"], bsld_dev_pct=const["bsld_dev_pct"],
                   drawn_wait_sim=round(float(sim_wait.mean()), 2),
                   drawn_wait_sd=round(float(sim_wait.std(ddof=1)), 2),
                   drawn_wait_dev_pct=round(100 * (const["wait_real"] / sim_wait.mean() - 1),
                                            2),
                   drawn_bsld_dev_pct=round(100 * (const["bsld_real"] / sim_bsld.mean() - 1),
                                            2),
                   drawn_rank=rank_text(const["wait_real"], sim_wait))
        rows.append(row)
        print(json.dumps(row), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["slice"], r["run"]), []).append(r)
    summary = []
    for (slc, run), rs in groups.items():
        summary.append(dict(slice=slc, run=run, runs=len(rs), **{
            f"{key}_{stat}": round(float(fn([r[key] for r in rs])), 2)
            for key in ("wait_dev_pct", "drawn_wait_dev_pct", "bsld_dev_pct")
            for stat, fn in (("mean", np.mean), ("mad", lambda v: np.mean(np.abs(v))))},
            within_2pct=int(sum(abs(r["wait_dev_pct"]) <= 2 for r in rs))))
    (out / "crossval.json").write_text(json.dumps({"runs": rows, "summary": summary},
                                                  indent=1))
    print_crossval(rows, summary)


def print_crossval(rows: list[dict], summary: list[dict]) -> None:
    """The two markdown tables of benchmarks/README.md's out-of-sample validation."""
    print("| replay | run | latency from | delay (s) | tau | wait real / sim (dev) | "
          "drawn: wait sim ± sd (dev, where the real run falls) | bsld real / sim (dev) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['replay']} | {r['run']} | {len(r['latency_from'])} other runs "
              f"({r['latency_starts']} starts) | {r['launch_delay']:g} | {r['tau']:.3f} | "
              f"{r['wait_real']:.0f} / {r['wait_sim']:.0f} ({r['wait_dev_pct']:+.1f}%) | "
              f"{r['drawn_wait_sim']:.0f} ± {r['drawn_wait_sd']:.0f} "
              f"({r['drawn_wait_dev_pct']:+.1f}%, {r['drawn_rank']}) | "
              f"{r['bsld_real']:.2f} / {r['bsld_sim']:.2f} ({r['bsld_dev_pct']:+.1f}%) |")
    print()
    print("| slice | run | runs | wait dev: mean / mean absolute | within 2% | drawn: mean / "
          "mean absolute | bsld dev: mean / mean absolute |")
    print("|---|---|---|---|---|---|---|")
    for s in summary:
        print(f"| {s['slice']} | {s['run']} | {s['runs']} | {s['wait_dev_pct_mean']:+.1f}% / "
              f"{s['wait_dev_pct_mad']:.1f}% | {s['within_2pct']} of {s['runs']} | "
              f"{s['drawn_wait_dev_pct_mean']:+.1f}% / {s['drawn_wait_dev_pct_mad']:.1f}% | "
              f"{s['bsld_dev_pct_mean']:+.1f}% / {s['bsld_dev_pct_mad']:.1f}% |")


def alone_runs(d: Path, nodes: int, label: str | None = None) -> list[dict]:
    """The saved Slurm-alone runs of replay folder ``d`` (each ``replay_slurm*.json``: the
    default ``replay_slurm.json`` and others beside it, such as ``replay_slurm-best.json``;
    a folder saved before those files has its per-job csv), each with its jobs, Slurm's
    times, the slurm.conf the testbed ran (for runs saved before the file was kept, written
    again by the testbed's own ``slurm_conf``, whose scheduling lines have not changed
    since they ran) and what the testbed was given; ``name`` is ``label`` (default: the
    folder's name), followed by the file's suffix for the others (``equal-x/slurm-best``)."""
    from hpcopt import testbed
    from hpcopt.sim.slurmconf import parse_slurm_conf

    jobs = json.loads((d / "replay_jobs.json").read_text())
    shared = any(j.get("partition") == SHARED for j in jobs)
    files = sorted(d.glob("replay_slurm*.json"),
                   key=lambda f: (f.name != "replay_slurm.json", f.name))
    saved = [(f, json.loads(f.read_text())) for f in files] or [(None, {})]
    bb = max((j.get("bb", 0) for j in jobs), default=0)
    out = []
    for f, run in saved:
        real = {k: tuple(v) for k, v in run["real"].items()} if run else saved_run(d, "slurm")
        conf = run.get("slurm_conf")
        info = dict(run.get("testbed", {}))
        if conf is None:
            conf = testbed.slurm_conf(Path("/testbed"), nodes, CPUS, 20000, "backfill", False,
                                      shared=shared)
            info["conf"] = "regenerated"
        suffix = f.stem[len("replay_"):] if f is not None else "slurm"
        label = label or d.name
        name = label if suffix == "slurm" else f"{label}/{suffix}"
        total = float(parse_slurm_conf(conf).licenses["bb"]) if bb else 0.0
        out.append(dict(dir=d, name=name, kind=suffix, jobs=jobs, real=real, conf=conf,
                        info=info, shared=shared, bb_total=total,
                        nodelist=run.get("nodelist", {}),
                        shown=run.get("shown"), shown_at=run.get("shown_at", [])))
    return out


def runs_of(dirs: list[Path], nodes: int) -> list[dict]:
    """The saved Slurm-alone runs of every folder of ``dirs`` (``alone_runs``), each named by
    its folder's path below the folders' common parent (``equal-kth/rep1``)."""
    top = Path(os.path.commonpath([d.resolve() for d in dirs])) if len(dirs) > 1 else None
    return [run for d in dirs for run in alone_runs(
        d, nodes, str(d.resolve().relative_to(top)) if top else None)]


def write_alone_jobs(path: Path, run: dict, sim: dict[str, float],
                     easy: dict[str, float]) -> None:
    """One run's jobs, in Slurm's start order, as seconds from its first submission: the
    submission, Slurm's start and end and nodes (where the run kept them), and the starts
    under ``--policy slurm`` and FCFS+EASY."""

    real = run["real"]
    t0 = min(s for s, _, _ in real.values())
    size = {j["name"]: j for j in run["jobs"]}
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["job", "nodes", "limit_min", "submit", "real_start", "real_end",
                      "real_nodelist", "slurm_start", "easy_start"])
        for name in sorted(real, key=lambda n: (real[n][1], int(n[1:]))):
            sub, start, end = real[name]
            out.writerow([name, size[name]["nodes"], size[name]["limit"], round(sub - t0, 2),
                          round(start - t0, 2), round(end - t0, 2),
                          run["nodelist"].get(name, ""), round(sim[name] - t0, 2),
                          round(easy[name] - t0, 2)])


def alone_setup(run: dict, runs: list[dict], nodes: int,
                latency: float | None = None) -> tuple[dict, int]:
    """How ``alone`` simulates ``run`` (one of ``alone_runs``) under ``--policy slurm``: the
    policy's options (the slurm.conf its testbed ran, its Slurm version, its first
    submission as the clock origin, the shared partition where it ran there, and as the
    start latency the mean kept latency of the OTHER folders' runs of ``runs``, or
    ``latency``) and the machine (nodes, or cores on the shared partition)."""
    others = [g for r in runs if r["dir"] != run["dir"] for g in latency_kept(r["real"])]
    delay = round(float(np.mean(others)), 2) if others else 0.0
    if latency is not None:  # a sensitivity check, no longer out of sample
        delay = latency
    conf = Path(tempfile.mkdtemp(prefix="hpcopt-alone-")) / "slurm.conf"
    conf.write_text(run["conf"])
    opts = dict(slurm_conf=str(conf), launch_latency=delay,
                slurm_version=run["info"].get("slurm", "22.05"),
                clock_origin=min(s for s, _, _ in run["real"].values()),
                **({"slurm_partition": SHARED} if run["shared"] else {}))
    return opts, nodes * CPUS if run["shared"] else nodes


@contextlib.contextmanager
def will_run_test(on: bool):
    """``SlurmScheduler.will_run_test`` (the model's view of running jobs; not a policy
    option) set to ``on`` within the block, restored after it."""
    from hpcopt.policies.slurm_backfill import SlurmScheduler

    was, SlurmScheduler.will_run_test = SlurmScheduler.will_run_test, on
    try:
        yield
    finally:
        SlurmScheduler.will_run_test = was


def cmd_alone(args) -> None:
    """Slurm alone against ``--policy slurm`` configured from the very slurm.conf each run's
    testbed ran, and against FCFS+EASY, both with the start latency measured on the OTHER
    folders' Slurm-alone runs (out of sample: nothing is fitted on the run compared).
    ``--plan-view``: running jobs as slots of the plan to their exact ends instead of
    Slurm's will-run test (``SlurmScheduler.will_run_test`` off), to show what that
    structure changes."""
    with will_run_test(not args.plan_view):
        alone_table(args)


def alone_table(args) -> None:
    """``cmd_alone``'s table, with the model's view of running jobs as it is set."""
    dirs = [Path(d) for d in args.dirs]
    runs = runs_of(dirs, args.nodes)
    rows, per_job = [], []
    for run in runs:
        opts, machine = alone_setup(run, runs, args.nodes, args.latency)
        delay, version = opts["launch_latency"], opts["slurm_version"]
        row = dict(replay=run["name"], slurm=version,
                   scheduler_parameters=run["info"].get("scheduler_parameters", ""),
                   licenses=run["info"].get("licenses", ""), shared=run["shared"],
                   conf=run["info"].get("conf", "saved"), latency=delay,
                   latency_from=sum(r["dir"] != run["dir"] for r in runs))
        t0 = time.perf_counter()
        sim = simulate_same(run["jobs"], run["real"], "slurm", machine, None, options=opts,
                            bb=run["bb_total"])
        row["sim_s"] = round(time.perf_counter() - t0, 3)
        easy = simulate_same(run["jobs"], run["real"], "fcfs", machine, delay,
                             bb=run["bb_total"])
        for name, got in (("slurm", compare(run["real"], sim)),
                          ("easy", compare(run["real"], easy))):
            for key in ("tau", "wait_sim", "wait_dev_pct", "bsld_dev_pct"):
                row[f"{name}_{key}"] = got[key]
            row["jobs"], row["wait_real"] = got["jobs"], got["wait_real"]
        rows.append(row)
        print(json.dumps(row), flush=True)
        per_job.append((run, sim, easy))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "alone.json").write_text(json.dumps(rows, indent=1))
    for run, sim, easy in per_job:
        write_alone_jobs(out / f"jobs_{run['name'].replace('/', '_')}.csv", run, sim, easy)
    print()
    print("| replay | Slurm | SchedulerParameters over the testbed's | licenses | partition | "
          "latency (s) | jobs | wait real (s) | --policy slurm: wait (dev), tau | "
          "EASY: wait (dev), tau |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['replay']} | {r['slurm']} | {r['scheduler_parameters'] or '-'} | "
              f"{r['licenses'] or '-'} | {'shared cores' if r['shared'] else 'whole nodes'} | "
              f"{r['latency']:g} | {r['jobs']} | {r['wait_real']:.0f} | "
              f"{r['slurm_wait_sim']:.0f} ({r['slurm_wait_dev_pct']:+.1f}%), "
              f"{r['slurm_tau']:.3f} | {r['easy_wait_sim']:.0f} ({r['easy_wait_dev_pct']:+.1f}%)"
              f", {r['easy_tau']:.3f} |")


class PlanLog:
    """The starts a simulated Slurm shows (``SlurmScheduler.planned_starts``), kept after
    every backfill pass: ``follow`` it to a ``simulate_same`` run of ``--policy slurm``."""

    def __init__(self) -> None:
        self.times: list[float] = []  # simulated time of each backfill pass
        self.plans: list[dict] = []  # its planned start by job name (simulated time)
        self.names: list[str] = []

    def follow(self, sim, names: list[str]) -> None:
        from hpcopt.sim.records import Event

        self.names = names
        policy, seen = sim.policy, [None]

        def on_pass(sim, event, now) -> None:
            plan = policy.planned_starts  # a new dict from each backfill pass on
            if plan is not seen[0]:
                seen[0] = plan
                self.times.append(now)
                self.plans.append({names[i]: t for i, t in plan.items()})

        sim.subscribe(Event.PASS, on_pass)

    def at(self, t: float) -> tuple[float | None, dict]:
        """The time and plan of the last backfill pass at or before simulated time ``t``
        (``None`` and no plan before the first)."""
        from bisect import bisect_right

        k = bisect_right(self.times, t + 1e-9)
        return (self.times[k - 1], self.plans[k - 1]) if k else (None, {})


def shown_rows(run: dict, plans: PlanLog, sim: dict[str, float]) -> list[dict]:
    """One row per job each sample of ``run`` saw pending: the start ``squeue --start``
    showed (``slurm``), the start the model showed then (``model``: for a job it had
    started by then its start in ``sim``, ``simulate_same``'s starts on the run's clock,
    else the plan of its last backfill pass at or before the sample) and the job's real
    start; ``model_pass``, when that pass ran (on the run's clock).  A simulated start
    is Slurm's ``start_time`` (the start latency is the time to it): until then the job
    waits and shows its plan, as in Slurm."""
    t0 = min(s for s, _, _ in run["real"].values())  # simulated time 0 (simulate_same)
    rows = []
    for time_, name, slurm, *nodes in run["shown"]:  # (the first sampled runs kept no nodes)
        when, plan = plans.at(time_ - t0)
        if sim[name] <= time_ + 1e-9:
            model, how = sim[name], "started"
        else:
            got = plan.get(name)
            model, how = (None, "none") if got is None else (got + t0, "plan")
        rows.append(dict(time=round(time_, 3), job=name, submit=run["real"][name][0],
                         real_start=run["real"][name][1], slurm=slurm,
                         slurm_nodes=nodes[0] if nodes else None, model=model,
                         model_from=how, model_pass=None if when is None else when + t0))
    return rows


def shown_summary(rows: list[dict], samples: int) -> dict:
    """Agreement of the model's shown starts with Slurm's over ``rows`` (``shown_rows``):
    who showed a start, how far apart (MAE, median, within 1 s and 60 s), and each side's
    error against the real start on the rows both showed, and their ratio."""
    both = [r for r in rows if r["slurm"] is not None and r["model"] is not None]
    out = dict(samples=samples, rows=len(rows), both=len(both),
               only_slurm=sum(r["slurm"] is not None and r["model"] is None for r in rows),
               only_model=sum(r["slurm"] is None and r["model"] is not None for r in rows),
               neither=sum(r["slurm"] is None and r["model"] is None for r in rows),
               model_started=sum(r["model_from"] == "started" for r in rows),
               # Slurm shows a start, and the model's last pass came after the submission
               only_slurm_passed=sum(r["slurm"] is not None and r["model"] is None and
                                     r["model_pass"] is not None and
                                     r["model_pass"] >= r["submit"] for r in rows))
    plan = [abs(r["model"] - r["slurm"]) for r in both if r["model_from"] == "plan"]
    if plan:  # the rows where the model's job still waits: its plan against Slurm's
        out.update(plan_rows=len(plan), plan_mae_s=round(float(np.mean(plan)), 2),
                   plan_median_s=round(float(np.median(plan)), 2),
                   plan_within_60s=round(float(np.mean(np.array(plan) <= 60)), 3))
    if both:
        gap = np.array([abs(r["model"] - r["slurm"]) for r in both])
        slurm_err = np.array([abs(r["slurm"] - r["real_start"]) for r in both])
        model_err = np.array([abs(r["model"] - r["real_start"]) for r in both])
        out.update(mae_s=round(float(gap.mean()), 2), median_s=round(float(np.median(gap)), 2),
                   within_1s=round(float((gap <= 1).mean()), 3),
                   within_60s=round(float((gap <= 60).mean()), 3),
                   slurm_mae_real_s=round(float(slurm_err.mean()), 2),
                   model_mae_real_s=round(float(model_err.mean()), 2),
                   model_over_slurm=round(float(model_err.mean() / slurm_err.mean()), 3)
                   if slurm_err.mean() else None)
    return out


def cmd_shown(args) -> None:
    """What Slurm showed (``squeue --start``, sampled by ``replay --shown-every``) against
    what the model of Slurm shows at the same moments: each sampled Slurm-alone run
    simulated under ``--policy slurm`` as ``alone`` simulates it (``alone_setup``: out of
    sample), the plan of the model's last backfill pass at or before each sample
    (``PlanLog``) set beside Slurm's (``shown_rows``, ``shown_summary``)."""
    dirs = [Path(d) for d in args.dirs]
    runs = runs_of(dirs, args.nodes)
    sampled = [r for r in runs if r["shown"] is not None]
    if not sampled:
        raise SystemExit(f"shown: no run in {', '.join(map(str, dirs))} has squeue samples "
                         f"(replay_slurm*.json: shown; replay with --shown-every)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary, all_rows = [], []
    for run in sampled:
        opts, machine = alone_setup(run, runs, args.nodes)
        plans = PlanLog()
        sim = simulate_same(run["jobs"], run["real"], "slurm", machine, None, options=opts,
                            bb=run["bb_total"], follow=plans.follow)
        rows = shown_rows(run, plans, sim)
        row = dict(replay=run["name"], slurm=opts["slurm_version"],
                   scheduler_parameters=run["info"].get("scheduler_parameters", ""),
                   licenses=run["info"].get("licenses", ""),
                   latency=opts["launch_latency"], **shown_summary(rows, len(run["shown_at"])))
        summary.append(row)
        all_rows += [dict(replay=run["name"], **r) for r in rows]
        print(json.dumps(row), flush=True)
    (out / "shown.json").write_text(json.dumps(summary, indent=1))
    with open(out / "shown_rows.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["replay", "time", "job", "submit", "real_start",
                                          "slurm", "slurm_nodes", "model", "model_from",
                                          "model_pass"])
        w.writeheader()
        w.writerows(all_rows)
    print()
    print("| replay | Slurm | SchedulerParameters over the testbed's | licenses | samples | "
          "job-samples | both / only Slurm / only model / neither | model - Slurm: MAE, "
          "median (s) | within 1 s, 60 s | vs real start: Slurm MAE, model MAE (ratio) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in summary:
        n = max(1, r["rows"])
        shares = " / ".join(f"{r[k] / n:.2f}" for k in ("both", "only_slurm", "only_model",
                                                           "neither"))
        gap = (f"{r['mae_s']:.1f}, {r['median_s']:.1f} | {r['within_1s']:.2f}, "
               f"{r['within_60s']:.2f} | {r['slurm_mae_real_s']:.1f}, "
               f"{r['model_mae_real_s']:.1f} ({r['model_over_slurm']:.2f})"
               if r["both"] else "- | - | -")
        print(f"| {r['replay']} | {r['slurm']} | {r['scheduler_parameters'] or '-'} | "
              f"{r['licenses'] or '-'} | {r['samples']} | {r['rows']} | {shares} | {gap} |")


def cmd_repeat(args) -> None:
    """Slurm against itself: each pair of replay folders ran the same jobs on twin
    testbeds; each Slurm-alone run of the first is compared with the run of the same
    setting in the second, by the targets the model is held to (mean wait, Kendall tau of
    the start order): how far Slurm repeats itself."""
    dirs = [Path(d) for d in args.dirs]
    if len(dirs) % 2:
        raise SystemExit("repeat: give replay folders in pairs (A B [A B ...])")
    print("| run | again | jobs | wait (s) | again (s) | deviation (again - run) / run | "
          "Kendall tau |")
    print("|---|---|---|---|---|---|---|")
    for a, b in zip(dirs[::2], dirs[1::2]):
        again = {r["name"].split("/")[-1]: r for r in alone_runs(b, args.nodes, "x/")}
        for run in alone_runs(a, args.nodes, "x/"):
            other = again.get(run["name"].split("/")[-1])
            if other is None:
                continue
            shift = min(v[0] for v in other["real"].values()) - \
                min(v[0] for v in run["real"].values())  # each on its own clock
            got = compare(other["real"], {n: v[1] + shift for n, v in run["real"].items()})
            setting = run["name"].split("/")[-1] or "default"
            print(f"| {a} ({setting}) | {b} | {got['jobs']} | {got['wait_sim']:.0f} | "
                  f"{got['wait_real']:.0f} | {got['wait_dev_pct']:+.1f}% | "
                  f"{got['tau']:.3f} |")


# what ``replay --controller-log`` sets on the Slurm-alone testbed: the lines that
# ``controller_timing`` reads (passes at debug level, backfill's at DebugFlags=Backfill)
CONTROLLER_DEBUG = ("SlurmctldDebug=debug", "DebugFlags=Backfill")
_BACKFILL_PASS, _MAIN_PASS = "_attempt_backfill: beginning", "Running job scheduler for"
_LOG_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})\] (.*)$")
_LOG_EVENTS = (("submit", re.compile(r"_slurm_rpc_submit_batch_job: JobId=(\d+)")),
               ("backfill", re.compile(r"_start_job: Started JobId=(\d+)")),  # a start
               ("main", re.compile(r"sched: Allocate JobId=(\d+)")),  # a start
               ("end", re.compile(r"_job_complete: JobId=(\d+) done")))


def controller_log(run: dict) -> Path | None:
    """The controller's log kept with ``run`` (one of ``alone_runs``), if any: the
    ``slurmctld_<kind>.log.gz`` of ``replay --controller-log``, or for the default run a log
    kept by hand (``slurmctld.log.gz``, ``slurmctld-events.log.gz``)."""
    names = [f"slurmctld_{run['kind']}.log.gz"]
    if run["kind"] == "slurm":
        names += ["slurmctld.log.gz", "slurmctld-events.log.gz"]
    return next((run["dir"] / n for n in names if (run["dir"] / n).exists()), None)


def keep_controller_log(src: Path, dst: Path) -> None:
    """The lines of the controller's log ``src`` that ``controller_timing`` reads, gzipped
    to ``dst`` (the rest of a debug log is large and not read)."""
    import gzip

    def read(line: str) -> bool:
        return _BACKFILL_PASS in line or _MAIN_PASS in line or \
            any(pattern.search(line) for _, pattern in _LOG_EVENTS)

    with open(src, errors="replace") as f, gzip.open(dst, "wt") as out:
        out.writelines(line for line in f if read(line))


def controller_timing(path: Path) -> dict:
    """A controller's timing from its log (``SlurmctldDebug=debug``, ``DebugFlags=Backfill``;
    local times to the millisecond, as Unix seconds of this machine's zone): each job's
    submission and end, and the pass that started it, by Slurm job id, and when its backfill
    passes and its main scheduler's passes (default depth or the whole queue) ran.  Each
    time is its line's less a millisecond: Slurm reads the clock, then logs (a job allocated
    in a line logged at x.000 has the ``start_time`` x - 1); lines of one millisecond keep
    their order, a microsecond apart."""
    import datetime as dt
    import gzip

    out: dict = {"submit": {}, "start": {}, "end": {}, "backfill": [], "main": []}
    last_pass: dict = {"backfill": None, "main": None}
    prev = -math.inf
    with gzip.open(path, "rt", errors="replace") as f:
        for line in f:
            m = _LOG_LINE.match(line)
            if not m:
                continue
            text = m.group(2)
            t = dt.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").timestamp() - 0.001
            t = prev = max(t, prev + 1e-6)  # lines of one millisecond in their log order
            if _BACKFILL_PASS in text:
                out["backfill"].append(t)
                last_pass["backfill"] = t
            elif _MAIN_PASS in text:
                out["main"].append((t, "full" if "full queue" in text else "default"))
                last_pass["main"] = t
            else:
                for kind, pattern in _LOG_EVENTS:
                    if (e := pattern.search(text)):
                        if kind in last_pass:  # a start, at the time of the pass that made it
                            kind, t = "start", last_pass[kind] or t
                        out[kind].setdefault(int(e.group(1)), t)
                        break
    return out


def simulate_logged(run: dict, opts: dict, machine: int,
                    completing: float = 0.0) -> tuple[dict, dict, dict]:
    """``run`` simulated under ``--policy slurm`` (``opts`` and ``machine`` as ``alone_setup``
    gives them) with its controller's own timing instead of the model's: every submission
    and end at its logged millisecond, and the passes run exactly when the controller ran
    them (each logged backfill pass; each main pass, of its depth), starting jobs at that
    instant; ``completing``: seconds each job's nodes stay held past its end (a sensitivity
    check).  Nothing is fitted, and nothing predicted: this reads the run's own timing, to
    tell the pass rules apart from when the passes fall.  Returns the real times from the
    log and the simulated starts, by job name, in the run's Unix seconds, and the log's
    timing."""
    from hpcopt.domain import Job, System
    from hpcopt.policies.slurm_backfill import SlurmScheduler
    from hpcopt.sim.driver import Simulator

    log = controller_log(run)
    if log is None:
        raise SystemExit(f"{run['dir']}: no controller log kept for {run['name']} "
                         f"(replay --controller-log)")
    timing = controller_timing(log)
    real = run["real"]
    names = sorted(real, key=lambda n: (real[n][0], int(n[1:])))  # Slurm id order
    t0 = math.floor(min(timing["submit"].values()))
    shift = min(s for s, _, _ in real.values()) - t0  # the log's zone to Unix seconds
    try:
        exact = {n: tuple(timing[k][i + 1] + shift for k in ("submit", "start", "end"))
                 for i, n in enumerate(names)}
    except KeyError as e:
        raise SystemExit(f"{log}: job {e} has no submission, start or end logged") from None
    wrong = [n for n in names if math.floor(exact[n][0]) != real[n][0]
             or math.floor(exact[n][2]) != real[n][2] or abs(exact[n][1] - real[n][1]) > 1.5]
    if wrong:
        raise SystemExit(f"{log}: jobs {wrong[:5]} are not at the log's times in the jobcomp "
                         "record: not this run's log")
    size = {j["name"]: j for j in run["jobs"]}
    jobs = [Job(i, exact[n][0] - shift - t0, exact[n][2] - exact[n][1] + completing,
                size[n]["limit"] * 60.0, size[n]["nodes"], bb=size[n].get("bb", 0.0))
            for i, n in enumerate(names)]
    backfill = {round(t - t0, 6) for t in timing["backfill"]}
    main = {round(t - t0, 6): depth for t, depth in timing["main"]}
    passes = sorted(backfill | set(main))

    class LoggedPasses(SlurmScheduler):
        """Slurm's passes at the logged times only (``SlurmScheduler.passes_now``)."""

        woken = False

        def decide(self, window):
            if window.time > passes[-1]:  # the run goes on past the log: Slurm's timers
                return super().decide(window)
            if not self.woken:
                self.woken = True
                for t in passes:
                    if t >= window.time:
                        self._sim.wake_at(t)
            now = round(window.time, 6)
            depth = main.get(now)
            return self.passes_now(
                window, 0 if depth is None else
                len(window.jobs) if depth == "full" else self.conf.default_queue_depth,
                backfill=now in backfill)

    logged = {k: v for k, v in opts.items() if k != "launch_latency"}  # the log times it
    logged["clock_origin"] = t0 + shift
    sim = Simulator(jobs, System(machine, bb=run["bb_total"]), LoggedPasses(**logged))
    sim.run()
    return exact, {n: sim.records[i].start + t0 + shift for i, n in enumerate(names)}, timing


def cmd_logged(args) -> None:
    """Runs that kept their controller's log, simulated as ``alone`` simulates them (the
    model's own timing, the latency of the other folders' runs) and with the log's timing
    (``simulate_logged``): how much of the model's departure from each is timing."""
    runs = runs_of([Path(d) for d in args.dirs], args.nodes)
    print("| run | Slurm | SchedulerParameters over the testbed's | jobs | passes logged: "
          "backfill / main | wait real (s) | the model's timing: wait (dev), tau | the "
          "logged timing: wait (dev), tau | same start (within 0.5 s) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for run in runs:
        if controller_log(run) is None:
            continue
        opts, machine = alone_setup(run, runs, args.nodes)
        own = compare(run["real"], simulate_same(run["jobs"], run["real"], "slurm", machine,
                                                 None, options=opts, bb=run["bb_total"]))
        exact, sim, timing = simulate_logged(run, opts, machine, args.completing)
        got = compare(exact, sim)
        same = sum(abs(exact[n][1] - sim[n]) < 0.5 for n in exact)
        print(f"| {run['name']} | {opts['slurm_version']} | "
              f"{run['info'].get('scheduler_parameters') or '-'} | {got['jobs']} | "
              f"{len(timing['backfill'])} / {len(timing['main'])} | {got['wait_real']:.1f} | "
              f"{own['wait_sim']:.1f} ({own['wait_dev_pct']:+.1f}%), {own['tau']:.3f} | "
              f"{got['wait_sim']:.1f} ({got['wait_dev_pct']:+.1f}%), {got['tau']:.3f} | "
              f"{same} of {got['jobs']} |")


def cmd_month(args) -> None:
    """The simulator's speed under ``--policy slurm`` (Slurm's defaults, and one reservation)
    beside FCFS+EASY on ``--days`` days of a real trace, on the trace's clock: seconds of
    simulated time (first submission to last end) per second of computation, each run
    ``--repeat`` times, interleaved (the fastest kept: the machine is shared).  Each Slurm
    setting runs twice: running jobs seen by Slurm's will-run test (the model) and as slots
    of the plan to their exact ends (``SlurmScheduler.will_run_test`` off), so that the
    cost of the will-run structure is a ratio measured side by side (``vs_plan``)."""
    from hpcopt import load_trace
    from hpcopt.policies import make_policy
    from hpcopt.scenario import trace_clock_origin
    from hpcopt.sim.driver import Simulator

    trace = load_trace(args.trace)
    origin = trace_clock_origin(trace)
    lo = args.start_day * 86400.0
    jobs = [j for j in trace.jobs if lo <= j.submit < lo + args.days * 86400.0]
    variants = [("fcfs", {}, True)] + [
        ("slurm", {"clock_origin": origin, **({"scheduler_parameters": p} if p else {})}, w)
        for p in ("", "bf_job_part_count_reserve=1") for w in (True, False)]
    best = [math.inf] * len(variants)
    sims: list = [None] * len(variants)
    for _ in range(args.repeat):
        for k, (name, opts, will_run) in enumerate(variants):
            with will_run_test(will_run):
                t0 = time.perf_counter()
                sims[k] = Simulator(jobs, trace.system, make_policy(name, **opts)).run()
                best[k] = min(best[k], time.perf_counter() - t0)
    rows = []
    for k, (name, opts, will_run) in enumerate(variants):
        sim = sims[k]
        span = max(r.end for r in sim.records.values()) - min(j.submit for j in jobs)
        wait = float(np.mean([r.start - r.job.submit for r in sim.records.values()]))
        row = dict(trace=Path(args.trace).name, days=args.days, jobs=len(jobs),
                   nodes=trace.system.nodes, policy=name,
                   options=opts.get("scheduler_parameters", ""),
                   running_jobs="" if name != "slurm" else
                   "will-run test" if will_run else "plan slots",
                   seconds=round(best[k], 3), passes=sim.passes,
                   simulated_days=round(span / 86400, 1),
                   times_real_time=round(span / best[k]), mean_wait=round(wait, 1))
        if name == "slurm" and will_run:
            row["vs_plan"] = round(best[k] / best[k + 1], 2)
        rows.append(row)
        print(json.dumps(row), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "month_speed.json").write_text(json.dumps(rows, indent=1))


MODEL_NAMES = {"none": "no latency", "given": "given", "measured": "measured (constant)",
               "cycle": "adapter cycle", "drawn": "drawn (20 seeds)"}


def cmd_report(args) -> None:
    """The markdown table of benchmarks/README.md ("real Slurm") from saved replays."""
    print("| replay | run | latency model | delay (s) | tau | ahead real / sim / both (J) "
          "| drift median / p90 (s) | wait real / sim (dev) | bsld real / sim (dev) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for d in args.dirs:
        rows = json.loads((Path(d) / "replay.json").read_text())
        for r in rows:
            if r["model"] not in args.models:
                continue
            drawn = r["model"] == "drawn"
            delay = f"{r['launch_delay']:g}" + (f", every {r['period']:g} s"
                                                 if r.get("period") else "")
            tau = (f"{r['tau']:.3f} ({r['tau_min']:.2f}-{r['tau_max']:.2f})" if drawn
                   else f"{r['tau']:.3f}")
            wait = (f"{r['wait_real']:.0f} / {r['wait_sim']:.0f} ± {r['wait_sim_sd']:.0f} "
                    f"({r['wait_dev_pct']:+.1f}%, {rank_words(r)})" if drawn
                    else f"{r['wait_real']:.0f} / {r['wait_sim']:.0f} "
                         f"({r['wait_dev_pct']:+.1f}%)")
            print(f"| {Path(d).name} | {r['run']} | {MODEL_NAMES[r['model']]} | {delay} | {tau} "
                  f"| {r['ahead_real']:.0f} / {r['ahead_sim']:.0f} / {r['ahead_both']:.0f} "
                  f"({r['ahead_jaccard']:.2f}) | {r['drift_median']:.1f} / "
                  f"{r['drift_abs_p90']:.0f} | {wait} | {r['bsld_real']:.2f} / "
                  f"{r['bsld_sim']:.2f} ({r['bsld_dev_pct']:+.1f}%) |")


def positive_seconds(text: str) -> float:
    """An option's seconds > 0 (argparse type: a one-line error otherwise)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"expected seconds > 0, got {text!r}")
    return value


def runs_parser(sub, name: str, text: str, dirs_text: str) -> argparse.ArgumentParser:
    """A subcommand that reads saved replay folders (``dirs``) of ``--nodes`` nodes."""
    p = sub.add_parser(name, help=text)
    p.add_argument("dirs", nargs="+", help=dirs_text)
    p.add_argument("--nodes", type=int, default=8)
    return p


def parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per part (module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="part", required=True)
    r = sub.add_parser("replay")
    slice_arguments(r, first=5000, jobs=150, nodes=8, run_min=10, run_max=60,
                    limit_max=4, load=1.1)
    r.add_argument("--interval", type=float, default=0.5, help="adapter cycle, seconds")
    r.add_argument("--launch-delay", type=float, nargs="+", default=[],
                   help="also simulate with each start this many seconds later (the "
                        "adapter's cycle and Slurm's launch); several values allowed")
    r.add_argument("--runs", nargs="+", default=["fcfs", "knapsack", "slurm"])
    r.add_argument("--draws", type=int, default=20,
                   help="simulations with each start's delay drawn from the measured "
                        "latencies (seeds 0..N-1); 0 leaves them out")
    r.add_argument("--max-minutes", type=float, default=60)
    r.add_argument("--parallel", action="store_true",
                   help="run the --runs at the same time, each on its own testbed")
    r.add_argument("--analyze-only", action="store_true",
                   help="compare the runs saved in --out again (no Slurm)")
    r.add_argument("--from-testbeds", metavar="DIR",
                   help="read the runs from the testbed directories an earlier replay kept "
                        "(DIR/fcfs, ...: Slurm's jobcomp log and the adapter's log); no Slurm")
    r.add_argument("--shared", action="store_true",
                   help="the jobs sized in cores (1..nodes x 4) on the testbed's shared "
                        "partition, Slurm's own scheduler (--runs slurm), read back and "
                        "simulated in cores")
    r.add_argument("--slurm", default="22.05", choices=["22.05", "24.11"],
                   help="the testbed's Slurm version")
    r.add_argument("--scheduler-parameters", metavar="K=V,...",
                   help="over the testbed's SchedulerParameters for Slurm's own run (e.g. "
                        "bf_job_part_count_reserve=1, bf_licenses)")
    r.add_argument("--bb-total", type=int, default=0,
                   help="a license bb of this count; each job asks its share of the "
                        "burst-buffer trace's (give --trace BB_TRACE)")
    r.add_argument("--shown-every", type=positive_seconds, metavar="S",
                   help="sample what squeue --start shows of every pending job every S "
                        "seconds during the Slurm-alone run, from the first submission to "
                        "the last start (saved in replay_slurm.json: shown)")
    r.add_argument("--controller-log", action="store_true",
                   help="Slurm's own runs log their passes (SlurmctldDebug=debug, "
                        "DebugFlags=Backfill); the lines of their timing are kept as "
                        "OUT/slurmctld_<run>.log.gz (part logged)")
    r.add_argument("--out", default="results/slurm")
    c = sub.add_parser("cost")
    c.add_argument("--pending", type=int, nargs="+", default=[10, 100, 1000])
    c.add_argument("--policies", nargs="+", default=["fcfs", "knapsack"])
    c.add_argument("--cycles", type=int, default=5)
    c.add_argument("--out", default="results/slurm")
    t = sub.add_parser("report")
    t.add_argument("dirs", nargs="+", help="--out folders of earlier replays")
    t.add_argument("--models", nargs="+", default=list(MODEL_NAMES), choices=list(MODEL_NAMES))
    x = runs_parser(sub, "crossval", "out of sample: each run simulated with the latency of "
                    "the other replays' runs", "--out folders of earlier replays")
    x.add_argument("--draws", type=int, default=20)
    x.add_argument("--out", default="results/slurm/crossval")
    a = runs_parser(sub, "alone", "Slurm alone against --policy slurm configured from the "
                    "slurm.conf its testbed ran, and against EASY",
                    "--out folders of replays with a Slurm-alone run")
    a.add_argument("--latency", type=float, default=None,
                   help="simulate every run at this latency (s) instead of the other runs' "
                        "mean gap: a sensitivity check, not out of sample")
    a.add_argument("--out", default="results/slurm/slurm-alone")
    a.add_argument("--plan-view", action="store_true",
                   help="running jobs as slots of the plan, not through Slurm's will-run test")
    sh = runs_parser(sub, "shown", "what squeue --start showed (replay --shown-every) "
                     "against the model's plan at the same moments",
                     "--out folders of replays with a Slurm-alone run; those sampled are "
                     "compared, all give the others' latency")
    sh.add_argument("--out", default="results/slurm/shown")
    runs_parser(sub, "repeat", "Slurm against itself: pairs of replay folders that ran the "
                "same jobs, compared run by run", "replay folders, in pairs (A B [A B ...])")
    lg = runs_parser(sub, "logged", "runs that kept their controller's log, simulated with "
                     "its own timing (logged submissions, ends and passes)",
                     "replay folders; those with a controller log are replayed")
    lg.add_argument("--completing", type=float, default=0.0, metavar="S",
                    help="hold each job's nodes S seconds past its logged end in the logged "
                         "replay (a sensitivity check: the log does not say when they stop "
                         "completing)")
    s = sub.add_parser("month", help="the simulator's speed under --policy slurm on a month "
                                     "of a real trace")
    s.add_argument("--trace", default=str(DEFAULT_TRACE))
    s.add_argument("--start-day", type=float, default=60)
    s.add_argument("--days", type=float, default=30)
    s.add_argument("--repeat", type=int, default=3)
    s.add_argument("--out", default="results/slurm/slurm-alone")
    return p


def main() -> None:
    args = parser().parse_args()
    if args.part == "replay" and args.shown_every and "slurm" not in args.runs:
        raise SystemExit("--shown-every samples Slurm's own run: give --runs with slurm")
    {"month": cmd_month, "alone": cmd_alone, "replay": cmd_replay, "cost": cmd_cost,
     "report": cmd_report, "crossval": cmd_crossval, "repeat": cmd_repeat,
     "shown": cmd_shown, "logged": cmd_logged}[args.part](args)


if __name__ == "__main__":
    main()
