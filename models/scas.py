"""SCAS: static continuity assignment (Lan et al., CLUSTER'23, section IV, model M_SCAS).

Every window job j picks a first position i of the idle-node sequence Q and takes the n_j
consecutive nodes D(i, n_j) of Q from there (wrapping to the head of Q).  All jobs use the
same Q, so a decision is one first position per job::

    minimize   sum_j sum_i l_ji y_ji                       l_ji = CH cost of D(i, n_j)
    s.t.       sum_i y_ji = 1                  for every job j                        (3)
               y_ji <= x_jk                    for every j, i and k in D(i, n_j)      (4)
               sum_j x_jk <= 1                 for every idle node k               (added)
               x, y binary                                                             (5)

The paper's formulation has (3)-(5) only, which lets two jobs share a node; hpcopt adds the
last constraint (no node serves two jobs), so its optimum can be higher than the paper's
model would report.  ``to_pyomo`` gives this form (``formulation="paper"``) or the compact
one without x, ``sum_j sum_{i: k in D(i, n_j)} y_ji <= 1`` per node (``"compact"``), which
has the same integer solutions and a tighter LP relaxation.

A decision ``x`` lists each job's first position in Q (0-based, window order).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from hpcopt.errors import ModelError
from hpcopt.topology import block

from .allocation import AllocationModel, check_decision
from .base import Evaluation


@dataclass(frozen=True, eq=False)
class SCASModel(AllocationModel):
    """Static contiguous allocation of a window's jobs on one idle-node sequence Q.

    >>> m = SCASModel("paper-1000", idle_nodes=range(0, 30), sizes=[10, 10], ids=["a", "b"])
    >>> m.evaluate([0, 10]).objectives       # each job on one leaf switch: 2 hops per pair
    (36000.0,)
    """

    kind: ClassVar[str] = "scas"
    default_backend: ClassVar[str] = "scas-exact"

    def node_sets(self, x) -> list[np.ndarray]:
        starts = check_decision(self.kind, x, self.n_jobs)
        return [block(self.idle_nodes, int(s), int(n)) for s, n in zip(starts, self.sizes)]

    def evaluate(self, x) -> Evaluation:
        """Objectives ``(total cost,)``; violations ``(first positions outside 0..|Q|-1,
        node overlaps)``."""
        starts = check_decision(self.kind, x, self.n_jobs)
        bad = int(((starts < 0) | (starts >= self.n_idle)).sum())
        sets = [block(self.idle_nodes, int(s) % self.n_idle, int(n))
                for s, n in zip(starts, self.sizes)]
        cost, violations = self._certificate(sets, bad)
        return Evaluation(not any(violations), (cost,), violations)

    def integer_costs(self, limit: int = 2**52) -> tuple[int, list[list[int]]] | None:
        """``(L, w)`` with ``w[j][i] = L * cost of job j starting at position i``, all exact
        integers: CH costs are ``c * hops / n`` (or whole numbers), so ``n * cost`` is a whole
        number and ``L`` = the lcm of the window's sizes makes every cost one.  Integer
        backends (CP-SAT) prove optimality on these, not on rounded costs.  ``None`` when the
        costs are not of that form or a total could exceed ``limit``."""
        import math

        costs = self.interval_costs
        sizes = [int(n) for n in self.sizes]
        whole = np.array_equal(costs, np.round(costs))
        L = 1 if whole else math.lcm(*set(sizes))
        cols = {}
        for n in set(sizes):
            base = costs[:, n - 1] * (1 if whole else n)  # c * hops: a whole number
            if (np.abs(base - np.round(base)) > 1e-4).any():
                return None
            cols[n] = np.round(base).astype(np.int64) * (L // (1 if whole else n))
        if sum(int(cols[n].max()) for n in sizes) >= limit:
            return None
        return L, [cols[n].tolist() for n in sizes]

    def start_nodes(self, x) -> tuple[int, ...]:
        """First node id of each job."""
        return tuple(int(self.idle_nodes[int(s)]) for s in x)

    def algebraic_size(self, formulation: str = "paper") -> tuple[int, int, int]:
        """(variables, rows, nonzeros) of ``to_pyomo(formulation)``: what a solver build
        costs (``compact``: y and the node rows; ``paper`` adds x and the rows (4))."""
        jq, q = self.n_jobs * self.n_idle, self.n_idle
        spans = q * int(np.sum(self.sizes))  # sum_j |Q| n_j: covers per node row, rows (4)
        if formulation == "compact":
            return jq, self.n_jobs + q, jq + spans
        return 2 * jq, self.n_jobs + spans + q, jq + 2 * spans + jq

    def to_pyomo(self, formulation: str = "paper"):
        """A pyomo ``ConcreteModel`` with binary ``y[j, i]`` (job j starts at position i),
        objective ``obj``; ``"paper"`` adds ``x[j, k]`` and rows (4) plus the node rows."""
        import pyomo.environ as pyo

        if formulation not in ("paper", "compact"):
            raise ModelError(f"SCAS formulation must be 'paper' or 'compact', got {formulation!r}")
        costs = self.interval_costs
        m = pyo.ConcreteModel(name=f"scas-{formulation}")
        m.J = pyo.RangeSet(0, self.n_jobs - 1)
        m.Q = pyo.RangeSet(0, self.n_idle - 1)
        m.y = pyo.Var(m.J, m.Q, within=pyo.Binary)
        sizes = [int(n) for n in self.sizes]
        m.obj = pyo.Objective(expr=sum(float(costs[i, sizes[j] - 1]) * m.y[j, i]
                                       for j in m.J for i in m.Q), sense=pyo.minimize)
        m.one_start = pyo.Constraint(m.J, rule=lambda m, j: sum(m.y[j, i] for i in m.Q) == 1)
        covers = self.covering_starts()
        if formulation == "compact":
            m.node = pyo.Constraint(m.Q, rule=lambda m, k: sum(
                m.y[j, i] for j in m.J for i in covers[sizes[j]][k]) <= 1)
            return m
        m.x = pyo.Var(m.J, m.Q, within=pyo.Binary)
        q = self.n_idle
        m.span = pyo.Constraint(
            [(j, i, k) for j in m.J for i in m.Q for k in range(sizes[j])],
            rule=lambda m, j, i, k: m.y[j, i] <= m.x[j, (i + k) % q])
        m.node = pyo.Constraint(m.Q, rule=lambda m, k: sum(m.x[j, k] for j in m.J) <= 1)
        return m

    def pyomo_decision(self, pm) -> list[int]:
        from pyomo.environ import value

        return [next(i for i in pm.Q if (value(pm.y[j, i]) or 0) > 0.5) for j in pm.J]

    def covering_starts(self) -> dict[int, list[list[int]]]:
        """For each job size n: ``[k]`` = the first positions i whose D(i, n) holds position k."""
        q = self.n_idle
        out = {}
        for n in {int(v) for v in self.sizes}:
            out[n] = [[(k - d) % q for d in range(n)] for k in range(q)]
        return out
