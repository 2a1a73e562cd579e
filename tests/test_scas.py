"""SCAS model, the exact constrained-shortest-path DP and the ILP backends."""

import itertools

import numpy as np
import pytest

import hpcopt
from hpcopt.errors import ModelError
from hpcopt.models.dcas import DCASModel
from hpcopt.models.scas import SCASModel


def _window(rng, m_range, j_range, max_size, preset="paper-1000"):
    while True:
        m = int(rng.integers(*m_range))
        lo = int(rng.integers(0, 1000 - 3 * m))
        idle = np.sort(rng.choice(np.arange(lo, lo + 3 * m), m, replace=False))
        sizes = rng.integers(1, max_size + 1, int(rng.integers(*j_range)))
        if sizes.sum() <= m:
            return SCASModel(preset, idle, sizes)


def brute_force(model):
    best = np.inf
    for x in itertools.product(range(model.n_idle), repeat=model.n_jobs):
        ev = model.evaluate(x)
        if ev.feasible:
            best = min(best, ev.objective)
    return best


def test_evaluate_counts_overlaps_and_bad_positions():
    m = SCASModel("paper-1000", range(20), [5, 5])
    assert m.evaluate([0, 5]).feasible
    assert m.evaluate([0, 3]).violations == (0.0, 2.0)
    assert m.evaluate([0, 25]).violations[0] == 1.0
    # wrap-around: D(18, 5) = Q[18], Q[19], Q[0], Q[1], Q[2]
    assert m.allocation([18, 3])[0] == (18, 19, 0, 1, 2)


@pytest.mark.parametrize("preset", ["paper-1000", "hpcschedule-1000"])
def test_exact_equals_brute_force(preset):
    rng = np.random.default_rng(11)
    for _ in range(40):
        model = _window(rng, (4, 12), (1, 4), 5, preset)
        r = hpcopt.solve(model, "scas-exact")
        assert r.status == "OPTIMAL" and r.certified
        assert r.objective == pytest.approx(brute_force(model))


@pytest.mark.parametrize("backend,options", [
    ("scip", {}), ("scip", {"formulation": "compact"}), ("cpsat", {}),
    ("pyomo:appsi_highs", {"formulation": "compact"})])
def test_ilp_backends_agree_with_exact(backend, options):
    rng = np.random.default_rng(3)
    for _ in range(4):
        model = _window(rng, (20, 40), (2, 5), 10)
        exact = hpcopt.solve(model, "scas-exact")
        r = hpcopt.solve(model, backend, solver_options=options, seed=0)
        assert r.status == "OPTIMAL" and r.certified
        assert r.objective == pytest.approx(exact.objective, abs=0.01)


def test_time_limit_returns_incumbent():
    rng = np.random.default_rng(0)
    model = _window(rng, (150, 151), (14, 15), 10)
    r = hpcopt.solve(model, "scas-exact", time_limit=1e-6)
    assert r.status in ("FEASIBLE", "OPTIMAL") and r.certified


def test_dcas_optimum_never_worse_than_scas():
    rng = np.random.default_rng(5)
    for _ in range(10):
        scas = _window(rng, (20, 60), (2, 6), 12)
        exact = hpcopt.solve(scas, "scas-exact")
        dcas = DCASModel(scas.topology, scas.idle_nodes, scas.sizes)
        x = dcas.from_scas(exact.decision)
        assert dcas.evaluate(x).objective == pytest.approx(exact.objective)
        assert dcas.allocation(x) == scas.allocation(exact.decision)


def test_model_errors_name_the_field():
    with pytest.raises(ModelError, match="jobs: expected at most 3 nodes"):
        SCASModel("paper-1000", [1, 2, 3], [2, 2])
    with pytest.raises(ModelError, match=r"idle_nodes: expected node ids in 0..999"):
        SCASModel("paper-1000", [1, 2, 1000], [2])
    with pytest.raises(ModelError, match="distinct"):
        SCASModel("paper-1000", [1, 1, 2], [2])
    with pytest.raises(ModelError, match=r"jobs.nodes\[0\]"):
        SCASModel("paper-1000", [1, 2], [0])
    with pytest.raises(ModelError, match="topology"):
        SCASModel.from_dict({"idle_nodes": [1], "jobs": []})


def test_instance_round_trip(tmp_path):
    model = SCASModel({"kary": 8, "pods": 4}, [0, 1, 2, 5, 9, 17, 33], [3, 2], ids=["a", "b"])
    again = SCASModel.from_dict(model.to_dict())
    assert again.to_dict() == model.to_dict()
    assert hpcopt.solve(again).objective == hpcopt.solve(model).objective
