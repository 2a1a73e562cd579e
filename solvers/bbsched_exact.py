"""The exact Pareto set of a BBSched model (backend ``pareto-exact``).

Two algorithms, chosen by ``solver_options={"algorithm": ...}`` (default ``"auto"``):

``bitset`` (two objectives, burst buffer in whole GB or up to 3 decimals; ``auto``'s choice)
    Both objectives are resource totals, so the front only needs, for each reachable node
    total, the largest reachable burst-buffer sum.  The rows of a table are the node-level
    vectors (nodes per SSD demand level: their sum is f1, and Hall's condition reads them)
    that some feasible selection reaches; each row holds a bitset of the burst-buffer sums
    (0 .. free burst buffer, in units of 10^-d GB) reachable on it.  Each job
    ORs every row, shifted by its burst buffer, into the row of its node levels (one numpy
    pass over the table, 64 sums a word); jobs go in reverse window order (those without
    burst buffer shift by 0).  The front is the staircase of (node total, max burst buffer).
    The bits each job set first are kept (sparse), so that clearing them again steps the table
    back job by job for the canonical decisions.  Work and memory grow with rows x
    burst-buffer words x jobs, not with the number of selections reaching a cell: on W = 50
    windows of the recorded Theta queue (``benchmarks/bbsched_solvers.py --recorded``) at
    most 31 ms and 5 MB, on its synthetic worst cases 0.5 s and 122 MB; no job limit.

``states`` (four objectives, other non-integer burst buffer, or a bitset table too large)
    A DP over the jobs keeps the set of reachable *states*: node levels, burst buffer and, for
    four objectives, requested SSD (f4 is a function of the levels), plus the bitmask of the
    jobs.  Identical states are kept once, and among states with the same node levels one
    whose burst buffer plus all burst buffer still to come fits the free amount (a *slack*
    state) removes those with no more burst buffer (and SSD): every completion open to them
    is open to it and ends no worse.  Exponential in the burst-buffer jobs at worst (the
    problem is NP-hard): on the same two-objective windows up to 0.7 M states and 14 s;
    four-objective W = 50 windows take seconds (one of five stopped at 20 s).  Windows of at
    most 62 jobs (bitmasks are int64).

Both return, for every front point, the canonical decision of ``BBSchedModel`` (among the
selections with that objective vector, the one taking the earliest window jobs): ``bitset``
runs its DP over the jobs in reverse window order and rebuilds each point front first, taking
a job whenever the later jobs still reach the rest; ``states`` keeps, of identical states,
the one with the greatest mask (dominance pruning only drops strictly worse states), and of
final states with one objective vector, again the greatest mask.

Limits: the time limit is checked between jobs and between the numpy steps of a job, and a
step (or the final front scan) predicted not to end in time is not started; a memory cap
(``max_memory_mb``, default 400 MB of DP tables, estimated before each step) stops with
termination ``memory_limit``.  Either way the front of the jobs processed so far (feasible
selections, not a claim of optimality; for ``bitset`` the last jobs of the window, as it runs
back to front) comes back, a feasible solution.
"""

from __future__ import annotations

import time

import numpy as np

from hpcopt.errors import ModelError, SolverOptionError
from hpcopt.result import Termination

from .bbsched_ga import front_points, pareto_rows
from .registry import Outcome, SolveOptions, Solver, register

MAX_JOBS = 62  # the states algorithm's bitmask; bitset has no job limit
MAX_DECIMALS = 3  # bitset counts burst buffer in units of 10^-3 GB at the finest
ALGORITHMS = ("auto", "bitset", "states")
DEFAULT_MEMORY_MB = 400.0
# peak bytes per state of the states algorithm per column (levels + bb + ssd + mask), with
# the copies np.unique and the dominance sort make (measured: ~0.5 kB a state, one level)
STATE_BYTES_PER_COLUMN = 128
WORD = 64
CERTIFY_SHARE = 0.3  # of the time left (at most 1 s) kept for the front scan's last chunk and
# the registry's certification of every front point


class _Stop(Exception):
    """A limit hit inside a step: carries which."""

    def __init__(self, limit: Termination) -> None:
        super().__init__(limit.value)
        self.limit = limit


class _Budget:
    """Deadline and memory cap, checked between numpy steps."""

    def __init__(self, time_limit: float | None, max_mb: float) -> None:
        self.deadline = None if time_limit is None else time.perf_counter() + time_limit
        self.max_bytes = max_mb * 2**20

    def check(self, nbytes: float = 0.0, seconds: float = 0.0) -> None:
        """Stop when the deadline is past or would be before ``seconds`` more of work end,
        or when ``nbytes`` exceed the cap."""
        if self.deadline is not None and time.perf_counter() + seconds > self.deadline:
            raise _Stop(Termination.TIME_LIMIT)
        if nbytes > self.max_bytes:
            raise _Stop(Termination.MEMORY_LIMIT)


def _lone_jobs(model) -> np.ndarray:
    """Jobs that fit on their own (the others are in no feasible selection)."""
    return np.flatnonzero(model.feasible_many(np.eye(model.n_items, dtype=bool)))


def _merge_round_off(F: np.ndarray) -> np.ndarray:
    """``F`` with the values of each non-integer column that lie within 1e-9 (relative) of
    each other merged to the largest of them: the same requests summed in another order are
    one objective value, so round-off cannot make a second Pareto point."""
    F = F.copy()
    for k in range(F.shape[1]):
        col = F[:, k]
        if (col == np.round(col)).all():
            continue
        vals = np.unique(col)
        tol = 1e-9 * max(1.0, float(np.abs(vals).max()))
        cluster = np.concatenate([[0], np.cumsum(np.diff(vals) > tol)])
        top = np.maximum.reduceat(vals, np.flatnonzero(np.diff(cluster, prepend=-1)))
        F[:, k] = top[cluster[np.searchsorted(vals, col)]]
    return F


def _front_rows(F: np.ndarray, budget: _Budget, tie: np.ndarray,
                chunk: int = 256) -> tuple[np.ndarray, bool]:
    """Indices of the distinct non-dominated rows of ``F`` (all maximized; of equal rows the
    one with the largest ``tie``), and whether the deadline cut the scan (then: the
    non-dominated rows among those scanned).

    Rows go by decreasing normalized objective sum, so a row's dominators come before it;
    each chunk is checked against the front so far and then within itself (only the few
    survivors), so the cost is rows x front size, not rows^2.  Two objectives: a staircase.
    """
    if F.shape[1] == 2:
        order = np.lexsort((-tie, -F[:, 1], -F[:, 0]))
        best = np.maximum.accumulate(F[order, 1])
        keep = np.concatenate([[True], F[order[1:], 1] > best[:-1]])
        return order[keep], False
    span = F.max(axis=0) - F.min(axis=0)
    order = np.lexsort((-tie, -(F / np.where(span > 0, span, 1.0)).sum(axis=1)))
    P = np.empty((0, F.shape[1]))
    kept: list[np.ndarray] = []
    for start in range(0, len(order), chunk):
        try:
            budget.check()
        except _Stop:
            return np.concatenate(kept) if kept else order[:1], True
        idx = order[start:start + chunk]
        C = F[idx]
        free = ~(P[None, :, :] >= C[:, None, :]).all(axis=2).any(axis=1)
        idx, C = idx[free], C[free]
        # within the chunk: an earlier row (larger sum, or an equal copy) that is >= all
        weak = (C[None, :, :] >= C[:, None, :]).all(axis=2)  # weak[i, j]: row j >= row i
        free = ~np.tril(weak, -1).any(axis=1)
        kept.append(idx[free])
        P = np.vstack([P, C[free]])
    return (np.concatenate(kept) if kept else order[:0]), False


# -- bitset algorithm -------------------------------------------------------------------
def _level_rows(model, jobs, budget: _Budget):
    """Sorted codes of the node-level vectors reachable by feasible selections of ``jobs``
    (mixed radix, digit k <= free nodes of classes k and up), their digits, and each job's
    code increment; None when the codes would not fit int64."""
    sfree = model._suffix_free.astype(np.int64)
    radix = np.cumprod(np.concatenate([[1], sfree[:-1] + 1])).astype(np.int64)
    if float(np.prod(sfree.astype(float) + 1)) >= 2.0**62:
        return None
    level = model.level[jobs]
    nodes = model.nodes[jobs].astype(np.int64)
    digits = np.zeros((1, len(sfree)), dtype=np.int64)
    for lvl, nn in zip(level, nodes):
        budget.check(digits.nbytes * 8)
        new = digits.copy()
        new[:, lvl] += nn
        ok = (np.cumsum(new[:, ::-1], axis=1)[:, ::-1] <= sfree).all(axis=1)
        digits = np.concatenate([digits, new[ok]])
        _, first = np.unique(digits @ radix, return_index=True)
        digits = digits[first]  # sorted by code, digits within range: codes do not wrap
    return digits @ radix, digits, nodes * radix[level]


def _shift_or_new(T: np.ndarray, src: np.ndarray, tgt: np.ndarray, shift: int,
                  words: int, last_mask: np.uint64 | None) -> np.ndarray:
    """Bits of rows ``src`` shifted up by ``shift`` that rows ``tgt`` lack (first ``words``
    words; ``last_mask`` clears bits beyond the capacity in the last word)."""
    q, r = divmod(shift, WORD)
    out = np.zeros((len(src), words), dtype=np.uint64)
    if q < words:
        S = T[src, : words - q]
        if r == 0:
            out[:, q:] = S
        else:
            out[:, q:] = S << np.uint64(r)
            out[:, q + 1:] |= S[:, : words - q - 1] >> np.uint64(WORD - r)
    if last_mask is not None:
        out[:, -1] &= last_mask
    out &= ~T[tgt, :words]
    return out


def _top_bits(T: np.ndarray) -> np.ndarray:
    """Highest set bit of each row (-1 for an empty row)."""
    nz = T != 0
    has = nz.any(axis=1)
    w = T.shape[1] - 1 - np.argmax(nz[:, ::-1], axis=1)
    word = T[np.arange(len(T)), w]
    hi, lo = word >> np.uint64(32), word & np.uint64(0xFFFFFFFF)
    bits = np.where(hi > 0, 32 + np.frexp(hi.astype(float))[1], np.frexp(lo.astype(float))[1])
    return np.where(has, w * WORD + bits - 1, -1).astype(np.int64)


def bb_units(model) -> tuple[np.ndarray, int] | None:
    """Burst buffer in integer units and the capacity in them, when the requests have at
    most MAX_DECIMALS decimals (GB, MB or kB): ``(requests, capacity)``, else None.

    Integer requests are exact; decimal ones count a selection as fitting when its sum is
    within the model's round-off tolerance of the free amount, like ``evaluate`` -- and None
    (use the states algorithm) when that boundary lies within 1e-6 unit of an integer, where
    float sums could fall on either side of it.
    """
    bb = model.bb
    for d in range(MAX_DECIMALS + 1):
        scaled = bb * 10.0**d
        units = np.rint(scaled)
        # each request within round-off of its own value (a tolerance relative to the largest
        # one would round 0.25 next to 1e10 away)
        if (np.abs(scaled - units) <= 1e-12 * np.maximum(1.0, np.abs(scaled))).all():
            break
    else:
        return None
    if units.sum() >= (2.0**53 if d == 0 else 2.0**50):
        return None
    edge = (model.free_bb + model._tol[1]) * 10.0**d
    if d and abs(edge - np.rint(edge)) < 1e-6:
        return None
    return units.astype(np.int64), int(np.floor(edge))


def _has_bit(T: np.ndarray, rows: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Whether burst-buffer sum ``b`` is set in table rows ``rows`` (elementwise)."""
    word = T[rows, b // WORD]
    return ((word >> (b % WORD).astype(np.uint64)) & np.uint64(1)).astype(bool)


def bitset_front(model, budget: _Budget):
    """Front by the bitset DP (two objectives, burst buffer in integer units): ``(X, limit,
    info)`` with the canonical decision (``BBSchedModel``) of each front point; ``limit`` None
    when the front is exact.

    Jobs go in reverse window order, so after job i the table holds R_i, the (node levels,
    burst buffer) pairs reachable by jobs i..; each step keeps the bits it set.  A front point
    is rebuilt front first: job i is taken when the rest of the target stays in R_{i+1},
    which is the table with job i's bits cleared again.
    """
    n = model.n_items
    jobs = _lone_jobs(model)[::-1]
    bb, cap = bb_units(model)
    cap = min(cap, int(bb[jobs].sum()))
    rows = _level_rows(model, jobs, budget)
    if rows is None:
        raise _Stop(Termination.MEMORY_LIMIT)
    codes, digits, delta = rows
    totals = digits.sum(axis=1)
    room = model._suffix_free.astype(np.int64) - digits  # per level: nodes it can still take
    n_words = cap // WORD + 1
    budget.check(len(codes) * n_words * 8 * 3)
    T = np.zeros((len(codes), n_words), dtype=np.uint64)
    T[0, 0] = 1  # code 0: the empty selection, burst buffer 0
    alive = np.zeros(len(codes), dtype=bool)
    alive[0] = True
    flat_t = T.reshape(-1)
    index = np.int32 if T.size < 2**31 else np.int64
    moves = []  # per job: the table words it changed (flat index) and the bits it set there
    stored = T.nbytes
    limit, cum = None, 0
    rate = 0.0  # seconds per table word of the last step (to skip one that cannot end in time)
    try:
        for step, j in enumerate(jobs):
            budget.check(stored)
            t0 = time.perf_counter()
            pos = np.searchsorted(codes, codes + delta[step])
            pos = np.minimum(pos, len(codes) - 1)
            # the digit must not carry into the next level, and the vector must be reachable
            ok = alive & (codes[pos] == codes + delta[step]) & (
                room[:, model.level[j]] >= model.nodes[j])
            src, tgt = np.flatnonzero(ok), pos[ok]
            cum += int(bb[j])
            words = min(n_words, min(cap, cum) // WORD + 1)
            last = np.uint64((1 << (cap % WORD + 1)) - 1) if words == n_words else None
            budget.check(stored + 3 * len(src) * words * 8, rate * len(src) * words)
            new = _shift_or_new(T, src, tgt, int(bb[j]), words, last)
            budget.check(stored)
            f = np.flatnonzero(new)
            r, w = np.divmod(f, words)
            flat, bits = (tgt[r] * n_words + w).astype(index), new.reshape(-1)[f]
            del new
            flat_t[flat] |= bits
            alive[tgt[r]] = True
            moves.append((flat, bits))
            stored += flat.nbytes + bits.nbytes
            rate = (time.perf_counter() - t0) / max(len(src) * words, 1)
    except _Stop as stop:
        limit = stop.limit
    best = _top_bits(T)
    # staircase: per node total the largest burst buffer, kept if above every larger total
    order = np.lexsort((-best, -totals))
    order = order[best[order] >= 0]
    first = np.concatenate([[True], totals[order[1:]] != totals[order[:-1]]])
    order = order[first]
    up = np.concatenate([[True], best[order[1:]] > np.maximum.accumulate(best[order])[:-1]])
    f1, f2 = totals[order[up]], best[order[up]]
    # candidates: (point, row) pairs with the point's node total and burst buffer
    pt = np.searchsorted(-f1, -totals, side="left")
    pt = np.minimum(pt, len(f1) - 1)
    cand = np.flatnonzero((f1[pt] == totals) & (f2[pt] == best))
    cpt, crow = pt[cand], cand
    rest = f2.astype(np.int64).copy()
    X = np.zeros((len(f1), n), dtype=bool)
    level, nodes = model.level, model.nodes
    for step in range(len(moves) - 1, -1, -1):  # window order
        flat, bits = moves[step]
        flat_t[flat] &= ~bits  # T is now R_{i+1}
        j = jobs[step]
        bres = rest[cpt] - int(bb[j])
        q = codes[crow] - delta[step]
        k = np.minimum(np.searchsorted(codes, q), len(codes) - 1)
        can = (digits[crow, level[j]] >= nodes[j]) & (bres >= 0) & (codes[k] == q)
        hit = can & _has_bit(T, k, np.where(can, bres, 0))
        take = np.zeros(len(f1), dtype=bool)
        take[cpt[hit]] = True
        stay = ~take[cpt] & _has_bit(T, crow, rest[cpt])
        cpt = np.concatenate([cpt[hit], cpt[stay]])
        crow = np.concatenate([k[hit], crow[stay]])
        key = np.unique(cpt * len(codes) + crow)
        cpt, crow = key // len(codes), key % len(codes)
        X[take, j] = True
        rest[take] -= int(bb[j])
    done = np.zeros(len(f1), dtype=bool)
    done[cpt[crow == 0]] = True
    if not (done.all() and (rest == 0).all()):  # pragma: no cover - R_0 holds every point
        raise ModelError("pareto-exact: bitset reconstruction did not reach the empty selection")
    info = {"rows": int(len(codes)), "words": int(n_words), "table_mb": stored / 2**20}
    return X, limit, info


# -- states algorithm (the original DP) ------------------------------------------------
def _dominated_in_group(keys: np.ndarray, b: np.ndarray, s: np.ndarray,
                        slack: np.ndarray) -> np.ndarray:
    """States dominated by a slack state of the same group (``keys`` rows) with b' >= b and
    s' >= s, not identical (identical states were removed before)."""
    _, group = np.unique(keys, axis=0, return_inverse=True)
    group = group.ravel()
    # order: group, then b descending, then s descending; slack states carry their s forward
    order = np.lexsort((-s, -b, group))
    g, so, sl = group[order], s[order], slack[order]
    carried = np.where(sl, so, -np.inf)
    span = float(np.abs(s).max(initial=0.0)) + 1.0
    shifted = carried + g * (3 * span)  # running max restarts per group: groups ascend
    shifted[~sl] = -np.inf
    best = np.maximum.accumulate(np.where(sl, shifted, -np.inf))
    prev = np.concatenate([[-np.inf], best[:-1]])
    prev_s = prev - g * (3 * span)
    new_group = np.concatenate([[True], g[1:] != g[:-1]])
    prev_s[new_group] = -np.inf
    dominated = np.zeros(len(b), dtype=bool)
    # an earlier slack state in the group has b' >= b; dominated when also s' >= s
    dominated[order] = prev_s >= so - 1e-9
    return dominated


def states_front(model, budget: _Budget):
    """Front by the state DP (any form, at most 62 jobs): ``(X, limit, info)`` with one
    decision per front point."""
    n = model.n_items
    if n > MAX_JOBS:
        why = ("four objectives" if model.objectives == 4 else
               "burst-buffer requests with more than 3 decimals" if bb_units(model) is None
               else "algorithm 'states' was asked for")
        raise ModelError(f"pareto-exact: the states algorithm ({why}) takes windows of at "
                         f"most {MAX_JOBS} jobs, got {n}; use bbsched-ga or nsga2")
    four = model.objectives == 4
    demand = model._demand  # (n, levels): nodes each job puts on each demand level
    suffix_free = model._suffix_free
    lone = _lone_jobs(model)
    jobs = [int(i) for i in lone[np.lexsort((lone, model.bb[lone] == 0))]]
    units = bb_units(model)  # whole units when possible: equal sums are equal floats
    if units is None:
        bb, free_bb, tol = model.bb, model.free_bb, model._tol[1]
    else:
        bb, free_bb, tol = units[0].astype(float), float(units[1]), 0.0
    bb_after = np.append(np.cumsum(bb[jobs][::-1])[::-1], 0.0)[1:]
    K = demand.shape[1]
    per_state = STATE_BYTES_PER_COLUMN * (K + 3)
    L = np.zeros((1, K))
    b = np.zeros(1)
    s = np.zeros(1)
    mask = np.zeros(1, dtype=np.int64)  # job i is bit n-1-i: larger masks take earlier jobs
    limit = None
    peak = 1
    rate = 0.0  # seconds per state of the last step: a step that cannot end in time is skipped
    try:
        for step, i in enumerate(jobs):
            t0 = time.perf_counter()
            # the step and, after it, the final front scan must both fit in the time left
            budget.check(2 * len(b) * per_state, 4 * len(b) * rate)
            L2 = L + demand[i]
            b2 = b + bb[i]
            ok = (b2 <= free_bb + tol) & (
                (np.cumsum(L2[:, ::-1], axis=1)[:, ::-1] <= suffix_free).all(axis=1))
            grown = (
                np.concatenate([L, L2[ok]]), np.concatenate([b, b2[ok]]),
                np.concatenate([s, s[ok] + model.ssd[i] * model.nodes[i]]) if four else
                np.zeros(len(b) + int(ok.sum())),
                np.concatenate([mask, mask[ok] | (np.int64(1) << np.int64(n - 1 - i))]))
            budget.check(len(grown[1]) * per_state)
            L2, b2, s2, mask2 = grown
            # identical states: keep the one with the largest mask (the canonical tie)
            by_mask = np.argsort(-mask2, kind="stable")
            _, first = np.unique(np.column_stack([L2, b2, s2])[by_mask], axis=0,
                                 return_index=True)
            if len(first) < len(b2):
                first = np.sort(by_mask[first])
                L2, b2, s2, mask2 = L2[first], b2[first], s2[first], mask2[first]
            budget.check(len(b2) * per_state)
            slack = b2 + bb_after[step] <= free_bb + tol
            if slack.any():
                keep = ~_dominated_in_group(L2, b2, s2, slack)
                L2, b2, s2, mask2 = L2[keep], b2[keep], s2[keep], mask2[keep]
            L, b, s, mask = L2, b2, s2, mask2  # the step is complete: commit it
            rate = (time.perf_counter() - t0) / max(len(grown[1]), 1)
            peak = max(peak, len(b))
    except _Stop as stop:
        limit = stop.limit
    # objectives straight from the states; only the non-dominated ones become decisions
    F = np.column_stack([L.sum(axis=1), b] + ([s, s - model._assigned_capacity(L)] if four
                                              else []))
    rows, cut = _front_rows(_merge_round_off(F), budget, mask)
    if cut:
        limit = Termination.TIME_LIMIT
    mask = mask[rows]
    X = ((mask[:, None] >> np.arange(n - 1, -1, -1, dtype=np.int64)) & 1).astype(bool)
    return X, limit, {"states_peak": int(peak), "jobs_used": len(jobs)}


@register("pareto-exact")
class ParetoExact(Solver):
    """Exact Pareto set of bbsched models: bitset DP over node levels (two objectives,
    integer burst buffer) or the state DP with exact dominance pruning."""

    doc = "exact Pareto front (bitset DP over node levels and burst buffer); bbsched models"
    SUPPORTED_MODELS = ("bbsched",)
    REQUIRED_MODULES = ("pymoo",)
    EXACT = True
    OPTIONS = ("algorithm",)

    def version(self) -> str:
        return ""

    @staticmethod
    def pick(model, algorithm: str = "auto") -> str:
        """The algorithm ``auto`` means for ``model``: bitset for two objectives with burst
        buffer in whole units (``bb_units``) and a table under 2^31 bits, else states; over
        ``MAX_JOBS`` jobs (more than the states algorithm takes) bitset whatever its table:
        it checks the memory cap as the table grows and stops there with the front of the
        jobs done (FEASIBLE + MEMORY)."""
        if algorithm != "auto":
            return algorithm
        units = bb_units(model) if model.objectives == 2 else None
        if units is None:
            return "states"
        words = min(units[1], units[0].sum()) // WORD + 1
        rows = min(model.free_nodes + 1, 2 ** min(model.n_items, 40))  # node totals at most
        if words * rows < 2**25 or model.n_items > MAX_JOBS:
            return "bitset"
        return "states"

    def _solve(self, model, opts: SolveOptions) -> Outcome:
        o = dict(opts.solver_options)
        algorithm = o.get("algorithm", "auto")
        if algorithm not in ALGORITHMS:
            raise SolverOptionError(f"pareto-exact: algorithm must be one of {ALGORITHMS}, "
                                    f"got {algorithm!r}")
        max_mb = DEFAULT_MEMORY_MB if opts.max_memory_mb is None else opts.max_memory_mb
        algorithm = self.pick(model, algorithm)
        if algorithm == "bitset" and model.objectives != 2:
            raise SolverOptionError("pareto-exact: algorithm 'bitset' needs the two-objective "
                                    "form; use 'states' (or 'auto')")
        if algorithm == "bitset" and bb_units(model) is None:
            raise SolverOptionError("pareto-exact: algorithm 'bitset' needs burst-buffer "
                                    f"requests with at most {MAX_DECIMALS} decimals; use "
                                    "'states' (or 'auto')")
        left = opts.left()  # the front's certification comes after: it keeps a reserve
        budget = _Budget(None if left is None else left - min(CERTIFY_SHARE * left, 1.0),
                         float(max_mb))
        if algorithm == "bitset":
            try:
                X, limit, info = bitset_front(model, budget)
            except _Stop as stop:  # before the table: only the empty selection is known
                X, limit, info = np.zeros((1, model.n_items), dtype=bool), stop.limit, {}
        else:
            X, limit, info = states_front(model, budget)
        F, _ = model.evaluate_many(X)
        keep = pareto_rows(_merge_round_off(F), np.arange(len(F)))
        return Outcome(limit or Termination.OPTIMAL, pareto=front_points(model, X[keep], F[keep]),
                       extra={"algorithm": algorithm, **info})
