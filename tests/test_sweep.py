"""``hpcopt sweep``: the Cartesian product of simulate settings x seeds, one strict-JSON
summary row per run, bad settings as error rows, --resume keyed on the run's settings, the
same rows on a local pool, and SIGTERM keeps every row written."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from hpcopt.cli import main
from hpcopt.sweep import load_sweep, run_id, run_sweep

from .conftest import INSTANCES, default_signals

DEMO = INSTANCES / "traces" / "demo.swf"


def strict_loads(line: str):
    def reject(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(line, parse_constant=reject)


def read(path):
    text = path.read_text()
    assert text.endswith("\n")
    return [strict_loads(line) for line in text.splitlines()]


def write_sweep(tmp_path, spec, name="sweep.json"):
    path = tmp_path / name
    path.write_text(json.dumps(spec))
    return path


SPEC = {"trace": str(DEMO), "jobs": 100, "policy": ["fcfs", "knapsack"],
        "backend": ["dp", "greedy"], "window": [5, 10], "seed": [0, 1]}


def test_product_with_options_only_where_a_policy_takes_them():
    sweep = load_sweep(SPEC)
    assert len(sweep.runs) == 4 + 8
    assert sweep.runs[0] == {"trace": str(DEMO), "jobs": 100, "policy": "fcfs", "window": 5,
                             "seed": 0}
    assert {r["backend"] for r in sweep.runs if r["policy"] == "knapsack"} == {"dp", "greedy"}
    assert sweep.columns[:7] == ["run", "trace", "jobs", "policy", "window", "seed", "backend"]
    # defaults: policy fcfs, seed 0; a list-valued option is a list of lists
    one = load_sweep({"trace": "t.swf", "options": {"weights": [[0.5, 0.5]]},
                      "policy": "weighted"})
    assert one.runs == [{"trace": "t.swf", "policy": "weighted", "seed": 0,
                         "weights": [0.5, 0.5]}]


def test_rows_are_settings_plus_summary_and_bad_settings_are_error_rows(tmp_path, capsys):
    spec = {"trace": [str(DEMO)], "jobs": 50, "policy": ["sjf", "fcfs"], "window": [0, 4]}
    out = tmp_path / "runs.jsonl"
    code = main(["sweep", str(write_sweep(tmp_path, spec)), "--out", str(out),
                 "--no-progress", "--json"])
    captured = capsys.readouterr()
    assert code == 1 and "runs failed" in captured.err
    rows = read(out)
    assert len(rows) == 4
    ok = [r for r in rows if r["status"] == "DONE"]  # a run's own status, not a solver's
    assert [(r["trace"], r["policy"], r["window"]) for r in ok] == [
        (str(DEMO), "sjf", 4), (str(DEMO), "fcfs", 4)]
    assert ok[0]["job_count"] == 50 and ok[0]["avg_wait"] >= 0 and ok[0]["error"] == ""
    assert ok[0]["run"] == run_id({"trace": str(DEMO), "jobs": 50, "policy": "sjf",
                                   "window": 4, "seed": 0})
    errors = {(r["trace"], r["policy"], r["window"]): r["error"] for r in rows
              if r["status"] == "ERROR"}
    assert len(errors) == 2 and all(errors.values())
    # --json: the summary on stdout, one object; the other lines on stderr
    summary = json.loads(captured.out)
    assert summary["status"] == {"DONE": 2, "ERROR": 2} and len(summary["results"]) == 4


@pytest.mark.parametrize("spec,message", [
    ({"trace": "DEMO", "policy": ["sjf", "nope"]}, "policy: unknown policy 'nope'"),
    ({"trace": "DEMO", "policy": "knapsack", "backend": ["dp", "cpstat"]},
     "backend: unknown backend 'cpstat'"),
    ({"trace": ["DEMO", "missing.swf"]}, "trace missing.swf: no such file"),
])
def test_names_and_missing_traces_stop_before_any_run(tmp_path, capsys, spec, message):
    """A typo in a policy or backend name, or a trace that is not there, is one line and
    exit 2 before anything runs (not a row per run)."""
    spec = {k: ([str(DEMO) if x == "DEMO" else x for x in v] if isinstance(v, list) else
                str(DEMO) if v == "DEMO" else v) for k, v in spec.items()}
    out = tmp_path / "runs.jsonl"
    assert main(["sweep", str(write_sweep(tmp_path, spec)), "--out", str(out),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not out.exists()


@pytest.mark.parametrize("spec, needle", [
    ({"trace": "t.swf", "windw": [1]}, "Did you mean 'window'"),
    ({"policy": ["fcfs"]}, "'trace' is required"),
    ({"trace": "t.swf", "seed": []}, "empty list"),
    ([1, 2], "expected a JSON object"),
    ({"trace": "t.swf", "options": [1]}, "options: expected an object"),
])
def test_a_malformed_sweep_file_is_one_line_before_any_run(tmp_path, capsys, spec, needle):
    out = tmp_path / "runs.jsonl"
    code = main(["sweep", str(write_sweep(tmp_path, spec)), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_traces_are_relative_to_the_sweep_file_and_csv_resumes(tmp_path, capsys):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "t.swf").write_bytes(DEMO.read_bytes())
    spec = {"trace": "t.swf", "jobs": 60, "policy": ["fcfs", "random"], "seed": [0, 1, 2]}
    path = write_sweep(tmp_path / "sub", spec)
    out = tmp_path / "runs.csv"
    assert main(["sweep", str(path), "--out", str(out), "--no-progress"]) == 0
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 6 and all(r["status"] == "DONE" for r in rows)
    # cut the file to its header and two rows: --resume runs the other four only
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:3]) + lines[3][:10])
    capsys.readouterr()
    assert main(["sweep", str(path), "--out", str(out), "--no-progress", "--resume"]) == 0
    assert "skipped 2 runs" in capsys.readouterr().out
    again = list(csv.DictReader(out.open()))
    assert sorted(r["run"] for r in again) == sorted(r["run"] for r in rows)
    strip = lambda rs: sorted(({k: v for k, v in r.items() if k != "wall_time_s"}  # noqa
                               for r in rs), key=lambda r: r["run"])
    assert strip(again) == strip(rows)


def test_resume_reruns_error_rows_and_a_pool_gives_the_serial_rows(tmp_path):
    spec = dict(SPEC, jobs=60, seed=[0])
    path = write_sweep(tmp_path, spec)
    out = tmp_path / "runs.jsonl"
    serial = run_sweep(load_sweep(path)).rows
    # a previous run that failed on every knapsack run
    out.write_text("".join(json.dumps({**r, "status": "ERROR", "error": "boom"}
                                      if r["policy"] == "knapsack" else r) + "\n"
                           for r in serial))
    assert main(["sweep", str(path), "--out", str(out), "--no-progress", "--resume",
                 "--workers", "2", "--chunk", "1"]) == 0
    rows = [r for r in read(out) if r["status"] != "ERROR"]
    strip = lambda rs: sorted(({k: v for k, v in r.items() if k != "wall_time_s"}  # noqa
                               for r in rs), key=lambda r: r["run"])
    assert strip(rows) == strip(serial)


def test_sigterm_keeps_every_row_written(tmp_path):
    spec = {"trace": str(DEMO), "jobs": 150, "policy": "random", "seed": list(range(400))}
    path = write_sweep(tmp_path, spec)
    out = tmp_path / "runs.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "hpcopt.cli", "sweep", str(path), "--out",
                             str(out), "--no-progress"], cwd=tmp_path,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=default_signals)
    t0 = time.time()
    while not (out.exists() and out.read_text().count("\n") >= 2):
        assert proc.poll() is None and time.time() - t0 < 60, proc.communicate()
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "interrupted by SIGTERM" in err and "Traceback" not in err
    rows = read(out)
    assert 2 <= len(rows) < 400
    assert all(r["status"] == "DONE" for r in rows if r["termination"] != "interrupted")
