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


# -- inputs by name ------------------------------------------------------------------------

KTH = "hpc_swf/pwa/KTH-SP2-1996-2.1-cln.swf.gz"


def _data_dir_with_kth(tmp_path) -> Path:
    """A data directory whose kth-sp2 file is the demo trace (names resolve by path only)."""
    import gzip

    root = tmp_path / "data"
    (root / KTH).parent.mkdir(parents=True)
    (root / KTH).write_bytes(gzip.compress(Path(DEMO).read_bytes()))
    return root


def test_a_data_set_name_or_a_path_in_the_data_directory_is_an_input(tmp_path, monkeypatch):
    root = _data_dir_with_kth(tmp_path)
    monkeypatch.setenv(ENV, str(root))
    monkeypatch.chdir(tmp_path)
    by_name = hpcopt.load_trace("kth-sp2", max_jobs=30)
    by_path = hpcopt.load_trace(KTH, max_jobs=30)
    assert len(by_name.jobs) == len(by_path.jobs) == 30
    assert hpcopt.simulate("kth-sp2", jobs=30).summary["job_count"] == 30
    # a file of that name in the current folder wins over the data set
    Path("kth-sp2").write_text(Path(DEMO).read_text())
    assert hpcopt.load_trace("kth-sp2", fmt="swf").report.source.endswith("kth-sp2")
    Path("kth-sp2").unlink()
    # a data set of several files says how to name one; an unknown file of it is one line
    with pytest.raises(hpcopt.errors.HpcoptError, match=r"'wf-bwa' has 15 files; name one "
                                                        r"as wf-bwa/FILE"):
        hpcopt.load_trace("wf-bwa")
    with pytest.raises(hpcopt.errors.HpcoptError, match="has no file 'nosuch'"):
        hpcopt.load_trace("wf-bwa/nosuch")
    # a name whose file is not fetched: the fetch that brings it
    with pytest.raises(DataNotFoundError, match="hpcopt data fetch nasa-ipsc"):
        hpcopt.load_trace("nasa-ipsc")
    # $HPCOPT_DATA/... with the variable unset: a hint to give the name instead
    with pytest.raises(DataNotFoundError, match="give it as 'kth-sp2'"):
        hpcopt.load_trace("/" + KTH)


def test_cli_reads_names_and_prints_where_they_are(tmp_path):
    root = _data_dir_with_kth(tmp_path)
    env = {ENV: str(root)}
    proc = _cli("simulate", "kth-sp2", "--jobs", 40, "--no-progress", env=env)
    assert proc.returncode == 0 and "dropped none of 40 jobs" in proc.stdout, proc.stderr
    proc = _cli("simulate", KTH, "--jobs", 40, "--no-progress", env=env)
    assert proc.returncode == 0, proc.stderr
    proc = _cli("data", "path", env=env)
    assert proc.stdout == f"{root}\n"
    proc = _cli("data", "path", "kth-sp2", "kopanski-bb", env=env)
    assert proc.returncode == 1 and proc.stdout.splitlines() == [str(root / KTH),
                                                                 str(root / KOPANSKI)]
    assert proc.stderr.strip().endswith("hpcopt data fetch kopanski-bb")
    proc = _cli("data", "path", "nosuch", env=env)
    assert proc.returncode == 2 and "not a data set name" in proc.stderr
