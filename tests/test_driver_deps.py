"""Job dependencies (``Job.deps``): a job joins the queue only once every job it depends on
has finished, whatever the free resources; bad dependencies are one-line errors."""

from __future__ import annotations

import random

import pytest

from hpcopt.domain import Job, System
from hpcopt.errors import SimulationError
from hpcopt.policies import make_policy
from hpcopt.sim.driver import Event, Simulator


def run(jobs, nodes=4, policy="fcfs", **kw):
    return Simulator(jobs, System(nodes), make_policy(policy), **kw).run()


def test_a_dependent_job_waits_for_its_dependency():
    jobs = [Job(1, 0, 100, 100, 1), Job(2, 0, 50, 200, 1, deps=(1,)),
            Job(3, 10, 10, 10, 1), Job(4, 200, 5, 5, 1, deps=(3,))]
    rec = run(jobs).records
    assert (rec[2].start, rec[2].end) == (100, 150)  # nodes were free from t = 0
    assert rec[4].start == 200  # its dependency had finished before it was submitted


@pytest.mark.parametrize("policy", ["fcfs", "sjf", "knapsack", "random"])
@pytest.mark.parametrize("seed", range(3))
def test_random_dags_respect_dependencies(policy, seed):
    rng = random.Random(seed)
    jobs = []
    for i in range(300):
        deps = tuple(rng.sample(range(i), k=min(i, rng.choice([0, 0, 1, 2])))) if i else ()
        wall = float(rng.choice([10, 60, 300]))
        jobs.append(Job(i, float(rng.randrange(0, 3000, 7)), wall * rng.choice([0.5, 1.0]),
                        wall, rng.choice([1, 2, 4, 8]), deps=deps))
    submitted = []
    sim = Simulator(jobs, System(16), make_policy(policy))
    sim.subscribe(Event.SUBMIT, lambda s, e, job: submitted.append(job.id))
    sim.run()
    rec = sim.records
    for job in jobs:
        r = rec[job.id]
        assert r.start >= job.submit
        assert all(r.start >= rec[d].end for d in job.deps), job
    assert sorted(submitted) == list(range(300))  # every job is announced once


def test_injected_jobs_may_depend_on_finished_or_running_jobs():
    sim = Simulator([Job(1, 0, 100, 100, 2), Job(2, 0, 10, 10, 1)], System(4),
                    make_policy("fcfs"))

    def inject(s, e, rec):
        if rec.job.id == 2:  # at t = 10: job 2 finished, job 1 runs until 100
            s.submit(Job("a", s.now, 5, 5, 1, deps=(2,)))
            s.submit(Job("b", s.now, 5, 5, 1, deps=(1, "a")))

    sim.subscribe(Event.COMPLETE, inject)
    sim.run()
    assert sim.records["a"].start == 10 and sim.records["b"].start == 100


@pytest.mark.parametrize(("jobs", "needle"), [
    ([Job(1, 0, 1, 1, 1, deps=(9,))], "depends on job 9, which is not in the simulation"),
    ([Job(1, 0, 1, 1, 1, deps=(1,))], "depends on itself"),
    ([Job(1, 0, 1, 1, 1, deps=(2,)), Job(2, 0, 1, 1, 1, deps=(1,))],
     "wait on dependencies that never finish"),
])
def test_bad_dependencies(jobs, needle):
    with pytest.raises(SimulationError, match=needle):
        run(jobs)


def test_simulator_at_takes_queued_jobs_with_dependencies():
    """A state's queued and running jobs have met their dependencies (regression: at() with
    a queued job carrying deps raised TypeError)."""
    queue = [Job("s2", 0, 50, 50, 2, deps=("s1",)), Job("b", 1, 10, 10, 4)]
    running = [(Job("r", 0, 100, 100, 2, deps=("x",)), 100.0)]
    sim = Simulator.at(10, System(4), make_policy("fcfs"), queue, running)
    sim.schedule()
    assert sim.records["s2"].start == 10 and sim.records["b"].reserved_at == 100
