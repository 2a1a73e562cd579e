"""A fast OSDEC heuristic (backend ``osdec-greedy``): greedy placement, then local search.

Every core-slot a job runs earns 1 (``r_i = c_i d_i``), so "value density" is the same for
all jobs at no delay; what differs is how a start slot pays: ``c_i d_i - w1 (s - e_i) - w2
(increase of sum_t v_t)``.  The greedy takes the jobs largest ``c_i d_i`` first (ties:
earliest start, then job order) and puts each at the start of largest marginal gain given the
jobs already placed (violation-aware: the overload increase is computed exactly on the
current load profile), or drops it when no start gains more than 0.  Local search then
re-inserts one job at a time (remove it, put it at its best start or drop it) while that
strictly improves the objective, pass after pass (job order shuffled by ``seed`` after the
first), until a pass changes nothing, ``passes`` passes ran, or the time limit.

Never claims OPTIMAL.  ``greedy_schedule`` is also the warm start of the MIP backends.
"""

from __future__ import annotations

import time

import numpy as np

from hpcopt.errors import SolverOptionError
from hpcopt.result import Limit, Status

from .registry import Outcome, SolveOptions, Solver, register

DEFAULT_PASSES = 50
_EPS = 1e-9


class _Profile:
    """The load profile of a partial schedule and the marginal gain of a job's starts."""

    def __init__(self, model) -> None:
        self.m = model
        self.T = model.slots
        self.cap = model.capacity.astype(np.int64)
        self.load = np.zeros(self.T, dtype=np.int64)
        self.ranges = [model.start_range(i) for i in range(model.n_jobs)]
        self.rev = model.revenue.astype(float)

    def gains(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(starts, gain of each) for job i on the current profile (job i not on it)."""
        r = self.ranges[i]
        if len(r) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        c, d = int(self.m.cores[i]), int(self.m.duration[i])
        lo, hi = r.start, min(r.stop - 1 + d, self.T)  # slots any start can cover
        seg = self.load[lo:hi]
        over = seg - self.cap[lo:hi]
        # overload increase per slot when c cores are added: max(0, over + c) - max(0, over)
        inc = np.maximum(0, over + c) - np.maximum(0, over)
        pre = np.concatenate([[0], np.cumsum(inc)])
        starts = np.arange(r.start, r.stop, dtype=np.int64)
        a = starts - lo
        b = np.minimum(starts + d, self.T) - lo
        dv = pre[b] - pre[a]
        gain = self.rev[i] - self.m.w1 * (starts - int(self.m.earliest[i])) - self.m.w2 * dv
        return starts, gain

    def best(self, i: int) -> tuple[int, float]:
        """Best start of job i and its gain (-1, 0.0 when dropping is at least as good)."""
        starts, gain = self.gains(i)
        if gain.size == 0:
            return -1, 0.0
        k = int(np.argmax(gain))
        if gain[k] <= _EPS:
            return -1, 0.0
        return int(starts[k]), float(gain[k])

    def gain_at(self, i: int, s: int) -> float:
        starts, gain = self.gains(i)
        return float(gain[s - starts[0]]) if s >= 0 else 0.0

    def add(self, i: int, s: int, sign: int = 1) -> None:
        if s >= 0:
            self.load[s:min(s + int(self.m.duration[i]), self.T)] += sign * int(self.m.cores[i])


def greedy_schedule(model, *, deadline: float | None = None, passes: int = DEFAULT_PASSES,
                    seed: int = 0, start=None) -> tuple[list[int], bool]:
    """A heuristic decision (start per job, -1 dropped) and whether it ran to its end (False:
    the deadline stopped it).  ``start`` (a feasible decision) replaces the greedy phase."""
    prof = _Profile(model)
    n = model.n_jobs
    x = [-1] * n
    if start is not None:
        for i, s in enumerate(start):
            s = int(s)
            if s >= 0 and s in prof.ranges[i]:
                x[i] = s
                prof.add(i, s)
    else:
        order = sorted(range(n), key=lambda i: (-int(model.revenue[i]), int(model.earliest[i]), i))
        for i in order:
            if deadline is not None and time.perf_counter() > deadline:
                return x, False
            s, _ = prof.best(i)
            if s >= 0:
                x[i] = s
                prof.add(i, s)
    rng = np.random.default_rng(seed)
    order = sorted(range(n), key=lambda i: (-int(model.revenue[i]), int(model.earliest[i]), i))
    for p in range(passes):
        changed = False
        for i in order:
            if deadline is not None and time.perf_counter() > deadline:
                return x, False
            old = x[i]
            prof.add(i, old, -1)
            old_gain = prof.gain_at(i, old)
            s, g = prof.best(i)
            if s != old and g > old_gain + _EPS:
                x[i] = s
                changed = True
            prof.add(i, x[i])
        if not changed:
            break
        order = rng.permutation(n).tolist()
    return x, True


@register("osdec-greedy")
class OSDECGreedy(Solver):
    """Greedy + local search for ``osdec`` (see the module docstring).

    ``solver_options``: ``passes`` (local-search passes, default 50).  ``warm_start`` (a
    feasible decision) replaces the greedy phase.  Always FEASIBLE; ``limit=TIME`` when the
    time limit stopped it (its schedule so far is returned), else it finished.  No bound.
    """

    doc = "OSDEC heuristic: violation-aware greedy (largest c*d first) + re-insertion search"
    SUPPORTED_MODELS = ("osdec",)
    OPTIONS = ("passes",)

    def _solve(self, model, opts: SolveOptions) -> Outcome:
        passes = opts.solver_options.get("passes", DEFAULT_PASSES)
        if isinstance(passes, bool) or not isinstance(passes, int) or passes < 0:
            raise SolverOptionError(f"backend {self.full_name!r}: passes must be an integer "
                                    f">= 0, got {passes!r}")
        start = None
        if opts.warm_start is not None:
            if not model.evaluate(opts.warm_start).feasible:
                raise SolverOptionError(f"backend {self.full_name!r}: warm_start is not a "
                                        "feasible decision")
            start = opts.warm_start
        deadline = None if opts.time_limit is None else time.perf_counter() + opts.time_limit
        x, finished = greedy_schedule(model, deadline=deadline, passes=passes,
                                      seed=opts.seed or 0, start=start)
        return Outcome(Status.FEASIBLE, x, limit=None if finished else Limit.TIME)
