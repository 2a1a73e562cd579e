"""hpcopt on a real Slurm against its users: arrays, node ranges and release attempts.

A slice of a real trace (KTH-SP2 by default), scaled to the 8-node testbed as
``slurm_validation.py replay`` scales it (``scaled_slice``), with a tenth of its jobs (drawn
by a seeded RNG) turned into

- job arrays of 2-4 tasks, each task the job's size and its sleep divided by the task count
  (about the same work), half of them with a ``%N`` throttle (N below the task count), or
- node ranges ``-N a-b``, ``b`` the job's scaled size and ``a`` below it (1-node jobs become
  arrays),

submitted at their scaled times to a fresh testbed by an unprivileged user (made with
``useradd`` and removed at the end when this script made it).  Right after each submission
the user tries ``scontrol release ID``, ``scontrol update jobid=ID timelimit=+30`` and
``scontrol update jobid=ID StartTime=now`` on the job; each attempt Slurm accepts is counted.
``hpcopt slurm run --policy P --interval 1 --log`` schedules the partition until every job
(task) ended.  Then, from the adapter's cycle records
and Slurm's ``jobcomp`` log (an array task's line has its own JobId and ArrayJobId,
ArrayTaskId, in 22.05 and 24.11 alike; ``squeue --json``, read every ``--poll`` seconds,
maps each started job id to ``A_T`` too, and the two must agree):

(a) every reserved job starts no later than its binding shadow plus one cycle interval plus
    1 s (Slurm's times are whole seconds), and nothing but the policy's own rule moves a
    reservation later: each move (a cycle's shadow for the job past the latest one reported
    for it by more than that bound) is put down to its cause (``CAUSES``): the policy's own
    picks of the pass (a window policy such as knapsack may start jobs the reserved one waits
    for: its rule, and the binding shadow moves with it), Slurm's latency (released jobs not
    started yet), backfill, or starts hpcopt did not release; moves by backfill or unreleased
    starts fail the run.  The worst margins against the first shadow and the binding one are
    reported, and the moves by cause;
(b) every job (task) that started was released by the adapter before it started (the
    ``releasing`` event of its cycle, written before the release, at most 1 s after Slurm's
    whole-second start), and none twice;
(c) no cycle releases more nodes than it counted free (``released_nodes <= free_nodes``);
(d) each released job's node count as the adapter must count it from its shape (a task its
    size, a range its maximum) sums to the cycle's ``released_nodes``, and Slurm's allocated
    node count (jobcomp ``NodeCnt``) is at most that count.

    python benchmarks/slurm_adversarial.py --out benchmarks/results/slurm/adversarial  (root)
    python benchmarks/slurm_adversarial.py --slurm 24.11 --out ...
    python benchmarks/slurm_adversarial.py --from-runs /tmp/hpcopt-adv-XXXX --out ...

``--attacks`` runs the attacks one by one instead, on a fresh 4-node testbed, as the same
kind of ordinary user, first with the adapter stopped, then with it running (``--interval
1``): a finished job requeued, then ``StartTime=now``; ``--begin=now+3600 -N4`` on the idle
cluster, then ``StartTime=now``; ``-w n4`` while a job of the unmanaged partition holds n4.
Each is watched ``--watch`` seconds; Slurm's own log counts its releases and allocations of
the job from the attack on (an allocation past the releases is a start hpcopt did not
decide).  Then the user floods the wake-up port (``--wake-port``, the adapter at ``--interval
5``) from a bounded loop on loopback for ``--flood-seconds``, once against the adapter as
shipped (``rationed``) and once with the rationing switched off (``unrationed``: every
datagram may wake a cycle, the kernel's default receive buffer, every cycle logged): the
adapter's CPU (its own and its Slurm commands', ``/proc``), cycles a second and log growth.
Writes ``OUT/attacks.json`` (one entry per Slurm version).

    python benchmarks/slurm_adversarial.py --attacks --out benchmarks/results/slurm/adversarial
    python benchmarks/slurm_adversarial.py --attacks --slurm 24.11 --out ...

Writes ``OUT/adversarial_jobs.json`` (the slice as submitted), ``OUT/adversarial.json`` (one
row per run, appended to what is there for other versions and policies),
``OUT/adversarial_<version>_<policy>_reserved.csv`` (each reserved job: first shadow, start,
margin) and keeps each run's raw record (adapter log, jobcomp, squeue readings, attempts) in
``run.json`` of its testbed directory, printed at the start.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import slurm_validation as sv  # noqa: E402


def adversarial_slice(jobs: list[dict], frac: float, seed: int) -> list[dict]:
    """``jobs`` with ``frac`` of them (seeded) made arrays or node ranges (module docstring);
    each job gets ``shape`` (plain, array, range), ``tasks``, ``throttle`` and ``min_nodes``."""
    rng = np.random.default_rng(seed)
    pick = set(rng.choice(len(jobs), size=round(frac * len(jobs)), replace=False).tolist())
    out = []
    for i, j in enumerate(jobs):
        j = dict(j, shape="plain", tasks=1, throttle=0, min_nodes=j["nodes"])
        if i in pick:
            if j["nodes"] >= 2 and rng.random() < 0.5:
                j.update(shape="range", min_nodes=int(rng.integers(1, j["nodes"])))
            else:
                k = int(rng.integers(2, 5))
                j.update(shape="array", tasks=k, sleep=max(1, round(j["sleep"] / k)),
                         throttle=int(rng.integers(1, k)) if rng.random() < 0.5 else 0)
        out.append(j)
    return out


def sbatch_args(job: dict) -> list[str]:
    nodes = (f"{job['min_nodes']}-{job['nodes']}" if job["shape"] == "range"
             else str(job["nodes"]))
    args = ["sbatch", "--parsable", "-o", "/dev/null", "-J", job["name"], "-N", nodes,
            "-t", str(job["limit"])]
    if job["shape"] == "array":
        args += ["-a", f"1-{job['tasks']}" + (f"%{job['throttle']}" if job["throttle"] else "")]
    return args + ["--wrap", f"sleep {job['sleep']}"]


class User:
    """The unprivileged submitter: ``run`` runs a Slurm client as that user."""

    def __init__(self, name: str) -> None:
        self.name, self.made = name, False
        try:
            pwd.getpwnam(name)
        except KeyError:
            subprocess.run(["useradd", "-M", "-s", "/usr/sbin/nologin", name], check=True)
            self.made = True
        pw = pwd.getpwnam(name)
        self.uid, self.gid = pw.pw_uid, pw.pw_gid

    def run(self, args: list[str], env: dict) -> subprocess.CompletedProcess:
        return subprocess.run(args, env={**env, "HOME": "/tmp", "USER": self.name},
                              user=self.uid, group=self.gid, extra_groups=[], cwd="/tmp",
                              capture_output=True, text=True, timeout=60)

    def remove(self) -> None:
        if self.made:
            subprocess.run(["userdel", self.name], check=False)


def submit_as(user: User, jobs: list[dict], env: dict) -> list[dict]:
    """Submit ``jobs`` at their scaled times as ``user``; right after each submission the
    user's release, time-limit raise and start now.  Returns the submissions and attempts."""
    t0 = time.monotonic()
    subs = []
    for job in jobs:
        delay = job["at"] - (time.monotonic() - t0)
        if delay > 0:
            time.sleep(delay)
        p = user.run(sbatch_args(job), env)
        if p.returncode:
            raise SystemExit(f"sbatch as {user.name} failed: {p.stderr.strip()}")
        jid = p.stdout.strip().split(";")[0]
        attempts = []
        for what in (["scontrol", "release", jid],
                     ["scontrol", "update", f"jobid={jid}", "timelimit=+30"],
                     ["scontrol", "update", f"jobid={jid}", "StartTime=now"]):
            at = time.time()
            q = user.run(what, env)
            attempts.append(dict(cmd=" ".join(what[:2]), time=round(at, 3), rc=q.returncode,
                                 said=(q.stderr or q.stdout).strip()[:200]))
        subs.append(dict(name=job["name"], id=int(jid), attempts=attempts))
    return subs


def poll_squeue(env: dict, seen: dict, stop: threading.Event, every: float) -> None:
    """Every ``every`` seconds until ``stop``: each job (task) Slurm has started, by its own
    job id: its key (``A_T`` for a task), node count and nodes."""
    from hpcopt.slurm.state import Slurm, SlurmCommandError

    slurm = Slurm(env=env, timeout=20)
    while True:
        try:
            jobs = slurm.jobs()
        except SlurmCommandError:
            jobs = ()
        for j in jobs:
            if j.state != "PENDING" and j.start > 0:
                seen[str(j.id)] = dict(key=j.key, name_state=j.state, nodes=j.nodes,
                                       node_names=list(j.node_names), start=j.start)
        if stop.is_set():
            return
        stop.wait(every)


def run_one(jobs: list[dict], policy: str, user: User, args, work: Path) -> dict:
    """One run on a fresh testbed: the raw record of module docstring's checks."""
    from hpcopt import testbed

    d = work / f"{args.slurm}_{policy}"
    with sv._STARTING:
        conf = testbed.start(d, args.nodes, slurm=args.slurm)
    env = {**os.environ, "SLURM_CONF": str(conf),
           "PATH": f"{d / 'bin'}:{os.environ.get('PATH', '')}"}
    log = d / "adapter.jsonl"
    n_tasks = sum(j["tasks"] for j in jobs)
    seen: dict = {}
    stop = threading.Event()
    poller = threading.Thread(target=poll_squeue, args=(env, seen, stop, args.poll), daemon=True)
    proc = None
    try:
        proc = subprocess.Popen(["nice", "-n", "5", sv.HPCOPT, "slurm", "run", "--policy", policy,
                                 "--interval", str(args.interval), "--log", str(log)],
                                env=env, stdout=subprocess.DEVNULL)
        wait_until = time.time() + 60
        while not (log.exists() and log.read_text()):
            if time.time() > wait_until:
                raise SystemExit(f"{policy}: the adapter did not start")
            time.sleep(0.2)
        poller.start()
        t0 = time.time()
        subs = submit_as(user, jobs, env)
        while len(sv.completed_jobs(d, by="JobId")) < n_tasks:
            if time.time() - t0 > args.max_minutes * 60:
                raise SystemExit(f"{policy}: not done in {args.max_minutes} minutes ({d})")
            time.sleep(1)
        stop.set()
        poller.join(60)
    finally:
        stop.set()
        sv.stop_run(proc, d)
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    run = dict(slurm=args.slurm, policy=policy, interval=args.interval, jobs=jobs,
               submissions=subs, log=lines, jobcomp=sv.completed_jobs(d, by="JobId"), squeue=seen,
               jobcomp_sample=(d / "log" / "jobcomp.txt").read_text().splitlines()[:3])
    (d / "run.json").write_text(json.dumps(run))
    return run


def check(run: dict) -> tuple[dict, list[dict]]:
    """The checks (a)-(d) of the module docstring on one raw run: the row and the reserved
    jobs' rows."""
    jobs, interval = run["jobs"], run["interval"]
    cycles = [c for c in run["log"] if "event" not in c]
    events = {c["cycle"]: c for c in run["log"] if c.get("event") == "releasing"}
    by_name = {j["name"]: j for j in jobs}
    sub_id = {s["name"]: s["id"] for s in run["submissions"]}
    shape_of = {}  # released key -> the job of the slice
    for name, jid in sub_id.items():
        shape_of[str(jid)] = by_name[name]
    problems: list[str] = []

    # started jobs (tasks) by key (``A_T`` for a task), from jobcomp, checked against squeue
    started = {}
    for raw, rec in run["jobcomp"].items():
        polled = run["squeue"].get(raw, {}).get("key")
        key = rec.get("array_task") or polled or raw
        if polled is not None and polled != key:
            problems.append(f"job {raw}: jobcomp says {key}, squeue said {polled}")
        if rec["start"] is None or rec["end"] is None:
            problems.append(f"{key}: no start/end in jobcomp ({rec['state']})")
            continue
        started[key] = dict(rec, raw=raw)
        base = key.split("_")[0]
        if key not in shape_of and base in shape_of:
            shape_of[key] = shape_of[base]
    unmapped = [k for k, r in started.items() if k not in shape_of]
    n_tasks = sum(j["tasks"] for j in jobs)
    not_completed = [k for k, r in started.items() if r["state"] != "COMPLETED"]

    # (b) released before the start, once
    released_at: dict[str, float] = {}
    twice = []
    for c in cycles:
        if not c.get("ok"):
            continue
        for rid in c["released"]:
            k = str(rid)
            if k in released_at:
                twice.append(k)
            else:
                released_at[k] = events[c["cycle"]]["time"]
    unreleased = sorted(k for k in started if k not in released_at)
    late_release = sorted(k for k in started if k in released_at and
                          released_at[k] > started[k]["start"] + 1)

    # (c) released nodes within the free nodes; (d) the count by shape and Slurm's allocation
    over_free = [c["cycle"] for c in cycles if c.get("ok") and
                 c["released_nodes"] > c["free_nodes"]]
    miscount = []
    for c in cycles:
        if c.get("ok") and c["released"]:
            want = sum(shape_of[str(r).split("_")[0]]["nodes"] for r in c["released"])
            if want != c["released_nodes"]:
                miscount.append(dict(cycle=c["cycle"], released=c["released"],
                                     logged=c["released_nodes"], by_shape=want))
    over_alloc = [dict(key=k, allocated=r["nodes"], counted=shape_of[k]["nodes"])
                  for k, r in started.items() if k in shape_of and
                  r["nodes"] > shape_of[k]["nodes"]]
    ranges = [(k, r["nodes"]) for k, r in started.items()
              if shape_of.get(k, {}).get("shape") == "range"]

    # (a) reserved jobs start within a cycle of their shadow; each move of a reservation
    # later is put down to its cause (``shadow_moves``)
    moves, binding = shadow_moves(cycles, unreleased_starts(started, released_at), interval)
    first_shadow: dict[str, tuple[float, int]] = {}
    for c in cycles:
        res = c.get("reserved") if c.get("ok") else None
        if res is not None and str(res["id"]) not in first_shadow:
            first_shadow[str(res["id"])] = (res["shadow"], c["cycle"])
    bound = interval + 1.0
    reserved_rows = []
    for k, (shadow, cyc) in first_shadow.items():
        if k not in started:
            problems.append(f"reserved {k} never started")
            continue
        st = started[k]["start"]
        reserved_rows.append(dict(id=k, shape=shape_of[k]["shape"], first_cycle=cyc,
                                  shadow=shadow, start=st, margin=round(st - shadow, 3),
                                  binding=binding[k], bound_margin=round(st - binding[k], 3),
                                  late=st > binding[k] + bound))
    margins = [r["margin"] for r in reserved_rows]
    bound_margins = [r["bound_margin"] for r in reserved_rows]
    late = [r for r in reserved_rows if r["late"]]
    pushed = {cause: sum(m["cause"] == cause for m in moves) for cause in CAUSES}

    attempts = [a for s in run["submissions"] for a in s["attempts"]]
    accepted = [dict(a, id=s["id"]) for s in run["submissions"] for a in s["attempts"]
                if a["rc"] == 0]
    ok_cycles = [c for c in cycles if c.get("ok")]
    t_sub = min(r["submit"] for r in started.values())
    t_end = max(r["end"] for r in started.values())
    row = dict(
        slurm=run["slurm"], policy=run["policy"], interval=interval, jobs=len(jobs),
        arrays=sum(j["shape"] == "array" for j in jobs),
        ranges=sum(j["shape"] == "range" for j in jobs),
        tasks=n_tasks, started=len(started), completed=len(started) - len(not_completed),
        attempts=len(attempts), accepted=len(accepted),
        cycles=len(cycles), failed_cycles=len(cycles) - len(ok_cycles),
        reserved_jobs=len(reserved_rows),
        margin_worst=max(margins) if margins else None,
        margin_median=float(np.median(margins)) if margins else None, bound=bound,
        bound_margin_worst=max(bound_margins) if bound_margins else None,
        bound_margin_median=float(np.median(bound_margins)) if bound_margins else None,
        late_reserved=len(late), shadow_pushed=pushed, unreleased=len(unreleased),
        late_release=len(late_release),
        released_twice=len(twice), over_free_cycles=len(over_free),
        miscounted_cycles=len(miscount), over_allocated=len(over_alloc),
        range_alloc=sorted({f"{shape_of[k]['min_nodes']}-{shape_of[k]['nodes']}:{n}"
                            for k, n in ranges}),
        wall_s=round(t_end - t_sub, 1))
    row["pass"] = (not problems and not unmapped and len(started) == n_tasks and
                   not not_completed and not accepted and not late and not unreleased and
                   not any(pushed[c] for c in FAILING_CAUSES) and
                   not late_release and not twice and not over_free and not miscount and
                   not over_alloc)
    details = dict(problems=problems, unmapped=unmapped, not_completed=not_completed,
                   accepted=accepted, late=late, unreleased=unreleased, shadow_moves=moves,
                   late_release=[(k, released_at[k], started[k]["start"]) for k in late_release],
                   twice=twice, over_free=over_free, miscount=miscount, over_alloc=over_alloc,
                   refusals=sorted({re.sub(r"\d+", "N", f"{a['cmd']}: {a['said']}")
                                    for a in attempts if a["rc"]}))
    return dict(row, details=details), reserved_rows


#: what may move a reservation later: the policy's own picks of the pass that reports the
#: move (mode ready: a window policy may start jobs the reserved one waits for); Slurm's
#: latency (released jobs not started yet, whose ends count from the cycle's time: a move by
#: no more than the time since the cycle before, plus 1 s for Slurm's whole seconds); a
#: backfilled release of that pass or the one before; a job Slurm started that hpcopt did
#: not release (since the cycle before); or none of these
CAUSES = ("policy", "latency", "backfill", "unreleased", "other")
#: the causes that break the reservation's promise: the policy's own picks are its rule
FAILING_CAUSES = ("backfill", "unreleased")


def unreleased_starts(started: dict, released_at: dict) -> list[float]:
    """The start times of the jobs Slurm started without (or before) their release."""
    return sorted(r["start"] for k, r in started.items()
                  if k not in released_at or released_at[k] > r["start"] + 1)


def shadow_moves(cycles: list[dict], unreleased: list[float], interval: float
                 ) -> tuple[list[dict], dict[str, float]]:
    """Each move of a reservation later (a cycle's shadow for the job past the latest one
    reported for it so far by more than one cycle plus 1 s) with its cause (``CAUSES``,
    checked in that order: the policy's own picks first), and each reserved job's binding
    shadow: its first, moved on by the policy's own picks only (the start it was promised
    under the policy's rule; backfill, unreleased starts and Slurm's side never move it)."""
    bound = interval + 1.0
    moves: list[dict] = []
    latest: dict[str, float] = {}
    binding: dict[str, float] = {}
    prev = None
    for c in (c for c in cycles if c.get("ok")):
        res = c.get("reserved")
        if res is not None:
            k, shadow = str(res["id"]), res["shadow"]
            binding.setdefault(k, shadow)
            if k in latest and shadow > latest[k] + bound:
                own = set(map(str, c["released"])) - set(map(str, c["backfilled"]))
                since = prev["time"] - 1 if prev is not None else -float("inf")
                gap = c["time"] - prev["time"] if prev is not None else 0.0
                cause = ("policy" if own else
                         "latency" if c.get("waiting_start") and shadow - latest[k] <= gap + 1
                         else
                         "backfill" if c["backfilled"] or (prev or {}).get("backfilled") else
                         "unreleased" if any(since <= t <= c["time"] for t in unreleased)
                         else "other")
                moves.append(dict(id=k, cycle=c["cycle"], by=round(shadow - latest[k], 3),
                                  cause=cause))
                if cause == "policy":
                    binding[k] = shadow
            latest[k] = max(latest.get(k, shadow), shadow)
        prev = c
    return moves, binding


COLUMNS = [("slurm", "Slurm"), ("policy", "policy"), ("jobs", "jobs (arrays, ranges)"),
           ("tasks", "tasks started"), ("attempts", "user attempts accepted"),
           ("cycles", "cycles"), ("reserved_jobs", "reserved jobs"),
           ("margin_worst", "start - first shadow: worst / median"),
           ("shadow_pushed", "shadow moves: policy / latency / backfill / unreleased / other"),
           ("bound_margin_worst", "start - binding shadow: worst / median (bound)"),
           ("unreleased", "started unreleased"), ("over_free_cycles", "released > free"),
           ("over_allocated", "allocated > counted"), ("wall_s", "wall (s)"), ("pass", "all")]


def table(rows: list[dict]) -> str:
    out = ["| " + " | ".join(h for _, h in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for r in rows:
        cells = [r["slurm"], r["policy"], f"{r['jobs']} ({r['arrays']}, {r['ranges']})",
                 f"{r['started']} of {r['tasks']}", f"{r['accepted']} of {r['attempts']}",
                 f"{r['cycles']} ({r['failed_cycles']} failed)", str(r["reserved_jobs"]),
                 f"{r['margin_worst']:+.1f} / {r['margin_median']:+.1f} s"
                 if r["margin_worst"] is not None else "-",
                 " / ".join(str(r["shadow_pushed"].get(c, 0)) for c in CAUSES),
                 f"{r['bound_margin_worst']:+.1f} / {r['bound_margin_median']:+.1f} s "
                 f"(+{r['bound']:g} s)" if r.get("bound_margin_worst") is not None else "-",
                 str(r["unreleased"] + r["late_release"]), str(r["over_free_cycles"]),
                 str(r["over_allocated"] + r["miscounted_cycles"]), f"{r['wall_s']:.0f}",
                 "pass" if r["pass"] else "FAIL"]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


# --- the attacks one by one (--attacks): begin times, requeues, busy nodes, the wake-up --------

def _squeue(env: dict, jid: int) -> dict:
    from hpcopt.slurm.state import Slurm

    jobs = Slurm(env=env, timeout=20).jobs()
    j = next((j for j in jobs if j.id == jid), None)
    return {} if j is None else dict(state=j.state, priority=j.priority, reason=j.reason,
                                     start=j.start)


def _ctld_lines(d: Path, jid: int, since: int) -> tuple[int, int]:
    """Slurm's own count of releases and allocations of ``jid`` in its log from byte
    ``since`` on."""
    text = (d / "log" / "slurmctld.log").read_bytes()[since:].decode(errors="replace")
    return (len(re.findall(rf"release hold on JobId={jid}\b", text)),
            len(re.findall(rf"Allocate JobId={jid}\b", text)))


def _adapter(env: dict, d: Path, *extra: str, python: list[str] | None = None):
    return subprocess.Popen([*(python or [sv.HPCOPT]), "slurm", "run", "--policy", "fcfs",
                             "--interval", "1", "--lock", str(d / "adapter.lock"), *extra],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _stop(proc) -> None:
    if proc is not None:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def attack_rows(user: User, env: dict, d: Path, running: bool, watch: float) -> list[dict]:
    """Each attack once as ``user``, the adapter running or not: whether Slurm started a job
    without a release after the attack (its own log: allocations past releases)."""
    rows = []
    proc = _adapter(env, d) if running else None
    try:
        def sub(*a, sleep=1):
            p = user.run(["sbatch", "--parsable", "-o", "/dev/null", *a, "--wrap",
                          f"sleep {sleep}"], env)
            if p.returncode:
                raise SystemExit(f"sbatch: {p.stderr.strip()}")
            return int(p.stdout.strip().split(";")[0])

        def watch_for(jid, mark):
            time.sleep(watch)
            rel, alloc = _ctld_lines(d, jid, mark)
            return dict(releases=rel, allocations=alloc, unreleased_starts=max(0, alloc - rel),
                        state=_squeue(env, jid).get("state"))

        # 1. requeue a finished job, then StartTime=now
        jid = sub("-N", "1", "-t", "1")
        if not running:  # released as the adapter releases (not requeueable), then stopped
            subprocess.run(["scontrol", "update", f"jobid={jid}", "Requeue=0",
                            "AdminComment=hpcopt:released:0"], env=env, check=True)
            subprocess.run(["scontrol", "release", str(jid)], env=env, check=True)
        end = time.time() + 60
        while _squeue(env, jid).get("state") != "COMPLETED" and time.time() < end:
            time.sleep(0.5)
        mark = (d / "log" / "slurmctld.log").stat().st_size
        rq = user.run(["scontrol", "requeue", str(jid)], env)
        st = user.run(["scontrol", "update", f"jobid={jid}", "StartTime=now"], env)
        rows.append(dict(attack="requeue, then StartTime=now", accepted=(
            f"requeue {'yes' if rq.returncode == 0 else 'no'}, StartTime "
            f"{'yes' if st.returncode == 0 else 'no'}"), **watch_for(jid, mark)))
        # 2. a begin time an hour ahead on an idle cluster, then StartTime=now
        mark = (d / "log" / "slurmctld.log").stat().st_size
        jid2 = sub("-N", "4", "-t", "30", "--begin=now+3600")
        time.sleep(3)
        st = user.run(["scontrol", "update", f"jobid={jid2}", "StartTime=now"], env)
        rows.append(dict(attack="--begin=now+3600 -N4, then StartTime=now",
                         accepted=f"StartTime {'yes' if st.returncode == 0 else 'no'}",
                         **watch_for(jid2, mark)))
        # 3. -w n4 while n4 is busy (a job of the unmanaged partition holds it)
        busy = sub("-p", "debug", "-w", "n4", "-N", "1", "-t", "5", sleep=300)
        time.sleep(2)
        mark = (d / "log" / "slurmctld.log").stat().st_size
        jid3 = sub("-N", "1", "-w", "n4", "-t", "1")
        r = watch_for(jid3, mark)
        rows.append(dict(attack="-w n4 while n4 is busy", accepted="-",
                         released_while_busy=r["releases"], **r))
        subprocess.run(["scancel", str(jid), str(jid2), str(jid3), str(busy)], env=env)
    finally:
        _stop(proc)
    for r in rows:
        r["adapter"] = "running" if running else "stopped"
    return rows


def _cpu(pid: int) -> float:
    """CPU seconds of a process and its waited-for children (utime, stime, cutime, cstime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


_UNRATIONED = ("import sys; import hpcopt.slurm.wake as w, hpcopt.slurm.adapter as a; "
               "w.RATE = w.BURST = 1e9; w.RCVBUF = 212992; "
               "a.Adapter._write_cycle = a.Adapter._write; "
               "from hpcopt.cli import main; sys.exit(main(sys.argv[1:]))")


def flood_row(user: User, env: dict, d: Path, port: int, rationed: bool,
              seconds: float) -> dict:
    """The adapter (``--interval 5 --wake-port``) under ``user``'s flood of datagrams on
    loopback for ``seconds`` (a bounded loop: it stops by itself): its CPU, cycles and log
    growth, rationed (as shipped) or not (the rationing switched off: every datagram may
    wake a cycle, the kernel's default receive buffer, every cycle logged)."""
    log = d / f"flood_{'rationed' if rationed else 'unrationed'}.jsonl"
    py = None if rationed else [sys.executable, "-c", _UNRATIONED]
    proc = subprocess.Popen([*(py or [sv.HPCOPT]), "slurm", "run", "--policy", "fcfs",
                             "--interval", "5", "--wake-port", str(port), "--lock",
                             str(d / "adapter.lock"), "--log", str(log)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        end = time.time() + 60
        while not (log.exists() and log.read_text()) and time.time() < end:
            time.sleep(0.2)
        time.sleep(1)
        cycle0 = json.loads(log.read_text().splitlines()[-1])["cycle"]
        size0, cpu0, t0 = log.stat().st_size, _cpu(proc.pid), time.monotonic()
        code = (f"import socket, time\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                f"end, n = time.monotonic() + {seconds}, 0\nwhile time.monotonic() < end:\n"
                f"    s.sendto(b'end 1', ('127.0.0.1', {port})); n += 1\nprint(n)\n")
        python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
        sent = int(user.run([python, "-c", code], env).stdout or 0)
        took = time.monotonic() - t0
        cpu, size = _cpu(proc.pid) - cpu0, log.stat().st_size - size0
        time.sleep(5.5)  # one interval: the rationed adapter writes its unchanged line
        cycles = json.loads(log.read_text().splitlines()[-1])["cycle"] - cycle0
    finally:
        _stop(proc)
    return dict(mode="rationed" if rationed else "unrationed", seconds=round(took, 1),
                sent_per_s=round(sent / took), cpu_pct=round(100 * cpu / took, 1),
                cycles_per_s=round(cycles / (took + 5.5), 2),
                log_bytes_per_s=round(size / took), log_mb_per_day=round(
                    size / took * 86400 / 1e6, 1))


def attacks(args) -> None:
    """``--attacks``: each attack with the adapter stopped and running, then the flood, on a
    fresh 4-node testbed of ``--slurm``; prints and saves ``OUT/attacks.json``."""
    from hpcopt import testbed

    work = Path(tempfile.mkdtemp(prefix="hpcopt-attacks-"))
    os.chmod(work, 0o755)
    d = work / args.slurm
    port = 20000 + os.getpid() % 20000
    user = User(args.user)
    try:
        conf = testbed.start(d, 4, slurm=args.slurm, wake_port=port)
        env = {**os.environ, "SLURM_CONF": str(conf),
               "PATH": f"{d / 'bin'}:{os.environ.get('PATH', '')}"}
        try:
            rows = attack_rows(user, env, d, False, args.watch) + \
                attack_rows(user, env, d, True, args.watch)
            floods = [flood_row(user, env, d, port, r, args.flood_seconds)
                      for r in (False, True)]
        finally:
            testbed.stop(d)
    finally:
        user.remove()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    saved = out / "attacks.json"
    done = json.loads(saved.read_text()) if saved.exists() else {}
    done[args.slurm] = dict(attacks=rows, flood=floods)
    saved.write_text(json.dumps(done, indent=1))
    for r in rows:
        print(f"| {args.slurm} | {r['attack']} | {r['adapter']} | {r['accepted']} | "
              f"{r['releases']} | {r['allocations']} | {r['unreleased_starts']} |")
    for f in floods:
        print(f"| {args.slurm} | {f['mode']} | {f['sent_per_s']} | {f['cpu_pct']}% | "
              f"{f['cycles_per_s']} | {f['log_bytes_per_s']} B/s ({f['log_mb_per_day']} MB a "
              "day) |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sv.slice_arguments(p, first=5000, jobs=100, nodes=8, run_min=5, run_max=25,
                       limit_max=2, load=1.1)
    p.add_argument("--frac", type=float, default=0.1, help="share of arrays and node ranges")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--policies", nargs="+", default=["fcfs", "knapsack"])
    p.add_argument("--slurm", default="22.05", choices=["22.05", "24.11"])
    p.add_argument("--interval", type=float, default=1.0, help="adapter cycle, seconds")
    p.add_argument("--poll", type=float, default=2.0, help="squeue reading, seconds")
    p.add_argument("--user", default="hpcoptadv", help="the submitting user (made if absent)")
    p.add_argument("--parallel", action="store_true",
                   help="run the --policies at the same time, each on its own testbed")
    p.add_argument("--max-minutes", type=float, default=25)
    p.add_argument("--from-runs", metavar="DIR",
                   help="check the runs an earlier call kept (DIR/<slurm>_<policy>/run.json)")
    p.add_argument("--out", default="results/slurm/adversarial")
    p.add_argument("--attacks", action="store_true",
                   help="the attacks one by one (requeue, begin time, busy nodes, a flood "
                        "of wake-ups), adapter stopped and running, instead of the replay")
    p.add_argument("--watch", type=float, default=15.0,
                   help="--attacks: seconds each attack is watched")
    p.add_argument("--flood-seconds", type=float, default=10.0,
                   help="--attacks: seconds of the flood of wake-ups")
    args = p.parse_args()
    if args.attacks:
        return attacks(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = adversarial_slice(sv.scaled_slice(args), args.frac, args.seed)
    (out / "adversarial_jobs.json").write_text(json.dumps(jobs, indent=1))
    print(f"{len(jobs)} jobs of {Path(args.trace).name} from record {args.first}: "
          f"{sum(j['shape'] == 'array' for j in jobs)} arrays "
          f"({sum(j['tasks'] for j in jobs if j['shape'] == 'array')} tasks), "
          f"{sum(j['shape'] == 'range' for j in jobs)} node ranges; arrivals over "
          f"{jobs[-1]['at']:.0f} s; Slurm {args.slurm}", flush=True)
    if args.from_runs:
        runs = {}
        for pol in args.policies:
            d = Path(args.from_runs) / f"{args.slurm}_{pol}"
            runs[pol] = json.loads((d / "run.json").read_text())
            runs[pol]["jobcomp"] = sv.completed_jobs(d, by="JobId")  # read again
    else:
        work = Path(tempfile.mkdtemp(prefix="hpcopt-adv-"))  # kept: logs and raw runs
        os.chmod(work, 0o755)  # the user reaches the testbeds' bin/ and slurm.conf
        print(f"testbeds in {work}", flush=True)
        user = User(args.user)
        try:
            if args.parallel:
                from concurrent.futures import ThreadPoolExecutor
                with ThreadPoolExecutor(len(args.policies)) as pool:
                    fut = {pol: pool.submit(run_one, jobs, pol, user, args, work)
                           for pol in args.policies}
                    runs = {pol: f.result() for pol, f in fut.items()}
            else:
                runs = {pol: run_one(jobs, pol, user, args, work) for pol in args.policies}
        finally:
            user.remove()
    saved = out / "adversarial.json"
    rows = [r for r in (json.loads(saved.read_text()) if saved.exists() else [])
            if (r["slurm"], r["policy"]) not in {(args.slurm, pol) for pol in runs}]
    for pol, run in runs.items():
        row, reserved = check(run)
        print(json.dumps(row), flush=True)
        print(f"jobcomp line as Slurm {args.slurm} writes it: {run['jobcomp_sample'][:1]}")
        rows.append(row)
        with open(out / f"adversarial_{args.slurm}_{pol}_reserved.csv", "w") as f:
            f.write("id,shape,first_cycle,shadow,start,margin,binding,bound_margin\n")
            for r in reserved:
                f.write(f"{r['id']},{r['shape']},{r['first_cycle']},{r['shadow']:.3f},"
                        f"{r['start']:.0f},{r['margin']:.3f},{r['binding']:.3f},"
                        f"{r['bound_margin']:.3f}\n")
    rows.sort(key=lambda r: (r["slurm"], r["policy"]))
    saved.write_text(json.dumps(rows, indent=1))
    print(table(rows))


if __name__ == "__main__":
    main()
