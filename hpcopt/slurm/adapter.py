"""The adapter's cycle: read Slurm, decide with the core, re-read, pin, release.

Each cycle reads every job and node (``hpcopt.slurm.state``) and turns the managed partition
into a ``ClusterState`` (``hpcopt.sim.decide``, the core every embedding calls: the driver's
own pass, with its window, policy call, EASY reservation and backfilling):

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

The jobs the decision starts are re-read right before their release; one that changed since
the read (size, limit, state, hold, partition) goes back to the next cycle.  Each is then
pinned and marked ``hpcopt:released:N`` (one ``scontrol update``) and released (``scontrol
release``); every other job stays held.  Nothing is kept between cycles: a restarted adapter
reads the same state from Slurm, and a released job is no longer held, so it is never released
twice.  A failed read skips the cycle; a failed release (the job was cancelled meanwhile) is
logged and the cycle goes on.
"""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..domain import Job, NumberedId, System
from ..errors import HpcoptError, OptionError
from ..sim.decide import ClusterState, decide
from .lock import PartitionLock
from .state import (
    Pool,
    Slurm,
    SlurmCommandError,
    SlurmJob,
    Snapshot,
    constraint_terms,
    feature_size,
    gres_count,
    job_bb_request,
    job_licenses,
    node_features,
)
from .topology import SlurmTopology, TopologyConfError, expand_hostlist
from .wake import Waker

FAR = 365 * 86400.0  # "no known end": unlimited time limits
ACTIVE = frozenset({"RUNNING", "COMPLETING", "SUSPENDED", "CONFIGURING", "STOPPED"})
#: pending reasons of a job about to start (a burst buffer's stage-in: its pool is held)
STARTING = frozenset({"None", "Priority", "Resources", "BurstBufferStageIn"})
MARK = "hpcopt:"  # the AdminComment prefix of the jobs hpcopt manages
ARRAY_LIMIT = 100_000  # tasks of one pending array read at most (Slurm's MaxArraySize bound)
RECHECK = 0.25  # seconds between cycles while nodes complete a job (woken adapters)
QUEUE_SHOWN = 20  # queue entries a cycle's log record names, in submission order


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
    """One cycle's reading of Slurm: the core's input, the entries behind its queue, and what
    was set aside or must be held again (log notes)."""

    cluster: ClusterState | None = None
    entries: dict = field(default_factory=dict)
    n_running: int = 0
    starting: list[str] = field(default_factory=list)
    rehold: list[SlurmJob] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ssd: NodeSsd | None = None
    free_names: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class BurstBuffer:
    """The burst buffer as one read of Slurm saw it: the license ``name`` (``kind``
    "license": a job's count of it is its request) or the ``burst_buffer`` plugin's pool
    ``name`` ("pool": a job's ``#BB_LUA pool=NAME capacity=N``), with its ``total`` and
    ``used`` units and the ids of the jobs that ``hold`` part of it (a pool's, from stage-in
    on: a released job holds it before it runs)."""

    kind: str
    name: str
    total: float
    used: float
    hold: frozenset = frozenset()

    @classmethod
    def read(cls, licenses: dict | None, license: str | None, pools: dict | None,
             pool: str | None) -> BurstBuffer | None:
        """The burst buffer of ``license`` in ``licenses`` ({name: (total, used)}) or of
        ``pool`` in ``pools`` ({name: ``Pool``}); None when neither is named."""
        if license is not None:
            if licenses is None or license not in licenses:
                raise HpcoptError(f"license {license!r} is not configured (scontrol show "
                                  f"licenses lists {sorted(licenses or {})})")
            return cls("license", license, *map(float, licenses[license]))
        if pool is not None:
            if pools is None or pool not in pools:
                raise HpcoptError(f"burst-buffer pool {pool!r} is not configured (scontrol "
                                  f"show burst lists {sorted(pools or {})})")
            p: Pool = pools[pool]
            return cls("pool", pool, p.total, p.used, frozenset(p.jobs))
        return None


@dataclass(frozen=True)
class Resources:
    """What a cycle schedules besides nodes: the burst buffer (or None) and each node's local
    SSD in GB, a gres counting them (``ssd_gres``) or node features ``PREFIX<GB>``
    (``ssd_feature`` the prefix; or None)."""

    bb: BurstBuffer | None = None
    ssd_gres: str | None = None
    ssd_feature: str | None = None

    @property
    def ssd(self) -> bool:
        return self.ssd_gres is not None or self.ssd_feature is not None

    def node_ssd(self, name: str, text: str) -> tuple[float, str]:
        """A node's SSD in GB and the SSD feature it carries ("" for a gres): its count of
        the gres, or the largest of its ``PREFIX<GB>`` features (0 without one), from
        ``text`` (``sinfo``'s gres or features of the node)."""
        if self.ssd_gres is not None:
            count = gres_count(text, self.ssd_gres)
            if count is None:
                raise HpcoptError(f"node {name}: gres {text!r} cannot be read (expected "
                                  f"{self.ssd_gres}:GB)")
            return float(count), ""
        sizes = [(feature_size(f, self.ssd_feature), f) for f in node_features(text)]
        return max(((s, f) for s, f in sizes if s is not None), default=(0.0, ""))

    def ask(self, j: SlurmJob) -> tuple[float, float, str | None]:
        """The burst buffer and the SSD per node ``j`` asks, and why it cannot be scheduled
        (None: it can): a license, pool, gres or feature hpcopt does not schedule, or a
        request that cannot be read.  A constraint is read as SSD features: one, or several
        joined by ``|`` (each node has one of them: the smallest is asked)."""
        asked = job_licenses(j.licenses)
        if asked is None:
            return 0.0, 0.0, f"asks licenses {j.licenses!r}, which cannot be read"
        license = self.bb.name if self.bb is not None and self.bb.kind == "license" else None
        other = sorted(set(asked) - {license})
        if other:
            return 0.0, 0.0, _not_scheduled("licenses", other, license,
                                            "--bb-license names the burst buffer's")
        pools = job_bb_request(j.burst_buffer)
        if pools is None:
            return 0.0, 0.0, (f"asks a burst buffer that cannot be read "
                              f"({j.burst_buffer.strip()[:60]!r}: #BB_LUA pool=NAME "
                              "capacity=N expected)")
        pool = self.bb.name if self.bb is not None and self.bb.kind == "pool" else None
        other = sorted(set(pools) - {pool})
        if other:
            return 0.0, 0.0, _not_scheduled("burst-buffer pool", other, pool,
                                            "--bb-pool names the burst buffer's")
        ssd = 0.0
        if self.ssd_gres is not None:
            ssd = gres_count(j.gres, self.ssd_gres)
            if ssd is None:
                return 0.0, 0.0, f"asks gres {j.gres!r}, which cannot be read"
        terms = constraint_terms(j.features)
        op, words = terms if terms is not None else ("", [])
        sizes = [feature_size(w, self.ssd_feature) if self.ssd_feature else None
                 for w in words]
        other = [w for w, size in zip(words, sizes) if size is None]
        if other:
            return 0.0, 0.0, _not_scheduled("features", other, self.ssd_feature,
                                            "--ssd-feature names the SSD's")
        if terms is None or op == "&":
            return 0.0, 0.0, (f"asks features {j.features!r}, which cannot be read (one "
                              "SSD feature, or several joined by |, expected)")
        if sizes:
            ssd = min(sizes)
        bb = asked.get(license, 0) if license else pools.get(pool, 0.0)
        return float(bb), float(ssd), None


def _not_scheduled(what: str, names, scheduled: str | None, hint: str) -> str:
    """Why a job asking ``names`` of ``what`` stays held; ``hint`` names the option that
    would schedule one when none is (``scheduled`` None)."""
    return (f"asks {what} {','.join(names)}, which hpcopt does not schedule"
            + ("" if scheduled else f" ({hint})"))


def names_partition(text: str, partition: str) -> bool:
    """Whether Slurm's partition field (one name, or a pending job's comma list) names it."""
    return partition in text.split(",")


def parse_mark(text: str) -> tuple[str, int] | None:
    """``("held" | "released", restart count)`` from an AdminComment hpcopt wrote, else None
    (``hpcopt:held`` is the submit script's: count 0)."""
    if not text.startswith(MARK):
        return None
    kind, _, count = text[len(MARK):].partition(":")
    if kind not in ("held", "released") or not (count.isdigit() or count == ""):
        return None
    return kind, int(count or 0)


def cycle_state(snap: Snapshot, partition: str, licenses: dict | None = None,
                bb_license: str | None = None,
                topology: SlurmTopology | None = None, *, pools: dict | None = None,
                bb_pool: str | None = None, node_gres: dict | None = None,
                ssd_gres: str | None = None, node_features: dict | None = None,
                ssd_feature: str | None = None) -> CycleState:
    """The core's state of ``partition`` in ``snap`` and the entries behind its queue
    (module docstring).  With ``bb_license``, that license of ``licenses`` (``{name: (total,
    used)}``) is the burst buffer, with ``bb_pool`` that pool of ``pools`` (``{name:
    Pool}``, the ``burst_buffer`` plugin's): its total the machine's, each job's count
    (``-L``) or capacity (``#BB_LUA``) its request (``BurstBuffer``).  With ``ssd_gres``
    that gres of each node (``node_gres``: {name: gres text}) is its local SSD in GB, and
    each job's count of it per node its request; with ``ssd_feature`` a node's largest
    feature ``PREFIX<GB>`` (``node_features``: {name: features text}) is, and the feature a
    job's constraint names (``Resources.ask``).  The machine then has SSD classes, nodes are
    counted per class and the decision says how many of each class a job starts on.
    With ``topology`` (the partition's nodes, ``hpcopt.slurm.topology``) nodes are told
    apart: the state says which nodes each job holds and the decision where jobs start."""
    bb = BurstBuffer.read(licenses, bb_license, pools, bb_pool)
    res = Resources(bb, ssd_gres, ssd_feature)
    bb_total, used_bb = (bb.total, bb.used) if bb is not None else (0.0, 0.0)
    nodes = [n for n in snap.nodes if partition in n.partitions]
    if not nodes:
        raise HpcoptError(f"partition {partition!r} has no nodes (sinfo lists "
                          f"{sorted({p for n in snap.nodes for p in n.partitions})})")
    if topology is not None and {n.name for n in nodes} != set(topology.names):
        raise TopologyConfError(f"partition {partition!r} has nodes "
                                f"{sorted(n.name for n in nodes)[:6]}..., the topology "
                                f"{list(topology.names)[:6]}...: they must be the same nodes")
    if topology is not None and (bb is not None or res.ssd):
        raise HpcoptError("a machine with a topology has no burst buffer or SSD here: use "
                          "--topology, or --bb-license/--bb-pool/--ssd-gres/--ssd-feature")
    if ssd_gres is not None and ssd_feature is not None:
        raise HpcoptError("one SSD: a gres (--ssd-gres) or node features (--ssd-feature)")
    ssd = NodeSsd.read(nodes, res, node_gres if ssd_gres is not None else node_features) \
        if res.ssd else None
    usable = {n.name for n in nodes if n.usable}
    idle = {n.name for n in nodes if n.idle}
    placed: dict = {}
    notes = ["unavailable nodes: " + ",".join(
        f"{n.name} ({n.state}{''.join('+' + f.lower() for f in sorted(n.flags))})"
        for n in nodes if not n.usable)] if len(usable) < len(nodes) else []
    ours = [j for j in snap.jobs if names_partition(j.partition, partition)]
    held = [j for j in ours if j.held]
    now = max([snap.time, *(j.submit for j in held)])
    running: list[tuple[Job, float]] = []
    covered: set[str] = set()
    n_running = 0
    for j in snap.jobs:
        if j.state not in ACTIVE:
            continue
        n_running += names_partition(j.partition, partition)
        take = (set(j.node_names) & usable) - idle - covered
        if take:
            covered |= take
            end = j.start + j.limit if j.limit is not None and j.start > 0 else now + FAR
            job = Job(NumberedId(j.id), min(j.submit, now), 0.0, 0.0, len(take),
                      bb=res.ask(j)[0] if bb is not None else 0.0)
            running.append((job, end))
            if topology is not None:
                placed[job.id] = tuple(topology.ids(sorted(take)))
            elif ssd is not None:
                placed[job.id] = ssd.counts(take)
    state = CycleState(n_running=n_running, notes=notes, ssd=ssd)
    free = len(idle)
    # what the listed jobs hold of the burst buffer (running, and released ones a pool holds
    # already); the rest of its use is held elsewhere, or reserved
    holding = {j.id for j in ours if j.state == "PENDING" and not j.held
               and bb is not None and j.id in bb.hold and j.reason in STARTING}
    listed_bb = sum(job.bb for job, _ in running) + sum(
        res.ask(j)[0] for j in ours if j.id in holding)
    unavailable_bb = max(0.0, used_bb - listed_bb)
    free_bb = max(0.0, bb_total - max(used_bb, listed_bb))
    starting: list[Job] = []
    pinned_names: set[str] = set()
    for j in sorted((j for j in ours if j.state == "PENDING" and not j.held),
                    key=lambda j: (j.submit, j.id)):
        mark = parse_mark(j.mark)
        if mark is not None and j.restarts > mark[1]:
            state.rehold.append(j)  # requeued: Slurm would start it again without hpcopt
            continue
        state.starting.append(j.key)
        if mark is None or mark[0] != "released":
            state.notes.append(f"job {j.key} pending and not held by hpcopt (released by "
                               "someone else, or never held): Slurm starts it")
        if j.reason not in STARTING:  # waits for a dependency, a begin time, ...: no nodes
            state.notes.append(f"job {j.key} released, waiting: {j.reason}")
            continue
        take = min(_upper(j) or j.nodes, free)
        asked = res.ask(j)[0] if bb is not None else 0.0
        held_bb = asked if j.id in holding else min(asked, free_bb)
        if take:  # the reads may disagree for a moment: never more than is free
            free = free - take
            free_bb -= 0.0 if j.id in holding else held_bb
            starting.append(Job(NumberedId(j.id), min(j.submit, now), 0.0,
                                j.limit if j.limit is not None else FAR, take, bb=held_bb))
            pinned = _pinned(j, idle) if topology is not None or ssd is not None else None
            if pinned is not None and len(pinned) == take:
                placed[starting[-1].id] = tuple(topology.ids(pinned)) \
                    if topology is not None else ssd.counts(pinned)
                pinned_names.update(pinned)
    for entry in _entries(held, ours, partition, state.notes, res):
        if (topology is not None or ssd is not None) and len(entry.records) > 1:
            state.notes.append(f"hetjob {entry.key}: hpcopt does not place hetjobs on a "
                               "topology or on SSD classes: left held")
            continue
        state.entries[entry.job.id] = entry
    queue = tuple(e.job for e in state.entries.values())
    state.free_names = [n.name for n in nodes if n.name in idle - pinned_names]
    completing, down = usable - idle - covered, {n.name for n in nodes} - usable
    if ssd is not None:
        system = System(len(nodes), bb=bb_total, ssd_classes=ssd.classes(), name=partition)
        completing, down = ssd.by_class(completing), ssd.by_class(down)
    elif topology is None:
        system = System(len(nodes), bb=bb_total, name=partition)
        completing, down = len(completing), len(down)
    else:
        system = System(len(nodes), topology=topology.tree, name=partition)
        completing = tuple(topology.ids(sorted(completing)))
        down = tuple(topology.ids(sorted(down)))
    state.cluster = ClusterState(now, system, queue, tuple(running), tuple(starting),
                                 completing=completing, unavailable=down,
                                 unavailable_bb=unavailable_bb, placed=placed)
    return state


def _pinned(j: SlurmJob, idle: set[str]) -> list[str] | None:
    """The nodes a released job is pinned to (its required nodes, all idle), or None."""
    if not j.required_nodes:
        return None
    try:
        names = expand_hostlist(j.required_nodes)
    except TopologyConfError:
        return None
    return names if set(names) <= idle else None


@dataclass(frozen=True)
class NodeSsd:
    """Each node's local SSD (GB; ``feature``: the SSD feature it carries, where node
    features are the SSD): the machine's SSD classes, nodes counted per class, and the nodes
    of a class a decision's counts stand for."""

    size: dict
    feature: dict = field(default_factory=dict)

    @classmethod
    def read(cls, nodes, res: Resources, text: dict | None) -> NodeSsd:
        """The SSD of each of ``nodes`` from ``text`` ({name: its gres or features as
        ``sinfo`` prints them}) under ``res``'s rule (``Resources.node_ssd``)."""
        size, feature = {}, {}
        for n in nodes:
            size[n.name], feature[n.name] = res.node_ssd(n.name, (text or {}).get(n.name, ""))
        return cls(size, feature)

    def classes(self) -> dict:
        out: dict = defaultdict(int)
        for s in self.size.values():
            out[s] += 1
        return dict(sorted(out.items()))

    def by_class(self, names) -> dict:
        """{SSD GB: nodes} of ``names``."""
        out = {s: 0 for s in self.classes()}
        for n in names:
            out[self.size[n]] += 1
        return out

    def counts(self, names) -> tuple[int, ...]:
        """Nodes per class of ``names``, in ascending SSD order (a ``MultiPool`` allocation)."""
        return tuple(self.by_class(names).values())

    def pick(self, counts, idle: list[str]) -> list[str]:
        """Nodes of ``idle`` (in their order) that make ``counts`` per class."""
        out = []
        for s, k in zip(self.classes(), counts):
            out += [n for n in idle if self.size[n] == s][:k]
        return out

    def constraint(self, j: SlurmJob, names) -> str | None:
        """The constraint ``j`` is released with on ``names`` when its own would keep Slurm
        from running it there (None: it would not): the SSD features it asked and those of
        the nodes, joined by ``|``.  Slurm runs a job asking ``ssd128`` only on nodes that
        carry ``ssd128``; hpcopt places it on any node with at least 128 GB."""
        asked = (constraint_terms(j.features) or ("", []))[1]
        if not asked or all(self.feature.get(n) in asked for n in names):
            return None
        own = [f for _, f in sorted({(self.size[n], self.feature[n]) for n in names}) if f]
        return "|".join(dict.fromkeys([*asked, *own]))


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
             res: Resources = Resources()):
    """The queue entries of the held jobs (module docstring), notes for the ones left held."""
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
        why = _left_held(j) or res.ask(j)[2]
        if why:
            notes.append(f"job {j.key} {why}: left held")
            continue
        if j.het_id:
            parts = sorted(components[j.het_id], key=lambda c: c.het_offset)
            bad = next((c for c in parts if not c.held or _left_held(c)
                        or res.ask(c)[2] or c.partition != j.partition), None)
            if bad is not None:
                notes.append(f"hetjob {j.id}: component {bad.id} is not held by hpcopt in "
                             "the same partition, or asks what hpcopt does not schedule: "
                             "left held")
                continue
            sizes = [_sized(c, partition) for c in parts]
            wall = max(map(_walltime, parts))
            yield Entry(Job(NumberedId(j.id), min(c.submit for c in parts), wall, wall,
                            sum(n for n, _ in sizes),
                            bb=sum(res.ask(c)[0] for c in parts),
                            ssd=max(res.ask(c)[1] for c in parts)),
                        str(j.id), tuple(parts),
                        {c.id: pins for c, (_, pins) in zip(parts, sizes)})
            continue
        nodes, pins = _sized(j, partition)
        wall, (bb, ssd, _) = _walltime(j), res.ask(j)
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


class Adapter:
    """``hpcopt slurm run``: one ``cycle()`` per interval (module docstring).

    ``policy`` is a policy object; ``options`` the driver's (``order``, ``backfill``,
    ``window``); ``log`` a text file taking one JSON line per cycle; ``say`` prints one
    human line per cycle that released something (or would, with ``dry_run``); ``lock`` the
    partition's lock file (``hpcopt.slurm.lock``), taken by ``run``; ``bb_license`` the Slurm
    license that is the burst buffer (its count per job the job's request), or ``bb_pool`` the
    ``burst_buffer`` plugin's pool that is (a job's ``#BB_LUA`` capacity its request);
    ``ssd_gres`` the gres that is each node's local SSD in GB (a job's count per node its
    request; each job started is pinned to free nodes of the SSD classes it was counted on),
    or ``ssd_feature`` the prefix of the node features that are (``ssd128``: 128 GB; a job's
    constraint its request, widened where it is placed on larger SSD); ``topology`` the
    partition's network (``hpcopt.slurm.topology.read_topology``): each job placed by the
    decision is pinned to its nodes (``ReqNodeList``) before its release.
    """

    def __init__(self, policy, *, slurm: Slurm | None = None, partition: str = "batch",
                 dry_run: bool = False, log=None, say: Callable[[str], None] | None = None,
                 lock=None, bb_license: str | None = None, bb_pool: str | None = None,
                 ssd_gres: str | None = None, ssd_feature: str | None = None,
                 topology: SlurmTopology | None = None, **options) -> None:
        name = getattr(policy, "name", type(policy).__name__)
        machine = getattr(policy, "machine", None)
        if machine == "capacity":
            raise OptionError(f"policy {name} schedules cloud slots against a capacity "
                              "profile, not a Slurm partition")
        if machine == "topology" and topology is None:
            raise OptionError(f"policy {name} places jobs on a network: give --topology "
                              "(Slurm's topology.conf)")
        self.policy = policy
        self.partition = partition
        if bb_license is not None and bb_pool is not None:
            raise OptionError("one burst buffer: give --bb-license or --bb-pool, not both")
        self.bb_license = bb_license
        self.bb_pool = bb_pool
        if ssd_gres is not None and ssd_feature is not None:
            raise OptionError("one SSD: give --ssd-gres or --ssd-feature, not both")
        self.ssd_gres = ssd_gres
        self.ssd_feature = ssd_feature
        self.topology = topology
        self.dry_run = dry_run
        self.log = log
        self.lock = lock
        self.say = say if say is not None else (lambda s: print(s, flush=True))
        self.options = {k: v for k, v in options.items() if v is not None}
        self._errors: list[str] = []
        self._passed: dict[str, int] = {}  # queued job -> passes it was passed over
        self.slurm = slurm if slurm is not None else Slurm()
        self.slurm.on_error = self._errors.append
        self.cycles = 0

    def cycle(self, snap: Snapshot | None = None) -> dict:
        """One read-decide-release cycle; returns its log record (also written to ``log``).
        ``snap``: Slurm as read for several partitions at once (``run_adapters``; no burst
        buffer then), instead of a read of its own."""
        self.cycles += 1
        self._errors.clear()
        self.slurm.on_error = self._errors.append  # (adapters of several partitions share it)
        rec: dict = {"time": round(time.time(), 3), "cycle": self.cycles,
                     "partition": self.partition, "dry_run": self.dry_run}
        try:
            snap, state = self.read(snap)
        except SlurmCommandError as exc:
            return self._failed(rec, str(exc), f"cannot read Slurm: {exc} (cycle skipped)")
        cluster = state.cluster
        if self._passed:  # the starvation bound's counts, kept from the last cycle
            cluster = replace(cluster, passed={job.id: self._passed[str(job.id)]
                                               for job in cluster.queue
                                               if str(job.id) in self._passed})
        completing = cluster.completing
        rec.update(read_s=round(snap.read_s, 4), slurm=snap.version, pending=len(cluster.queue),
                   completing=completing if isinstance(completing, int) else len(completing),
                   queue=[_id(e.key) for e in list(state.entries.values())[:QUEUE_SHOWN]],
                   running=state.n_running, waiting_start=state.starting,
                   free_nodes=len([n for n in snap.nodes if self.partition in n.partitions
                                   and n.idle]) - sum(j.nodes for j in cluster.starting))
        if self.bb_license or self.bb_pool:
            rec["free_bb"] = cluster.system.bb - cluster.unavailable_bb - sum(
                j.bb for j, _ in cluster.running) - sum(j.bb for j in cluster.starting)
        c0 = time.perf_counter()
        try:
            decision = decide(cluster, self.policy, **self.options)
        except HpcoptError as exc:  # the policy failed on this state: nothing is released
            return self._failed(rec, f"policy: {exc}", f"the policy failed: {exc}")
        rec["decide_s"] = round(time.perf_counter() - c0, 4)
        self._passed = {str(jid): n for jid, n in decision.passed.items() if n}
        notes = state.notes + [f"job {j.id} {why}: left held" for j, why in decision.set_aside]
        picked = [(state.entries[job.id], mode) for job, mode in decision.started]
        where = _where(state, decision, self.topology)
        c0 = time.perf_counter()
        reheld, changed = self._rehold(state.rehold, notes), []
        if picked and not self.dry_run:
            picked, changed = self._reread(picked, notes, where)
        self._write({"time": round(time.time(), 3), "cycle": self.cycles, "event": "releasing",
                     "ids": [_id(e.key) for e, _ in picked]})
        released, failed = [], []
        for entry, mode in picked:
            nodes = where.get(entry.key)
            features = state.ssd.constraint(entry.records[0], nodes) \
                if state.ssd is not None and nodes else None
            if features is not None:
                notes.append(f"job {entry.key} placed on larger SSD than its constraint "
                             f"{entry.records[0].features} names: it becomes {features}")
            if not self.dry_run:
                try:
                    self._release(entry, nodes, features)
                except SlurmCommandError as exc:
                    failed.append({"id": _id(entry.key), "error": str(exc)})
                    continue
            released.append({"id": entry.key, "mode": mode, "nodes": entry.job.nodes,
                             "bb": entry.job.bb})
        rec["release_s"] = round(time.perf_counter() - c0, 4)
        reserved = decision.reserved
        rec.update(ok=True, released=[_id(r["id"]) for r in released],
                   released_nodes=sum(r["nodes"] for r in released),
                   **({"released_bb": sum(r["bb"] for r in released)}
                      if self.bb_license or self.bb_pool else {}),
                   backfilled=[_id(r["id"]) for r in released if r["mode"] == "backfilled"],
                   reserved=None if reserved is None else
                   {"id": _id(state.entries[reserved.id].key),
                    "shadow": round(decision.shadow, 3)},
                   release_failed=failed, changed=changed, reheld=reheld, notes=notes,
                   errors=list(self._errors))
        if self.topology is not None or state.ssd is not None:
            rec["placed"] = {r["id"]: ",".join(where[r["id"]]) for r in released
                             if r["id"] in where}
        self._write(rec)
        if released or failed:
            verb = "would release" if self.dry_run else "released"
            text = ", ".join(f"{r['id']}" + (" (backfilled)" if r["mode"] == "backfilled"
                                             else "") for r in released) or "nothing"
            if reserved is not None:
                text += (f"; reserved {state.entries[reserved.id].key} at "
                         f"+{max(0.0, decision.shadow - cluster.time):.0f} s")
            if failed:
                text += "; not released: " + ", ".join(str(f["id"]) for f in failed)
            self.say(f"cycle {self.cycles}: {verb} {text}")
        elif changed or reheld:
            self.say(f"cycle {self.cycles}: released nothing" +
                     (f"; changed since the read: {', '.join(map(str, changed))}"
                      if changed else "") +
                     (f"; held again after a requeue: {', '.join(map(str, reheld))}"
                      if reheld else ""))
        return rec

    def read(self, snap: Snapshot | None = None) -> tuple[Snapshot, CycleState]:
        """Read Slurm (or take ``snap``, read for several partitions) into this partition's
        ``CycleState``: what a cycle decides on, and forecasts start from
        (``hpcopt.slurm.forecast``).  Raises ``SlurmCommandError`` when a read fails."""
        # licenses first: a job that starts between the reads is then counted once (the
        # jobs' read lists it), and one that ends leaves its use counted (the safe side)
        licenses = self.slurm.licenses() if self.bb_license else None
        pools = self.slurm.burst_pools() if self.bb_pool else None
        snap = self.slurm.snapshot() if snap is None else snap
        gres = self.slurm.node_gres() if self.ssd_gres else None
        features = self.slurm.node_features() if self.ssd_feature else None
        return snap, cycle_state(snap, self.partition, licenses, self.bb_license,
                                 self.topology, pools=pools, bb_pool=self.bb_pool,
                                 node_gres=gres, ssd_gres=self.ssd_gres,
                                 node_features=features, ssd_feature=self.ssd_feature)

    def _failed(self, rec: dict, error: str, said: str) -> dict:
        rec.update(ok=False, error=error, errors=list(self._errors))
        self._write(rec)
        self.say(f"cycle {self.cycles}: {said}")
        return rec

    def _reread(self, picked: list, notes: list[str], where: dict) -> tuple[list, list]:
        """The picked entries unchanged since the read (read again now; the nodes too where
        jobs are placed: every chosen node still idle), and the keys of those that changed
        (they go back to the next cycle)."""
        try:
            jobs, _ = self.slurm.jobs()
            idle = {n.name for n in self.slurm.nodes() if n.idle} if where else set()
        except SlurmCommandError as exc:
            notes.append(f"cannot read the picked jobs again ({exc}): none released")
            return [], [_id(e.key) for e, _ in picked]
        now = {j.id: j for j in jobs}
        keep, changed = [], []
        for entry, mode in picked:
            before = _fingerprint(entry.records, entry.key, {r.id: r for r in entry.records})
            if _fingerprint(entry.records, entry.key, now) != before:
                why = "changed since the read"
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
                notes.append(f"job {j.key} requeued: would be held again")
                continue
            try:
                self.slurm.hold(j.key)
                self.slurm.update(j.key, AdminComment=f"{MARK}held:{j.restarts}")
            except SlurmCommandError as exc:
                notes.append(f"job {j.key} requeued, not held again: {exc}")
                continue
            done.append(_id(j.key))
            notes.append(f"job {j.key} requeued: held again")
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
            jobs, _ = self.slurm.jobs()
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
        self._write({"time": round(time.time(), 3), "event": "exit",
                     "released_on_exit": done})
        self.say(f"released {len(done)} held job(s) to Slurm's scheduler")
        return done

    def _write(self, rec: dict) -> None:
        if self.log is not None:
            self.log.write(json.dumps(rec) + "\n")
            self.log.flush()


def _where(state: CycleState, decision, topology: SlurmTopology | None) -> dict:
    """The nodes each started entry is pinned to (by its release key): on a topology the
    nodes the decision chose; on SSD classes free nodes of the classes it counted, in node
    order, each given once."""
    if topology is not None:
        return {state.entries[jid].key: topology.nodes(ids)
                for jid, ids in decision.placements.items()}
    if state.ssd is None:
        return {}
    free, out = list(state.free_names), {}
    for job, _ in decision.started:
        names = state.ssd.pick(decision.placements[job.id], free)
        free = [n for n in free if n not in names]
        out[state.entries[job.id].key] = names
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
        while True:
            t0 = time.monotonic()
            recs = _cycle_all(adapters)
            if once:
                for a, rec in zip(adapters, recs):
                    if rec["ok"] and not (rec["released"] or rec["release_failed"]):
                        a.say(f"cycle {a.cycles}: {_idle_line(rec)}")
                return 0 if all(rec["ok"] for rec in recs) else 1
            pause = interval - (time.monotonic() - t0)
            if waker is None:
                time.sleep(max(0.0, pause))
                continue
            if any(rec.get("completing") for rec in recs):  # freed nodes come back unsaid
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


def _cycle_all(adapters: list[Adapter]) -> list[dict]:
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


def _idle_line(rec: dict) -> str:
    """What a cycle that released nothing saw, in one line."""
    text = (f"released nothing ({rec['pending']} held in the queue, {rec['free_nodes']} "
            f"free node{'s' if rec['free_nodes'] != 1 else ''}")
    if rec.get("reserved"):
        text += (f"; reserved {rec['reserved']['id']} at "
                 f"+{max(0.0, rec['reserved']['shadow'] - rec['time']):.0f} s")
    return text + ")"


def _id(key: str):
    """A Slurm job id as the log writes it: an integer, or the text of an array task."""
    return int(key) if key.isdigit() else key
