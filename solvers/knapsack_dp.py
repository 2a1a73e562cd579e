"""Exact numpy dynamic program for the 0-1 knapsack (backend ``dp``).

The DP works on integer weights (data with up to six decimals are scaled to integers; anything
else is a ``ModelError`` that points to ``scip``/``pyomo:appsi_highs``).  Before the DP the
problem is reduced: items that cannot matter are dropped, capacities are clipped to the total
weight, each resource is divided by the gcd of its weights, and resources that cannot bind are
dropped.  Then:

* values proportional to the (single binding) weights -- e.g. "maximize nodes used" -- is a
  subset-sum problem, solved with a Python-integer bitset that stops once the capacity is
  filled exactly;
* otherwise the classic DP over the capacity grid ``prod(cap_r + 1)`` (one axis per binding
  resource, "best value at exactly this load"), one vectorized numpy update per item over the
  loads reachable so far (items in ascending size), with a boolean take-table to rebuild the
  decision.  The table has ``items x states`` cells; more than ``max_cells`` is refused.
  With one binding resource and integer values, LP bounds first fix the items that some
  optimal solution provably takes or leaves (a Martello-Toth style reduction), and the DP
  runs on the rest.
"""

from __future__ import annotations

import math

import numpy as np

from hpcopt.errors import ModelError
from hpcopt.result import Status

from .registry import Outcome, SolveOptions, Solver, register

MAX_CELLS = 2**26  # take-table cells (bytes) the DP may allocate by default


def solve_arrays(values, weights, capacities, *, max_cells: int = MAX_CELLS):
    """Optimal 0-1 selection for integer ``weights`` (m, k) >= 0 and ``capacities`` (m,).

    ``values`` (k,) are any numbers (items worth <= 0 or too heavy are never chosen).  Returns
    ``(chosen, method)``: a boolean vector and the algorithm used ("all-fit", "subset-sum",
    "grid+bounds" or "grid").  This is the pure algorithm, without the registry's option
    checks and certificate.

    Raises
    ------
    ModelError
        When the DP table would exceed ``max_cells`` cells.
    """
    values = np.asarray(values, dtype=float)
    weights = np.asarray(weights, dtype=np.int64)
    caps = np.asarray(capacities, dtype=np.int64)
    useful = (values > 0) & (weights <= caps[:, None]).all(0)
    if not useful.all():  # KnapsackModel.reduced already did this
        chosen = np.zeros(values.size, dtype=bool)
        chosen[useful], method = solve_arrays(values[useful], weights[:, useful], caps,
                                              max_cells=max_cells)
        return chosen, method
    binding = caps < weights.sum(1)
    if not binding.any():
        return np.ones(values.size, dtype=bool), "all-fit"
    if not binding.all():
        weights, caps = weights[binding], caps[binding]
    gcd = np.gcd.reduce(weights, axis=1).clip(1)
    if (gcd > 1).any():
        weights, caps = weights // gcd[:, None], caps // gcd
    if len(caps) == 1:
        w, cap = weights[0], int(caps[0])
        j = int(w.argmax())
        if (values * w[j] == values[j] * w).all():
            return _subset_sum(w.tolist(), cap), "subset-sum"
        if w.min() > 0 and w[j] <= cap and (values == values.round()).all():
            take, drop = _fix_by_bounds(values, w, cap)
            room = cap - int(w[take].sum())
            free = ~(take | drop) & (w <= room)
            chosen = take
            if free.any():
                sub_w = w[free]
                chosen[free] = (True if room >= sub_w.sum() else
                                _grid(values[free], sub_w[None, :], np.array([room]), max_cells))
            return chosen, "grid+bounds"
    return _grid(values, weights, caps, max_cells), "grid"


def _fix_by_bounds(values: np.ndarray, w: np.ndarray, cap: int):
    """Items some optimal solution takes / leaves, proven with LP bounds (one resource).

    Needs integer values, ``0 < w <= cap < sum(w)``.  Items in density order; the LP optimum
    takes items ``< s`` and part of the critical item ``s``; ``low`` is the greedy value (a
    solution that takes every item ``< s``).  Item ``j < s`` is taken when the LP bound without
    it is at most ``low``; item ``j > s`` is left when the LP bound with it is below ``low``.
    The greedy solution (or any optimum, when it is better) satisfies all of these at once.
    Returns boolean masks ``(take, drop)`` over the items.
    """
    order = (-values / w).argsort(kind="stable")
    vs, ws = values[order], w[order]
    wsum = np.concatenate(([0], ws.cumsum()))
    vsum = np.concatenate(([0.0], vs.cumsum()))
    density = np.append(vs / ws, 0.0)
    s = int(wsum.searchsorted(cap, "right")) - 1  # the critical item
    low, room = 0.0, cap
    for v, a in zip(vs.tolist(), ws.tolist()):
        if a <= room:
            room -= a
            low += v

    def lp(c):  # LP value of the density-sorted items with capacities c (vectorized)
        t = wsum.searchsorted(c, "right") - 1
        return vsum[t] + (c - wsum[t]) * density[t]

    slack = 1e-9 * max(1.0, vsum[-1])  # floating error stays below it; values are integers
    rank = np.arange(len(vs))
    take, drop = np.zeros(len(vs), dtype=bool), np.zeros(len(vs), dtype=bool)
    take[order] = (rank < s) & (np.floor(lp(cap + ws) - vs + slack) <= low)
    drop[order] = (rank > s) & (np.floor(lp(cap - ws) + vs + slack) < low)
    return take, drop


def _subset_sum(w: list[int], cap: int) -> np.ndarray:
    """Fill ``cap`` as much as possible; bit j of ``reach`` says "load j is attainable"."""
    mask = (1 << (cap + 1)) - 1
    reach = 1
    before = []  # reach before each item, to rebuild the decision
    for wi in w:
        before.append(reach)
        reach = (reach | (reach << wi)) & mask
        if reach >> cap:  # capacity filled exactly: no later item can do better
            break
    chosen = np.zeros(len(w), dtype=bool)
    j = reach.bit_length() - 1
    for i in range(len(before) - 1, -1, -1):
        if not (before[i] >> j) & 1:  # load j needs item i
            chosen[i] = True
            j -= w[i]
    return chosen


def _grid(values: np.ndarray, weights: np.ndarray, caps: np.ndarray, max_cells: int):
    """DP over the capacity grid: ``best[c]`` = max value with loads exactly ``c``.

    Items go in ascending order of size, and item i only touches loads up to the running
    total weight ``reach`` (capped at the capacity): early rows are short.
    """
    k = values.size
    dims = tuple(int(c) + 1 for c in caps)
    cells = k * math.prod(dims)
    if cells > max_cells:
        raise ModelError(
            f"backend 'dp': {k} items x {math.prod(dims)} capacity states = {cells} table cells "
            f"exceed max_cells={max_cells}; raise solver_options['max_cells'] or use backend "
            "'cpsat', 'ortools' or 'scip'"
        )
    size = weights[0] if len(dims) == 1 else (weights / caps.clip(1)[:, None]).sum(0)
    order = size.argsort(kind="stable")
    cols = weights[:, order].T.tolist()
    vals = values[order].tolist()
    best = np.full(dims, -np.inf)
    best[(0,) * len(dims)] = 0.0
    take = np.zeros((k,) + dims, dtype=bool)
    if len(dims) == 1:  # the hot path (nodes only), with plain slices
        top = 0
        for i, ((a,), v) in enumerate(zip(cols, vals)):
            top = min(dims[0] - 1, top + a)
            cand = best[: top + 1 - a] + v
            kept = best[a : top + 1]
            np.greater(cand, kept, out=take[i, a : top + 1])
            np.maximum(kept, cand, out=kept)
    else:
        reach = [0] * len(dims)
        for i, (col, v) in enumerate(zip(cols, vals)):
            reach = [min(d - 1, r + a) for d, r, a in zip(dims, reach, col)]
            upper = tuple(slice(a, r + 1) for a, r in zip(col, reach))
            lower = tuple(slice(0, r + 1 - a) for a, r in zip(col, reach))
            cand = best[lower] + v
            kept = best[upper]
            np.greater(cand, kept, out=take[i][upper])
            np.maximum(kept, cand, out=kept)
    chosen = []  # rebuild backwards from the best load
    if len(dims) == 1:
        at = int(best.argmax())
        for i in range(k - 1, -1, -1):
            if take[i, at]:
                chosen.append(i)
                at -= cols[i][0]
    else:
        at = np.unravel_index(int(best.argmax()), dims)
        for i in range(k - 1, -1, -1):
            if take[(i, *at)]:
                chosen.append(i)
                at = tuple(c - a for c, a in zip(at, cols[i]))
    out = np.zeros(k, dtype=bool)
    out[order[chosen]] = True
    return out


@register("dp")
class DynamicProgramming(Solver):
    """Exact numpy dynamic program (subset-sum bitset or capacity-grid DP).

    Supported models: ``knapsack`` (one or several resources, weights integral or with at
    most six decimals).  The DP always finishes and proves its answer, so its only native
    status is ``STATUS_MAP = {"solved": Status.OPTIMAL}``; ``time_limit`` and ``seed`` have
    no effect (the work is bounded by ``solver_options["max_cells"]``, default 2**26 cells,
    and the algorithm is deterministic).
    """

    doc = "exact numpy DP (subset-sum bitset / capacity grid); integer weights"
    SUPPORTED_MODELS = ("knapsack",)
    EXACT = True
    OPTIONS = ("max_cells",)
    STATUS_MAP = {"solved": Status.OPTIMAL}

    def _solve(self, model, opts: SolveOptions) -> Outcome:
        red = model.reduced(integer_weights=True, backend=self.full_name)
        max_cells = int(opts.solver_options.get("max_cells", MAX_CELLS))
        chosen, method = solve_arrays(red.values, red.weights, red.capacities,
                                      max_cells=max_cells)
        return Outcome(self.STATUS_MAP["solved"], red.lift(chosen), extra={"method": method})
