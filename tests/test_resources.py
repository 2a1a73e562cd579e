"""Burst buffer and SSD classes in the driver: assignment rule, EASY on every resource."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcopt.domain import Job, System
from hpcopt.errors import SimulationError
from hpcopt.policies import make_policy
from hpcopt.sim.driver import Event, Simulator
from hpcopt.sim.resources import MultiPool, NodePool, make_pool

SSD_SYSTEM = System(nodes=4, bb=100.0, ssd_classes={128: 2, 256: 2})


def J(id, submit, nodes, walltime, bb=0.0, ssd=0.0, runtime=None):
    return Job(id=id, submit=submit, runtime=walltime if runtime is None else runtime,
               walltime=walltime, nodes=nodes, bb=bb, ssd=ssd)


def test_make_pool_picks_the_simplest_state():
    assert isinstance(make_pool(System(8)), NodePool)
    assert isinstance(make_pool(SSD_SYSTEM), MultiPool)


def test_ssd_requests_take_the_smallest_eligible_class_first():
    pool = make_pool(SSD_SYSTEM)
    assert pool.take(J(1, 0, 1, 10, ssd=200)) == (0, 1)  # > 128 GB: only 256 GB nodes
    assert pool.take(J(2, 0, 2, 10, ssd=100)) == (2, 0)  # prefers 128 GB nodes
    assert not pool.fits(J(3, 0, 2, 10, ssd=200))  # one 256 GB node left
    assert pool.fits(J(4, 0, 1, 10, ssd=256)) and pool.free_nodes == 1
    pool.give(J(2, 0, 2, 10, ssd=100), (2, 0))
    assert pool.take(J(5, 0, 3, 10, ssd=50)) == (2, 1)  # spills into the 256 GB class
    assert pool.free_dict() == {"nodes": 0, "bb": 100.0, "ssd_128": 0, "ssd_256": 0}


def test_burst_buffer_is_a_shared_capacity():
    pool = make_pool(SSD_SYSTEM)
    pool.take(J(1, 0, 1, 10, bb=70))
    assert not pool.fits(J(2, 0, 1, 10, bb=40))
    assert "burst buffer" in pool.why_not(J(2, 0, 1, 10, bb=40))


def test_easy_backfilling_respects_the_reserved_jobs_burst_buffer():
    # J2 (4 nodes, 90 GB) waits for J1's nodes: shadow 100, extra 6 nodes and 10 GB.
    # J3 fits now (1 node, 20 GB) but would take burst buffer J2 needs at 100: it must wait.
    # J4 (1 node, 5 GB) fits in the extra and backfills.
    system = System(nodes=10, bb=100.0)
    jobs = [J(1, 0, 8, 100), J(2, 1, 4, 50, bb=90), J(3, 2, 1, 500, bb=20),
            J(4, 3, 1, 500, bb=5)]
    sim = Simulator(jobs, system, make_policy("fcfs")).run()
    r = sim.records
    assert (r[2].start, r[2].mode) == (100, "reserved")
    assert (r[4].start, r[4].mode) == (3, "backfilled")
    assert r[3].start == 150  # after J2 releases its 90 GB


def test_jobs_that_can_never_run_are_rejected():
    with pytest.raises(SimulationError, match="burst buffer"):
        Simulator([J(1, 0, 1, 10, bb=500)], SSD_SYSTEM, make_policy("fcfs"))
    with pytest.raises(SimulationError, match="SSD"):
        Simulator([J(1, 0, 3, 10, ssd=200)], SSD_SYSTEM, make_policy("fcfs"))
    with pytest.raises(SimulationError, match="has neither"):  # never silently ignored
        Simulator([J(1, 0, 1, 10, bb=5)], System(8), make_policy("fcfs"))


jobs_st = st.lists(
    st.tuples(st.integers(0, 100), st.integers(1, 4), st.integers(1, 60), st.integers(0, 60),
              st.sampled_from([0.0, 10.0, 40.0, 90.0]), st.sampled_from([0.0, 100.0, 200.0])),
    min_size=1, max_size=20,
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(raw=jobs_st, policy=st.sampled_from(["fcfs", "sjf", "largest-first", "random", "knapsack"]),
       backfill=st.sampled_from(["easy", "none"]))
def test_no_resource_is_ever_over_committed(raw, policy, backfill):
    system = System(nodes=6, bb=100.0, ssd_classes={128: 3, 256: 3})
    jobs = [Job(i, float(s), float(min(r, w)), float(w), n, bb=bb, ssd=ssd)
            for i, (s, n, w, r, bb, ssd) in enumerate(raw)
            if not (ssd > 128 and n > 3)]
    if not jobs:
        return
    sim = Simulator(jobs, system, make_policy(policy), backfill=backfill)
    used = {"bb": 0.0, 128: 0, 256: 0}

    def on_start(s, e, rec):
        n128, n256 = rec.allocation
        assert n128 + n256 == rec.job.nodes
        assert n128 == 0 or rec.job.ssd <= 128  # nodes meet the SSD request
        used["bb"] += rec.job.bb
        used[128] += n128
        used[256] += n256
        assert used["bb"] <= 100.0 and used[128] <= 3 and used[256] <= 3

    def on_complete(s, e, rec):
        used["bb"] -= rec.job.bb
        used[128] -= rec.allocation[0]
        used[256] -= rec.allocation[1]

    sim.subscribe(Event.START, on_start)
    sim.subscribe(Event.COMPLETE, on_complete)
    sim.run()
    if policy == "fcfs" and backfill == "easy":
        for rec in sim.records.values():
            if rec.reserved_at is not None:
                assert rec.start <= rec.reserved_at


def test_backfill_may_not_take_the_ssd_class_the_reserved_job_needs():
    # 2 x 128 GB + 2 x 256 GB nodes.  A holds both 128 GB nodes, B one 256 GB node, both to
    # t=100.  H needs two 256 GB nodes: shadow 100, and the extra nodes then are the two
    # 128 GB ones.  X (any SSD, long) fits now only on the free 256 GB node, which H needs at
    # 100, so X must not backfill although a node count says it fits in the extra.
    jobs = [J("A", 0, 2, 100, ssd=100), J("B", 0, 1, 100, ssd=200), J("H", 1, 2, 50, ssd=200),
            J("X", 2, 1, 1000)]
    sim = Simulator(jobs, SSD_SYSTEM, make_policy("fcfs")).run()
    r = sim.records
    assert r["H"].start == 100 and r["H"].mode == "reserved"
    assert r["X"].start == 100  # on a 128 GB node, beside H
