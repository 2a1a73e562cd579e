"""What a researcher meets first: schedules they can see (the Gantt view, the per-event log,
machine-readable summaries, solver logs, convergence histories) and the command line's
checks (names before inputs, one-line usage errors)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hpcopt
from hpcopt.plots import PlotError, gantt_layout, plot, read_fronts

from .conftest import INSTANCES

HPCOPT = str(Path(sys.executable).with_name("hpcopt"))
DEMO = INSTANCES / "traces" / "demo.swf"
MODES = {"ready", "reserved", "backfilled"}


def cli(*args, cwd=None, timeout=300):
    return subprocess.run([HPCOPT, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env={**os.environ, "MPLBACKEND": "Agg"})


# -- the per-event log and --json ----------------------------------------------------------

def test_events_log_one_tidy_row_per_driver_event(tmp_path):
    events = tmp_path / "ev.jsonl"
    proc = cli("simulate", DEMO, "--jobs", 120, "--policy", "fcfs", "--events", events,
               "--out", tmp_path / "run", "--no-progress", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)  # stdout holds the JSON object only
    assert doc["summary"]["job_count"] == 120 and doc["settings"]["policy"] == "fcfs"
    assert doc["files"]["events"] == str(events) and "demo: 64 nodes" in proc.stderr
    rows = [json.loads(line) for line in events.read_text().splitlines()]
    kinds = [r["event"] for r in rows]
    assert kinds.count("submit") == kinds.count("start") == kinds.count("complete") == 120
    assert set(kinds) <= {"submit", "start", "reserve", "complete", "drop"}
    assert all({"time", "event", "job", "nodes"} <= set(r) for r in rows)
    times = [r["time"] for r in rows]
    assert times == sorted(times)
    starts = {r["job"]: r for r in rows if r["event"] == "start"}
    assert {r["mode"] for r in starts.values()} <= MODES
    for r in rows:
        if r["event"] == "complete":
            assert r["start"] == starts[r["job"]]["time"] and r["end"] == r["time"]
        if r["event"] == "reserve":
            assert r["shadow"] >= r["time"]
    # the same rows from Python, and the modes agree with jobs.csv
    got = []
    res = hpcopt.simulate(str(DEMO), jobs=120, policy="fcfs", events=got.append)
    assert got == rows
    assert dict(zip(res.jobs["job_id"], res.jobs["mode"])) == {
        j: r["mode"] for j, r in starts.items()}


def test_osdec_run_logs_its_drops(tmp_path):
    events = tmp_path / "ev.jsonl"
    proc = cli("simulate", INSTANCES / "osdec" / "tiny_4jobs.json", "--policy", "fifo",
               "--events", events, "--no-progress", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in events.read_text().splitlines()]
    summary = json.loads(proc.stdout)["summary"]
    assert sum(r["event"] == "drop" for r in rows) == summary["driver_dropped"]
    assert sum(r["event"] == "submit" for r in rows) == summary["jobs"]


def test_solve_json_and_solver_log(tmp_path):
    out = tmp_path / "rows.jsonl"
    proc = cli("solve", "knapsack/bb_table1", "osdec/tiny_4jobs", "--backend", "scip,cpsat",
               "--out", out, "--no-progress", "--json", "--solver-log")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["rows"] == 4 and doc["status"] == {"OPTIMAL": 4} and doc["errors"] == 0
    assert [(r["instance"], r["backend"]) for r in doc["results"]] == [
        ("bb_table1", "scip"), ("bb_table1", "cpsat"), ("tiny_4jobs", "scip"),
        ("tiny_4jobs", "cpsat")]
    # each solver's own log on stderr as the solve ends, and in the row
    assert proc.stderr.count("--- solver log: ") == 4
    assert "presolving" in proc.stderr and "Starting CP-SAT solver" in proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert "presolving" in rows[0]["log"] and "CP-SAT" in rows[1]["log"]
    # without --solver-log: no log field, nothing on stderr but the table
    plain = cli("solve", "knapsack/bb_table1", "--backend", "scip", "--out", "-",
                "--no-progress")
    assert "log" not in json.loads(plain.stdout) and "presolving" not in plain.stderr
    refused = cli("solve", "knapsack/bb_table1", "--json", "--out", "-")
    assert refused.returncode == 2 and "--json and --out -" in refused.stderr


def test_solver_log_option_in_python():
    res = hpcopt.solve("knapsack/bb_table1", backend="scip",
                       solver_options={"solver_log": True})
    assert "presolving" in res.log
    assert "presolving" not in hpcopt.solve("knapsack/bb_table1", backend="scip").log
    with pytest.raises(hpcopt.errors.SolverOptionError, match="solver_log must be true"):
        hpcopt.solve("knapsack/bb_table1", backend="dp", solver_options={"solver_log": 1})


# -- the Gantt view ------------------------------------------------------------------------

def test_gantt_layout_never_overlaps():
    res = hpcopt.simulate(str(DEMO), policy="knapsack", window=10, backend="greedy")
    jobs = res.jobs
    start, end = jobs["start"].to_numpy(), jobs["end"].to_numpy()
    nodes = jobs["nodes"].to_numpy()
    runs = gantt_layout(start, end, nodes, 64)
    assert sum(c for _, _, c in runs) == nodes.sum()
    assert max(r + c for _, r, c in runs) <= 64  # the driver never oversubscribes
    # no two jobs hold one rank at the same time
    by_rank: dict[int, list] = {}
    for i, r, c in runs:
        for rank in range(r, r + c):
            by_rank.setdefault(rank, []).append((start[i], end[i]))
    for spans in by_rank.values():
        spans.sort()
        assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:]))


def test_plot_gantt_command_and_time_window(tmp_path):
    run = tmp_path / "run"
    assert cli("simulate", DEMO, "--policy", "fcfs", "--out", run,
               "--no-progress").returncode == 0
    proc = cli("plot", "gantt", run)
    assert proc.returncode == 0 and (run / "gantt.png").stat().st_size > 10_000
    proc = cli("plot", "gantt", run, "--from", 1, "--until", 10, "--out",  # hours, as the axis
               tmp_path / "w.png")
    assert proc.returncode == 0 and (tmp_path / "w.png").is_file()
    with pytest.raises(PlotError, match="time window .* is empty"):
        plot("gantt", [run], tmp_path / "x.png", t_from=10.0, t_until=5.0)
    with pytest.raises(PlotError, match="expected one run folder"):
        plot("gantt", [run, run], tmp_path / "x.png")


# -- convergence histories -----------------------------------------------------------------

def _bbsched(n=40, seed=3):
    from hpcopt.models.bbsched import BBSchedModel

    rng = np.random.default_rng(seed)
    return BBSchedModel(rng.choice([1, 2, 4, 8, 16, 32], n),
                        np.where(rng.random(n) < 0.6, rng.integers(100, 4000, n), 0),
                        free_nodes=200, free_bb=9000.0)


@pytest.mark.parametrize("backend", ["bbsched-ga", "nsga2"])
def test_population_searches_keep_a_convergence_history(backend):
    model = _bbsched()
    res = hpcopt.solve(model, backend=backend, seed=2,
                       solver_options={"generations": 60})
    hist = res.history
    assert hist[0]["generation"] == 0 and hist[-1]["generation"] == 60
    assert {"evaluations", "front_size", "best_nodes", "best_bb"} <= set(hist[0])
    evals = [h["evaluations"] for h in hist]
    assert evals == sorted(evals) and hist[-1]["evaluations"] == res.n_evals
    best = max(p.objectives[0] for p in res.pareto)
    assert hist[-1]["best_nodes"] == best
    # deterministic given the seed
    again = hpcopt.solve(model, backend=backend, seed=2, solver_options={"generations": 60})
    assert again.history == hist


def test_plot_pareto_draws_histories(tmp_path):
    from hpcopt.instances import save_instance

    path = save_instance(tmp_path / "w.json", _bbsched(), "w40")
    out = tmp_path / "rows.jsonl"
    proc = cli("solve", path, "--backend", "bbsched-ga,nsga2", "--out", out, "--no-progress")
    assert proc.returncode == 0, proc.stderr
    fronts = read_fronts(out)
    assert all(f["history"] for f in fronts)
    assert cli("plot", "pareto", out).returncode == 0
    assert out.with_suffix(".pareto.png").stat().st_size > 10_000


# -- names first, one line ----------------------------------------------------------------

def test_policy_and_backend_names_before_the_trace_is_read(tmp_path):
    # the trace does not exist: the name is what the line is about
    proc = cli("simulate", tmp_path / "nosuch.swf", "--policy", "fcsf")
    assert proc.returncode == 2 and "unknown policy 'fcsf'" in proc.stderr
    assert "Did you mean 'fcfs'" in proc.stderr and proc.stderr.count("\n") == 1
    proc = cli("simulate", tmp_path / "nosuch.swf", "--policy", "knapsack", "--backend",
               "cpstat")
    assert proc.returncode == 2 and "unknown backend 'cpstat'" in proc.stderr
    proc = cli("simulate", tmp_path / "nosuch.swf", "--policy", "fcfs", "--value", "nodes")
    assert proc.returncode == 2 and "does not take option(s) ['value']" in proc.stderr


def test_a_bad_value_is_one_line_with_a_pointer_to_help():
    proc = cli("simulate", DEMO, "--jobs", "-3")
    assert proc.returncode == 2
    assert proc.stderr == ("hpcopt simulate: error: argument --jobs: expected a positive "
                           "integer, got '-3' (see 'hpcopt simulate --help')\n")
    proc = cli("solve", "x.json", "--workers", "zero")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "see 'hpcopt solve --help'" in proc.stderr and "usage:" not in proc.stderr


def test_progress_bars_stay_off_a_log(tmp_path):
    """Standard error that is not a terminal (a log, a pipe) gets no progress-bar fragments,
    only hpcopt's lines."""
    proc = cli("simulate", DEMO, "--policy", "fcfs", "--out", tmp_path / "r")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    proc = cli("solve", "knapsack/bb_table1", "osdec/tiny_4jobs", "--out",
               tmp_path / "rows.jsonl")
    assert proc.returncode == 0 and "%|" not in proc.stderr and "\r" not in proc.stderr


def test_bundled_files_point_nowhere_outside_the_package():
    """What ships (instances, checkpoint notes) names its sources so a user can find them:
    never a path of the development layout such as ../shared/papers."""
    from hpcopt.instances import bundled_path

    roots = [bundled_path(), Path(hpcopt.__file__).parent]
    for root in roots:
        for f in root.rglob("*.json"):
            text = f.read_text(encoding="utf-8", errors="replace")
            assert "../shared" not in text and "shared/papers" not in text, f


def test_a_learned_policy_without_torch_fails_before_the_trace_is_read(tmp_path):
    """Without torch, --policy dras-pg is one line at once, not after reading the trace (the
    trace here does not even exist)."""
    import sys

    code = ("import sys; sys.modules['torch'] = None; from hpcopt.cli import main; "
            "sys.exit(main(['simulate', 'nosuch.swf', '--policy', 'dras-pg']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "hpcopt: error: policy 'dras-pg' needs torch: pip install " \
                          "'hpcopt[ml]'\n"
