"""One driver loop for every policy: ``Simulator(...).run()`` equals ``hpcopt.simulate`` for
each registered policy, the gymnasium env is the same process as the policy, the env is
registered with gymnasium, and the CLI's policy flags come from the policies' declarations."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
torch.set_num_threads(1)
pytest.importorskip("gymnasium")

import hpcopt  # noqa: E402
from hpcopt.cli import main, policy_flags  # noqa: E402
from hpcopt.domain import Job, System  # noqa: E402
from hpcopt.policies import make_policy, policy_names  # noqa: E402
from hpcopt.policies.base import declared_options  # noqa: E402
from hpcopt.sim.driver import Simulator  # noqa: E402
from hpcopt.sim.metrics import job_table  # noqa: E402
from hpcopt.workloads.tjap import generate_tjap_jobs, tjap_system  # noqa: E402

from .conftest import INSTANCES  # noqa: E402

DEMO = INSTANCES / "traces" / "demo.swf"


def workload(name):
    """Jobs and a system each policy can run on (burst buffer and SSD for BBSched's)."""
    if name == "tjap-window":
        return generate_tjap_jobs(30, seed=1), tjap_system()
    rng = np.random.default_rng(7)
    jobs, t = [], 0.0
    for i in range(150):
        t += float(rng.integers(0, 400))
        run = float(rng.integers(60, 5000))
        jobs.append(Job(id=i, submit=t, runtime=run, walltime=run * float(rng.uniform(1, 3)),
                        nodes=int(rng.integers(1, 30)), bb=float(rng.integers(0, 3)) * 10,
                        ssd=float(rng.choice([0, 64, 200]))))
    return jobs, System(64, bb=100.0, ssd_classes={128.0: 32, 256.0: 32})


# rolling-mip solves a MIP at every pass: a shorter slice of the same workload keeps it quick
N_JOBS = {"rolling-mip": 30}


@pytest.mark.parametrize("name", policy_names())
def test_simulator_run_equals_simulate(name, monkeypatch):
    """``simulate`` is ``Simulator.run``, and every job a policy starts, learned or not, is
    started once, by the driver's one start step, at the driver's clock."""
    jobs, system = workload(name)
    jobs = jobs[:N_JOBS.get(name, len(jobs))]
    calls = []
    start = Simulator.start

    def spy(sim, job, mode, allocation=None):
        calls.append((job.id, sim.now))
        return start(sim, job, mode, allocation)

    monkeypatch.setattr(Simulator, "start", spy)
    direct = Simulator(jobs, system, make_policy(name)).run()
    started = {jid: rec.start for jid, rec in direct.records.items() if rec.start is not None}
    assert len(calls) == len(started) == len({jid for jid, _ in calls}), name
    assert dict(calls) == started, name
    ours = job_table(direct.records.values())
    api = hpcopt.simulate(jobs, system=system, policy=name)
    cols = ["job_id", "submit", "start", "end", "mode"]
    assert ours[cols].equals(api.jobs[cols]), name
    assert api.summary["job_count"] == len(jobs)
    assert len(calls) == 2 * len(started)  # the API's run went through the same step


def test_no_second_loop():
    """No policy class carries a loop of its own: none defines ``run``/``simulate``, and the
    learned ones are ordinary one-pick policies of the one loop."""
    from hpcopt.policies.dras import DrasPolicy

    for name in policy_names():
        cls = type(make_policy(name))
        assert not {"run", "simulate", "drives_simulation"} & set(dir(cls)), name
    assert DrasPolicy.one_pick


@pytest.mark.parametrize(("name", "reserve"), [("dras-pg", "picked"), ("dras-dql", "oldest"),
                                               ("decima-pg", "oldest")])
def test_env_steps_are_the_policy(name, reserve):
    """Stepping DrasEnv with the agent's greedy actions is the policy's simulation."""
    from hpcopt.trainers.dras_env import DrasEnv

    trace = hpcopt.load_trace(DEMO)
    jobs = list(trace.jobs)[:250]
    pol = make_policy(name, reserve=reserve)
    res = hpcopt.simulate(jobs, system=trace.system, policy=pol, seed=0)
    agent = pol.agent
    env = DrasEnv(jobs, trace.system, **{**agent.env_options(), "reserve": reserve})
    obs, info = env.reset(seed=0)
    done, steps, total = False, 0, 0.0
    while not done:
        a = agent.act(obs, info["action_mask"], deterministic=True)
        obs, r, done, _, info = env.step(a)
        steps += 1
        total += r
    mine = job_table(env.sim.records.values())
    assert list(mine["start"]) == list(res.jobs["start"])
    assert list(mine["mode"]) == list(res.jobs["mode"])
    assert steps == pol.last_stats["decisions"] and env.instances == pol.last_stats["instances"]
    assert total == pytest.approx(pol.last_stats["total_reward"])


@pytest.mark.parametrize("code,env_id", [
    ("import hpcopt.envs, gymnasium as gym", "hpcopt/Dras-v0"),
    ("import gymnasium as gym, hpcopt.envs", "hpcopt/Dras-v0"),
    ("import gymnasium as gym", "hpcopt.envs:hpcopt/Dras-v0"),
])
def test_gym_make_after_import_in_any_order(code, env_id):
    script = code + f"""
from hpcopt.domain import Job, System
env = gym.make({env_id!r}, jobs=[Job(1, 0, 10, 10, 2), Job(2, 1, 5, 5, 4)],
               system=System(4), window=2, node_rows=4)
obs, info = env.reset(seed=0)
print(obs.shape, info["action_mask"].tolist())
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(8, 2) [1, 0]"


def test_import_hpcopt_imports_neither_gymnasium_nor_torch_and_installs_no_hook():
    out = subprocess.run([sys.executable, "-c", "import sys; hooks = list(sys.meta_path); "
                          "import hpcopt; print('gymnasium' in sys.modules, 'torch' in "
                          "sys.modules, sys.meta_path == hooks)"],
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False False True", out.stderr


def test_cli_flags_come_from_declarations(tmp_path, capsys):
    flags = policy_flags()
    declared = {opt.name for p in policy_names() for opt, _ in declared_options(p)}
    assert set(flags) == declared and {"backend", "reserve", "checkpoint", "tau"} <= declared
    # a flag the chosen policy does not take is a one-line error naming what it takes
    assert main(["simulate", str(DEMO), "--policy", "fcfs", "--backend", "dp",
                 "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "does not take option(s) ['backend']" in err and len(err.splitlines()) == 1
    # summary.json records every option in force, defaults included
    out = tmp_path / "run"
    assert main(["simulate", str(DEMO), "--jobs", "80", "--policy", "knapsack", "--value",
                 "wait", "--time-limit", "5", "--out", str(out), "--no-progress"]) == 0
    opts = json.loads((out / "summary.json").read_text())["settings"]["policy_options"]
    assert opts["value"] == "wait" and opts["time_limit"] == 5.0
    assert opts["backend"] == "dp" and opts["window"] == 20  # defaults
    assert "policy knapsack: " in capsys.readouterr().out
