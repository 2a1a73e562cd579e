"""The adapter's reading of Slurm's state, without a cluster: squeue/sinfo JSON records (as
Slurm 22.05 prints them) to the driver-pass state, and the command wrapper's retries."""

from __future__ import annotations

import io
import json
import subprocess
import time

import pytest

from hpcopt.domain import Job, System
from hpcopt.errors import OptionError
from hpcopt.policies import make_policy
from hpcopt.sim.decide import ClusterState, decide
from hpcopt.slurm.adapter import (
    FAR,
    Adapter,
    Settings,
    array_task_ids,
    cycle_state,
    parse_mark,
)
from hpcopt.slurm.lua import job_submit_lua
from hpcopt.slurm.state import (
    SQUEUE_FIELDS,
    Slurm,
    SlurmCommandError,
    Snapshot,
    parse_job,
    parse_license_totals,
    parse_licenses,
    parse_node,
    parse_squeue,
    parse_squeue_text,
)

NOW = 1_000_000.0


def job(jid, state="PENDING", priority=0, nodes=1, limit=1, start=0, names=(),
        partition="batch", submit=NOW - 100, reason=None, mark=None, **more):
    """A squeue --json record; a held job is marked by the submit script unless ``mark``
    says otherwise."""
    if reason is None:
        reason = "JobHeldUser" if state == "PENDING" and priority == 0 else "None"
    if mark is None:
        mark = "hpcopt:held" if state == "PENDING" and priority == 0 else "hpcopt:released:0"
    rec = {"job_id": jid, "job_state": state, "state_reason": reason, "priority": priority,
           "partition": partition, "submit_time": submit, "start_time": start,
           "time_limit": limit, "node_count": nodes, "admin_comment": mark, **more}
    if names:
        rec["job_resources"] = {"allocated_nodes": [{"nodename": n} for n in names]}
    return parse_job(rec)


def node(name, state="idle", flags=(), partitions=("batch",)):
    return parse_node({"name": name, "state": state, "state_flags": list(flags),
                       "partitions": list(partitions)})


def snapshot():
    nodes = [node("n1", "allocated"), node("n2", "allocated"), node("n3", "idle", ["DRAIN"]),
             node("n4", "down"), node("n5", "idle", ["COMPLETING"]), node("n6"), node("n7"),
             node("n8"), node("x1", partitions=("other",))]
    jobs = [job(5, "RUNNING", 4294901759, 2, 1, NOW - 10, ("n1", "n2")),
            job(6, "PENDING", 4294901759, 2, 3),  # released, not started yet
            job(7, nodes=1, limit=2), job(8, nodes=9), job(9, partition="other"),
            job(10, "COMPLETED", 1, 1, 1, NOW - 50, ("n6",)),
            job(11, nodes=3, limit=4294967294, submit=NOW - 50),
            job(12, "PENDING", 4294901759, 4, 1, reason="Dependency")]
    return Snapshot(NOW, tuple(jobs), tuple(nodes), 0.01)


def ids(jobs):
    return [(str(j.id), j.nodes) for j in jobs]


def test_cycle_state_sees_exactly_the_idle_nodes_as_free():
    s = cycle_state(snapshot(), "batch")
    c = s.cluster
    assert c.system.nodes == 8 and c.time == NOW
    assert sorted((str(j.id), j.nodes, end) for j, end in c.running) == [("5", 2, NOW + 50)]
    assert c.unavailable == 2 and c.completing == 1  # n3 drained, n4 down; n5 completing
    assert ids(c.starting) == [("6", 2)] and s.starting == ["6"] and s.n_running == 1
    # released, then made to wait (a dependency added): held again, not left for Slurm
    assert [j.id for j in s.rehold] == [12]
    assert [(str(j.id), j.nodes, j.walltime) for j in c.queue] == [
        ("7", 1, 120.0), ("8", 9, 60.0), ("11", 3, FAR)]
    assert "unavailable nodes: n3 (idle+drain),n4 (down)" in s.notes
    out = decide(c, make_policy("fcfs"))
    assert [(str(j.id), m) for j, m in out.started] == [("7", "ready")]  # the head fits
    assert [(str(j.id), why) for j, why in out.set_aside] == [("8", "asks 9 nodes, 6 available")]
    assert out.free == 1
    out = decide(c, make_policy("sjf"))
    assert [str(j.id) for j, _ in out.started] == ["7"]


def test_every_job_shape_is_sized_by_what_slurm_allocates():
    """Arrays task by task up to the throttle, a node range at its maximum, tasks without a
    maximum pinned to the minimum, a hetjob as the sum of its components; admin holds,
    unmarked jobs and unmet dependencies stay held; a requeued job is held again."""
    nodes = tuple(node(f"n{i}") for i in range(1, 9))
    jobs = (job(20, array_job_id=20, array_task_string="1-9:4,12%3", array_max_tasks=3),
            job(21, "RUNNING", 5, start=NOW - 5, names=("n1",), array_job_id=20,
                array_task_id=2),
            job(22, nodes=1, max_nodes=8), job(23, nodes=2, tasks=8),
            job(24, nodes=2, partition="batch,debug"),
            job(30, nodes=1, het_job_id=30, het_job_offset=0),
            job(31, nodes=2, limit=5, het_job_id=30, het_job_offset=1),
            job(40, reason="JobHeldAdmin"), job(41, mark=""),
            job(42, dependency="afterok:5(unfulfilled)"),
            job(43, "PENDING", 5, reason="BeginTime", mark="hpcopt:released:0", restart_cnt=1),
            job(44, "PENDING", 5, reason="BeginTime", mark="hpcopt:held:1", restart_cnt=1))
    s = cycle_state(Snapshot(NOW, jobs, nodes, 0.01), "batch")
    assert ids(s.cluster.queue) == [("20_1", 1), ("20_5", 1), ("22", 8), ("23", 2),
                                    ("24", 2), ("30", 3)]
    assert s.entries["23"].pins == {23: {"NumNodes": "2-2"}}
    assert s.entries["24"].pins == {24: {"Partition": "batch"}}
    assert s.entries["30"].job.walltime == 300.0 and s.entries["30"].key == "30"
    assert [j.id for j in s.rehold] == [43]
    assert s.starting == ["44"]  # an admin's release after a requeue and re-hold: not ours
    text = " | ".join(s.notes)
    for what in ("job 40 is held by the administrator", "job 41 is not marked",
                 "job 42 waits for a dependency"):
        assert what in text


def test_burst_buffer_from_a_license():
    """``bb`` license of 100 (60 used: 40 by a job on the partition's nodes, 20 elsewhere):
    the machine's burst buffer is 100 with 20 unavailable; each job asks its count; a job
    asking another license, or an unreadable one, stays held; the pass never releases more
    burst buffer than is free (bbsched: one rule, the driver's)."""
    nodes = tuple(node(f"n{i}") for i in range(1, 5)) + (node("n5", "allocated"),)
    jobs = (job(1, "RUNNING", 5, start=NOW - 5, names=("n5",), licenses="bb:40"),
            job(2, "RUNNING", 5, start=NOW - 5, names=("x9",), partition="other",
                licenses="bb:20"),
            job(3, licenses="bb:30"), job(4, licenses="bb:20"), job(5, licenses="bb*15"),
            job(6, licenses="bb:10,matlab:1"), job(7, licenses="bb:x"))
    s = cycle_state(Snapshot(NOW, jobs, nodes, 0.01, licenses={"bb": (100, 60)}),
                    Settings(bb_license="bb"))
    c = s.cluster
    assert c.system.bb == 100 and c.unavailable_bb == 20
    assert [(str(j.id), j.bb) for j, _ in c.running] == [("1", 40.0)]
    assert [(str(j.id), j.bb) for j in c.queue] == [("3", 30.0), ("4", 20.0), ("5", 15.0)]
    text = " | ".join(s.notes)
    assert "job 6 asks licenses matlab, which hpcopt does not schedule" in text
    assert "job 7 asks licenses 'bb:x', which cannot be read" in text
    for policy in ("fcfs", "bbsched", "constrained-bb"):
        out = decide(c, make_policy(policy))
        assert sum(j.bb for j, _ in out.started) <= 40, policy  # 100 - 40 - 20 free
    assert [str(j.id) for j, _ in decide(c, make_policy("fcfs")).started] == ["3"]
    # without --bb-license a job asking any license is left held
    s = cycle_state(Snapshot(NOW, jobs, nodes, 0.01), "batch")
    assert [str(j.id) for j in s.cluster.queue] == []
    assert "(--bb-license names the burst buffer's)" in " ".join(s.notes)
    with pytest.raises(Exception, match="license 'bb' is not configured"):
        cycle_state(Snapshot(NOW, jobs, nodes, 0.01, licenses={}), Settings(bb_license="bb"))


def test_reads_that_disagree_on_the_burst_buffer_never_break_the_decision():
    """The license read counts a job's 70 GB that the jobs' read still shows as released
    and not started: it is counted once, and the pass decides (nothing fits)."""
    nodes = tuple(node(f"n{i}") for i in range(1, 5)) + (node("n5", "allocated"),)
    jobs = (job(1, "RUNNING", 5, start=NOW - 5, names=("n5",), licenses="bb:30"),
            job(2, "PENDING", 5, reason="None", licenses="bb:70"), job(3, licenses="bb:10"))
    s = cycle_state(Snapshot(NOW, jobs, nodes, 0.01, licenses={"bb": (100, 100)}),
                    Settings(bb_license="bb"))
    c = s.cluster
    assert c.unavailable_bb + sum(j.bb for j, _ in c.running) + sum(
        j.bb for j in c.starting) <= 100
    assert decide(c, make_policy("fcfs")).started == ()


def squeue_text(jobs: list[dict]) -> str:
    """What ``squeue -O SQUEUE_FORMAT`` prints for ``jobs`` (``squeue --json`` records of a
    single job each, the fields these tests set)."""
    def row(j: dict) -> str:
        nodes = [n["nodename"] for n in (j.get("job_resources") or {}).get(
            "allocated_nodes", [])]
        values = {"JobID": j["job_id"], "State": j["job_state"], "Reason": j["state_reason"],
                  "PriorityLong": j["priority"], "Partition": j["partition"],
                  "SubmitTime": int(j["submit_time"]),
                  "StartTime": int(j["start_time"]) or "N/A",
                  "TimeLimit": f"{j['time_limit']}:00", "NumNodes": j["node_count"],
                  "NodeList": ",".join(nodes), "Admin_Comment": j["admin_comment"],
                  "NumTasks": 1}
        return "\x1f".join(str(values.get(f, "N/A")) for f in SQUEUE_FIELDS) + "\x1e\n"

    return "".join(map(row, jobs))


def test_the_starvation_bound_counts_carry_from_cycle_to_cycle():
    """Two cycles over the same state (a fake Slurm, dry runs): the job the knapsack passes
    over (the 1-node job, for the 2-node one that fills the 2 free nodes) is counted, and the
    second cycle decides with that count."""
    from hpcopt.slurm.adapter import Adapter

    squeue = {"jobs": [
        {"job_id": 1, "job_state": "RUNNING", "state_reason": "None", "priority": 5,
         "partition": "batch", "submit_time": NOW - 50, "start_time": NOW - 10,
         "time_limit": 10, "node_count": 3, "admin_comment": "hpcopt:released:0",
         "job_resources": {"allocated_nodes": [{"nodename": f"n{i}"} for i in (1, 2, 3)]}},
        {"job_id": 2, "job_state": "PENDING", "state_reason": "JobHeldUser", "priority": 0,
         "partition": "batch", "submit_time": NOW - 40, "start_time": 0, "time_limit": 5,
         "node_count": 1, "admin_comment": "hpcopt:held"},
        {"job_id": 3, "job_state": "PENDING", "state_reason": "JobHeldUser", "priority": 0,
         "partition": "batch", "submit_time": NOW - 30, "start_time": 0, "time_limit": 1,
         "node_count": 2, "admin_comment": "hpcopt:held"}]}
    sinfo = {"nodes": [{"name": f"n{i}", "state": "allocated" if i <= 3 else "idle",
                        "state_flags": [], "partitions": ["batch"]} for i in range(1, 6)]}

    def run(cmd, **kw):
        out = squeue_text(squeue["jobs"]) if cmd[0] == "squeue" else json.dumps(sinfo)
        return subprocess.CompletedProcess(cmd, 0, out, "")

    adapter = Adapter(make_policy("knapsack"), Settings(dry_run=True), slurm=Slurm(run=run),
                      say=lambda s: None, starvation_bound=5)
    first = adapter.cycle()
    assert first.released == [3] and adapter._passed == {"2": 1}
    adapter.cycle()
    assert adapter._passed == {"2": 2}


def test_license_text():
    assert parse_license_totals("LicenseName=bb Total=100 Used=60 Free=40 Reserved=0 Remote=no\n"
                          "LicenseName=m Total=2 Used=0 Free=2 Reserved=0 Remote=no\n") == {
        "bb": (100, 60), "m": (2, 0)}
    assert parse_license_totals("No licenses configured in Slurm.\n") == {}
    with pytest.raises(SlurmCommandError, match="unreadable line"):
        parse_license_totals("LicenseName=bb Total=x\n")
    assert parse_licenses("") == {} and parse_licenses("bb:60,m") == {"bb": 60, "m": 1}
    assert parse_licenses("bb*3,bb:2") == {"bb": 5} and parse_licenses("bb@db:4") == {"bb": 4}
    assert parse_licenses("bb:") is None and parse_licenses("bb:-1") is None


def test_array_task_text_and_marks():
    assert array_task_ids("1-9:4,12%3") == [1, 5, 9, 12]
    assert array_task_ids("[3-5]") == [3, 4, 5]
    for bad in ("", "a-b", "5-1", "1-9:0", "0-999999"):
        assert array_task_ids(bad) is None, bad
    assert parse_mark("hpcopt:held") == ("held", 0)
    assert parse_mark("hpcopt:released:3") == ("released", 3)
    for other in ("", "hpcopt", "hpcopt:other:1", "hpcopt:held:x", "site note"):
        assert parse_mark(other) is None


def test_unavailable_nodes_are_nodes_not_jobs():
    """Two of four nodes down: a three-node job is set aside (it cannot fit what is left),
    a two-node job starts; no job stands for the down nodes."""
    c = ClusterState(0.0, System(4), (Job(1, 0.0, 9.0, 9.0, 3), Job(2, 0.0, 9.0, 9.0, 2)),
                     unavailable=2)
    out = decide(c, make_policy("fcfs"))
    assert [j.id for j, _ in out.started] == [2] and out.free == 2
    assert [(j.id, why) for j, why in out.set_aside] == [(1, "asks 3 nodes, 2 available")]
    with pytest.raises(Exception, match="unavailable and 1 completing nodes, but"):
        decide(ClusterState(0.0, System(4), unavailable=4, completing=1), make_policy("fcfs"))


def test_unknown_partition_is_an_error():
    with pytest.raises(Exception, match="partition 'gpu' has no nodes"):
        cycle_state(snapshot(), "gpu")


def test_parse_limits_and_flags():
    assert job(1, limit=4294967294).limit is None and job(1, limit=3).limit == 180.0
    assert job(1, priority=0).held and not job(1, priority=5).held
    assert not job(1, "RUNNING", 0).held
    assert node("a", "idle").idle and not node("a", "idle", ["DRAIN"]).usable
    assert node("a", "mixed").usable and not node("a", "mixed").idle
    assert not node("a", "idle", ["COMPLETING"]).idle


def test_command_retries_and_time_limit():
    calls, heard = [], []

    def flaky(cmd, **kw):
        calls.append(cmd)
        if len(calls) < 3:
            return subprocess.CompletedProcess(cmd, 1, "", "slurm_load_jobs error: "
                                               "Unable to contact slurm controller")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    s = Slurm(run=flaky, retries=2, backoff=0.01, on_error=heard.append)
    assert s.jobs() == ()
    assert len(calls) == 3 and "Unable to contact" in heard[0] and "(try 1 of 3)" in heard[0]

    def hangs(cmd, **kw):
        raise subprocess.TimeoutExpired(cmd, kw["timeout"])

    with pytest.raises(SlurmCommandError, match=r"^sinfo: no answer in 0.2 s$"):
        Slurm(run=hangs, timeout=0.2, retries=1, backoff=0.01).nodes()
    released = []

    def once(cmd, **kw):
        released.append(cmd)
        return subprocess.CompletedProcess(cmd, 1, "", "Job is no longer pending execution")

    with pytest.raises(SlurmCommandError, match="no longer pending"):
        Slurm(run=once, retries=5).release(7)
    assert released == [["scontrol", "release", "7"]]  # a release is never retried


def test_an_error_in_the_answer_is_a_failed_try_and_a_missing_conf_is_named():
    """slurmctld down: squeue --json exits 0 with the error in its document; that try fails,
    is heard, and the next try reads.  SLURM_CONF naming no file fails at once, untried; a
    tool that hangs says what it printed."""
    calls, heard = [], []
    down = json.dumps({"errors": [{"description": "Unable to contact slurm controller",
                                   "error_number": 1007}], "nodes": []})

    def flaky(cmd, **kw):
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, down if len(calls) < 2 else '{"nodes": []}',
                                           "")

    assert Slurm(run=flaky, retries=2, backoff=0.01, on_error=heard.append).nodes() == ()
    assert len(calls) == 2 and "Unable to contact slurm controller (try 1 of 3)" in heard[0]
    with pytest.raises(SlurmCommandError, match=r"^SLURM_CONF=/nowhere/slurm.conf: no such "):
        Slurm(run=flaky, env={"SLURM_CONF": "/nowhere/slurm.conf"}).jobs()
    assert len(calls) == 2

    def hangs(cmd, **kw):
        raise subprocess.TimeoutExpired(cmd, kw["timeout"], stderr=b"squeue: error: "
                                        b"Couldn't find the specified plugin name\n")

    with pytest.raises(SlurmCommandError, match=r"no answer in 0.1 s \(squeue: error: Couldn't"):
        Slurm(run=hangs, timeout=0.1, retries=0).jobs()


def test_cli_refuses_a_missing_slurm_conf_and_a_zero_interval(tmp_path, capsys, monkeypatch):
    from hpcopt.cli import main

    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "none.conf"))
    assert main(["slurm", "run", "--policy", "fcfs", "--once"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "none.conf: no such file" in err
    with pytest.raises(SystemExit):
        main(["slurm", "run", "--policy", "fcfs", "--interval", "0"])
    assert "expected seconds > 0, got '0'" in capsys.readouterr().err


def test_one_adapter_per_partition_lock(tmp_path):
    """The lock names its holder; it is free again when the holder's process ends, however
    it ends (a killed adapter does not block a restart)."""
    import sys

    from hpcopt.slurm.lock import LockedError, PartitionLock, default_lock_path

    path = tmp_path / "batch.lock"
    with PartitionLock(path, "batch"):
        with pytest.raises(LockedError, match=r"partition 'batch' is scheduled by another "
                                              r"adapter \(pid \d+ on host .+ since "):
            PartitionLock(path, "batch").acquire()
    again = PartitionLock(path, "batch")  # free once the with-block has ended
    again.acquire()
    again.release()
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from hpcopt.slurm."
                               f"lock import PartitionLock; lock = PartitionLock({str(path)!r}, "
                               "'b'); lock.acquire(); print(1, flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "1"
        with pytest.raises(LockedError, match=f"pid {holder.pid} on host"):
            PartitionLock(path, "b").acquire()
    finally:
        holder.kill()
        holder.wait()
    lock = PartitionLock(path, "b")
    lock.acquire()
    lock.release()
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=c1\nSlurmctldHost=ctl\nSlurmctldPort=7000\n")
    assert default_lock_path("batch", str(conf)).name.endswith("-batch.lock")


def test_job_submit_lua_names_the_partition():
    text = job_submit_lua("gpu")
    assert 'local MANAGED = { ["gpu"] = true }' in text and "job_desc.priority = 0" in text
    assert "function slurm_job_modify" in text
    both = job_submit_lua(["gpu", "batch,gpu"])  # given again, or as a comma list
    assert 'local MANAGED = { ["gpu"] = true, ["batch"] = true }' in both
    assert both.startswith('-- job_submit.lua (hpcopt): hold every job submitted to '
                           'partitions "gpu", "batch", so that')
    for bad in ('a"b', "a,,b", ""):
        with pytest.raises(OptionError, match="--partition: a Slurm partition name"):
            job_submit_lua(bad)


@pytest.mark.parametrize("policy", ["fcfs", "knapsack", "sjf"])
def test_the_core_decides_as_the_simulators_pass(policy):
    """At every pass of a simulation of the bundled demo trace, ``decide`` on that state
    (what the adapter runs on Slurm's state) starts the same jobs in the same modes and makes
    the same reservation: one rule, not a copy."""
    from hpcopt import load_trace
    from hpcopt.instances import bundled_path
    from hpcopt.sim.driver import Event, Simulator

    trace = load_trace(bundled_path() / "traces" / "demo.swf", max_jobs=150)
    sim = Simulator(trace.jobs, trace.system, make_policy(policy))
    started, reserved = [], []
    sim.subscribe(Event.START, lambda s, e, rec: started.append((rec.job.id, rec.mode)))
    sim.subscribe(Event.RESERVE, lambda s, e, p: reserved.append((p[0].id, p[1])))
    passes = 0
    while sim.advance():
        if not (sim.pass_due and sim.queue):
            continue
        state = (sim.now, list(sim.queue), [(r.job, r.est_end) for r in sim.running])
        started.clear()
        reserved.clear()
        sim.schedule()
        out = decide(ClusterState(state[0], trace.system, tuple(state[1]), tuple(state[2])),
                     make_policy(policy))
        assert [(j.id, m) for j, m in out.started] == [
            (jid, "ready" if m == "reserved" else m) for jid, m in started], sim.now
        if reserved and out.reserved is not None:
            assert (out.reserved.id, out.shadow) == reserved[-1]
        passes += 1
    assert passes > 50


def test_launch_delay_shifts_every_start_and_holds_the_nodes():
    """Each job runs from its decision plus the delay and holds its nodes from the decision:
    on one node, a chain of jobs moves by one delay per job; 0 is the plain driver."""
    from hpcopt.domain import Job, System
    from hpcopt.errors import SimulationError
    from hpcopt.sim.driver import Simulator

    jobs = [Job(i, 0.0, 10.0, 20.0, 1) for i in range(3)]

    def starts(delay):
        sim = Simulator(jobs, System(1), make_policy("fcfs"), launch_delay=delay).run()
        return [(sim.records[i].start, sim.records[i].end) for i in range(3)]

    assert starts(0.0) == [(0, 10), (10, 20), (20, 30)]
    assert starts(1.5) == [(1.5, 11.5), (13.0, 23.0), (24.5, 34.5)]
    with pytest.raises(SimulationError, match="launch delay must be >= 0"):
        Simulator(jobs, System(1), make_policy("fcfs"), launch_delay=-1)
    # Simulator.at: the running jobs started already (no delay); the new start is delayed
    out = decide(ClusterState(100.0, System(2), (Job(7, 90.0, 5.0, 5.0, 1),),
                              ((Job(6, 50.0, 0.0, 0.0, 1), 130.0),)),
                 make_policy("fcfs"), launch_delay=2.0)
    assert [j.id for j, _ in out.started] == [7]
    sim = Simulator.at(100.0, System(2), make_policy("fcfs"), [Job(7, 90.0, 5.0, 5.0, 1)],
                       [(Job(6, 50.0, 0.0, 0.0, 1), 130.0)], launch_delay=2.0)
    sim.schedule()
    assert [(r.job.id, r.start, r.est_end) for r in sim.running] == [(7, 102.0, 107.0),
                                                                      (6, 100.0, 130.0)]


def test_launch_delay_per_start_from_a_callable():
    """A callable gives each start its own delay (here by job id: 1, 0, 3 s); it is checked
    like a number, and the running jobs of ``Simulator.at`` are not asked."""
    from hpcopt.domain import Job, System
    from hpcopt.errors import SimulationError
    from hpcopt.sim.driver import Simulator

    jobs = [Job(i, 0.0, 10.0, 20.0, 1) for i in range(3)]
    delays = {0: 1.0, 1: 0.0, 2: 3.0}
    sim = Simulator(jobs, System(1), make_policy("fcfs"),
                    launch_delay=lambda job: delays[job.id]).run()
    assert [(sim.records[i].start, sim.records[i].end) for i in range(3)] == [
        (1.0, 11.0), (11.0, 21.0), (24.0, 34.0)]
    with pytest.raises(SimulationError, match="launch delay of job 0: expected seconds"):
        Simulator(jobs, System(1), make_policy("fcfs"), launch_delay=lambda job: -1).run()
    asked = []
    sim = Simulator.at(100.0, System(2), make_policy("fcfs"), [Job(7, 90.0, 5.0, 5.0, 1)],
                       [(Job(6, 50.0, 0.0, 0.0, 1), 130.0)],
                       launch_delay=lambda job: asked.append(job.id) or 2.0)
    sim.schedule()
    assert asked == [7]
    assert [(r.job.id, r.start) for r in sim.running] == [(7, 102.0), (6, 100.0)]


# --- Slurm 23.02 and later: the data_parser layouts -------------------------------------------
# Each document below is written from the field definitions in Slurm's own source,
# src/plugins/data_parser/v0.0.NN/parsers.c (PARSER_ARRAY(JOB_INFO), (JOB_RES), (JOB_RES_NODE)
# and (NODE), and the dumpers of their types) on the release branch named, and the CLI "meta"
# from src/interfaces/data_parser.c (23.02) or PARSER_ARRAY(OPENAPI_META) (23.11 and later).
# UINT32_NO_VAL and TIMESTAMP_NO_VAL print {set, infinite, number}: NO_VAL as set false,
# INFINITE as set false and infinite true.


def num(n):
    """A set UINT32_NO_VAL / TIMESTAMP_NO_VAL value."""
    return {"set": True, "infinite": False, "number": n}


UNSET = {"set": False, "infinite": False, "number": 0}
INFINITE = {"set": False, "infinite": True, "number": 0}
ONE_MINUTE = num(1)
RUNNING_22_05 = {  # Slurm 22.05: src/plugins/openapi/v0.0.38/jobs.c, the reference
    "job_id": 5, "job_state": "RUNNING", "state_reason": "None", "priority": 4294901759,
    "partition": "batch", "submit_time": NOW - 100, "start_time": NOW - 10, "time_limit": 1,
    "node_count": 2, "nodes": "n[1-2]", "admin_comment": "hpcopt:released:0",
    "array_job_id": 0, "array_task_id": None, "array_max_tasks": 0, "array_task_string": "",
    "het_job_id": 0, "het_job_offset": 0, "max_nodes": 0, "tasks": 1, "restart_cnt": 0,
    "dependency": "",
    "job_resources": {"nodes": "n[1-2]", "allocated_hosts": 2,
                      "allocated_nodes": [{"nodename": "n1", "cpus_used": 0},
                                          {"nodename": "n2", "cpus_used": 0}]}}
DRAINED_22_05 = {"name": "n3", "state": "idle", "state_flags": ["DRAIN"],  # v0.0.38/nodes.c
                 "partitions": ["batch"]}


def res_allocated_nodes(*names):
    """job_resources up to 23.11 (v0.0.39, v0.0.40): JOB_RES_NODES at "allocated_nodes", a
    list of {nodename, cpus_used, memory_used, memory_allocated, sockets}; "nodes" a string."""
    return {"nodes": "n[1-2]", "allocated_cores": 2, "allocated_hosts": len(names),
            "allocated_nodes": [{"nodename": n, "cpus_used": 0, "memory_used": 0,
                                 "memory_allocated": 0, "sockets": {}} for n in names]}


def res_nodes_allocation(*names):
    """job_resources from 24.05 (v0.0.41 and later): "nodes" is {count, select_type, list,
    whole, allocation}, allocation a list of JOB_RES_NODE {index, name, cpus, memory, sockets}."""
    return {"select_type": ["CORE", "MEMORY"], "cpus": 2, "threads_per_core": num(1),
            "nodes": {"count": len(names), "select_type": ["AVAILABLE"], "list": "n[1-2]",
                      "whole": True,
                      "allocation": [{"index": i, "name": n, "cpus": {"count": 1, "used": 1},
                                      "memory": {"used": 0, "allocated": 0}, "sockets": []}
                                     for i, n in enumerate(names)]}}


def new_job(version, *, state, reason="None", priority=4294901759, submit=NOW - 100,
            start=NOW - 10, limit=ONE_MINUTE, nodes=2, names=("n1", "n2")):
    """A job as ``squeue --json`` prints it with data_parser ``version``."""
    held = priority == 0 and state == "PENDING"
    rec = {"job_id": 5, "state_reason": reason, "priority": num(priority),
           "partition": "batch", "time_limit": limit, "node_count": num(nodes),
           "nodes": ",".join(names), "name": "j5",
           # the fields that size and mark a job (arrays, hetjobs, ranges; AdminComment)
           "admin_comment": "hpcopt:held" if held else "hpcopt:released:0",
           "array_job_id": num(0), "array_task_id": UNSET, "array_max_tasks": num(0),
           "array_task_string": "", "het_job_id": num(0), "het_job_offset": UNSET,
           "max_nodes": num(0), "tasks": num(1), "restart_cnt": 0, "dependency": ""}
    if version == "v0.0.39":  # 23.02: JOB_STATE a string, start/submit UINT64 (plain)
        rec.update(job_state=state, submit_time=submit, start_time=start)
    else:  # 23.11+: JOB_STATE a flag array, start/submit TIMESTAMP_NO_VAL
        rec.update(job_state=state if isinstance(state, list) else [state],
                   submit_time=num(submit), start_time=num(start) if start else UNSET)
    if names:
        rec["job_resources"] = (res_allocated_nodes(*names) if version in ("v0.0.39", "v0.0.40")
                                else res_nodes_allocation(*names))
    return rec


def new_node(name, state, partitions=("batch",)):
    """NODE from 23.02 on: "state" a NODE_STATES flag array (base state and flags, no
    "state_flags"), "partitions" a CSV_LIST / CSV_STRING printed as a list."""
    return {"name": name, "state": state, "partitions": list(partitions), "cpus": 1,
            "hostname": name, "reason": ""}


def meta(version, release):
    if version == "v0.0.39":  # 23.02: _populate_cli_response_meta in data_parser.c
        return {"plugins": {"data_parser": "data_parser/v0.0.39"}, "command": ["squeue"],
                "Slurm": {"version": {"major": 23, "micro": 7, "minor": 2},
                          "release": release}}
    major, minor, micro = release.split(".")  # 23.11+: OPENAPI_META, strings
    return {"plugin": {"type": "", "name": "", "data_parser": f"data_parser/{version}",
                       "accounting_storage": ""}, "client": {"source": "", "user": "",
                                                             "group": ""},
            "command": ["squeue", "--json"],
            "slurm": {"version": {"major": major, "micro": micro, "minor": minor},
                      "release": release, "cluster": "testbed"}}


VERSIONS = [("v0.0.39", "23.02.7"), ("v0.0.40", "23.11.10"), ("v0.0.41", "24.05.8"),
            ("v0.0.42", "24.11.6"), ("v0.0.43", "25.05.3"), ("v0.0.44", "25.11.1")]


def squeue(docs):
    """A Slurm whose squeue/sinfo print the given documents."""
    def run(cmd, **kw):
        return subprocess.CompletedProcess(cmd, 0, json.dumps(docs[cmd[0]]), "")
    return Slurm(run=run, retries=0)


@pytest.mark.parametrize("version,release", VERSIONS)
def test_newer_layouts_read_as_the_same_jobs_and_nodes_as_22_05(version, release):
    """Per data_parser version, a running job on two nodes and a drained idle node read as
    the 22.05 documents do, and the release comes from that version's meta."""
    slurm = squeue({"squeue": {"meta": meta(version, release), "errors": [], "warnings": [],
                               "jobs": [new_job(version, state="RUNNING")]},
                    "sinfo": {"meta": meta(version, release), "errors": [],
                              "nodes": [new_node("n3", ["IDLE", "DRAIN"])]}})
    jobs = parse_squeue(slurm.json_doc("squeue", "--json"))
    assert jobs == (parse_job(RUNNING_22_05),) and slurm.nodes_and_version()[1] == release
    assert jobs[0].node_names == ("n1", "n2") and jobs[0].limit == 60.0
    assert slurm.nodes() == (parse_node(DRAINED_22_05),)
    assert not slurm.nodes()[0].usable


def test_22_05_meta_and_a_missing_meta():
    from hpcopt.slurm.state import _version

    assert _version({"meta": {"plugin": {"type": "openapi/v0.0.38"},
                              "Slurm": {"version": {"major": 22, "micro": 8, "minor": 5},
                                        "release": "22.05.8"}}}) == "22.05.8"
    assert _version({"meta": {"slurm": {"version": {"major": "24", "micro": "8",
                                                    "minor": "05"}}}}) == "24.05.8"
    assert _version({}) == "" and _version({"meta": {"Slurm": {}}}) == ""


@pytest.mark.parametrize("version", [v for v, _ in VERSIONS])
def test_held_pending_job_with_unset_start_under_every_layout(version):
    """A held job (priority 0, pending, not started: TIMESTAMP_NO_VAL unset from 23.11, 0 in
    22.05 and 23.02) and no job_resources."""
    rec = new_job(version, state="PENDING", reason="JobHeldUser", priority=0, start=0,
                  nodes=3, names=())
    old = job(5, "PENDING", 0, 3, 1, 0, (), reason="JobHeldUser")
    assert parse_job(rec) == old and old.held and old.start == 0.0


def test_unlimited_time_limit_under_both_layouts():
    """22.05 prints an UNLIMITED limit as null (and NO_VAL as 4294967294); 23.02+ as
    {set: false, infinite: true}, NO_VAL as {set: false, infinite: false}."""
    assert job(1, limit=None).limit is None and job(1, limit=4294967294).limit is None
    for version, _ in VERSIONS:
        assert parse_job(new_job(version, state="RUNNING", limit=INFINITE)).limit is None
        assert parse_job(new_job(version, state="RUNNING", limit=UNSET)).limit is None
        assert parse_job(new_job(version, state="RUNNING", limit=num(90))).limit == 5400.0
    # a data_parser in "complex" mode prints "Infinity" and plain numbers
    assert parse_job({"job_id": 1, "job_state": ["RUNNING"], "time_limit": "Infinity"}).limit \
        is None


def test_job_state_list_reads_as_22_05s_string():
    """From 23.11 the state is [base, flags...]; 22.05 printed the first shown flag
    (COMPLETING, CONFIGURING, ...) instead of the base state."""
    def state(names):
        return parse_job(new_job("v0.0.41", state=names)).state

    assert state(["RUNNING", "COMPLETING"]) == "COMPLETING"
    assert state(["COMPLETED", "COMPLETING"]) == "COMPLETING"  # still holds its nodes
    assert state(["RUNNING", "CONFIGURING"]) == "CONFIGURING"
    assert state(["PENDING", "REQUEUED"]) == "REQUEUED"
    assert state(["RUNNING", "UPDATE_DB"]) == "RUNNING"  # a flag 22.05 never showed
    assert state(["PENDING"]) == "PENDING"


def test_drained_and_down_nodes_under_both_layouts():
    pairs = [(["IDLE", "DRAIN"], ("idle", ["DRAIN"])),
             (["MIXED", "DRAIN"], ("mixed", ["DRAIN"])),  # draining: still runs its jobs
             (["DOWN", "NOT_RESPONDING"], ("down", ["NOT_RESPONDING"])),
             (["DOWN"], ("down", [])),
             (["IDLE", "COMPLETING"], ("idle", ["COMPLETING"])),
             (["IDLE"], ("idle", [])), (["ALLOCATED"], ("allocated", []))]
    for new, (state, flags) in pairs:
        got, old = parse_node(new_node("a", new)), node("a", state, flags)
        assert got == old, new
    assert not node("a", "idle", ["DRAIN"]).usable and not node("a", "down").usable
    assert not parse_node(new_node("a", ["IDLE", "DRAIN"])).usable
    assert not parse_node(new_node("a", ["DOWN"])).usable
    assert not parse_node(new_node("a", ["IDLE", "COMPLETING"])).idle
    assert parse_node(new_node("a", ["IDLE"])).idle


@pytest.mark.parametrize("field,value,found", [
    ("time_limit", {"set": True, "number": "60"}, '{"set":true,"number":"60"}'),
    ("time_limit", "60", '"60"'),
    ("priority", [5], "[5]"),
    ("node_count", True, "true"),
    ("node_count", INFINITE, '{"set":false,"infinite":true,"number":0}'),
    ("start_time", {"seconds": 5}, '{"seconds":5}'),
    ("job_state", {"current": ["RUNNING"]}, '{"current":["RUNNING"]}'),
    ("job_state", ["COMPLETING"], '["COMPLETING"]'),  # no base state: not 23.11+'s list
    ("job_state", ["RUNNING", "PENDING"], '["RUNNING","PENDING"]'),
    ("job_resources", "n1", '"n1"'),
])
def test_unknown_job_shape_is_a_one_line_error_naming_the_field(field, value, found):
    rec = new_job("v0.0.42", state="RUNNING")
    rec[field] = value
    with pytest.raises(SlurmCommandError) as exc:
        parse_job(rec)
    assert str(exc.value) == f"squeue --json job 5: unreadable {field}: {found}"


def test_unknown_shapes_of_ids_nodes_and_allocations():
    with pytest.raises(SlurmCommandError, match=r'^squeue --json job: unreadable job_id: "5"$'):
        parse_job({"job_id": "5", "job_state": "PENDING"})
    with pytest.raises(SlurmCommandError, match=r"^squeue --json job: unreadable job_id: null$"):
        parse_job({"job_state": "PENDING"})
    rec = new_job("v0.0.41", state="RUNNING")
    rec["job_resources"]["nodes"]["allocation"] = [{"nodename": "n1"}]
    with pytest.raises(SlurmCommandError, match=r"^squeue --json job 5: unreadable "
                       r'job_resources.nodes.allocation: \[\{"nodename":"n1"\}\]$'):
        parse_job(rec)
    rec = new_job("v0.0.40", state="RUNNING")
    rec["job_resources"]["allocated_nodes"] = "n[1-2]"
    with pytest.raises(SlurmCommandError, match=r"^squeue --json job 5: unreadable "
                       r'job_resources.allocated_nodes: "n\[1-2\]"$'):
        parse_job(rec)
    for rec, field in [(new_node("a", ["DRAIN"]), "state"), (new_node("a", 5), "state"),
                       (new_node("a", ["IDLE", "DOWN"]), "state"),
                       ({"name": "a", "state": "idle", "state_flags": "DRAIN"}, "state_flags"),
                       ({"name": "a", "state": ["IDLE"], "partitions": "batch"}, "partitions")]:
        with pytest.raises(SlurmCommandError, match=rf"^sinfo --json node a: unreadable "
                           rf"{field}: \S+$"):
            parse_node(rec)
    with pytest.raises(SlurmCommandError, match=r"^sinfo --json node: unreadable name: null$"):
        parse_node({"state": ["IDLE"]})
    long = {"set": True, "number": "x" * 200}
    with pytest.raises(SlurmCommandError) as exc:
        parse_job({"job_id": 1, "time_limit": long})
    assert len(str(exc.value)) < 140 and str(exc.value).endswith("...")


def test_errors_entry_reads_as_its_description():
    doc = {"meta": {}, "errors": [{"description": "Invalid partition specified",
                                   "source": "slurm_load_jobs", "error": "Invalid partition",
                                   "error_number": 2037}], "jobs": []}
    with pytest.raises(SlurmCommandError,
                       match=r"^squeue --json: Invalid partition specified$"):
        squeue({"squeue": doc}).json_doc("squeue", "--json")


def test_several_partitions_must_have_disjoint_nodes():
    from hpcopt.slurm.adapter import disjoint_partitions

    nodes = [node("n1", partitions=("batch", "debug")), node("n2", partitions=("batch",)),
             node("n3", partitions=("batch2", "debug"))]
    snap = Snapshot(NOW, (), tuple(nodes), 0.01)
    disjoint_partitions(snap, ["batch", "batch2"])
    with pytest.raises(OptionError, match=r"^partitions batch and debug share node n1: one "
                                          r"adapter schedules several partitions only when"):
        disjoint_partitions(snap, ["batch", "debug"])
    with pytest.raises(OptionError, match=r"^--partition gpu: no such partition with nodes "
                                          r"\(sinfo lists batch, batch2, debug\)$"):
        disjoint_partitions(snap, ["batch", "gpu"])


def test_several_partitions_are_decided_each_on_its_own():
    """One read, one pass and one log record per partition; the locks of one --lock file
    are one lock for the set."""
    from hpcopt.slurm.adapter import run_adapters

    nodes = [node("n1"), node("n2"), node("n3", partitions=("batch2",)),
             node("n4", partitions=("batch2",))]
    jobs = [job(1, nodes=2), job(2, nodes=1, partition="batch2"),
            job(3, nodes=2, partition="batch2")]

    class Fake(Slurm):
        reads = 0

        def snapshot(self):
            Fake.reads += 1
            return Snapshot(NOW, tuple(jobs), tuple(nodes), 0.01)

        def reservations(self):
            return ()

    said, log, slurm = [], io.StringIO(), Fake()
    adapters = [Adapter(make_policy("fcfs"), Settings(p, dry_run=True), slurm=slurm,
                        log=log, say=said.append) for p in ("batch", "batch2")]
    assert run_adapters(adapters, once=True) == 0
    recs = [json.loads(line) for line in log.getvalue().splitlines() if "event" not in line]
    assert Fake.reads == 1
    assert [(r["partition"], r["released"]) for r in recs] == [("batch", [1]),
                                                               ("batch2", [2])]
    assert said == ["cycle 1: would release 1", "cycle 1: would release 2; reserved 3 at +60 s"]


def test_the_text_read_reads_every_shape_and_refuses_another():
    """``squeue -O``'s text: a pending array (its tasks and throttle), a task split out of
    it, a running job on a host list, a node range, a burst-buffer request over two lines
    and unset fields read as ``squeue --json`` records do; a record with a missing field or
    an unreadable count is a one-line error naming the job."""
    def rec(**v):
        return "\x1f".join(str(v.get(f, "N/A")) for f in SQUEUE_FIELDS) + "\x1e\n"

    base = dict(State="PENDING", Reason="JobHeldUser", PriorityLong=0, Partition="batch",
                SubmitTime=1700000000, TimeLimit="1-02:00:00", NumNodes=1, MaxNodes=1,
                NumTasks=1, Admin_Comment="hpcopt:held", UserID=1000, Feature="(null)")
    text = (rec(JobID=7, ArrayJobID=7, ArrayTaskID="1,3,5%2", **base)
            + rec(**{**base, "JobID": 9, "ArrayJobID": 7, "ArrayTaskID": 2, "State": "RUNNING",
                     "StartTime": 1700000100, "NodeList": "n[1-2],m05", "NumNodes": 3})
            + rec(**{**base, "JobID": 8, "ArrayJobID": 8, "NumNodes": 2, "MaxNodes": 4,
                     "NumTasks": 8, "BurstBuffer": "#BB_LUA pool=bb capacity=6\n#BB_LUA x=1",
                     "TimeLimit": "UNLIMITED", "Feature": "ssd128|ssd256"}))
    a, b, c = parse_squeue_text(text)  # id order
    assert (a.id, a.array_id, a.array_task, a.array_tasks, a.array_max) == (7, 7, None,
                                                                            "1,3,5%2", 2)
    assert a.limit == 26 * 3600.0 and a.max_nodes == 0 and a.held and a.user_id == 1000
    assert a.features == "" and a.start == 0.0 and a.submit == 1700000000.0
    assert (b.id, b.array_id, b.array_task, b.key) == (8, 0, None, "8")
    assert (b.nodes, b.max_nodes, b.tasks, b.limit) == (2, 4, 8, None)
    assert b.burst_buffer == "#BB_LUA pool=bb capacity=6\n#BB_LUA x=1"
    assert b.features == "ssd128|ssd256"
    assert (c.id, c.key, c.state, c.node_names) == (9, "7_2", "RUNNING", ("n1", "n2", "m05"))
    assert c.array_max == 2  # its array's throttle, from the array's line
    assert parse_squeue_text("") == ()
    with pytest.raises(SlurmCommandError, match=r"squeue -O: unreadable record '5\\x1f"):
        parse_squeue_text("5\x1fPENDING\x1e\n")
    with pytest.raises(SlurmCommandError, match=r"^squeue -O job 5: unreadable NumNodes: 'x'"):
        parse_squeue_text(rec(**{**base, "JobID": 5, "NumNodes": "x"}))


def test_partition_sizes_from_sinfo():
    """Each partition's nodes summed over its node groups, its smallest node's cores (``4+``:
    at least 4), the default one marked ``*``; an unreadable line is left out."""
    from hpcopt.slurm.state import parse_partitions

    text = "batch*|8|4\nbatch*|2|2+\ndebug|8|4\nodd line\nbig|x|4\n"
    assert parse_partitions(text) == ({"batch": (10, 2), "debug": (8, 4)}, "batch")
    assert parse_partitions("debug|1|1\n") == ({"debug": (1, 1)}, None)


def test_a_squeue_without_array_unique_is_read_as_json():
    """Where squeue has no ``--array-unique`` (24.11) the jobs are read from ``squeue --json``
    at once (not a failed try, nothing heard), and from then on."""
    calls, heard = [], []
    doc = {"jobs": [RUNNING_22_05, {**RUNNING_22_05, "job_id": 8, "job_state": "COMPLETED"}]}

    def run(cmd, **kw):
        calls.append(cmd)
        if "--array-unique" in cmd:
            return subprocess.CompletedProcess(cmd, 1, "", "squeue: unrecognized option "
                                               "'--array-unique'\nTry \"squeue --help\"")
        return subprocess.CompletedProcess(cmd, 0, json.dumps(doc), "")

    slurm = Slurm(run=run, retries=2, backoff=0.01, on_error=heard.append)
    assert slurm.jobs() == (parse_job(RUNNING_22_05),)  # the finished one left out
    assert slurm.jobs([7]) == (parse_job(RUNNING_22_05),) and not heard
    assert [c[1] for c in calls] == ["-h", "--json", "--json"]
    assert calls[-1][-1] == "--jobs=7"


def test_a_few_jobs_are_read_again_one_call_each_where_that_is_cheaper():
    """Given several ids squeue reads the whole queue (and filters it itself), given one the
    job alone: once a whole read is seen to cost more than the ids' single reads, the ids are
    read one ``--jobs=ID`` call each (exclusions too) and the answers merged in id order; a
    job gone from Slurm is left out; before any whole read, one call for all."""
    jobs = {i: {**RUNNING_22_05, "job_id": i} for i in (5, 6, 7)}
    calls = []

    def run(cmd, **kw):
        only = [a for a in cmd if a.startswith("--jobs=")]
        calls.append(only[0] if only else "all")
        if not only:
            time.sleep(0.05)  # the whole queue: slower than one job
        ids = [int(i) for i in only[0][7:].split(",")] if only else sorted(jobs)
        if only and not set(ids) & set(jobs):
            return subprocess.CompletedProcess(cmd, 1, "", "slurm_load_jobs error: Invalid "
                                               "job id specified")
        if "-o" in cmd:  # the exclusions
            return subprocess.CompletedProcess(cmd, 0, "".join(
                f"{i}\x1fn{i}\x1e\n" for i in ids if i in jobs), "")
        return subprocess.CompletedProcess(cmd, 0, squeue_text(
            [jobs[i] for i in ids if i in jobs]), "")

    fresh = Slurm(run=run)
    assert [j.id for j in fresh.jobs([7, 5])] == [5, 7] and calls == ["--jobs=5,7"]
    slurm, calls[:] = Slurm(run=run), []
    assert [j.id for j in slurm.jobs()] == [5, 6, 7]
    assert [j.id for j in slurm.jobs([7, 5, 99])] == [5, 7]
    assert calls == ["all", "--jobs=5", "--jobs=7", "--jobs=99"]
    assert slurm.excluded_nodes([6, 5]) == {5: "n5", 6: "n6"}
    assert calls[-2:] == ["--jobs=5", "--jobs=6"]
