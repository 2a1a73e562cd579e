"""SCIP through PySCIPOpt, model built directly (backend ``scip``)."""

from __future__ import annotations

from hpcopt.result import Limit, Status

from .registry import Outcome, SolveOptions, Solver, register


@register("scip")
class Scip(Solver):
    """SCIP 0-1 program built with PySCIPOpt (quiet).

    Supported models: ``knapsack`` (any finite data, no integer scaling).  ``time_limit`` ->
    ``limits/time``, ``seed`` -> ``randomization/randomseedshift``; ``solver_options`` are SCIP
    parameters (``setParam``).  Native status -> (status with an incumbent, limit)::

        STATUS_MAP = {
            "optimal": (OPTIMAL, None), "timelimit": (FEASIBLE, TIME),
            "nodelimit": (FEASIBLE, NODE), "totalnodelimit": (FEASIBLE, NODE),
            "stallnodelimit": (FEASIBLE, NODE), "gaplimit": (FEASIBLE, None),
            "sollimit": (FEASIBLE, None), "bestsollimit": (FEASIBLE, None),
            "restartlimit": (FEASIBLE, None), "memlimit": (FEASIBLE, None),
            "userinterrupt": (INTERRUPTED, None), "infeasible": (INFEASIBLE, None),
            "unbounded": (UNBOUNDED, None), "inforunbd": (INFEASIBLE, None),
            "unknown": (NO_SOLUTION, None),
        }

    A FEASIBLE status without a stored solution becomes NO_SOLUTION.  The bound is SCIP's dual
    bound.
    """

    doc = "SCIP via PySCIPOpt (direct model); seedable"
    SUPPORTED_MODELS = ("knapsack",)
    REQUIRED_MODULES = ("pyscipopt",)
    INSTALL_HINT = "pip install pyscipopt"
    EXACT = True
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
        "memlimit": (Status.FEASIBLE, None),
        "userinterrupt": (Status.INTERRUPTED, None),
        "infeasible": (Status.INFEASIBLE, None),
        "unbounded": (Status.UNBOUNDED, None),
        "inforunbd": (Status.INFEASIBLE, None),
        "unknown": (Status.NO_SOLUTION, None),
    }

    def _solve(self, model, opts: SolveOptions) -> Outcome:
        import pyscipopt

        red = model.reduced(backend=self.full_name)
        if red.size == 0:
            return Outcome(Status.OPTIMAL, red.lift([]))
        scip = pyscipopt.Model("knapsack")
        scip.hideOutput()
        if opts.time_limit is not None:
            scip.setParam("limits/time", opts.time_limit)
        if opts.seed is not None:
            scip.setParam("randomization/randomseedshift", opts.seed)
        for key, val in opts.solver_options.items():
            try:
                scip.setParam(key, val)
            except (KeyError, ValueError, TypeError) as err:
                raise ValueError(f"scip: bad SCIP parameter {key}={val!r} ({err})") from None
        x = [scip.addVar(f"x{i}", vtype="B", obj=v) for i, v in enumerate(red.values.tolist())]
        for r, (row, cap) in enumerate(zip(red.weights.tolist(), red.capacities.tolist())):
            scip.addCons(pyscipopt.quicksum(a * xi for a, xi in zip(row, x) if a) <= cap,
                         name=f"capacity{r}")
        scip.setMaximize()
        scip.optimize()
        native = scip.getStatus()
        status, limit = self.STATUS_MAP.get(native, (Status.ERROR, None))
        decision = None
        if status.has_solution and scip.getNSols() > 0:
            sol = scip.getBestSol()
            decision = red.lift([scip.getSolVal(sol, xi) > 0.5 for xi in x])
        return Outcome(status, decision, bound=red.objective(scip.getDualbound()), limit=limit,
                       extra={"native_status": native, "nodes": scip.getNNodes()})
