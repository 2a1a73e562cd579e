"""Slurm alone: its main scheduler and ``sched/backfill`` as a policy of the one loop.

``--policy slurm`` schedules the way a Slurm controller configured by a ``slurm.conf``
(``hpcopt.sim.slurmconf``) does, so that hpcopt's policies can be compared with Slurm on
equal terms in simulation.  What is modelled (docs/slurm-model.md has the table):

* **Priority**: ``priority/basic`` (first come first served) or ``priority/multifactor``
  with its age and job-size factors (the other factors are not modelled), set at a job's
  submission and recomputed every ``PriorityCalcPeriod``.
* **At submission** a job starts at once when no pending job has a higher priority and it
  fits, and a main pass runs at each job end: stand-ins for the next pass Slurm runs then
  (it never starts a batch job at submission, and an end only asks for a timed main pass,
  so with backfill every second a backfill pass starts most jobs within a second; the
  launch latency covers that second: docs/slurm-model.md).
* **Main scheduler** passes run at each job end, ``batch_sched_delay`` seconds after the
  last timed pass for newly submitted jobs, and every ``sched_interval``: jobs in priority
  order (at most ``default_queue_depth``) start while they fit; the first one that does
  not fit ends the pass (one partition); a job whose licenses are taken is passed over, or
  ends the pass under ``bf_licenses``.
* **Backfill** (``sched/backfill``) passes run at most every ``bf_interval`` seconds while
  something changed, a pass that planned a job being a change itself: every job tested
  (at most ``bf_max_job_test``, priority order) gets a start around the reservations made
  for the jobs tested before it (a conservative plan on a time map of whole nodes).  The
  running jobs are seen through the node selection's will-run test, which frees them in
  groups on 30-s windows of the wall clock (``_WillRunTest``), with backfill's tests
  again from later times (``later_start``, ``_test_resv_overlap``) and, on whole nodes,
  the jobs the pass starts held in the plan; with ``bf_running_job_reserve`` the running
  jobs are reservations of the plan too, to their ends on its grid.  A job
  that can start now starts, any other gets a reservation from its start rounded down to
  ``bf_resolution`` to its end rounded up (from Slurm 24.11; down before:
  ``slurm_version``), unless it starts beyond ``bf_window`` or
  ``bf_job_part_count_reserve`` reservations are made already (then only a start now is
  tested).  Licenses enter the plan with ``bf_licenses``; without it a job whose licenses
  are taken now is not tested.  On a partition that shares nodes core by core, jobs are
  sized in cores and a reservation takes the whole nodes of the cores it plans.
* Time limits are whole minutes (rounded up), as Slurm stores them; a launch latency
  (``launch_latency``) delays every start (the driver's ``launch_delay``).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right, insort
from functools import lru_cache

import numpy as np

from hpcopt.domain import Decision, Job, Window
from hpcopt.errors import PolicyOptionError, SimulationError
from hpcopt.sim.priority import (
    Factors,
    PriorityWeights,
    age_factor,
    calc_tick,
    job_priority,
    job_size,
)
from hpcopt.sim.records import Event
from hpcopt.sim.slurmconf import SlurmConf, SlurmConfError, read_slurm_conf

from .base import Option, Policy, register_policy


def limit_seconds(job: Job) -> float:
    """The job's time limit as Slurm holds it: whole minutes, rounded up (at least one);
    none (infinite) stays infinite."""
    if not math.isfinite(job.walltime):
        return math.inf
    return max(1, math.ceil(job.walltime / 60 - 1e-9)) * 60.0


def plan_slot(start: float, end: float, res: float, round_up: bool) -> tuple[float, float]:
    """The slot the backfill plan holds for something that runs from ``start`` to ``end``:
    the start rounded down to ``bf_resolution`` and the end rounded up (Slurm 24.11 and
    later, ``_set_slot_time``) or down (before 24.11), at least one ``res`` long
    (backfill.c's ``_add_reservation``); a running job's end (``bf_running_job_reserve``)
    is rounded the same way, from the plan's first slot."""
    lo = math.floor(start / res) * res
    if not math.isfinite(end):
        return lo, math.inf
    hi = math.ceil(end / res - 1e-9) * res if round_up else math.floor(end / res + 1e-9) * res
    return lo, max(hi, lo + res)


def running_end(end: float) -> float:
    """A running job's end as Slurm's backfill reads it (``bf_running_job_reserve``,
    ``_bf_reserve_running``): its ``end_time``, ``start_time`` plus the time limit, in the
    controller's whole seconds (``start_time`` is ``time(NULL)`` when it starts), so the
    fraction of a second a simulated start carries is dropped before the end is rounded to
    ``bf_resolution``: rounded up from 24.11, a fraction would gain a whole slot that Slurm
    never plans.  No time limit: no end."""
    return math.floor(end + 1e-9) if math.isfinite(end) else end


@register_policy("slurm")
class SlurmScheduler(Policy):
    """Slurm alone: its main scheduler and sched/backfill, configured from a slurm.conf.

    ``slurm_conf``: the file (Slurm's defaults where it is silent, or without one);
    ``scheduler_parameters``: ``key=value,...`` over its ``SchedulerParameters``;
    ``launch_latency``: seconds from Slurm's decision to the job's start; ``slurm_partition``:
    the partition of the file the jobs run in; ``slurm_version``: the release to model;
    ``clock_origin``: the Unix time of simulated time 0 (a run from a trace gives the
    trace's: ``hpcopt.scenario.trace_clock_origin``); ``conf``: a ``SlurmConf`` instead of a
    file."""

    backfill = "none"  # Slurm's own backfill runs inside the policy's passes
    # the site's limits are Slurm's to apply, job by job as it starts them (_PassState.capped)
    checks_limits = True
    # an armed agent's passes while nothing changed are not computed unless time alone can
    # change their plan: a job left out past bf_window comes into it (with
    # bf_job_part_count_reserve its reservation can free a later job's), priorities age
    # (the tests turn this off to check that it changes no start)
    skip_repeated_passes = True
    # running jobs are seen as the node selection's will-run test sees them (grouped ends;
    # with bf_running_job_reserve, reservations of the plan too); off, as slots of the plan
    # to their exact ends (the plan view).  Not an
    # option (Slurm has no such setting): the tests and ``slurm_validation.py month`` turn
    # it off to show and time what the will-run structure changes
    will_run_test = True
    OPTIONS = (
        Option("slurm_conf", str, "the slurm.conf whose scheduling to model (Slurm's "
               "defaults where it is silent)"),
        Option("scheduler_parameters", str, "key=value,... over the file's "
               "SchedulerParameters (e.g. bf_job_part_count_reserve=1,bf_licenses)"),
        Option("launch_latency", float, "seconds from Slurm's start decision to the job's "
               "start", min=0),
        Option("slurm_partition", str, "the slurm.conf's partition the jobs run in (default: its "
               "default partition)"),
        Option("slurm_version", str, "the Slurm release to model, MAJOR.MINOR (default 24.11; "
               "before 24.11 the backfill plan rounds ends down to bf_resolution)"),
        Option("clock_origin", float, "the wall-clock time (Unix seconds) of simulated time "
               "0, on which Slurm's backfill groups running jobs' ends in 30-s windows "
               "(default: the trace's, an SWF header's UnixStartTime; else 0, for times that "
               "are Unix seconds already, as Slurm's traces are read)"),
    )

    def __init__(self, slurm_conf: str | None = None, scheduler_parameters: str | None = None,
                 launch_latency: float = 0.0, slurm_partition: str | None = None,
                 slurm_version: str | None = None, clock_origin: float = 0.0,
                 conf: SlurmConf | None = None) -> None:
        try:
            base = conf or (read_slurm_conf(slurm_conf, slurm_partition) if slurm_conf
                            else SlurmConf())
            if scheduler_parameters:
                base = base.with_parameters(scheduler_parameters, "scheduler_parameters")
            if slurm_version is not None:
                base = base.with_version(slurm_version)
        except SlurmConfError as e:
            raise PolicyOptionError(str(e)) from None
        if not (isinstance(launch_latency, (int, float)) and math.isfinite(launch_latency)
                and launch_latency >= 0):
            raise PolicyOptionError(f"launch_latency: expected seconds >= 0, got "
                                    f"{launch_latency!r}")
        if not (isinstance(clock_origin, (int, float)) and math.isfinite(clock_origin)):
            raise PolicyOptionError(f"clock_origin: expected Unix seconds, got {clock_origin!r}")
        self.conf = base
        self.launch_delay = float(launch_latency)
        self.clock_origin = float(clock_origin)
        # the start the last backfill pass gave each job it tested, by job id: Slurm's
        # ``start_time``, what ``squeue --start`` shows (now for a job it started); a job it
        # did not test, or tested for a start now only and could not start, has none
        self.planned_starts: dict = {}
        self._sim = None

    # ------------------------------------------------------------------ protocol
    def attach(self, sim) -> None:
        """Read the machine, subscribe to job ends and submissions (they trigger Slurm's
        passes) and start with an idle controller."""
        system = sim.system
        if system.capacity is not None:
            raise SimulationError("policy 'slurm' schedules a fixed machine; a system with a "
                                  "capacity profile is not one")
        conf = self.conf
        per = conf.cpus_per_node if conf.shared_cores else 1
        if conf.nodes is not None and conf.nodes * per != system.nodes:
            unit = f"{conf.nodes} nodes x {per} cores" if per > 1 else f"{conf.nodes} nodes"
            raise SimulationError(f"the slurm.conf's partition has {unit}, the simulated "
                                  f"system {system.nodes} {'cores' if per > 1 else 'nodes'}")
        self._sim = sim
        self.planned_starts = {}
        self._per = per  # units (cores or nodes) per node
        self._units = system.nodes
        self._all = (1 << system.nodes) - 1
        sizes = sorted(system.ssd_classes.items())
        self._ssd = [float(s) for s, n in sizes for _ in range(n)] if sizes else None
        self._class_of = [k for k, (_, n) in enumerate(sizes) for _ in range(n)]
        self._n_classes = len(sizes)
        self._topology = system.topology is not None
        self._eligible: dict[float, int] = {}
        self._units_of: dict = {}  # running job id -> (units it holds: a bit mask, its end)
        self._new: list[Job] = []  # submitted since the last pass
        self._ended = False  # a job ended since the last main pass
        self._changed = True  # since the last backfill pass
        # the last backfill pass planned a start for some job: it set ``last_job_update``,
        # so the agent runs again after bf_interval even if nothing else changed
        # (backfill.c's ``_more_work``)
        self._armed = False
        self._empty_pass = False  # the agent's pass at ``_next_bf`` finds no job to plan
        # from when an armed agent's pass may plan differently with time alone
        self._replan_at = math.inf
        self._batch = False  # submitted jobs wait for a timed main pass
        self._last_timed = -math.inf  # last batch or full main pass
        self._next_full = -math.inf
        self._next_bf = -math.inf
        self._woken: set[float] = set()
        sim.subscribe(Event.SUBMIT, self._on_submit)
        sim.subscribe(Event.COMPLETE, self._on_complete)

    def reset(self, seed: int | None = None) -> None:
        """Nothing random: the controller's state starts in ``attach``."""

    def _on_submit(self, sim, event, job) -> None:
        self._new.append(job)
        self._batch = self._changed = True

    def _on_complete(self, sim, event, record) -> None:
        self._ended = self._changed = True
        self._units_of.pop(record.job.id, None)

    def decide(self, window: Window) -> Decision:
        """The passes Slurm runs at ``window.time``: submissions tried at once, a main pass
        when one is due, a backfill pass when one is due; every pass still due later asks
        the driver for a pass then (``Simulator.wake_at``)."""
        now = window.time
        conf = self.conf
        state, queue = self._pass_start(window)
        new, self._new = {j.id for j in self._new}, []
        for job in queue:  # a new job at the top of the queue starts if it fits
            if job.id not in state.started and not state.capped(job):
                if job.id not in new or not state.fits_now(job):
                    break
                state.start(job)
        if self._ended:
            self._ended = False
            self._main_pass(queue, state, conf.default_queue_depth)
        if now >= self._next_full:
            self._next_full = now + conf.sched_interval
            self._last_timed = now
            self._batch = False
            self._main_pass(queue, state, len(queue))
        elif self._batch and now >= self._last_timed + conf.batch_sched_delay:
            self._last_timed = now
            self._batch = False
            self._main_pass(queue, state, conf.default_queue_depth)
        if state.started:
            self._changed = True
        if conf.scheduler == "backfill" and \
                (self._changed or self._armed and now >= self._replan_at - 1e-9) \
                and now >= self._bf_due(now) - 1e-9:
            self._next_bf = now + conf.bf_interval
            self._changed = self._empty_pass = False
            self._armed = self._backfill(queue, state) > 0
            if state.started:
                self._changed = True
        # a job a limit blocks waits for a job's end (a pass of its own), not for a timer
        if any(j.id not in state.started and not state.capped(j) for j in queue):
            self._wake(now)
        elif conf.scheduler == "backfill" and (self._changed or self._armed):
            # nothing left to plan: the agent's next pass finds no job, then it sleeps
            # bf_interval and looks every second
            self._next_bf = self._bf_due(now)
            self._changed = self._armed = False
            self._empty_pass = True
        return Decision(tuple(state.order), allocations=state.allocations)

    def passes_now(self, window: Window, main_depth: int = 0,
                   backfill: bool = False) -> Decision:
        """A main pass over at most ``main_depth`` jobs, then a backfill pass if asked, at
        ``window.time``, whatever Slurm's timers say: what a controller whose passes were
        logged did then (``benchmarks/slurm_validation.py logged`` replays a run's own
        pass times with it, to tell the pass rules from their timing)."""
        state, queue = self._pass_start(window)
        if main_depth > 0:
            self._main_pass(queue, state, main_depth)
        if backfill and self.conf.scheduler == "backfill":
            self._backfill(queue, state)
        return Decision(tuple(state.order), allocations=state.allocations)

    def _pass_start(self, window: Window) -> tuple[_PassState, list[Job]]:
        """What every pass at ``window.time`` starts from: the controller's state and the
        queue in priority order."""
        if self._sim is None:
            raise SimulationError("policy 'slurm' keeps a controller's state: run it through "
                                  "a Simulator (attach)")
        return _PassState(self, window), self._priority_order(window.jobs, window.time)

    def _bf_due(self, now: float) -> float:
        """When, from ``now``, the backfill agent next runs a pass: ``bf_interval`` after its
        last pass, then every second (its short sleep) until something changed.  A pass that
        planned a start for some job is itself a change (it set ``last_job_update``, which
        backfill.c's ``_more_work`` sees): the agent then runs every ``bf_interval``."""
        due = self._next_bf
        if due == -math.inf:
            return now  # the agent's first look
        if self._empty_pass and now > due + 1e-9:  # it ran at ``due`` and found no job
            due = self._next_bf = due + self.conf.bf_interval
            self._empty_pass = False
        if now > due:
            step = self.conf.bf_interval if self._armed else 1.0
            due += math.ceil((now - due) / step - 1e-9) * step
        return due

    def _wake(self, now: float) -> None:
        """Ask for a pass at each timer still to come while jobs wait."""
        conf = self.conf
        times = [self._next_full]
        if self._batch:
            times.append(self._last_timed + conf.batch_sched_delay)
        if conf.scheduler == "backfill":
            if self._changed:
                times.append(self._bf_due(now))
            elif self._armed and self._replan_at < math.inf:
                times.append(self._bf_due(max(now, self._replan_at)))
        for t in times:
            if t > now and t not in self._woken:
                self._woken.add(t)
                self._sim.wake_at(t)
        self._woken = {t for t in self._woken if t > now}

    def _priority_order(self, jobs, now: float) -> list[Job]:
        """The pending jobs in Slurm's priority order (ties: the earlier submission): each
        priority as set at the job's submission or at the last ``PriorityCalcPeriod`` tick
        (``calc_tick``); under the driver's order ``priority`` (``--order priority``: the
        multifactor priority with fairshare, ``hpcopt.sim.priority``) the window already
        is in that order."""
        conf = self.conf
        if conf.priority == "basic" or not (conf.weight_age or conf.weight_job_size) or \
                getattr(self._sim.settings.order, "name", None) == "priority":
            return list(jobs)
        total = self._units

        weights = PriorityWeights.of(conf)
        tick = calc_tick(now, weights.calc_period)

        def priority(job: Job) -> float:  # the one formula (hpcopt.sim.priority)
            at = max(tick, job.submit)
            return job_priority(weights, Factors(
                age=age_factor(job.submit, at, conf.max_age),
                job_size=job_size(job, total, weights, weights.calc_period > 0
                                  and at == job.submit)))

        return sorted(jobs, key=lambda j: (-priority(j), j.submit))

    # ------------------------------------------------------------------ passes
    def _main_pass(self, queue, state: _PassState, depth: int) -> None:
        """Priority order; the first job that does not fit ends the pass."""
        tested = 0
        for job in queue:
            if job.id in state.started:
                continue
            if tested >= depth:
                return
            tested += 1
            if state.capped(job):
                continue  # skipped, the pass goes on (ESLURM_ACCOUNTING_POLICY)
            if job.bb > state.free_lic + 1e-9:
                if self.conf.bf_licenses:
                    return  # the license backfill handles it
                continue
            if not state.fits_now(job):
                return
            state.start(job)

    def _backfill(self, queue, state: _PassState) -> int:
        """One backfill pass (backfill.c's ``_attempt_backfill``): the jobs in priority
        order, each given a start around the reservations made before it; a start now is
        made, a later one reserved (module docstring).  Running jobs are seen by the node
        selection's will-run test (``_WillRunTest``), as in Slurm, and enter the plan as
        reservations to their ends on its grid with ``bf_running_job_reserve``
        (``_bf_reserve_running``); without it the plan holds only what this pass decides.
        With ``will_run_test`` off, running jobs are slots of the plan (the plan view).
        Returns how many jobs it planned (started or reserved)."""
        conf = self.conf
        now = state.now
        res = conf.bf_resolution
        window_end = math.floor((now + conf.bf_window) / res) * res
        plan = _TimeMap(now, conf.bf_licenses, res, conf.round_ends_up, conf.since_2411)
        replan = -math.inf if not self.skip_repeated_passes or (
            conf.priority == "multifactor" and conf.weight_age > 0) else math.inf
        will_run = None
        # Slurm's plan ends at the window: what the pass holds past it is not seen there
        # (``node_space``); the plan view keeps the running jobs' ends past it
        horizon = window_end if self.will_run_test else math.inf
        if not self.will_run_test:
            self._hold_running(plan, state)
        else:
            will_run = _WillRunTest(state.running_ends(), now, self.clock_origin,
                                    conf.since_2411, state.lic_total, self._per > 1)
            if conf.bf_running_job_reserve:  # the running jobs are reservations too
                for end, units, lic in state.running_ends():
                    self._reserve_running(plan, now, end, units, lic, horizon)
        tested = reserved = planned = 0
        shown = self.planned_starts = {}
        for job in queue:
            if job.id in state.started:
                continue
            if tested >= conf.bf_max_job_test:
                break
            if not conf.bf_licenses and job.bb > state.free_lic + 1e-9:
                continue  # not runnable now: not tested
            if will_run is None:
                tested += 1
            if state.capped(job):
                continue  # no start, no reservation, not counted (module docstring)
            only_now = bool(conf.bf_job_part_count_reserve) and \
                reserved >= conf.bf_job_part_count_reserve
            limit = limit_seconds(job)
            dur = limit + state.delay
            if will_run is None:
                found = plan.earliest(now, dur, job.nodes, self.eligible(job), job.bb,
                                      state.lic_total, only_now, window_end)
                if found is not None:
                    found = (found[0], self.choose(found[1], job.nodes))
                slot = dur  # the plan's slots hold the latency too
            else:
                tests = will_run.tests
                found = self._will_run_search(job, limit, plan, will_run, only_now,
                                              window_end)
                # bf_max_job_test counts the jobs that reached the node selection's test
                # (``bf_last_depth_try``): not one whose usable nodes were too few
                tested += will_run.tests > tests
                slot = limit  # Slurm reserves the time limit
            if found is None:
                continue
            start, units = found
            planned += 1
            shown[job.id] = max(start, now)
            if start <= now:
                state.start(job, units)
                if will_run is None:
                    self._hold_one(plan, now, now + dur, units, job.bb)
                else:
                    # Slurm's plan holds the jobs the pass starts to their end on the
                    # plan's grid, as running jobs: the will-run test still sees them
                    # running to their end
                    self._reserve_running(plan, now, now + dur, units, job.bb, horizon)
                    will_run.add(state.added[-1])
                continue
            if start > now + conf.bf_window:  # no reservation ("too far in the future")
                plan.beyond = min(plan.beyond, start)
                continue
            lo, hi = plan.slot(start, start + slot)
            plan.hold(max(now, lo), min(hi, horizon), self.whole_nodes(units), job.bb)
            reserved += 1
        # with time alone a job left out past the window may come into it, and a job's
        # will-run test from now reach a further slot
        self._replan_at = min(replan, plan.beyond - conf.bf_window,
                              will_run.stale_at if will_run else math.inf)
        return planned

    def _reserve_running(self, plan: _TimeMap, now: float, end: float, units: int,
                         lic: float, horizon: float) -> None:
        """backfill.c's ``_bf_reserve_running``: a running job (or one the pass starts) as
        a reservation of the plan from now to its end on the plan's grid, up to the
        plan's end; on whole nodes its nodes and licenses, on shared cores its licenses
        only (a job without licenses is not held).  Where the plan holds no licenses such
        a reservation takes nothing, but ``_add_reservation`` still splits the plan at its
        end (``mark``)."""
        units = units if self._per == 1 else 0
        if units or lic:
            hi = plan.slot(now, running_end(end))[1]
            if units or plan.licenses:
                plan.hold(now, min(hi, horizon), units, lic)
            elif hi < horizon:
                plan.mark(hi)

    def _hold_running(self, plan: _TimeMap, state: _PassState) -> None:
        """Running jobs into the plan (``_hold_one``)."""
        for end, units, lic in state.running_ends():
            self._hold_one(plan, state.now, end, units, lic)

    def _hold_one(self, plan: _TimeMap, now: float, end: float, units: int,
                  lic: float) -> None:
        """A running job into the plan view (running jobs as slots of the plan, without
        the will-run test: ``will_run_test`` off): to its end, or with
        ``bf_running_job_reserve`` on the plan's grid (a job the pass starts too)."""
        conf = self.conf
        if conf.bf_running_job_reserve:  # its slot, as a reservation from now
            slot_end = plan.slot(now, running_end(end))[1]
            if slot_end < end and not conf.round_ends_up:  # rounded down: the select
                plan.hold(now, slot_end, 0, lic)  # plugin's test sees its nodes busy
                lic = 0.0  # to its end
            else:  # from 24.11 nodes and licenses to the end rounded up (after now)
                end = slot_end
        plan.hold(now, end, units, lic)

    def _will_run_search(self, job: Job, limit: float, plan: _TimeMap,
                         will_run: _WillRunTest, only_now: bool, window_end: float):
        """Where Slurm's backfill starts ``job`` (``_attempt_backfill``, from its
        ``TRY_LATER`` label): from ``start_res`` (now first), the nodes no reservation of
        the plan holds over one time limit (none where a slot lacks the job's licenses,
        when the plan holds licenses) go to the will-run test; a start it finds after the
        first reservation end that frees more of the job's nodes (``later_start``), or
        whose slot meets a reservation (``_test_resv_overlap``: the test does not see
        reservations that begin later), is searched again from that time.  Returns
        (start, units) or ``None`` (a search that runs past ``window_end`` gives up there:
        ``plan.beyond``).  The test from now
        covers the slots up to ``now + limit``: a pass later, with nothing else changed,
        covers more of them and may plan differently (``will_run.stale_at``)."""
        now = plan.times[0]
        need = job.nodes
        eligible = self.eligible(job)
        after = bisect_right(plan.times, now + limit)  # the first slot its test misses
        if after < len(plan.times):
            will_run.stale_at = min(will_run.stale_at, plan.times[after] - limit)
        free_between, will_run_start = plan.free_between, will_run.start
        start_res = now
        lic, lic_total = job.bb, will_run.lic_total
        while start_res <= window_end:
            avail, later = free_between(start_res, start_res + limit, eligible, window_end,
                                        lic, lic_total)
            got = will_run_start(avail, need, only_now, start_res, later, lic)
            if got is not None:
                start = got[0] if got[0] > start_res else start_res
                if start <= now:
                    return now, self.choose(got[1], need)
                if not (later and start > later):
                    units = self.choose(got[1], need)
                    lo, hi = plan.slot(start, start + limit)
                    if not plan.round_up:  # before 24.11 the test reads the end rounded
                        # down before _add_reservation makes the slot one bf_resolution
                        # long: a job shorter than that meets no reservation
                        hi = math.floor((start + limit) / plan.res + 1e-9) * plan.res
                    if not plan.holds_any(lo, hi, self.whole_nodes(units), lic, lic_total):
                        return start, units
                    if start > start_res:
                        later = start
            if only_now or not later or later <= start_res:
                return None
            start_res = later
        plan.beyond = min(plan.beyond, start_res)
        return None

    # ------------------------------------------------------------------ units
    def eligible(self, job: Job) -> int:
        """The units (nodes or cores) ``job`` may use: by SSD class where there are any."""
        if self._ssd is None or not job.ssd:
            return self._all
        mask = self._eligible.get(job.ssd)
        if mask is None:
            mask = sum(1 << i for i, s in enumerate(self._ssd) if s >= job.ssd)
            self._eligible[job.ssd] = mask
        return mask

    def choose(self, free: int, need: int) -> int:
        """The ``need`` units of ``free`` Slurm's node selection takes (``select/cons_tres``
        without a topology, read in its source: ``_eval_nodes``, 24.11's
        ``_eval_nodes_consec``).  On shared cores (a job of ``need`` one-core tasks): runs
        of consecutive nodes with free units; while units are missing, the run with the
        fewest free units that has enough (else the largest; the first of equal ones), and
        in it the node with the fewest free units that has enough alone (the first of equal
        ones), else its nodes in order, each node's free units whole."""
        per = self._per
        if per == 1:
            return _best_fit_runs(free, need)
        node = (1 << per) - 1
        n_nodes = self._units // per
        counts = [((free >> (k * per)) & node).bit_count() for k in range(n_nodes)]
        runs, k = [], 0
        while k < n_nodes:
            if counts[k]:
                first = k
                while k < n_nodes and counts[k]:
                    k += 1
                runs.append((first, k, sum(counts[first:k])))
            else:
                k += 1
        out = 0
        while need > 0 and runs:
            enough = [r for r in runs if r[2] >= need]
            run = min(enough, key=lambda r: r[2]) if enough else max(runs, key=lambda r: r[2])
            runs.remove(run)
            fit = [k for k in range(run[0], run[1]) if counts[k] >= need]
            for k in [min(fit, key=lambda k: counts[k])] if fit else range(run[0], run[1]):
                got = _lowest(free & (node << (k * per)), need)
                out |= got
                need -= got.bit_count()
                if need <= 0:
                    break
        return out

    def whole_nodes(self, units: int) -> int:
        """The units of every node that holds one of ``units`` (a reservation takes whole
        nodes on a partition that shares them by core)."""
        per = self._per
        if per == 1:
            return units
        node = (1 << per) - 1
        out, i = 0, 0
        while units >> i:
            if (units >> i) & node:
                out |= node << i
            i += per
        return out

    def allocation(self, units: int):
        """The driver's allocation for ``units``: node ids on a topology, nodes per SSD
        class, else none (the pool counts)."""
        if self._topology:
            return np.array(_bits(units), dtype=np.int64)
        if self._ssd is not None:
            counts = [0] * self._n_classes
            for i in _bits(units):
                counts[self._class_of[i]] += 1
            return tuple(counts)
        return None


class _PassState:
    """What one ``decide`` knows: the units each running job holds, the free units and
    licenses now, and the jobs it starts."""

    __slots__ = ("policy", "now", "delay", "window", "running", "added", "busy", "free_lic",
                 "lic_total", "started", "order", "allocations", "usage")

    def __init__(self, policy: SlurmScheduler, window: Window) -> None:
        self.policy = policy
        self.now = window.time
        self.delay = policy._sim.launch_delay
        held = policy._units_of
        if len(held) != len(window.running) or \
                not all(r.job.id in held for r in window.running):
            _reconcile(policy, window.running)
        busy = 0
        for u, _ in held.values():
            busy |= u
        self.busy = busy
        self.window = window
        self.running: list | None = None  # (estimated end, units, licenses), when asked
        self.added: list = []  # the same of the jobs this pass starts
        self.lic_total = window.system.bb
        self.free_lic = window.system.bb - sum(r.job.bb for r in window.running) \
            if window.system.bb else 0.0
        self.started: set = set()
        self.order: list = []
        self.allocations: dict = {}
        # what the running jobs and those started here hold against the site's limits
        self.usage = policy._sim.limit_usage()

    def capped(self, job: Job) -> bool:
        """A site limit blocks ``job`` now: starting it would take its association or QOS
        past a cap, counting the running jobs and those started in this pass only."""
        return self.usage is not None and self.usage.blocks(job) is not None

    def fits_now(self, job: Job) -> bool:
        return job.bb <= self.free_lic + 1e-9 and \
            (self.policy.eligible(job) & ~self.busy).bit_count() >= job.nodes

    def start(self, job: Job, units: int | None = None) -> None:
        policy = self.policy
        if units is None:
            units = policy.choose(policy.eligible(job) & ~self.busy, job.nodes)
        end = self.now + self.delay + limit_seconds(job)  # Slurm's end: whole minutes
        self.busy |= units
        self.free_lic -= job.bb
        policy._units_of[job.id] = (units, end)
        self.added.append((end, units, job.bb))
        if self.running is not None:
            self.running.append((end, units, job.bb))
        self.started.add(job.id)
        self.order.append(job.id)
        if self.usage is not None:
            self.usage.add(job)
        alloc = policy.allocation(units)
        if alloc is not None:
            self.allocations[job.id] = alloc

    def running_ends(self) -> list:
        """(estimated end, units, licenses) of every running job, those started in this
        pass included."""
        if self.running is None:
            held = self.policy._units_of
            self.running = [(held[r.job.id][1], held[r.job.id][0], r.job.bb)
                            for r in self.window.running]
            self.running += self.added
        return self.running


def _reconcile(policy: SlurmScheduler, running) -> None:
    """Make ``policy._units_of`` hold exactly the running jobs: those gone are dropped; one
    started before the policy saw it gets the lowest free units (its allocation on a
    topology) and its estimated end."""
    held = policy._units_of
    live = {r.job.id for r in running}
    for jid in [j for j in held if j not in live]:
        del held[jid]
    busy = 0
    for u, _ in held.values():
        busy |= u
    for r in running:
        if r.job.id not in held:
            units = _lowest(policy.eligible(r.job) & ~busy, r.job.nodes) \
                if not policy._topology else sum(1 << int(i) for i in r.allocation)
            held[r.job.id] = (units, r.est_end)
            busy |= units


class _TimeMap:
    """The backfill plan: a step function of the units held (by running jobs and
    reservations) and, with licenses planned, of the licenses held, from ``now`` on."""

    __slots__ = ("times", "held", "lic", "licenses", "res", "round_up", "since_2411",
                 "beyond")

    def __init__(self, now: float, licenses: bool, res: float, round_up: bool,
                 since_2411: bool) -> None:
        self.times = [now]  # slot k is [times[k], times[k + 1])
        self.held = [0]
        self.lic = [0.0]
        self.licenses = licenses
        self.res = res  # bf_resolution
        self.round_up = round_up  # ends rounded up (24.11 on) or down
        self.since_2411 = since_2411  # later_start's extra rule (SlurmConf.since_2411)
        self.beyond = math.inf  # the earliest start a search gave up at, past the window

    def slot(self, start: float, end: float) -> tuple[float, float]:
        """The slot this plan holds for something that runs from ``start`` to ``end``
        (``plan_slot`` on its grid)."""
        return plan_slot(start, end, self.res, self.round_up)

    def _split(self, t: float) -> int:
        """The index of the slot that starts at ``t`` (made when there is none)."""
        times = self.times
        k = bisect_right(times, t) - 1
        if times[k] == t:
            return k
        insort(times, t)
        self.held.insert(k + 1, self.held[k])
        self.lic.insert(k + 1, self.lic[k])
        return k + 1

    def mark(self, t: float) -> None:
        """A record boundary at ``t`` and nothing else: a reservation from the plan's start
        that takes nothing (``_add_reservation`` splits the plan at its start and end,
        then joins the first two equal records, the ones at its start)."""
        self._split(t)

    def hold(self, lo: float, hi: float, units: int, lic: float) -> None:
        """``units`` and ``lic`` licenses are taken over [lo, hi)."""
        if hi <= lo:
            return
        a, b = self._split(lo), self._split(hi)
        held, lics = self.held, self.lic
        for k in range(a, b):
            held[k] |= units
            lics[k] += lic
        self._join_one(max(a - 2, 0), b)

    def _join_one(self, first: int, stop: int) -> None:
        """Join the first slot from ``first`` (before ``stop``) that holds what the next one
        holds with it: Slurm's plan drops one such record after each reservation, from the
        record before the one the reservation starts in to the one after its end
        (backfill.c's ``_add_reservation``).  It matters: ``later_start`` looks one record
        past a job's span (``free_between``), so two equal records hide the next change.
        Licenses count only when the plan holds them (``bf_licenses``)."""
        times, held, lics = self.times, self.held, self.lic
        k = first
        while k != stop and k + 1 < len(times):
            if held[k] == held[k + 1] and (not self.licenses or lics[k] == lics[k + 1]):
                del times[k + 1], held[k + 1], lics[k + 1]
                return
            k += 1

    def free_between(self, start: float, end: float, eligible: int, window_end: float,
                     lic: float = 0.0, lic_total: float = 0.0):
        """The ``eligible`` units no slot overlapping [start, end] holds, and the end of the
        first slot from ``start`` after which an eligible unit is free that was not free
        through it (backfill.c's ``later_start``: the search tries again from there; 0 if
        none before ``window_end``); from 24.11 (``since_2411``), failing that, the end of
        the slot after the first one past ``end`` (``_attempt_backfill``).  Where the plan
        holds licenses, a slot in the span without ``lic`` of them free leaves no units,
        and the end of the last such slot is the time to try again."""
        times, held = self.times, self.held
        lics = self.lic if self.licenses and lic > 0 else None
        short = False
        last = len(times) - 1  # the last slot runs to window_end
        avail, later = eligible, 0.0
        first = bisect_right(times, start) - 1  # the slot of ``start``: those after end later
        for k in range(first if first > 0 else 0, last):
            if not later and times[k + 1] < window_end and \
                    eligible & ~held[k + 1] & ~(avail & ~held[k]):
                later = times[k + 1]
            if times[k] > end:
                if not later and self.since_2411 and k + 2 < len(times) and \
                        times[k + 2] < window_end:
                    # from 24.11 a span that ends before slot k tries again from the end
                    # of the slot after it, when that is not the plan's last
                    later = times[k + 2]
                return (0 if short else avail), later
            avail &= ~held[k]
            if lics is not None and times[k + 1] > start and \
                    lics[k] + lic > lic_total + 1e-9:
                short, later = True, times[k + 1]
        if window_end > start and times[last] <= end:
            avail &= ~held[last]
            if lics is not None and lics[last] + lic > lic_total + 1e-9:
                short, later = True, window_end
        return (0 if short else avail), later

    def holds_any(self, lo: float, hi: float, units: int, lic: float = 0.0,
                  lic_total: float = 0.0) -> bool:
        """Whether a slot overlapping (lo, hi) holds any of ``units``, or, where the plan
        holds licenses, leaves fewer than ``lic`` free (backfill.c's
        ``_test_resv_overlap``)."""
        times, held = self.times, self.held
        lics = self.lic if self.licenses and lic > 0 else None
        n = len(times)
        first = bisect_right(times, lo) - 1
        for k in range(first if first > 0 else 0, n):
            if times[k] >= hi:
                break
            slot_end = times[k + 1] if k + 1 < n else math.inf
            if slot_end > lo and (held[k] & units or (
                    lics is not None and lics[k] + lic > lic_total + 1e-9)):
                return True
        return False

    def earliest(self, now: float, dur: float, need: int, eligible: int, lic: float,
                 lic_total: float, only_now: bool, window_end: float):
        """The earliest slot start (now, or a time something is released) from which
        ``need`` eligible units are free for ``dur`` seconds (with licenses planned, and
        ``lic`` of them too), with the units free throughout; ``None`` if none starts by
        ``window_end`` (or, with ``only_now``, now)."""
        times, held, lics = self.times, self.held, self.lic
        n = len(times)
        plan_lic = self.licenses and lic > 0
        for k in range(n):
            start = times[k]
            if start > now and (only_now or start > window_end):
                if not only_now:
                    self.beyond = min(self.beyond, start)
                return None
            if k and held[k] == held[k - 1] and (not plan_lic or lics[k] == lics[k - 1]) \
                    and start > now:
                continue  # nothing released here: no better than the slot before
            free = eligible & ~held[k]
            if free.bit_count() < need:
                continue
            ok = True
            end = start + dur
            j = k + 1
            while j < n and times[j] < end:
                free &= ~held[j]
                if free.bit_count() < need:
                    ok = False
                    break
                j += 1
            if ok and plan_lic:
                ok = all(lics[i] + lic <= lic_total + 1e-9 for i in range(k, j))
            if ok:
                return max(start, now), free
        return None


class _WillRunTest:
    """The running jobs of one backfill pass as the node selection's will-run test sees
    them (``_will_run_test``: select/cons_common/job_test.c in 22.05, select/cons_tres/
    job_test.c in 24.11).  A job that does not fit now is tested again after the running
    jobs on its nodes are freed in order of their ends, in groups: the first group takes
    every end up to 30 s past the first end's next multiple of 30 s on the wall clock
    (``clock_origin`` is the wall-clock time of simulated time 0), each later group the
    next end and every one within a window that doubles each time; the predicted start is
    the group's last end.  So two ends in one 30-s window of the wall clock give a job
    needing both the later one.  From 24.11 (``future``) the test is told backfill's
    ``start_res`` and ``later_start`` (``will_run_data``): from a ``start_res`` after now
    it skips the test now, frees at once every running job that ends before it, and its
    groups stop at ``later_start``; it needs the job's licenses free of the jobs still
    running (of ``lic_total``), and a running job that holds licenses the job asks for
    counts in the groups even on none of the usable units (``_future_run_test`` and
    ``_build_cr_job_list``).  The groups of a set of usable units are kept for the pass
    (many jobs are tested on the same units) until a job starts."""

    __slots__ = ("now", "origin", "ends", "busy", "lic_total", "stale_at", "future", "tests",
                 "shared", "_groups", "_lic_held")

    def __init__(self, running: list, now: float, origin: float,
                 future: bool = False, lic_total: float = 0.0, shared: bool = False) -> None:
        self.now = now
        # jobs ask cores (``sbatch -n``) on a partition that shares nodes: backfill's
        # ``min_nodes`` is one node, so every job with a usable node is tested
        self.shared = shared
        self.origin = origin
        self.future = future
        self.lic_total = lic_total
        # (end, units, licenses), the end in the controller's whole seconds (``end_time``:
        # ``running_end``)
        self.ends = sorted(((running_end(e), u, lic) for e, u, lic in running),
                           key=lambda r: r[0])
        busy = 0
        for _, units, _ in running:
            busy |= units
        self.busy = busy
        self._lic_held = sum(held for _, _, held in self.ends)
        self.stale_at = math.inf  # from when the same pass may plan differently
        # calls with enough usable units, or on shared cores a usable node (backfill's
        # ``_try_sched``)
        self.tests = 0
        self._groups: dict[tuple, list] = {}

    def add(self, running: tuple) -> None:
        """A job the pass starts (its end, units, licenses) runs from now on."""
        end, units, lic = running
        insort(self.ends, (running_end(end), units, lic), key=lambda r: r[0])
        self.busy |= units
        self._lic_held += lic
        self._groups.clear()

    def start(self, avail: int, need: int, only_now: bool, start_res: float | None = None,
              later: float = 0.0, lic: float = 0.0):
        """(the predicted start, the units of ``avail`` free then) for a job of ``need``
        units on ``avail`` asking ``lic`` licenses, tested from ``start_res`` with
        backfill's ``later_start`` ``later`` (both read from 24.11 on); ``None`` when it
        never fits (or, with ``only_now``, not now).  A start now from a later
        ``start_res`` means that time."""
        now = self.now
        usable = avail != 0 if self.shared else avail.bit_count() >= need
        if usable:
            self.tests += 1
        ahead = self.future and start_res is not None and start_res > now
        licensed = not (self.future and lic > 0)  # before 24.11 licenses are not tested
        if not ahead:
            free = avail & ~self.busy
            if free.bit_count() >= need and (licensed or self._lic_free() >= lic - 1e-9):
                return now, free
            if only_now:
                return None
        if avail.bit_count() < need:
            return None
        key = (avail, start_res, later, lic) if self.future else (avail,)
        groups = self._groups.get(key)
        if groups is None:
            groups = self._groups[key] = self._grouped(avail, start_res, later, lic > 0)
        for last, free, count, lic_free in groups:
            if count >= need and (licensed or lic_free >= lic - 1e-9):
                return (last if last > now else now), free
        return None

    def _lic_free(self) -> float:
        """The licenses the running jobs leave free now."""
        return self.lic_total - self._lic_held

    def _grouped(self, avail: int, start_res: float | None = None, later: float = 0.0,
                 lic: bool = False) -> list:
        """(the group's last end, the units of ``avail`` free after it, how many, the
        licenses free then) for each group of the running jobs on ``avail``, in order (a
        job on none of them is skipped; a job without a time limit is never freed).  From
        24.11 the jobs that end before ``start_res`` come first, as one group ending now,
        and the groups stop at ``later`` (class docstring)."""
        out = []
        ends, origin = self.ends, self.origin
        busy = self.busy
        lic_free = self._lic_free()
        if self.future:
            begin = start_res if start_res is not None else self.now
            ahead = ends[:bisect_left(ends, begin, key=lambda e: e[0])]  # (sorted by end)
            for _, units, held in ahead:
                if units & avail or (lic and held > 0):
                    busy &= ~units
                    lic_free += held
            free = avail & ~busy
            out.append((self.now, free, free.bit_count(), lic_free))
            ends = ends[len(ahead):]
            if later:
                ends = ends[:bisect_right(ends, later, key=lambda e: e[0])]
        anchor = None
        window = 30.0
        i, n = 0, len(ends)
        while i < n:
            last = None
            while i < n:
                end, units, held = ends[i]
                if end == math.inf:  # no time limit: never freed (nor any job after it)
                    i = n
                    break
                i += 1
                if not units & avail and not (self.future and lic and held > 0):
                    continue
                if anchor is None:  # the first end's next 30-s boundary of the wall clock
                    anchor = (math.floor((end + origin) / 30.0) + 1) * 30.0 - origin
                last = end
                busy &= ~units
                lic_free += held
                if i >= n or ends[i][0] > anchor + window:
                    break
            if last is None:
                break
            while i < n and ends[i][0] > anchor + window:
                window *= 2
            free = avail & ~busy
            out.append((last, free, free.bit_count(), lic_free))
        return out


@lru_cache(maxsize=1 << 14)  # a pass tries the same free units for many jobs
def _best_fit_runs(free: int, need: int) -> int:
    """``need`` bits of ``free`` (whole nodes): from the runs of consecutive set bits, the
    shortest run that is long enough (its lowest bits), else the longest run whole and on."""
    runs = []
    m = free
    while m:
        low = (m & -m).bit_length() - 1
        x = m >> low
        length = (~x & (x + 1)).bit_length() - 1
        runs.append((length, low))
        m &= ~(((1 << length) - 1) << low)
    out = 0
    while need > 0 and runs:
        enough = [r for r in runs if r[0] >= need]
        if enough:
            length, low = min(enough)
            return out | (((1 << need) - 1) << low)
        length, low = max(runs, key=lambda r: (r[0], -r[1]))
        runs.remove((length, low))
        out |= ((1 << length) - 1) << low
        need -= length
    return out


def _lowest(mask: int, n: int) -> int:
    """The ``n`` lowest set bits of ``mask``."""
    out = 0
    while n > 0 and mask:
        low = mask & -mask
        out |= low
        mask ^= low
        n -= 1
    return out


def _bits(mask: int) -> list[int]:
    out, i = [], 0
    while mask:
        if mask & 1:
            out.append(i)
        mask >>= 1
        i += 1
    return out
