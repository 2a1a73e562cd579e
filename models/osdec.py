"""OSDEC: offline scheduling of deferrable cloud jobs (seed paper 004, eq. 1; spec osdec.md).

Time is cut into ``T`` slots (0-based).  Job i needs ``c_i`` cores for ``d_i`` consecutive
slots and may start at any slot of ``[e_i, l_i]`` (its earliest and latest start; it was
submitted at ``g_i <= e_i``), or be dropped.  ``C_t`` is the capacity left for deferrable jobs
at slot t.  Going over it is allowed but penalised::

    maximize   sum_i sum_t X_it (c_i d_i - w1 (t - e_i))  -  w2 sum_{t < T} v_t
    s.t.       sum_t X_it <= 1                                     (a job may be dropped)
               X_it = 0          for t outside [e_i, l_i] ∩ [0, T)
               v_t >= sum_i sum_{t' = t - d_i + 1}^{t} c_i X_it' - C_t,  v_t >= 0,  t < T
               X binary

Resolutions (spec osdec.md): the paper's load window ``t - d_i .. t`` spans d_i + 1 slots; a
job started at s occupies ``s .. s + d_i - 1``.  Starts are slots ``< T`` (a job whose window
begins at or after T can only be dropped).  Capacity counts only slots ``< T``: a job may run
past the horizon unpenalised (``past_horizon="free"``, the default, and it still earns its
whole revenue ``c_i d_i``) or, with ``past_horizon="forbid"``, must end by T (``s + d_i <=
T``).  ``v_t`` has no upper bound (the optimum sets it to ``max(0, load_t - C_t)``).  Defaults
``w1 = 2``, ``w2 = 10`` (the paper's Table 3).  Capacities are integers >= 0: a rolling-horizon
caller whose running jobs already exceed ``C_t`` passes ``max(0, C_t - running_t)``, which
changes the violation penalty by a constant only (the marginal cost of a new core is the same).
Such a caller also passes each job's true ``e_i`` relative to its slot 0, negative for a job
whose window opened before it: starts stay in ``[max(0, e_i), l_i]``, but the delay still
counts from ``e_i``, so what a job has already waited is paid when it starts (as the online
objective pays it), and a job that waited longer than its revenue is worth is dropped.

A decision holds one entry per job: its start slot, or ``-1`` when it is dropped.
``evaluate`` returns an ``OSDECEvaluation``: the objective and its three terms (revenue,
delay penalty, violation penalty), the per-slot overload ``v_t``, the started / dropped
counts.  The time-indexed MIP above is ``osdec_form`` (``to_pyomo()``); ``time_indexed()`` gives
its columns and rows (reduced: starts worth <= 0 and rows that can never be overloaded
dropped).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from hpcopt.errors import ModelError

from .algebraic import AlgebraicForm, Rows, Variables, formulation
from .base import Evaluation, Model, check_labels, field_error

DROPPED = -1  # the decision entry of a job that is not started
PAST_HORIZON = ("free", "forbid")
JOB_FIELDS = ("id", "cores", "duration", "submit", "earliest", "latest")
DATA_FIELDS = ("slots", "capacity", "jobs", "w1", "w2", "past_horizon")
INT_LIMIT = 2**53


def _error(field: str, expected: str, got: Any = None) -> ModelError:
    return field_error("osdec", field, expected, got)


def _integer(field: str, value: Any, minimum: int | None) -> int:
    """``value`` as an int >= ``minimum`` (``None``: any sign; integral floats and numpy
    integers accepted)."""
    expected = "an integer" if minimum is None else f"an integer >= {minimum}"
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and not (np.isfinite(value) and value.is_integer())):
        raise _error(field, expected, repr(value))
    value = int(value)
    if minimum is not None and value < minimum:
        raise _error(field, expected, value)
    if abs(value) >= INT_LIMIT:
        raise _error(field, "an integer of magnitude below 2^53", value)
    return value


def _weight(field: str, value: Any) -> float:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0 <= value <= sys.float_info.max:  # NaN fails too; so does a huge int
        raise _error(field, "a finite number >= 0", repr(value)[:40])
    return float(value)


def _int_vector(field: str, data: Any, item: str, minimum: int | None,
                n: int | None = None) -> np.ndarray:
    """A list of ints >= ``minimum``; ``item`` names entry i in messages (``{i}``)."""
    if isinstance(data, (str, bytes, dict)) or not hasattr(data, "__len__"):
        raise _error(field, "a list of integers", repr(data))
    if n is not None and len(data) != n:
        raise _error(field, f"{n} entries", f"{len(data)} entries")
    return np.array([_integer(item.format(i=i), v, minimum) for i, v in enumerate(data)],
                    dtype=np.int64)


@dataclass(frozen=True)
class OSDECEvaluation(Evaluation):
    """The certificate of an OSDEC decision.

    ``objectives == (revenue - delay_penalty - violation_penalty,)``; ``violations`` are the
    counts of starts outside the job's ``[earliest, latest]``, outside ``[0, T)``, and (with
    ``past_horizon="forbid"``) of jobs ending after T.  ``overload[t] = v_t = max(0, load_t -
    C_t)`` for every slot t < T; ``load`` the cores in use per slot.
    """

    revenue: float = 0.0
    delay_penalty: float = 0.0
    violation_penalty: float = 0.0
    started: int = 0
    dropped: int = 0
    load: tuple = ()
    overload: tuple = ()

    @property
    def terms(self) -> dict:
        """The objective and its three terms by name (the summary.json keys)."""
        return {"total_reward": self.objective, "revenue": self.revenue,
                "delay_penalty": self.delay_penalty,
                "violation_penalty": self.violation_penalty}


@dataclass(frozen=True)
class TimeIndexed:
    """Columns and rows of the time-indexed MIP, as plain arrays (see ``time_indexed``).

    Column k is "job ``job[k]`` starts at slot ``start[k]``", worth ``value[k]`` (= c d - w1
    delay).  Row r is the capacity row of slot ``slot[r]``: ``sum_k cover[r] c_job[k] x_k - v
    <= capacity[r]``, ``cols[r]`` the columns covering that slot; ``max_load[r]`` is the
    largest load the row can see (each job counted once).  ``w2`` multiplies every ``v``.
    """

    n_jobs: int
    job: np.ndarray
    start: np.ndarray
    value: np.ndarray
    cores: np.ndarray
    slot: np.ndarray
    capacity: np.ndarray
    max_load: np.ndarray
    cols: list
    w2: float

    @property
    def n_columns(self) -> int:
        return int(self.job.size)

    @property
    def n_nonzeros(self) -> int:
        return int(sum(c.size for c in self.cols))

    def decision(self, chosen) -> list[int]:
        """The model decision from a boolean vector over the columns."""
        x = [DROPPED] * self.n_jobs
        for k in np.flatnonzero(np.asarray(chosen, dtype=bool)).tolist():
            x[int(self.job[k])] = int(self.start[k])
        return x

    def columns_of(self, decision) -> np.ndarray:
        """Boolean vector over the columns for a model decision (a start without a column --
        one worth <= 0 that the reduction removed -- is left out: the job is dropped)."""
        where = {(int(j), int(s)): k for k, (j, s) in
                 enumerate(zip(self.job.tolist(), self.start.tolist()))}
        out = np.zeros(self.n_columns, dtype=bool)
        for i, s in enumerate(decision):
            k = where.get((i, int(s)))
            if k is not None:
                out[k] = True
        return out

    def overload_of(self, chosen) -> np.ndarray:
        """``v`` per row for the columns ``chosen`` (the value the optimum gives it)."""
        chosen = np.asarray(chosen, dtype=bool)
        loads = np.array([int(self.cores[c[chosen[c]]].sum()) for c in self.cols],
                         dtype=np.int64)
        return np.maximum(0, loads - self.capacity)


@dataclass(frozen=True, eq=False)
class OSDECModel(Model):
    """Deferrable jobs on a time-varying capacity over ``slots`` slots (offline MIP).

    Parameters
    ----------
    slots : int >= 1
        The horizon T.
    capacity : T integers >= 0
        ``C_t``, the cores left for deferrable jobs at slot t.
    cores, duration : per-job integers >= 1
    earliest, latest : per-job integers, ``submit <= earliest <= latest``, ``latest >= 0``;
        ``earliest < 0``: the window opened before slot 0 (a rolling-horizon sub-problem), and
        the delay of a start still counts from it
    submit : per-job integers (default: ``earliest``)
    ids : job ids (int or str, unique; default ``0 .. n-1``)
    w1, w2 : delay and violation penalty coefficients (default 2 and 10)
    past_horizon : ``"free"`` (jobs may run past T, unpenalised) or ``"forbid"`` (must end by T)

    Examples
    --------
    >>> m = OSDECModel.from_dict({"slots": 4, "capacity": [2, 2, 1, 1], "jobs": [
    ...     {"id": "a", "cores": 2, "duration": 2, "submit": 0, "earliest": 0, "latest": 2},
    ...     {"id": "b", "cores": 1, "duration": 3, "submit": 0, "earliest": 1, "latest": 1}]})
    >>> ev = m.evaluate([0, 1])
    >>> ev.objective, ev.revenue, ev.delay_penalty, ev.violation_penalty
    (-3.0, 7.0, 0.0, 10.0)
    """

    kind: ClassVar[str] = "osdec"
    sense: ClassVar[str] = "max"
    default_backend: ClassVar[str] = "scip"

    slots: int
    capacity: Any
    cores: Any
    duration: Any
    earliest: Any
    latest: Any
    submit: Any = None
    ids: tuple | None = None
    w1: float = 2.0
    w2: float = 10.0
    past_horizon: str = "free"

    def __post_init__(self) -> None:
        T = _integer("slots", self.slots, 1)
        cap = _int_vector("capacity", self.capacity, "capacity[{i}]", 0, T)
        cores = _int_vector("jobs", self.cores, "jobs[{i}].cores", 1)
        n = cores.size
        duration = _int_vector("jobs", self.duration, "jobs[{i}].duration", 1, n)
        submit = None if self.submit is None else \
            _int_vector("jobs", self.submit, "jobs[{i}].submit", None, n)
        earliest = _int_vector("jobs", self.earliest, "jobs[{i}].earliest", None, n)
        latest = _int_vector("jobs", self.latest, "jobs[{i}].latest", 0, n)
        if submit is None:
            submit = earliest.copy()
        for i in range(n):
            if earliest[i] < submit[i]:
                raise _error(f"jobs[{i}].earliest", f"an integer >= submit ({submit[i]})",
                             int(earliest[i]))
            if latest[i] < earliest[i]:
                raise _error(f"jobs[{i}].latest", f"an integer >= earliest ({earliest[i]})",
                             int(latest[i]))
        ids = tuple(range(n)) if self.ids is None else \
            check_labels("osdec", "jobs", self.ids, n, item="jobs[{i}].id")
        w1, w2 = _weight("w1", self.w1), _weight("w2", self.w2)
        if self.past_horizon not in PAST_HORIZON:
            raise _error("past_horizon", "'free' or 'forbid'", repr(self.past_horizon))
        if int((cores * duration).sum()) >= INT_LIMIT:
            raise _error("jobs", "total cores x duration below 2^53", "more")
        for arr in (cap, cores, duration, submit, earliest, latest):
            arr.setflags(write=False)
        for name, value in (("slots", T), ("capacity", cap), ("cores", cores),
                            ("duration", duration), ("submit", submit), ("earliest", earliest),
                            ("latest", latest), ("ids", ids), ("w1", w1), ("w2", w2)):
            object.__setattr__(self, name, value)

    # -- sizes and helpers -------------------------------------------------------------------
    @property
    def n_jobs(self) -> int:
        return int(self.cores.size)

    @property
    def revenue(self) -> np.ndarray:
        """``r_i = c_i d_i`` per job."""
        return self.cores * self.duration

    def start_range(self, i: int) -> range:
        """The admissible start slots of job i: ``[e_i, l_i] ∩ [0, T)``, and ``s + d_i <= T``
        with ``past_horizon="forbid"`` (possibly empty: then the job can only be dropped)."""
        hi = min(int(self.latest[i]), self.slots - 1)
        if self.past_horizon == "forbid":
            hi = min(hi, self.slots - int(self.duration[i]))
        return range(max(0, int(self.earliest[i])), hi + 1)

    # -- semantics ---------------------------------------------------------------------------
    def _decision(self, x) -> np.ndarray:
        if x is None or isinstance(x, (str, bytes, dict)) or not hasattr(x, "__len__"):
            raise ModelError(f"osdec decision: expected {self.n_jobs} start slots (-1: dropped), "
                             f"got {x!r}"[:200])
        vals = [DROPPED if v is None else v for v in x]
        try:
            arr = np.asarray(vals, dtype=float)
        except (TypeError, ValueError):
            raise ModelError(f"osdec decision: expected integers (-1: dropped), got {x!r}"[:200]) \
                from None
        if arr.shape != (self.n_jobs,):
            raise ModelError(f"osdec decision: expected {self.n_jobs} entries (one per job), "
                             f"got shape {arr.shape}")
        if not (np.isfinite(arr).all() and (arr == np.round(arr)).all()):
            raise ModelError(f"osdec decision: expected integer start slots (-1: dropped), got "
                             f"{arr[:8].tolist()}")
        return arr.astype(np.int64)

    def evaluate(self, x) -> OSDECEvaluation:
        """Certificate of ``x`` (a start slot per job, -1 for dropped): objective, its three
        terms, per-slot load and overload; infeasible when a start lies outside the job's
        window, outside ``[0, T)``, or (``past_horizon="forbid"``) the job ends after T."""
        s = self._decision(x)
        T = self.slots
        on = s != DROPPED
        outside = on & ((s < self.earliest) | (s > self.latest))
        off_horizon = on & ((s < 0) | (s >= T))
        past = on & (s + self.duration > T) if self.past_horizon == "forbid" \
            else np.zeros_like(on)
        diff = np.zeros(T + 1, dtype=np.int64)
        first = np.clip(s[on], 0, T)
        last = np.clip(s[on] + self.duration[on], 0, T)
        np.add.at(diff, first, self.cores[on])
        np.add.at(diff, last, -self.cores[on])
        load = np.cumsum(diff[:T])
        over = np.maximum(0, load - self.capacity)
        revenue = float(int(self.revenue[on].sum()))
        delay = self.w1 * float(int((s[on] - self.earliest[on]).sum()))
        violation = self.w2 * float(int(over.sum()))
        bad = (int(outside.sum()), int(off_horizon.sum()), int(past.sum()))
        return OSDECEvaluation(
            feasible=not any(bad), objectives=(revenue - delay - violation,),
            violations=tuple(float(b) for b in bad), revenue=revenue, delay_penalty=delay,
            violation_penalty=violation, started=int(on.sum()), dropped=int((~on).sum()),
            load=tuple(load.tolist()), overload=tuple(over.tolist()))

    def decision_ids(self, x) -> tuple:
        """Ids of the started jobs (in job order)."""
        s = self._decision(x)
        return tuple(self.ids[i] for i in np.flatnonzero(s != DROPPED).tolist())

    def starts(self, x) -> dict:
        """Job id -> start slot of the started jobs."""
        s = self._decision(x)
        return {self.ids[i]: int(s[i]) for i in np.flatnonzero(s != DROPPED).tolist()}

    # -- the time-indexed MIP ----------------------------------------------------------------
    def algebraic_size(self, reduce: bool = True) -> tuple[int, int, int]:
        """(variables, rows, nonzeros) of ``osdec_form(reduce)``, without building it: what a
        solver build costs.  The reduced form's rows and nonzeros are taken as a quarter of the
        unreduced ones (it is a few times smaller; its exact size needs the reduction)."""
        lo = np.maximum(self.earliest, 0)
        hi = np.minimum(self.latest, self.slots - 1)
        if self.past_horizon == "forbid":
            hi = np.minimum(hi, self.slots - self.duration)
        columns = np.maximum(hi - lo + 1, 0)
        n = int(columns.sum())
        covered = int((columns * np.minimum(self.duration, self.slots)).sum())  # an upper bound
        rows, nonzeros = self.n_jobs + self.slots, n + covered + self.slots
        if reduce:
            rows, nonzeros = rows // 4, nonzeros // 4
        return n + self.slots, rows, nonzeros

    def time_indexed(self, reduce: bool = True) -> TimeIndexed:
        """Columns (job, start) and capacity rows of the MIP.

        With ``reduce`` (what the direct backends solve): starts worth ``<= 0`` are left out
        (such a start never improves a solution: it adds load and no value) and so are the
        rows of slots whose largest possible load is within capacity (their ``v_t`` is 0 in
        every solution).  Without it, every admissible start and every slot ``t < T`` (the
        canonical form of ``to_pyomo``).
        """
        T = self.slots
        jobs, starts = [], []
        for i in range(self.n_jobs):
            r = self.start_range(i)
            jobs.extend([i] * len(r))
            starts.extend(r)
        job = np.array(jobs, dtype=np.int64)
        start = np.array(starts, dtype=np.int64)
        value = (self.revenue[job] - self.w1 * (start - self.earliest[job])).astype(float)
        if reduce:
            keep = value > 0
            job, start, value = job[keep], start[keep], value[keep]
        end = np.minimum(start + self.duration[job], T)  # exclusive
        length = end - start
        col = np.repeat(np.arange(job.size), length)
        offset = np.arange(col.size) - np.repeat(np.cumsum(length) - length, length)
        slot_of = start[col] + offset
        order = np.argsort(slot_of, kind="stable")
        col, slot_of = col[order], slot_of[order]
        bounds = np.searchsorted(slot_of, np.arange(T + 1))
        # largest load of a slot: every job that can cover it, once
        span_lo = np.full(self.n_jobs, T, dtype=np.int64)
        span_hi = np.zeros(self.n_jobs, dtype=np.int64)
        np.minimum.at(span_lo, job, start)
        np.maximum.at(span_hi, job, end)
        diff = np.zeros(T + 1, dtype=np.int64)
        has = span_lo < span_hi
        np.add.at(diff, span_lo[has], self.cores[has])
        np.add.at(diff, span_hi[has], -self.cores[has])
        max_load = np.cumsum(diff[:T])
        rows = np.arange(T)
        if reduce:
            rows = rows[max_load > self.capacity]
        cols = [col[bounds[t]:bounds[t + 1]] for t in rows.tolist()]
        return TimeIndexed(self.n_jobs, job, start, value, self.cores[job], rows,
                           self.capacity[rows], max_load[rows], cols, self.w2)

    def to_pyomo(self, reduce: bool = False):
        """A pyomo ``ConcreteModel`` of ``osdec_form``: binary ``x[i, s]`` (job i starts at
        slot s, for every admissible start), integer ``v[t] >= 0`` per slot t < T,
        ``one_start[i]``, ``overload[t]`` (``sum c_i x[i, s] over starts covering t - v[t]
        <= C_t``), objective ``obj``.  ``reduce=True`` gives the reduced form the backends
        solve."""
        return super().to_pyomo(reduce=reduce)

    # -- instance files ----------------------------------------------------------------------
    def to_dict(self) -> dict:
        def num(w: float):
            return int(w) if float(w).is_integer() else float(w)

        out = {"slots": self.slots, "capacity": self.capacity.tolist(),
               "w1": num(self.w1), "w2": num(self.w2)}
        if self.past_horizon != "free":
            out["past_horizon"] = self.past_horizon
        out["jobs"] = [{"id": self.ids[i], "cores": int(self.cores[i]),
                        "duration": int(self.duration[i]), "submit": int(self.submit[i]),
                        "earliest": int(self.earliest[i]), "latest": int(self.latest[i])}
                       for i in range(self.n_jobs)]
        return out

    @classmethod
    def from_dict(cls, data: dict) -> OSDECModel:
        """Build from an instance file's ``data``; a one-line ``ModelError`` names the field
        (``jobs[3].latest``) on any problem."""
        if not isinstance(data, dict):
            raise _error("data", "an object", type(data).__name__)
        for key in data:
            if key not in DATA_FIELDS:
                raise _error(key, f"no such field (allowed: {', '.join(DATA_FIELDS)})")
        for key in ("slots", "capacity", "jobs"):
            if key not in data:
                raise _error(key, "a required field, which is missing")
        jobs = data["jobs"]
        if not isinstance(jobs, list):
            raise _error("jobs", "a list of job objects", type(jobs).__name__)
        cols: dict[str, list] = {k: [] for k in JOB_FIELDS}
        for i, job in enumerate(jobs):
            if not isinstance(job, dict):
                raise _error(f"jobs[{i}]", "an object", repr(job))
            for key in job:
                if key not in JOB_FIELDS:
                    raise _error(f"jobs[{i}].{key}",
                                 f"no such field (allowed: {', '.join(JOB_FIELDS)})")
            for key in ("cores", "duration", "earliest", "latest"):
                if key not in job:
                    raise _error(f"jobs[{i}].{key}", "a required field, which is missing")
            cols["id"].append(job.get("id", i))
            cols["submit"].append(job.get("submit", job["earliest"]))
            for key in ("cores", "duration", "earliest", "latest"):
                cols[key].append(job[key])
        return cls(data["slots"], data["capacity"], cols["cores"], cols["duration"],
                   cols["earliest"], cols["latest"], submit=cols["submit"], ids=cols["id"],
                   w1=data.get("w1", 2), w2=data.get("w2", 10),
                   past_horizon=data.get("past_horizon", "free"))

    def __eq__(self, other) -> bool:
        if not isinstance(other, OSDECModel):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None

    def __repr__(self) -> str:
        return f"OSDECModel(slots={self.slots}, n_jobs={self.n_jobs}, w1={self.w1:g}, " \
               f"w2={self.w2:g})"


@formulation("osdec")
def osdec_form(model: OSDECModel, reduce: bool = True) -> AlgebraicForm:
    """The time-indexed MIP over ``model.time_indexed(reduce)``: binary ``x[i, s]`` worth
    ``c d - w1 (s - e)``, integer ``v[t]`` in ``[0, max_load_t - C_t]`` costing ``w2`` each,
    rows ``one_start[i]`` (jobs with more than one column) and ``overload[t]``.  v is integer
    (loads and capacities are), so the optimum is unchanged and a solver knows the objective
    is integral when w1 and w2 are; CP-SAT scales w1 and w2 with decimals by a power of ten.

    Size and speed (one synthetic day, ``python instances/osdec/make_instances.py --day
    D.json``: 288 slots, 3,000 jobs, seed 1): 13,364 binary columns of 20,261 admissible
    starts, 191 of 288 capacity rows (plus 2,395 one-start rows), 162,385 nonzeros in the
    capacity rows.  ``hpcopt solve D.json --backend osdec-greedy,scip,cpsat --time-limit 60``
    on a shared 2-core machine: osdec-greedy 58,931 in 0.6 s (LP bound 59,321), scip 59,147
    (bound 59,315, gap 0.28%), cpsat 58,938; at 300 s scip 59,147, cpsat 59,087.  The dual
    bound hardly moves in branch and bound (root LP 59,316): days of this size end with a
    reported gap, not a proof; 72 slots and 150 jobs are proved in 6-15 s.  With a load
    average of 10 on the two cores, SCIP did not pass the greedy start in 60 s (58,931, bound
    59,316) and CP-SAT reached 58,935 (2026-11-26)."""
    ti = model.time_indexed(reduce=reduce)
    n = ti.n_columns
    x = Variables("x", list(zip(ti.job.tolist(), ti.start.tolist())), "binary", ti.value)
    v = Variables("v", ti.slot.tolist(), "integer", np.full(ti.slot.size, -ti.w2),
                  ub=np.maximum(ti.max_load - ti.capacity, 0))
    first = np.searchsorted(ti.job, np.arange(model.n_jobs + 1))  # columns are by job
    jobs = [i for i in range(model.n_jobs) if first[i + 1] - first[i] > 1]
    cols = [np.arange(first[i], first[i + 1]) for i in jobs]
    one = Rows("one_start", jobs, cols, [np.ones(c.size) for c in cols], "<=", np.ones(len(jobs)))
    index = [np.append(c, n + r) for r, c in enumerate(ti.cols)]
    coefs = [np.append(ti.cores[c].astype(float), -1.0) for c in ti.cols]
    overload = Rows("overload", ti.slot.tolist(), index, coefs, "<=", ti.capacity)

    def encode(decision) -> np.ndarray:
        chosen = ti.columns_of(decision)
        return np.concatenate([chosen.astype(float), ti.overload_of(chosen).astype(float)])

    return AlgebraicForm("osdec", "max", (x, v), (one, overload),
                         decode=lambda values: ti.decision(np.asarray(values[:n]) > 0.5),
                         encode=encode)


@formulation("osdec", "pyomo")
def osdec_pyomo_form(model: OSDECModel, reduce: bool = False) -> AlgebraicForm:
    """pyomo solvers take the unreduced form by default, the one ``to_pyomo()`` exports and
    the one the pyomo build and load estimates are fitted to (``benchmarks/pyomo_build.py``;
    on a 48-slot day the reduced form keeps 54k of the 84k nonzeros, more than the quarter
    ``algebraic_size`` assumes for SCIP and CP-SAT); ``reduce=True`` gives the reduced one."""
    return osdec_form(model, reduce)
