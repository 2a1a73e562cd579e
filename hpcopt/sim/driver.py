"""The event-driven rolling-horizon driver (a batch-scheduler simulator).

Events are job submissions and completions (at the job's actual, capped runtime), plus
optional periodic ticks.  At each event time the driver applies all completions, then all
submissions, then runs one scheduling pass (or, in periodic mode, a pass only at ticks).

A pass:

1. jobs forced by the starvation bound go first: each starts if it fits, else the first one
   that does not fit gets the reservation and the policy is skipped;
2. the policy sees a ``Window`` (the first W queued jobs in the base order) and answers a
   ``Decision``; the driver validates it (unknown job, duplicate, over-subscription are
   ``InvalidDecisionError``) and starts its jobs (mode ``ready``);
3. with EASY backfilling on and jobs left, one job gets a reservation (the decision's
   ``reserve``, else the first window job that did not start): walking the running jobs in
   order of estimated end (start + requested walltime), the shadow time is the estimated end
   at which it first fits, and the *extra* resources are what is free at that moment minus
   its own demand.  The rest of the queue is scanned in order: a job that fits now starts
   (mode ``backfilled``) if it ends by its walltime no later than the shadow time, or else if
   the very resources it takes now (nodes of each SSD class, burst buffer) are among the
   extra ones, which then shrink by them.

A job that held a reservation and later starts has mode ``reserved``.  The pass steps are
public methods (``window``, ``start``, ``reserve``, ``backfill``) so that learning
environments can drive one decision at a time.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from enum import Enum

from hpcopt.domain import Decision, Job, RunningJob, System, Window
from hpcopt.errors import InvalidDecisionError, SimulationError

from .orders import get_order
from .resources import make_pool

READY, RESERVED, BACKFILLED = "ready", "reserved", "backfilled"

# processing order of events that share a time stamp
_COMPLETE, _SUBMIT, _TICK = 0, 1, 2


class Event(str, Enum):
    """What subscribers can listen to; callbacks get ``(sim, event, payload)``."""

    SUBMIT = "submit"  # payload: Job
    START = "start"  # payload: JobRecord
    COMPLETE = "complete"  # payload: JobRecord
    RESERVE = "reserve"  # payload: (Job, shadow time)
    PASS = "pass"  # payload: time of the pass


class JobRecord:
    """The driver's mutable bookkeeping of one job."""

    __slots__ = ("job", "start", "end", "mode", "reserved_at", "passed", "allocation")

    def __init__(self, job: Job) -> None:
        self.job = job
        self.start = math.nan
        self.end = math.nan
        self.mode = ""
        self.reserved_at: float | None = None  # first shadow time this job was given
        self.passed = 0  # passes in which a job behind it started
        self.allocation = None


class Simulator:
    """Simulate ``jobs`` on ``system`` under a window ``policy``.

    Parameters
    ----------
    jobs : iterable of Job, with unique ids and sizes not above the system.
    system : System.
    policy : a policy object (``decide(window) -> Decision``), see ``hpcopt.policies``.
    order : base order ``fcfs``, ``sjf`` or ``wfp``; default the policy's own order or fcfs.
    backfill : ``"easy"`` or ``"none"``; default the policy's ``backfill`` attribute, else easy.
    window : W, the number of queued jobs the policy sees; ``None`` = the policy's default.
    starvation_bound : K; a job passed over K times is served first. ``None`` = the policy's
        ``starvation_bound`` attribute if it has one, else off.
    period : if set, passes happen only every ``period`` seconds (ticks), not at every event;
        default the policy's ``period`` attribute if it has one.
    progress : show a progress bar over completed jobs.
    """

    def __init__(
        self,
        jobs: Iterable[Job],
        system: System,
        policy,
        *,
        order: str | None = None,
        backfill: str | bool | None = None,
        window: int | None = None,
        starvation_bound: int | None = None,
        period: float | None = None,
        progress: bool = False,
    ) -> None:
        self.system = system
        self.policy = policy
        self.order_name = order or getattr(policy, "order", None) or "fcfs"
        self._key, self._static = get_order(self.order_name)
        if backfill is None:
            backfill = getattr(policy, "backfill", "easy")
        if backfill in (True, "easy"):
            self.backfilling = True
        elif backfill in (False, "none"):
            self.backfilling = False
        else:
            raise SimulationError(f"backfill must be 'easy' or 'none', got {backfill!r}")
        self.window_size = window if window is not None else getattr(policy, "window", None)
        if self.window_size is not None and self.window_size < 1:
            raise SimulationError(f"window must be >= 1, got {self.window_size}")
        if starvation_bound is None:
            starvation_bound = getattr(policy, "starvation_bound", None)
        if starvation_bound is not None and starvation_bound < 1:
            raise SimulationError(f"starvation bound must be >= 1, got {starvation_bound}")
        self.starvation_bound = starvation_bound
        if period is None:
            period = getattr(policy, "period", None)
        if period is not None and not period > 0:
            raise SimulationError(f"period must be > 0 seconds, got {period}")
        self.period = period
        self.progress = progress

        self.pool = make_pool(system)
        self._empty = make_pool(system)  # never touched: "can this job ever run here?"
        self.now = -math.inf
        self.records: dict[int, JobRecord] = {}
        self.queue: list[Job] = []  # waiting jobs (kept in order when the order is static)
        self._queue_keys: list = []  # sort keys of self.queue for static orders
        self._run_keys: list[tuple[float, int]] = []  # (estimated end, seq), sorted
        self._run_vals: list[RunningJob] = []  # running jobs in the same order
        self._events: list = []  # heap of (time, kind, seq, payload)
        self._seq = 0
        self._subscribers: dict[Event, list[Callable]] = defaultdict(list)
        self._n_done = 0

        trace = sorted(jobs, key=lambda j: (j.submit, j.id))
        for job in trace:
            self._register(job)
        self._trace = trace
        self._next_trace = 0

    # ------------------------------------------------------------------ public API
    def subscribe(self, event: Event | str, callback: Callable) -> None:
        """Call ``callback(sim, event, payload)`` whenever ``event`` happens."""
        self._subscribers[Event(event)].append(callback)

    def submit(self, job: Job) -> None:
        """Inject a job while the simulation runs (at or after the current time)."""
        if job.submit < self.now:
            raise SimulationError(
                f"job {job.id} injected with submit time {job.submit} before now ({self.now})"
            )
        self._register(job)
        self._push(job.submit, _SUBMIT, job)

    @property
    def running(self) -> Sequence[RunningJob]:
        """Running jobs in order of estimated end (read-only view)."""
        return self._run_vals

    def run(self) -> Simulator:
        """Run to completion: every job submitted, started and finished."""
        bar = None
        if self.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(self.records), unit="job", desc="simulate", mininterval=0.5)
        if self.period is not None and (self._trace or self._events):
            starts = [e[0] for e in self._events]
            if self._trace:
                starts.append(self._trace[0].submit)
            self._push(min(starts), _TICK, None)
        last = 0
        while self.advance():
            if self.period is None:
                self.schedule()
            if bar is not None and self._n_done - last >= 500:
                bar.update(self._n_done - last)
                last = self._n_done
        if bar is not None:
            bar.update(self._n_done - last)
            bar.close()
        if self.queue:
            raise SimulationError(
                f"policy {getattr(self.policy, 'name', self.policy)!r} left {len(self.queue)} "
                f"job(s) queued on a machine with nothing running (first: job {self.queue[0].id})"
            )
        return self

    def advance(self) -> bool:
        """Move to the next event time and apply its completions, submissions and ticks.

        Returns False when there is nothing left to happen.  In periodic mode the pass runs
        inside (at each tick); otherwise the caller runs ``schedule()`` after it.
        """
        t_trace = self._trace[self._next_trace].submit if self._next_trace < len(self._trace) \
            else math.inf
        t_event = self._events[0][0] if self._events else math.inf
        now = min(t_trace, t_event)
        if now == math.inf:
            return False
        self.now = now
        events = self._events
        tick = False
        while events and events[0][0] == now and events[0][1] == _COMPLETE:
            self._complete(heapq.heappop(events)[3])
        trace, i = self._trace, self._next_trace
        while i < len(trace) and trace[i].submit == now:
            self._enqueue(trace[i])
            i += 1
        self._next_trace = i
        while events and events[0][0] == now:
            _, kind, _, payload = heapq.heappop(events)
            if kind == _SUBMIT:
                self._enqueue(payload)
            elif kind == _TICK:
                tick = True
            else:  # a completion at this time added by a callback
                self._complete(payload)
        if tick:
            self.schedule()
            if self._pending():
                self._push(now + self.period, _TICK, None)
        return True

    def schedule(self) -> None:
        """One scheduling pass at the current time (see the module docstring)."""
        if not self.queue:
            return
        ordered = self.ordered_queue()
        started: set[int] = set()
        reserve: Job | None = None
        rest = ordered
        if self.starvation_bound is not None:
            reserve, rest = self._serve_starved(ordered, started)
        if reserve is None and rest:
            window = self.window(rest)
            decision = self.policy.decide(window)
            self.apply(decision, window.jobs, started)
            if self.backfilling and len(started) < len(ordered):
                reserve = self._reserve_candidate(decision, window.jobs, rest, started)
        if self.backfilling and reserve is not None:
            shadow, extra = self.reserve(reserve)
            self.backfill(ordered, reserve, shadow, extra, started)
        if started:
            self._drop_started(ordered, started)
        if self._subscribers.get(Event.PASS):
            self._emit(Event.PASS, self.now)

    def ordered_queue(self) -> list[Job]:
        """The waiting jobs in the base order at the current time."""
        if self._static:
            return self.queue
        now, key = self.now, self._key
        return sorted(self.queue, key=lambda j: key(j, now))

    def window(self, ordered: Sequence[Job]) -> Window:
        """The snapshot a policy sees: the first W of ``ordered``."""
        w = self.window_size
        return Window(
            time=self.now,
            jobs=ordered if w is None or w >= len(ordered) else ordered[:w],
            resources=self.pool.copy(),
            running=self._run_vals,
            system=self.system,
            queue_length=len(self.queue),
            passed=_PassedView(self.records),
        )

    def apply(self, decision: Decision, window_jobs: Sequence[Job], started: set[int]) -> None:
        """Validate a decision against the window and the free resources, then start it."""
        if not decision.start:
            return
        by_id = _lookup(decision.start, window_jobs)
        trial = self.pool.copy()
        chosen = []
        for jid in decision.start:
            job = by_id.get(jid)
            if job is None:
                raise InvalidDecisionError(
                    f"policy {getattr(self.policy, 'name', '?')!r} started job {jid!r}, "
                    "which is not in the window"
                )
            if jid in started:
                raise InvalidDecisionError(f"decision starts job {jid} twice")
            if not trial.fits(job):
                raise InvalidDecisionError(
                    f"decision over-subscribes the machine: job {jid} {trial.why_not(job)} "
                    f"(time {self.now})"
                )
            trial.take(job, decision.allocations.get(jid))
            started.add(jid)
            chosen.append(job)
        for job in chosen:
            self.start(job, READY, decision.allocations.get(job.id))

    def start(self, job: Job, mode: str, allocation=None) -> None:
        """Start a queued job now (the caller has checked that it fits)."""
        rec = self.records[job.id]
        rec.allocation = self.pool.take(job, allocation)
        rec.start = self.now
        rec.end = self.now + job.runtime
        rec.mode = RESERVED if (mode == READY and rec.reserved_at is not None) else mode
        est_end = self.now + job.walltime
        self._seq += 1
        key = (est_end, self._seq)
        pos = bisect_left(self._run_keys, key)
        self._run_keys.insert(pos, key)
        self._run_vals.insert(pos, RunningJob(job, self.now, est_end, rec.allocation))
        self._push(rec.end, _COMPLETE, (job, key))
        if self._subscribers.get(Event.START):
            self._emit(Event.START, rec)

    def reserve(self, job: Job):
        """EASY reservation for ``job``: ``(shadow time, extra resources)``.

        Walk running jobs by estimated end, releasing all that end at the same time together,
        until ``job`` fits; the extra state is what is free then, minus ``job``'s demand.
        """
        tmp = self.pool.copy()
        shadow = self.now
        keys, vals = self._run_keys, self._run_vals
        i, n = 0, len(vals)
        while not tmp.fits(job):
            if i == n:
                raise SimulationError(f"job {job.id} can never fit the system")
            shadow = keys[i][0]
            while i < n and keys[i][0] == shadow:
                tmp.give(vals[i].job, vals[i].allocation)
                i += 1
        tmp.take(job)
        rec = self.records[job.id]
        if rec.reserved_at is None:
            rec.reserved_at = shadow
        if self._subscribers.get(Event.RESERVE):
            self._emit(Event.RESERVE, (job, shadow))
        return shadow, tmp

    def backfill(self, ordered: Sequence[Job], reserved: Job, shadow: float, extra,
                 started: set[int]) -> None:
        """EASY scan of ``ordered`` around the reservation of ``reserved``."""
        pool, now = self.pool, self.now
        for job in ordered:
            if pool.free_nodes == 0:
                break
            if job.id in started or job is reserved or not pool.fits(job):
                continue
            alloc = None
            if now + job.walltime > shadow:
                # it will still run at the shadow time: the very resources it takes now
                # must be left over by the reserved job then
                alloc = pool.plan(job)
                if not extra.fits(job, alloc):
                    continue
                extra.take(job, alloc)
            started.add(job.id)
            self.start(job, BACKFILLED, alloc)

    # ------------------------------------------------------------------ internals
    def _register(self, job: Job) -> None:
        if job.id in self.records:
            raise SimulationError(f"duplicate job id {job.id!r}")
        if not self._empty.fits(job):
            raise SimulationError(f"job {job.id} can never run on this system: "
                                  f"it {self._empty.why_not(job)} on the empty machine")
        self.records[job.id] = JobRecord(job)

    def _push(self, time: float, kind: int, payload) -> None:
        self._seq += 1
        heapq.heappush(self._events, (time, kind, self._seq, payload))

    def _enqueue(self, job: Job) -> None:
        if self._static:
            key = self._key(job, self.now)
            pos = bisect_left(self._queue_keys, key)
            self._queue_keys.insert(pos, key)
            self.queue.insert(pos, job)
        else:
            self.queue.append(job)
        if self._subscribers.get(Event.SUBMIT):
            self._emit(Event.SUBMIT, job)

    def _complete(self, payload) -> None:
        job, key = payload
        pos = bisect_left(self._run_keys, key)
        del self._run_keys[pos]
        run = self._run_vals.pop(pos)
        self.pool.give(job, run.allocation)
        self._n_done += 1
        if self._subscribers.get(Event.COMPLETE):
            self._emit(Event.COMPLETE, self.records[job.id])

    def _pending(self) -> bool:
        return bool(self.queue or self._run_vals or self._next_trace < len(self._trace)
                    or any(e[1] != _TICK for e in self._events))

    def _serve_starved(self, ordered: list[Job], started: set[int]):
        """Start starved jobs first; the first one that does not fit is returned to reserve."""
        bound = self.starvation_bound
        records = self.records
        starved = [j for j in ordered if records[j.id].passed >= bound]
        for job in starved:
            if not self.pool.fits(job):
                return job, []
            started.add(job.id)
            self.start(job, READY)
        if not starved:
            return None, ordered
        return None, [j for j in ordered if j.id not in started]

    def _reserve_candidate(self, decision: Decision, window_jobs, rest, started) -> Job | None:
        if decision.reserve is not None:
            for job in window_jobs:
                if job.id == decision.reserve:
                    if job.id in started:
                        raise InvalidDecisionError(
                            f"decision reserves job {job.id}, which it also starts")
                    return job
            raise InvalidDecisionError(
                f"decision reserves job {decision.reserve!r}, which is not in the window")
        for job in window_jobs:
            if job.id not in started:
                return job
        for job in rest:
            if job.id not in started:
                return job
        return None

    def _drop_started(self, ordered: list[Job], started: set[int]) -> None:
        """Remove started jobs from the queue and count who was passed over."""
        if self.starvation_bound is not None:
            last = max(i for i, j in enumerate(ordered) if j.id in started)
            for job in ordered[:last]:
                if job.id not in started:
                    self.records[job.id].passed += 1
        if self._static:
            keep = [i for i, j in enumerate(self.queue) if j.id not in started]
            self._queue_keys = [self._queue_keys[i] for i in keep]
            self.queue = [self.queue[i] for i in keep]
        else:
            self.queue = [j for j in self.queue if j.id not in started]

    def _emit(self, event: Event, payload) -> None:
        for cb in list(self._subscribers[event]):
            cb(self, event, payload)


def _lookup(ids: Sequence[int], jobs: Sequence[Job]) -> dict[int, Job]:
    """Map the decided ids to window jobs; O(len(ids)) when they are a prefix (head-first)."""
    n = len(ids)
    if n <= len(jobs) and all(jobs[k].id == ids[k] for k in range(n)):
        return {jobs[k].id: jobs[k] for k in range(n)}
    return {j.id: j for j in jobs}


class _PassedView:
    """Read-only mapping job id -> times passed over (no copy per pass)."""

    __slots__ = ("_records",)

    def __init__(self, records: dict[int, JobRecord]) -> None:
        self._records = records

    def __getitem__(self, job_id: int) -> int:
        return self._records[job_id].passed

    def get(self, job_id: int, default: int = 0) -> int:
        rec = self._records.get(job_id)
        return default if rec is None else rec.passed
