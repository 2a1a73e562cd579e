"""Topology-aware job allocation (TJAP) workloads (Lan et al., CLUSTER'23).

- ``generate_tjap_jobs``: the paper's generator, seeded: inter-arrival U[5, 30] s (the
  authors' ``generate.py``, per the data's PROVENANCE), nodes U[1, 40], runtime U[10, 1800] s,
  all uniform integers.
- ``tjap_system``: a ``System`` whose nodes are the leaves of a fat-tree (default the paper's
  1,000 nodes).

The job files of the data directory's ``topology_alloc`` are read by
``hpcopt.traces.tjap.load_tjap_jobs``; the allocation windows that the window-period driver
meets on such a workload (the instances of the paper's Tables III and IV) come from
``hpcopt.policies.tjap.generate_windows``.
"""

from __future__ import annotations

import numpy as np

from ..domain import Job, System
from ..topology import FatTree


def generate_tjap_jobs(n_jobs: int, *, seed: int = 0, nodes=(1, 40), runtime=(10, 1800),
                       interarrival=(5, 30), first_id: int = 1) -> list[Job]:
    """``n_jobs`` jobs drawn as in the paper (bounds inclusive, uniform integers), seeded."""
    rng = np.random.default_rng(seed)
    gaps = rng.integers(interarrival[0], interarrival[1] + 1, n_jobs)
    arrival = np.cumsum(gaps)
    run = rng.integers(runtime[0], runtime[1] + 1, n_jobs)
    size = rng.integers(nodes[0], nodes[1] + 1, n_jobs)
    return [Job(first_id + i, float(a), float(r), float(r), int(s))
            for i, (a, r, s) in enumerate(zip(arrival, run, size))]


def tjap_system(topology="paper-1000") -> System:
    """A system whose nodes are the leaves of ``topology`` (a FatTree, preset name or dict)."""
    if isinstance(topology, str):
        topology = FatTree.preset(topology)
    elif isinstance(topology, dict):
        topology = FatTree.from_dict(topology)
    return System(topology.n_nodes, topology=topology, name=topology.name)
