"""DRAS's state encoding and rewards (Fan et al., IPDPS'21, section III).

Used by the ``dras-pg``/``dras-dql``/``decima-pg`` policies and by ``DrasEnv``; numpy only.

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

Every value is clipped to ``[0, clip]``.  Rewards are pluggable (see
``REWARDS``); ``reward="capability"`` is Eq. (1), ``"capacity"`` Eq. (2).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from hpcopt.domain import Job
from hpcopt.errors import SimulationError, closest


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

    def encode(self, request) -> np.ndarray:
        """The observation of a driver ``PickRequest``."""
        sim = request.sim
        return self(request.choices, sim.running, sim.pool.free_nodes, sim.now)

    def mask(self, request) -> np.ndarray:
        """int8 mask over the W window slots: 1 where a pick of ``request`` is legal."""
        mask = np.zeros(self.window, dtype=np.int8)
        if request.mask is None:
            mask[: len(request.choices)] = 1
        else:
            mask[: len(request.mask)] = request.mask
        return mask


def step_context(sim, pick) -> StepContext:
    """The reward context of a driver ``Pick`` event."""
    return StepContext(job=pick.job, mode=pick.mode, now=sim.now, waiting=pick.waiting,
                       t_max=pick.longest_wait,
                       used_nodes=sim.system.nodes - sim.pool.free_nodes,
                       system_nodes=sim.system.nodes)
