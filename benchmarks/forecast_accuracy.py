"""Start-time forecast accuracy on real traces: hpcopt's forecast against a Slurm-style
limit-based forecast and a QBETS-style statistical one, on held-out slices.

Each slice is replayed under the policy (``fcfs`` with EASY backfilling by default); every
``--every`` seconds of its evaluated weeks, each waiting job gets three forecasts made from
the same moment's state, all compared with the start the job really had in the replay:

- ``hpcopt``: ``hpcopt.sim.forecast.forecast`` (the same driver and policy run forward,
  runtimes drawn from the runtime/limit ratios of the jobs finished so far, ``--draws`` runs;
  start = median, band = 10%-90% widened by ``BandCalibration`` from the errors of the
  forecasts whose jobs started before);
- ``hpcopt+stream``: the same, with a modelled stream of later submissions: the jobs
  submitted in the day before, submitted again one, two and three days later;
- ``limits``: the same run forward with every job at its limit (what ``squeue --start``
  assumes), one run;
- ``qbets``: no simulation: the waits of the last 1000 jobs of the job's size class (1, 2-4,
  5-16, 17-64, 65+ nodes) that started before the forecast, kept to those at least as long
  as the job has waited already; start = submit + their median, band = their 10%-90%.

A slice is ``--warmup-days`` of history (replayed, not scored) followed by ``--days``
evaluated days; the slices start on the given days of the trace (``--starts``).  The
forecast's choices (draws by user, the user's last 4 jobs with the same limit, running jobs
counted, the band's calibration, the one-day stream) were made on KTH-SP2 slices from days
60 and 150 (``forecast_decompose.py``); the defaults and the slices reported are others.
Errors are forecast start minus real start; "lead" is the real start minus the forecast's
time; "within 10%" counts errors at most a tenth of the job's real wait.

    python benchmarks/forecast_accuracy.py --trace KTH --starts 90,210 --days 7
    python benchmarks/forecast_accuracy.py --trace Theta --starts 60 --days 7

Writes ``benchmarks/results/forecast_accuracy_<trace>.csv`` (one row per method, slice and
lead bucket, "all" included) and prints the table.
"""

from __future__ import annotations

import argparse
import bisect
import csv
import statistics
import time
from collections import deque
from pathlib import Path

import hpcopt
from hpcopt.policies import build_policy
from hpcopt.sim.driver import Simulator
from hpcopt.sim.forecast import BandCalibration, forecast, recent_stream, replay_forecasts
from hpcopt.sim.records import Event

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
TRACES = {"KTH": "hpc_swf/pwa/KTH-SP2-1996-2.1-cln.swf.gz",
          "Atlas": "hpc_swf/pwa/LLNL-Atlas-2006-2.1-cln.swf.gz",
          "Theta": "hpc_swf/alcf/theta_2022.swf.gz"}
LEADS = ((0, 600, "<10m"), (600, 3600, "10m-1h"), (3600, 6 * 3600, "1h-6h"),
         (6 * 3600, float("inf"), ">6h"))
SIZE_CLASSES = (1, 4, 16, 64)
DAY = 86400.0
METHODS = ("hpcopt", "hpcopt+stream", "limits", "qbets")


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


def run_slice(jobs, system, policy: str, first: float, warmup: float, days: float,
              every: float, draws: int) -> list[dict]:
    """Forecast rows of the three methods on one slice (module docstring)."""
    t0, t1 = first + warmup, first + warmup + days
    part = [j for j in jobs if first <= j.submit < t1]
    sim = Simulator(part, system, build_policy(policy))
    twin = build_policy(policy)
    waits = WaitQuantiles()
    sim.subscribe(Event.START, waits.on_start)
    timing = dict.fromkeys(METHODS[:3], 0.0)
    bands = {"hpcopt": BandCalibration().follow(sim),  # a start is known from its moment on
             "hpcopt+stream": BandCalibration().follow(sim)}

    def on_state(state, known):
        if state.time < t0:
            return []
        arrivals = recent_stream(known.submitted, state.time, DAY, 3)
        clock = time.perf_counter()
        got = {}
        for method, history, later in (("hpcopt", known.history, ()),
                                       ("hpcopt+stream", known.history, arrivals),
                                       ("limits", None, ())):
            got[method] = forecast(state, twin, history, started=known.started, draws=draws,
                                   seed=0, arrivals=later)
            band = bands.get(method)
            if band is not None:
                got[method] = band.calibrate(state.time, got[method])
            timing[method] += time.perf_counter() - clock
            clock = time.perf_counter()
        rows = []
        for k, job in enumerate(state.queue):
            base = {"time": state.time, "job": job.id, "submit": job.submit}
            for method, fs in got.items():
                f = fs[k]
                rows.append({**base, "method": method, "start": f.start, "p10": f.p10,
                             "p90": f.p90})
            q = waits.forecast(job, state.time)
            rows.append({**base, "method": "qbets", "start": q[0], "p10": q[1], "p90": q[2]})
        return rows

    rows = replay_forecasts(sim, every, on_state, since=t0, recent=DAY)
    for row in rows:
        row["actual"] = sim.records[row["job"]].start
    n_times = len({r["time"] for r in rows})
    print(f"  slice from day {first / DAY - jobs[0].submit / DAY:.0f}: {len(part)} jobs, "
          f"{n_times} forecast times, {len(rows) // len(METHODS)} job forecasts; seconds "
          "forecasting (ms per forecast time): " + ", ".join(
              f"{m} {t:.1f} ({1000 * t / max(1, n_times):.1f})" for m, t in timing.items()),
          flush=True)
    return rows


def scores(rows: list[dict]) -> dict:
    """MAE, median absolute error, share within 1 minute and within 10% of the wait, band
    coverage (10%-90%), count."""
    errs = [abs(r["start"] - r["actual"]) for r in rows]
    waits = [r["actual"] - r["submit"] for r in rows]
    inside = [r["p10"] <= r["actual"] <= r["p90"] for r in rows]
    n = len(rows)
    return {"n": n, "mae_s": statistics.fmean(errs), "median_ae_s": statistics.median(errs),
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", choices=sorted(TRACES), default="KTH")
    ap.add_argument("--policy", default="fcfs")
    ap.add_argument("--starts", default="90,210",
                    help="days of the trace the slices start on (comma-separated)")
    ap.add_argument("--warmup-days", type=float, default=7)
    ap.add_argument("--days", type=float, default=7, help="evaluated days per slice")
    ap.add_argument("--every", type=float, default=600, help="seconds between forecasts")
    ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    trace = hpcopt.load_trace(DATA / TRACES[args.trace])
    jobs, system = sorted(trace.jobs, key=lambda j: j.submit), trace.system
    print(f"{args.trace}: {len(jobs)} jobs on {system.nodes} nodes, policy {args.policy}, "
          f"forecast every {args.every:g} s, {args.draws} draws")
    all_rows: list[tuple[str, dict]] = []
    began = time.perf_counter()
    for day in (float(d) for d in args.starts.split(",")):
        first = jobs[0].submit + day * DAY
        rows = run_slice(jobs, system, args.policy, first, args.warmup_days * DAY,
                         args.days * DAY, args.every, args.draws)
        all_rows.extend((f"day{day:g}", r) for r in rows)
    table = []
    for slice_name in sorted({s for s, _ in all_rows}) + ["all"]:
        mine = [r for s, r in all_rows if slice_name in ("all", s)]
        for method in METHODS:
            of = [r for r in mine if r["method"] == method]
            for lo, hi, lead in ((0, float("inf"), "all"), *LEADS):
                part = [r for r in of if lo <= r["actual"] - r["time"] < hi]
                if part:
                    table.append({"trace": args.trace, "slice": slice_name, "method": method,
                                  "lead": lead, **scores(part)})
    out = Path(args.out) if args.out else \
        Path(__file__).parent / "results" / f"forecast_accuracy_{args.trace}.csv"
    write_table(table, out)
    print(f"\n{'slice':8} {'method':13} {'lead':7} {'n':>7} {'MAE s':>8} {'med s':>7} "
          f"{'<=1min':>7} {'<=10%':>6} {'band':>6} {'late':>5}")
    for r in table:
        if r["slice"] == "all" or r["lead"] == "all":
            print(f"{r['slice']:8} {r['method']:13} {r['lead']:7} {r['n']:7d} {r['mae_s']:8.0f} "
                  f"{r['median_ae_s']:7.0f} {r['within_1min']:7.3f} {r['within_10pct']:6.3f} "
                  f"{r['band_coverage']:6.3f} {r['late_share']:5.2f}")
    print(f"\nwrote {out} ({time.perf_counter() - began:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
