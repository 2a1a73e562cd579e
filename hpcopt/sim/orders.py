"""Base queue orders: FCFS, SJF, ALCF's WFP and the site's priority.

An order is a sort key over (job, now).  Static orders (FCFS, SJF) do not depend on time, so
the driver keeps the queue sorted by insertion; WFP and ``priority`` (Slurm's multifactor
priority, ``hpcopt.sim.priority``: it follows the simulation's usage, so ``bind_order`` binds
it to one simulator) are re-sorted at every pass.  Ties fall to
the job id; where one workload mixes integer and text ids (the ``hpcopt/1`` protocol allows
both), ``total_ids`` gives its integer ids a total order: integers before text, integers by
value, text by code point.
"""

from __future__ import annotations

from dataclasses import replace
from operator import attrgetter

from hpcopt.domain import Job
from hpcopt.errors import SimulationError, closest

from .priority import GivenPriority, SitePriority

# a static order's key as one C-level call on the job (the driver compares new jobs with the
# queue's tail by it); the key functions below are these with the (unused) time
STATIC_KEYS = {"fcfs": attrgetter("submit", "id"), "sjf": attrgetter("walltime", "submit", "id")}
_FCFS, _SJF = STATIC_KEYS["fcfs"], STATIC_KEYS["sjf"]


class MixedId(int):
    """An integer job id of a workload that also has text ids: it sorts before every text id
    (and among integers by value), so every (..., id) key stays total.  It equals, hashes and
    prints as its integer."""

    __slots__ = ()

    def __lt__(self, other):
        return True if isinstance(other, str) else int.__lt__(self, other)

    def __le__(self, other):
        return True if isinstance(other, str) else int.__le__(self, other)

    def __gt__(self, other):
        return False if isinstance(other, str) else int.__gt__(self, other)

    def __ge__(self, other):
        return False if isinstance(other, str) else int.__ge__(self, other)


def total_ids(jobs: list[Job]) -> list[Job]:
    """``jobs`` with their integer ids (and dependencies) made ``MixedId`` when integer and
    text ids mix; as given otherwise (one type of id is totally ordered already)."""
    kinds = {type(j.id) for j in jobs} | {type(d) for j in jobs for d in j.deps}
    if not (kinds & {str} and kinds - {str}):
        return jobs

    def fix(jid):
        return MixedId(jid) if isinstance(jid, int) and not isinstance(jid, bool) else jid

    return [replace(j, id=fix(j.id), deps=tuple(map(fix, j.deps))) for j in jobs]


def fcfs_key(job: Job, now: float):
    return _FCFS(job)


def sjf_key(job: Job, now: float):
    """Shortest requested walltime first; ties by arrival."""
    return _SJF(job)


def wfp_key(job: Job, now: float):
    """ALCF's WFP utility, highest first: ``(wait / walltime) ** 3 * nodes``.

    The utility used by Cobalt on ALCF machines (Allcock et al., 2017): it favors large jobs
    and jobs that have waited long relative to their requested walltime.  Walltimes below 1 s
    count as 1 s.  Ties by arrival.
    """
    wait = now - job.submit
    return (-((wait / max(job.walltime, 1.0)) ** 3) * job.nodes, job.submit, job.id)


ORDERS = {"fcfs": (fcfs_key, True), "sjf": (sjf_key, True), "wfp": (wfp_key, False),
          "priority": (None, False)}  # bound per simulator: bind_order


def get_order(name: str):
    """(key function, is_static) for an order name."""
    try:
        return ORDERS[name]
    except KeyError:
        raise SimulationError(
            f"unknown order {name!r}; expected one of {sorted(ORDERS)}." + closest(name, ORDERS)
        ) from None


def bind_order(order, sim):
    """(key function, is_static) of ``order`` for the simulator ``sim``: a name of
    ``ORDERS`` (``priority``: Slurm's defaults, under which every job ties: submit order), a
    ``SitePriority`` (the site's weights), bound to ``sim``'s events, or a ``GivenPriority``
    (priorities computed outside)."""
    if isinstance(order, (SitePriority, GivenPriority)):
        return order.bind(sim), False
    if order == "priority":
        return SitePriority().bind(sim), False
    return get_order(order)
