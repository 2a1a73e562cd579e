"""Where a start-time forecast's error comes from, on a trace slice: the same forecast made
with each source of error taken away in turn.

At every ``--every`` seconds of a slice's evaluated days (as ``forecast_accuracy.py``), each
waiting job is forecast by the same forward run of the policy (``hpcopt.sim.forecast``) with
its inputs told or predicted:

- runtimes: ``true`` (the jobs' real runtimes, running and queued), ``true-running`` (the
  running jobs' real ends, the queued jobs' runtimes predicted), ``true-queued`` (the
  reverse), ``predicted`` (drawn from the jobs finished so far, ``--draws`` runs, median),
  or ``limits`` (every job to its limit: Slurm's ``squeue --start``);
- later submissions: ``+arrivals`` submits the jobs really submitted after the forecast's
  time (until the last of the waiting jobs really started), ``+stream`` the modelled stream
  (``recent_stream``: the day before, one, two and three days later); none otherwise.

``true+arrivals`` must be exact (it checks the forward run is the replay); the rows between
say how much each source costs.  This is a diagnosis: the told inputs are from after the
forecast's time, so only ``predicted``, ``predicted+stream`` and ``limits`` are forecasts.
Run it on tuning slices, not on the held-out ones that ``forecast_accuracy.py`` reports:

    python benchmarks/forecast_decompose.py --trace KTH --starts 60,150 --days 7

``--shifts`` adds ``predicted`` with its point moved by the errors of earlier forecasts
(``forecast_accuracy.ShiftedCalibration``, a correction tried, not hpcopt's): ``shift-all``
(the median share of every error known so far, times the forecast's lead), ``shift-lead``
(the median share of the errors of forecasts in the same lead bucket),
``shift-lead-censored`` (the same, counting the forecasts whose jobs still wait as errors at
least as late as now), and ``shift-lead-told``, a diagnosis: each bucket's median share over
the whole slice, errors after the forecast's time included (the best a constant shift per
bucket could do):

    python benchmarks/forecast_decompose.py --trace KTH --starts 60,150 --days 7 \
        --variants predicted,limits \
        --shifts shift-all,shift-lead,shift-lead-censored,shift-lead-told

With ``--learn-warmup`` the calibrations (``predicted+band`` and the shifts) also learn from
``predicted`` forecast along the warm-up days (not scored), as one running for long would.

Writes ``benchmarks/results/forecast_decompose_<trace>_<policy>.csv`` (MAE and mean signed
error per variant and lead bucket) and prints it.
"""

from __future__ import annotations

import argparse
import bisect
import heapq
import statistics
import time
from pathlib import Path

from forecast_accuracy import (  # type: ignore[import-not-found]
    DATA,
    DAY,
    LEAD_EDGES,
    LEADS,
    TRACES,
    ShiftedCalibration,
    write_table,
)

import hpcopt
from hpcopt.policies import build_policy
from hpcopt.scenario import trace_clock_origin
from hpcopt.sim.driver import Simulator
from hpcopt.sim.forecast import (
    BandCalibration,
    JobForecast,
    forecast,
    recent_stream,
    replay_forecasts,
)
from hpcopt.sim.runtime_history import RuntimeHistory
from hpcopt.slurm.forecast import live_calibration


class TellRuntimes(RuntimeHistory):
    """A history that tells the real runtime of the jobs in ``told`` and predicts the others
    from ``fallback`` (``None``: their limits)."""

    def __init__(self, runtimes: dict, told, fallback: RuntimeHistory | None) -> None:
        super().__init__()
        self.real, self.told, self.fallback = runtimes, told, fallback

    def with_running(self, running) -> RuntimeHistory:
        fallback = None if self.fallback is None else self.fallback.with_running(running)
        return TellRuntimes(self.real, self.told, fallback)

    def job_runtimes(self, job, limit: float, elapsed: float = 0.0) -> list[float]:
        if job.id in self.told:
            return [min(limit, self.real[job.id])]
        if self.fallback is None:
            return [limit]
        return self.fallback.job_runtimes(job, limit, elapsed)


VARIANTS = ("true+arrivals", "true", "true-running", "true-queued", "predicted+arrivals",
            "predicted", "predicted+stream", "limits+arrivals", "limits")


def run_slice(jobs, system, policy: str, first: float, warmup: float, days: float,
              every: float, draws: int, variants, together: str, history: dict,
              point: str = "median", shifts=(), learn_warmup: bool = False,
              options: dict | None = None, live_bands: bool = False) -> list[dict]:
    """The rows of ``variants`` (and the calibrated ``predicted``: ``predicted+band``, the
    ``shifts``) on one slice, the policy built with ``options``; with ``learn_warmup`` the
    calibrations learn from ``predicted`` forecast along the warm-up days too (those rows are
    not returned), as a calibration running for long would have; with ``live_bands``,
    ``predicted+band`` is calibrated as a live adapter calibrates (``live_calibration``)."""
    t0, t1 = first + warmup, first + warmup + days
    part = [j for j in jobs if first <= j.submit < t1]
    real = {j.id: j.runtime for j in part}
    options = options or {}
    plain = Simulator(part, system, build_policy(policy, **options))
    plain.run()
    actual = {jid: rec.start for jid, rec in plain.records.items()}
    by_submit = sorted(part, key=lambda j: j.submit)
    sim = Simulator(part, system, build_policy(policy, **options))
    twin = build_policy(policy, **options)
    timing = dict.fromkeys(variants, 0.0)

    def on_state(state, known):
        if state.time < t0 and not (learn_warmup and "predicted" in variants):
            return []
        cut = max(actual[j.id] for j in state.queue)
        future = [j for j in by_submit if state.time < j.submit <= cut]
        running = {job.id for job, _ in state.running} | {job.id for job in state.starting}
        queued = {job.id for job in state.queue}
        everyone = running | queued | {j.id for j in future}
        setups = {
            "true+arrivals": (TellRuntimes(real, everyone, None), future, 1),
            "true": (TellRuntimes(real, everyone, None), (), 1),
            "true-running": (TellRuntimes(real, running, known.history), (), draws),
            "true-queued": (TellRuntimes(real, queued, known.history), (), draws),
            "predicted+arrivals": (known.history, future, draws),
            "predicted": (known.history, (), draws),
            "predicted+stream": (known.history,
                                 recent_stream(known.submitted, state.time, DAY, 3), draws),
            "limits+arrivals": (None, future, 1),
            "limits": (None, (), 1)}
        rows = []
        for name in variants if state.time >= t0 else ["predicted"]:
            history, later, n = setups[name]
            clock = time.perf_counter()
            got = forecast(state, twin, history, started=known.started, draws=n, seed=0,
                           arrivals=later, together=together, point=point)
            timing[name] += time.perf_counter() - clock
            for job, f in zip(state.queue, got):
                if f.start is not None:
                    rows.append({"variant": name, "time": state.time, "job": job.id,
                                 "submit": job.submit, "start": f.start,
                                 "actual": actual[job.id],
                                 "p10": f.p10, "p90": f.p90,
                                 "inside": f.p10 <= actual[job.id] <= f.p90,
                                 "warmup": state.time < t0})
        return rows

    rows = replay_forecasts(sim, every, on_state, since=first if learn_warmup else t0,
                            recent=DAY, history=RuntimeHistory(**history))
    if "predicted" in variants:
        predicted = [r for r in rows if r["variant"] == "predicted"]
        rows += calibrated(predicted, live_calibration() if live_bands else BandCalibration(),
                           "predicted+band")
        for name in shifts:
            rows += shifted_told(predicted) if name == "shift-lead-told" else \
                calibrated(predicted, SHIFTS[name](), f"predicted+{name}")
    rows = [r for r in rows if not r["warmup"]]
    bad = [r for r in rows if r["actual"] != sim.records[r["job"]].start]
    assert not bad, "the replay with forecasts differs from the plain one"
    print(f"  slice from day {(first - jobs[0].submit) / DAY:.0f}: {len(part)} jobs, "
          f"{sum(r['variant'] == variants[0] for r in rows)} job forecasts; seconds per "
          "variant: "
          + ", ".join(f"{k} {v:.0f}" for k, v in timing.items()), flush=True)
    return rows


def calibrated(rows: list[dict], calibration: BandCalibration, variant: str) -> list[dict]:
    """``rows`` (one variant's, in time order) as ``calibration`` adjusts them along the slice
    (bands widened, points moved where it moves them), renamed ``variant``: each forecast
    time sees the errors of jobs started by then."""
    by_time: dict = {}
    for r in rows:
        by_time.setdefault(r["time"], []).append(r)
    starts = sorted((r["actual"], r["job"]) for r in rows)
    out, k, seen = [], 0, set()
    for t, now in by_time.items():
        while k < len(starts) and starts[k][0] <= t:
            if starts[k][1] not in seen:
                calibration.started(starts[k][1], starts[k][0])
                seen.add(starts[k][1])
            k += 1
        fs = [JobForecast(r["job"], r["start"], r["p10"], r["start"], r["p90"]) for r in now]
        for r, f in zip(now, calibration.calibrate(t, fs)):
            out.append({**r, "variant": variant, "start": f.start, "p10": f.p10, "p90": f.p90,
                        "inside": f.p10 <= r["actual"] <= f.p90})
    return out


SHIFTS = {"shift-all": lambda: ShiftedCalibration(by_lead=False),
          "shift-lead": lambda: ShiftedCalibration(by_lead=True),
          "shift-lead-censored": lambda: ShiftedCalibration(by_lead=True, censored=True),
          "shift-lead-told": None}


def shifted_told(rows: list[dict]) -> list[dict]:
    """``rows`` moved by their lead bucket's median share over all of ``rows`` (errors after
    each forecast's time included: a diagnosis, the best one constant shift per bucket
    does; the warm-up's rows left out), bands as the calibrated ones of ``calibrated``."""
    def bucket(r):
        return bisect.bisect_right(LEAD_EDGES, r["start"] - r["time"])

    def lead(r):
        return max(60.0, r["start"] - r["time"])

    shares: dict[int, list[float]] = {}
    for r in (r for r in rows if not r["warmup"]):
        shares.setdefault(bucket(r), []).append((r["actual"] - r["start"]) / lead(r))
    mid = {k: statistics.median(v) for k, v in sorted(shares.items())}
    print("  the median error per bucket of the forecast's lead, as a share of it: " + ", ".join(
        f"{LEADS[k][2]} {m:+.3f} ({len(shares[k])})" for k, m in mid.items()), flush=True)
    out = []
    for r in calibrated(rows, BandCalibration(), "predicted+shift-lead-told"):
        start = max(r["time"], r["start"] + mid.get(bucket(r), 0.0) * lead(r))
        p10, p90 = min(r["p10"], start), max(r["p90"], start)
        out.append({**r, "start": start, "p10": p10, "p90": p90,
                    "inside": p10 <= r["actual"] <= p90})
    return out


def runtime_error_share(jobs: list[dict] | list, first: float, last: float) -> float:
    """How well one job's runtime is predicted, against its limit: the summed error of the
    median of its predicted runtimes (``RuntimeHistory``, fed as if each job ended at its
    submit plus its runtime) over the summed error of its limit, for the jobs submitted in
    [first, last); ``jobs`` are ``Job``s in submit order."""
    history, ends = RuntimeHistory(), []
    err = over = 0.0
    for job in jobs:
        while ends and ends[0][0] <= job.submit:
            _, user, runtime, limit = heapq.heappop(ends)
            history.add(user, runtime, limit)
        runtime = min(job.runtime, job.walltime)
        if first <= job.submit < last:
            times = history.runtimes(job.user, job.walltime)
            err += abs(runtime - times[len(times) // 2])
            over += job.walltime - runtime
        heapq.heappush(ends, (job.submit + job.runtime, job.user, job.runtime, job.walltime))
    return err / over if over > 0 else float("nan")


def testbed_share() -> int:
    """``runtime_error_share`` of the slice ``slurm_forecast.py`` runs live (its defaults;
    one user, as the testbed submits it)."""
    from types import SimpleNamespace

    from slurm_validation import DEFAULT_TRACE, scaled_slice  # type: ignore[import-not-found]

    from hpcopt.domain import Job

    scale = SimpleNamespace(trace=str(DEFAULT_TRACE), first=5000, jobs=100, nodes=8,
                            run_min=10, run_max=60, limit_max=4, load=1.1)
    jobs = [Job(k, j["at"], float(j["sleep"]), 60.0 * j["limit"], j["nodes"], user=1)
            for k, j in enumerate(scaled_slice(scale))]
    share = runtime_error_share(jobs, -1.0, float("inf"))
    print(f"testbed slice: one job's predicted runtime errs by {share:.3f} of its limit's error")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", choices=sorted(TRACES), default="KTH")
    ap.add_argument("--policy", default="fcfs")
    ap.add_argument("--starts", default="60,150")
    ap.add_argument("--warmup-days", type=float, default=7)
    ap.add_argument("--days", type=float, default=7)
    ap.add_argument("--every", type=float, default=600)
    ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--shifts", default="",
                    help="point corrections of predicted to add (comma-separated): "
                    + ", ".join(SHIFTS))
    ap.add_argument("--learn-warmup", action="store_true",
                    help="the calibrations learn along the warm-up days too")
    ap.add_argument("--together", default="user",
                    help="jobs drawing the same runtime quantile in a run (forecast's together)")
    ap.add_argument("--per-user", type=int, default=RuntimeHistory().per_user,
                    help="finished jobs kept per user (RuntimeHistory's per_user)")
    ap.add_argument("--by-limit", action=argparse.BooleanOptionalAction,
                    default=RuntimeHistory().by_limit,
                    help="a user's jobs with the same limit first (RuntimeHistory's by_limit)")
    ap.add_argument("--point", choices=("median", "mean"), default="median",
                    help="the start given: median or mean of the runs (forecast's point)")
    ap.add_argument("--live-bands", action="store_true",
                    help="predicted+band calibrated as a live adapter calibrates its bands")
    ap.add_argument("--out", default=None)
    ap.add_argument("--testbed-share", action="store_true",
                    help="only print runtime_error_share of slurm_forecast.py's testbed slice")
    args = ap.parse_args(argv)
    if args.testbed_share:
        return testbed_share()
    variants = args.variants.split(",")
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        ap.error(f"unknown variants {unknown}; expected some of {', '.join(VARIANTS)}")
    shifts = [name for name in args.shifts.split(",") if name]
    if sorted(set(shifts) - set(SHIFTS)) or (shifts and "predicted" not in variants):
        ap.error(f"--shifts: expected some of {', '.join(SHIFTS)}, with predicted a variant")
    trace = hpcopt.load_trace(DATA / TRACES[args.trace])
    jobs, system = sorted(trace.jobs, key=lambda j: j.submit), trace.system
    rows: list[dict] = []
    for day in (float(d) for d in args.starts.split(",")):
        first = jobs[0].submit + (day + args.warmup_days) * DAY
        share = runtime_error_share(jobs, first, first + args.days * DAY)
        print(f"  day {day:g}: one job's predicted runtime errs by {share:.3f} of its limit's "
              "error (runtime_error_share)", flush=True)
        for r in run_slice(jobs, system, args.policy, jobs[0].submit + day * DAY,
                           args.warmup_days * DAY, args.days * DAY, args.every, args.draws,
                           variants, args.together,
                           {"per_user": args.per_user, "by_limit": args.by_limit},
                           args.point, shifts, args.learn_warmup,
                           {"clock_origin": trace_clock_origin(trace)}
                           if args.policy == "slurm" else None, args.live_bands):
            rows.append({**r, "slice": f"day{day:g}"})
    limits_mae = {}
    table = []
    names = [*variants, "predicted+band", *(f"predicted+{name}" for name in shifts)] \
        if "predicted" in variants else variants
    for lo, hi, lead in ((0, float("inf"), "all"), *LEADS):
        for name in names:
            part = [r for r in rows if r["variant"] == name and lo <= r["actual"] - r["time"] < hi]
            if not part:
                continue
            errs = [r["start"] - r["actual"] for r in part]
            mae = statistics.fmean(abs(e) for e in errs)
            if name == "limits":
                limits_mae[lead] = mae
            table.append({"trace": args.trace, "policy": args.policy, "lead": lead,
                          "variant": name, "n": len(part), "mae_s": round(mae, 1),
                          "mean_error_s": round(statistics.fmean(errs), 1),
                          "median_ae_s": round(statistics.median(abs(e) for e in errs), 1),
                          "within_1min": round(statistics.fmean(abs(e) <= 60 for e in errs), 3),
                          "within_10pct": round(statistics.fmean(
                              abs(e) <= 0.1 * (r["actual"] - r["submit"])
                              for e, r in zip(errs, part)), 3),
                          "band_coverage": round(statistics.fmean(r["inside"] for r in part), 3),
                          "before_band": round(statistics.fmean(
                              r["actual"] < r["p10"] for r in part), 3),
                          "after_band": round(statistics.fmean(
                              r["actual"] > r["p90"] for r in part), 3)})
    for row in table:
        base = limits_mae.get(row["lead"])
        row["of_limits"] = round(row["mae_s"] / base, 3) if base else ""
    out = Path(args.out) if args.out else Path(__file__).parent / "results" / \
        f"forecast_decompose_{args.trace}_{args.policy}.csv"
    write_table(table, out)
    print(f"\n{'lead':7} {'variant':29} {'n':>6} {'MAE s':>7} {'mean err':>8} {'med AE':>7} "
          f"{'<=1min':>6} {'<=10%':>6} {'/limits':>7} {'band':>5} {'before':>6} {'after':>6}")
    for r in table:
        print(f"{r['lead']:7} {r['variant']:29} {r['n']:6d} {r['mae_s']:7.0f} "
              f"{r['mean_error_s']:8.0f} {r['median_ae_s']:7.0f} {r['within_1min']:6.3f} "
              f"{r['within_10pct']:6.3f} {r['of_limits']!s:>7} {r['band_coverage']:5.2f} "
              f"{r['before_band']:6.3f} {r['after_band']:6.3f}")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
