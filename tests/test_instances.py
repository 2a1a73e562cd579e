"""Instance files: the schema, the shipped instances, round trips, one-line errors, globs."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import jsonschema
import pytest

from hpcopt.errors import InstanceError
from hpcopt.instances import (
    SCHEMA_PATH,
    Instance,
    expand_paths,
    instance_from_dict,
    load_instance,
    save_instance,
    schema,
    validate_instance,
)
from hpcopt.models.knapsack import KnapsackModel

KNAPSACK_DIR = Path(__file__).resolve().parent.parent / "instances" / "knapsack"
SHIPPED = sorted(KNAPSACK_DIR.glob("*.json"))

GOOD = {
    "format": "hpcopt-instance",
    "version": 1,
    "name": "tiny",
    "model": "knapsack",
    "data": {"values": [3, 4], "weights": [[1, 2], [2, 1]], "capacities": [2, 2]},
}


def write(tmp_path: Path, obj, name: str = "case.json") -> Path:
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return path


def mutated(**changes) -> dict:
    """GOOD with dotted-path changes; a value of ... deletes the field."""
    obj = json.loads(json.dumps(GOOD))
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        target = obj
        for key in parents:
            target = target[key]
        if value is ...:
            del target[last]
        else:
            target[last] = value
    return obj


def test_schema_is_valid_draft_2020_12():
    assert SCHEMA_PATH.is_file()
    jsonschema.Draft202012Validator.check_schema(schema())


def test_shipped_instances_load_and_have_optima():
    assert len(SHIPPED) >= 10
    with open(KNAPSACK_DIR / "optima.csv") as fh:
        optima = {row["instance"]: float(row["optimum"]) for row in csv.DictReader(fh)}
    names = set()
    for path in SHIPPED:
        inst = load_instance(path)
        assert inst.name == path.stem and inst.model_kind == "knapsack"
        assert inst.path == path and inst.meta["seed"]
        names.add(inst.name)
        assert 5 <= inst.model.n_items <= 60
    assert names == set(optima)
    kinds = {load_instance(p).model.n_resources for p in SHIPPED}
    assert {1, 2, 3} <= kinds


def test_bb_table1_content():
    inst = load_instance(KNAPSACK_DIR / "bb_table1.json")
    m = inst.model
    assert m.ids == ("J1", "J2", "J3", "J4", "J5") and m.resources == ("nodes", "bb_tb")
    assert m.values.tolist() == [80, 10, 40, 10, 20]
    assert m.weights.tolist() == [[80, 10, 40, 10, 20], [20, 85, 5, 0, 0]]
    assert m.evaluate([1, 0, 0, 0, 1]).objective == 100


def test_save_load_round_trip(tmp_path):
    model = KnapsackModel([1.5, 2, -3], [[0.25, 2, 1], [0, 1, 1]], [2.5, 1], ids=["a", "b", 7],
                          resources=["nodes", "bb"])
    path = save_instance(tmp_path / "x.json", model, "x", description="d", meta={"k": 1})
    inst = load_instance(path)
    assert inst == Instance("x", model, path, "d", {"k": 1})
    assert json.loads(path.read_text()) == inst.to_dict()
    for shipped in SHIPPED:  # the files are what save_instance writes
        inst = load_instance(shipped)
        assert json.loads(shipped.read_text()) == inst.to_dict()


def test_flat_single_resource_form(tmp_path):
    obj = mutated(data={"values": [3, 4], "weights": [1, 2], "capacities": 2})
    model = load_instance(write(tmp_path, obj)).model
    assert model.n_resources == 1 and model.capacities.tolist() == [2.0]


@pytest.mark.parametrize(
    "obj, where, expected",
    [
        ("{not json", "", "not valid JSON"),
        ('{"a": NaN}', "", "non-finite number NaN"),
        ([1, 2], "(top level)", "expected object"),
        (mutated(format="other"), "format", "expected \"hpcopt-instance\""),
        (mutated(version=2), "version", "expected 1"),
        (mutated(name=...), "name", "missing required field"),
        (mutated(data=...), "data", "missing required field"),
        (mutated(extra=1), "extra", "unexpected field"),
        (mutated(name=""), "name", "non-empty"),
        (mutated(model="Knap sack"), "model", "matching"),
        (mutated(model="knapsak"), "model", "unknown model 'knapsak'"),
        (mutated(data__values="abc"), "data.values", "expected array"),
        (mutated(data__values=[]), "data.values", "at least 1"),
        (mutated(data__values=[1, "x"]), "data.values[1]", "expected number, got string"),
        (mutated(data__weights=[[1, 2], [2, -1]]), "data.weights[1][1]", ">= 0"),
        (mutated(data__weights=[[1, 2], "x"]), "data.weights[1]", "expected number or array"),
        (mutated(data__weights=[[1, 2], [2, 1, 5]]), "data.weights[1]", "2 entries"),
        (mutated(data__capacities=[2]), "data.capacities", "one number per weight row"),
        (mutated(data__capacities=-1), "data.capacities", ">= 0"),
        (mutated(data__capacities=...), "data.capacities", "missing required field"),
        (mutated(data__profit=[1]), "data.profit", "unexpected field"),
        (mutated(data__ids=["a", "a"]), "data.ids", "unique"),
        (mutated(data__ids=["a"]), "data.ids", "2 labels"),
        (mutated(meta=[]), "meta", "expected object"),
    ],
)
def test_bad_files_give_one_line_errors(tmp_path, obj, where, expected):
    path = write(tmp_path, obj)
    with pytest.raises(InstanceError) as info:
        load_instance(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: {where}"), message
    assert expected in message, message


def test_unknown_model_lists_known_kinds(tmp_path):
    with pytest.raises(InstanceError) as info:
        load_instance(write(tmp_path, mutated(model="bbsched_x")))
    assert "knapsack" in str(info.value)


def test_missing_file():
    with pytest.raises(InstanceError, match="cannot read file"):
        load_instance("/nonexistent/instance.json")


def test_validate_and_build_in_memory():
    validate_instance(GOOD)
    inst = instance_from_dict(GOOD)
    assert inst.path is None and inst.model.n_items == 2
    with pytest.raises(InstanceError, match="^<memory>: format"):
        validate_instance(mutated(format=1))


def test_save_refuses_invalid(tmp_path):
    with pytest.raises(InstanceError, match="name"):
        save_instance(tmp_path / "y.json", KnapsackModel([1], [1], 1), "")
    assert not (tmp_path / "y.json").exists()


def test_expand_paths(tmp_path):
    for name in ("b.json", "a.json", "c.txt"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "d.json").write_text("{}")
    a, b, d = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "sub" / "d.json"
    assert expand_paths([str(tmp_path / "*.json")]) == [a, b]
    assert expand_paths(str(tmp_path / "**" / "*.json")) == [a, b, d]
    assert expand_paths([b, str(tmp_path / "*.json"), a]) == [a, b]  # sorted, no duplicates
    assert expand_paths([tmp_path]) == [a, b]  # a directory means its *.json files
    with pytest.raises(InstanceError, match=r"nomatch\*\.json"):
        expand_paths([str(tmp_path / "*.json"), str(tmp_path / "nomatch*.json")])
    with pytest.raises(InstanceError, match="missing.json"):
        expand_paths([tmp_path / "missing.json"])
    assert len(expand_paths([str(KNAPSACK_DIR / "*.json")])) == len(SHIPPED)
