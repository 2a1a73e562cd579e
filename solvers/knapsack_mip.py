"""Knapsack on the generic MIP backends: solve loops that make the answer exact and canonical.

A knapsack's algebraic form (``hpcopt.models.knapsack.knapsack_form``) is one solve; the
MIP backends need more for the knapsack's two promises, so each family keeps a loop of its own
(registered in ``hpcopt.solvers.mip``'s procedure table):

* exact capacities: SCIP and HiGHS check rows with a relative tolerance, so an answer that
  overruns a capacity by a few units (``model.evaluate`` checks exactly) is cut off and the
  solver runs again; CP-SAT solves the integer-scaled data (``KnapsackModel.reduced``) and is
  exact by construction;
* the canonical optimum (``hpcopt.models.knapsack``): by ``canonical_tie_break`` (the dp on
  integer data, the default) or by re-solves (``tie_break="resolve"``): lexicographic chunks
  of ``LEX_CHUNK`` items for SCIP and pyomo, tie-break terms on the integer values for CP-SAT
  (``ReducedKnapsack.solve_canonical``).

Their cost is measured by ``benchmarks/knapsack_backends.py`` (benchmarks/README, "Knapsack
backends").
"""

from __future__ import annotations

import io
import math
import time

import numpy as np

from hpcopt.result import Limit, Status

from . import cpsat
from .knapsack_dp import canonical_tie_break, tie_break_option
from .mip import procedure
from .pyomo_backend import termination_map
from .registry import Outcome, SolveOptions
from .scip_output import new_model, optimize

LEX_CHUNK = 24  # items per canonical tie-break solve: objectives below 2**24, exact in SCIP
# above this capacity, knapsack rows stay linear rows: SCIP's knapsack separation ran 10 s
# past a 2 s limit on a 300-item subset-sum window with capacity 8.6e7
KNAPSACK_UPGRADE_CAP = 2**20


@procedure("knapsack", "scip")
def scip_knapsack(backend, model, opts: SolveOptions) -> Outcome:
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
    import pyscipopt  # lazy: see registry

    deadline = opts.deadline
    red = model.reduced(backend=backend.full_name)
    if red.size == 0:
        return Outcome(Status.OPTIMAL, red.lift([]))
    values = red.values.tolist()
    params = {"constraints/linear/upgrade/knapsack": False} \
        if red.capacities.max() > KNAPSACK_UPGRADE_CAP else {}
    params.update((k, v) for k, v in opts.solver_options.items() if k not in backend.OPTIONS)
    mode = tie_break_option(opts.solver_options, backend.full_name)
    scip = new_model("knapsack", opts, params)
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
            status, limit = backend.STATUS_MAP.get(native, (Status.ERROR, None))
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


@procedure("knapsack", "cpsat", sized=False)
def cpsat_knapsack(backend, model, opts: SolveOptions) -> Outcome:
    """Boolean x per kept item, linear capacities, the integer values.  Ties: with
    ``solver_options["tie_break"] == "dp"`` (default) CP-SAT proves the optimum and
    ``canonical_tie_break`` picks the canonical one of that value (tie-break terms made
    CP-SAT ~8x slower on 50-job windows); with "resolve", or when the dp cannot, the
    values carry tie-break terms (``ReducedKnapsack.solve_canonical``: one or two
    solves for tens of items).  The time limit covers all solves together."""
    from ortools.sat.python import cp_model  # lazy: see registry

    red = model.reduced(integer_weights=True, integer_values=True, backend=backend.full_name)
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
        status = backend.STATUS_MAP.get(solver.status_name(code), Status.ERROR)
        logs.append(solver.response_stats())
        if not status.has_solution:
            found[0] = False
            return [False] * len(values), False, None
        chosen = [bool(solver.boolean_value(v)) for v in x]
        return chosen, status == Status.OPTIMAL, solver.best_objective_bound

    if tie_break_option(opts.solver_options, backend.full_name) == "dp":
        first, proven, bound = solve(red.values.tolist(), red.weights, red.capacities)
        x = red.lift(first)
        if not proven or not found[0]:
            return _cpsat_outcome(red, first, proven, bound, deadline, found, logs,
                                  stopped=stopped[0])
        canonical = canonical_tie_break(model, x, deadline)
        if canonical is not None:
            return Outcome(Status.OPTIMAL, canonical, log="\n".join(logs),
                           extra={"tie_break": "dp"})
    chosen, proven, bound = red.solve_canonical(solve)
    return _cpsat_outcome(red, chosen, proven, bound, deadline, found, logs,
                          tie_break="resolve", stopped=stopped[0])


def _cpsat_outcome(red, chosen, proven, bound, deadline, found, logs,
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


@procedure("knapsack", "pyomo")
def pyomo_knapsack(backend, model, opts: SolveOptions) -> Outcome:
    """Knapsack on ``to_pyomo()``: the time limit counts the model build and every
    re-solve (each gets what is left, less the solver's late stop); answers
    ``model.evaluate`` refuses get a cover cut and a re-solve; an optimum is then made
    canonical: by ``canonical_tie_break`` (the dp on integer data, checked against the
    solver's optimal value; ``solver_options`` ``{"tie_break": "dp"}``, the default),
    otherwise (or ``"resolve"``) the value is kept (``>= z - 1/2`` for integer values)
    and the 0-1 vector maximized lexicographically, ``LEX_CHUNK`` items per solve,
    items worth <= 0 fixed at 0."""
    import pyomo.environ as pyo  # lazy: see registry
    from pyomo.common.log import LoggingIntercept

    deadline = opts.deadline
    opt = backend._solver()
    red = model.reduced(backend=backend.full_name)
    if red.size == 0:  # nothing to choose (and an empty pyomo objective)
        return Outcome(Status.OPTIMAL, red.lift([]))
    notes = backend._common_options(opt, opts)
    stop_s = backend.build_estimate(model).stop_s
    mode = tie_break_option(opts.solver_options, backend.full_name)
    for key, val in opts.solver_options.items():
        if key not in backend.OPTIONS:
            opt.options[key] = val
    pm = model.to_pyomo()
    pm.cuts = pyo.ConstraintList()
    items = list(pm.x)
    conditions = []

    def run():
        """Solve until the answer passes ``model.evaluate``: (status, limit, x, results)."""
        while True:
            if not backend._give_time(opt, opts, stop_s):
                return Status.NO_SOLUTION, Limit.TIME, None, None
            results = backend._run(opt, pm)
            condition = results.solver.termination_condition
            conditions.append(str(condition))
            status, limit = termination_map().get(condition, (Status.ERROR, None))
            if not status.has_solution or len(results.solution) == 0:
                return (Status.NO_SOLUTION if status.has_solution else status), limit, \
                    None, results
            with LoggingIntercept(io.StringIO()) as captured:  # "aborted status"
                pm.solutions.load_from(results)
            notes.append(captured.getvalue().strip())
            x = [round(pm.x[i].value or 0) for i in items]  # unused x may be unset
            if model.evaluate(x).feasible:
                return status, limit, x, results
            taken = [i for i, v in zip(items, x) if v]  # float round-off: cut it off
            pm.cuts.add(sum(pm.x[i] for i in taken) <= len(taken) - 1)

    status, limit, x, results = run()
    bound = None
    if results is not None:
        side = results.problem.upper_bound
        bound = float(side) if side is not None and math.isfinite(float(side)) else None
    extra = {"termination_condition": conditions[-1] if conditions else "not started"}
    if status != Status.OPTIMAL or x is None:
        notes.append(f"termination_condition={extra['termination_condition']}")
        return Outcome(status, x, bound=bound, limit=limit, extra=extra,
                       log="\n".join(n for n in notes if n))
    if mode == "dp":
        canonical = canonical_tie_break(model, x, deadline)
        if canonical is not None:
            notes.append(f"termination_condition={extra['termination_condition']}")
            return Outcome(Status.OPTIMAL, canonical, extra={**extra, "tie_break": "dp"},
                           log="\n".join(n for n in notes if n))
    values = model.values.tolist()
    best = float(model.values @ np.asarray(x, dtype=float))
    integral = all(float(v).is_integer() for v in values)
    slack = 0.5 if integral else 1e-9 * max(1.0, abs(best))
    pm.keep = pyo.Constraint(expr=sum(v * pm.x[i] for i, v in zip(items, values) if v)
                             >= best - slack)
    for i, v in zip(items, values):
        if v <= 0:
            pm.x[i].fix(0)
    pm.obj.deactivate()
    for start in range(0, len(items), LEX_CHUNK):
        chunk = items[start:start + LEX_CHUNK]
        pm.lex = pyo.Objective(expr=sum((1 << (len(chunk) - 1 - j)) * pm.x[i]
                                        for j, i in enumerate(chunk)), sense=pyo.maximize)
        status, limit, found, _ = run()
        pm.del_component(pm.lex)
        if status != Status.OPTIMAL:  # proven optimal, but not yet canonical
            return Outcome(Status.FEASIBLE, x, bound=best, limit=limit or Limit.TIME,
                           extra=extra, log="\n".join(n for n in notes if n))
        x = found
        for i in chunk:
            pm.x[i].fix(x[items.index(i)])
    notes.append(f"termination_condition={extra['termination_condition']}")
    return Outcome(Status.OPTIMAL, x, extra={**extra, "tie_break": "resolve"},
                   log="\n".join(n for n in notes if n))
