"""Runtimes predicted from history: the runtime/limit ratios of finished jobs, by user.

A forecast (``hpcopt.sim.forecast``) gives each waiting or running job runtimes drawn from
what is known at the forecast's time: the ratios (runtime / requested limit) of the last
``per_user`` jobs its user finished, or, for a user with fewer than ``min_user`` finished
jobs, of the last ``recent`` jobs anyone finished.  A running job that has run ``elapsed``
seconds draws only among the runtimes longer than that (it is still running); when none is,
it runs to its limit.  With no history at all every job runs to its limit (what Slurm's own
forecast assumes).  Only ``add`` feeds it, one finished job at a time, so it can never hold
a runtime from after the moment it is asked.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable


class RuntimeHistory:
    """The runtime/limit ratios of finished jobs, per user and overall, newest last."""

    def __init__(self, per_user: int = 16, recent: int = 2000, min_user: int = 2) -> None:
        if per_user < 1 or recent < 1 or min_user < 1:
            raise ValueError("per_user, recent and min_user must be >= 1")
        self.per_user, self.recent, self.min_user = per_user, recent, min_user
        self._users: dict[Hashable, deque[float]] = {}
        self._all: deque[float] = deque(maxlen=recent)

    def __len__(self) -> int:
        return len(self._all)

    def add(self, user: Hashable, runtime: float, limit: float) -> None:
        """A job of ``user`` finished after ``runtime`` seconds of its ``limit``."""
        ratio = min(1.0, max(0.0, runtime / limit)) if limit > 0 else 1.0
        mine = self._users.get(user)
        if mine is None:
            mine = self._users[user] = deque(maxlen=self.per_user)
        mine.append(ratio)
        self._all.append(ratio)

    def ratios(self, user: Hashable) -> tuple[float, ...]:
        """The ratios a job of ``user`` draws from (module docstring); empty: no history."""
        mine = self._users.get(user)
        if mine is not None and len(mine) >= self.min_user:
            return tuple(mine)
        return tuple(self._all)

    def job_runtimes(self, job, limit: float, elapsed: float = 0.0) -> list[float]:
        """The runtimes ``job`` (its ``user``) with ``limit`` that has run ``elapsed`` seconds
        may have: what a forecast asks (``runtimes``)."""
        return self.runtimes(job.user, limit, elapsed)

    def runtimes(self, user: Hashable, limit: float, elapsed: float = 0.0) -> list[float]:
        """The runtimes a job of ``user`` with ``limit`` that has run ``elapsed`` seconds may
        have, ascending (each equally likely; module docstring)."""
        out = [r * limit for r in self.ratios(user)]
        out = [t for t in out if t >= elapsed] if elapsed > 0 else out
        if not out and elapsed > 0:  # it outlived its user's jobs: the jobs of everyone
            out = [t for t in (r * limit for r in self._all) if t >= elapsed]
        return sorted(out) or [limit]
