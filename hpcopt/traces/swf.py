"""Standard Workload Format (SWF v2.2): header, records, and writing.

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
trailing columns (the Alea/MetaCentrum extended SWF has 21: node list, queue name, PBS
resource spec) load with ``extra_fields="ignore"`` (CLI ``--extra-fields ignore``), which
keeps the first 18 fields, does not look at the rest, and counts the lines.

SWF fields that ``Job`` has no place for (wait, status, memory, group, app, partition,
preceding job, think time) are read and validated but not kept; in particular field 17 is
*not* turned into a dependency.  Sizes are processors (fields 8, else 5); how they become
nodes is in ``hpcopt.traces.cleaning``.
"""

from __future__ import annotations

import gzip
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..domain import Job
from ..errors import TraceError
from ._text import NUMBER

__all__ = ["SWF_FIELDS", "SwfHeader", "parse_swf", "write_swf"]

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
_GROUP, _PARTITION = 12, 15

_HEADER_KEY = re.compile(r";[ \t]{0,2}([A-Za-z][A-Za-z0-9_]*)[ \t]*:(.*)")


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
            value = float(text) if NUMBER.fullmatch(text) else math.nan
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


def parse_swf(
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
        "group": table[:, _GROUP],
        "partition": table[:, _PARTITION],
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
    table = _swf_plain_ints(data)
    if table is not None:
        return table
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


_POW10 = 10 ** np.arange(19, dtype=np.int64)
_CHUNK = 16384  # records per vectorised block (bounds the temporary arrays)


def _swf_plain_ints(data: list[str]) -> np.ndarray | None:
    """The common case, about twice as fast as ``np.loadtxt``: records of exactly 18 plain
    integers (``-?[0-9]{1,18}``, separated by spaces or tabs), parsed with array operations
    on the bytes.  The table is what ``np.loadtxt`` gives for the same lines; ``None`` when
    any record is not of that form (``np.loadtxt`` and the slow pass then decide)."""
    table = np.empty((len(data), _NF), dtype=np.float64)
    for lo in range(0, len(data), _CHUNK):
        block = _plain_int_block(data[lo:lo + _CHUNK])
        if block is None:
            return None
        table[lo:lo + len(block)] = block
    return table


def _plain_int_block(data: list[str]) -> np.ndarray | None:
    n = len(data)
    try:
        raw = ("\n".join(data) + "\n").encode("ascii")
    except UnicodeEncodeError:
        return None
    b = np.frombuffer(raw, dtype=np.uint8)
    ws = (b == 32) | (b == 10) | (b == 9)
    digit = (b - 48) < 10  # wraps around below "0"
    minus = b == 45
    if not (ws | digit | minus).all():
        return None
    tok = ~ws
    start = tok.copy()
    start[1:] &= ws[:-1]
    starts = np.flatnonzero(start)
    if starts.size != n * _NF:
        return None
    end = tok  # the last byte of each token (b ends with a newline)
    end[:-1] &= ws[1:]
    ends = np.flatnonzero(end) + 1
    if (ends - starts).max() > 18:  # int64-safe
        return None
    per_line = np.diff(np.searchsorted(starts, np.flatnonzero(b == 10)), prepend=0)
    if not (per_line == _NF).all():
        return None
    mpos = np.flatnonzero(minus)
    if mpos.size and not (start[mpos].all() and digit[mpos + 1].all()):
        return None  # a "-" that is not a sign followed by a digit
    dpos = np.flatnonzero(digit)
    first = np.searchsorted(dpos, starts)  # every token has a digit
    place = np.repeat(ends - 1, np.diff(first, append=dpos.size)) - dpos
    vals = np.add.reduceat((b[dpos] - 48).astype(np.int64) * _POW10[place], first)
    if mpos.size:
        neg = minus[starts]
        if (vals[neg] == 0).any():
            return None  # "-0" reads as -0.0
        vals[neg] = -vals[neg]
    return vals.reshape(n, _NF).astype(np.float64)


def _swf_slow(
    data: list[str], where: list[int], src: str, ignore_extra: bool
) -> tuple[np.ndarray, int]:
    """Line-by-line parse: the reference semantics, and the one that names bad lines."""
    table = np.empty((len(data), _NF), dtype=np.float64)
    extra = 0
    number = NUMBER.fullmatch
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
                    "(extra_fields='ignore', CLI --extra-fields ignore, keeps the first 18)"
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
    deferrable-job fields; they are not written.  String ids (``"123_4"``) cannot be written:
    SWF job ids are integers.  ``header`` (a mapping or ``(key, value)``
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
        if isinstance(j.id, str) and not j.id.strip().lstrip("+-").isdigit():
            raise TraceError(f"cannot write job id {j.id!r} to SWF: field 1 (job id) must be "
                             "an integer")
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
