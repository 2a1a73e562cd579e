"""SCIP through PySCIPOpt, model built directly from a model's algebraic form (backend
``scip``)."""

from __future__ import annotations

import numpy as np

from hpcopt.result import Termination

from .mip import Answer, MipBackend, Session, as_held
from .registry import SolveOptions, register
from .scip_output import new_model, optimize

VTYPES = {"binary": "B", "integer": "I", "continuous": "C"}
KNAPSACK_UPGRADE_CAP = 2**20  # see _big_binary_rows


@register("scip")
class Scip(MipBackend):
    """SCIP on a model's algebraic form, built with PySCIPOpt (quiet).

    Supported models: those with an algebraic form (``hpcopt.models.algebraic``: ``scas``,
    ``osdec``) or a SCIP procedure (``knapsack``, ``hpcopt.solvers.knapsack_mip``).  A form
    whose ``integer_objective`` is exact is solved on those integers (SCIP's tolerances then
    cannot merge ties).  ``time_limit`` -> ``limits/time``, ``seed`` ->
    ``randomization/randomseedshift``, ``max_memory_mb`` -> ``limits/memory``;
    ``solver_options``: the form's options (``formulation`` for SCAS), ``greedy_start``
    (``hpcopt.solvers.mip``), any other key a SCIP parameter (``setParam``).  The model's
    greedy decision (or ``warm_start``) is SCIP's first incumbent.  Native status ->
    termination (``STATUS_MAP``): optimal -> optimal; timelimit -> time_limit; nodelimit,
    totalnodelimit, stallnodelimit -> node_limit; memlimit -> memory_limit; userinterrupt ->
    interrupted; gaplimit, sollimit, bestsollimit, restartlimit -> finished; infeasible,
    unbounded, inforunbd -> the same; unknown -> unknown.

    SCIP's best stored solution is the answer's decision; optimal or finished without one
    is ``unknown``.  The bound is SCIP's dual
    bound (none while SCIP's is its infinity).  SCIP's output is kept off stdout
    (``scip_output``).
    """

    doc = "SCIP via PySCIPOpt (direct model; knapsack, SCAS ILP, OSDEC MIP); seedable"
    FAMILY = "scip"
    REQUIRED_MODULES = ("pyscipopt",)
    INSTALL_HINT = "pip install pyscipopt"
    OPTIONS = ("formulation", "reduce", "greedy_start", "tie_break")
    # PySCIPOpt model build (measured on a 700-node SCAS window, busy 2-core machine: ~1.4e-6 s
    # and 1.3e-4 MB per nonzero, ~1e-5 s and 5e-4 MB more per row; with a margin)
    SECONDS_PER_NZ, SECONDS_PER_ROW = 2e-6, 1.5e-5
    MB_PER_NZ, MB_PER_ROW = 2e-4, 7e-4
    STATUS_MAP = {
        "optimal": Termination.OPTIMAL,
        "timelimit": Termination.TIME_LIMIT,
        "nodelimit": Termination.NODE_LIMIT,
        "totalnodelimit": Termination.NODE_LIMIT,
        "stallnodelimit": Termination.NODE_LIMIT,
        "gaplimit": Termination.FINISHED,
        "sollimit": Termination.FINISHED,
        "bestsollimit": Termination.FINISHED,
        "restartlimit": Termination.FINISHED,
        "memlimit": Termination.MEMORY_LIMIT,
        "userinterrupt": Termination.INTERRUPTED,
        "infeasible": Termination.INFEASIBLE,
        "unbounded": Termination.UNBOUNDED,
        "inforunbd": Termination.INFEASIBLE_OR_UNBOUNDED,
        "unknown": Termination.UNKNOWN,
    }

    def session(self, model, form, opts: SolveOptions, native: dict, start) -> ScipSession:
        return ScipSession(self, form, opts, native, start)


class ScipSession(Session):
    """A form in a PySCIPOpt model; changes between solves free SCIP's transformed problem
    first (``freeTransform``), as SCIP requires."""

    def __init__(self, backend: Scip, form, opts: SolveOptions, native: dict, start) -> None:
        import pyscipopt  # lazy: see registry

        self.backend, self.sense, self.quicksum = backend, form.sense, pyscipopt.quicksum
        params = dict(native)
        if _big_binary_rows(form):
            params.setdefault("constraints/linear/upgrade/knapsack", False)
        self.scip = scip = new_model(form.name, opts, params)
        exact = form.integer_objective
        self.scale, obj = 1.0, form.objective()
        if exact is not None and exact.slack == 0:
            self.scale, obj = exact.scale, exact.coefs
        ubs = form.upper_bounds().tolist()
        self.x = x = [scip.addVar(name, vtype=VTYPES[kind], lb=0.0, obj=float(c),
                                  ub=None if kind == "binary" or not np.isfinite(ub) else ub)
                      for name, kind, c, ub in zip(form.names(), form.kinds(), obj.tolist(),
                                                   ubs)]
        for block in form.rows:
            for key, idx, coefs, rhs in zip(block.keys, block.index, block.coefs,
                                            block.rhs.tolist()):
                body = self.quicksum(c * x[i] for i, c in zip(idx.tolist(), coefs.tolist()))
                name = f"{block.name}{key}"
                scip.addCons(body <= rhs if block.sense == "<=" else body == rhs, name=name)
        if form.sense == "max":
            scip.setMaximize()
        else:
            scip.setMinimize()
        if start is not None:
            sol = scip.createSol()
            for k in np.flatnonzero(start).tolist():
                scip.setSolVal(sol, x[k], float(start[k]))
            scip.addSol(sol, free=True)
        self.solved = False

    def solve(self, opts: SolveOptions) -> Answer:
        left = opts.left()
        if left is not None and left <= 0:  # the build (or earlier solves) took the time
            return Answer(Termination.TIME_LIMIT)
        scip = self.scip
        optimize(scip, left, opts.log)
        self.solved = True
        native = scip.getStatus()
        termination = self.backend.STATUS_MAP.get(native, Termination.ERROR)
        values = None
        if termination != Termination.ERROR and scip.getNSols() > 0:
            sol = scip.getBestSol()
            values = np.array([scip.getSolVal(sol, v) for v in self.x])
        dual = scip.getDualbound()
        bound = None if scip.isInfinity(abs(dual)) else float(dual) / self.scale
        return Answer(as_held(termination, values), values, bound, native,
                      extra={"nodes": scip.getNNodes()})

    def _change(self) -> None:
        if self.solved:
            self.scip.freeTransform()
            self.solved = False

    def add_row(self, index, coefs, sense, rhs) -> None:
        self._change()
        body = self.quicksum(c * self.x[i] for i, c in zip(index, coefs))
        self.scip.addCons(body <= rhs if sense == "<=" else body >= rhs)

    def set_objective(self, index, coefs) -> None:
        self._change()
        self.scip.setObjective(self.quicksum(c * self.x[i] for i, c in zip(index, coefs)),
                               "maximize" if self.sense == "max" else "minimize")
        self.scale = 1.0

    def fix(self, index, value) -> None:
        self._change()
        self.scip.chgVarLb(self.x[index], float(value))
        self.scip.chgVarUb(self.x[index], float(value))

    def tighten(self) -> None:
        self._change()
        self.scip.setParam("numerics/feastol", 1e-9)


def _big_binary_rows(form) -> bool:
    """Whether a ``<=`` row over 0-1 variables has a capacity above ``KNAPSACK_UPGRADE_CAP``:
    SCIP would make it a knapsack constraint, whose separation ran 10 s past a 2 s limit on a
    300-item subset-sum window with capacity 8.6e7, so such rows stay linear."""
    binary = np.array(form.kinds()) == "binary"
    return any(block.sense == "<=" and rhs > KNAPSACK_UPGRADE_CAP and binary[idx].all()
               for block in form.rows for idx, rhs in zip(block.index, block.rhs.tolist()))
