"""OSDEC exact backends on instances of the real shape (issue #13): the trajectory family of
``benchmarks/osdec.py`` (``deferrable_suite("test", ...)``), cut to a few hours by the
generator's own ``slots=`` option.

Every exact backend (SCIP, CP-SAT, the Pyomo model on HiGHS) must prove the same optimum and
each decision must be certified by ``OSDECModel.evaluate``; on small real-shaped subsets
(<= 7 jobs, 5 slots, the real capacity profile scaled so that it binds) the optimum must equal
an exhaustive enumeration scored by this file's own cost function (written from the spec, not
from the MIP code).  The fast heuristic and the online FIFO policy never exceed the optimum.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

import hpcopt
from hpcopt.instances import instance_from_dict
from hpcopt.models.osdec import OSDECModel
from hpcopt.osdec import offline_reference, simulate_osdec
from hpcopt.result import Result, Termination

from .conftest import shared_file

EXACT = ("scip", "cpsat", "pyomo:appsi_highs")


@pytest.fixture(scope="module")
def cuts():
    """Two real-shaped instances: 24 slots deferrable and 24 slots real-time (two bins)."""
    shared_file("cloud/azure_v1_vmtable_derived/v1.dev.txt.gz")
    from hpcopt.workloads.osdec import deferrable_suite

    out = deferrable_suite("test", 1, seed=0, slots=24)
    out += deferrable_suite("test", 1, seed=1, slots=24, real_time=True)
    return out


# ------------------------------------------------------------------------ independent oracle
def cost(data: dict, starts) -> float:
    """Total reward of ``starts`` (None: dropped) straight from the spec: revenue c*d minus
    w1 * delay minus w2 * overload over slots < T (a job occupies s .. s+d-1)."""
    T, w1, w2 = data["slots"], data.get("w1", 2), data.get("w2", 10)
    load = [0] * T
    total = 0.0
    for job, s in zip(data["jobs"], starts):
        if s is None:
            continue
        total += job["cores"] * job["duration"] - w1 * (s - job["earliest"])
        for t in range(s, min(T, s + job["duration"])):
            load[t] += job["cores"]
    return total - w2 * sum(max(0, x - c) for x, c in zip(load, data["capacity"]))


def enumerate_optimum(data: dict) -> float:
    """Best ``cost`` over every choice (drop, or a start in [earliest, latest] and < T)."""
    T = data["slots"]
    choices = [[None, *range(max(0, j["earliest"]), min(j["latest"], T - 1) + 1)]
               for j in data["jobs"]]
    best = -math.inf
    starts = [None] * len(choices)

    def rec(i):
        nonlocal best
        if i == len(choices):
            best = max(best, cost(data, starts))
            return
        for s in choices[i]:
            starts[i] = s
            rec(i + 1)

    rec(0)
    return best


def subset(inst: dict, first: int, slots: int = 5, n: int = 7) -> dict:
    """Slots ``first .. first+slots-1`` of a real instance: its first ``n`` jobs whose window
    opens there (times shifted), the capacity profile scaled so that it binds."""
    d = inst["data"]
    jobs = [j for j in d["jobs"] if first <= j["earliest"] < first + slots][:n]
    cap = d["capacity"][first:first + slots]
    need = sum(j["cores"] for j in jobs)
    scale = 0.4 * need / max(cap)
    return {"slots": slots, "w1": d.get("w1", 2), "w2": d.get("w2", 10),
            "capacity": [max(1, round(c * scale)) for c in cap],
            "jobs": [{**j, "submit": max(0, j["submit"] - first),
                      "earliest": j["earliest"] - first, "latest": j["latest"] - first}
                     for j in jobs]}


# ------------------------------------------------------------------------ tests
def test_every_exact_backend_proves_the_same_certified_optimum(cuts):
    for inst in cuts:
        model = instance_from_dict(inst).model
        assert model.n_jobs > 50  # the real shape: hundreds of jobs in two hours
        optima = {}
        for backend in EXACT:
            r = hpcopt.solve(model, backend, time_limit=60)
            assert r.status.name == "OPTIMAL", (inst["name"], backend, r.status)
            ev = model.evaluate(r.decision)
            assert ev.feasible
            assert ev.objective == pytest.approx(r.objective, rel=1e-9, abs=1e-9)
            optima[backend] = r.objective
        ref = optima["scip"]
        for v in optima.values():
            assert v == pytest.approx(ref, rel=1e-6), (inst["name"], optima)
        greedy = hpcopt.solve(model, "osdec-greedy")
        assert model.evaluate(greedy.decision).feasible
        assert greedy.objective <= ref + 1e-6 * abs(ref)
        online = simulate_osdec(model, "fifo").summary["total_reward"]
        assert online <= ref + 1e-6 * abs(ref)


def test_real_shaped_subsets_match_an_exhaustive_enumeration(cuts):
    binding = 0
    for inst in cuts:
        for first in (0, 6, 12):
            data = subset(inst, first)
            if not data["jobs"]:
                continue
            best = enumerate_optimum(data)
            model = OSDECModel.from_dict(data)
            for backend in EXACT:
                r = hpcopt.solve(model, backend)
                assert r.status.name == "OPTIMAL"
                assert r.objective == pytest.approx(best, rel=1e-6, abs=1e-6), (first, backend)
                starts = [None if s < 0 else int(s) for s in r.decision]
                assert cost(data, starts) == pytest.approx(best, abs=1e-6)
                assert model.evaluate(r.decision).objective == pytest.approx(best, abs=1e-6)
            greedy = hpcopt.solve(model, "osdec-greedy")
            assert greedy.objective <= best + 1e-6
            assert simulate_osdec(model, "fifo").summary["total_reward"] <= best + 1e-6
            revenue_all = sum(j["cores"] * j["duration"] for j in data["jobs"])
            binding += best < revenue_all  # capacity or windows cost something
    assert binding >= 2  # the subsets are not trivial


def test_offline_reference_ignores_an_infinite_bound(monkeypatch):
    """A solver stopped before proving any bound reports bound = inf: the reference is then
    the incumbent, never inf (which made every gap NaN)."""
    import hpcopt.solvers

    fake = Result(Termination.TIME_LIMIT, "scip", "osdec", decision=(1,), objective=5.0,
                  bound=math.inf, wall_time=0.1)
    monkeypatch.setattr(hpcopt.solvers, "solve", lambda *a, **k: fake)
    model = OSDECModel.from_dict({"slots": 1, "capacity": [1], "jobs": []})
    assert offline_reference(model, "scip", 1.0)["reference"] == 5.0
    fake = replace(fake, bound=7.0)
    assert offline_reference(model, "scip", 1.0)["reference"] == 7.0


def test_rolling_mip_sub_models_from_a_real_run(cuts, monkeypatch):
    """The sub-models ``rolling-mip`` builds each slot of a real-shaped day (windows opened
    before slot 0: negative earliest) are solved alike by every exact backend, certified by
    evaluate and by this file's own cost function; on small pieces of them the optimum
    equals the exhaustive enumeration."""
    import hpcopt.solvers as solvers

    seen, real_solve = [], solvers.solve

    def record(model, *args, **kwargs):
        seen.append(model)
        return real_solve(model, *args, **kwargs)

    monkeypatch.setattr(solvers, "solve", record)
    simulate_osdec(instance_from_dict(cuts[0]).model, "rolling-mip", horizon=6,
                   time_limit=30.0)
    monkeypatch.undo()
    waited = [m for m in seen if (m.earliest < 0).any()]
    assert len(waited) >= 3  # capacity binds at the end of this cut
    for model in sorted(waited, key=lambda m: -int((m.earliest < 0).sum()))[:3]:
        data = model.to_dict()
        optima = []
        for backend in EXACT:
            r = hpcopt.solve(model, backend, time_limit=60)
            assert r.status.name == "OPTIMAL", (backend, r.status)
            assert model.evaluate(r.decision).feasible
            starts = [None if x == -1 else x for x in r.decision]
            assert cost(data, starts) == pytest.approx(r.objective, rel=1e-9, abs=1e-9)
            optima.append(r.objective)
        assert max(optima) - min(optima) <= 1e-6 * max(1.0, abs(optima[0])), optima
        piece = dict(data, jobs=[j for j in data["jobs"] if j["earliest"] < 0][:7])
        small = OSDECModel.from_dict(piece)
        assert hpcopt.solve(small, "scip").objective == pytest.approx(
            enumerate_optimum(piece), abs=1e-6)
