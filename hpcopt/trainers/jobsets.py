"""Jobsets for DRAS's three-phase training (section III-C) and the month split of a trace.

* ``sampled``: jobs drawn (with replacement) from the training trace, with Poisson arrivals at
  the trace's mean arrival rate -- the easiest, averaged situation;
* ``real``: consecutive one-week slices of the training trace;
* ``synthetic``: a week of jobs whose arrivals follow the trace's hour-of-day x day-of-week
  rates (a non-homogeneous Poisson process, piecewise constant per hour), with sizes drawn from
  the trace's size distribution and (walltime, runtime / walltime) pairs from its joint
  distribution, so the accuracy of user estimates is kept.

Every jobset is re-based to submit time 0 with ids 0..n-1.  Month boundaries are calendar
months in UTC when the submit times are Unix epochs (Theta), else 30-day blocks from the first
submission.  Nothing here imports torch.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from hpcopt.domain import Job
from hpcopt.errors import HpcoptError

WEEK = 7 * 86400.0
PHASES = ("sampled", "real", "synthetic")
EPOCH_2000 = 946684800.0  # submit times above this are taken as Unix epochs


def _month_starts(first: float, count: int) -> list[float]:
    """``count + 1`` month boundaries starting with the month of ``first``."""
    if first < EPOCH_2000:
        return [first + 30 * 86400.0 * k for k in range(count + 1)]
    d = dt.datetime.fromtimestamp(first, dt.timezone.utc)
    y, m = d.year, d.month
    out = []
    for _ in range(count + 1):
        out.append(dt.datetime(y, m, 1, tzinfo=dt.timezone.utc).timestamp())
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)
    return out


@dataclass(frozen=True)
class Split:
    """A trace cut by months: training, validation and test jobs (original ids and times)."""

    train: tuple[Job, ...]
    validate: tuple[Job, ...]
    test: tuple[Job, ...]


def split_months(jobs: Sequence[Job], train: int = 2, validate: int = 1) -> Split:
    """The first ``train`` months, the next ``validate`` months and the rest (the paper's
    2 / 1 / rest split of Theta)."""
    jobs = sorted(jobs, key=lambda j: (j.submit, j.id))
    if not jobs:
        raise HpcoptError("split_months: the trace has no jobs")
    b = _month_starts(jobs[0].submit, train + validate)
    parts = ([j for j in jobs if j.submit < b[train]],
             [j for j in jobs if b[train] <= j.submit < b[train + validate]],
             [j for j in jobs if j.submit >= b[train + validate]])
    if not parts[0] or not parts[1]:
        raise HpcoptError(f"split_months: the trace spans too little time for {train} training "
                          f"and {validate} validation month(s)")
    return Split(*(tuple(p) for p in parts))


def rebase(jobs: Sequence[Job]) -> list[Job]:
    """Jobs shifted to start at submit time 0 and renumbered 0..n-1 in submit order."""
    jobs = sorted(jobs, key=lambda j: (j.submit, j.id))
    t0 = jobs[0].submit if jobs else 0.0
    return [replace(j, id=i, submit=j.submit - t0) for i, j in enumerate(jobs)]


class JobsetGenerator:
    """Draws the three kinds of training jobsets from a training trace.

    Parameters
    ----------
    jobs : the training jobs (e.g. ``split_months(trace.jobs).train``).
    jobs_per_set : jobs in a sampled jobset (real and synthetic ones span one week).
    """

    def __init__(self, jobs: Sequence[Job], *, jobs_per_set: int = 1000) -> None:
        jobs = sorted(jobs, key=lambda j: (j.submit, j.id))
        if len(jobs) < 2:
            raise HpcoptError("JobsetGenerator needs at least two training jobs")
        if jobs_per_set < 1:
            raise HpcoptError(f"jobs_per_set must be >= 1, got {jobs_per_set}")
        self.jobs = jobs
        self.jobs_per_set = int(jobs_per_set)
        submit = np.array([j.submit for j in jobs])
        self.span = float(submit[-1] - submit[0])
        self.mean_gap = self.span / (len(jobs) - 1)
        # arrivals per (day of week, hour of day), as a rate per second
        hours = np.floor((submit - self._week_origin(submit[0])) / 3600.0).astype(np.int64)
        counts = np.bincount(hours % 168, minlength=168).astype(float)
        weeks = max(self.span / WEEK, 1.0)
        self.hourly_rate = counts / (weeks * 3600.0)
        self.sizes = np.array([j.nodes for j in jobs])
        self.walltimes = np.array([j.walltime for j in jobs])
        self.ratios = np.array([j.runtime / j.walltime if j.walltime > 0 else 1.0
                                for j in jobs])

    @staticmethod
    def _week_origin(first: float) -> float:
        """Monday 00:00 of the first week for epoch times, else the first submission."""
        if first < EPOCH_2000:
            return first
        d = dt.datetime.fromtimestamp(first, dt.timezone.utc)
        monday = dt.datetime(d.year, d.month, d.day, tzinfo=dt.timezone.utc) \
            - dt.timedelta(days=d.weekday())
        return monday.timestamp()

    def sampled(self, rng: np.random.Generator) -> list[Job]:
        """``jobs_per_set`` jobs drawn from the trace with Poisson arrivals at its mean rate."""
        n = self.jobs_per_set
        pick = rng.integers(0, len(self.jobs), n)
        submit = np.cumsum(rng.exponential(self.mean_gap, n))
        submit -= submit[0]
        return [replace(self.jobs[k], id=i, submit=float(s))
                for i, (k, s) in enumerate(zip(pick, submit))]

    def real_weeks(self) -> list[list[Job]]:
        """The training trace cut into consecutive one-week slices (the last, partial week
        is kept when it holds at least half a week)."""
        t0 = self.jobs[0].submit
        out: dict[int, list[Job]] = {}
        for j in self.jobs:
            out.setdefault(int((j.submit - t0) // WEEK), []).append(j)
        weeks = [rebase(out[k]) for k in sorted(out)]
        if len(weeks) > 1 and self.span - (len(weeks) - 1) * WEEK < WEEK / 2:
            weeks = weeks[:-1]
        return weeks

    def synthetic(self, rng: np.random.Generator) -> list[Job]:
        """One week of jobs that follows the trace's weekly/daily arrival pattern and its size
        and (walltime, runtime accuracy) distributions."""
        counts = rng.poisson(self.hourly_rate * 3600.0)
        if counts.sum() == 0:
            counts[int(np.argmax(self.hourly_rate))] = 1
        hour = np.repeat(np.arange(168), counts)
        submit = np.sort((hour + rng.random(len(hour))) * 3600.0)
        submit -= submit[0]
        n = len(submit)
        sizes = self.sizes[rng.integers(0, len(self.sizes), n)]
        k = rng.integers(0, len(self.walltimes), n)
        wall, ratio = self.walltimes[k], self.ratios[k]
        return [Job(id=i, submit=float(submit[i]), runtime=float(wall[i] * ratio[i]),
                    walltime=float(wall[i]), nodes=int(sizes[i])) for i in range(n)]

    def curriculum(self, rng: np.random.Generator, *, sampled: int, real: int | None,
                   synthetic: int, order: Sequence[str] = PHASES
                   ) -> list[tuple[str, list[Job]]]:
        """The training jobsets: ``sampled`` sampled jobsets, ``real`` real weeks (all when
        ``None``; cycled when more are asked than the trace has) and ``synthetic`` synthetic
        ones, phase by phase in ``order`` (the paper's best: sampled, real, synthetic)."""
        if sorted(order) != sorted(PHASES):
            raise HpcoptError(f"curriculum order must name each of {PHASES} once, got "
                              f"{tuple(order)}")
        weeks = self.real_weeks()
        n_real = len(weeks) if real is None else real
        sets = {"sampled": [self.sampled(rng) for _ in range(sampled)],
                "real": [weeks[k % len(weeks)] for k in range(n_real)],
                "synthetic": [self.synthetic(rng) for _ in range(synthetic)]}
        return [(phase, jobs) for phase in order for jobs in sets[phase]]
