"""KnapsackModel: validation, certificate, reductions, round trips and algebraic form."""

from __future__ import annotations

import numpy as np
import pytest

from hpcopt.errors import ModelError
from hpcopt.models import MODEL_KINDS, model_class
from hpcopt.models.knapsack import KnapsackModel, integer_scale


def bb_table1() -> KnapsackModel:
    return KnapsackModel([80, 10, 40, 10, 20], [[80, 10, 40, 10, 20], [20, 85, 5, 0, 0]],
                         [100, 100], ids=["J1", "J2", "J3", "J4", "J5"],
                         resources=["nodes", "bb_tb"])


def test_registered_kind():
    assert MODEL_KINDS["knapsack"].endswith("KnapsackModel")
    assert model_class("knapsack") is KnapsackModel
    assert KnapsackModel.kind == "knapsack" and KnapsackModel.sense == "max"


def test_shapes_and_defaults():
    m = KnapsackModel([3, 4, 5], [2, 3, 4], 5)  # flat weights, scalar capacity = one resource
    assert m.weights.shape == (1, 3) and m.capacities.shape == (1,)
    assert m.ids == (0, 1, 2) and m.resources == ("r0",)
    assert m.n_items == 3 and m.n_resources == 1
    m2 = bb_table1()
    assert m2.weights.shape == (2, 5) and m2.resources == ("nodes", "bb_tb")


def test_frozen_and_read_only():
    m = bb_table1()
    with pytest.raises(AttributeError):
        m.values = np.zeros(5)
    with pytest.raises(ValueError):
        m.values[0] = 1.0


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(values=[], weights=[], capacities=1), "values"),
        (dict(values=[[1, 2]], weights=[1, 2], capacities=1), "values"),
        (dict(values=[1, float("nan")], weights=[1, 2], capacities=1), "values[1]"),
        (dict(values=["a", 2], weights=[1, 2], capacities=1), "values"),
        (dict(values=[True, False], weights=[1, 2], capacities=1), "values"),
        (dict(values=[1, 2], weights=[1, 2, 3], capacities=1), "weights"),
        (dict(values=[1, 2], weights=[[1, 2], [1]], capacities=[1, 1]), "weights[1]"),
        (dict(values=[1, 2], weights=np.ones((2, 3)), capacities=[1, 1]), "weights"),
        (dict(values=[1, 2], weights=[[1, 2], [1, 2, 3]], capacities=[1, 1]), "weights[1]"),
        (dict(values=[1, 2], weights=[[1, 2], [3, -1]], capacities=[1, 1]), "weights[1][1]"),
        (dict(values=[1, 2], weights=[1, float("inf")], capacities=1), "weights[1]"),
        (dict(values=[1, 2], weights=[[1, 2], [3, 4]], capacities=1), "capacities"),
        (dict(values=[1, 2], weights=[1, 2], capacities=-1), "capacities"),
        (dict(values=[1, 2], weights=[[1, 2], [3, 4]], capacities=[1, -2]), "capacities[1]"),
        (dict(values=[1, 2], weights=[1, 2], capacities=1, ids=["a"]), "ids"),
        (dict(values=[1, 2], weights=[1, 2], capacities=1, ids=["a", "a"]), "ids"),
        (dict(values=[1, 2], weights=[1, 2], capacities=1, ids=["a", 1.5]), "ids[1]"),
        (dict(values=[1, 2], weights=[1, 2], capacities=1, resources=["a", "b"]), "resources"),
        (dict(values=[1, 2], weights=[1, 2], capacities=1, resources=[3]), "resources[0]"),
    ],
)
def test_validation_names_field(kwargs, field):
    with pytest.raises(ModelError) as info:
        KnapsackModel(**kwargs)
    message = str(info.value)
    assert "\n" not in message and "expected" in message
    assert info.value.field == field, message
    assert message.startswith(f"knapsack {field}:")


def test_values_may_be_negative_weights_zero():
    m = KnapsackModel([-1.5, 0, 2], [0, 0, 1], 0)
    assert m.evaluate([1, 1, 0]).objectives == (-1.5,)


def test_evaluate_feasible_and_violations():
    m = bb_table1()
    ev = m.evaluate([1, 0, 0, 0, 1])
    assert ev.feasible and ev.objectives == (100.0,) and ev.violations == (0.0, 0.0)
    ev = m.evaluate([1, 1, 1, 0, 0])
    assert not ev.feasible and ev.objective == 130.0
    assert ev.violations == (30.0, 10.0)
    assert m.evaluate(np.array([True, False, False, True, False])).objective == 90.0
    assert m.evaluate([0.0, 0.0, 1.0, 0.0, 0.0]).objective == 40.0


@pytest.mark.parametrize("x", [[1, 0, 0, 0], [1, 0, 0, 0, 1, 0], [1, 0, 2, 0, 0],
                               [1, 0, 0.5, 0, 0], ["a", 0, 0, 0, 0], [[1, 0, 0, 0, 1]]])
def test_evaluate_rejects_bad_decisions(x):
    with pytest.raises(ModelError, match="knapsack decision"):
        bb_table1().evaluate(x)


def test_decision_ids():
    m = bb_table1()
    assert m.decision_ids([1, 0, 0, 0, 1]) == ("J1", "J5")
    assert KnapsackModel([1, 2], [1, 1], 2).decision_ids([0, 1]) == (1,)


def test_dict_round_trip():
    for m in (bb_table1(), KnapsackModel([1.5, 2, -3], [0.25, 2, 1], 2.5),
              KnapsackModel([1, 2], [[1, 1], [0, 3]], [2, 3], ids=[10, 20])):
        d = m.to_dict()
        assert KnapsackModel.from_dict(d) == m
        assert KnapsackModel.from_dict(d).to_dict() == d
    d = bb_table1().to_dict()
    assert d["ids"] == ["J1", "J2", "J3", "J4", "J5"] and d["resources"] == ["nodes", "bb_tb"]
    assert d["values"] == [80, 10, 40, 10, 20] and isinstance(d["values"][0], int)
    plain = KnapsackModel([1, 2], [1, 1], 2).to_dict()
    assert set(plain) == {"values", "weights", "capacities"}  # defaults are not written


def test_from_dict_accepts_flat_forms_and_rejects_unknown_fields():
    m = KnapsackModel.from_dict({"values": [1, 2], "weights": [1, 1], "capacities": 1})
    assert m.n_resources == 1
    with pytest.raises(ModelError, match="profit"):
        KnapsackModel.from_dict({"values": [1], "weights": [1], "capacities": 1, "profit": 1})
    with pytest.raises(ModelError) as info:
        KnapsackModel.from_dict({"values": [1], "weights": [1]})
    assert info.value.field == "capacities"


def test_equality():
    assert bb_table1() == bb_table1()
    assert bb_table1() != KnapsackModel([1, 2], [1, 1], 2)


def test_reduced_drops_fixes_and_clips():
    m = KnapsackModel([-5, 0, 7, 12, 3, 4, 20], [2, 1, 0, 4, 3, 0, 50], 10)
    red = m.reduced()
    assert red.items.tolist() == [3, 4]  # positive value, fits alone
    assert red.forced.tolist() == [2, 5]  # positive value, weightless
    assert red.capacities.tolist() == [7.0]  # clipped to 4 + 3
    assert red.offset == 11.0
    x = red.lift([True, False])
    assert x == [0, 0, 1, 1, 0, 1, 0]
    assert red.objective(12.0) == m.evaluate(x).objective


def test_reduced_integer_scaling():
    m = KnapsackModel([1.25, 2.5], [0.5, 1.25], 1.8)
    red = m.reduced(integer_weights=True, integer_values=True, backend="x")
    assert red.weights.tolist() == [[50, 125]] and red.weights.dtype == np.int64
    assert red.capacities.tolist() == [175]  # clipped to the total weight
    assert red.values.tolist() == [125, 250] and red.value_scale == 100
    assert red.objective(375) == pytest.approx(3.75)
    red = KnapsackModel([1, 1], [0.5, 1.25], 1.7).reduced(integer_weights=True)
    assert red.capacities.tolist() == [170]  # floored, 1.7 * 100 is not exact in binary
    with pytest.raises(ModelError, match="backend 'dp' needs integer weights"):
        KnapsackModel([1, 1], [1 / 3, 1], 1).reduced(integer_weights=True, backend="dp")
    assert integer_scale(np.array([3.0, 4.0]), "values", "x") == 1


def test_to_pyomo():
    pyo = pytest.importorskip("pyomo.environ")
    pm = bb_table1().to_pyomo()
    assert len(pm.x) == 5 and pm.x[0].is_binary()
    assert pm.obj.sense == pyo.maximize
    assert set(pm.capacity) == {0, 1}
    for i, v in enumerate([1, 0, 0, 0, 1]):
        pm.x[i].value = v
    assert pyo.value(pm.obj) == 100
    assert pyo.value(pm.capacity[1].body) == 20
