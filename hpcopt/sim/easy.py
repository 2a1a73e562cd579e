"""The EASY reservation and backfill rule of the driver: the one copy of the rule, used by
the decision passes, the one-pick passes (``hpcopt.sim.picks``) and, through
``hpcopt.sim.decide``, by schedulers outside the simulator.  The resource arithmetic is the
pool's own (``ResourcePool.reservation`` and ``backfill_candidates``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from hpcopt.domain import Job
from hpcopt.errors import SimulationError

from .context import PassContext
from .records import BACKFILLED, Event


class EasyBackfill:
    """The reservation (shadow time, extra resources) of one job and the backfill scan
    around it, over a ``PassContext``."""

    __slots__ = ("ctx",)

    def __init__(self, ctx: PassContext) -> None:
        self.ctx = ctx

    def reserve(self, job: Job):
        """EASY reservation for ``job``: ``(shadow time, extra resources)``.

        Walk running jobs by estimated end, releasing all that end at the same time together,
        until ``job`` fits; the extra state is what is free then, minus ``job``'s demand.
        The job's record keeps its first shadow time (``reserved_at``)."""
        ctx = self.ctx
        got = ctx.pool.reservation(job, ctx.ends, ctx.running, ctx.sim.now)
        if got is None:
            raise SimulationError(f"job {job.id} can never fit the system")
        shadow = got[0]
        rec = ctx.records[job.id]
        if rec.reserved_at is None:
            rec.reserved_at = shadow
        subs = ctx.subscribers
        if subs and subs.get(Event.RESERVE):
            ctx.emit(Event.RESERVE, (job, shadow))
        return got

    def backfill(self, ordered: Sequence[Job], reserved: Job, shadow: float, extra,
                 started: set[int]) -> None:
        """EASY scan of ``ordered`` around the reservation of ``reserved``: each candidate
        starts (mode ``backfilled``) and joins ``started``."""
        ctx = self.ctx
        pool = ctx.pool
        if not pool.free_nodes:
            return  # nothing fits now (the candidate scan would stop at once)
        start = ctx.start
        for job, alloc in pool.backfill_candidates(ordered, reserved, shadow, extra, started,
                                                   ctx.sim.now):
            if alloc is not None:
                extra.take(job, alloc)  # (the candidate test checked the fit)
            started.add(job.id)
            start(job, BACKFILLED, alloc)

    def candidates(self, jobs: Iterable[Job], reserved: Job, shadow: float, extra,
                   skip: set | frozenset = frozenset()) -> Iterator[tuple]:
        """The jobs of ``jobs`` (ids in ``skip`` and ``reserved`` aside) that may backfill now
        around the reservation, as ``(job, allocation)`` (``ResourcePool.backfill_candidates``:
        lazy, so a caller that starts a candidate before asking for the next gets the EASY
        scan)."""
        ctx = self.ctx
        return ctx.pool.backfill_candidates(jobs, reserved, shadow, extra, skip, ctx.sim.now)
