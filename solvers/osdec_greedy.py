"""A fast OSDEC heuristic (backend ``osdec-greedy``): LP rounding or greedy, then local search.

Construction (default): the LP relaxation of the reduced time-indexed MIP
(``OSDECModel.time_indexed``) by HiGHS; its columns, largest LP value first, place job i at
start s when i is unplaced and s still gains on the load built so far.  The LP optimum is
reported as the bound.  On one synthetic day (288 slots, 3,000 jobs) this gives 58,931 in
0.6 s against 56,254 for the plain greedy below and 59,147 for SCIP after 300 s (LP bound
59,321).  Without highspy, with ``lp=False``, or when the LP does not finish in time, the
plain greedy builds the first schedule.

Every core-slot a job runs earns 1 (``r_i = c_i d_i``), so "value density" is the same for
all jobs at no delay; what differs is how a start slot pays: ``c_i d_i - w1 (s - e_i) - w2
(increase of sum_t v_t)``.  The plain greedy takes the jobs largest ``c_i d_i`` first (ties:
earliest start, then submission order: submission slot, then the id by its numbers) and puts
each at the start of largest marginal gain given the jobs already placed (violation-aware:
the overload increase is computed exactly on the current load profile), or drops it when no
start gains more than 0.  Local search then
re-inserts one job at a time (remove it, put it at its best start or drop it) while that
strictly improves the objective, pass after pass (job order shuffled by ``seed`` after the
first), until a pass changes nothing, ``passes`` passes ran, or the time limit.

Under a time limit the work is fixed by the limit, not by the clock: the construction (LP or
plain) is chosen by its estimated cost, and the local search runs as many whole passes as the
estimate of a pass (``PASS_SECONDS_PER_JOB`` per job) fits in what the limit leaves.  The same
model, limit and seed give the same schedule on an idle or a loaded machine, so the MIP
backends, which start from ``greedy_schedule`` in the same limit, never answer less than
``osdec-greedy`` does in that limit.  The clock only stops a search that overruns the limit
by half the registry's ``OVERSHOOT_S``, and an LP so late that the first schedule would not
end in the limit (a machine far slower than the estimates: about twice as slow as a 2-core
machine at a load of 4).

Never claims OPTIMAL.  ``greedy_schedule`` is also the warm start of the MIP backends.
"""

from __future__ import annotations

import importlib.util
import time

import numpy as np

from hpcopt.domain import id_order
from hpcopt.errors import SolverOptionError
from hpcopt.result import Termination

from .registry import OVERSHOOT_S, Outcome, SolveOptions, Solver, register, register_greedy

DEFAULT_PASSES = 50
LP_SHARE = 0.5  # the LP relaxation runs when its estimate fits this share of the limit
# the LP's build and HiGHS solve per nonzero of the reduced form estimated by
# ``algebraic_size`` (an 11,888-job Azure day: about 55,000 estimated, 1.28 s on a 2-core
# machine at a load of 4), with room for a loaded machine
LP_SECONDS_PER_NZ = 3e-5
# the plain greedy's first schedule and one local-search pass, per job, with room for a
# loaded machine (an 11,888-job Azure day on a 2-core machine at a load of 4: 0.44 s to
# build, 0.6-0.8 s a pass); they fix how many passes a time limit buys, whatever the load
BUILD_SECONDS_PER_JOB = 5e-5
PASS_SECONDS_PER_JOB = 1e-4
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


def lp_relaxation(model, ti, deadline: float | None = None):
    """The LP relaxation of the reduced time-indexed MIP (``model.time_indexed()`` = ``ti``)
    by HiGHS (highspy): ``(x per column, LP optimum)``, or ``None`` when highspy is missing,
    the deadline passed or HiGHS did not report an optimum."""
    if importlib.util.find_spec("highspy") is None or ti.n_columns == 0:
        return None
    import highspy  # lazy: a solver library, loaded when the LP bound is asked for

    left = None if deadline is None else deadline - time.perf_counter()
    if left is not None and left <= 0:
        return None
    K, R = ti.n_columns, len(ti.cols)
    jobs, job_row = np.unique(ti.job, return_inverse=True)
    J = jobs.size
    lengths = np.array([c.size for c in ti.cols], dtype=np.int64)
    # entries (row, column, value): one_start rows, capacity rows, then -v in each capacity row
    rows = np.concatenate([job_row, J + np.repeat(np.arange(R), lengths), J + np.arange(R)])
    cols = np.concatenate([np.arange(K)] + list(ti.cols) + [K + np.arange(R)])
    vals = np.concatenate([np.ones(K), ti.cores[np.concatenate(ti.cols)].astype(float)
                           if R else np.zeros(0), -np.ones(R)])
    order = np.lexsort((rows, cols))
    rows, cols, vals = rows[order], cols[order], vals[order]
    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = K + R, J + R
    lp.col_cost_ = np.concatenate([-ti.value, np.full(R, ti.w2)])  # HiGHS minimizes
    lp.col_lower_ = np.zeros(K + R)
    lp.col_upper_ = np.concatenate([np.ones(K), np.full(R, inf)])
    lp.row_lower_ = np.full(J + R, -inf)
    lp.row_upper_ = np.concatenate([np.ones(J), ti.capacity.astype(float)])
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.searchsorted(cols, np.arange(K + R + 1)).astype(np.int32)
    lp.a_matrix_.index_ = rows.astype(np.int32)
    lp.a_matrix_.value_ = vals
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    if left is not None:
        h.setOptionValue("time_limit", float(left))
    h.passModel(lp)
    h.run()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    x = np.asarray(h.getSolution().col_value)[:K]
    return x, -float(h.getInfo().objective_function_value)


def submission_rank(model) -> np.ndarray:
    """Each job's place in submission order (slot, then id by its numbers): the tie-break."""
    order = sorted(range(model.n_jobs), key=lambda i: (int(model.submit[i]),
                                                       id_order(model.ids[i])))
    rank = np.empty(model.n_jobs, dtype=np.int64)
    rank[order] = np.arange(model.n_jobs)
    return rank


def lp_rounding(model, ti, x_lp, prof: _Profile) -> list[int]:
    """Columns by LP value (largest first, ties: larger value c d - w1 delay, then submission
    order): job i at start s when i is still unplaced and s gains more than 0 on the profile
    so far."""
    x = [-1] * model.n_jobs
    rank = submission_rank(model)[ti.job] if ti.n_columns else np.zeros(0, dtype=np.int64)
    for k in np.lexsort((ti.start, rank, -ti.value, -x_lp)).tolist():
        if x_lp[k] < 1e-6:
            break
        i, s = int(ti.job[k]), int(ti.start[k])
        if x[i] < 0 and prof.gain_at(i, s) > _EPS:
            x[i] = s
            prof.add(i, s)
    return x


def greedy_schedule(model, *, deadline: float | None = None, passes: int = DEFAULT_PASSES,
                    seed: int = 0, start=None, lp: bool = True, limit: float | None = None):
    """A heuristic decision (start per job, -1 dropped), whether it ran to its end (False:
    the limit stopped it) and the LP bound (``None`` without one).  ``start`` (a feasible
    decision) replaces the construction phase; ``lp=False`` skips the LP relaxation.

    The construction always completes, whatever the deadline (the first complete pass is the
    least a limit returns).  With a ``deadline``, the ``limit`` (the seconds it stands for,
    default: the time left until it) fixes the work by estimates, not by the clock (see the
    module docstring): the LP runs when its estimate fits ``LP_SHARE`` of the limit, and the
    local search runs the whole passes whose estimates fit what is left."""
    prof = _Profile(model)
    n = model.n_jobs
    x = [-1] * n
    rank = submission_rank(model)
    bound = None
    relaxed = None
    # largest revenue first, then earliest start, then submission order
    order = np.lexsort((rank, model.earliest, -model.revenue)).tolist()
    if deadline is None:
        limit = None
    elif limit is None:
        limit = deadline - time.perf_counter()
    backstop = None if deadline is None else deadline + OVERSHOOT_S / 2
    # the reduced form's nonzeros, estimated from the full form's without building either
    lp_cost = model.algebraic_size()[2] // 4 * LP_SECONDS_PER_NZ if start is None and lp \
        else None
    if lp_cost is not None and (limit is None or lp_cost <= LP_SHARE * limit):
        ti = model.time_indexed()
        # the clock stops an LP only so late that the first schedule still ends in the limit
        relaxed = lp_relaxation(model, ti, None if deadline is None
                                else deadline - n * BUILD_SECONDS_PER_JOB)
    if start is not None:
        for i, s in enumerate(start):
            s = int(s)
            if s >= 0 and s in prof.ranges[i]:
                x[i] = s
                prof.add(i, s)
    elif relaxed is not None:
        x_lp, value = relaxed
        bound = value + 1e-6 * max(1.0, abs(value))  # slack for the LP tolerances
        x = lp_rounding(model, ti, x_lp, prof)
    else:
        for i in order:
            s, _ = prof.best(i)
            if s >= 0:
                x[i] = s
                prof.add(i, s)
    rng = np.random.default_rng(seed)
    cut = False
    if limit is not None:  # the passes the limit buys, by the estimates (not the clock)
        built = n * BUILD_SECONDS_PER_JOB + (lp_cost if relaxed is not None else 0.0)
        bought = max(0, int((limit - built) / (PASS_SECONDS_PER_JOB * max(n, 1))))
        cut, passes = bought < passes, min(passes, bought)
    for _ in range(passes):
        changed = False
        for i in order:
            if backstop is not None and time.perf_counter() > backstop:
                return x, False, bound
            old = x[i]
            prof.add(i, old, -1)
            old_gain = prof.gain_at(i, old)
            s, g = prof.best(i)
            if s != old and g > old_gain + _EPS:
                x[i] = s
                changed = True
            prof.add(i, x[i])
        if not changed:
            return x, True, bound
        order = np.argsort(rank)[rng.permutation(n)].tolist()  # shuffled submission order
    return x, not cut, bound


@register_greedy("osdec", share=1.0)
def osdec_start(model, deadline, seed, limit=None):
    """The greedy start of OSDEC models: ``greedy_schedule`` until it ends or ``deadline``,
    seeded as the solve -- what ``osdec-greedy`` answers in the same time limit, so the MIP
    backends never answer less than it (at short limits it is their answer; the solver gets
    what it leaves).  On an 11,888-job Azure day the MIPs' incumbents after 2-5 s were below
    it (benchmarks/README.md, "Limits")."""
    x, _, bound = greedy_schedule(model, deadline=deadline, seed=seed, limit=limit)
    return x, bound


@register("osdec-greedy")
class OSDECGreedy(Solver):
    """Greedy + local search for ``osdec`` (see the module docstring).

    ``solver_options``: ``passes`` (local-search passes, default 50), ``lp`` (default True:
    build the first schedule by rounding the LP relaxation, see the module docstring; False:
    the plain greedy).  ``warm_start`` (a feasible decision) replaces the construction phase.
    Always a feasible solution; termination ``time_limit`` when the time limit stopped the
    local search (the first complete schedule always finishes, then improves until the
    limit), else ``finished``.
    The bound is the LP optimum when the LP was solved.
    """

    doc = "OSDEC heuristic: LP rounding (or violation-aware greedy) + re-insertion search"
    SUPPORTED_MODELS = ("osdec",)
    OPTIONS = ("passes", "lp")

    def _solve(self, model, opts: SolveOptions) -> Outcome:
        passes = opts.solver_options.get("passes", DEFAULT_PASSES)
        if isinstance(passes, bool) or not isinstance(passes, int) or passes < 0:
            raise SolverOptionError(f"backend {self.full_name!r}: passes must be an integer "
                                    f">= 0, got {passes!r}")
        use_lp = opts.solver_options.get("lp", True)
        if not isinstance(use_lp, bool):
            raise SolverOptionError(f"backend {self.full_name!r}: lp must be true or false, "
                                    f"got {use_lp!r}")
        start = None
        if opts.warm_start is not None:
            if not model.evaluate(opts.warm_start).feasible:
                raise SolverOptionError(f"backend {self.full_name!r}: warm_start is not a "
                                        "feasible decision")
            start = opts.warm_start
        x, finished, bound = greedy_schedule(model, deadline=opts.deadline, passes=passes,
                                             seed=opts.seed or 0, start=start, lp=use_lp,
                                             limit=opts.limit)
        return Outcome(Termination.FINISHED if finished else Termination.TIME_LIMIT, x,
                       bound=bound, extra={"lp": bound is not None})
