"""Every job shape on the real testbed: what hpcopt releases is what Slurm allocates, the
reserved job keeps its shadow time, and nothing of the managed partition runs unreleased.

Arrays (task by task, throttled), node ranges, jobs of many tasks, hetjobs, a requeue by the
job's owner, an administrator's hold, a job of two partitions, Slurm's PLANNED nodes, two
adapters on one partition, and a job changed between the decision and its release.  Jobs are
submitted by an unprivileged user made here (useradd; removed at the end when made here),
who also tries to release them.  The adapter cycles every ``STEP`` seconds in this process.

Slow tier (``-m slow``), once per Slurm version (``tests/slurm_fixtures.py``): the ``cluster``
testbed (Slurm's FIFO scheduler) and one of this module's own under Slurm's backfill
scheduler (hetjobs need it; PLANNED nodes come from it).  About a minute of cluster time.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from hpcopt.slurm.lua import MARK
from hpcopt.slurm.state import Slurm, parse_sinfo

from .slurm_fixtures import (
    VERSIONS,
    Cluster,
    check_released_fit_bb,
    flat,
    started_testbed,
    unix_user,
)

pytestmark = pytest.mark.slow

USER = "hpcopt-shape-user"
STEP = 0.5  # seconds between the adapter's cycles here
ENDED = ("COMPLETED", "CANCELLED", "TIMEOUT", "FAILED", "NODE_FAIL")


@pytest.fixture(scope="module")
def user():
    """An unprivileged user (made here when missing, removed at the end)."""
    with unix_user(USER) as name:
        yield name


@pytest.fixture(scope="module")
def whole(cluster):
    """The shared testbed with all 8 nodes for this module: its time-limit job goes (once per
    Slurm version: this fixture follows ``cluster``'s version)."""
    if cluster.timeout_job is not None:
        cluster.cancel([cluster.timeout_job])
        cluster.timeout_job = None
    return cluster


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def backfill(request):
    """A testbed of 8 nodes under Slurm's backfill scheduler."""
    with started_testbed(request.param, "backfill",
                         scheduler="backfill") as c:
        yield c


def as_user(c: Cluster, *cmd: str) -> subprocess.CompletedProcess:
    env = [f"{k}={c.env[k]}" for k in ("SLURM_CONF", "PATH") if k in c.env]
    return subprocess.run(["runuser", "-u", USER, "--", "env", *env, *cmd],
                          capture_output=True, text=True, timeout=30, cwd="/tmp")


def user_submit(c: Cluster, *args: str, sleep: float = 300) -> int:
    p = as_user(c, "sbatch", "--parsable", "-D", "/tmp", "-o", "/dev/null", *args,
                "--wrap", f"sleep {sleep}")
    assert p.returncode == 0, p.stderr
    return int(p.stdout.strip().split(";")[0])


def key(j: dict) -> str:
    """What the adapter logs for a job record: its array task, its hetjob's leader, its id."""
    if j.get("array_task_id") is not None and j.get("array_job_id"):
        return f"{j['array_job_id']}_{j['array_task_id']}"
    if j.get("het_job_id"):
        return str(j["het_job_id"])
    return str(j["job_id"])


def drive(c: Cluster, adapter, until, timeout: float = 40, records: list | None = None):
    """Cycle every ``STEP`` s until ``until()``; the cycles' records (appended to
    ``records`` when given)."""
    records = [] if records is None else records
    end = time.monotonic() + timeout
    while True:
        records.append(adapter.cycle())
        assert records[-1]["ok"], (records[-1].get("error"), records[-1].get("errors"))
        if until():
            return records
        assert time.monotonic() < end, f"not reached in {timeout} s: {records[-1]}"
        time.sleep(STEP)


def released(records: list[dict]) -> dict[str, float]:
    """Each released key and when its cycle began."""
    return {str(k): r["time"] for r in records if r.get("ok") for k in r["released"]}


def check_nothing_unreleased(c: Cluster, records: list[dict], ids) -> None:
    """Every job of ``ids`` (array tasks and hetjob components by their array or leader) that
    started was released by the adapter before it started, and once; no cycle released more
    nodes than were idle."""
    when = released(records)
    ids = {int(i) for i in ids}
    seen = []
    for j in c.jobs().values():
        if not ({j["job_id"], j.get("array_job_id"), j.get("het_job_id")} & ids):
            continue
        if j["job_state"] in ("RUNNING", "COMPLETING") or \
                (j["job_state"] in ENDED and (j.get("start_time") or 0) > 0):
            k = key(j)
            assert k in when, f"job {k} started without a release: {j['job_state']}"
            assert j["start_time"] >= int(when[k]), (k, j["start_time"], when[k])
            seen.append(k)
    for r in records:
        if r.get("ok"):
            assert r["released_nodes"] <= r["free_nodes"], r
    all_released = [str(k) for r in records if r.get("ok") for k in r["released"]]
    assert len(all_released) == len(set(all_released)), all_released


def allocated(c: Cluster, jid: int) -> int:
    return int(c.jobs()[jid]["node_count"])


def cleanup(c: Cluster, ids) -> None:
    c.run("scancel", *map(str, ids), check=False)
    c.wait(lambda: all(j["job_state"] in ENDED for j in c.jobs().values()
                       if {j["job_id"], j.get("array_job_id"), j.get("het_job_id")}
                       & set(ids)), 20)


# ------------------------------------------------------------------ the EASY promise


def test_reserved_job_keeps_its_shadow_behind_arrays_ranges_and_users(whole, user):
    """A six-node job runs; an eight-node job is reserved at its shadow time; behind it the
    user's 12-task array, a 1-8 node range and an eight-task job (two nodes pinned) wait,
    and the user tries to release them.  The reserved job starts within one cycle of the
    nodes it waits for, before its shadow; the array goes task by task, each task on one
    node; the range gets at most its maximum; nothing runs that hpcopt did not release."""
    c = whole
    a = c.submit("-N", "6", "-t", "1", sleep=8)
    r = c.submit("-N", "8", "-t", "1", sleep=1)
    arr = user_submit(c, "--array=1-12", "-N", "1", "-t", "2")
    rng = user_submit(c, "-N", "1-8", "-t", "2")
    tasks = user_submit(c, "-n", "8", "-t", "2")  # 4 CPUs a node: Slurm could spread it
    for jid in (arr, rng, tasks):
        p = as_user(c, "scontrol", "release", str(jid))
        assert p.returncode != 0, f"the user released job {jid}: {p.stdout}{p.stderr}"
    ids = [a, r, arr, rng, tasks]
    adapter = c.adapter("fcfs")
    try:
        records = drive(c, adapter, lambda: c.state(a) in ENDED)
        first = records[0]
        assert first["released"] == [a] and first["reserved"]["id"] == r
        shadow = first["reserved"]["shadow"]
        drive(c, adapter, lambda: c.state(r) in ("RUNNING",) + ENDED, 10, records)
        jobs = c.jobs()
        a_end, r_start = jobs[a]["end_time"], jobs[r]["start_time"]
        assert r_start <= shadow + STEP + 1, (r_start, shadow)
        assert r_start - a_end <= STEP + 3, (a_end, r_start)  # Slurm's records: whole seconds
        drive(c, adapter, lambda: any(str(k).startswith(f"{arr}_") for k in released(records)),
              20, records)
        records.append(adapter.cycle())
        c.wait(lambda: any(j.get("array_job_id") == arr and j["job_state"] == "RUNNING"
                           for j in c.jobs().values()), 10)
        check_nothing_unreleased(c, records, ids)
        when = released(records)
        running = [j for j in c.jobs().values() if j.get("array_job_id") == arr
                   and j["job_state"] == "RUNNING"]
        assert running and all(key(j) in when and j["node_count"] == 1 for j in running)
        if str(rng) in when:
            assert allocated(c, rng) <= 8
        if str(tasks) in when:
            assert allocated(c, tasks) == 2
            assert c.jobs()[tasks]["max_nodes"] == 2  # pinned before its release
    finally:
        cleanup(c, ids)


def test_array_throttle_and_tasks_one_by_one(whole, user):
    """``--array=1-5%2`` of two-node tasks: never more than two run, each task is released
    once and alone, all five complete."""
    c = whole
    arr = user_submit(c, "--array=1-5%2", "-N", "2", "-t", "1", sleep=2)
    adapter = c.adapter("fcfs")
    most = 0

    def done():
        nonlocal most
        tasks = [j for j in c.jobs().values() if j.get("array_job_id") == arr]
        most = max(most, sum(j["job_state"] in ("RUNNING", "COMPLETING") for j in tasks))
        return len(tasks) == 5 and all(j["job_state"] == "COMPLETED" for j in tasks)

    try:
        records = drive(c, adapter, done, 60)
        assert 1 <= most <= 2
        keys = [str(k) for rec in records for k in rec["released"]]
        assert sorted(keys) == [f"{arr}_{t}" for t in range(1, 6)]
        assert max(len(rec["released"]) for rec in records) <= 2
        check_nothing_unreleased(c, records, [arr])
    finally:
        cleanup(c, [arr])


# ------------------------------------------------------------------ holds and marks


def test_requeue_by_the_owner_is_held_again(whole, user):
    """With ``--allow-requeue`` (by default jobs are released not requeueable) the owner
    requeues a running job: it comes back unheld (Slurm would start it after its begin time);
    the next cycle holds it again and marks it, it stays held until that begin time, and a
    later release marks it with its restart count."""
    c = whole
    jid = user_submit(c, "-N", "1", "-t", "1")
    adapter = c.adapter("fcfs", allow_requeue=True)
    try:
        drive(c, adapter, lambda: c.state(jid) == "RUNNING", 15)
        p = as_user(c, "scontrol", "requeue", str(jid))
        assert p.returncode == 0, p.stderr
        c.wait(lambda: c.state(jid) == "PENDING", 15)
        j = c.jobs()[jid]
        assert j["priority"] != 0 and j["restart_cnt"] == 1  # unheld: Slurm's to start
        rec = adapter.cycle()
        assert rec["reheld"] == [jid], rec
        j = c.jobs()[jid]
        assert j["priority"] == 0 and j["state_reason"] == "JobHeldUser"
        assert j["admin_comment"] == "hpcopt:held:1"
        rec = adapter.cycle()  # Slurm's requeue delay: a begin time ahead, so not released
        assert rec["released"] == [] and rec["reheld"] == []
        assert any(f"job {jid} waits for its begin time" in n for n in rec["notes"]), rec
        c.run("scontrol", "update", f"jobid={jid}", "StartTime=now")  # (the delay passed)
        rec = adapter.cycle()
        assert rec["released"] == [jid] and rec["reheld"] == []
        assert c.jobs()[jid]["admin_comment"] == "hpcopt:released:1"
        assert adapter.cycle()["reheld"] == []  # released by hpcopt: not a requeue
    finally:
        cleanup(c, [jid])


def test_admin_hold_and_unmarked_jobs_stay_held(whole, user):
    """An administrator's hold (JobHeldAdmin) and a held job without the mark are left
    alone, with a note; the user cannot lift the administrator's hold."""
    c = whole
    held = user_submit(c, "-N", "1", "-t", "1")
    unmarked = c.submit("-N", "1", "-t", "1")
    c.run("scontrol", "hold", str(held))
    c.run("scontrol", "update", f"JobId={unmarked}", "AdminComment=site-note")
    try:
        assert as_user(c, "scontrol", "release", str(held)).returncode != 0
        rec = c.adapter("fcfs").cycle()
        assert rec["released"] == [] and rec["pending"] == 0
        text = " | ".join(rec["notes"])
        assert f"job {held} is held by the administrator: left held" in text
        assert f"job {unmarked} is not marked by the submit script" in text
        jobs = c.jobs()
        assert jobs[held]["state_reason"] == "JobHeldAdmin" and jobs[unmarked]["priority"] == 0
    finally:
        cleanup(c, [held, unmarked])


def test_a_job_of_two_partitions_runs_in_the_managed_one(whole, user):
    """The submit script narrows ``-p batch,debug`` to batch; a held job an administrator
    put into both is pinned to batch before its release."""
    c = whole
    mine = user_submit(c, "-p", "batch,debug", "-N", "1", "-t", "1", sleep=1)
    both = c.submit("-N", "1", "-t", "1", sleep=1)
    adapter = c.adapter("fcfs")
    try:
        assert c.jobs()[mine]["partition"] == "batch"
        # slurmctld may answer a fresh job's update with EAGAIN (24.11, busy): try again
        c.wait(lambda: subprocess.run(["scontrol", "update", f"JobId={both}",
                                       "Partition=batch,debug"], env=c.env,
                                      capture_output=True).returncode == 0, 10, step=0.5)
        assert c.jobs()[both]["partition"] == "batch,debug"
        records = drive(c, adapter, lambda: all(c.state(j) in ("RUNNING",) + ENDED
                                                for j in (mine, both)), 15)
        assert sorted(str(k) for k in released(records)) == sorted([str(mine), str(both)])
        assert c.jobs()[both]["partition"] == "batch"
        check_nothing_unreleased(c, records, [mine, both])
    finally:
        cleanup(c, [mine, both])


def test_a_job_changed_between_decision_and_release_goes_back(whole):
    """The job's limit is raised (by the administrator: users cannot) after the cycle read
    it: the re-read sees it, it is not released; the next cycle decides with the new limit."""
    c = whole
    jid = c.submit("-N", "1", "-t", "1", sleep=1)

    class ChangeOnReread(Slurm):
        reads = 0

        def jobs(self, ids=None):
            self.reads += 1
            if self.reads == 2:  # the re-read of the picked jobs
                c.run("scontrol", "update", f"JobId={jid}", "TimeLimit=30")
            return super().jobs(ids)

    try:
        rec = c.adapter("fcfs", slurm=ChangeOnReread(env=c.env, timeout=5)).cycle()
        assert rec["released"] == [] and rec["changed"] == [jid], rec
        assert c.jobs()[jid]["priority"] == 0
        rec = c.adapter("fcfs").cycle()
        assert rec["released"] == [jid]
        assert c.jobs()[jid]["time_limit"] == 30
    finally:
        cleanup(c, [jid])


def test_two_adapters_on_one_partition(whole):
    """A second adapter for the partition refuses to start, naming the first (pid, host);
    after the first is killed (SIGKILL) a new one starts."""
    c = whole
    first = c.cli("run", "--policy", "fcfs", "--interval", "0.5")
    third = None
    try:
        time.sleep(2)
        assert first.poll() is None
        second = c.cli("run", "--policy", "sjf", "--interval", "0.5")
        out, err = second.communicate(timeout=20)
        assert second.returncode == 75, (out, err)  # a fault: the unit retries it
        line = err.strip()
        assert "\n" not in line and f"pid {first.pid} on host" in line and "Traceback" not in line
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        third = c.cli("run", "--policy", "fcfs", "--interval", "0.5")
        time.sleep(2)
        assert third.poll() is None, third.communicate()
    finally:
        for p in (first, third):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.communicate(timeout=20)


# ------------------------------------------------------------------ Slurm's backfill scheduler


def test_hetjob_is_the_sum_of_its_components_and_released_once(backfill):
    """A hetjob of 2 + 1 nodes waits while two nodes are free and starts, released once at
    its leader, when three are; each component gets its own size."""
    c = backfill
    block = c.submit("-N", "6", "-t", "1", sleep=6)
    p = subprocess.run(["sbatch", "--parsable", "-o", "/dev/null", "-t", "1", "-N", "2",
                        "--wrap", "sleep 2", ":", "-N", "1", "--wrap", "sleep 2"],
                       env=c.env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    het = int(p.stdout.strip().split(";")[0].split("+")[0])
    adapter = c.adapter("fcfs")
    try:
        rec = adapter.cycle()
        assert rec["released"] == [block] and rec["reserved"]["id"] == het, rec
        records = [rec] + drive(c, adapter, lambda: c.state(het) in ("RUNNING",) + ENDED, 30)
        assert [str(k) for k in released(records)] == [str(block), str(het)]
        parts = sorted((j for j in c.jobs().values() if j.get("het_job_id") == het),
                       key=lambda j: j["het_job_offset"])
        assert [j["node_count"] for j in parts] == [2, 1]
        log = (c.dir / "log" / "slurmctld.log").read_text(errors="replace")
        for part in parts:  # one release of the leader releases each component, once
            assert log.count(f"release hold on JobId={het}+{part['het_job_offset']}(") == 1
        check_nothing_unreleased(c, records, [block, het])
    finally:
        cleanup(c, [block, het])


def test_planned_nodes_are_idle_nodes(backfill):
    """Slurm's backfill scheduler plans idle nodes for a waiting job of another partition
    (flag PLANNED): the adapter reads them as idle, not as unavailable."""
    c = backfill
    block = c.submit("-N", "4", "-t", "1", sleep=300)
    c.run("scontrol", "release", str(block))
    c.wait(lambda: c.state(block) == "RUNNING", 10)
    other = c.submit("-p", "debug", "-N", "8", "-t", "1", sleep=1)
    try:
        def planned():
            nodes = parse_sinfo(json.loads(c.run("sinfo", "--json")))
            return [n.name for n in nodes if "PLANNED" in n.flags]

        end = time.monotonic() + 15
        while not planned() and time.monotonic() < end:
            time.sleep(0.5)
        names = planned()
        if not names:
            pytest.skip(f"Slurm {c.version} marked no node PLANNED within 15 s")
        rec = c.adapter("fcfs").cycle()
        assert rec["free_nodes"] == 4, rec
        assert not any(n.startswith("unavailable nodes") for n in rec["notes"]), rec["notes"]
    finally:
        cleanup(c, [block, other])


def test_job_records_read_flat(whole):
    """The test helpers read both versions' records alike (a guard for this module)."""
    jid = whole.submit("-N", "1", "-t", "1")
    try:
        j = whole.jobs()[jid]
        assert j["admin_comment"] == MARK and flat(j)["job_state"] == "PENDING"
    finally:
        cleanup(whole, [jid])


# ------------------------------------------------------------------ the burst buffer


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def licensed(request):
    """A testbed of 8 nodes whose burst buffer is the license ``bb:100``."""
    with started_testbed(request.param, "licensed", licenses="bb:100") as c:
        yield c


@pytest.mark.parametrize("policy", ["bbsched", "fcfs"])
def test_released_jobs_fit_the_burst_buffer(licensed, policy):
    """Five held 2-node jobs asking bb 80/70/30/20/10 of a 100 license: no cycle releases more
    than is free, no released job waits with reason Licenses, all five run."""
    c = licensed
    ids = [c.submit("-N", "2", "-t", "1", "-L", f"bb:{bb}", sleep=2)
           for bb in (80, 70, 30, 20, 10)]
    adapter = c.adapter(policy, bb_license="bb")
    try:
        records = check_released_fit_bb(c, ids, "Licenses",
                                        lambda until: drive(c, adapter, until, 60))
        check_nothing_unreleased(c, records, ids)
    finally:
        cleanup(c, ids)
