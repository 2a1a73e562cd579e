"""DRAS's two-level scheduling decision process as a gymnasium environment.

One step selects one job (Fan et al., IPDPS'21, section III-B), through the driver's
one-pick protocol (``hpcopt.sim.driver``): level 1 is the pass's select stage (the first W
waiting jobs; a pick that does not fit is reserved), level 2 its backfill stage (the jobs
that may backfill around the reservation).  ``levels="decima"`` is the Decima-PG baseline
(only jobs that fit now can be picked; no reservation, no backfilling).  The observation is
DRAS's state encoding and the reward Eq. (1) or (2) (``hpcopt.agents.dras_state``).

Registered as ``hpcopt/Dras-v0`` by ``hpcopt.envs``: ``import hpcopt.envs``, then
``gym.make("hpcopt/Dras-v0", jobs=..., system=...)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from hpcopt.agents.dras_state import StateEncoder, StepContext, make_reward, step_context
from hpcopt.domain import Job, System
from hpcopt.errors import SimulationError
from hpcopt.policies.base import OnePickPolicy
from hpcopt.policies.dras import DrasPolicy
from hpcopt.sim.driver import Simulator
from hpcopt.sim.env import PickEnv
from hpcopt.sim.picks import RESERVE_RULES
from hpcopt.sim.settings import DriverOptions

LEVELS = ("dras", "decima")


class DrasEnv(PickEnv):
    """Gymnasium environment of DRAS's two-level decision process over the hpcopt driver.

    Parameters
    ----------
    jobs : the jobs of every episode, or ``None`` when ``jobset`` or ``reset(options=
        {"jobs": ...})`` gives them.
    system : the machine (only the node count is used).
    jobset : optional ``f(np.random.Generator) -> list[Job]`` drawing an episode's jobs.
    window : W, the number of jobs the agent chooses among (default 50, the paper's).
    levels : ``"dras"`` (two levels, default) or ``"decima"`` (fit-now picks only).
    reserve : ``"picked"`` (the paper) or ``"oldest"`` (the authors' code).
    reward : ``"capability"`` (Eq. 1), ``"capacity"`` (Eq. 2) or ``f(StepContext)``.
    order : base order of the queue (``fcfs`` default, ``sjf``, ``wfp``).
    node_rows, time_scale, capability_fraction, clip : the state encoding
        (``hpcopt.agents.dras_state``).
    """

    def __init__(self, jobs: Sequence[Job] | None = None, system: System | None = None, *,
                 jobset: Callable[[np.random.Generator], Sequence[Job]] | None = None,
                 window: int = 50, levels: str = "dras", reserve: str = "picked",
                 reward="capability", order: str = "fcfs", node_rows: int | None = None,
                 time_scale: float = 86400.0, capability_fraction: float = 0.2,
                 clip: float = 10.0) -> None:
        if system is None:
            raise SimulationError("DrasEnv needs system= (the machine the jobs run on)")
        if levels not in LEVELS:
            raise SimulationError(f"levels must be one of {LEVELS}, got {levels!r}")
        if reserve not in RESERVE_RULES:
            raise SimulationError(f"reserve must be one of {RESERVE_RULES}, got {reserve!r}")
        self.levels = levels
        self.reserve_rule = reserve
        self.order = order
        self.reward_fn: Callable[[StepContext], float] = make_reward(reward)
        self.encoder = StateEncoder(window, system.nodes, node_rows=node_rows,
                                    time_scale=time_scale,
                                    capability_fraction=capability_fraction, clip=clip)
        spec = OnePickPolicy(window=self.encoder.window, order=order, reserve_rule=reserve,
                             fit_only=levels == "decima")
        space = gym.spaces.Box(0.0, self.encoder.clip, self.encoder.shape, dtype=np.float32)
        super().__init__(jobs, system, spec=spec, observe=self.encoder.encode,
                         observation_space=space,
                         reward=lambda sim, pick: self.reward_fn(step_context(sim, pick)),
                         jobset=jobset, backfill="easy" if levels == "dras" else "none")


@dataclass
class EpisodeStats:
    """Totals of one episode."""

    total_reward: float
    steps: int
    instances: int
    losses: list
    decision_seconds: float


def run_episode(env, agent, *, learn: bool, deterministic: bool | None = None,
                seed: int | None = None, jobs=None) -> EpisodeStats:
    """Play one episode of ``env``'s process with ``agent`` (a
    ``hpcopt.agents.dras.DrasAgent``); with ``learn`` it updates as it
    goes.  ``deterministic`` defaults to ``not learn`` (greedy evaluation, exploring training).

    ``env`` (a ``DrasEnv``) gives the episode's jobs (``jobs``, else its own), the machine,
    the encoding, the reward and the rules; the episode runs in the driver's loop with the
    agent as a one-pick policy, and ``env.sim`` is left holding the finished simulation.
    """
    if deterministic is None:
        deterministic = not learn
    episode = env.episode_jobs(seed, None if jobs is None else {"jobs": jobs})
    policy = DrasPolicy.for_agent(agent, learn=learn, deterministic=deterministic,
                                  window=env.window_size, order=env.order,
                                  reserve=env.reserve_rule, reward=env.reward_fn,
                                  encoder=env.encoder)
    env.sim = Simulator(episode, env.system, policy,
                        DriverOptions(backfill=env.backfill)).run()
    env.instances = policy.instances
    return EpisodeStats(policy.total_reward, policy.steps, policy.instances, policy.losses,
                        policy.last_stats["decision_seconds"])
