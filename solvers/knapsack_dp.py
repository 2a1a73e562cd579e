"""Exact numpy dynamic program for the 0-1 knapsack (backend ``dp``).

The DP works on integer weights (data with up to six decimals are scaled to integers; anything
else is a ``ModelError`` that points to ``scip``/``pyomo:appsi_highs``).  Before the DP the
problem is reduced: items that cannot matter are dropped, capacities are clipped to the total
weight, each resource is divided by the gcd of its weights, and resources that cannot bind are
dropped.  Then:

* values proportional to the (single binding) weights -- e.g. "maximize nodes used" -- is a
  subset-sum problem, solved with Python-integer bitsets of the loads the items ``i..`` can
  reach exactly;
* otherwise a DP over the capacity grid ``prod(cap_r + 1)`` (one axis per binding resource,
  "best value within this load"), one vectorized numpy update per item, with a boolean
  take-table to rebuild the decision; with one resource and integer values, a DP over value
  totals ("least weight for this value") instead when that table is smaller.  With one
  binding resource and integer values, LP bounds first fix the items that every optimal
  solution takes or leaves (a Martello-Toth style reduction), and the DP runs on the rest.

Every path returns the canonical optimum (``hpcopt.models.knapsack``): the DPs run over the
items in reverse window order and rebuild the decision forwards, taking item i whenever
taking it stays optimal.

Limits: the tables (take-table cells, stored bitsets, value table) may hold at most
``max_cells`` bytes (default ``MAX_CELLS`` = 64 MiB); a time limit is checked between items.
Either stops the DP with ``DPStop``, and the backend then answers the greedy fill as FEASIBLE
with termination ``memory_limit`` or ``time_limit``.
"""

from __future__ import annotations

import math
import time

import numpy as np

from hpcopt.errors import ModelError, SolverOptionError
from hpcopt.result import Termination

from .knapsack_greedy import greedy_fill
from .registry import Outcome, SolveOptions, Solver, register

MAX_CELLS = 2**26  # bytes of DP tables (take-table cells, bitsets, value table) by default


class DPStop(Exception):
    """The DP hit a limit (``limit``: ``Termination.TIME_LIMIT`` or ``MEMORY_LIMIT``) before
    an answer."""

    def __init__(self, limit: Termination, message: str) -> None:
        super().__init__(message)
        self.limit = limit


def _check(deadline: float | None) -> None:
    if deadline is not None and time.perf_counter() > deadline:
        raise DPStop(Termination.TIME_LIMIT, "backend 'dp': time limit reached")


def _too_big(what: str, need: int, max_cells: int) -> DPStop:
    return DPStop(Termination.MEMORY_LIMIT, f"backend 'dp': {what} needs {need} bytes > max_cells="
                  f"{max_cells}; raise solver_options['max_cells'] or use backend 'cpsat', "
                  "'ortools' or 'scip'")


def solve_arrays(values, weights, capacities, *, max_cells: int = MAX_CELLS,
                 deadline: float | None = None):
    """Canonical optimal 0-1 selection for integer ``weights`` (m, k) >= 0, ``capacities`` (m,).

    ``values`` (k,) are any numbers (items worth <= 0 or too heavy are never chosen).  Returns
    ``(chosen, method)``: a boolean vector and the algorithm used ("all-fit", "subset-sum",
    "grid+bounds", "grid" or "value-grid").  ``deadline`` is a ``time.perf_counter()``
    instant.  This is the pure algorithm, without the registry's option checks and
    certificate.

    Raises
    ------
    DPStop
        When the tables would exceed ``max_cells`` bytes or the deadline passed.
    """
    values = np.asarray(values, dtype=float)
    weights = np.asarray(weights, dtype=np.int64)
    caps = np.asarray(capacities, dtype=np.int64)
    useful = (values > 0) & (weights <= caps[:, None]).all(0)
    if not useful.all():  # KnapsackModel.reduced already did this
        chosen = np.zeros(values.size, dtype=bool)
        chosen[useful], method = solve_arrays(values[useful], weights[:, useful], caps,
                                              max_cells=max_cells, deadline=deadline)
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
            return _subset_sum(w.tolist(), cap, max_cells, deadline), "subset-sum"
        integral = bool((values == values.round()).all())
        if w.min() > 0 and w[j] <= cap and integral:
            take, drop = _fix_by_bounds(values, w, cap)
            room = cap - int(w[take].sum())
            free = ~(take | drop) & (w <= room)
            chosen = take
            if free.any():
                sub_w = w[free]
                chosen[free] = (True if room >= sub_w.sum() else
                                _one_resource(values[free], sub_w, room, True, max_cells,
                                              deadline)[0])
            return chosen, "grid+bounds"
        return _one_resource(values, w, cap, integral, max_cells, deadline)
    return _grid(values, weights, caps, max_cells, deadline), "grid"


def _fix_by_bounds(values: np.ndarray, w: np.ndarray, cap: int):
    """Items every optimal solution takes / leaves, proven with LP bounds (one resource).

    Needs integer values, ``0 < w <= cap < sum(w)``.  Items in density order; the LP optimum
    takes items ``< s`` and part of the critical item ``s``; ``low`` is the greedy value (a
    solution that takes every item ``< s``).  Item ``j < s`` is taken when the LP bound without
    it is below ``low``; item ``j > s`` is left when the LP bound with it is below ``low``.
    Both tests are strict, so every optimum agrees on the fixed items and the canonical
    optimum is the canonical optimum of the rest.  Returns boolean masks ``(take, drop)``.
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
    take[order] = (rank < s) & (np.floor(lp(cap + ws) - vs + slack) < low)
    drop[order] = (rank > s) & (np.floor(lp(cap - ws) + vs + slack) < low)
    return take, drop


def _subset_sum(w: list[int], cap: int, max_cells: int, deadline: float | None) -> np.ndarray:
    """Canonical fullest load: bit j of ``R_i`` says "items ``i..`` can load exactly j".

    ``R_i`` is built from the last item backwards; the decision is rebuilt forwards, taking
    item i when ``R_{i+1}`` still reaches the rest of the target.  When keeping every
    ``R_i`` would pass ``max_cells`` bytes, only every ``stride``-th is kept and each block
    is recomputed from its checkpoint (about ``2 sqrt(k)`` bitsets, twice the shifts).
    """
    k = len(w)
    size = cap // 8 + 1  # bytes of one bitset
    stride = 1 if (k + 2) * size <= max_cells else math.isqrt(k) + 1
    need = (k // stride + 2 + stride) * size
    if need > max_cells:
        raise _too_big(f"subset-sum over {k} items and loads 0..{cap}", need, max_cells)
    mask = (1 << (cap + 1)) - 1
    saved = {k: 1}
    reach = 1
    for i in range(k - 1, -1, -1):
        _check(deadline)
        reach = (reach | (reach << w[i])) & mask
        if i % stride == 0:
            saved[i] = reach
    target = reach.bit_length() - 1
    chosen = np.zeros(k, dtype=bool)
    for start in range(0, k, stride):
        end = min(k, start + stride)
        block = [saved[end]]  # R_end, then R_{end-1} .. R_{start+1}
        for i in range(end - 1, start, -1):
            block.append((block[-1] | (block[-1] << w[i])) & mask)
        block.reverse()  # block[i - start] = R_{i+1}
        for i in range(start, end):
            if w[i] <= target and (block[i - start] >> (target - w[i])) & 1:
                chosen[i] = True
                target -= w[i]
        _check(deadline)
    return chosen


def _one_resource(values: np.ndarray, w: np.ndarray, cap: int, integral: bool,
                  max_cells: int, deadline: float | None):
    """``(chosen, method)`` with the smaller of the capacity DP and the value DP."""
    k = values.size
    total = float(values.sum())
    if integral and 8 * (total + 1) < cap + 1 and total < 2**53:
        need = 8 * (k + 1) * (int(total) + 1)
        if need > max_cells:
            raise _too_big(f"value DP over {k} items and values 0..{int(total)}", need,
                           max_cells)
        return _value_grid(values.astype(np.int64), w, cap, deadline), "value-grid"
    return _grid(values, w[None, :], np.array([cap]), max_cells, deadline), "grid"


def _value_grid(values: np.ndarray, w: np.ndarray, cap: int, deadline) -> np.ndarray:
    """One resource, integer values: ``least[i, p]`` = least weight of items ``i..`` worth
    exactly p; the best p within ``cap`` is the optimum, rebuilt forwards (canonical)."""
    k, top = values.size, int(values.sum())
    least = np.full((k + 1, top + 1), np.inf)
    least[k, 0] = 0.0
    vals, ws = values.tolist(), w.tolist()
    for i in range(k - 1, -1, -1):
        _check(deadline)
        v, nxt, row = vals[i], least[i + 1], least[i]
        row[:] = nxt
        np.minimum(nxt[v:], nxt[: top + 1 - v] + ws[i], out=row[v:])
    p = int(np.nonzero(least[0] <= cap)[0].max())
    room = cap
    chosen = np.zeros(k, dtype=bool)
    for i in range(k):
        v = vals[i]
        if v <= p and least[i + 1, p - v] + ws[i] <= room:
            chosen[i] = True
            p -= v
            room -= ws[i]
    return chosen


def _grid(values: np.ndarray, weights: np.ndarray, caps: np.ndarray, max_cells: int,
          deadline: float | None) -> np.ndarray:
    """DP over the capacity grid: ``best[c]`` = max value of items ``i..`` within loads c.

    Items go from the last to the first; ``take[i, c]`` says taking item i is optimal within
    loads c (ties: take), so the forward rebuild gives the canonical optimum.  With one
    resource only loads up to the running total weight ``top`` are touched (above it every
    item so far fits).
    """
    k = values.size
    dims = tuple(int(c) + 1 for c in caps)
    cells = k * math.prod(dims)
    if cells > max_cells:
        raise _too_big(f"{k} items x {math.prod(dims)} capacity states", cells, max_cells)
    cols = weights.T.tolist()
    vals = values.tolist()
    best = np.zeros(dims)
    take = np.zeros((k,) + dims, dtype=bool)
    chosen = np.zeros(k, dtype=bool)
    if len(dims) == 1:  # the hot path (nodes only), with plain slices
        tops = [0] * k
        top = 0
        for i in range(k - 1, -1, -1):
            _check(deadline)
            a, v = cols[i][0], vals[i]
            new = min(dims[0] - 1, top + a)
            best[top + 1 : new + 1] = best[top]
            top = tops[i] = new
            cand = best[: top + 1 - a] + v
            kept = best[a : top + 1]
            np.greater_equal(cand, kept, out=take[i, a : top + 1])
            np.maximum(kept, cand, out=kept)
        at = dims[0] - 1
        for i in range(k):
            if take[i, min(at, tops[i])]:
                chosen[i] = True
                at -= cols[i][0]
        return chosen
    for i in range(k - 1, -1, -1):
        _check(deadline)
        col = cols[i]
        upper = tuple(slice(a, d) for a, d in zip(col, dims))
        lower = tuple(slice(0, d - a) for a, d in zip(col, dims))
        cand = best[lower] + vals[i]
        kept = best[upper]
        np.greater_equal(cand, kept, out=take[i][upper])
        np.maximum(kept, cand, out=kept)
    at = tuple(d - 1 for d in dims)
    for i in range(k):
        if take[(i, *at)]:
            chosen[i] = True
            at = tuple(c - a for c, a in zip(at, cols[i]))
    return chosen


@register("dp")
class DynamicProgramming(Solver):
    """Exact numpy dynamic program (subset-sum bitset, capacity or value grid).

    Supported models: ``knapsack`` (one or several resources, weights integral or with at
    most six decimals).  Returns the canonical optimum (``hpcopt.models.knapsack``).  Native
    statuses: ``"solved"`` -> optimal, ``"stopped"`` -> its limit:
    ``time_limit`` passed (checked between items; ``time_limit``) or the
    tables would exceed ``solver_options["max_cells"]`` bytes (default ``MAX_CELLS`` = 2**26,
    at most ``max_memory_mb``; ``memory_limit``); the answer is then the greedy fill and
    ``Result.log`` says why.
    ``seed`` has no effect (the algorithm is deterministic).
    """

    doc = "exact numpy DP (subset-sum bitset / capacity or value grid); integer weights"
    SUPPORTED_MODELS = ("knapsack",)
    EXACT = True
    OPTIONS = ("max_cells",)

    def _solve(self, model, opts: SolveOptions) -> Outcome:
        deadline = opts.deadline
        red = model.reduced(integer_weights=True, backend=self.full_name)
        if not (red.values == np.round(red.values)).all():
            try:  # decimal values scaled to integers make ties exact
                red = model.reduced(integer_weights=True, integer_values=True,
                                    backend=self.full_name)
            except ModelError:
                pass
        max_cells = opts.solver_options.get("max_cells", MAX_CELLS)
        if isinstance(max_cells, bool) or not isinstance(max_cells, int) or max_cells < 1:
            raise SolverOptionError(f"dp: max_cells must be a positive integer, got {max_cells!r}")
        if opts.max_memory_mb is not None:  # the tables are the DP's memory
            max_cells = min(max_cells, max(1, int(opts.max_memory_mb * 2**20)))
        try:
            chosen, method = solve_arrays(red.values, red.weights, red.capacities,
                                          max_cells=max_cells, deadline=deadline)
        except DPStop as stop:
            return Outcome(stop.limit, red.lift(greedy_fill(red)), log=str(stop),
                           extra={"method": "greedy"})
        return Outcome(Termination.OPTIMAL, red.lift(chosen), extra={"method": method})


TIE_BREAKS = ("dp", "resolve")


def canonical_tie_break(model, decision, deadline: float | None = None) -> list[int] | None:
    """The canonical optimum, given an optimal ``decision`` another backend proved.

    MIP backends find the canonical optimum with re-solves that can take 100x the first solve
    on subset-sum windows; on integer data this DP finds it in a fraction of a millisecond.
    Returns None (the caller then re-solves) when the data are not integer, the DP would
    pass ``MAX_CELLS`` or the deadline, or its optimum differs from ``decision``'s value.
    """
    try:
        red = model.reduced(integer_weights=True, integer_values=True, backend="dp")
        chosen, _ = solve_arrays(red.values, red.weights, red.capacities, deadline=deadline)
    except (ModelError, DPStop):
        return None
    worth = np.zeros(model.n_items, dtype=np.int64)
    worth[red.items] = red.values
    x = red.lift(chosen)
    if int(worth @ np.asarray(x, dtype=np.int64)) != int(worth @ np.asarray(decision, np.int64)):
        return None
    return x


def tie_break_option(options: dict, backend: str) -> str:
    """``solver_options["tie_break"]`` of a MIP backend: "dp" (default) or "resolve"."""
    mode = options.get("tie_break", "dp")
    if mode not in TIE_BREAKS:
        raise SolverOptionError(f"{backend}: tie_break must be one of {TIE_BREAKS}, got {mode!r}")
    return mode
