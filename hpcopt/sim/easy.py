"""The EASY reservation and backfill rule of the driver (``Simulator``'s ``reserve``,
``backfill`` and ``backfill_candidates``): the one copy of the rule, used by the decision
passes, the one-pick passes and, through ``hpcopt.sim.decide``, by schedulers outside the
simulator."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from hpcopt.domain import Job
from hpcopt.errors import SimulationError

from .records import BACKFILLED, Event


class EasyBackfill:
    """Mixin of ``Simulator``: the reservation (shadow time, extra resources) of one job and
    the backfill scan around it, over the simulator's pool and running jobs."""

    def reserve(self, job: Job):
        """EASY reservation for ``job``: ``(shadow time, extra resources)``.

        Walk running jobs by estimated end, releasing all that end at the same time together,
        until ``job`` fits; the extra state is what is free then, minus ``job``'s demand
        (``ResourcePool.reservation``).
        """
        got = self.pool.reservation(job, self._run_keys, self._run_vals, self.now)
        if got is None:
            raise SimulationError(f"job {job.id} can never fit the system")
        shadow = got[0]
        rec = self.records[job.id]
        if rec.reserved_at is None:
            rec.reserved_at = shadow
        if self._subscribers and self._subscribers.get(Event.RESERVE):
            self._emit(Event.RESERVE, (job, shadow))
        return got

    def backfill(self, ordered: Sequence[Job], reserved: Job, shadow: float, extra,
                 started: set[int]) -> None:
        """EASY scan of ``ordered`` around the reservation of ``reserved``."""
        pool = self.pool
        if not pool.free_nodes:
            return  # nothing fits now (the candidate scan would stop at once)
        start = self.start
        for job, alloc in pool.backfill_candidates(ordered, reserved, shadow, extra, started,
                                                   self.now):
            if alloc is not None:
                extra.take(job, alloc)  # (the candidate test checked the fit)
            started.add(job.id)
            start(job, BACKFILLED, alloc)

    def backfill_candidates(self, jobs: Iterable[Job], reserved: Job, shadow: float, extra,
                            skip: set | frozenset = frozenset()) -> Iterator[tuple]:
        """The jobs of ``jobs`` (ids in ``skip`` and ``reserved`` aside) that may backfill now
        around the reservation, as ``(job, allocation)`` (``ResourcePool.backfill_candidates``:
        lazy, so a caller that starts a candidate before asking for the next gets the EASY
        scan)."""
        return self.pool.backfill_candidates(jobs, reserved, shadow, extra, skip, self.now)
