"""Exact SCAS by a constrained-shortest-path dynamic program (backend ``scas-exact``).

The paper (Lan et al., CLUSTER'23, section IV-B) turns SCAS into a constrained shortest path:
the positions 0..m of the idle sequence Q are vertices, a zero-cost *transition* arc leads
from position p to p + 1 (node p stays idle), and an *operation* arc of size r leads from p to
p + r at the CH cost of the block D(p, r); a path from 0 to m must use exactly e_r operation
arcs of each job size r.  We solve that resource-constrained path exactly, as a label DP:

- a label at vertex p is (jobs still to place, as a multiset of sizes; cost); two labels at
  the same vertex with the same multiset keep the cheaper one (dominance), so the DP is exact;
- a label is pruned when its cost plus a lower bound of its remaining jobs (each job at its
  cheapest block starting at p or later, disjointness relaxed) cannot beat the incumbent,
  which starts as a greedy placement (largest job first, cheapest free block);
- rounds: when an exact pass exceeds its label budget, a beam search (the same DP keeping
  the most promising labels of each vertex) finds a better incumbent and the exact pass
  runs again with it (``SCHEDULE``); the last pass has no budget, so the answer is proved;
- wrap-around: in a feasible solution at most one block crosses the end of Q.  A label may
  start with such a block of size r taking the last r - b positions and the first b ones; it
  then starts at vertex b and must leave the last r - b positions free ("pending"), a third
  component of the label.

All labels of vertex p are expanded before vertex p + 1, so the search ends with a proven
optimum (status OPTIMAL).  A time limit returns the incumbent as FEASIBLE.  A label carries
its blocks (first position, size), which gives the decision without parent pointers.

Canonical tie-break (issue #10; every exact backend returns the same placement): among the
optimal placements, the one whose blocks listed by first position form the lexicographically
smallest list of (first position, size) pairs, jobs of equal size taking their blocks in
window order (``canonical_order``, ``assign``).  After the proof a second pass in canonical
mode, bounded by the optimum, keeps the labels that may tie with it, prunes those whose
blocks so far already come after the best key, and resolves ties between labels of one state
by their blocks.  A beam search in canonical order (``CANONICAL_BEAM``) first finds a small
key, which prunes most ties.  The pass has a label budget (``CANONICAL_LABELS``,
deterministic); on windows with very many ties (some hard 20-job windows) it gives up and
keeps the proven optimum (``extra["canonical"]`` False).  The registry maps other exact
backends' optima through the same pass (``canonical_scas``).
"""

from __future__ import annotations

import time
from operator import mul

import numpy as np

from hpcopt.result import Termination

from .registry import Outcome, SolveOptions, Solver, register, register_canonical

_TIE = 1e-9  # relative tolerance under which two costs are equal
# (beam width of the incumbent search, label budget of the exact pass) per round: most
# windows are proved in the first exact pass; a hard one gets a beam-search incumbent, which
# is usually optimal or close, and the exact pass restarts with that bound
SCHEDULE = ((None, 2_000), (16, 50_000), (256, None))
CANONICAL_LABELS = 20_000  # label budget of the tie-break pass after the proof
CANONICAL_BEAM = 32  # beam width of the canonical-order search that seeds it


def greedy_starts(costs: np.ndarray, sizes) -> tuple[float, list[int]] | None:
    """Largest job first, each on the cheapest block of free positions (wrapping allowed);
    ``None`` when a job finds no free block (fragmented Q)."""
    m = costs.shape[0]
    used = np.zeros(m, dtype=np.int64)
    starts = [0] * len(sizes)
    total = 0.0
    for j in sorted(range(len(sizes)), key=lambda j: -sizes[j]):
        r = int(sizes[j])
        run = np.concatenate([[0], np.cumsum(np.concatenate([used, used]))])
        busy = run[np.arange(m) + r] - run[np.arange(m)]
        cand = np.where(busy == 0, costs[:, r - 1], np.inf)
        i = int(np.argmin(cand))
        if not np.isfinite(cand[i]):
            return None
        starts[j] = i
        total += float(cand[i])
        used[(i + np.arange(r)) % m] = 1
    return total, starts


def sequential_starts(sizes) -> list[int]:
    """Jobs back to back from the head of Q in window order (always feasible: sum <= |Q|)."""
    return [int(v) for v in np.concatenate([[0], np.cumsum(sizes)[:-1]])]


def solve_arrays(costs: np.ndarray, sizes, *, incumbent=None, deadline: float | None = None,
                 label_budget: int | None = None, beam: int | None = None,
                 canonical: bool = False):
    """Exact SCAS on the interval-cost table ``costs[i, r - 1]`` (see the module docstring).

    Returns ``(cost, starts, proven, labels)``: one first position per job, whether the
    search finished (optimality proven), and how many labels it created.  ``incumbent``
    ``(cost, starts)`` is a known feasible solution (default: the greedy one).
    ``label_budget`` stops the search after that many labels; ``beam`` keeps only the
    ``beam`` most promising labels (cost + bound) of each vertex -- a heuristic that finds
    a good incumbent fast, never a proof.  With ``canonical`` a proven answer is the
    canonical optimum (``canonical_order``): labels that may tie with the best solution are
    kept unless they cannot come first in the canonical order, and ties between two labels of
    the same state go to the lexicographically smaller list of blocks; without it labels that
    cannot beat the incumbent strictly are pruned (much faster on symmetric windows).
    """
    sizes = [int(s) for s in sizes]
    search = _LabelSearch(costs, sizes, canonical)
    if incumbent is None:
        incumbent = greedy_starts(costs, sizes)
    if incumbent:
        # the best complete solution as its canonical key: blocks (first position, size),
        # the wrapping block last
        search.best_cost = incumbent[0]
        search.best_key = tuple(canonical_order(incumbent[1], sizes))
    search.seed()
    proven = search.run(deadline, label_budget, beam)
    if search.found is None:
        if incumbent is None:
            return None, None, proven, search.labels
        return float(incumbent[0]), assign(search.best_key, sizes), proven, search.labels
    return float(search.found), assign(search.best_key, sizes), proven, search.labels


class _LabelSearch:
    """The label DP of ``solve_arrays`` on one window: a label at vertex p is (cost, blocks
    before the vertex, wrapping block) under its state (the sizes still to place, packed in
    one integer ``key``, and the positions a wrapping block leaves free at the end); labels
    are expanded vertex by vertex, pruned by a lower bound against the best solution."""

    def __init__(self, costs: np.ndarray, sizes: list[int], canonical: bool) -> None:
        m = self.m = costs.shape[0]
        self.costs, self.sizes, self.canonical = costs, sizes, canonical
        self.groups = groups = sorted(set(sizes), reverse=True)
        self.count = count = [sizes.count(r) for r in groups]
        self.base, b = [], 1  # the key: a mixed-radix count of the jobs left of each size
        for c in count:
            self.base.append(b)
            b *= c + 1
        self.full = sum(c * bb for c, bb in zip(count, self.base))
        # smin[g, p]: cheapest non-wrapping block of size groups[g] starting at p or later
        smin = np.full((len(groups), m + 1), np.inf)
        for g, r in enumerate(groups):
            col = np.full(m, np.inf)
            if r <= m:
                col[:m - r + 1] = costs[:m - r + 1, r - 1]
            smin[g, :m] = np.minimum.accumulate(col[::-1])[::-1]
        self.smin_at = smin.T.tolist()  # smin_at[p][g]
        self.cost_at = costs.tolist()  # cost_at[p][r - 1]
        self.unpacked: dict[int, list[int]] = {}
        # costs closer than tol are equal (float sums of the same blocks in another order)
        self.tol = _TIE * max(1.0, sum(float(costs[:, r - 1].max()) for r in sizes))
        # a label survives while cost + bound <= best + slack
        self.slack = self.tol if canonical else -self.tol
        self.layers: list = [{} for _ in range(m + 1)]
        self.labels = 0
        self.best_cost, self.best_key = np.inf, None
        self.found = None  # cost of the best complete label of the DP, if any

    def unpack(self, key: int) -> list[int]:
        """The jobs left of each size in the state ``key``."""
        kc = self.unpacked.get(key)
        if kc is None:
            base, count = self.base, self.count
            kc = self.unpacked[key] = [(key // base[g]) % (count[g] + 1)
                                       for g in range(len(base))]
        return kc

    def bound(self, key_counts, p: int) -> float:
        """Each job left at its cheapest block starting at p or later (disjointness relaxed)."""
        b = sum(map(mul, key_counts, self.smin_at[p]))
        if b != b:  # 0 * inf: a placed-out size with no block left after p costs nothing
            b = sum(c * s for c, s in zip(key_counts, self.smin_at[p]) if c)
        return b

    def offer(self, q: int, state, cost: float, prefix, wrap) -> int:
        """Keep the label at vertex q if it beats the one of its state: cheaper, or as
        cheap and first in the canonical order."""
        old = self.layers[q].get(state)
        if old is not None and (cost > old[0] + self.tol or (
                cost >= old[0] - self.tol and prefix + wrap >= old[1] + old[2])):
            return 0
        self.layers[q][state] = (cost, prefix, wrap)
        return 1

    def cannot_win(self, prefix, p: int) -> bool:
        """A label of the cost of the best solution, whose blocks so far are ``prefix`` and
        whose next block starts at ``p`` or later, cannot give a smaller key."""
        k = len(prefix)
        head = self.best_key[:k]
        return prefix > head or (prefix == head and self.best_key[k][0] < p)

    def seed(self) -> None:
        """The start label, and the labels whose first block wraps around the end of Q."""
        m, full, need_full = self.m, self.full, sum(self.sizes)
        self.layers[0][(full, 0)] = (0.0, (), ())
        for g, r in enumerate(self.groups):
            for tail in range(1, min(r, m)):
                pend = r - tail
                start = m - pend
                cost = float(self.costs[start, r - 1])
                key = full - self.base[g]
                if need_full - r > m - pend - tail:
                    continue
                if cost + self.bound(self.unpack(key), tail) > self.best_cost + self.slack:
                    continue
                self.offer(tail, (key, pend), cost, (), ((start, r),))

    def _beam(self, layer: dict, beam: int, p: int) -> dict:
        """The ``beam`` most promising labels of a vertex (canonical: the earliest blocks,
        as every kept label may tie with the best)."""
        rank = (lambda kv: kv[1][1] + kv[1][2]) if self.canonical else (
            lambda kv: kv[1][0] + self.bound(self.unpack(kv[0][0]), p))
        return dict(sorted(layer.items(), key=rank)[:beam])

    def run(self, deadline: float | None, label_budget: int | None, beam: int | None) -> bool:
        """Expand every vertex's labels in order; whether the search finished (a proof)."""
        m, groups, base, tol, slack = self.m, self.groups, self.base, self.tol, self.slack
        canonical, cost_at, smin_at, layers = self.canonical, self.cost_at, self.smin_at, \
            self.layers
        bound, offer, unpack = self.bound, self.offer, self.unpack
        best_cost, labels, proven = self.best_cost, self.labels, True
        for p in range(m + 1):
            layer = layers[p]
            if not layer:
                continue
            if (deadline is not None and time.perf_counter() > deadline) or (
                    label_budget is not None and labels > label_budget):
                proven = False
                break
            if beam is not None and len(layer) > beam:
                proven = False
                layer = self._beam(layer, beam, p)
            for n_done, (state, (cost, prefix, wrap)) in enumerate(layer.items(), 1):
                if deadline is not None and not n_done % 4096 and time.perf_counter() > deadline:
                    proven = False
                    break
                key, pend = state
                if cost > best_cost + slack:
                    continue
                if key == 0:
                    full_key = prefix + wrap
                    if self.found is None or cost < best_cost - tol or (
                            canonical and full_key < self.best_key):
                        self.best_key, self.found = full_key, cost
                        best_cost = self.best_cost = min(cost, best_cost)
                    continue
                kc = unpack(key)
                lower = bound(kc, p)
                if canonical and cost + lower >= best_cost - tol and \
                        self.best_key is not None and self.cannot_win(prefix, p):
                    continue  # at best a tie with the best solution, which comes first
                need = sum(map(mul, kc, groups))
                end = m - pend
                cut = best_cost + slack - cost  # a completion may cost at most this
                if p + 1 + need <= end and bound(kc, p + 1) <= cut:
                    labels += offer(p + 1, state, cost, prefix, wrap)
                row, lb_row = cost_at[p], smin_at[p]
                for g, c in enumerate(kc):
                    if not c:
                        continue
                    r = groups[g]
                    q = p + r
                    if q + need - r > end:
                        continue
                    step = row[r - 1]
                    limit = cut - step
                    # smin grows with p: the bound at p is a cheap first test of the one at q
                    if lower - lb_row[g] > limit or bound(kc, q) - smin_at[q][g] > limit:
                        continue
                    labels += offer(q, (key - base[g], pend), cost + step,
                                    prefix + ((p, r),), wrap)
            layers[p] = None  # free the layer: labels carry their blocks
        self.labels = labels
        return proven


def assign(blocks, sizes) -> list[int]:
    """First positions per job from ``(first position, size)`` blocks: jobs of one size take
    that size's blocks in window order (the canonical assignment)."""
    free: dict[int, list[int]] = {}
    for start, r in sorted(blocks, reverse=True):
        free.setdefault(r, []).append(start)
    return [free[r].pop() for r in sizes]


def canonical_order(starts, sizes) -> list[tuple[int, int]]:
    """The canonical tie-break key of a SCAS decision: its blocks ``(first position, size)``
    by first position.  Among optimal decisions the canonical one has the smallest key, and
    its jobs of equal size take their blocks in window order (``assign``)."""
    return sorted((int(s), int(r)) for s, r in zip(starts, sizes))


@register("scas-exact")
class ScasExact(Solver):
    """Exact SCAS: constrained-shortest-path label DP with dominance and bound pruning.

    Supported models: ``scas``.  Deterministic; ``seed`` is ignored.  ``time_limit`` stops
    the search and returns the incumbent (status FEASIBLE, limit TIME).  ``warm_start``: a
    feasible SCAS decision (first positions) used as the first incumbent.  ``extra`` reports
    the number of labels created.
    """

    doc = "exact SCAS: constrained-shortest-path DP over Q (dominance + bounds), proves optimality"
    SUPPORTED_MODELS = ("scas",)
    GREEDY_START = True
    EXACT = True
    CANONICAL = True

    def version(self) -> str:
        return "hpcopt"

    def _solve(self, model, opts: SolveOptions) -> Outcome:
        costs = model.interval_costs
        incumbent = None
        if opts.warm_start is not None:
            ev = model.evaluate(opts.warm_start)
            if ev.feasible:
                incumbent = (ev.objective, [int(v) for v in opts.warm_start])
        seq = sequential_starts(model.sizes)
        for cand in (greedy_starts(costs, model.sizes), (model.evaluate(seq).objective, seq)):
            if cand is not None and (incumbent is None or cand[0] < incumbent[0]):
                incumbent = cand
        deadline = opts.deadline
        labels = 0
        for beam, budget in SCHEDULE:
            if beam is not None:  # a better incumbent first: the exact pass prunes by it
                cost, starts, _, used = solve_arrays(costs, model.sizes, incumbent=incumbent,
                                                     deadline=deadline, beam=beam)
                incumbent, labels = (cost, starts), labels + used
            cost, starts, proven, used = solve_arrays(costs, model.sizes, incumbent=incumbent,
                                                      deadline=deadline, label_budget=budget)
            incumbent, labels = (cost, starts), labels + used
            if proven or (deadline is not None and time.perf_counter() > deadline):
                break
        extra = {"labels": labels}
        if proven:
            canon = canonical_pass(model, (cost, starts), deadline)
            extra["canonical"] = canon is not None
            starts = starts if canon is None else canon
            return Outcome(Termination.OPTIMAL, starts, objective=cost, bound=cost, extra=extra)
        return Outcome(Termination.TIME_LIMIT, starts, objective=cost, extra=extra)


def canonical_pass(model, optimum, deadline: float | None = None):
    """The canonical optimum (``canonical_order``) from a proven ``optimum`` (cost, starts):
    the DP in canonical mode, bounded by the optimum, keeps only the labels that can tie
    with it and come first.  ``None`` when it runs past ``deadline`` or
    ``CANONICAL_LABELS`` labels (deterministic: the same windows give up every time)."""
    costs = model.interval_costs
    # a beam search in canonical order first: a small key prunes most ties of the exact pass
    _, starts, _, used = solve_arrays(costs, model.sizes, incumbent=optimum, deadline=deadline,
                                      beam=CANONICAL_BEAM, canonical=True)
    _, out, proven, _ = solve_arrays(costs, model.sizes, incumbent=(optimum[0], starts),
                                     deadline=deadline, label_budget=CANONICAL_LABELS,
                                     canonical=True)
    return out if proven else None


@register_canonical("scas")
def canonical_scas(model, starts, seconds_left: float | None = None):
    """The registry's tie-break for other exact backends' optimal ``starts``."""
    deadline = None if seconds_left is None else time.perf_counter() + seconds_left
    return canonical_pass(model, (model.evaluate(starts).objective, [int(v) for v in starts]),
                          deadline)
