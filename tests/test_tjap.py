"""TJAP workloads, the topology resource state and the window-period driver."""


import numpy as np
import pytest

import hpcopt
from hpcopt.domain import Job
from hpcopt.errors import SimulationError, TraceError
from hpcopt.instances import load_instance
from hpcopt.models.scas import SCASModel
from hpcopt.policies import make_policy
from hpcopt.policies.tjap import generate_windows
from hpcopt.sim.driver import Event, Simulator
from hpcopt.sim.resources import TopologyPool
from hpcopt.traces.tjap import load_tjap_jobs
from hpcopt.workloads.tjap import generate_tjap_jobs, tjap_system

from .conftest import SHARED_DATA, needs_data

LZK23 = "topology_alloc/lzk23_hpcschedule/data_large_1800_40.txt.gz"
DATA = SHARED_DATA / LZK23


def test_generator_is_seeded_and_in_bounds():
    a, b = generate_tjap_jobs(500, seed=4), generate_tjap_jobs(500, seed=4)
    assert a == b and a != generate_tjap_jobs(500, seed=5)
    gaps = np.diff([0.0] + [j.submit for j in a])
    assert 5 <= gaps.min() and gaps.max() <= 30
    assert {j.nodes for j in a} <= set(range(1, 41))
    assert all(10 <= j.runtime <= 1800 for j in a)


def test_load_jobs_reports_the_bad_line(tmp_path):
    f = tmp_path / "jobs.txt"
    f.write_text("1 0 100 4\n2 5 200 x\n")
    with pytest.raises(TraceError, match=r"jobs.txt:2: expected"):
        load_tjap_jobs(f)
    f.write_text("1 0 100 4\n2 5 200\n")
    with pytest.raises(TraceError, match="4 fields"):
        load_tjap_jobs(f)


@needs_data(LZK23)
def test_load_the_shared_job_file():
    jobs = load_tjap_jobs(DATA, max_jobs=1000)
    assert len(jobs) == 1000 and jobs[0] == Job(1, 25.0, 1386.0, 1386.0, 10)


def test_first_fit_contiguous():
    pool = TopologyPool(20)
    pool.take(Job(1, 0, 1, 1, 3), [2, 3, 4])
    pool.take(Job(2, 0, 1, 1, 3), [8, 9, 10])
    assert list(pool.plan(Job(3, 0, 1, 1, 2))) == [0, 1]
    assert list(pool.plan(Job(3, 0, 1, 1, 3))) == [5, 6, 7]
    assert list(pool.plan(Job(3, 0, 1, 1, 9))) == [11, 12, 13, 14, 15, 16, 17, 18, 19]
    assert list(pool.plan(Job(3, 0, 1, 1, 12))) == [0, 1, 5, 6, 7, 11, 12, 13, 14, 15, 16, 17]
    assert not pool.fits(Job(4, 0, 1, 1, 2), [3, 5])  # node 3 is busy
    with pytest.raises(ValueError, match="idle node ids"):
        pool.take(Job(4, 0, 1, 1, 2), [3, 5])


@pytest.mark.parametrize("policy,options", [
    ("fcfs", {"backfill": "none"}), ("fcfs", {"backfill": "easy"}),
    ("tjap-window", {"tau": 30}), ("tjap-window", {"model": "dcas", "backend": "sa",
                                                   "solver_options": {"t_max": 20}})])
def test_no_node_serves_two_jobs(policy, options):
    """Replay every start and completion: a node is never held by two running jobs."""
    jobs = generate_tjap_jobs(150, seed=1)
    system = tjap_system()
    backfill = options.pop("backfill", None)
    pol = make_policy(policy, **options)
    pol.reset(0)
    sim = Simulator(jobs, system, pol, backfill=backfill)
    holder = {}

    def on_start(s, event, rec):
        for n in rec.allocation:
            assert int(n) not in holder
            holder[int(n)] = rec.job.id
        assert len(rec.allocation) == rec.job.nodes

    def on_complete(s, event, rec):
        for n in rec.allocation:
            assert holder.pop(int(n)) == rec.job.id

    sim.subscribe(Event.START, on_start)
    sim.subscribe(Event.COMPLETE, on_complete)
    sim.run()
    assert not holder and not any(np.isnan(r.end) for r in sim.records.values())


def test_window_policy_orders_by_waiting_periods():
    pol = make_policy("tjap-window", tau=60)
    pol.reset(0)
    system = tjap_system()
    from hpcopt.domain import Window

    pool = TopologyPool(1000)
    pool.take(Job(99, 0, 1, 1, 990), np.arange(990))
    jobs = [Job(1, 0, 10, 10, 8), Job(2, 0, 10, 10, 3), Job(3, 0, 10, 10, 6)]
    win = Window(0.0, jobs, pool.copy(), [], system, 3)
    first = pol.decide(win)
    assert first.start == (2, 3)  # fewer nodes first: 3 + 6 fit in 10, 8 does not
    assert pol._nwp == {1: 1}
    jobs2 = [Job(1, 0, 10, 10, 8), Job(4, 50, 10, 10, 2)]
    second = pol.decide(Window(60.0, jobs2, pool.copy(), [], system, 2))
    assert second.start == (1, 4)  # job 1 waited a period: it goes first, then job 4 fits
    assert set(map(len, second.allocations.values())) == {8, 2}


def test_window_policy_lowers_comm_cost_vs_fcfs():
    jobs = generate_tjap_jobs(300, seed=2)
    system = tjap_system()
    fcfs = hpcopt.simulate(jobs, system=system, policy="fcfs", backfill="none")
    win = hpcopt.simulate(jobs, system=system, policy="tjap-window", tau=60)
    assert win.summary["avg_comm_cost"] < fcfs.summary["avg_comm_cost"]
    assert "comm_cost" in win.jobs and win.settings["backfill"] == "none"


def test_window_policy_needs_a_topology():
    jobs = generate_tjap_jobs(5, seed=0)
    with pytest.raises(SimulationError, match="topology"):
        hpcopt.simulate(jobs, nodes=100, policy="tjap-window")


def test_generate_windows_and_dump(tmp_path):
    windows = generate_windows(5, seed=0)
    assert len(windows) == 5 and all(w.kind == "dcas" for w in windows)
    again = generate_windows(5, seed=0)
    assert [w.to_dict() for w in windows] == [w.to_dict() for w in again]
    hpcopt.simulate(generate_tjap_jobs(40, seed=0), system=tjap_system(), policy="tjap-window",
                    dump_windows=str(tmp_path))
    files = sorted(tmp_path.glob("*.json"))
    assert files
    inst = load_instance(files[0])
    assert inst.model.kind == "scas" and hpcopt.solve(inst.model).certified


def test_dcas_backends_never_worse_than_scas_optimum():
    for w in generate_windows(8, seed=3, min_jobs=2):
        scas = hpcopt.solve(SCASModel(w.topology, w.idle_nodes, w.sizes))
        for backend in ("sa",):
            r = hpcopt.solve(w, backend, seed=1, solver_options={"t_max": 50})
            assert r.certified and r.objective <= scas.objective + 1e-6
        seq = hpcopt.solve(w, "sequential", seed=1)
        assert seq.certified


def test_sa_options_are_checked():
    from hpcopt.models.dcas import DCASModel

    m = DCASModel("paper-1000", range(20), [5, 4])
    with pytest.raises(ValueError, match=r"unknown solver option\(s\) bogus; it accepts"):
        hpcopt.solve(m, "sa", solver_options={"bogus": 1})
    with pytest.raises(ValueError, match="T_min <= T_max"):
        hpcopt.solve(m, "sa", solver_options={"T_min": 10, "T_max": 1})
    with pytest.raises(ValueError, match="repair must be one of"):
        hpcopt.solve(m, "sa", solver_options={"repair": "magic"})
    with pytest.raises(ValueError, match="warm_start is not a feasible"):
        hpcopt.solve(m, "sa", warm_start=(0, 1, 0, 99))
    a = hpcopt.solve(m, "sa", seed=3, solver_options={"t_max": 50, "init": "sequential"})
    b = hpcopt.solve(m, "sa", seed=3, solver_options={"t_max": 50, "init": "sequential"})
    assert a.decision == b.decision and a.extra["start"] == "sequential"
