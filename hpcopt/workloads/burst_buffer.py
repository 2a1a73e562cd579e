"""Burst-buffer and local-SSD workloads for BBSched (Fan et al., HPDC'19, sections 4.1, 5).

Readers:

- ``load_batsim(path)``: the Kopanski & Rzadca Batsim workloads (KTH-SP2 jobs with modelled
  burst-buffer requests, the data directory's ``burst_buffer/kopanski_kth_batsim``, the default
  path); the reader and its rules are in ``hpcopt.traces.batsim``.
- ``load_bb_swf(path)``: SWF whose records carry a 19th field (burst buffer, GB for the whole
  job) and optionally a 20th (SSD, GB per node); ``write_bb_swf`` writes them.

Generators (``make_workload(jobs, name, system=, seed=)``), seeded, following the paper's
recipe on any trace:

- ``original``: the jobs as they are;
- ``S1``/``S2``: 50% / 75% of the jobs (a seeded random subset) request burst buffer, sizes
  drawn from the pool of requests above 5 TB; ``S3``/``S4``: the same above 20 TB.  The
  paper's pool is Cori's and Theta's real requests, which are not public; ours is the real
  per-job requests of the Kopanski KTH workload, as shares of their system's 480 GB, mapped
  onto the target system's capacity.  The thresholds keep the paper's proportion to the
  machine: 5 TB and 20 TB of Theta's 2.16 PB (0.23% and 0.93% of the capacity); requests
  above the capacity are left out of the pool;
- ``S5``/``S6``/``S7``: S2 plus local-SSD requests per node, 80/20, 50/50, 20/80 of the jobs
  in 0-128 GB / 129-256 GB (uniform integers), for a system of half 128 GB and half 256 GB
  nodes (``bb_system(nodes, ssd=True)``); a job with more nodes than the 256 GB half gets a
  0-128 GB request instead (it could never run otherwise).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from ..datadir import data_path
from ..domain import Job, System
from ..errors import TraceError, closest
from ..traces import load_trace
from ..traces._text import read_text
from ..traces.batsim import load_batsim as _load

KOPANSKI = "burst_buffer/kopanski_kth_batsim/KTH-SP2-1996-2.1-cln-io-aware-1000.json.gz"
KOPANSKI_BB_GB = 480.0  # 12 storage nodes x 40 GB (platform_dragonfly96.yaml)
BB_PER_NODE_GB = 5.0  # the same ratio per compute node (480 GB / 96 nodes)
THETA_BB_GB = 2.16e6
THRESHOLDS = {"S1": 5e3, "S2": 5e3, "S3": 20e3, "S4": 20e3}  # GB on Theta's 2.16 PB
SHARES = {"S1": 0.5, "S2": 0.75, "S3": 0.5, "S4": 0.75}
SSD_SPLITS = {"S5": 0.8, "S6": 0.5, "S7": 0.2}  # share of jobs asking 0-128 GB per node
NAMES = ("original", "S1", "S2", "S3", "S4", "S5", "S6", "S7")


def default_batsim_path() -> Path:
    """The Kopanski KTH workload in the data directory (``load_batsim``'s default)."""
    return data_path(KOPANSKI, "the burst-buffer pool of S1-S7")


def load_batsim(path=None, **kwargs):
    """A Batsim workload with burst-buffer profiles as a ``Trace``; ``path`` defaults to the
    Kopanski KTH workload in the data directory (``hpcopt.datadir``).  The reader is
    ``hpcopt.traces.batsim.load_batsim`` (``kwargs`` go to it), which ``hpcopt.load_trace``
    and ``hpcopt simulate FILE.json`` use too."""

    return _load(default_batsim_path() if path is None else path, **kwargs)


def kopanski_pool(path=None) -> np.ndarray:
    """Per-job burst-buffer requests of the Kopanski KTH workload as shares of its system's
    capacity (the S1-S4 pool)."""
    trace = load_batsim(path)
    return np.array([j.bb for j in trace.jobs if j.bb > 0]) / trace.system.bb


def bb_system(nodes: int, *, bb: float | None = None, ssd: bool = False) -> System:
    """A BBSched test machine: ``bb`` GB of burst buffer (default 5 GB per node, the Kopanski
    ratio) and, with ``ssd``, half 128 GB and half 256 GB SSD nodes."""
    classes = {128: nodes // 2, 256: nodes - nodes // 2} if ssd else {}
    return System(nodes, bb=BB_PER_NODE_GB * nodes if bb is None else bb, ssd_classes=classes)


def make_workload(jobs, name: str, *, system: System, seed: int | None = 0,
                  pool: np.ndarray | None = None) -> list[Job]:
    """The paper's workload ``name`` (original, S1..S7) applied to ``jobs`` on ``system``."""
    if name not in NAMES:
        raise TraceError(f"unknown workload {name!r}; expected one of {list(NAMES)}."
                         + closest(name, NAMES))
    jobs = list(jobs)
    if name == "original":
        return jobs
    rng = np.random.default_rng(seed)
    if name in SSD_SPLITS:
        jobs = make_workload(jobs, "S2", system=system, seed=seed, pool=pool)
        big = int(system.ssd_classes.get(256, 0))
        if not big:
            raise TraceError(f"workload {name}: the system needs 256 GB SSD nodes "
                             "(use bb_system(nodes, ssd=True))")
        small = rng.random(len(jobs)) < SSD_SPLITS[name]
        low, high = rng.integers(0, 129, len(jobs)), rng.integers(129, 257, len(jobs))
        return [replace(j, ssd=float(low[k] if small[k] or j.nodes > big else high[k]))
                for k, j in enumerate(jobs)]
    if system.bb <= 0:
        raise TraceError(f"workload {name}: the system has no burst buffer")
    shares = kopanski_pool() if pool is None else np.asarray(pool, dtype=float)
    sizes = shares * system.bb
    sizes = sizes[(sizes > THRESHOLDS[name] / THETA_BB_GB * system.bb) & (sizes <= system.bb)]
    if not sizes.size:
        raise TraceError(f"workload {name}: no pool request between the threshold and the "
                         f"system's {system.bb:g} GB")
    chosen = rng.permutation(len(jobs))[: int(round(SHARES[name] * len(jobs)))]
    draw = np.ceil(rng.choice(sizes, len(chosen)))
    out = list(jobs)
    for k, size in zip(chosen, draw):
        out[k] = replace(out[k], bb=float(min(size, system.bb)))
    return out


def load_bb_swf(path, **kwargs):
    """An SWF trace whose records have a 19th field (burst buffer GB) and optionally a 20th
    (SSD GB per node); ``kwargs`` go to ``load_trace``."""

    path = Path(path)
    trace = load_trace(path, extra_fields="ignore", **kwargs)
    extra = {}
    for lineno, line in enumerate(read_text(path, str(path)).splitlines(), 1):
        fields = line.split()
        if not fields or line.lstrip().startswith(";"):
            continue
        if len(fields) not in (19, 20):
            raise TraceError(f"{path.name}:{lineno}: expected 19 or 20 fields (18 SWF fields, "
                             f"burst buffer GB[, SSD GB per node]), got {len(fields)}")
        values = []
        for k, text in enumerate(fields[18:], 19):
            try:
                v = float(text)
            except ValueError:
                v = -1.0
            if not (np.isfinite(v) and v >= 0):
                what = "burst buffer GB" if k == 19 else "SSD GB per node"
                raise TraceError(f"{path.name}:{lineno}: field {k} ({what}): expected a "
                                 f"number >= 0, got {text!r}")
            values.append(v)
        extra[int(float(fields[0]))] = (values[0], values[1] if len(values) > 1 else 0.0)
    jobs = tuple(replace(j, bb=extra[j.id][0], ssd=extra[j.id][1]) for j in trace.jobs)
    return replace(trace, jobs=jobs)


def write_bb_swf(jobs, path) -> Path:
    """Write jobs as SWF records with burst buffer (field 19) and SSD (field 20)."""
    path = Path(path)
    lines = ["; SWF with burst buffer (field 19, GB) and SSD per node (field 20, GB)"]
    for j in jobs:
        lines.append(f"{j.id} {j.submit:g} -1 {j.runtime:g} {j.nodes} -1 -1 {j.nodes} "
                     f"{j.walltime:g} -1 1 {j.user} -1 -1 {j.queue} -1 -1 -1 {j.bb:g} {j.ssd:g}")
    path.write_text("\n".join(lines) + "\n")
    return path

