"""Free-resource state of a machine, as the driver and policies manipulate it.

A resource state answers ``fits(job)``, ``take(job)`` and ``give(job, allocation)`` and can be
copied cheaply, so that EASY reservations ("what is free at the shadow time?") and policies
("does this selection fit?") work by the same rules as the driver.  ``NodePool`` counts nodes;
richer states (burst buffer, SSD classes, node sets on a topology) implement the same methods.
"""

from __future__ import annotations

from operator import attrgetter

import numpy as np

from hpcopt.domain import Job, System
from hpcopt.errors import InvalidDecisionError, SimulationError

_new_pool = object.__new__


def fitting_prefix(jobs, pool, take: bool = True) -> int:
    """How many of ``jobs``, in order, fit the free resources together up to the first that
    does not (the head-first rule); they are taken from ``pool`` unless ``take`` is false."""
    return pool.fitting_prefix(jobs, take)


class ResourcePool:
    """The rules the driver applies to any resource state, written once over its ``fits``,
    ``plan``, ``take``, ``give`` and ``copy``.  A state with a cheaper exact rule (``NodePool``,
    counting nodes) overrides them; the answers are the same."""

    __slots__ = ()
    counts_only = False
    """The state is one count of free nodes that only ``take`` and ``give`` change (the
    driver may then keep a reservation over passes in which nothing was freed)."""

    def fitting_prefix(self, jobs, take: bool = True) -> int:
        """``fitting_prefix`` (module function) on this state."""
        pool = self if take else self.copy()
        k = 0
        for job in jobs:
            if not pool.fits(job):
                break
            pool.take(job)
            k += 1
        return k

    def each_fits(self, jobs) -> bool:
        """Whether every one of ``jobs`` fits this state on its own."""
        return all(map(self.fits, jobs))

    def reservation(self, job: Job, ends, running, now: float):
        """EASY's reservation walk for ``job``: ``(shadow time, extra state)``, or ``None``
        when it never fits.  ``ends`` are the running jobs' ``(estimated end, seq, nodes)``
        keys in order and ``running`` the ``RunningJob`` of each: releasing together all that
        end at the same time, the shadow time is the first estimated end at which ``job``
        fits (``now`` if it fits now), and the extra state is what is free then minus
        ``job``'s demand."""
        tmp = self.copy()
        shadow, i, n = now, 0, len(running)
        while not tmp.fits(job):
            if i == n:
                return None
            shadow = ends[i][0]
            while i < n and ends[i][0] == shadow:
                tmp.give(running[i].job, running[i].allocation)
                i += 1
        tmp.take(job)
        return shadow, tmp

    def backfill_candidates(self, jobs, reserved: Job, shadow: float, extra, skip,
                            now: float):
        """The jobs of ``jobs`` (ids in ``skip`` and ``reserved`` aside) that may backfill at
        ``now`` around a reservation at ``shadow`` whose extra state is ``extra``, as
        ``(job, allocation)``: the job fits now and either ends by its walltime no later than
        ``shadow`` (allocation ``None``) or the very resources it takes now (the allocation)
        are among the extra ones.  Lazy: each job is tested against the state at the moment
        it is reached, so a caller that starts a candidate before asking for the next gets
        the EASY scan."""
        for job in jobs:
            if self.free_nodes == 0:
                return
            if job.id in skip or job is reserved or not self.fits(job):
                continue
            if now + job.walltime <= shadow:
                yield job, None
            else:
                # it will still run at the shadow time: the very resources it takes now
                # must be left over by the reserved job then
                alloc = self.plan(job)
                if extra.fits(job, alloc):
                    yield job, alloc


class NodeCounts(ResourcePool):
    """The rules of interchangeable nodes, read off ``free`` (a count): a job fits when it
    asks for no more nodes than are free and for no burst buffer or SSD."""

    __slots__ = ()

    @property
    def free_nodes(self) -> int:
        return self.free

    def fits(self, job: Job, allocation=None) -> bool:
        return job.nodes <= self.free and not job.bb and not job.ssd

    def plan(self, job: Job):
        """The allocation ``take`` would make now, without taking it."""
        return job.nodes

    def why_not(self, job: Job) -> str:
        if job.bb or job.ssd:
            return (f"needs burst buffer ({job.bb:g} GB) or SSD ({job.ssd:g} GB per node), "
                    "and the system has neither")
        return f"needs {job.nodes} nodes, {self.free} free"


class NodePool(NodeCounts):
    """Interchangeable nodes: the state is the number of free nodes.

    The machine has no burst buffer and no SSD classes, so a job asking for either never fits.
    The driver's rules (``ResourcePool``) are written here on the node count, without a
    method call per job: the simulator spends most of its time in them.
    """

    __slots__ = ("total", "free")
    counts_only = True

    def __init__(self, total: int, free: int | None = None) -> None:
        self.total = int(total)
        self.free = self.total if free is None else int(free)

    def take(self, job: Job, allocation=None):
        """Allocate the job's resources; returns the allocation (here: the node count)."""
        nodes = job.nodes
        if nodes > self.free or job.bb or job.ssd:
            raise InvalidDecisionError(f"job {job.id} {self.why_not(job)}")
        self.free -= nodes
        return nodes

    def give(self, job: Job, allocation) -> None:
        self.free += job.nodes

    def copy(self) -> NodePool:
        new = _new_pool(NodePool)  # no int() conversions: the values are ints already
        new.total = self.total
        new.free = self.free
        return new

    def fitting_prefix(self, jobs, take: bool = True) -> int:
        free, k = self.free, 0
        for job in jobs:
            nodes = job.nodes
            if nodes > free or job.bb or job.ssd:
                break
            free -= nodes
            k += 1
        if take:
            self.free = free
        return k

    def each_fits(self, jobs) -> bool:
        return not jobs or (max(map(_job_nodes, jobs)) <= self.free
                            and not any(map(_job_bb, jobs)) and not any(map(_job_ssd, jobs)))

    def reservation(self, job: Job, ends, running, now: float):
        if job.bb or job.ssd:
            return None
        need, avail = job.nodes, self.free
        shadow, i, n = now, 0, len(ends)
        while avail < need:  # the walk on counts (the keys carry each job's nodes)
            if i == n:
                return None
            shadow = ends[i][0]
            while i < n and ends[i][0] == shadow:
                avail += ends[i][2]
                i += 1
        tmp = _new_pool(NodePool)
        tmp.total, tmp.free = self.total, avail - need
        return shadow, tmp

    def backfill_candidates(self, jobs, reserved: Job, shadow: float, extra, skip,
                            now: float):
        # a NodePool job asks for nodes only and its plan is its node count; ``extra`` is a
        # NodePool (this pool's reservation)
        free = self.free
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
            free = self.free  # the caller may have started it

    def free_dict(self) -> dict[str, float]:
        return {"nodes": self.free}

    def __repr__(self) -> str:
        return f"NodePool(free={self.free}/{self.total})"


_job_nodes, _job_bb, _job_ssd = attrgetter("nodes"), attrgetter("bb"), attrgetter("ssd")


class MultiPool(ResourcePool):
    """Nodes in SSD classes plus a shared burst buffer (BBSched's resources).

    A job needs ``nodes`` nodes whose SSD size is at least its ``ssd`` request, and ``bb`` GB
    of burst buffer for its whole run.  Nodes are taken from the smallest eligible SSD class
    first (a 100 GB request prefers 128 GB nodes and spills into 256 GB ones; a 200 GB request
    only gets 256 GB nodes), so large-SSD nodes stay free for the jobs that need them.  The
    allocation is the tuple of nodes taken per class.
    """

    __slots__ = ("sizes", "counts", "free_class", "bb_total", "free_bb")

    def __init__(self, sizes, counts, bb_total: float, free_class=None, free_bb=None) -> None:
        self.sizes = tuple(sizes)  # SSD GB per node, ascending
        self.counts = tuple(counts)
        self.free_class = list(counts if free_class is None else free_class)
        self.bb_total = float(bb_total)
        self.free_bb = self.bb_total if free_bb is None else float(free_bb)

    @classmethod
    def for_system(cls, system: System) -> MultiPool:
        classes = sorted(system.ssd_classes.items()) or [(0.0, system.nodes)]
        return cls([float(s) for s, _ in classes], [int(n) for _, n in classes], system.bb)

    @property
    def total(self) -> int:
        return sum(self.counts)

    @property
    def free_nodes(self) -> int:
        return sum(self.free_class)

    def _eligible_free(self, job: Job) -> int:
        return sum(f for size, f in zip(self.sizes, self.free_class) if size >= job.ssd)

    def fits(self, job: Job, allocation=None) -> bool:
        """Whether ``job`` fits now; with ``allocation``, whether exactly those nodes are free."""
        if job.bb > self.free_bb + 1e-9:
            return False
        if allocation is None:
            return job.nodes <= self._eligible_free(job)
        return sum(allocation) == job.nodes and all(
            got <= free and (got == 0 or size >= job.ssd)
            for got, free, size in zip(allocation, self.free_class, self.sizes))

    def plan(self, job: Job) -> tuple[int, ...]:
        """Nodes per class that ``take`` would use: smallest eligible class first."""
        need, alloc = job.nodes, []
        for size, free in zip(self.sizes, self.free_class):
            got = min(need, free) if size >= job.ssd else 0
            need -= got
            alloc.append(got)
        return tuple(alloc)

    def take(self, job: Job, allocation=None):
        """Allocate ``job`` (by the class rule, or exactly ``allocation``); returns the
        nodes taken per class."""
        alloc = self.plan(job) if allocation is None else tuple(allocation)
        if not self.fits(job, alloc):
            raise InvalidDecisionError(f"job {job.id} does not fit: {self.why_not(job)}")
        for k, got in enumerate(alloc):
            self.free_class[k] -= got
        self.free_bb -= job.bb
        return alloc

    def give(self, job: Job, allocation) -> None:
        for k, got in enumerate(allocation):
            self.free_class[k] += got
        self.free_bb += job.bb

    def copy(self) -> MultiPool:
        return MultiPool(self.sizes, self.counts, self.bb_total, self.free_class, self.free_bb)

    def free_dict(self) -> dict[str, float]:
        out = {"nodes": self.free_nodes, "bb": self.free_bb}
        if len(self.sizes) > 1 or self.sizes[0] > 0:
            out.update({f"ssd_{size:g}": f for size, f in zip(self.sizes, self.free_class)})
        return out

    def why_not(self, job: Job) -> str:
        """Why ``job`` does not fit, in words (for error messages)."""
        if job.bb > self.free_bb + 1e-9:
            return f"needs {job.bb:g} GB burst buffer, {self.free_bb:g} free"
        return (f"needs {job.nodes} nodes with >= {job.ssd:g} GB SSD, "
                f"{self._eligible_free(job)} free")

    def __repr__(self) -> str:
        return f"MultiPool({self.free_dict()})"


class TopologyPool(ResourcePool):
    """Distinguishable nodes on a network topology: the state is the set of idle node ids.

    ``take(job)`` without an allocation is first-fit contiguous: the lowest run of at least
    n consecutive idle node ids, else (the idle nodes are too fragmented) the n lowest idle
    ids.  ``take(job, nodes)`` takes exactly ``nodes``; allocation models (SCAS, DCAS) pass
    their node sets this way.  ``idle_nodes()`` is the sorted sequence Q they start from.
    """

    __slots__ = ("total", "idle")

    def __init__(self, total: int, idle=None) -> None:
        self.total = int(total)
        self.idle = np.ones(self.total, dtype=bool) if idle is None else idle.copy()

    @property
    def free_nodes(self) -> int:
        return int(self.idle.sum())

    def idle_nodes(self) -> np.ndarray:
        return np.flatnonzero(self.idle)

    def fits(self, job: Job, allocation=None) -> bool:
        if job.bb or job.ssd:
            return False
        if allocation is None:
            return job.nodes <= self.free_nodes
        nodes = np.asarray(allocation, dtype=np.int64)
        return (nodes.size == job.nodes and np.unique(nodes).size == nodes.size
                and bool(((nodes >= 0) & (nodes < self.total)).all())
                and bool(self.idle[nodes].all()))

    def plan(self, job: Job) -> np.ndarray:
        """First-fit contiguous node ids for ``job`` (see the class docstring)."""
        free = self.idle_nodes()
        n = job.nodes
        if free.size < n:
            raise InvalidDecisionError(f"job {job.id} {self.why_not(job)}")
        breaks = np.flatnonzero(np.diff(free) != 1) + 1
        starts = np.concatenate([[0], breaks])
        lengths = np.diff(np.concatenate([starts, [free.size]]))
        long_enough = np.flatnonzero(lengths >= n)
        first = starts[long_enough[0]] if long_enough.size else 0
        return free[first:first + n]

    def take(self, job: Job, allocation=None) -> np.ndarray:
        nodes = self.plan(job) if allocation is None else np.asarray(allocation, dtype=np.int64)
        if not self.fits(job, nodes):
            raise InvalidDecisionError(
                f"job {job.id} cannot take nodes {list(map(int, nodes))[:8]}...: "
                f"{job.nodes} distinct idle node ids in 0..{self.total - 1} needed")
        self.idle[nodes] = False
        return nodes

    def give(self, job: Job, allocation) -> None:
        self.idle[np.asarray(allocation, dtype=np.int64)] = True

    def copy(self) -> TopologyPool:
        return TopologyPool(self.total, self.idle)

    def why_not(self, job: Job) -> str:
        if job.bb or job.ssd:
            return "needs burst buffer or SSD, and the system has neither"
        return f"needs {job.nodes} nodes, {self.free_nodes} free"

    def free_dict(self) -> dict[str, float]:
        return {"nodes": self.free_nodes}

    def __repr__(self) -> str:
        return f"TopologyPool(free={self.free_nodes}/{self.total})"


class CapacityProfile:
    """A step function of time: ``values[k]`` holds on ``[start + k*period, start +
    (k+1)*period)``; before ``start`` the first value, after the last step the last value.
    The capacity profile of a cloud system (``System.capacity``): what on-demand load leaves.
    """

    __slots__ = ("values", "period", "start")

    def __init__(self, values, period: float = 1.0, start: float = 0.0) -> None:
        self.values = tuple(int(v) for v in values)
        if not self.values or min(self.values) < 0:
            raise SimulationError("a capacity profile needs at least one value, all >= 0")
        if not period > 0:
            raise SimulationError(f"capacity profile period must be > 0, got {period}")
        self.period = float(period)
        self.start = float(start)

    def at(self, time: float) -> int:
        k = int((time - self.start) // self.period) if time > self.start else 0
        return self.values[min(k, len(self.values) - 1)]

    def __repr__(self) -> str:
        return f"CapacityProfile({len(self.values)} steps of {self.period:g})"


class CapacityPool(NodeCounts):
    """Interchangeable nodes (or cores) under a time-varying capacity (cloud slots, OSDEC).

    ``total`` is the machine (no job is larger), ``capacity`` the part usable at the current
    time (the driver calls ``set_time`` at every event time), ``used`` what running jobs hold.
    A job fits when it fits the free capacity ``max(0, capacity - used)``; running jobs are
    never stopped, so when the capacity shrinks below ``used`` the excess is an overload (a
    violation the model prices), not an error.
    """

    __slots__ = ("total", "profile", "capacity", "used")

    def __init__(self, total: int, profile, capacity: int | None = None,
                 used: int = 0) -> None:
        self.total = int(total)
        self.profile = profile
        self.capacity = self.total if capacity is None else int(capacity)
        self.used = int(used)

    @property
    def free(self) -> int:  # the NodeCounts rules read self.free
        return max(0, self.capacity - self.used)

    def take(self, job: Job, allocation=None):
        if not self.fits(job):
            raise InvalidDecisionError(f"job {job.id} {self.why_not(job)}")
        self.used += job.nodes
        return job.nodes

    def give(self, job: Job, allocation) -> None:
        self.used -= job.nodes

    def set_time(self, time: float) -> None:
        """Move the capacity to the profile's value at ``time``."""
        prof = self.profile
        self.capacity = int(prof.at(time) if hasattr(prof, "at") else prof(time))

    @property
    def overload(self) -> int:
        """Cores in use above the current capacity (the violation v_t now)."""
        return max(0, self.used - self.capacity)

    def copy(self) -> CapacityPool:
        return CapacityPool(self.total, self.profile, self.capacity, self.used)

    def free_dict(self) -> dict[str, float]:
        return {"nodes": self.free, "capacity": self.capacity}

    def __repr__(self) -> str:
        return f"CapacityPool(used={self.used}, capacity={self.capacity}/{self.total})"


def make_pool(system: System):
    """The resource state that fits ``system``: node sets on a topology, several resources,
    a time-varying capacity (``System.capacity``: a ``CapacityProfile`` or any callable
    time -> capacity), or plain node counting."""
    if system.capacity is not None:
        if system.topology is not None or system.bb > 0 or system.ssd_classes:
            raise SimulationError("a system with a capacity profile counts nodes (cores) only")
        return CapacityPool(system.nodes, system.capacity)
    if system.topology is not None:
        if system.bb > 0 or system.ssd_classes:
            raise SimulationError(
                "a system with a topology has no burst buffer or SSD classes here")
        return TopologyPool(system.nodes)
    if system.bb > 0 or system.ssd_classes:
        return MultiPool.for_system(system)
    return NodePool(system.nodes)
