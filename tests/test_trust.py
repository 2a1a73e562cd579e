"""Issue #10 regressions: OPTIMAL only when proven, limits honoured, the same schedule from
every exact backend, seeds recorded, statuses that say why a solve stopped."""

import itertools
import time

import numpy as np
import pytest

import hpcopt
from hpcopt.errors import HpcoptError, SolverOptionError
from hpcopt.models.dcas import DCASModel
from hpcopt.models.knapsack import KnapsackModel
from hpcopt.models.scas import SCASModel
from hpcopt.policies.tjap import generate_windows
from hpcopt.result import Limit, Result, SolutionStatus, Status, Termination
from hpcopt.solvers import registry
from hpcopt.topology import FatTree
from hpcopt.workloads.tjap import generate_tjap_jobs, tjap_system


def _pair_cost(topology, nodes) -> float:
    """CH cost from its pairwise definition (not the solvers' count formula)."""
    cm = topology.cost_model
    hops = 0
    for a, b in itertools.permutations(nodes, 2) if cm.ordered else \
            itertools.combinations(nodes, 2):
        leaf_a, leaf_b = a // topology.nodes_per_leaf, b // topology.nodes_per_leaf
        if leaf_a == leaf_b:
            hops += cm.h_leaf
        elif leaf_a // topology.leaves_per_pod == leaf_b // topology.leaves_per_pod:
            hops += cm.h_pod
        else:
            hops += cm.h_other
    cost = cm.c * hops / len(nodes)
    return max(cost // 1, 1) if cm.integer else cost


def _brute_force(model: SCASModel) -> float:
    """Optimum over every placement of contiguous (cyclic) blocks of Q, own cost."""
    q, best = model.n_idle, np.inf
    idle = [int(v) for v in model.idle_nodes]
    for starts in itertools.product(range(q), repeat=model.n_jobs):
        used = [(s + d) % q for s, n in zip(starts, model.sizes) for d in range(int(n))]
        if len(set(used)) < len(used):
            continue
        cost = sum(_pair_cost(model.topology, [idle[(s + d) % q] for d in range(int(n))])
                   for s, n in zip(starts, model.sizes))
        best = min(best, cost)
    return best


def test_scas_exact_regression_zero_count_times_inf_bound():
    """Issue #10.1: a size placed out whose cheapest later block is +inf made 0 * inf = NaN
    in the bound, which dropped the transition arc: OPTIMAL 3833 where 3500 is optimal."""
    m = SCASModel("hpcschedule-1000", [8, 16, 37, 42, 57, 59], [3, 2])
    r = hpcopt.solve(m, "scas-exact")
    assert r.status == Status.OPTIMAL and r.objective == 3500 == _brute_force(m)


@pytest.mark.parametrize("preset", ["hpcschedule-1000", "paper-1000"])
def test_scas_exact_on_real_shapes_with_blocks_at_the_end(preset):
    """2-3 jobs of mixed sizes whose cheap blocks sit near the end of Q or wrap around."""
    rng = np.random.default_rng(7)
    checked = 0
    while checked < 25:
        m_idle = int(rng.integers(6, 11))
        idle = np.sort(rng.choice(np.arange(0, 120), m_idle, replace=False))
        sizes = rng.integers(1, 5, int(rng.integers(2, 4)))
        if sizes.sum() > m_idle:
            continue
        model = SCASModel(preset, idle, sizes)
        r = hpcopt.solve(model, "scas-exact")
        assert r.status == Status.OPTIMAL
        assert r.objective == pytest.approx(_brute_force(model), rel=1e-9)
        checked += 1


@pytest.mark.slow  # the slow tier (-m slow): a long check, run by CI after the default run
def test_every_exact_scas_backend_gives_the_canonical_optimum():
    """Issue #10.5: ties between optimal placements are broken the same way everywhere."""
    windows = generate_windows(15, seed=3, model="scas", topology=FatTree.kary(8))
    for m in windows:
        exact = hpcopt.solve(m, "scas-exact")
        for backend in ("cpsat", "scip", "pyomo:appsi_highs"):
            r = hpcopt.solve(m, backend, time_limit=30)
            if r.status == Status.OPTIMAL:
                assert r.decision == exact.decision, (backend, m.to_dict())
                assert r.extra["canonical"]


def test_canonical_tie_break_prefers_early_blocks_and_window_order():
    """Four single-node jobs on an idle leaf: every placement costs 0; the canonical one
    takes the first positions, jobs in window order."""
    m = SCASModel("paper-1000", range(10), [1, 1, 1, 1])
    for backend in ("scas-exact", "cpsat"):
        assert hpcopt.solve(m, backend).decision == (0, 1, 2, 3)


def test_window_policy_schedule_does_not_depend_on_the_exact_backend():
    jobs = generate_tjap_jobs(80, seed=5)
    system = tjap_system(FatTree.kary(8))  # 128 nodes: small windows for the MIP backends
    runs = [hpcopt.simulate(jobs, system=system, policy="tjap-window", tau=60,
                            backend=b).jobs for b in ("scas-exact", "cpsat")]
    assert runs[0]["comm_cost"].notna().all()
    assert runs[0].equals(runs[1])


def test_cpsat_scas_costs_are_exact_integers():
    """CP-SAT proves optimality on exact integer costs (L * c * hops / n), not rounded ones."""
    m = SCASModel("paper-1000", [8, 16, 37, 42, 57, 59, 100, 101, 140], [3, 2, 4])
    scale, weights = m.integer_costs()
    costs = m.interval_costs
    for j, n in enumerate(m.sizes):
        assert all(w == round(costs[i, n - 1] * scale) for i, w in enumerate(weights[j]))
        assert np.allclose(np.array(weights[j]) / scale, costs[:, n - 1], rtol=1e-12)


def _hard_dcas_window() -> DCASModel:
    """20 jobs filling most of a fragmented idle set (benchmarks/scas_hard_windows.py)."""
    rng = np.random.default_rng(0)
    jobs = generate_tjap_jobs(600, seed=4, interarrival=(12, 30))
    for w in generate_windows(150, seed=4, model="scas", jobs=jobs)[5:]:
        if w.n_idle < 300:
            continue
        for _ in range(300):
            sizes = rng.integers(1, 41, 20)
            if 0.75 * w.n_idle <= sizes.sum() <= w.n_idle:
                return DCASModel(w.topology, w.idle_nodes, sizes)
    raise AssertionError("no hard window")


@pytest.mark.parametrize("backend", ["sa", "nsa"])
def test_annealing_start_honours_the_time_limit(backend):
    """Issue #10.3: sa/nsa computed their scas-exact start without the limit (378 s with
    --time-limit 2 on a fragmented 20-job window)."""
    if backend == "nsa":
        pytest.importorskip("torch")
    m = _hard_dcas_window()
    t0 = time.perf_counter()
    r = hpcopt.solve(m, backend, time_limit=0.3, solver_options={"t_max": 10**6})
    assert time.perf_counter() - t0 < 10  # generous: the machine is shared
    assert r.status == Status.FEASIBLE and r.limit == Limit.TIME and r.certified
    assert r.termination == Termination.TIME_LIMIT


def test_scas_exact_checks_its_deadline_inside_a_vertex():
    m = _hard_dcas_window()
    scas = SCASModel(m.topology, m.idle_nodes, m.sizes)
    t0 = time.perf_counter()
    r = hpcopt.solve(scas, "scas-exact", time_limit=0.05)
    assert time.perf_counter() - t0 < 5
    assert r.status in (Status.OPTIMAL, Status.FEASIBLE) and r.certified


def test_heuristics_are_seeded_by_default_and_record_the_seed():
    """Issue #10.6: ``sa`` without a seed differed on 37 of 100 windows, seed column blank."""
    m = generate_windows(3, seed=0)[2]
    a = hpcopt.solve(m, "sa", solver_options={"t_max": 50, "init": "sequential"})
    b = hpcopt.solve(m, "sa", solver_options={"t_max": 50, "init": "sequential"})
    assert a.decision == b.decision and a.seed == b.seed == registry.DEFAULT_SEED
    assert a.to_row()["seed"] == registry.DEFAULT_SEED


def test_termination_is_kept_apart_from_the_solution():
    """A result is (termination, what it holds); the flat ``status`` and ``limit`` of the
    public API are views of the two, in ``to_row`` as in the attributes."""
    cases = {  # (termination, holds a decision) -> (solution, flat status, limit)
        (Termination.OPTIMAL, True): (SolutionStatus.OPTIMAL, Status.OPTIMAL, None),
        (Termination.TIME_LIMIT, True): (SolutionStatus.FEASIBLE, Status.FEASIBLE, Limit.TIME),
        (Termination.MEMORY_LIMIT, True): (SolutionStatus.FEASIBLE, Status.FEASIBLE,
                                           Limit.MEMORY),
        (Termination.INTERRUPTED, True): (SolutionStatus.FEASIBLE, Status.FEASIBLE,
                                          Limit.INTERRUPT),
        (Termination.FINISHED, True): (SolutionStatus.FEASIBLE, Status.FEASIBLE, None),
        (Termination.TIME_LIMIT, False): (SolutionStatus.NONE, Status.NO_SOLUTION, Limit.TIME),
        (Termination.INTERRUPTED, False): (SolutionStatus.NONE, Status.NO_SOLUTION,
                                           Limit.INTERRUPT),
        (Termination.OPTIMAL, False): (SolutionStatus.NONE, Status.NO_SOLUTION, None),
        (Termination.UNKNOWN, False): (SolutionStatus.NONE, Status.NO_SOLUTION, None),
        (Termination.INFEASIBLE_OR_UNBOUNDED, False): (
            SolutionStatus.NONE, Status.INFEASIBLE_OR_UNBOUNDED, None),
        (Termination.ERROR, False): (SolutionStatus.NONE, Status.ERROR, None),
    }
    for (term, held), (sol, status, limit) in cases.items():
        r = Result(term, "x", "knapsack", decision=(1,) if held else None)
        assert (r.termination, r.solution, r.status, r.limit) == (term, sol, status, limit)
        row = r.to_row()
        assert (row["status"], row["termination"], row["solution"], row["limit"]) == (
            status.value, term.value, sol.value, None if limit is None else limit.value)
        assert r.status.has_solution == held


def test_unknown_solver_options_get_one_shared_error_for_every_backend():
    models = {"knapsack": KnapsackModel([1, 2], [1, 1], 1),
              "scas": SCASModel("paper-1000", range(4), [2]),
              "dcas": DCASModel("paper-1000", range(4), [2])}
    for name, cls in registry.solver_classes().items():
        if cls.NATIVE_OPTIONS or not cls.available():
            continue
        kind = next((k for k in cls.SUPPORTED_MODELS if k in models), None)
        if kind is None:
            continue
        with pytest.raises(SolverOptionError, match=f"backend '{name}': unknown solver option"):
            hpcopt.solve(models[kind], name, solver_options={"bogus": 1})


@pytest.mark.parametrize("bad", [{"time_limit": -1}, {"time_limit": float("nan")},
                                 {"seed": -2}, {"seed": 1.5}, {"solver_options": [1]}])
def test_bad_common_options_are_hpcopt_errors(bad):
    m = KnapsackModel([1, 2], [1, 1], 1)
    with pytest.raises(HpcoptError):
        hpcopt.solve(m, "dp", **bad)
