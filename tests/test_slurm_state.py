"""The adapter's reading of Slurm's state, without a cluster: squeue/sinfo JSON records (as
Slurm 22.05 prints them) to the driver-pass state, and the command wrapper's retries."""

from __future__ import annotations

import subprocess

import pytest

from hpcopt.policies import make_policy
from hpcopt.sim.driver import one_pass
from hpcopt.slurm.adapter import FAR, pass_state
from hpcopt.slurm.lua import job_submit_lua
from hpcopt.slurm.state import Slurm, SlurmCommandError, Snapshot, parse_job, parse_node

NOW = 1_000_000.0


def job(jid, state="PENDING", priority=0, nodes=1, limit=1, start=0, names=(),
        partition="batch", submit=NOW - 100, reason="None"):
    rec = {"job_id": jid, "job_state": state, "state_reason": reason, "priority": priority,
           "partition": partition, "submit_time": submit, "start_time": start,
           "time_limit": limit, "node_count": nodes}
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


def test_pass_state_sees_exactly_the_idle_nodes_as_free():
    s = pass_state(snapshot(), "batch")
    assert s.system.nodes == 8 and s.time == NOW
    got = sorted((j.id, j.nodes, end) for j, end in s.running)
    assert got == sorted([(5, 2, NOW + 50), (-1, 1, NOW), (-2, 2, NOW + FAR),
                          (6, 2, NOW + 180)])
    assert s.free == 1 and s.released_waiting == [6, 12] and s.n_running == 1
    assert "job 12 released, waiting: Dependency" in s.notes
    assert [(j.id, j.nodes, j.walltime) for j in s.queue] == [(7, 1, 120.0), (11, 3, FAR)]
    assert "job 8 asks 9 nodes, the partition has 8: left held" in s.notes
    assert "unavailable nodes: n3,n4" in s.notes
    out = one_pass(s.time, s.system, make_policy("fcfs"), s.queue, s.running)
    assert [(j.id, m) for j, m in out.started] == [(7, "ready")]  # FCFS: the head fits
    out = one_pass(s.time, s.system, make_policy("sjf"), s.queue, s.running)
    assert [j.id for j, _ in out.started] == [7]


def test_unknown_partition_is_an_error():
    with pytest.raises(Exception, match="partition 'gpu' has no nodes"):
        pass_state(snapshot(), "gpu")


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
        return subprocess.CompletedProcess(cmd, 0, '{"jobs": []}', "")

    s = Slurm(run=flaky, retries=2, backoff=0.01, on_error=heard.append)
    assert s.jobs() == ((), "")
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


def test_job_submit_lua_names_the_partition():
    text = job_submit_lua("gpu")
    assert 'local MANAGED = "gpu"' in text and "job_desc.priority = 0" in text
    assert "function slurm_job_modify" in text
    with pytest.raises(ValueError):
        job_submit_lua('a"b')


@pytest.mark.parametrize("policy", ["fcfs", "knapsack", "sjf"])
def test_one_pass_is_the_simulators_pass(policy):
    """At every pass of a simulation of the bundled demo trace, ``one_pass`` on that state
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
        out = one_pass(state[0], trace.system, make_policy(policy), state[1], state[2])
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
    out = one_pass(100.0, System(2), make_policy("fcfs"), [Job(7, 90.0, 5.0, 5.0, 1)],
                   [(Job(6, 50.0, 0.0, 0.0, 1), 130.0)], launch_delay=2.0)
    assert [j.id for j, _ in out.started] == [7]
    sim = Simulator.at(100.0, System(2), make_policy("fcfs"), [Job(7, 90.0, 5.0, 5.0, 1)],
                       [(Job(6, 50.0, 0.0, 0.0, 1), 130.0)], launch_delay=2.0)
    sim.schedule()
    assert [(r.job.id, r.start, r.est_end) for r in sim.running] == [(7, 102.0, 107.0),
                                                                      (6, 100.0, 130.0)]
