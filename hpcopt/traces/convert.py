"""A trace written again as SWF or as a CSV job table (``hpcopt trace convert``).

``convert(trace, out, to)`` writes the cleaned jobs of a ``Trace`` (from ``load_trace``):

- ``to="swf"``: SWF v2.2 (``write_swf``: one processor per unit of size, so reading it
  back gives the same sizes).  SWF job ids are integers: when any id is text (Slurm array
  tasks ``123_4``, hetjob components ``123+0``), every job is numbered 1, 2, ... in the
  trace's order (submit, id) and the map is written beside it, ``OUT.ids.csv`` (columns
  ``swf_id,id``).  The header says where the jobs came from and the machine: ``MaxNodes``
  = ``MaxProcs`` = its size, or for a trace in cores (``sizes="cores"``) ``MaxProcs`` alone,
  so that the cores are not turned back into nodes.  Submit times stay as they are
  (epoch seconds for Slurm's formats).
- ``to="csv"``: the CSV job table ``load_trace`` reads (``id,submit,runtime,nodes,walltime,
  user,queue``), ids as they are (text ids stay text).
"""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

from ..errors import TraceError
from .report import Trace
from .swf import write_swf

TARGETS = ("swf", "csv")
_CARRIED = ("partitions", "users", "Sizes")


def convert(trace: Trace, out: str | Path, to: str) -> list[Path]:
    """Write ``trace`` to ``out`` as ``to`` (``"swf"`` or ``"csv"``); returns the paths
    written (the trace, then the id map when there is one)."""
    if to not in TARGETS:
        raise TraceError(f"to must be 'swf' or 'csv', got {to!r}")
    out = Path(out)
    if to == "csv":
        return [_write_csv(trace, out)]
    jobs = list(trace.jobs)
    written = []
    id_map = None
    if any(not _int_id(j.id) for j in jobs):
        id_map = out.with_name(out.name + ".ids.csv")
        with open(id_map, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["swf_id", "id"])
            for n, j in enumerate(jobs, start=1):
                w.writerow([n, j.id])
        jobs = [dataclasses.replace(j, id=n) for n, j in enumerate(jobs, start=1)]
    cores = trace.header.get("Sizes") == "cores"
    size = trace.system.nodes
    header: list[tuple[str, object]] = [
        ("Version", "2.2"),
        ("Note", f"converted by hpcopt from {trace.report.source} ({trace.report.fmt})"
                 + (f"; job ids renumbered, map in {id_map.name}" if id_map else "")),
        ("MaxJobs", len(jobs)),
    ]
    if cores:
        header += [("MaxProcs", size), ("Note", "sizes are cores (one processor each)")]
    else:
        header += [("MaxNodes", size), ("MaxProcs", size)]
    header += [(k, trace.header[k]) for k in _CARRIED if trace.header.get(k)]
    written.append(write_swf(jobs, out, header))
    if id_map:
        written.append(id_map)
    return written


def _int_id(jid) -> bool:
    return isinstance(jid, int) or (isinstance(jid, str) and jid.strip().isdigit())


def _write_csv(trace: Trace, out: Path) -> Path:
    with open(out, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "submit", "runtime", "nodes", "walltime", "user", "queue"])
        for j in trace.jobs:
            w.writerow([j.id, _num(j.submit), _num(j.runtime), j.nodes, _num(j.walltime),
                        j.user, j.queue])
    return out


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))
