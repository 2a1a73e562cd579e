"""The data directory (HPCOPT_DATA / --data-dir) and the workload assembly that simulate(),
sweeps and the CLI share (hpcopt.scenario)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import hpcopt
from hpcopt.datadir import ENV, data_dir, data_path
from hpcopt.errors import DataNotFoundError, SimulationError
from hpcopt.workloads import AZURE, KOPANSKI, load_batsim

from .conftest import INSTANCES, SHARED_DATA, shared_file

HPCOPT = str(Path(sys.executable).with_name("hpcopt"))
DEMO = str(INSTANCES / "traces" / "demo.swf")


def _cli(*args, env=None):
    full = {k: v for k, v in os.environ.items() if k != ENV}
    return subprocess.run([HPCOPT, *map(str, args)], capture_output=True, text=True,
                          timeout=300, env={**full, **(env or {})})


def test_environment_variable_wins(tmp_path, monkeypatch):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f.txt").write_text("x")
    monkeypatch.setenv(ENV, str(tmp_path))
    assert data_dir() == tmp_path and data_path("a/f.txt", "a test") == tmp_path / "a" / "f.txt"
    with pytest.raises(DataNotFoundError) as err:
        data_path("a/g.txt", "the test's reader")
    msg = str(err.value)
    assert msg.startswith(f"a/g.txt: not found (not in the data directory {tmp_path})")
    assert "needed by the test's reader" in msg and ENV in msg and "--data-dir" in msg
    assert "\n" not in msg and isinstance(err.value, FileNotFoundError)


def test_library_defaults_read_the_data_directory(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, str(tmp_path))  # an empty data directory
    with pytest.raises(DataNotFoundError, match=f"^{KOPANSKI}: not found"):
        load_batsim()
    with pytest.raises(DataNotFoundError, match=f"^{AZURE}/v1.train.txt.gz: not found.*"
                                                "OSDEC train pool"):
        hpcopt.workloads.deferrable_suite("train", 1)
    with pytest.raises(DataNotFoundError, match=f"^{AZURE}/v1.dev.txt.gz: not found"):
        hpcopt.workloads.deferrable_workload(slots=4)
    kop = shared_file(KOPANSKI)
    monkeypatch.setenv(ENV, str(SHARED_DATA))
    assert len(load_batsim().jobs) == len(load_batsim(kop).jobs) == 1000


def test_cli_says_what_is_missing(tmp_path):
    proc = _cli("simulate", DEMO, "--jobs", 20, "--workload", "S2", "--no-progress",
                env={ENV: str(tmp_path)})
    err = proc.stderr.strip()
    assert proc.returncode == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"hpcopt: error: {KOPANSKI}: not found") and ENV in err
    proc = _cli("workload", "osdec", "--out", tmp_path / "w.json", "--data-dir", tmp_path)
    assert proc.returncode == 2 and f"{AZURE}/v1.dev.txt.gz: not found" in proc.stderr
    proc = _cli("--data-dir", tmp_path / "nope", "backends")
    assert proc.returncode == 2 and "no such directory" in proc.stderr


def test_cli_data_dir_option_reaches_the_defaults(tmp_path):
    shared_file(KOPANSKI)
    out = tmp_path / "s2"
    proc = _cli("simulate", DEMO, "--jobs", 60, "--workload", "S2", "--no-progress",
                "--out", out, "--data-dir", SHARED_DATA)
    assert proc.returncode == 0, proc.stderr
    assert "workload S2 (seed 0): 45 of 60 jobs ask for burst buffer" in proc.stdout
    api = hpcopt.simulate(DEMO, jobs=60, workload="S2")
    cli = pd.read_csv(out / "jobs.csv")
    assert list(cli["bb"]) == list(api.jobs["bb"]) and cli["bb"].gt(0).sum() == 45
    doc = json.loads((out / "summary.json").read_text())
    assert doc["settings"]["workload"] == api.settings["workload"] == "S2"
    assert doc["avg_wait"] == pytest.approx(api.summary["avg_wait"])


def test_simulate_shapes_the_system_like_the_cli(tmp_path):
    res = hpcopt.simulate(DEMO, jobs=80, bb=100, ssd_classes="128:32,256:32")
    assert {"bb", "ssd", "ssd_assigned"} <= set(res.jobs.columns)
    assert (res.jobs["ssd_assigned"] >= 128).all() and res.settings["nodes"] == 64
    with pytest.raises(SimulationError, match="ssd_classes '128:x'"):
        hpcopt.simulate(DEMO, jobs=10, ssd_classes="128:x")
    with pytest.raises(SimulationError, match="workload 'S9': expected one of"):
        hpcopt.simulate(DEMO, jobs=10, workload="S9")
    with pytest.raises(SimulationError, match="a job list needs system="):
        hpcopt.simulate(list(hpcopt.load_trace(DEMO).jobs), nodes=64, workload="S2")
    # the CLI's --bb/--ssd-classes build the same system
    proc = _cli("simulate", DEMO, "--jobs", 80, "--bb", 100, "--ssd-classes", "128:32,256:32",
                "--no-progress", "--out", tmp_path / "c")
    assert proc.returncode == 0, proc.stderr
    cli = pd.read_csv(tmp_path / "c" / "jobs.csv")
    assert list(cli["ssd_assigned"]) == list(res.jobs["ssd_assigned"])


def test_sweep_reaches_the_workload_settings(tmp_path):
    shared_file(KOPANSKI)
    from hpcopt.sweep import load_sweep, run_sweep

    sweep = load_sweep({"trace": [DEMO], "jobs": 40, "workload": ["original", "S1"],
                        "bb": 320}, base=tmp_path)
    rows = run_sweep(sweep, progress=False).rows
    assert [r["status"] for r in rows] == ["DONE", "DONE"]
    assert [r["workload"] for r in rows] == ["original", "S1"]
    assert rows[1]["bb_usage"] > 0
