"""Domain types shared by traces, the driver, policies and models.

``Job`` and ``System`` are immutable descriptions; ``Window`` is the snapshot a policy sees at
one scheduling instance; ``Decision`` is what it answers.  Optional fields (burst buffer, SSD
per node, topology, capacity profile, deferrable-job bounds) are here from the start so that
multi-resource, topology-aware and cloud models plug in without changing these types.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import ModelError


@dataclass(frozen=True, slots=True)
class Job:
    """A batch job.

    ``runtime`` is the actual run time (already capped at ``walltime``); ``walltime`` is the
    user's request, which is all a scheduler may plan with.  ``bb`` is shared burst buffer in
    GB for the whole run, ``ssd`` local SSD per node in GB.  ``earliest``/``latest`` bound the
    start of deferrable cloud jobs; ``deps`` are ids of jobs that must finish first.  ``id``
    is an int, or text for job tables with ids such as Slurm array ids (``"123_4"``); the ids
    of one workload share one type (``hpcopt.traces.tables``).
    """

    id: int | str
    submit: float
    runtime: float
    walltime: float
    nodes: int
    bb: float = 0.0
    ssd: float = 0.0
    priority: int = 0
    user: int = -1
    queue: int = -1
    cores: int = 0
    earliest: float | None = None
    latest: float | None = None
    deps: tuple[int | str, ...] = ()

    def __post_init__(self) -> None:  # the checks; __init__ (below) calls it on a failure
        if self.nodes < 1:
            raise ModelError(f"job {self.id}: nodes must be >= 1, got {self.nodes}")
        if self.runtime < 0 or self.walltime < 0:
            raise ModelError(
                f"job {self.id}: runtime and walltime must be >= 0, "
                f"got runtime={self.runtime}, walltime={self.walltime}"
            )
        if self.runtime > self.walltime:
            raise ModelError(
                f"job {self.id}: runtime {self.runtime} exceeds walltime {self.walltime}; "
                "cap it at the walltime (the job is killed there)"
            )
        if self.bb < 0 or self.ssd < 0:
            raise ModelError(f"job {self.id}: bb and ssd must be >= 0")


def _job_init():
    """``Job.__init__``: each slot set through its own descriptor, the checks of
    ``__post_init__`` inline (it runs only to raise).  The dataclass's generated constructor
    calls ``object.__setattr__`` by name for each of the 14 fields; this one builds a job in
    about 60% of the time (benchmarks/README.md, "simulator speed"): the jobs are a quarter
    of reading a 100k-job trace.  Same parameters, defaults, checks and immutability
    (tests/test_driver.py)."""
    (set_id, set_submit, set_runtime, set_walltime, set_nodes, set_bb, set_ssd, set_priority,
     set_user, set_queue, set_cores, set_earliest, set_latest, set_deps) = (
        getattr(Job, f).__set__ for f in Job.__slots__)

    def __init__(self, id: int | str, submit: float, runtime: float, walltime: float,
                 nodes: int, bb: float = 0.0, ssd: float = 0.0, priority: int = 0,
                 user: int = -1, queue: int = -1, cores: int = 0,
                 earliest: float | None = None, latest: float | None = None,
                 deps: tuple[int | str, ...] = ()) -> None:
        set_id(self, id)
        set_submit(self, submit)
        set_runtime(self, runtime)
        set_walltime(self, walltime)
        set_nodes(self, nodes)
        set_bb(self, bb)
        set_ssd(self, ssd)
        set_priority(self, priority)
        set_user(self, user)
        set_queue(self, queue)
        set_cores(self, cores)
        set_earliest(self, earliest)
        set_latest(self, latest)
        set_deps(self, deps)
        if nodes < 1 or runtime < 0 or walltime < 0 or runtime > walltime or bb < 0 or ssd < 0:
            self.__post_init__()

    __init__.__qualname__ = "Job.__init__"
    return __init__


Job.__init__ = _job_init()


@dataclass(frozen=True)
class System:
    """A machine: nodes plus optional shared burst buffer, SSD classes, topology, capacity.

    ``ssd_classes`` maps SSD size per node (GB) to the number of nodes of that class; when
    given, the counts must add up to ``nodes``.  ``topology`` is a network description used by
    allocation models; ``capacity`` is an optional time -> available-nodes profile (cloud).
    """

    nodes: int
    bb: float = 0.0
    ssd_classes: Mapping[float, int] = field(default_factory=dict)
    topology: Any = None
    capacity: Any = None
    name: str = ""

    def __post_init__(self) -> None:
        if int(self.nodes) != self.nodes or self.nodes < 1:
            raise ModelError(f"system nodes must be a positive integer, got {self.nodes!r}")
        if not 0 <= self.bb < float("inf"):  # NaN and infinity too
            raise ModelError(f"system burst buffer must be a number >= 0, got {self.bb!r}")
        if self.ssd_classes and sum(self.ssd_classes.values()) != self.nodes:
            raise ModelError(
                f"system ssd_classes {dict(self.ssd_classes)} cover "
                f"{sum(self.ssd_classes.values())} nodes, expected {self.nodes}"
            )


_MISSING = object()  # "argument not given" for the hand-written dataclass constructors below

# The driver builds a RunningJob per start and a Window and a Decision per pass: their
# constructors write the instance dict directly (frozen dataclasses otherwise set each field
# through object.__setattr__, about twice the cost); fields, defaults, eq, repr, hash,
# dataclasses.replace and immutability are the dataclass's own.


@dataclass(frozen=True)
class RunningJob:
    """A job on the machine: when it started, when it is planned to end, what it holds."""

    job: Job
    start: float
    est_end: float
    allocation: Any = None

    def __init__(self, job: Job, start: float, est_end: float, allocation: Any = None) -> None:
        d = self.__dict__
        d["job"] = job
        d["start"] = start
        d["est_end"] = est_end
        d["allocation"] = allocation


@dataclass(frozen=True)
class Window:
    """What a policy sees at one scheduling instance.

    ``jobs`` are the first W queued jobs in the base order (FCFS, SJF, WFP), starved jobs
    first.  ``resources`` is a private copy of the free-resource state: policies may call
    ``fits``/``take`` on it to plan a selection without touching the machine.  ``passed`` maps
    job id to the number of passes the job has been passed over.
    """

    time: float
    jobs: Sequence[Job]
    resources: Any
    running: Sequence[RunningJob]
    system: System
    queue_length: int
    passed: Mapping[int, int] = field(default_factory=dict)

    def __init__(self, time: float, jobs: Sequence[Job], resources: Any,
                 running: Sequence[RunningJob], system: System, queue_length: int,
                 passed: Mapping[int, int] = _MISSING) -> None:
        d = self.__dict__
        d["time"] = time
        d["jobs"] = jobs
        d["resources"] = resources
        d["running"] = running
        d["system"] = system
        d["queue_length"] = queue_length
        d["passed"] = {} if passed is _MISSING else passed

    @property
    def free_nodes(self) -> int:
        return self.resources.free_nodes

    def wait(self, job: Job) -> float:
        """Time the job has waited so far."""
        return self.time - job.submit


@dataclass(frozen=True)
class Decision:
    """A policy's answer: jobs to start now, optionally the job to reserve.

    ``start`` lists job ids to start at the window's time (they must all fit together).
    ``reserve`` names the job that gets the EASY reservation when backfilling is on; ``None``
    lets the driver choose (the first window job that did not start).  ``allocations`` maps a
    job id to an explicit node set where allocation matters (topology models).
    """

    start: tuple[int, ...] = ()
    reserve: int | None = None
    allocations: Mapping[int, Sequence[int]] = field(default_factory=dict)

    def __init__(self, start: tuple[int, ...] = (), reserve: int | None = None,
                 allocations: Mapping[int, Sequence[int]] = _MISSING) -> None:
        d = self.__dict__
        d["start"] = start
        d["reserve"] = reserve
        d["allocations"] = {} if allocations is _MISSING else allocations


def id_order(job_id) -> tuple:
    """Sort key of a job id that compares its numbers as numbers: ``"86400:44"`` before
    ``"86400:213"`` (as text they sort the other way); otherwise text by code point (a run of
    digits sorts where its first digit would), integers by value and before every text id (as
    ``hpcopt.sim.orders.MixedId`` orders them).  Jobs submitted in the same slot are in
    submission order by it when their ids count up (``"<t>:<index>"``)."""
    if isinstance(job_id, str):  # split: text, digits, text, ... (odd places are digits)
        return 1, tuple((_ZERO, int(p), "") if k % 2 else (ord(p[0]), 0, p)
                        for k, p in enumerate(_DIGITS.split(job_id)) if p)
    return 0, int(job_id)


class NumberedId(str):
    """A text job id that orders by ``id_order`` (equal and hashed as its text), so that the
    driver's base orders, which break ties by id, put ``"t:44"`` before ``"t:213"``."""

    __slots__ = ()

    def __lt__(self, other):
        return id_order(self) < id_order(other)

    def __gt__(self, other):
        return id_order(self) > id_order(other)

    def __le__(self, other):
        return id_order(self) <= id_order(other)

    def __ge__(self, other):
        return id_order(self) >= id_order(other)

    __hash__ = str.__hash__


_DIGITS = re.compile(r"([0-9]+)")
_ZERO = ord("0")
