"""Batch solving that loses nothing: unreadable files are rows, rows stream to disk, strict
JSON, --out checked before solving, --resume, stdin and stdout, --version."""

from __future__ import annotations

import io
import json
import shutil
import sys

import pandas as pd
import pytest

import hpcopt
import hpcopt.solvers
from hpcopt.batch import RowWriter, run_batch
from hpcopt.cli import main
from hpcopt.jsonsafe import json_safe

from .conftest import INSTANCES

KNAPSACK = INSTANCES / "knapsack"
TINY = KNAPSACK / "ks1_tiny_5.json"
TABLE1 = KNAPSACK / "bb_table1.json"


def strict_loads(line: str):
    """RFC 8259 JSON only: NaN, Infinity and -Infinity are errors."""
    def reject(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(line, parse_constant=reject)


def read_rows(path) -> list[dict]:
    text = path.read_text()
    assert text == "" or text.endswith("\n")
    return [strict_loads(line) for line in text.splitlines()]


@pytest.fixture
def solve_calls(monkeypatch):
    """Records every (instance, backend) the registry is asked to solve."""
    calls = []
    real = hpcopt.solvers.solve

    def spy(model, backend=None, **kw):
        calls.append(backend)
        return real(model, backend, **kw)

    monkeypatch.setattr(hpcopt.solvers, "solve", spy)
    return calls


def bad_files(tmp_path) -> dict[str, str]:
    """name -> a piece of the message its error row must carry."""
    text = TINY.read_text()
    (tmp_path / "binary.json").write_bytes(bytes(range(256)) * 4)
    (tmp_path / "utf16_nobom.json").write_bytes(text.encode("utf-16-le"))
    (tmp_path / "latin1.json").write_bytes(text.replace("textbook", "caf\xe9").encode("latin-1"))
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "invalid.json").write_text("{not json")
    (tmp_path / "nan.json").write_text(text.replace("10,", "NaN,", 1))
    obj = json.loads(text)
    obj["data"]["weights"] = [[5, 4, 6, 3]]
    (tmp_path / "schema.json").write_text(json.dumps(obj))
    return {"binary.json": "not UTF-8 text", "utf16_nobom.json": "not UTF-8 text",
            "latin1.json": "not UTF-8 text", "deep.json": "nested too deeply",
            "invalid.json": "not valid JSON", "nan.json": "not valid JSON",
            "schema.json": "data"}


def test_unreadable_files_are_error_rows_naming_the_file_and_the_batch_goes_on(tmp_path):
    bad = bad_files(tmp_path)
    shutil.copy(TABLE1, tmp_path / "good.json")
    (tmp_path / "utf16_bom.json").write_bytes(TINY.read_text().encode("utf-16"))
    (tmp_path / "utf8_bom.json").write_bytes(TINY.read_text().encode("utf-8-sig"))
    out = tmp_path / "rows" / "r.jsonl"
    assert main(["solve", str(tmp_path / "*.json"), "--backend", "dp,greedy", "--out",
                 str(out), "--no-progress"]) == 1
    rows = read_rows(out)
    by_file = {}
    for row in rows:
        by_file.setdefault(row["file"].rsplit("/", 1)[-1], []).append(row)
    assert len(by_file) == len(bad) + 3 and len(rows) == 2 * len(by_file)
    for name, needle in bad.items():
        assert [r["status"] for r in by_file[name]] == ["ERROR", "ERROR"]
        for r in by_file[name]:
            assert name in r["error"] and needle in r["error"], r["error"]
            assert len(r["error"].splitlines()) == 1
    for name in ("good.json", "utf16_bom.json", "utf8_bom.json"):  # a BOM is decoded
        assert {r["status"] for r in by_file[name]} <= {"OPTIMAL", "FEASIBLE"}
        assert all(r["certified"] for r in by_file[name])


def test_out_of_memory_while_building_a_model_is_an_error_row(tmp_path, monkeypatch):
    from hpcopt.models.knapsack import KnapsackModel

    def boom(cls, data):
        raise MemoryError()

    monkeypatch.setattr(KnapsackModel, "from_dict", classmethod(boom))
    run = run_batch([str(TINY), str(INSTANCES / "scas" / "*.json")], None)
    err = run.rows[0]
    assert err["status"] == "ERROR" and "ks1_tiny_5.json" in err["error"]
    assert "out of memory" in err["error"]
    assert len(run.rows) > 1 and run.finished == run.items


def test_rows_are_strict_json_and_missing_bounds_are_null(tmp_path):
    out = tmp_path / "r.jsonl"
    main(["solve", str(KNAPSACK / "*.json"), str(INSTANCES / "bbsched" / "*.json"),
          "--backend", "dp,greedy,pareto-exact", "--out", str(out), "--no-progress"])
    rows = read_rows(out)  # raises on NaN/Infinity
    assert len(rows) >= 30
    greedy = [r for r in rows if r["backend"] == "greedy" and r["status"] != "ERROR"]
    assert greedy and all(r["bound"] is None or isinstance(r["bound"], (int, float))
                          for r in greedy)
    assert any(r["bound"] is None for r in rows if r["status"] != "ERROR")
    assert json_safe({"a": float("inf"), "b": [float("nan"), 1.5]}) == {"a": None,
                                                                        "b": [None, 1.5]}


def test_csv_rows_stream_with_a_fixed_header(tmp_path):
    out = tmp_path / "r.csv"
    assert main(["solve", str(TABLE1), str(TINY), "--backend", "dp,greedy", "--out", str(out),
                 "--no-progress"]) == 0
    df = pd.read_csv(out)
    assert len(df) == 4 and list(df.columns[:4]) == ["file", "instance", "model", "backend"]
    assert list(df.loc[df["instance"] == "bb_table1", "decision"]) == ["J1 J5", "J1 J4"]


@pytest.mark.parametrize("out, needle", [
    ("r.txt", "expected a file name ending in .jsonl or .csv"),
    ("r.json", ".jsonl: one JSON object per line"),
    ("adir", "is a directory"),
    ("adir.jsonl", "is a directory"),
])
def test_out_is_checked_before_anything_is_solved(tmp_path, capsys, solve_calls, out, needle):
    (tmp_path / "adir").mkdir()
    (tmp_path / "adir.jsonl").mkdir()
    code = main(["solve", str(KNAPSACK / "*.json"), "--out", str(tmp_path / out),
                 "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and needle in err and len(err.splitlines()) == 1
    assert solve_calls == []


def test_out_folder_is_created(tmp_path):
    out = tmp_path / "new" / "deeper" / "r.jsonl"
    assert main(["solve", str(TINY), "--out", str(out), "--no-progress"]) == 0
    assert [r["instance"] for r in read_rows(out)] == ["ks1_tiny_5"]


def test_resume_skips_finished_pairs_and_tolerates_a_truncated_line(tmp_path, solve_calls):
    out = tmp_path / "r.jsonl"
    first = [str(TABLE1), str(TINY)]
    assert main(["solve", *first, "--backend", "dp,greedy", "--out", str(out),
                 "--no-progress"]) == 0
    assert len(solve_calls) == 4
    with out.open("a") as fh:  # the last run was killed in the middle of a row
        fh.write('{"file": "x.json", "instance": "ks1_ti')
    solve_calls.clear()
    glob = str(KNAPSACK / "ks1_*.json")
    assert main(["solve", str(TABLE1), glob, "--backend", "dp,greedy", "--out", str(out),
                 "--resume", "--no-progress"]) == 0
    rows = read_rows(out)
    keys = [(r["instance"], r["backend"]) for r in rows]
    assert len(keys) == len(set(keys))  # nothing solved twice
    n_files = 1 + len(list(KNAPSACK.glob("ks1_*.json")))
    assert len(rows) == 2 * n_files and len(solve_calls) == 2 * n_files - 4
    solve_calls.clear()
    assert main(["solve", str(TABLE1), glob, "--backend", "dp,greedy", "--out", str(out),
                 "--resume", "--no-progress"]) == 0
    assert solve_calls == [] and len(read_rows(out)) == 2 * n_files


def test_resume_solves_error_rows_again_and_keeps_a_csv_header(tmp_path):
    out = tmp_path / "r.csv"
    broken = tmp_path / "later.json"
    broken.write_text("{")
    assert main(["solve", str(TINY), str(broken), "--out", str(out), "--no-progress"]) == 1
    shutil.copy(TABLE1, broken)  # fixed
    assert main(["solve", str(TINY), str(broken), "--out", str(out), "--resume",
                 "--no-progress"]) == 0
    df = pd.read_csv(out)  # the error row was replaced by the file's new row
    assert list(df["status"]) == ["OPTIMAL", "OPTIMAL"]
    assert list(df["instance"]) == ["ks1_tiny_5", "bb_table1"]


def test_resume_needs_a_file(capsys):
    assert main(["solve", str(TINY), "--resume"]) == 2
    assert main(["solve", str(TINY), "--resume", "--out", "-"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("--resume needs --out FILE" in e for e in err)


def _stdin(monkeypatch, data: bytes):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


@pytest.mark.parametrize("shape", ["one", "array", "jsonl"])
def test_stdin_instances_and_jsonl_on_stdout(monkeypatch, capsys, shape):
    envs = [json.loads(TINY.read_text()), json.loads(TABLE1.read_text())]
    data = {"one": json.dumps(envs[0]), "array": json.dumps(envs),
            "jsonl": "\n".join(json.dumps(e) for e in envs) + "\n{broken\n"}[shape]
    _stdin(monkeypatch, data.encode())
    code = main(["solve", "-", "--backend", "dp", "--out", "-", "--no-progress"])
    out, err = capsys.readouterr()
    rows = [strict_loads(line) for line in out.splitlines()]  # stdout: rows only
    names = [r["instance"] for r in rows]
    if shape == "one":
        assert code == 0 and names == ["ks1_tiny_5"] and rows[0]["file"] == "<stdin>"
    elif shape == "array":
        assert code == 0 and names == ["ks1_tiny_5", "bb_table1"]
        assert [r["file"] for r in rows] == ["<stdin>[0]", "<stdin>[1]"]
    else:
        assert code == 1 and names[:2] == ["ks1_tiny_5", "bb_table1"]
        assert rows[2]["status"] == "ERROR" and "<stdin>:3" in rows[2]["error"]
    assert "ks1_tiny_5" in err  # the table went to stderr


def test_stdin_that_is_not_text_is_one_error_row(monkeypatch, capsys):
    _stdin(monkeypatch, bytes(range(256)))
    assert main(["solve", "-", "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "<stdin>: not UTF-8 text" in out


def test_write_rows_is_strict_too(tmp_path):
    from hpcopt.batch import write_rows

    out = write_rows([{"instance": "a", "backend": "dp", "status": "FEASIBLE",
                       "bound": float("inf"), "objective": 1.0}], tmp_path / "w.jsonl")
    assert read_rows(out)[0]["bound"] is None
    with pytest.raises(hpcopt.errors.HpcoptError, match="expected a file name"):
        RowWriter(tmp_path / "w.txt")


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"hpcopt {hpcopt.__version__}"
