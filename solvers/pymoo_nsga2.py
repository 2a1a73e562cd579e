"""pymoo's NSGA-II on BBSched models (backend ``nsga2``).

Binary random sampling (plus the empty selection, which is always feasible), single-point
crossover and bit-flip mutation, duplicates eliminated; the constraints are pymoo inequality
constraints (violations of nodes, burst buffer and SSD classes, from ``evaluate_many``) and
the objectives are negated, since pymoo minimizes.  The default budget equals the BBSched GA's
(population P = 20, G = 500 generations); the answer is the feasible non-dominated set of the
final population, one decision per objective vector.  Options (``solver_options``):
``generations``, ``population``, ``mutation`` (per-gene flip probability; default pymoo's
1/n).  Never claims optimality.

Small windows are enumerated instead: when the 2^n chromosomes number at most
``ENUMERATE_MAX``, or no more than the evaluation budget P (G + 1) and ``ENUMERATE_CAP``, every
one is evaluated and the feasible non-dominated set returned (``extra["enumerated"]``).  pymoo's
duplicate elimination otherwise retries each mating up to 100 times once the population holds
most of the few distinct chromosomes (20-25 s on the 5-job Table 1 window).  The answer is
still reported FEASIBLE, like every answer of this heuristic backend.
"""

from __future__ import annotations

import numpy as np

from hpcopt.result import Termination

from .bbsched_ga import front_points, ga_options, history_row, history_step, pareto_rows
from .registry import Outcome, SolveOptions, Solver, register

ENUMERATE_MAX = 4096  # always enumerated: one vectorised evaluation, about a millisecond
ENUMERATE_CAP = 2**16  # never enumerated beyond, whatever the budget (a few tens of MB at most)


def small_space(n: int, population: int, generations: int) -> bool:
    """Whether a window of ``n`` jobs is enumerated rather than searched (module doc)."""
    size = 2**min(n, 63)
    return size <= ENUMERATE_MAX or size <= min(population * (generations + 1), ENUMERATE_CAP)


def enumerate_front(model) -> tuple[np.ndarray, np.ndarray]:
    """Every 0-1 vector of a small window: ``(X, F)`` of its feasible non-dominated rows, one
    per objective vector (rows in code order: bit i of code c selects job i)."""
    n = model.n_items
    codes = np.arange(2**n, dtype=np.int64)
    X = ((codes[:, None] >> np.arange(n)) & 1).astype(bool)
    X = X[model.feasible_many(X)]
    F, _ = model.evaluate_many(X)
    keep = pareto_rows(F, np.arange(len(F)))
    return X[keep], F[keep]


@register("nsga2")
class NSGA2(Solver):
    """pymoo's NSGA-II with binary operators, same evaluation budget as bbsched-ga."""

    doc = "pymoo NSGA-II with binary operators; bbsched models; heuristic"
    SUPPORTED_MODELS = ("bbsched",)
    REQUIRED_MODULES = ("pymoo",)
    INSTALL_HINT = "pip install pymoo"
    OPTIONS = ("generations", "population", "mutation")

    def _solve(self, model, opts: SolveOptions) -> Outcome:
        from pymoo.algorithms.moo.nsga2 import NSGA2 as Algorithm  # lazy: pymoo takes ~1 s
        from pymoo.core.problem import Problem
        from pymoo.operators.crossover.pntx import SinglePointCrossover
        from pymoo.operators.mutation.bitflip import BitflipMutation
        from pymoo.optimize import minimize
        from pymoo.termination import get_termination
        from pymoo.termination.collection import TerminationCollection

        o = ga_options(opts.solver_options, {"generations": 500, "population": 20,
                                             "mutation": None})
        o.pop("fill", None)
        n = model.n_items
        G, P = int(o["generations"]), int(o["population"])
        if small_space(n, P, G):
            X, F = enumerate_front(model)  # the empty selection is always feasible
            return Outcome(Termination.FINISHED, pareto=front_points(model, X, F),
                           n_evals=2**n, extra={"enumerated": True, "generations": 0,
                                                "population": P,
                                                "history": [history_row(model, 0, 2**n, F)]})

        class Window(Problem):
            def __init__(self):
                super().__init__(n_var=n, n_obj=model.n_objectives, n_ieq_constr=3,
                                 xl=0, xu=1, vtype=bool)

            def _evaluate(self, X, out, *args, **kwargs):
                F, G = model.evaluate_many(X)
                out["F"], out["G"] = -F, G

        rng = np.random.default_rng(opts.seed)
        start = rng.random((int(o["population"]), n)) < 0.5
        start[0] = False
        mutation = BitflipMutation() if o["mutation"] is None else \
            BitflipMutation(prob=1.0, prob_var=float(o["mutation"]))
        algo = Algorithm(pop_size=int(o["population"]), sampling=start,
                         crossover=SinglePointCrossover(), mutation=mutation,
                         eliminate_duplicates=True)
        term = get_termination("n_gen", int(o["generations"]) + 1)
        left = opts.left()  # after pymoo's import, which counts
        if left is not None:
            term = TerminationCollection(term, get_termination("time", max(left, 1e-3)))
        seed = None if opts.seed is None else int(opts.seed)
        history: list[dict] = []
        step = history_step(G)

        def record(algorithm) -> None:
            """The convergence history: the feasible non-dominated set after each
            ``step``-th generation (pymoo's ``opt``), in the model's objectives."""
            gen = int(algorithm.n_gen) - 1
            if gen % step and gen < G:
                return
            opt = algorithm.opt
            Fo = np.zeros((0, model.n_objectives))
            if opt is not None and len(opt):
                ok = np.asarray(opt.get("CV"), dtype=float).ravel() <= 0  # feasible
                Fo = -np.asarray(opt.get("F"), dtype=float)[ok]
            history.append(history_row(model, gen, int(algorithm.evaluator.n_eval), Fo))

        res = minimize(Window(), algo, term, seed=seed, verbose=False, callback=record)
        X = np.asarray(res.pop.get("X"), dtype=bool)
        F, G = model.evaluate_many(X)
        ok = model.feasible_many(X)
        X, F = X[ok], F[ok]
        gens = min(int(res.algorithm.n_iter) - 1, int(o["generations"]))
        limit = (Termination.ITERATION_LIMIT if gens >= int(o["generations"])
                 else Termination.TIME_LIMIT)
        evals = int(res.algorithm.evaluator.n_eval)
        if not len(X):
            return Outcome(limit, n_evals=evals)
        keep = pareto_rows(F, np.arange(len(F)))
        return Outcome(limit, pareto=front_points(model, X[keep], F[keep]), n_evals=evals,
                       extra={"generations": gens, "population": int(o["population"]),
                              "history": history})
