"""Knapsack answers that can be trusted (issue 10, items 2, 3 and 5 and float overflow).

Certificates are exact on integer data, limits are honoured, and every exact backend returns
the same canonical optimum (the lexicographically greatest optimal 0-1 vector), checked
against a brute-force oracle written here, independently of the backends.
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

import hpcopt.solvers as S
from hpcopt.errors import ModelError
from hpcopt.models.knapsack import KnapsackModel
from hpcopt.result import Limit, Status, Termination
from hpcopt.solvers.knapsack_dp import DPStop, solve_arrays
from hpcopt.solvers.ortools_backends import OrtoolsKnapsack

from .conftest import shared_file
from .test_backends import backend

EXACT = ["dp", "ortools", "cpsat", "scip", "pyomo:appsi_highs", "pyomo:scip_direct"]
INTEGER_ONLY = ["dp", "ortools", "cpsat"]
MIP_BACKENDS = ["scip", "pyomo:appsi_highs", "pyomo:scip_direct"]
KTH = "hpc_swf/pwa/KTH-SP2-1996-2.1-cln.swf.gz"


def canonical(model: KnapsackModel) -> tuple:
    """Oracle: the greatest (value, 0-1 vector) over feasible vectors, in exact integers."""
    v = [int(a) for a in model.values]
    w = [[int(a) for a in row] for row in model.weights]
    caps = [float(c) for c in model.capacities]
    best = None
    for bits in itertools.product((0, 1), repeat=len(v)):
        if any(b and val <= 0 for b, val in zip(bits, v)):
            continue
        if all(sum(a * b for a, b in zip(row, bits)) <= c for row, c in zip(w, caps)):
            key = (sum(val * b for val, b in zip(v, bits)), bits)
            best = key if best is None or key > best else best
    return best[1]


def tie_models(count: int, seed: int = 3):
    """Small integer windows with many ties: equal items, proportional values, few values."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        n, m = int(rng.integers(1, 10)), int(rng.integers(1, 3))
        w = rng.integers(0, 5, (m, n))
        kind = int(rng.integers(0, 4))
        v = [w[0] * 2, np.full(n, 3), rng.integers(-2, 6, n), rng.integers(1, 3, n) * 7][kind]
        out.append(KnapsackModel(v, w, rng.integers(0, w.sum(1) + 2)))
    return out


# -- item 2: certificates ---------------------------------------------------------------------
def test_evaluate_is_exact_on_integer_data():
    m = KnapsackModel([10, 1], [1e10, 5], 1e10)
    assert not m.evaluate([1, 1]).feasible and m.evaluate([1, 1]).violations == (5.0,)
    assert m.evaluate([1, 0]).feasible
    assert not KnapsackModel([1, 1], [1, 1], 1).evaluate([1, 1]).feasible
    huge = KnapsackModel([1, 1], [2**60, 1], 2**60)  # sums past 2^53: Python integers
    assert not huge.evaluate([1, 1]).feasible and huge.evaluate([1, 0]).feasible
    assert huge.evaluate([1, 1]).violations == (1.0,)  # the overrun, exactly (float sums 0.0)
    assert huge.evaluate([1, 0]).violations == (0.0,)


def test_evaluate_float_tolerance_never_admits_an_item():
    assert KnapsackModel([1, 1], [0.1, 0.2], 0.3).evaluate([1, 1]).feasible  # round-off
    m = KnapsackModel([10, 1], [1e10 + 0.5, 5.5], 1e10 + 0.5)
    assert not m.evaluate([1, 1]).feasible
    tiny = KnapsackModel([1, 1], [1e-12, 0.5], 0.5)
    assert not tiny.evaluate([1, 1]).feasible  # tolerance below the smallest weight


@pytest.mark.parametrize("name", EXACT)
def test_exact_backends_never_certify_an_overrun(name):
    result = backend(name).solve(KnapsackModel([10, 1], [1e10, 5], 1e10))
    assert result.status == Status.OPTIMAL and result.certified
    assert result.objective == 10 and result.decision == (1, 0)


@pytest.mark.parametrize("name", MIP_BACKENDS)
def test_float_backends_cut_off_round_off_answers(name):
    model = KnapsackModel([10, 1], [1e10 + 0.5, 5.5], 1e10 + 0.5)
    result = backend(name).solve(model)
    assert result.status == Status.OPTIMAL and result.decision == (1, 0)


@pytest.mark.parametrize("values", [[1e308, 1e308], [-1e308, -1e308, 1.0]])
def test_float_overflow_is_a_clean_error(values):
    with pytest.raises(ModelError) as info:
        KnapsackModel(values, [1] * len(values), 2)
    assert "\n" not in str(info.value) and "overflows" in str(info.value)
    with pytest.raises(ModelError, match="overflows"):
        KnapsackModel([1, 1], [1e308, 1e308], 1e308)


# -- item 5: the canonical optimum --------------------------------------------------------------
MODES = [(n, {}) for n in EXACT] + [(n, {"tie_break": "resolve"})
                                    for n in MIP_BACKENDS + ["cpsat"]]


@pytest.mark.parametrize("name, options", MODES)
def test_all_equal_items_take_the_earliest(name, options):
    model = KnapsackModel([5] * 30, [3] * 30, 13)
    result = backend(name).solve(model, solver_options=options)
    assert result.status == Status.OPTIMAL
    assert result.decision == (1,) * 4 + (0,) * 26
    if options:
        assert result.extra["tie_break"] == "resolve"


@pytest.mark.parametrize("name, options", MODES)
def test_canonical_optimum_matches_oracle(name, options):
    solver = backend(name)
    count = 120 if name in INTEGER_ONLY else 40
    for model in tie_models(count):
        result = solver.solve(model, solver_options=options)
        assert result.status == Status.OPTIMAL
        assert result.decision == canonical(model), (model.to_dict(), result.decision)
        best = max(model.canonical_key(result.decision), model.canonical_key(canonical(model)))
        assert model.canonical_key(result.decision) == best


@pytest.mark.parametrize("name, options", [("ortools", {}), ("cpsat", {"tie_break": "resolve"})])
def test_canonical_across_several_solves(name, options):
    """Values too large for one solve's tie-break terms: the rest is solved again."""
    n = 90
    model = KnapsackModel([2**20] * n, [1] * n, 50)
    result = backend(name).solve(model, solver_options=options)
    assert result.status == Status.OPTIMAL and result.decision == (1,) * 50 + (0,) * 40


def test_dp_bound_fixing_keeps_the_canonical_optimum():
    """The LP-bound reduction fixes only items every optimum agrees on."""
    rng = np.random.default_rng(7)
    for _ in range(150):
        n = int(rng.integers(2, 12))
        w = rng.integers(1, 9, n)
        v = w * rng.integers(1, 3, n)
        model = KnapsackModel(v, w, int(rng.integers(1, w.sum() + 1)))
        assert S.solve(model, "dp").decision == canonical(model)


def test_dp_value_grid_path():
    model = KnapsackModel([10, 1, 3, 2], [10**9, 5, 10**9 - 3, 7], 10**9)
    result = S.solve(model, "dp")  # a capacity grid would need 4e9 cells
    assert result.status == Status.OPTIMAL and result.decision == canonical(model)


@pytest.mark.slow  # the slow tier (-m slow): a long check, run by CI after the default run
def test_knapsack_policy_same_schedule_from_every_exact_backend():
    import hpcopt

    trace = str(shared_file(KTH))
    runs = (("dp", 3000), ("ortools", 3000), ("cpsat", 3000), ("dp", 2000), ("scip", 2000),
            ("dp", 500), ("pyomo:appsi_highs", 500))
    tables = {}
    for name, jobs in runs:
        backend(name)
        tables[name, jobs] = hpcopt.simulate(trace, jobs=jobs, policy="knapsack",
                                             backend=name).jobs
    for name, jobs in runs:
        assert tables[name, jobs].equals(tables["dp", jobs]), name


@pytest.mark.parametrize("name", MIP_BACKENDS + ["cpsat"])
def test_tie_break_option_checked(name):
    with pytest.raises(ValueError, match="tie_break"):
        backend(name).solve(KnapsackModel([1, 1], [1, 1], 1), solver_options={"tie_break": 1})


# -- item 3: limits -----------------------------------------------------------------------------
def subset_sum_window(n: int = 300) -> KnapsackModel:
    rng = np.random.default_rng(0)
    w = rng.integers(10**5, 10**6, n)
    return KnapsackModel(w, w, int(w.sum() // 2) + 1)


def test_dp_deadline_is_checked_between_items():
    w = np.arange(1, 40)
    with pytest.raises(DPStop) as info:
        solve_arrays(w.astype(float), w[None, :], np.array([300]),
                     deadline=time.perf_counter() - 1)
    assert info.value.limit == Termination.TIME_LIMIT
    with pytest.raises(DPStop) as info:
        solve_arrays(w * 2.5 + 0.3, w[None, :], np.array([300]), deadline=time.perf_counter() - 1)
    assert info.value.limit == Termination.TIME_LIMIT


def test_dp_time_limit_returns_greedy_incumbent():
    model = subset_sum_window()
    t0 = time.perf_counter()
    result = S.solve(model, "dp", time_limit=0.3, solver_options={"max_cells": 2**30})
    assert time.perf_counter() - t0 < 20  # generous: the machine is shared
    assert result.status == Status.FEASIBLE and result.limit == Limit.TIME
    assert result.certified and result.extra["method"] == "greedy"
    assert result.termination.value == "time_limit"


def test_dp_memory_cap_returns_greedy_incumbent():
    model = subset_sum_window()
    result = S.solve(model, "dp")  # 300 bitsets of ~1e8 bits would pass MAX_CELLS bytes
    assert result.status == Status.FEASIBLE and result.limit == Limit.MEMORY
    assert result.certified and "max_cells" in result.log and "\n" not in result.log
    assert result.termination.value == "memory_limit"
    small = KnapsackModel(np.arange(1, 21) * 3 + 1, np.arange(20, 0, -1), 100)
    result = S.solve(small, "dp", solver_options={"max_cells": 10})
    assert result.limit == Limit.MEMORY and "max_cells=10" in result.log


def test_dp_subset_sum_checkpoints_give_the_same_answer():
    rng = np.random.default_rng(2)
    w = rng.integers(1, 2000, 60)
    full, _ = solve_arrays(w.astype(float), w[None, :], np.array([w.sum() // 3]))
    lean, _ = solve_arrays(w.astype(float), w[None, :], np.array([w.sum() // 3]),
                           max_cells=50_000)  # forces the sqrt checkpoints
    assert (full == lean).all()


def test_ortools_dp_only_within_the_time_limit():
    red = subset_sum_window(100).reduced(integer_weights=True, integer_values=True)
    assert OrtoolsKnapsack.default_type(red, None).endswith("DYNAMIC_PROGRAMMING_SOLVER") \
        or red.size * (int(red.capacities[0]) + 1) > 2**24
    assert OrtoolsKnapsack.default_type(red, 0.01).endswith("BRANCH_AND_BOUND_SOLVER")
    small = KnapsackModel([3, 4, 5], [2, 3, 4], 5).reduced(integer_weights=True,
                                                           integer_values=True)
    assert OrtoolsKnapsack.default_type(small, 0.01).endswith("DYNAMIC_PROGRAMMING_SOLVER")


@pytest.mark.parametrize("name", ["ortools", "cpsat", "scip", "pyomo:appsi_highs",
                                  "pyomo:scip_direct"])
def test_time_limit_on_subset_sum_window(name):
    solver = backend(name)
    t0 = time.perf_counter()
    result = solver.solve(subset_sum_window(), time_limit=0.5)
    assert time.perf_counter() - t0 < 0.5 + 10  # generous: the machine is shared
    assert result.status in (Status.OPTIMAL, Status.FEASIBLE)
    if result.status == Status.FEASIBLE:
        assert result.limit == Limit.TIME and result.certified
