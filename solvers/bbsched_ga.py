"""The BBSched genetic algorithm (backend ``bbsched-ga``; Fan et al., HPDC'19, section 3.2.2).

A chromosome is a 0-1 vector over the window (gene i = start job i).  The first population is
random; each generation makes P children by crossing two random parents at a random cut point
(two children per pair) and flipping each child gene with probability p_m; then selection
keeps, from parents and children, the current Pareto set first (Set 1) and fills up with the
newest of the rest (Set 2); when Set 1 alone exceeds P, its P newest stay.  Ages grow by one
per generation.  After G generations Set 1 is the answer (never claimed optimal).

Choices the paper leaves open:

- infeasible chromosomes are *repaired*, not rejected: jobs are dropped from the back of the
  window until the selection fits (nodes, burst buffer, SSD classes).  Every chromosome then
  stays a usable schedule, no evaluation is wasted, and the drop order keeps the base
  scheduler's priority (front jobs survive).  Option ``fill=True`` (two-objective form only,
  off by default to stay the paper's GA) then adds every job that still fits, front to back:
  adding a job raises f1 and never lowers f2, so only such maximal selections can be
  Pareto-optimal; it costs about 2x the time per generation (the paper variant's choices;
  the seeded variant repairs differently, below);
- chromosomes with the same objective vector count once in Set 1 (the newest represents
  them), so copies of one solution cannot crowd the population;
- ages break ties by position (earlier first); all randomness comes from one seeded
  ``numpy.random.Generator``.

Two variants (option ``variant``), with the same G, P, p_m, crossover and selection:

- ``"paper"``: the GA above as the paper describes it, with the repair from the back (and
  ``fill`` only when asked).  It stays far from the front on windows where many jobs fit:
  mean GD 7-8% of the free capacities at W = 20 and 50 on Theta's recorded queue
  (``benchmarks/bbsched_heuristics.py``), because a random first population and repairs
  that always drop back jobs rarely reach the selections that pack one resource tightly;
- ``"seeded"`` (default): the first population holds greedy fills of the empty selection
  (largest jobs first by nodes, by burst buffer and by three mixes of both, scaled to the
  free amounts; window order; and the empty selection, which the fill below turns into a
  random greedy fill), which lie near the ends and the middle of the front, and the rest
  random; every chromosome is decoded by adding its
  selected jobs in a random order while they fit, then (two-objective form, unless
  ``fill=False``) every other job that fits, in a random order.  Repairs then lose random
  jobs instead of back ones, and every selection is maximal.  Mean GD 0.01% (W = 20) and
  0.2% (W = 50) on the same windows, at 2.3-2.9x the paper variant's CPU time, about 0.2 s
  (numbers and command in benchmarks/README.md).

Options (``solver_options``): ``generations`` (G, default 500), ``population`` (P, default 20),
``mutation`` (p_m per gene, default 0.0005 = the paper's 0.05%), ``variant`` (above),
``fill`` (default: on in the seeded variant, off in the paper's).  Non-dominated sorting is
pymoo's.
"""

from __future__ import annotations

import time

import numpy as np

from hpcopt.errors import SolverOptionError
from hpcopt.result import Termination

from .registry import Outcome, SolveOptions, Solver, register

DEFAULTS = {"generations": 500, "population": 20, "mutation": 0.0005, "fill": None,
            "variant": "seeded"}
VARIANTS = ("seeded", "paper")


def ga_options(options: dict, defaults: dict = DEFAULTS) -> dict:
    """Validated G, P and p_m (unknown keys were refused by the registry); a bad value is a
    one-line ``SolverOptionError``."""
    out = {**defaults, **options}
    for key in ("generations", "population"):
        v = out[key]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < (0 if key ==
                                                                              "generations" else 2):
            raise SolverOptionError(f"option {key!r}: expected an integer >= "
                             f"{0 if key == 'generations' else 2}, got {v!r}")
    if out.get("mutation") is not None and not (isinstance(out["mutation"], (int, float))
                                  and 0 <= out["mutation"] <= 1):
        raise SolverOptionError(f"option 'mutation': expected a probability in [0, 1], "
                         f"got {out['mutation']!r}")
    if out.get("variant", "paper") not in VARIANTS:
        raise SolverOptionError(f"option 'variant': expected one of {', '.join(VARIANTS)}, "
                                f"got {out['variant']!r}")
    if out.get("fill") not in (None, True, False):
        raise SolverOptionError(f"option 'fill': expected true or false, got {out['fill']!r}")
    return out


def repair(model, X: np.ndarray, fill: bool = False) -> np.ndarray:
    """Drop selected jobs from the back of the window until every row is feasible; with
    ``fill``, then add every unselected job that still fits, front to back."""
    # dropping selected jobs from the back until the row fits keeps the longest feasible
    # prefix of its selected jobs: everything before the first column that breaks a limit
    ok = model.feasible_prefix(X)
    first_bad = np.where(ok.all(axis=1), X.shape[1], np.argmin(ok, axis=1))
    X = X & (np.arange(X.shape[1])[None, :] < first_bad[:, None])
    if fill:
        demand, suffix_free = model._demand, model._suffix_free
        levels = X @ demand
        bb = X @ model.bb
        for j in np.flatnonzero(model.feasible_many(np.eye(X.shape[1], dtype=bool))):
            new = levels + demand[j]
            ok = ~X[:, j] & (bb + model.bb[j] <= model.free_bb + 1e-9) & (
                np.cumsum(new[:, ::-1], axis=1)[:, ::-1] <= suffix_free + 1e-9).all(axis=1)
            X[ok, j] = True
            levels[ok] = new[ok]
            bb[ok] += model.bb[j]
    return X


def requirements(model) -> tuple[np.ndarray, np.ndarray]:
    """``(A, cap)``: job j fits beside a selection that leaves ``rem`` of ``cap`` free iff
    ``A[j] <= rem`` everywhere.  Columns: one per SSD level k (the nodes of jobs that need
    class k or larger, Hall's condition; level 0 = all nodes), then burst buffer; a job that
    fits no class needs infinitely much."""
    k = len(model.class_sizes)
    A = np.empty((model.n_items, k + 1))
    A[:, :k] = model.nodes[:, None] * (model.level[:, None] >= np.arange(k)[None, :])
    A[:, k] = model.bb
    A[model._ineligible] = np.inf
    cap = np.append(model._suffix_free, model.free_bb)
    return A, cap + 1e-9 * np.maximum(1.0, cap)


def greedy_fill(model, X: np.ndarray, orders: np.ndarray, allowed: np.ndarray | None = None,
                need=None) -> np.ndarray:
    """Add to each feasible row ``X[r]`` every unselected job (of ``allowed[r]``, default
    all) that still fits, in the order ``orders[r]`` (a permutation of the columns);
    vectorised over the rows.  ``need`` is ``requirements(model)``, when already known."""
    A, cap = requirements(model) if need is None else need
    X = X.copy()
    rows = np.arange(len(X))
    rem = cap - X @ np.where(np.isfinite(A), A, 0.0)
    smallest = A.min(axis=0)
    for t in range(X.shape[1]):
        if t % 4 == 0 and not (smallest <= rem).all(axis=1).any():
            break  # no job fits any row any more
        j = orders[:, t]
        ok = (A[j] <= rem).all(axis=1) & ~X[rows, j]
        if allowed is not None:
            ok &= allowed[rows, j]
        X[rows[ok], j[ok]] = True
        rem[ok] -= A[j[ok]]
    return X


def decode(model, X: np.ndarray, rng, fill: bool, need=None) -> np.ndarray:
    """Feasible rows from chromosomes ``X``: each row's selected jobs are added in a random
    order while they fit (so an infeasible row loses a random few, not its back jobs), then,
    with ``fill``, every other job that still fits, in a random order."""
    orders = np.argsort(~X + rng.random(X.shape), axis=1)
    out = greedy_fill(model, np.zeros_like(X), orders, None if fill else X, need)
    bad = ~model.feasible_many(out)  # the model's own check has the last word
    if bad.any():
        out[bad] = repair(model, out[bad])
    return out


def greedy_seeds(model) -> np.ndarray:
    """Greedy fills of the empty selection that approximate the ends and the middle of the
    front: largest jobs first by nodes, by burst buffer and by three mixes of the two (each
    scaled to the free amount), and window order; the empty selection last."""
    n = model.n_items
    scaled_n = model.nodes / max(model.free_nodes, 1)
    scaled_b = model.bb / max(model.free_bb, 1e-9)
    keys = [scaled_n, scaled_b] + [a * scaled_n + (1 - a) * scaled_b for a in (0.25, 0.5, 0.75)]
    orders = [np.lexsort((np.arange(n), -k)) for k in keys] + [np.arange(n)]
    X = greedy_fill(model, np.zeros((len(orders), n), dtype=bool), np.array(orders))
    return np.concatenate([X, np.zeros((1, n), dtype=bool)])


def pareto_rows(F: np.ndarray, newest_first: np.ndarray) -> np.ndarray:
    """Indices of one row per distinct non-dominated objective vector (the first of
    ``newest_first`` order represents its copies)."""
    from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting  # lazy: pymoo takes ~0.2 s

    order = newest_first
    Fo = F[order]
    idx = np.lexsort(Fo.T[::-1])  # stable: equal rows keep their newest-first order
    srt = Fo[idx]
    first = np.ones(idx.size, dtype=bool)
    first[1:] = (srt[1:] != srt[:-1]).any(axis=1)
    reps = order[np.sort(idx[first])]
    front = NonDominatedSorting().do(-F[reps], only_non_dominated_front=True)
    return reps[np.sort(front)]


HISTORY_POINTS = 200  # a convergence history keeps at most about this many generations


def history_step(generations: int) -> int:
    """Record every k-th generation (and the last) so a history has at most about
    ``HISTORY_POINTS`` rows."""
    return max(1, -(-int(generations) // HISTORY_POINTS))


def history_row(model, generation: int, evaluations: int, F_front: np.ndarray) -> dict:
    """One row of a convergence history: the generation, the evaluations so far, the size of
    the current Pareto front and the best value of each objective on it (by name)."""
    names = getattr(model, "objective_names", None) or [f"f{k + 1}" for k in
                                                        range(F_front.shape[1])]
    best = F_front.max(axis=0) if len(F_front) else [None] * len(names)
    return {"generation": int(generation), "evaluations": int(evaluations),
            "front_size": int(len(F_front)),
            **{f"best_{name}": None if b is None else float(b) for name, b in zip(names, best)}}


def front_points(model, X: np.ndarray, F: np.ndarray) -> list:
    """``(decision, objectives)`` pairs sorted by decreasing objectives."""
    order = np.lexsort(tuple(-F[:, k] for k in range(F.shape[1] - 1, -1, -1)))
    return [(X[i].astype(int).tolist(), tuple(F[i].tolist())) for i in order]


@register("bbsched-ga")
class BBSchedGA(Solver):
    """BBSched's multi-objective genetic algorithm (G=500, P=20, p_m=0.05%): by default with
    a greedy-seeded first population and random-order decoding, ``variant="paper"`` as the
    paper describes it."""

    doc = ("BBSched's multi-objective GA (paper section 3.2.2; greedy-seeded by default, "
           "variant='paper' for the paper's); bbsched models; heuristic")
    SUPPORTED_MODELS = ("bbsched",)
    REQUIRED_MODULES = ("pymoo",)
    OPTIONS = tuple(DEFAULTS)

    def version(self) -> str:
        return ""

    def _solve(self, model, opts: SolveOptions) -> Outcome:
        o = ga_options(opts.solver_options)
        G, P, pm = int(o["generations"]), int(o["population"]), float(o["mutation"])
        rng = np.random.default_rng(opts.seed)
        n = model.n_items
        deadline = opts.deadline
        variant = o["variant"]
        fill = (variant == "seeded") if o["fill"] is None else bool(o["fill"])
        fill = fill and model.objectives == 2
        X = rng.random((P, n)) < 0.5
        if variant == "seeded":
            need = requirements(model)
            seeds = greedy_seeds(model)[:P]
            X[: len(seeds)] = seeds
            X = decode(model, X, rng, fill, need)  # keeps every seed (they fit, and are full)
        else:
            X = repair(model, X, fill)
        F, _ = model.evaluate_many(X)
        age = np.zeros(P, dtype=np.int64)
        cols = np.arange(n)
        half = (P + 1) // 2
        limit, gen = Termination.ITERATION_LIMIT, 0
        step = history_step(G)
        history = [history_row(model, 0, P, F[pareto_rows(F, np.arange(P))])]
        for gen in range(1, G + 1):
            if deadline is not None and time.perf_counter() > deadline:
                limit, gen = Termination.TIME_LIMIT, gen - 1
                break
            a, b = rng.integers(0, P, half), rng.integers(0, P, half)
            cut = rng.integers(1, n, half)[:, None] if n > 1 else np.ones((half, 1), int)
            left = cols[None, :] < cut
            kids = np.concatenate([np.where(left, X[a], X[b]), np.where(left, X[b], X[a])])[:P]
            kids ^= rng.random(kids.shape) < pm
            kids = (decode(model, kids, rng, fill, need) if variant == "seeded"
                    else repair(model, kids, fill))
            FK, _ = model.evaluate_many(kids)
            X = np.concatenate([X, kids])
            F = np.concatenate([F, FK])
            age = np.concatenate([age + 1, np.zeros(P, dtype=np.int64)])
            newest = np.argsort(age, kind="stable")
            set1 = pareto_rows(F, newest)
            if len(set1) >= P:
                keep = set1[np.argsort(age[set1], kind="stable")[:P]]
            else:
                in_set1 = np.zeros(len(age), dtype=bool)
                in_set1[set1] = True
                rest = newest[~in_set1[newest]]
                keep = np.concatenate([set1, rest[: P - len(set1)]])
            X, F, age = X[keep], F[keep], age[keep]
            if gen % step == 0 or gen == G:
                history.append(history_row(model, gen, P * (gen + 1),
                                           F[pareto_rows(F, np.arange(len(F)))]))
        final = pareto_rows(F, np.argsort(age, kind="stable"))
        if history[-1]["generation"] != gen:
            history.append(history_row(model, gen, P * (gen + 1), F[final]))
        return Outcome(limit, pareto=front_points(model, X[final], F[final]),
                       n_evals=P * (gen + 1),
                       extra={"generations": gen, "population": P, "mutation": pm,
                              "variant": variant, "history": history})
