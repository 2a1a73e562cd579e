"""The command line as a new user meets it: exit codes, listings that fit 100 columns and
have --json, bundled instances by name, the ml extra, workflow caps, training counts and
progress bars.  CLI paths run the installed console script in a subprocess."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hpcopt
from hpcopt.cli import COMMANDS, main
from hpcopt.instances import FAMILIES, bundled_instances

from .conftest import INSTANCES

HPCOPT = str(Path(sys.executable).with_name("hpcopt"))
DEMO = str(INSTANCES / "traces" / "demo.swf")
NO_TORCH = """
import sys
class _NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError(f"No module named {name!r}")
sys.meta_path.insert(0, _NoTorch())
"""


def hpcopt_cli(*args, env=None, cwd=None, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([HPCOPT, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, cwd=cwd)


def test_every_subcommand_registers_itself():
    names = ["solve", "sweep", "simulate", "train", "serve", "decide", "backends", "policies",
             "instances", "workflow", "workload", "plot", "demo", "slurm", "data", "trace"]
    assert sorted(COMMANDS) == sorted(names)
    proc = hpcopt_cli("--help")
    assert proc.returncode == 0 and all(n in proc.stdout for n in names)


def test_internal_error_is_one_line_exit_3(monkeypatch, capsys):
    from hpcopt.cli import backends

    def bug(args):
        raise ValueError("a bug, not bad input")

    monkeypatch.setattr(backends, "run", bug)
    assert main(["backends"]) == 3
    err = capsys.readouterr().err.strip()
    assert err.startswith("hpcopt: internal error: ValueError: a bug, not bad input")
    assert "run with --debug for the traceback" in err and len(err.splitlines()) == 1
    with pytest.raises(ValueError):
        main(["backends", "--debug"])  # --debug after the subcommand works too


def test_user_error_is_one_line_exit_2():
    proc = hpcopt_cli("simulate", DEMO, "--policy", "fcfz", "--no-progress")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        proc.stderr.strip()] and "Did you mean 'fcfs'" in proc.stderr


@pytest.mark.parametrize("flags, needle", [
    (["--warmup", "nan"], "warm-up/cool-down must be a number >= 0, got nan"),
    (["--bb", "nan"], "system burst buffer must be a number >= 0, got nan"),
    (["--ssd-classes", "nan:64"], "ssd_classes 'nan:64': expected GB:NODES pairs"),
])
def test_bad_numbers_are_user_errors(flags, needle, capsys):
    """Inputs that once reached a bare ValueError/KeyError (now an internal error, exit 3)."""
    assert main(["simulate", DEMO, "--jobs", "20", "--no-progress", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"hpcopt: error: {needle}" or (needle in err and len(err.splitlines()) == 1)


@pytest.mark.parametrize("command, key", [("policies", "policy"), ("backends", "backend")])
def test_listings_fit_100_columns_and_have_json(command, key):
    text = hpcopt_cli(command)
    assert text.returncode == 0, text.stderr
    assert max(len(line) for line in text.stdout.splitlines()) <= 100
    rows = [json.loads(line) for line in hpcopt_cli(command, "--json").stdout.splitlines()]
    assert len(rows) > 5 and all(key in r for r in rows)
    for row in rows:  # every row's name is on a line of its own in the table
        assert any(line.split()[:1] == [row[key]] for line in text.stdout.splitlines())


def test_policies_mark_the_ml_extra():
    rows = {r["policy"]: r for r in map(json.loads, hpcopt_cli(
        "policies", "--json").stdout.splitlines())}
    learned = {"dras-pg", "dras-dql", "decima-pg", "osdec", "ppo-att", "ppo-mlp"}
    assert {p for p, r in rows.items() if r["needs"] == "ml"} >= learned
    assert rows["fcfs"]["needs"] is None and rows["knapsack"]["needs"] is None
    table = hpcopt_cli("policies").stdout.splitlines()
    assert any(line.split()[0] == "dras-pg" and line.split()[-1] == "ml" for line in table)
    # each description is a whole sentence, not a docstring's first line cut mid-sentence
    assert all(r["doc"].endswith(".") for r in rows.values()), \
        [p for p, r in rows.items() if not r["doc"].endswith(".")]
    assert rows["fifo"]["doc"].endswith("then submission order).")
    assert rows["alignment-first"]["doc"].endswith("until none fits.")


def test_learned_policies_without_torch_are_one_clean_line(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(NO_TORCH)
    env = {"PYTHONPATH": str(tmp_path)}
    probe = subprocess.run([sys.executable, "-c", "import torch"], env={**os.environ, **env},
                           capture_output=True, text=True)
    assert probe.returncode != 0  # the block works
    lines = {}
    for policy, trace in (("dras-pg", DEMO), ("dras-dql", DEMO),
                          ("osdec", INSTANCES / "osdec" / "tiny_4jobs.json")):
        proc = hpcopt_cli("simulate", trace, "--policy", policy, "--jobs", "30",
                          "--no-progress", env=env)
        assert proc.returncode == 2, proc.stderr
        lines[policy] = proc.stderr.strip()
    for policy, line in lines.items():
        assert line == f"hpcopt: error: policy {policy!r} needs torch: pip install " \
                       "'hpcopt[ml]'"
    proc = hpcopt_cli("train", "nsa", "--episodes", "2", env=env)
    assert proc.returncode == 2 and "needs torch" in proc.stderr
    # the listings and the service say what is missing and how to install it
    rows = {r["backend"]: r for r in map(json.loads, hpcopt_cli(
        "backends", "--json", env=env).stdout.splitlines())}
    assert rows["nsa"]["available"] is False
    assert rows["nsa"]["needs"] == "torch: pip install 'hpcopt[ml]'"
    assert rows["dp"]["needs"] is None
    text = hpcopt_cli("backends", env=env).stdout
    assert "needs: torch: pip install 'hpcopt[ml]'" in text
    proc = subprocess.run([HPCOPT, "serve", "--stdio"], input='{"id": 1, "op": "hello"}\n',
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})
    hello = json.loads(proc.stdout.splitlines()[0])
    assert "dras-pg" not in hello["policies"] and "fcfs" in hello["policies"]
    assert "nsa" not in hello["backends"] and "dp" in hello["backends"]
    assert hello["unavailable"]["dras-pg"] == "torch: pip install 'hpcopt[ml]'"
    assert hello["unavailable"]["nsa"] == "torch: pip install 'hpcopt[ml]'"


def test_instances_lists_every_family_and_names_load(tmp_path):
    proc = hpcopt_cli("instances")
    assert proc.returncode == 0 and max(map(len, proc.stdout.splitlines())) <= 100
    rows = [json.loads(line) for line in hpcopt_cli("instances", "--json").stdout.splitlines()]
    assert {r["name"].split("/")[0] for r in rows} == set(FAMILIES)
    assert rows == bundled_instances()
    for row in rows:
        inst = hpcopt.load_instance(row["name"])
        assert inst.model_kind == row["model"] and row["name"].endswith("/" + inst.name)
    known = {r["name"]: r["optimum"] for r in rows if r["optimum"] is not None}
    assert known["knapsack/bb_table1"] == 100 and known["osdec/tiny_4jobs"] == 14
    only = hpcopt_cli("instances", "osdec", "--json").stdout.splitlines()
    assert [json.loads(x)["name"].split("/")[0] for x in only] == ["osdec"] * 3
    bad = hpcopt_cli("instances", "knapsak")
    assert bad.returncode == 2 and "Did you mean 'knapsack'" in bad.stderr
    # solve takes the names from any folder; a file of that name would win
    out = tmp_path / "rows.jsonl"
    proc = hpcopt_cli("solve", "knapsack/bb_table1", "osdec/tiny_4jobs", "--out", out,
                      "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = {r["instance"]: r["objective"] for r in map(json.loads, out.read_text().splitlines())}
    assert got == {"bb_table1": 100, "tiny_4jobs": 14}
    missing = hpcopt_cli("solve", "knapsack/nope", "--no-progress", cwd=tmp_path)
    # a missing input is exit 2, one line, before anything is solved
    assert missing.returncode == 2 and "no bundled instance has that name" in missing.stderr
    assert missing.stderr.count("\n") == 1 and missing.stdout == ""


def _wfformat(path: Path, width: int) -> Path:
    """A WfFormat 1.5 workflow: one task, then ``width`` parallel tasks, then one."""
    tasks = [("a", 100, [])] + [(f"b{i}", 200, ["a"]) for i in range(width)] + [
        ("c", 50, [f"b{i}" for i in range(width)])]
    path.write_text(json.dumps({"name": "wide", "schemaVersion": "1.5", "workflow": {
        "specification": {"tasks": [{"id": i, "name": i, "parents": p, "children": []}
                                    for i, _, p in tasks], "files": []},
        "execution": {"makespanInSeconds": 1, "tasks": [{"id": i, "runtimeInSeconds": r}
                                                        for i, r, _ in tasks]}}}))
    return path


def test_workflow_without_cap_fits_the_machine(tmp_path):
    wf = _wfformat(tmp_path / "wide.json", 100)  # 100 tasks wide, the machine has 64 cores
    proc = hpcopt_cli("workflow", wf, "--trace", DEMO, "--strategy", "perstage", "--warmup",
                      "3600", "--out", tmp_path / "out", "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert "--cap 64: the widest level has 100 tasks" in proc.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["settings"]["cap"] == 64
    narrow = hpcopt_cli("workflow", _wfformat(tmp_path / "narrow.json", 8), "--trace", DEMO,
                        "--strategy", "perstage", "--warmup", "3600", "--out",
                        tmp_path / "n", "--no-progress")
    assert narrow.returncode == 0 and "--cap" not in narrow.stderr
    assert json.loads((tmp_path / "n" / "summary.json").read_text())["settings"]["cap"] is None


def test_simulator_progress_bar_counts_injected_jobs(capsys, monkeypatch):
    import sys

    from hpcopt.api import load_trace
    from hpcopt.policies import make_policy
    from hpcopt.sim.driver import Event, Simulator

    trace = load_trace(DEMO, max_jobs=30)
    extra = []

    def inject(sim, event, record):
        if len(extra) < 20:
            extra.append(record.job.id)
            sim.submit(record.job.__class__(id=10_000 + len(extra), submit=sim.now, runtime=5,
                                            walltime=10, nodes=1))

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # the bar shows on terminals
    sim = Simulator(list(trace.jobs), trace.system, make_policy("fcfs"), progress=True)
    sim.subscribe(Event.COMPLETE, inject)
    sim.run()
    assert len(sim.records) == 50
    counts = re.findall(r"(\d+)/(\d+) ", capsys.readouterr().err)
    assert counts and counts[-1] == ("50", "50")
    assert all(int(done) <= int(total) for done, total in counts)


def test_train_nsa_trains_the_episodes_asked(tmp_path, capsys):
    pytest.importorskip("torch")
    out = tmp_path / "run"
    rc = main(["train", "nsa", "--arch", "fcn1", "--episodes", "20", "--batch", "16",
               "--windows", "3", "--q", "20", "--seed", "1", "--out", str(out),
               "--val-episodes", "0", "--no-progress", "--no-plot"])
    assert rc == 0 and "trained 20 episodes" in capsys.readouterr().out
    doc = json.loads((out / "train.json").read_text())
    assert doc["episodes"] == 20 and doc["updates"] == 2


def test_train_osdec_speaks_before_building_its_pool(tmp_path):
    pytest.importorskip("torch")
    from hpcopt.datadir import data_dir

    if data_dir() is None or not (data_dir() / "cloud").is_dir():
        pytest.skip("the OSDEC training pool needs the data directory")
    proc = subprocess.Popen([HPCOPT, "train", "osdec", "--iterations", "1",
                             "--train-trajectories", "1", "--val-trajectories", "1", "--out",
                             str(tmp_path / "o"), "--no-plot"], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)
    try:
        first = proc.stderr.readline()  # before any trajectory is read
        assert first.startswith("building the training pool: 2 one-day trajectories")
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("argv", [
    ["simulate", str(INSTANCES / "traces" / "demo.swf"), "--no-progress"],
    ["demo"], ["sweep", "grid.json"], ["workload", "osdec", "day.txt"],
    ["train", "dras"], ["train", "nsa"], ["train", "osdec"],
    ["workflow", "wf.json", "--trace", "t.swf"],
])
@pytest.mark.parametrize("out", ["", "  "])
def test_a_blank_out_is_refused_before_any_work(argv, out, capsys):
    """A blank --out would run the whole command and write nothing."""
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--out", out])
    assert exit_.value.code == 2
    assert "--out: expected a file or folder name" in capsys.readouterr().err
