"""The adapter's cycle: read Slurm, run the driver's pass on what it read, release.

Each cycle reads every job and node (``hpcopt.slurm.state``) and turns the managed
partition into the state of one driver pass (``hpcopt.sim.driver.one_pass``, the very pass a
simulation runs: the same ``Window``, policy call, EASY reservation and backfilling):

- the machine is the partition's nodes;
- the queue is the partition's *held* pending jobs (submit time, time limit as walltime,
  node count);
- running are the jobs on the partition's nodes (estimated end: start + time limit, on the
  nodes of theirs that are usable), the jobs released earlier that Slurm has not started yet
  (they take idle nodes from now, unless they wait for a dependency or a begin time), nodes
  busy without a job (completing: free now) and the nodes that are down, drained or failing
  (free "never": a year from now), so that the pass sees exactly Slurm's idle nodes as free.

The jobs the pass starts (ready, reserved or backfilled) are released one by one with
``scontrol release``; every other job stays held.  Nothing is kept between cycles: a restarted
adapter reads the same state from Slurm.  A released job is no longer held, so it is never
released twice, and a job released from a pass fits the idle nodes that the read saw (a job
that ended since only freed more).  A failed read skips the cycle; a failed release (the job
was cancelled or ended meanwhile) is logged and the cycle goes on.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..domain import Job, System
from ..errors import HpcoptError
from ..sim.driver import one_pass
from .state import Slurm, SlurmCommandError, Snapshot

FAR = 365 * 86400.0  # "no known end": unlimited time limits, unavailable nodes
ACTIVE = frozenset({"RUNNING", "COMPLETING", "SUSPENDED", "CONFIGURING", "STOPPED"})
STARTING = frozenset({"None", "Priority", "Resources"})  # pending reasons of a job about to start


@dataclass
class PassState:
    """One cycle's input to the pass, and what was set aside (as log notes)."""

    time: float
    system: System
    queue: list[Job]
    running: list[tuple[Job, float]]
    n_running: int = 0
    free: int = 0  # idle nodes left for the pass
    released_waiting: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def pass_state(snap: Snapshot, partition: str) -> PassState:
    """The driver-pass state of ``partition`` in ``snap`` (module docstring)."""
    nodes = [n for n in snap.nodes if partition in n.partitions]
    if not nodes:
        raise HpcoptError(f"partition {partition!r} has no nodes (sinfo lists "
                          f"{sorted({p for n in snap.nodes for p in n.partitions})})")
    names = {n.name for n in nodes}
    usable = {n.name for n in nodes if n.usable}
    idle = {n.name for n in nodes if n.idle}
    held = [j for j in snap.jobs if j.partition == partition and j.held]
    now = max([snap.time, *(j.submit for j in held)])
    state = PassState(now, System(len(nodes), name=partition), [], [])
    covered: set[str] = set()
    for j in snap.jobs:
        if j.state not in ACTIVE:
            continue
        state.n_running += j.partition == partition
        take = (set(j.node_names) & usable) - idle - covered
        if not take:
            continue
        covered |= take
        end = j.start + j.limit if j.limit is not None and j.start > 0 else now + FAR
        state.running.append((_job(j.id, j.submit, len(take)), end))
    busy = usable - idle - covered
    if busy:  # completing or held by a job the read did not show: free from now on
        state.running.append((_job(-1, now, len(busy)), now))
    down = names - usable
    if down:
        state.running.append((_job(-2, now, len(down)), now + FAR))
        state.notes.append(f"unavailable nodes: {','.join(sorted(down))}")
    free = len(idle)
    for j in sorted((j for j in snap.jobs if j.partition == partition
                     and j.state == "PENDING" and not j.held), key=lambda j: (j.submit, j.id)):
        state.released_waiting.append(j.id)
        if j.reason not in STARTING:  # waits for a dependency, a begin time, ...: no nodes
            state.notes.append(f"job {j.id} released, waiting: {j.reason}")
            continue
        take = min(j.nodes, free)  # released (or never held): Slurm starts it next
        if take:
            free -= take
            state.running.append((_job(j.id, j.submit, take), now + (j.limit or FAR)))
    state.free = free
    for j in held:
        if j.nodes > len(nodes):
            state.notes.append(f"job {j.id} asks {j.nodes} nodes, the partition has "
                               f"{len(nodes)}: left held")
            continue
        wall = j.limit if j.limit is not None else FAR
        state.queue.append(Job(j.id, j.submit, wall, wall, j.nodes))
    return state


def _job(jid: int, submit: float, nodes: int) -> Job:
    return Job(jid, submit, 0.0, 0.0, nodes)  # Simulator.at sets the remaining time


class Adapter:
    """``hpcopt slurm run``: one ``cycle()`` per interval (module docstring).

    ``policy`` is a policy object; ``options`` the driver's (``order``, ``backfill``,
    ``window``); ``log`` a text file taking one JSON line per cycle; ``say`` prints one
    human line per cycle that released something (or would, with ``dry_run``).
    """

    def __init__(self, policy, *, slurm: Slurm | None = None, partition: str = "batch",
                 dry_run: bool = False, log=None, say: Callable[[str], None] | None = None,
                 **options) -> None:
        self.policy = policy
        self.partition = partition
        self.dry_run = dry_run
        self.log = log
        self.say = say if say is not None else (lambda s: print(s, flush=True))
        self.options = {k: v for k, v in options.items() if v is not None}
        self._errors: list[str] = []
        self.slurm = slurm if slurm is not None else Slurm()
        self.slurm.on_error = self._errors.append
        self.cycles = 0

    def cycle(self) -> dict:
        """One read-decide-release cycle; returns its log record (also written to ``log``)."""
        self.cycles += 1
        self._errors.clear()
        rec: dict = {"time": round(time.time(), 3), "cycle": self.cycles,
                     "partition": self.partition, "dry_run": self.dry_run}
        try:
            snap = self.slurm.snapshot()
            state = pass_state(snap, self.partition)
        except SlurmCommandError as exc:
            rec.update(ok=False, error=str(exc), errors=list(self._errors))
            self._write(rec)
            self.say(f"cycle {self.cycles}: cannot read Slurm: {exc} (cycle skipped)")
            return rec
        rec.update(read_s=round(snap.read_s, 4), slurm=snap.version, pending=len(state.queue),
                   running=state.n_running, waiting_start=state.released_waiting,
                   free_nodes=state.free)
        c0 = time.perf_counter()
        try:
            outcome = one_pass(state.time, state.system, self.policy, state.queue,
                               state.running, **self.options)
        except HpcoptError as exc:  # the policy failed on this state: nothing is released
            rec.update(ok=False, error=f"policy: {exc}", errors=list(self._errors))
            self._write(rec)
            self.say(f"cycle {self.cycles}: the policy failed: {exc}")
            return rec
        rec["decide_s"] = round(time.perf_counter() - c0, 4)
        released, failed = [], []
        c0 = time.perf_counter()
        for job, mode in outcome.started:
            if not self.dry_run:
                try:
                    self.slurm.release(job.id)
                except SlurmCommandError as exc:
                    failed.append({"id": job.id, "error": str(exc)})
                    continue
            released.append({"id": job.id, "mode": mode, "nodes": job.nodes})
        rec["release_s"] = round(time.perf_counter() - c0, 4)
        rec.update(ok=True, released=[r["id"] for r in released],
                   released_nodes=sum(r["nodes"] for r in released),
                   backfilled=[r["id"] for r in released if r["mode"] == "backfilled"],
                   reserved=None if outcome.reserved is None else
                   {"id": outcome.reserved.id, "shadow": round(outcome.shadow, 3)},
                   release_failed=failed, notes=state.notes, errors=list(self._errors))
        self._write(rec)
        if released or failed:
            verb = "would release" if self.dry_run else "released"
            text = ", ".join(f"{r['id']}" + (" (backfilled)" if r["mode"] == "backfilled"
                                             else "") for r in released) or "nothing"
            if outcome.reserved is not None:
                text += (f"; reserved {outcome.reserved.id} at "
                         f"+{max(0.0, outcome.shadow - state.time):.0f} s")
            if failed:
                text += "; not released: " + ", ".join(str(f["id"]) for f in failed)
            self.say(f"cycle {self.cycles}: {verb} {text}")
        return rec

    def run(self, interval: float = 5.0, *, once: bool = False,
            release_on_exit: bool = False) -> int:
        """Cycle every ``interval`` seconds until interrupted (or once).  On SIGINT/SIGTERM
        (``KeyboardInterrupt``) the held jobs stay held, or with ``release_on_exit`` are all
        released to Slurm's own scheduler; the interrupt then goes on to the caller."""
        try:
            while True:
                t0 = time.monotonic()
                rec = self.cycle()
                if once:
                    return 0 if rec["ok"] else 1
                time.sleep(max(0.0, interval - (time.monotonic() - t0)))
        except KeyboardInterrupt:
            if release_on_exit and not self.dry_run:
                self.release_all()
            raise

    def release_all(self) -> list[int]:
        """Release every held job of the partition (``--release-on-exit``)."""
        try:
            jobs, _ = self.slurm.jobs()
        except SlurmCommandError as exc:
            self.say(f"cannot read Slurm to release the held jobs: {exc}")
            return []
        done = []
        for j in jobs:
            if j.partition == self.partition and j.held:
                try:
                    self.slurm.release(j.id)
                    done.append(j.id)
                except SlurmCommandError as exc:
                    self.say(f"job {j.id} not released: {exc}")
        self._write({"time": round(time.time(), 3), "event": "exit",
                     "released_on_exit": done})
        self.say(f"released {len(done)} held job(s) to Slurm's scheduler")
        return done

    def _write(self, rec: dict) -> None:
        if self.log is not None:
            self.log.write(json.dumps(rec) + "\n")
            self.log.flush()

