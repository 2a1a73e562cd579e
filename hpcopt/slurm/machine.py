"""A managed partition's nodes as the decision core counts them, one object per kind.

The core (``hpcopt.sim.decide``) takes the nodes out of the machine or busy with no job in
the form its machine's kind counts them: a count (interchangeable nodes), ``{SSD GB:
nodes}`` (SSD classes) or node ids (a topology), and says where a started job runs in the
same form.  Each kind here turns Slurm's node names into that form and back, so the cycle
(``hpcopt.slurm.adapter``) reads the same for every kind:

- ``CountedNodes``: interchangeable nodes (with a burst buffer or not); nothing is placed;
- ``SsdNodes``: each node's local SSD (a gres counting GB, or a node feature ``ssd128``):
  nodes counted per class, a started job pinned to free nodes of the classes counted for it
  (its constraint widened where those carry larger SSD);
- ``TopologyNodes``: the partition's ``topology.conf`` (``hpcopt.slurm.topology``): nodes told
  apart, a started job pinned to the nodes the decision chose.

``partition_nodes`` picks the kind.  Besides nodes a cycle may schedule a burst buffer
(``BurstBuffer``: a license or a pool of the ``burst_buffer`` plugin); ``Resources`` reads
what each job asks of it and of the SSD.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ..domain import System
from ..errors import HpcoptError
from .state import (
    Pool,
    SlurmJob,
    constraint_terms,
    feature_size,
    gres_count,
    job_bb_request,
    node_features,
    parse_licenses,
)
from .topology import SlurmTopology, TopologyConfError


class CountedNodes:
    """Interchangeable nodes: counted, never placed."""

    places = False  # started jobs are pinned to the nodes the decision names

    def __init__(self, names: list[str]) -> None:
        self.names = list(names)

    def system(self, bb: float, name: str) -> System:
        """The machine of the decision (``bb``: its burst buffer's total)."""
        return System(len(self.names), bb=bb, name=name)

    def count(self, names):
        """``names`` as the core counts nodes out of the machine or completing."""
        return len(names)

    def held(self, names):
        """The nodes ``names`` a job holds, as the core places it (None: counted only)."""
        return None

    def where(self, placement, free: list[str]) -> list[str]:
        """The node names for a decision's ``placement`` of a job, taken from ``free``."""
        return []

    def constraint(self, j: SlurmJob, names) -> str | None:
        """The constraint ``j`` is released with on ``names`` (None: its own)."""
        return None


class SsdNodes(CountedNodes):
    """Nodes in SSD classes: ``size`` is each node's SSD in GB and ``feature`` the SSD
    feature it carries (where node features are the SSD)."""

    places = True

    def __init__(self, names: list[str], size: dict, feature: dict | None = None) -> None:
        super().__init__(names)
        self.size, self.feature = size, feature or {}
        out: dict = defaultdict(int)
        for s in size.values():
            out[s] += 1
        self.classes = dict(sorted(out.items()))

    def system(self, bb: float, name: str) -> System:
        return System(len(self.names), bb=bb, ssd_classes=self.classes, name=name)

    def count(self, names) -> dict:
        """{SSD GB: nodes} of ``names``."""
        out = {s: 0 for s in self.classes}
        for n in names:
            out[self.size[n]] += 1
        return out

    def held(self, names) -> tuple[int, ...]:
        """Nodes per class of ``names``, in ascending SSD order (a ``MultiPool`` allocation)."""
        return tuple(self.count(names).values())

    def where(self, placement, free: list[str]) -> list[str]:
        """Nodes of ``free`` (in their order) that make ``placement``'s count per class."""
        out = []
        for s, k in zip(self.classes, placement):
            out += [n for n in free if self.size[n] == s][:k]
        return out

    def constraint(self, j: SlurmJob, names) -> str | None:
        """The SSD features ``j`` asked and those of ``names``, joined by ``|``, when its own
        would keep Slurm from running it there.  Slurm runs a job asking ``ssd128`` only on
        nodes that carry ``ssd128``; hpcopt places it on any node with at least 128 GB."""
        asked = (constraint_terms(j.features) or ("", []))[1]
        if not asked or all(self.feature.get(n) in asked for n in names):
            return None
        own = [f for _, f in sorted({(self.size[n], self.feature[n]) for n in names}) if f]
        return "|".join(dict.fromkeys([*asked, *own]))


class TopologyNodes(CountedNodes):
    """Nodes told apart on the partition's topology (their ids: ``topology``'s order)."""

    places = True

    def __init__(self, names: list[str], topology: SlurmTopology) -> None:
        super().__init__(names)
        self.topology = topology

    def system(self, bb: float, name: str) -> System:
        return System(len(self.names), topology=self.topology.tree, name=name)

    def count(self, names) -> tuple[int, ...]:
        return tuple(self.topology.ids(sorted(names)))

    def held(self, names) -> tuple[int, ...]:
        return tuple(self.topology.ids(names))

    def where(self, placement, free: list[str]) -> list[str]:
        return self.topology.nodes(placement)


@dataclass(frozen=True)
class BurstBuffer:
    """The burst buffer as one read of Slurm saw it: the license ``name`` (``kind``
    "license": a job's count of it is its request) or the ``burst_buffer`` plugin's pool
    ``name`` ("pool": a job's ``#BB_LUA pool=NAME capacity=N``), with its ``total`` and
    ``used`` units and the ids of the jobs that ``hold`` part of it (a pool's, from stage-in
    on: a released job holds it before it runs)."""

    kind: str
    name: str
    total: float
    used: float
    hold: frozenset = frozenset()

    @classmethod
    def read(cls, licenses: dict | None, license: str | None, pools: dict | None,
             pool: str | None) -> BurstBuffer | None:
        """The burst buffer of ``license`` in ``licenses`` ({name: (total, used)}) or of
        ``pool`` in ``pools`` ({name: ``Pool``}); None when neither is named."""
        if license is not None:
            if licenses is None or license not in licenses:
                raise HpcoptError(f"license {license!r} is not configured (scontrol show "
                                  f"licenses lists {sorted(licenses or {})})")
            total, used = licenses[license]
            return cls("license", license, float(total), float(used))
        if pool is not None:
            if pools is None or pool not in pools:
                raise HpcoptError(f"burst-buffer pool {pool!r} is not configured (scontrol "
                                  f"show burst lists {sorted(pools or {})})")
            p: Pool = pools[pool]
            return cls("pool", pool, p.total, p.used, frozenset(p.jobs))
        return None


@dataclass(frozen=True)
class Resources:
    """What a cycle schedules besides nodes: the burst buffer (or None) and each node's local
    SSD in GB, a gres counting them (``ssd_gres``) or node features ``PREFIX<GB>``
    (``ssd_feature`` the prefix; or None)."""

    bb: BurstBuffer | None = None
    ssd_gres: str | None = None
    ssd_feature: str | None = None

    @property
    def ssd(self) -> bool:
        return self.ssd_gres is not None or self.ssd_feature is not None

    def node_ssd(self, name: str, text: str) -> tuple[float, str]:
        """A node's SSD in GB and the SSD feature it carries ("" for a gres): its count of
        the gres, or the largest of its ``PREFIX<GB>`` features (0 without one), from
        ``text`` (``sinfo``'s gres or features of the node)."""
        if self.ssd_gres is not None:
            count = gres_count(text, self.ssd_gres)
            if count is None:
                raise HpcoptError(f"node {name}: gres {text!r} cannot be read (expected "
                                  f"{self.ssd_gres}:GB)")
            return float(count), ""
        prefix = self.ssd_feature or ""
        sizes = [(feature_size(f, prefix), f) for f in node_features(text)]
        return max(((s, f) for s, f in sizes if s is not None), default=(0.0, ""))

    def ask(self, j: SlurmJob) -> tuple[float, float, str | None]:
        """The burst buffer and the SSD per node ``j`` asks, and why it cannot be scheduled
        (None: it can): a license, pool, gres or feature hpcopt does not schedule, or a
        request that cannot be read.  A constraint is read as SSD features: one, or several
        joined by ``|`` (each node has one of them: the smallest is asked)."""
        asked = parse_licenses(j.licenses)
        if asked is None:
            return 0.0, 0.0, f"asks licenses {j.licenses!r}, which cannot be read"
        license = self.bb.name if self.bb is not None and self.bb.kind == "license" else None
        other = sorted(set(asked) - {license})
        if other:
            return 0.0, 0.0, _not_scheduled("licenses", other, license,
                                            "--bb-license names the burst buffer's")
        pools = job_bb_request(j.burst_buffer)
        if pools is None:
            return 0.0, 0.0, (f"asks a burst buffer that cannot be read "
                              f"({j.burst_buffer.strip()[:60]!r}: #BB_LUA pool=NAME "
                              "capacity=N expected)")
        pool = self.bb.name if self.bb is not None and self.bb.kind == "pool" else None
        other = sorted(set(pools) - {pool})
        if other:
            return 0.0, 0.0, _not_scheduled("burst-buffer pool", other, pool,
                                            "--bb-pool names the burst buffer's")
        ssd = 0.0
        if self.ssd_gres is not None:
            count = gres_count(j.gres, self.ssd_gres)
            if count is None:
                return 0.0, 0.0, f"asks gres {j.gres!r}, which cannot be read"
            ssd = float(count)
        terms = constraint_terms(j.features)
        op, words = terms if terms is not None else ("", [])
        sizes = [feature_size(w, self.ssd_feature) if self.ssd_feature else None
                 for w in words]
        other = [w for w, size in zip(words, sizes) if size is None]
        if other:
            return 0.0, 0.0, _not_scheduled("features", other, self.ssd_feature,
                                            "--ssd-feature names the SSD's")
        if terms is None or op == "&":
            return 0.0, 0.0, (f"asks features {j.features!r}, which cannot be read (one "
                              "SSD feature, or several joined by |, expected)")
        if sizes:
            ssd = min(s for s in sizes if s is not None)
        bb = asked.get(license, 0) if license is not None else pools.get(pool or "", 0.0)
        return float(bb), float(ssd), None


def _not_scheduled(what: str, names, scheduled: str | None, hint: str) -> str:
    """Why a job asking ``names`` of ``what`` stays held; ``hint`` names the option that
    would schedule one when none is (``scheduled`` None)."""
    return (f"asks {what} {','.join(names)}, which hpcopt does not schedule"
            + ("" if scheduled else f" ({hint})"))


def partition_nodes(partition: str, names: list[str], res: Resources,
                    topology: SlurmTopology | None = None,
                    node_text: dict | None = None) -> CountedNodes:
    """The kind of the partition's nodes ``names``: on ``topology`` (it must have the same
    nodes), in SSD classes where ``res`` schedules SSD (each node's from ``node_text``:
    {name: its gres or features as ``sinfo`` prints them}), else counted."""
    if topology is not None:
        if set(names) != set(topology.names):
            raise TopologyConfError(f"partition {partition!r} has nodes {sorted(names)[:6]}..., "
                                    f"the topology {list(topology.names)[:6]}...: they must "
                                    "be the same nodes")
        if res.bb is not None or res.ssd:
            raise HpcoptError("a machine with a topology has no burst buffer or SSD here: use "
                              "--topology, or --bb-license/--bb-pool/--ssd-gres/--ssd-feature")
        return TopologyNodes(names, topology)
    if not res.ssd:
        return CountedNodes(names)
    size, feature = {}, {}
    for n in names:
        size[n], feature[n] = res.node_ssd(n, (node_text or {}).get(n, ""))
    return SsdNodes(names, size, feature)
