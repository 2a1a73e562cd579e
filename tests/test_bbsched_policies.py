"""The BBSched paper's policies in the driver: Table 1 decisions, brute-force optimality of a
window, every resource respected on random workloads, determinism, metrics."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from hpcopt import simulate
from hpcopt.domain import Job, System, Window
from hpcopt.errors import SimulationError
from hpcopt.policies import make_policy
from hpcopt.policies.multi_resource import window_model
from hpcopt.sim.driver import Event, Simulator
from hpcopt.sim.resources import make_pool

NINE = ["baseline", "weighted", "weighted-cpu", "weighted-bb", "constrained-cpu",
        "constrained-bb", "constrained-ssd", "alignment-first", "bbsched"]
TABLE1 = System(nodes=100, bb=100.0)


def table1_jobs():
    sizes = [(80, 20), (10, 85), (40, 5), (10, 0), (20, 0)]
    return [Job(id=i + 1, submit=0.0, runtime=100.0, walltime=100.0, nodes=n, bb=b)
            for i, (n, b) in enumerate(sizes)]


def first_starts(policy, jobs, system, **options):
    started = []
    sim = Simulator(jobs, system, make_policy(policy, **options))
    sim.subscribe(Event.START, lambda s, e, rec: started.append(rec.job.id)
                  if rec.start == 0 else None)
    sim.run()
    return sorted(started)


@pytest.mark.parametrize("policy, expected", [
    ("baseline", [1, 4]),  # J1, then J4 backfilled (the paper's naive method)
    ("weighted-cpu", [1, 5]),
    ("constrained-cpu", [1, 5]),
    ("alignment-first", [1, 5]),
    ("weighted", [2, 3, 4, 5]),
    ("weighted-bb", [2, 3, 4, 5]),
    ("constrained-bb", [2, 3, 4, 5]),
    ("bbsched", [2, 3, 4, 5]),
])
def test_table1_decisions_match_the_paper(policy, expected):
    assert first_starts(policy, table1_jobs(), TABLE1) == expected


def _workload(seed: int, n: int = 60, nodes: int = 16):
    rng = np.random.default_rng(seed)
    jobs, t = [], 0.0
    for i in range(n):
        t += float(rng.exponential(40))
        size = int(rng.integers(1, nodes // 2 + 1))
        run = float(rng.integers(10, 400))
        jobs.append(Job(id=i, submit=t, runtime=run, walltime=run * float(rng.uniform(1, 3)),
                        nodes=size, bb=float(rng.integers(1, 60)) if rng.random() < 0.6 else 0.0,
                        ssd=float(rng.integers(0, 257))))
    return jobs, System(nodes=nodes, bb=100.0, ssd_classes={128: nodes // 2, 256: nodes // 2})


@pytest.mark.parametrize("policy", NINE)
def test_every_policy_respects_every_resource_and_is_deterministic(policy):
    jobs, system = _workload(3)
    peak = {"nodes": 0, "bb": 0.0, "ssd256": 0}
    sizes = sorted(system.ssd_classes)

    def watch(sim, event, rec):
        running = sim.running
        peak["nodes"] = max(peak["nodes"], sum(r.job.nodes for r in running))
        peak["bb"] = max(peak["bb"], sum(r.job.bb for r in running))
        peak["ssd256"] = max(peak["ssd256"], sum(r.allocation[1] for r in running))
        got = dict(zip(sizes, rec.allocation))
        assert all(size >= rec.job.ssd for size, n in got.items() if n)  # eligible class

    sim = Simulator(jobs, system, make_policy(policy, seed=1) if policy == "bbsched"
                    else make_policy(policy))
    sim.subscribe(Event.START, watch)
    sim.run()
    assert peak["nodes"] <= 16 and peak["bb"] <= 100.0 + 1e-9 and peak["ssd256"] <= 8
    assert all(rec.end >= rec.start >= rec.job.submit for rec in sim.records.values())
    a = simulate(jobs, system=system, policy=policy).jobs
    b = simulate(jobs, system=system, policy=policy).jobs
    assert a.equals(b)


def _window(jobs, system, free_nodes=None):
    pool = make_pool(system)
    return Window(time=0.0, jobs=jobs, resources=pool, running=(), system=system,
                  queue_length=len(jobs))


@pytest.mark.parametrize("seed", range(6))
def test_weighted_and_constrained_windows_are_brute_force_optimal(seed):
    """The knapsack each policy solves has the BBSched constraints and the stated value."""
    jobs, system = _workload(seed, n=9)
    for name, score in [("constrained-cpu", lambda F: (F[0], F[1])),
                        ("constrained-bb", lambda F: (F[1], F[0])),
                        ("weighted", lambda F: None)]:
        policy = make_policy(name)
        window = _window(jobs, system)
        model = window_model(window, jobs)
        x = policy.select(window, model)
        assert model.evaluate(x).feasible
        feasible = [bits for bits in itertools.product((0, 1), repeat=len(jobs))
                    if model.evaluate(bits).feasible]
        if name == "weighted":
            values = policy.values(model)
            assert np.dot(values, x) == max(np.dot(values, bits) for bits in feasible)
        else:
            best = max(score(model.evaluate(bits).objectives) for bits in feasible)
            assert score(model.evaluate(x).objectives) == pytest.approx(best)


def test_bbsched_policy_with_the_ga_and_options():
    jobs, system = _workload(5, n=40)
    res = simulate(jobs, system=system, policy="bbsched", backend="bbsched-ga", seed=4,
                   solver_options={"generations": 30, "population": 10})
    again = simulate(jobs, system=system, policy="bbsched", backend="bbsched-ga", seed=4,
                     solver_options={"generations": 30, "population": 10})
    assert res.jobs.equals(again.jobs) and res.settings["starvation_bound"] == 50
    with pytest.raises(SimulationError, match="rule"):
        make_policy("bbsched", rule="nope")
    with pytest.raises(SimulationError, match="does not solve bbsched"):
        make_policy("bbsched", backend="dp")


def test_multi_resource_metrics():
    jobs, system = _workload(7, n=40)
    s = simulate(jobs, system=system, policy="bbsched").summary
    for key in ("bb_usage", "ssd_usage", "wasted_ssd"):
        assert 0 <= s[key] <= 1, key
    table = simulate(jobs, system=system, policy="baseline").jobs
    assert (table["ssd_assigned"] >= table["ssd"] * table["nodes"] - 1e-9).all()
    span = table["end"].max() - table["submit"].min()
    assert simulate(jobs, system=system, policy="baseline").summary["bb_usage"] == \
        pytest.approx((table["bb"] * table["runtime"]).sum() / (100.0 * span))
