"""The event-driven rolling-horizon driver (a batch-scheduler simulator).

This module is the event core and the decision pass.  The settings are resolved once into a
frozen ``DriverSettings`` (``hpcopt.sim.settings``); the EASY rule (reservation and
backfill, ``hpcopt.sim.easy``) and the one-pick stages (``hpcopt.sim.picks``) are strategies
that work through one ``PassContext`` (``hpcopt.sim.context``); the resource arithmetic is
the pool's own (``hpcopt.sim.resources``); the job modes, events and per-job records are
``hpcopt.sim.records``.

Events are job submissions and completions (at the job's actual, capped runtime), plus
optional periodic ticks and the passes a policy asks for at times of its own (``wake_at``:
Slurm's backfill every ``bf_interval``).  At each event time the driver applies all
completions, then all submissions, then runs one scheduling pass (or, in periodic mode, a
pass only at ticks).

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

A job that held a reservation and later starts has mode ``reserved``.  A job with
dependencies (``Job.deps``) joins the queue only when all of them have finished (Slurm's
``afterok``; its wait still counts from its submission).

**One-pick policies** (``policy.one_pick`` true: DRAS, Decima, later OSDEC) do not answer a
``Decision``; the same pass asks them for one job at a time (``policy.pick(request)``), with
the driver's own fit, reserve and backfill steps (Fan et al., IPDPS'21, section III-B):

* a job this policy reserved in an earlier pass starts first if it fits now, else the pass
  goes straight to the backfill stage around it;
* stage ``select``: the choices are the first W waiting jobs.  A picked job that fits starts
  now (``ready``) and the policy picks again.  The first pick that does not fit ends the
  stage: with ``reserve_rule="picked"`` that job is reserved, with ``"oldest"`` the first
  waiting job is (if the oldest fits it starts instead and the stage goes on).  The reserved
  job keeps its reservation over later passes until it starts.  With ``fit_only`` (Decima)
  only jobs that fit are legal and the stage ends when none does (no reservation);
* stage ``backfill`` (with backfilling on): the choices are the waiting jobs that may
  backfill around the reservation, by the same test as the EASY scan above
  (``backfill_candidates``), the first W of them; each pick starts (``backfilled``) until none
  is left or the policy answers ``None``.

``steps()`` is the one simulation loop, written as a generator: it yields a ``PickRequest``
whenever a one-pick policy must choose and takes the chosen job through ``send``; ``run()``
answers with ``policy.pick``, a gymnasium environment answers with an agent's action
(``hpcopt.sim.env.PickEnv``).  For a policy that answers one ``Decision`` per pass the
generator never yields.

**Cloud slots** (OSDEC, spec osdec.md): a system with a capacity profile
(``System.capacity``) gets a ``CapacityPool``: at every event time the usable capacity moves to
the profile's value, a job starts only within the free capacity ``max(0, capacity - used)``,
and running jobs are never stopped when the capacity shrinks below what they hold (that
overload is the model's violation, priced afterwards).  A job with ``earliest`` after its
submission is visible from its submission (``upcoming``, the future set) but joins the queue
only at ``earliest``; a queued job whose ``latest`` has passed (``latest < now``) is dropped:
removed from the queue, never started, its mode ``dropped`` (event ``drop``).  With a period
of one slot this is the online MDP of the cloud model (``hpcopt.osdec``); nothing else about
the loop changes.

Speed: a policy with ``waits_for_head`` (it starts nothing while the first queued job does
not fit: ``fcfs``, ``sjf``, ``baseline``) is not asked while the head does not fit (its
decision is empty and the head gets the reservation).  A policy class with ``starts_prefix``
(its ``decide`` is the head-first rule itself: the same four) is not asked at all: the pass
applies that rule (``resources.fitting_prefix``, which its ``decide`` calls too) to the
window, without building a ``Window`` or a ``Decision``.  The driver also skips re-deciding a
pass in which nothing was freed or started and new jobs only joined the tail of a static
order on interchangeable nodes: the decision (none), the reservation (the head, same shadow
time and extra nodes) and every earlier backfill rejection stand, so only the new jobs go
through the same backfill test (``backfill_candidates``).  Tests hold this to an
independent plain loop (``benchmarks/reference_easy.py``) and to passes without the skips.
"""

from __future__ import annotations

import gc
import math
import threading
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from heapq import heappop, heappush
from numbers import Real
from operator import attrgetter
from typing import Any

from hpcopt.domain import Decision, Job, RunningJob, System, Window
from hpcopt.errors import InvalidDecisionError, SimulationError

from .context import PassContext
from .easy import EasyBackfill
from .orders import STATIC_KEYS, bind_order
from .picks import OnePickPasses, PickRequest
from .protocol import policy_hooks
from .records import DROPPED, READY, REFUSED, RESERVED, Event, JobRecord
from .reservations import kept_out, reserved_pool
from .resources import CapacityProfile, make_pool
from .settings import DriverOptions, DriverSettings, driver_options

_GC_YOUNG = 100_000  # young-generation threshold of the collector during run()

# processing order of events that share a time stamp
_COMPLETE, _SUBMIT, _TICK, _RELEASE, _WAKE = 0, 1, 2, 3, 4  # release: a job's earliest
# start; wake: a pass a policy asked for (wake_at)


class Simulator:
    """Simulate ``jobs`` on ``system`` under a window ``policy``.

    Parameters
    ----------
    jobs : iterable of Job, with unique ids and sizes not above the system.
    system : System.
    policy : a policy object (``decide(window) -> Decision``), see ``hpcopt.policies``.
    options : the driver settings, a ``hpcopt.sim.settings.DriverOptions`` (the one place
        they are spelled; every simulation in the library is built this way), or the same
        settings as keywords (``Simulator(jobs, system, policy, backfill="easy")``), not both:
    order, backfill, window, starvation_bound, period, progress, launch_delay, limits : the
        driver settings: base order ``fcfs``,
        ``sjf``, ``wfp`` or ``priority`` (``hpcopt.sim.orders``); ``"easy"`` or ``"none"``;
        W, the queued jobs the policy sees; K, a job passed over K times is served first;
        passes only every ``period`` seconds (ticks); a progress bar over completed jobs;
        seconds between a start decision and the job's real start (a real resource
        manager's launch latency, ``hpcopt slurm run``'s cycle: the job takes its
        resources at the decision and runs, and is planned, from the decision plus the
        delay), or ``f(job) -> seconds`` for each start's own delay; the site's
        association and QOS limits (``hpcopt.sim.limits.SiteLimits``: each pass offers
        only the jobs they admit now, ``blocked`` lists the others); advance reservations
        and maintenance windows (``hpcopt.sim.reservations``: their nodes are kept from the
        jobs they do not admit, EASY's shadow respects them).  ``None`` leaves a
        setting to the policy's hooks.  They are resolved once into ``settings`` (a frozen
        ``DriverSettings``).

    A policy may define ``attach(sim)``: it is called once, first thing, so that it can
    prepare for the machine (a learned policy loads its checkpoint and sets its window) and
    subscribe to events.  Every hook the driver reads is declared, with its default, in
    ``hpcopt.sim.protocol.PolicyHooks``.  The EASY rule (``easy``) and the one-pick passes
    are strategies over one ``PassContext`` (``context``).
    """

    def __init__(
        self,
        jobs: Iterable[Job],
        system: System,
        policy,
        options: DriverOptions | None = None,
        **settings: Any,
    ) -> None:
        self.system = system
        self.policy = policy
        self._subscribers: dict[Event, list[Callable]] = defaultdict(list)
        attach = getattr(policy, "attach", None)  # the protocol: hpcopt.sim.protocol
        if attach is not None:
            attach(self)
        options = driver_options(options, settings)
        self.settings = settings = DriverSettings.resolve(
            policy, options, capacity=system.capacity is not None)
        self._key, self._static = bind_order(settings.order, self)
        # None: compare by self._key
        self._tail_key = STATIC_KEYS.get(settings.order) if self._static else None
        self._one_pick = settings.one_pick
        self._waits_for_head = settings.waits_for_head
        # the launch delay in force (Simulator.at places running jobs without it)
        self._delay, self._delay_of = settings.launch_delay, settings.delay_of
        self.pool = make_pool(system)
        self._capacity = hasattr(self.pool, "set_time")  # a time-varying capacity
        self._empty = make_pool(system)  # never touched: "can this job ever run here?"
        self._init_state()
        self._starts_prefix = self._prefix_rule()
        self._limits = settings.limits
        self._woken: set[float] = set()  # reservation ends a pass is due at
        if settings.reservations:
            who = settings.limits.who if settings.limits is not None else {}
            self.pool = reserved_pool(self.pool, settings.reservations, self,
                                      {jid: w.account for jid, w in who.items()})
        self.blocked: list[tuple[Job, str]] = []  # the last pass's jobs a limit blocked
        self._refusing = self._limits is not None and self._limits.refusing
        self._quiet_ok = (self._waits_for_head and self._static and settings.backfill
                          and self._limits is None
                          and settings.starvation_bound is None
                          and self.pool.counts_only and not self._one_pick)
        self._load(jobs)
        self.context = PassContext(self, settings, self.pool, self._run_keys, self._run_vals,
                                   self.records, self.start, self._begin_pass,
                                   self._serve_starved, self._finish_pass, self._subscribers)
        self.easy = EasyBackfill(self.context)
        self._picks = OnePickPasses(self.context, self.easy) if self._one_pick else None

    def _init_state(self) -> None:
        """The empty loop: no time yet, nothing queued, running or recorded."""
        self.upcoming: dict = {}  # id -> submitted job waiting for its earliest start
        self.dropped: list[Job] = []  # jobs whose latest start passed (in drop order)
        self.refused: list[tuple[Job, str]] = []  # submissions a limit refused (MaxSubmit)
        self._submitted: dict = {}  # limit key -> its jobs queued or running (MaxSubmit)
        self._spent: dict = {}  # limit key -> [node-min, cpu-min] its finished jobs used
        self._deadlines = False  # some job has a latest start: drops are checked
        self.now = -math.inf
        self.records: dict[int, JobRecord] = {}
        self.queue: list[Job] = []  # waiting jobs (kept in order when the order is static)
        # (estimated end, seq, nodes) of the running jobs, sorted; seq is unique, so the nodes
        # never decide the order: they are there for the reservation walk on a NodePool
        self._run_keys: list[tuple[float, int, int]] = []
        self._run_vals: list[RunningJob] = []  # running jobs in the same order
        self._events: list = []  # heap of (time, kind, seq, payload)
        self._seq = 0
        self._n_done = 0
        self.passes = 0  # scheduling passes run so far
        self._due = False  # a pass is due at the current time (set by advance)
        self._start_hook: Callable | None = None  # see on_start
        self._quiet = None  # (reserved, shadow, extra, queue length) after the last pass
        self._dirty = True  # freed, started or reordered since the last pass
        # dependencies (Job.deps): a submitted job joins the queue once they have all finished
        self._finished: set | None = None  # ids of finished jobs, kept once deps appear
        self._blocked: dict = {}  # job id -> (job, ids of deps still running or waiting)
        self._dependents: dict = defaultdict(list)  # dep id -> ids of blocked jobs

    def _load(self, jobs: Iterable[Job]) -> None:
        """Record the trace's jobs (in submit order), checked: unique ids, each fits the
        empty machine, dependencies on known jobs."""
        trace = sorted(jobs, key=_by_submit_id)
        enabled = gc.isenabled()
        gc.disable()  # one record per job, no cycles: nothing for the collector (see run)
        try:
            records = dict(zip(map(_job_id, trace), map(JobRecord, trace)))
        finally:
            if enabled:
                gc.enable()
        if len(records) == len(trace) and self._empty.each_fits(trace):
            self.records = records
        else:
            for job in trace:  # raises on the first duplicate id or job too large
                self._register(job)
        self._trace = trace
        self._n_trace = len(trace)
        self._next_trace = 0
        self._passed_view = _PassedView(self.records)
        for job in trace:
            if job.deps:
                self._check_deps(job)

    # the resolved settings under their long-standing names (read-only)
    order_name = property(lambda self: self.settings.order, doc="The base order.")
    backfilling = property(lambda self: self.settings.backfill, doc="EASY backfilling on.")
    window_size = property(lambda self: self.settings.window, doc="W (None: all).")
    starvation_bound = property(lambda self: self.settings.starvation_bound,
                                doc="K (None: off).")
    period = property(lambda self: self.settings.period, doc="Seconds between passes.")
    progress = property(lambda self: self.settings.progress, doc="A progress bar.")
    reserve_rule = property(lambda self: self.settings.reserve_rule,
                            doc="One-pick: the job reserved when a pick does not fit.")

    @property
    def launch_delay(self) -> float:
        """Seconds from a start decision to the real start (``settings.launch_delay``)."""
        return self.settings.launch_delay

    def _prefix_rule(self) -> bool:
        """Whether passes apply the head-first rule for the policy (module docstring, "Speed";
        the ``starts_prefix`` hook of ``hpcopt.sim.protocol``)."""
        return policy_hooks(self.policy).starts_prefix and not self._one_pick

    @classmethod
    def at(cls, time: float, system: System, policy, queue: Sequence[Job],
           running: Sequence[tuple[Job, float]] = (), *, passed: dict | None = None,
           upcoming: Sequence[Job] = (), ends: Mapping | None = None,
           **options) -> Simulator:
        """A simulator in a given state, to decide one window (embedding, ``hpcopt decide``).

        ``queue`` are the waiting jobs (the base order sorts them); ``running`` pairs a job
        with its estimated end (start + requested walltime), optionally with its allocation
        as a third item (the node ids it holds on a topology; otherwise the allocation is the
        one ``take`` makes, so on SSD classes the smallest nodes that fit); ``passed`` maps job
        ids to the times they were passed over (for a starvation bound); ``upcoming`` are
        submitted jobs whose ``earliest`` start is still to come (the future set of cloud
        slots).  ``ends`` maps running job ids to the times they really end (predicted, in a
        forecast: ``hpcopt.sim.forecast``); each is kept within ``time`` and the estimated end,
        and a running job not in it ends at its estimated end.  ``options`` are the
        constructor's.  Then ``schedule()`` is the pass the driver would run at ``time``, and
        ``run()`` runs on from there.  The given jobs' dependencies count as met: they are
        queued or running already.
        """
        sim = cls((), system, policy, **options)
        sim._refusing = False  # the given jobs were all accepted already
        sim.now = float(time)
        if sim._capacity:  # running jobs are never stopped: they may exceed the capacity now
            sim.pool.capacity = sim.pool.total
        for job in upcoming:
            if job.submit > sim.now or job.earliest is None or job.earliest <= sim.now:
                raise SimulationError(f"upcoming job {job.id}: expected submit <= {sim.now:g} "
                                      f"< earliest, got submit {job.submit:g}, earliest "
                                      f"{job.earliest}")
            sim.upcoming[job.id] = job
        # the running ones started already: no delay for them
        delay, delay_of = sim._delay, sim._delay_of
        sim._delay, sim._delay_of = 0.0, None
        for job, est_end, *allocation in running:
            remaining = max(0.0, float(est_end) - sim.now)
            end = est_end if ends is None else ends.get(job.id, est_end)
            job = replace(job, runtime=min(remaining, max(0.0, float(end) - sim.now)),
                          walltime=remaining, deps=())
            sim._register(job)
            sim.start(job, READY, allocation[0] if allocation else None)
        sim._delay, sim._delay_of = delay, delay_of
        if sim._capacity:
            sim.pool.set_time(sim.now)
        for job in queue:
            if job.submit > sim.now:
                raise SimulationError(f"queued job {job.id} submitted at {job.submit}, after "
                                      f"the decision time {sim.now}")
            job = replace(job, deps=()) if job.deps else job
            sim._register(job)
            sim._enqueue(job)
            if passed:
                sim.records[job.id].passed = int(passed.get(job.id, 0))
        return sim

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
        if job.deps:
            self._check_deps(job)
        self._push(job.submit, _SUBMIT, job)

    def wake_at(self, time: float) -> None:
        """A scheduling pass at ``time`` (not before now) even when no job event falls then:
        for a policy whose passes also run on timers of its own (Slurm's backfill every
        ``bf_interval``, a delayed batch pass).  Several calls for one time make one pass."""
        if not time >= self.now:
            raise SimulationError(f"wake_at({time!r}): expected a time >= now ({self.now})")
        self._push(float(time), _WAKE, None)

    @property
    def next_event_time(self) -> float:
        """The time of the next event (a submission, completion, tick or release); ``inf``
        when nothing is left to happen.  The state stays as it is until then."""
        events, i = self._events, self._next_trace
        t = events[0][0] if events else math.inf
        return min(t, self._trace[i].submit) if i < self._n_trace else t

    @property
    def running(self) -> Sequence[RunningJob]:
        """Running jobs in order of estimated end (read-only view)."""
        return self._run_vals

    def run(self) -> Simulator:
        """Run to completion: every job submitted, started and finished.

        While it runs, the cyclic garbage collector waits for 100,000 new objects between
        young collections instead of 700 (restored afterwards): a long run creates several
        objects per job and holds every job's record, and the frequent young and full
        collections over them cost about 5% of the run; nothing is left uncollected."""
        with fewer_collections():
            self._answer(self.steps())
        return self

    def _answer(self, requests: Iterator[PickRequest]) -> None:
        """Run ``requests`` (``steps()`` or one pass) to its end, answering each request with
        ``policy.pick``; a ``Decision`` policy's generator yields nothing."""
        try:
            request = next(requests)
            while True:
                request = requests.send(self.policy.pick(request))
        except StopIteration:
            pass

    def run_until(self, predicate: Callable[[Simulator], bool]) -> bool:
        """Run the loop until ``predicate(sim)`` holds after an event time's pass (or before
        the first event, when it holds already); returns whether it did (False: everything
        finished first, as ``run()`` would).  The same loop as ``run()``: a later
        ``run_until`` or ``run()`` goes on from there.  What-if questions ask it of a
        ``copy.deepcopy`` of a running simulator (when does this job start if submitted
        now?) without touching the original."""
        if predicate(self):
            return True
        with fewer_collections():
            self._answer(self.steps(until=predicate))
        return predicate(self)

    def steps(self, until: Callable[[Simulator], bool] | None = None
              ) -> Iterator[PickRequest]:
        """The simulation loop (see the module docstring): yields a ``PickRequest`` whenever
        a one-pick policy must choose; ``send`` it the chosen job, or ``None`` to stop the
        current stage.  Ends when every job has finished, or as soon as ``until(sim)`` holds
        after an event time (``run_until``)."""
        bar = None
        settings = self.settings
        if settings.progress and until is None:
            from tqdm.auto import tqdm  # only with a progress bar (tens of ms to import)

            bar = tqdm(total=len(self.records), unit="job", desc="simulate", mininterval=0.5,
                       disable=None)  # off where stderr is not a terminal: no fragments
        period = settings.period
        if period is not None and (self._trace or self._events) and not any(
                e[1] == _TICK for e in self._events):  # (a resumed loop has its tick)
            starts = [e[0] for e in self._events]
            if self._trace:
                starts.append(self._trace[0].submit)
            self._push(min(starts), _TICK, None)
        last = 0
        picks = self._picks
        self._starts_prefix = self._prefix_rule()  # again: decide() may have been patched
        advance, schedule = self.advance, self.schedule
        while advance():
            if self._due:
                if picks is not None:
                    yield from picks.run()
                elif self.queue:  # (a pass over an empty queue does nothing)
                    schedule()
                if period is not None and self._pending():
                    self._push(self.now + period, _TICK, None)
            if bar is not None and self._n_done - last >= 500:
                bar.total = len(self.records)  # jobs injected while it runs count too
                bar.update(self._n_done - last)
                last = self._n_done
            if until is not None and until(self):
                return
        if bar is not None:
            bar.total = len(self.records)
            bar.update(self._n_done - last)
            bar.close()
        if self.queue and self.blocked:
            job, why = self.blocked[0]
            raise SimulationError(f"{len(self.queue)} job(s) can never start under the site's "
                                  f"limits (first: job {job.id}, {why})")
        if self.queue:
            raise SimulationError(
                f"policy {getattr(self.policy, 'name', self.policy)!r} left {len(self.queue)} "
                f"job(s) queued on a machine with nothing running (first: job {self.queue[0].id})"
            )
        if self._blocked:
            jid, (job, waiting) = next(iter(self._blocked.items()))
            raise SimulationError(f"{len(self._blocked)} job(s) wait on dependencies that never "
                                  f"finish (first: job {jid} waits on {sorted(map(str, waiting))})")
        if self._subscribers.get(Event.END):
            self._emit(Event.END, None)

    def advance(self) -> bool:
        """Move to the next event time and apply its completions, submissions and ticks.

        Returns False when there is nothing left to happen.  Afterwards ``pass_due`` says
        whether a scheduling pass is due now (always, unless passes are periodic).
        """
        events = self._events
        trace, i = self._trace, self._next_trace
        if i < self._n_trace:
            now = trace[i].submit
            if events and events[0][0] < now:
                now = events[0][0]
        elif events:
            now = events[0][0]
        else:
            return False
        self.now = now
        if self._capacity:
            self.pool.set_time(now)
        tick = False
        if events and events[0][0] == now:
            complete = self._complete
            while events and events[0][0] == now and events[0][1] == _COMPLETE:
                complete(heappop(events)[3])
        n = self._n_trace
        if i < n and trace[i].submit == now:
            # a plain job (no deadline, earliest start or dependencies) that sorts after the
            # tail joins it here; anything else goes through _enqueue (the same rules)
            queue, key_of = self.queue, self._tail_key
            plain = key_of is not None and not self._refusing and not (
                self._subscribers and self._subscribers.get(Event.SUBMIT))
            while i < n:
                job = trace[i]
                if job.submit != now:
                    break
                i += 1
                if plain and job.latest is None and job.earliest is None and not job.deps \
                        and (not queue or key_of(queue[-1]) < key_of(job)):
                    queue.append(job)
                else:
                    self._enqueue(job)
                    queue = self.queue
            self._next_trace = i
        while events and events[0][0] == now:
            _, kind, _, payload = heappop(events)
            if kind == _SUBMIT:
                self._enqueue(payload)
            elif kind in (_TICK, _WAKE):
                tick = True
            elif kind == _RELEASE:
                del self.upcoming[payload.id]
                self._admit(payload)
            else:  # a completion at this time added by a callback
                self._complete(payload)
        if self._deadlines:
            self._drop_late()
        self._due = tick or self.settings.period is None
        return True

    @property
    def pass_due(self) -> bool:
        """Whether the last ``advance`` made a scheduling pass due."""
        return self._due

    def schedule(self) -> None:
        """One scheduling pass at the current time (see the module docstring).

        For a one-pick policy the pass asks ``policy.pick`` for its choices."""
        if self._picks is not None:
            self._answer(self._picks.run())
            return
        queue = self.queue
        if not queue:
            return
        if self._quiet is not None and not self._dirty:
            self._quiet_pass()
            return
        self.passes += 1
        ordered = queue if self._static else self.ordered_queue()
        if self._limits is not None:
            ordered = self._admitted(ordered)
        if self.settings.reservations:
            self._wake_at_reservation_ends()
        started: set[int] = set()
        reserve: Job | None = None
        shadow = extra = None
        rest = ordered
        settings = self.settings
        if settings.starvation_bound is not None:
            reserve = self._serve_starved(ordered, started)
            if reserve is not None:
                rest = []
            elif started:
                rest = [j for j in ordered if j.id not in started]
        if reserve is None and rest:
            head = rest[0]
            pool = self.pool
            if self._waits_for_head and not pool.fits(head):
                reserve = head  # the policy starts nothing: its reservation is the head
            elif self._starts_prefix:  # its decision: the window's longest prefix that fits
                w = settings.window
                jobs = rest if w is None or w >= len(rest) else rest[:w]
                k = pool.fitting_prefix(jobs, take=False)
                self._start_ready(jobs[:k], started)
                if settings.backfill and k < len(rest):
                    reserve = rest[k]  # the first window job that did not start
            else:
                window = self.window(rest)
                decision = self.policy.decide(window)
                self.apply(decision, window.jobs, started)
                if settings.backfill and len(started) < len(ordered):
                    reserve = self._reserve_candidate(decision, window.jobs, rest, started)
        if reserve is not None and settings.backfill:
            easy = self.easy
            shadow, extra = easy.reserve(reserve)
            easy.backfill(ordered, reserve, shadow, extra, started)
        if started:
            self._drop_started(ordered, started)
        if self._quiet_ok:
            queue = self.queue
            self._quiet = (reserve, shadow, extra, len(queue)) \
                if reserve is not None and queue and queue[0] is reserve else None
            self._dirty = False
        if self._subscribers and self._subscribers.get(Event.PASS):
            self._emit(Event.PASS, self.now)

    def _quiet_pass(self) -> None:
        """A pass in which nothing was freed or started since the last one and new jobs only
        joined the tail (module docstring, "Speed"): only they are tested for backfilling."""
        self.passes += 1
        reserved, shadow, extra, seen = self._quiet
        subs = self._subscribers
        if subs and subs.get(Event.RESERVE):
            self._emit(Event.RESERVE, (reserved, shadow))
        queue = self.queue
        if len(queue) > seen and self.pool.free:  # (counts_only: see _quiet_ok)
            started: set[int] = set()
            self.easy.backfill(queue[seen:], reserved, shadow, extra, started)
            if started:
                queue[seen:] = [j for j in queue[seen:] if j.id not in started]
        self._quiet = (reserved, shadow, extra, len(queue))
        self._dirty = False
        if subs and subs.get(Event.PASS):
            self._emit(Event.PASS, self.now)

    def ordered_queue(self) -> list[Job]:
        """The waiting jobs in the base order at the current time."""
        if self._static:
            return self.queue
        now, key = self.now, self._key
        return sorted(self.queue, key=lambda j: key(j, now))

    def window(self, ordered: Sequence[Job]) -> Window:
        """The snapshot a policy sees: the first W of ``ordered``."""
        w = self.settings.window
        # time, jobs, resources, running, system, queue_length, passed (positional: cheaper)
        return Window(self.now, ordered if w is None or w >= len(ordered) else ordered[:w],
                      self.pool.copy(), self._run_vals, self.system, len(self.queue),
                      self._passed_view)

    def apply(self, decision: Decision, window_jobs: Sequence[Job], started: set[int]) -> None:
        """Validate a decision against the window and the free resources, then start it."""
        ids = decision.start
        if not ids:
            return
        n = len(ids)
        if not started and not decision.allocations and n <= len(window_jobs):
            # a prefix of the window that fits together (head first; window jobs have
            # distinct ids, so no job starts twice): the checks below, in one call
            chosen = window_jobs[:n]
            if all(map(_is_id, chosen, ids)) and self.pool.fitting_prefix(chosen, False) == n:
                self._start_ready(chosen, started)
                return
        by_id = _lookup(ids, window_jobs)
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
                if kept_out(trial, job):
                    continue  # a reservation keeps it out now: it stays queued
                raise InvalidDecisionError(
                    f"decision over-subscribes the machine: job {jid} {trial.why_not(job)} "
                    f"(time {self.now})"
                )
            trial.take(job, decision.allocations.get(jid))
            started.add(jid)
            chosen.append(job)
        for job in chosen:
            self.start(job, READY, decision.allocations.get(job.id))

    def _start_ready(self, jobs: Sequence[Job], started: set[int]) -> None:
        """Start ``jobs`` (checked to fit together) in mode ``ready``."""
        start = self.start
        for job in jobs:
            started.add(job.id)
            start(job, READY)

    def on_start(self, hook: Callable | None) -> None:
        """``hook(sim, job)`` runs as each job starts and may return the job to start instead:
        the same id and size with a runtime known only then (a workflow stage that holds its
        allocation until its predecessor ends).  ``None`` removes the hook."""
        self._start_hook = hook

    def _drawn_delay(self, job: Job) -> float:
        """The callable launch delay of ``job``'s start, checked."""
        d = self._delay_of(job)
        if isinstance(d, bool) or not (isinstance(d, Real) and math.isfinite(d) and d >= 0):
            raise SimulationError(f"launch delay of job {job.id}: expected seconds >= 0, "
                                  f"got {d!r}")
        return float(d)

    def start(self, job: Job, mode: str, allocation=None) -> None:
        """Start a queued job now (the caller has checked that it fits)."""
        hook = self._start_hook
        if hook is not None:
            new = hook(self, job)
            if new is not None and new is not job:
                if (new.id, new.nodes, new.bb, new.ssd) != (job.id, job.nodes, job.bb, job.ssd):
                    raise SimulationError(f"start hook changed job {job.id}'s id or size")
                self.records[job.id].job = new
                job = new
        rec = self.records[job.id]
        now = self.now + (self._delay if self._delay_of is None
                          else self._drawn_delay(job))  # it runs from then
        rec.allocation = alloc = self.pool.take(job, allocation)
        rec.start = now
        rec.end = end = now + job.runtime
        rec.mode = RESERVED if (mode == READY and rec.reserved_at is not None) else mode
        self._dirty = True
        est_end = now + job.walltime
        # one sequence number orders both the running list and the event heap (creation order)
        self._seq = seq = self._seq + 1
        key = (est_end, seq, job.nodes)
        keys = self._run_keys
        if not keys or keys[-1] < key:
            keys.append(key)
            self._run_vals.append(RunningJob(job, now, est_end, alloc))
        else:
            pos = bisect_left(keys, key)
            keys.insert(pos, key)
            self._run_vals.insert(pos, RunningJob(job, now, est_end, alloc))
        heappush(self._events, (end, _COMPLETE, seq, (job, key)))
        if self._subscribers and self._subscribers.get(Event.START):
            self._emit(Event.START, rec)

    # ------------------------------------------------------------------ internals
    def _check_deps(self, job: Job) -> None:
        if self._finished is None:  # from now on completions are remembered
            self._finished = {jid for jid, r in self.records.items()
                              if r.end <= self.now and r.start == r.start}
        for dep in job.deps:
            if dep not in self.records:
                raise SimulationError(f"job {job.id} depends on job {dep!r}, which is not in "
                                      "the simulation")
            if dep == job.id:
                raise SimulationError(f"job {job.id} depends on itself")

    def _register(self, job: Job) -> None:
        if job.id in self.records:
            raise SimulationError(f"duplicate job id {job.id!r}")
        if not self._empty.fits(job):
            raise SimulationError(f"job {job.id} can never run on this system: "
                                  f"it {self._empty.why_not(job)} on the empty machine")
        self.records[job.id] = JobRecord(job)

    def _push(self, time: float, kind: int, payload) -> None:
        self._seq += 1
        heappush(self._events, (time, kind, self._seq, payload))

    def _enqueue(self, job: Job) -> None:
        if self._refusing and self._refused(job):
            return
        if job.latest is None and job.earliest is None and not job.deps:
            self._queue(job)  # the common case: straight into the queue
        else:
            if job.latest is not None:
                self._deadlines = True
            if job.earliest is not None and job.earliest > self.now:
                self.upcoming[job.id] = job  # visible now, startable from its earliest start
                self._push(job.earliest, _RELEASE, job)
            else:
                self._admit(job)
        if self._subscribers and self._subscribers.get(Event.SUBMIT):
            self._emit(Event.SUBMIT, job)

    def _refused(self, job: Job) -> bool:
        """A submission over a ``MaxSubmitJobs`` cap: the job is refused (never runs, mode
        ``refused``, in ``refused``); else it counts as submitted until it ends."""
        why = self._limits.refusal(job, self._submitted)
        if why is not None:
            self.records[job.id].mode = REFUSED
            self.refused.append((job, why))
            self._n_done += 1
            return True
        for key, _, _ in self._limits.caps(job):
            self._submitted[key] = self._submitted.get(key, 0) + 1
        return False

    def _leaves(self, job: Job, seconds: float) -> None:
        """``job`` ended after ``seconds`` running (or left the queue unstarted): what it
        held against the limits is given back, what it used is charged."""
        if self._refusing:
            for key, _, _ in self._limits.caps(job):
                self._submitted[key] -= 1
        if seconds > 0 and self._limits.charging:
            self._limits.charge(self._spent, job, seconds)

    def _admit(self, job: Job) -> None:
        """A submitted job may start from now on: it joins the queue, or waits for its
        dependencies out of it."""
        if job.deps and job.id not in self._blocked:
            waiting = {d for d in job.deps if d not in self._finished}
            if waiting:  # it waits out of the queue (Slurm's "Dependency" reason)
                self._blocked[job.id] = (job, waiting)
                for dep in waiting:
                    self._dependents[dep].append(job.id)
                return
        self._queue(job)

    def _drop_late(self) -> None:
        """Drop the queued jobs whose latest start has passed (module docstring)."""
        now = self.now
        late = {j.id for j in self.queue if j.latest is not None and j.latest < now}
        if not late:
            return
        gone = [j for j in self.queue if j.id in late]
        self.queue = [j for j in self.queue if j.id not in late]
        self._dirty = True
        for job in gone:
            rec = self.records[job.id]
            rec.mode = DROPPED
            self.dropped.append(job)
            if self._limits is not None:
                self._leaves(job, 0.0)
            self._n_done += 1
            if self._subscribers.get(Event.DROP):
                self._emit(Event.DROP, rec)

    def _queue(self, job: Job) -> None:
        queue = self.queue
        if self._static and queue:
            key_of, now = self._key, self.now
            key = key_of(job, now)
            if not key_of(queue[-1], now) < key:  # not at the tail (keys are unique: ids)
                queue.insert(bisect_left(queue, key, key=lambda j: key_of(j, now)), job)
                self._dirty = True  # the head may have changed
                return
        queue.append(job)  # the common case: it joins the tail

    def _complete(self, payload) -> None:
        job, key = payload
        keys = self._run_keys
        pos = bisect_left(keys, key)
        del keys[pos]
        run = self._run_vals.pop(pos)
        self.pool.give(job, run.allocation)
        self._dirty = True
        if self._limits is not None:
            self._leaves(job, self.now - run.start)
        if self._finished is not None:
            self._release(job.id)
        self._n_done += 1
        if self._subscribers and self._subscribers.get(Event.COMPLETE):
            self._emit(Event.COMPLETE, self.records[job.id])

    def _release(self, job_id) -> None:
        """``job_id`` finished: queue the blocked jobs it was the last dependency of."""
        self._finished.add(job_id)
        for jid in self._dependents.pop(job_id, ()):
            job, waiting = self._blocked[jid]
            waiting.discard(job_id)
            if not waiting:
                del self._blocked[jid]
                self._queue(job)

    def _pending(self) -> bool:
        """Whether another tick may find something new.  With nothing running and no event
        to come, waiting jobs change only through time: a capacity profile, or a job's
        latest start passing (it is dropped).  Otherwise the ticks stop, as passes do when no
        event is left, and a policy that leaves jobs queued on an idle machine gets the run's
        error instead of ticking forever."""
        if self._run_vals or self._next_trace < self._n_trace \
                or any(e[1] != _TICK for e in self._events):
            return True
        if not self.queue:
            return False
        if self._capacity:
            prof = self.pool.profile  # a step function changes no more after its last step
            if not isinstance(prof, CapacityProfile) \
                    or self.now < prof.start + (len(prof.values) - 1) * prof.period:
                return True
        return any(j.latest is not None for j in self.queue)

    def _serve_starved(self, ordered: list[Job], started: set[int]) -> Job | None:
        """Start starved jobs first (they join ``started``); the first one that does not fit
        is returned, to be reserved."""
        bound = self.settings.starvation_bound
        records = self.records
        for job in [j for j in ordered if records[j.id].passed >= bound]:
            if not self.pool.fits(job):
                return job
            started.add(job.id)
            self.start(job, READY)
        return None

    def _begin_pass(self) -> list[Job] | None:
        """Open a pass: count it; the queue in the base order (``None`` when empty)."""
        if not self.queue:
            return None
        self.passes += 1
        ordered = self.ordered_queue()
        return ordered if self._limits is None else self._admitted(ordered)

    def _wake_at_reservation_ends(self) -> None:
        """A pass at the end of each reservation to come (jobs it kept out may start then,
        with no job event at that time)."""
        for r in self.settings.reservations:
            if r.end > self.now and r.end not in self._woken:
                self._woken.add(r.end)
                self.wake_at(r.end)

    def _admitted(self, ordered: list[Job]) -> list[Job]:
        """The jobs of ``ordered`` the site's limits admit now (``hpcopt.sim.limits``); the
        others are ``blocked`` for this pass.  A policy that checks the limits itself
        (``checks_limits``) is offered them all."""
        kept, self.blocked = self._limits.admissible(
            ordered, ((r.job, r.start) for r in self._run_vals), self.now, self._spent)
        return ordered if self.settings.checks_limits else kept

    def limit_usage(self):
        """What the running jobs hold against the site's limits now (a
        ``hpcopt.sim.limits.LimitUsage``, for a policy that ``checks_limits``); ``None``
        without limits."""
        if self._limits is None:
            return None
        return self._limits.usage(((r.job, r.start) for r in self._run_vals), self.now,
                                  self._spent)

    def _finish_pass(self, ordered: list[Job], started: set[int]) -> None:
        """Close a pass: started jobs leave the queue, the ``pass`` event is announced."""
        if started:
            self._drop_started(ordered, started)
        if self._subscribers.get(Event.PASS):
            self._emit(Event.PASS, self.now)

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
        if self.settings.starvation_bound is not None:
            last = max(i for i, j in enumerate(ordered) if j.id in started)
            for job in ordered[:last]:
                if job.id not in started:
                    self.records[job.id].passed += 1
        queue, k = self.queue, len(started)
        prefix = k <= len(queue)
        if prefix:
            for i in range(k):
                if queue[i].id not in started:
                    prefix = False
                    break
        if prefix:
            self.queue = queue[k:]  # a prefix started (head first): a new list, C speed
        else:
            self.queue = [j for j in queue if j.id not in started]

    def _emit(self, event: Event, payload) -> None:
        for cb in list(self._subscribers[event]):
            cb(self, event, payload)


_by_submit_id = attrgetter("submit", "id")


def _is_id(job: Job, jid) -> bool:
    return job.id == jid


_GC_LOCK = threading.Lock()
_GC_SAVED: list = []  # [thresholds before the outermost block, blocks open]


@contextmanager
def fewer_collections():
    """The cyclic garbage collector waits for ``_GC_YOUNG`` new objects between young
    collections instead of (by default) 700 inside the block; the thresholds are restored
    when the last open block exits (``Simulator.run``, ``hpcopt.simulate``; blocks may nest
    and overlap across threads)."""
    with _GC_LOCK:
        if not _GC_SAVED:
            threshold = gc.get_threshold()
            _GC_SAVED[:] = [threshold, 0]
            gc.set_threshold(max(threshold[0], _GC_YOUNG), *threshold[1:])
        _GC_SAVED[1] += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC_SAVED[1] -= 1
            if not _GC_SAVED[1]:
                gc.set_threshold(*_GC_SAVED[0])
                _GC_SAVED.clear()

_job_id = attrgetter("id")


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
