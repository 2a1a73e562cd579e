"""The adapter's cycle: read Slurm, decide with the core, re-read, pin, release.

Each cycle reads every job and node (``hpcopt.slurm.state``) and turns the managed partition
(its kind of nodes: ``hpcopt.slurm.machine``) into a ``ClusterState`` (``hpcopt.sim.decide``,
the core every embedding calls: the driver's own pass, with its window, policy call, EASY
reservation and backfilling):

- the machine is the partition's nodes; down, drained, failing and reserved nodes are
  *unavailable*, nodes still completing a job are *completing* (free from now on), the rest
  are free or busy;
- busy are the jobs on its nodes (estimated end: start + time limit);
- planned (*starting*) are the jobs hpcopt released that Slurm has not started yet (they take
  free nodes from now, unless they wait for a dependency or a begin time);
- the queue is the partition's jobs that the submit script holds (``hpcopt.slurm.lua``: held,
  reason JobHeldUser, AdminComment ``hpcopt:held``), each sized by what Slurm will allocate:
  a pending array is one entry per task (up to its throttle), a node range reserves its
  maximum, a job whose node count Slurm could raise (tasks but no maximum) is pinned to its
  minimum before release, a hetjob is the sum of its components and is released once.

Besides nodes a cycle may schedule a burst buffer, a license (``--bb-license``) or a pool of the
``burst_buffer`` plugin (``--bb-pool``, ``scontrol show burst``; a released job holds its share
from stage-in on), and local SSD, a gres counting each node's GB (``--ssd-gres``) or node
features naming it (``--ssd-feature``, ``ssd128``; a job's constraint its request): the machine
then has SSD classes and each released job is pinned to free nodes of the classes the decision
counted for it (``ReqNodeList``; its constraint widened where those carry larger SSD), so
Slurm runs it where hpcopt accounted it.

A job held by the administrator (JobHeldAdmin), one without the mark, one whose size or
request (a license, pool, gres or node feature hpcopt does not schedule or cannot read)
cannot be read, or
one waiting for an unmet dependency stays held, with a note in the log.  A job that
comes back after a requeue (its restart count passed the one in its mark) is held again.

The jobs the decision starts are re-read (those alone) right before their release; one that
changed since the read (size, limit, state, hold, partition) goes back to the next
cycle.  Each is then pinned, made not requeueable (``Requeue=0``, unless
``Settings.allow_requeue``: no owner's requeue can start it while no adapter runs) and
marked ``hpcopt:released:N`` (one ``scontrol update``) and released (``scontrol
release``); every other job stays held.  A held job that cannot start now gets the
earliest it could (``Later``: the cycle's record and the forecasts plan it no earlier).
Nothing is kept between cycles: a restarted adapter reads the same state from Slurm, and a
released job is no longer held, so it is never released twice.  A failed read skips the
cycle; a failed release (the job was cancelled meanwhile) is logged and the cycle goes on.
"""

from __future__ import annotations

import gc
import json
import re
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import lru_cache, wraps

from ..domain import Job, NumberedId
from ..errors import HpcoptError, OptionError
from ..sim.decide import ClusterState, decide
from ..sim.limits import Who
from ..sim.priority import GivenPriority
from ..sim.protocol import policy_hooks
from .lock import PartitionLock
from .machine import BurstBuffer, CountedNodes, Resources, partition_nodes
from .priority import published_priority, site_orders
from .record import QUEUE_SHOWN, CycleRecord
from .reservations import partition_blocks
from .state import Slurm, SlurmCommandError, SlurmJob, Snapshot
from .topology import SlurmTopology, TopologyConfError, expand_hostlist
from .wake import Waker

FAR = 365 * 86400.0  # "no known end": unlimited time limits
ACTIVE = frozenset({"RUNNING", "COMPLETING", "SUSPENDED", "CONFIGURING", "STOPPED"})
#: pending reasons of a job about to start (a burst buffer's stage-in: its pool is held)
STARTING = frozenset({"None", "Priority", "Resources", "BurstBufferStageIn"})
MARK = "hpcopt:"  # the AdminComment prefix of the jobs hpcopt manages
ARRAY_LIMIT = 100_000  # tasks of one pending array read at most (Slurm's MaxArraySize bound)
RECHECK = 0.25  # seconds between cycles while nodes complete a job (woken adapters)
_TIMINGS = ("time", "cycle", "read_s", "decide_s", "release_s")  # what differs in any cycle


@dataclass(frozen=True)
class Entry:
    """One queue entry: what one release starts.  ``job`` is the core's view (its id is the
    Slurm job id as text, ``"A_T"`` for an array task, ordered by its numbers:
    ``hpcopt.domain.NumberedId``); ``key`` what ``scontrol release`` takes;
    ``records`` the records it stands for (re-read before the release); ``pins`` the
    ``scontrol update`` fields per record id set right before the release."""

    job: Job
    key: str
    records: tuple[SlurmJob, ...]
    pins: dict[int, dict[str, str]]


@dataclass
class CycleState:
    """One cycle's reading of Slurm: the core's input, the entries behind its queue, the
    partition's nodes (their kind: ``hpcopt.slurm.machine``) and the idle ones no released job
    is pinned to, and what was set aside or must be held again (log notes); ``later``: the
    held jobs that cannot start now (``Later``), by their core id."""

    cluster: ClusterState | None = None
    entries: dict = field(default_factory=dict)
    n_running: int = 0
    starting: list[str] = field(default_factory=list)
    rehold: list[SlurmJob] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    machine: CountedNodes | None = None
    free_names: list[str] = field(default_factory=list)
    later: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Settings:
    """What one adapter manages: its ``partition``; besides nodes the Slurm license that is
    the burst buffer (``bb_license``: a job's count of it its request) or the
    ``burst_buffer`` plugin's pool that is (``bb_pool``: a job's ``#BB_LUA`` capacity); the
    gres that is each node's local SSD in GB (``ssd_gres``: a job's count per node its
    request) or the prefix of the node features that are (``ssd_feature``: ``ssd128`` is
    128 GB, a job's constraint its request); the partition's network (``topology``,
    ``hpcopt.slurm.topology.read_topology``); ``dry_run``: decide and log, release nothing;
    ``lock``: the partition's lock file (``hpcopt.slurm.lock``); ``allow_requeue``: release
    jobs requeueable as submitted (by default each is released with ``Requeue=0``, so that
    its owner cannot requeue it and have Slurm start it while no adapter runs);
    ``limits``: honour the association and QOS limits (read each cycle: ``hpcopt.sim.limits``)."""

    partition: str = "batch"
    bb_license: str | None = None
    bb_pool: str | None = None
    ssd_gres: str | None = None
    ssd_feature: str | None = None
    topology: SlurmTopology | None = None
    dry_run: bool = False
    lock: object = None
    allow_requeue: bool = False
    limits: bool = False

    def __post_init__(self) -> None:
        if self.bb_license is not None and self.bb_pool is not None:
            raise OptionError("one burst buffer: give --bb-license or --bb-pool, not both")
        if self.ssd_gres is not None and self.ssd_feature is not None:
            raise OptionError("one SSD: give --ssd-gres or --ssd-feature, not both")

    @property
    def bb(self) -> bool:
        """A burst buffer is scheduled."""
        return self.bb_license is not None or self.bb_pool is not None


def names_partition(text: str, partition: str) -> bool:
    """Whether Slurm's partition field (one name, or a pending job's comma list) names it."""
    return partition in text.split(",")


@lru_cache(maxsize=4096)
def parse_mark(text: str) -> tuple[str, int] | None:
    """``("held" | "released", restart count)`` from an AdminComment hpcopt wrote, else None
    (``hpcopt:held`` is the submit script's: count 0)."""
    if not text.startswith(MARK):
        return None
    kind, _, count = text[len(MARK):].partition(":")
    if kind not in ("held", "released") or not (count.isdigit() or count == ""):
        return None
    return kind, int(count or 0)


def cycle_state(snap: Snapshot, settings: Settings | str = Settings()) -> CycleState:
    """The core's state of the managed partition in ``snap`` and the entries behind its queue
    (module docstring), under ``settings`` (or a partition's name).  With a burst buffer,
    its license of ``snap.licenses`` or its pool of ``snap.pools`` is the machine's (each
    job's count or capacity its request: ``BurstBuffer``); with SSD each node's gres
    (``snap.node_gres``) or features (``snap.node_features``) make SSD classes, and each
    job's gres or constraint its request (``Resources.ask``); with a topology nodes are told
    apart.  The kind of nodes (``hpcopt.slurm.machine``) puts them in the core's terms."""
    settings = Settings(settings) if isinstance(settings, str) else settings
    partition = settings.partition
    bb = BurstBuffer.read(snap.licenses, settings.bb_license, snap.pools, settings.bb_pool)
    if settings.ssd_gres is not None and settings.ssd_feature is not None:
        raise HpcoptError("one SSD: a gres (--ssd-gres) or node features (--ssd-feature)")
    res = Resources(bb, settings.ssd_gres, settings.ssd_feature)
    bb_total, used_bb = (bb.total, bb.used) if bb is not None else (0.0, 0.0)
    nodes = [n for n in snap.nodes if partition in n.partitions]
    if not nodes:
        raise HpcoptError(f"partition {partition!r} has no nodes (sinfo lists "
                          f"{sorted({p for n in snap.nodes for p in n.partitions})})")
    machine = partition_nodes(partition, [n.name for n in nodes], res, settings.topology,
                              snap.node_gres if settings.ssd_gres else snap.node_features)
    usable = {n.name for n in nodes if n.usable}
    idle = {n.name for n in nodes if n.idle}
    placed: dict = {}
    notes = ["unavailable nodes: " + ",".join(
        f"{n.name} ({n.state}{''.join('+' + f.lower() for f in sorted(n.flags))})"
        for n in nodes if not n.usable)] if len(usable) < len(nodes) else []
    ours = [j for j in snap.jobs if names_partition(j.partition, partition)]
    held = [j for j in ours if j.held]
    asks = _asks(ours, res)
    now = max([snap.time, *(j.submit for j in held)])
    not_now = {j.id for j in held if _cannot_start_now(j, now, idle, notes)}
    later = [j for j in held if j.id in not_now or _waits_for_dependency(j)]
    held = [j for j in held if j.id not in not_now]

    def bb_of(j: SlurmJob) -> float:
        return (asks.get(j.id) or res.ask(j))[0] if bb is not None else 0.0

    running, covered, n_running = _busy(snap.jobs, partition, usable - idle, now, bb_of,
                                        machine, placed)
    state = CycleState(n_running=n_running, notes=notes, machine=machine)
    # what the listed jobs hold of the burst buffer (running, and released ones a pool holds
    # already); the rest of its use is held elsewhere, or reserved
    holding = {j.id for j in ours if j.state == "PENDING" and not j.held
               and bb is not None and j.id in bb.hold and j.reason in STARTING}
    listed_bb = sum(job.bb for job, _ in running) + sum(
        asks[j.id][0] for j in ours if j.id in holding)
    unavailable_bb = max(0.0, used_bb - listed_bb)
    free_bb = max(0.0, bb_total - max(used_bb, listed_bb))
    starting, pinned_names = _released(state, ours, holding, idle, free_bb, now, bb_of,
                                       machine, placed)
    for entry in _entries(held, ours, partition, state.notes, asks):
        if machine.places and len(entry.records) > 1:
            state.notes.append(f"hetjob {entry.key}: hpcopt does not place hetjobs on a "
                               "topology or on SSD classes: left held")
            continue
        state.entries[entry.job.id] = entry
    state.later = _later(later, ours, partition, asks, now, nodes, snap.jobs)
    queue = tuple(e.job for e in state.entries.values())
    state.free_names = [n.name for n in nodes if n.name in idle - pinned_names]
    completing, down = usable - idle - covered, {n.name for n in nodes} - usable
    state.cluster = ClusterState(now, machine.system(bb_total, partition), queue,
                                 tuple(running), tuple(starting),
                                 completing=machine.count(completing),
                                 unavailable=machine.count(down),
                                 unavailable_bb=unavailable_bb, placed=placed)
    return state


def _busy(jobs, partition: str, busy: set[str], now: float, bb_of, machine,
          placed: dict) -> tuple[list, set[str], int]:
    """The active jobs on the partition's ``busy`` nodes (usable, not idle) with their
    estimated ends, each node counted for the first job that names it (reads a moment apart
    may name one twice); the nodes they cover; the partition's active jobs.  Where the
    machine places jobs, ``placed`` takes the nodes each holds."""
    running: list[tuple[Job, float]] = []
    covered: set[str] = set()
    n_running = 0
    for j in jobs:
        if j.state not in ACTIVE:
            continue
        n_running += names_partition(j.partition, partition)
        take = (set(j.node_names) & busy) - covered
        if take:
            covered |= take
            end = j.start + j.limit if j.limit is not None and j.start > 0 else now + FAR
            job = Job(NumberedId(j.id), min(j.submit, now), 0.0, 0.0, len(take), bb=bb_of(j))
            running.append((job, end))
            if machine.places:
                placed[job.id] = machine.held(sorted(take))
    return running, covered, n_running


def _released(state: CycleState, ours: list[SlurmJob], holding: set, idle: set[str],
              free_bb: float, now: float, bb_of, machine, placed: dict):
    """The jobs hpcopt released that Slurm has not started (pending, not held, in submission
    order): each takes free nodes (of ``idle``) and burst buffer from now, on its pinned
    nodes where the machine places jobs (``placed``); one that waits for a dependency or a
    begin time takes none, one back from a requeue goes to ``state.rehold``.  Returns them
    as the core's jobs and the node names they are pinned to."""
    free = len(idle)
    starting: list[Job] = []
    pinned_names: set[str] = set()
    for j in sorted((j for j in ours if j.state == "PENDING" and not j.held),
                    key=lambda j: (j.submit, j.id)):
        mark = parse_mark(j.mark)
        if mark is not None and j.restarts > mark[1]:
            state.rehold.append(j)  # requeued: Slurm would start it again without hpcopt
            continue
        if mark is not None and mark[0] == "released" and _delayed(j, now):
            state.rehold.append(j)  # released, then delayed: Slurm would start it later alone
            continue
        state.starting.append(j.key)
        if mark is None or mark[0] != "released":
            state.notes.append(f"job {j.key} pending and not held by hpcopt (released by "
                               "someone else, or never held): Slurm starts it")
        if j.reason not in STARTING:  # waits for a dependency, a begin time, ...: no nodes
            state.notes.append(f"job {j.key} released, waiting: {j.reason}")
            continue
        take = min(_upper(j) or j.nodes, free)
        asked = bb_of(j)
        held_bb = asked if j.id in holding else min(asked, free_bb)
        if take:  # the reads may disagree for a moment: never more than is free
            free = free - take
            free_bb -= 0.0 if j.id in holding else held_bb
            starting.append(Job(NumberedId(j.id), min(j.submit, now), 0.0,
                                j.limit if j.limit is not None else FAR, take, bb=held_bb))
            pinned = _pinned(j, idle) if machine.places else None
            if pinned is not None and len(pinned) == take:
                placed[starting[-1].id] = machine.held(pinned)
                pinned_names.update(pinned)
    return starting, pinned_names


def _cannot_start_now(j: SlurmJob, now: float, idle: set[str], notes: list[str]) -> bool:
    """Whether held ``j`` (hpcopt's to release) cannot start now: its begin time is ahead,
    the nodes it asks are not all idle, or too few idle nodes are left once those it
    excludes are taken out.  Such a job stays held (a note says why) and is not counted
    on nodes it cannot use: released now, Slurm would keep it for later, a start hpcopt
    would not decide."""
    if _left_held(j) is not None:
        return False  # left held anyway, with its own note
    why = None
    if j.begin > now + 1:
        why = (f"waits for its begin time "
               f"({time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(j.begin))})")
    elif j.required_nodes and not set(_hostnames(j.required_nodes) or ["?"]) <= idle:
        why = f"asks nodes {j.required_nodes}, not all free"
    elif j.excluded_nodes and \
            len(idle - set(_hostnames(j.excluded_nodes) or idle)) < (_upper(j) or j.nodes):
        why = f"excludes nodes {j.excluded_nodes}: too few of the others free"
    if why is not None:
        notes.append(f"job {j.key} {why}: left held")
    return why is not None


@dataclass(frozen=True)
class Later:
    """A held job that cannot start now, and the earliest it could (what a planned start of
    it respects): ``entry`` as it would be queued; ``not_before`` its begin time, the
    estimated end of the jobs on the nodes it asks, or the time enough of the nodes it does
    not exclude are free (epoch seconds; ``None``: unknown, a node it needs is down);
    ``after`` the jobs it depends on (it starts no earlier than their ends; with
    ``any_of``, Slurm's ``?`` between them, than the first of their ends)."""

    entry: Entry
    not_before: float | None
    after: tuple[int, ...] = ()
    any_of: bool = False


def _waits_for_dependency(j: SlurmJob) -> bool:
    """Whether held ``j`` is hpcopt's to release but for its unmet dependency."""
    return _left_held(j) is not None and _left_held(replace(j, dependency="")) is None


#: the job ids in Slurm's dependency text (``afterok:5:7(unfulfilled),afterany:9_2(...)``)
_DEPENDENCY_ID = re.compile(r"(?:^|[:,?])(\d+)(?:_\d+|_\*)?(?:\+\d+)?(?=\(|[:,?]|$)")


def _later(jobs: list[SlurmJob], ours: list[SlurmJob], partition: str, asks: dict,
           now: float, nodes, all_jobs) -> dict:
    """``Later`` of each held job that cannot start now (``_cannot_start_now``) or waits
    for a dependency, by its core id; a shape hpcopt would leave held anyway is left out."""
    if not jobs:
        return {}
    ends = _node_ends(all_jobs, now)
    down = {n.name for n in nodes if not n.usable}
    names = {n.name for n in nodes}
    out: dict = {}
    for j in jobs:
        after = tuple(int(d) for d in _DEPENDENCY_ID.findall(j.dependency)) \
            if _waits_for_dependency(j) else ()
        bound = None if "failed" in j.dependency else \
            _not_before(j, now, ends, down, names)
        free = replace(j, dependency="")
        for entry in _entries([free], ours, partition, [], asks):
            out[entry.job.id] = Later(entry, bound, after, "?" in j.dependency)
    return out


def _node_ends(jobs, now: float) -> dict[str, float]:
    """Each busy node's estimated free time: the latest estimated end (start + limit) of the
    active jobs on it."""
    ends: dict[str, float] = {}
    for j in jobs:
        if j.state in ACTIVE:
            end = j.start + j.limit if j.limit is not None and j.start > 0 else now + FAR
            for name in j.node_names:
                ends[name] = max(ends.get(name, now), end)
    return ends


def _not_before(j: SlurmJob, now: float, ends: dict[str, float], down: set[str],
                names: set[str]) -> float | None:
    """The earliest ``j`` could start (``Later.not_before``): at least ``now``, its begin
    time, the free time (``ends``) of each node it asks, and the time the nodes it does not
    exclude hold enough free ones; None when a node it needs is ``down`` or unreadable."""
    bound = max(now, j.begin)
    if j.required_nodes:
        asked = _hostnames(j.required_nodes)
        if asked is None or set(asked) & down or not set(asked) <= names:
            return None
        bound = max([bound, *(ends.get(n, now) for n in asked)])
    if j.excluded_nodes:
        gone = _hostnames(j.excluded_nodes)
        if gone is None:
            return None
        left = sorted(ends.get(n, now) for n in names - set(gone) - down)
        need = _upper(j) or j.nodes
        if len(left) < need:
            return None
        bound = max(bound, left[need - 1])
    return bound


def _delayed(j: SlurmJob, now: float) -> bool:
    """Whether a released job waits now for a begin time ahead or a dependency (its user
    delayed it after the release): held again, so that it starts when hpcopt decides."""
    return j.reason in ("BeginTime", "Dependency") or j.begin > now + 1 or \
        "unfulfilled" in j.dependency


def _hostnames(text: str) -> list[str] | None:
    """Slurm's host list (``n[1-3],n8``) as names; None when unreadable."""
    try:
        return expand_hostlist(text)
    except TopologyConfError:
        return None


def _asks(jobs: list[SlurmJob], res: Resources) -> dict:
    """``res.ask`` of each job by id, read once per distinct request (most jobs of a queue
    ask alike)."""
    seen: dict = {}
    out = {}
    for j in jobs:
        key = (j.licenses, j.burst_buffer, j.gres, j.features)
        got = seen.get(key)
        if got is None:
            got = seen[key] = res.ask(j)
        out[j.id] = got
    return out


def _pinned(j: SlurmJob, idle: set[str]) -> list[str] | None:
    """The nodes a released job is pinned to (its required nodes, all idle), or None."""
    if not j.required_nodes:
        return None
    try:
        names = expand_hostlist(j.required_nodes)
    except TopologyConfError:
        return None
    return names if set(names) <= idle else None


def _upper(j: SlurmJob) -> int | None:
    """The most nodes Slurm may give ``j``: its maximum, else its minimum when it has no more
    tasks than that; None when Slurm could spread its tasks over more nodes."""
    if j.max_nodes:
        return max(j.max_nodes, j.nodes)
    return j.nodes if j.tasks <= j.nodes else None


def _sized(j: SlurmJob, partition: str) -> tuple[int, dict[str, str]]:
    """The nodes ``j`` is reserved (its upper bound, or its minimum pinned) and the fields
    pinned before its release (node count; the managed partition for a multi-partition job)."""
    pins: dict[str, str] = {}
    upper = _upper(j)
    if upper is None:
        upper = j.nodes
        pins["NumNodes"] = f"{j.nodes}-{j.nodes}"
    if j.partition != partition:
        pins["Partition"] = partition
    return upper, pins


def _walltime(j: SlurmJob) -> float:
    return j.limit if j.limit is not None else FAR


def _entries(held: list[SlurmJob], ours: list[SlurmJob], partition: str, notes: list[str],
             asks: dict):
    """The queue entries of the held jobs (module docstring), notes for the ones left held;
    ``asks``: each job's ``Resources.ask`` by id."""
    components: dict[int, list[SlurmJob]] = defaultdict(list)
    for j in ours:
        if j.het_id:
            components[j.het_id].append(j)
    active_tasks: dict[int, int] = defaultdict(int)
    for j in ours:
        if j.array_task is not None and (j.state in ACTIVE or not j.held) \
                and j.state in ACTIVE | {"PENDING"}:
            active_tasks[j.array_id] += 1
    for j in sorted(held, key=lambda j: (j.submit, j.id)):
        if j.het_id and j.het_offset:
            continue  # a hetjob is read once, at its leader
        why = _left_held(j) or asks[j.id][2]
        if why:
            notes.append(f"job {j.key} {why}: left held")
            continue
        if j.het_id:
            parts = sorted(components[j.het_id], key=lambda c: c.het_offset)
            bad = next((c for c in parts if not c.held or _left_held(c)
                        or asks[c.id][2] or c.partition != j.partition), None)
            if bad is not None:
                notes.append(f"hetjob {j.id}: component {bad.id} is not held by hpcopt in "
                             "the same partition, or asks what hpcopt does not schedule: "
                             "left held")
                continue
            sizes = [_sized(c, partition) for c in parts]
            wall = max(map(_walltime, parts))
            yield Entry(Job(NumberedId(j.id), min(c.submit for c in parts), wall, wall,
                            sum(n for n, _ in sizes),
                            bb=sum(asks[c.id][0] for c in parts),
                            ssd=max(asks[c.id][1] for c in parts)),
                        str(j.id), tuple(parts),
                        {c.id: pins for c, (_, pins) in zip(parts, sizes)})
            continue
        nodes, pins = _sized(j, partition)
        wall, (bb, ssd, _) = _walltime(j), asks[j.id]
        if j.array_tasks and j.array_task is None:  # a pending array: one entry per task
            tasks = array_task_ids(j.array_tasks)
            if tasks is None:
                notes.append(f"job {j.id}: array tasks {j.array_tasks!r} unreadable: left held")
                continue
            if j.array_max:
                tasks = tasks[:max(0, j.array_max - active_tasks[j.id])]
            for t in tasks:
                key = f"{j.id}_{t}"
                yield Entry(Job(NumberedId(key), j.submit, wall, wall, nodes, bb=bb, ssd=ssd),
                            key, (j,), {j.id: pins})
            continue
        if j.array_task is not None and j.array_max and active_tasks[j.array_id] >= j.array_max:
            continue  # a split-out task held again: waits for its array's throttle
        yield Entry(Job(NumberedId(j.key), j.submit, wall, wall, nodes, bb=bb, ssd=ssd), j.key,
                    (j,), {j.id: pins})


def _left_held(j: SlurmJob) -> str | None:
    """Why a held job is not hpcopt's to release now (None: it is)."""
    if j.reason == "JobHeldAdmin":
        return "is held by the administrator"
    mark = parse_mark(j.mark)
    if mark is None:
        return f"is not marked by the submit script (AdminComment {j.mark!r})"
    if "unfulfilled" in j.dependency or "failed" in j.dependency:
        return f"waits for a dependency ({j.dependency})"
    return None


_RANGE = re.compile(r"^(\d+)(?:-(\d+)(?::(\d+))?)?$")


def array_task_ids(text: str) -> list[int] | None:
    """The task ids of Slurm's array text (``1-9:2,12``, a ``%N`` throttle after it, in
    brackets or not); None when unreadable or over ``ARRAY_LIMIT`` tasks."""
    body = text.split("%", 1)[0].strip().strip("[]")
    ids: list[int] = []
    for part in body.split(","):
        m = _RANGE.match(part.strip())
        if m is None:
            return None
        a = int(m[1])
        b = int(m[2]) if m[2] is not None else a
        step = int(m[3]) if m[3] is not None else 1
        if b < a or step < 1 or len(ids) + (b - a) // step >= ARRAY_LIMIT:
            return None
        ids.extend(range(a, b + 1, step))
    return ids


def _fingerprint(records: tuple[SlurmJob, ...], key: str, jobs: dict[int, SlurmJob]):
    """What must not change between the read and a release: each record's state, hold,
    reason, mark, partition, size and limit, and for an array task that it is still pending in
    its array."""
    out = []
    for r in records:
        now = jobs.get(r.id)
        if now is None:
            return None
        task_pending = True
        if r.array_tasks and r.array_task is None:
            tasks = array_task_ids(now.array_tasks) or []
            task_pending = int(key.rsplit("_", 1)[1]) in tasks
        out.append((now.state, now.held, now.reason, now.mark, now.partition, now.nodes,
                    now.max_nodes, now.tasks, now.limit, now.dependency, now.array_max,
                    now.licenses, now.burst_buffer, now.gres, now.features, task_pending))
    return out


def _collector_paused(method):
    """``method`` with Python's cyclic garbage collector paused while it runs (it runs at
    the next allocation after): a cycle's jobs, records and state make no reference cycles,
    and the collector's passes over them while they live made a cycle superlinear in the
    queue (at 50,000 jobs the read and the state 3.2 s against 1.3 s paused:
    ``benchmarks/slurm_cycle_scale.py``)."""
    @wraps(method)
    def paused(*args, **kwargs):
        enabled = gc.isenabled()
        gc.disable()
        try:
            return method(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()

    return paused


class Adapter:
    """``hpcopt slurm run``: one ``cycle()`` per interval (module docstring).

    ``policy`` is a policy object; ``settings`` what the adapter manages (``Settings``: the
    partition, a burst buffer, SSD or a topology, dry run, lock); ``options`` the driver's
    (``order``, ``backfill``, ``window``, ``starvation_bound``); ``slurm`` Slurm's tools
    (``hpcopt.slurm.state.Slurm``); ``log`` a text file taking one JSON line per cycle
    (``CycleRecord``); ``say`` prints one human line per cycle that released something (or
    would, with ``dry_run``).  With SSD or a topology each job started is pinned to the
    nodes it was counted on (``ReqNodeList``) before its release.  ``site_rules``: at the
    first cycle, ask Slurm whether to order by the site's priority (``--order priority``,
    where no order is given, the cluster orders by a weighted multifactor priority and the
    policy's own order is first come first served) and to honour its limits (where Slurm
    enforces them).
    """

    DEFAULT = Settings()  # the settings of an adapter given none

    def __init__(self, policy, settings: Settings = DEFAULT, *, slurm: Slurm | None = None,
                 log=None, say: Callable[[str], None] | None = None, site_rules: bool = False,
                 **options) -> None:
        name = getattr(policy, "name", type(policy).__name__)
        machine = getattr(policy, "machine", None)
        if machine == "capacity":
            raise OptionError(f"policy {name} schedules cloud slots against a capacity "
                              "profile, not a Slurm partition")
        if machine == "topology" and settings.topology is None:
            raise OptionError(f"policy {name} places jobs on a network: give --topology "
                              "(Slurm's topology.conf)")
        self.policy = policy
        self.settings = settings
        self.log = log
        self.say = say if say is not None else (lambda s: print(s, flush=True))
        self.options = {k: v for k, v in options.items() if v is not None}
        self._errors: list[str] = []
        self._passed: dict[str, int] = {}  # queued job -> passes it was passed over
        self.slurm = slurm if slurm is not None else Slurm()
        self.slurm.on_error = self._errors.append
        self.cycles = 0
        self.quiet_for = 0.0  # run_adapters: the interval, when wake-ups may come
        self._excluded: dict[int, str] = {}  # job id: the nodes it excludes (_reread)
        self._last_said: dict | None = None
        self._site_rules = site_rules  # still to be read from Slurm
        self._weights = None  # Slurm's priority weights (scontrol show config), read once
        self._last_written = 0.0

    @property
    def partition(self) -> str:
        return self.settings.partition

    @property
    def dry_run(self) -> bool:
        return self.settings.dry_run

    @property
    def lock(self):
        return self.settings.lock

    def read(self, snap: Snapshot | None = None) -> Snapshot:
        """Slurm as this adapter's cycle needs it: ``snap`` (or a read of its own), with the
        burst buffer's licenses or pools and each node's SSD where they are scheduled.
        Licenses first: a job that starts between the reads is then counted once (the jobs'
        read lists it), and one that ends leaves its use counted (the safe side)."""
        st, slurm = self.settings, self.slurm
        licenses = slurm.licenses() if st.bb_license else None
        pools = slurm.burst_pools() if st.bb_pool else None
        snap = slurm.snapshot() if snap is None else snap
        return replace(snap, licenses=licenses, pools=pools,
                       node_gres=slurm.node_gres() if st.ssd_gres else None,
                       node_features=slurm.node_features() if st.ssd_feature else None)

    @_collector_paused
    def read_state(self, snap: Snapshot | None = None) -> tuple[Snapshot, CycleState]:
        """Read Slurm (``read``) into this partition's ``CycleState``: what a cycle decides
        on, and forecasts start from (``hpcopt.slurm.forecast``).  Raises
        ``SlurmCommandError`` when a read fails."""
        snap = self._with_exclusions(self.read(snap))
        return snap, cycle_state(snap, self.settings)

    @_collector_paused
    def cycle(self, snap: Snapshot | None = None) -> CycleRecord:
        """One cycle: read, state, decide, release; returns its record (also written to
        ``log``).  ``snap``: Slurm as read for several partitions at once (``run_adapters``)
        instead of a read of its own."""
        self.cycles += 1
        self._errors.clear()
        self.slurm.on_error = self._errors.append  # (adapters of several partitions share it)
        rec = CycleRecord(round(time.time(), 3), self.cycles, self.partition, self.dry_run)
        try:
            snap, state = self.read_state(snap)
        except SlurmCommandError as exc:
            return self._failed(rec, str(exc), f"cannot read Slurm: {exc} (cycle skipped)")
        cluster = state.cluster
        if self._passed:  # the starvation bound's counts, kept from the last cycle
            cluster = replace(cluster, passed={job.id: self._passed[str(job.id)]
                                               for job in cluster.queue
                                               if str(job.id) in self._passed})
        _read_figures(rec, snap, state, cluster, self.settings.bb)
        try:
            if self._site_rules:
                self._adopt_site_rules()
            options = self._with_site_priority(state)
            cluster = self._with_site_limits(snap, state, cluster)
            cluster = self._with_reservations(snap, state, cluster)
        except SlurmCommandError as exc:
            return self._failed(rec, str(exc), f"cannot read the site's rules: {exc} (cycle "
                                               "skipped)")
        c0 = time.perf_counter()
        try:
            decision = decide(cluster, self.policy, **options)
        except HpcoptError as exc:  # the policy failed on this state: nothing is released
            return self._failed(rec, f"policy: {exc}", f"the policy failed: {exc}")
        rec.decide_s = round(time.perf_counter() - c0, 4)
        self._passed = {str(jid): n for jid, n in decision.passed.items() if n}
        c0 = time.perf_counter()
        self._release_decided(rec, state, decision)
        rec.release_s = round(time.perf_counter() - c0, 4)
        rec.ok, rec.errors = True, list(self._errors)
        self._write_cycle(rec)
        self._say_cycle(rec, cluster.time)
        return rec

    def _adopt_site_rules(self) -> None:
        """The site's order and limits, as Slurm is configured (``site_rules``)."""
        self._weights = self.slurm.priority_config()
        if "order" not in self.options and site_orders(self._weights) and \
                policy_hooks(self.policy).order in (None, "fcfs"):
            self.options["order"] = "priority"
        if self.slurm.enforces_limits():
            self.settings = replace(self.settings, limits=True)
        self._site_rules = False

    def _with_site_priority(self, state: CycleState) -> dict:
        """The driver's options, with ``order="priority"`` made the priority Slurm would
        give each held job now (``hpcopt.slurm.priority``: the weights read at the first
        cycle, the factors each cycle)."""
        if self.options.get("order") != "priority":
            return self.options
        if self._weights is None:  # read once (a reconfigure takes a restart)
            self._weights = self.slurm.priority_config()
        data = self.slurm.priority_data(self._weights)
        now = state.cluster.time
        values = {jid: published_priority(entry.records[0], data, now)
                  for jid, entry in state.entries.items()}
        return {**self.options, "order": GivenPriority(values)}

    def _with_site_limits(self, snap: Snapshot, state: CycleState,
                          cluster: ClusterState) -> ClusterState:
        """``cluster`` with the association and QOS limits (``Settings.limits``: read each
        cycle; ``hpcopt.sim.limits``), each job's account, user and QOS as Slurm lists
        them.  Only the jobs of the managed partition count."""
        limits = self.slurm.site_limits() if self.settings.limits else None
        if not limits:
            return cluster
        who = {NumberedId(j.id): Who(j.account, j.user_name, j.qos) for j in snap.jobs}
        for jid, entry in state.entries.items():
            j = entry.records[0]
            who[jid] = Who(j.account, j.user_name, j.qos)
        return replace(cluster, limits=replace(limits, who=who))

    def _with_reservations(self, snap: Snapshot, state: CycleState,
                           cluster: ClusterState) -> ClusterState:
        """``cluster`` with Slurm's reservations on the partition as blocks for the held
        jobs (read each cycle: ``hpcopt.slurm.reservations``); a note names each.  On a
        machine that places jobs or has a burst buffer they are not planned (a note says
        so)."""
        blocks = partition_blocks(self.slurm.reservations(), snap.nodes, self.partition,
                                  cluster.time)
        if not blocks:
            return cluster
        now = cluster.time
        if state.machine.places or self.settings.bb:
            state.notes.append("reservations are planned on interchangeable nodes only: "
                               "held jobs may wait on " + ",".join(b.name for b in blocks))
            return cluster
        state.notes += [f"reservation {b.name}: {b.nodes} nodes from {b.start - now:+.0f} s "
                        f"to {b.end - now:+.0f} s kept from the held jobs" for b in blocks]
        return replace(cluster, reservations=blocks)

    def _release_decided(self, rec: CycleRecord, state: CycleState, decision) -> None:
        """Re-read the jobs ``decision`` starts, pin and release those unchanged, hold again
        the requeued ones; the outcome goes into ``rec``."""
        notes = state.notes + [f"job {j.id} {why}: left held" for j, why in decision.set_aside]
        notes += [f"job {j.id} blocked by a limit ({why}): left held"
                  for j, why in decision.blocked]
        picked = [(state.entries[job.id], mode) for job, mode in decision.started]
        where = _where(state, decision)
        reheld, changed = self._rehold(state.rehold, notes), []
        if picked and not self.dry_run:
            picked, changed = self._reread(picked, notes, where)
        if picked:
            self._write_event({"time": round(time.time(), 3), "cycle": self.cycles,
                               "event": "releasing", "ids": [_id(e.key) for e, _ in picked]})
        released, failed = [], []
        for entry, mode in picked:
            nodes = where.get(entry.key)
            features = state.machine.constraint(entry.records[0], nodes) if nodes else None
            if features is not None:
                notes.append(f"job {entry.key} placed on larger SSD than its constraint "
                             f"{entry.records[0].features} names: it becomes {features}")
            if not self.dry_run:
                try:
                    self._release(entry, nodes, features)
                except SlurmCommandError as exc:
                    failed.append({"id": _id(entry.key), "error": str(exc)})
                    continue
            released.append((entry, mode))
        reserved = decision.reserved
        rec.released = [_id(e.key) for e, _ in released]
        rec.released_nodes = sum(e.job.nodes for e, _ in released)
        if self.settings.bb:
            rec.released_bb = sum(e.job.bb for e, _ in released)
        rec.backfilled = [_id(e.key) for e, mode in released if mode == "backfilled"]
        rec.reserved = None if reserved is None else {
            "id": _id(state.entries[reserved.id].key), "shadow": round(decision.shadow, 3)}
        rec.release_failed, rec.changed, rec.reheld, rec.notes = failed, changed, reheld, notes
        if state.machine.places:
            rec.placed = {e.key: ",".join(where[e.key]) for e, _ in released if e.key in where}

    def _say_cycle(self, rec: CycleRecord, now: float) -> None:
        """The human line of a cycle that released something, or found jobs changed or
        requeued."""
        if rec.released or rec.release_failed:
            verb = "would release" if self.dry_run else "released"
            text = ", ".join(str(r) + (" (backfilled)" if r in rec.backfilled else "")
                             for r in rec.released) or "nothing"
            if rec.reserved is not None:
                text += (f"; reserved {rec.reserved['id']} at "
                         f"+{max(0.0, rec.reserved['shadow'] - now):.0f} s")
            if rec.release_failed:
                text += "; not released: " + ", ".join(str(f["id"]) for f in rec.release_failed)
            self.say(f"cycle {self.cycles}: {verb} {text}")
        elif rec.changed or rec.reheld:
            self.say(f"cycle {self.cycles}: released nothing" +
                     (f"; changed since the read: {', '.join(map(str, rec.changed))}"
                      if rec.changed else "") +
                     (f"; held again after a requeue: {', '.join(map(str, rec.reheld))}"
                      if rec.reheld else ""))

    def _failed(self, rec: CycleRecord, error: str, said: str) -> CycleRecord:
        rec.ok, rec.error, rec.errors = False, error, list(self._errors)
        self._write(rec)
        self.say(f"cycle {self.cycles}: {said}")
        return rec

    def _with_exclusions(self, snap: Snapshot) -> Snapshot:
        """``snap`` with the excluded nodes known of its jobs (the cycle's read cannot carry
        them: ``_reread`` learns them of each picked job); jobs gone are forgotten."""
        if not self._excluded:
            return snap
        here = {j.id for j in snap.jobs}
        self._excluded = {k: v for k, v in self._excluded.items() if k in here}
        return replace(snap, jobs=tuple(
            replace(j, excluded_nodes=self._excluded[j.id])
            if j.id in self._excluded and not j.excluded_nodes else j for j in snap.jobs))

    def _reread(self, picked: list, notes: list[str], where: dict) -> tuple[list, list]:
        """The picked entries unchanged since the read (read again now; the nodes too where
        jobs are placed: every chosen node still idle), and the keys of those that changed
        (they go back to the next cycle).  A picked job found to exclude nodes the read did
        not know of goes back too: the next cycle decides it with its exclusion."""
        ids = [r.id for e, _ in picked for r in e.records]
        try:
            jobs = self.slurm.jobs(ids)
            excluded = self.slurm.excluded_nodes(ids)
            idle = {n.name for n in self.slurm.nodes() if n.idle} if where else set()
        except SlurmCommandError as exc:
            notes.append(f"cannot read the picked jobs again ({exc}): none released")
            return [], [_id(e.key) for e, _ in picked]
        now = {j.id: j for j in jobs}
        keep, changed = [], []
        for entry, mode in picked:
            before = _fingerprint(entry.records, entry.key, {r.id: r for r in entry.records})
            new = {r.id: excluded[r.id] for r in entry.records
                   if excluded.get(r.id, r.excluded_nodes) != r.excluded_nodes}
            self._excluded.update(new)
            if _fingerprint(entry.records, entry.key, now) != before:
                why = "changed since the read"
            elif new:
                why = f"excludes nodes {','.join(sorted(set(new.values())))}"
            elif not set(where.get(entry.key, ())) <= idle:
                why = "was placed on nodes no longer idle"
            elif entry.key in where and len(where[entry.key]) != entry.job.nodes:
                why = "found too few free nodes of its SSD classes"
            else:
                keep.append((entry, mode))
                continue
            changed.append(_id(entry.key))
            notes.append(f"job {entry.key} {why}: back to the next cycle")
        return keep, changed

    def _release(self, entry: Entry, nodes: list[str] | None = None,
                 features: str | None = None) -> None:
        """Pin and mark each record of ``entry`` (one ``scontrol update`` each; placed on
        ``nodes``: exactly those, and with ``features`` its constraint), then release it
        once."""
        for r in entry.records:
            key = entry.key if r.array_tasks and r.array_task is None else r.key
            pins = dict(entry.pins.get(r.id, {}))
            if not self.settings.allow_requeue:
                pins["Requeue"] = "0"
            if nodes:
                pins.update(ReqNodeList=",".join(nodes), NumNodes=f"{len(nodes)}-{len(nodes)}")
                if features is not None:
                    pins["Features"] = features
            self.slurm.update(key, AdminComment=f"{MARK}released:{r.restarts}", **pins)
        self.slurm.release(entry.key)

    def _rehold(self, jobs: list[SlurmJob], notes: list[str]) -> list:
        """Hold again the jobs that came back from a requeue, and mark them held."""
        done = []
        for j in jobs:
            if self.dry_run:
                notes.append(f"job {j.key} requeued or delayed: would be held again")
                continue
            try:
                self.slurm.hold(j.key)
                self.slurm.update(j.key, AdminComment=f"{MARK}held:{j.restarts}")
            except SlurmCommandError as exc:
                notes.append(f"job {j.key} requeued or delayed, not held again: {exc}")
                continue
            done.append(_id(j.key))
            notes.append(f"job {j.key} requeued or delayed after its release: held again")
        return done

    def run(self, interval: float = 5.0, *, once: bool = False,
            release_on_exit: bool = False, wake_port: int | None = None) -> int:
        """Cycle every ``interval`` seconds until interrupted (or once): ``run_adapters`` with
        this adapter alone."""
        return run_adapters([self], interval, once=once, release_on_exit=release_on_exit,
                            wake_port=wake_port)

    def release_all(self) -> list[str]:
        """Release every job of the partition that hpcopt holds (``--release-on-exit``)."""
        try:
            jobs = self.slurm.jobs()
        except SlurmCommandError as exc:
            self.say(f"cannot read Slurm to release the held jobs: {exc}")
            return []
        done = []
        for j in jobs:
            if names_partition(j.partition, self.partition) and j.held and \
                    _left_held(j) is None and not (j.het_id and j.het_offset):
                try:
                    self.slurm.release(j.key)
                    done.append(j.key)
                except SlurmCommandError as exc:
                    self.say(f"job {j.key} not released: {exc}")
        self._write_event({"time": round(time.time(), 3), "event": "exit",
                           "released_on_exit": done})
        self.say(f"released {len(done)} held job(s) to Slurm's scheduler")
        return done

    def _write_cycle(self, rec: CycleRecord) -> None:
        """Write a cycle's record, unless it says what the last one written said (timings
        apart) and that one is less than ``quiet_for`` seconds old: cycles woken in a burst
        (or a flood of wake-ups) that changed nothing add one line per interval at most."""
        line = rec.as_json()
        same = {k: v for k, v in line.items() if k not in _TIMINGS}
        if self.quiet_for and same == self._last_said and \
                line["time"] - self._last_written < self.quiet_for:
            return
        self._last_said, self._last_written = same, line["time"]
        self._write_event(line)

    def _write(self, rec: CycleRecord) -> None:
        self._write_event(rec.as_json())

    def _write_event(self, rec: dict) -> None:
        if self.log is not None:
            self.log.write(json.dumps(rec) + "\n")
            self.log.flush()


def _where(state: CycleState, decision) -> dict:
    """The nodes each started entry is pinned to (by its release key), where the machine's
    kind places jobs: what the decision says of each, free nodes given once, in start
    order."""
    free, out = list(state.free_names), {}
    for job, _ in decision.started:
        if job.id in decision.placements:
            names = state.machine.where(decision.placements[job.id], free)
            free = [n for n in free if n not in names]
            out[state.entries[job.id].key] = names
    return out


def _read_figures(rec: CycleRecord, snap: Snapshot, state: CycleState, cluster: ClusterState,
                  bb: bool) -> None:
    """What a cycle's read saw, into ``rec``."""
    completing = cluster.completing
    rec.read_s, rec.slurm, rec.pending = round(snap.read_s, 4), snap.version, len(cluster.queue)
    rec.completing = completing if isinstance(completing, int) else \
        sum(completing.values()) if isinstance(completing, dict) else len(completing)
    rec.queue = [_id(e.key) for e in list(state.entries.values())[:QUEUE_SHOWN]]
    rec.running, rec.waiting_start = state.n_running, state.starting
    rec.later = [_later_figure(w) for w in list(state.later.values())[:QUEUE_SHOWN]] or None
    rec.free_nodes = len([n for n in snap.nodes if rec.partition in n.partitions and n.idle]) \
        - sum(j.nodes for j in cluster.starting)
    if bb:
        rec.free_bb = cluster.system.bb - cluster.unavailable_bb - sum(
            j.bb for j, _ in cluster.running) - sum(j.bb for j in cluster.starting)


def _later_figure(w: Later) -> dict:
    """A held job that cannot start now as the cycle's record names it."""
    out: dict = {"id": _id(w.entry.key), "not_before": None if w.not_before is None
                 else round(w.not_before, 3)}
    if w.after:
        out["after"] = list(w.after)
    return out


def run_adapters(adapters: list[Adapter], interval: float = 5.0, *, once: bool = False,
                 release_on_exit: bool = False, wake_port: int | None = None) -> int:
    """Cycle ``adapters`` (one per managed partition, sharing one Slurm) every ``interval``
    seconds until interrupted (or once), holding their locks all along: adapters with the
    same lock file share one lock (``--lock``: one per partition set), the others take one
    each.  Several partitions are read once per cycle and decided one after the other, each
    its own pass and log record; they must have disjoint nodes (``disjoint_partitions``),
    so that no node is promised by two decisions.  With ``wake_port`` a job's end or
    submission (``hpcopt.slurm.wake``: Slurm's EpilogSlurmctld and the submit script send a
    datagram) starts the next cycle at once, and while nodes are still completing a job the
    cycles come every ``RECHECK`` s; the interval stays the fallback.  On SIGINT/SIGTERM
    (``KeyboardInterrupt``) the held jobs stay held, or with ``release_on_exit`` are all
    released to Slurm's own scheduler; the interrupt then goes on to the caller."""
    shared: dict = defaultdict(list)  # lock file -> the partitions it covers
    for a in adapters:
        if a.lock is not None:
            shared[a.lock].append(a.partition)
    locks = [PartitionLock(path, ",".join(names)) for path, names in shared.items()]
    waker = None
    taken: list[PartitionLock] = []
    try:
        for lock in locks:
            lock.acquire()
            taken.append(lock)
        if wake_port is not None and not once:
            waker = Waker(wake_port)
            for a in adapters:
                a.quiet_for = interval
        while True:
            t0 = time.monotonic()
            recs = _cycle_all(adapters)
            if once:
                for a, rec in zip(adapters, recs):
                    if rec.ok and not (rec.released or rec.release_failed):
                        a.say(f"cycle {a.cycles}: {_idle_line(rec)}")
                return 0 if all(rec.ok for rec in recs) else 1
            pause = interval - (time.monotonic() - t0)
            if waker is None:
                time.sleep(max(0.0, pause))
                continue
            if any(rec.completing for rec in recs):  # freed nodes come back unsaid
                pause = min(pause, RECHECK)
            waker.wait(pause)
    except KeyboardInterrupt:
        if release_on_exit:
            for a in adapters:
                if not a.dry_run:
                    a.release_all()
        raise
    finally:
        if waker is not None:
            waker.close()
        for lock in taken:
            lock.release()


def _cycle_all(adapters: list[Adapter]) -> list[CycleRecord]:
    """One cycle of each adapter: one read of Slurm for all (each reads its own when that
    read fails, to log the failure), partitions checked disjoint."""
    if len(adapters) == 1:
        return [adapters[0].cycle()]
    try:
        snap = adapters[0].slurm.snapshot()
    except SlurmCommandError:
        return [a.cycle() for a in adapters]
    disjoint_partitions(snap, [a.partition for a in adapters])
    return [a.cycle(snap) for a in adapters]


def disjoint_partitions(snap: Snapshot, partitions: list[str]) -> None:
    """An ``OptionError`` unless the managed ``partitions`` exist and share no node: one
    adapter decides each on its own, and a node in two of them could be promised twice."""
    seen: dict[str, str] = {}
    known = {p for n in snap.nodes for p in n.partitions}
    for p in partitions:
        if p not in known:
            raise OptionError(f"--partition {p}: no such partition with nodes (sinfo lists "
                              f"{', '.join(sorted(known))})")
    for n in snap.nodes:
        for p in partitions:
            if p not in n.partitions:
                continue
            if n.name in seen:
                raise OptionError(
                    f"partitions {seen[n.name]} and {p} share node {n.name}: one adapter "
                    "schedules several partitions only when their nodes are disjoint (a "
                    "shared node could be promised by both decisions); run them with "
                    "disjoint nodes, or one adapter for one of them")
            seen[n.name] = p


def _idle_line(rec: CycleRecord) -> str:
    """What a cycle that released nothing saw, in one line."""
    text = (f"released nothing ({rec.pending} held in the queue, {rec.free_nodes} "
            f"free node{'s' if rec.free_nodes != 1 else ''}")
    if rec.reserved:
        text += (f"; reserved {rec.reserved['id']} at "
                 f"+{max(0.0, rec.reserved['shadow'] - rec.time):.0f} s")
    return text + ")"


def _id(key: str):
    """A Slurm job id as the log writes it: an integer, or the text of an array task."""
    return int(key) if key.isdigit() else key
