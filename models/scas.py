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
model would report.  ``scas_form`` (and ``to_pyomo``) gives this form
(``formulation="paper"``) or the compact one without x, ``sum_j sum_{i: k in D(i, n_j)} y_ji
<= 1`` per node (``"compact"``), which has the same integer solutions and a tighter LP
relaxation.

A decision ``x`` lists each job's first position in Q (0-based, window order).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from hpcopt.errors import ModelError
from hpcopt.topology import block

from .algebraic import AlgebraicForm, IntegerObjective, Rows, Variables, formulation
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

    def algebraic_size(self, formulation: str = "paper") -> tuple[int, int, int]:
        """(variables, rows, nonzeros) of ``to_pyomo(formulation)``: what a solver build
        costs (``compact``: y and the node rows; ``paper`` adds x and the rows (4))."""
        jq, q = self.n_jobs * self.n_idle, self.n_idle
        spans = q * int(np.sum(self.sizes))  # sum_j |Q| n_j: covers per node row, rows (4)
        if formulation == "compact":
            return jq, self.n_jobs + q, jq + spans
        return 2 * jq, self.n_jobs + spans + q, jq + 2 * spans + jq

    def to_pyomo(self, formulation: str = "paper"):
        """A pyomo ``ConcreteModel`` of ``scas_form``: binary ``y[j, i]`` (job j starts at
        position i), objective ``obj``; ``"paper"`` adds ``x[j, k]`` and rows (4)."""
        return super().to_pyomo(formulation=formulation)

    def covering_starts(self) -> dict[int, list[list[int]]]:
        """For each job size n: ``[k]`` = the first positions i whose D(i, n) holds position k."""
        q = self.n_idle
        out = {}
        for n in {int(v) for v in self.sizes}:
            out[n] = [[(k - d) % q for d in range(n)] for k in range(q)]
        return out


ROUNDED_SCALE = 1000  # costs that are not exact integers: integer backends round L * cost


@formulation("scas")
def scas_form(model: SCASModel, formulation: str = "paper") -> AlgebraicForm:
    """Binary ``y[j, i]`` (job j starts at position i of Q), rows ``one_start[j]`` (3); the
    paper's ``x[j, k]`` with rows ``span[j, i, d]`` (4) and ``node[k]`` (``"paper"``), or
    the compact ``node[k]`` rows on y alone (``"compact"``).  The integer objective is the
    exact one of ``integer_costs`` (so ties are not merged by a solver's tolerances), else
    the costs rounded to 1/``ROUNDED_SCALE``, whose round-off the bound then covers."""
    if formulation not in ("paper", "compact"):
        raise ModelError(f"SCAS formulation must be 'paper' or 'compact', got {formulation!r}")
    J, q = model.n_jobs, model.n_idle
    sizes = [int(n) for n in model.sizes]
    costs = model.interval_costs[:, np.asarray(sizes) - 1].T  # [j, i]
    ys = np.arange(J * q).reshape(J, q)
    blocks = [Variables("y", [(j, i) for j in range(J) for i in range(q)], "binary",
                        costs.ravel())]
    one = np.ones
    rows = [Rows("one_start", list(range(J)), list(ys), [one(q)] * J, "==", one(J))]
    covers = model.covering_starts()
    if formulation == "compact":
        index = [np.concatenate([ys[j, covers[n][k]] for j, n in enumerate(sizes)])
                 for k in range(q)]
        rows.append(Rows("node", list(range(q)), index, [one(len(i)) for i in index], "<=",
                         one(q)))
    else:
        xs = J * q + ys
        blocks.append(Variables("x", [(j, k) for j in range(J) for k in range(q)], "binary",
                                np.zeros(J * q)))
        keys = [(j, i, d) for j, n in enumerate(sizes) for i in range(q) for d in range(n)]
        j, i, d = np.array(keys, dtype=np.int64).reshape(-1, 3).T
        index = list(np.stack([ys[j, i], xs[j, (i + d) % q]], axis=1))
        rows.append(Rows("span", keys, index, [np.array([1.0, -1.0])] * len(keys), "<=",
                         np.zeros(len(keys))))
        rows.append(Rows("node", list(range(q)), list(xs.T), [one(J)] * q, "<=", one(q)))
    exact = model.integer_costs()
    n_vars = sum(len(b) for b in blocks)
    if exact is not None:
        scale, weights = exact
        coefs = np.zeros(n_vars, dtype=np.int64)
        coefs[:J * q] = np.asarray(weights, dtype=np.int64).ravel()
        integer = IntegerObjective(scale, coefs)
    else:
        coefs = np.zeros(n_vars, dtype=np.int64)
        coefs[:J * q] = np.round(costs.ravel() * ROUNDED_SCALE).astype(np.int64)
        integer = IntegerObjective(ROUNDED_SCALE, coefs, slack=0.5 * J / ROUNDED_SCALE)

    def decode(values) -> list[int]:
        return np.argmax(np.asarray(values[:J * q]).reshape(J, q) > 0.5, axis=1).tolist()

    def encode(starts) -> np.ndarray:
        values = np.zeros(n_vars)
        for j, (s, n) in enumerate(zip(starts, sizes)):
            values[ys[j, int(s)]] = 1.0
            if formulation == "paper":
                values[J * q + ys[j, [(int(s) + d) % q for d in range(n)]]] = 1.0
        return values

    return AlgebraicForm(f"scas-{formulation}", "min", tuple(blocks), tuple(rows), decode,
                         encode, integer)


@formulation("scas", "cpsat")
def scas_cpsat_form(model: SCASModel, formulation: str = "compact") -> AlgebraicForm:
    """CP-SAT takes the compact form by default (SCIP and pyomo the paper's), for speed: on 12
    of the paper's windows its median solve was 1.2 s against 3.2 s on the paper's form, and
    on 20-job windows it reached the optimum where the paper's form stopped 10% above it at
    30 s (benchmarks/README, "The two SCAS forms per backend")."""
    return scas_form(model, formulation)
