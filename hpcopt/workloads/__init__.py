"""Seeded workload generators of the source papers, one module per source.

- ``hpcopt.workloads.burst_buffer``: BBSched's burst-buffer and local-SSD workloads (S1-S7)
  on any trace, the Kopanski Batsim workload and SWF with burst-buffer columns;
- ``hpcopt.workloads.tjap``: the topology paper's job generator and fat-tree systems;
- ``hpcopt.workloads.osdec``: OSDEC's deferrable cloud jobs from the Azure v1 files
  (read by ``hpcopt.traces.azure``), the benchmark family and the instance files.

The public names of the three modules are importable from here too.
The real data sets behind the defaults are found through ``hpcopt.datadir``.
"""

from .burst_buffer import (
    BB_PER_NODE_GB,
    KOPANSKI,
    NAMES,
    SSD_SPLITS,
    bb_system,
    kopanski_pool,
    load_batsim,
    load_bb_swf,
    make_workload,
    write_bb_swf,
)
from .osdec import (
    AZURE,
    CORE_CASES,
    DEFERRABLE_FAMILY,
    DURATION_CASES,
    deferrable_model,
    deferrable_suite,
    deferrable_workload,
    save_workload,
)
from .tjap import generate_tjap_jobs, tjap_system

__all__ = [
    "AZURE", "BB_PER_NODE_GB", "CORE_CASES", "DEFERRABLE_FAMILY", "DURATION_CASES", "KOPANSKI",
    "NAMES", "SSD_SPLITS", "bb_system", "deferrable_model", "deferrable_suite",
    "deferrable_workload", "generate_tjap_jobs", "kopanski_pool", "load_batsim", "load_bb_swf",
    "make_workload", "save_workload", "tjap_system", "write_bb_swf",
]
