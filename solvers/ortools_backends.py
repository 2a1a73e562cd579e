"""OR-tools backends: the multi-dimensional knapsack solver (``ortools``) and CP-SAT (``cpsat``).

Both need integer data: ``KnapsackModel.reduced`` scales values and weights with up to six
decimals to integers, or raises a one-line ``ModelError`` naming the backend.
"""

from __future__ import annotations

import time

import numpy as np

from hpcopt.errors import SolverOptionError
from hpcopt.result import Limit, Status

from . import cpsat
from .knapsack_dp import canonical_tie_break, tie_break_option
from .registry import Footprint, Outcome, SolveOptions, Solver, register

DP_CELLS = 2**24  # largest items x capacity table for the ortools one-resource DP
DP_CELL_SECONDS = 3e-8  # its time per table cell, measured ~1.5e-8 s here, with a margin
SCAS_SCALE = 1000  # CP-SAT needs integer costs: SCAS costs are solved in units of 1/1000
# CP-SAT model build from Python, per nonzero (measured ~1.1e-6 s and 5.6e-5 MB on a SCAS
# window of 464k nonzeros on a busy 2-core machine; with a margin)
CPSAT_SECONDS_PER_NZ = 2e-6
CPSAT_MB_PER_NZ = 1e-4


@register("ortools")
class OrtoolsKnapsack(Solver):
    """OR-tools ``knapsack_solver``.

    Supported models: ``knapsack``.  By default one resource uses OR-tools' dynamic program
    (exact, table ``items x capacity`` at most ``DP_CELLS``; it cannot be stopped, so with a
    ``time_limit`` it is used only when its table should take under half the limit at
    ``DP_CELL_SECONDS`` per cell) and otherwise the multi-dimensional branch and bound
    (honours the time limit; on subset-sum-like data, where every item has the same density,
    its LP bound never prunes, so give it a time limit).  Ties are broken canonically
    (``hpcopt.models.knapsack``) with ``ReducedKnapsack.solve_canonical``: the values carry
    tie-break terms, one solve for a window of tens of jobs.  ``solver_options``:
    ``solver_type`` (a ``knapsack_solver.SolverType`` member name), ``use_reduction``
    (bool).  The solver only says whether its answer is proven, so the native status is
    ``is_solution_optimal()``::

        STATUS_MAP = {True: Status.OPTIMAL, False: Status.FEASIBLE}  # False: time limit hit

    ``seed`` has no effect (the algorithm is deterministic).
    """

    doc = "OR-tools knapsack solver (DP for one resource, B&B for several); integer data"
    SUPPORTED_MODELS = ("knapsack",)
    REQUIRED_MODULES = ("ortools",)
    INSTALL_HINT = "pip install ortools"
    EXACT = True
    GREEDY_START = True
    OPTIONS = ("solver_type", "use_reduction")
    STATUS_MAP = {True: Status.OPTIMAL, False: Status.FEASIBLE}

    @staticmethod
    def default_type(red, time_limit: float | None = None) -> str:
        """OR-tools' DP for one resource (when the table is small), else branch and bound."""
        if len(red.capacities) == 1:
            cells = red.size * (int(red.capacities[0]) + 1)
            if cells <= DP_CELLS and (time_limit is None
                                      or cells * DP_CELL_SECONDS <= time_limit / 2):
                return "KNAPSACK_DYNAMIC_PROGRAMMING_SOLVER"
        return "KNAPSACK_MULTIDIMENSION_BRANCH_AND_BOUND_SOLVER"

    def _solve(self, model, opts: SolveOptions) -> Outcome:
        from ortools.algorithms.python import knapsack_solver

        deadline = opts.deadline
        red = model.reduced(integer_weights=True, integer_values=True, backend=self.full_name)
        if red.size == 0:
            return Outcome(Status.OPTIMAL, red.lift([]))
        options = dict(opts.solver_options)
        kind = options.pop("solver_type", None) or self.default_type(red, opts.time_limit)
        try:
            solver_type = getattr(knapsack_solver.SolverType, kind)
        except AttributeError:
            raise SolverOptionError(f"ortools: unknown solver_type {kind!r}; expected a "
                                    "knapsack_solver.SolverType name") from None
        reduction = options.pop("use_reduction", None)

        def solve(values, weights, caps):
            solver = knapsack_solver.KnapsackSolver(solver_type, "hpcopt")
            if reduction is not None:
                solver.set_use_reduction(bool(reduction))
            if deadline is not None:
                solver.set_time_limit(max(deadline - time.perf_counter(), 1e-3))
            solver.init(values, weights.tolist(), caps.tolist())
            solver.solve()
            chosen = [solver.best_solution_contains(i) for i in range(len(values))]
            return chosen, bool(solver.is_solution_optimal()), None

        chosen, proven, _ = red.solve_canonical(solve)
        return Outcome(self.STATUS_MAP[proven], red.lift(chosen),
                       limit=None if proven else Limit.TIME)


@register("cpsat")
class CpSat(Solver):
    """OR-tools CP-SAT model built directly (boolean x, linear capacities, linear objective).

    Supported models: ``knapsack`` and ``scas`` (boolean y[j, i], one start per job, at most
    one job per idle node; exact integer costs, see ``_scas``).  ``seed`` -> ``random_seed``;
    ``solver_options`` are CP-SAT parameters (``num_workers`` defaults to 1, which makes runs
    deterministic); ``warm_start`` (a 0-1 decision) becomes a solution hint.  Native statuses::

        STATUS_MAP = {"OPTIMAL": Status.OPTIMAL, "FEASIBLE": Status.FEASIBLE,
                      "INFEASIBLE": Status.INFEASIBLE, "MODEL_INVALID": Status.ERROR,
                      "UNKNOWN": Status.NO_SOLUTION}

    FEASIBLE and UNKNOWN carry ``limit=TIME`` when a time limit was set, and
    ``limit=INTERRUPT`` when Ctrl-C (any ``KeyboardInterrupt`` raised by a signal handler,
    e.g. a batch's SIGTERM) stopped the search: see ``cpsat.solve_stoppable``.  The bound is
    ``best_objective_bound`` (only reported with an incumbent).  The model's greedy decision
    (or ``warm_start``) is the hint; ``max_memory_mb`` -> ``max_memory_in_mb``.
    """

    doc = "OR-tools CP-SAT (knapsack with integer data, SCAS, OSDEC MIP); seedable"
    SUPPORTED_MODELS = ("knapsack", "scas", "osdec")
    REQUIRED_MODULES = ("ortools",)
    INSTALL_HINT = "pip install ortools"
    EXACT = True
    GREEDY_START = True
    OPTIONS = ("tie_break",)  # knapsack: "dp" (default) or "resolve", see _knapsack
    NATIVE_OPTIONS = True  # CP-SAT parameters
    STATUS_MAP = cpsat.STATUS_MAP

    def footprint(self, model, opts: SolveOptions) -> Footprint | None:
        """The Python-side model build, by the model's nonzeros (the compact SCAS rows)."""
        if model.kind == "knapsack":
            return None
        nz = model.algebraic_size("compact")[2] if model.kind == "scas" else \
            model.algebraic_size()[2] // 4  # osdec: the reduced form is a few times smaller
        return Footprint(nz * CPSAT_SECONDS_PER_NZ, nz * CPSAT_MB_PER_NZ)

    def _solve(self, model, opts: SolveOptions) -> Outcome:
        from ortools.sat.python import cp_model

        if model.kind == "knapsack":
            return self._knapsack(model, opts)
        if model.kind == "osdec":  # time-indexed MIP, see solvers/osdec_mip.py
            from .osdec_mip import solve_cpsat

            return solve_cpsat(self, model, opts)
        cp = cp_model.CpModel()
        start = opts.warm_start if opts.warm_start is not None else opts.start
        decode, to_objective, bound_of, exact = _scas(cp, model, start)
        left = opts.left()
        if left is not None and left <= 0:  # the build took the time: the greedy stands
            return Outcome(Status.NO_SOLUTION, limit=Limit.TIME)
        solver = cp_model.CpSolver()
        cpsat.parameters(solver, opts, left, opts.solver_options)
        code, stopped = cpsat.solve_stoppable(solver, cp)
        status = self.STATUS_MAP.get(solver.status_name(code), Status.ERROR)
        if model.kind == "scas" and not exact and status == Status.OPTIMAL:
            status = Status.FEASIBLE  # proven for rounded costs only: the bound says how far
        limit = cpsat.limit_of(status, stopped, opts.deadline is not None)
        decision = objective = bound = None
        if status.has_solution:  # without one, CP-SAT's bound is not meaningful
            decision = decode(solver.boolean_value)
            objective = to_objective(solver.objective_value)
            bound = bound_of(solver.best_objective_bound)
        return Outcome(status, decision, objective=objective, bound=bound, limit=limit,
                       log=solver.response_stats())

    def _knapsack(self, model, opts: SolveOptions) -> Outcome:
        """Boolean x per kept item, linear capacities, the integer values.  Ties: with
        ``solver_options["tie_break"] == "dp"`` (default) CP-SAT proves the optimum and
        ``canonical_tie_break`` picks the canonical one of that value (tie-break terms made
        CP-SAT ~8x slower on 50-job windows); with "resolve", or when the dp cannot, the
        values carry tie-break terms (``ReducedKnapsack.solve_canonical``: one or two
        solves for tens of items).  The time limit covers all solves together."""
        from ortools.sat.python import cp_model

        red = model.reduced(integer_weights=True, integer_values=True, backend=self.full_name)
        if red.size == 0:
            return Outcome(Status.OPTIMAL, red.lift([]))
        deadline = opts.deadline
        hint = None
        if opts.warm_start is not None:
            model.evaluate(opts.warm_start)  # checks length and 0/1 entries
        start = opts.warm_start if opts.warm_start is not None else opts.start
        if start is not None:
            hint = [int(start[i]) for i in red.items.tolist()]
        logs, found, stopped = [], [True], [False]

        def solve(values, weights, caps):
            cp = cp_model.CpModel()
            x = [cp.new_bool_var(f"x{i}") for i in range(len(values))]
            for row, cap in zip(weights.tolist(), caps.tolist()):
                cp.add(cp_model.LinearExpr.weighted_sum(x, row) <= cap)
            cp.maximize(cp_model.LinearExpr.weighted_sum(x, values))
            if hint is not None:
                cpsat.add_hints(cp, x, hint[len(hint) - len(values):])
            solver = cp_model.CpSolver()
            remaining = None if deadline is None else max(deadline - time.perf_counter(), 1e-3)
            cpsat.parameters(solver, opts, remaining)
            code, stopped[0] = cpsat.solve_stoppable(solver, cp)
            status = self.STATUS_MAP.get(solver.status_name(code), Status.ERROR)
            logs.append(solver.response_stats())
            if not status.has_solution:
                found[0] = False
                return [False] * len(values), False, None
            chosen = [bool(solver.boolean_value(v)) for v in x]
            return chosen, status == Status.OPTIMAL, solver.best_objective_bound

        if tie_break_option(opts.solver_options, self.full_name) == "dp":
            first, proven, bound = solve(red.values.tolist(), red.weights, red.capacities)
            x = red.lift(first)
            if not proven or not found[0]:
                return self._knapsack_outcome(red, first, proven, bound, deadline, found, logs,
                                              stopped=stopped[0])
            canonical = canonical_tie_break(model, x, deadline)
            if canonical is not None:
                return Outcome(Status.OPTIMAL, canonical, log="\n".join(logs),
                               extra={"tie_break": "dp"})
        chosen, proven, bound = red.solve_canonical(solve)
        return self._knapsack_outcome(red, chosen, proven, bound, deadline, found, logs,
                                      tie_break="resolve", stopped=stopped[0])

    @staticmethod
    def _knapsack_outcome(red, chosen, proven, bound, deadline, found, logs,
                          tie_break=None, stopped=False) -> Outcome:
        """The Outcome of a knapsack solve (reduced ``chosen``, ``bound`` in reduced units);
        ``stopped``: an interrupt stopped the last solve (``limit=INTERRUPT``)."""
        chosen = np.asarray(chosen, dtype=bool)
        log = "\n".join(logs)
        limit = Limit.INTERRUPT if stopped else Limit.TIME if deadline else None
        if not found[0] and not chosen.any():
            return Outcome(Status.NO_SOLUTION, limit=limit, log=log)
        return Outcome(Status.OPTIMAL if proven else Status.FEASIBLE, red.lift(chosen),
                       bound=None if bound is None else red.objective(bound),
                       limit=None if proven else limit, log=log,
                       extra={} if tie_break is None else {"tie_break": tie_break})


def _scas(cp, model, warm_start):
    """Boolean y[j, i] (job j starts at position i), exactly one start per job, at most one
    job per idle node (compact rows).  Costs are the model's exact integer costs
    (``SCASModel.integer_costs``), so OPTIMAL is proven for the true costs; only when those
    would overflow are they scaled by ``SCAS_SCALE`` and rounded, and the answer is then
    FEASIBLE with a bound that covers the rounding."""
    from ortools.sat.python import cp_model

    costs = model.interval_costs
    q, sizes = model.n_idle, [int(n) for n in model.sizes]
    y = [[cp.new_bool_var(f"y{j}_{i}") for i in range(q)] for j in range(len(sizes))]
    for row in y:
        cp.add_exactly_one(row)
    covers = model.covering_starts()
    for k in range(q):
        cp.add_at_most_one([y[j][i] for j, n in enumerate(sizes) for i in covers[n][k]])
    exact = model.integer_costs()
    if exact is not None:
        scale, weights = exact
        terms = [(y[j][i], weights[j][i]) for j in range(len(sizes)) for i in range(q)]
    else:
        scale = SCAS_SCALE
        terms = [(y[j][i], round(float(costs[i, n - 1]) * SCAS_SCALE))
                 for j, n in enumerate(sizes) for i in range(q)]
    cp.minimize(cp_model.LinearExpr.weighted_sum([t[0] for t in terms], [t[1] for t in terms]))
    if warm_start is not None and model.evaluate(warm_start).feasible:
        for j, row in enumerate(y):
            cpsat.add_hints(cp, row, [i == warm_start[j] for i in range(q)])

    def decode(val):
        return [next(i for i, v in enumerate(row) if val(v)) for row in y]

    slack = 0 if exact is not None else 0.5 * len(sizes) / SCAS_SCALE  # rounding error

    return decode, (lambda scaled: scaled / scale if exact else None), \
        (lambda scaled: scaled / scale - slack), exact is not None
