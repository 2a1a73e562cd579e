"""One decision at one moment: the core every embedding of a policy calls.

A scheduler outside the simulator (the Slurm adapter, the ``hpcopt/1`` service and
``hpcopt decide``) describes what it knows as a ``ClusterState`` and calls ``decide``.  The
answer is the driver's own pass in that state (``Simulator.at``, then ``schedule``): the same
window, policy call, EASY reservation and backfilling as in a simulation, so no embedding
repeats a scheduling rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from hpcopt.domain import Job, System

from .driver import Simulator
from .limits import SiteLimits
from .orders import total_ids
from .records import Event
from .reservations import Reservation
from .resources import availability


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
    start is still to come; ``weights`` ``(w1, w2, end)`` go to the policy's ``set_weights``;
    ``limits`` are the site's association and QOS limits (``hpcopt.sim.limits``), counted
    over the running and starting jobs; ``reservations`` the advance reservations and
    maintenance windows known now (``hpcopt.sim.reservations``): their nodes, of the
    machine's available ones, are kept from the queued jobs they do not admit.
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
    limits: SiteLimits | None = None
    reservations: tuple[Reservation, ...] = ()


@dataclass(frozen=True)
class WindowDecision:
    """What ``decide`` answers: the queued jobs to start now with how each starts (``ready``,
    ``reserved`` or ``backfilled``, in start order), the reserved job and its shadow time (or
    ``None``), the queued jobs set aside because they cannot fit the machine's available nodes
    (each with the reason), the nodes free before the decision, and on a topology the node
    ids each started job is placed on (``placements``, by job id); ``passed`` is each queued
    job's count of passes it was passed over after this one (for the next decision's
    ``ClusterState.passed``: the starvation bound); ``blocked`` the queued jobs the site's
    limits keep from starting now, each with the limit."""

    started: tuple[tuple[Job, str], ...]
    reserved: Job | None
    shadow: float | None
    set_aside: tuple[tuple[Job, str], ...]
    free: int
    placements: Mapping = field(default_factory=dict)
    passed: Mapping = field(default_factory=dict)
    blocked: tuple[tuple[Job, str], ...] = ()


def decide(state: ClusterState, policy, **options) -> WindowDecision:
    """The driver's pass at ``state.time`` in ``state`` under ``policy`` (module docstring).

    ``options`` are the simulator's (``order``, ``backfill``, ``window``,
    ``starvation_bound``); ``None`` values take the policy's defaults.  Cloud slots (a system
    with a capacity profile) run without backfilling, as ``hpcopt simulate`` runs them.  The
    machine's kind (counted nodes, SSD classes, a topology) answers through its
    ``Availability`` (``hpcopt.sim.resources``).
    """
    sim, given, set_aside, avail = _at(state, policy, **options)
    if sim is None:
        return WindowDecision((), None, None, set_aside, 0)
    free = sim.pool.free_nodes
    started: list[tuple[Job, str]] = []
    placements: dict = {}
    reservation: list = [None, None]

    def on_start(s, e, rec):
        job = given[rec.job.id]
        started.append((job, rec.mode))
        where = avail.placement(rec.allocation)
        if where is not None:
            placements[job.id] = where

    sim.subscribe(Event.START, on_start)
    sim.subscribe(Event.RESERVE, lambda s, e, payload: reservation.__setitem__(
        slice(None), [given[payload[0].id], payload[1]]))
    sim.schedule()
    passed = {job.id: sim.records[job.id].passed for job in given.values()
              if job.id in sim.records}
    blocked = tuple((given[job.id], why) for job, why in sim.blocked if job.id in given)
    return WindowDecision(tuple(started), *reservation, tuple(set_aside), free, placements,
                          passed, blocked)


def simulator_at(state: ClusterState, policy, *, ends: Mapping | None = None, **options
                 ) -> tuple[Simulator | None, dict, tuple[tuple[Job, str], ...]]:
    """The simulator in ``state`` (``Simulator.at``) under ``policy``, before its pass: the
    one reading of a ``ClusterState`` that ``decide`` and forecasts (``hpcopt.sim.forecast``)
    share.  Returns it (``None`` when no node is usable), the state's queued jobs by their
    ids in it, and the queued jobs set aside (they cannot fit the available machine, with
    why).  ``ends`` are the running jobs' real ends (``Simulator.at``); ``options`` as in
    ``decide``."""
    return _at(state, policy, ends=ends, **options)[:3]


def _at(state: ClusterState, policy, *, ends: Mapping | None = None, **options):
    """``simulator_at``, and the machine's ``Availability`` (its placements)."""
    now = float(state.time)
    avail = availability(state.system, state.unavailable, state.completing,
                         state.unavailable_bb)
    queue, set_aside = [], []
    for job in state.queue:
        why = avail.never_fits(job)
        if why:
            set_aside.append((job, why))
        else:
            queue.append(job)
    machine = avail.machine
    if machine is None or not avail.usable:
        return None, {}, tuple(set_aside), avail
    running = [(job, end, state.placed.get(job.id)) for job, end in state.running]
    claimed = avail.claim(running)
    taken = [job for job, *_ in running] + list(state.starting) + queue + list(state.upcoming)
    for nodes, wait, alloc in avail.stand_ins(claimed):  # nodes busy with no job
        stand_in = Job(_fresh_id(taken), now, 0.0, 0.0, nodes)
        running.append((stand_in, now + wait, alloc))
        taken.append(stand_in)
    for job in state.starting:  # on its pinned nodes, unless a read says they are busy
        running.append((job, now + job.walltime, avail.pin(state.placed.get(job.id), claimed)))
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
    limits = options.pop("limits", None) or state.limits  # a run's own, else the state's
    if machine.capacity is not None:
        options["backfill"] = "none"
    if state.reservations and "reservations" not in options:
        options["reservations"] = state.reservations
    sim = Simulator.at(now, machine, policy, queued, running, passed=dict(state.passed),
                       upcoming=upcoming, ends=ends, limits=limits, **options)
    return sim, {job.id: job for job in queue}, tuple(set_aside), avail


def _fresh_id(jobs: list[Job]) -> int | str:
    """An id no job in ``jobs`` has, of the type they have."""
    ids = {job.id for job in jobs}
    if any(isinstance(i, str) for i in ids):
        name = "stand-in"
        while name in ids:
            name += "_"
        return name
    return min((i for i in ids), default=0) - 1
