"""DCAS by simulated annealing (backend ``sa``) and the sequential baseline (``sequential``).

The paper's SA (Lan et al., CLUSTER'23, Algorithm 1, section V-A): start from a solution,
then t_max times remove 1..n_D random jobs and repair (reinsert them, largest first, on the
idle sequence left by the others), accept by the Metropolis rule at temperature
T = T_max exp(r t / t_max), r = -log(T_max / T_min), and keep the best solution seen.

A solution is the placement order with each job's first node id.  Removing jobs keeps the
others' first nodes and replays them (``DCASModel.replay``), so every neighbour is a valid
DCAS decision.  The repair operator is pluggable: ``RandomRepair`` (the paper's SA: a uniform
random first position in the current sequence), ``GreedyRepair`` (the cheapest block), or the
learned operator of NSA (``hpcopt.agents.nsa``), all with one signature
``repair(model, seq, sizes, rng) -> positions``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np

from hpcopt.errors import SolverOptionError
from hpcopt.models.scas import SCASModel
from hpcopt.result import Termination
from hpcopt.topology import take_block

from .registry import Outcome, SolveOptions, Solver, register, register_greedy
from .scas_exact import ScasExact, sequential_starts

SA_DEFAULTS = {"t_max": 500, "T_max": 2500.0, "T_min": 2.5, "n_remove": 2}


class RandomRepair:
    """Each job starts at a uniformly random position of the current idle sequence."""

    name = "random"

    def __call__(self, model, seq, sizes, rng) -> list[int]:
        out = []
        for n in sizes:
            p = int(rng.integers(seq.size))
            out.append(p)
            seq = take_block(seq, p, n)[1]
        return out


class GreedyRepair:
    """Each job on the cheapest block of the current idle sequence (ties: first)."""

    name = "greedy"

    def __call__(self, model, seq, sizes, rng) -> list[int]:
        out = []
        for n in sizes:
            costs = model.topology.interval_costs(seq, n)[:, n - 1]
            p = int(np.argmin(costs))
            out.append(p)
            seq = take_block(seq, p, n)[1]
        return out


REPAIRS = {"random": RandomRepair, "greedy": GreedyRepair}


@dataclass
class Annealed:
    """The best solution of a run, as a DCAS decision, with the run's counts."""

    decision: tuple[int, ...]
    cost: float
    start_cost: float
    iterations: int
    accepted: int
    stopped_by_time: bool = False


def _place(model, seq, jobs, positions):
    """Place ``jobs`` at sequential ``positions`` on ``seq``; (first node ids, costs, seq)."""
    firsts, costs = [], []
    for j, p in zip(jobs, positions):
        nodes, seq = take_block(seq, int(p), int(model.sizes[j]))
        firsts.append(int(nodes[0]))
        costs.append(model.topology.cost(nodes))
    return firsts, costs, seq


def sequential_decision(model) -> tuple[int, ...]:
    """Jobs in window order, each on the first n_j nodes of the current sequence ("Seq.")."""
    return tuple(range(model.n_jobs)) + (0,) * model.n_jobs


def anneal(model, start, repair, *, t_max: int = 500, T_max: float = 2500.0,
           T_min: float = 2.5, n_remove: int = 2, rng=None,
           deadline: float | None = None) -> Annealed:
    """Algorithm 1 from the DCAS decision ``start`` with the given repair operator."""
    rng = np.random.default_rng(rng)
    memo: dict[bytes, float] = {}  # node set -> cost: kept jobs mostly keep their sets

    def cost_of(nodes) -> float:
        key = nodes.tobytes()
        c = memo.get(key)
        if c is None:
            c = memo[key] = model.topology.cost(nodes)
        return c

    order = [int(j) for j in model.split(start)[0]]
    sets = model.node_sets(start)  # per job, window order
    firsts = [int(sets[j][0]) for j in order]
    cost = float(sum(cost_of(s) for s in sets))
    best_order, best_firsts, best_cost = list(order), list(firsts), cost
    start_cost = cost
    r = -math.log(T_max / T_min)
    J = model.n_jobs
    accepted, stopped, t = 0, False, 0
    for t in range(1, t_max + 1):
        if deadline is not None and time.perf_counter() > deadline:
            stopped, t = True, t - 1
            break
        T = T_max * math.exp(r * t / t_max)
        k = min(int(rng.integers(1, n_remove + 1)), J)
        removed = {int(j) for j in rng.choice(J, k, replace=False)}
        keep = [(j, f) for j, f in zip(order, firsts) if j not in removed]
        kept_order = [j for j, _ in keep]
        kept_sets, _, seq = model.place(kept_order, [f for _, f in keep])
        ins = sorted(removed, key=lambda j: (-int(model.sizes[j]), j))
        positions = repair(model, seq, [int(model.sizes[j]) for j in ins], rng)
        ins_firsts, ins_costs, _ = _place(model, seq, ins, positions)
        new_cost = float(sum(cost_of(s) for s in kept_sets) + sum(ins_costs))
        if new_cost <= cost or rng.random() < math.exp((cost - new_cost) / T):
            order = kept_order + ins
            firsts = [f for _, f in keep] + ins_firsts
            cost = new_cost
            accepted += 1
            if cost < best_cost - 1e-9:
                best_order, best_firsts, best_cost = list(order), list(firsts), cost
    _, best_pos = model.replay(best_order, best_firsts)
    return Annealed(tuple(best_order) + tuple(best_pos), best_cost, start_cost, t, accepted,
                    stopped)


def sa_options(solver_options: dict, backend: str) -> tuple[dict, dict]:
    """Split ``solver_options`` into annealing parameters and the rest; checks the values."""
    params = dict(SA_DEFAULTS)
    rest = {}
    for key, val in solver_options.items():
        if key in SA_DEFAULTS:
            params[key] = val
        else:
            rest[key] = val
    t_max, n_remove = params["t_max"], params["n_remove"]
    if int(t_max) != t_max or t_max < 0:
        raise SolverOptionError(f"{backend}: t_max must be an integer >= 0, got {t_max!r}")
    if not 0 < params["T_min"] <= params["T_max"]:
        raise SolverOptionError(f"{backend}: need 0 < T_min <= T_max, got "
                                f"T_min={params['T_min']!r}, T_max={params['T_max']!r}")
    if int(n_remove) != n_remove or n_remove < 1:
        raise SolverOptionError(f"{backend}: n_remove must be an integer >= 1, "
                                f"got {n_remove!r}")
    params["t_max"], params["n_remove"] = int(params["t_max"]), int(params["n_remove"])
    return params, rest


def initial_decision(model, warm_start, init: str, backend: str,
                     deadline: float | None = None) -> tuple[tuple[int, ...], str]:
    """The start of a search: a feasible ``warm_start``, else the SCAS optimum
    (``init="scas-exact"``, the default; within the time left before ``deadline``, its best
    placement so far when that runs out) or the sequential placement (``"sequential"``)."""
    if warm_start is not None:
        if not model.evaluate(warm_start).feasible:
            raise SolverOptionError(f"{backend}: warm_start is not a feasible DCAS decision")
        return tuple(int(v) for v in warm_start), "warm_start"
    if init == "sequential":
        return sequential_decision(model), init
    if init == "scas-exact":
        scas = SCASModel(model.topology, model.idle_nodes, model.sizes, ids=model.ids)
        left = None if deadline is None else max(deadline - time.perf_counter(), 1e-3)
        res = ScasExact().solve(scas, time_limit=left)
        return model.from_scas(res.decision), init
    raise SolverOptionError(f"{backend}: init must be 'scas-exact' or 'sequential', got {init!r}")


def run_annealing(backend: str, model, opts: SolveOptions, repair) -> Outcome:
    """The shared body of the ``sa`` and ``nsa`` backends (their own options taken out)."""
    params, rest = sa_options(opts.solver_options, backend)
    init = rest.pop("init", "scas-exact")
    deadline = opts.deadline  # set when solve() was called: loading a repair counts
    if init == "scas-exact" and opts.warm_start is None and opts.start is not None:
        # the registry's greedy start already is the better of sequential and the SCAS
        # optimum (``_dcas_start``): not solved twice
        start, how = tuple(int(v) for v in opts.start), "scas-exact"
    else:
        start, how = initial_decision(model, opts.warm_start, init, backend, deadline)
    res = anneal(model, start, repair, rng=opts.seed, deadline=deadline, **params)
    return Outcome(Termination.TIME_LIMIT if res.stopped_by_time
                   else Termination.ITERATION_LIMIT, res.decision, objective=res.cost,
                   n_evals=res.iterations,
                   extra={"start": how, "start_cost": res.start_cost,
                          "accepted": res.accepted, "iterations": res.iterations})


@register("sa")
class SimulatedAnnealing(Solver):
    """DCAS simulated annealing (the paper's Algorithm 1 with the random repair).

    Supported models: ``dcas``.  ``solver_options``: ``t_max`` (500), ``T_max`` (2500; the
    authors' code uses 25,000), ``T_min`` (2.5), ``n_remove`` (n_D, 2), ``repair``
    (``"random"``, the paper's SA, or ``"greedy"``), ``init`` (``"scas-exact"``, the default:
    start from the SCAS optimum so the answer is never worse; or ``"sequential"``).
    ``warm_start`` (a DCAS decision) replaces ``init``.  ``seed`` seeds the one generator;
    ``time_limit`` stops early.  A feasible solution (a heuristic never claims optimality).
    """

    doc = "DCAS simulated annealing (remove 1..n_D jobs, repair, Metropolis); seedable"
    SUPPORTED_MODELS = ("dcas",)
    GREEDY_START = True
    OPTIONS = (*SA_DEFAULTS, "init", "repair")

    def version(self) -> str:
        return "hpcopt"

    def _solve(self, model, opts: SolveOptions) -> Outcome:
        options = dict(opts.solver_options)
        name = options.pop("repair", "random")
        if name not in REPAIRS:
            raise SolverOptionError(f"sa: repair must be one of {sorted(REPAIRS)}, got {name!r}")
        return run_annealing("sa", model, replace(opts, solver_options=options),
                             REPAIRS[name]())


@register_greedy("dcas", share=1.0)
def _dcas_start(model, deadline, seed, limit=None):
    """The greedy start of DCAS models: the better of the ``sequential`` decision and the
    SCAS optimum (``scas-exact`` within ``deadline``, as ``sa`` computes its start in the
    same limit), so ``nsa`` refused for time still answers what ``sa`` starts from; the
    search gets the time it leaves."""
    seq = list(sequential_decision(model))
    if deadline is not None and deadline <= time.perf_counter():
        return seq, None
    best, _ = initial_decision(model, None, "scas-exact", "dcas start", deadline)
    if model.evaluate(best).objective <= model.evaluate(seq).objective:
        return list(best), None
    return seq, None


@register_greedy("scas")
def _scas_start(model, deadline, seed, limit=None):
    """The greedy start of SCAS models: the ``sequential`` decision."""
    return sequential_starts(model.sizes), None


@register("sequential")
class Sequential(Solver):
    """Jobs in window order, each on the first n_j idle nodes left ("Seq." in the paper).

    Supported models: ``scas`` (jobs back to back from the head of Q) and ``dcas`` (the same
    node sets).  Deterministic; a baseline, status FEASIBLE.
    """

    doc = "baseline: jobs in window order on the first free nodes"
    SUPPORTED_MODELS = ("scas", "dcas")

    def version(self) -> str:
        return "hpcopt"

    def _solve(self, model, opts: SolveOptions) -> Outcome:
        if model.kind == "dcas":
            return Outcome(Termination.FINISHED, sequential_decision(model))
        return Outcome(Termination.FINISHED, sequential_starts(model.sizes))
