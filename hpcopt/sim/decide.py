"""One decision at one moment: the core every embedding of a policy calls.

A scheduler outside the simulator (the Slurm adapter, the ``hpcopt/1`` service and
``hpcopt decide``) describes what it knows as a ``ClusterState`` and calls ``decide``.  The
answer is the driver's own pass in that state (``Simulator.at``, then ``schedule``): the same
window, policy call, EASY reservation and backfilling as in a simulation, so no embedding
repeats a scheduling rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from hpcopt.domain import Job, System
from hpcopt.errors import HpcoptError

from .driver import Simulator
from .orders import total_ids
from .records import Event


@dataclass(frozen=True)
class ClusterState:
    """What a scheduler knows at ``time``; every node of ``system`` is in exactly one state:

    - free: what the others leave;
    - busy: ``running`` pairs each running job with its estimated end (start + requested
      walltime; an end already past means it ends now);
    - planned: ``starting`` are jobs already told to start that have not started yet; they
      take free nodes from now for their walltime;
    - completing: ``completing`` nodes are still busy with a job that ended (free from now on,
      not yet to start on);
    - unavailable: ``unavailable`` nodes take no job (down, drained, failing, reserved to
      others); they are out of the machine for this decision, and so are ``unavailable_bb``
      GB of the burst buffer (held by jobs outside the machine, or reserved).

    Nodes are counted, except on a machine with a topology, where they are told apart:
    ``completing`` and ``unavailable`` are then node ids, ``placed`` maps each running job's
    id (and each starting job's, where its nodes are known) to the node ids it holds, and the
    decision says where each job starts.  On a machine with SSD classes nodes are counted
    per class: ``completing`` and ``unavailable`` may be ``{SSD GB: nodes}``, ``placed`` maps
    a job's id to its nodes per class (in ascending SSD order, as the ``MultiPool``
    allocation), and the decision says how many nodes of each class each job starts on.

    ``queue`` are the waiting jobs the policy may start, each at the size the resource manager
    will give it.  ``passed`` maps queued ids to the times they were passed over (the
    starvation bound); ``upcoming`` are cloud jobs submitted before ``time`` whose earliest
    start is still to come; ``weights`` ``(w1, w2, end)`` go to the policy's ``set_weights``.
    """

    time: float
    system: System
    queue: tuple[Job, ...] = ()
    running: tuple[tuple[Job, float], ...] = ()
    starting: tuple[Job, ...] = ()
    completing: int | tuple[int, ...] = 0
    unavailable: int | tuple[int, ...] = 0
    unavailable_bb: float = 0.0
    placed: Mapping = field(default_factory=dict)
    passed: Mapping = field(default_factory=dict)
    upcoming: tuple[Job, ...] = ()
    weights: tuple[float, float, int | None] | None = None


@dataclass(frozen=True)
class WindowDecision:
    """What ``decide`` answers: the queued jobs to start now with how each starts (``ready``,
    ``reserved`` or ``backfilled``, in start order), the reserved job and its shadow time (or
    ``None``), the queued jobs set aside because they cannot fit the machine's available nodes
    (each with the reason), the nodes free before the decision, and on a topology the node
    ids each started job is placed on (``placements``, by job id); ``passed`` is each queued
    job's count of passes it was passed over after this one (for the next decision's
    ``ClusterState.passed``: the starvation bound)."""

    started: tuple[tuple[Job, str], ...]
    reserved: Job | None
    shadow: float | None
    set_aside: tuple[tuple[Job, str], ...]
    free: int
    placements: Mapping = field(default_factory=dict)
    passed: Mapping = field(default_factory=dict)


NEVER = 100 * 365 * 86400.0  # how long an unavailable node of a topology stays taken


def decide(state: ClusterState, policy, **options) -> WindowDecision:
    """The driver's pass at ``state.time`` in ``state`` under ``policy`` (module docstring).

    ``options`` are the simulator's (``order``, ``backfill``, ``window``,
    ``starvation_bound``); ``None`` values take the policy's defaults.  Cloud slots (a system
    with a ``capacity`` profile) run without backfilling, as ``hpcopt simulate`` runs them.
    """
    sim, given, set_aside = simulator_at(state, policy, **options)
    if sim is None:
        return WindowDecision((), None, None, set_aside, 0)
    topology = state.system.topology is not None
    sizes = sorted(state.system.ssd_classes) if not topology else []
    free = sim.pool.free_nodes
    queue = list(given.values())
    started: list[tuple[Job, str]] = []
    placements: dict = {}
    reservation: list = [None, None]

    def on_start(s, e, rec):
        job = given[rec.job.id]
        started.append((job, rec.mode))
        if topology or sizes:
            placements[job.id] = tuple(int(n) for n in rec.allocation)

    sim.subscribe(Event.START, on_start)
    sim.subscribe(Event.RESERVE, lambda s, e, payload: reservation.__setitem__(
        slice(None), [given[payload[0].id], payload[1]]))
    sim.schedule()
    passed = {job.id: sim.records[job.id].passed for job in queue if job.id in sim.records}
    return WindowDecision(tuple(started), *reservation, tuple(set_aside), free, placements,
                          passed)


def simulator_at(state: ClusterState, policy, *, ends: Mapping | None = None, **options
                 ) -> tuple[Simulator | None, dict, tuple[tuple[Job, str], ...]]:
    """The simulator in ``state`` (``Simulator.at``) under ``policy``, before its pass: the
    one reading of a ``ClusterState`` that ``decide`` and forecasts (``hpcopt.sim.forecast``)
    share.  Returns it (``None`` when no node is usable), the state's queued jobs by their
    ids in it, and the queued jobs set aside (they cannot fit the available machine, with
    why).  ``ends`` are the running jobs' real ends (``Simulator.at``); ``options`` as in
    ``decide``."""
    now = float(state.time)
    topology = state.system.topology is not None
    sizes = sorted(state.system.ssd_classes) if not topology else []
    by_class = bool(sizes) and any(isinstance(n, Mapping)
                                   for n in (state.unavailable, state.completing))
    if by_class:  # nodes per SSD class
        down, ending = _per_class(state.unavailable, sizes), _per_class(state.completing, sizes)
        machine = _available(state.system, 0, 0, state.unavailable_bb)
        if machine is not None and any(down):  # a class may be left with no node
            machine = replace(machine, nodes=machine.nodes - sum(down), ssd_classes={
                s: machine.ssd_classes[s] - d for s, d in zip(sizes, down)}) \
                if sum(down) < machine.nodes else None
        usable = machine.nodes if machine is not None else 0
    elif topology:
        down = _node_ids(state.unavailable, True)
        ending = _node_ids(state.completing, True)
        machine, usable = _available(state.system, 0, 0, state.unavailable_bb), \
            state.system.nodes - len(down)
    else:
        down, ending = _node_ids(state.unavailable, False), _node_ids(state.completing, False)
        machine = _available(state.system, len(down), len(ending), state.unavailable_bb)
        usable = machine.nodes if machine is not None else 0
    queue, set_aside = [], []
    for job in state.queue:
        why = _never_fits(job, machine, usable)
        if why:
            set_aside.append((job, why))
        else:
            queue.append(job)
    if machine is None or not usable:
        return None, {}, tuple(set_aside)
    running = [(job, end, state.placed.get(job.id)) for job, end in state.running]
    if topology and any(nodes is None for _, _, nodes in running):
        job = next(j for j, _, nodes in running if nodes is None)
        raise HpcoptError(f"running job {job.id}: its node ids are needed on a topology "
                          "(ClusterState.placed)")
    claimed = {n for _, _, nodes in running for n in nodes or ()} if topology else set()
    taken = [job for job, *_ in running] + list(state.starting) + queue + list(state.upcoming)
    # nodes busy with no job (and on a topology the unavailable ones, which stay in the
    # machine to keep their ids): a stand-in job each, on the nodes no running job claims
    # (reads taken a moment apart may name a node twice)
    if topology:
        ending = tuple(n for n in ending if n not in claimed)
        down = tuple(n for n in down if n not in claimed and n not in ending)
        claimed.update(ending, down)
    for ids, end in ((ending, now), (down if topology else (), now + NEVER)):  # by class: counts
        if any(ids) if by_class else ids:
            stand_in = Job(_fresh_id(taken), now, 0.0, 0.0, sum(ids) if by_class else len(ids))
            running.append((stand_in, end, tuple(ids) if topology or by_class else None))
            taken.append(stand_in)
    for job in state.starting:  # on its pinned nodes, unless a read says they are busy
        nodes = state.placed.get(job.id)
        if nodes is not None and (not topology or claimed.isdisjoint(nodes)):
            claimed.update(nodes)
        else:
            nodes = None  # the nodes the pool would give it
        running.append((job, now + job.walltime, nodes))
    # integer and text ids may mix: one total order over them
    jobs = total_ids([job for job, *_ in running] + queue + list(state.upcoming))
    n_run, n_queue = len(running), len(queue)
    running = [(job, end, nodes) if nodes is not None else (job, end)
               for job, (_, end, nodes) in zip(jobs, running)]
    queued, upcoming = jobs[n_run:n_run + n_queue], jobs[n_run + n_queue:]
    set_weights = getattr(policy, "set_weights", None)  # a hook of the policy protocol
    if state.weights is not None and set_weights is not None:
        set_weights(*state.weights)
    options = {k: v for k, v in options.items() if v is not None}
    if machine.capacity is not None:
        options["backfill"] = "none"
    sim = Simulator.at(now, machine, policy, queued, running, passed=dict(state.passed),
                       upcoming=upcoming, ends=ends, **options)
    return sim, {job.id: job for job in queue}, tuple(set_aside)


def _node_ids(nodes: int | tuple[int, ...], topology: bool) -> tuple[int, ...]:
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


def _available(system: System, unavailable: int, completing: int,
               unavailable_bb: float = 0.0) -> System | None:
    """The machine of the decision: ``system`` without its unavailable nodes and burst buffer
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


def _never_fits(job: Job, machine: System | None, usable: int) -> str | None:
    """Why ``job`` cannot fit the machine's available nodes even when all are free (None: it
    can)."""
    if job.nodes > usable:
        return f"asks {job.nodes} nodes, {usable} available"
    if machine is not None and job.bb > machine.bb:
        return f"asks {job.bb:g} GB of burst buffer, the machine has {machine.bb:g}"
    if machine is not None and machine.ssd_classes and job.ssd:
        fit = sum(n for size, n in machine.ssd_classes.items() if size >= job.ssd)
        if job.nodes > fit:
            return (f"asks {job.nodes} nodes with {job.ssd:g} GB of SSD, {fit} available "
                    "have that much")
    return None


def _fresh_id(jobs: list[Job]) -> int | str:
    """An id no job in ``jobs`` has, of the type they have."""
    ids = {job.id for job in jobs}
    if any(isinstance(i, str) for i in ids):
        name = "stand-in"
        while name in ids:
            name += "_"
        return name
    return min((i for i in ids), default=0) - 1
