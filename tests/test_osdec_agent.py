"""The learned OSDEC agent (issue #13): rewards, determinism, visibility, variants, shipped
checkpoints, the training CLI and one-line errors.  Fast: tiny instances, one torch thread."""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hpcopt.agents import osdec_agent  # noqa: E402
from hpcopt.agents.osdec_agent import VARIANTS, Actor, AgentConfig, OSDECAgent  # noqa: E402
from hpcopt.domain import Job, RunningJob  # noqa: E402
from hpcopt.errors import HpcoptError  # noqa: E402
from hpcopt.models.osdec import OSDECModel  # noqa: E402
from hpcopt.osdec import load_osdec, simulate_osdec  # noqa: E402
from hpcopt.policies import make_policy  # noqa: E402
from hpcopt.policies.osdec_learned import OSDECPolicy  # noqa: E402
from hpcopt.trainers.osdec_train import TrainConfig, run_episode, step_rewards, train  # noqa: E402

from .conftest import INSTANCES  # noqa: E402

torch.set_num_threads(1)
OSDEC = INSTANCES / "osdec"
QUARTER = OSDEC / "quarter_day_72slots_150jobs.json"
SMALL = OSDEC / "small_12slots_20jobs.json"
OPTIMA = {row["instance"]: float(row["optimum"])
          for row in csv.DictReader((OSDEC / "optima.csv").read_text().splitlines())}
TINY = TrainConfig(iterations=2, rollout=24, minibatch=8, epochs=2, aux_epochs=1,
                   train_trajectories=1, val_trajectories=1)


def _gap_model():
    # x (2 cores x 3 slots) starts at slot 0; the queue is empty at slots 1-2 while the
    # capacity drops to 1 at slot 1: a violation in a slot where no decision is asked.
    # y is submitted at 2 with earliest start 3.
    return OSDECModel(slots=5, capacity=[3, 1, 3, 3, 3], cores=[2, 1], duration=[3, 1],
                      submit=[0, 2], earliest=[0, 3], latest=[0, 4], ids=("x", "y"))


@pytest.mark.parametrize("source", [_gap_model(), QUARTER])
def test_step_rewards_sum_to_the_objective(source):
    model = load_osdec(source)
    agent = OSDECAgent("osdec", seed=3)
    actor, rewards, summary = run_episode(agent, model, torch.Generator().manual_seed(1))
    slots = [s.slot for s in actor.steps]
    assert slots == sorted(set(slots)) and len(rewards) == len(slots)
    assert float(rewards.sum()) == summary["total_reward"]
    if isinstance(source, OSDECModel):
        assert slots == [0, 3]  # no step at slots 1-2 (empty queue), yet v_1 counts
        assert summary["violation_penalty"] == 10.0
        assert rewards.tolist() == [6.0 - 10.0, 1.0]


def test_step_rewards_by_hand():
    model = _gap_model()
    # x at 0 (revenue 6), y at 4 (1 - w1 * 1): violation 1 at slot 1
    assert step_rewards(model, [0, 4], [0, 3]).tolist() == [-4.0, -1.0]
    assert step_rewards(model, [0, 4], [2]).tolist() == [-5.0]
    assert model.evaluate([0, 4]).objective == -5.0


def test_no_job_seen_before_its_submit_slot(monkeypatch):
    seen = []
    real = osdec_agent.encode_slot

    def spy(window, upcoming, cfg, last_started=(0, 0), cap_seen=0):
        upcoming = list(upcoming)
        t = window.time
        for j in [*window.jobs, *upcoming, *(r.job for r in window.running)]:
            assert j.submit <= t
        for j in window.jobs:
            assert j.earliest <= t <= j.latest
        for j in upcoming:
            assert j.earliest > t
        seen.append(len(window.jobs) + len(upcoming))
        return real(window, upcoming, cfg, last_started, cap_seen)

    monkeypatch.setattr(osdec_agent, "encode_slot", spy)
    run_episode(OSDECAgent("osdec", seed=0), load_osdec(QUARTER), None, record=False)
    assert seen and max(seen) > 0


def _window(n_cur: int, n_his: int, n_fut: int, t: float = 10.0):
    cur = [Job(i, t - 1, 2, 2, 1 + i % 4, cores=1 + i % 4, earliest=t - 1, latest=t + 3)
           for i in range(n_cur)]
    his = [RunningJob(Job(1000 + i, 0, 5, 5, 2, cores=2, earliest=0, latest=5), t - 2,
                      t + 3, None) for i in range(n_his)]
    fut = [Job(2000 + i, t, 3, 3, 1, cores=1, earliest=t + 2, latest=t + 6)
           for i in range(n_fut)]
    window = SimpleNamespace(time=t, jobs=cur, running=his, system=SimpleNamespace(nodes=64),
                             resources=SimpleNamespace(capacity=40, free_nodes=20))
    return window, fut


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("sizes", [(100, 30, 20), (0, 0, 0), (3, 0, 0), (0, 5, 2),
                                   (40, 40, 40)])
def test_every_variant_handles_many_jobs_and_empty_sets(variant, sizes):
    cfg = AgentConfig()
    window, fut = _window(*sizes)
    state = osdec_agent.encode_slot(window, fut, cfg)
    n = sum(sizes)
    assert state.mask.sum() == min(n, cfg.k_max)
    assert state.cur.sum() == min(sizes[0], cfg.k_max)  # current jobs first
    assert state.index == list(range(min(sizes[0], cfg.k_max)))
    actor = Actor(OSDECAgent(variant, seed=0), generator=torch.Generator().manual_seed(0),
                  record=True)
    scores = actor.scores(window, fut)
    assert len(scores) == sizes[0]
    assert all(math.isfinite(s) for s in scores[:cfg.k_max])
    assert all(s == -math.inf for s in scores[cfg.k_max:])
    x = torch.from_numpy(np.stack([actor.steps[0].x, np.zeros_like(actor.steps[0].x)]))
    mask = torch.from_numpy(np.stack([actor.steps[0].mask, np.zeros(cfg.k_max, bool)]))
    mu, std, value = actor.agent.net(x, mask)
    assert torch.isfinite(mu).all() and (std > 0).all() and torch.isfinite(value).all()


def _weights(agent):
    return {k: v.clone() for k, v in agent.net.state_dict().items()}


def test_seeded_training_is_deterministic(tmp_path):
    model = load_osdec(SMALL)
    runs = []
    for k, (seed, minutes) in enumerate([(5, None), (5, 600.0), (6, None)]):
        # a time budget that does not bind changes nothing (the schedule follows iterations)
        doc = train(variant="osdec", config=TINY, models=[model], seed=seed, minutes=minutes,
                    out=tmp_path / str(k), progress=False, plot=False)
        agent = OSDECAgent.load(tmp_path / str(k) / "last.pt")
        runs.append((doc, _weights(agent), agent.aux.state_dict()))
    (d0, w0, a0), (d1, w1, a1), (_, w2, _) = runs
    assert all(torch.equal(w0[k], w1[k]) for k in w0)
    assert all(torch.equal(a0[k], a1[k]) for k in a0)
    assert not all(torch.equal(w0[k], w2[k]) for k in w0)
    assert d0["best_val_reward"] == d1["best_val_reward"] and d0["steps"] == d1["steps"] > 0


def test_save_load_round_trip(tmp_path):
    for variant in VARIANTS:
        agent = OSDECAgent(variant, seed=2)
        path = agent.save(tmp_path / f"{variant}.pt", note="x")
        back = OSDECAgent.load(path)
        assert back.variant == variant and back.meta["note"] == "x"
        w = _weights(agent)
        assert all(torch.equal(w[k], v) for k, v in back.net.state_dict().items())


def test_shipped_checkpoint_runs_below_the_offline_bound():
    from hpcopt.policies.osdec_learned import shipped_osdec_checkpoint

    shipped_osdec_checkpoint("osdec")  # shipped with the package
    res = simulate_osdec(QUARTER, "osdec", offline_bound=OPTIMA["quarter_day_72slots_150jobs"])
    s = res.summary
    assert s["feasible"] and s["started"] + s["dropped"] == 150
    assert s["total_reward"] <= OPTIMA["quarter_day_72slots_150jobs"]
    assert s["gap_to_offline"] >= 0
    again = simulate_osdec(QUARTER, "osdec")  # deterministic (mu)
    assert again.decision == res.decision


@pytest.mark.slow  # the slow tier (-m slow): a long check, run by CI after the default run
def test_shipped_checkpoint_on_a_test_trajectory_below_a_scip_bound():
    pytest.importorskip("pyscipopt")
    from hpcopt.instances import instance_from_dict
    from hpcopt.solvers import solve
    from hpcopt.workloads.osdec import deferrable_suite

    model = instance_from_dict(deferrable_suite("test", 1)[0]).model  # never trained on
    s = simulate_osdec(model, "osdec").summary
    assert s["feasible"] and s["started"] > 0
    res = solve(model, "scip", time_limit=5, seed=0)
    # the dual bound when scip has one within the limit (a loaded machine may stop it before
    # the root LP); every objective is at most the revenue of all jobs
    bound = min(float(model.revenue.sum()), *([res.bound] if res.bound is not None else []))
    assert s["total_reward"] <= bound
    if res.objective is not None and res.status.name == "OPTIMAL":
        assert s["total_reward"] <= res.objective


def test_cli_train_osdec_writes_its_files(tmp_path, capsys):
    from hpcopt.cli import main

    out = tmp_path / "run"
    assert main(["train", "osdec", "--variant", "ppo-mlp", "--workload", str(SMALL),
                 "--iterations", "1", "--seed", "0", "--out", str(out),
                 "--no-progress"]) == 0
    for name in ("best.pt", "last.pt", "curve.csv", "curve.png", "train.json"):
        assert (out / name).is_file(), name
    doc = json.loads((out / "train.json").read_text())
    assert doc["variant"] == "ppo-mlp" and doc["iterations"] == 1 and doc["config"] == "small"
    assert "trained ppo-mlp" in capsys.readouterr().out
    res = simulate_osdec(SMALL, OSDECPolicy("ppo-mlp", checkpoint=str(out / "best.pt")))
    assert res.summary["total_reward"] <= OPTIMA["small_12slots_20jobs"]


def test_missing_checkpoint_is_a_one_line_error(tmp_path, monkeypatch):
    from hpcopt.policies import osdec_learned as pol

    with pytest.raises(HpcoptError) as err:
        simulate_osdec(SMALL, "osdec", checkpoint=str(tmp_path / "none.pt"))
    assert "\n" not in str(err.value) and "not found" in str(err.value)
    monkeypatch.setattr(pol, "CHECKPOINTS", tmp_path)
    with pytest.raises(HpcoptError) as err:
        simulate_osdec(SMALL, "osdec")
    assert "\n" not in str(err.value) and "no shipped checkpoint" in str(err.value)
    agent = OSDECAgent("ppo-att", seed=0).save(tmp_path / "a.pt")
    with pytest.raises(HpcoptError, match="use --policy ppo-att$"):
        simulate_osdec(SMALL, make_policy("osdec", checkpoint=str(agent)))


def test_import_hpcopt_does_not_import_torch():
    code = ("import sys, hpcopt, hpcopt.policies, hpcopt.osdec; "
            "assert 'torch' not in sys.modules; "
            "hpcopt.policies.make_policy('osdec'); assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
