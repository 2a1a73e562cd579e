"""The OSDEC time-indexed MIP in SCIP (backend ``scip``) and CP-SAT (backend ``cpsat``).

Both solve ``OSDECModel.time_indexed()`` (the reduced form of ``to_pyomo()``): a binary x_k
per column (job, start) worth ``c d - w1 (start - earliest)`` (starts worth <= 0 left out), at
most one column per job, and per slot that can be overloaded ``sum c x - v_t <= C_t`` with
``v_t >= 0`` costing ``w2`` each (slots that can never be overloaded have no row).  v_t is an
integer variable (loads and capacities are integers, so the optimum is unchanged and SCIP
knows the objective is integral when w1, w2 are); in CP-SAT it lies in ``[0, max_load_t -
C_t]`` and the objective is scaled to integers (``w1``/``w2`` with decimals by a power of ten).

Size and speed (one synthetic day, ``python instances/osdec/make_instances.py --day D.json``:
288 slots, 3,000 jobs, seed 1): 13,364 binary columns of 20,261 admissible starts, 191 of 288
capacity rows (plus 2,395 one-start rows), 162,385 nonzeros in the capacity rows.  On a
shared 2-core machine, ``hpcopt solve D.json --backend osdec-greedy,scip,cpsat --time-limit
60``: osdec-greedy 58,931 in 0.6 s (LP bound 59,321), scip 59,147 (bound 59,315, gap 0.28%),
cpsat 58,938 (gap 0.65%, the LP bound); at 300 s scip 59,147 (gap 0.26%), cpsat 59,087 (gap
0.40%).  A 2,000-job day (seed 2), 120 s: scip 37,477 (gap 0.30%), cpsat 37,312 (0.80%).  The
dual bound hardly moves in branch and bound (root LP 59,316): days of this size end with a
reported gap, not a proof; 72 slots and 150 jobs are proved in 6-15 s.  The first CP-SAT
solve of a process also pays the OR-tools import, inside the time limit.

``solver_options`` both take: ``greedy_start`` (default True): the model's greedy start (the
``osdec-greedy`` schedule, computed by the registry as ``osdec-greedy`` would in the same time
limit: until its local search ends or the limit) is handed to the solver as a first
incumbent (SCIP) or a hint (CP-SAT) with the time it leaves; the registry returns it whenever
the answer is worse (``extra["greedy_fallback"]``), and reports its LP bound when tighter than
the solver's own (CP-SAT's is often weaker than the LP's); a ``warm_start`` decision replaces
it.
Every other key is a SCIP / CP-SAT parameter.  The time limit covers the greedy, the model
build (not started when its estimate cannot fit: ``Solver.footprint``) and the solve.
Statuses: the backend's own maps (``Scip.STATUS_MAP``, ``CpSat.STATUS_MAP``); stopped by the
limit with an incumbent -> FEASIBLE + TIME with the solver's dual bound.
"""

from __future__ import annotations

import numpy as np

from hpcopt.errors import SolverOptionError
from hpcopt.result import Limit, Status

from . import cpsat
from .registry import Outcome, SolveOptions
from .scip_output import optimize, quiet


def _start(model, opts: SolveOptions, backend: str):
    """(options without ours, the starting decision or None): ``warm_start`` when given,
    else the template's greedy start (``opts.start``) unless ``greedy_start`` is false."""
    options = dict(opts.solver_options)
    use = options.pop("greedy_start", True)
    if not isinstance(use, bool):
        raise SolverOptionError(f"backend {backend!r}: greedy_start must be true or false, "
                                f"got {use!r}")
    if opts.warm_start is not None:
        if not model.evaluate(opts.warm_start).feasible:
            raise SolverOptionError(f"backend {backend!r}: warm_start is not a feasible decision")
        return options, [int(s) for s in opts.warm_start]
    if not use or model.n_jobs == 0 or opts.start is None:
        return options, None
    return options, [int(s) for s in opts.start]


def _better(model, decision, incumbent):
    """The better of two decisions by the model's own objective (``decision`` on ties)."""
    if incumbent is None:
        return decision
    if decision is None:
        return incumbent
    if model.evaluate(incumbent).objective > model.evaluate(decision).objective + 1e-9:
        return incumbent
    return decision


def solve_scip(solver, model, opts: SolveOptions) -> Outcome:
    """SCIP on the reduced time-indexed MIP (``solver`` is the registered ``Scip``)."""
    import pyscipopt

    options, start = _start(model, opts, solver.full_name)
    ti = model.time_indexed()
    if ti.n_columns == 0:
        return Outcome(Status.OPTIMAL, [-1] * model.n_jobs)
    scip = pyscipopt.Model("osdec")
    quiet(scip)
    if opts.max_memory_mb is not None:
        scip.setParam("limits/memory", opts.max_memory_mb)
    if opts.seed is not None:
        scip.setParam("randomization/randomseedshift", opts.seed)
    for key, val in options.items():
        try:
            scip.setParam(key, val)
        except (KeyError, ValueError, TypeError, LookupError) as err:
            raise SolverOptionError(f"scip: bad SCIP parameter {key}={val!r} ({err})") from None
    x = [scip.addVar(f"x{j}_{s}", vtype="B", obj=float(v))
         for j, s, v in zip(ti.job.tolist(), ti.start.tolist(), ti.value.tolist())]
    v = [scip.addVar(f"v{t}", vtype="I", lb=0.0, obj=-ti.w2) for t in ti.slot.tolist()]
    by_job: dict[int, list] = {}
    for k, j in enumerate(ti.job.tolist()):
        by_job.setdefault(j, []).append(x[k])
    for j, xs in by_job.items():
        if len(xs) > 1:
            scip.addCons(pyscipopt.quicksum(xs) <= 1, name=f"one{j}")
    cores = ti.cores.tolist()
    for r, (cols, cap) in enumerate(zip(ti.cols, ti.capacity.tolist())):
        scip.addCons(pyscipopt.quicksum(cores[k] * x[k] for k in cols.tolist()) - v[r] <= cap,
                     name=f"cap{int(ti.slot[r])}")
    scip.setMaximize()
    if start is not None:
        chosen = ti.columns_of(start)
        sol = scip.createSol()
        for k in np.flatnonzero(chosen).tolist():
            scip.setSolVal(sol, x[k], 1.0)
        for var, over in zip(v, ti.overload_of(chosen).tolist()):
            scip.setSolVal(sol, var, float(over))
        scip.addSol(sol, free=True)
    left = opts.left()
    if left is not None:
        if left <= 0:
            return Outcome(Status.FEASIBLE if start is not None else Status.NO_SOLUTION, start,
                           limit=Limit.TIME)
    optimize(scip, left, opts.log)
    native = scip.getStatus()
    status, limit = solver.STATUS_MAP.get(native, (Status.ERROR, None))
    decision = bound = None
    if scip.getNSols() > 0:
        sol = scip.getBestSol()
        decision = ti.decision([scip.getSolVal(sol, var) > 0.5 for var in x])
        dual = scip.getDualbound()
        bound = None if scip.isInfinity(abs(dual)) else float(dual)  # none proven yet
    if status != Status.OPTIMAL:
        decision = _better(model, decision, start)
        if decision is not None and status == Status.NO_SOLUTION:
            status = Status.FEASIBLE
    return Outcome(status, decision, bound=bound, limit=limit,
                   extra={"native_status": native, "nodes": scip.getNNodes(),
                          "columns": ti.n_columns, "rows": len(ti.cols),
                          "nonzeros": ti.n_nonzeros})


def solve_cpsat(solver, model, opts: SolveOptions) -> Outcome:
    """CP-SAT on the reduced time-indexed MIP (``solver`` is the registered ``CpSat``)."""
    from ortools.sat.python import cp_model

    from hpcopt.models.knapsack import integer_scale

    options, start = _start(model, opts, solver.full_name)
    ti = model.time_indexed()
    if ti.n_columns == 0:
        return Outcome(Status.OPTIMAL, [-1] * model.n_jobs)
    scale = integer_scale(np.array([model.w1, model.w2]), "w1/w2", solver.full_name)
    values = [int(round(v * scale)) for v in ti.value.tolist()]
    penalty = int(round(model.w2 * scale))
    cp = cp_model.CpModel()
    x = [cp.new_bool_var(f"x{k}") for k in range(ti.n_columns)]
    v = [cp.new_int_var(0, int(m - c), f"v{t}")
         for t, m, c in zip(ti.slot.tolist(), ti.max_load.tolist(), ti.capacity.tolist())]
    by_job: dict[int, list] = {}
    for k, j in enumerate(ti.job.tolist()):
        by_job.setdefault(j, []).append(x[k])
    for xs in by_job.values():
        if len(xs) > 1:
            cp.add_at_most_one(xs)
    cores = ti.cores
    for r, (cols, cap) in enumerate(zip(ti.cols, ti.capacity.tolist())):
        ks = cols.tolist()
        cp.add(cp_model.LinearExpr.weighted_sum([x[k] for k in ks], cores[cols].tolist())
               - v[r] <= cap)
    cp.maximize(cp_model.LinearExpr.weighted_sum(x, values)
                - cp_model.LinearExpr.weighted_sum(v, [penalty] * len(v)))
    if start is not None:
        chosen = ti.columns_of(start)
        cpsat.add_hints(cp, x, chosen.tolist())
        cpsat.add_hints(cp, v, ti.overload_of(chosen).tolist())
    left = opts.left()
    if left is not None and left <= 0:
        return Outcome(Status.FEASIBLE if start is not None else Status.NO_SOLUTION, start,
                       limit=Limit.TIME)
    cps = cp_model.CpSolver()
    cpsat.parameters(cps, opts, left, options)
    code, stopped = cpsat.solve_stoppable(cps, cp)
    name = cps.status_name(code)
    status = cpsat.STATUS_MAP.get(name, Status.ERROR)
    limit = cpsat.limit_of(status, stopped, opts.deadline is not None)
    decision = bound = None
    if status.has_solution:
        values = np.asarray(list(cps.response_proto.solution))  # x are the first variables
        decision = ti.decision(values[:len(x)] > 0)
        bound = cps.best_objective_bound / scale
    if status != Status.OPTIMAL:
        decision = _better(model, decision, start)
        if decision is not None and status == Status.NO_SOLUTION:
            status = Status.FEASIBLE
    return Outcome(status, decision, bound=bound, limit=limit,
                   log=cps.response_stats(),
                   extra={"native_status": name, "columns": ti.n_columns, "rows": len(ti.cols),
                          "nonzeros": ti.n_nonzeros})
