"""Classic window policies: head-first (FCFS/SJF/WFP), largest-first and random."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hpcopt.domain import Decision, Window
from hpcopt.sim.resources import fitting_prefix

from .base import Policy, register_policy


def greedy_fill(window: Window, jobs) -> tuple[int, ...]:
    """Start ``jobs`` in the given order, skipping those that no longer fit."""
    pool = window.resources
    chosen = []
    for job in jobs:
        if pool.free_nodes == 0:
            break
        if pool.fits(job):
            pool.take(job)
            chosen.append(job.id)
    return tuple(chosen)


def prefix_fill(window: Window, jobs) -> tuple[int, ...]:
    """Start ``jobs`` in the given order up to the first that does not fit (the longest
    prefix that fits the free resources): the head-first rule, and the way every cloud-slot
    policy maps its scores to starts (``hpcopt.policies.osdec.start_by_scores``)."""
    jobs = list(jobs) if not isinstance(jobs, Sequence) else jobs
    return tuple(job.id for job in jobs[:fitting_prefix(jobs, window.resources)])


@register_policy("fcfs", order="fcfs")
@register_policy("sjf", order="sjf")
@register_policy("wfp", order="wfp")
@register_policy("baseline", order=None, window=20)
class HeadFirst(Policy):
    """Start jobs from the head of the base order while the head fits (FCFS/SJF/WFP).

    Registered as ``baseline`` too: BBSched's naive method (Slurm's burst-buffer scheduling:
    in queue order until some resource runs out), in the base order the driver is given.
    """

    waits_for_head = True  # nothing starts while the head does not fit (driver: quiet passes)
    starts_prefix = True  # decide() is the head-first rule: the driver applies it directly

    def __init__(self, order: str | None = "fcfs", window: int | None = None) -> None:
        self.order = order
        self.window = window

    def decide(self, window: Window) -> Decision:
        return Decision(prefix_fill(window, window.jobs))


@register_policy("largest-first")
class LargestFirst(Policy):
    """Start the largest runnable jobs first until nothing else fits (DRAS's BinPacking)."""

    def __init__(self, window: int | None = None, order: str | None = None) -> None:
        self.window = window
        self.order = order

    def decide(self, window: Window) -> Decision:
        jobs = sorted(window.jobs, key=lambda j: -j.nodes)  # stable: ties keep base order
        return Decision(greedy_fill(window, jobs))


@register_policy("random")
class RandomPolicy(Policy):
    """Start runnable window jobs in a random (seeded) order until nothing else fits."""

    def __init__(self, window: int | None = None, order: str | None = None,
                 seed: int | None = None) -> None:
        self.window = window
        self.order = order
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self.seed = 0 if seed is None else seed  # a fixed default: runs repeat
        self._rng = np.random.default_rng(self.seed)

    def decide(self, window: Window) -> Decision:
        perm = self._rng.permutation(len(window.jobs))
        return Decision(greedy_fill(window, [window.jobs[i] for i in perm]))
