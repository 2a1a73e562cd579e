"""Cleaning: from raw record columns to ``Job`` objects, the machine, and the report.

Rules (applied to every record of every format; the counts are in ``CleaningReport``):

* size (processors) = requested processors (SWF field 8) if > 0, else allocated ones (field
  5); nodes = ceil(size / cores_per_node) (tables give nodes: cores_per_node is 1);
* walltime = requested time (field 9) if > 0, else the run time;
* run time > walltime: the run time is capped at the walltime (the job was killed there);
* dropped, counted by the *first* reason that applies, in this order:
  ``runtime_unknown`` (run time < 0), ``submit_unknown`` (submit time < 0),
  ``size_unknown`` (nodes < 1), ``too_large`` (nodes > system nodes), ``duplicate_id``
  (a job id already kept earlier in the file; the first one wins);
* the counts ``runtime_capped``, ``walltime_from_runtime`` and ``size_from_allocated`` are
  over the *kept* jobs.

Cores per node (SWF; ``machine_of``):

1. ``cores_per_node=`` when given (``--cores-per-node``);
2. else from the header: when both ``MaxNodes`` and ``MaxProcs`` are known, ``MaxProcs >
   MaxNodes`` and ``MaxProcs`` is a multiple of ``MaxNodes``, cores per node = ``MaxProcs /
   MaxNodes`` (LLNL-Atlas: 9216 / 1152 = 8, so the machine has 1,152 nodes and a job asking
   for 64 processors takes 8 nodes);
3. else 1, and processors are the unit: ``MaxNodes == MaxProcs`` (KTH-SP2, NASA-iPSC, HPC2N,
   Theta), only one of them (the Lublin model: ``MaxNodes``), none (MetaCentrum), or a
   ``MaxProcs`` that is not a multiple of ``MaxNodes`` (a machine without one node size:
   the report gets a note, pass ``cores_per_node`` to convert).

System size (``System.nodes``), in the same unit as the job sizes:

1. ``nodes=`` when given;
2. else the header's ``MaxProcs`` // ``cores_per_node`` (equal to ``MaxNodes`` when cores per
   node came from the header; with a given ``cores_per_node`` the units of jobs and machine
   always match, and a ``MaxNodes`` that disagrees gets a note);
3. else the header's ``MaxNodes`` (taken as a node count as it stands);
4. else the largest size among the jobs that are not dropped for another reason;
5. else (no size information at all) a ``TraceError``.

Header values ``<= 0`` count as unknown.  Jobs are sorted by (submit, id); ``rebase=True``
shifts the first kept submit to 0 (the offset is reported).
"""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..domain import Job, System
from ..errors import TraceError
from ._text import whole
from .report import FROM_HEADER, CleaningReport, Trace
from .swf import SwfHeader


def machine_of(
    header: SwfHeader, fmt: str, cores_per_node: int | None
) -> tuple[int, str, list[str]]:
    """``(cores_per_node, where it came from, notes)`` for a trace (rules in the module doc)."""
    if cores_per_node is not None:
        cpn = whole("cores_per_node", cores_per_node, 1)
        if fmt != "swf" and cpn != 1:
            raise TraceError(
                f"{header.source}: cores_per_node={cpn} applies to SWF processor counts only; "
                f"{fmt.upper()} tables give nodes directly"
            )
        return cpn, "cores_per_node=", []
    if fmt != "swf":
        return 1, f"default: {fmt} sizes are nodes", []
    procs, nodes = header.max_procs, header.max_nodes
    if procs is None and nodes is None:
        return 1, "default: no MaxNodes/MaxProcs in the header", []
    if procs is None or nodes is None:
        only = "MaxNodes" if procs is None else "MaxProcs"
        return 1, f"default: the header has only {only}", []
    if procs == nodes:
        return 1, "default: header MaxNodes = MaxProcs", []
    if procs > nodes and procs % nodes == 0:
        return procs // nodes, FROM_HEADER, []
    why = f"header MaxProcs {procs} is not a multiple of MaxNodes {nodes}"
    return 1, f"default: {why}", [
        f"{why}: no cores per node derived, processors are the unit and the system has "
        f"MaxProcs = {procs} of them; pass cores_per_node to convert processors to nodes"
    ]


def _system_size(
    header: SwfHeader, nodes: int | None, cpn: int, cpn_source: str, largest: int, src: str
) -> tuple[int, str, list[str]]:
    notes: list[str] = []
    if nodes is not None:
        return nodes, "nodes=", notes
    max_procs, max_nodes = header.max_procs, header.max_nodes
    if max_procs is not None:
        size = max_procs // cpn
        if size < 1:
            raise TraceError(
                f"{src}: header MaxProcs {max_procs} is less than cores_per_node {cpn}"
            )
        if max_nodes is not None and max_nodes != size and cpn != 1:
            notes.append(
                f"header MaxNodes {max_nodes} differs from MaxProcs {max_procs} // "
                f"cores_per_node {cpn} = {size}; using {size}"
            )
        if cpn_source == FROM_HEADER:  # MaxProcs // cpn == MaxNodes by construction
            return size, "header MaxNodes", notes
        src_text = "header MaxProcs" + (f" // {cpn}" if cpn != 1 else "")
        return size, src_text, notes
    if max_nodes is not None:
        return max_nodes, "header MaxNodes", notes
    if largest >= 1:
        return largest, "largest job", notes
    raise TraceError(
        f"{src}: no system size: the header has no MaxNodes/MaxProcs and no job has a known "
        "size; pass nodes="
    )


def clean(
    cols: Mapping[str, np.ndarray],
    *,
    src: str,
    path: Path,
    fmt: str,
    header: SwfHeader,
    nodes: int | None,
    cores_per_node: int,
    cores_per_node_source: str,
    max_jobs: int | None,
    rebase: bool,
    extra: int,
    ignored: tuple[str, ...],
    notes: Sequence[str] = (),
) -> Trace:
    """Apply the cleaning rules (module doc) to record columns; build the ``Trace``.

    ``cols`` holds equal-length arrays ``id`` (float, or text for text ids), ``submit``,
    ``runtime``, ``req_size``, ``alloc_size`` (-1 where the format has none), ``req_time``,
    ``user``, ``queue`` and optionally ``bb``, ``ssd``, ``priority``, ``group`` and
    ``partition`` (SWF numbers; these two, and the partition names of a Slurm trace, become
    the trace's ``attributes``).
    """
    ids = cols["id"]
    n = len(ids)
    submit = cols["submit"]
    runtime = cols["runtime"]
    req_size, alloc_size, req_time = cols["req_size"], cols["alloc_size"], cols["req_time"]

    from_alloc = req_size <= 0
    procs = np.where(from_alloc, alloc_size, req_size)
    size = np.where(procs > 0, np.ceil(procs / cores_per_node), 0.0)
    wall_fill = req_time <= 0
    walltime = np.where(wall_fill, runtime, req_time)
    capped = runtime > walltime

    ok, dropped, (sys_nodes, sys_source, size_notes) = _kept(
        ids, submit, runtime, size, lambda largest: _system_size(
            header, nodes, cores_per_node, cores_per_node_source, largest, src))
    keep = np.flatnonzero(ok)
    order = keep[np.lexsort((ids[keep], submit[keep]))]
    offset = float(submit[order[0]]) if rebase and order.size else 0.0
    jobs = _jobs(cols, order, submit - offset, np.minimum(runtime, walltime), walltime, size)
    report = CleaningReport(
        source=src,
        fmt=fmt,
        records_read=n,
        kept=len(jobs),
        dropped=dropped,
        runtime_capped=int(capped[keep].sum()),
        walltime_from_runtime=int(wall_fill[keep].sum()),
        size_from_allocated=int(from_alloc[keep].sum()) if fmt == "swf" else 0,
        system_nodes=sys_nodes,
        system_source=sys_source,
        cores_per_node=cores_per_node,
        cores_per_node_source=cores_per_node_source,
        max_jobs=max_jobs,
        extra_fields_ignored=extra,
        rebase_offset=offset,
        ignored_columns=ignored,
        notes=(*notes, *size_notes),
    )
    name = path.name
    for suffix in (".gz", ".swf", ".csv", ".json"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return Trace(jobs=jobs, system=System(nodes=sys_nodes, name=name), header=header,
                 report=report, path=path,
                 attributes=_attributes(cols, order, header, fmt))


def _kept(ids, submit, runtime, size, system_size):
    """The records kept (a mask) and the counts dropped by each rule: runtime, submit time or
    size unknown, larger than the machine, a repeated id; with the machine's size
    (``system_size(largest kept size)``: ``(nodes, source, notes)``)."""
    bad_run = runtime < 0
    bad_submit = ~bad_run & (submit < 0)
    bad_size = ~bad_run & ~bad_submit & (size < 1)
    ok = ~(bad_run | bad_submit | bad_size)
    system = system_size(int(size[ok].max()) if ok.any() else 0)
    too_large = ok & (size > system[0])
    ok &= ~too_large
    duplicate = np.zeros(len(ids), dtype=bool)
    cand = np.flatnonzero(ok)
    if cand.size:
        _, first = np.unique(ids[cand], return_index=True)
        if first.size != cand.size:
            duplicate[cand] = True
            duplicate[cand[first]] = False
            ok &= ~duplicate
    dropped = {
        "runtime_unknown": int(bad_run.sum()),
        "submit_unknown": int(bad_submit.sum()),
        "size_unknown": int(bad_size.sum()),
        "too_large": int(too_large.sum()),
        "duplicate_id": int(duplicate.sum()),
    }
    return ok, dropped, system


def _jobs(cols, order, submit, runtime, walltime, size) -> tuple[Job, ...]:
    """One ``Job`` per record of ``order``, in that order (``runtime`` already capped by the
    walltime, ``submit`` already rebased)."""
    zeros = np.zeros(order.size)
    bb = cols["bb"][order] if "bb" in cols else zeros
    ssd = cols["ssd"][order] if "ssd" in cols else zeros
    prio = cols["priority"][order].astype(np.int64) if "priority" in cols else zeros.astype(
        np.int64
    )
    kept_ids = cols["id"][order]
    # no reference cycles among the jobs, so the cyclic collector is paused while they are
    # made (its passes over the growing tuple cost ~15% of the loading)
    enabled = gc.isenabled()
    gc.disable()
    try:
        return tuple(
            map(
                Job,
                (kept_ids.astype(np.int64) if kept_ids.dtype.kind == "f" else kept_ids).tolist(),
                submit[order].tolist(),
                runtime[order].tolist(),
                walltime[order].tolist(),
                size[order].astype(np.int64).tolist(),
                bb.tolist(),
                ssd.tolist(),
                prio.tolist(),
                cols["user"][order].astype(np.int64).tolist(),
                cols["queue"][order].astype(np.int64).tolist(),
            )
        )
    finally:
        if enabled:
            gc.enable()


def _attributes(cols, order, header, fmt: str) -> dict:
    """The per-job columns ``Job`` has no field for, in job order: the SWF group and partition
    numbers, or the partition and account names of a Slurm trace (from its header's code
    tables; an account only where the trace names one)."""
    out = {name: cols[name][order].astype(np.int64).tolist()
           for name in ("group", "partition") if name in cols}
    if fmt in ("sacct", "jobcomp"):
        for name, table, column in (("partition", "partitions", "queue"),
                                    ("account", "accounts", "account")):
            if header.get(table):
                names = {int(code): text for text, _, code in
                         (pair.rpartition("=") for pair in str(header[table]).split(","))}
                out[name] = [names.get(int(q), "") for q in cols[column][order].tolist()]
    return out

