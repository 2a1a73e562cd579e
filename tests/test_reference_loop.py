"""hpcopt's FCFS + EASY equals an independent plain-Python loop (benchmarks/reference_easy.py).

The reference is the yardstick of ``benchmarks/simulator_speed.py``; here it is the oracle:
identical start times, job by job.  No timing assertions.
"""

from __future__ import annotations

import importlib.util
import random

import pytest

import hpcopt
from hpcopt.domain import Job

from .conftest import REPO, shared_file


def _reference():
    spec = importlib.util.spec_from_file_location(
        "reference_easy", REPO / "benchmarks" / "reference_easy.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


REF = _reference()


def _starts(jobs, nodes):
    res = hpcopt.simulate(list(jobs), nodes=nodes, policy="fcfs")
    return dict(zip(res.jobs["job_id"].tolist(), res.jobs["start"].tolist()))


def _tuples(jobs):
    return [(j.id, j.submit, j.runtime, j.walltime, j.nodes) for j in jobs]


@pytest.mark.parametrize("relpath, kwargs", [
    ("hpc_swf/pwa/KTH-SP2-1996-2.1-cln.swf.gz", {}),
    ("hpc_swf/alcf/theta_2022.swf.gz", {}),
    ("hpc_swf/lublin_model/lublin_256.swf.gz", {}),
])
def test_reference_matches_hpcopt_on_real_traces(relpath, kwargs):
    trace = hpcopt.load_trace(shared_file(relpath), max_jobs=3000, **kwargs)
    nodes = trace.system.nodes
    ref = REF.simulate_easy(_tuples(trace.jobs), nodes)
    got = _starts(trace.jobs, nodes)
    assert len(ref) == len(got) == len(trace.jobs)
    assert got == ref


@pytest.mark.parametrize("seed", range(5))
def test_reference_matches_hpcopt_on_tied_random_jobs(seed):
    """Coarse times make ties everywhere: equal submits, equal estimated ends, completions
    at submission times, zero runtimes, jobs of the whole machine."""
    rng = random.Random(seed)
    nodes = 16
    jobs = []
    for i in range(600):
        wall = float(rng.choice([0, 10, 20, 30, 60]))
        run = float(rng.choice([0.0, wall / 2, wall])) if wall else 0.0
        jobs.append(Job(id=i, submit=float(rng.randrange(0, 3000, 10)), runtime=run,
                        walltime=wall, nodes=rng.choice([1, 1, 2, 4, 8, 16])))
    assert _starts(jobs, nodes) == REF.simulate_easy(_tuples(jobs), nodes)


def test_reference_reads_clean_swf(tmp_path):
    path = tmp_path / "t.swf"
    path.write_text("; MaxNodes: 4\n"
                    "1 0 -1 10 2 -1 -1 2 20 -1 -1 1 -1 -1 1 -1 -1 -1\n"
                    "2 5 -1 5 4 -1 -1 4 5 -1 -1 1 -1 -1 1 -1 -1 -1\n")
    jobs = REF.read_clean_swf(path)
    assert jobs == [(1, 0.0, 10.0, 20.0, 2), (2, 5.0, 5.0, 5.0, 4)]
    assert REF.simulate_easy(jobs, 4) == {1: 0.0, 2: 10.0}


def _records(sim):
    return {jid: (r.start, r.end, r.mode, r.reserved_at) for jid, r in sim.records.items()}


def _random_jobs(seed: int, n: int, horizon: int, bb: bool = False) -> list[Job]:
    """Short jobs of 1-16 nodes, many ties and zero runtimes (optionally burst buffer)."""
    rng = random.Random(seed)
    jobs = []
    for i in range(n):
        wall = float(rng.choice([0, 10, 20, 30, 60]))
        run = float(rng.choice([0.0, wall / 2, wall])) if wall else 0.0
        jobs.append(Job(id=i, submit=float(rng.randrange(0, horizon, 10)), runtime=run,
                        walltime=wall, nodes=rng.choice([1, 1, 2, 4, 8, 16]),
                        bb=float(rng.choice([0, 0, 10, 40])) if bb else 0.0))
    return jobs


def _run_logged(sim) -> list:
    """Run ``sim``; the start, reserve and pass events it emitted, in order."""
    from hpcopt.sim.driver import Event

    events: list = []

    def log(s, e, p):
        what = (p[0].id, p[1]) if e == Event.RESERVE else getattr(getattr(p, "job", None),
                                                                   "id", None)
        events.append((e, s.now, what))

    for ev in (Event.START, Event.RESERVE, Event.PASS):
        sim.subscribe(ev, log)
    sim.run()
    return events


@pytest.mark.parametrize("policy, kw", [
    ("fcfs", {}), ("sjf", {}), ("baseline", {}), ("fcfs", {"backfill": "none"}),
    ("fcfs", {"window": 3}), ("sjf", {"backfill": "none", "window": 2}),
    ("fcfs", {"period": 15}),
])
@pytest.mark.parametrize("seed", range(3))
def test_quiet_passes_equal_full_passes(policy, kw, seed):
    """Passes where only new jobs joined the tail skip re-deciding (waits_for_head): the
    same records, passes and events as deciding every pass."""
    from hpcopt.domain import System
    from hpcopt.policies import make_policy
    from hpcopt.sim.driver import Simulator

    jobs = _random_jobs(seed, 400, 2000)
    runs = []
    for quiet in (True, False):
        sim = Simulator(jobs, System(16), make_policy(policy), **kw)
        assert sim._quiet_ok == (kw.get("backfill") != "none")
        sim._quiet_ok = sim._quiet_ok and quiet
        events = _run_logged(sim)
        runs.append((_records(sim), sim.passes, sim.now, sim.pool.free, events))
        if quiet and sim._quiet_ok:
            assert sim._quiet is not None or not sim.queue
    assert runs[0] == runs[1]


@pytest.mark.parametrize("policy, kw, bb", [
    ("fcfs", {}, False), ("sjf", {"window": 3}, False), ("wfp", {}, False),
    ("baseline", {}, True), ("fcfs", {"starvation_bound": 2}, False),
    ("fcfs", {"backfill": "none", "window": 2}, True), ("fcfs", {"period": 15}, True),
])
@pytest.mark.parametrize("seed", range(2))
def test_prefix_rule_applied_by_the_driver_equals_asking_decide(policy, kw, bb, seed,
                                                                monkeypatch):
    """A head-first policy declares ``starts_prefix``: the driver applies the rule itself
    instead of building a Window and calling decide().  Same records, passes and events as
    asking decide() every pass, on a node-only machine and with a burst buffer."""
    from hpcopt.domain import Decision, System
    from hpcopt.policies import make_policy
    from hpcopt.policies.classic import HeadFirst
    from hpcopt.sim.driver import Simulator

    jobs = _random_jobs(seed, 300, 1500, bb)
    system = System(16, bb=100.0) if bb else System(16)
    runs, calls = [], []
    decide = HeadFirst.decide
    monkeypatch.setattr(HeadFirst, "decide", lambda self, w: calls.append(w) or decide(self, w))
    for shortcut in (True, False):
        calls.clear()
        monkeypatch.setattr(HeadFirst, "starts_prefix", shortcut)
        sim = Simulator(jobs, system, make_policy(policy), **kw)
        assert sim._starts_prefix == shortcut
        events = _run_logged(sim)
        assert (not calls) if shortcut else calls
        runs.append((_records(sim), sim.passes, sim.now, events))
    assert runs[0] == runs[1]
    monkeypatch.setattr(HeadFirst, "starts_prefix", True)

    class Held(HeadFirst):  # overrides decide(): the driver must ask it again
        def decide(self, window):
            return Decision(()) if window.queue_length > 1 else super().decide(window)

    assert not Held.starts_prefix and HeadFirst.starts_prefix
    assert not Simulator(jobs[:5], system, Held())._starts_prefix

    class Wrapper:  # forwards attributes (starts_prefix too) but decides itself
        def __init__(self, inner):
            self.inner = inner

        def decide(self, window):
            return self.inner.decide(window)

        def __getattr__(self, name):
            return getattr(self.inner, name)

    assert Wrapper(make_policy(policy)).starts_prefix
    assert not Simulator(jobs[:5], system, Wrapper(make_policy(policy)))._starts_prefix
    pol = make_policy(policy)  # decide() replaced on the instance, after the constructor
    sim = Simulator(jobs, system, pol)
    calls.clear()
    pol.decide = lambda w: calls.append(w) or Decision(())
    with pytest.raises(Exception, match="left .* queued"):
        sim.run()
    assert calls
