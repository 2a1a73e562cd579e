"""DRAS's two-level scheduling decision process as a gymnasium environment.

One step selects one job (Fan et al., IPDPS'21, section III-B).  At a scheduling instance:

* **level 1** -- the agent picks a job from the window (the first W waiting jobs in the base
  order).  If it fits the free nodes it starts now (mode ``ready``) and the agent picks again;
  the first picked job that does not fit becomes the *reserved* job (or, with
  ``reserve="oldest"``, the oldest waiting job does, as the authors' public code does) and
  gets an EASY reservation at its earliest start time (the shadow time);
* **level 2** -- the window is refilled with the backfill candidates (jobs that fit now and,
  by requested walltime, end before the shadow time or use only nodes the reserved job leaves
  over) and the agent picks one at a time until none is left (mode ``backfilled``).

A reservation lasts until its job starts: at the next instance the reserved job starts first
if it fits (mode ``reserved``), else the instance goes straight to level 2 around it.  This
keeps the starvation guarantee of EASY even if the agent would pick another job.
``levels="decima"`` is the Decima-PG baseline: only jobs that fit now can be picked, the
instance ends when none fits, and there is no reservation and no backfilling.

Observation (``float32``, shape ``[2W + R, 2]``; DRAS-PG's input, DRAS-DQL slices one job
cell plus the node rows out of it):

* window job *i* is the [2, 2] cell of rows ``2i, 2i+1``:
  ``[[nodes / N, walltime / time_scale], [priority, queued time / time_scale]]``; priority is
  1 for jobs with ``Job.priority > 0`` or at least ``capability_fraction`` of the machine
  (ALCF's capability jobs, 20 %), else 0; empty window slots are zeros;
* node rows ``2W ..``: ``[available, (estimated release - now) / time_scale]``.  Nodes are
  interchangeable, so they are listed free first, then by estimated release (start +
  requested walltime).  With ``node_rows=None`` there is one row per node (the paper's
  encoding, R = N); with ``node_rows=R`` the sorted node list is sampled at R evenly spaced
  quantiles, which equals the per-node encoding when R = N and makes the input size
  independent of the machine size.

Every value is clipped to ``[0, clip]``.  ``info["action_mask"]`` (int8, length W) marks the
legal picks; an illegal action is replaced by the first legal one and flagged in
``info["illegal_action"]`` (so random rollouts never crash).  Rewards are pluggable (see
``REWARDS``); ``reward="capability"`` is Eq. (1), ``"capacity"`` Eq. (2).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter

import gymnasium as gym
import numpy as np

from hpcopt.domain import Job, System
from hpcopt.errors import SimulationError, closest

from .driver import BACKFILLED, READY, Simulator

LEVELS = ("dras", "decima")
_submit = attrgetter("submit")
RESERVE = ("picked", "oldest")


@dataclass(frozen=True)
class StepContext:
    """What a reward function sees after one pick.

    ``job`` is the picked job, ``mode`` what happened to it (``ready``, ``reserved`` when it
    became the reserved job, ``backfilled``); ``waiting`` are the jobs still waiting after the
    pick and ``t_max`` the longest wait among the jobs waiting before it (the picked one
    included); ``used_nodes`` counts busy nodes after the pick.
    """

    job: Job
    mode: str
    now: float
    waiting: Sequence[Job]
    t_max: float
    used_nodes: int
    system_nodes: int


class CapabilityReward:
    """Eq. (1): ``w1 * t_i / t_max + w2 * n_i / N + w3 * N_used / N`` for the picked job.

    ``t_i`` is the picked job's wait and ``t_max`` the largest wait in the queue at the pick
    (at least 1 s); one job is selected per step, so the paper's averages are that job's values.
    """

    def __init__(self, w1: float = 1 / 3, w2: float = 1 / 3, w3: float = 1 / 3) -> None:
        self.w = (float(w1), float(w2), float(w3))

    def __call__(self, ctx: StepContext) -> float:
        t_max = max(ctx.t_max, 1.0)
        w1, w2, w3 = self.w
        n = ctx.system_nodes
        return (w1 * (ctx.now - ctx.job.submit) / t_max + w2 * ctx.job.nodes / n
                + w3 * ctx.used_nodes / n)


class CapacityReward:
    """Eq. (2): ``sum_{j in J} -1 / t_j / c`` over the c jobs still waiting after the pick.

    As in DeepRM (which Eq. (2) follows), ``t_j`` is the job's length -- here its requested
    walltime in hours, at least one minute -- so short jobs left waiting cost most and the
    agent learns to cut the average wait.  An empty queue gives 0.
    """

    def __call__(self, ctx: StepContext) -> float:
        if not ctx.waiting:
            return 0.0
        hours = np.array([max(j.walltime, 60.0) for j in ctx.waiting]) / 3600.0
        return float(-(1.0 / hours).mean())


REWARDS: dict[str, Callable[[], Callable[[StepContext], float]]] = {
    "capability": CapabilityReward,
    "capacity": CapacityReward,
}


def make_reward(reward) -> Callable[[StepContext], float]:
    """A reward callable from a name in ``REWARDS`` or a callable ``f(StepContext) -> float``."""
    if callable(reward):
        return reward
    if reward not in REWARDS:
        raise SimulationError(f"unknown reward {reward!r}; expected one of {sorted(REWARDS)} "
                              "or a callable." + closest(str(reward), REWARDS))
    return REWARDS[reward]()


class StateEncoder:
    """The DRAS state encoding (see the module docstring); ``__call__`` returns the array."""

    def __init__(self, window: int, system_nodes: int, *, node_rows: int | None = None,
                 time_scale: float = 86400.0, capability_fraction: float = 0.2,
                 clip: float = 10.0) -> None:
        if window < 1:
            raise SimulationError(f"window must be >= 1, got {window}")
        if node_rows is not None and node_rows < 1:
            raise SimulationError(f"node_rows must be >= 1 or None, got {node_rows}")
        if not time_scale > 0:
            raise SimulationError(f"time_scale must be > 0 seconds, got {time_scale}")
        self.window = int(window)
        self.nodes = int(system_nodes)
        self.node_rows = self.nodes if node_rows is None else int(node_rows)
        self.time_scale = float(time_scale)
        self.capability = capability_fraction * self.nodes
        self.clip = float(clip)
        self.shape = (2 * self.window + self.node_rows, 2)
        idx = (np.arange(self.node_rows) + 0.5) * self.nodes / self.node_rows
        self._sample = np.minimum(idx.astype(np.int64), self.nodes - 1)

    def jobs(self, jobs: Sequence[Job], now: float) -> np.ndarray:
        """The [2W, 2] job part (empty slots are zeros)."""
        out = np.zeros((self.window, 2, 2), dtype=np.float32)
        k = min(len(jobs), self.window)
        if k:
            sel = jobs[:k]
            out[:k, 0, 0] = [j.nodes / self.nodes for j in sel]
            out[:k, 0, 1] = [j.walltime / self.time_scale for j in sel]
            out[:k, 1, 0] = [1.0 if (j.priority > 0 or j.nodes >= self.capability) else 0.0
                             for j in sel]
            out[:k, 1, 1] = [(now - j.submit) / self.time_scale for j in sel]
        return out.reshape(2 * self.window, 2)

    def node_part(self, running, free_nodes: int, now: float) -> np.ndarray:
        """The [R, 2] node part: free nodes first, then busy ones by estimated release."""
        release = np.zeros(self.nodes, dtype=np.float32)
        avail = np.zeros(self.nodes, dtype=np.float32)
        avail[:free_nodes] = 1.0
        if running:
            counts = np.fromiter((r.job.nodes for r in running), np.int64, len(running))
            left = np.fromiter((r.est_end - now for r in running), np.float64, len(running))
            busy = np.repeat(np.maximum(left, 0.0) / self.time_scale, counts)
            release[free_nodes:free_nodes + len(busy)] = busy[: self.nodes - free_nodes]
        rows = np.stack([avail, release], axis=1)
        return rows if self.node_rows == self.nodes else rows[self._sample]

    def __call__(self, jobs: Sequence[Job], running, free_nodes: int, now: float) -> np.ndarray:
        obs = np.concatenate([self.jobs(jobs, now), self.node_part(running, free_nodes, now)])
        return np.clip(obs, 0.0, self.clip, out=obs)


class DrasEnv(gym.Env):
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
    node_rows, time_scale, capability_fraction, clip : the state encoding (module docstring).
    """

    metadata = {"render_modes": []}

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
        if reserve not in RESERVE:
            raise SimulationError(f"reserve must be one of {RESERVE}, got {reserve!r}")
        self.system = system
        self.jobs = None if jobs is None else list(jobs)
        self.jobset = jobset
        self.levels = levels
        self.reserve_rule = reserve
        self.reward_fn = make_reward(reward)
        self.order = order
        self.encoder = StateEncoder(window, system.nodes, node_rows=node_rows,
                                    time_scale=time_scale,
                                    capability_fraction=capability_fraction, clip=clip)
        self.window_size = self.encoder.window
        self.observation_space = gym.spaces.Box(0.0, self.encoder.clip, self.encoder.shape,
                                                dtype=np.float32)
        self.action_space = gym.spaces.Discrete(self.window_size)
        self.sim: Simulator | None = None
        self.instances = 0  # scheduling instances (passes) that needed a decision

    # ------------------------------------------------------------------ gym API
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        jobs = (options or {}).get("jobs")
        if jobs is None:
            if self.jobset is not None:
                jobs = self.jobset(self.np_random)
            elif self.jobs is not None:
                jobs = self.jobs
            else:
                raise SimulationError("DrasEnv.reset: no jobs (give jobs=, jobset= or "
                                      "options={'jobs': [...]})")
        jobs = list(jobs)
        if not jobs:
            raise SimulationError("DrasEnv.reset: the episode has no jobs")
        self.sim = Simulator(jobs, self.system, None, order=self.order, backfill="none")
        self._reserved: Job | None = None
        self._level = 0  # 0: between instances, 1 or 2: inside one
        self._choices: list[Job] = []
        self._done = False
        self.instances = 0
        self._next_decision()
        return self._obs(), self._info()

    def step(self, action):
        if self.sim is None:
            raise SimulationError("DrasEnv.step called before reset()")
        if self._done:
            raise SimulationError("DrasEnv.step called after the episode terminated; reset()")
        a = int(action)
        mask = self.action_mask()
        illegal = not (0 <= a < len(mask) and mask[a])
        if illegal:
            a = int(np.flatnonzero(mask)[0])
        reward = self._apply(self._choices[a])
        self._next_decision()
        info = self._info()
        info["illegal_action"] = illegal
        return self._obs(), float(reward), self._done, False, info

    # ------------------------------------------------------------------ views
    @property
    def level(self) -> int:
        """1 or 2 while a decision is pending, 0 once the episode is over."""
        return self._level

    @property
    def choices(self) -> list[Job]:
        """The jobs behind the window slots of the current decision."""
        return self._choices

    def action_mask(self) -> np.ndarray:
        """int8 mask over the W window slots: 1 where a pick is legal now."""
        mask = np.zeros(self.window_size, dtype=np.int8)
        if self._done:
            return mask
        if self.levels == "decima":
            pool = self.sim.pool
            for i, job in enumerate(self._choices):
                mask[i] = pool.fits(job)
        else:
            mask[: len(self._choices)] = 1
        return mask

    def _info(self) -> dict:
        return {"action_mask": self.action_mask(), "level": self._level,
                "instance": self.instances, "time": self.sim.now}

    def _obs(self) -> np.ndarray:
        sim = self.sim
        if self._done:
            return np.zeros(self.encoder.shape, dtype=np.float32)
        return self.encoder(self._choices, sim.running, sim.pool.free_nodes, sim.now)

    # ------------------------------------------------------------------ the process
    def _waiting(self) -> list[Job]:
        """Jobs of this instance not started yet, in the base order."""
        return self._remaining

    def _apply(self, job: Job) -> float:
        """Carry out one pick; returns its reward."""
        sim = self.sim
        t_max = sim.now - min(self._remaining, key=_submit).submit
        if self._level == 1 and sim.pool.fits(job):
            mode = READY
            self._start(job, READY)
        elif self._level == 1:
            mode = "reserved"
            target = job if self.reserve_rule == "picked" else self._waiting()[0]
            if sim.pool.fits(target):  # the oldest job may fit: start it, stay at level 1
                self._start(target, READY)
            else:
                self._reserved = target
                self._enter_level2()
        else:
            mode = BACKFILLED
            alloc = None
            if sim.now + job.walltime > self._shadow:
                alloc = sim.pool.plan(job)
                self._extra.take(job, alloc)
            self._start(job, BACKFILLED, alloc)
        ctx = StepContext(job=job, mode=mode, now=sim.now, waiting=self._remaining,
                          t_max=t_max,
                          used_nodes=self.system.nodes - sim.pool.free_nodes,
                          system_nodes=self.system.nodes)
        return self.reward_fn(ctx)

    def _start(self, job: Job, mode: str, alloc=None) -> None:
        self.sim.start(job, mode, alloc)
        self._started.add(job.id)
        self._remaining.remove(job)

    def _enter_level2(self) -> None:
        self._level = 2
        self._shadow, self._extra = self.sim.reserve(self._reserved)

    def _refresh_choices(self) -> None:
        """Recompute the window of the current level; empty means the instance is over."""
        sim = self.sim
        if self._level == 1:
            self._choices = self._waiting()[: self.window_size]
            if self.levels == "decima" and not any(sim.pool.fits(j) for j in self._choices):
                self._choices = []
            return
        pool, now, shadow, extra = sim.pool, sim.now, self._shadow, self._extra
        cands = []
        if pool.free_nodes:
            for job in self._waiting():
                if job is self._reserved or not pool.fits(job):
                    continue
                if now + job.walltime <= shadow or extra.fits(job, pool.plan(job)):
                    cands.append(job)
                    if len(cands) == self.window_size:
                        break
        self._choices = cands

    def _begin_instance(self) -> None:
        sim = self.sim
        self._ordered = list(sim.ordered_queue())
        self._remaining = list(self._ordered)
        self._started: set[int] = set()
        self._counted = False
        self._level = 1
        res = self._reserved
        if res is not None and self.levels == "dras":
            if sim.pool.fits(res):
                self._start(res, READY)  # the driver records it as mode "reserved"
                self._reserved = None
            else:
                self._enter_level2()

    def _end_instance(self) -> None:
        if self._started:
            self.sim._drop_started(self._ordered, self._started)
        self._level = 0
        self._choices = []

    def _next_decision(self) -> None:
        """Advance until the agent has a choice to make, or the episode ends."""
        sim = self.sim
        while True:
            if self._level:
                self._refresh_choices()
                if self._choices:
                    if not self._counted:
                        self._counted = True
                        self.instances += 1
                    return
                self._end_instance()
                continue
            if not sim.advance():
                self._done = True
                if sim.queue:
                    raise SimulationError(f"{len(sim.queue)} job(s) left queued on an idle "
                                          "machine")
                return
            if sim.queue:
                self._begin_instance()


if "hpcopt/Dras-v0" not in gym.registry:
    gym.register(id="hpcopt/Dras-v0", entry_point="hpcopt.sim.env:DrasEnv")
