"""Every bad input named: WfFormat workflows, OSDEC files (also gzipped) and batch outputs
give one line on stderr naming the file and the field, exit code 2, never a traceback."""

from __future__ import annotations

import copy
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hpcopt.errors import HpcoptError
from hpcopt.instances import load_instance
from hpcopt.workflows.reader import MAX_RUNTIME, WorkflowError, load_wfformat
from hpcopt.workflows.stages import stages_of

from .conftest import INSTANCES

HPCOPT = [sys.executable, "-m", "hpcopt.cli"]
DEMO = INSTANCES / "traces" / "demo.swf"
OSDEC = INSTANCES / "osdec" / "tiny_4jobs.json"
DEEP = "[" * 100_000 + "]" * 100_000


def run(args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([*HPCOPT, *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def user_error(proc, *needles) -> str:
    """The one stderr line of a user error (exit 2) that holds every needle."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# ------------------------------------------------------------------- WfFormat

def wf15(runtime="10", cores="2") -> str:
    """A two-task WfFormat 1.5 document; the first task's runtime and cores as JSON text."""
    doc = {"schemaVersion": "1.5", "workflow": {
        "specification": {"tasks": [{"id": "a", "parents": []}, {"id": "b", "parents": ["a"]}]},
        "execution": {"tasks": [{"id": "a", "runtimeInSeconds": "@R", "coreCount": "@C"},
                                {"id": "b", "runtimeInSeconds": 5}]}}}
    return json.dumps(doc).replace('"@R"', runtime).replace('"@C"', cores)


@pytest.mark.parametrize(("text", "needles"), [
    (wf15(cores="Infinity"), ["workflow.execution.tasks[0].coreCount", "whole number"]),
    (wf15(cores="NaN"), ["workflow.execution.tasks[0].coreCount", "got nan"]),
    (wf15(runtime="1e308"), ["workflow.execution.tasks[0].runtimeInSeconds",
                             f"from 0 to {MAX_RUNTIME:g}"]),
    (DEEP, ["nested too deeply"]),
])
def test_workflow_bad_fields_cli(tmp_path, text, needles):
    (tmp_path / "wf.json").write_text(text)
    proc = run(["workflow", "wf.json", "--trace", DEMO, "--strategy", "bigjob", "--runs", 1,
                "--out", "out", "--no-progress"], tmp_path)
    user_error(proc, "wf.json", *needles)


WF_VALUES = ["NaN", "Infinity", "-Infinity", "1e308", "1e400", "-1", "0", "1.5", '"x"',
             "null", "[]", "{}", "true", str(2**60), str(10**30), '""', "[1]",
             '[{"name": 3}]', '["zz"]']


def _wf(version: str, field: str, value: str) -> str:
    if version == "1.5":
        spec = [{"id": "a", "parents": []}, {"id": "b", "parents": ["a"]}]
        exe = [{"id": "a", "runtimeInSeconds": 10, "coreCount": 2},
               {"id": "b", "runtimeInSeconds": 5}]
        if field == "parents":
            spec[1][field] = "@@"
        elif field == "id":
            spec[1]["id"] = exe[1]["id"] = "@@"
        else:
            exe[1][field] = "@@"
        wf = {"specification": {"tasks": spec}, "execution": {"tasks": exe}}
    else:
        tasks = [{"name": "a", "parents": [], "runtime": 10, "cores": 1},
                 {"name": "b", "parents": ["a"], "runtime": 3, "cores": 1}]
        tasks[1][field] = "@@"
        wf = {"tasks": tasks}
    return json.dumps({"schemaVersion": version, "workflow": wf}).replace('"@@"', value)


@pytest.mark.parametrize(("version", "field"), [
    ("1.5", f) for f in ("id", "parents", "runtimeInSeconds", "coreCount")] + [
    ("1.4", f) for f in ("name", "parents", "runtime", "cores")])
def test_workflow_fields_fuzz(tmp_path, version, field):
    """Every odd value in every task field: read, or one WorkflowError line naming the
    file and the field."""
    path = tmp_path / "w.json"
    errors = 0
    for value in WF_VALUES:
        path.write_text(_wf(version, field, value))
        try:
            stages_of(load_wfformat(path))
        except WorkflowError as err:
            errors += 1
            message = str(err)
            assert "\n" not in message and message.startswith(str(path)), message
    assert errors >= len(WF_VALUES) // 2


# ------------------------------------------------------------------- OSDEC files

def test_gzipped_osdec_file_everywhere(tmp_path):
    """A .json.gz OSDEC workload is what its .json is, for simulate, solve and
    load_instance."""
    plain = tmp_path / "day.json"
    plain.write_bytes(OSDEC.read_bytes())
    packed = tmp_path / "day.json.gz"
    packed.write_bytes(gzip.compress(OSDEC.read_bytes()))
    assert load_instance(packed).model.to_dict() == load_instance(plain).model.to_dict()
    outs = []
    for name in ("day.json", "day.json.gz"):
        proc = run(["simulate", name, "--policy", "fcfs", "--no-progress"], tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert "deferrable jobs" in proc.stdout.splitlines()[0]
        outs.append(proc.stdout.splitlines()[1:])
    assert outs[0] == outs[1]
    proc = run(["solve", "day.json.gz", "--backend", "osdec-greedy", "--out", "-",
                "--no-progress"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)
    assert row["file"] == "day.json.gz" and row["model"] == "osdec" and row["certified"]


def test_osdec_file_handed_to_simulate_is_named():
    """The Python front door takes job traces; an OSDEC day handed to it is named, with the
    entry point that runs it."""
    import hpcopt

    with pytest.raises(HpcoptError, match="osdec instance.*simulate_osdec"):
        hpcopt.simulate(str(OSDEC), policy="fcfs")


@pytest.mark.parametrize("name", ["deep.json", "deep.json.gz"])
def test_deep_json_is_named(tmp_path, name):
    data = DEEP.encode()
    (tmp_path / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    user_error(run(["simulate", name, "--no-progress"], tmp_path), name, "nested too deeply")
    proc = run(["solve", name, "--out", "-", "--no-progress"], tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    row = json.loads(proc.stdout)
    assert row["status"] == "ERROR" and name in row["error"] and "too deeply" in row["error"]


OSDEC_VALUES = ["NaN", "Infinity", "-Infinity", "1e308", "1e400", "-1", "0", "1.5", '"x"',
                "null", "[]", "{}", "true", str(2**60), str(10**30)]


@pytest.mark.parametrize(("where", "field"), [
    ("data", f) for f in ("slots", "capacity", "w1", "w2")] + [
    ("job", f) for f in ("id", "cores", "duration", "submit", "earliest", "latest")])
def test_osdec_fields_fuzz(tmp_path, where, field):
    """Every odd value in every OSDEC field: the file loads and simulates, or one
    HpcoptError line (naming the file when it is read)."""
    import hpcopt

    base = json.loads(OSDEC.read_text())
    path = tmp_path / "t.json"
    for value in OSDEC_VALUES:
        doc = copy.deepcopy(base)
        (doc["data"] if where == "data" else doc["data"]["jobs"][1])[field] = "@@"
        path.write_text(json.dumps(doc).replace('"@@"', value))
        try:
            load_instance(path)
        except HpcoptError as err:
            assert "\n" not in str(err) and str(path) in str(err), str(err)
            continue
        hpcopt.simulate_osdec(str(path), policy="fcfs")  # e.g. ids 0 and "a" mixed


# ------------------------------------------------------------------- batch

def test_batch_error_rows_name_the_file(tmp_path):
    from hpcopt.instances import save_instance
    from hpcopt.models.knapsack import KnapsackModel

    save_instance(tmp_path / "huge.json", KnapsackModel([1, 1], [2**60, 1], 2**60), "huge")
    proc = run(["solve", "huge.json", "--backend", "dp,cpsat", "--out", "-",
                "--no-progress"], tmp_path)
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["status"] for r in rows] == ["ERROR", "ERROR"]
    for row in rows:
        assert row["error"].startswith("huge.json: backend") and "2^53" in row["error"]


@pytest.mark.parametrize("out", ["", " "])
def test_out_empty_is_refused_before_any_work(tmp_path, out):
    before = set(os.listdir(tmp_path))
    proc = run(["solve", INSTANCES / "knapsack", "--out", out, "--no-progress"], tmp_path)
    user_error(proc, f"--out {out!r}", ".jsonl or .csv")
    assert proc.stdout == "" and set(os.listdir(tmp_path)) == before


def test_resume_replaces_unfinished_rows(tmp_path):
    """A JSONL batch resumed after a stop: the interrupted and failed rows are replaced by
    the ones solved again, the finished rows stay as they were."""
    from hpcopt.batch import RowWriter

    tiny = str(INSTANCES / "knapsack" / "ks1_tiny_5.json")
    out = tmp_path / "rows.jsonl"
    out.write_text("\n".join(json.dumps(r) for r in [
        {"file": "a.json", "instance": "a", "backend": "dp", "status": "OPTIMAL",
         "termination": "optimal", "model": "knapsack"},
        {"file": tiny, "instance": "ks1_tiny_5", "backend": "dp", "status": "FEASIBLE",
         "termination": "interrupted", "limit": "INTERRUPT", "model": "knapsack"},
        {"file": "b.json", "instance": "b.json", "backend": "(default)", "status": "ERROR",
         "termination": "error", "model": ""},
        {"file": "c.json", "instance": "c.json", "backend": "dp", "status": "ERROR",
         "termination": "error", "model": ""},
        {"file": "c.json", "instance": "c.json", "backend": "greedy", "status": "ERROR",
         "termination": "error", "model": ""},
    ]) + "\n")
    from hpcopt.batch import run_batch

    writer = RowWriter(out, resume=True)
    assert writer.done == {("a.json", "a", "dp")}
    try:
        run_batch([tiny], ["dp"], writer=writer)
        for name in ("b", "c"):  # both fixed; c solved again by dp only
            writer.write({"file": f"{name}.json", "instance": name, "backend": "dp",
                          "status": "OPTIMAL", "termination": "optimal", "model": "knapsack"})
    finally:
        writer.close()
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["file"], r["backend"], r["status"]) for r in rows] == [
        ("a.json", "dp", "OPTIMAL"), ("c.json", "greedy", "ERROR"), (tiny, "dp", "OPTIMAL"),
        ("b.json", "dp", "OPTIMAL"), ("c.json", "dp", "OPTIMAL")]
    assert not Path(str(out) + ".tmp").exists()
