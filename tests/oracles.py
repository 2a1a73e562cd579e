"""Independent oracles for differential testing of the exact backends (issue #10).

Each oracle recomputes an optimum from the model's *definition* (the papers and the model
docstrings), never through ``evaluate``, ``interval_costs``, the topology cost functions or
any solver, so a bug shared by a model helper and a backend cannot hide:

- knapsack: depth-first enumeration of every feasible subset (n <= 16), an integer-capacity
  DP (one integer resource row) or a DP over non-dominated (load, value) states (any data);
  exact arithmetic (ints, decimal ``Fraction`` s); the canonical decision (lexicographically
  greatest optimal 0-1 vector with no item worth <= 0) where it is defined exactly;
- bbsched: all 2^n selections enumerated (numpy), own node / burst-buffer / SSD-class checks
  and least-waste SSD assignment, own non-dominated filter;
- scas: own pairwise communication-hop cost (Lan et al. Eq. 1, or the hpcschedule code's
  convention), brute force over all placements for small windows and a DP over positions of
  the cyclic idle sequence (blocks may wrap) for bigger ones.

``compare_*`` solve a model with one backend and return a ``Check`` row; the tests and
``benchmarks/differential.py`` share them, and the window sources below.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np

from hpcopt.datadir import data_root

REPO = Path(__file__).resolve().parents[1]
# the data directory in force (HPCOPT_DATA, else ../shared/data beside the checkout, else the
# per-user one; hpcopt.datadir)
SHARED_DATA = data_root()
LZK23 = SHARED_DATA / "topology_alloc" / "lzk23_hpcschedule" / "data_large_1800_40.txt.gz"
SWF = {
    "KTH": SHARED_DATA / "hpc_swf" / "pwa" / "KTH-SP2-1996-2.1-cln.swf.gz",
    "HPC2N": SHARED_DATA / "hpc_swf" / "pwa_subsets" / "HPC2N-2002-2.2-alea-subset.swf.gz",
    "Theta": SHARED_DATA / "hpc_swf" / "alcf" / "theta_2022.swf.gz",
}
REL_TOL = 1e-9  # objective values are compared up to this relative round-off

KNAPSACK_EXACT = ("dp", "ortools", "cpsat", "scip", "pyomo:appsi_highs")
BBSCHED_EXACT = ("pareto-exact",)
SCAS_EXACT = ("scas-exact", "cpsat", "scip", "pyomo:appsi_highs")


def exact(x):
    """``x`` as an exact number: an int when integral, else the decimal it prints as."""
    x = float(x)
    if x.is_integer():
        return int(x)
    return Fraction(repr(x))


def close(a: float, b: float, tol: float = REL_TOL) -> bool:
    return abs(float(a) - float(b)) <= tol * max(1.0, abs(float(a)), abs(float(b)))


# ------------------------------------------------------------------------------- knapsack
@dataclass(frozen=True)
class KnapsackOptimum:
    """Optimal value and, when exactly defined, the canonical optimal decision."""

    value: object  # int or Fraction
    decision: tuple | None
    method: str


def _fits(load, caps) -> bool:
    return all(a <= b for a, b in zip(load, caps))


def knapsack_brute(values, weights, caps) -> KnapsackOptimum:
    """Every feasible subset, depth first with the 'take' branch first (so 0-1 vectors come
    in decreasing lexicographic order and the first best one is the canonical one)."""
    n = len(values)
    best = [0, (0,) * n]
    x = [0] * n

    def dfs(i, load, val):
        if i == n:
            if val > best[0]:
                best[0], best[1] = val, tuple(x)
            return
        if values[i] > 0:
            new = [a + w[i] for a, w in zip(load, weights)]
            if _fits(new, caps):
                x[i] = 1
                dfs(i + 1, new, val + values[i])
                x[i] = 0
        dfs(i + 1, load, val)

    dfs(0, [0] * len(caps), 0)
    return KnapsackOptimum(best[0], best[1], "brute")


def knapsack_int_dp(values, weights, cap: int) -> KnapsackOptimum:
    """One integer resource row: suffix table best[i][c] over capacities 0..cap, then a
    forward walk that takes every item it can without losing optimality (canonical)."""
    n = len(values)
    best = [[0] * (cap + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        nxt, row, w, v = best[i + 1], best[i], weights[i], values[i]
        for c in range(cap + 1):
            row[c] = nxt[c]
            if v > 0 and w <= c and nxt[c - w] + v > row[c]:
                row[c] = nxt[c - w] + v
    x, c = [], cap
    for i in range(n):
        w, v = weights[i], values[i]
        if v > 0 and w <= c and best[i + 1][c - w] + v == best[i][c]:
            x.append(1)
            c -= w
        else:
            x.append(0)
    return KnapsackOptimum(best[0][cap], tuple(x), "int-dp")


def knapsack_pareto_dp(values, weights, caps) -> KnapsackOptimum:
    """Any data: states (load vector, value) of the items seen so far, dominated states
    (no smaller load anywhere and no larger value) dropped.  Value only."""
    m = len(caps)
    states = {(0,) * m: 0}
    for i, v in enumerate(values):
        if v <= 0:
            continue
        grown = dict(states)
        for load, val in states.items():
            new = tuple(a + w[i] for a, w in zip(load, weights))
            if _fits(new, caps) and grown.get(new, -1) < val + v:
                grown[new] = val + v
        ranked = sorted(grown.items(), key=lambda kv: (-kv[1], kv[0]))
        kept: list = []
        for load, val in ranked:  # by value, best first: dominated if an earlier one fits in
            if not any(all(a <= b for a, b in zip(k, load)) for k, _ in kept):
                kept.append((load, val))
        states = dict(kept)
    return KnapsackOptimum(max(states.values()), None, "pareto-dp")


def knapsack_oracle(model) -> KnapsackOptimum:
    """Optimum of a ``KnapsackModel`` from its raw data (values, weights, capacities)."""
    values = [exact(v) for v in model.values]
    weights = [[exact(a) for a in row] for row in model.weights]
    caps = [exact(c) for c in model.capacities]
    n = len(values)
    if n <= 16:
        return knapsack_brute(values, weights, caps)
    if len(caps) == 1 and all(isinstance(a, int) for a in weights[0]):
        cap = min(math.floor(caps[0]), sum(weights[0]))
        if cap * n <= 2_000_000:
            return knapsack_int_dp(values, weights[0], int(cap))
    return knapsack_pareto_dp(values, weights, caps)


def knapsack_decision_ok(model, x) -> tuple[bool, object]:
    """Own certificate of a 0-1 decision: (fits every row exactly, exact value)."""
    values = [exact(v) for v in model.values]
    load = [sum(exact(a) for a, xi in zip(row, x) if xi) for row in model.weights]
    ok = _fits(load, [exact(c) for c in model.capacities])
    return ok, sum(v for v, xi in zip(values, x) if xi)


# ------------------------------------------------------------------------------- bbsched
ELIGIBLE_TOL = 1e-9  # an SSD request within this relative amount of a class size fits it


def bbsched_points(model, max_jobs: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """Objective rows and their 0-1 rows of every feasible selection (all 2^n enumerated).

    Semantics (the model docstring and Fan et al. section 5): nodes and burst buffer are
    capacity rows; SSD classes are nested, and the selected jobs are assigned in decreasing
    SSD request, each on its smallest eligible classes first -- a selection is feasible when
    this assignment places every node (for nested classes it fails only when no assignment
    exists); wasted SSD is assigned minus requested GB.  Without SSD classes all free nodes
    have no SSD, so a job asking for any is never feasible.
    """
    n = model.n_items
    if n > max_jobs:
        raise ValueError(f"bbsched oracle enumerates 2^n selections; n={n} > {max_jobs}")
    nodes = np.asarray(model.nodes, dtype=np.int64)
    bb = np.asarray(model.bb, dtype=float)
    ssd = np.asarray(model.ssd, dtype=float)
    if model.ssd_classes:
        pairs = sorted((float(k), int(c)) for k, c in dict(model.ssd_classes).items())
    else:
        pairs = [(0.0, int(model.free_nodes))]
    sizes = np.array([p[0] for p in pairs])
    counts = np.array([p[1] for p in pairs], dtype=np.int64)
    X = ((np.arange(2**n, dtype=np.int64)[:, None] >> np.arange(n)) & 1).astype(bool)
    used = X.astype(np.int64) @ nodes
    bbsum = X.astype(float) @ bb
    ok = (used <= model.free_nodes) & (bbsum <= model.free_bb + 1e-9 * max(1.0, model.free_bb))
    rem = np.tile(counts, (len(X), 1))
    assigned = np.zeros(len(X))
    for i in sorted(range(n), key=lambda i: (-ssd[i], i)):
        need = np.where(X[:, i], nodes[i], 0)
        for c in range(len(sizes)):
            if sizes[c] < ssd[i] * (1 - ELIGIBLE_TOL):
                continue
            take = np.minimum(need, rem[:, c])
            rem[:, c] -= take
            need = need - take
            assigned += take * sizes[c]
        ok &= need == 0
    requested = X.astype(float) @ (ssd * nodes)
    if model.objectives == 2:
        F = np.column_stack([used.astype(float), bbsum])
    else:
        F = np.column_stack([used.astype(float), bbsum, requested, requested - assigned])
    return F[ok], X[ok]


def nondominated(F: np.ndarray) -> np.ndarray:
    """Distinct non-dominated rows of ``F`` (all objectives maximized), sorted descending."""
    F = np.unique(F, axis=0)[::-1]  # lexicographically descending
    front: list[np.ndarray] = []
    for row in F:  # no later row can dominate an earlier one except by ties (removed)
        if front:
            P = np.array(front)
            if ((P >= row).all(axis=1) & (P > row).any(axis=1)).any():
                continue
        front.append(row)
    return np.array(front).reshape(-1, F.shape[1])


def bbsched_front(model) -> np.ndarray:
    """The exact Pareto front (objective rows) of a ``BBSchedModel``."""
    F, _ = bbsched_points(model)
    return nondominated(F)


def bbsched_oracle(model) -> tuple[np.ndarray, dict]:
    """The front and, per front point (objectives rounded to 6 decimals), its canonical
    decision: the lexicographically greatest feasible 0-1 vector in window order reaching
    exactly that objective vector (the model docstring's tie-break)."""
    F, X = bbsched_points(model)
    front = nondominated(F)
    n = X.shape[1]
    codes = X.astype(np.int64) @ (np.int64(1) << np.arange(n - 1, -1, -1, dtype=np.int64))
    keys = np.round(F, 6)
    canonical = {}
    for row in np.round(front, 6):
        best = int(codes[(keys == row).all(axis=1)].max())
        canonical[tuple(row.tolist())] = tuple((best >> (n - 1 - i)) & 1 for i in range(n))
    return front, canonical


def bbsched_exact_data(model) -> bool:
    """Whether ties are exact: burst buffer and SSD requests in multiples of 0.001."""
    vals = np.concatenate([np.asarray(model.bb, float), np.asarray(model.ssd, float)]) * 1000
    return bool((np.abs(vals - np.round(vals)) < 1e-6).all())


def same_rows(A: np.ndarray, B: np.ndarray) -> bool:
    """Whether two sets of objective rows agree up to round-off."""
    A = np.unique(np.round(np.asarray(A, dtype=float), 6), axis=0)
    B = np.unique(np.round(np.asarray(B, dtype=float), 6), axis=0)
    return A.shape == B.shape and np.allclose(A, B, rtol=1e-9, atol=1e-6)


# ------------------------------------------------------------------------------- scas
@dataclass(frozen=True)
class HopRule:
    """How a preset counts a node set's communication hops (re-derived from its docs)."""

    per_leaf: int
    per_pod: int
    hops: tuple[int, int, int]  # same leaf, same pod, other
    ordered: bool  # paper: ordered pairs i != k; hpcschedule code: unordered pairs
    floor: bool  # hpcschedule code: max(floor(cost), 1)
    c: int = 1000


# paper-1000: radix-20 fat-tree pruned to 10 pods: 10 nodes per leaf, 10 leaves per pod.
# hpcschedule-1000: leaf = id // 10, rack = id // 40.
HOP_RULES = {
    "paper-1000": HopRule(10, 100, (2, 4, 6), ordered=True, floor=False),
    "hpcschedule-1000": HopRule(10, 40, (1, 3, 5), ordered=False, floor=True),
}


def hop_cost(rule: HopRule, nodes) -> float:
    """Cost of one job's node set, pair by pair: c / n * sum of hops over the pairs."""
    nodes = [int(v) for v in nodes]
    n = len(nodes)
    total = 0
    for a in range(n):
        for b in range(n):
            if a == b or (not rule.ordered and b < a):
                continue
            u, v = nodes[a], nodes[b]
            if u // rule.per_leaf == v // rule.per_leaf:
                total += rule.hops[0]
            elif u // rule.per_pod == v // rule.per_pod:
                total += rule.hops[1]
            else:
                total += rule.hops[2]
    if rule.floor:
        return float(max(rule.c * total // n, 1))
    return rule.c * total / n


def block_costs(rule: HopRule, Q, n: int) -> np.ndarray:
    """``out[i]`` = cost of the n consecutive nodes of cyclic Q from position i (numpy form
    of ``hop_cost``: the same pairwise sum over an (n, n) hop matrix per start)."""
    Q = np.asarray(Q, dtype=np.int64)
    q = Q.size
    ids = Q[(np.arange(q)[:, None] + np.arange(n)[None, :]) % q]
    leaf, pod = ids // rule.per_leaf, ids // rule.per_pod
    h = np.where(leaf[:, :, None] == leaf[:, None, :], rule.hops[0],
                 np.where(pod[:, :, None] == pod[:, None, :], rule.hops[1], rule.hops[2]))
    h[:, np.arange(n), np.arange(n)] = 0
    total = h.sum(axis=(1, 2))
    if not rule.ordered:
        total //= 2
    if rule.floor:
        return np.maximum(rule.c * total // n, 1).astype(float)
    return rule.c * total / n


def scas_rule(model) -> HopRule:
    name = model.topology.name
    if name not in HOP_RULES:
        raise ValueError(f"scas oracle knows the presets {sorted(HOP_RULES)}, not {name!r}")
    return HOP_RULES[name]


def scas_decision_cost(model, starts) -> tuple[bool, float]:
    """Own certificate of a SCAS decision: (blocks in range and disjoint, total cost)."""
    rule, Q = scas_rule(model), [int(v) for v in model.idle_nodes]
    q, taken, cost = len(Q), set(), 0.0
    for s, n in zip(starts, model.sizes):
        if not 0 <= int(s) < q:
            return False, math.nan
        nodes = [Q[(int(s) + k) % q] for k in range(int(n))]
        if taken & set(nodes):
            return False, math.nan
        taken |= set(nodes)
        cost += hop_cost(rule, nodes)
    return True, cost


def scas_brute(model, limit: int = 300_000) -> float:
    """Minimum over every tuple of first positions whose blocks are disjoint."""
    Q, sizes = np.asarray(model.idle_nodes), [int(n) for n in model.sizes]
    q = Q.size
    if q ** len(sizes) > limit:
        raise ValueError(f"{q}^{len(sizes)} placements > {limit}")
    rule = scas_rule(model)
    table = {n: block_costs(rule, Q, n) for n in set(sizes)}
    spans = {n: [frozenset((i + k) % q for k in range(n)) for i in range(q)] for n in set(sizes)}
    best = math.inf
    for starts in itertools.product(range(q), repeat=len(sizes)):
        used: set = set()
        cost = 0.0
        for s, n in zip(starts, sizes):
            span = spans[n][s]
            if used & span:
                break
            used |= span
            cost += table[n][s]
        else:
            best = min(best, cost)
    return best


def scas_canonical_brute(model, limit: int = 20_000) -> tuple[Fraction, tuple]:
    """Exact optimum (``Fraction``) and canonical decision of a small window: among the
    optimal placements the one whose blocks, as (first position, size) sorted by position,
    are smallest; jobs of one size take their blocks in window order (the tie-break
    scas-exact documents)."""
    Q, sizes = [int(v) for v in model.idle_nodes], [int(n) for n in model.sizes]
    q, rule = len(Q), scas_rule(model)
    if q ** len(sizes) > limit:
        raise ValueError(f"{q}^{len(sizes)} placements > {limit}")

    def exact_cost(nodes):
        n, total = len(nodes), 0
        for a in range(n):
            for b in range(a + 1, n):
                u, v = nodes[a], nodes[b]
                total += (rule.hops[0] if u // rule.per_leaf == v // rule.per_leaf else
                          rule.hops[1] if u // rule.per_pod == v // rule.per_pod else
                          rule.hops[2])
        if rule.ordered:
            return Fraction(rule.c * 2 * total, n)
        return Fraction(max(rule.c * total // n, 1))

    table = {(s, n): exact_cost([Q[(s + k) % q] for k in range(n)])
             for n in set(sizes) for s in range(q)}
    best, key = None, None
    for starts in itertools.product(range(q), repeat=len(sizes)):
        spans = [{(s + k) % q for k in range(n)} for s, n in zip(starts, sizes)]
        if sum(map(len, spans)) != len(set().union(*spans)):
            continue
        cost = sum(table[(s, n)] for s, n in zip(starts, sizes))
        blocks = sorted(zip(starts, sizes))
        if best is None or cost < best or (cost == best and blocks < key):
            best, key = cost, blocks
    decision = [0] * len(sizes)
    for n in set(sizes):
        firsts = [s for s, m in key if m == n]
        for j, s in zip([j for j, m in enumerate(sizes) if m == n], firsts):
            decision[j] = s
    return best, tuple(decision)


def scas_dp_work(model) -> int:
    """Rough size of the DP (positions x head lengths x count states)."""
    _, mult = np.unique(np.asarray(model.sizes), return_counts=True)
    return model.n_idle * int(np.max(model.sizes)) * int(np.prod(mult + 1))


def scas_dp(model) -> float:
    """Minimum total cost by a DP over positions of Q, jobs grouped by size (counts state).

    A placement either has no block crossing the end of Q, or exactly one block (size s,
    start p0 = q - s + e) that covers the last s - e and the first e positions.  Row e of
    the DP runs over the linear stretch [e, q) with e head positions reserved: f[p][e][S] is
    the least cost of placing the jobs counted by S inside [e, p).  Row 0 at p = q answers
    the no-wrap case; row e >= 1 read at p0 plus the wrapping block answers the rest.
    """
    Q, sizes = np.asarray(model.idle_nodes), np.asarray(model.sizes, dtype=np.int64)
    q = Q.size
    rule = scas_rule(model)
    kinds, mult = np.unique(sizes, return_counts=True)
    kinds = [int(k) for k in kinds]
    strides = np.cumprod(np.concatenate([[1], mult[:-1] + 1])).astype(np.int64)
    n_states = int(np.prod(mult + 1))
    full = int((mult * strides).sum())
    state = np.arange(n_states)
    digit = [(state // strides[k]) % (mult[k] + 1) for k in range(len(kinds))]
    src = [state[digit[k] < mult[k]] for k in range(len(kinds))]  # can take one more size k
    cost = {n: block_costs(rule, Q, n) for n in kinds}
    E = max(kinds)  # head lengths 0 .. E-1
    inf = math.inf
    hist: dict[int, np.ndarray] = {}
    keep = E + 1
    best = inf
    for p in range(q + 1):
        f = np.full((E, n_states), inf)
        if p < E:
            f[p, 0] = 0.0  # row e starts at position e with nothing placed
        if p - 1 in hist:
            f = np.minimum(f, hist[p - 1])  # position p - 1 left free
        for k, n in enumerate(kinds):
            start = p - n
            if start >= 0 and start in hist:  # a block of size n on [start, p)
                prev = hist[start]
                cand = prev[:, src[k]] + cost[n][start]
                dst = src[k] + strides[k]
                f[:, dst] = np.minimum(f[:, dst], cand)
        hist[p] = f
        hist.pop(p - keep, None)
        if p == q:
            best = min(best, f[0, full])
        for k, n in enumerate(kinds):  # wrapping block of size n starting at p = q - n + e
            e = p - (q - n)
            if 1 <= e < n and e < E:
                best = min(best, f[e, full - strides[k]] + cost[n][p])
    return float(best)


def scas_oracle(model) -> tuple[float, str]:
    """Optimal SCAS cost and the method used (brute force when small, else the DP)."""
    if model.n_idle ** model.n_jobs <= 20_000:
        return scas_brute(model), "brute"
    return scas_dp(model), "dp"


# ------------------------------------------------------------------------------- comparing
@dataclass
class Check:
    """One backend on one window, judged against the oracle."""

    model: str
    backend: str
    source: str
    status: str = ""
    objective: float | None = None
    oracle: float | None = None
    seconds: float = 0.0
    mismatch: bool = False
    optimal_but_worse: bool = False
    better_than_oracle: bool = False
    decision_differs: bool = False
    refused: bool = False  # a clean ModelError: the backend does not take this data
    error: str = ""
    excess: float = 0.0
    extra: dict = field(default_factory=dict)

    def summary(self) -> str:
        return (f"{self.model}/{self.backend} on {self.source}: status {self.status}, "
                f"objective {self.objective}, oracle {self.oracle}, error {self.error!r}, "
                f"decision differs {self.decision_differs}")


def _failed(chk: Check, err: Exception) -> None:
    """Record a backend exception: a ``ModelError`` is a documented refusal of the data
    (e.g. integer-only backends on fractional values); anything else is a mismatch."""
    from hpcopt.errors import ModelError

    chk.error = f"{type(err).__name__}: {err}"
    if isinstance(err, ModelError):
        chk.refused = True
    else:
        chk.mismatch = True


def _solve(model, backend: str, time_limit: float | None):
    import hpcopt

    t0 = time.perf_counter()
    res = hpcopt.solve(model, backend, time_limit=time_limit)
    return res, time.perf_counter() - t0


def _judge(chk: Check, res, oracle: float, sense: str) -> None:
    chk.status = res.status.value
    chk.objective = res.objective
    chk.oracle = float(oracle)
    if res.objective is None:
        chk.mismatch = res.status.value == "OPTIMAL"
        return
    gap = (oracle - res.objective) if sense == "max" else (res.objective - oracle)
    if close(res.objective, oracle):
        return
    chk.excess = gap / max(abs(float(oracle)), 1e-12)
    if gap < 0:
        chk.better_than_oracle = chk.mismatch = True
    elif res.status.value == "OPTIMAL":
        chk.optimal_but_worse = chk.mismatch = True


def compare_knapsack(model, backend: str, source: str = "", *, time_limit: float | None = None,
                     oracle: KnapsackOptimum | None = None,
                     decisions: bool | None = None) -> Check:
    """Backend vs oracle on a knapsack model: value, own feasibility of the decision, and
    the canonical decision (when the model defines one, values are integers and the oracle
    knows it; ``decisions`` forces it on or off)."""
    chk = Check("knapsack", backend, source)
    oracle = oracle or knapsack_oracle(model)
    try:
        res, chk.seconds = _solve(model, backend, time_limit)
    except Exception as err:  # noqa: BLE001 - a backend failure is a finding, not a crash
        _failed(chk, err)
        chk.oracle = float(oracle.value)
        return chk
    _judge(chk, res, oracle.value, "max")
    if res.decision is not None:
        ok, value = knapsack_decision_ok(model, res.decision)
        if not ok or not close(value, res.objective):
            chk.mismatch, chk.error = True, "decision violates the capacities (own check)"
    if decisions is None:
        decisions = (hasattr(model, "canonical_key")
                     and all(float(v).is_integer() for v in model.values))
    if (decisions and oracle.decision is not None and res.status.value == "OPTIMAL"
            and tuple(res.decision) != tuple(oracle.decision)):
        chk.decision_differs = chk.mismatch = True
        chk.extra["canonical"] = oracle.decision
    return chk


def compare_bbsched(model, backend: str = "pareto-exact", source: str = "", *,
                    time_limit: float | None = None, front: np.ndarray | None = None,
                    canonical: dict | None = None, decisions: bool | None = None) -> Check:
    """Backend's Pareto set vs the enumerated front (as sets of objective vectors) and, when
    the model documents the canonical tie-break and ties are exact, each point's decision."""
    chk = Check("bbsched", backend, source)
    if front is None or canonical is None:
        front, canonical = bbsched_oracle(model)
    chk.oracle = float(len(front))
    try:
        res, chk.seconds = _solve(model, backend, time_limit)
    except Exception as err:  # noqa: BLE001
        _failed(chk, err)
        return chk
    chk.status = res.status.value
    got = np.array([p.objectives for p in (res.pareto or ())], dtype=float)
    got = got.reshape(-1, front.shape[1])
    chk.objective = float(len(got))
    if decisions is None:
        from hpcopt.models.bbsched import BBSchedModel

        decisions = ("Canonical decision" in (BBSchedModel.__doc__ or "")
                     and bbsched_exact_data(model))
    if same_rows(got, front):
        if decisions and res.status.value == "OPTIMAL":
            for p in res.pareto:
                want = canonical.get(tuple(np.round(p.objectives, 6).tolist()))
                if want is not None and tuple(p.decision) != want:
                    chk.decision_differs = chk.mismatch = True
                    chk.extra["canonical"] = (p.objectives, want, tuple(p.decision))
                    break
        return chk
    chk.mismatch = True
    missing = [r for r in front if not (np.abs(got - r) <= 1e-6 * np.maximum(1, abs(r))).all(
        axis=1).any()] if len(got) else list(front)
    dominated = [r for r in got if ((front >= r - 1e-9).all(axis=1)
                                    & (front > r + 1e-9).any(axis=1)).any()]
    chk.excess = len(missing) / max(len(front), 1)
    chk.extra.update(missing=len(missing), dominated=len(dominated))
    if len(got) and not dominated and len(missing) < len(front):
        infeasible = [r for r in got if not (np.abs(front - r) <= 1e-6).all(axis=1).any()]
        chk.better_than_oracle = bool(infeasible)
    if res.status.value == "OPTIMAL" and (missing or dominated):
        chk.optimal_but_worse = True
    return chk


def compare_scas(model, backend: str, source: str = "", *, time_limit: float | None = None,
                 oracle: float | None = None, canonical: bool = False) -> Check:
    """Backend's cost vs the oracle's; the decision is re-costed with the own cost.  With
    ``canonical`` an OPTIMAL decision on a brute-force-size window must be the canonical
    one (``scas_canonical_brute``)."""
    chk = Check("scas", backend, source)
    if oracle is None:
        oracle, _ = scas_oracle(model)
    try:
        res, chk.seconds = _solve(model, backend, time_limit)
    except Exception as err:  # noqa: BLE001
        _failed(chk, err)
        chk.oracle = oracle
        return chk
    _judge(chk, res, oracle, "min")
    if res.decision is not None:
        ok, cost = scas_decision_cost(model, res.decision)
        if not ok or not close(cost, res.objective):
            chk.mismatch, chk.error = True, f"own cost of the decision {cost} (feasible {ok})"
    if (canonical and res.status.value == "OPTIMAL" and res.decision is not None
            and model.n_idle ** model.n_jobs <= 20_000):
        _, want = scas_canonical_brute(model)
        if tuple(res.decision) != want:
            chk.decision_differs = chk.mismatch = True
            chk.extra["canonical"] = want
    return chk


# ------------------------------------------------------------------------------- windows
def scas_windows_from_trace(preset: str, n_jobs: int, out_dir: Path, *,
                            backend: str | None = None) -> list:
    """SCAS windows of a tjap-window simulation of the lzk23 job file, dumped as instance
    files by ``hpcopt simulate ... --dump-windows`` (run in-process) and read back.
    ``backend`` places the jobs during the run (default: the model's, scas-exact)."""
    from hpcopt.instances import load_instance

    out_dir = Path(out_dir)
    if not any(out_dir.glob("*.json")):
        argv = ["simulate", str(LZK23), "--topology", preset, "--policy", "tjap-window",
                "--tau", "60", "--model", "scas", "--jobs", str(n_jobs),
                "--dump-windows", str(out_dir), "--no-progress"]
        if backend:
            argv += ["--backend", backend]
        import contextlib
        import io

        from hpcopt.cli import main

        with contextlib.redirect_stdout(io.StringIO()):
            rc = main(argv)
        if rc:
            raise RuntimeError(f"hpcopt {' '.join(argv)} exited {rc}")
    return [load_instance(p).model for p in sorted(out_dir.glob("*.json"))]


class _RecordingSolver:
    """Wraps a policy's solver: keeps every model it is asked to solve."""

    def __init__(self, solver, models: list) -> None:
        self._solver, self.models = solver, models

    def solve(self, model, **kw):
        self.models.append(model)
        return self._solver.solve(model, **kw)


def knapsack_windows_from_trace(trace: str, n_jobs: int, *, value: str = "nodes",
                                workload: str | None = None, seed: int = 0) -> list:
    """Knapsack window models met by ``hpcopt simulate <swf> --policy knapsack`` (the
    policy's own solver is wrapped to record each model it solves).  ``workload`` (e.g.
    ``S2``) adds the BBSched paper's burst-buffer requests: two-resource windows."""
    import hpcopt
    from hpcopt.policies.knapsack import KnapsackPolicy

    policy = KnapsackPolicy(value=value)
    models: list = []
    policy._solver = _RecordingSolver(policy._solver, models)
    tr = hpcopt.load_trace(SWF[trace], max_jobs=n_jobs)
    if workload is None:
        hpcopt.simulate(tr, policy=policy)
    else:
        from hpcopt.workloads.burst_buffer import bb_system, make_workload

        system = bb_system(tr.system.nodes)
        hpcopt.simulate(make_workload(tr.jobs, workload, system=system, seed=seed),
                        system=system, policy=policy)
    return models


def bbsched_windows_from_trace(trace: str, n_jobs: int, workload: str, *, seed: int = 0,
                               min_jobs: int = 4, max_jobs: int = 14) -> list:
    """BBSched windows met by the bbsched policy on ``trace`` with a generated workload
    (S1-S4 burst buffer: two objectives; S5-S7 also SSD classes: four objectives), as
    ``benchmarks/bbsched_solvers.py`` cuts them; each cut to its first ``max_jobs`` jobs
    so that enumeration stays cheap."""
    import hpcopt
    from hpcopt.models.bbsched import BBSchedModel
    from hpcopt.policies.multi_resource import BBSchedPolicy, window_model
    from hpcopt.workloads.burst_buffer import bb_system, make_workload

    models: list = []

    class Recorder(BBSchedPolicy):
        def decide(self, window):
            if len(window.jobs) >= min_jobs:
                models.append(window_model(window, window.jobs))
            return super().decide(window)

    tr = hpcopt.load_trace(SWF[trace], max_jobs=n_jobs)
    system = bb_system(tr.system.nodes, ssd=workload in ("S5", "S6", "S7"))
    jobs = make_workload(tr.jobs, workload, system=system, seed=seed)
    hpcopt.simulate(jobs, system=system, policy=Recorder())
    out = []
    for m in models:
        w = min(m.n_items, max_jobs)
        classes = ({f"{s:g}": int(c) for s, c in zip(m.class_sizes, m.class_free)}
                   if m.ssd_classes else None)
        out.append(BBSchedModel(m.nodes[:w], m.bb[:w], m.ssd[:w], free_nodes=m.free_nodes,
                                free_bb=m.free_bb, ssd_classes=classes,
                                objectives=m.objectives, ids=m.ids[:w], capacity=m.capacity))
    return out


# seeded numpy generators of the real shapes (the hypothesis strategies are in the tests)
def random_knapsack(rng: np.random.Generator):
    """A knapsack window: 1-24 items, 1-2 resources, mixed scales (tiny to 1e10), zero
    values and weights, capacities from 0 to above the total (over 16 items: one integer
    row of moderate weights, the integer DP's domain)."""
    from hpcopt.models.knapsack import KnapsackModel

    n = int(rng.integers(1, 25))
    m = int(rng.integers(1, 3)) if n <= 16 else 1  # bigger ones: the integer DP's shape
    scale = float(10 ** rng.choice([0, 0, 1, 3, 6, 10])) if n <= 16 else 1.0
    values = rng.integers(0, 100, n) * (scale if rng.random() < 0.3 else 1.0)
    if rng.random() < 0.3:
        values = np.round(values * rng.random(n), 3)
    weights = rng.integers(0, 60, (m, n)).astype(float)
    if rng.random() < 0.3:
        weights[0] *= scale
    if rng.random() < 0.2 and n <= 16:
        weights[-1] = np.round(weights[-1] * rng.random(n), 2)
    caps = np.floor(weights.sum(1) * rng.choice([0.0, 0.2, 0.5, 0.8, 1.2], m))
    return KnapsackModel(values.tolist(), weights.tolist(), caps.tolist())


def random_bbsched(rng: np.random.Generator, max_jobs: int = 12):
    """A bbsched window: 1-12 jobs, two or four objectives, SSD classes, exact fits."""
    from hpcopt.models.bbsched import BBSchedModel

    n = int(rng.integers(1, max_jobs + 1))
    nodes = rng.integers(1, 40, n)
    bb = rng.integers(0, 300, n) * (rng.random(n) < 0.7)
    four = rng.random() < 0.5
    free_nodes = int(rng.integers(0, nodes.sum() + 5))
    free_bb = float(rng.choice([0, bb.sum() // 3, bb.sum() // 2, bb.sum() + 1]))
    if four:
        small = int(rng.integers(0, free_nodes + 1))
        classes = {"128": small, "256": free_nodes - small}
        ssd = rng.choice([0, 64, 128, 200, 256, 300], n)
        return BBSchedModel(nodes.tolist(), bb.tolist(), ssd.tolist(), free_bb=free_bb,
                            ssd_classes=classes, objectives=4)
    return BBSchedModel(nodes.tolist(), bb.tolist(), free_nodes=free_nodes, free_bb=free_bb)


def random_scas(rng: np.random.Generator, *, max_idle: int = 150):
    """A SCAS window of the real shape: 2-5 jobs of mixed sizes on 20-``max_idle`` idle
    nodes spread over the machine (runs of busy nodes, idle tails near 999 and 0), filling
    50-100% of Q (a quarter of them exactly) so blocks crowd the end of Q and wrap."""
    from hpcopt.models.scas import SCASModel

    preset = str(rng.choice(list(HOP_RULES)))
    q = int(rng.integers(20, max_idle + 1))
    if rng.random() < 0.5:  # a few long runs, as left by finished jobs
        starts = rng.choice(np.arange(0, 1000, 5), 6, replace=False)
        pool = np.unique(np.concatenate([np.arange(s, min(s + 60, 1000)) for s in starts]))
        idle = np.sort(rng.choice(pool, min(q, pool.size), replace=False))
    else:
        idle = np.sort(rng.choice(1000, q, replace=False))
    q = idle.size
    J = int(rng.integers(2, 6))
    fill = rng.uniform(0.5, 1.0)
    sizes = np.maximum(1, rng.dirichlet(np.ones(J)) * fill * q).astype(int)
    sizes = np.minimum(sizes, 40)
    while sizes.sum() > q:
        sizes[np.argmax(sizes)] -= 1
    if rng.random() < 0.25 and q <= 40 * J:  # Q filled exactly: every placement a rotation
        while sizes.sum() < q:
            sizes[np.argmin(sizes)] += 1
    return SCASModel(preset, idle.tolist(), sizes.tolist())
