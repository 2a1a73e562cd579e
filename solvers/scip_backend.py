"""SCIP through PySCIPOpt, model built directly (backend ``scip``)."""

from __future__ import annotations

import time

from hpcopt.errors import SolverOptionError
from hpcopt.result import Limit, Status

from .knapsack_dp import canonical_tie_break, tie_break_option
from .registry import Footprint, Outcome, SolveOptions, Solver, register
from .scip_output import optimize, quiet

LEX_CHUNK = 24  # items per canonical tie-break solve: objectives below 2**24, exact in SCIP
# above this capacity, knapsack rows stay linear rows: SCIP's knapsack separation ran 10 s
# past a 2 s limit on a 300-item subset-sum window with capacity 8.6e7
KNAPSACK_UPGRADE_CAP = 2**20
# PySCIPOpt model build (measured on a 700-node SCAS window, busy 2-core machine: ~1.4e-6 s
# and 1.3e-4 MB per nonzero, ~1e-5 s and 5e-4 MB more per row; with a margin)
SCIP_SECONDS_PER_NZ, SCIP_SECONDS_PER_ROW = 2e-6, 1.5e-5
SCIP_MB_PER_NZ, SCIP_MB_PER_ROW = 2e-4, 7e-4


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
    bound (none while SCIP's is its infinity).  The model's greedy decision (or ``warm_start``)
    is SCIP's first incumbent; ``max_memory_mb`` -> ``limits/memory``.  SCIP's output is kept
    off stdout (``scip_output``).
    """

    doc = "SCIP via PySCIPOpt (direct model; knapsack, SCAS ILP, OSDEC MIP); seedable"
    SUPPORTED_MODELS = ("knapsack", "scas", "osdec")
    REQUIRED_MODULES = ("pyscipopt",)
    INSTALL_HINT = "pip install pyscipopt"
    EXACT = True
    GREEDY_START = True
    OPTIONS = ("formulation", "tie_break")
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

    def footprint(self, model, opts: SolveOptions) -> Footprint | None:
        """The PySCIPOpt build, by the formulation's nonzeros and rows."""
        if model.kind == "scas":
            _, rows, nz = model.algebraic_size(opts.solver_options.get("formulation", "paper"))
        elif model.kind == "osdec":
            _, rows, nz = model.algebraic_size()
            rows, nz = rows // 4, nz // 4  # the reduced form is a few times smaller
        else:
            _, rows, nz = model.algebraic_size()
        return Footprint(nz * SCIP_SECONDS_PER_NZ + rows * SCIP_SECONDS_PER_ROW,
                         nz * SCIP_MB_PER_NZ + rows * SCIP_MB_PER_ROW)

    def _solve(self, model, opts: SolveOptions) -> Outcome:
        import pyscipopt

        options = dict(opts.solver_options)
        formulation = options.pop("formulation", "paper")
        if model.kind == "knapsack":
            return self._knapsack(model, opts)
        if model.kind == "osdec":  # time-indexed MIP, see solvers/osdec_mip.py
            from .osdec_mip import solve_scip

            return solve_scip(self, model, opts)
        scip = pyscipopt.Model(model.kind)
        quiet(scip)
        if opts.max_memory_mb is not None:
            scip.setParam("limits/memory", opts.max_memory_mb)
        if opts.seed is not None:
            scip.setParam("randomization/randomseedshift", opts.seed)
        for key, val in options.items():
            try:
                scip.setParam(key, val)
            except (KeyError, ValueError, TypeError) as err:
                raise SolverOptionError(f"scip: bad SCIP parameter {key}={val!r} ({err})") from None
        decode, objective, y = _scas(scip, model, formulation)
        start = opts.warm_start if opts.warm_start is not None else opts.start
        if start is not None and model.evaluate(start).feasible:
            sol = scip.createSol()
            for row, i in zip(y, start):
                scip.setSolVal(sol, row[int(i)], 1.0)
            scip.addSol(sol, free=True)  # x (paper form) follows y: SCIP completes it
        left = opts.left()
        if left is not None:
            if left <= 0:  # the build took the time: the greedy stands
                return Outcome(Status.NO_SOLUTION, limit=Limit.TIME)
        optimize(scip, left, opts.log)
        native = scip.getStatus()
        status, limit = self.STATUS_MAP.get(native, (Status.ERROR, None))
        decision = None
        if status.has_solution and scip.getNSols() > 0:
            sol = scip.getBestSol()
            decision = decode(lambda v: scip.getSolVal(sol, v))
        dual = scip.getDualbound()
        bound = None if scip.isInfinity(abs(dual)) else objective(dual)
        return Outcome(status, decision, bound=bound, limit=limit,
                       extra={"native_status": native, "nodes": scip.getNNodes()})


    def _knapsack(self, model, opts: SolveOptions) -> Outcome:
        """Knapsack: an answer ``model.evaluate`` accepts, then the canonical optimum.

        SCIP checks rows with a relative tolerance, so an answer that overruns a capacity
        (checked exactly by ``model.evaluate``) gets a cover cut ``sum_{i in S} x_i <= |S|-1``
        (valid: the set S does not fit) and SCIP solves again.  (SCIP's own knapsack
        constraint is exact but overran time limits 2.4x on subset-sum windows, and with
        capacities above ``KNAPSACK_UPGRADE_CAP`` rows are not upgraded to it.)  Once
        optimal, ties are broken by ``canonical_tie_break`` (the dp on integer data, checked
        against SCIP's optimal value; ``solver_options={"tie_break": "dp"}``, the default);
        otherwise, or with ``"tie_break": "resolve"``, the value is kept (``>= z - 1/2`` for
        integer values, feastol 1e-9, and an answer below ``z`` is cut off) and the 0-1
        vector maximized lexicographically,
        ``LEX_CHUNK`` items per solve (weights ``2**(c-1-j)``: small integer objectives SCIP
        compares exactly).  The time limit covers every solve.
        """
        import pyscipopt

        deadline = opts.deadline
        red = model.reduced(backend=self.full_name)
        if red.size == 0:
            return Outcome(Status.OPTIMAL, red.lift([]))
        values = red.values.tolist()
        scip = pyscipopt.Model("knapsack")
        quiet(scip)
        if opts.max_memory_mb is not None:
            scip.setParam("limits/memory", opts.max_memory_mb)
        if opts.seed is not None:
            scip.setParam("randomization/randomseedshift", opts.seed)
        if red.capacities.max() > KNAPSACK_UPGRADE_CAP:
            scip.setParam("constraints/linear/upgrade/knapsack", False)
        mode = tie_break_option(opts.solver_options, self.full_name)
        for key, val in opts.solver_options.items():
            if key in self.OPTIONS:
                continue
            try:
                scip.setParam(key, val)
            except (KeyError, ValueError, TypeError) as err:
                raise SolverOptionError(f"scip: bad SCIP parameter {key}={val!r} ({err})") from None
        x = [scip.addVar(f"x{i}", vtype="B", obj=v) for i, v in enumerate(values)]
        for r, (row, cap) in enumerate(zip(red.weights.tolist(), red.capacities.tolist())):
            scip.addCons(pyscipopt.quicksum(a * xi for a, xi in zip(row, x) if a) <= cap,
                         name=f"capacity{r}")
        scip.setMaximize()
        start = opts.warm_start if opts.warm_start is not None else opts.start
        if start is not None and model.evaluate(start).feasible:
            sol = scip.createSol()
            for var, i in zip(x, red.items.tolist()):
                scip.setSolVal(sol, var, float(start[i]))
            scip.addSol(sol, free=True)
        floor = [None]  # the optimal value once known: answers below it are cut off

        def run():
            """Optimize until the answer passes the exact checks: (status, limit, chosen)."""
            while True:
                optimize(scip, None if deadline is None else
                         max(deadline - time.perf_counter(), 1e-3), opts.log)
                native = scip.getStatus()
                status, limit = self.STATUS_MAP.get(native, (Status.ERROR, None))
                if not status.has_solution or scip.getNSols() == 0:
                    return Status.NO_SOLUTION if status.has_solution else status, limit, None
                sol = scip.getBestSol()
                chosen = [scip.getSolVal(sol, v) > 0.5 for v in x]
                fits = model.evaluate(red.lift(chosen)).feasible
                short = floor[0] is not None and sum(
                    v for v, c in zip(values, chosen) if c) < floor[0]
                if fits and not short:
                    return status, limit, chosen
                if deadline is not None and time.perf_counter() > deadline:
                    return Status.NO_SOLUTION, Limit.TIME, None
                scip.freeTransform()
                taken = [v for v, c in zip(x, chosen) if c]
                if fits:  # below the optimum (tolerance): exclude exactly this vector
                    left = [v for v, c in zip(x, chosen) if not c]
                    scip.addCons(pyscipopt.quicksum(taken) - pyscipopt.quicksum(left)
                                 <= len(taken) - 1)
                else:  # over a capacity: no superset of this item set fits either
                    scip.addCons(pyscipopt.quicksum(taken) <= len(taken) - 1)

        status, limit, chosen = run()
        dual = scip.getDualbound()
        bound = red.objective(dual) if chosen is not None and not scip.isInfinity(abs(dual)) \
            else None
        if status != Status.OPTIMAL:
            return Outcome(status, None if chosen is None else red.lift(chosen), bound=bound,
                           limit=limit, extra={"native_status": scip.getStatus()})
        if mode == "dp":
            canonical = canonical_tie_break(model, red.lift(chosen), deadline)
            if canonical is not None:
                return Outcome(Status.OPTIMAL, canonical, extra={"native_status": "optimal",
                                                                 "tie_break": "dp"})
        best = floor[0] = sum(v for v, c in zip(values, chosen) if c)
        integral = all(float(v).is_integer() for v in values)
        scip.freeTransform()
        scip.setParam("numerics/feastol", 1e-9)
        scip.addCons(pyscipopt.quicksum(v * xi for v, xi in zip(values, x))
                     >= best - (0.5 if integral else 1e-9 * max(1.0, abs(best))))
        if not integral:
            floor[0] = None  # float values: optimal up to round-off
        for start in range(0, len(x), LEX_CHUNK):
            chunk = x[start:start + LEX_CHUNK]
            scip.setObjective(pyscipopt.quicksum((1 << (len(chunk) - 1 - j)) * v
                                                 for j, v in enumerate(chunk)), "maximize")
            status, limit, found = run()
            if status != Status.OPTIMAL:  # proven optimal, but not yet canonical
                return Outcome(Status.FEASIBLE, red.lift(chosen), bound=red.objective(best),
                               limit=limit or Limit.TIME)
            chosen = found
            scip.freeTransform()
            for v, c in zip(chunk, chosen[start:start + LEX_CHUNK]):
                scip.chgVarLb(v, float(c))
                scip.chgVarUb(v, float(c))
        return Outcome(Status.OPTIMAL, red.lift(chosen), extra={"native_status": "optimal",
                                                                "tie_break": "resolve"})

def _scas(scip, model, formulation: str):
    """Binary y[j, i] (job j starts at position i of Q); the paper's x[j, k] and rows (4)
    plus node rows, or the compact node rows (see ``hpcopt.models.scas``)."""
    import pyscipopt

    if formulation not in ("paper", "compact"):
        raise SolverOptionError(f"scip: SCAS formulation must be 'paper' or 'compact', "
                         f"got {formulation!r}")
    q, sizes = model.n_idle, [int(n) for n in model.sizes]
    exact = model.integer_costs()  # whole-number costs: SCIP's tolerances cannot merge ties
    if exact is None:
        scale, weights = 1, [model.interval_costs[:, n - 1].tolist() for n in sizes]
    else:
        scale, weights = exact
    y = [[scip.addVar(f"y{j}_{i}", vtype="B", obj=weights[j][i]) for i in range(q)]
         for j in range(len(sizes))]
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

    return decode, (lambda scaled: float(scaled) / scale), y
