"""The result types of every trace reader: ``Trace`` and its ``CleaningReport``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..domain import Job, System

#: Why a record can be dropped, in the order the rules are tried (the first one counts).
DROP_REASONS: tuple[str, ...] = (
    "runtime_unknown",
    "submit_unknown",
    "size_unknown",
    "too_large",
    "duplicate_id",
)
DROP_TEXT = {
    "runtime_unknown": "run time unknown (< 0)",
    "submit_unknown": "submit time unknown (< 0)",
    "size_unknown": "size unknown (< 1)",
    "too_large": "larger than the machine",
    "duplicate_id": "duplicate id",
}
#: Where ``cores_per_node`` came from when the SWF header gave it (see ``machine_text``).
FROM_HEADER = "header MaxProcs/MaxNodes"


@dataclass(frozen=True)
class CleaningReport:
    """What cleaning did to the raw records of one trace (see ``hpcopt.traces`` for the rules).

    ``cores_per_node`` is the factor that turned processor counts into nodes and
    ``cores_per_node_source`` says where it came from: ``"cores_per_node="`` (given),
    ``"header MaxProcs/MaxNodes"`` (derived from the SWF header) or ``"default (...)"`` with
    the reason it stayed 1 (``"default: header MaxNodes = MaxProcs"``).
    """

    source: str
    fmt: str
    records_read: int
    kept: int
    dropped: Mapping[str, int]
    runtime_capped: int
    walltime_from_runtime: int
    size_from_allocated: int
    system_nodes: int
    system_source: str
    cores_per_node: int = 1
    max_jobs: int | None = None
    extra_fields_ignored: int = 0
    rebase_offset: float = 0.0
    ignored_columns: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    cores_per_node_source: str = "default: 1"

    @property
    def dropped_total(self) -> int:
        return sum(self.dropped.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "fmt": self.fmt,
            "records_read": self.records_read,
            "kept": self.kept,
            "dropped": dict(self.dropped),
            "dropped_total": self.dropped_total,
            "runtime_capped": self.runtime_capped,
            "walltime_from_runtime": self.walltime_from_runtime,
            "size_from_allocated": self.size_from_allocated,
            "system_nodes": self.system_nodes,
            "system_source": self.system_source,
            "cores_per_node": self.cores_per_node,
            "cores_per_node_source": self.cores_per_node_source,
            "max_jobs": self.max_jobs,
            "extra_fields_ignored": self.extra_fields_ignored,
            "rebase_offset": self.rebase_offset,
            "ignored_columns": list(self.ignored_columns),
            "notes": list(self.notes),
        }

    def machine_text(self) -> str:
        """The machine the trace was read for, e.g. ``1,152 nodes x 8 cores (from the SWF
        header MaxNodes/MaxProcs)``."""
        cores = f"{self.cores_per_node} core{'s' if self.cores_per_node != 1 else ''}"
        if self.cores_per_node_source == FROM_HEADER:
            return f"{self.system_nodes:,} nodes x {cores} (from the SWF header MaxNodes/MaxProcs)"
        return (f"{self.system_nodes:,} nodes x {cores} (nodes from {self.system_source}; "
                f"cores per node {self.cores_per_node_source})")

    def dropped_text(self) -> str:
        """One line: how many records were dropped and why, e.g. ``dropped 4,571 of 43,778
        jobs: 4,571 size < 1``."""
        of = f"{self.records_read:,} job{'s' if self.records_read != 1 else ''}"
        if not self.dropped_total:
            return f"dropped none of {of}"
        why = ", ".join(f"{n:,} {DROP_TEXT.get(k, k)}" for k, n in self.dropped.items() if n)
        return f"dropped {self.dropped_total:,} of {of}: {why}"

    def changed_text(self) -> str:
        """One line: what cleaning changed in the kept jobs, e.g. ``changed 475 of the kept
        jobs: 475 run times capped at their walltime``; "" when nothing."""
        what = [(self.runtime_capped, "run times capped at their walltime"),
                (self.walltime_from_runtime, "walltimes taken from the run time (none asked)"),
                (self.size_from_allocated, "sizes taken from the allocated processors")]
        what = [(n, text) for n, text in what if n]
        if not what:
            return ""
        return "changed jobs: " + ", ".join(f"{n:,} {text}" for n, text in what)

    def __str__(self) -> str:
        drops = ", ".join(f"{DROP_TEXT.get(k, k)}: {v}" for k, v in self.dropped.items() if v)
        lines = [
            f"{self.source} ({self.fmt}): {self.records_read} records read"
            + (f" (max_jobs={self.max_jobs})" if self.max_jobs is not None else "")
            + f", {self.kept} kept, {self.dropped_total} dropped"
            + (f" ({drops})" if drops else ""),
            f"  of the kept jobs: run time capped at walltime {self.runtime_capped}, "
            f"walltime from run time {self.walltime_from_runtime}, "
            f"size from allocated processors {self.size_from_allocated}",
            f"  system: {self.system_nodes} nodes ({self.system_source}"
            + f"; {self.cores_per_node} cores per node, {self.cores_per_node_source})",
        ]
        if self.extra_fields_ignored:
            lines.append(f"  lines with extra fields ignored: {self.extra_fields_ignored}")
        if self.rebase_offset:
            lines.append(f"  submit times shifted by -{self.rebase_offset:g} s")
        if self.ignored_columns:
            lines.append(f"  ignored columns: {', '.join(self.ignored_columns)}")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)


@dataclass(frozen=True)
class Trace:
    """A cleaned workload: jobs sorted by (submit, id), the system, header and report."""

    jobs: tuple[Job, ...]
    system: System
    header: dict
    report: CleaningReport
    path: Path | None = None
    # per-job columns Job has no field for ({name: values in job order}): "group" and
    # "partition" (SWF numbers, or a Slurm trace's partition names)
    attributes: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.jobs)

    def to_frame(self):
        """The jobs as a pandas DataFrame, one row per job, one column per ``Job`` field."""
        import pandas as pd  # lazy: pandas is slow to import

        names = Job.__dataclass_fields__.keys()
        cols = {n: [getattr(j, n) for j in self.jobs] for n in names}
        frame = pd.DataFrame(cols, columns=list(names))
        if not self.jobs:  # keep sensible dtypes for an empty trace
            frame = frame.astype({"id": "int64", "submit": "float64", "runtime": "float64",
                                  "walltime": "float64", "nodes": "int64"})
        return frame
