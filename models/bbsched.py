"""BBSched multi-resource window selection (Fan et al., HPDC'19, sections 3.2 and 5).

Choose which jobs of a window to start so that the use of several resources is maximal at
once; the answer is a Pareto set, from which a decision rule (``hpcopt.models.pareto_rules``)
picks one selection.  Job i needs n_i nodes, b_i GB of shared burst buffer and s_i GB of
local SSD on each of its nodes; the free nodes come in SSD classes (e.g. 128 and 256 GB)::

    maximize  f1 = sum n_i x_i                      (nodes)
              f2 = sum b_i x_i                      (burst buffer)
              f3 = sum s_i n_i x_i                  (SSD requested)        four-objective form
              f4 = -(sum of assigned minus requested SSD)   (-wasted SSD)  four-objective form
    s.t.      sum n_i x_i <= free nodes,  sum b_i x_i <= free burst buffer,
              the selected jobs' nodes can be assigned to SSD classes no smaller than s_i.

SSD classes are nested (a node of a larger class serves any smaller request), so the class
constraint is Hall's condition: for every class k, the nodes of jobs that need class k or
larger fit in the free nodes of classes k and larger.  Waste follows the assignment rule of
the driver (``hpcopt.sim.resources.MultiPool``): jobs in decreasing order of SSD request, each
on the smallest eligible class first — which is also the assignment of least waste.
``assign`` gives it, and policies start jobs in ``start_order`` so the driver reproduces it.

``evaluate_many`` evaluates a whole population at once (the GA, NSGA-II and brute force use
it); ``evaluate`` is the certificate of one decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from hpcopt.errors import ModelError

from .base import Evaluation, Model, check_labels, field_error, number_vector

FEAS_TOL = 1e-9  # relative round-off allowed on non-integer burst-buffer sums (see _tolerance)
INT_LIMIT = 2.0**53  # integer sums below this are exact in float64
OBJECTIVE_NAMES = ("nodes", "bb", "ssd", "neg_wasted_ssd")
CONSTRAINT_NAMES = ("nodes", "bb", "ssd")


def _error(field: str, expected: str, got: Any = None) -> ModelError:
    return field_error("bbsched", field, expected, got)


def _tolerance(bb: np.ndarray, free_bb: float) -> np.ndarray:
    """Overrun allowed on the (nodes, burst buffer, SSD) constraints: round-off only.

    Nodes (and so the SSD-class rows) are integers: checked exactly.  Burst buffer is exact
    too when every request is an integer and their total stays below 2^53; otherwise
    ``FEAS_TOL * max(1, free_bb)`` but under half the smallest positive request, so that the
    tolerance can never admit a whole job, however large the capacity.
    """
    if (bb == np.round(bb)).all() and np.abs(bb).sum() < INT_LIMIT:
        return np.zeros(3)
    positive = bb[bb > 0]
    tol = min(FEAS_TOL * max(1.0, free_bb), 0.5 * float(positive.min()) if positive.size
              else np.inf)
    return np.array([0.0, tol, 0.0])


@dataclass(frozen=True, eq=False)
class BBSchedModel(Model):
    """Multi-objective selection of window jobs over nodes, burst buffer and SSD classes.

    Parameters
    ----------
    nodes, bb, ssd : array-like, shape (n,)
        Nodes (integers >= 1), burst buffer (GB) and SSD per node (GB) of each window job,
        in window order (front first).  ``bb`` and ``ssd`` default to zeros.
    free_nodes : int
        Idle nodes now; with ``ssd_classes`` it may be omitted (their sum).
    free_bb : float
        Free burst buffer now (GB); default 0.
    ssd_classes : mapping SSD GB per node -> free nodes of that class, optional
        Without it all free nodes form one class of size 0 (no SSD).
    objectives : 2 or 4
        The two-objective form (f1, f2) of section 3.2, or the four-objective form of
        section 5 (needs ``ssd_classes``).
    ids : job ids (int or str, unique); default ``0 .. n-1``.
    capacity : mapping, optional
        System totals ``{"nodes": N, "bb": B, "ssd": S}`` that decision rules divide by to turn
        objectives into utilizations; default the free amounts (total SSD = sum of size x
        count over the classes).

    Notes
    -----
    Canonical decision (the tie-break every exact backend honors, issue #10): several
    selections can reach one objective vector; a front point's decision is the
    lexicographically greatest feasible 0-1 vector in window order with exactly that vector,
    i.e. the one that takes the earliest window jobs (job 0 if any tie takes it, then job 1,
    ...).  "Exactly" is exact for integer requests and burst buffer with at most 3 decimals;
    other float sums are compared as computed.  So a policy's schedule does not depend on the
    exact backend or algorithm that solved its windows.

    Examples
    --------
    The paper's Table 1 (100 nodes, 100 TB):

    >>> m = BBSchedModel([80, 10, 40, 10, 20], [20, 85, 5, 0, 0], free_nodes=100,
    ...                  free_bb=100, ids=["J1", "J2", "J3", "J4", "J5"])
    >>> m.evaluate([0, 1, 1, 1, 1]).objectives
    (80.0, 90.0)
    """

    kind: ClassVar[str] = "bbsched"
    default_backend: ClassVar[str] = "pareto-exact"
    sense: ClassVar[str] = "max"

    nodes: Any
    bb: Any = None
    ssd: Any = None
    free_nodes: int | None = None
    free_bb: float = 0.0
    ssd_classes: Any = None
    objectives: int = 2
    ids: tuple | None = None
    capacity: Any = None

    def __post_init__(self) -> None:
        nodes = number_vector("bbsched", "nodes", self.nodes, integer=True, minimum=1)
        n = nodes.size
        if n == 0:
            raise _error("jobs", "at least one job", "none")
        bb = np.zeros(n) if self.bb is None else number_vector("bbsched", "bb", self.bb, n)
        ssd = np.zeros(n) if self.ssd is None else number_vector("bbsched", "ssd", self.ssd, n)
        if self.objectives not in (2, 4) or isinstance(self.objectives, bool):
            raise _error("objectives", "2 or 4", self.objectives)
        sizes, counts = self._classes()
        if self.free_nodes is None and not self.ssd_classes:
            raise _error("free.nodes", "the number of free nodes (or free.ssd_classes)")
        free_nodes = int(counts.sum()) if self.free_nodes is None else self.free_nodes
        if (isinstance(free_nodes, bool) or not isinstance(free_nodes, (int, np.integer))
                or free_nodes < 0):
            raise _error("free.nodes", "an integer >= 0", free_nodes)
        free_nodes = int(free_nodes)
        if not self.ssd_classes:
            counts = np.array([free_nodes])
        elif int(counts.sum()) != free_nodes:
            raise _error("free.ssd_classes", f"class counts adding up to free.nodes={free_nodes}",
                         f"{int(counts.sum())} nodes")
        if self.objectives == 4 and not self.ssd_classes:
            raise _error("objectives", "2 unless free.ssd_classes is given (f3/f4 are SSD "
                         "objectives)", 4)
        free_bb = number_vector("bbsched", "free.bb", [self.free_bb], 1)[0]
        # min eligible class per job; len(sizes) means "no class is large enough"
        level = np.searchsorted(sizes, ssd - FEAS_TOL * np.maximum(1.0, ssd), side="left")
        ids = (tuple(range(n)) if self.ids is None
               else check_labels("bbsched", "ids", self.ids, n, item="jobs[{i}].id"))
        cap = dict(self.capacity or {})
        unknown = set(cap) - {"nodes", "bb", "ssd"}
        if unknown:
            raise _error("capacity", "keys among nodes, bb, ssd", sorted(unknown))
        total = {"nodes": float(cap.get("nodes", free_nodes)),
                 "bb": float(cap.get("bb", free_bb)),
                 "ssd": float(cap.get("ssd", float(sizes @ counts)))}
        for key, value in total.items():
            if not (np.isfinite(value) and value >= 0):
                raise _error(f"capacity.{key}", "a finite number >= 0", value)
        for arr in (nodes, bb, ssd, sizes, counts, level):
            arr.setflags(write=False)
        set_ = object.__setattr__
        set_(self, "nodes", nodes)
        set_(self, "bb", bb)
        set_(self, "ssd", ssd)
        set_(self, "free_nodes", free_nodes)
        set_(self, "free_bb", float(free_bb))
        set_(self, "ids", ids)
        set_(self, "capacity", total)
        set_(self, "class_sizes", sizes)
        set_(self, "class_free", counts)
        set_(self, "level", level)
        # nodes each job puts on each demand level (one-hot rows), and suffix capacities:
        # Hall's condition is  (x @ demand) suffix sums <= suffix_free
        demand = np.zeros((n, len(sizes)))
        ok = level < len(sizes)
        demand[np.nonzero(ok)[0], level[ok]] = nodes[ok]
        set_(self, "_demand", demand)
        set_(self, "_suffix_free", np.cumsum(counts[::-1])[::-1].astype(float))
        set_(self, "_ineligible", ~ok)
        tol = _tolerance(bb, float(free_bb))
        tol.setflags(write=False)
        set_(self, "_tol", tol)

    def _classes(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.ssd_classes:
            return np.array([0.0]), np.array([0])
        if not hasattr(self.ssd_classes, "items"):
            raise _error("free.ssd_classes", 'an object {"<GB per node>": <free nodes>, ...}',
                         self.ssd_classes)
        pairs = []
        for key, count in self.ssd_classes.items():
            try:
                size = float(key)
            except (TypeError, ValueError):
                raise _error("free.ssd_classes", "keys that are SSD sizes in GB", key) from None
            if not (np.isfinite(size) and size >= 0):
                raise _error("free.ssd_classes", "sizes >= 0", key)
            if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
                raise _error(f"free.ssd_classes[{key}]", "an integer >= 0", count)
            pairs.append((size, int(count)))
        pairs.sort()
        sizes = np.array([p[0] for p in pairs])
        if np.unique(sizes).size != sizes.size:
            raise _error("free.ssd_classes", "distinct sizes", list(self.ssd_classes))
        return sizes, np.array([p[1] for p in pairs])

    # -- sizes ----------------------------------------------------------------------------
    @property
    def n_items(self) -> int:
        return self.nodes.size

    @property
    def n_objectives(self) -> int:
        return int(self.objectives)

    @property
    def objective_names(self) -> tuple[str, ...]:
        return OBJECTIVE_NAMES[: self.objectives]

    # -- semantics ------------------------------------------------------------------------
    def _decision(self, x) -> np.ndarray:
        arr = np.asarray(x)
        if arr.shape != (self.n_items,):
            raise ModelError(f"bbsched decision: expected {self.n_items} entries (one per job), "
                             f"got shape {arr.shape}")
        if arr.dtype.kind == "b":
            return arr
        sel = arr != 0
        if arr.dtype.kind not in "iuf" or not (arr[sel] == 1).all():
            raise ModelError("bbsched decision: expected entries 0 or 1, got "
                             f"{arr[:8].tolist()}{'...' if arr.size > 8 else ''}")
        return sel

    def evaluate_many(self, X) -> tuple[np.ndarray, np.ndarray]:
        """Objectives ``F`` (p, objectives) and violations ``G`` (p, 3: nodes, bb, ssd; 0 when
        satisfied) of a population ``X`` (p, n) of 0-1 rows; vectorized."""
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.n_items:
            raise ModelError(f"bbsched population: expected shape (p, {self.n_items}), "
                             f"got {X.shape}")
        used = X @ self.nodes
        bb = X @ self.bb
        levels = X @ self._demand  # nodes per demand level
        suffix = np.cumsum(levels[:, ::-1], axis=1)[:, ::-1]
        ssd_over = (suffix - self._suffix_free).max(axis=1)
        ssd_over = np.maximum(ssd_over, 0.0) + (X @ (self._ineligible * self.nodes))
        G = np.stack([np.maximum(used - self.free_nodes, 0.0),
                      np.maximum(bb - self.free_bb, 0.0), ssd_over], axis=1)
        if self.objectives == 2:
            return np.stack([used, bb], axis=1), G
        requested = X @ (self.ssd * self.nodes)
        assigned = self._assigned_capacity(levels)
        return np.stack([used, bb, requested, requested - assigned], axis=1), G

    def _assigned_capacity(self, levels: np.ndarray) -> np.ndarray:
        """SSD GB of the nodes the least-waste rule assigns: demand levels from the largest
        down, each on its smallest eligible class first (overflow beyond the free nodes is
        charged at the largest size, so infeasible rows still get a number)."""
        sizes, k = self.class_sizes, len(self.class_sizes)
        rem = np.broadcast_to(self.class_free.astype(float), levels.shape).copy()
        total = np.zeros(levels.shape[0])
        for lvl in range(k - 1, -1, -1):
            need = levels[:, lvl].copy()
            for c in range(lvl, k):
                take = np.minimum(need, rem[:, c])
                rem[:, c] -= take
                need -= take
                total += take * sizes[c]
            total += need * sizes[-1]
        return total

    def evaluate(self, x) -> Evaluation:
        """Certificate of decision ``x``: objectives in the model's form, violations of the
        node, burst-buffer and SSD-class constraints (exact for integer data; non-integer
        burst buffer may overrun by round-off only, under half the smallest request)."""
        sel = self._decision(x)
        F, G = self.evaluate_many(sel[None, :])
        over = G[0]
        return Evaluation(bool((over <= self._tol).all()), tuple(F[0].tolist()),
                          tuple(over.tolist()))

    def feasible_many(self, X) -> np.ndarray:
        """Boolean feasibility of each row of ``X``."""
        _, G = self.evaluate_many(X)
        return (G <= self._tol).all(axis=1)

    def feasible_prefix(self, X) -> np.ndarray:
        """``(p, n)`` booleans: the selected jobs of row ``X[r]`` in columns ``0..i`` fit
        together (nodes, burst buffer, SSD classes).  Prefix sums only grow, so along a row
        the flags are True up to the first column that breaks a constraint, False after."""
        X = np.asarray(X, dtype=float)
        tol = self._tol
        ok = np.cumsum(X * self.nodes, axis=1) <= self.free_nodes + tol[0]
        ok &= np.cumsum(X * self.bb, axis=1) <= self.free_bb + tol[1]
        if len(self.class_sizes) > 1 or self._ineligible.any():
            levels = np.cumsum(X[:, :, None] * self._demand[None], axis=1)
            suffix = np.cumsum(levels[..., ::-1], axis=2)[..., ::-1]
            ok &= (suffix <= self._suffix_free + tol[2]).all(axis=2)
            ok &= np.cumsum(X * self._ineligible, axis=1) == 0
        return ok

    def decision_ids(self, x) -> tuple:
        sel = self._decision(x)
        return tuple(self.ids[i] for i in sel.nonzero()[0].tolist())

    def start_order(self, x) -> list[int]:
        """Indices of the selected jobs in the order that gives the least-waste assignment
        when each takes its smallest eligible class first: larger SSD requests first, then
        window order."""
        sel = self._decision(x).nonzero()[0]
        return sorted(sel.tolist(), key=lambda i: (-self.ssd[i], i))

    def assign(self, x) -> dict:
        """Nodes per SSD class (ascending sizes) of each selected job under ``start_order``."""
        rem = self.class_free.astype(int).copy()
        out = {}
        for i in self.start_order(x):
            need, got = int(self.nodes[i]), []
            for c, size in enumerate(self.class_sizes):
                take = min(need, int(rem[c])) if size + FEAS_TOL >= self.ssd[i] else 0
                rem[c] -= take
                need -= take
                got.append(take)
            if need:
                raise ModelError(f"bbsched assign: job {self.ids[i]!r} does not fit the free "
                                 "SSD classes")
            out[self.ids[i]] = tuple(got)
        return out

    def utilization(self, F) -> np.ndarray:
        """Objective rows as fractions of the system totals (``capacity``): node, burst-buffer
        and SSD utilization, and wasted SSD over total SSD (negative)."""
        F = np.atleast_2d(np.asarray(F, dtype=float))
        denom = [self.capacity["nodes"], self.capacity["bb"], self.capacity["ssd"],
                 self.capacity["ssd"]][: F.shape[1]]
        denom = np.where(np.asarray(denom) > 0, denom, 1.0)
        return F / denom

    def constraint_rows(self) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """The constraints as linear rows ``A x <= c``: nodes, then one Hall row per larger SSD
        class (nodes of jobs that need that class or a larger one), then burst buffer.  Jobs
        that fit no class demand one node more than are free."""
        n_req = np.where(self._ineligible, self.free_nodes + 1.0, self.nodes)
        rows, caps, names = [n_req], [float(self.free_nodes)], ["nodes"]
        for k in range(1, len(self.class_sizes)):
            rows.append(np.where(self.level >= k, n_req, 0.0))
            caps.append(float(self._suffix_free[k]))
            names.append(f"ssd>={self.class_sizes[k]:g}")
        rows.append(self.bb)
        caps.append(self.free_bb)
        names.append("bb")
        return np.array(rows), np.array(caps), names

    def job_waste(self) -> np.ndarray:
        """SSD GB each job wastes on its smallest eligible class (its least possible waste)."""
        sizes = np.append(self.class_sizes, np.inf)
        return (sizes[self.level] - self.ssd) * self.nodes

    # -- instance files -------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The ``data`` part of an instance file."""

        def num(v):
            v = float(v)
            return int(v) if v.is_integer() else v

        jobs = []
        for i in range(self.n_items):
            job = {"id": self.ids[i], "nodes": int(self.nodes[i])}
            if self.bb[i]:
                job["bb"] = num(self.bb[i])
            if self.ssd[i]:
                job["ssd"] = num(self.ssd[i])
            jobs.append(job)
        free: dict = {"nodes": self.free_nodes}
        if self.free_bb:
            free["bb"] = num(self.free_bb)
        if self.ssd_classes:
            free["ssd_classes"] = {f"{s:g}": int(c)
                                   for s, c in zip(self.class_sizes, self.class_free)}
        out = {"jobs": jobs, "free": free, "objectives": self.objectives}
        if self.ids == tuple(range(self.n_items)):
            for job in jobs:
                job.pop("id")
        default = {"nodes": float(self.free_nodes), "bb": self.free_bb,
                   "ssd": float(self.class_sizes @ self.class_free)}
        if self.capacity != default:
            out["capacity"] = {k: num(v) for k, v in self.capacity.items()}
        return out

    @classmethod
    def from_dict(cls, data: dict) -> BBSchedModel:
        """Build from an instance file's ``data``::

            {"jobs": [{"id": .., "nodes": n, "bb": gb, "ssd": gb_per_node}, ...],
             "free": {"nodes": n, "bb": gb, "ssd_classes": {"128": n128, "256": n256}},
             "objectives": 2 or 4, "capacity": {"nodes": N, "bb": B, "ssd": S}}

        (``bb``, ``ssd``, ``ssd_classes``, ``objectives`` and ``capacity`` optional).
        """
        if not isinstance(data, dict):
            raise _error("data", "an object", repr(data))
        allowed = ("jobs", "free", "objectives", "capacity")
        for key in data:
            if key not in allowed:
                raise _error(key, f"no such field (allowed: {', '.join(allowed)})")
        jobs, free = data.get("jobs"), data.get("free")
        if not isinstance(jobs, list) or not jobs:
            raise _error("jobs", "a non-empty list of {id, nodes, bb, ssd} objects", jobs)
        if not isinstance(free, dict):
            raise _error("free", 'an object {"nodes": n, "bb": gb, "ssd_classes": {...}}', free)
        for key in free:
            if key not in ("nodes", "bb", "ssd_classes"):
                raise _error(f"free.{key}", "no such field (allowed: nodes, bb, ssd_classes)")
        cols: dict[str, list] = {"id": [], "nodes": [], "bb": [], "ssd": []}
        for i, job in enumerate(jobs):
            if not isinstance(job, dict) or "nodes" not in job:
                raise _error(f"jobs[{i}]", 'an object with at least "nodes"', job)
            for key in job:
                if key not in cols:
                    raise _error(f"jobs[{i}].{key}", "no such field (allowed: id, nodes, bb, ssd)")
            for key in cols:
                cols[key].append(job.get(key, i if key == "id" else 0))
        for key in ("nodes", "bb", "ssd"):
            for i, v in enumerate(cols[key]):
                if isinstance(v, bool) or not isinstance(v, (int, float)):
                    raise _error(f"jobs[{i}].{key}", "a number", v)
        return cls(cols["nodes"], cols["bb"], cols["ssd"], free_nodes=free.get("nodes"),
                   free_bb=free.get("bb", 0.0), ssd_classes=free.get("ssd_classes"),
                   objectives=data.get("objectives", 2), ids=cols["id"],
                   capacity=data.get("capacity"))

    def __eq__(self, other) -> bool:
        if not isinstance(other, BBSchedModel):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None

    def __repr__(self) -> str:
        return (f"BBSchedModel(n_items={self.n_items}, objectives={self.objectives}, "
                f"free_nodes={self.free_nodes}, free_bb={self.free_bb:g})")


def brute_force_front(model: BBSchedModel, max_items: int = 20):
    """Exact Pareto front by enumerating every 0-1 vector (the test oracle, W <= 20).

    Returns ``(X, F)``: one decision per distinct non-dominated objective vector (the first in
    enumeration order), rows sorted by decreasing f1 then f2.  Non-dominated filtering is
    pymoo's.
    """
    from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting  # lazy: pymoo takes ~0.2 s

    n = model.n_items
    if n > max_items:
        raise ModelError(f"brute force enumerates 2^n decisions; n={n} > {max_items}")
    codes = np.arange(2**n, dtype=np.int64)
    X = ((codes[:, None] >> np.arange(n)) & 1).astype(np.int8)
    feas = model.feasible_many(X)
    X = X[feas]
    F, _ = model.evaluate_many(X)
    F, first = np.unique(F, axis=0, return_index=True)
    X = X[first]
    keep = NonDominatedSorting().do(-F, only_non_dominated_front=True)
    X, F = X[keep], F[keep]
    order = np.lexsort(tuple(-F[:, k] for k in range(F.shape[1] - 1, -1, -1)))
    return X[order], F[order]
