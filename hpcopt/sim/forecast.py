"""Start-time forecasts: the driver run forward from a cluster state under the policy in force.

``forecast(state, policy, history)`` answers, for every queued job of a ``ClusterState``,
when it will start.  It reads the state as ``decide`` does (``hpcopt.sim.decide.simulator_at``:
the same machine, queue, running jobs and policy) and runs the same driver forward from it
until every queued job has started, so the forecast follows the scheduler's own rule (its
order, window, reservation and backfilling) with no separate model of it.

- **No future submissions**: the run knows only the jobs queued and running now.  Jobs
  submitted later may still backfill into holes (EASY never delays the reserved job for them,
  but may delay the others), or pass a waiting job under an order other than FCFS; forecasts
  leave them out, so a job's forecast tends to be early when many jobs arrive.
- **Runtimes from history**: each run gives every queued and running job a runtime from the
  ratios of the jobs finished so far (``RuntimeHistory``: its user's with the same limit,
  its user's, else everyone's, with the user's running jobs counted as longer than they
  have run; a running job only among those longer than it has run already).  Nothing
  else of a job is read: not its actual runtime, nothing after the forecast's time.
- **Uncertainty from draws**: ``draws`` runs, seeded.  Each job draws the quantile of its
  possible runtimes in each run from a stratified sample: one in each of ``draws`` equal
  strata of (0, 1), in an order of its own.  The jobs of one user share their quantiles
  (``together="user"``: a user's jobs are alike), other users' jobs are drawn apart; with
  ``"all"`` every job takes the same quantile in a run (a faster or slower world), with
  ``"job"`` each job its own.  On KTH-SP2's tuning slices (days 60 and 150) "all" made
  forecasts late at short leads and early at long ones (the slowest of the running jobs
  does not set the first start; a sum of many runtimes is near the sum of their means, not
  of their medians): by user cut the error 3%, and the band held 50% of the starts
  against 45% for "job".
  A job's forecast start is the median of its starts over the runs, its band their 10% and
  90% quantiles.  Without history (``history=None``) one run gives every job its limit:
  Slurm's own assumption (``squeue --start``), kept as the baseline.
- **Not before its earliest start**: a queued job with an ``earliest`` start (a begin time,
  nodes it asks that are busy until then) joins the run's queue only then, in its place by
  its submission.

``replay_forecasts`` forecasts every ``every`` seconds along a simulation (``hpcopt simulate
--forecast-every``) and joins each forecast with the start the job really had.
``BandCalibration`` widens the draws' band (it holds the runtimes' uncertainty only) by the
errors of earlier forecasts whose jobs have started; ``hpcopt simulate`` and the Slurm
adapter's forecast file apply it unless asked for raw bands.
"""

from __future__ import annotations

import csv
import math
import random
from collections import deque
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace

from hpcopt.domain import Job
from hpcopt.errors import SimulationError

from .decide import ClusterState, simulator_at
from .records import Event
from .runtime_history import RuntimeHistory


@dataclass(frozen=True)
class JobForecast:
    """One queued job's forecast: its start (the median over draws), the 10%-90% band, in
    the state's time; ``None`` with a ``reason`` when it cannot run on the available
    machine."""

    job: Hashable
    start: float | None
    p10: float | None
    p50: float | None
    p90: float | None
    reason: str | None = None


def forecast(state: ClusterState, policy, history: RuntimeHistory | None, *,
             started: Mapping[Hashable, float] | None = None, draws: int = 20, seed: int = 0,
             arrivals: Sequence[Job] = (), together: str = "user", point: str = "median",
             **options) -> list[JobForecast]:
    """The forecast start of every job in ``state.queue`` (module docstring), in queue order.

    ``started`` maps running jobs' ids to their start times (with their estimated ends they
    give each one's limit and how long it has run; a running job without one ends at its
    estimated end); the state's ``starting`` jobs start now.  Jobs' ``user`` picks their
    history.  ``policy`` is the policy in force (one object, reused by every run, as
    ``decide`` reuses it); ``options`` are the driver's (``order``, ``backfill``,
    ``window``, ``starvation_bound``, ``period``, ``launch_delay``).
    ``arrivals`` are jobs to submit during the runs (a modelled stream of later submissions,
    ``recent_stream``; their ids are replaced, their runtimes drawn as the queued jobs').
    ``together`` says which jobs share their runtimes' quantile in a run: ``"user"`` (a
    user's jobs; jobs without a user on their own), ``"all"`` or ``"job"`` (module
    docstring).  ``point`` is the start given: the ``"median"`` of the runs' starts (also
    ``p50``) or their ``"mean"``.
    """
    if draws < 1:
        raise ValueError(f"draws must be >= 1, got {draws}")
    if point not in ("median", "mean"):
        raise ValueError(f"point must be median or mean, got {point!r}")
    now = float(state.time)
    started = started or {}
    if history is None:  # the limits: one run is all there is
        draws = 1
        queue_times = [[job.walltime] for job in state.queue]
        arrival_times = [[job.walltime] for job in arrivals]
        end_times: dict = {}
    else:
        history = history.with_running(
            (job.user, est_end - started[job.id], now - started[job.id])
            for job, est_end in state.running if started.get(job.id, est_end) < est_end)
        queue_times = [history.job_runtimes(job, job.walltime) for job in state.queue]
        arrival_times = [history.job_runtimes(job, job.walltime) for job in arrivals]
        end_times = {}
        for job, est_end in state.running:
            start = started.get(job.id)
            if start is not None and est_end > start:
                elapsed = max(0.0, now - start)
                end_times[job.id] = [start + t for t in
                                     history.job_runtimes(job, est_end - start, elapsed)]
        for job in state.starting:  # told to start, starting now
            end_times[job.id] = [now + t for t in history.job_runtimes(job, job.walltime)]
    rng = random.Random(seed)
    group = _GROUPS.get(together)
    if group is None:
        raise ValueError(f"together must be one of {', '.join(_GROUPS)}, got {together!r}")
    running = {job.id: job for job, _ in state.running}
    running.update((job.id, job) for job in state.starting)
    queue_keys = [group(job, "q") for job in state.queue]
    arrival_keys = [group(job, ("a", k)) for k, job in enumerate(arrivals)]
    end_keys = {jid: group(running[jid], "r") for jid in end_times}
    quantiles = _quantiles_per_run(draws, rng, [*queue_keys, *arrival_keys, *end_keys.values()])
    starts: dict[Hashable, list[float]] = {job.id: [] for job in state.queue}
    set_aside: dict = {}
    for k in range(draws):
        def pick(times: list[float], key: Hashable, k: int = k) -> float:
            return times[min(len(times) - 1, int(quantiles[key][k] * len(times)))]

        queue = tuple(replace(job, runtime=min(job.walltime, pick(times, key)))
                      for job, times, key in zip(state.queue, queue_times, queue_keys))
        ends = {jid: pick(times, end_keys[jid]) for jid, times in end_times.items()}
        later = [replace(job, runtime=min(job.walltime, pick(times, key)))
                 for job, times, key in zip(arrivals, arrival_times, arrival_keys)]
        run = _run_forward(replace(state, queue=queue), policy, ends, later, options)
        if run is None:
            break
        got, set_aside = run
        for jid, t in got.items():
            starts[jid].append(t)
    out = []
    for job in state.queue:
        values = sorted(starts[job.id])
        if not values:
            why = set_aside.get(job.id, "no node of the machine is available")
            out.append(JobForecast(job.id, None, None, None, None, why))
        else:
            median = _quantile(values, 0.5)
            start = median if point == "median" else math.fsum(values) / len(values)
            out.append(JobForecast(job.id, start, _quantile(values, 0.1), median,
                                   _quantile(values, 0.9)))
    return out


def forecast_end(job: Job, start: float, history: RuntimeHistory | None,
                 elapsed: float = 0.0) -> float:
    """When ``job``, started (or to start) at ``start``, ends by the median of its possible
    runtimes (``history``; having run ``elapsed`` seconds already), or at its limit without
    history."""
    if history is None:
        return start + job.walltime
    return start + _quantile(sorted(history.job_runtimes(job, job.walltime, elapsed)), 0.5)


_GROUPS: dict[str, Callable[[Job, Hashable], Hashable]] = {
    "all": lambda job, where: None,
    "user": lambda job, where: ("user", job.user) if job.user is not None
    else (where, job.id),
    "job": lambda job, where: (where, job.id),
}


def _quantiles_per_run(draws: int, rng: random.Random, keys: Sequence[Hashable]) -> dict:
    """For each key, the quantile of its runtimes in each of ``draws`` runs: one in each of
    ``draws`` equal strata of (0, 1) (stratified), the strata in an order of its own (keys
    drawn independently of each other)."""
    out: dict = {}
    for key in keys:
        if key not in out:
            order = list(range(draws))
            rng.shuffle(order)
            out[key] = [(i + rng.random()) / draws for i in order]
    return out


def _run_forward(state: ClusterState, policy, ends: dict, later: list[Job], options: dict):
    """One run from ``state`` until every queued job has started, with the ``later`` jobs
    submitted on the way: each queued job's start and the jobs set aside with why; ``None``
    when no node is usable."""
    sim, given, set_aside = simulator_at(state, policy, ends=ends, **options)
    if sim is None:
        return None
    if later:
        text = any(isinstance(jid, str) for jid in sim.records)
        low = 0 if text else min(0, *sim.records) - 1
        for k, job in enumerate(later):
            job = replace(job, id=f"~later{k}" if text else low - k, deps=())
            try:
                sim.submit(job)
            except SimulationError:  # it cannot fit the available machine: never submitted
                pass
    got: dict = {}
    wanted = len(given)

    def on_start(s, e, rec):
        job = given.get(rec.job.id)
        if job is not None:
            got[job.id] = rec.start

    sim.subscribe(Event.START, on_start)
    sim.schedule()  # the pass at the state's own time (jobs that fit now start now)
    sim.run_until(lambda s: len(got) >= wanted)
    return got, {job.id: why for job, why in set_aside}


def recent_stream(submitted: Sequence[Job], now: float, span: float, repeats: int = 1
                  ) -> list[Job]:
    """A modelled stream of later submissions: the jobs submitted in the last ``span``
    seconds before ``now``, submitted again ``span`` later (and ``repeats`` times in all),
    each with its size, limit and user (no runtime: 0)."""
    recent = [j for j in submitted if now - span <= j.submit < now]
    return [replace(j, submit=j.submit + span * k, runtime=0.0, deps=())
            for k in range(1, repeats + 1) for j in recent]


def _quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted ``values`` (linear between order statistics)."""
    pos = q * (len(values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


class BandCalibration:
    """Bands widened by what past forecasts missed by (conformal-style): each forecast's
    error, once its job started, as a share of its lead (real start minus median, over
    the median minus the forecast's time, at least ``min_lead`` s); a band is widened to
    the 10% and 90% quantiles of the last ``keep`` of those shares, times its own lead.
    Only forecasts of jobs that have started by then count: nothing after a forecast's time.
    With ``halving`` (a live adapter, which forecasts every cycle: a long wait would
    otherwise fill the shares), a job's forecast is kept only when its lead is at most half
    the lead of its last one kept, so each job gives a few shares whatever the cycle and
    the jobs' time scale (``hpcopt.slurm.forecast.live_calibration``).
    The start is left as it is: on KTH-SP2's tuning slices the median share was near 0 for
    every lead, and moving starts by it (pooled, by lead, counting waiting jobs) raised the
    error 4-15% (``benchmarks/forecast_decompose.py --shifts``; held out, 3% on KTH-SP2
    and 32% on Theta: ``forecast_accuracy.py --methods hpcopt,hpcopt+shift``).
    """

    def __init__(self, keep: int = 5000, min_seen: int = 100, min_lead: float = 60.0,
                 halving: bool = False) -> None:
        self.min_seen, self.min_lead, self.halving = min_seen, min_lead, halving
        self._pending: dict[Hashable, list[tuple[float, float]]] = {}
        self._kept_lead: dict[Hashable, float] = {}  # with halving: each job's last kept lead
        self._shares: deque[float] = deque(maxlen=keep)

    def _lead(self, time: float, median: float) -> float:
        return max(self.min_lead, median - time)

    def record(self, time: float, forecasts: Sequence[JobForecast]) -> None:
        """Forecasts made at ``time``, to be scored when their jobs start (with
        ``halving``, those whose lead has halved since their job's last one kept)."""
        for f in forecasts:
            if f.start is None:
                continue
            if self.halving:
                lead = self._lead(time, f.start)
                if lead > self._kept_lead.get(f.job, math.inf) / 2:
                    continue
                self._kept_lead[f.job] = lead
            self._pending.setdefault(f.job, []).append((time, f.start))

    def started(self, job: Hashable, start: float) -> None:
        """``job`` started at ``start``: its forecasts' errors join the shares."""
        self._kept_lead.pop(job, None)
        for time, median in self._pending.pop(job, ()):
            self._shares.append((start - median) / self._lead(time, median))

    @property
    def ready(self) -> bool:
        """Whether ``min_seen`` errors are known (bands are widened from then on)."""
        return len(self._shares) >= self.min_seen

    def forget(self, waiting: Collection[Hashable]) -> None:
        """Drop the unscored forecasts of the jobs not in ``waiting`` and not started (gone
        unseen: cancelled, or started and ended between two reads)."""
        for job in [j for j in self._pending if j not in waiting]:
            del self._pending[job]
            self._kept_lead.pop(job, None)

    def adjust(self, time: float, forecasts: Sequence[JobForecast]) -> list[JobForecast]:
        """``forecasts`` made at ``time`` with their bands widened (unchanged until
        ``min_seen`` errors are known)."""
        if not self.ready:
            return list(forecasts)
        adjusted = self._adjuster(time)
        return [f if f.start is None or f.p10 is None or f.p90 is None else adjusted(f)
                for f in forecasts]

    def _adjuster(self, time: float) -> Callable[[JobForecast], JobForecast]:
        """How a forecast made at ``time`` (with a start and a band) is adjusted by the
        shares known now: its band widened to their 10% and 90% quantiles, times its lead."""
        shares = sorted(self._shares)
        low, high = _quantile(shares, 0.1), _quantile(shares, 0.9)

        def widened(f: JobForecast) -> JobForecast:
            assert f.start is not None and f.p10 is not None and f.p90 is not None
            lead = self._lead(time, f.start)
            return replace(f, p10=max(time, min(f.p10, f.start + low * lead)),
                           p90=max(f.p90, f.start + high * lead))

        return widened

    def calibrate(self, time: float, forecasts: Sequence[JobForecast]) -> list[JobForecast]:
        """``forecasts`` made at ``time``, widened by the errors known by then
        (``adjust``), and kept (as made) to be scored when their jobs start (``record``)."""
        out = self.adjust(time, forecasts)
        self.record(time, forecasts)
        return out

    def follow(self, sim) -> BandCalibration:
        """Learn each job's real start in the simulation ``sim`` at its moment (a start
        event), so a forecast along its replay sees only the starts before it."""
        sim.subscribe(Event.START, lambda s, e, rec: self.started(rec.job.id, rec.start))
        return self


# ---------------------------------------------------------------------- along a replay

def state_of(sim, time: float) -> tuple[ClusterState, dict]:
    """What a scheduler knows at ``time`` in a running simulation (its state stays as it is
    until ``sim.next_event_time``): the ``ClusterState`` (every job's runtime hidden: set to
    0) and the running jobs' start times."""
    hide = _hidden
    placed = sim.system.topology is not None or bool(sim.system.ssd_classes)
    running = tuple((hide(r.job), r.est_end) for r in sim.running)
    where = {r.job.id: r.allocation for r in sim.running} if placed else {}
    queue = tuple(map(hide, sim.queue))
    passed = ({j.id: sim.records[j.id].passed for j in queue}
              if sim.settings.starvation_bound is not None else {})
    state = ClusterState(float(time), sim.system, queue, running, placed=where, passed=passed)
    return state, {r.job.id: r.start for r in sim.running}


def _hidden(job: Job) -> Job:
    return replace(job, runtime=0.0, deps=())


@dataclass(frozen=True)
class Known:
    """What a forecast along a replay may use besides its ``ClusterState``: the running
    jobs' start times, the runtimes of the jobs finished so far, and the jobs submitted in
    the last ``recent`` seconds (runtimes hidden), for a modelled stream (``recent_stream``)."""

    started: dict
    history: RuntimeHistory
    submitted: tuple[Job, ...]


def replay_forecasts(sim, every: float, on_state: Callable[[ClusterState, Known], list],
                     *, history: RuntimeHistory | None = None, since: float | None = None,
                     recent: float = 0.0) -> list:
    """Run ``sim`` to its end, calling ``on_state(state, known)`` every ``every`` seconds
    from its first event (or ``since``) while jobs wait (``state_of``, ``Known``; ``history``
    is fed as jobs finish).  Returns the rows ``on_state`` answered, in order.  Both are made
    from what happened by then only, so nothing after a forecast's time reaches it."""
    if not every > 0:
        raise ValueError(f"forecast interval must be > 0 seconds, got {every!r}")
    history = RuntimeHistory() if history is None else history
    sim.subscribe(Event.COMPLETE, lambda s, e, rec: history.add(
        rec.job.user, rec.end - rec.start, rec.job.walltime))
    submitted: deque[Job] = deque()
    if recent > 0:
        sim.subscribe(Event.SUBMIT, lambda s, e, job: submitted.append(_hidden(job)))
    rows: list = []
    due = sim.next_event_time if since is None else float(since)
    while sim.next_event_time < math.inf:
        sim.run_until(lambda s, due=due: s.next_event_time > due)
        if sim.queue and sim.now <= due:
            state, started = state_of(sim, due)
            while submitted and submitted[0].submit < due - recent:
                submitted.popleft()
            rows.extend(on_state(state, Known(started, history, tuple(submitted))))
        due += every
        upcoming = sim.next_event_time
        if not sim.queue and due + every < upcoming < math.inf:  # idle: on to the next event
            due += every * math.floor((upcoming - due) / every)
    sim.run()  # ends the run as run() does (checks, the end event)
    return rows


def forecast_rows(state: ClusterState, forecasts: list[JobForecast]) -> list[dict]:
    """Table rows of ``forecasts`` made at ``state.time`` (``actual_start`` is filled in by
    ``join_actual``)."""
    by_id: dict = {job.id: job for job in state.queue}
    rows = []
    for f in forecasts:
        job = by_id[f.job]
        rows.append({"time": state.time, "job": f.job, "submit": job.submit, "nodes": job.nodes,
                     "walltime": job.walltime, "start": f.start, "p10": f.p10, "p50": f.p50,
                     "p90": f.p90})
    return rows


def join_actual(rows: list[dict], records: Mapping) -> list[dict]:
    """Each forecast row with the job's real start in the simulation (``actual_start``)."""
    for row in rows:
        row["actual_start"] = float(records[row["job"]].start)
    return rows


FORECAST_COLUMNS = ("time", "job", "submit", "nodes", "walltime", "start", "p10", "p50", "p90",
                    "actual_start")


def write_forecast_csv(rows: list[dict], path) -> None:
    """``rows`` (``forecast_rows`` joined by ``join_actual``) as a CSV file, one forecast of
    one job a line; a job that cannot run has empty start and band."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(FORECAST_COLUMNS)
        for row in rows:
            out.writerow(["" if row.get(k) is None else row[k] for k in FORECAST_COLUMNS])
