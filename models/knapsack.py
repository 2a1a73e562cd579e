"""0-1 knapsack job selection, with one or several resources.

Choose which queued jobs of a window to start so that the total value (e.g. nodes used) is
maximal and no resource (nodes, burst buffer, ...) is oversubscribed::

    maximize   sum_i v_i x_i
    subject to sum_i a_ri x_i <= b_r   for every resource r
               x_i in {0, 1}

``KnapsackModel`` is the data plus the certificate check (``evaluate``).  ``reduced`` gives
backends the equivalent smaller problem they all start from (items that can matter, capacities
clipped, integer-scaled on request), so that the "scale to integers or raise" rule lives in
one place.

Canonical tie-break: among the optimal decisions that select no item worth <= 0, the
*canonical* one is the lexicographically greatest 0-1 vector in item (window) order -- it
favours the earliest window positions.  Every exact backend returns exactly that decision
when it reports OPTIMAL (``KnapsackModel.canonical_key`` orders decisions that way), so two
exact backends give the same schedule.  With values that are not integers (after scaling by
at most 10**6) "optimal" is up to float round-off, and ties may then differ in the last bit.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from hpcopt.errors import ModelError

from .algebraic import AlgebraicForm, Rows, Variables, formulation
from .base import Evaluation, Model, check_labels, field_error

FEAS_TOL = 1e-9  # relative round-off allowed on a capacity row with non-integer weights
MAX_DECIMALS = 6  # integer scaling tries 10**0 .. 10**MAX_DECIMALS
INT_LIMIT = 2**53  # scaled integer data must stay exact in float64 and int64 sums


def _field_error(field: str, expected: str, got: Any = None) -> ModelError:
    """A one-line ``ModelError`` naming ``field``; ``err.field``/``err.detail`` keep the parts."""
    return field_error("knapsack", field, expected, got)


def _numeric(name: str, data: Any) -> np.ndarray:
    """``data`` as a float array; booleans, strings and ragged lists are a ``ModelError``."""
    try:
        raw = np.asarray(data)
        if raw.dtype.kind not in "iuf" and (
                raw.dtype.kind != "O" or any(isinstance(v, (bool, str)) for v in raw.ravel())):
            raise TypeError
        return np.array(raw, dtype=float)
    except (TypeError, ValueError):
        raise _field_error(name, "a rectangular list of numbers", data) from None


def _first_bad(arr: np.ndarray, bad: np.ndarray, name: str) -> str:
    """Name of the first entry flagged by ``bad``, e.g. ``weights[1][3]``."""
    index = np.argwhere(bad)[0]
    return name + "".join(f"[{i}]" for i in index)


@dataclass(frozen=True)
class ReducedKnapsack:
    """An equivalent, smaller knapsack that backends solve instead of the model.

    ``items`` are the model indices that can be in an optimal solution (positive value, fit
    alone); ``forced`` items (positive value, no weight at all) are always taken.  Capacities
    are clipped to the total weight of ``items``.  A reduced objective ``z`` is worth
    ``z / value_scale + offset`` in the model (``objective``); ``lift`` maps a 0-1 vector
    over ``items`` back to a full decision.
    """

    n: int
    items: np.ndarray
    forced: np.ndarray
    values: np.ndarray
    weights: np.ndarray
    capacities: np.ndarray
    value_scale: float
    offset: float

    @property
    def size(self) -> int:
        return len(self.items)

    def lift(self, chosen) -> list[int]:
        """Full 0-1 decision (a list) from a 0-1 vector over ``items``."""
        x = np.zeros(self.n, dtype=np.int8)
        x[self.forced] = 1
        x[self.items[np.asarray(chosen, dtype=bool)]] = 1
        return x.tolist()

    def objective(self, reduced_value: float) -> float:
        return float(reduced_value) / self.value_scale + self.offset

    def form(self) -> AlgebraicForm:
        """``knapsack_form`` of the reduced data: ``x[j]`` is item ``items[j]``."""
        return _form(self.values, self.weights, self.capacities)

    def solve_canonical(self, solve):
        """The canonical optimum with an exact integer solver ``solve``, in a few solves.

        ``solve(values, weights, capacities)`` maximizes int ``values`` (list) over 0-1
        vectors within int64 ``weights`` (m, k') and ``capacities`` (m,) and returns
        ``(chosen, proven, bound)`` (``bound`` in those values, or None).  The values it gets
        are ``v_j * 2**c + 2**(c-1-j)`` for the first ``c`` items of the rest (``v_j * 2**c``
        after): the extra terms sum below ``2**c``, so among the optima the solver must
        pick the one that favours earlier items.  ``c`` is as large as int64 allows
        (all items in one solve for a window of tens of jobs); the first ``c`` items are
        then fixed and the rest solved the same way.  Needs integer ``values``.

        Returns ``(chosen, proven, bound)``: a boolean vector over ``items``, whether every
        solve was proven optimal (then ``chosen`` is canonical), and an upper bound on the
        reduced objective from the first solve (None when the solver gave none).
        """
        k = self.size
        values = [int(v) for v in self.values.tolist()]
        caps = np.asarray(self.capacities, dtype=np.int64).copy()
        chosen = np.zeros(k, dtype=bool)
        start, bound = 0, None
        while start < k:
            c = min(k - start, 61 - (sum(values[start:]) + 1).bit_length())
            tied = [(v << c) + ((1 << (c - 1 - j)) if j < c else 0)
                    for j, v in enumerate(values[start:])]
            sub, proven, sub_bound = solve(tied, self.weights[:, start:], caps)
            sub = np.asarray(sub, dtype=bool)
            if start == 0 and sub_bound is not None:
                bound = math.floor(sub_bound) >> c
            if not proven or start + c == k:
                chosen[start:] = sub
                return chosen, proven, bound
            chosen[start:start + c] = sub[:c]
            caps = caps - self.weights[:, start:start + c] @ sub[:c].astype(np.int64)
            start += c
        return chosen, True, bound


def _tolerances(weights: np.ndarray, capacities: np.ndarray) -> np.ndarray:
    """Overrun each capacity row may show and still be feasible (float round-off only).

    0 for a row of integer weights whose total stays below 2^53 (float sums are then exact);
    NaN for an integer row above that (``evaluate`` sums it in Python integers); otherwise
    ``FEAS_TOL * max(1, capacity)``, but below half the row's smallest positive weight.
    """
    tol = np.zeros(len(capacities))
    integral = (weights == weights.round()).all(1)
    big = weights.sum(1) >= INT_LIMIT
    if big.any():
        tol[big] = np.nan
    if integral.all():
        return tol
    for r in np.nonzero(~integral)[0].tolist():
        row = weights[r]
        positive = row[row > 0]
        tol[r] = min(FEAS_TOL * max(1.0, float(capacities[r])),
                     0.5 * float(positive.min()) if positive.size else np.inf)
    return tol


def integer_scale(arr: np.ndarray, what: str, backend: str) -> int:
    """Smallest 10**k (k <= MAX_DECIMALS) that makes ``arr`` integral, else ``ModelError``.

    ``what`` and ``backend`` name the data and the backend in the message.
    """
    arr = np.asarray(arr, dtype=float)
    for k in range(MAX_DECIMALS + 1):
        scaled = arr * 10.0**k
        if np.abs(scaled).max(initial=0.0) >= INT_LIMIT:
            break
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-9 * np.maximum(1.0, np.abs(scaled))):
            return 10**k
    odd = arr[np.abs(arr - np.round(arr)) > 1e-9 * np.maximum(1.0, np.abs(arr))]
    example = odd[0] if odd.size else np.abs(arr).max()
    raise ModelError(
        f"backend {backend!r} needs integer {what} (or multiples of 10^-{MAX_DECIMALS} that "
        f"scale below 2^53); got {what} such as {float(example)!r}; "
        "round them or use backend 'scip' or 'pyomo:appsi_highs', which accept any numbers"
    )


@dataclass(frozen=True, eq=False)
class KnapsackModel(Model):
    """Multi-resource 0-1 knapsack: ``values`` (n,), ``weights`` (m, n), ``capacities`` (m,).

    Parameters
    ----------
    values : array-like, shape (n,)
        Value of each item; any finite number (items worth <= 0 are never needed).
    weights : array-like, shape (m, n) or (n,)
        Non-negative use of each resource by each item; a flat list means one resource.
    capacities : array-like, shape (m,), or a number
        Non-negative capacity of each resource.
    ids : sequence, optional
        Item ids (int or str, unique); default ``0 .. n-1``.
    resources : sequence of str, optional
        Resource names (unique); default ``r0 .. r{m-1}``.

    Raises
    ------
    ModelError
        One line naming the field (``err.field``) and what was expected.

    Examples
    --------
    >>> m = KnapsackModel([80, 10, 40, 10, 20], [[80, 10, 40, 10, 20], [20, 85, 5, 0, 0]],
    ...                   [100, 100], ids=["J1", "J2", "J3", "J4", "J5"])
    >>> m.evaluate([1, 0, 0, 0, 1]).objectives
    (100.0,)
    >>> m.decision_ids([1, 0, 0, 0, 1])
    ('J1', 'J5')
    """

    kind: ClassVar[str] = "knapsack"
    default_backend: ClassVar[str] = "dp"
    sense: ClassVar[str] = "max"

    values: np.ndarray
    weights: np.ndarray
    capacities: np.ndarray
    ids: tuple | None = None
    resources: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        values = _numeric("values", self.values)
        if values.ndim != 1 or values.size == 0:
            raise _field_error("values", "a non-empty list of numbers", self.values)
        n = values.size
        rows = self.weights
        if isinstance(rows, (list, tuple)) and all(hasattr(row, "__len__") for row in rows):
            for r, row in enumerate(rows):  # name the first row of the wrong length
                if len(row) != n:
                    raise _field_error(f"weights[{r}]", f"{n} entries (one per value)",
                                       f"{len(row)} entries")
        weights = _numeric("weights", rows)
        if weights.ndim == 1:
            weights = weights[None, :]
        if weights.ndim != 2 or weights.shape[0] == 0 or weights.shape[1] != n:
            raise _field_error("weights", f"{n} entries or rows of {n} entries (one per value)",
                               f"shape {weights.shape}")
        m = weights.shape[0]
        capacities = _numeric("capacities", self.capacities)
        if capacities.ndim == 0:
            capacities = capacities[None]
        if capacities.ndim != 1 or capacities.size != m:
            raise _field_error("capacities", f"one number per weight row ({m})", self.capacities)
        for name, arr, lower in (("values", values, None), ("weights", weights, 0.0),
                                 ("capacities", capacities, 0.0)):
            bad = ~np.isfinite(arr) if lower is None else ~(np.isfinite(arr) & (arr >= lower))
            if bad.any():
                field = _first_bad(arr, bad, name)
                if name == "weights" and m == 1:
                    field = field.replace("weights[0]", "weights", 1)
                if name == "capacities" and np.ndim(self.capacities) == 0:
                    field = "capacities"
                expected = "a finite number" if lower is None else "a finite number >= 0"
                raise _field_error(field, expected, float(arr[tuple(np.argwhere(bad)[0])]))
        ids = (tuple(range(n)) if self.ids is None
               else check_labels("knapsack", "ids", self.ids, n))
        names = (tuple(f"r{r}" for r in range(m)) if self.resources is None
                 else check_labels("knapsack", "resources", self.resources, m, (str,)))
        with np.errstate(over="ignore"):
            totals = (("values", np.abs(values).sum()), ("weights", weights.sum()))
        for name, total in totals:
            if not np.isfinite(total):
                raise _field_error(name, "numbers whose sum is finite in float64 (it overflows)",
                                   float(np.abs(values if name == "values" else weights).max()))
        for arr in (values, weights, capacities):
            arr.setflags(write=False)
        tolerance = _tolerances(weights, capacities)
        object.__setattr__(self, "_tolerance", np.nan_to_num(tolerance, nan=0.0))
        object.__setattr__(self, "_exact_rows", tuple(np.nonzero(np.isnan(tolerance))[0]))
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "weights", weights)
        object.__setattr__(self, "capacities", capacities)
        object.__setattr__(self, "ids", ids)
        object.__setattr__(self, "resources", names)

    # -- sizes ----------------------------------------------------------------------------
    @property
    def n_items(self) -> int:
        return self.values.size

    @property
    def n_resources(self) -> int:
        return self.weights.shape[0]

    # -- semantics ------------------------------------------------------------------------
    def _decision(self, x) -> np.ndarray:
        """``x`` as a boolean vector, or ``ModelError`` (wrong length, entries not 0/1)."""
        arr = np.asarray(x)
        if arr.shape != (self.n_items,):
            raise ModelError(
                f"knapsack decision: expected {self.n_items} entries (one per item), "
                f"got shape {arr.shape}"
            )
        kind = arr.dtype.kind
        if kind == "b":
            return arr
        sel = arr != 0
        if kind not in "iuf" or not (arr[sel] == 1).all():
            raise ModelError("knapsack decision: expected entries 0 or 1, got "
                             f"{arr[:8].tolist()}{'...' if arr.size > 8 else ''}")
        return sel

    def evaluate(self, x) -> Evaluation:
        """Certificate of decision ``x`` (0-1 per item): value, per-resource overload.

        A row of integer weights is checked exactly (a load one unit over is infeasible); a
        row with fractional weights allows float round-off below ``_tolerances``, which is
        smaller than any item of that row, so no overrun by a whole item is ever accepted.
        """
        sel = self._decision(x)
        xf = sel.astype(float)
        over = self.weights @ xf - self.capacities
        for r in self._exact_rows:  # integer rows whose sums pass 2^53: Python ints, exactly
            load = sum(int(a) for a in self.weights[r, sel].tolist())
            over[r] = float(Fraction(load) - Fraction(float(self.capacities[r])))
        feasible = bool((over <= self._tolerance).all())
        return Evaluation(feasible, (float(self.values @ xf),), tuple(over.clip(0.0).tolist()))

    def canonical_key(self, x) -> tuple:
        """Sort key of the canonical tie-break: the optimal decision with the greatest key
        is the canonical one (objective first, then the 0-1 vector compared
        lexicographically in item order, earliest item first)."""
        sel = self._decision(x)
        return (self.evaluate(sel).objective, tuple(sel.astype(int).tolist()))

    def decision_ids(self, x) -> tuple:
        """Ids of the selected items."""
        sel = self._decision(x)
        return tuple(self.ids[i] for i in sel.nonzero()[0].tolist())

    def reduced(self, *, integer_weights: bool = False, integer_values: bool = False,
                backend: str = "") -> ReducedKnapsack:
        """The equivalent problem backends solve (see ``ReducedKnapsack``).

        Items with value <= 0 or that do not fit alone are dropped, items with value > 0 and
        no weight are forced, capacities are clipped to the remaining total weight.  With
        ``integer_weights``/``integer_values`` the data are scaled by a power of ten to
        integers (one factor per resource row, one for the values) or ``ModelError`` names
        ``backend`` and says why it cannot be done.  Weights become int64 then, capacities are
        floored (exact, since loads are integers).
        """
        values, weights, caps = self.values, self.weights, self.capacities
        positive = values > 0
        heavy = (weights > 0).any(0)
        forced = (positive & ~heavy).nonzero()[0]
        items = (positive & heavy & (weights <= caps[:, None]).all(0)).nonzero()[0]
        v = values[items]
        w = weights[:, items]
        if integer_weights:
            rounded = w.round()
            if (rounded == w).all():
                caps = np.floor(caps)  # integer loads: exact
            else:
                scales = np.array([integer_scale(row, "weights", backend) for row in w], float)
                rounded = (w * scales[:, None]).round()
                # the slack absorbs the round-off of cap * scale and stays below 1/4 unit, so
                # no load it admits is over the model's own tolerance (see _tolerances)
                scaled = caps * scales
                caps = np.floor(scaled + np.minimum(1e-12 * scaled, 0.25) + 1e-9)
            if rounded.sum(1).max(initial=0.0) >= INT_LIMIT:
                raise ModelError(f"backend {backend!r}: integer weights sum past 2^53; "
                                 "use backend 'scip'")
            w = rounded.astype(np.int64)
            caps = np.minimum(caps, w.sum(1)).astype(np.int64)
        else:
            caps = np.minimum(caps, w.sum(1))
        value_scale = 1
        if integer_values:
            value_scale = integer_scale(v, "values", backend)
            v = (v * value_scale).round().astype(np.int64)
            if v.sum() >= INT_LIMIT:
                raise ModelError(f"backend {backend!r}: scaled values overflow 2^53")
        return ReducedKnapsack(self.n_items, items, forced, v, w, caps, float(value_scale),
                               float(values[forced].sum()))

    # -- algebraic form and instance files ------------------------------------------------
    def algebraic_size(self) -> tuple[int, int, int]:
        """(variables, rows, nonzeros) of ``knapsack_form``: what a solver build costs."""
        return self.n_items, self.n_resources, int(np.count_nonzero(self.weights))

    def to_dict(self) -> dict:
        """The ``data`` part of an instance file (ids/resources only when not the default)."""

        def plain(arr) -> list:
            return [int(a) if float(a).is_integer() else float(a) for a in arr]

        out: dict = {
            "values": plain(self.values),
            "weights": [plain(row) for row in self.weights],
            "capacities": plain(self.capacities),
        }
        if self.ids != tuple(range(self.n_items)):
            out["ids"] = list(self.ids)
        if self.resources != tuple(f"r{r}" for r in range(self.n_resources)):
            out["resources"] = list(self.resources)
        return out

    @classmethod
    def from_dict(cls, data: dict) -> KnapsackModel:
        """Build from an instance file's ``data`` (see ``to_dict``); raises ``ModelError``."""
        if not isinstance(data, dict):
            raise _field_error("data", "an object", repr(data))
        allowed = ("values", "weights", "capacities", "ids", "resources")
        for key in data:
            if key not in allowed:
                raise _field_error(key, f"no such field (allowed: {', '.join(allowed)})")
        for key in allowed[:3]:
            if key not in data:
                raise _field_error(key, "a required field, which is missing")
        return cls(data["values"], data["weights"], data["capacities"],
                   ids=data.get("ids"), resources=data.get("resources"))

    def __eq__(self, other) -> bool:
        if not isinstance(other, KnapsackModel):
            return NotImplemented
        return (self.ids == other.ids and self.resources == other.resources
                and np.array_equal(self.values, other.values)
                and np.array_equal(self.weights, other.weights)
                and np.array_equal(self.capacities, other.capacities))

    __hash__ = None  # arrays are not hashable

    def __repr__(self) -> str:
        return f"KnapsackModel(n_items={self.n_items}, resources={list(self.resources)})"


@formulation("knapsack")
def knapsack_form(model: KnapsackModel) -> AlgebraicForm:
    """Binary ``x[i]`` per item, objective ``obj``, ``capacity[r]`` rows (rows without a
    weight left out).  The MIP backends solve it, on the reduced data
    (``ReducedKnapsack.form``), in a loop that makes the answer exact and canonical
    (``hpcopt.solvers.knapsack_mip``)."""
    return _form(model.values, model.weights, model.capacities)


def _form(values: np.ndarray, weights: np.ndarray, capacities: np.ndarray) -> AlgebraicForm:
    rows = [r for r in range(len(capacities)) if weights[r].any()]
    index = [np.flatnonzero(weights[r]) for r in rows]
    capacity = Rows("capacity", rows, index, [weights[r, i] for r, i in zip(rows, index)],
                    "<=", np.asarray(capacities)[rows])
    return AlgebraicForm(
        "knapsack", "max", (Variables("x", list(range(len(values))), "binary", values),),
        (capacity,), decode=lambda v: [int(round(x)) for x in v],
        encode=lambda x: np.asarray(x, dtype=float))


def brute_force_optimum(model: KnapsackModel, max_items: int = 20) -> float:
    """Optimal value by enumerating every 0-1 vector: the oracle for small test instances."""
    if model.n_items > max_items:
        raise ModelError(f"brute force enumerates 2^n decisions; n={model.n_items} > {max_items}")
    best = -np.inf
    for bits in itertools.product((0, 1), repeat=model.n_items):
        ev = model.evaluate(bits)
        if ev.feasible:
            best = max(best, ev.objective)
    return float(best)
