"""hpcopt driving a real Slurm cluster: the testbed (8 emulated nodes on this machine), the
adapter end to end under three policies, and every fault of the adapter on the real cluster.

One testbed serves the whole module, once per Slurm version (the ``cluster`` fixture of
tests/slurm_fixtures.py: 22.05 from the host's packages, 24.11 from a Debian 13 chroot). A
job with a one-minute limit that sleeps longer is released first thing and checked last
(killed at its limit, state TIMEOUT), so the minute Slurm needs passes while the other tests
run; it holds node-count 1, so the tests plan with the 7 others. Every test cancels its own
jobs. Across the module, Slurm's own log must show no job released twice.

Needs root and Slurm's daemons (Debian: slurm-wlm, munge); skipped with the reason where they
are missing, except in CI (CI=true), where that is a failure; 24.11 skips with the reason when
its chroot cannot be built.  The slow tier (``-m slow``): about a minute and a half of real
cluster time per version.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

import pytest

from hpcopt import load_trace, testbed
from hpcopt.slurm.adapter import Adapter
from hpcopt.slurm.state import Slurm, SlurmCommandError, parse_sinfo

from .slurm_fixtures import HPCOPT, Cluster

pytestmark = pytest.mark.slow


def _drive(c: Cluster, adapter: Adapter, ids: list[int], timeout: float = 40) -> list[dict]:
    """Cycle every 0.3 s until the jobs have all ended; the log records."""
    records = []
    end = time.monotonic() + timeout
    while True:
        records.append(adapter.cycle())
        jobs = c.jobs()
        if all(jobs[i]["job_state"] not in ("PENDING", "RUNNING", "COMPLETING") for i in ids):
            return records
        assert time.monotonic() < end, f"jobs not done in {timeout} s: {jobs}"
        time.sleep(0.3)


def cycles(log) -> list[dict]:
    """The cycle records of an adapter's log (the lines of other events aside: the ids a cycle
    is about to release, the exit)."""
    return [r for r in map(json.loads, log.read_text().splitlines()) if "event" not in r]


def _check_records(records: list[dict]) -> None:
    """No cycle released more nodes than were idle, nor one job twice."""
    seen: set[int] = set()
    for rec in records:
        if rec.get("ok"):
            assert rec["released_nodes"] <= rec["free_nodes"], rec
            assert not seen & set(rec["released"]), rec
            seen |= set(rec["released"])


# ------------------------------------------------------------------ end to end


#: the first cycle's releases for jobs A..D (nodes 3, 6, 2, 3; limits 2, 1, 1, 1 min) with
#: seven nodes free: FCFS+EASY starts A, reserves B and backfills C; the knapsack of most
#: nodes starts A and D; SJF's order is B, C, D, A and B alone fits
EXPECTED = {"fcfs": ("AC", "B", "C"), "knapsack": ("AD", None, ""), "sjf": ("B", "C", "")}


@pytest.mark.parametrize("policy", ["fcfs", "knapsack", "sjf"])
def test_policy_drives_the_cluster(cluster, policy):
    """Each policy's first decision follows from its rule; Slurm starts exactly what was
    released, after the release, and every job runs to completion."""
    c = cluster
    ids = dict(zip("ABCD", [c.submit("-N", str(n), "-t", str(t), sleep=s)
                            for n, t, s in ((3, 2, 3), (6, 1, 1), (2, 1, 1), (3, 1, 1))]))
    name = {v: k for k, v in ids.items()}
    time.sleep(0.5)
    jobs = c.jobs()
    assert all(jobs[i]["job_state"] == "PENDING" for i in ids.values())  # job_submit.lua
    assert {jobs[i]["state_reason"] for i in ids.values()} <= {"JobHeldUser", "JobHeldAdmin"}
    records = _drive(c, c.adapter(policy), list(ids.values()))
    _check_records(records)
    released = [j for r in records if r.get("ok") for j in r["released"]]
    assert sorted(released) == sorted(ids.values())
    jobs = c.jobs()
    assert all(jobs[i]["job_state"] == "COMPLETED" for i in ids.values())
    first = next(r for r in records if r.get("ok") and r["released"])
    started, reserved, backfilled = EXPECTED[policy]
    assert "".join(sorted(name[i] for i in first["released"])) == started
    if reserved is not None:
        assert name[first["reserved"]["id"]] == reserved
    assert "".join(name[i] for i in first["backfilled"]) == backfilled
    when = {j: r["time"] for r in records if r.get("ok") for j in r["released"]}
    assert all(jobs[i]["start_time"] >= int(when[i]) for i in ids.values())  # after release


def test_dras_policy_drives_the_cluster(cluster):
    """A learned one-pick policy (DRAS-PG, bundled checkpoint) through the same pass."""
    pytest.importorskip("torch")
    c = cluster
    ids = [c.submit("-N", str(n), "-t", "1", sleep=1) for n in (3, 2, 6)]
    records = _drive(c, c.adapter("dras-pg"), ids)
    _check_records(records)
    assert sorted(j for r in records if r.get("ok") for j in r["released"]) == sorted(ids)


# ------------------------------------------------------------------ faults


def test_cancel_between_read_and_release(cluster):
    """The job is cancelled after the read, before its release: logged, not a crash; the
    next cycle has nothing to release and the other job went out."""
    c = cluster
    a, b = c.submit("-N", "1", sleep=1), c.submit("-N", "1", sleep=1)
    class CancelFirst(Slurm):  # cancels a after the re-read, at its first write (the mark)
        def update(self, key, **fields):
            if str(key) == str(a):
                c.run("scancel", str(a))
                c.wait(lambda: c.state(a) == "CANCELLED", 10)
            return super().update(key, **fields)

    rec = c.adapter(slurm=CancelFirst(env=c.env, timeout=5, retries=1)).cycle()
    assert rec["ok"] and rec["released"] == [b]
    assert [f["id"] for f in rec["release_failed"]] == [a]
    assert "Job is no longer pending execution" in rec["release_failed"][0]["error"] or \
        "Invalid job id" in rec["release_failed"][0]["error"] or \
        "exit" in rec["release_failed"][0]["error"]
    again = c.adapter().cycle()
    assert again["ok"] and a not in again["released"] and b not in again["released"]
    c.cancel([b])


def test_drained_and_down_nodes_are_not_used(cluster):
    """Five nodes drained and one down; n1 runs the time-limit job, so n8 alone is idle: a
    1-node job is released, the 2-node job behind it stays held (reserved); once the nodes
    return it is released."""
    c = cluster
    c.run("scontrol", "update", "nodename=n2,n3,n4,n5,n6", "state=drain", "reason=test")
    c.run("scontrol", "update", "nodename=n7", "state=down", "reason=test")
    try:
        one = c.submit("-N", "1", "-t", "1", sleep=1)
        two = c.submit("-N", "2", "-t", "1", sleep=1)
        rec = c.adapter().cycle()
        idle = [n.name for n in parse_sinfo(json.loads(c.run("sinfo", "--json")))
                if n.state == "idle" and not n.flags and "batch" in n.partitions]
        assert rec["free_nodes"] == 1 and len(idle) <= 1
        assert rec["released"] == [one] and rec["reserved"]["id"] == two
        note = next(n for n in rec["notes"] if n.startswith("unavailable nodes: "))
        assert re.findall(r"(n\d) \(", note) == ["n2", "n3", "n4", "n5", "n6", "n7"], note
        assert "n7 (down" in note and "n2 (idle+drain" in note
        assert c.jobs()[two]["priority"] == 0
    finally:
        c.run("scontrol", "update", "nodename=n2,n3,n4,n5,n6,n7", "state=resume")
    c.wait(lambda: two in c.adapter().cycle()["released"], 10)
    c.wait(lambda: c.state(two) == "COMPLETED" and c.state(one) == "COMPLETED", 15)


def test_failing_and_hanging_commands(cluster, tmp_path):
    """squeue fails twice (then works): the read's retries absorb it; sinfo hangs: the read
    gives up after its time limit and tries, the cycle is skipped with the error logged,
    and the adapter goes on."""
    c = cluster
    fake = tmp_path / "bin"
    fake.mkdir()
    count = tmp_path / "count"
    count.write_text("0")
    real_squeue = subprocess.run(["which", "squeue"], capture_output=True, text=True,
                                 env=c.env).stdout.strip()
    (fake / "squeue").write_text(
        f"#!/bin/sh\nn=$(cat {count}); echo $((n+1)) > {count}\n"
        f"if [ $n -lt 2 ]; then echo 'squeue: error: injected' >&2; exit 1; fi\n"
        f'exec {real_squeue} "$@"\n')
    (fake / "squeue").chmod(0o755)
    env = {**c.env, "PATH": f"{fake}:{c.env['PATH']}"}
    job = c.submit("-N", "1", sleep=1)
    rec = c.adapter(slurm=Slurm(env=env, timeout=5, retries=2, backoff=0.1)).cycle()
    assert rec["ok"] and rec["released"] == [job]
    assert len(rec["errors"]) == 2 and "injected" in rec["errors"][0]
    (fake / "sinfo").write_text("#!/bin/sh\nexec sleep 30\n")
    (fake / "sinfo").chmod(0o755)
    t0 = time.monotonic()
    rec = c.adapter(slurm=Slurm(env=env, timeout=0.5, retries=1, backoff=0.1)).cycle()
    assert not rec["ok"] and "no answer in 0.5 s" in rec["error"]
    assert time.monotonic() - t0 < 5
    c.cancel([job])


def test_controller_briefly_unreachable(cluster, tmp_path):
    """slurmctld stops (SIGTERM by its pid file) under the running adapter and comes back a
    second later: the adapter logs the failed cycles, keeps going and then releases a job."""
    c = cluster
    log = tmp_path / "cycles.jsonl"
    proc = c.cli("run", "--policy", "fcfs", "--interval", "0.3", "--timeout", "3",
                 "--retries", "0", "--log", str(log))

    def records():
        return cycles(log) if log.exists() else []

    try:
        c.wait(lambda: records(), 30)  # the adapter runs
        os.kill(testbed.pids(c.dir)["slurmctld"], signal.SIGTERM)
        c.wait(lambda: "slurmctld" not in testbed.pids(c.dir), 10)
        c.wait(lambda: not records()[-1]["ok"], 10)
        time.sleep(1)
        subprocess.run([*testbed.daemon(c.dir, "slurmctld"), "-f", str(c.dir / "slurm.conf")],
                       env=c.env, check=True)
        c.wait(lambda: c.run("squeue", check=False), 10)
        job = c.submit("-N", "1", "-t", "1", sleep=1)
        c.wait(lambda: any(r.get("released") == [job] for r in records()), 30)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(10)
    assert proc.returncode == 130
    failed = [r for r in records() if not r["ok"]]
    # slurmctld may go between the cycle's two reads, so either read can be the one that failed
    assert failed and all(r["error"].startswith(("squeue", "sinfo")) for r in failed)
    _check_records(records())
    c.wait(lambda: c.state(job) == "COMPLETED", 20)


def test_kill_and_restart_the_adapter(cluster, tmp_path):
    """The adapter is killed (SIGKILL) in the middle of a workload and started again: it
    reads its state from Slurm; every job runs once and is released once."""
    c = cluster
    ids = [c.submit("-N", str(n), "-t", "1", sleep=2) for n in (4, 4, 3, 3)]
    log = tmp_path / "a.jsonl"
    proc = c.cli("run", "--policy", "fcfs", "--interval", "0.3", "--log", str(log))
    c.wait(lambda: any(c.state(i) == "RUNNING" for i in ids), 15)
    proc.kill()
    proc.wait(10)
    proc = c.cli("run", "--policy", "fcfs", "--interval", "0.3", "--log", str(log))
    try:
        c.wait(lambda: all(c.state(i) == "COMPLETED" for i in ids), 40)
    finally:
        proc.terminate()
        proc.wait(10)
    assert proc.returncode == 143
    records = cycles(log)
    _check_records(records)
    released = [j for r in records if r.get("ok") for j in r["released"]]
    assert sorted(released) == sorted(ids)


def test_signals_leave_held_jobs_held_or_release_on_exit(cluster):
    """SIGINT: exit 130 and the job that did not fit stays held; SIGTERM with
    --release-on-exit: exit 143 and it is handed to Slurm's scheduler."""
    c = cluster
    blocker = c.submit("-N", "7", "-t", "1", sleep=30)
    waiting = c.submit("-N", "7", "-t", "1", sleep=1)
    proc = c.cli("run", "--policy", "fcfs", "--interval", "0.3")
    c.wait(lambda: c.state(blocker) == "RUNNING", 15)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == 130 and "interrupted by SIGINT" in err
    assert c.jobs()[waiting]["priority"] == 0 and c.state(waiting) == "PENDING"
    proc = c.cli("run", "--policy", "fcfs", "--interval", "0.3", "--release-on-exit")
    time.sleep(1.5)
    assert c.jobs()[waiting]["priority"] == 0
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 143 and "interrupted by SIGTERM" in err
    assert "released 1 held job(s)" in out
    assert c.jobs()[waiting]["priority"] > 0 and c.state(waiting) == "PENDING"
    c.cancel([blocker, waiting])


def test_once_dry_run_and_log(cluster, tmp_path):
    """--once --dry-run prints the decision and releases nothing; --once releases; each
    cycle is one JSON line in --log."""
    c = cluster
    job = c.submit("-N", "2", "-t", "1", sleep=1)
    log = tmp_path / "log.jsonl"
    p = subprocess.run([*HPCOPT, "slurm", "run", "--policy", "knapsack", "--once",
                        "--dry-run", "--log", str(log)], env=c.env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert f"would release {job}" in p.stdout
    assert c.jobs()[job]["priority"] == 0
    p = subprocess.run([*HPCOPT, "slurm", "run", "--policy", "knapsack", "--once", "--log",
                        str(log)], env=c.env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and f"released {job}" in p.stdout
    recs = cycles(log)
    assert [r["dry_run"] for r in recs] == [True, False]
    for key in ("time", "pending", "running", "released", "reserved", "decide_s", "read_s"):
        assert key in recs[1]
    assert recs[1]["released"] == [job] and recs[1]["slurm"].startswith(c.version)
    c.wait(lambda: c.state(job) == "COMPLETED", 20)


def test_once_without_a_controller_fails_cleanly(cluster, tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text((cluster.dir / "slurm.conf").read_text().replace(
        "SlurmctldPort=", "SlurmctldPort=1").replace("\nSlurmdPort=", "\nSlurmdPort=1"))
    p = subprocess.run([*HPCOPT, "slurm", "run", "--policy", "fcfs", "--once", "--retries",
                        "0"], env={**cluster.env, "SLURM_CONF": str(conf)},
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "cannot read Slurm" in p.stdout
    assert "Traceback" not in p.stderr


# ------------------------------------------------------------------ last: time limit


def test_time_limit_kill_and_no_double_release(cluster):
    """The job released first thing (one-minute limit, sleeps five minutes) was killed at
    its limit; the jobcomp log says so; and no job was ever released twice."""
    c = cluster
    jid = c.timeout_job
    c.wait(lambda: c.state(jid) not in ("RUNNING", "COMPLETING"), 90, step=1)
    job = c.jobs()[jid]
    assert job["job_state"] == "TIMEOUT"
    # Slurm checks limits every ~30 s (and slurmctld was down a second in a test above)
    assert 60 <= job["end_time"] - job["start_time"] <= 110
    comp = (c.dir / "log" / "jobcomp.txt").read_text()
    assert re.search(rf"JobId={jid} .*JobState=TIMEOUT", comp)
    # the cluster's own completion log is a trace: the jobs cancelled before they started
    # (the cancel test's, the signal test's waiting one) are reported, the timed-out one ran
    # its minute
    trace = load_trace(c.dir / "log" / "jobcomp.txt")
    assert trace.report.fmt == "jobcomp" and trace.report.kept >= 20
    cancelled = [n for n in trace.report.notes if "cancelled before start" in n]
    assert cancelled and int(cancelled[0].split()[0]) >= 2, trace.report.notes
    assert trace.report.dropped["runtime_unknown"] == int(cancelled[0].split()[0])
    timed = next(j for j in trace.jobs if j.id == jid)
    assert timed.walltime == 60 and timed.runtime == 60  # capped at its limit
    rel = c.releases()
    assert len(rel) == len(set(rel)), rel
    with pytest.raises(SlurmCommandError):  # and a second release is refused by Slurm
        Slurm(env=c.env, retries=0).release(jid)
