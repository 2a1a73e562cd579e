"""Fat-tree topologies and the communication-hop (CH) cost of a job's node set.

Nodes are numbered left to right, so leaf switch and pod are non-decreasing in the node id;
``FatTree`` keeps the node -> leaf and node -> pod maps as numpy arrays and builds the
networkx graph (nodes, level-0/1/2 switches) only when asked.

The CH cost of node set N with n nodes counts, per pair of nodes, the hops between them:
``h_leaf`` under the same leaf switch, ``h_pod`` in the same pod, ``h_other`` otherwise.  With
per-leaf counts L and per-pod counts P, the pair counts are sums of squares, so the cost is
computed in O(switches) instead of O(n^2):

    pairs(x) = x (x - 1)            (ordered)   or   x (x - 1) / 2   (unordered)
    hops     = h_other pairs(n) - (h_other - h_pod) sum pairs(P) - (h_pod - h_leaf) sum pairs(L)
    cost     = c * hops / n

Two conventions are built in: the paper's (ordered pairs, hops 2/4/6, c = 1000, no rounding;
Lan et al., CLUSTER'23, Eq. 1) and the one of the authors' public code ``hpcschedule``
(unordered pairs, hops 1/3/5, c = 1000, ``max(floor(cost), 1)``).
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from .errors import ModelError


@dataclass(frozen=True)
class HopCost:
    """How a node set's communication-hop cost is counted (see the module docstring)."""

    h_leaf: int = 2
    h_pod: int = 4
    h_other: int = 6
    c: int = 1000
    ordered: bool = True  # count ordered pairs (i, k), i != k; else unordered pairs
    integer: bool = False  # max(floor(cost), 1), as the hpcschedule code does

    def from_pairs(self, n, pairs_pod, pairs_leaf):
        """Cost from the node count n >= 1 and the same-pod / same-leaf pair counts (in this
        model's pair convention); Python ints, or integer arrays that broadcast."""
        total = n * (n - 1) if self.ordered else n * (n - 1) // 2
        hops = (self.h_other * total - (self.h_other - self.h_pod) * pairs_pod
                - (self.h_pod - self.h_leaf) * pairs_leaf)
        if not self.integer:
            return self.c * hops / n
        floor = self.c * hops // n
        return np.maximum(floor, 1) if isinstance(floor, np.ndarray) else max(floor, 1)

    def pairs(self, counts) -> int:
        """Same-switch pairs for per-switch node counts (an iterable of ints)."""
        s = sum(x * (x - 1) for x in counts)
        return s if self.ordered else s // 2


PAPER_COST = HopCost()
HPCSCHEDULE_COST = HopCost(h_leaf=1, h_pod=3, h_other=5, c=1000, ordered=False, integer=True)


@dataclass(frozen=True, eq=False)
class FatTree:
    """A (possibly pruned) fat-tree: ``n_nodes`` nodes, ``nodes_per_leaf`` per level-0
    switch, ``leaves_per_pod`` level-0 switches per pod.

    ``radix`` is the switch port count k of a k-ary fat-tree (k/2 nodes per leaf, k/2 leaves
    and k/2 level-1 switches per pod, (k/2)^2 level-2 switches); ``None`` for a plain
    two-level grouping such as the ``hpcschedule-1000`` preset.  ``name`` is the preset name
    or ``""``.
    """

    n_nodes: int
    nodes_per_leaf: int
    leaves_per_pod: int
    cost_model: HopCost = PAPER_COST
    radix: int | None = None
    name: str = ""
    leaf: np.ndarray = field(init=False, repr=False)
    pod: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for what in ("n_nodes", "nodes_per_leaf", "leaves_per_pod"):
            v = getattr(self, what)
            if int(v) != v or v < 1:
                raise ModelError(f"topology {what} must be a positive integer, got {v!r}")
        ids = np.arange(self.n_nodes, dtype=np.int64)
        object.__setattr__(self, "leaf", ids // self.nodes_per_leaf)
        object.__setattr__(self, "pod", ids // self.nodes_per_pod)

    # ----------------------------------------------------------------- construction
    @classmethod
    def kary(cls, k: int, pods: int | None = None, *, cost_model: HopCost = PAPER_COST,
             name: str = "") -> FatTree:
        """A k-ary fat-tree (k pods of (k/2)^2 nodes), pruned to ``pods`` pods if given."""
        if int(k) != k or k < 2 or k % 2:
            raise ModelError(f"fat-tree radix k must be an even integer >= 2, got {k!r}")
        pods = k if pods is None else pods
        if int(pods) != pods or not 1 <= pods <= k:
            raise ModelError(f"a {k}-ary fat-tree has 1..{k} pods, got pods={pods!r}")
        half = k // 2
        return cls(pods * half * half, half, half, cost_model, radix=int(k), name=name)

    @classmethod
    def preset(cls, name: str) -> FatTree:
        """``paper-1000`` (radix 20 pruned to 10 pods: 1,000 nodes, 10 per leaf, 100 per pod)
        or ``hpcschedule-1000`` (leaf = id // 10, rack = id // 40, the authors' code cost)."""
        if name == "paper-1000":
            return cls.kary(20, 10, name=name)
        if name == "hpcschedule-1000":
            return cls(1000, 10, 4, HPCSCHEDULE_COST, radix=None, name=name)
        raise ModelError(f"unknown topology preset {name!r}; expected one of {list(PRESETS)}")

    @classmethod
    def from_dict(cls, data: dict) -> FatTree:
        """``{"preset": name}``, ``{"kary": k, "pods": p}`` or ``{"nodes": n,
        "nodes_per_leaf": a, "leaves_per_pod": b}``; optional ``"cost"``: ``"paper"`` or
        ``"hpcschedule"``."""
        if not isinstance(data, dict):
            raise ModelError(f"topology must be an object, got {type(data).__name__}")
        cost = data.get("cost")
        if cost is not None and cost not in COST_MODELS:
            raise ModelError(f"topology cost {cost!r} unknown; expected one of "
                             f"{sorted(COST_MODELS)}")
        if "preset" in data:
            tree = cls.preset(data["preset"])
            if cost is None:
                return tree
            return cls(tree.n_nodes, tree.nodes_per_leaf, tree.leaves_per_pod,
                       COST_MODELS[cost], tree.radix, tree.name)
        model = COST_MODELS[cost or "paper"]
        if "kary" in data:
            return cls.kary(data["kary"], data.get("pods"), cost_model=model)
        try:
            return cls(data["nodes"], data["nodes_per_leaf"], data["leaves_per_pod"], model)
        except KeyError as err:
            raise ModelError(
                f"topology needs 'preset', 'kary' or 'nodes'+'nodes_per_leaf'+'leaves_per_pod';"
                f" missing {err}") from None

    def to_dict(self) -> dict:
        if self.name:
            return {"preset": self.name}
        cost = next(k for k, v in COST_MODELS.items() if v == self.cost_model)
        if self.radix is not None:
            return {"kary": self.radix, "pods": self.n_pods, "cost": cost}
        return {"nodes": self.n_nodes, "nodes_per_leaf": self.nodes_per_leaf,
                "leaves_per_pod": self.leaves_per_pod, "cost": cost}

    # ----------------------------------------------------------------- shape
    @property
    def nodes_per_pod(self) -> int:
        return self.nodes_per_leaf * self.leaves_per_pod

    @property
    def n_leaves(self) -> int:
        return -(-self.n_nodes // self.nodes_per_leaf)

    @property
    def n_pods(self) -> int:
        return -(-self.n_nodes // self.nodes_per_pod)

    def __repr__(self) -> str:
        what = self.name or (f"{self.radix}-ary" if self.radix else "two-level")
        return (f"FatTree({what}: {self.n_nodes} nodes, {self.nodes_per_leaf}/leaf, "
                f"{self.nodes_per_pod}/pod)")

    def graph(self):
        """The topology as a networkx graph: nodes ``("node", i)``, level-0 switches
        ``("L0", leaf)``, level-1 ``("L1", pod, j)``, level-2 ``("L2", j)``.  For a k-ary
        tree each pod has k/2 level-1 switches, each wired to k/2 of the (k/2)^2 level-2 ones;
        a two-level grouping gets one level-1 switch per pod and one level-2 switch."""
        import networkx as nx

        g = nx.Graph(name=repr(self))
        half = self.radix // 2 if self.radix else 1
        for i in range(self.n_nodes):
            g.add_node(("node", i), level="node")
            g.add_edge(("node", i), ("L0", int(self.leaf[i])))
        for sw in range(self.n_leaves):
            g.nodes[("L0", sw)]["level"] = 0
            p = sw // self.leaves_per_pod
            for j in range(half):
                g.add_edge(("L0", sw), ("L1", p, j))
        for p in range(self.n_pods):
            for j in range(half):
                g.nodes[("L1", p, j)]["level"] = 1
                for m in range(half):
                    g.add_edge(("L1", p, j), ("L2", j * half + m))
        for _, d in g.nodes(data=True):
            d.setdefault("level", 2)
        return g

    # ----------------------------------------------------------------- cost
    def cost(self, nodes) -> float:
        """CH cost of one job's node set, from per-leaf and per-pod counts (plain Python
        counting: a job's set is small, and this sits in the inner loop of the searches)."""
        ids = nodes.tolist() if isinstance(nodes, np.ndarray) else [int(v) for v in nodes]
        n = len(ids)
        if n == 0:
            return 0.0
        leaf, pod = self._lists
        cm = self.cost_model
        return float(cm.from_pairs(n, cm.pairs(Counter(pod[i] for i in ids).values()),
                                   cm.pairs(Counter(leaf[i] for i in ids).values())))

    @functools.cached_property
    def _lists(self) -> tuple[list, list]:
        return self.leaf.tolist(), self.pod.tolist()

    def pairwise_cost(self, nodes) -> float:
        """The same cost by its definition, pair by pair (O(n^2); for tests)."""
        arr = [int(v) for v in nodes]
        cm = self.cost_model
        total = 0
        for a_i, a in enumerate(arr):
            for b_i, b in enumerate(arr):
                if a_i == b_i or (not cm.ordered and b_i < a_i):
                    continue
                if self.leaf[a] == self.leaf[b]:
                    total += cm.h_leaf
                elif self.pod[a] == self.pod[b]:
                    total += cm.h_pod
                else:
                    total += cm.h_other
        if not arr:
            return 0.0
        if cm.integer:
            return float(max(cm.c * total // len(arr), 1))
        return cm.c * total / len(arr)

    def interval_costs(self, seq, max_size: int) -> np.ndarray:
        """``out[i, r - 1]`` = cost of the r nodes of the cyclic sequence ``seq`` starting at
        position i (wrapping to its head), for r = 1..max_size; ``inf`` where r > len(seq).

        ``seq`` must be sorted by node id: then, walking the doubled sequence, the nodes of a
        leaf (pod) inside a window are consecutive, and the same-switch pairs of a window are a
        cumulative sum of "how many earlier window nodes share my switch" -- one vectorised
        pass for all windows instead of one count per window.
        """
        seq = np.asarray(seq, dtype=np.int64)
        m = seq.size
        rmax = max(int(max_size), 1)
        out = np.full((m, rmax), np.inf)
        if m == 0:
            return out
        width = min(rmax, m)
        dbl = np.concatenate([seq, seq])
        k = np.arange(width)
        t = np.arange(m)[:, None] + k[None, :]  # positions in the doubled sequence
        same = []
        for label in (self.pod[dbl], self.leaf[dbl]):
            change = np.ones(2 * m, dtype=bool)
            change[1:] = label[1:] != label[:-1]
            run_start = np.maximum.accumulate(np.where(change, np.arange(2 * m), 0))
            earlier = np.minimum(t - run_start[t], k[None, :])  # same-switch nodes before t
            s = np.cumsum(earlier, axis=1)
            if label[m] != label[m - 1]:
                # a window that wraps may hold one switch twice: at its start (the tail of
                # seq) and at its end (the head); add the pairs across the two pieces
                nxt = np.where(change[1:m + 1], np.arange(1, m + 1), m)
                run_end = np.minimum.accumulate(nxt[::-1])[::-1]  # exclusive end of each run
                head = np.clip(t - m, 0, m - 1)  # last window position in the head piece
                both = (t >= m) & (label[head] == label[:m, None])
                s = s + np.where(both, (run_end[:m, None] - np.arange(m)[:, None])
                                 * (head - run_start[head] + 1), 0)
            same.append(2 * s if self.cost_model.ordered else s)
        out[:, :width] = self.cost_model.from_pairs(k[None, :] + 1, same[0], same[1])
        return out


PRESETS = ("paper-1000", "hpcschedule-1000")
COST_MODELS = {"paper": PAPER_COST, "hpcschedule": HPCSCHEDULE_COST}


def take_block(seq: np.ndarray, start: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(block(seq, start, size), the rest of seq)``, the rest still sorted (no re-sort)."""
    m = seq.size
    if start + size <= m:
        return seq[start:start + size], np.concatenate((seq[:start], seq[start + size:]))
    head = start + size - m
    return np.concatenate((seq[start:], seq[:head])), seq[head:start]


def block(seq, start: int, size: int) -> np.ndarray:
    """The ``size`` consecutive entries of ``seq`` from position ``start``, wrapping to its
    head when the tail is short (the paper's continuity rule D(i, n))."""
    seq = np.asarray(seq)
    m = seq.size
    if start + size <= m:
        return seq[start:start + size]
    return np.concatenate([seq[start:], seq[:start + size - m]])
