"""Learned policies (dras-pg, dras-dql, decima-pg) in simulate and the CLI, and training."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gymnasium")

from hpcopt.agents.dras import DrasAgent, DrasConfig  # noqa: E402
from hpcopt.api import simulate  # noqa: E402
from hpcopt.cli import main  # noqa: E402
from hpcopt.domain import Job, System  # noqa: E402
from hpcopt.errors import HpcoptError, SimulationError  # noqa: E402
from hpcopt.policies import make_policy  # noqa: E402
from hpcopt.policies.dras import CHECKPOINTS  # noqa: E402
from hpcopt.traces import write_swf  # noqa: E402
from hpcopt.trainers.dras_env import DrasEnv, run_episode  # noqa: E402

from .conftest import INSTANCES  # noqa: E402

DEMO = INSTANCES / "traces" / "demo.swf"
TINY = DrasConfig(window=8, node_rows=8, hidden=(8, 8))


@pytest.fixture(autouse=True)
def one_thread():
    torch.set_num_threads(1)


def trained(tmp_path, kind="pg", levels="dras", config=TINY, nodes=64):
    from hpcopt.api import load_trace

    trace = load_trace(DEMO)
    agent = DrasAgent(kind, nodes, config, levels=levels, seed=0)
    env = DrasEnv(trace.jobs[:100], System(nodes), **agent.env_options())
    run_episode(env, agent, learn=True, seed=0)
    return agent.save(tmp_path / f"{levels}-{kind}.pt")


def test_importing_the_policies_does_not_import_torch():
    code = ("import sys, hpcopt.policies, hpcopt.agents; hpcopt.policies.make_policy('dras-pg');"
            "print('torch' in sys.modules, 'gymnasium' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]


@pytest.mark.parametrize(("name", "kind", "levels"), [("dras-pg", "pg", "dras"),
                                                       ("dras-dql", "dql", "dras"),
                                                       ("decima-pg", "pg", "decima")])
def test_learned_policies_simulate_a_trace(tmp_path, name, kind, levels):
    ckpt = trained(tmp_path, kind, levels)
    pol = make_policy(name, checkpoint=str(ckpt))
    res = simulate(DEMO, policy=pol, seed=0)
    assert res.summary["job_count"] == 400
    modes = set(res.jobs["mode"])
    if levels == "decima":
        assert modes == {"ready"} and res.settings["backfill"] == "none"
    else:
        assert "backfilled" in modes and res.settings["backfill"] == "easy"
    assert pol.last_stats["decisions"] > 0 and pol.last_stats["ms_per_decision"] < 10
    again = simulate(DEMO, policy=name, checkpoint=str(ckpt), seed=0)
    assert list(again.jobs["start"]) == list(res.jobs["start"])  # deterministic


def test_reserve_rules(tmp_path):
    ckpt = trained(tmp_path)
    default = simulate(DEMO, policy="dras-pg", checkpoint=str(ckpt), seed=0)
    picked = simulate(DEMO, policy="dras-pg", checkpoint=str(ckpt), reserve="picked", seed=0)
    oldest = simulate(DEMO, policy="dras-pg", checkpoint=str(ckpt), reserve="oldest", seed=0)
    assert list(picked.jobs["start"]) != list(oldest.jobs["start"])
    assert list(default.jobs["start"]) == list(oldest.jobs["start"])  # the safe rule
    assert default.settings["policy_options"]["reserve"] == "oldest"
    with pytest.raises(SimulationError, match="reserve must be one of"):
        simulate(DEMO, policy="dras-pg", checkpoint=str(ckpt), reserve="newest")


def test_online_adaptation_updates_the_network(tmp_path):
    ckpt = trained(tmp_path)
    pol = make_policy("dras-pg", checkpoint=str(ckpt), adapt=True)
    before = DrasAgent.load(ckpt).updates
    simulate(DEMO, policy=pol, seed=1)
    assert pol.agent.updates > before


def test_policy_errors(tmp_path):
    ckpt = trained(tmp_path, "pg")
    with pytest.raises(HpcoptError, match="holds a dras-pg agent; use --policy dras-pg"):
        simulate(DEMO, policy="dras-dql", checkpoint=str(ckpt))
    with pytest.raises(HpcoptError, match="holds a dras-pg agent"):
        simulate(DEMO, policy="decima-pg", checkpoint=str(ckpt))
    with pytest.raises(SimulationError, match="window 5 does not apply"):
        simulate(DEMO, policy="dras-pg", checkpoint=str(ckpt), window=5)
    per_node = trained(tmp_path, config=DrasConfig(window=8, node_rows=None, hidden=(8, 8)),
                       nodes=64)
    with pytest.raises(HpcoptError, match="trained for 64 nodes.*has 128"):
        simulate(DEMO, policy="dras-pg", checkpoint=str(per_node), nodes=128)
    with pytest.raises(SimulationError, match="picks one job at a time"):
        make_policy("dras-pg").decide(None)


def test_starvation_bound_and_period_apply_to_learned_policies(tmp_path):
    """The driver's starvation bound and periodic passes work for one-pick policies too."""
    ckpt = trained(tmp_path)
    base = simulate(DEMO, policy="dras-pg", checkpoint=str(ckpt), seed=0)
    bounded = simulate(DEMO, policy="dras-pg", checkpoint=str(ckpt), seed=0, starvation_bound=1)
    periodic = simulate(DEMO, policy="dras-pg", checkpoint=str(ckpt), seed=0, period=600)
    assert bounded.summary["job_count"] == periodic.summary["job_count"] == 400
    assert bounded.settings["starvation_bound"] == 1 and periodic.settings["period"] == 600
    # passes only every 600 s: every start lies on the tick grid from the first submission
    first = float(base.jobs["submit"].min())
    assert (((periodic.jobs["start"] - first) % 600) == 0).all()


@pytest.mark.parametrize("name", ["dras-pg", "dras-dql", "decima-pg"])
def test_shipped_checkpoints(name):
    path = CHECKPOINTS / f"{name}-small-n4360.pt"
    agent = DrasAgent.load(path)
    assert agent.nodes == 4360 and agent.config.node_rows == 128
    assert agent.meta["episode"] >= 0
    # the size-independent encoding runs the Theta checkpoint on the 64-node demo machine
    res = simulate(DEMO, policy=name, jobs=150, seed=0)
    assert res.summary["job_count"] == 150


def _long_trace(path):
    rng = np.random.default_rng(0)
    sub = np.cumsum(rng.exponential(86400 * 100 / 240, 240))
    jobs = [Job(id=i + 1, submit=float(s), runtime=float(r), walltime=float(r) * 1.5,
                nodes=int(rng.integers(1, 17)))
            for i, (s, r) in enumerate(zip(sub, rng.integers(600, 20000, 240)))]
    return write_swf(jobs, path, {"MaxNodes": 16, "MaxProcs": 16})


def test_cli_train_then_simulate(tmp_path, capsys):
    trace = _long_trace(tmp_path / "t.swf")
    out = tmp_path / "run"
    assert main(["train", "dras", "--trace", str(trace), "--agent", "dql", "--sampled", "1",
                 "--real", "1", "--synthetic", "1", "--jobs-per-set", "40", "--out", str(out),
                 "--no-progress"]) == 0
    assert "trained 3 episodes" in capsys.readouterr().out
    for f in ("best.pt", "episode_000.pt", "episode_002.pt", "curve.csv", "curve.png"):
        assert (out / f).is_file(), f
    doc = json.loads((out / "train.json").read_text())
    assert doc["episodes"] == 3 and doc["nodes"] == 16 and doc["validate_jobs"] > 0
    assert main(["simulate", str(trace), "--policy", "dras-dql", "--checkpoint",
                 str(out / "best.pt"), "--no-progress"]) == 0
    assert "dras-dql" in capsys.readouterr().out
    assert main(["simulate", str(trace), "--policy", "dras-dql", "--checkpoint",
                 str(out / "best.pt"), "--reserve", "oldest", "--adapt", "--out",
                 str(tmp_path / "sim"), "--no-progress"]) == 0
    settings = json.loads((tmp_path / "sim" / "summary.json").read_text())["settings"]
    assert settings["policy_options"]["reserve"] == "oldest"
    assert settings["policy_options"]["adapt"] is True


@pytest.mark.parametrize(("argv", "needle"), [
    (["train", "dras", "--trace", "x.swf", "--agent", "pq"], "unknown DRAS agent 'pq'"),
    (["train", "dras", "--trace", "x.swf", "--config", "huge"], "unknown DRAS config 'huge'"),
    (["train", "dras", "--trace", str(DEMO), "--phases", "real,sampled"], "must name each of"),
    (["simulate", str(DEMO), "--policy", "dras-pg", "--checkpoint", "/no/such.pt"],
     "checkpoint '/no/such.pt' not found"),
])
def test_cli_one_line_errors(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
