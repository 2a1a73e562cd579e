"""OSDEC model (issue #13, Model): evaluate against an independent oracle, every exact backend
against a brute force over all start choices, the heuristic certified, limits, validation,
instance files and the CLI.

The oracle below works on the raw instance ``data`` dict in plain Python (its own load
profile, its own admissible starts); it never calls ``OSDECModel.evaluate``,
``start_range`` or ``time_indexed``.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
import random

import numpy as np
import pytest

import hpcopt
from hpcopt.cli import main
from hpcopt.errors import InstanceError, ModelError, SolverOptionError
from hpcopt.instances import instance_from_dict, load_instance
from hpcopt.models import model_class
from hpcopt.models.osdec import OSDECModel
from hpcopt.result import Status, Termination

from .conftest import INSTANCES

OSDEC_DIR = INSTANCES / "osdec"
EXACT = ("scip", "cpsat", "pyomo:appsi_highs", "pyomo:scip_direct")


# ------------------------------------------------------------------------ the oracle
def oracle(data: dict, starts) -> tuple[bool, float, float, float, float]:
    """(feasible, revenue, delay penalty, violation penalty, total) of ``starts`` (None or -1:
    dropped) straight from the definition (spec osdec.md)."""
    T, cap = data["slots"], data["capacity"]
    w1, w2 = data.get("w1", 2), data.get("w2", 10)
    forbid = data.get("past_horizon", "free") == "forbid"
    load = [0] * T
    feasible, revenue, delay = True, 0, 0
    for job, s in zip(data["jobs"], starts):
        if s is None or s == -1:
            continue
        if not (job["earliest"] <= s <= job["latest"]) or not (0 <= s < T):
            feasible = False
        if forbid and s + job["duration"] > T:
            feasible = False
        revenue += job["cores"] * job["duration"]
        delay += s - job["earliest"]
        for t in range(s, s + job["duration"]):  # occupies s .. s + d - 1
            if 0 <= t < T:  # capacity counts only slots < T
                load[t] += job["cores"]
    over = sum(max(0, load[t] - cap[t]) for t in range(T))
    return feasible, revenue, w1 * delay, w2 * over, revenue - w1 * delay - w2 * over


def brute_force(data: dict) -> tuple[float, tuple]:
    """The optimum over every choice of a start (or none) per job, by the oracle."""
    T = data["slots"]
    forbid = data.get("past_horizon", "free") == "forbid"
    choices = []
    for job in data["jobs"]:
        hi = min(job["latest"], T - 1)
        if forbid:
            hi = min(hi, T - job["duration"])
        choices.append([-1] + list(range(max(0, job["earliest"]), hi + 1)))
    best, arg = -math.inf, None
    for starts in itertools.product(*choices):
        ok, *_, total = oracle(data, starts)
        assert ok
        if total > best:
            best, arg = total, starts
    return best, arg


def random_data(rng: random.Random, n_jobs: int, slots: int = 6, **extra) -> dict:
    jobs = []
    for i in range(n_jobs):
        g = rng.randrange(slots)
        e = g + rng.choice([0, 0, 1])
        jobs.append({"id": f"j{i}", "cores": rng.randint(1, 3), "duration": rng.randint(1, 4),
                     "submit": g, "earliest": e, "latest": e + rng.randint(0, 3)})
    data = {"slots": slots, "capacity": [rng.randint(0, 4) for _ in range(slots)],
            "w1": rng.choice([0, 1, 2, 2, 3]), "w2": rng.choice([1, 2, 10, 10]), "jobs": jobs}
    data.update(extra)
    return data


def rolling_data(rng: random.Random, n_jobs: int) -> dict:
    """A rolling-horizon sub-problem: some windows opened before slot 0 (negative earliest),
    their delay counting from there."""
    data = random_data(rng, n_jobs, w1=rng.choice([1, 2, 3]))
    for job in data["jobs"][: n_jobs // 2 + 1]:
        waited = rng.randint(1, 4)
        job["earliest"] = job["submit"] = -waited
        job["latest"] = rng.randint(0, 2)
    return data


TINY = [random_data(random.Random(seed), 3 + seed % 3) for seed in range(24)]
TINY += [rolling_data(random.Random(300 + s), 4) for s in range(6)]
TINY += [random_data(random.Random(100 + s), 4, past_horizon="forbid") for s in range(6)]
TINY += [random_data(random.Random(200 + s), 4, w1=0.5, w2=2.5) for s in range(4)]
BRUTE = [brute_force(d) for d in TINY]


def test_the_tiny_set_exercises_every_term():
    """Otherwise the brute-force comparisons could pass on trivial instances."""
    terms = [oracle(d, arg)[1:4] for d, (_, arg) in zip(TINY, BRUTE)]
    assert any(r > 0 for r, _, _ in terms)
    assert any(dl > 0 for _, dl, _ in terms)  # some optimum delays a job
    assert any(v > 0 for _, _, v in terms)  # some optimum overloads a slot on purpose
    assert any(any(s == -1 for s in arg) for _, arg in BRUTE)  # some optimum drops a job
    assert any(j["latest"] >= d["slots"] for d in TINY for j in d["jobs"])
    assert any(j["earliest"] + j["duration"] > d["slots"] for d in TINY for j in d["jobs"])
    # a job whose window opened before slot 0 is started (its delay counted from its earliest)
    # and one is dropped because of what it already waited
    waited = [(j, s) for d, (_, arg) in zip(TINY, BRUTE) for j, s in zip(d["jobs"], arg)
              if j["earliest"] < 0]
    assert any(s >= 0 for _, s in waited) and any(s == -1 for _, s in waited)


# ------------------------------------------------------------------------ evaluate
@pytest.mark.parametrize("k", range(len(TINY)))
def test_evaluate_matches_the_oracle_on_random_decisions(k):
    data = TINY[k]
    m = OSDECModel.from_dict(data)
    rng = random.Random(k)
    for _ in range(40):
        starts = [rng.choice([-1, rng.randrange(-1, data["slots"] + 3),
                              rng.randint(j["earliest"], j["latest"])]) for j in data["jobs"]]
        ok, rev, delay, viol, total = oracle(data, starts)
        ev = m.evaluate(starts)
        assert ev.feasible == ok, starts
        assert (ev.revenue, ev.delay_penalty, ev.violation_penalty) == (rev, delay, viol)
        assert ev.objective == total
        assert ev.terms["total_reward"] == total
        assert ev.started + ev.dropped == len(starts)


def test_evaluate_by_hand():
    m = load_instance(OSDEC_DIR / "tiny_4jobs.json").model
    # a at 0 (slots 0-1), b at 2 (2-4), c dropped, d at 4 (4-7; 6 and 7 are past T: free)
    ev = m.evaluate([0, 2, -1, 4])
    assert ev.feasible and ev.objective == 14
    assert (ev.revenue, ev.delay_penalty, ev.violation_penalty) == (18, 4, 0)
    assert ev.load == (4, 4, 2, 2, 3, 1) and ev.overload == (0,) * 6
    ev = m.evaluate([0, 1, 2, -1])  # slot 1: 4 + 2 > 4; slot 2: 2 + 2 > 2; slot 3: 2 + 2 > 2
    assert ev.overload == (0, 2, 2, 2, 0, 0) and ev.violation_penalty == 60
    assert m.evaluate([3, -1, -1, -1]).violations == (1.0, 0.0, 0.0)  # a after its latest
    assert m.decision_ids([0, 2, -1, 4]) == ("a", "b", "d")
    assert m.starts([0, 2, -1, 4]) == {"a": 0, "b": 2, "d": 4}


def test_evaluate_refuses_malformed_decisions():
    m = load_instance(OSDEC_DIR / "tiny_4jobs.json").model
    for bad in ([0, 1], [0, 1, 2, 3, 4], [0.5, -1, -1, -1], "abcd", None):
        with pytest.raises(ModelError, match="osdec decision"):
            m.evaluate(bad)
    assert m.evaluate([None, None, None, None]).objective == 0  # None = dropped


# ------------------------------------------------------------------------ exact backends
@pytest.mark.parametrize("backend", EXACT)
@pytest.mark.parametrize("k", range(len(TINY)))
def test_every_exact_backend_matches_the_brute_force(backend, k):
    data, (best, _) = TINY[k], BRUTE[k]
    opts = {"greedy_start": False} if backend in ("scip", "cpsat") else None
    r = hpcopt.solve(OSDECModel.from_dict(data), backend, solver_options=opts)
    assert r.status == Status.OPTIMAL and r.termination == Termination.OPTIMAL
    assert r.certified
    assert r.objective == pytest.approx(best, abs=1e-9)
    ok, *_, total = oracle(data, r.decision)
    assert ok and total == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("backend", ["scip", "cpsat"])
def test_greedy_start_and_warm_start_keep_the_optimum(backend):
    for data, (best, arg) in zip(TINY[:8], BRUTE[:8]):
        m = OSDECModel.from_dict(data)
        assert hpcopt.solve(m, backend).objective == pytest.approx(best)
        r = hpcopt.solve(m, backend, warm_start=list(arg))
        assert r.status == Status.OPTIMAL and r.objective == pytest.approx(best)
    with pytest.raises(SolverOptionError, match="warm_start"):
        hpcopt.solve(m, backend, warm_start=[99] * m.n_jobs)
    with pytest.raises(SolverOptionError, match="greedy_start"):
        hpcopt.solve(m, backend, solver_options={"greedy_start": "yes"})


def test_pyomo_form_sizes_and_the_reduced_form():
    data = TINY[3]
    m = OSDECModel.from_dict(data)
    pm = m.to_pyomo()
    T = data["slots"]
    starts = sum(len(range(j["earliest"], min(j["latest"], T - 1) + 1)) for j in data["jobs"])
    assert len(pm.x) == starts and len(pm.v) == T and len(pm.overload) == T
    reduced = m.to_pyomo(reduce=True)
    assert len(reduced.x) <= starts and len(reduced.v) <= T
    ti = m.time_indexed()
    assert (ti.value > 0).all() and (ti.max_load > ti.capacity).all()


def test_a_model_without_jobs_or_admissible_starts():
    m = OSDECModel.from_dict({"slots": 3, "capacity": [1, 1, 1], "jobs": []})
    for backend in ("scip", "cpsat", "osdec-greedy"):
        r = hpcopt.solve(m, backend)
        assert r.objective == 0 and r.decision == ()
    m = OSDECModel.from_dict({"slots": 3, "capacity": [1, 1, 1], "jobs": [
        {"cores": 1, "duration": 1, "earliest": 3, "latest": 5}]})  # starts only at/after T
    for backend in ("scip", "cpsat", "osdec-greedy", "pyomo:appsi_highs"):
        r = hpcopt.solve(m, backend)
        assert r.objective == 0 and r.decision == (-1,)


# ------------------------------------------------------------------------ heuristic
@pytest.mark.parametrize("lp", [True, False])
@pytest.mark.parametrize("k", range(len(TINY)))
def test_the_heuristic_is_certified_and_never_claims_optimal(k, lp):
    data, (best, _) = TINY[k], BRUTE[k]
    r = hpcopt.solve(OSDECModel.from_dict(data), "osdec-greedy", solver_options={"lp": lp})
    assert r.status == Status.FEASIBLE and r.termination == Termination.FINISHED
    assert r.certified and r.extra["lp"] == (lp and any(
        j["earliest"] < data["slots"] for j in data["jobs"]))
    ok, *_, total = oracle(data, r.decision)
    assert ok and total == r.objective <= best + 1e-9
    if r.extra["lp"]:  # the LP relaxation's optimum: a valid bound
        assert r.bound >= best - 1e-9
    else:
        assert math.isinf(r.bound)


@pytest.mark.parametrize("lp", [True, False])
def test_the_heuristic_is_good_on_the_tiny_set(lp):
    """Not a guarantee, a regression guard: it finds most tiny optima."""
    hits = sum(hpcopt.solve(OSDECModel.from_dict(d), "osdec-greedy",
                            solver_options={"lp": lp}).objective >= b - 1e-9
               for d, (b, _) in zip(TINY, BRUTE))
    assert hits >= 0.75 * len(TINY)


def test_lp_rounding_beats_the_plain_greedy_on_a_day_like_window():
    m = day_like(144, 600, 11)
    lp = hpcopt.solve(m, "osdec-greedy")
    plain = hpcopt.solve(m, "osdec-greedy", solver_options={"lp": False})
    assert lp.extra["lp"] and lp.objective > plain.objective and lp.bound >= lp.objective
    with pytest.raises(SolverOptionError, match="lp must be"):
        hpcopt.solve(m, "osdec-greedy", solver_options={"lp": 1})


# ------------------------------------------------------------------------ limits
def day_like(slots: int, n: int, seed: int) -> OSDECModel:
    """Oversubscribed synthetic jobs (own generator: the tests do not import the script)."""
    rng = np.random.default_rng(seed)
    g = np.sort(rng.integers(0, slots, n))
    e = g + rng.integers(0, 7, n)
    jobs = [{"cores": int(c), "duration": int(d), "submit": int(a), "earliest": int(b),
             "latest": int(b + w)} for c, d, a, b, w in zip(
                 rng.choice([1, 2, 4, 8], n), rng.integers(1, 25, n), g, e,
                 rng.integers(0, 13, n))]
    cap = rng.integers(20, 60, slots).tolist()
    return OSDECModel.from_dict({"slots": slots, "capacity": cap, "jobs": jobs})


@pytest.mark.parametrize("backend", ["scip", "cpsat"])
def test_a_time_limit_gives_a_certified_incumbent_and_a_bound(backend):
    m = day_like(144, 600, 7)
    r = hpcopt.solve(m, backend, time_limit=2.0)
    assert r.wall_time < 6.0
    assert r.status == Status.FEASIBLE and r.termination == Termination.TIME_LIMIT
    assert r.certified and r.bound >= r.objective and math.isfinite(r.gap)
    lp = hpcopt.solve(m, "osdec-greedy")
    assert r.bound <= lp.bound + 1e-6  # at least as tight as the LP bound it starts from


def test_the_heuristic_honours_a_time_limit():
    m = day_like(288, 3000, 3)
    for lp in (True, False):
        r = hpcopt.solve(m, "osdec-greedy", time_limit=0.05, solver_options={"lp": lp})
        assert r.wall_time < 1.0 and r.certified
        assert r.termination == Termination.TIME_LIMIT and r.status == Status.FEASIBLE


def test_no_proven_bound_yet_is_an_infinite_bound():
    """SCIP reports 1e20 before it has a dual bound: that is no bound, not a number."""
    m = day_like(288, 3000, 3)
    r = hpcopt.solve(m, "scip", time_limit=1.0)
    assert r.certified and (math.isinf(r.bound) or r.bound < 1e15)


# ------------------------------------------------------------------------ validation
GOOD = {"slots": 3, "capacity": [2, 2, 2], "w1": 2, "w2": 10, "jobs": [
    {"id": "a", "cores": 1, "duration": 2, "submit": 0, "earliest": 0, "latest": 1},
    {"id": "b", "cores": 2, "duration": 1, "submit": 1, "earliest": 1, "latest": 2}]}


def _bad(path: str, value):
    data = json.loads(json.dumps(GOOD))
    target = data
    keys = path.split(".")
    for key in keys[:-1]:
        target = target[int(key)] if key.isdigit() else target[key]
    if value is KeyError:
        del target[keys[-1]]
    else:
        target[keys[-1]] = value
    return data


@pytest.mark.parametrize("path,value,field", [
    ("slots", 0, "slots"),
    ("slots", 2.5, "slots"),
    ("capacity", [2, 2], "capacity"),
    ("capacity", [2, -1, 2], "capacity[1]"),
    ("capacity", [2, True, 2], "capacity[1]"),
    ("w1", -1, "w1"),
    ("w2", "ten", "w2"),
    ("past_horizon", "maybe", "past_horizon"),
    ("jobs.1.cores", 0, "jobs[1].cores"),
    ("jobs.0.duration", 1.5, "jobs[0].duration"),
    ("jobs.1.earliest", 0, "jobs[1].earliest"),  # before submit 1
    ("jobs.1.latest", 0, "jobs[1].latest"),  # before earliest 1
    ("jobs.0.submit", 1.5, "jobs[0].submit"),
    ("jobs.0.latest", -1, "jobs[0].latest"),
    ("jobs.0.cores", KeyError, "jobs[0].cores"),
    ("jobs.1.id", "a", "jobs"),  # duplicate id
    ("jobs.0.colour", "red", "jobs[0].colour"),
    ("extra", 1, "extra"),
    ("jobs", KeyError, "jobs"),
])
def test_bad_data_is_a_one_line_model_error_naming_the_field(path, value, field):
    with pytest.raises(ModelError) as err:
        OSDECModel.from_dict(_bad(path, value))
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"osdec {field}:"), text


def test_bad_instance_files_name_the_json_path():
    doc = {"format": "hpcopt-instance", "version": 1, "name": "x", "model": "osdec",
           "data": _bad("jobs.1.cores", 0)}
    with pytest.raises(InstanceError, match=r"data\.jobs\[1\]\.cores"):
        instance_from_dict(doc)
    doc["data"] = _bad("jobs.1.latest", 0)  # passes the schema, caught by the model
    with pytest.raises(InstanceError, match=r"data\.jobs\[1\]\.latest: expected an integer >= "
                                            r"earliest \(1\)"):
        instance_from_dict(doc)
    doc["data"] = _bad("jobs.0.colour", "red")
    with pytest.raises(InstanceError, match="colour"):
        instance_from_dict(doc)


# ------------------------------------------------------------------------ files and CLI
def test_round_trip_and_defaults():
    assert model_class("osdec") is OSDECModel
    m = OSDECModel.from_dict(GOOD)
    assert OSDECModel.from_dict(m.to_dict()) == m and m.to_dict() == GOOD
    minimal = {"slots": 2, "capacity": [1, 1], "jobs": [
        {"cores": 1, "duration": 1, "earliest": 1, "latest": 1}]}
    m = OSDECModel.from_dict(minimal)
    assert (m.w1, m.w2, m.ids, int(m.submit[0]), m.past_horizon) == (2, 10, (0,), 1, "free")
    assert OSDECModel.from_dict(m.to_dict()) == m
    forbid = OSDECModel.from_dict({**GOOD, "past_horizon": "forbid"})
    assert forbid.to_dict()["past_horizon"] == "forbid" and forbid != OSDECModel.from_dict(GOOD)


def _optima() -> dict:
    with open(OSDEC_DIR / "optima.csv") as fh:
        return {r["instance"]: float(r["optimum"]) for r in csv.DictReader(fh)}


def test_bundled_instances_load_round_trip_and_have_their_optima():
    optima = _optima()
    files = sorted(OSDEC_DIR.glob("*.json"))
    assert {f.stem for f in files} == set(optima)
    for path in files:
        inst = load_instance(path)
        assert inst.model_kind == "osdec"
        assert OSDECModel.from_dict(json.loads(json.dumps(inst.model.to_dict()))) == inst.model
        if inst.model.n_jobs <= 20:
            best = brute_force(inst.model.to_dict())[0] if inst.model.n_jobs <= 5 else None
            r = hpcopt.solve(inst.model, "cpsat")
            assert r.status == Status.OPTIMAL and r.objective == optima[inst.name]
            assert best is None or best == optima[inst.name]


@pytest.mark.slow  # the slow tier (-m slow): a long check, run by CI after the default run
def test_cli_solve_with_scip(tmp_path, capsys):
    out = tmp_path / "rows.jsonl"
    code = main(["solve", str(OSDEC_DIR / "*.json"), "--backend", "scip", "--time-limit", "60",
                 "--out", str(out)])
    assert code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    optima = _optima()
    assert len(rows) == len(optima)
    for row in rows:
        assert row["model"] == "osdec" and row["status"] == "OPTIMAL" and row["certified"]
        assert row["objective"] == optima[row["instance"]]
    assert "tiny_4jobs" in capsys.readouterr().out
