"""Topology-aware job allocation (TJAP) workloads and windows (Lan et al., CLUSTER'23).

- ``load_jobs``: the job files of ``../shared/data/topology_alloc`` (whitespace text, one job
  a line: id, arrival s, runtime s, nodes; ``.gz`` allowed).  The files carry no requested
  walltime, so the walltime is the runtime (the window-period policy never plans with it).
- ``generate_jobs``: the paper's generator, seeded: inter-arrival U[5, 30] s (the authors'
  ``generate.py``, per the data's PROVENANCE), nodes U[1, 40], runtime U[10, 1800] s, all
  uniform integers.
- ``tjap_system``: a ``System`` with a fat-tree (default the paper's 1,000 nodes).
- ``generate_windows``: the allocation windows the window-period driver meets on a generated
  workload -- the instances of the paper's Tables III and IV.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from .domain import Job, System
from .errors import SimulationError, TraceError
from .topology import FatTree


def load_jobs(path: str | Path, *, max_jobs: int | None = None) -> list[Job]:
    """Jobs of a TJAP job file; a malformed line is a ``TraceError`` naming file and line."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    jobs = []
    try:
        with opener(path, "rt") as fh:
            for lineno, line in enumerate(fh, 1):
                text = line.strip()
                if not text or text.startswith(("#", ";")):
                    continue
                parts = text.split()
                try:
                    if len(parts) != 4:
                        raise ValueError(f"4 fields (id arrival runtime nodes), got {len(parts)}")
                    jid, arrival, runtime, nodes = (float(p) for p in parts)
                    if not (jid == int(jid) and nodes == int(nodes) and nodes >= 1
                            and runtime >= 0 and arrival >= 0):
                        raise ValueError("integer id, arrival >= 0, runtime >= 0, nodes >= 1")
                except ValueError as err:
                    raise TraceError(f"{path}:{lineno}: expected {err}; got {text[:60]!r}") \
                        from None
                jobs.append(Job(int(jid), arrival, runtime, runtime, int(nodes)))
                if max_jobs is not None and len(jobs) >= max_jobs:
                    break
    except OSError as err:
        raise TraceError(f"{path}: cannot read ({err.strerror or err})") from None
    if len({j.id for j in jobs}) != len(jobs):
        raise TraceError(f"{path}: job ids must be unique")
    return jobs


def generate_jobs(n_jobs: int, *, seed: int = 0, nodes=(1, 40), runtime=(10, 1800),
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


def generate_windows(n_windows: int, *, seed: int = 0, topology="paper-1000",
                     tau: float = 60.0, model: str = "dcas", backend: str = "scas-exact",
                     jobs: list[Job] | None = None, min_jobs: int = 1) -> list:
    """The first ``n_windows`` windows (with at least ``min_jobs`` selected jobs) that the
    window-period driver solves on a fresh, idle machine -- one "epoch" of the paper.

    The driver places each window with ``backend`` (the SCAS optimum by default, so every
    epoch evolves the same way whichever method is later compared on its windows).  Returns
    allocation models of kind ``model`` (``"dcas"`` or ``"scas"``) on the same data.
    """
    from .models import model_class
    from .policies.topology import WindowAllocation
    from .sim.driver import Simulator

    system = tjap_system(topology)
    if jobs is None:  # about 3.4 arrivals per minute: generate well past n_windows periods
        jobs = generate_jobs(max(50, int(n_windows * tau / 17.5 * 2) + 50), seed=seed)
    seen: list = []
    policy = WindowAllocation(tau=tau, model="scas", backend=backend, seed=seed, record=seen)
    Simulator(jobs, system, policy).run()
    cls = model_class(model)
    out = [m if type(m) is cls else cls(m.topology, m.idle_nodes, m.sizes, ids=m.ids)
           for m in seen if m.n_jobs >= min_jobs]
    if len(out) < n_windows:
        raise SimulationError(f"the workload gave only {len(out)} windows with >= {min_jobs} "
                              "jobs; pass more jobs")
    return out[:n_windows]
