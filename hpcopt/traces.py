"""Workload trace readers (SWF, CSV, JSON) with explicit, reported cleaning.

``load_trace(path)`` reads a Standard Workload Format file (SWF v2.2, plain or gzip) or a
CSV/JSON job table and returns a ``Trace``: the cleaned ``Job`` tuple, the ``System`` it runs
on, the file's header and a ``CleaningReport`` that counts every change made to the raw
records.  Nothing is dropped or altered silently.

SWF records (18 whitespace-separated numbers, ``-1`` = unknown)::

     1 job id              7 used memory          13 group id
     2 submit time         8 requested procs      14 executable (app) number
     3 wait time           9 requested time       15 queue number
     4 run time           10 requested memory     16 partition number
     5 allocated procs    11 status               17 preceding job number
     6 average CPU time   12 user id              18 think time

Lines starting with ``;`` are header comments; ``; Key: value`` lines fill ``Trace.header``
(keys as written, values as stripped strings; an indented comment line without its own key
continues the previous value, and a repeated key appends to it, both joined with ``"\\n"``).

Parsing is strict: a record with fewer or more than 18 fields, a field that is not a finite
decimal number, or a non-integer job id / user id / queue number is a ``TraceError`` whose
one-line message names the file, the line and the field, e.g.
``KTH.swf:1234: field 4 (run time): expected a number, got 'abc'``.  Files with extra
trailing columns (the Alea/MetaCentrum extended SWF has 21) load with
``extra_fields="ignore"``, which keeps the first 18 fields and counts the lines.

Cleaning rules (applied to every record, the counts are in ``CleaningReport``):

* size (processors) = requested processors (field 8) if > 0, else allocated ones (field 5);
  nodes = ceil(size / cores_per_node);
* walltime = requested time (field 9) if > 0, else the run time;
* run time > walltime: the run time is capped at the walltime (the job was killed there);
* dropped, counted by the *first* reason that applies, in this order:
  ``runtime_unknown`` (run time < 0), ``submit_unknown`` (submit time < 0),
  ``size_unknown`` (nodes < 1), ``too_large`` (nodes > system nodes), ``duplicate_id``
  (a job id already kept earlier in the file; the first one wins);
* the counts ``runtime_capped``, ``walltime_from_runtime`` and ``size_from_allocated`` are
  over the *kept* jobs.

System size (``System.nodes``), in the same unit as the job sizes:

1. ``nodes=`` when given;
2. else the header's ``MaxProcs`` // ``cores_per_node`` -- preferred over ``MaxNodes`` because
   job sizes are processor counts converted with the same ``cores_per_node``, so the units
   always match (LLNL-Atlas: MaxProcs 9216, MaxNodes 1152: 9216 by default, 1152 with
   ``cores_per_node=8``; KTH-SP2: both are 100);
3. else the header's ``MaxNodes`` (taken as a node count as it stands);
4. else the largest size among the jobs that are not dropped for another reason;
5. else (no size information at all) a ``TraceError``.

Header values ``<= 0`` count as unknown.  When both header values exist and disagree with
``cores_per_node``, the report carries a note.

Other choices: submit times are kept as they are in the file (``rebase=False``; pass
``rebase=True`` to shift the first kept submit to 0, the offset is reported); jobs are sorted
by (submit, id); ``max_jobs=N`` keeps the first N records of the file (in file order, before
any cleaning; header comments after the N-th record are not read).  SWF fields that ``Job``
has no place for (wait, status, memory, group, app, partition, preceding job, think time) are
read and validated but not kept; in particular field 17 is *not* turned into a dependency.

Tables (CSV with a header row, or JSON: a list of objects or ``{"jobs": [...], ...}``) have
columns/keys ``id, submit, runtime, nodes`` and optional ``walltime, bb, ssd, priority, user,
queue``; other columns are ignored and listed in the report.  An empty cell or ``null`` in an
optional column means unknown (walltime: filled from runtime; bb/ssd/priority: 0; user/queue:
-1).  ``nodes`` are nodes already, so ``cores_per_node`` must stay 1.  Other top-level scalar
keys of a JSON object (e.g. ``"MaxNodes": 64``) go into the header.  The same cleaning rules
apply.

``write_swf(jobs, path, header=...)`` writes jobs back as SWF (``.gz`` suffix: gzip).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import re
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .domain import Job, System
from .errors import TraceError

__all__ = [
    "SWF_FIELDS",
    "CleaningReport",
    "SwfHeader",
    "Trace",
    "load_trace",
    "write_swf",
]

#: Names of the 18 SWF v2.2 fields, index 0 = field 1.
SWF_FIELDS: tuple[str, ...] = (
    "job id",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user id",
    "group id",
    "executable number",
    "queue number",
    "partition number",
    "preceding job number",
    "think time",
)
_NF = len(SWF_FIELDS)
# 0-based SWF columns that must hold integers because Job stores them as int
_SWF_INT_COLS = (0, 11, 14)
_ID, _SUBMIT, _RUN, _ALLOC, _REQP, _REQT, _USER, _QUEUE = 0, 1, 3, 4, 7, 8, 11, 14

_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_HEADER_KEY = re.compile(r";[ \t]{0,2}([A-Za-z][A-Za-z0-9_]*)[ \t]*:(.*)")

DROP_REASONS: tuple[str, ...] = (
    "runtime_unknown",
    "submit_unknown",
    "size_unknown",
    "too_large",
    "duplicate_id",
)
_DROP_TEXT = {
    "runtime_unknown": "run time unknown",
    "submit_unknown": "submit time unknown",
    "size_unknown": "size < 1",
    "too_large": "larger than the system",
    "duplicate_id": "duplicate id",
}

_TABLE_REQUIRED = ("id", "submit", "runtime", "nodes")
_TABLE_OPTIONAL = ("walltime", "bb", "ssd", "priority", "user", "queue")
_TABLE_INT = frozenset({"id", "nodes", "priority", "user", "queue"})


# --------------------------------------------------------------------------------------------
# result types


class SwfHeader(dict):
    """The header of a trace: ``{key as written: value string}`` plus typed accessors."""

    source: str = ""

    def get_int(self, key: str) -> int | None:
        """The value of ``key`` as an int, ``None`` when absent or unknown (<= 0 for sizes)."""
        raw = self.get(key)
        if raw is None:
            return None
        text = str(raw).strip()
        if not text:
            return None
        try:
            value = float(text) if _NUMBER.fullmatch(text) else math.nan
        except ValueError:  # pragma: no cover - the regex admits only numbers
            value = math.nan
        if not math.isfinite(value) or value != int(value):
            where = f"{self.source}: " if self.source else ""
            raise TraceError(f"{where}header {key}: expected an integer, got {text!r}")
        return int(value)

    def _positive(self, key: str) -> int | None:
        value = self.get_int(key)
        return value if value is not None and value > 0 else None

    @property
    def max_nodes(self) -> int | None:
        """``MaxNodes`` as an int; ``None`` when absent or <= 0 (unknown)."""
        return self._positive("MaxNodes")

    @property
    def max_procs(self) -> int | None:
        """``MaxProcs`` as an int; ``None`` when absent or <= 0 (unknown)."""
        return self._positive("MaxProcs")

    @property
    def unix_start_time(self) -> int | None:
        """``UnixStartTime`` (epoch seconds of submit time 0) as an int, or ``None``."""
        return self.get_int("UnixStartTime")


@dataclass(frozen=True)
class CleaningReport:
    """What cleaning did to the raw records of one trace (see the module doc for the rules)."""

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
            "max_jobs": self.max_jobs,
            "extra_fields_ignored": self.extra_fields_ignored,
            "rebase_offset": self.rebase_offset,
            "ignored_columns": list(self.ignored_columns),
            "notes": list(self.notes),
        }

    def __str__(self) -> str:
        drops = ", ".join(f"{_DROP_TEXT[k]}: {v}" for k, v in self.dropped.items() if v)
        lines = [
            f"{self.source} ({self.fmt}): {self.records_read} records read"
            + (f" (max_jobs={self.max_jobs})" if self.max_jobs is not None else "")
            + f", {self.kept} kept, {self.dropped_total} dropped"
            + (f" ({drops})" if drops else ""),
            f"  of the kept jobs: run time capped at walltime {self.runtime_capped}, "
            f"walltime from run time {self.walltime_from_runtime}, "
            f"size from allocated processors {self.size_from_allocated}",
            f"  system: {self.system_nodes} nodes ({self.system_source}"
            + (f", cores_per_node={self.cores_per_node}" if self.cores_per_node != 1 else "")
            + ")",
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


# --------------------------------------------------------------------------------------------
# reading


def load_trace(
    path: str | Path,
    *,
    nodes: int | None = None,
    cores_per_node: int = 1,
    max_jobs: int | None = None,
    fmt: str | None = None,
    rebase: bool = False,
    extra_fields: str = "error",
) -> Trace:
    """Read and clean a workload trace.

    Parameters
    ----------
    path : SWF (``.swf``), CSV (``.csv``) or JSON (``.json``) file, each optionally gzipped
        (detected from the magic bytes; a ``.gz`` suffix is stripped before the format guess).
    nodes : system size in nodes; default from the header (``MaxProcs // cores_per_node``,
        else ``MaxNodes``), else the largest job.
    cores_per_node : processors per node, to convert SWF processor counts to nodes
        (``ceil(procs / cores_per_node)``); SWF only.
    max_jobs : keep only the first ``max_jobs`` records of the file (file order, before
        cleaning).
    fmt : ``"swf"``, ``"csv"`` or ``"json"``; default from the suffix.
    rebase : shift submit times so that the first kept job is submitted at 0.
    extra_fields : ``"error"`` (default) or ``"ignore"``: SWF lines with more than 18 fields
        keep their first 18 (counted in the report).

    Raises ``TraceError`` (one line naming file, line and field) for unreadable input.
    """
    src = str(path)
    p = Path(path)
    if fmt is None:
        fmt = _guess_format(p)
    fmt = str(fmt).lower()
    if fmt not in ("swf", "csv", "json"):
        raise TraceError(f"{src}: unknown trace format {fmt!r}; expected 'swf', 'csv' or 'json'")
    if extra_fields not in ("error", "ignore"):
        raise TraceError(f"extra_fields must be 'error' or 'ignore', got {extra_fields!r}")
    cores_per_node = _whole("cores_per_node", cores_per_node, 1)
    nodes = None if nodes is None else _whole("nodes", nodes, 1)
    max_jobs = None if max_jobs is None else _whole("max_jobs", max_jobs, 0)
    if fmt != "swf" and cores_per_node != 1:
        raise TraceError(
            f"{src}: cores_per_node={cores_per_node} applies to SWF processor counts only; "
            f"{fmt.upper()} tables give nodes directly"
        )

    text = _read_text(p, src)
    header = SwfHeader()
    header.source = src
    extra = 0
    ignored: tuple[str, ...] = ()
    if fmt == "swf":
        cols, extra = _parse_swf(text, src, header, max_jobs, extra_fields == "ignore")
    elif fmt == "csv":
        cols, ignored = _parse_csv(text, src, max_jobs)
    else:
        cols, ignored = _parse_json(text, src, header, max_jobs)
    return _clean(
        cols,
        src=src,
        path=p,
        fmt=fmt,
        header=header,
        nodes=nodes,
        cores_per_node=cores_per_node,
        max_jobs=max_jobs,
        rebase=rebase,
        extra=extra,
        ignored=ignored,
    )


def _whole(name: str, value, minimum: int) -> int:
    """``value`` as an int >= ``minimum``, or a one-line ``TraceError``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        kind = "a positive" if minimum == 1 else "a non-negative"
        raise TraceError(f"{name} must be {kind} integer, got {value!r}")
    return int(value)


def _guess_format(p: Path) -> str:
    name = p.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    for suffix in ("swf", "csv", "json"):
        if name.endswith("." + suffix):
            return suffix
    raise TraceError(
        f"{p}: cannot tell the trace format from the file name; "
        "pass fmt='swf', 'csv' or 'json'"
    )


def _read_text(p: Path, src: str) -> str:
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise TraceError(f"{src}: cannot read trace: {exc.strerror or exc}") from exc
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceError(f"{src}: corrupt gzip data: {exc}") from exc
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")  # header comments of old logs; records are ASCII


def _parse_swf(
    text: str, src: str, header: SwfHeader, max_jobs: int | None, ignore_extra: bool
) -> tuple[dict[str, np.ndarray], int]:
    """Split header and records; return the record columns as arrays (+ extra-field lines)."""
    lines = text.split("\n")
    data: list[str] = []
    where: list[int] = []  # 0-based line index of each record
    limit = -1 if max_jobs is None else max_jobs
    last_key: str | None = None
    if limit != 0:
        for i, line in enumerate(lines):
            s = line.strip()
            if not s:
                continue
            if s[0] == ";":
                last_key = _header_line(s, header, last_key)
                continue
            data.append(s)
            where.append(i)
            if len(data) == limit:
                break
    else:  # still read the header
        for line in lines:
            s = line.strip()
            if s and s[0] == ";":
                last_key = _header_line(s, header, last_key)
            elif s:
                break

    table = None
    if data and not ignore_extra:
        table = _swf_fast(data)
    extra = 0
    if table is None:
        table, extra = _swf_slow(data, where, src, ignore_extra)
    cols = {
        "id": table[:, _ID],
        "submit": table[:, _SUBMIT],
        "runtime": table[:, _RUN],
        "req_size": table[:, _REQP],
        "alloc_size": table[:, _ALLOC],
        "req_time": table[:, _REQT],
        "user": table[:, _USER],
        "queue": table[:, _QUEUE],
    }
    return cols, extra


def _header_line(stripped: str, header: SwfHeader, last_key: str | None) -> str | None:
    m = _HEADER_KEY.match(stripped)
    if m:
        key, value = m.group(1), m.group(2).strip()
        header[key] = f"{header[key]}\n{value}" if key in header else value
        return key
    body = stripped[1:].strip()
    if body and last_key is not None:  # continuation of the previous key's value
        header[last_key] = f"{header[last_key]}\n{body}" if header[last_key] else body
    return last_key


def _swf_fast(data: list[str]) -> np.ndarray | None:
    """Vectorised parse of clean input; ``None`` when anything is off (the slow pass decides)."""
    try:
        table = np.loadtxt(data, dtype=np.float64, comments=None, ndmin=2)
    except ValueError:
        return None
    if table.shape != (len(data), _NF) or not np.isfinite(table).all():
        return None
    ints = table[:, _SWF_INT_COLS]
    if not (ints == np.floor(ints)).all():
        return None
    return table


def _swf_slow(
    data: list[str], where: list[int], src: str, ignore_extra: bool
) -> tuple[np.ndarray, int]:
    """Line-by-line parse: the reference semantics, and the one that names bad lines."""
    table = np.empty((len(data), _NF), dtype=np.float64)
    extra = 0
    number = _NUMBER.fullmatch
    for r, (s, i) in enumerate(zip(data, where)):
        parts = s.split()
        n = len(parts)
        if n != _NF:
            if n < _NF:
                raise TraceError(
                    f"{src}:{i + 1}: expected {_NF} fields, got {n}: "
                    f"field {n + 1} ({SWF_FIELDS[n]}) is missing"
                )
            if not ignore_extra:
                raise TraceError(
                    f"{src}:{i + 1}: expected {_NF} fields, got {n}: field {_NF + 1} is extra "
                    "(pass extra_fields='ignore' to keep the first 18)"
                )
            extra += 1
            parts = parts[:_NF]
        for k, tok in enumerate(parts):
            if not number(tok):
                raise TraceError(
                    f"{src}:{i + 1}: field {k + 1} ({SWF_FIELDS[k]}): "
                    f"expected a number, got {tok!r}"
                )
            value = float(tok)
            if not math.isfinite(value):
                raise TraceError(
                    f"{src}:{i + 1}: field {k + 1} ({SWF_FIELDS[k]}): "
                    f"expected a finite number, got {tok!r}"
                )
            table[r, k] = value
        for k in _SWF_INT_COLS:
            if table[r, k] != math.floor(table[r, k]):
                raise TraceError(
                    f"{src}:{i + 1}: field {k + 1} ({SWF_FIELDS[k]}): "
                    f"expected an integer, got {parts[k]!r}"
                )
    return table, extra


def _table_value(raw: Any, col: str, where: str) -> float | None:
    """One table cell as a float (``None`` = empty/null), validated; ``where`` prefixes errors."""
    if raw is None:
        return None
    if isinstance(raw, bool):
        raise TraceError(f"{where}: column '{col}': expected a number, got {raw!r}")
    if isinstance(raw, (int, float)):
        value = float(raw)
        shown = repr(raw)
    elif isinstance(raw, str):
        text = raw.strip()
        if not text:
            return None
        if not _NUMBER.fullmatch(text):
            raise TraceError(f"{where}: column '{col}': expected a number, got {text!r}")
        value = float(text)
        shown = repr(text)
    else:
        raise TraceError(f"{where}: column '{col}': expected a number, got {raw!r}")
    if not math.isfinite(value):
        raise TraceError(f"{where}: column '{col}': expected a finite number, got {shown}")
    if col in _TABLE_INT and value != math.floor(value):
        raise TraceError(f"{where}: column '{col}': expected an integer, got {shown}")
    if col in ("bb", "ssd") and value < 0:
        raise TraceError(f"{where}: column '{col}': expected a number >= 0, got {shown}")
    return value


_TABLE_DEFAULT = {"walltime": -1.0, "bb": 0.0, "ssd": 0.0, "priority": 0.0, "user": -1.0,
                  "queue": -1.0}


def _table_columns(
    records: Iterable[tuple[str, Mapping[str, Any]]], keys: Sequence[str]
) -> dict[str, np.ndarray]:
    wanted = [k for k in (*_TABLE_REQUIRED, *_TABLE_OPTIONAL) if k in keys]
    values: dict[str, list[float]] = {k: [] for k in (*_TABLE_REQUIRED, *_TABLE_OPTIONAL)}
    for where, rec in records:
        for col in wanted:
            v = _table_value(rec.get(col), col, where)
            if v is None:
                if col in _TABLE_REQUIRED:
                    raise TraceError(f"{where}: column '{col}': missing value")
                v = _TABLE_DEFAULT[col]
            values[col].append(v)
    n = len(values["id"])
    out = {
        col: np.asarray(vals, dtype=np.float64) if col in wanted
        else np.full(n, _TABLE_DEFAULT[col])
        for col, vals in values.items()
    }
    return {
        "id": out["id"],
        "submit": out["submit"],
        "runtime": out["runtime"],
        "req_size": out["nodes"],
        "alloc_size": np.full(n, -1.0),
        "req_time": out["walltime"],
        "user": out["user"],
        "queue": out["queue"],
        "bb": out["bb"],
        "ssd": out["ssd"],
        "priority": out["priority"],
    }


def _check_columns(keys: Iterable[str], where: str) -> tuple[list[str], tuple[str, ...]]:
    keys = list(keys)
    missing = [c for c in _TABLE_REQUIRED if c not in keys]
    if missing:
        raise TraceError(
            f"{where}: missing column(s) {', '.join(repr(c) for c in missing)}; "
            f"expected {', '.join(_TABLE_REQUIRED)} (+ optional {', '.join(_TABLE_OPTIONAL)})"
        )
    known = set(_TABLE_REQUIRED) | set(_TABLE_OPTIONAL)
    return keys, tuple(k for k in keys if k not in known)


def _parse_csv(
    text: str, src: str, max_jobs: int | None
) -> tuple[dict[str, np.ndarray], tuple[str, ...]]:
    reader = csv.reader(io.StringIO(text))
    try:
        head = next(reader)
    except StopIteration:
        raise TraceError(f"{src}: empty CSV file; expected a header row") from None
    except csv.Error as exc:
        raise TraceError(f"{src}:{reader.line_num}: malformed CSV: {exc}") from exc
    names = [h.strip().lower() for h in head]
    dup = sorted({h for h in names if names.count(h) > 1 and h})
    if dup:
        raise TraceError(f"{src}:{reader.line_num}: duplicate column(s) {', '.join(dup)}")
    keys, ignored = _check_columns(names, f"{src}:{reader.line_num}")

    def rows():
        count = 0
        while max_jobs is None or count < max_jobs:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise TraceError(f"{src}:{reader.line_num}: malformed CSV: {exc}") from exc
            if not row or all(not c.strip() for c in row):
                continue
            where = f"{src}:{reader.line_num}"
            if len(row) != len(names):
                raise TraceError(
                    f"{where}: expected {len(names)} columns, got {len(row)}"
                )
            count += 1
            yield where, dict(zip(names, row))

    return _table_columns(rows(), keys), ignored


def _parse_json(
    text: str, src: str, header: SwfHeader, max_jobs: int | None
) -> tuple[dict[str, np.ndarray], tuple[str, ...]]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(f"{src}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from exc
    if isinstance(doc, dict):
        if "jobs" not in doc:
            raise TraceError(f"{src}: JSON object has no 'jobs' key; expected a list of jobs "
                             "or {\"jobs\": [...]}")
        for k, v in doc.items():
            if k != "jobs" and isinstance(v, (str, int, float)) and not isinstance(v, bool):
                header[k] = str(v)
        jobs = doc["jobs"]
    else:
        jobs = doc
    if not isinstance(jobs, list):
        raise TraceError(f"{src}: expected a list of job objects, got {type(jobs).__name__}")
    if max_jobs is not None:
        jobs = jobs[:max_jobs]
    keys: list[str] = []
    seen: set[str] = set()
    for i, rec in enumerate(jobs):
        if not isinstance(rec, dict):
            raise TraceError(
                f"{src}: job {i}: expected an object, got {type(rec).__name__}"
            )
        for k in rec:
            if k not in seen:
                seen.add(k)
                keys.append(k)
    if jobs:
        keys, ignored = _check_columns(keys, src)
        for i, rec in enumerate(jobs):  # every record needs the required keys
            for c in _TABLE_REQUIRED:
                if c not in rec:
                    raise TraceError(f"{src}: job {i}: column '{c}': missing key")
    else:
        keys, ignored = list(_TABLE_REQUIRED), ()
    records = ((f"{src}: job {i}", rec) for i, rec in enumerate(jobs))
    return _table_columns(records, keys), ignored


# --------------------------------------------------------------------------------------------
# cleaning


def _system_size(
    header: SwfHeader, nodes: int | None, cpn: int, largest: int, src: str
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


def _clean(
    cols: Mapping[str, np.ndarray],
    *,
    src: str,
    path: Path,
    fmt: str,
    header: SwfHeader,
    nodes: int | None,
    cores_per_node: int,
    max_jobs: int | None,
    rebase: bool,
    extra: int,
    ignored: tuple[str, ...],
) -> Trace:
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

    bad_run = runtime < 0
    bad_submit = ~bad_run & (submit < 0)
    bad_size = ~bad_run & ~bad_submit & (size < 1)
    ok = ~(bad_run | bad_submit | bad_size)
    largest = int(size[ok].max()) if ok.any() else 0
    sys_nodes, sys_source, notes = _system_size(header, nodes, cores_per_node, largest, src)
    too_large = ok & (size > sys_nodes)
    ok &= ~too_large
    duplicate = np.zeros(n, dtype=bool)
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

    keep = np.flatnonzero(ok)
    k_ids, k_submit = ids[keep], submit[keep]
    order = keep[np.lexsort((k_ids, k_submit))]
    offset = 0.0
    if rebase and order.size:
        offset = float(submit[order[0]])
    run_k = np.minimum(runtime[order], walltime[order])
    zeros = np.zeros(order.size)
    bb = cols["bb"][order] if "bb" in cols else zeros
    ssd = cols["ssd"][order] if "ssd" in cols else zeros
    prio = cols["priority"][order].astype(np.int64) if "priority" in cols else zeros.astype(
        np.int64
    )
    jobs = tuple(
        map(
            Job,
            ids[order].astype(np.int64).tolist(),
            (submit[order] - offset).tolist(),
            run_k.tolist(),
            walltime[order].tolist(),
            size[order].astype(np.int64).tolist(),
            bb.tolist(),
            ssd.tolist(),
            prio.tolist(),
            cols["user"][order].astype(np.int64).tolist(),
            cols["queue"][order].astype(np.int64).tolist(),
        )
    )
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
        max_jobs=max_jobs,
        extra_fields_ignored=extra,
        rebase_offset=offset,
        ignored_columns=ignored,
        notes=tuple(notes),
    )
    name = path.name
    for suffix in (".gz", ".swf", ".csv", ".json"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return Trace(
        jobs=jobs,
        system=System(nodes=sys_nodes, name=name),
        header=header,
        report=report,
        path=path,
    )


# --------------------------------------------------------------------------------------------
# writing


def _fmt_num(x: float | int) -> str:
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    x = float(x)
    if not math.isfinite(x):
        raise TraceError(f"cannot write a non-finite number ({x!r}) to SWF")
    if x == int(x):
        return str(int(x))
    return repr(x)


def write_swf(
    jobs: Iterable[Job],
    path: str | Path,
    header: Mapping[str, Any] | Sequence[tuple[str, Any]] | None = None,
    *,
    cores_per_node: int = 1,
) -> Path:
    """Write ``jobs`` as an SWF v2.2 file (gzip when ``path`` ends in ``.gz``).

    Each job becomes one 18-field record: id, submit, wait -1, runtime, allocated and
    requested processors ``nodes * cores_per_node``, requested time = walltime, user, queue,
    every other field -1 (unknown).  SWF has no place for bb, ssd, priority, deps or the
    deferrable-job fields; they are not written.  ``header`` (a mapping or ``(key, value)``
    pairs) becomes ``; Key: value`` lines; a value with newlines continues on indented
    comment lines.  ``; Version: 2.2`` is written first unless the header has a ``Version``.
    Returns the path written.
    """
    p = Path(path)
    items = list(header.items()) if isinstance(header, Mapping) else list(header or ())
    if not any(str(k) == "Version" for k, _ in items):
        items.insert(0, ("Version", "2.2"))
    out: list[str] = []
    for key, value in items:
        key = str(key)
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", key):
            raise TraceError(f"SWF header key {key!r} must be a word (letters, digits, _)")
        first, *rest = str(value).split("\n")
        out.append(f"; {key}: {first}".rstrip())
        pad = " " * (len(key) + 2)
        out.extend(f";   {pad}{line}".rstrip() for line in rest)
    rows: list[list[str]] = []
    for j in jobs:
        procs = str(int(j.nodes) * int(cores_per_node))
        rows.append([
            str(int(j.id)), _fmt_num(j.submit), "-1", _fmt_num(j.runtime), procs, "-1", "-1",
            procs, _fmt_num(j.walltime), "-1", "-1", str(int(j.user)), "-1", "-1",
            str(int(j.queue)), "-1", "-1", "-1",
        ])
    if rows:
        widths = [max(len(r[k]) for r in rows) for k in range(_NF)]
        out.extend(" ".join(v.rjust(w) for v, w in zip(r, widths)) for r in rows)
    data = ("\n".join(out) + "\n").encode("utf-8")
    if p.name.lower().endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    p.write_bytes(data)
    return p
