"""The DRAS gymnasium environment: checker, the two levels, masks, encodings, rewards."""

from __future__ import annotations

import numpy as np
import pytest

gym = pytest.importorskip("gymnasium")

from gymnasium.utils.env_checker import check_env  # noqa: E402

from hpcopt.agents.dras_state import (  # noqa: E402
    CapabilityReward,
    CapacityReward,
    StateEncoder,
    StepContext,
)
from hpcopt.api import load_trace, simulate  # noqa: E402
from hpcopt.domain import Job, System  # noqa: E402
from hpcopt.errors import SimulationError  # noqa: E402
from hpcopt.sim.metrics import job_table  # noqa: E402
from hpcopt.trainers.dras_env import DrasEnv  # noqa: E402

from .conftest import INSTANCES  # noqa: E402

DEMO = INSTANCES / "traces" / "demo.swf"


def J(id, submit, nodes, walltime, runtime=None, priority=0):
    return Job(id=id, submit=submit, runtime=walltime if runtime is None else runtime,
               walltime=walltime, nodes=nodes, priority=priority)


def rollout(env, pick, seed=0):
    """Run one episode with ``pick(env, mask) -> action``; return (actions, rewards)."""
    obs, info = env.reset(seed=seed)
    actions, rewards = [], []
    while True:
        assert env.observation_space.contains(obs)
        a = pick(env, info["action_mask"])
        obs, r, term, trunc, info = env.step(a)
        assert not info["illegal_action"]
        actions.append(a)
        rewards.append(r)
        if term:
            return actions, rewards


def test_env_passes_gymnasium_checker():
    trace = load_trace(DEMO)
    check_env(DrasEnv(trace.jobs[:120], trace.system, window=10, node_rows=16),
              skip_render_check=True)
    check_env(DrasEnv(trace.jobs[:120], trace.system, window=10, levels="decima"),
              skip_render_check=True)


def test_head_picking_agent_is_exactly_fcfs_easy():
    # picking slot 0 at both levels is FCFS at level 1 and EASY's first fit at level 2
    trace = load_trace(DEMO)
    env = DrasEnv(trace.jobs, trace.system, window=50, node_rows=32)
    rollout(env, lambda env, mask: 0)
    ours = job_table(env.sim.records.values())
    ref = simulate(trace, policy="fcfs").jobs
    assert list(ours["start"]) == list(ref["start"])
    assert list(ours["mode"]) == list(ref["mode"])
    assert set(ours["mode"]) == {"ready", "reserved", "backfilled"}


def test_two_levels_by_hand():
    # 10 nodes. t=0: A (6) starts.  t=1: B (8) and C (4, ends 91 < shadow 100) wait; the
    # agent picks B: it does not fit -> reserved at 100; level 2 offers only C.
    jobs = [J("A", 0, 6, 100), J("B", 1, 8, 50), J("C", 1, 4, 90), J("D", 1, 4, 500)]
    env = DrasEnv(jobs, System(10), window=4, node_rows=10)
    obs, info = env.reset(seed=0)
    assert env.level == 1 and [j.id for j in env.choices] == ["A"]
    obs, r, *_ , info = env.step(0)
    assert env.level == 1 and [j.id for j in env.choices] == ["B", "C", "D"]
    assert info["action_mask"].tolist() == [1, 1, 1, 0]
    obs, r, *_ , info = env.step(0)  # B does not fit: reserve it
    assert env.level == 2 and [j.id for j in env.choices] == ["C"]
    obs, r, term, trunc, info = env.step(0)
    while not term:
        obs, r, term, trunc, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    rec = env.sim.records
    assert (rec["B"].start, rec["B"].mode) == (100, "reserved")
    assert (rec["C"].start, rec["C"].mode) == (1, "backfilled")
    assert rec["D"].start >= 150


def test_picking_a_fitting_job_first_then_reserving_oldest():
    jobs = [J("A", 0, 6, 100), J("B", 1, 8, 50), J("C", 1, 4, 90)]
    env = DrasEnv(jobs, System(10), window=4, node_rows=10, reserve="oldest")
    env.reset(seed=0)
    env.step(0)  # A
    _, _, _, _, info = env.step(1)  # C fits: ready
    assert env.sim.records["C"].mode == "ready"
    assert env.level == 1 and [j.id for j in env.choices] == ["B"]


def test_reserve_oldest_instead_of_picked():
    # at t=1 the agent picks D (does not fit); with reserve="oldest" B gets the reservation
    jobs = [J("A", 0, 6, 100), J("B", 1, 8, 50), J("D", 1, 9, 50)]
    for rule, reserved in (("picked", "D"), ("oldest", "B")):
        env = DrasEnv(jobs, System(10), window=4, node_rows=10, reserve=rule)
        env.reset(seed=0)
        env.step(0)
        env.step(1)
        term = False
        while not term:
            *_, term, _, info = env.step(0)
        assert env.sim.records[reserved].mode == "reserved"


def test_decima_only_starts_fitting_jobs_and_never_reserves():
    trace = load_trace(DEMO)
    env = DrasEnv(trace.jobs, trace.system, window=20, levels="decima", node_rows=16)

    def pick(env, mask):
        fits = [env.sim.pool.fits(j) for j in env.choices]
        assert mask[: len(fits)].astype(bool).tolist() == fits and mask.any()
        return int(np.flatnonzero(mask)[-1])

    rollout(env, pick)
    assert set(job_table(env.sim.records.values())["mode"]) == {"ready"}


def test_illegal_action_is_replaced_and_flagged():
    jobs = [J(1, 0, 2, 10), J(2, 0, 2, 10)]
    env = DrasEnv(jobs, System(4), window=5, node_rows=4)
    env.reset(seed=0)
    *_, info = env.step(4)
    assert info["illegal_action"]
    assert env.sim.records[1].mode == "ready"


def test_same_seed_same_trajectory_with_a_jobset_generator():
    def jobset(rng):
        sub = np.cumsum(rng.exponential(30, 60))
        return [J(i, float(s), int(rng.integers(1, 9)), float(rng.integers(50, 400)))
                for i, s in enumerate(sub)]

    def random_pick(env, mask):
        return int(env.np_random.choice(np.flatnonzero(mask)))

    env = DrasEnv(system=System(8), jobset=jobset, window=6, node_rows=8)
    a1, r1 = rollout(env, random_pick, seed=3)
    a2, r2 = rollout(env, random_pick, seed=3)
    a3, _ = rollout(env, random_pick, seed=4)
    assert (a1, r1) == (a2, r2)
    assert a1 != a3


def test_encoder_layout_and_quantile_node_rows():
    jobs = [J(1, 0, 5, 3600, priority=0), J(2, 0, 2, 7200, priority=1)]
    enc = StateEncoder(3, 10, time_scale=3600.0, capability_fraction=0.5)
    from hpcopt.domain import RunningJob

    running = [RunningJob(J(9, 0, 3, 1800), 0.0, 1800.0), RunningJob(J(8, 0, 4, 3600), 0.0,
                                                                      3600.0)]
    obs = enc(jobs, running, 3, 900.0)
    assert obs.shape == (2 * 3 + 10, 2)
    np.testing.assert_allclose(obs[0:2], [[0.5, 1.0], [1.0, 0.25]])  # 5 of 10 nodes: capability
    np.testing.assert_allclose(obs[2:4], [[0.2, 2.0], [1.0, 0.25]])  # priority from the job
    np.testing.assert_allclose(obs[4:6], 0.0)  # empty slot
    nodes = obs[6:]
    np.testing.assert_allclose(nodes[:, 0], [1] * 3 + [0] * 7)
    np.testing.assert_allclose(nodes[:, 1], [0] * 3 + [0.25] * 3 + [0.75] * 4)
    # quantile rows sample the same sorted node list; R = N is the per-node encoding
    small = StateEncoder(3, 10, node_rows=5, time_scale=3600.0)(jobs, running, 3, 900.0)
    np.testing.assert_allclose(small[6:], nodes[[1, 3, 5, 7, 9]])


def test_rewards_eq1_and_eq2():
    job = J(1, 0, 50, 7200)
    ctx = StepContext(job=job, mode="ready", now=100.0, waiting=[J(2, 50, 1, 1800)],
                      t_max=100.0, used_nodes=60, system_nodes=100)
    assert CapabilityReward()(ctx) == pytest.approx((1.0 + 0.5 + 0.6) / 3)
    assert CapabilityReward(1, 0, 0)(ctx) == pytest.approx(1.0)
    assert CapacityReward()(ctx) == pytest.approx(-2.0)  # -1 / 0.5 h
    empty = StepContext(job=job, mode="ready", now=0.0, waiting=[], t_max=0.0,
                        used_nodes=0, system_nodes=100)
    assert CapacityReward()(empty) == 0.0


def test_pluggable_reward_and_bad_options():
    jobs = [J(1, 0, 2, 10), J(2, 0, 2, 10)]
    env = DrasEnv(jobs, System(4), window=2, node_rows=4, reward=lambda ctx: ctx.job.nodes)
    env.reset(seed=0)
    assert env.step(0)[1] == 2.0
    with pytest.raises(SimulationError, match="unknown reward 'capcity'.*capacity"):
        DrasEnv(jobs, System(4), reward="capcity")
    with pytest.raises(SimulationError, match="levels"):
        DrasEnv(jobs, System(4), levels="three")
    with pytest.raises(SimulationError, match="reserve"):
        DrasEnv(jobs, System(4), reserve="youngest")
    with pytest.raises(SimulationError, match="before reset"):
        DrasEnv(jobs, System(4)).step(0)
