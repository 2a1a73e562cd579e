"""What the topology-aware allocation models share (Lan et al., CLUSTER'23, sections III-IV).

A window of jobs (job j needs n_j nodes) is placed on the idle nodes of a fat-tree.  The idle
nodes form the sequence Q in increasing id; a job takes n_j consecutive entries of Q from a
first position, wrapping to the head of Q when the tail is short (the continuity rule
D(i, n)).  The objective is the total communication-hop cost (``hpcopt.topology``).  SCAS
(``hpcopt.models.scas``) places every job on the one static Q; DCAS (``hpcopt.models.dcas``)
places them one after another, each on the Q left by the ones before.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from hpcopt.errors import ModelError
from hpcopt.topology import FatTree

from .base import Model, check_labels, field_error, number_vector


@dataclass(frozen=True, eq=False)
class AllocationModel(Model):
    """Jobs of a window to place on the idle nodes of a fat-tree (shared data and checks).

    Parameters
    ----------
    topology : FatTree, or its dict form (``{"preset": "paper-1000"}``, ...).
    idle_nodes : node ids that are idle now (any order; stored sorted: the sequence Q).
    sizes : nodes requested by each window job (integers >= 1).
    ids : job ids (int or str, unique); default ``0 .. J-1``.
    """

    kind: ClassVar[str] = ""
    sense: ClassVar[str] = "min"

    topology: Any
    idle_nodes: Any
    sizes: Any
    ids: tuple | None = None

    def __post_init__(self) -> None:
        kind = self.kind
        topo = self.topology
        if isinstance(topo, dict):
            topo = FatTree.from_dict(topo)
        elif isinstance(topo, str):
            topo = FatTree.preset(topo)
        if not isinstance(topo, FatTree):
            raise field_error(kind, "topology", "a FatTree, a preset name or its dict form",
                              type(topo).__name__)
        idle = number_vector(kind, "idle_nodes", self.idle_nodes, integer=True).astype(np.int64)
        if idle.size and idle.max() >= topo.n_nodes:
            raise field_error(kind, "idle_nodes", f"node ids in 0..{topo.n_nodes - 1}",
                              int(idle.max()))
        seq = np.unique(idle)
        if seq.size != idle.size:
            raise field_error(kind, "idle_nodes", "distinct node ids", "a node listed twice")
        sizes = number_vector(kind, "jobs.nodes", self.sizes, integer=True,
                              minimum=1).astype(np.int64)
        if sizes.size == 0:
            raise field_error(kind, "jobs", "at least one job", "none")
        if int(sizes.sum()) > seq.size:
            raise field_error(kind, "jobs", f"at most {seq.size} nodes in all (the idle nodes)",
                              f"{int(sizes.sum())} nodes requested")
        ids = (tuple(range(sizes.size)) if self.ids is None
               else check_labels(kind, "ids", self.ids, sizes.size, item="jobs[{i}].id"))
        for name, value in (("topology", topo), ("idle_nodes", seq), ("sizes", sizes),
                            ("ids", ids)):
            object.__setattr__(self, name, value)
        seq.setflags(write=False)
        sizes.setflags(write=False)

    # ------------------------------------------------------------------ data
    @property
    def n_jobs(self) -> int:
        return int(self.sizes.size)

    @property
    def n_idle(self) -> int:
        return int(self.idle_nodes.size)

    @functools.cached_property
    def interval_costs(self) -> np.ndarray:
        """``[i, r - 1]``: cost of the r nodes of Q from position i (wrapping), r <= max size."""
        return self.topology.interval_costs(self.idle_nodes, int(self.sizes.max()))

    def decision_ids(self, x) -> tuple:
        """Every job is placed: all ids, in window order."""
        return self.ids

    def allocation(self, x) -> dict:
        """Job id -> tuple of node ids for decision ``x`` (which must be feasible)."""
        sets = self.node_sets(x)
        return {self.ids[j]: tuple(int(v) for v in nodes) for j, nodes in enumerate(sets)}

    def node_sets(self, x) -> list[np.ndarray]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _certificate(self, sets, bad_index: int) -> tuple[float, tuple[float, float]]:
        """Total cost of per-job node sets and the violations (bad indices, shared nodes)."""
        taken = np.concatenate(sets) if sets else np.zeros(0, dtype=np.int64)
        shared = int(taken.size - np.unique(taken).size)
        cost = sum(self.topology.cost(s) for s in sets)
        return float(cost), (float(bad_index), float(shared))

    # ------------------------------------------------------------------ instance files
    def to_dict(self) -> dict:
        return {"topology": self.topology.to_dict(),
                "idle_nodes": [int(v) for v in self.idle_nodes],
                "jobs": [{"id": i, "nodes": int(n)} for i, n in zip(self.ids, self.sizes)]}

    @classmethod
    def from_dict(cls, data: dict) -> AllocationModel:
        kind = cls.kind
        if not isinstance(data, dict):
            raise field_error(kind, "data", "an object", type(data).__name__)
        for key in ("topology", "idle_nodes", "jobs"):
            if key not in data:
                raise field_error(kind, key, "present (topology, idle_nodes, jobs)")
        jobs = data["jobs"]
        if not isinstance(jobs, list) or not all(isinstance(j, dict) for j in jobs):
            raise field_error(kind, "jobs", "a list of {id, nodes} objects", repr(jobs))
        for i, job in enumerate(jobs):
            if "nodes" not in job:
                raise field_error(kind, f"jobs[{i}].nodes", "present")
        ids = [j.get("id", i) for i, j in enumerate(jobs)]
        return cls(data["topology"], data["idle_nodes"], [j["nodes"] for j in jobs], ids=ids)


def check_decision(kind: str, x, length: int) -> np.ndarray:
    """``x`` as an int array of ``length`` entries (a ``ModelError`` otherwise)."""
    try:
        arr = np.asarray(x, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ModelError(f"{kind} decision: expected {length} integers, got {x!r}") from None
    if arr.size != length or not np.all(arr == np.round(arr)):
        raise ModelError(f"{kind} decision: expected {length} integers, got {arr.size} values")
    return arr.astype(np.int64)
