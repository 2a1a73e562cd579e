"""``hpcopt slurm forecast``: when each pending job of the managed partition will start.

The forecast is ``hpcopt.sim.forecast.forecast`` (the driver and the policy run forward)
on the state an adapter's cycle decides on (``Adapter.read``), under the policy and driver
options of ``hpcopt slurm run``; so it follows hpcopt's own rule for the held jobs, which
Slurm has no forecast for.  Runtimes are predicted from the runtime/limit ratios of ended
jobs: from accounting (``sacct``, the jobs that ended in the last ``days`` days) where
there is accounting, else from the jobs this process saw end (an adapter writing forecasts
each cycle, ``ForecastingAdapter``), else every job runs to its limit.  Later submissions
are not modelled.

Each pending job gets a row: jobs hpcopt released that Slurm has not started start now; a
held job that cannot start now enters the forward run at the earliest it could (its begin
time, the estimated end of the jobs on the nodes it asks, the time enough of the nodes it
does not exclude are free, the forecast end of the jobs it depends on), never before; a job
left held (by the administrator, asking what hpcopt does not schedule), one whose earliest
start is unknown (a node it needs is down) or too large for the partition's available nodes
has no start and says why.

A band is the 10%-90% of the draws' starts.  An adapter writing forecasts each cycle widens
it by the errors of its own earlier forecasts (``BandCalibration``: each scored when the
job is seen running), as the simulator does; ``hpcopt slurm forecast`` run alone has no
forecasts of its own before, so its bands are the draws' (``"bands": "raw"``).
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from ..errors import HpcoptError
from ..sim.forecast import BandCalibration, forecast, forecast_end
from ..sim.runtime_history import RuntimeHistory
from .adapter import ACTIVE, STARTING, Adapter, CycleState, Settings, names_partition
from .record import CycleRecord
from .state import Slurm, SlurmCommandError, Snapshot


def live_calibration() -> BandCalibration:
    """How a live adapter calibrates its bands: a job's forecast kept when first made and
    each time its lead has halved (it forecasts every cycle), widening from the 10th error
    known (it starts cold at every restart; a replay, which learns all along, waits for
    100).  On KTH-SP2's tuning weeks in simulation its band held 83% of the real starts
    (``benchmarks/forecast_decompose.py --live-bands``; keeping every forecast made every
    600 s and widening from the 100th error: 80%)."""
    return BandCalibration(halving=True, min_seen=10)


SACCT_FIELDS = "JobIDRaw,UID,ElapsedRaw,TimelimitRaw,Start,End,State,Partition"
ENDED = "CD,F,TO,CA,OOM,NF,PR,DL"


def sacct_history(slurm: Slurm, partition: str, now: float, days: float = 14.0
                  ) -> RuntimeHistory | None:
    """The runtime/limit ratios of the partition's jobs that ran and ended in the last
    ``days`` days, from accounting, in the order they ended; ``None`` without accounting."""
    since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(now - days * 86400))
    try:
        text = slurm.call("sacct", "--allusers", "--parsable2", "--noheader", "-X",
                          f"--format={SACCT_FIELDS}", f"--starttime={since}", "--endtime=now",
                          f"--state={ENDED}", f"--partition={partition}", retry=False)
    except SlurmCommandError:
        return None  # no accounting storage (or slurmdbd down): no history from it
    ended = []
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) != 8:
            continue
        _, uid, elapsed, limit, start, end, _state, _ = parts
        if not (uid.isdigit() and elapsed.isdigit() and limit.isdigit()) or start == "Unknown":
            continue  # never started, or no limit (UNLIMITED, Partition_Limit)
        ended.append((end, int(uid), float(elapsed), float(limit) * 60.0))
    history = RuntimeHistory()
    for _, uid, elapsed, limit in sorted(ended):  # ISO end times sort as text
        history.add(uid, elapsed, limit)
    return history


def pending_forecasts(snap: Snapshot, state: CycleState, partition: str, policy, history, *,
                      draws: int = 20, seed: int = 0, bands: BandCalibration | None = None,
                      **options) -> list[dict]:
    """One row per pending job of ``partition`` (a pending array: one per task hpcopt
    reads): ``id`` (the key Slurm's commands take), ``user`` (uid), ``nodes``, and
    ``start``, ``p10``, ``p90`` (epoch seconds), or ``None`` with ``reason``; in submission
    order (module docstring).  With ``bands``, the held jobs' bands are calibrated by it
    and their forecasts kept in it, by their ids."""
    users = {str(j.id): j.user_id for j in snap.jobs}
    users.update({str(key): e.records[0].user_id for key, e in state.entries.items()})
    started = {str(j.id): j.start for j in snap.jobs if j.state in ACTIVE and j.start > 0}

    def own(job):
        return replace(job, user=users.get(str(job.id), -1))

    cluster = state.cluster
    assert cluster is not None  # (cycle_state sets it)
    cluster = replace(cluster, queue=tuple(map(own, cluster.queue)),
                      running=tuple((own(job), end) for job, end in cluster.running),
                      starting=tuple(map(own, cluster.starting)))
    at: dict = {job.id: started[str(job.id)] for job, _ in cluster.running
                if str(job.id) in started}
    later, why = _later_jobs(state, cluster, policy, history, at, own, draws=draws, seed=seed,
                             **options)
    got = {f.job: f for f in forecast(replace(cluster, queue=cluster.queue + later), policy,
                                      history, started=at, draws=draws, seed=seed, **options)}
    now = cluster.time

    def entry_of(key):
        return state.entries[key] if key in state.entries else state.later[key].entry

    if bands is not None:  # calibrated under the ids Slurm shows the jobs started with
        keyed = [replace(f, job=entry_of(key).key) for key, f in got.items()]
        got = {key: replace(f, job=key) for key, f in zip(got, bands.calibrate(now, keyed))}
    entries: dict[int, list] = {}
    for key, entry in [*state.entries.items(), *((k, w.entry) for k, w in state.later.items())]:
        entries.setdefault(entry.records[0].id, []).append(key)
    rows = []
    for j in sorted(snap.jobs, key=lambda j: (j.submit, j.id)):
        if j.state != "PENDING" or not names_partition(j.partition, partition) \
                or (j.het_id and j.het_offset):  # a hetjob is one row, at its leader
            continue
        if not j.held:
            soon = j.key in state.starting and j.reason in STARTING
            rows.append(_row(j.key, j, now if soon else None, None, None,
                             None if soon else f"released, waiting: {j.reason}"))
        elif j.id not in entries:
            rows.append(_row(j.key, j, None, None, None, "left held by hpcopt (see the "
                                                         "adapter's notes)"))
        for key in entries.get(j.id, ()) if j.held else ():
            entry = entry_of(key)
            f = got.get(key)
            if f is None:
                rows.append(_row(entry.key, j, None, None, None, why[key], entry.job.nodes))
            else:
                rows.append(_row(entry.key, j, f.start, f.p10, f.p90, f.reason,
                                 entry.job.nodes))
    return rows


def _later_jobs(state: CycleState, cluster, policy, history, at: dict, own, **options):
    """The held jobs that cannot start now (``CycleState.later``) as the forecast's queued
    jobs, each entering the run at the earliest it could start (``earliest``): its begin
    time or its asked nodes' estimated free time, and for a dependency no earlier than the
    forecast end of each job it depends on (a first forecast without them gives those of
    queued jobs; running ones end by their predicted runtime).  Also why each left out has
    no forecast."""
    timed, waiting, why = [], [], {}
    for key, w in state.later.items():
        if w.not_before is None:
            why[key] = "cannot start now, and no time is known when it could (a node it " \
                       "needs is down or unreadable, or its dependency failed)"
        elif w.after:
            waiting.append((key, w))
        else:
            timed.append(replace(own(w.entry.job), earliest=w.not_before))
    if not waiting:
        return tuple(timed), why
    first = forecast(replace(cluster, queue=cluster.queue + tuple(timed)), policy, history,
                     started=at, **options)
    jobs = {job.id: job for job in cluster.queue + tuple(timed)}
    ends: dict[int, list[float]] = {}  # a job id (an array's: each task) -> forecast ends
    for f in first:
        if f.start is not None:
            ends.setdefault(_base(f.job), []).append(
                forecast_end(jobs[f.job], f.start, history))
    for job, est_end in cluster.running:
        start = at.get(job.id, cluster.time)
        ends.setdefault(_base(job.id), []).append(forecast_end(
            replace(job, walltime=max(0.0, est_end - start)), start, history,
            elapsed=max(0.0, cluster.time - start)))
    for job in cluster.starting:
        ends.setdefault(_base(job.id), []).append(forecast_end(job, cluster.time, history))
    for key, w in waiting:
        known = [max(ends[d]) for d in w.after if d in ends]
        if not known or (len(known) < len(w.after) and not w.any_of):
            why[key] = (f"waits for job {', '.join(map(str, w.after))}, which has no "
                        "forecast end")
            continue
        bound = max(w.not_before, min(known) if w.any_of else max(known))
        timed.append(replace(own(w.entry.job), earliest=bound))
    return tuple(timed), why


def _base(jid) -> int:
    """The Slurm job id of a core id (an array task's: its array's)."""
    return int(str(jid).split("_")[0])


def _row(key: str, j, start, p10, p90, reason, nodes: int | None = None) -> dict:
    if start is not None and p10 is None:
        p10 = p90 = start
    return {"id": key, "user": j.user_id, "nodes": j.nodes if nodes is None else nodes,
            "start": start, "p10": p10, "p90": p90, "reason": reason}


def table_text(rows: list[dict], now: float) -> str:
    """The rows as a table: id, user, nodes, forecast start (local time and in how long) and
    the 10%-90% band."""
    lines = [f"{'JOBID':>14} {'UID':>6} {'NODES':>5}  {'START':19} {'IN':>8}  "
             f"{'10%':19}  {'90%':19}"]

    def at(t):
        return "-" if t is None else time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))

    for r in rows:
        if r["start"] is None:
            lines.append(f"{r['id']:>14} {r['user']:>6} {r['nodes']:>5}  "
                         f"no forecast: {r['reason']}")
            continue
        lines.append(f"{r['id']:>14} {r['user']:>6} {r['nodes']:>5}  {at(r['start']):19} "
                     f"{max(0.0, r['start'] - now):7.0f}s  {at(r['p10']):19}  {at(r['p90']):19}")
    return "\n".join(lines)


def document(rows: list[dict], now: float, partition: str, source: str,
             bands: str = "raw") -> dict:
    """The JSON of ``--json`` and of the forecast file (``bands``: ``"calibrated"`` or
    ``"raw"``, the draws' own)."""
    return {"time": round(now, 3), "partition": partition, "history": source, "bands": bands,
            "jobs": [{**r, **{k: None if r[k] is None else round(r[k], 3)
                              for k in ("start", "p10", "p90")}} for r in rows]}


def write_public(path: str | Path, doc: dict) -> None:
    """Replace ``path`` with ``doc`` at once (a reader never sees half a file), readable by
    every user (mode 0644)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f)
            f.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class ForecastingAdapter(Adapter):
    """An adapter that, after each cycle, writes every pending job's forecast to
    ``forecast_file`` (``document``; world-readable), from the state the cycle read.  Its
    history: accounting, read at the first cycle and every ``refresh`` seconds; without
    accounting, the jobs it saw end (each one's runtime to within a cycle).  The forecasts
    run a copy of the policy, so the decisions stay what they are without them.  Their
    bands are calibrated by its own earlier forecasts (``live_calibration``), each scored
    when it sees the job running, unless ``raw_bands``."""

    def __init__(self, policy, settings: Settings = Adapter.DEFAULT, *,
                 forecast_file: str | Path, draws: int = 20, refresh: float = 600.0,
                 raw_bands: bool = False, **kwargs) -> None:
        super().__init__(policy, settings, **kwargs)
        self.forecast_file = Path(forecast_file)
        self.draws, self.refresh = draws, refresh
        self.bands = None if raw_bands else live_calibration()
        self._last: tuple[Snapshot, CycleState] | None = None
        self._history: RuntimeHistory | None = None
        self._source = "limits"
        self._read_at = -float("inf")
        self._seen: dict[int, tuple[int, float, float]] = {}  # running: (uid, start, limit)
        self._twin = copy.deepcopy(policy)  # forecasts leave the deciding policy as it is

    def read_state(self, snap: Snapshot | None = None) -> tuple[Snapshot, CycleState]:
        self._last = super().read_state(snap)
        return self._last

    def cycle(self, snap: Snapshot | None = None) -> CycleRecord:
        self._last = None
        rec = super().cycle(snap)
        if self._last is not None:
            snap, state = self._last
            try:
                history, source = self._learn(snap)
                self._score(snap)
                rows = pending_forecasts(snap, state, self.partition, self._twin, history,
                                         draws=self.draws, bands=self.bands, **self.options)
                if self.bands is not None:
                    self.bands.forget({r["id"] for r in rows})
                calibrated = self.bands is not None and self.bands.ready
                write_public(self.forecast_file,
                             document(rows, snap.time, self.partition, source,
                                      "calibrated" if calibrated else "raw"))
            except (HpcoptError, OSError) as exc:  # a forecast never stops the scheduling
                self.say(f"cycle {self.cycles}: no forecasts written: {exc}")
        return rec

    def _score(self, snap: Snapshot) -> None:
        """Each job seen running: its earlier forecasts scored against its real start."""
        if self.bands is not None:
            for j in snap.jobs:
                if j.state in ACTIVE and j.start > 0:
                    self.bands.started(j.key, j.start)

    def _learn(self, snap: Snapshot) -> tuple[RuntimeHistory | None, str]:
        if snap.time - self._read_at >= self.refresh:
            self._read_at = snap.time
            accounted = sacct_history(self.slurm, self.partition, snap.time)
            if accounted is not None:
                self._history, self._source = accounted, "sacct"
        if self._source == "sacct":
            return self._history, "sacct"
        mine = [j for j in snap.jobs if names_partition(j.partition, self.partition)]
        now_running = {j.id: (j.user_id, j.start, j.limit) for j in mine
                       if j.state in ACTIVE and j.start > 0 and j.limit}
        for jid, (uid, start, limit) in self._seen.items():
            if jid not in now_running:  # ended since the last cycle
                if self._history is None:
                    self._history = RuntimeHistory()
                self._history.add(uid, min(limit, max(0.0, snap.time - start)), limit)
        self._seen = now_running
        if self._history is None:
            return None, "limits"
        return self._history, "jobs seen ending"


def _with_exclusions(slurm: Slurm, snap: Snapshot, partition: str) -> Snapshot:
    """``snap`` with the nodes each held job of ``partition`` excludes (one ``squeue``: the
    read of all jobs cannot carry them, and a job that excludes nodes may be unable to start
    now)."""
    held = [j.id for j in snap.jobs if j.held and names_partition(j.partition, partition)]
    excluded = slurm.excluded_nodes(held)
    return replace(snap, jobs=tuple(replace(j, excluded_nodes=excluded[j.id])
                                    if j.id in excluded else j for j in snap.jobs))


def run_forecast(args, options: dict) -> int:
    """``hpcopt slurm forecast``: one read, one forecast, a table or ``--json``."""
    from ..policies import build_policy

    slurm = Slurm(timeout=args.timeout, retries=args.retries, env=dict(os.environ))
    policy = build_policy(args.policy, **options)
    policy.reset(args.seed)
    adapter = Adapter(policy, Settings(args.partition, dry_run=True), slurm=slurm,
                      order=args.order, backfill=args.backfill, window=args.window)
    snap, state = adapter.read_state(_with_exclusions(slurm, adapter.read(), args.partition))
    history = sacct_history(slurm, args.partition, snap.time, args.history_days)
    source = "sacct" if history is not None else "limits"
    rows = pending_forecasts(snap, state, args.partition, policy, history, draws=args.draws,
                             seed=args.seed or 0, **adapter.options)
    if args.json:
        print(json.dumps(document(rows, snap.time, args.partition, source)))
    else:
        print(f"partition {args.partition} at "
              f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.localtime(snap.time))}: "
              f"{len(rows)} pending, runtimes from "
              f"{'accounting' if history is not None else 'the limits (no accounting)'}")
        print(table_text(rows, snap.time))
    return 0
