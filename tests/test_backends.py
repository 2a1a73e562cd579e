"""Every registered backend on knapsack models: agreement, certificates, limits, errors.

``MATRIX`` lists the backends under test (families expanded); a meta-test fails when a
registered backend is missing from it.  Backends whose library is not installed skip.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hpcopt.solvers as S
from hpcopt.errors import (
    IncompatibleModelError,
    ModelError,
    SolverUnavailableError,
    UnknownSolverError,
)
from hpcopt.instances import load_instance
from hpcopt.models import Evaluation, Model
from hpcopt.models.knapsack import KnapsackModel
from hpcopt.result import Limit, Status

from .oracles import knapsack_oracle

KNAPSACK_DIR = Path(__file__).resolve().parent.parent / "instances" / "knapsack"
FAMILY_MEMBERS = {"pyomo": ("appsi_highs", "scip_direct")}
MATRIX = ["cpsat", "dp", "greedy", "ortools", "scip", "pyomo:appsi_highs", "pyomo:scip_direct"]


def backend(name: str):
    """The solver, or skip with a reason when it cannot run here."""
    solver = S.get_solver(name)
    if not solver.available():
        pytest.skip(f"{name}: {', '.join(solver.REQUIRED_MODULES)} not installed")
    if solver.arg and solver.name == "pyomo":
        import pyomo.environ  # noqa: F401  (registers the solver plugins)
        from pyomo.opt import SolverFactory

        if not SolverFactory(solver.arg).available(exception_flag=False):
            pytest.skip(f"{name}: pyomo solver {solver.arg} not available")
    return solver


def is_exact(name: str) -> bool:
    return S.get_solver(name).EXACT


EXACT = [n for n in MATRIX if is_exact(n)]
LIMITED = [n for n in EXACT if n != "dp"]  # dp: tests/test_knapsack_trust.py


def check_certificate(model, result) -> None:
    """The Result's certificate is the model's own evaluation of its decision."""
    assert result.status.has_solution, result
    assert result.certified
    assert result.certificate == model.evaluate(result.decision)
    assert result.objective == pytest.approx(result.certificate.objective)
    assert result.selected_ids == model.decision_ids(result.decision)
    assert result.model_kind == "knapsack" and result.sense == "max"
    if result.bound is not None and not math.isinf(result.bound):
        assert result.bound >= result.objective - 1e-6 * max(1.0, abs(result.objective))



def shipped():
    with open(KNAPSACK_DIR / "optima.csv") as fh:
        optima = {row["instance"]: float(row["optimum"]) for row in csv.DictReader(fh)}
    return [(load_instance(KNAPSACK_DIR / f"{name}.json").model, name, opt)
            for name, opt in sorted(optima.items())]


SHIPPED = shipped()


def random_models(count: int = 15, seed: int = 11):
    rng = np.random.default_rng(seed)
    out = []
    limits = {1: (40, 60), 2: (25, 25), 3: (12, 12)}  # resources: (max items, max weight)
    for _ in range(count):
        m = int(rng.integers(1, 4))
        n = int(rng.integers(3, limits[m][0] + 1))
        weights = rng.integers(0, limits[m][1] + 1, (m, n))
        out.append(KnapsackModel(rng.integers(-5, 100, n), weights,
                                 (weights.sum(1) * rng.uniform(0.2, 0.8, m)).astype(int)))
    return out


RANDOM = random_models()


# -- the matrix covers the registry ---------------------------------------------------------
def test_matrix_covers_every_registered_backend():
    registered = S.names()
    classes = S.registry.solver_classes()
    plain = [n for n in registered if not n.endswith(":<solver>")
             and "knapsack" in classes[n].SUPPORTED_MODELS]
    families = [n.split(":")[0] for n in registered if n.endswith(":<solver>")]
    missing = [n for n in plain if n not in MATRIX]
    missing += [f for f in families if not any(m.startswith(f + ":") for m in MATRIX)]
    assert not missing, f"add these backends to MATRIX in {__file__}: {missing}"
    assert set(FAMILY_MEMBERS) == set(families)


def test_all_knapsack_backends_available_here():
    assert set(S.available_backends("knapsack")) >= {"cpsat", "dp", "greedy", "ortools", "scip"}


# -- exact backends agree ---------------------------------------------------------------------
@pytest.mark.parametrize("name", EXACT)
def test_exact_backend_on_shipped_instances(name):
    solver = backend(name)
    for model, inst, optimum in SHIPPED:
        result = solver.solve(model, seed=0)
        assert result.status == Status.OPTIMAL, (inst, result.status)
        check_certificate(model, result)
        assert result.objective == pytest.approx(optimum, abs=1e-6), inst
        assert result.bound == pytest.approx(result.objective)


@pytest.mark.parametrize("name", EXACT)
def test_exact_backend_matches_dp_on_random_instances(name):
    solver = backend(name)
    for model in RANDOM:
        reference = S.solve(model, "dp").objective
        result = solver.solve(model, seed=0)
        assert result.status == Status.OPTIMAL
        check_certificate(model, result)
        assert result.objective == pytest.approx(reference, abs=1e-6)


def test_bb_table1_optimum():
    model = load_instance(KNAPSACK_DIR / "bb_table1.json").model
    result = S.solve(model, "dp")
    assert result.objective == 100 and result.selected_ids == ("J1", "J5")


# -- property tests against brute force -----------------------------------------------------
def brute_force(model) -> float:
    """The optimum by tests/oracles.py's own enumeration (exact arithmetic), written apart
    from the model module whose ``evaluate`` certifies the backends."""
    return float(knapsack_oracle(model).value)


@st.composite
def tiny_knapsacks(draw, decimals: bool = False):
    m = draw(st.integers(1, 3))
    n = draw(st.integers(1, 10))
    value = st.integers(-500, 3000).map(lambda v: v / 100) if decimals else st.integers(-5, 30)
    values = draw(st.lists(value, min_size=n, max_size=n))
    weights = draw(st.lists(st.lists(st.integers(0, 20), min_size=n, max_size=n),
                            min_size=m, max_size=m))
    caps = draw(st.lists(st.integers(0, 40), min_size=m, max_size=m))
    return KnapsackModel(values, weights, caps)


@pytest.mark.parametrize("name", ["dp", "cpsat", "ortools", "scip"])
@settings(derandomize=True, deadline=None, max_examples=60)
@given(model=tiny_knapsacks())
def test_exact_matches_brute_force(name, model):
    result = backend(name).solve(model, seed=0)
    assert result.status == Status.OPTIMAL
    check_certificate(model, result)
    assert result.objective == pytest.approx(brute_force(model), abs=1e-9)


@pytest.mark.parametrize("name", ["dp", "cpsat"])
@settings(derandomize=True, deadline=None, max_examples=40)
@given(model=tiny_knapsacks(decimals=True))
def test_exact_matches_brute_force_decimal_values(name, model):
    result = backend(name).solve(model, seed=0)
    assert result.status == Status.OPTIMAL
    assert result.objective == pytest.approx(brute_force(model), abs=1e-9)


@settings(derandomize=True, deadline=None, max_examples=60)
@given(model=tiny_knapsacks())
def test_greedy_is_feasible_never_optimal(model):
    result = S.solve(model, "greedy")
    assert result.status == Status.FEASIBLE
    check_certificate(model, result)
    assert result.objective <= brute_force(model) + 1e-9


# -- greedy ---------------------------------------------------------------------------------
@pytest.mark.parametrize("aggregate", ["max", "sum"])
def test_greedy_on_shipped(aggregate):
    for model, inst, optimum in SHIPPED:
        result = S.solve(model, "greedy", solver_options={"aggregate": aggregate})
        assert result.status == Status.FEASIBLE and result.bound == math.inf
        check_certificate(model, result)
        assert result.objective <= optimum + 1e-9, inst


def test_greedy_rejects_unknown_aggregate():
    with pytest.raises(ValueError, match="aggregate"):
        S.solve(SHIPPED[0][0], "greedy", solver_options={"aggregate": "mean"})


# -- limits, seeds, options -------------------------------------------------------------------
def hard_model() -> KnapsackModel:
    rng = np.random.default_rng(0)
    w = rng.integers(100, 1000, (5, 200))
    return KnapsackModel(w.sum(0) // 5 + 50 + rng.integers(0, 10, 200), w, w.sum(1) // 2)


@pytest.mark.parametrize("name", LIMITED)
def test_time_limit_returns_certified_incumbent(name):
    solver = backend(name)
    model = hard_model()
    result = solver.solve(model, time_limit=0.5, seed=1)
    assert result.status in (Status.FEASIBLE, Status.OPTIMAL)
    check_certificate(model, result)
    if result.status == Status.FEASIBLE:
        assert result.limit == Limit.TIME
    assert result.wall_time < 10


@pytest.mark.parametrize("name", LIMITED)
def test_tiny_time_limit_never_raises(name):
    result = backend(name).solve(hard_model(), time_limit=1e-3, seed=1)
    assert result.status in (Status.FEASIBLE, Status.OPTIMAL, Status.NO_SOLUTION)
    if result.status == Status.NO_SOLUTION:
        assert result.decision is None and result.objective is None
        assert result.limit == Limit.TIME
    else:
        assert result.certified


@pytest.mark.parametrize("name", MATRIX)
def test_same_seed_same_result(name):
    solver = backend(name)
    model = RANDOM[3]
    first, second = solver.solve(model, seed=42), solver.solve(model, seed=42)
    assert first.decision == second.decision and first.objective == second.objective
    assert first.seed == 42


def test_bad_common_options_rejected():
    with pytest.raises(ValueError, match="time_limit"):
        S.solve(SHIPPED[0][0], "dp", time_limit=-1)
    with pytest.raises(ValueError, match="seed"):
        S.solve(SHIPPED[0][0], "dp", seed=1.5)


@pytest.mark.parametrize("name, options", [("cpsat", {"no_such_param": 1}),
                                           ("scip", {"no/such/param": 1}),
                                           ("ortools", {"no_such_option": 1}),
                                           ("dp", {"no_such_option": 1}),
                                           ("greedy", {"no_such_option": 1})])
def test_bad_solver_options_are_one_line_errors(name, options):
    with pytest.raises(ValueError) as info:
        backend(name).solve(SHIPPED[0][0], solver_options=options)
    assert "\n" not in str(info.value) and name in str(info.value)


def test_cpsat_accepts_warm_start():
    model = RANDOM[0]
    hint = S.solve(model, "greedy").decision
    result = S.solve(model, "cpsat", warm_start=hint, seed=0)
    assert result.status == Status.OPTIMAL
    assert result.objective == pytest.approx(S.solve(model, "dp").objective)


# -- dp specifics -----------------------------------------------------------------------------
def test_dp_scales_decimal_weights_and_refuses_other_floats():
    model = KnapsackModel([3, 4, 5], [0.25, 0.5, 0.75], 1.0)
    assert S.solve(model, "dp").objective == 8
    with pytest.raises(ModelError, match="'dp' needs integer weights"):
        S.solve(KnapsackModel([3, 4], [1 / 3, 1], 1), "dp")
    assert S.solve(KnapsackModel([3, 4], [1 / 3, 1], 1), "scip").objective == 4


def test_dp_memory_cap_is_a_limit_not_a_table():
    model = hard_model()
    result = S.solve(model, "dp")
    assert result.status == Status.FEASIBLE and result.limit == Limit.MEMORY
    check_certificate(model, result)
    assert "max_cells" in result.log
    small = KnapsackModel(np.arange(1, 21), np.arange(20, 0, -1), 100)
    result = S.solve(small, "dp", solver_options={"max_cells": 10})
    assert result.limit == Limit.MEMORY and "max_cells=10" in result.log
    with pytest.raises(ValueError, match="max_cells"):
        S.solve(small, "dp", solver_options={"max_cells": "big"})


def test_dp_methods():
    nodes = KnapsackModel([5, 7, 9], [5, 7, 9], 14)
    assert S.solve(nodes, "dp").extra["method"] == "subset-sum"
    assert S.solve(nodes, "dp").objective == 14
    assert S.solve(KnapsackModel([5, 7], [5, 7], 20), "dp").extra["method"] == "all-fit"
    assert S.solve(KnapsackModel([5, 8, 9], [5, 7, 9], 14), "dp").extra["method"] == "grid+bounds"
    assert S.solve(KnapsackModel([1 / 3, 8, 9], [5, 7, 9], 14), "dp").extra["method"] == "grid"
    two = KnapsackModel([5, 8, 9], [[5, 7, 9], [1, 2, 2]], [14, 3])
    assert S.solve(two, "dp").extra["method"] == "grid"


@pytest.mark.parametrize("kind", ["uncorrelated", "correlated", "nodehours"])
def test_dp_bound_fixing_matches_ortools(kind):
    """The LP-bound reduction (one resource, integer values) on many windows."""
    rng = np.random.default_rng(5)
    for _ in range(60):
        n = int(rng.integers(5, 51))
        w = np.exp(rng.uniform(0, np.log(500), n)).astype(int)
        v = {"uncorrelated": rng.integers(1, 1000, n), "correlated": w + 10,
             "nodehours": w * rng.integers(1, 25, n)}[kind]
        model = KnapsackModel(v, w, int(rng.integers(1, w.sum() + 1)))
        result = S.solve(model, "dp")
        check_certificate(model, result)
        assert result.objective == S.solve(model, "ortools").objective


# -- names and models -------------------------------------------------------------------------
def test_unknown_backend_suggests_closest():
    with pytest.raises(UnknownSolverError) as info:
        S.solve(SHIPPED[0][0], "cpsta")
    message = str(info.value)
    assert "Did you mean 'cpsat'?" in message and "\n" not in message
    assert "registered:" in message


def test_pyomo_unknown_solver_is_unavailable():
    with pytest.raises(SolverUnavailableError) as info:
        S.solve(SHIPPED[0][0], "pyomo:no_such_solver")
    assert "'no_such_solver'" in str(info.value) and "\n" not in str(info.value)


class OtherModel(Model):
    kind = "other"

    def evaluate(self, x) -> Evaluation:
        return Evaluation(True, (0.0,))

    def to_dict(self) -> dict:
        return {}

    @classmethod
    def from_dict(cls, data):
        return cls()


@pytest.mark.parametrize("name", MATRIX)
def test_incompatible_model(name):
    with pytest.raises(IncompatibleModelError, match="does not solve 'other' models"):
        S.get_solver(name).solve(OtherModel())


def test_pyomo_scip_runs_quiet_unless_asked(monkeypatch):
    """pyomo's ``scip_direct`` pipes SCIP's log to a thread that needs the GIL PySCIPOpt holds
    while it solves: a log longer than the pipe blocks SCIP for ever.  SCIP runs at verbosity
    0 (errors only) unless the user asks for more."""
    from hpcopt.solvers.pyomo_backend import Pyomo

    given = []
    run = Pyomo._run
    monkeypatch.setattr(Pyomo, "_run",
                        lambda self, opt, pm: given.append(dict(opt.options)) or run(self, opt, pm))
    model = SHIPPED[0][0]
    assert backend("pyomo:scip_direct").solve(model).certified
    assert backend("pyomo:scip_direct").solve(
        model, solver_options={"display/verblevel": 4}).certified
    assert [g["display/verblevel"] for g in given] == [0, 4]
