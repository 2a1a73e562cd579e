"""Runtimes predicted from history: the runtime/limit ratios of finished jobs, by user.

A forecast (``hpcopt.sim.forecast``) gives each waiting or running job runtimes drawn from
what is known at the forecast's time: the ratios (runtime / requested limit) of the last
``per_user`` jobs its user finished with the same limit (``by_limit``), or of the last
``per_user`` jobs its user finished, or, for a user with fewer than ``min_user`` finished
jobs, of the last ``recent`` jobs anyone finished.  A user's jobs still running count too
(``with_running``), as the median of the ratios longer than they have run: otherwise the
last finished jobs are the short ones (on KTH-SP2's tuning slices, days 60 and 150, the
same limit and the running jobs each took 5-10% off the error; 4 jobs per user against 16
made no difference).  A running job that has run ``elapsed``
seconds draws only among the runtimes longer than that (it is still running); when none is,
it runs to its limit.  With no history at all every job runs to its limit (what Slurm's own
forecast assumes).  Only ``add`` feeds it, one finished job at a time, so it can never hold
a runtime from after the moment it is asked.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Hashable, Iterable


class RuntimeHistory:
    """The runtime/limit ratios of finished jobs, per user and overall, newest last."""

    def __init__(self, per_user: int = 4, recent: int = 2000, min_user: int = 2,
                 by_limit: bool = True) -> None:
        if per_user < 1 or recent < 1 or min_user < 1:
            raise ValueError("per_user, recent and min_user must be >= 1")
        self.per_user, self.recent, self.min_user = per_user, recent, min_user
        self.by_limit = by_limit
        self._users: dict[Hashable, deque[float]] = {}
        self._user_limits: dict[Hashable, deque[float]] = {}
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
        if self.by_limit:
            same = self._user_limits.get((user, limit))
            if same is None:
                same = self._user_limits[(user, limit)] = deque(maxlen=self.per_user)
            same.append(ratio)

    def ratios(self, user: Hashable, limit: float | None = None) -> tuple[float, ...]:
        """The ratios a job of ``user`` (with ``limit``) draws from (module docstring);
        empty: no history."""
        for mine in (self._user_limits.get((user, limit)) if self.by_limit else None,
                     self._users.get(user)):
            if mine is not None and len(mine) >= self.min_user:
                return tuple(mine)
        return tuple(self._all)

    def with_running(self, running: Iterable[tuple[Hashable, float, float]]
                     ) -> RuntimeHistory:
        """This history with the jobs still running, ``(user, limit, elapsed)``, counted in
        their user's ratios: each as the median of the ratios longer than it has run (1
        when none is).  Without them a user's last finished jobs are the short ones of the
        jobs it started lately: the long ones are still running."""
        out = copy.copy(self)
        out._users, out._user_limits = dict(self._users), dict(self._user_limits)
        imputed = []
        for user, limit, elapsed in running:
            done = elapsed / limit if limit > 0 else 1.0
            longer = sorted(r for r in self.ratios(user, limit) if r > done)
            imputed.append((user, limit, longer[len(longer) // 2] if longer else 1.0))
        copied: set = set()
        for user, limit, ratio in imputed:
            for table, key in ((out._users, user), (out._user_limits, (user, limit))):
                mine = table.get(key)
                if mine is None:
                    continue
                if (id(table), key) not in copied:  # a copy of its own, no length bound
                    mine = table[key] = deque(mine)
                    copied.add((id(table), key))
                mine.append(ratio)
        return out

    def job_runtimes(self, job, limit: float, elapsed: float = 0.0) -> list[float]:
        """The runtimes ``job`` (its ``user``) with ``limit`` that has run ``elapsed`` seconds
        may have: what a forecast asks (``runtimes``)."""
        return self.runtimes(job.user, limit, elapsed)

    def runtimes(self, user: Hashable, limit: float, elapsed: float = 0.0) -> list[float]:
        """The runtimes a job of ``user`` with ``limit`` that has run ``elapsed`` seconds may
        have, ascending (each equally likely; module docstring)."""
        out = [r * limit for r in self.ratios(user, limit)]
        out = [t for t in out if t >= elapsed] if elapsed > 0 else out
        if not out and elapsed > 0:  # it outlived its user's jobs: the jobs of everyone
            out = [t for t in (r * limit for r in self._all) if t >= elapsed]
        return sorted(out) or [limit]
