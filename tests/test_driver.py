"""The event-driven driver: EASY scenarios computed by hand, invariants, events, options."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcopt.domain import Decision, Job, System
from hpcopt.errors import InvalidDecisionError, SimulationError
from hpcopt.policies import make_policy
from hpcopt.policies.base import Policy
from hpcopt.sim.driver import Event, Simulator
from hpcopt.sim.settings import DriverOptions


def J(id, submit, nodes, walltime, runtime=None):
    return Job(id=id, submit=submit, runtime=walltime if runtime is None else runtime,
               walltime=walltime, nodes=nodes)


def run(jobs, nodes, policy="fcfs", **kw):
    opts = {k: kw.pop(k) for k in list(kw) if k in ("backend", "value", "seed")}
    return Simulator(jobs, System(nodes), make_policy(policy, **opts), **kw).run()


def starts(sim):
    return {i: (r.start, r.mode) for i, r in sim.records.items()}


# ---------------------------------------------------------------- EASY computed by hand
SCENARIO_1 = [J(1, 0, 6, 100), J(2, 1, 8, 50), J(3, 2, 4, 90), J(4, 3, 2, 200), J(5, 4, 1, 10)]


def test_easy_backfills_before_shadow_and_into_extra_nodes():
    # t=1: J2 (8) does not fit (4 free): shadow 100 (J1 ends), extra 10-8 = 2.
    # t=2: J3 (4 nodes, ends 92 <= 100) backfills.  t=92: J4 (2 nodes, ends 292) fits the 2
    # extra nodes and backfills; J5 (ends 102 > 100, extra now 0) must wait.
    # t=100: J2 starts on its reservation and J5, now the head, gets one (shadow 150);
    # t=150: J5 starts on it.
    assert starts(run(SCENARIO_1, 10)) == {
        1: (0, "ready"), 2: (100, "reserved"), 3: (2, "backfilled"),
        4: (92, "backfilled"), 5: (150, "reserved"),
    }


def test_no_backfilling_is_strict_fcfs():
    assert starts(run(SCENARIO_1, 10, backfill="none")) == {
        1: (0, "ready"), 2: (100, "ready"), 3: (150, "ready"), 4: (150, "ready"),
        5: (150, "ready"),
    }


def test_driver_options_are_the_one_spelling_of_the_settings():
    """``Simulator(..., DriverOptions(...))`` (how the library builds every simulation) and
    the same settings as keywords run alike; both at once, or an unknown name, is refused."""
    by_options = Simulator(SCENARIO_1, System(10), make_policy("fcfs"),
                           DriverOptions(backfill="none")).run()
    assert starts(by_options) == starts(run(SCENARIO_1, 10, backfill="none"))
    assert by_options.settings.backfill is False
    with pytest.raises(TypeError, match="not both"):
        Simulator(SCENARIO_1, System(10), make_policy("fcfs"), DriverOptions(), window=3)
    with pytest.raises(TypeError, match="unknown driver setting.*bakfill.*backfill"):
        Simulator(SCENARIO_1, System(10), make_policy("fcfs"), bakfill="none")


def test_easy_uses_requested_walltime_and_actual_completions():
    # A ends early (runtime 40 of 100); A and B share the estimated end 100, so the shadow
    # of C is 100 with extra 0.  D (ends 40 + 60 = 100 <= 100) backfills at 40; E (ends 110)
    # does not.  C starts at 100 when B and D complete together; E, then the head, is
    # reserved for 150.
    jobs = [J("A", 0, 5, 100, 40), J("B", 0, 5, 100), J("C", 10, 10, 50), J("D", 20, 3, 60),
            J("E", 30, 2, 70)]
    assert starts(run(jobs, 10)) == {
        "A": (0, "ready"), "B": (0, "ready"), "C": (100, "reserved"), "D": (40, "backfilled"),
        "E": (150, "reserved"),
    }


def test_completions_apply_before_submissions_at_the_same_time():
    jobs = [J(1, 0, 4, 10), J(2, 10, 4, 10)]
    assert starts(run(jobs, 4)) == {1: (0, "ready"), 2: (10, "ready")}


def test_sjf_order_starts_shortest_request_first():
    jobs = [J(1, 0, 4, 100), J(2, 1, 4, 300), J(3, 2, 4, 30)]
    s = starts(run(jobs, 4, policy="sjf", backfill="none"))
    assert s[3][0] == 100 and s[2][0] == 130


def test_wfp_prefers_large_long_waiting_jobs():
    # at t=100 both wait; WFP utility (wait/walltime)^3 * nodes: job 2: (99/100)^3*4,
    # job 3: (98/100)^3*1 -> job 2 first although it came later than... it came earlier; use
    # a later, larger job to show the size effect
    jobs = [J(1, 0, 4, 100), J(2, 1, 1, 100), J(3, 2, 4, 100)]
    s = starts(run(jobs, 4, policy="wfp", backfill="none"))
    assert s[3][0] == 100 and s[2][0] == 200


def test_largest_first_starts_the_largest_jobs_first():
    jobs = [J(1, 0, 2, 10), J(2, 0, 3, 10), J(3, 0, 4, 10)]
    s = starts(run(jobs, 7, policy="largest-first", backfill="none"))
    assert s[3][0] == 0 and s[2][0] == 0 and s[1][0] == 10


def test_knapsack_policy_packs_the_window_and_reserves_the_oldest():
    # free 10 at t=0: FCFS would start 6 then stop; the knapsack (value = nodes) takes 5 + 5.
    jobs = [J(1, 0, 6, 100), J(2, 0, 5, 100), J(3, 0, 5, 100)]
    sim = run(jobs, 10, policy="knapsack", backend="dp")
    s = starts(sim)
    assert s[2] == (0, "ready") and s[3] == (0, "ready") and s[1] == (100, "reserved")


# ---------------------------------------------------------------- starvation, events, period
def test_starvation_bound_serves_a_passed_over_job_first():
    # job 1 (2 nodes) is passed over at t=0 by the larger job 2; largest-first would pick job 3
    # (9 nodes) again at t=100, but with K=1 job 1 is served first.
    jobs = [J(1, 0, 2, 100), J(2, 0, 9, 100), J(3, 50, 9, 100)]
    plain = starts(run(jobs, 10, policy="largest-first", backfill="none"))
    bounded = starts(run(jobs, 10, policy="largest-first", backfill="none", starvation_bound=1))
    assert plain[1][0] == 200 and plain[3][0] == 100
    assert bounded[1][0] == 100 and bounded[3][0] == 200


def test_jobs_can_be_injected_and_events_observed():
    seen = []
    jobs = [J(1, 0, 4, 10)]
    sim = Simulator(jobs, System(4), make_policy("fcfs"))

    def on_complete(s, event, rec):
        seen.append((event, rec.job.id, s.now))
        if rec.job.id == 1:
            s.submit(J(2, s.now + 5, 4, 10))

    sim.subscribe(Event.COMPLETE, on_complete)
    sim.subscribe("start", lambda s, e, rec: seen.append((e, rec.job.id, s.now)))
    sim.run()
    assert sim.records[2].start == 15
    assert seen == [(Event.START, 1, 0), (Event.COMPLETE, 1, 10), (Event.START, 2, 15),
                    (Event.COMPLETE, 2, 25)]


def test_injecting_into_the_past_is_an_error():
    sim = Simulator([J(1, 10, 1, 10)], System(1), make_policy("fcfs"))
    sim.subscribe(Event.START, lambda s, e, r: s.submit(J(9, 0, 1, 1)))
    with pytest.raises(SimulationError, match="before now"):
        sim.run()


def test_periodic_windows_schedule_only_at_ticks():
    jobs = [J(1, 0, 2, 30), J(2, 10, 2, 30), J(3, 70, 2, 30)]
    sim = run(jobs, 4, period=60)
    assert starts(sim) == {1: (0, "ready"), 2: (60, "ready"), 3: (120, "ready")}


class _Never(Policy):
    def decide(self, window):
        return Decision(())


def test_periodic_passes_end_when_only_time_is_left():
    """A periodic run whose policy leaves jobs on an idle machine with nothing to come gets
    the run's error (as an event-driven run does) instead of ticking forever; a job with a
    latest start keeps the ticks going until it is dropped."""
    jobs = [J(1, 0, 2, 30), J(2, 10, 2, 30)]
    with pytest.raises(SimulationError, match=r"left 2 job\(s\) queued"):
        Simulator(jobs, System(4), _Never(), period=60, backfill="none").run()
    with pytest.raises(SimulationError, match=r"left 2 job\(s\) queued"):
        Simulator(jobs, System(4), _Never(), backfill="none").run()
    with pytest.raises(SimulationError, match=r"left 1 job\(s\) queued"):  # 2 backfills
        Simulator(jobs, System(4), _Never(), period=60).run()
    late = Job(3, 0.0, 2.0, 30.0, 1, latest=600.0)
    sim = Simulator([late], System(4), _Never(), period=60, backfill="none")
    sim.run()
    assert sim.records[3].mode == "dropped" and sim.now == 660
    with pytest.raises(SimulationError, match=r"left 1 job\(s\) queued.*job 1\)"):
        Simulator([jobs[0], late], System(4), _Never(), period=60, backfill="none").run()
    # a capacity profile: ticks go on until its last step, then the same error
    from hpcopt.sim.resources import CapacityProfile

    cloud = System(4, capacity=CapacityProfile([0, 0, 0, 4], period=60))
    sim = Simulator([jobs[0]], cloud, make_policy("fcfs"), period=60, backfill="none")
    sim.run()
    assert sim.records[1].start == 180
    with pytest.raises(SimulationError, match=r"left 1 job\(s\) queued"):
        Simulator([jobs[0]], cloud, _Never(), period=60, backfill="none").run()


class _Greedy(Policy):
    def __init__(self, ids):
        self.ids = ids

    def decide(self, window):
        return Decision(tuple(self.ids))


@pytest.mark.parametrize("ids, match", [((1, 2), "over-subscribes"), ((7,), "not in the window"),
                                        ((1, 1), "twice")])
def test_invalid_decisions_are_errors_not_oversubscription(ids, match):
    jobs = [J(1, 0, 3, 10), J(2, 0, 3, 10)]
    with pytest.raises(InvalidDecisionError, match=match):
        Simulator(jobs, System(4), _Greedy(ids)).run()


def test_bad_inputs_are_clear_errors():
    with pytest.raises(SimulationError, match="needs 8 nodes"):
        Simulator([J(1, 0, 8, 10)], System(4), make_policy("fcfs"))
    with pytest.raises(SimulationError, match="duplicate"):
        Simulator([J(1, 0, 1, 10), J(1, 5, 1, 10)], System(4), make_policy("fcfs"))
    with pytest.raises(SimulationError, match="backfill"):
        Simulator([], System(4), make_policy("fcfs"), backfill="conservative")
    with pytest.raises(SimulationError, match="order"):
        Simulator([], System(4), make_policy("fcfs"), order="lifo")


def test_a_policy_that_never_starts_anything_is_reported():
    with pytest.raises(SimulationError, match="left 1 job"):
        Simulator([J(1, 0, 1, 10)], System(4), _Greedy(())).run()


# ---------------------------------------------------------------- invariants over random traces
job_lists = st.lists(
    st.tuples(st.integers(0, 200), st.integers(1, 8), st.integers(1, 100), st.integers(0, 100)),
    min_size=1, max_size=25,
)
POLICIES = ["fcfs", "sjf", "wfp", "largest-first", "random", "knapsack"]


def _jobs(raw):
    return [Job(id=i, submit=float(s), runtime=float(min(r, w)), walltime=float(w), nodes=n)
            for i, (s, n, w, r) in enumerate(raw)]


@settings(max_examples=60, deadline=None, derandomize=True)
@given(raw=job_lists, nodes=st.integers(8, 12), policy=st.sampled_from(POLICIES),
       backfill=st.sampled_from(["easy", "none"]), starvation=st.sampled_from([None, 2]))
def test_driver_invariants(raw, nodes, policy, backfill, starvation):
    jobs = _jobs(raw)
    sim = Simulator(jobs, System(nodes), make_policy(policy), backfill=backfill,
                    starvation_bound=starvation)
    in_use = [0]

    def on_start(s, e, rec):
        in_use[0] += rec.job.nodes
        assert in_use[0] <= nodes, "nodes in use exceed the system"
        assert s.now >= rec.job.submit, "job started before its submission"

    def on_complete(s, e, rec):
        in_use[0] -= rec.job.nodes
        assert math.isclose(s.now, rec.start + rec.job.runtime)

    sim.subscribe(Event.START, on_start)
    sim.subscribe(Event.COMPLETE, on_complete)
    sim.run()
    assert in_use[0] == 0
    for rec in sim.records.values():
        assert rec.mode in ("ready", "reserved", "backfilled")
        if policy == "fcfs" and backfill == "easy" and starvation is None \
                and rec.reserved_at is not None:
            # backfilled jobs never delay the reserved job past its reservation
            assert rec.start <= rec.reserved_at


@settings(max_examples=15, deadline=None, derandomize=True)
@given(raw=job_lists, seed=st.integers(0, 2**16))
def test_same_seed_same_schedule(raw, seed):
    def once():
        sim = Simulator(_jobs(raw), System(8), make_policy("random", seed=seed))
        return starts(sim.run())

    assert once() == once()


def test_on_start_hook_sets_a_runtime_known_only_at_start():
    from dataclasses import replace

    from hpcopt.errors import SimulationError
    from hpcopt.policies import make_policy
    from hpcopt.sim.driver import Simulator

    jobs = [Job(1, 0, 10, 100, 2), Job(2, 5, 10, 10, 4)]
    sim = Simulator(jobs, System(4), make_policy("fcfs"))
    sim.on_start(lambda s, job: replace(job, runtime=50) if job.id == 1 else None)
    sim.run()
    assert (sim.records[1].end, sim.records[2].start) == (50, 50)
    assert sim.records[1].job.runtime == 50
    bad = Simulator(jobs, System(4), make_policy("fcfs"))
    bad.on_start(lambda s, job: replace(job, nodes=1))
    with pytest.raises(SimulationError, match="changed job 1's id or size"):
        bad.run()


def test_fewer_collections_restores_thresholds_across_threads():
    """Overlapping blocks in several threads leave the collector as they found it."""
    import gc
    import threading

    from hpcopt.sim.driver import fewer_collections

    before = gc.get_threshold()

    def work():
        for _ in range(500):
            with fewer_collections(), fewer_collections():
                assert gc.get_threshold()[0] >= 100_000

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert gc.get_threshold() == before


def test_hand_written_constructors_match_the_dataclass_fields():
    """Job, RunningJob, Window and Decision have hand-written constructors (speed): they
    must take exactly the dataclass fields, in order, with the same defaults, and stay
    frozen; Job's must check what __post_init__ checks."""
    import dataclasses
    import inspect

    from hpcopt.domain import Decision, Job, RunningJob, Window
    from hpcopt.errors import ModelError

    for cls in (Job, RunningJob, Window, Decision):
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        fields = dataclasses.fields(cls)
        assert [p.name for p in params] == [f.name for f in fields], cls
        for p, f in zip(params, fields):
            default = (f.default if f.default is not dataclasses.MISSING
                       else f.default_factory() if f.default_factory is not dataclasses.MISSING
                       else inspect.Parameter.empty)
            if p.default is not inspect.Parameter.empty and p.default is not default:
                # Window/Decision take a sentinel for a default_factory field
                assert callable(f.default_factory), (cls, p.name)
            else:
                assert p.default == default, (cls, p.name)
    assert Job.__slots__ == tuple(f.name for f in dataclasses.fields(Job))
    job = Job(7, 1.0, 2.0, 3.0, 4, cores=9, deps=(1,))
    assert [getattr(job, f.name) for f in dataclasses.fields(Job)] == [
        7, 1.0, 2.0, 3.0, 4, 0.0, 0.0, 0, -1, -1, 9, None, None, (1,)]
    assert dataclasses.replace(job, nodes=5).nodes == 5 and job == Job(7, 1.0, 2.0, 3.0, 4,
                                                                      cores=9, deps=(1,))
    for bad in (dict(nodes=0), dict(runtime=-1.0), dict(walltime=1.0), dict(bb=-1.0),
                dict(ssd=-1.0)):
        with pytest.raises(ModelError):
            dataclasses.replace(job, **bad)
    with pytest.raises(dataclasses.FrozenInstanceError):
        job.nodes = 1
    d = Decision()
    assert d.start == () and d.allocations == {} and d.allocations is not Decision().allocations
    assert dataclasses.replace(d, reserve=3) == Decision((), 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.reserve = 1


def test_static_order_keys_are_their_key_functions():
    """The driver compares a new job with the queue's tail by ``STATIC_KEYS`` (one C call):
    the same tuples as the orders' key functions, at any time."""
    from hpcopt.sim.orders import ORDERS, STATIC_KEYS

    jobs = [J(3, 5.0, 2, 30), J(1, 5.0, 1, 10), Job("a_1", 0.0, 1.0, 7.5, 4)]
    for name, key in STATIC_KEYS.items():
        fn, static = ORDERS[name]
        assert static
        for job in jobs:
            assert key(job) == fn(job, 0.0) == fn(job, 1e9)
    assert {n for n, (_, static) in ORDERS.items() if static} == set(STATIC_KEYS)
