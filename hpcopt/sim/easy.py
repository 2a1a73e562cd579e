"""The EASY reservation and backfill rule of the driver (``Simulator``'s ``reserve``,
``backfill`` and ``backfill_candidates``): the one copy of the rule, used by the decision
passes, the one-pick passes and, through ``hpcopt.sim.decide``, by schedulers outside the
simulator."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from hpcopt.domain import Job
from hpcopt.errors import SimulationError

from .records import BACKFILLED, Event
from .resources import NodePool


class EasyBackfill:
    """Mixin of ``Simulator``: the reservation (shadow time, extra resources) of one job and
    the backfill scan around it, over the simulator's pool and running jobs."""

    def reserve(self, job: Job):
        """EASY reservation for ``job``: ``(shadow time, extra resources)``.

        Walk running jobs by estimated end, releasing all that end at the same time together,
        until ``job`` fits; the extra state is what is free then, minus ``job``'s demand.
        """
        shadow = self.now
        keys, vals = self._run_keys, self._run_vals
        i, n = 0, len(vals)
        pool = self.pool
        if type(pool) is NodePool and not (job.bb or job.ssd):  # the same walk on counts
            need, avail = job.nodes, pool.free
            while avail < need:
                if i == n:
                    raise SimulationError(f"job {job.id} can never fit the system")
                shadow = keys[i][0]
                while i < n and keys[i][0] == shadow:
                    avail += keys[i][2]
                    i += 1
            tmp = pool.copy()
            tmp.free = avail - need
        else:
            tmp = pool.copy()
            while not tmp.fits(job):
                if i == n:
                    raise SimulationError(f"job {job.id} can never fit the system")
                shadow = keys[i][0]
                while i < n and keys[i][0] == shadow:
                    tmp.give(vals[i].job, vals[i].allocation)
                    i += 1
            tmp.take(job)
        rec = self.records[job.id]
        if rec.reserved_at is None:
            rec.reserved_at = shadow
        if self._subscribers and self._subscribers.get(Event.RESERVE):
            self._emit(Event.RESERVE, (job, shadow))
        return shadow, tmp

    def backfill(self, ordered: Sequence[Job], reserved: Job, shadow: float, extra,
                 started: set[int]) -> None:
        """EASY scan of ``ordered`` around the reservation of ``reserved``."""
        if type(self.pool) is NodePool and self.pool.free == 0:
            return  # nothing fits now (the candidate scan would stop at once)
        start, counts = self.start, type(extra) is NodePool
        for job, alloc in self.backfill_candidates(ordered, reserved, shadow, extra, started):
            if alloc is not None:
                if counts:
                    extra.free -= alloc  # NodePool.take: the candidate test checked the fit
                else:
                    extra.take(job, alloc)
            started.add(job.id)
            start(job, BACKFILLED, alloc)

    def backfill_candidates(self, jobs: Iterable[Job], reserved: Job, shadow: float, extra,
                            skip: set | frozenset = frozenset()) -> Iterator[tuple]:
        """The jobs of ``jobs`` (ids in ``skip`` and ``reserved`` aside) that may backfill now
        around the reservation, as ``(job, allocation)``: the job fits now and either ends by
        its walltime no later than ``shadow`` (allocation ``None``) or the very resources it
        takes now (the allocation) are among the ``extra`` ones.  Lazy: each job is tested
        against the state at the moment it is reached, so a caller that starts a candidate
        before asking for the next gets the EASY scan."""
        pool, now = self.pool, self.now
        if type(pool) is NodePool and type(extra) is NodePool:
            # the same test on node counts (a NodePool job asks for nodes only; its plan is
            # its node count): no method call per queued job
            free = pool.free
            for job in jobs:
                if free == 0:
                    return
                nodes = job.nodes
                if nodes > free or job is reserved or job.id in skip:
                    continue
                if now + job.walltime <= shadow:
                    yield job, None
                elif nodes <= extra.free:
                    yield job, nodes
                else:
                    continue
                free = pool.free  # the caller may have started it
            return
        for job in jobs:
            if pool.free_nodes == 0:
                return
            if job.id in skip or job is reserved or not pool.fits(job):
                continue
            if now + job.walltime <= shadow:
                yield job, None
            else:
                # it will still run at the shadow time: the very resources it takes now
                # must be left over by the reserved job then
                alloc = pool.plan(job)
                if extra.fits(job, alloc):
                    yield job, alloc
