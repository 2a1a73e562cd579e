"""Slurm's plan against the forward run: is ``forecast_accuracy.py``'s ``slurm-plan`` what
``squeue --start`` shows?

``squeue --start`` shows the start each pending job got in the last backfill pass: the
earliest time its nodes are free, for its whole limit, of the running jobs (at their
limits) and of the reservations made for the jobs before it.  ``slurm-plan`` is instead the
whole run forward under ``--policy slurm`` with every job at its limit and no later jobs
(``hpcopt.sim.forecast.forecast`` with no history): its first pass is that plan, and each
job then starts at a later pass.  This replays each slice under ``--policy slurm``
(Slurm's defaults) and, every ``--every`` seconds of its evaluated days, records both for
every waiting job the plan tested and did not start at once: the plan's start (read from
the policy's backfill pass, which has no public hook for it: this wraps its plan's search)
and the forward run's, and how far each is from the real start.

    python benchmarks/forecast_slurm_plan.py --trace KTH --starts 90,210 --days 7
    python benchmarks/forecast_slurm_plan.py --trace Theta --starts 60 --days 7
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from forecast_accuracy import DATA, DAY, TRACES  # noqa: E402

import hpcopt  # noqa: E402
from hpcopt.policies import build_policy, slurm_backfill  # noqa: E402
from hpcopt.sim.driver import Simulator  # noqa: E402
from hpcopt.sim.forecast import forecast, replay_forecasts  # noqa: E402


class PlanProbe(slurm_backfill.SlurmScheduler):
    """Slurm's scheduler that keeps the start its first backfill pass at ``at`` plans for
    each job it tests (``planned``: ``None`` when it plans none within ``bf_window``)."""

    def __init__(self) -> None:
        super().__init__()
        self.at: float | None = None
        self.planned: dict = {}
        self._job = None

    def eligible(self, job):
        self._job = job  # the job the pass tests now
        return super().eligible(job)

    def _backfill(self, queue, state) -> int:
        if state.now != self.at:
            return super()._backfill(queue, state)
        self.at = None
        base, probe = slurm_backfill._TimeMap, self

        class Recording(base):
            def earliest(self, now, *args):
                found = super().earliest(now, *args)
                probe.planned.setdefault(probe._job.id, None if found is None else found[0])
                return found

        slurm_backfill._TimeMap = Recording
        try:
            return super()._backfill(queue, state)  # the jobs it planned
        finally:
            slurm_backfill._TimeMap = base


def run_slice(jobs, system, first: float, warmup: float, days: float, every: float) -> list:
    """(plan, forward run, real start) of each tested waiting job at each forecast time."""
    t0, t1 = first + warmup, first + warmup + days
    sim = Simulator([j for j in jobs if first <= j.submit < t1], system, build_policy("slurm"))
    probe = PlanProbe()

    def on_state(state, known):
        if state.time < t0:
            return []
        probe.at, probe.planned = state.time, {}
        got = forecast(state, probe, None, started=known.started)
        return [(probe.planned[f.job], f.start, f.job) for f in got
                if f.job in probe.planned and f.start is not None and f.start > state.time]

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
                          args.warmup_days * DAY, args.days * DAY, args.every)
    planned = [r for r in rows if r[0] is not None]
    gaps = [run - plan for plan, run, _ in planned]
    print(f"{args.trace}, days {args.starts}: {len(rows)} samples of tested waiting jobs, "
          f"{len(rows) - len(planned)} with no plan within bf_window")
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
