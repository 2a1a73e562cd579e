"""The BBSched model, its instance files and the decision rules."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcopt.errors import InstanceError, ModelError
from hpcopt.instances import load_instance
from hpcopt.models import model_class
from hpcopt.models.bbsched import BBSchedModel, brute_force_front
from hpcopt.models.pareto_rules import choose

from .conftest import INSTANCES

IDS = ["J1", "J2", "J3", "J4", "J5"]


def table1(**kw) -> BBSchedModel:
    """The paper's Table 1: 100 nodes, 100 TB burst buffer."""
    return BBSchedModel([80, 10, 40, 10, 20], [20, 85, 5, 0, 0], free_nodes=100, free_bb=100,
                        ids=IDS, **kw)


def front_ids(model):
    X, F = brute_force_front(model)
    return [model.decision_ids(x) for x in X], F


def test_table1_front_and_the_papers_rule():
    model = table1()
    ids, F = front_ids(model)
    assert ids == [("J1", "J5"), ("J2", "J3", "J4", "J5")]
    assert F.tolist() == [[100, 20], [80, 90]]
    points = list(zip(brute_force_front(model)[0], F))
    assert ids[choose(model, points)] == ("J2", "J3", "J4", "J5")  # 70 > 2 x 20
    assert ids[choose(model, points, ("weighted", {"weights": [0.8, 0.2]}))] == ("J1", "J5")
    assert ids[choose(model, points, ("weighted", {"weights": [0.5, 0.5]}))][0] == "J2"
    assert ids[choose(model, points, "lexicographic")] == ("J1", "J5")
    assert ids[choose(model, points, ("lexicographic", {"order": [1, 0]}))][0] == "J2"
    assert ids[choose(model, points, ("bbsched", {"factor": 4}))] == ("J1", "J5")  # 70 < 80
    assert choose(model, points, lambda m, p: 1) == 1


def test_rule_ties_go_to_the_window_front_and_bad_rules_are_one_line_errors():
    model = BBSchedModel([5, 5], [0, 0], free_nodes=5)
    points = [((0, 1), (5.0, 0.0)), ((1, 0), (5.0, 0.0))]
    assert choose(model, points) == 1  # both use 5 nodes: job 0 sits in front
    with pytest.raises(ModelError, match="unknown decision rule 'bbshed'.*Did you mean"):
        choose(model, points, "bbshed")
    with pytest.raises(ModelError, match="returned 7"):
        choose(model, points, lambda m, p: 7)
    with pytest.raises(ModelError, match="empty"):
        choose(model, [])


def test_four_objective_form_counts_ssd_and_least_waste():
    m = BBSchedModel([4, 2, 3], [1, 0, 2], [200, 100, 0], free_bb=10,
                     ssd_classes={"128": 4, "256": 4}, objectives=4)
    ev = m.evaluate([1, 1, 0])
    # job 0 needs 256 GB nodes (4 x 56 GB wasted), job 1 gets 128 GB nodes (2 x 28)
    assert ev.feasible and ev.objectives == (6, 1, 1000, -(4 * 56 + 2 * 28))
    assert m.assign([1, 1, 0]) == {0: (0, 4), 1: (2, 0)}
    assert m.start_order([1, 1, 1]) == [0, 1, 2]
    bad = m.evaluate([1, 1, 1])
    assert not bad.feasible and bad.violations[0] == 1  # 9 nodes on 8
    assert m.objective_names == ("nodes", "bb", "ssd", "neg_wasted_ssd")


def _random_model(rng, n, objectives=2):
    sizes = [128, 256] if rng.random() < 0.7 else [64, 128, 256]
    counts = rng.integers(0, 6, len(sizes))
    classes = {str(s): int(c) for s, c in zip(sizes, counts)}
    return BBSchedModel(rng.integers(1, 5, n), np.where(rng.random(n) < 0.6,
                        rng.integers(1, 40, n), 0), rng.integers(0, 300, n),
                        free_bb=float(rng.integers(0, 80)), ssd_classes=classes,
                        objectives=objectives)


@settings(derandomize=True, deadline=None, max_examples=40)
@given(st.integers(0, 2**31), st.integers(1, 7), st.sampled_from([2, 4]))
def test_hall_condition_and_waste_match_an_explicit_assignment(seed, n, objectives):
    """Feasible exactly when the least-waste assignment places every job, and f4 is minus
    that assignment's waste; constraint_rows say the same as evaluate."""
    model = _random_model(np.random.default_rng(seed), n, objectives)
    sizes = model.class_sizes
    rows, caps, _ = model.constraint_rows()
    for bits in itertools.product((0, 1), repeat=n):
        ev = model.evaluate(bits)
        try:
            alloc = model.assign(bits)
            placed = True
        except ModelError:
            placed = False
        fits_bb = float(np.dot(bits, model.bb)) <= model.free_bb
        assert ev.feasible == (placed and fits_bb)
        assert ev.feasible == bool((rows @ np.array(bits) <= caps + 1e-9).all())
        if placed and objectives == 4:
            wasted = sum(np.dot(a, sizes) - model.ssd[model.ids.index(j)] * sum(a)
                         for j, a in alloc.items())
            assert ev.objectives[3] == pytest.approx(-wasted)


def test_least_waste_beats_every_other_assignment():
    """Brute force over assignments of two jobs on three classes: the rule's waste is least."""
    m = BBSchedModel([2, 2], ssd=[60, 150], ssd_classes={"64": 2, "128": 1, "256": 3},
                     objectives=4)
    best = -m.evaluate([1, 1]).objectives[3]
    sizes = [64] * 2 + [128] + [256] * 3
    least = min(sum(sizes[k] for k in a) + sum(sizes[k] for k in b) - 2 * 60 - 2 * 150
                for a in itertools.combinations(range(6), 2)
                for b in itertools.combinations(sorted(set(range(6)) - set(a)), 2)
                if all(sizes[k] >= 60 for k in a) and all(sizes[k] >= 150 for k in b))
    assert best == least


@pytest.mark.parametrize("kwargs, field", [
    (dict(nodes=[1, 0], free_nodes=2), r"nodes\[1\]"),
    (dict(nodes=[1.5], free_nodes=2), r"nodes\[0\]"),
    (dict(nodes=[1], bb=[-1], free_nodes=2), r"bb\[0\]"),
    (dict(nodes=[1], bb=[1, 2], free_nodes=2), "bb: expected 1 entries"),
    (dict(nodes=[1], free_nodes=3, ssd_classes={"128": 1, "256": 1}), "free.ssd_classes"),
    (dict(nodes=[1], free_nodes=2, objectives=4), "objectives"),
    (dict(nodes=[1], free_nodes=2, objectives=3), "objectives"),
    (dict(nodes=[1]), "free.nodes"),
    (dict(nodes=[1, 1], free_nodes=2, ids=["a", "a"]), "unique"),
    (dict(nodes=[1, 1], free_nodes=2, ids=[1, True]), r"jobs\[1\]\.id: expected int or str"),
    (dict(nodes=[1, 1], free_nodes=2, ids=[1]), "ids: expected 2 labels"),
    (dict(nodes=[1], free_nodes=2, capacity={"cpu": 1}), "capacity"),
])
def test_bad_data_is_a_one_line_model_error(kwargs, field):
    with pytest.raises(ModelError, match=field) as err:
        BBSchedModel(**kwargs)
    assert "\n" not in str(err.value)


def test_instance_files_round_trip_and_name_the_bad_field(tmp_path):
    inst = load_instance(INSTANCES / "bbsched" / "table1.json")
    assert model_class("bbsched") is BBSchedModel
    assert inst.model.ids == tuple(IDS) and inst.model.free_bb == 100000
    assert BBSchedModel.from_dict(inst.model.to_dict()) == inst.model
    m4 = BBSchedModel([4, 2], [1, 0], [200, 100], free_bb=10,
                      ssd_classes={"128": 4, "256": 4}, objectives=4,
                      capacity={"nodes": 16, "bb": 20, "ssd": 3072})
    assert BBSchedModel.from_dict(json.loads(json.dumps(m4.to_dict()))) == m4
    doc = json.loads((INSTANCES / "bbsched" / "table1.json").read_text())
    doc["data"]["jobs"][2]["nodes"] = 0
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InstanceError, match=r"bad.json.*data\.jobs\[2\]\.nodes") as err:
        load_instance(path)
    assert "\n" not in str(err.value)
    doc["data"]["jobs"][2]["nodes"] = 4
    doc["data"]["free"]["ssd_classes"] = {"128": 10}
    path.write_text(json.dumps(doc))
    with pytest.raises(InstanceError, match="ssd_classes"):
        load_instance(path)


def test_an_overrun_by_one_small_job_is_never_feasible():
    """Issue #10 item 2: the tolerance may absorb round-off, never a whole job, however large
    the capacity (integer data are checked exactly)."""
    cases = [
        BBSchedModel([1, 1], [10**10, 5], free_nodes=2, free_bb=1e10),  # integers: exact
        BBSchedModel([1, 1], [1e10 + 0.5, 0.25], free_nodes=2, free_bb=1e10 + 0.5),  # floats
        BBSchedModel([1, 1], [1e15, 1], free_nodes=2, free_bb=1e15),
    ]
    for model in cases:
        both = np.ones((1, 2), dtype=bool)
        assert not model.evaluate([1, 1]).feasible
        assert model.evaluate([1, 0]).feasible and model.evaluate([0, 1]).feasible
        assert not model.feasible_many(both)[0]
        assert model.feasible_prefix(both)[0].tolist() == [True, False]
        assert model.evaluate_many(both)[1][0, 1] > 0  # the violation is reported
    ints = cases[0]
    assert not BBSchedModel([1], [6], free_nodes=1, free_bb=5.999999999).evaluate([1]).feasible
    assert ints._tol.tolist() == [0.0, 0.0, 0.0]


def test_float_round_off_is_still_feasible():
    model = BBSchedModel([1, 1, 1], [0.1, 0.2, 0.7], free_nodes=3, free_bb=0.3)
    assert 0.1 + 0.2 > 0.3  # the float sum overshoots by round-off
    assert model.evaluate([1, 1, 0]).feasible
    assert not model.evaluate([1, 0, 1]).feasible
    tol = model._tol[1]
    assert 0 < tol < 0.05 and tol <= 1e-9
