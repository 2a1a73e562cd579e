"""DCAS: dynamic continuity assignment (Lan et al., CLUSTER'23, section V, model M_DCAS).

Jobs are placed one after another; each takes n_j consecutive entries of the *current*
idle-node sequence Q from a first position (wrapping to its head), and its nodes then leave
Q.  A decision is the placement order followed by the first position of each placed job in
the Q of its step::

    x = (order[0], ..., order[J-1], pos[0], ..., pos[J-1])

job ``order[t]`` takes D(pos[t], n) of the sequence left after steps 0..t-1.  Every SCAS
solution is a DCAS solution (``from_scas``: a block of consecutive Q entries stays
consecutive once other disjoint blocks are removed), so the DCAS optimum is never worse than
the SCAS optimum; DCAS can also reach node sets that straddle nodes taken by earlier jobs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from hpcopt.errors import ModelError
from hpcopt.topology import take_block

from .allocation import AllocationModel, check_decision
from .base import Evaluation


@dataclass(frozen=True, eq=False)
class DCASModel(AllocationModel):
    """Sequential contiguous allocation of a window's jobs (the Q is updated after each job).

    >>> m = DCASModel("paper-1000", idle_nodes=range(0, 30), sizes=[10, 10])
    >>> m.evaluate([1, 0, 10, 0]).objectives   # job 1 on nodes 10-19, then job 0 on 0-9
    (36000.0,)
    """

    kind: ClassVar[str] = "dcas"
    default_backend: ClassVar[str] = "sa"

    def split(self, x) -> tuple[np.ndarray, np.ndarray]:
        arr = check_decision(self.kind, x, 2 * self.n_jobs)
        return arr[:self.n_jobs], arr[self.n_jobs:]

    def node_sets(self, x) -> list[np.ndarray]:
        """Per job (window order) its node ids; positions are taken modulo the current |Q|."""
        order, pos = self.split(x)
        seq = self.idle_nodes
        sets: list = [None] * self.n_jobs
        for j, p in zip(order, pos):
            sets[int(j)], seq = take_block(seq, int(p) % seq.size, int(self.sizes[j]))
        return sets

    def evaluate(self, x) -> Evaluation:
        """Objectives ``(total cost,)``; violations ``(order entries that are not a
        permutation + positions outside the current Q, node overlaps)``."""
        order, pos = self.split(x)
        bad = self.n_jobs - np.unique(order[(order >= 0) & (order < self.n_jobs)]).size
        if bad:
            return Evaluation(False, (float("inf"),), (float(bad), 0.0))
        seq_len = self.n_idle - np.concatenate([[0], np.cumsum(self.sizes[order])[:-1]])
        bad += int(((pos < 0) | (pos >= seq_len)).sum())
        cost, violations = self._certificate(self.node_sets(x), bad)
        return Evaluation(not any(violations), (cost,), violations)

    def replay(self, order, first_nodes) -> tuple[list[np.ndarray], list[int]]:
        """Place jobs ``order`` one by one, each from its given first node id, on the Q left
        by the ones before; returns per-step node sets and positions.  Destroy-and-repair
        search keeps the first nodes of the jobs it does not remove and replays them: a
        kept job's block can only shrink into nodes freed inside its old span, so the replay
        is always feasible and yields a valid DCAS decision ``tuple(order) + tuple(pos)``."""
        sets, pos, _ = self.place(order, first_nodes)
        return sets, pos

    def place(self, order, first_nodes) -> tuple[list[np.ndarray], list[int], np.ndarray]:
        """``replay`` plus the idle sequence left after the last job."""
        seq = self.idle_nodes
        sets, pos = [], []
        for j, first in zip(order, first_nodes):
            p = int(np.searchsorted(seq, first))
            if p >= seq.size or seq[p] != first:
                raise ModelError(f"dcas replay: node {first} is not idle at job {j}'s step")
            nodes, seq = take_block(seq, p, int(self.sizes[j]))
            sets.append(nodes)
            pos.append(p)
        return sets, pos, seq

    def from_scas(self, starts) -> tuple[int, ...]:
        """The DCAS decision placing each job on its SCAS block (order: window order)."""
        q = self.n_idle
        order, pos = [], []
        seq = self.idle_nodes
        for j, s in enumerate(starts):
            first = self.idle_nodes[int(s) % q]
            pos.append(int(np.searchsorted(seq, first)))
            order.append(j)
            seq = take_block(seq, pos[-1], int(self.sizes[j]))[1]
        return tuple(order) + tuple(pos)
