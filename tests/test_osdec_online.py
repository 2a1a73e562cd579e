"""Online OSDEC (issue #13, non-learned): an osdec instance run slot by slot through the driver.

Hand-checked schedules per policy, the score is the model's own evaluate, online never beats
the offline optimum, drops after ``latest``, capacity respected at each start, no job seen
before its submission, determinism, the driver features in general (capacity profile,
earliest/latest on any job) and the CLI end to end.
"""

from __future__ import annotations

import csv
import json

import pytest

from hpcopt.domain import Job, System
from hpcopt.errors import SimulationError
from hpcopt.models.osdec import OSDECModel
from hpcopt.osdec import SUMMARY_KEYS, online_decision, osdec_workload, simulate_osdec
from hpcopt.policies import make_policy
from hpcopt.policies.osdec import ScorePolicy, start_by_scores
from hpcopt.sim.driver import DROPPED, Event, Simulator
from hpcopt.sim.resources import CapacityPool, CapacityProfile

from .conftest import INSTANCES

OSDEC = INSTANCES / "osdec"
FILES = sorted(OSDEC.glob("*.json"))
POLICIES = ["fifo", "sjf", "tetris", "rolling-mip"]
OPTIMA = {row["instance"]: float(row["optimum"])
          for row in csv.DictReader((OSDEC / "optima.csv").read_text().splitlines())}


def _run(source, policy, **kw):
    return simulate_osdec(source, policy, **kw)


# ------------------------------------------------------------------ hand-made instances
# tiny_4jobs: capacity [4, 4, 2, 2, 4, 4]; a (4 cores x 2, e0 l2), b (2 x 3, e1 l3),
# c (2 x 2, submit 1, e2 l2), d (1 x 4, submit 2, e3 l5).
# slot 0: only a is startable -> a.  slot 1: nothing free.  slot 2 (capacity 2): b and c,
# 2 cores each, one fits: FIFO and Tetris (equal alignment, base order) take b, SJF and the
# rolling MIP take c.  The other one is dropped (c at slot 3; b at slot 4, its latest is 3).
# slot 3: nothing free.  slot 4: d starts.
TINY_EXPECTED = {
    "fifo": ([0, 2, -1, 4], 14.0),
    "tetris": ([0, 2, -1, 4], 14.0),
    "sjf": ([0, -1, 2, 4], 14.0),
    "rolling-mip": ([0, -1, 2, 4], 14.0),
}


@pytest.mark.parametrize("policy", POLICIES)
def test_tiny_instance_by_hand(policy):
    res = _run(OSDEC / "tiny_4jobs.json", policy)
    starts, reward = TINY_EXPECTED[policy]
    assert res.decision == starts
    assert res.summary["total_reward"] == reward
    assert res.summary["started"] == 3 and res.summary["dropped"] == 1
    assert res.summary["driver_dropped"] == 1


def _overload_model():
    # x runs 2 cores over slots 0-1; the capacity falls to 1 at slot 1: overload 1 (v_1 = 1)
    # and y (1 core, only slot 1) cannot start (no free capacity) and is dropped.
    return OSDECModel(slots=4, capacity=[3, 1, 3, 3], cores=[2, 1], duration=[2, 1],
                      submit=[0, 1], earliest=[0, 1], latest=[0, 1], ids=("x", "y"))


@pytest.mark.parametrize("policy", ["fifo", "sjf", "tetris"])
def test_shrinking_capacity_is_a_violation_not_an_error(policy):
    res = _run(_overload_model(), policy)
    assert res.decision == [0, -1]
    s = res.summary
    assert (s["revenue"], s["delay_penalty"], s["violation_penalty"]) == (4.0, 0.0, 10.0)
    assert s["total_reward"] == -6.0 and s["dropped"] == 1


def test_start_by_scores_is_a_prefix():
    jobs = [Job(i, 0, 1, 1, n) for i, n in enumerate([2, 3, 1])]
    sim = Simulator.at(0, System(4), make_policy("fifo"), jobs, backfill="none")
    window = sim.window(sim.ordered_queue())
    # highest first: job 0 (2 nodes) fits, job 1 (3) does not -> stop (job 2 would fit)
    assert start_by_scores(window, [3, 2, 1]).start == (0,)
    window = sim.window(sim.ordered_queue())
    assert start_by_scores(window, [1, None, 2]).start == (2, 0)
    window = sim.window(sim.ordered_queue())
    assert start_by_scores(window, [0, 0, 0]).start == (0,)  # ties keep the base order


class _ShortestScore(ScorePolicy):
    def scores(self, window):
        return [-j.walltime for j in window.jobs]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_sjf_is_the_shared_mapping_with_score_minus_duration(path):
    # the registered sjf (head-first on the sjf order) = start_by_scores with -d_i, base
    # order fcfs breaking ties (the sjf order's own tie-break is the arrival)
    ref = _run(path, _ShortestScore())
    assert _run(path, "sjf").decision == ref.decision


# ------------------------------------------------------------------ the score and the bound
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_reward_is_the_model_evaluate_and_below_the_offline_optimum(path, policy):
    model = OSDECModel.from_dict(json.loads(path.read_text())["data"])
    res = _run(path, policy, offline_bound=OPTIMA[path.stem])
    ev = model.evaluate(res.decision)
    assert ev.feasible
    s = res.summary
    assert s["total_reward"] == ev.objective
    assert s["revenue"] - s["delay_penalty"] - s["violation_penalty"] == s["total_reward"]
    assert (s["started"], s["dropped"]) == (ev.started, ev.dropped)
    assert s["dropped"] == s["driver_dropped"]
    assert set(SUMMARY_KEYS) <= set(s)
    assert 0.0 <= s["utilization"] <= 1.0
    assert s["total_reward"] <= OPTIMA[path.stem] + 1e-9
    assert s["gap_to_offline"] >= -1e-12


def test_offline_backend_gives_the_gap():
    res = _run(OSDEC / "small_12slots_20jobs.json", "fifo", offline_backend="scip")
    assert res.summary["offline"]["status"] == "OPTIMAL"
    assert res.summary["offline_reference"] == OPTIMA["small_12slots_20jobs"]
    ref = OPTIMA["small_12slots_20jobs"]
    assert res.summary["gap_to_offline"] == pytest.approx((ref - res.summary["total_reward"])
                                                          / ref)


# ------------------------------------------------------------------ what the loop guarantees
class _Spy:
    """Wraps a policy; checks every window against what a policy may see."""

    def __init__(self, inner):
        self.inner = inner
        self.sim = None
        self.windows = 0
        self.name = "spy"

    def attach(self, sim):
        self.sim = sim
        if hasattr(self.inner, "attach"):
            self.inner.attach(sim)

    def reset(self, seed=None):
        self.inner.reset(seed)

    def set_weights(self, w1, w2, end=None):
        if hasattr(self.inner, "set_weights"):
            self.inner.set_weights(w1, w2, end)

    def decide(self, window):
        t = window.time
        self.windows += 1
        assert t == int(t)  # one pass per slot
        for j in window.jobs:  # B_cur
            assert j.submit <= t and j.earliest <= t <= j.latest
        for j in self.sim.upcoming.values():  # B_fut: submitted, not yet startable
            assert j.submit <= t < j.earliest
        assert window.resources.capacity == self.sim.system.capacity.at(t)
        return self.inner.decide(window)

    def __getattr__(self, name):
        return getattr(self.inner, name)


@pytest.mark.parametrize("policy", POLICIES)
def test_no_job_seen_early_capacity_respected_drops_after_latest(policy):
    path = OSDEC / "quarter_day_72slots_150jobs.json"
    model = OSDECModel.from_dict(json.loads(path.read_text())["data"])
    jobs, system = osdec_workload(model)
    spy = _Spy(make_policy(policy))
    spy.set_weights(model.w1, model.w2, model.slots)
    sim = Simulator(jobs, system, spy, backfill="none", period=1.0)
    starts, drops = [], []

    def on_start(s, ev, rec):
        pool = s.pool
        assert pool.used <= pool.capacity  # a start only within the free capacity
        assert rec.job.earliest <= s.now <= rec.job.latest
        starts.append(rec.job.id)

    def on_drop(s, ev, rec):
        assert s.now > rec.job.latest and rec.start != rec.start
        drops.append(rec.job.id)

    sim.subscribe(Event.START, on_start)
    sim.subscribe(Event.DROP, on_drop)
    sim.run()
    assert spy.windows > 0
    assert len(starts) + len(drops) == model.n_jobs
    assert {r.job.id for r in sim.records.values() if r.mode == DROPPED} == set(drops)
    assert online_decision(model, sim.records).count(-1) == len(drops)


@pytest.mark.parametrize("policy", POLICIES)
def test_deterministic(policy):
    path = OSDEC / "quarter_day_72slots_150jobs.json"
    # a time limit that never binds: a solve cut short by load would differ between runs
    opts = {"time_limit": 120.0} if policy == "rolling-mip" else {}
    a, b = _run(path, policy, **opts), _run(path, policy, **opts)
    assert a.decision == b.decision and a.summary == b.summary


# ------------------------------------------------------------------ driver features, in general
def test_capacity_profile_on_a_plain_system():
    # 4 nodes, usable 1 until t=10, then 4: a 2-node job waits for the capacity (fcfs, no EASY)
    system = System(4, capacity=CapacityProfile([1, 4], period=10.0))
    jobs = [Job(1, 0, 5, 5, 2), Job(2, 0, 5, 5, 1)]
    sim = Simulator(jobs, system, make_policy("fcfs"), backfill="none", period=1.0).run()
    assert sim.records[1].start == 10.0
    assert sim.records[2].start == 10.0  # head-first: job 2 waited behind job 1
    assert isinstance(sim.pool, CapacityPool)


def test_capacity_profile_refuses_easy_backfilling():
    from hpcopt.errors import SimulationError

    system = System(4, capacity=CapacityProfile([1, 4], period=10.0))
    with pytest.raises(SimulationError, match="backfill='none'"):
        Simulator([Job(1, 0, 5, 5, 2)], system, make_policy("fcfs"), backfill="easy")


def test_earliest_and_latest_on_any_job():
    jobs = [Job(1, 0, 3, 3, 2, earliest=2.0), Job(2, 0, 3, 3, 2, latest=1.0),
            Job(3, 1, 1, 1, 1, latest=5.0)]
    sim = Simulator(jobs, System(2), make_policy("fcfs"), backfill="none")
    seen = []
    sim.subscribe(Event.DROP, lambda s, e, rec: seen.append((s.now, rec.job.id)))
    sim.run()
    # job 2 starts at 0 (both nodes until 3); job 1 is startable from 2 and starts at 3;
    # job 3 (1 node) waits behind it (fcfs) and, job 1 running 3..6, is past its latest (5)
    # at the next event (6): dropped there, never started
    assert sim.records[2].start == 0.0
    assert sim.records[1].start == 3.0
    assert sim.records[3].mode == DROPPED and seen == [(6.0, 3)]


def test_capacity_pool_overload_and_copy():
    pool = CapacityPool(8, CapacityProfile([6, 2]))
    pool.set_time(0)
    job = Job(1, 0, 1, 1, 4)
    pool.take(job)
    pool.set_time(1)
    assert (pool.free, pool.overload) == (0, 2) and not pool.fits(Job(2, 0, 1, 1, 1))
    copy = pool.copy()
    copy.give(job, 4)
    assert (copy.free, pool.free) == (2, 0)


def test_policy_options_declared():
    assert make_policy("tetris", knob=0.5).knob == 0.5
    pol = make_policy("rolling-mip", horizon=4, backend="osdec-greedy", time_limit=1.0)
    assert (pol.horizon, pol.backend) == (4, "osdec-greedy")
    from hpcopt.policies.base import declared_options

    assert {o.name for o, _ in declared_options("rolling-mip")} == {
        "horizon", "backend", "time_limit", "forecast", "lookahead"}


def test_knob_zero_is_sjf_scores():
    pol = make_policy("tetris", knob=0.0)
    jobs = [Job(1, 0, 3, 3, 1), Job(2, 0, 1, 1, 1)]
    sim = Simulator.at(0, System(4), pol, jobs, backfill="none")
    window = sim.window(sim.ordered_queue())
    s = pol.scores(window)
    assert s[1] > s[0]


# ------------------------------------------------------------------ CLI end to end
def test_cli_simulate_osdec_file(tmp_path, capsys):
    from hpcopt.cli import main

    out = tmp_path / "run"
    path = OSDEC / "small_12slots_20jobs.json"
    assert main(["simulate", str(path), "--policy", "rolling-mip", "--horizon", "6",
                 "--time-limit", "5", "--offline-backend", "scip", "--out", str(out),
                 "--no-progress"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    for key in (*SUMMARY_KEYS, "gap_to_offline"):
        assert key in summary
    assert summary["settings"]["policy_options"]["horizon"] == 6
    assert summary["total_reward"] <= OPTIMA["small_12slots_20jobs"]
    rows = list(csv.DictReader((out / "jobs.csv").read_text().splitlines()))
    assert len(rows) == 20 and {r["mode"] for r in rows} >= {"dropped"}
    assert "total_reward=" in capsys.readouterr().out
    assert main(["simulate", str(path), "--policy", "fifo", "--offline-bound", "85",
                 "--no-progress", "--out", str(tmp_path / "f")]) == 0
    s = json.loads((tmp_path / "f" / "summary.json").read_text())
    assert s["gap_to_offline"] == pytest.approx((85 - s["total_reward"]) / 85)


def test_api_simulate_osdec_is_its_own_entry_point():
    """A cloud day is ``hpcopt.simulate_osdec``: its result declares the offline decision and
    the simulator (nothing is set on a result after the fact)."""
    import hpcopt
    from hpcopt.osdec import OsdecResult

    res = hpcopt.simulate_osdec(str(OSDEC / "tiny_4jobs.json"), policy="fifo")
    assert isinstance(res, OsdecResult)
    assert res.decision == TINY_EXPECTED["fifo"][0]
    assert res.simulator.records and res.settings["model"] == "osdec"


def _model(capacity, jobs):
    return OSDECModel(slots=len(capacity), capacity=capacity, cores=[j[0] for j in jobs],
                      duration=[j[1] for j in jobs], earliest=[j[2] for j in jobs],
                      latest=[j[3] for j in jobs])


def test_rolling_mip_pays_what_a_job_already_waited():
    """b (1 core x 2 slots, worth 2) can only start at slot 4, after waiting 4 slots: a delay
    penalty of 8.  FIFO starts it anyway; the rolling MIP counts the delay from b's earliest
    slot, not from the current slot, and drops it."""
    model = _model([1] * 8, [(1, 4, 0, 0), (1, 2, 0, 5)])
    fifo = _run(model, "fifo")
    assert fifo.decision == [0, 4] and fifo.summary["total_reward"] == 4 + 2 - 8
    mip = _run(model, "rolling-mip", horizon=3, backend="osdec-greedy")
    assert mip.decision == [0, -1] and mip.summary["total_reward"] == 4


@pytest.mark.parametrize("backend", ["scip", "osdec-greedy"])
def test_rolling_mip_charges_a_start_past_its_planning_slots(backend):
    """With H = 1 and the true capacity known, a 4-slot job that fits now but runs into the
    capacity drop at slot 2 costs 2 x 2 x 10 = 40 > its revenue 8: every slot it occupies is
    charged, so it is not started.  Past the day's end capacity is free: the same job at the
    last slot but one is started."""
    mip = _run(_model([2, 2, 0, 0, 2, 2], [(2, 4, 0, 0)]), "rolling-mip", horizon=1,
               forecast="oracle", backend=backend)
    assert mip.decision == [-1] and mip.summary["total_reward"] == 0
    short = _run(_model([2, 2, 0, 0, 2, 2], [(2, 4, 0, 0)]), "rolling-mip", horizon=1,
                 forecast="oracle", backend=backend, lookahead=0)  # only slot 0 charged
    assert short.decision == [0] and short.summary["total_reward"] == 8 - 40
    late = _run(_model([0, 0, 0, 0, 2, 2], [(2, 4, 4, 4)]), "rolling-mip", horizon=1,
                forecast="oracle", backend=backend)
    assert late.decision == [4] and late.summary["total_reward"] == 8


def test_an_online_run_needs_slots_from_zero():
    model = _model([2] * 4, [(1, 2, -2, 1), (1, 1, 0, 3)])  # a sub-model, not a workload
    with pytest.raises(SimulationError, match=r"jobs\[0\]\.submit: expected a slot >= 0"):
        _run(model, "fifo")
