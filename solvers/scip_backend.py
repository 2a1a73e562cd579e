"""SCIP through PySCIPOpt, model built directly (backend ``scip``)."""

from __future__ import annotations

from hpcopt.errors import SolverOptionError
from hpcopt.result import Limit, Status

from .registry import Outcome, SolveOptions, Solver, register


@register("scip")
class Scip(Solver):
    """SCIP 0-1 program built with PySCIPOpt (quiet).

    Supported models: ``knapsack`` (any finite data, no integer scaling) and ``scas`` (the
    paper's 0-1 ILP with the node rows hpcopt adds; ``solver_options`` ``{"formulation":
    "compact"}`` for the compact form, see ``hpcopt.models.scas``).  ``time_limit`` ->
    ``limits/time``, ``seed`` -> ``randomization/randomseedshift``; ``solver_options`` are SCIP
    parameters (``setParam``).  Native status -> (status with an incumbent, limit)::

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
    bound.
    """

    doc = "SCIP via PySCIPOpt (direct model; knapsack, SCAS ILP); seedable"
    SUPPORTED_MODELS = ("knapsack", "scas")
    REQUIRED_MODULES = ("pyscipopt",)
    INSTALL_HINT = "pip install pyscipopt"
    EXACT = True
    OPTIONS = ("formulation",)
    NATIVE_OPTIONS = True  # SCIP parameters
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

    def _solve(self, model, opts: SolveOptions) -> Outcome:
        import pyscipopt

        options = dict(opts.solver_options)
        formulation = options.pop("formulation", "paper")
        if model.kind == "knapsack":
            red = model.reduced(backend=self.full_name)
            if red.size == 0:
                return Outcome(Status.OPTIMAL, red.lift([]))
        scip = pyscipopt.Model(model.kind)
        scip.hideOutput()
        if opts.time_limit is not None:
            scip.setParam("limits/time", opts.time_limit)
        if opts.seed is not None:
            scip.setParam("randomization/randomseedshift", opts.seed)
        for key, val in options.items():
            try:
                scip.setParam(key, val)
            except (KeyError, ValueError, TypeError) as err:
                raise SolverOptionError(f"scip: bad SCIP parameter {key}={val!r} ({err})") from None
        if model.kind == "knapsack":
            decode, objective = _knapsack(scip, red)
        else:
            decode, objective = _scas(scip, model, formulation)
        scip.optimize()
        native = scip.getStatus()
        status, limit = self.STATUS_MAP.get(native, (Status.ERROR, None))
        decision = None
        if status.has_solution and scip.getNSols() > 0:
            sol = scip.getBestSol()
            decision = decode(lambda v: scip.getSolVal(sol, v))
        return Outcome(status, decision, bound=objective(scip.getDualbound()), limit=limit,
                       extra={"native_status": native, "nodes": scip.getNNodes()})


def _knapsack(scip, red):
    """Binary x per kept item, one capacity row per resource; maximize value."""
    import pyscipopt

    x = [scip.addVar(f"x{i}", vtype="B", obj=v) for i, v in enumerate(red.values.tolist())]
    for r, (row, cap) in enumerate(zip(red.weights.tolist(), red.capacities.tolist())):
        scip.addCons(pyscipopt.quicksum(a * xi for a, xi in zip(row, x) if a) <= cap,
                     name=f"capacity{r}")
    scip.setMaximize()
    return (lambda val: red.lift([val(xi) > 0.5 for xi in x])), red.objective


def _scas(scip, model, formulation: str):
    """Binary y[j, i] (job j starts at position i of Q); the paper's x[j, k] and rows (4)
    plus node rows, or the compact node rows (see ``hpcopt.models.scas``)."""
    import pyscipopt

    if formulation not in ("paper", "compact"):
        raise SolverOptionError(f"scip: SCAS formulation must be 'paper' or 'compact', "
                         f"got {formulation!r}")
    costs = model.interval_costs
    q, sizes = model.n_idle, [int(n) for n in model.sizes]
    y = [[scip.addVar(f"y{j}_{i}", vtype="B", obj=float(costs[i, n - 1])) for i in range(q)]
         for j, n in enumerate(sizes)]
    for j, row in enumerate(y):
        scip.addCons(pyscipopt.quicksum(row) == 1, name=f"one_start{j}")
    if formulation == "compact":
        covers = model.covering_starts()
        for k in range(q):
            scip.addCons(pyscipopt.quicksum(y[j][i] for j, n in enumerate(sizes)
                                            for i in covers[n][k]) <= 1, name=f"node{k}")
    else:
        x = [[scip.addVar(f"x{j}_{k}", vtype="B") for k in range(q)] for j in range(len(sizes))]
        for j, n in enumerate(sizes):
            for i in range(q):
                for d in range(n):
                    scip.addCons(y[j][i] <= x[j][(i + d) % q])
        for k in range(q):
            scip.addCons(pyscipopt.quicksum(x[j][k] for j in range(len(sizes))) <= 1,
                         name=f"node{k}")
    scip.setMinimize()

    def decode(val):
        return [max(range(q), key=lambda i: val(row[i])) for row in y]

    return decode, float
