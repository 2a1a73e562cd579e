"""Job tables: CSV with a header row, or JSON (a list of objects or ``{"jobs": [...], ...}``).

Columns/keys ``id, submit, runtime, nodes`` and optional ``walltime, bb, ssd, priority, user,
queue``; other columns are ignored and listed in the report.  An empty cell or ``null`` in an
optional column means unknown (walltime: filled from runtime; bb/ssd/priority: 0; user/queue:
-1).  ``nodes`` are nodes already (no cores-per-node conversion).  Other top-level scalar keys
of a JSON object (e.g. ``"MaxNodes": 64``) go into the header.

Job ids: integers (``17``, ``"17"``) or strings such as Slurm array ids (``"123_4"``).  When
any id of the file is not an integer, every id is kept as text (``17`` becomes ``"17"``), so
that all ids of a trace have one type and sort the same way.  A number with a fraction
(``1.5``) is an error, not a text id.

Submit times: seconds (any number), or ISO 8601 date-times such as ``2022-01-03T04:05:06Z``
or ``2022-01-03 04:05:06+01:00`` (``datetime.fromisoformat``), converted to Unix epoch
seconds.  A time with an offset (``Z``, ``+01:00``) is converted exactly; a time without
one is taken as UTC (never the local time zone of the machine reading it), so the same file
gives the same numbers everywhere.  Durations (runtime, walltime) are seconds.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone, tzinfo
from typing import Any

import numpy as np

from ..errors import TraceError
from ._text import NUMBER
from .swf import SwfHeader

_TABLE_REQUIRED = ("id", "submit", "runtime", "nodes")
_TABLE_OPTIONAL = ("walltime", "bb", "ssd", "priority", "user", "queue")
_TABLE_INT = frozenset({"id", "nodes", "priority", "user", "queue"})


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
        if not NUMBER.fullmatch(text):
            if col == "submit":
                return iso_seconds(text, where, "column 'submit': expected seconds or an "
                                   "ISO 8601 time (e.g. 2022-01-03T04:05:06Z)")
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


def iso_seconds(text: str, where: str, expected: str,
                tz: tzinfo | str = timezone.utc) -> float:
    """An ISO 8601 date-time as Unix epoch seconds.  A time without an offset is in ``tz``:
    UTC by default (module doc), a ``tzinfo`` (``zoneinfo.ZoneInfo``: daylight saving time
    by its rules), or ``"local"``, this process's local zone (``TZ`` or the system's, by the
    C library's rules).  A wall time that occurs twice (the hour repeated when DST ends) is
    read as its first occurrence.  A text that is none is a one-line error: ``where:
    expected, got 'text'``."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise TraceError(f"{where}: {expected}, got {text!r}") from None
    if moment.tzinfo is None:
        if tz == "local":
            return moment.timestamp()  # a naive datetime: the local zone
        moment = moment.replace(tzinfo=tz)
    return moment.timestamp()


def time_zone(name: str | tzinfo | None) -> tzinfo | str:
    """The zone of zone-less times: ``None`` or ``"local"``: this process's local zone
    (``"local"``); ``"UTC"``; an IANA name such as ``"Europe/Berlin"`` (``ZoneInfo``); a
    ``tzinfo`` as it is.  An unknown name is a one-line ``TraceError``."""
    if name is None or name == "local":
        return "local"
    if isinstance(name, tzinfo):
        return name
    text = str(name).strip()
    if text.upper() in ("UTC", "Z", "ETC/UTC"):
        return timezone.utc
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # see ALLOWED_STDLIB

    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise TraceError(f"tz {text!r}: unknown time zone; expected an IANA name such as "
                         "Europe/Berlin or America/Chicago, UTC, or local") from None


def job_id(raw: Any, where: str) -> int | str:
    """A job id cell: an int, or the stripped text when it is not a number (``123_4``)."""
    if isinstance(raw, str):
        text = raw.strip()
        if not text:
            raise TraceError(f"{where}: column 'id': missing value")
        if not NUMBER.fullmatch(text):
            return text
        raw = text
    elif raw is None:
        raise TraceError(f"{where}: column 'id': missing value")
    elif isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise TraceError(f"{where}: column 'id': expected an integer or a text id, got {raw!r}")
    value = _table_value(raw, "id", where)
    return int(value)


def uniform_ids(ids: list[int | str]) -> list[int | str]:
    """The ids as they are when all are ints, else every id as text (module doc)."""
    if all(isinstance(i, int) for i in ids):
        return ids
    return [str(i) for i in ids]


def id_array(ids: list[int | str]) -> np.ndarray:
    """All ints: a float64 array (like SWF ids); any text id: every id as text."""
    ids = uniform_ids(ids)
    if all(isinstance(i, int) for i in ids):
        return np.asarray(ids, dtype=np.float64)
    return np.asarray(ids, dtype=str)


_TABLE_DEFAULT = {"walltime": -1.0, "bb": 0.0, "ssd": 0.0, "priority": 0.0, "user": -1.0,
                  "queue": -1.0}


def _table_columns(
    records: Iterable[tuple[str, Mapping[str, Any]]], keys: Sequence[str]
) -> dict[str, np.ndarray]:
    wanted = [k for k in (*_TABLE_REQUIRED, *_TABLE_OPTIONAL) if k in keys and k != "id"]
    values: dict[str, list[float]] = {k: [] for k in (*_TABLE_REQUIRED, *_TABLE_OPTIONAL)}
    ids: list[int | str] = []
    for where, rec in records:
        ids.append(job_id(rec.get("id"), where))
        for col in wanted:
            v = _table_value(rec.get(col), col, where)
            if v is None:
                if col in _TABLE_REQUIRED:
                    raise TraceError(f"{where}: column '{col}': missing value")
                v = _TABLE_DEFAULT[col]
            values[col].append(v)
    n = len(ids)
    out = {
        col: np.asarray(vals, dtype=np.float64) if col in wanted
        else np.full(n, _TABLE_DEFAULT[col])
        for col, vals in values.items() if col != "id"
    }
    return {
        "id": id_array(ids),
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


def parse_csv(
    text: str, src: str, max_jobs: int | None
) -> tuple[dict[str, np.ndarray], tuple[str, ...]]:
    """The columns of a CSV job table; errors name the file and line."""
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


def parse_json(
    doc: Any, src: str, header: SwfHeader, max_jobs: int | None
) -> tuple[dict[str, np.ndarray], tuple[str, ...]]:
    """The columns of a decoded JSON job table (``doc`` from ``json.loads``)."""
    if isinstance(doc, dict):
        if "jobs" not in doc and doc.get("model") == "osdec":
            raise TraceError(f"{src}: an osdec instance (a cloud day), not a job trace; run it "
                             "with hpcopt.simulate_osdec or 'hpcopt simulate FILE'")
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
