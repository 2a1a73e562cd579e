"""Batsim workload JSON with burst-buffer profiles (Kopanski & Rzadca's KTH-SP2 workloads).

A Batsim workload is ``{"nb_res": N, "jobs": [...], "profiles": {...}}``; each job has
``id, subtime, walltime, res, profile`` and its profile ``cpu`` (flops) and ``bb`` (bytes
per node).  A job's burst buffer is its profile's ``bb`` x its nodes, in GB (1e9 bytes);
its run time is the profile's ``cpu`` flops at the platform's 1 GFLOPS (the compute part of
the original KTH run time: within 4% of it for the long jobs), capped at the walltime.  The
system has ``nb_res`` nodes and ``storage_nodes`` x ``bb_per_storage_node`` GB of burst
buffer (default 12 x 40 GB, ``platform_dragonfly96.yaml``: 480 GB, 5 GB per compute node).
Jobs asking for more burst buffer than the system has are clipped to it and counted in the
report's notes.  Every job must have 1 <= res <= nb_res, walltime > 0, cpu >= 0, bb >= 0;
anything else is a ``TraceError`` naming the job.  Ids follow the job-table rule (integers,
or text for every id when one is text, e.g. Batsim's ``"w0!1"``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..domain import Job, System
from ..errors import TraceError
from ._text import read_text
from .report import CleaningReport, Trace
from .tables import job_id, uniform_ids

BATSIM_KEYS = ("nb_res", "jobs", "profiles")


def is_batsim(doc: Any) -> bool:
    """Whether a decoded JSON document is a Batsim workload (has nb_res, jobs and profiles)."""
    return isinstance(doc, dict) and all(k in doc for k in BATSIM_KEYS)


def decode_json(text: str, src: str) -> Any:
    """``json.loads`` with a one-line ``TraceError`` naming file, line and column."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(f"{src}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from exc
    except RecursionError:
        raise TraceError(f"{src}: invalid JSON: nested too deeply to read") from None


def load_batsim(path, *, storage_nodes: int = 12, bb_per_storage_node: float = 40.0,
                max_jobs: int | None = None, rebase: bool = False) -> Trace:
    """A Batsim workload file (plain or gzip) as a ``Trace`` (see the module doc)."""
    p = Path(path)
    src = str(path)
    return read_batsim(decode_json(read_text(p, src), src), src, p,
                       storage_nodes=storage_nodes, bb_per_storage_node=bb_per_storage_node,
                       max_jobs=max_jobs, rebase=rebase)


def read_batsim(doc: Any, src: str, path: Path | None = None, *, storage_nodes: int = 12,
                bb_per_storage_node: float = 40.0, max_jobs: int | None = None,
                rebase: bool = False) -> Trace:
    """A decoded Batsim workload document as a ``Trace``; ``max_jobs`` keeps the first N jobs
    of the file, ``rebase`` shifts the first submit to 0."""
    if not is_batsim(doc):
        raise TraceError(f"{src}: expected a Batsim workload JSON object with keys "
                         f"{', '.join(BATSIM_KEYS)}")
    try:
        nodes, raw_jobs, profiles = int(doc["nb_res"]), list(doc["jobs"]), dict(doc["profiles"])
    except (ValueError, TypeError) as err:
        raise TraceError(f"{src}: expected nb_res an integer, jobs a list and profiles an "
                         f"object ({type(err).__name__}: {err})") from None
    if nodes < 1:
        raise TraceError(f"{src}: nb_res: expected a positive integer, got {doc['nb_res']!r}")
    if max_jobs is not None:
        raw_jobs = raw_jobs[:max_jobs]
    capacity = storage_nodes * bb_per_storage_node
    rows, ids, clipped, capped = [], [], 0, 0
    for k, rec in enumerate(raw_jobs):
        where = f"{src}: jobs[{k}]"
        try:
            prof = profiles[str(rec["profile"])]
            res, wall = int(rec["res"]), float(rec["walltime"])
            runtime, bb = float(prof["cpu"]) / 1e9, float(prof["bb"]) * res / 1e9
            submit = float(rec["subtime"])
            ids.append(job_id(rec["id"], where))
        except (KeyError, TypeError, ValueError) as err:
            raise TraceError(f"{where}: expected id, subtime, walltime, res and a profile with "
                             f"cpu and bb ({type(err).__name__}: {err})") from None
        if res < 1 or res > nodes or wall <= 0 or runtime < 0 or bb < 0:
            raise TraceError(f"{where}: expected 1 <= res <= {nodes}, walltime > 0, cpu >= 0, "
                             f"bb >= 0; got res={res}, walltime={wall}")
        if runtime > wall:
            runtime, capped = wall, capped + 1
        if bb > capacity:
            bb, clipped = capacity, clipped + 1
        rows.append((submit, runtime, wall, res, round(bb, 3)))
    jobs = sorted((Job(jid, *row[:4], bb=row[4]) for jid, row in zip(uniform_ids(ids), rows)),
                  key=lambda j: (j.submit, j.id))
    offset = jobs[0].submit if rebase and jobs else 0.0
    if offset:
        jobs = [Job(j.id, j.submit - offset, j.runtime, j.walltime, j.nodes, bb=j.bb)
                for j in jobs]
    report = CleaningReport(
        source=src, fmt="batsim", records_read=len(raw_jobs), kept=len(jobs),
        dropped={}, runtime_capped=capped, walltime_from_runtime=0, size_from_allocated=0,
        system_nodes=nodes, system_source="nb_res", max_jobs=max_jobs, rebase_offset=offset,
        cores_per_node_source="default: Batsim res are nodes",
        notes=(f"burst buffer = profile bb x res; {clipped} request(s) above the "
               f"{capacity:g} GB capacity clipped to it",
               "run time = profile cpu / 1 GFLOPS"))
    name = str(doc.get("name", path.name.split(".")[0] if path is not None else "batsim"))
    system = System(nodes, bb=capacity, name=name)
    return Trace(tuple(jobs), system, {"description": doc.get("description", "")}, report,
                 path)
