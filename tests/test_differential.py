"""Differential tests: every exact backend against an independent oracle (issue #10).

The oracles (``tests/oracles.py``) recompute optima from the model definitions only.  Inputs
are hypothesis strategies and seeded generators of the real window shapes (zero values and
weights, huge and tiny coefficients, SCAS blocks near the end of Q and wrapping around) and
windows met by simulations of the shared traces (skipped when ``../shared/data`` is absent).
This is the fast tier; ``benchmarks/differential.py`` runs thousands of windows per model.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hpcopt
from hpcopt.models.bbsched import BBSchedModel
from hpcopt.models.knapsack import KnapsackModel
from hpcopt.models.scas import SCASModel
from hpcopt.solvers import get_solver

from .conftest import SHARED_DATA as TEST_DATA
from .conftest import missing_data
from .oracles import (
    BBSCHED_EXACT,
    HOP_RULES,
    KNAPSACK_EXACT,
    LZK23,
    SCAS_EXACT,
    SHARED_DATA,
    SWF,
    bbsched_points,
    bbsched_windows_from_trace,
    block_costs,
    close,
    compare_bbsched,
    compare_knapsack,
    compare_scas,
    hop_cost,
    knapsack_brute,
    knapsack_int_dp,
    knapsack_oracle,
    knapsack_pareto_dp,
    knapsack_windows_from_trace,
    random_bbsched,
    random_knapsack,
    random_scas,
    scas_brute,
    scas_dp,
    scas_dp_work,
    scas_oracle,
    scas_windows_from_trace,
)

CANONICAL = hasattr(KnapsackModel, "canonical_key")  # the tie-break of issue 10 item 5


def _available(name: str) -> bool:
    try:
        return bool(get_solver(name).available())
    except Exception:  # noqa: BLE001 - an unknown family member is simply not here
        return False


def _backends(names):
    return [pytest.param(b, marks=pytest.mark.skipif(not _available(b),
                                                     reason=f"{b} not installed"))
            for b in names]


def _report(checks, limit: int = 3) -> str:
    bad = [c for c in checks if c.mismatch]
    return f"{len(bad)} of {len(checks)} windows disagree: " + "; ".join(
        c.summary() for c in bad[:limit])


SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ------------------------------------------------------------------------ oracle self-checks
@settings(max_examples=60, **SETTINGS)
@given(st.integers(1, 10).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 30), min_size=n, max_size=n),
    st.lists(st.integers(0, 25), min_size=n, max_size=n),
    st.integers(0, 120))))
def test_knapsack_oracles_agree(data):
    """Enumeration, integer DP and Pareto-state DP give one optimum (and one canonical
    decision where two of them define it)."""
    values, weights, cap = data
    brute = knapsack_brute(values, [weights], [cap])
    dp = knapsack_int_dp(values, weights, cap)
    assert brute.value == dp.value == knapsack_pareto_dp(values, [weights], [cap]).value
    assert brute.decision == dp.decision


def test_scas_oracles_agree():
    """Pairwise cost = its numpy form, and brute force = DP, on small windows of both
    presets (blocks wrapping included)."""
    rng = np.random.default_rng(7)
    for rule in HOP_RULES.values():
        Q = np.sort(rng.choice(1000, 37, replace=False))
        for n in (1, 2, 7, 19):
            table = block_costs(rule, Q, n)
            for i in (0, 17, 36):
                nodes = [Q[(i + k) % Q.size] for k in range(n)]
                assert close(table[i], hop_cost(rule, nodes))
    for _ in range(25):
        m = random_scas(rng, max_idle=24)
        if m.n_idle ** m.n_jobs <= 200_000:
            assert close(scas_brute(m), scas_dp(m)), m.to_dict()


def test_hop_cost_by_hand():
    """The two presets' conventions on sets worked out by hand."""
    paper, code = HOP_RULES["paper-1000"], HOP_RULES["hpcschedule-1000"]
    # paper: 10 nodes on one leaf: 90 ordered pairs x 2 hops x 1000 / 10
    assert hop_cost(paper, range(10)) == 18000
    # 0 and 10: other leaf, same pod (4 hops), ordered twice, / 2 nodes
    assert hop_cost(paper, [0, 10]) == 4000
    assert hop_cost(paper, [0, 100]) == 6000  # other pod
    assert hop_cost(paper, [5]) == 0
    # hpcschedule: unordered pairs, hops 1/3/5, floor, at least 1
    assert hop_cost(code, [0, 10]) == 1500  # same rack of 40: 3 hops x 1000 / 2
    assert hop_cost(code, [0, 40]) == 2500
    assert hop_cost(code, [0, 1, 40]) == (1 + 5 + 5) * 1000 // 3
    assert hop_cost(code, [7]) == 1


def test_bbsched_waste_is_least_waste():
    """The oracle's SSD assignment (largest requests first, smallest class first) wastes no
    more than any assignment: checked against a transportation LP on random selections."""
    linprog = pytest.importorskip("scipy.optimize").linprog

    rng = np.random.default_rng(3)
    for _ in range(30):
        m = random_bbsched(rng, max_jobs=6)
        if m.objectives != 4:
            continue
        F, X = bbsched_points(m)
        sizes = [128.0, 256.0]
        counts = [int(m.ssd_classes["128"]), int(m.ssd_classes["256"])]
        for f, x in zip(F, X):
            jobs = np.nonzero(x)[0]
            pairs = [(i, c) for i in jobs for c in range(2) if sizes[c] >= m.ssd[i]]
            if not pairs:
                continue
            A_eq = [[float(p[0] == i) for p in pairs] for i in jobs]
            A_ub = [[float(p[1] == c) for p in pairs] for c in range(2)]
            lp = linprog([sizes[p[1]] for p in pairs], A_ub=A_ub, b_ub=counts, A_eq=A_eq,
                         b_eq=[float(m.nodes[i]) for i in jobs], method="highs")
            assert lp.status == 0
            assert close(f[2] - lp.fun, f[3], 1e-7), (m.to_dict(), x)


# ------------------------------------------------------------------------ known findings
def test_scas_issue10_item1_smallest_case():
    """hpcschedule-1000, Q = [8,16,37,42,57,59], sizes [3, 2]: the optimum is 3500."""
    m = SCASModel("hpcschedule-1000", [8, 16, 37, 42, 57, 59], [3, 2])
    assert scas_brute(m) == scas_dp(m) == 3500


@pytest.mark.parametrize("backend", _backends(SCAS_EXACT))
def test_scas_issue10_item1_regression(backend):
    m = SCASModel("hpcschedule-1000", [8, 16, 37, 42, 57, 59], [3, 2])
    chk = compare_scas(m, backend, "issue 10 item 1")
    assert not chk.mismatch, chk.summary()
    assert chk.status == "OPTIMAL" and chk.objective == 3500


@pytest.mark.parametrize("backend", _backends(KNAPSACK_EXACT))
def test_knapsack_issue10_item2_huge_weight(backend):
    """values [10, 1], weights [1e10, 5], capacity 1e10: the optimum is 10, not 11."""
    m = KnapsackModel([10, 1], [1e10, 5], 1e10)
    assert knapsack_oracle(m).value == 10
    chk = compare_knapsack(m, backend, "issue 10 item 2")
    assert not chk.mismatch, chk.summary()


WRAPPING = [  # windows whose every optimal placement has a block across the end of Q
    ("paper-1000", [45, 46, 47, 48, 50, 51, 53, 61, 65, 71, 75], [1, 3, 6], 58000 / 3),
    ("hpcschedule-1000", [41, 43, 45, 50, 55, 56, 58, 67, 70, 71, 73], [4, 5], 5900),
    ("hpcschedule-1000", [40, 41, 44, 55, 59, 64, 65, 66, 67, 70, 74, 75, 76, 78], [7, 7],
     12857),
]


@pytest.mark.parametrize("backend", _backends(SCAS_EXACT))
def test_scas_optimum_wraps(backend):
    """Blocks that must wrap around Q (found by exhaustive search over all optima)."""
    for preset, idle, sizes, cost in WRAPPING:
        m = SCASModel(preset, idle, sizes)
        assert close(scas_brute(m), cost) and close(scas_dp(m), cost)
        chk = compare_scas(m, backend, "wrap")
        assert not chk.mismatch, chk.summary()
        starts = hpcopt.solve(m, backend).decision
        assert any(s + n > m.n_idle for s, n in zip(starts, m.sizes))


SCAS_CANONICAL = hasattr(__import__("hpcopt.solvers.scas_exact", fromlist=["x"]),
                         "canonical_order")  # detection only; the oracle is our own


@pytest.mark.skipif(not SCAS_CANONICAL, reason="no SCAS tie-break yet")
@pytest.mark.parametrize("backend", _backends(SCAS_EXACT))
def test_scas_canonical_ties(backend):
    """Equal-cost placements (equal job sizes, symmetric idle runs): the canonical one."""
    rng = np.random.default_rng(21)
    cases = [SCASModel("paper-1000", list(range(20)), [10, 10]),
             SCASModel("hpcschedule-1000", list(range(40, 52)), [3, 3, 2]),
             SCASModel("paper-1000", [0, 1, 2, 3, 10, 11, 12, 13], [4, 4])]
    while len(cases) < 12:
        m = random_scas(rng, max_idle=22)
        if m.n_idle ** m.n_jobs <= 20_000:
            cases.append(m)
    for m in cases:
        chk = compare_scas(m, backend, "ties", canonical=True, time_limit=60)
        assert not chk.mismatch, chk.summary() + f" {chk.extra} {m.to_dict()}"


def _canonical_backends():
    out = []
    for b in KNAPSACK_EXACT:
        marks = [pytest.mark.skipif(not _available(b), reason=f"{b} not installed"),
                 pytest.mark.skipif(not CANONICAL, reason="no canonical tie-break yet")]
        out.append(pytest.param(b, marks=marks))
    return out


@pytest.mark.parametrize("backend", _canonical_backends())
def test_knapsack_canonical_tie_break(backend):
    """Three equal jobs, room for one: the canonical decision takes the first."""
    for data in (([36, 36, 36], [36, 36, 36], 70),
                 ([779, 779, 779, 779, 779, 778], [128] * 6, 176),
                 ([4, 4, 4, 16, 16, 8, 5, 4, 64, 16, 10, 10, 4],
                  [4, 4, 4, 16, 16, 8, 5, 4, 64, 16, 10, 10, 4], 73)):
        m = KnapsackModel(*data)
        chk = compare_knapsack(m, backend, "canonical", decisions=True)
        assert not chk.mismatch, chk.summary() + f" canonical {chk.extra.get('canonical')}"


BBSCHED_DOCUMENTS_CANONICAL = "Canonical decision" in (BBSchedModel.__doc__ or "")


@pytest.mark.skipif(not BBSCHED_DOCUMENTS_CANONICAL, reason="no bbsched tie-break yet")
@pytest.mark.parametrize("backend", _backends(BBSCHED_EXACT))
def test_bbsched_canonical_ties(backend):
    """Selections that tie on every objective: each front point takes the earliest jobs."""
    cases = [BBSchedModel([1, 1, 2], [0, 0, 0], free_nodes=2),
             BBSchedModel([3, 2, 1, 3], [5, 0, 5, 5], free_nodes=6, free_bb=10),
             BBSchedModel([2, 2, 2], [0, 0, 0], [128, 128, 100], objectives=4,
                          ssd_classes={"128": 2, "256": 2})]
    for m in cases:
        chk = compare_bbsched(m, backend, "ties", decisions=True)
        assert not chk.mismatch, chk.summary() + f" {chk.extra}"


# ------------------------------------------------------------------------ hypothesis
def _number(kind: str):
    """Coefficients of the corner cases: zeros, tiny decimals, moderate and huge ints."""
    if kind == "int":
        return st.one_of(st.just(0), st.integers(1, 50), st.integers(10**9, 10**12))
    return st.one_of(st.just(0.0), st.integers(1, 10**5).map(lambda k: k / 1000),
                     st.integers(1, 60).map(float))


@st.composite
def knapsack_models(draw):
    n = draw(st.integers(1, 12))
    m = draw(st.integers(1, 2))
    kind = draw(st.sampled_from(["int", "dec"]))
    values = draw(st.lists(_number(kind), min_size=n, max_size=n))
    weights = [draw(st.lists(_number(draw(st.sampled_from(["int", "dec"]))), min_size=n,
                             max_size=n)) for _ in range(m)]
    caps = []
    for row in weights:  # at a subset sum (exact fits), between, zero, or all
        subset = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        exact_fit = sum(w for w, s in zip(row, subset) if s)
        caps.append(draw(st.sampled_from([0, exact_fit, sum(row), exact_fit * 1.5])))
    return KnapsackModel(values, weights, caps)


@pytest.mark.parametrize("backend", _backends(KNAPSACK_EXACT))
@settings(max_examples=40, **SETTINGS)
@given(model=knapsack_models())
def test_knapsack_hypothesis(backend, model):
    chk = compare_knapsack(model, backend, "hypothesis")
    assert not chk.mismatch, chk.summary() + f" {model.to_dict()}"


@st.composite
def bbsched_models(draw):
    n = draw(st.integers(1, 9))
    nodes = draw(st.lists(st.integers(1, 30), min_size=n, max_size=n))
    bb = draw(st.lists(st.one_of(st.just(0.0), st.integers(1, 400).map(float),
                                 st.integers(1, 10**6).map(lambda k: k / 100)),
                       min_size=n, max_size=n))
    free_nodes = draw(st.one_of(st.just(0), st.integers(0, sum(nodes)), st.just(sum(nodes))))
    subset = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    free_bb = draw(st.sampled_from([0.0, sum(b for b, s in zip(bb, subset) if s), sum(bb)]))
    if draw(st.booleans()):
        small = draw(st.integers(0, free_nodes))
        ssd = draw(st.lists(st.sampled_from([0.0, 100.0, 128.0, 200.0, 256.0, 512.0]),
                            min_size=n, max_size=n))
        return BBSchedModel(nodes, bb, ssd, free_bb=free_bb, objectives=draw(
            st.sampled_from([2, 4])), ssd_classes={"128": small, "256": free_nodes - small})
    return BBSchedModel(nodes, bb, free_nodes=free_nodes, free_bb=free_bb)


@pytest.mark.parametrize("backend", _backends(BBSCHED_EXACT))
@settings(max_examples=80, **SETTINGS)
@given(model=bbsched_models())
def test_bbsched_hypothesis(backend, model):
    chk = compare_bbsched(model, backend, "hypothesis")
    assert not chk.mismatch, chk.summary() + f" {chk.extra} {model.to_dict()}"


@st.composite
def scas_models(draw, max_idle: int = 150):
    """2-5 jobs on 20-``max_idle`` idle nodes: runs of idle nodes anywhere (0 and 999
    included), mixed sizes (1 included) filling Q up to completely."""
    preset = draw(st.sampled_from(sorted(HOP_RULES)))
    q = draw(st.integers(20, max_idle))
    runs = draw(st.lists(st.tuples(st.sampled_from([0, 1, 9, 10, 39, 40, 99, 100, 500, 960,
                                                    990, 999]), st.integers(1, 60)),
                         min_size=1, max_size=6))
    pool = {min(a + k, 999) for a, r in runs for k in range(r)}
    pool = sorted(pool | draw(st.sets(st.integers(0, 999), min_size=20, max_size=q)))
    offset = draw(st.integers(0, max(len(pool) - q, 0)))
    idle = pool[offset:offset + q]
    q = len(idle)
    J = draw(st.integers(2, 5))
    sizes = draw(st.lists(st.integers(1, 40), min_size=J, max_size=J))
    while sum(sizes) > q:
        sizes[sizes.index(max(sizes))] -= 1
    sizes = [max(1, s) for s in sizes]
    if draw(st.booleans()) and sum(sizes) < q and sizes[0] + q - sum(sizes) <= 40:
        sizes[0] += q - sum(sizes)  # Q filled exactly: some block must wrap or end at q
    return SCASModel(preset, idle, sizes)


@pytest.mark.parametrize("backend", _backends(("scas-exact",)))
@settings(max_examples=60, **SETTINGS)
@given(model=scas_models())
def test_scas_hypothesis(backend, model):
    chk = compare_scas(model, backend, "hypothesis")
    assert not chk.mismatch, chk.summary() + f" {model.to_dict()}"


@pytest.mark.parametrize("backend", _backends(SCAS_EXACT[1:]))
@settings(max_examples=5, **SETTINGS)
@given(model=scas_models(max_idle=24))
def test_scas_hypothesis_mip(backend, model):
    chk = compare_scas(model, backend, "hypothesis", time_limit=60)
    assert not chk.mismatch, chk.summary() + f" {model.to_dict()}"


# ------------------------------------------------------------------------ seeded generators
@pytest.fixture(scope="session")
def generated_knapsack():
    """Seeded knapsack windows with their oracle answers (computed once)."""
    rng = np.random.default_rng(10)
    models = [random_knapsack(rng) for _ in range(50)]
    return [(m, knapsack_oracle(m)) for m in models]


@pytest.mark.parametrize("backend", _backends(KNAPSACK_EXACT))
def test_knapsack_generated(backend, generated_knapsack):
    cases = generated_knapsack[:20] if backend == "pyomo:appsi_highs" else generated_knapsack
    checks = [compare_knapsack(m, backend, f"generated {k}", oracle=o)
              for k, (m, o) in enumerate(cases)]
    assert not any(c.mismatch for c in checks), _report(checks)


def test_bbsched_generated():
    rng = np.random.default_rng(11)
    checks = [compare_bbsched(random_bbsched(rng), "pareto-exact", f"generated {k}")
              for k in range(150)]
    assert not any(c.mismatch for c in checks), _report(checks)


@pytest.mark.parametrize("backend", _backends(SCAS_EXACT))
def test_scas_generated(backend):
    rng = np.random.default_rng(12)
    mip = backend != "scas-exact"
    models = [random_scas(rng, max_idle=40 if mip else 150) for _ in range(6 if mip else 80)]
    checks = [compare_scas(m, backend, f"generated {k}", time_limit=60)
              for k, m in enumerate(models)]
    assert not any(c.mismatch for c in checks), _report(checks)


# ------------------------------------------------------------------------ simulated windows
def _need_shared(*paths) -> None:
    reason = missing_data(*(str(p.relative_to(SHARED_DATA)) for p in paths))
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="session")
def scas_trace_windows(tmp_path_factory):
    """SCAS windows dumped by ``hpcopt simulate <lzk23> --policy tjap-window --model scas
    --dump-windows`` for both presets (first 400 jobs each), cached for the session.  The run
    places jobs with ``sequential`` to keep this tier fast whatever scas-exact's speed; the
    slow script dumps runs placed by scas-exact."""
    _need_shared(LZK23)
    return {preset: scas_windows_from_trace(preset, 400, tmp_path_factory.mktemp(preset),
                                            backend="sequential")
            for preset in HOP_RULES}


@pytest.fixture(scope="session")
def knapsack_trace_windows():
    """Knapsack windows of ``--policy knapsack`` on KTH-SP2 (value nodes), Theta 2022
    (value wait) and KTH-SP2 with S2 burst buffers (two resources)."""
    _need_shared(SWF["KTH"], SWF["Theta"])
    return {"KTH/nodes": knapsack_windows_from_trace("KTH", 1500)[:120],
            "Theta/wait": knapsack_windows_from_trace("Theta", 1500, value="wait")[:80],
            "KTH-S2/nodes+bb": knapsack_windows_from_trace("KTH", 1000, workload="S2")[:80]}


@pytest.fixture(scope="session")
def bbsched_trace_windows():
    """BBSched windows of the bbsched policy on Theta 2022 (S2 burst buffers, two
    objectives) and KTH-SP2 (S6, SSD classes, four objectives), cut to 14 jobs."""
    _need_shared(SWF["KTH"], SWF["Theta"])
    return {"Theta-S2": bbsched_windows_from_trace("Theta", 1500, "S2")[::4][:80],
            "KTH-S6": bbsched_windows_from_trace("KTH", 1200, "S6")[::4][:80]}


@pytest.mark.parametrize("backend", _backends(KNAPSACK_EXACT))
def test_knapsack_trace_values(backend, knapsack_trace_windows):
    """Optimal values (and own feasibility) on simulated windows."""
    checks = []
    for source, models in knapsack_trace_windows.items():
        if backend == "pyomo:appsi_highs":
            models = models[:25]
        for k, m in enumerate(models):
            checks.append(compare_knapsack(m, backend, f"{source} #{k}", decisions=False))
    assert checks and not any(c.mismatch for c in checks), _report(checks)


@pytest.mark.parametrize("backend", _canonical_backends())
def test_knapsack_trace_decisions(backend, knapsack_trace_windows):
    """The canonical decision on the integer-valued simulated windows."""
    checks = []
    for source, models in knapsack_trace_windows.items():
        if source.endswith("wait"):  # float values: ties only up to round-off
            continue
        for k, m in enumerate(models[:40]):
            checks.append(compare_knapsack(m, backend, f"{source} #{k}", decisions=True))
    assert checks and not any(c.mismatch for c in checks), _report(checks)


@pytest.mark.parametrize("backend", _backends(BBSCHED_EXACT))
def test_bbsched_trace(backend, bbsched_trace_windows):
    checks = [compare_bbsched(m, backend, f"{source} #{k}")
              for source, models in bbsched_trace_windows.items()
              for k, m in enumerate(models)]
    assert checks and not any(c.mismatch for c in checks), _report(checks)


@pytest.mark.parametrize("backend", _backends(SCAS_EXACT))
def test_scas_trace(backend, scas_trace_windows):
    """Every dumped window the DP oracle handles quickly; MIP backends on the small ones."""
    checks = []
    for preset, models in scas_trace_windows.items():
        pick = [m for m in models if scas_dp_work(m) <= 400_000]
        if backend != "scas-exact":
            pick = [m for m in pick if m.n_idle <= 40 and m.n_jobs >= 2][:6]
        for k, m in enumerate(pick):
            checks.append(compare_scas(m, backend, f"{preset} #{k}", time_limit=60))
    assert checks and not any(c.mismatch for c in checks), _report(checks)


def test_scas_trace_windows_reach_corners(scas_trace_windows):
    """The dumped windows hold the shapes the issue names: several mixed sizes, and jobs
    that fill (nearly) all of Q, so blocks must end at or wrap around the end of Q."""
    models = [m for ms in scas_trace_windows.values() for m in ms]
    assert any(m.n_jobs >= 3 and len(set(m.sizes.tolist())) >= 3 for m in models)
    assert any(m.n_jobs >= 2 and m.sizes.sum() >= 0.9 * m.n_idle for m in models)


def test_shared_data_location():
    """The oracle module reads the data directory the tests read (HPCOPT_DATA, else
    ../shared/data beside the checkout as CI lays it out, else the per-user one)."""
    assert SHARED_DATA == TEST_DATA
    assert list(itertools.islice(SWF, 1)) == ["KTH"]
    assert scas_oracle(SCASModel("paper-1000", range(20), [10, 10]))[0] == 36000
