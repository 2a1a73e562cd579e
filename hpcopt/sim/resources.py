"""Free-resource state of a machine, as the driver and policies manipulate it.

A resource state answers ``fits(job)``, ``take(job)`` and ``give(job, allocation)`` and can be
copied cheaply, so that EASY reservations ("what is free at the shadow time?") and policies
("does this selection fit?") work by the same rules as the driver.  ``NodePool`` counts nodes;
richer states (burst buffer, SSD classes, node sets on a topology) implement the same methods.
"""

from __future__ import annotations

from hpcopt.domain import Job, System


class NodePool:
    """Interchangeable nodes: the state is the number of free nodes."""

    __slots__ = ("total", "free")

    def __init__(self, total: int, free: int | None = None) -> None:
        self.total = int(total)
        self.free = self.total if free is None else int(free)

    @property
    def free_nodes(self) -> int:
        return self.free

    def fits(self, job: Job) -> bool:
        return job.nodes <= self.free

    def take(self, job: Job, allocation=None):
        """Allocate the job's resources; returns the allocation (here: the node count)."""
        if job.nodes > self.free:
            raise ValueError(f"job {job.id} needs {job.nodes} nodes, {self.free} free")
        self.free -= job.nodes
        return job.nodes

    def give(self, job: Job, allocation) -> None:
        self.free += job.nodes

    def copy(self) -> NodePool:
        return NodePool(self.total, self.free)

    def free_dict(self) -> dict[str, float]:
        return {"nodes": self.free}

    def __repr__(self) -> str:
        return f"NodePool(free={self.free}/{self.total})"


def make_pool(system: System) -> NodePool:
    """The resource state that fits ``system``."""
    return NodePool(system.nodes)
