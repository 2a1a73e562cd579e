"""The command line: outputs, batch errors as rows, one-line errors, the demo."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from hpcopt.cli import main

from .conftest import INSTANCES

DEMO_TRACE = str(INSTANCES / "traces" / "demo.swf")


def test_simulate_writes_jobs_and_summary(tmp_path, capsys):
    out = tmp_path / "sim"
    assert main(["simulate", DEMO_TRACE, "--jobs", "100", "--out", str(out),
                 "--no-progress"]) == 0
    jobs = pd.read_csv(out / "jobs.csv")
    summary = json.loads((out / "summary.json").read_text())
    assert len(jobs) == 100 and summary["job_count"] == 100
    assert {"avg_wait", "max_wait", "avg_bounded_slowdown", "utilization"} <= set(summary)
    assert summary["cleaning"]["kept"] == 100
    assert "avg_wait" in capsys.readouterr().out


def test_simulate_knapsack_policy_with_backend(tmp_path):
    assert main(["simulate", DEMO_TRACE, "--jobs", "60", "--policy", "knapsack", "--backend",
                 "cpsat", "--window", "10", "--no-progress"]) == 0


def test_solve_batch_keeps_going_past_a_bad_file(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    out = tmp_path / "rows.jsonl"
    code = main(["solve", str(INSTANCES / "knapsack" / "*.json"), str(bad), "--backend", "dp",
                 "--out", str(out)])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert code == 1
    errors = [r for r in rows if r["status"] == "ERROR"]
    assert len(errors) == 1 and "bad.json" in errors[0]["error"]
    ok = [r for r in rows if r["status"] == "OPTIMAL"]
    assert len(ok) >= 10 and all(r["certified"] and isinstance(r["decision"], list) for r in ok)


def test_solve_csv_has_space_separated_decisions(tmp_path):
    out = tmp_path / "rows.csv"
    assert main(["solve", str(INSTANCES / "knapsack" / "bb_table1.json"), "--backend",
                 "dp,cpsat", "--out", str(out)]) == 0
    df = pd.read_csv(out)
    assert list(df["decision"]) == ["J1 J5", "J1 J5"]
    assert list(df["objective"]) == [100, 100]


def test_solve_in_parallel_workers(tmp_path):
    out = tmp_path / "rows.csv"
    assert main(["solve", str(INSTANCES / "knapsack" / "*.json"), "--workers", "2",
                 "--out", str(out)]) == 0
    assert (pd.read_csv(out)["status"] == "OPTIMAL").all()


@pytest.mark.parametrize("argv, needle", [
    (["solve", "x.json", "--backend", "dpp"], "unknown backend 'dpp'"),
    (["simulate", "does-not-exist.swf"], "does-not-exist.swf"),
    (["simulate", DEMO_TRACE, "--policy", "fcfz"], "Did you mean 'fcfs'"),
])
def test_errors_are_one_line_without_traceback(argv, needle, capsys):
    assert main(argv) != 0
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_malformed_trace_line_is_named(tmp_path, capsys):
    bad = tmp_path / "bad.swf"
    bad.write_text("1 0 0 10 1 -1 -1 1 10 -1 1 -1 -1 -1 -1 -1 -1 -1\n2 5 0 x 1\n")
    assert main(["simulate", str(bad), "--nodes", "4"]) == 2
    err = capsys.readouterr().err
    assert "bad.swf:2" in err and len(err.strip().splitlines()) == 1


def test_listing_commands(capsys):
    assert main(["backends"]) == 0
    out = capsys.readouterr().out
    for name in ("dp", "cpsat", "ortools", "scip", "greedy", "pyomo:<solver>"):
        assert name in out
    assert main(["policies"]) == 0
    out = capsys.readouterr().out
    for name in ("fcfs", "sjf", "wfp", "largest-first", "random", "knapsack"):
        assert name in out


def test_demo_runs_as_installed_console_script(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "hpcopt.cli", "demo", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "fcfs+easy" in proc.stdout and "bb_table1" in proc.stdout
    assert (tmp_path / "solve.csv").exists()
