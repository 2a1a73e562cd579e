"""Stages of a workflow: the rule that turns a DAG into the paper's sequential stages.

The ASA paper (seed 002, section 2.2) models a workflow as s sequential stages, stage i
needing n_i cores for t_i seconds.  From a WfFormat DAG (``hpcopt.workflows.reader``):

* **stage = DAG level**: level(task) = 0 without parents, else 1 + the largest level of its
  parents (longest path from a source).  Every task of level i depends only on tasks of
  lower levels, so running the levels one after another respects the DAG.
* **n_i = min(tasks in level i, cap)** cores (``cap=None``: no cap); a task counts as one
  core (the paper's Tigres tasks are single-core processes; ``coreCount`` is ignored).
* **t_i = the LPT makespan** of the level's task runtimes on n_i identical cores: longest
  processing time first, each task to the least-loaded core (ties to the lowest core).
  LPT is within 4/3 - 1/(3 n_i) of the optimal makespan (Graham 1969); with n_i = tasks
  (no binding cap) it is exactly the longest task.  ``t_i`` is at least ``min_runtime``
  (1 s): a stage of zero-second tasks still is a job.

``Stage.work`` is the sum of the task runtimes (core-seconds really used); ``runtime *
cores - work`` is the idle time inside the stage's own allocation.  ``Stage.commands`` are
the level's task commands (``Task.command``) when every task of the level has one, else
empty.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from .reader import Workflow, WorkflowError

MIN_RUNTIME = 1.0


@dataclass(frozen=True, slots=True)
class Stage:
    """One sequential stage: its index, task count, cores n_i, runtime t_i (s), the core
    seconds its tasks use and their commands (empty: not every task has one)."""

    index: int
    tasks: int
    cores: int
    runtime: float
    work: float
    commands: tuple[tuple[str, ...], ...] = ()


def lpt_makespan(runtimes, cores: int) -> float:
    """Makespan of the LPT list schedule of ``runtimes`` on ``cores`` identical cores."""
    if int(cores) != cores or cores < 1:
        raise WorkflowError(f"lpt_makespan: cores must be an integer >= 1, got {cores!r}")
    rts = sorted((float(r) for r in runtimes), reverse=True)
    if not rts:
        return 0.0
    if cores >= len(rts):
        return rts[0]
    loads = [(0.0, k) for k in range(int(cores))]
    for r in rts:
        load, k = heapq.heappop(loads)
        heapq.heappush(loads, (load + r, k))
    return max(load for load, _ in loads)


def stages_of(workflow: Workflow, cap: int | None = None,
              min_runtime: float = MIN_RUNTIME) -> list[Stage]:
    """The stages of ``workflow`` under the rule of this module's docstring."""
    if cap is not None and (isinstance(cap, bool) or int(cap) != cap or cap < 1):
        raise WorkflowError(f"cap: expected an integer >= 1 cores, got {cap!r}")
    out = []
    for i, level in enumerate(workflow.levels()):
        n = len(level) if cap is None else min(len(level), int(cap))
        rts = [t.runtime for t in level]
        commands = tuple(t.command for t in level)
        out.append(Stage(i, len(level), n, max(lpt_makespan(rts, n), min_runtime),
                         float(sum(rts)), commands if all(commands) else ()))
    return out
