"""No policy sees the future: changing everything that happens after time t (later arrivals,
their sizes and run times, future capacity) changes no start at or before t.

Every registered policy (the registry is enumerated, so a new policy is covered without
editing this file), HPC and cloud, learned included, on a real trace slice (KTH-SP2) and on
an OSDEC day (Azure v1 dev, the benchmark family).  The one policy option that looks ahead
by design, the rolling MIP's ``forecast=oracle``, is off by default and is shown to fail the
same check (so the check can fail).  On an OSDEC day the machine size M is known in advance
(the instance's ``meta.machine_size``; C_t <= M); the cloud policies must not depend on it
either, since a bare model has only C_t and the system's size is then the day's largest C_t:
the learned agents' former capacity scale, that size, moved 10-25 of about 400 starts before
slot 30 of this day.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import hpcopt
from hpcopt.domain import Job, System
from hpcopt.instances import instance_from_dict
from hpcopt.osdec import simulate_osdec
from hpcopt.policies import policy_names
from hpcopt.policies.base import declared_options

from .conftest import shared_file

KTH = "hpc_swf/pwa/KTH-SP2-1996-2.1-cln.swf.gz"
HPC_JOBS = (50, 100)  # t between the submissions of the 50th and 51st, 100th and 101st job
OSDEC_T = (30, 50)  # slots of a 72-slot day (capacity binds from about slot 30 on)
# time limits that are never reached, so that a run does not depend on the machine's load;
# on the trace the rolling MIP solves each pass with the fast backend (SCIP on a trace of
# second-long "slots" takes minutes)
OPTIONS = {"rolling-mip": {"time_limit": 60.0, "horizon": 6}}
HPC_OPTIONS = {"rolling-mip": {"backend": "osdec-greedy", "horizon": 3, "lookahead": 2}}
# policies that take the slice without burst buffer and SSD (they plan nodes only; with
# requests they cannot see, the rolling MIP's starts stall and the test takes minutes), and
# the machine they need
PLAIN = {"rolling-mip": None, "tjap-window": "tjap"}
NOT_ON_A_DAY = {"tjap-window": "needs a fat-tree topology",
                "slurm": "schedules a fixed machine (Slurm's nodes), not cloud slots"}


@pytest.fixture(scope="module")
def kth():
    """The first 160 jobs of KTH-SP2 with burst-buffer and SSD requests (BBSched's policies
    need them) on a machine with both."""
    trace = hpcopt.load_trace(shared_file(KTH), max_jobs=120)
    n = trace.system.nodes
    jobs = [replace(j, bb=float(int(j.id) % 4 * 20), ssd=ssd(int(j.id) % 3, j.nodes, n))
            for j in trace.jobs]
    return jobs, System(n, bb=100.0, ssd_classes={128.0: n // 2, 256.0: n - n // 2})


def ssd(k: int, nodes: int, n: int) -> float:
    """0, 64 or 200 GB per node (200 only for jobs that fit the 256 GB half)."""
    return float((0, 64, 200 if nodes <= n - n // 2 else 64)[k])


@pytest.fixture(scope="module")
def day():
    """A 72-slot OSDEC day of the benchmark family (instance dict)."""
    shared_file("cloud/azure_v1_vmtable_derived/v1.dev.txt.gz")
    from hpcopt.workloads.osdec import deferrable_suite

    return deferrable_suite("test", 1, seed=0, slots=72)[0]


def changed_after(jobs, system, t: float, seed: int):
    """The same jobs up to ``t``; every later arrival moved, resized, re-timed, plus new ones."""
    rng = np.random.default_rng(seed)
    keep = [j for j in jobs if j.submit <= t]
    later = [j for j in jobs if j.submit > t]
    end = max(j.submit for j in jobs)
    out = list(keep)
    for j in later:
        run = float(rng.integers(1, 20000))
        out.append(replace(j, submit=t + (j.submit - t) * float(rng.uniform(0.3, 1.5)),
                           runtime=run, walltime=run * float(rng.uniform(1, 3)),
                           nodes=(m := int(rng.integers(1, system.nodes + 1))),
                           bb=float(rng.integers(0, 6) * 20),
                           ssd=ssd(int(rng.integers(0, 3)), m, system.nodes)))
    first = max(int(j.id) for j in jobs) + 1
    for k in range(20):
        run = float(rng.integers(1, 20000))
        out.append(Job(first + k, float(rng.uniform(t + 1, end)), run, run * 2,
                       int(rng.integers(1, system.nodes + 1)), bb=20.0))
    return sorted(out, key=lambda j: (j.submit, j.id))


def changed_day(inst: dict, t: int, seed: int, machine: bool = True) -> dict:
    """The same day up to slot ``t``; later arrivals and the capacity after ``t`` changed
    (within the machine size unless ``machine`` is False)."""
    rng = np.random.default_rng(seed)
    data = inst["data"]
    T = data["slots"]
    jobs = []
    for j in data["jobs"]:
        if j["submit"] > t:
            e = min(j["submit"] + int(rng.integers(0, 7)), T - 1)
            j = {**j, "cores": int(rng.choice([1, 2, 4, 8, 16])),
                 "duration": int(rng.integers(1, 25)), "earliest": e,
                 "latest": min(e + int(rng.integers(0, 13)), T - 1)}
        jobs.append(j)
    for k in range(40):
        g = int(rng.integers(t + 1, T))
        jobs.append({"id": f"new:{k}", "cores": int(rng.choice([1, 2, 4, 8])),
                     "duration": int(rng.integers(1, 25)), "submit": g, "earliest": g,
                     "latest": min(g + 6, T - 1)})
    top = inst["meta"]["machine_size"] if machine else 10**6  # known in advance: C_t <= M
    cap = [c if s <= t else min(top, int(c * rng.uniform(0.2, 3.0)) + int(rng.integers(0, 200)))
           for s, c in enumerate(data["capacity"])]
    return {**inst, "data": {**data, "jobs": jobs, "capacity": cap}}


def starts_until(result, t: float) -> dict:
    """``{job id: start}`` of the jobs started at or before ``t``."""
    jobs = result.jobs
    early = jobs[jobs["start"] <= t]
    return dict(zip(early["job_id"].astype(str), early["start"]))


def run_hpc(name, jobs, system):
    if name in PLAIN:
        jobs = [replace(j, bb=0.0, ssd=0.0) for j in jobs]
        if PLAIN[name] == "tjap":
            from hpcopt.workloads.tjap import tjap_system

            system = tjap_system()
        else:
            system = System(system.nodes)
    return hpcopt.simulate(jobs, system=system, policy=name, seed=0,
                           **{**OPTIONS.get(name, {}), **HPC_OPTIONS.get(name, {})})


def run_day(name, inst, **options):
    """``inst`` online under ``name`` on its machine (``meta.machine_size``, known ahead)."""
    return simulate_osdec(instance_from_dict(inst), name, seed=0,
                          **{**OPTIONS.get(name, {}), **options})


_BASE_RUNS: dict[str, object] = {}


def base_day(name, day):
    """``run_day(name, day)`` on the module's unchanged day, run once per policy (the runs
    are deterministic: tests/test_osdec_online.py)."""
    if name not in _BASE_RUNS:
        _BASE_RUNS[name] = run_day(name, day)
    return _BASE_RUNS[name]


@pytest.mark.parametrize("name", policy_names())
def test_no_policy_sees_the_future(name, kth, day):
    jobs, system = kth
    base = run_hpc(name, jobs, system)
    for k, n in enumerate(HPC_JOBS):
        t = (jobs[n - 1].submit + jobs[n].submit) / 2
        other = run_hpc(name, changed_after(jobs, system, t, seed=k), system)
        assert starts_until(other, t) == starts_until(base, t), (name, "KTH", t)
    # the check covers real starts (the ppo-att ablation starts only 7 of the first 100 KTH
    # jobs by then, fifo 27: it learned a cloud day, not this queue; the day below has 20+)
    assert len(starts_until(base, t)) >= 5
    if name in NOT_ON_A_DAY:
        return
    base = base_day(name, day)
    for k, t in enumerate(OSDEC_T):
        other = run_day(name, changed_day(day, t, seed=k))
        assert starts_until(other, t) == starts_until(base, t), (name, "OSDEC day", t)
    assert len(starts_until(base, OSDEC_T[0])) >= 20


def cloud_policies() -> list[str]:
    """The registered cloud-slot policies (OSDEC's heuristics, rolling MIP, learned agents)."""
    from hpcopt.policies import make_policy
    from hpcopt.policies.osdec import ScorePolicy

    return [n for n in policy_names() if isinstance(make_policy(n), ScorePolicy)]


@pytest.mark.parametrize("name", cloud_policies())
def test_cloud_policies_need_no_machine_size(name, day):
    """On a bare model (no machine size) a later capacity rise above anything seen changes
    the system's size, which no cloud policy may read."""
    model = instance_from_dict(day).model
    base = simulate_osdec(model, name, seed=0, **OPTIONS.get(name, {}))
    for k, t in enumerate(OSDEC_T):
        other = instance_from_dict(changed_day(day, t, seed=k, machine=False)).model
        other = simulate_osdec(other, name, seed=0, **OPTIONS.get(name, {}))
        assert starts_until(other, t) == starts_until(base, t), (name, t)


def test_the_check_catches_a_policy_that_looks_ahead(day):
    """The rolling MIP with the true future capacity (its oracle ablation) changes earlier
    starts when only the future changes; with its default forecast it does not."""
    t = OSDEC_T[1]
    data = day["data"]
    other = {**day, "data": {**data, "capacity": [c if s <= t else 0
                                                  for s, c in enumerate(data["capacity"])]}}
    peek = run_day("rolling-mip", day, forecast="oracle")
    assert starts_until(run_day("rolling-mip", other, forecast="oracle"), t) != \
        starts_until(peek, t)
    assert starts_until(run_day("rolling-mip", other), t) == \
        starts_until(base_day("rolling-mip", day), t)


@pytest.mark.parametrize("name", policy_names())
def test_no_option_looks_ahead_by_default(name):
    """An option that can look ahead names it ("oracle") and is off by default."""
    for opt, default in declared_options(name):
        if opt.choices and "oracle" in opt.choices:
            assert default != "oracle", (name, opt.name)
            assert "oracle" in opt.help or "clairvoyant" in opt.help
