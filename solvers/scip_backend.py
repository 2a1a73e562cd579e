"""SCIP through PySCIPOpt, model built directly from a model's algebraic form (backend
``scip``)."""

from __future__ import annotations

import numpy as np

from hpcopt.result import Limit, Status

from .mip import MipBackend, form_bound
from .registry import Outcome, SolveOptions, register
from .scip_output import new_model, optimize

VTYPES = {"binary": "B", "integer": "I", "continuous": "C"}


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
    greedy decision (or ``warm_start``) is SCIP's first incumbent.  Native status -> (status
    with an incumbent, limit)::

        STATUS_MAP = {
            "optimal": (OPTIMAL, None), "timelimit": (FEASIBLE, TIME),
            "nodelimit": (FEASIBLE, NODE), "totalnodelimit": (FEASIBLE, NODE),
            "stallnodelimit": (FEASIBLE, NODE), "gaplimit": (FEASIBLE, None),
            "sollimit": (FEASIBLE, None), "bestsollimit": (FEASIBLE, None),
            "restartlimit": (FEASIBLE, None), "memlimit": (FEASIBLE, MEMORY),
            "userinterrupt": (FEASIBLE, INTERRUPT), "infeasible": (INFEASIBLE, None),
            "unbounded": (UNBOUNDED, None), "inforunbd": (INFEASIBLE_OR_UNBOUNDED, None),
            "unknown": (NO_SOLUTION, None),
        }

    A FEASIBLE status without a stored solution becomes NO_SOLUTION.  The bound is SCIP's dual
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
        "optimal": (Status.OPTIMAL, None),
        "timelimit": (Status.FEASIBLE, Limit.TIME),
        "nodelimit": (Status.FEASIBLE, Limit.NODE),
        "totalnodelimit": (Status.FEASIBLE, Limit.NODE),
        "stallnodelimit": (Status.FEASIBLE, Limit.NODE),
        "gaplimit": (Status.FEASIBLE, None),
        "sollimit": (Status.FEASIBLE, None),
        "bestsollimit": (Status.FEASIBLE, None),
        "restartlimit": (Status.FEASIBLE, None),
        "memlimit": (Status.FEASIBLE, Limit.MEMORY),
        "userinterrupt": (Status.FEASIBLE, Limit.INTERRUPT),
        "infeasible": (Status.INFEASIBLE, None),
        "unbounded": (Status.UNBOUNDED, None),
        "inforunbd": (Status.INFEASIBLE_OR_UNBOUNDED, None),
        "unknown": (Status.NO_SOLUTION, None),
    }

    def _solve_form(self, model, form, opts: SolveOptions, native: dict, start) -> Outcome:
        import pyscipopt  # lazy: see registry

        scip = new_model(form.name, opts, native)
        exact = form.integer_objective
        scale = 1.0
        obj = form.objective()
        if exact is not None and exact.slack == 0:
            scale, obj = exact.scale, exact.coefs
        ubs = form.upper_bounds().tolist()
        x = [scip.addVar(name, vtype=VTYPES[kind], lb=0.0, obj=float(c),
                         ub=None if kind == "binary" or not np.isfinite(ub) else ub)
             for name, kind, c, ub in zip(form.names(), form.kinds(), obj.tolist(), ubs)]
        for block in form.rows:
            for key, idx, coefs, rhs in zip(block.keys, block.index, block.coefs,
                                            block.rhs.tolist()):
                body = pyscipopt.quicksum(c * x[i] for i, c in zip(idx.tolist(), coefs.tolist()))
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
        left = opts.left()
        if left is not None and left <= 0:  # the build took the time: the start stands
            return Outcome(Status.NO_SOLUTION, limit=Limit.TIME)
        optimize(scip, left, opts.log)
        native_status = scip.getStatus()
        status, limit = self.STATUS_MAP.get(native_status, (Status.ERROR, None))
        decision = None
        if status != Status.ERROR and scip.getNSols() > 0:
            sol = scip.getBestSol()
            decision = form.decode(np.array([scip.getSolVal(sol, v) for v in x]))
        elif status.has_solution:
            status = Status.NO_SOLUTION
        dual = scip.getDualbound()
        bound = None if scip.isInfinity(abs(dual)) else form_bound(form, dual, scale)
        return Outcome(status, decision, bound=bound, limit=limit,
                       extra={"native_status": native_status, "nodes": scip.getNNodes()})
