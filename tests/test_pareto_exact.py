"""pareto-exact against an independent brute force (issue #10, items 2-4).

The oracle below enumerates every selection and computes feasibility and objectives from the
model's definition with its own code (integer sums in int64, non-integer burst buffer with
the documented round-off rule, SSD classes filled largest request first, each on its smallest
eligible classes), never through ``BBSchedModel.evaluate*`` or the backend.  Windows: cut
from the recorded ALCF Theta 2022 queue (the jobs queued at a moment by the SWF wait times,
front first, S1-S4 / S5 requests, random free nodes and burst buffer), random ones of the same
shapes, and hypothesis corner cases (no burst buffer, exact fills, huge and tiny sizes).
"""

from __future__ import annotations

import gzip
import time
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcopt.errors import ModelError, SolverOptionError
from hpcopt.models.bbsched import BBSchedModel
from hpcopt.result import Limit, Status
from hpcopt.solvers import solve

from .conftest import shared_file

THETA = "hpc_swf/alcf/theta_2022.swf.gz"


# -- the oracle -----------------------------------------------------------------------------
def oracle_points(model) -> tuple[np.ndarray, np.ndarray]:
    """Objective rows and 0-1 rows of every feasible selection (2^n, n <= 16)."""
    n = model.n_items
    assert n <= 16
    X = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
    nodes = np.array([int(v) for v in model.nodes], dtype=np.int64)
    used = X @ nodes
    bb = np.array(model.bb, dtype=float)
    if np.all(bb == np.floor(bb)) and bb.sum() < 2**53:
        bsum = X @ bb.astype(np.int64)
        ok = bsum <= model.free_bb  # exact: integers against the float capacity
    else:
        bsum = X @ bb
        pos = bb[bb > 0]
        slack = min(1e-9 * max(1.0, model.free_bb), 0.5 * pos.min())
        ok = bsum <= model.free_bb + slack
    ok &= used <= model.free_nodes
    ssd = np.array(model.ssd, dtype=float)
    if model.ssd_classes:
        classes = sorted((float(k), int(v)) for k, v in model.ssd_classes.items())
    else:
        classes = [(0.0, model.free_nodes)]
    left = np.array([[c for _, c in classes]] * len(X), dtype=np.int64)
    given_gb = np.zeros(len(X))
    for i in sorted(range(n), key=lambda i: -ssd[i]):
        need = X[:, i] * nodes[i]
        for c, (size, _) in enumerate(classes):
            if size >= ssd[i]:
                got = np.minimum(need, left[:, c])
                left[:, c] -= got
                need = need - got
                given_gb += got * size
        ok &= need == 0
    asked = X @ (ssd * nodes)
    cols = [used, bsum] + ([asked, asked - given_gb] if model.objectives == 4 else [])
    F = np.column_stack(cols).astype(float)
    return F[ok], X[ok]


def snap(F: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Objective rows rounded to 1e-10 of each column's scale: sums of the same floats in
    another order are one value."""
    q = 1e-10 * np.maximum(scale, 1e-300)
    return np.round(F / q) * q


def oracle_front(model, F: np.ndarray | None = None) -> np.ndarray:
    """Distinct non-dominated objective rows, sorted descending (all maximized)."""
    F = oracle_points(model)[0] if F is None else F
    F = np.unique(snap(F, np.abs(F).max(axis=0)), axis=0)[::-1]
    front = np.empty((0, F.shape[1]))
    for row in F:  # a row can only be dominated by one before it in this order
        if not ((front >= row).all(axis=1) & (front > row).any(axis=1)).any():
            front = np.vstack([front, row])
    return front


def check_exact(model, **solver_options) -> None:
    """pareto-exact's front equals the oracle's; every decision is feasible by the oracle and
    has the objectives reported."""
    res = solve(model, "pareto-exact", solver_options=solver_options or None)
    assert res.status == Status.OPTIMAL and res.limit is None
    F, X = oracle_points(model)
    want = oracle_front(model, F)
    got = np.array([p.objectives for p in res.pareto], dtype=float).reshape(-1, F.shape[1])
    got = snap(got, np.abs(F).max(axis=0))
    got = got[np.lexsort(got.T[::-1])[::-1]]
    assert got.shape == want.shape and np.allclose(got, want, rtol=1e-9)
    rows = {tuple(x): tuple(f) for x, f in zip(X.tolist(), F.tolist())}
    for p in res.pareto:
        assert tuple(p.decision) in rows  # feasible by the oracle
        assert np.allclose(rows[tuple(p.decision)], p.objectives, rtol=1e-12)


# -- windows of the recorded Theta queue -------------------------------------------------------
@lru_cache(maxsize=1)
def theta_jobs(n_jobs: int = 4000):
    """The first jobs of Theta 2022 with their recorded submit, wait and run times."""
    path = shared_file(THETA)
    rows = []
    with gzip.open(path, "rt") as fh:
        for line in fh:
            if line.strip() and not line.startswith(";"):
                f = line.split()
                rows.append((float(f[1]), float(f[2]), float(f[3]), int(f[4])))
                if len(rows) == n_jobs:
                    break
    return np.array(rows)


def theta_windows(count: int, w: int, seed: int, four: bool = False) -> list:
    """``count`` windows of the first ``w`` jobs queued at random moments of the recorded
    Theta queue; burst buffer of the S1-S4 kind (integer GB, 50-75% of the jobs), random free
    nodes and burst buffer; with ``four`` also SSD requests and half 128 / half 256 GB nodes."""
    rec = theta_jobs()
    sub, wait, run, nodes = rec.T
    rng = np.random.default_rng(seed)
    out = []
    for t in rng.choice(sub[wait > 0], 400, replace=False):
        queued = np.flatnonzero((sub <= t) & (sub + wait > t))
        if len(queued) < w:
            continue
        q = queued[np.argsort(sub[queued], kind="stable")][:w]
        bb = np.where(rng.random(w) < rng.choice([0.5, 0.75]),
                      np.ceil(rng.uniform(250, 8000, w)), 0.0)
        free = int(rng.integers(128, 4361))
        kw = {}
        if four:
            ssd = np.where(rng.random(w) < 0.5, rng.integers(0, 129, w), rng.integers(129, 257, w))
            kw = dict(ssd=ssd, ssd_classes={128: free // 2, 256: free - free // 2},
                      objectives=4)
        else:
            kw = dict(free_nodes=free)
        out.append(BBSchedModel(nodes[q].astype(int), bb, free_bb=float(rng.uniform(0, 21800)),
                                **kw))
        if len(out) == count:
            break
    return out


@pytest.mark.parametrize("seed", range(3))
def test_exact_front_on_recorded_theta_windows(seed):
    for model in theta_windows(6, 14, seed):
        check_exact(model)
        check_exact(model, algorithm="states")


def test_exact_four_objective_front_on_recorded_theta_windows():
    for model in theta_windows(4, 11, 7, four=True):
        check_exact(model)


def test_bitset_and_states_agree_on_full_theta_windows():
    """W = 50 windows of the recorded queue with the free nodes small enough for the old
    algorithm to finish quickly: the same front."""
    checked = 0
    for model in theta_windows(12, 50, 3):
        if model.free_nodes > 1500:
            continue
        a = solve(model, "pareto-exact")
        b = solve(model, "pareto-exact", solver_options={"algorithm": "states"})
        assert a.extra["algorithm"] == "bitset" and b.status == a.status == Status.OPTIMAL
        assert [p.objectives for p in a.pareto] == [p.objectives for p in b.pareto]
        checked += 1
    assert checked >= 2


# -- random windows of the real shapes and corner cases ------------------------------------
def random_window(rng, n: int, four: bool):
    sizes = rng.choice([1, 2, 4, 8, 16, 128, 256, 512, 802, 1024], n)
    bb = np.where(rng.random(n) < 0.6, rng.integers(1, 5000, n), 0)
    free = int(rng.integers(0, sizes.sum() + 1))
    free_bb = float(rng.integers(0, bb.sum() + 2))
    if not four:
        return BBSchedModel(sizes, bb, free_nodes=free, free_bb=free_bb)
    ssd = rng.choice([0, 64, 128, 200, 256, 300], n)
    k = int(rng.integers(0, free + 1))
    classes = {64: k // 2, 128: k - k // 2, 256: free - k} if rng.random() < 0.5 else \
        {128: k, 256: free - k}
    return BBSchedModel(sizes, bb, ssd, free_bb=free_bb, ssd_classes=classes, objectives=4)


@pytest.mark.parametrize("seed", range(8))
def test_exact_front_on_random_windows(seed):
    rng = np.random.default_rng(seed)
    for _ in range(3):
        check_exact(random_window(rng, int(rng.integers(1, 15)), False))
    check_exact(random_window(rng, int(rng.integers(1, 10)), True))
    model = random_window(rng, 9, True)  # two objectives with SSD classes (Hall only)
    check_exact(BBSchedModel(model.nodes, model.bb, model.ssd, free_bb=model.free_bb,
                             ssd_classes=model.ssd_classes))


@st.composite
def corner_windows(draw):
    """Windows that reach the edges: no burst buffer at all, capacities a subset fills
    exactly, zero capacities, huge (1e12) and tiny (1e-6) requests, float requests."""
    n = draw(st.integers(1, 12))
    nodes = draw(st.lists(st.integers(1, 64), min_size=n, max_size=n))
    kind = draw(st.sampled_from(["none", "int", "huge", "tiny", "float"]))
    if kind == "none":
        bb = [0] * n
    else:
        scale = {"int": 1, "huge": 10**12, "tiny": 1e-6, "float": 0.37}[kind]
        bb = [draw(st.integers(0, 40)) * scale for _ in range(n)]
    fill = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    how = draw(st.sampled_from(["fill", "zero", "all", "random"]))
    if how == "fill":  # a subset fills both capacities exactly
        free, free_bb = sum(a for a, f in zip(nodes, fill) if f), sum(
            b for b, f in zip(bb, fill) if f)
    elif how == "zero":
        free, free_bb = draw(st.integers(0, 10)), 0
    elif how == "all":
        free, free_bb = sum(nodes), sum(bb)
    else:
        free, free_bb = draw(st.integers(0, sum(nodes))), draw(st.floats(0, float(sum(bb))))
    if draw(st.booleans()):
        return BBSchedModel(nodes, bb, free_nodes=int(free), free_bb=float(free_bb))
    ssd = [draw(st.sampled_from([0, 100, 128, 256])) for _ in range(n)]
    big = draw(st.integers(0, int(free)))
    return BBSchedModel(nodes, bb, ssd, free_bb=float(free_bb),
                        ssd_classes={128: int(free) - big, 256: big},
                        objectives=draw(st.sampled_from([2, 4])))


@settings(derandomize=True, deadline=None, max_examples=100)
@given(corner_windows())
def test_exact_front_on_corner_cases(model):
    check_exact(model)


def test_decimal_burst_buffer_counts_in_units_unless_the_boundary_is_ambiguous():
    """Requests with <= 3 decimals (like the Kopanski workload's) go to the bitset algorithm in
    units of 10^-d GB; a capacity whose round-off boundary falls within 1e-6 unit of a whole
    unit (0.1 + 0.2 against 0.3) goes to the states algorithm."""
    rng = np.random.default_rng(4)
    for _ in range(6):
        n = 12
        model = BBSchedModel(rng.integers(1, 9, n), np.round(rng.uniform(0, 30, n), 3),
                             free_nodes=int(rng.integers(5, 40)),
                             free_bb=float(np.round(rng.uniform(0, 150), 3)))
        assert solve(model, "pareto-exact").extra["algorithm"] == "bitset"
        check_exact(model)
    tricky = BBSchedModel([1, 1, 1], [0.1, 0.2, 0.25], free_nodes=3, free_bb=0.3)
    assert solve(tricky, "pareto-exact").extra["algorithm"] == "states"
    check_exact(tricky)


def test_exactly_filling_jobs_and_an_overrun_by_one_small_job():
    """A job that would overrun a huge capacity by its 5 GB is never selected with the one
    that fills it."""
    model = BBSchedModel([1, 1], [10**10, 5], free_nodes=2, free_bb=1e10)
    res = solve(model, "pareto-exact")
    assert [p.objectives for p in res.pareto] == [(1.0, 1e10)]
    check_exact(model)
    check_exact(BBSchedModel([3, 1], [1e10 + 0.5, 0.25], free_nodes=4, free_bb=1e10 + 0.5))


# -- limits and options ----------------------------------------------------------------------
def hard_window(seed: int = 0, n: int = 50) -> BBSchedModel:
    """Theta-like sizes and S2-like burst buffer on most of the machine: millions of states
    for the states algorithm."""
    rng = np.random.default_rng(seed)
    nodes = rng.choice([128, 192, 256, 384, 512, 600, 625, 702, 768, 800, 808, 1024], n)
    bb = np.where(rng.random(n) < 0.75, np.ceil(rng.uniform(200, 9000, n)), 0)
    return BBSchedModel(nodes, bb, free_nodes=3715, free_bb=18611.5)


def test_bitset_proves_a_hard_window_and_lifts_the_job_limit():
    """(Its time is a benchmark, not a test: benchmarks/bbsched_solvers.py --recorded.)"""
    model = hard_window()
    res = solve(model, "pareto-exact")
    assert res.status == Status.OPTIMAL and res.extra["algorithm"] == "bitset"
    half = BBSchedModel(model.nodes[:30], model.bb[:30], free_nodes=3715, free_bb=18611.5)
    old = solve(half, "pareto-exact", solver_options={"algorithm": "states"})
    assert [p.objectives for p in old.pareto] == [
        p.objectives for p in solve(half, "pareto-exact").pareto]
    big = BBSchedModel(list(model.nodes) * 2, list(model.bb) * 2, free_nodes=2000, free_bb=5000)
    assert solve(big, "pareto-exact").status == Status.OPTIMAL  # 100 jobs


@pytest.mark.parametrize("algorithm", ["states", "bitset"])
def test_time_limit_returns_the_front_so_far(algorithm):
    model = hard_window(1, 62)
    limit = 0.3 if algorithm == "states" else 0.001
    t0 = time.perf_counter()
    res = solve(model, "pareto-exact", time_limit=limit,
                solver_options={"algorithm": algorithm})
    assert time.perf_counter() - t0 < limit + 0.5
    assert res.status == Status.FEASIBLE and res.limit == Limit.TIME and res.certified
    assert res.pareto and all(p.objectives[0] <= model.free_nodes for p in res.pareto)


@pytest.mark.parametrize("algorithm", ["states", "bitset"])
def test_memory_cap_returns_a_clean_result(algorithm):
    model = hard_window(2)
    res = solve(model, "pareto-exact", solver_options={"algorithm": algorithm,
                                                       "max_memory_mb": 0.05})
    assert res.status == Status.FEASIBLE and res.limit == Limit.MEMORY and res.certified


def test_options_are_checked_and_states_keep_their_job_limit():
    model = hard_window(0, 10)
    with pytest.raises(SolverOptionError, match="algorithm must be"):
        solve(model, "pareto-exact", solver_options={"algorithm": "fast"})
    with pytest.raises(SolverOptionError, match="max_memory_mb"):
        solve(model, "pareto-exact", solver_options={"max_memory_mb": 0})
    with pytest.raises(SolverOptionError, match="unknown solver option"):
        solve(model, "pareto-exact", solver_options={"max_states": 10})
    floats = BBSchedModel([1, 2], [0.5, 1 / 3], free_nodes=3, free_bb=1.0)
    with pytest.raises(SolverOptionError, match="at most 3 decimals"):
        solve(floats, "pareto-exact", solver_options={"algorithm": "bitset"})
    assert solve(floats, "pareto-exact").extra["algorithm"] == "states"
    four = BBSchedModel([1] * 63, ssd=[0] * 63, ssd_classes={128: 10}, objectives=4)
    with pytest.raises(ModelError, match="at most 62"):
        solve(four, "pareto-exact")


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10, 30))
def test_exact_front_on_many_recorded_theta_windows(seed):
    for model in theta_windows(10, 14, seed):
        check_exact(model)
    for model in theta_windows(4, 11, seed, four=True):
        check_exact(model)


@pytest.mark.slow
@pytest.mark.parametrize("workload", ["S2", "S4", "S6"])
def test_exact_front_on_windows_the_simulated_policy_meets(workload):
    """Windows the bbsched policy meets when it schedules the first Theta jobs (as
    benchmarks/bbsched_solvers.py cuts them), each cut to its first 14 jobs (11 with SSD)."""
    import hpcopt
    from hpcopt.policies.multi_resource import BBSchedPolicy, window_model
    from hpcopt.workloads.burst_buffer import bb_system, make_workload

    seen = []

    class Recorder(BBSchedPolicy):
        def decide(self, window):
            if len(window.jobs) >= 4:
                seen.append(window_model(window, window.jobs))
            return super().decide(window)

    trace = hpcopt.load_trace(shared_file(THETA), max_jobs=1500)
    system = bb_system(trace.system.nodes, ssd=workload == "S6")
    hpcopt.simulate(make_workload(trace.jobs, workload, system=system, seed=0), system=system,
                    policy=Recorder())
    assert seen
    for m in seen[:: max(1, len(seen) // 25)]:
        w = min(m.n_items, 11 if m.objectives == 4 else 14)
        classes = dict(zip(m.class_sizes.tolist(), m.class_free.tolist())) \
            if m.ssd_classes else None
        check_exact(BBSchedModel(m.nodes[:w], m.bb[:w], m.ssd[:w], free_nodes=m.free_nodes,
                                 free_bb=m.free_bb, ssd_classes=classes,
                                 objectives=m.objectives))


# -- the canonical decision of each front point (issue #10 item 5) --------------------------
def oracle_canonical(model) -> tuple[dict, dict]:
    """Objective row (snapped: equal sums in any order are one row) -> the lexicographically
    greatest feasible 0-1 tuple (window order) with that row, and -> how many selections have
    it; over all 2^n selections (n <= 14)."""
    assert model.n_items <= 14
    F, X = oracle_points(model)
    best: dict = {}
    count: dict = {}
    for f, x in zip(map(tuple, snap(F, np.abs(F).max(axis=0)).tolist()), map(tuple, X.tolist())):
        count[f] = count.get(f, 0) + 1
        if f not in best or x > best[f]:
            best[f] = x
    return best, count


def check_canonical(model, algorithm: str) -> int:
    """Every front point of ``algorithm`` carries the oracle's canonical decision; returns how
    many front points had more than one selection (ties)."""
    res = solve(model, "pareto-exact", solver_options={"algorithm": algorithm})
    assert res.status == Status.OPTIMAL and res.extra["algorithm"] == algorithm
    want, count = oracle_canonical(model)
    F, _ = oracle_points(model)
    got = snap(np.array([p.objectives for p in res.pareto]), np.abs(F).max(axis=0))
    for p, f in zip(res.pareto, map(tuple, got.tolist())):
        assert tuple(p.decision) == want[f], (algorithm, p.objectives)
    return sum(count[f] > 1 for f in map(tuple, got.tolist()))


def tie_window(rng, n: int, kind: str) -> BBSchedModel:
    """Windows full of ties: identical jobs, zero burst buffer, few distinct sizes."""
    if kind == "identical":
        nodes, bb = np.full(n, int(rng.integers(1, 5))), np.full(n, int(rng.integers(0, 4)))
    elif kind == "zero_bb":
        nodes = rng.choice([1, 2, 3], n)
        bb = np.where(rng.random(n) < 0.7, 0, rng.choice([1, 2], n))
    else:
        nodes, bb = rng.choice([1, 2, 4], n), rng.choice([0, 1, 2, 3], n)
    free = int(rng.integers(0, nodes.sum() + 1))
    free_bb = float(rng.integers(0, bb.sum() + 2))
    if rng.random() < 0.5:
        return BBSchedModel(nodes, bb, free_nodes=free, free_bb=free_bb)
    ssd = rng.choice([0, 100, 200], n)
    k = int(rng.integers(0, free + 1))
    return BBSchedModel(nodes, bb, ssd, free_bb=free_bb, ssd_classes={128: k, 256: free - k},
                        objectives=int(rng.choice([2, 4])))


@pytest.mark.parametrize("kind", ["identical", "zero_bb", "few_sizes"])
def test_every_algorithm_returns_the_canonical_decision(kind):
    rng = np.random.default_rng(["identical", "zero_bb", "few_sizes"].index(kind))
    ties = 0
    for _ in range(12):
        model = tie_window(rng, int(rng.integers(2, 15)), kind)
        for algorithm in ("bitset", "states") if model.objectives == 2 else ("states",):
            ties += check_canonical(model, algorithm)
    assert ties >= 5  # the windows do exercise the tie-break


def test_canonical_decision_on_recorded_theta_windows_and_decimal_burst_buffer():
    for model in theta_windows(4, 14, 5):
        check_canonical(model, "bitset")
        check_canonical(model, "states")
    for model in theta_windows(2, 11, 6, four=True):
        check_canonical(model, "states")
    model = BBSchedModel([1, 1, 2, 1, 1], [0.1, 0.2, 0.3, 0.3, 0.0], free_nodes=3,
                         free_bb=0.35)  # 0.1 + 0.2 ties 0.3 in units, not in floats
    assert check_canonical(model, "bitset") >= 1
    check_canonical(model, "states")


def test_canonical_decision_with_a_time_limit_stop_is_feasible():
    """A stopped bitset run rebuilds its points over the jobs it processed (the last ones)."""
    res = solve(hard_window(3), "pareto-exact", time_limit=0.001)
    assert res.certified and res.pareto


@pytest.mark.parametrize("ssd", [False, True])
def test_bbsched_policy_schedule_is_the_same_with_either_algorithm(ssd):
    """Few job shapes (many ties in every window): the same jobs.csv from bitset and states."""
    import hpcopt
    from hpcopt.domain import Job, System

    rng = np.random.default_rng(11)
    jobs, t = [], 0.0
    for i in range(300):
        t += float(rng.exponential(30))
        run = float(rng.integers(20, 600))
        jobs.append(Job(id=i, submit=t, runtime=run, walltime=run * 1.5,
                        nodes=int(rng.choice([1, 2, 4])), bb=float(rng.choice([0, 0, 10, 20])),
                        ssd=float(rng.choice([0, 200])) if ssd else 0.0))
    system = System(nodes=16, bb=60.0, ssd_classes={128: 8, 256: 8} if ssd else {})
    out = {}
    for algorithm in ("bitset", "states"):
        res = hpcopt.simulate(jobs, system=system, policy="bbsched", objectives=2,
                              solver_options={"algorithm": algorithm})
        out[algorithm] = res.jobs.to_csv(index=False)
    assert out["bitset"] == out["states"]
