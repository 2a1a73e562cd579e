"""DRAS agents: network sizes, Eq. (3) and (4) updates, learning, save/load, determinism,
and the three-phase jobsets."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("gymnasium")

from hpcopt.agents.dras import (  # noqa: E402
    DrasAgent,
    DrasConfig,
    get_config,
    n_parameters,
)
from hpcopt.domain import Job, System  # noqa: E402
from hpcopt.errors import HpcoptError  # noqa: E402
from hpcopt.trainers.dras_env import DrasEnv, run_episode  # noqa: E402
from hpcopt.trainers.jobsets import WEEK, JobsetGenerator, rebase, split_months  # noqa: E402

from .conftest import shared_file  # noqa: E402

TINY = DrasConfig(window=3, node_rows=2, hidden=(4, 4))
THETA = "hpc_swf/alcf/theta_2022.swf.gz"


@pytest.fixture(autouse=True)
def one_thread():
    torch.set_num_threads(1)


def J(id, submit, nodes, walltime):
    return Job(id=id, submit=submit, runtime=walltime, walltime=walltime, nodes=nodes)


def random_jobs(seed, n=40, nodes=16):
    rng = np.random.default_rng(seed)
    sub = np.cumsum(rng.exponential(40, n))
    return [J(i, float(s), int(rng.integers(1, nodes + 1)), float(rng.integers(60, 900)))
            for i, s in enumerate(sub)]


def test_theta_configuration_of_table_iii_builds_and_runs():
    pg = DrasAgent("pg", 4360, "theta", seed=0)
    # Table III: input [4460, 2], conv 4460, FC 4000 and 1000, output 50, 21,890,053 parameters
    assert pg.net.rows == 4460
    assert n_parameters(pg.net) == pytest.approx(21_890_053, rel=1e-3)
    out = pg.net(torch.zeros(1, 4460, 2))
    assert out.shape == (1, 50)
    dql = DrasAgent("dql", 4360, "theta", seed=0)
    assert dql.net.rows == 4362
    assert n_parameters(dql.net) == pytest.approx(21_449_004, rel=1e-3)
    obs = np.zeros((4460, 2), dtype=np.float32)
    assert dql.scores(obs).shape == (50,)


def test_small_configuration_is_small():
    agent = DrasAgent("pg", 4360, "small", seed=0)
    assert agent.net.rows == 2 * 50 + 128
    assert n_parameters(agent.net) < 50_000


def test_pg_update_follows_eq3_with_the_running_baseline():
    agent = DrasAgent("pg", 4, TINY, seed=0)
    rng = np.random.default_rng(0)
    mask = np.array([1, 1, 0])

    def transition(r):
        obs = rng.random((2 * 3 + 2, 2)).astype(np.float32)
        return obs, mask, 1, r, obs, mask, False

    agent._memory = [transition(1.0), transition(2.0)]
    agent.update()
    np.testing.assert_allclose(agent._base_sum, [3.0, 2.0])  # returns from each step
    np.testing.assert_allclose(agent._base_cnt, [1, 1])
    t = transition(1.0)
    with torch.no_grad():
        logits = agent.net(torch.from_numpy(t[0])[None])[0].masked_fill(
            torch.tensor(mask == 0), -torch.inf)
        logp = torch.log_softmax(logits, 0)[1]
    agent._memory = [t]
    loss = agent.update()
    assert loss == pytest.approx(float(-logp * (1.0 - 3.0)), rel=1e-5)  # baseline b_0 = 3
    np.testing.assert_allclose(agent._base_sum, [4.0, 2.0])


def test_dql_update_follows_eq4_and_decays_epsilon():
    agent = DrasAgent("dql", 4, TINY, seed=0)
    obs = np.random.default_rng(1).random((8, 2)).astype(np.float32)
    nxt = obs[::-1].copy()
    mask = np.array([1, 0, 1])
    with torch.no_grad():
        q = agent.scores(obs)[2]
        qn = agent.scores(nxt)
    target = 0.5 + 0.99 * max(float(qn[0]), float(qn[2]))
    agent._memory = [(obs, mask.astype(bool), 2, 0.5, nxt, mask.astype(bool), False)]
    assert agent.update() == pytest.approx((target - float(q)) ** 2, rel=1e-5)
    assert agent.epsilon == pytest.approx(0.995)
    with torch.no_grad():
        q = agent.scores(obs)[0]
    agent._memory = [(obs, mask.astype(bool), 0, 1.0, nxt, mask.astype(bool), True)]
    assert agent.update() == pytest.approx((1.0 - float(q)) ** 2, rel=1e-5)  # terminal
    assert agent.epsilon == pytest.approx(0.995 ** 2)


@pytest.mark.parametrize(("kind", "gamma", "want"), [("pg", 0.99, max), ("dql", 0.5, min)])
def test_agents_learn_to_pick_by_size(kind, gamma, want):
    # all 6 jobs fit and arrive together; reward 1 when the pick is the largest (smallest)
    # one left: the best order scores 6, uniformly random picks about 2.45
    jobs = [J(i, 0.0, n, 100.0) for i, n in enumerate([3, 9, 1, 7, 5, 2])]

    def reward(ctx):
        return float(ctx.job.nodes == want([ctx.job.nodes] + [j.nodes for j in ctx.waiting]))

    cfg = DrasConfig(window=6, node_rows=4, hidden=(32, 16), lr=1e-2, eps_decay=0.97,
                     update_every=1, gamma=gamma)
    agent = DrasAgent(kind, 64, cfg, seed=1)
    env = DrasEnv(jobs, System(64), window=6, node_rows=4, reward=reward)

    def score():  # PG: its sampled policy; DQL: its greedy one
        return np.mean([run_episode(env, agent, learn=False, seed=s,
                                    deterministic=kind == "dql").total_reward
                        for s in range(8)])

    before = score()
    for ep in range(200):
        run_episode(env, agent, learn=True, seed=ep)
    after = score()
    assert after >= 3.75 and after - before >= 1.5


def test_save_load_round_trip(tmp_path):
    env = DrasEnv(random_jobs(0), System(16), window=3, node_rows=2)
    for kind in ("pg", "dql"):
        agent = DrasAgent(kind, 16, TINY, seed=3)
        run_episode(env, agent, learn=True, seed=0)
        path = agent.save(tmp_path / f"{kind}.pt", note="x")
        back = DrasAgent.load(path)
        assert (back.kind, back.nodes, back.config, back.updates) == \
            (kind, 16, TINY, agent.updates)
        assert back.epsilon == agent.epsilon and back.meta == {"note": "x"}
        np.testing.assert_array_equal(back._base_sum, agent._base_sum)
        mine, theirs = agent.optim.state_dict()["state"], back.optim.state_dict()["state"]
        assert mine.keys() == theirs.keys() and all(
            torch.equal(mine[k]["exp_avg"], theirs[k]["exp_avg"]) for k in mine)
        for a, b in zip(agent.net.parameters(), back.net.parameters()):
            assert torch.equal(a, b)
        r1 = run_episode(env, agent, learn=False, seed=1)
        r2 = run_episode(env, back, learn=False, seed=1)
        assert r1.total_reward == r2.total_reward


def test_same_seed_same_training_on_cpu():
    env = DrasEnv(random_jobs(1), System(16), window=3, node_rows=2)
    for kind in ("pg", "dql"):
        runs = []
        for _ in range(2):
            agent = DrasAgent(kind, 16, TINY, seed=7)
            stats = [run_episode(env, agent, learn=True, seed=e).total_reward for e in range(2)]
            runs.append((stats, [p.detach().clone() for p in agent.net.parameters()]))
        assert runs[0][0] == runs[1][0]
        assert all(torch.equal(a, b) for a, b in zip(runs[0][1], runs[1][1]))


def test_clear_errors(tmp_path):
    with pytest.raises(HpcoptError, match="unknown DRAS agent 'pq'.*'pg'"):
        DrasAgent("pq", 16)
    with pytest.raises(HpcoptError, match="unknown DRAS config 'smal'.*'small'"):
        get_config("smal")
    with pytest.raises(HpcoptError, match="not found"):
        DrasAgent.load(tmp_path / "nope.pt")
    (tmp_path / "junk.pt").write_text("not torch")
    with pytest.raises(HpcoptError, match="not a DRAS checkpoint"):
        DrasAgent.load(tmp_path / "junk.pt")
    per_node = DrasAgent("pg", 16, DrasConfig(window=3, node_rows=None, hidden=(4, 4)))
    with pytest.raises(HpcoptError, match="trained for 16 nodes.*has 100"):
        per_node.check_system(100)
    DrasAgent("pg", 16, TINY).check_system(100)  # quantile rows: any size


def test_month_split_and_jobsets_on_theta():
    from hpcopt.api import load_trace

    trace = load_trace(shared_file(THETA))
    split = split_months(trace.jobs)
    assert len(split.train) + len(split.validate) + len(split.test) == len(trace)
    # January + February 2022 (UTC), then March
    assert max(j.submit for j in split.train) < 1646092800 <= min(j.submit for j in
                                                                  split.validate)
    assert max(j.submit for j in split.validate) < 1648771200 <= min(j.submit for j in
                                                                     split.test)
    gen = JobsetGenerator(split.train, jobs_per_set=500)
    a, b = gen.sampled(np.random.default_rng(0)), gen.sampled(np.random.default_rng(0))
    assert a == b and len(a) == 500 and a[0].submit == 0.0
    gaps = np.diff([j.submit for j in a])
    assert gaps.mean() == pytest.approx(gen.mean_gap, rel=0.15)
    weeks = gen.real_weeks()
    assert all(w[-1].submit - w[0].submit < WEEK for w in weeks)
    assert sum(map(len, weeks)) >= 0.9 * len(split.train)
    syn = gen.synthetic(np.random.default_rng(1))
    assert syn[-1].submit < WEEK
    assert len(syn) == pytest.approx(len(split.train) / (gen.span / WEEK), rel=0.3)
    assert {j.nodes for j in syn} <= {j.nodes for j in split.train}
    plan = gen.curriculum(np.random.default_rng(0), sampled=2, real=None, synthetic=3)
    assert [p for p, _ in plan] == ["sampled"] * 2 + ["real"] * len(weeks) + ["synthetic"] * 3
    plan = gen.curriculum(np.random.default_rng(0), sampled=1, real=2, synthetic=1,
                          order=("synthetic", "real", "sampled"))
    assert [p for p, _ in plan] == ["synthetic", "real", "real", "sampled"]
    with pytest.raises(HpcoptError, match="each of"):
        gen.curriculum(np.random.default_rng(0), sampled=1, real=1, synthetic=1,
                       order=("real", "real", "sampled"))


def test_rebase_and_small_traces():
    jobs = rebase([J(5, 100.0, 1, 10.0), J(3, 50.0, 1, 10.0)])
    assert [(j.id, j.submit) for j in jobs] == [(0, 0.0), (1, 50.0)]
    with pytest.raises(HpcoptError, match="too little time"):
        split_months([J(1, 0.0, 1, 10.0), J(2, 10.0, 1, 10.0)])
