"""BBSched heuristics (issue #10, items 7 and 8): NSGA-II enumerates tiny windows instead of
starving in pymoo's duplicate elimination; the seeded GA is no worse than the paper's GA
against an independent brute-force front; the paper variant answers as it did before."""

from __future__ import annotations

import numpy as np
import pytest

from hpcopt.errors import SolverOptionError
from hpcopt.instances import load_instance
from hpcopt.models.bbsched import BBSchedModel
from hpcopt.result import Status
from hpcopt.solvers import solve
from hpcopt.solvers.bbsched_ga import decode

from .conftest import INSTANCES


def real_shape_window(seed: int, n: int, objectives: int = 2) -> BBSchedModel:
    """A window shaped like Theta's: jobs of 128-2,175 nodes, 75% with 0.2-9 TB of burst
    buffer, 1,200-4,360 free nodes and 2-21.8 TB free burst buffer."""
    rng = np.random.default_rng(seed)
    nodes = (rng.choice([128, 256, 384, 512, 1024, 2048], n)
             + rng.integers(0, 2, n) * rng.integers(1, 128, n))
    bb = np.where(rng.random(n) < 0.75, rng.integers(200, 9000, n), 0)
    ssd = rng.integers(0, 257, n) if objectives == 4 else None
    free = int(rng.integers(1200, 4360))
    classes = {"128": free // 2, "256": free - free // 2} if objectives == 4 else None
    return BBSchedModel(nodes, bb, ssd, free_nodes=free,
                        free_bb=float(rng.integers(2000, 21800)), ssd_classes=classes,
                        objectives=objectives)


def brute_front(nodes, bb, free_nodes, free_bb) -> np.ndarray:
    """The exact (nodes, bb) front by enumerating all 2^n selections, written apart from the
    model: sums by bit masks, feasibility by direct comparison, then a sweep by nodes."""
    n = len(nodes)
    codes = np.arange(2**n, dtype=np.int64)
    bits = (codes[:, None] >> np.arange(n)) & 1
    used, gb = bits @ np.asarray(nodes, float), bits @ np.asarray(bb, float)
    ok = (used <= free_nodes) & (gb <= free_bb)
    pts = np.unique(np.stack([used[ok], gb[ok]], axis=1), axis=0)[::-1]  # nodes descending
    front, best = [], -1.0
    for u, b in pts:  # equal nodes: larger bb first, so only it can pass
        if b > best:
            front.append((u, b))
            best = b
    return np.array(front)


def gd(front: np.ndarray, got, scale) -> float:
    """Mean distance from each found point to the nearest front point (scaled objectives)."""
    got = np.array([p.objectives for p in got]) / scale
    ref = front / scale
    return float(np.mean(np.min(np.linalg.norm(got[:, None] - ref[None], axis=2), axis=1)))


def test_nsga2_enumerates_the_table1_window():
    model = load_instance(INSTANCES / "bbsched" / "table1.json").model
    res = solve(model, "nsga2", seed=0)
    assert res.status == Status.FEASIBLE and res.certified  # a heuristic never says OPTIMAL
    assert res.extra["enumerated"] and res.n_evals == 2**5
    assert [p.objectives for p in res.pareto] == [(100, 20000), (80, 90000)]
    assert solve(model, "nsga2", seed=None).pareto == res.pareto


def test_nsga2_searches_when_the_space_exceeds_budget_and_cap():
    model = real_shape_window(5, 14)
    res = solve(model, "nsga2", seed=1, solver_options={"generations": 5, "population": 10})
    assert "enumerated" not in res.extra and res.n_evals <= 60
    small = solve(real_shape_window(5, 12), "nsga2", seed=1,
                  solver_options={"generations": 5, "population": 10})
    assert small.extra["enumerated"] and small.n_evals == 2**12


@pytest.mark.parametrize("seed", range(4))
def test_decode_gives_feasible_maximal_rows(seed):
    model = real_shape_window(seed, 20)
    rng = np.random.default_rng(seed)
    X = rng.random((30, 20)) < 0.5
    out = decode(model, X, rng, fill=True)
    assert model.feasible_many(out).all()
    for row in out:  # maximal: no other job fits beside the selection
        for j in np.flatnonzero(~row):
            more = row.copy()
            more[j] = True
            assert not model.feasible_many(more[None])[0]
    kept = decode(model, X, rng, fill=False)
    assert model.feasible_many(kept).all() and not (kept & ~X).any()


def test_seeded_ga_is_no_worse_than_the_papers_against_brute_force():
    worse, gd_paper, gd_seeded = [], [], []
    for seed in range(6):
        model = real_shape_window(100 + seed, 12 + seed % 3)
        front = brute_front(model.nodes, model.bb, model.free_nodes, model.free_bb)
        scale = np.array([model.free_nodes, model.free_bb])
        paper = solve(model, "bbsched-ga", seed=seed, solver_options={"variant": "paper"})
        seeded = solve(model, "bbsched-ga", seed=seed)
        assert seeded.status == Status.FEASIBLE and seeded.certified
        assert seeded.extra["variant"] == "seeded" and paper.extra["variant"] == "paper"
        gd_paper.append(gd(front, paper.pareto, scale))
        gd_seeded.append(gd(front, seeded.pareto, scale))
        worse += [seed] if gd_seeded[-1] > gd_paper[-1] + 1e-12 else []
    assert not worse, (gd_paper, gd_seeded)
    assert np.mean(gd_seeded) <= 0.005 < np.mean(gd_paper)


def test_seeded_ga_is_deterministic_and_runs_unseeded():
    model = real_shape_window(3, 20)
    a = solve(model, "bbsched-ga", seed=11, solver_options={"generations": 50})
    b = solve(model, "bbsched-ga", seed=11, solver_options={"generations": 50})
    assert a.pareto == b.pareto and a.decision == b.decision
    c = solve(model, "bbsched-ga", seed=None, solver_options={"generations": 50})
    assert c.status == Status.FEASIBLE and c.certified
    four = real_shape_window(3, 10, objectives=4)
    d = solve(four, "bbsched-ga", seed=2, solver_options={"generations": 50})
    assert d.certified and all(len(p.objectives) == 4 for p in d.pareto)
    with pytest.raises(SolverOptionError, match="variant"):
        solve(model, "bbsched-ga", solver_options={"variant": "fast"})
    with pytest.raises(SolverOptionError, match="fill"):
        solve(model, "bbsched-ga", solver_options={"fill": "yes"})


# The paper variant's answers, captured with the GA as it was before the seeded variant
# (commit a4f7af0, default options then = the paper's GA): (window seed, n, objectives,
# options) -> [(decision bits, objectives), ...].
PAPER_ANSWERS = [
    ((0, 12, 2, {}), [("100100000000", (2360, 11216)), ("000110000100", (1749, 11523))]),
    ((1, 14, 2, {}), [("10101000000010", (1808, 13523))]),
    ((2, 14, 2, {"fill": True}), [("01111010000000", (1436, 9095)),
                                  ("01110001100000", (1267, 14605))]),
    ((4, 20, 2, {}), [("11000000000000000000", (3162, 11589))]),
    ((3, 10, 4, {}), [
        ("0111100101", (1724, 14391, 229174, -99402)),
        ("0111100100", (1596, 14391, 222390, -89802)),
        ("0111000101", (1468, 12516, 189238, -73802)),
        ("0111000100", (1340, 12516, 182454, -64202)),
        ("0101100100", (1227, 12038, 198405, -66555)),
        ("0110000101", (1212, 8169, 183350, -46922)),
        ("0101000101", (1099, 10163, 165253, -50555)),
        ("0100100101", (1099, 7691, 199301, -49275)),
        ("0110000100", (1084, 8169, 176566, -37322)),
        ("0111100000", (1009, 13924, 82097, -79823)),
        ("0101000100", (971, 10163, 158469, -40955)),
        ("0100100100", (971, 7691, 192517, -39675)),
        ("0111000001", (881, 12049, 48945, -63823)),
        ("0100000101", (843, 5816, 159365, -23675)),
        ("0100000100", (715, 5816, 152581, -14075)),
        ("0101100000", (640, 11571, 58112, -56576)),
        ("0110000001", (625, 7702, 43057, -36943)),
        ("0110000000", (497, 7702, 36273, -27343)),
        ("0101000000", (384, 9696, 18176, -30976)),
        ("0100000001", (256, 5349, 19072, -13696))
]),
]


@pytest.mark.parametrize("case, expected", PAPER_ANSWERS)
def test_paper_variant_answers_as_before(case, expected):
    seed, n, objectives, options = case
    model = real_shape_window(seed, n, objectives)
    res = solve(model, "bbsched-ga", seed=seed, solver_options={"variant": "paper", **options})
    got = [("".join(str(v) for v in p.decision), p.objectives) for p in res.pareto]
    assert got == expected and res.n_evals == 10020


def test_paper_variant_on_table1_as_before():
    model = BBSchedModel([80, 10, 40, 10, 20], [20, 85, 5, 0, 0], free_nodes=100, free_bb=100)
    paper = solve(model, "bbsched-ga", seed=3, solver_options={"variant": "paper"})
    assert [(p.decision, p.objectives) for p in paper.pareto] == [
        ((1, 0, 0, 0, 1), (100, 20)), ((0, 1, 0, 1, 1), (40, 85))]
    seeded = solve(model, "bbsched-ga", seed=3)  # the default reaches the exact front
    assert [p.objectives for p in seeded.pareto] == [(100, 20), (80, 90)]


@pytest.mark.slow
def test_seeded_ga_meets_the_gd_target_on_sixteen_job_windows():
    """G = 500, P = 20 on 16 windows of 16 jobs: mean GD <= 2% of the free capacities (the
    issue's target), and never worse than the paper's GA on average."""
    gd_paper, gd_seeded = [], []
    for seed in range(16):
        model = real_shape_window(200 + seed, 16)
        front = brute_front(model.nodes, model.bb, model.free_nodes, model.free_bb)
        scale = np.array([model.free_nodes, model.free_bb])
        for variant, out in (("paper", gd_paper), ("seeded", gd_seeded)):
            res = solve(model, "bbsched-ga", seed=seed, solver_options={"variant": variant})
            out.append(gd(front, res.pareto, scale))
    assert np.mean(gd_seeded) <= 0.02 and np.mean(gd_seeded) <= np.mean(gd_paper)
