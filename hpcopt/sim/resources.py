"""Free-resource state of a machine, as the driver and policies manipulate it.

A resource state answers ``fits(job)``, ``take(job)`` and ``give(job, allocation)`` and can be
copied cheaply, so that EASY reservations ("what is free at the shadow time?") and policies
("does this selection fit?") work by the same rules as the driver.  ``NodePool`` counts nodes;
richer states (burst buffer, SSD classes, node sets on a topology) implement the same methods.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from operator import attrgetter

import numpy as np

from hpcopt.domain import Job, System
from hpcopt.errors import HpcoptError, InvalidDecisionError, SimulationError

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

    @classmethod
    def availability(cls, system: System, unavailable, completing,
                     unavailable_bb: float = 0.0) -> Availability:
        """What a decision may use of ``system``, its nodes counted (``Availability``)."""
        return CountedNodes(system, unavailable, completing, unavailable_bb)

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

    @classmethod
    def availability(cls, system: System, unavailable, completing,
                     unavailable_bb: float = 0.0) -> Availability:
        """What a decision may use of ``system``: nodes per SSD class where they are given
        as ``{SSD GB: nodes}``, else counted (``Availability``)."""
        if system.ssd_classes and any(isinstance(n, Mapping)
                                      for n in (unavailable, completing)):
            return NodesByClass(system, unavailable, completing, unavailable_bb)
        return CountedNodes(system, unavailable, completing, unavailable_bb)

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

    @classmethod
    def availability(cls, system: System, unavailable, completing,
                     unavailable_bb: float = 0.0) -> Availability:
        """What a decision may use of ``system``, its nodes told apart (``Availability``)."""
        return NodeIds(system, unavailable, completing, unavailable_bb)

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


def pool_class(system: System) -> type:
    """The class of the resource state that fits ``system`` (``make_pool``)."""
    if system.capacity is not None:
        return CapacityPool
    if system.topology is not None:
        return TopologyPool
    if system.bb > 0 or system.ssd_classes:
        return MultiPool
    return NodePool


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


def availability(system: System, unavailable=0, completing=0,
                 unavailable_bb: float = 0.0) -> Availability:
    """What one decision may use of ``system`` when ``unavailable`` nodes take no job and
    ``completing`` ones are busy until now, each given as its kind counts nodes (a count,
    node ids on a topology, ``{SSD GB: nodes}`` on SSD classes), and ``unavailable_bb`` GB of
    the burst buffer are held elsewhere: built by the class of the machine's resource state
    (``pool_class``)."""
    return pool_class(system).availability(system, unavailable, completing, unavailable_bb)


NEVER = 100 * 365 * 86400.0  # how long an unavailable node of a topology stays taken


class Availability:
    """What one decision may use of a machine, and the questions a decision asks of its
    kind: ``machine`` is the system without the nodes and burst buffer out of it (``None``
    when no node is left), ``usable`` its nodes that may take a job.  Nodes busy with no
    known job become stand-in jobs (``stand_ins``); jobs told to start on given nodes keep
    them unless a read says they are busy (``pin``); ``placement`` is what a decision says
    of where a started job runs (``None``: nothing, its nodes are counted)."""

    places = False  # the decision says where each job starts

    def never_fits(self, job: Job) -> str | None:
        """Why ``job`` cannot fit the machine's available nodes even when all are free
        (None: it can)."""
        machine = self.machine
        if job.nodes > self.usable:
            return f"asks {job.nodes} nodes, {self.usable} available"
        if machine is not None and job.bb > machine.bb:
            return f"asks {job.bb:g} GB of burst buffer, the machine has {machine.bb:g}"
        if machine is not None and machine.ssd_classes and job.ssd:
            fit = sum(n for size, n in machine.ssd_classes.items() if size >= job.ssd)
            if job.nodes > fit:
                return (f"asks {job.nodes} nodes with {job.ssd:g} GB of SSD, {fit} available "
                        "have that much")
        return None

    def claim(self, running) -> set:
        """The nodes that ``running`` (``(job, end, nodes or None)``) hold, where nodes are
        told apart (else an empty set)."""
        return set()

    def stand_ins(self, claimed: set) -> list[tuple[int, float, object]]:
        """The nodes busy with no job, as ``(nodes, how long from now, allocation)`` of one
        stand-in job each (completing nodes end now); ``claimed`` (``claim``) grows by
        them."""
        n = len(self.completing)
        return [(n, 0.0, None)] if n else []

    def pin(self, nodes, claimed: set):
        """The nodes a starting job told to start on ``nodes`` keeps (None: it takes what the
        pool gives); ``claimed`` grows by them."""
        return nodes

    def placement(self, allocation):
        """What the decision says of where a job started on ``allocation`` (None: nothing)."""
        return tuple(int(n) for n in allocation) if self.places else None


class CountedNodes(Availability):
    """Interchangeable nodes (and a machine with a burst buffer, SSD classes counted as a
    whole, or a capacity profile): unavailable nodes leave the machine, completing ones are
    one stand-in job; counts (or as many ids)."""

    def __init__(self, system: System, unavailable, completing,
                 unavailable_bb: float = 0.0) -> None:
        down, self.completing = node_ids(unavailable, False), node_ids(completing, False)
        self.unavailable = down
        self.machine = _without(system, len(down), len(self.completing), unavailable_bb)
        self.usable = self.machine.nodes if self.machine is not None else 0
        self.places = bool(system.ssd_classes)


class NodesByClass(Availability):
    """Nodes in SSD classes, counted per class (``{SSD GB: nodes}``): unavailable nodes
    leave their classes, completing ones are one stand-in job holding them class by
    class; decisions say how many nodes of each class a job starts on."""

    places = True

    def __init__(self, system: System, unavailable, completing,
                 unavailable_bb: float = 0.0) -> None:
        sizes = sorted(system.ssd_classes)
        down = self.unavailable = _per_class(unavailable, sizes)
        self.completing = _per_class(completing, sizes)
        machine = _without(system, 0, 0, unavailable_bb)
        if machine is not None and any(down):  # a class may be left with no node
            machine = replace(machine, nodes=machine.nodes - sum(down), ssd_classes={
                s: machine.ssd_classes[s] - d for s, d in zip(sizes, down)}) \
                if sum(down) < machine.nodes else None
        self.machine = machine
        self.usable = machine.nodes if machine is not None else 0

    def stand_ins(self, claimed: set) -> list[tuple[int, float, object]]:
        ending = self.completing
        return [(sum(ending), 0.0, tuple(ending))] if any(ending) else []


class NodeIds(Availability):
    """Nodes told apart on a topology (node ids): unavailable nodes stay in the machine,
    to keep their ids, as a stand-in job that never ends; each running job's nodes must be
    known, and decisions say which nodes a job starts on."""

    places = True

    def __init__(self, system: System, unavailable, completing,
                 unavailable_bb: float = 0.0) -> None:
        self.unavailable = node_ids(unavailable, True)
        self.completing = node_ids(completing, True)
        self.machine = _without(system, 0, 0, unavailable_bb)
        self.usable = system.nodes - len(self.unavailable)

    def claim(self, running) -> set:
        missing = next((job for job, _, nodes in running if nodes is None), None)
        if missing is not None:
            raise HpcoptError(f"running job {missing.id}: its node ids are needed on a "
                              "topology (ClusterState.placed)")
        return {n for _, _, nodes in running for n in nodes}

    def stand_ins(self, claimed: set) -> list[tuple[int, float, object]]:
        # reads taken a moment apart may name a node twice: a node a running job claims is
        # its, a completing node is not also unavailable
        ending = tuple(n for n in self.completing if n not in claimed)
        down = tuple(n for n in self.unavailable if n not in claimed and n not in ending)
        claimed.update(ending, down)
        return [(len(ids), wait, ids) for ids, wait in ((ending, 0.0), (down, NEVER)) if ids]

    def pin(self, nodes, claimed: set):
        if nodes is None or not claimed.isdisjoint(nodes):
            return None
        claimed.update(nodes)
        return nodes


def node_ids(nodes, topology: bool) -> tuple[int, ...]:
    """Nodes given as a count or as node ids: ids (a count stands for that many anonymous
    nodes, which a topology cannot place)."""
    if isinstance(nodes, int):
        if nodes < 0:
            raise HpcoptError(f"a node count must be >= 0, got {nodes}")
        if topology and nodes:
            raise HpcoptError("on a machine with a topology, give unavailable and completing "
                              "nodes as node ids")
        return tuple(range(nodes))
    return tuple(int(n) for n in nodes)


def _per_class(nodes, sizes: list) -> tuple[int, ...]:
    """Nodes per SSD class (ascending ``sizes``) from ``{SSD GB: nodes}`` (or 0: none)."""
    if not isinstance(nodes, Mapping) and nodes == 0:
        return (0,) * len(sizes)
    if not isinstance(nodes, Mapping) or set(nodes) - set(sizes) or \
            any(int(n) != n or n < 0 for n in nodes.values()):
        raise HpcoptError(f"on a machine with SSD classes {sizes}, give unavailable and "
                          f"completing nodes as {{SSD GB: nodes}}, got {nodes!r}")
    return tuple(int(nodes.get(s, 0)) for s in sizes)


def _without(system: System, unavailable: int, completing: int,
             unavailable_bb: float = 0.0) -> System | None:
    """``system`` without ``unavailable`` nodes and ``unavailable_bb`` GB of its burst buffer
    (``None`` when no node is left)."""
    if not 0 <= unavailable_bb < float("inf"):
        raise HpcoptError(f"unavailable burst buffer must be >= 0, got {unavailable_bb}")
    if unavailable + completing > system.nodes:
        raise HpcoptError(f"{unavailable} unavailable and {completing} completing nodes, but "
                          f"the system has {system.nodes}")
    if unavailable_bb:
        system = replace(system, bb=max(0.0, system.bb - unavailable_bb))
    if not unavailable:
        return system
    if system.ssd_classes or system.capacity is not None:
        raise HpcoptError("unavailable nodes are counted on a machine of interchangeable "
                          "nodes only (this one has SSD classes or a capacity profile)")
    left = system.nodes - unavailable
    return replace(system, nodes=left) if left else None
