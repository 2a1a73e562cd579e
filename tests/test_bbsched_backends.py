"""BBSched backends: the exact front against brute force, the GA and NSGA-II against the
exact front, certification, determinism, options, and the CLI's Pareto rows."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcopt.cli import main
from hpcopt.errors import ModelError, SolverOptionError
from hpcopt.models.bbsched import BBSchedModel, brute_force_front
from hpcopt.result import Status
from hpcopt.solvers import available_backends, solve

from .conftest import INSTANCES

BACKENDS = ["pareto-exact", "bbsched-ga", "nsga2"]
QUICK = {"generations": 60, "population": 12}


def table1():
    return BBSchedModel([80, 10, 40, 10, 20], [20, 85, 5, 0, 0], free_nodes=100, free_bb=100,
                        ids=["J1", "J2", "J3", "J4", "J5"])


def random_model(seed: int, n: int, objectives: int = 2) -> BBSchedModel:
    rng = np.random.default_rng(seed)
    with_ssd = objectives == 4 or rng.random() < 0.5
    sizes = [128, 256] if rng.random() < 0.7 else [64, 128, 256]
    classes = {str(s): int(c) for s, c in zip(sizes, rng.integers(0, 7, len(sizes)))}
    return BBSchedModel(
        rng.integers(1, 6, n), np.where(rng.random(n) < 0.6, rng.integers(1, 50, n), 0),
        rng.integers(0, 300, n) if with_ssd else None,
        free_nodes=None if with_ssd else int(rng.integers(0, 3 * n)),
        free_bb=float(rng.integers(0, 30 * n)), ssd_classes=classes if with_ssd else None,
        objectives=objectives)


def vectors(points) -> list:
    return sorted(tuple(p.objectives) if hasattr(p, "objectives") else tuple(p)
                  for p in points)


def test_every_bbsched_backend_is_here_and_certified():
    assert set(available_backends("bbsched")) == set(BACKENDS)
    for backend, options in (("pareto-exact", None), ("bbsched-ga", {"fill": True}),
                             ("nsga2", None)):
        res = solve(table1(), backend, seed=3, solver_options=options)
        assert res.certified and res.selected_ids == ("J2", "J3", "J4", "J5")
        assert [p.objectives for p in res.pareto] == [(100, 20), (80, 90)]
        assert res.extra["rule"] == "bbsched" and res.objectives == (80, 90)
    assert solve(table1()).backend == "pareto-exact"  # the model's default backend
    assert solve(table1(), rule="lexicographic").selected_ids == ("J1", "J5")


@settings(derandomize=True, deadline=None, max_examples=120)
@given(st.integers(0, 2**31), st.integers(1, 14), st.sampled_from([2, 4]))
def test_exact_front_equals_brute_force(seed, n, objectives):
    model = random_model(seed, n if objectives == 2 else min(n, 11), objectives)
    res = solve(model, "pareto-exact")
    assert res.status == Status.OPTIMAL
    assert vectors(res.pareto) == vectors(brute_force_front(model)[1])


@pytest.mark.parametrize("seed", range(4))
def test_heuristics_return_feasible_nondominated_points_close_to_the_front(seed):
    model = random_model(seed, 10)
    exact = vectors(brute_force_front(model)[1])
    for backend in ("bbsched-ga", "nsga2"):
        res = solve(model, backend, seed=seed, solver_options={"generations": 200})
        assert res.status == Status.FEASIBLE and res.certified
        got = vectors(res.pareto)
        assert len(set(got)) == len(got)
        for f in got:  # mutually non-dominated, and none beyond the exact front
            assert not any(all(a >= b for a, b in zip(g, f)) and g != f for g in got)
            assert not any(all(a >= b for a, b in zip(f, e)) and f != e for e in exact)


def test_ga_approaches_the_exact_front_with_the_papers_budget():
    """G = 500, P = 20 on 10-job windows: pymoo's GD to the exact front, with objectives
    scaled to the free capacities, stays small; the ``fill`` repair reaches the front."""
    from pymoo.indicators.gd import GD

    for seed in range(4):
        model = random_model(seed, 10)
        scale = np.array([max(model.free_nodes, 1), max(model.free_bb, 1)])
        exact = np.array(vectors(brute_force_front(model)[1])) / scale
        for options, tol in (({}, 0.25), ({"fill": True}, 0.1)):
            res = solve(model, "bbsched-ga", seed=seed, solver_options=options)
            got = np.array(vectors(res.pareto)) / scale
            assert GD(-exact).do(-got) <= tol


def test_heuristics_are_deterministic_and_check_their_options():
    model = random_model(7, 12)
    for backend in ("bbsched-ga", "nsga2"):
        a = solve(model, backend, seed=5, solver_options=QUICK)
        b = solve(model, backend, seed=5, solver_options=QUICK)
        assert a.pareto == b.pareto and a.decision == b.decision
        with pytest.raises(SolverOptionError, match="unknown solver option"):
            solve(model, backend, solver_options={"gens": 5})
        with pytest.raises(SolverOptionError, match="population"):
            solve(model, backend, solver_options={"population": 1})
    with pytest.raises(SolverOptionError, match="mutation"):
        solve(model, "bbsched-ga", solver_options={"mutation": 2})
    four = random_model(2, 10, objectives=4)
    res = solve(four, "bbsched-ga", seed=1, solver_options=QUICK)
    assert res.certified and all(len(p.objectives) == 4 for p in res.pareto)


def test_exact_refuses_windows_beyond_its_bitmask():
    """The states algorithm (four objectives, float burst buffer) keeps 62-job bitmasks; the
    bitset algorithm (two objectives, integer burst buffer) has no job limit."""
    with pytest.raises(ModelError, match="at most 62"):
        solve(BBSchedModel([1] * 63, free_nodes=10), "pareto-exact",
              solver_options={"algorithm": "states"})
    assert solve(BBSchedModel([1] * 63, free_nodes=10), "pareto-exact").pareto[0].objectives \
        == (10.0, 0.0)


def test_cli_rows_carry_the_pareto_set_and_the_rules_pick(tmp_path, capsys):
    out = tmp_path / "rows.jsonl"
    path = str(INSTANCES / "bbsched" / "table1.json")
    assert main(["solve", path, "--backend", "pareto-exact,bbsched-ga", "--seed", "1",
                 "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    for row in rows:
        assert row["decision"] == ["J2", "J3", "J4", "J5"] and row["rule"] == "bbsched"
        assert row["pareto"] == [{"jobs": ["J1", "J5"], "objectives": [100.0, 20000.0]},
                                 {"jobs": ["J2", "J3", "J4", "J5"],
                                  "objectives": [80.0, 90000.0]}]
    assert main(["solve", path, "--rule", "lexicographic", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["decision"] == ["J1", "J5"]
    assert main(["solve", path, "--rule", "lexicographc"]) == 2
    assert "Did you mean 'lexicographic'" in capsys.readouterr().err


@pytest.mark.parametrize("seed", range(4))
def test_ga_repair_drops_jobs_from_the_back_until_feasible(seed):
    """The vectorised repair equals its definition: drop the last selected job of a row
    until the row is feasible (two objectives, and four with SSD classes)."""
    from hpcopt.solvers.bbsched_ga import repair

    rng = np.random.default_rng(seed)
    n = 15
    nodes, bb = rng.integers(1, 60, n), rng.integers(0, 900, n) * (rng.random(n) < 0.5)
    free_bb = float(bb.sum() / 3)
    models = [BBSchedModel(nodes, bb, free_nodes=int(nodes.sum() // 2), free_bb=free_bb),
              BBSchedModel(nodes, bb, rng.choice([0, 100, 200], n), free_bb=free_bb,
                           ssd_classes={128: int(nodes.sum() // 4), 256: int(nodes.sum() // 4)},
                           objectives=4)]
    for model in models:
        X = rng.random((30, n)) < 0.6
        expected = X.copy()
        for row in expected:
            while not model.feasible_many(row[None])[0]:
                row[np.flatnonzero(row)[-1]] = False
        assert (repair(model, X) == expected).all()
