"""Slurm's plan against its own schedule: how far is what ``squeue --start`` shows from
when Slurm's scheduler would start each job if every job ran to its limit?

``squeue --start`` shows the start each pending job got in the last backfill pass
(``forecast_accuracy.slurm_plan``, ``SlurmScheduler.planned_starts``): without
``bf_running_job_reserve`` the node selection's will-run test frees the running jobs in
groups (docs/slurm-model.md), so the start shown is the last end of the group that frees
enough nodes, not the first time they are free.  The forward run is the whole run under
``--policy slurm`` from the same state with every job at its limit and no later jobs
(``hpcopt.sim.forecast.forecast`` with no history).  This replays each slice under
``--policy slurm`` (Slurm's defaults, on the trace's clock) and, every ``--every`` seconds of
its evaluated days, records both for every waiting job the forward run does not start at
once, and how far each is from the real start.

    python benchmarks/forecast_slurm_plan.py --trace KTH --starts 90,210 --days 7
    python benchmarks/forecast_slurm_plan.py --trace Theta --starts 60 --days 7
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from forecast_accuracy import DATA, DAY, TRACES, slurm_plan  # noqa: E402

import hpcopt  # noqa: E402
from hpcopt.policies import build_policy  # noqa: E402
from hpcopt.scenario import trace_clock_origin  # noqa: E402
from hpcopt.sim.driver import Simulator  # noqa: E402
from hpcopt.sim.forecast import forecast, replay_forecasts  # noqa: E402


def run_slice(jobs, system, first: float, warmup: float, days: float, every: float,
              origin: float) -> list:
    """(plan, forward run, real start) of each waiting job at each forecast time that the
    forward run does not start at once (plan ``None`` where Slurm shows none), on the
    trace's clock (``origin``)."""
    t0, t1 = first + warmup, first + warmup + days
    sim = Simulator([j for j in jobs if first <= j.submit < t1], system,
                    build_policy("slurm", clock_origin=origin))
    twin = build_policy("slurm", clock_origin=origin)

    def on_state(state, known):
        if state.time < t0:
            return []
        plan = {f.job: f.start for f in slurm_plan(state, twin)}
        got = forecast(state, twin, None, started=known.started)
        return [(plan[f.job], f.start, f.job) for f in got
                if f.start is not None and f.start > state.time]

    rows = replay_forecasts(sim, every, on_state, since=t0)
    return [(plan, run, sim.records[job].start) for plan, run, job in rows]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", choices=sorted(TRACES), default="KTH")
    ap.add_argument("--starts", default="90,210")
    ap.add_argument("--warmup-days", type=float, default=7)
    ap.add_argument("--days", type=float, default=7)
    ap.add_argument("--every", type=float, default=600)
    args = ap.parse_args(argv)
    trace = hpcopt.load_trace(DATA / TRACES[args.trace])
    jobs = sorted(trace.jobs, key=lambda j: j.submit)
    rows = []
    for day in (float(d) for d in args.starts.split(",")):
        rows += run_slice(jobs, trace.system, jobs[0].submit + day * DAY,
                          args.warmup_days * DAY, args.days * DAY, args.every,
                          trace_clock_origin(trace))
    planned = [r for r in rows if r[0] is not None]
    gaps = [run - plan for plan, run, _ in planned]
    print(f"{args.trace}, days {args.starts}: {len(rows)} samples of waiting jobs, "
          f"{len(rows) - len(planned)} with no start shown")
    print(f"forward run - plan: equal {sum(g == 0 for g in gaps) / len(gaps):.3f}, within "
          f"30 s {sum(abs(g) <= 30 for g in gaps) / len(gaps):.3f}, within 60 s "
          f"{sum(abs(g) <= 60 for g in gaps) / len(gaps):.4f}, mean {statistics.fmean(gaps):.1f} "
          f"s, mean absolute {statistics.fmean(map(abs, gaps)):.1f} s, range "
          f"{min(gaps):.0f} to {max(gaps):.0f} s")
    for name, k in (("plan", 0), ("forward run", 1)):
        mae = statistics.fmean(abs(r[k] - r[2]) for r in planned)
        print(f"MAE against the real starts of Slurm's replay, {name}: {mae:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
