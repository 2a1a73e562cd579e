"""Start-time forecast accuracy on real traces: hpcopt's forecast against a Slurm-style
limit-based forecast, Slurm's own plan and a QBETS-style statistical one, on held-out slices.

Each slice is replayed under each policy of ``--policy`` (``fcfs`` with EASY backfilling by
default); every ``--every`` seconds of its evaluated weeks, each waiting job gets forecasts
made from the same moment's state, all compared with the start the job really had in that
replay:

- ``hpcopt``: ``hpcopt.sim.forecast.forecast`` (the same driver and policy run forward,
  runtimes drawn from the runtime/limit ratios of the jobs finished so far, ``--draws`` runs;
  start = median, band = 10%-90% widened by ``BandCalibration`` from the errors of the
  forecasts whose jobs started before);
- ``hpcopt+stream``: the same, with a modelled stream of later submissions: the jobs
  submitted in the day before, submitted again one, two and three days later;
- ``hpcopt+shift`` (not by default): ``hpcopt``'s runs with the start moved by the errors of
  earlier forecasts (``ShiftedCalibration``), a correction tried and not adopted;
- ``limits``: the same run forward with every job at its limit (what ``squeue --start``
  assumes), one run;
- ``slurm-plan`` (on the ``slurm`` replay only, in its place of ``limits``): Slurm's own
  forecast of its own schedule, what ``squeue --start`` shows: the start Slurm's passes at
  the forecast's time give each job (``slurm_plan``: the backfill plan's start,
  ``SlurmScheduler.planned_starts``, or now for a job started); a job the pass does not
  test (beyond ``bf_max_job_test``) or tests for a start now only (past
  ``bf_job_part_count_reserve`` reservations) has no forecast, as ``squeue --start``
  shows none;
- ``qbets``: no simulation: the waits of the last 1000 jobs of the job's size class (1, 2-4,
  5-16, 17-64, 65+ nodes) that started before the forecast, kept to those at least as long
  as the job has waited already; start = submit + their median, band = their 10%-90%.

A slice is ``--warmup-days`` of history (replayed, not scored) followed by ``--days``
evaluated days; the slices start on the given days of the trace (``--starts``).  The
forecast's choices (draws by user, the user's last 4 jobs with the same limit, running jobs
counted, the band's calibration, the one-day stream) were made on KTH-SP2 slices from days
60 and 150 (``forecast_decompose.py``); the defaults and the slices reported are others.
Errors are forecast start minus real start; "lead" is the real start minus the forecast's
time; "within 10%" counts errors at most a tenth of the job's real wait.  A sample with no
forecast counts in ``no_forecast`` (the share of samples) and in no error.

    python benchmarks/forecast_accuracy.py --trace KTH --starts 90,210 --days 7
    python benchmarks/forecast_accuracy.py --trace Theta --starts 60 --days 7
    python benchmarks/forecast_accuracy.py --trace KTH --starts 90,210 --days 7 \
        --policy fcfs,knapsack,slurm --methods hpcopt,limits,slurm-plan,qbets

Writes ``benchmarks/results/forecast_accuracy_<trace>.csv`` (``--policy fcfs``; else
``forecast_accuracy_<trace>_<policies>.csv``: one row per policy, method, slice and lead
bucket, "all" included) and prints the table.  With ``slurm`` among the policies it also
writes ``..._vs_slurm.csv`` and prints each hpcopt forecast's MAE over Slurm's plan's (each
on its own replay, as live on the testbed): over all samples, and over the samples of the
jobs both forecast at least once.
"""

from __future__ import annotations

import argparse
import bisect
import csv
import math
import statistics
import time
from collections import deque
from dataclasses import replace
from pathlib import Path

import hpcopt
from hpcopt.policies import build_policy
from hpcopt.scenario import trace_clock_origin
from hpcopt.sim.decide import decide
from hpcopt.sim.driver import Simulator
from hpcopt.sim.forecast import (
    BandCalibration,
    JobForecast,
    _quantile,
    forecast,
    recent_stream,
    replay_forecasts,
)
from hpcopt.sim.records import Event

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
TRACES = {"KTH": "hpc_swf/pwa/KTH-SP2-1996-2.1-cln.swf.gz",
          "Atlas": "hpc_swf/pwa/LLNL-Atlas-2006-2.1-cln.swf.gz",
          "Theta": "hpc_swf/alcf/theta_2022.swf.gz"}
LEADS = ((0, 600, "<10m"), (600, 3600, "10m-1h"), (3600, 6 * 3600, "1h-6h"),
         (6 * 3600, float("inf"), ">6h"))
SIZE_CLASSES = (1, 4, 16, 64)
DAY = 86400.0
DEFAULT_METHODS = ("hpcopt", "hpcopt+stream", "limits", "slurm-plan", "qbets")
METHODS = (*DEFAULT_METHODS, "hpcopt+shift")
SIMULATED = ("hpcopt", "hpcopt+stream", "limits", "slurm-plan")  # runs forward


def applies(method: str, policy: str) -> bool:
    """Whether ``method`` forecasts under ``policy``: Slurm's plan on the ``slurm`` replay
    only, where it takes the place of ``limits``."""
    if method == "slurm-plan":
        return policy == "slurm"
    return method != "limits" or policy != "slurm"


class WaitQuantiles:
    """QBETS-style: the waits of started jobs by size class, newest last."""

    def __init__(self, keep: int = 1000) -> None:
        self.waits = {k: deque(maxlen=keep) for k in range(len(SIZE_CLASSES) + 1)}

    @staticmethod
    def size_class(nodes: int) -> int:
        return bisect.bisect_left(SIZE_CLASSES, nodes)

    def on_start(self, sim, event, rec) -> None:
        self.waits[self.size_class(rec.job.nodes)].append(rec.start - rec.job.submit)

    def forecast(self, job, now: float) -> tuple[float, float, float]:
        waited = now - job.submit
        waits = sorted(w for w in self.waits[self.size_class(job.nodes)] if w >= waited)
        if not waits:
            return now, now, now
        pick = [waits[min(len(waits) - 1, int(q * len(waits)))] for q in (0.5, 0.1, 0.9)]
        return tuple(job.submit + w for w in pick)


LEAD_EDGES = [hi for _, hi, _ in LEADS[:-1]]  # the lead buckets' bounds, in seconds


class ShiftedCalibration(BandCalibration):
    """A point correction tried (``hpcopt+shift``; it did not help on the tuning slices,
    ``forecast_decompose.py --shifts``, and hpcopt does not use it): each forecast moved by
    the median share of the errors known so far, times its lead, and its band widened to
    their 10% and 90% quantiles (as ``BandCalibration``'s), so the band stays around the
    moved point.  ``by_lead`` keeps the shares apart by the forecast's own lead (``LEADS``'
    buckets; a bucket with fewer than ``min_seen`` known borrows them all); ``censored``
    also counts the kept forecasts whose jobs still wait, as errors of at least the share
    they have reached by now (Kaplan-Meier quantiles), so the forecasts whose jobs started
    soon are not all that a long lead learns from; a quantile that the known errors do not
    reach (too many still wait) leaves the point where it is and takes the band's low end
    from the known errors, its high end from the largest share reached."""

    def __init__(self, by_lead: bool, censored: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.by_lead, self.censored = by_lead, censored
        self._kept: dict[int, deque] = {}

    def _bucket(self, time: float, start: float) -> int:
        return bisect.bisect_right(LEAD_EDGES, start - time) if self.by_lead else 0

    def record(self, time, forecasts):
        for f in forecasts:
            if f.start is not None:
                entry = [time, f.start, self._lead(time, f.start), None]  # share once known
                self._kept.setdefault(self._bucket(time, f.start),
                                      deque(maxlen=self._shares.maxlen)).append(entry)
                self._pending.setdefault(f.job, []).append(entry)

    def started(self, job, start):
        for entry in self._pending.pop(job, ()):
            entry[3] = (start - entry[1]) / entry[2]
            self._shares.append(entry[3])

    def _quantiles(self, time: float, entries) -> tuple[float, float, float]:
        """The 10%, 50% and 90% quantiles of the shares of ``entries`` known at ``time``."""
        known = sorted(e[3] for e in entries if e[3] is not None)
        if not self.censored:
            return _quantile(known, 0.1), _quantile(known, 0.5), _quantile(known, 0.9)
        seen = sorted((e[3], 0) if e[3] is not None else ((time - e[1]) / e[2], 1)
                      for e in entries)
        left, got = 1.0, {}
        for gone, (share, waits) in enumerate(seen):
            if not waits:  # Kaplan-Meier: a waiting job leaves the risk set unscored
                left *= 1 - 1 / (len(seen) - gone)
                for q in (0.1, 0.5, 0.9):
                    if 1 - left >= q - 1e-12:
                        got.setdefault(q, share)
        return (got.get(0.1, known[0]), got.get(0.5, 0.0), got.get(0.9, seen[-1][0]))

    def _adjuster(self, time):
        pooled = [e for entries in self._kept.values() for e in entries]
        by_bucket: dict[int, tuple[float, float, float]] = {}

        def moved(f):
            bucket = self._bucket(time, f.start)
            if bucket not in by_bucket:
                mine = self._kept.get(bucket, ())
                enough = sum(e[3] is not None for e in mine) >= self.min_seen
                by_bucket[bucket] = self._quantiles(time, mine if enough else pooled)
            low, mid, high = by_bucket[bucket]
            lead = self._lead(time, f.start)
            start = max(time, f.start + mid * lead)
            return replace(f, start=start, p50=start,
                           p10=min(start, max(time, min(f.p10, f.start + low * lead))),
                           p90=max(start, f.p90, f.start + high * lead))

        return moved


def slurm_plan(state, policy) -> list[JobForecast]:
    """What ``squeue --start`` shows for each queued job of ``state`` under ``policy`` (a
    ``SlurmScheduler``): the passes Slurm runs at ``state.time`` (``decide``), a job they
    start at that time, the others the start the backfill plan gave them
    (``planned_starts``), or none."""
    made = decide(state, policy)
    now = {job.id for job, _ in made.started}
    plan = policy.planned_starts
    out = []
    for job in state.queue:
        t = state.time if job.id in now else plan.get(job.id)
        out.append(JobForecast(job.id, t, t, t, t, None if t is not None
                               else "not tested, or a start now only"))
    return out


def run_slice(jobs, system, policy: str, methods, first: float, warmup: float, days: float,
              every: float, draws: int, options: dict) -> list[dict]:
    """Forecast rows of ``methods`` on one slice replayed under ``policy`` built with
    ``options`` (module docstring)."""
    t0, t1 = first + warmup, first + warmup + days
    part = [j for j in jobs if first <= j.submit < t1]
    sim = Simulator(part, system, build_policy(policy, **options))
    twin = build_policy(policy, **options)
    methods = [m for m in methods if applies(m, policy)]
    waits = WaitQuantiles()
    sim.subscribe(Event.START, waits.on_start)
    timing = dict.fromkeys((m for m in methods if m in SIMULATED), 0.0)
    bands = {"hpcopt": BandCalibration().follow(sim),  # a start is known from its moment on
             "hpcopt+stream": BandCalibration().follow(sim),
             "hpcopt+shift": ShiftedCalibration(by_lead=True, censored=True).follow(sim)}

    def on_state(state, known):
        if state.time < t0:
            return []
        arrivals = recent_stream(known.submitted, state.time, DAY, 3)
        clock = time.perf_counter()
        got = {}
        for method, history, later in (("hpcopt", known.history, ()),
                                       ("hpcopt+stream", known.history, arrivals),
                                       ("limits", None, ()), ("slurm-plan", None, ())):
            if method not in timing:
                continue
            if method == "slurm-plan":
                got[method] = slurm_plan(state, twin)
                timing[method] += time.perf_counter() - clock
                clock = time.perf_counter()
                continue
            got[method] = forecast(state, twin, history, started=known.started, draws=draws,
                                   seed=0, arrivals=later)
            if method == "hpcopt" and "hpcopt+shift" in methods:  # the same runs, moved
                got["hpcopt+shift"] = bands["hpcopt+shift"].calibrate(state.time, got[method])
            band = bands.get(method)
            if band is not None:
                got[method] = band.calibrate(state.time, got[method])
            timing[method] += time.perf_counter() - clock
            clock = time.perf_counter()
        rows = []
        for k, job in enumerate(state.queue):
            base = {"policy": policy, "time": state.time, "job": job.id, "submit": job.submit}
            for method, fs in got.items():
                f = fs[k]
                rows.append({**base, "method": method, "start": f.start, "p10": f.p10,
                             "p90": f.p90})
            if "qbets" in methods:
                q = waits.forecast(job, state.time)
                rows.append({**base, "method": "qbets", "start": q[0], "p10": q[1],
                             "p90": q[2]})
        return rows

    rows = replay_forecasts(sim, every, on_state, since=t0, recent=DAY)
    for row in rows:
        row["actual"] = sim.records[row["job"]].start
    n_times = len({r["time"] for r in rows})
    print(f"  {policy}, slice from day {first / DAY - jobs[0].submit / DAY:.0f}: {len(part)} "
          f"jobs, {n_times} forecast times, {len(rows) // max(1, len(methods))} job "
          "forecasts; seconds forecasting (ms per forecast time): " + ", ".join(
              f"{m} {t:.1f} ({1000 * t / max(1, n_times):.1f})" for m, t in timing.items()),
          flush=True)
    return rows


def scores(samples: list[dict]) -> dict:
    """Count, share with no forecast, and over the samples with one: MAE, median absolute
    error, share within 1 minute and within 10% of the wait, band coverage (10%-90%; 0
    without a band), share late."""
    rows = [r for r in samples if r["start"] is not None]
    no_forecast = 1 - len(rows) / len(samples)
    if not rows:
        return {"n": len(samples), "no_forecast": no_forecast, "mae_s": math.nan,
                "median_ae_s": math.nan, "within_1min": math.nan, "within_10pct": math.nan,
                "band_coverage": math.nan, "late_share": math.nan}
    errs = [abs(r["start"] - r["actual"]) for r in rows]
    waits = [r["actual"] - r["submit"] for r in rows]
    inside = [r["p10"] is not None and r["p10"] <= r["actual"] <= r["p90"] for r in rows]
    n = len(rows)
    return {"n": len(samples), "no_forecast": no_forecast, "mae_s": statistics.fmean(errs),
            "median_ae_s": statistics.median(errs),
            "within_1min": sum(e <= 60 for e in errs) / n,
            "within_10pct": sum(e <= 0.1 * w for e, w in zip(errs, waits)) / n,
            "band_coverage": sum(inside) / n,
            "late_share": sum(r["start"] > r["actual"] for r in rows) / n}


def write_table(table: list[dict], out: Path) -> None:
    """``table`` (rows with the same keys) as a CSV file at ``out``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(table[0]))
        w.writeheader()
        w.writerows(table)


def against_slurm(trace: str, all_rows: list[tuple[str, dict]]) -> list[dict]:
    """Each hpcopt policy's forecasts' MAE over Slurm's plan's (each on its own replay), per
    slice and lead bucket: over all their samples (``jobs`` "all"), and over the samples of
    the jobs that both forecast at least once (``jobs`` "same")."""
    plan = [(s, r) for s, r in all_rows if r["method"] == "slurm-plan"]
    out = []
    for slice_name in sorted({s for s, _ in all_rows}) + ["all"]:
        def of(rows, slice_name=slice_name):
            return [r for s, r in rows if slice_name in ("all", s) and r["start"] is not None]
        slurm = of(plan)
        for policy in sorted({r["policy"] for _, r in all_rows} - {"slurm"}):
            for method in ("hpcopt", "hpcopt+shift", "hpcopt+stream", "limits"):
                mine = of([(s, r) for s, r in all_rows
                           if r["policy"] == policy and r["method"] == method])
                if not mine or not slurm:
                    continue
                both = {r["job"] for r in mine} & {r["job"] for r in slurm}
                for jobs, a, b in (("all", mine, slurm),
                                   ("same", [r for r in mine if r["job"] in both],
                                    [r for r in slurm if r["job"] in both])):
                    for lo, hi, lead in ((0, math.inf, "all"), *LEADS):
                        a_part = [abs(r["start"] - r["actual"]) for r in a
                                  if lo <= r["actual"] - r["time"] < hi]
                        b_part = [abs(r["start"] - r["actual"]) for r in b
                                  if lo <= r["actual"] - r["time"] < hi]
                        if a_part and b_part:
                            mae, base = statistics.fmean(a_part), statistics.fmean(b_part)
                            out.append({"trace": trace, "slice": slice_name, "policy": policy,
                                        "method": method, "jobs": jobs, "lead": lead,
                                        "n": len(a_part), "mae_s": mae,
                                        "slurm_n": len(b_part), "slurm_mae_s": base,
                                        "ratio": mae / base})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", choices=sorted(TRACES), default="KTH")
    ap.add_argument("--policy", default="fcfs",
                    help="policies to replay and forecast (comma-separated; slurm: Slurm's "
                    "defaults)")
    ap.add_argument("--scheduler-parameters", default=None,
                    help="the slurm policy's SchedulerParameters (key=value,...) over Slurm's "
                    "defaults")
    ap.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                    help="forecasts to make (comma-separated), where they apply; "
                    "hpcopt+shift (with hpcopt): its start moved by earlier errors")
    ap.add_argument("--starts", default="90,210",
                    help="days of the trace the slices start on (comma-separated)")
    ap.add_argument("--warmup-days", type=float, default=7)
    ap.add_argument("--days", type=float, default=7, help="evaluated days per slice")
    ap.add_argument("--every", type=float, default=600, help="seconds between forecasts")
    ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    policies = args.policy.split(",")
    methods = args.methods.split(",")
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        ap.error(f"--methods: unknown {', '.join(unknown)}; expected some of "
                 f"{', '.join(METHODS)}")
    if "hpcopt+shift" in methods and "hpcopt" not in methods:
        ap.error("--methods: hpcopt+shift moves hpcopt's forecasts: name hpcopt too")
    trace = hpcopt.load_trace(DATA / TRACES[args.trace])
    jobs, system = sorted(trace.jobs, key=lambda j: j.submit), trace.system
    print(f"{args.trace}: {len(jobs)} jobs on {system.nodes} nodes, policies {args.policy}, "
          f"forecast every {args.every:g} s, {args.draws} draws")
    all_rows: list[tuple[str, dict]] = []
    began = time.perf_counter()
    for day in (float(d) for d in args.starts.split(",")):
        first = jobs[0].submit + day * DAY
        for policy in policies:
            options = {"clock_origin": trace_clock_origin(trace)} if policy == "slurm" else {}
            if policy == "slurm" and args.scheduler_parameters:
                options["scheduler_parameters"] = args.scheduler_parameters
            rows = run_slice(jobs, system, policy, methods, first, args.warmup_days * DAY,
                             args.days * DAY, args.every, args.draws, options)
            all_rows.extend((f"day{day:g}", r) for r in rows)
    table = []
    for slice_name in sorted({s for s, _ in all_rows}) + ["all"]:
        mine = [r for s, r in all_rows if slice_name in ("all", s)]
        for policy in policies:
            for method in METHODS:
                of = [r for r in mine if r["policy"] == policy and r["method"] == method]
                for lo, hi, lead in ((0, float("inf"), "all"), *LEADS):
                    part = [r for r in of if lo <= r["actual"] - r["time"] < hi]
                    if part:
                        table.append({"trace": args.trace, "slice": slice_name,
                                      "policy": policy, "method": method, "lead": lead,
                                      **scores(part)})
    name = args.trace if policies == ["fcfs"] else f"{args.trace}_{'+'.join(policies)}"
    out = Path(args.out) if args.out else \
        Path(__file__).parent / "results" / f"forecast_accuracy_{name}.csv"
    write_table(table, out)
    print(f"\n{'slice':8} {'policy':9} {'method':13} {'lead':7} {'n':>7} {'none':>5} "
          f"{'MAE s':>8} {'med s':>7} {'<=1min':>7} {'<=10%':>6} {'band':>6} {'late':>5}")
    for r in table:
        if r["slice"] == "all" or r["lead"] == "all":
            print(f"{r['slice']:8} {r['policy']:9} {r['method']:13} {r['lead']:7} {r['n']:7d} "
                  f"{r['no_forecast']:5.3f} {r['mae_s']:8.0f} {r['median_ae_s']:7.0f} "
                  f"{r['within_1min']:7.3f} {r['within_10pct']:6.3f} "
                  f"{r['band_coverage']:6.3f} {r['late_share']:5.2f}")
    print(f"\nwrote {out}")
    ratios = against_slurm(args.trace, all_rows)
    if ratios:
        vs = out.with_name(out.stem + "_vs_slurm.csv")
        write_table(ratios, vs)
        print(f"\nMAE over Slurm's plan's (squeue --start), each on its own replay\n"
              f"{'slice':8} {'policy':9} {'method':13} {'jobs':5} {'lead':7} {'n':>7} "
              f"{'MAE s':>8} {'slurm n':>7} {'slurm s':>8} {'ratio':>6}")
        for r in (r for r in ratios if r["slice"] == "all"):
            print(f"{r['slice']:8} {r['policy']:9} {r['method']:13} {r['jobs']:5} "
                  f"{r['lead']:7} {r['n']:7d} {r['mae_s']:8.0f} {r['slurm_n']:7d} "
                  f"{r['slurm_mae_s']:8.0f} {r['ratio']:6.3f}")
        print(f"wrote {vs}")
    print(f"({time.perf_counter() - began:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
