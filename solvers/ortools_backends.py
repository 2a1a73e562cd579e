"""OR-tools backends: the multi-dimensional knapsack solver (``ortools``) and CP-SAT (``cpsat``).

Both need integer data: ``KnapsackModel.reduced`` scales values and weights with up to six
decimals to integers, or raises a one-line ``ModelError`` naming the backend.
"""

from __future__ import annotations

import math
import time

import numpy as np

from hpcopt.errors import ModelError, SolverOptionError
from hpcopt.models.knapsack import integer_scale
from hpcopt.result import Termination

from . import cpsat
from .mip import Answer, MipBackend, Session, form_bound
from .registry import Outcome, SolveOptions, Solver, register

DP_CELLS = 2**24  # largest items x capacity table for the ortools one-resource DP
DP_CELL_SECONDS = 3e-8  # its time per table cell, measured ~1.5e-8 s here, with a margin


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

        STATUS_MAP = {True: Termination.OPTIMAL, False: Termination.TIME_LIMIT}

    ``seed`` has no effect (the algorithm is deterministic).
    """

    doc = "OR-tools knapsack solver (DP for one resource, B&B for several); integer data"
    SUPPORTED_MODELS = ("knapsack",)
    REQUIRED_MODULES = ("ortools",)
    INSTALL_HINT = "pip install ortools"
    EXACT = True
    GREEDY_START = True
    OPTIONS = ("solver_type", "use_reduction")
    STATUS_MAP = {True: Termination.OPTIMAL, False: Termination.TIME_LIMIT}

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
        from ortools.algorithms.python import knapsack_solver  # lazy: see registry

        deadline = opts.deadline
        red = model.reduced(integer_weights=True, integer_values=True, backend=self.full_name)
        if red.size == 0:
            return Outcome(Termination.OPTIMAL, red.lift([]))
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
        return Outcome(self.STATUS_MAP[proven], red.lift(chosen))


@register("cpsat")
class CpSat(MipBackend):
    """OR-tools CP-SAT on a model's algebraic form, built directly.

    Supported models: those with an algebraic form (``hpcopt.models.algebraic``: ``scas``,
    ``osdec``) or a CP-SAT procedure (``knapsack``, ``hpcopt.solvers.knapsack_mip``).
    CP-SAT needs integers: the form's ``integer_objective`` when it has one (exact SCAS costs;
    a rounded one makes OPTIMAL a FEASIBLE whose bound covers the round-off), else the
    objective scaled by a power of ten (``integer_scale``: a ``ModelError`` when none makes
    it integral); integer variables need upper bounds; rows of 0-1 variables summing to at
    most / exactly 1 become ``add_at_most_one`` / ``add_exactly_one``.  ``seed`` ->
    ``random_seed``; ``solver_options``: the form's options, ``greedy_start``
    (``hpcopt.solvers.mip``), any other key a CP-SAT parameter (``num_workers`` defaults to
    1, which makes runs deterministic); the model's greedy decision (or ``warm_start``)
    becomes a solution hint.  Native statuses -> terminations (``cpsat.STATUS_MAP``)::

        OPTIMAL -> optimal, FEASIBLE -> finished, INFEASIBLE -> infeasible,
        MODEL_INVALID -> error, UNKNOWN -> unknown

    FEASIBLE and UNKNOWN become ``time_limit`` when a time limit was set, and
    ``interrupted`` when Ctrl-C (any ``KeyboardInterrupt`` raised by a signal handler,
    e.g. a batch's SIGTERM) stopped the search: see ``cpsat.solve_stoppable``.  The bound is
    ``best_objective_bound`` (only reported with an incumbent); ``max_memory_mb`` ->
    ``max_memory_in_mb``.
    """

    doc = "OR-tools CP-SAT (knapsack with integer data, SCAS, OSDEC MIP); seedable"
    FAMILY = "cpsat"
    REQUIRED_MODULES = ("ortools",)
    INSTALL_HINT = "pip install ortools"
    OPTIONS = ("formulation", "reduce", "greedy_start", "tie_break")
    STATUS_MAP = cpsat.STATUS_MAP
    # CP-SAT model build from Python, per nonzero (measured ~1.1e-6 s and 5.6e-5 MB on a SCAS
    # window of 464k nonzeros on a busy 2-core machine; with a margin)
    SECONDS_PER_NZ, MB_PER_NZ = 2e-6, 1e-4
    INTEGER_DATA = True

    def session(self, model, form, opts: SolveOptions, native: dict, start) -> CpSatSession:
        return CpSatSession(self, form, native, start)


class CpSatSession(Session):
    """A form in a CP-SAT model; every solve is a fresh ``CpSolver`` on it (CP-SAT solves
    from scratch), with the hint kept."""

    def __init__(self, backend: CpSat, form, native: dict, start) -> None:
        from ortools.sat.python import cp_model  # lazy: see registry

        self.backend, self.form, self.native, self.lin = backend, form, native, cp_model.LinearExpr
        self.scale, coefs, self.slack = _integer_objective(form, backend.full_name)
        self.cp = cp = cp_model.CpModel()
        ubs = form.upper_bounds()
        x: list = []
        self.x = x
        for name, kind, ub in zip(form.names(), form.kinds(), ubs.tolist()):
            if kind == "binary":
                x.append(cp.new_bool_var(name))
            elif kind == "integer" and np.isfinite(ub):
                x.append(cp.new_int_var(0, int(ub), name))
            else:
                raise ModelError(f"backend {backend.full_name!r} needs bounded integer "
                                 f"variables; {form.name} has {kind} {name}")
        binary = np.array(form.kinds()) == "binary"
        for block in form.rows:
            for idx, row, rhs in zip(block.index, block.coefs, block.rhs.tolist()):
                if rhs == 1 and (row == 1).all() and binary[idx].all():
                    terms = [x[i] for i in idx.tolist()]
                    (cp.add_at_most_one if block.sense == "<=" else cp.add_exactly_one)(terms)
                else:
                    self._add(idx.tolist(), row, block.sense, rhs, f"{form.name} row {block.name}")
        used = np.flatnonzero(coefs)
        self._objective(used.tolist(), coefs[used].tolist())
        if start is not None:
            cpsat.add_hints(cp, x, np.round(start).astype(np.int64).tolist())

    def _add(self, index, coefs, sense: str, rhs: float, what: str) -> None:
        """An integer row; a fractional ``rhs`` is rounded the way the integer row allows
        (down for ``<=``, up for ``>=``), which keeps exactly the same integer points."""
        coefs = np.asarray(coefs, dtype=float)
        if not (coefs == np.round(coefs)).all() or (sense == "==" and rhs != round(rhs)):
            raise ModelError(f"backend {self.backend.full_name!r} needs integer rows; "
                             f"{what} is not")
        expr = self.lin.weighted_sum([self.x[i] for i in index],
                                     coefs.astype(np.int64).tolist())
        if sense == "<=":
            self.cp.add(expr <= math.floor(rhs))
        elif sense == ">=":
            self.cp.add(expr >= math.ceil(rhs))
        else:
            self.cp.add(expr == int(rhs))

    def _objective(self, index, coefs) -> None:
        expr = self.lin.weighted_sum([self.x[i] for i in index], coefs)
        (self.cp.maximize if self.form.sense == "max" else self.cp.minimize)(expr)

    def solve(self, opts: SolveOptions) -> Answer:
        from ortools.sat.python import cp_model  # lazy: see registry

        left = opts.left()
        if left is not None and left <= 0:  # the build (or earlier solves) took the time
            return Answer(Termination.TIME_LIMIT)
        solver = cp_model.CpSolver()
        cpsat.parameters(solver, opts, left, self.native)
        code, stopped = cpsat.solve_stoppable(solver, self.cp)
        name = solver.status_name(code)
        termination = self.backend.STATUS_MAP.get(name, Termination.ERROR)
        if self.slack and termination == Termination.OPTIMAL:
            termination = Termination.FINISHED  # proven for rounded costs only: see the bound
        values = bound = None
        if name in ("OPTIMAL", "FEASIBLE"):  # without one, CP-SAT's bound is not meaningful
            values = np.asarray(list(solver.response_proto.solution))  # in variable order
            bound = form_bound(self.form, solver.best_objective_bound, self.scale, self.slack)
        termination = cpsat.stopped_by(termination, stopped, opts.deadline is not None)
        return Answer(termination, values, bound, name, log=solver.response_stats())

    def add_row(self, index, coefs, sense, rhs) -> None:
        self._add(list(index), coefs, sense, rhs, "an added row")

    def set_objective(self, index, coefs) -> None:
        """Python integers are taken as they are (up to int64); floats are scaled by the
        power of ten that makes them integral."""
        self.slack = 0.0
        if all(isinstance(c, (int, np.integer)) for c in coefs):
            self.scale = 1.0
            self._objective(list(index), [int(c) for c in coefs])
            return
        coefs = np.asarray(coefs, dtype=float)
        self.scale = integer_scale(coefs, "objective coefficients", self.backend.full_name)
        self._objective(list(index), np.round(coefs * self.scale).astype(np.int64).tolist())

    def fix(self, index, value) -> None:
        self.cp.add(self.x[index] == int(round(value)))


def _integer_objective(form, backend: str) -> tuple[float, np.ndarray, float]:
    """(scale, integer coefficients, slack) of ``form``'s objective: its own integer form,
    else the objective times the power of ten that makes it integral."""
    if form.integer_objective is not None:
        io = form.integer_objective
        return io.scale, np.asarray(io.coefs, dtype=np.int64), io.slack
    obj = form.objective()
    scale = integer_scale(obj, "objective coefficients", backend)
    return scale, np.round(obj * scale).astype(np.int64), 0.0
