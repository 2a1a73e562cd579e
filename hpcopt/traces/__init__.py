"""Workload trace readers with explicit, reported cleaning.

``load_trace(path)`` reads a Standard Workload Format file (SWF v2.2, plain or gzip), a
CSV/JSON job table or a Batsim workload JSON and returns a ``Trace``: the cleaned ``Job``
tuple, the ``System`` it runs on, the file's header and a ``CleaningReport`` that counts
every change made to the raw records, says which cores per node turned processors into
nodes and where that came from.  Nothing is dropped or altered silently.

One module per format, one for the shared rules:

- ``hpcopt.traces.swf``: SWF header and records, ``write_swf``;
- ``hpcopt.traces.tables``: CSV and JSON job tables (text ids such as ``123_4``, ISO 8601
  submit times);
- ``hpcopt.traces.batsim``: Batsim workload JSON with burst-buffer profiles (Kopanski);
- ``hpcopt.traces.slurm``: Slurm's ``sacct --parsable2`` output and ``jobcomp/filetxt`` logs
  (recognized by their first line);
- ``hpcopt.traces.tjap``: the TJAP job files (id arrival runtime nodes; not via
  ``load_trace``: ``hpcopt simulate --topology`` reads them);
- ``hpcopt.traces.azure``: the Azure v1 derived VM files (not via ``load_trace``: the
  deferrable OSDEC generator ``hpcopt.workloads.osdec`` reads them);
- ``hpcopt.traces.cleaning``: cleaning rules, cores per node from the SWF header
  (``MaxProcs / MaxNodes``), system size;
- ``hpcopt.traces.report``: ``Trace`` and ``CleaningReport``;
- ``hpcopt.traces.load``: ``load_trace`` itself: options, format choice, dispatch, cleaning.

Other choices: submit times are kept as they are in the file (``rebase=False``); jobs are
sorted by (submit, id); ``max_jobs=N`` keeps the first N records of the file (in file order,
before any cleaning; header comments after the N-th record are not read).
"""

from __future__ import annotations

from .batsim import load_batsim
from .load import FORMATS, load_trace
from .report import DROP_REASONS, CleaningReport, Trace
from .swf import SWF_FIELDS, SwfHeader, write_swf

__all__ = [
    "DROP_REASONS",
    "FORMATS",
    "SWF_FIELDS",
    "CleaningReport",
    "SwfHeader",
    "Trace",
    "load_batsim",
    "load_trace",
    "write_swf",
]
