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
    completing: int = 0
    unavailable: int = 0
    unavailable_bb: float = 0.0
    passed: Mapping = field(default_factory=dict)
    upcoming: tuple[Job, ...] = ()
    weights: tuple[float, float, int | None] | None = None


@dataclass(frozen=True)
class WindowDecision:
    """What ``decide`` answers: the queued jobs to start now with how each starts (``ready``,
    ``reserved`` or ``backfilled``, in start order), the reserved job and its shadow time (or
    ``None``), the queued jobs set aside because they cannot fit the machine's available nodes
    (each with the reason), and the nodes free before the decision."""

    started: tuple[tuple[Job, str], ...]
    reserved: Job | None
    shadow: float | None
    set_aside: tuple[tuple[Job, str], ...]
    free: int


def decide(state: ClusterState, policy, **options) -> WindowDecision:
    """The driver's pass at ``state.time`` in ``state`` under ``policy`` (module docstring).

    ``options`` are the simulator's (``order``, ``backfill``, ``window``,
    ``starvation_bound``); ``None`` values take the policy's defaults.  Cloud slots (a system
    with a ``capacity`` profile) run without backfilling, as ``hpcopt simulate`` runs them.
    """
    now = float(state.time)
    machine = _available(state.system, state.unavailable, state.completing,
                         state.unavailable_bb)
    queue, set_aside = [], []
    for job in state.queue:
        why = _never_fits(job, machine)
        if why:
            set_aside.append((job, why))
        else:
            queue.append(job)
    if machine is None:
        return WindowDecision((), None, None, tuple(set_aside), 0)
    running = [*state.running, *((job, now + job.walltime) for job in state.starting)]
    if state.completing:  # busy nodes with no job: one stand-in job ending now
        taken = [job for job, _ in running] + queue + list(state.upcoming)
        running.append((Job(_fresh_id(taken), now, 0.0, 0.0, state.completing), now))
    # integer and text ids may mix: one total order over them
    jobs = total_ids([job for job, _ in running] + queue + list(state.upcoming))
    n_run, n_queue = len(running), len(queue)
    running = [(job, end) for job, (_, end) in zip(jobs, running)]
    queued, upcoming = jobs[n_run:n_run + n_queue], jobs[n_run + n_queue:]
    set_weights = getattr(policy, "set_weights", None)  # a hook of the policy protocol
    if state.weights is not None and set_weights is not None:
        set_weights(*state.weights)
    options = {k: v for k, v in options.items() if v is not None}
    if machine.capacity is not None:
        options["backfill"] = "none"
    sim = Simulator.at(now, machine, policy, queued, running, passed=dict(state.passed),
                       upcoming=upcoming, **options)
    free = sim.pool.free_nodes
    given = {job.id: job for job in queue}
    started: list[tuple[Job, str]] = []
    reservation: list = [None, None]
    sim.subscribe(Event.START, lambda s, e, rec: started.append((given[rec.job.id],
                                                                  rec.mode)))
    sim.subscribe(Event.RESERVE, lambda s, e, payload: reservation.__setitem__(
        slice(None), [given[payload[0].id], payload[1]]))
    sim.schedule()
    return WindowDecision(tuple(started), *reservation, tuple(set_aside), free)


def _available(system: System, unavailable: int, completing: int,
               unavailable_bb: float = 0.0) -> System | None:
    """The machine of the decision: ``system`` without its unavailable nodes and burst buffer
    (``None`` when no node is left)."""
    if unavailable < 0 or completing < 0 or not 0 <= unavailable_bb < float("inf"):
        raise HpcoptError(f"unavailable nodes and burst buffer and completing nodes must be "
                          f">= 0, got {unavailable}, {unavailable_bb} and {completing}")
    if unavailable + completing > system.nodes:
        raise HpcoptError(f"{unavailable} unavailable and {completing} completing nodes, but "
                          f"the system has {system.nodes}")
    if unavailable_bb:
        system = replace(system, bb=max(0.0, system.bb - unavailable_bb))
    if not unavailable:
        return system
    if system.ssd_classes or system.topology is not None or system.capacity is not None:
        raise HpcoptError("unavailable nodes are counted on a machine of interchangeable "
                          "nodes only (this one has SSD classes, a topology or a capacity "
                          "profile)")
    left = system.nodes - unavailable
    return replace(system, nodes=left) if left else None


def _never_fits(job: Job, machine: System | None) -> str | None:
    """Why ``job`` cannot fit the machine's available nodes even when all are free (None: it
    can)."""
    have = machine.nodes if machine is not None else 0
    if job.nodes > have:
        return f"asks {job.nodes} nodes, {have} available"
    if machine is not None and job.bb > machine.bb:
        return f"asks {job.bb:g} GB of burst buffer, the machine has {machine.bb:g}"
    return None


def _fresh_id(jobs: list[Job]) -> int | str:
    """An id no job in ``jobs`` has, of the type they have."""
    ids = {job.id for job in jobs}
    if any(isinstance(i, str) for i in ids):
        name = "completing"
        while name in ids:
            name += "_"
        return name
    return min((i for i in ids), default=0) - 1
