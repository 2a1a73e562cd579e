"""Slurm's own job history as a trace: ``sacct --parsable2`` output and ``jobcomp/filetxt`` logs.

sacct (format ``sacct``): the output of ::

    sacct --allusers --parsable2 --starttime ... --endtime ... \\
          --state BF,CA,CD,DL,F,NF,OOM,PD,PR,R,RQ,RS,RV,S,TO \\
          --format JobID,Submit,Start,End,Elapsed,Timelimit,NNodes,NCPUS,State,Partition,\
                   User,Account

(one ``--format`` list, no spaces) with its header line (``JobID|Submit|...``); the columns
may come in any order, ``JobID``, ``Submit``, ``Start``, ``NNodes``, ``State`` and one of
``Elapsed`` or ``End`` are required, ``Timelimit``, ``NCPUS``, ``Partition``, ``User``,
``Account`` and the others optional (others are listed as ignored; a dump made without
``Account`` reads as before).  ``--state`` with every state: without it sacct's window
leaves out the jobs that were never eligible (held, or waiting for a begin time, and
cancelled so).

jobcomp (format ``jobcomp``): the file ``JobCompLoc`` names under
``JobCompType=jobcomp/filetxt``, one ``Key=Value ...`` line per finished job (``JobId``,
``SubmitTime``, ``StartTime``, ``EndTime``, ``NodeCnt``, ``ProcCnt``, ``TimeLimit`` in
minutes, ``JobState``, ``Partition``, ``UserId``, ``ArrayJobId``/``ArrayTaskId`` for array
tasks; ``Account`` where Slurm wrote one).

Rules (each counted in the cleaning report's notes; drops also in its drop counts):

- job steps (``123.batch``, ``123.extern``, ``123.0``) are folded into their job: the job's
  own line carries its times and size, the steps' lines are counted and skipped;
- array tasks keep their ids as text (``123_4``; then every id of the trace is text);
  heterogeneous job components (``123+0``) likewise (jobcomp: from ``ArrayJobId`` and
  ``ArrayTaskId``, ``HetJobId`` and ``HetJobOffset``, so both formats name a job alike);
- a job that never started (Start ``Unknown``/``None``, a pending array ``123_[1-5]``, a
  jobcomp line with ``NodeCnt=0``) is dropped as ``runtime_unknown`` and counted as
  cancelled before it started (or never started, with its state); one not finished (state
  RUNNING, PENDING, SUSPENDED, ...) likewise, counted apart;
- Timelimit ``UNLIMITED``, ``Partition_Limit``, ``None``, ``Unknown`` or empty: no walltime
  (the run time stands in, counted as ``walltime_from_runtime``), counted per value; so is
  ``365-00:00:00`` (jobcomp: ``TimeLimit=525600``), which Slurm records for a job without
  ``-t`` on a ``MaxTime=INFINITE`` partition when accounting is on (a job that really asked
  for 365 days reads the same);
- times are ``YYYY-MM-DDTHH:MM:SS`` (or with a space for the ``T``), wall-clock times of
  the zone sacct ran in (of slurmctld for jobcomp; Slurm prints no zone): ``tz`` says
  which, default the local zone of the process that reads them; an IANA name such as
  ``Europe/Berlin`` follows its daylight saving rules (a time in the hour repeated when DST
  ends reads as its first occurrence: run times come from ``Elapsed`` when the file has it,
  so only submit times can be an hour off there); ``TZ=UTC sacct ...`` and ``tz="UTC"``
  avoid the question.  Whole seconds since the epoch (``SLURM_TIME_FORMAT=%s``) are read
  as such.  Times without seconds or without a time of day (a ``SLURM_TIME_FORMAT`` such as
  ``%Y-%m-%d %H:%M`` or ``%F``) are refused, naming the setting; ``Unknown``/``None`` submit
  times are dropped as ``submit_unknown``;
- sizes are nodes (``NNodes``, ``NodeCnt``); ``sizes="cores"`` takes ``NCPUS`` (jobcomp:
  ``ProcCnt``) instead, for a partition whose jobs share nodes (see ``load_trace``);
- partitions and users become small integers (``queue``, ``user``) in order of appearance;
  the mapping is in the header (``partitions``, ``users``); ``partition="P"`` keeps the
  jobs of partition P only (a machine per partition), the others are counted in a note;
- accounts (``Account``) likewise (header ``accounts``); the trace's ``attributes`` name
  each job's partition and account (``""`` for none), as the site's associations do.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from ..errors import TraceError
from .swf import SwfHeader
from .tables import id_array, iso_seconds, time_zone

SACCT_REQUIRED = ("JobID", "Submit", "Start", "NNodes", "State")
SACCT_OPTIONAL = ("End", "Elapsed", "Timelimit", "Partition", "User", "Account", "NCPUS",
                  "JobIDRaw", "JobName", "ExitCode")
NO_LIMIT = frozenset({"UNLIMITED", "Partition_Limit", "None", "Unknown", "INVALID", ""})
UNKNOWN = frozenset({"Unknown", "None", "unknown", ""})
UNFINISHED = frozenset({"RUNNING", "PENDING", "SUSPENDED", "REQUEUED", "RESIZING",
                        "CONFIGURING", "COMPLETING"})
#: what Slurm records as the limit of a job without one on a MaxTime=INFINITE partition
YEAR_LIMIT = frozenset({"365-00:00:00"})
YEAR_MINUTES = "525600"
SIZES = ("nodes", "cores")
_DURATION = re.compile(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)")
_FULL_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}")
_SHORT_TIME = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}(?::\d{2})?)?")
_EPOCH = re.compile(r"\d{9,11}")
_PAIR = re.compile(r"(?:^|\s)([A-Za-z]+)=(\S*)")


def jobcomp_fields(line: str) -> dict[str, str]:
    """The ``Key=value`` fields of one ``jobcomp/filetxt`` line, as text."""
    return dict(_PAIR.findall(line))


def sniff(first_line: str) -> str | None:
    """``"sacct"``, ``"jobcomp"`` or ``None`` from a file's first line."""
    if first_line.startswith("JobID|") or "|JobID|" in first_line:
        return "sacct"
    if first_line.startswith("JobId="):
        return "jobcomp"
    return None


def slurm_time(text: str, where: str, col: str, tz="local") -> float | None:
    """One of Slurm's times (module doc) as Unix epoch seconds, ``None`` for
    ``Unknown``/``None``; ``tz`` as ``tables.time_zone`` gives it."""
    text = text.strip()
    if text in UNKNOWN:
        return None
    if _FULL_TIME.fullmatch(text):
        return iso_seconds(text, where, f"field '{col}': expected a valid date and time", tz)
    if _EPOCH.fullmatch(text):
        return float(text)
    if _SHORT_TIME.fullmatch(text):
        lost = "seconds" if ":" in text else "the time of day"
        raise TraceError(f"{where}: field '{col}': {text!r} has no {lost}: Slurm printed it "
                         "under a SLURM_TIME_FORMAT that loses precision (such as "
                         "'%Y-%m-%d %H:%M' or '%F'); write it again with SLURM_TIME_FORMAT "
                         "unset or =standard")
    raise TraceError(f"{where}: field '{col}': expected a time like 2024-01-02T03:04:05 "
                     f"(SLURM_TIME_FORMAT unset or =standard), Unknown or None, got {text!r}")


def duration(text: str, where: str, col: str) -> float | None:
    """``[D-][HH:]MM:SS`` (sacct's Elapsed and Timelimit) in seconds; ``None`` for no value."""
    text = text.strip()
    if text in NO_LIMIT:
        return None
    m = _DURATION.fullmatch(text)
    if m is None:
        raise TraceError(f"{where}: field '{col}': expected [D-][HH:]MM:SS, UNLIMITED or "
                         f"Partition_Limit, got {text!r}")
    d, h, mi, s = m.groups()
    return ((int(d or 0) * 24 + int(h or 0)) * 60 + int(mi)) * 60 + float(s)


def _count(text: str, where: str, col: str) -> int:
    text = text.strip()
    if not text.isdigit():
        raise TraceError(f"{where}: field '{col}': expected a whole number, got {text!r}")
    return int(text)


class _Rows:
    """Collects the kept records and the counts for the report."""

    def __init__(self) -> None:
        self.ids: list[int | str] = []
        self.cols: dict[str, list[float]] = {k: [] for k in (
            "submit", "runtime", "req_size", "req_time", "user", "queue", "account")}
        self.counts: Counter = Counter()
        self.names: dict[str, dict[str, int]] = {"partitions": {}, "users": {}, "accounts": {}}
        self.others: Counter = Counter()  # jobs of other partitions, left out

    def other(self, only: str | None, partition: str) -> bool:
        """Whether a job of ``partition`` is left out (``only``: the partition kept)."""
        if only is None or partition == only:
            return False
        self.others[partition or "no partition"] += 1
        return True

    def code(self, kind: str, name: str) -> float:
        if not name:
            return -1.0
        table = self.names[kind]
        return float(table.setdefault(name, len(table)))

    def add(self, jid: int | str, submit, start, end, elapsed, limit, nodes: int,
            state: str, partition: str, user: str, size: int | None = None,
            account: str = "") -> None:
        """One job; ``size`` (default ``nodes``) is its size in the trace's unit."""
        state = state.split()[0] if state else ""
        if start is None or (state == "CANCELLED" and nodes == 0):
            runtime = -1.0  # never ran
            self.counts["cancelled before start" if state in ("CANCELLED", "")
                        else f"never started ({state})"] += 1
        elif (elapsed is None and end is None) or state in UNFINISHED:
            runtime = -1.0
            self.counts[f"not finished ({state or 'no End'})"] += 1
        else:
            runtime = elapsed if elapsed is not None else max(0.0, end - start)
        self.ids.append(jid)
        c = self.cols
        c["submit"].append(-1.0 if submit is None else submit)
        c["runtime"].append(runtime)
        c["req_size"].append(float(nodes if size is None else size))
        c["req_time"].append(-1.0 if limit is None else limit)
        c["user"].append(self.code("users", user))
        c["queue"].append(self.code("partitions", partition))
        c["account"].append(self.code("accounts", account))

    def columns(self) -> dict[str, np.ndarray]:
        n = len(self.ids)
        out = {k: np.asarray(v, dtype=np.float64) for k, v in self.cols.items()}
        return {"id": id_array(self.ids) if n else np.zeros(0), **out,
                "alloc_size": np.full(n, -1.0), "bb": np.zeros(n), "ssd": np.zeros(n),
                "priority": np.zeros(n)}

    def finish(self, header: SwfHeader) -> tuple[dict[str, np.ndarray], list[str]]:
        for kind, table in self.names.items():
            if table:
                header[kind] = ",".join(f"{name}={i}" for name, i in table.items())
        notes = [f"{n:,} {what}" + (" (dropped as run time unknown)"
                                    if what.startswith(("cancelled", "never", "not fin"))
                                    else "")
                 for what, n in sorted(self.counts.items())]
        if self.others:
            notes.append(f"{sum(self.others.values()):,} job(s) of other partitions left out ("
                         + ", ".join(f"{p}: {n:,}" for p, n in sorted(self.others.items()))
                         + ")")
        return self.columns(), notes


def _job_id(text: str, where: str) -> tuple[int | str, bool]:
    """(id, is a step) of a sacct JobID."""
    text = text.strip()
    if not text:
        raise TraceError(f"{where}: field 'JobID': missing value")
    base, dot, _ = text.partition(".")
    if not re.fullmatch(r"\d+(?:_(?:\d+|\[[^\]]*\]))?(?:\+\d+)?", base):
        raise TraceError(f"{where}: field 'JobID': expected 123, 123_4, 123+0 or a step "
                         f"such as 123.batch, got {text!r}")
    return (int(base) if base.isdigit() else base), bool(dot)


def _sizes(sizes: str) -> str:
    if sizes not in SIZES:
        raise TraceError(f"sizes must be 'nodes' or 'cores', got {sizes!r}")
    return sizes


def _limit(text: str, where: str, col: str, counts: Counter) -> float | None:
    """A Timelimit in seconds, ``None`` (counted) for none or Slurm's 365 days."""
    if text in NO_LIMIT:
        counts[f"{col} {text or 'empty'}: walltime from run time"] += 1
        return None
    if text in YEAR_LIMIT or (col == "TimeLimit" and text == YEAR_MINUTES):
        counts[f"{col} {text} (Slurm's 365 days for no limit): walltime from run time"] += 1
        return None
    if col == "TimeLimit":
        return _count(text, where, col) * 60.0
    return duration(text, where, col)


def sacct_rows(text: str, src: str):
    """The field names of ``sacct --parsable2`` output (its header line) and its lines, each
    as ``(where, {field: text})`` (``where``: ``src:line``); a line with another number of
    fields is a ``TraceError`` naming it."""
    lines = text.splitlines()
    if not lines:
        raise TraceError(f"{src}: empty file; expected sacct --parsable2 output with its "
                         "header line")
    names = [h.strip() for h in lines[0].rstrip("|").split("|")]

    def rows():
        for lineno, line in enumerate(lines[1:], start=2):
            if not line.strip():
                continue
            where = f"{src}:{lineno}"
            fields = line.rstrip("\n").split("|")
            if len(fields) == len(names) + 1 and fields[-1] == "":
                fields.pop()  # --parsable (not 2) ends each line with a '|'
            if len(fields) != len(names):
                raise TraceError(f"{where}: expected {len(names)} '|'-separated fields, got "
                                 f"{len(fields)}")
            yield where, dict(zip(names, fields))

    return names, rows()


def parse_sacct(text: str, src: str, header: SwfHeader, max_jobs: int | None, *,
                tz="local", sizes: str = "nodes", partition: str | None = None,
                ) -> tuple[dict[str, np.ndarray], tuple[str, ...], list[str]]:
    """Columns, ignored fields and report notes of ``sacct --parsable2`` output; ``tz``:
    the zone of its times (``tables.time_zone``), ``sizes``: ``"nodes"`` (``NNodes``) or
    ``"cores"`` (``NCPUS``), ``partition``: the only partition kept (default: all)."""
    tz = time_zone(tz)
    sizes = _sizes(sizes)
    names, rows_in = sacct_rows(text, src)
    missing = [c for c in SACCT_REQUIRED if c not in names]
    if "Elapsed" not in names and "End" not in names:
        missing.append("Elapsed or End")
    if sizes == "cores" and "NCPUS" not in names:
        missing.append("NCPUS (sizes in cores)")
    if partition is not None and "Partition" not in names:
        missing.append("Partition (one partition kept)")
    if missing:
        raise TraceError(f"{src}:1: missing sacct field(s) {', '.join(missing)}; expected "
                         f"--format {','.join(SACCT_REQUIRED)},End,Elapsed,Timelimit,"
                         "NCPUS,Partition,User")
    ignored = tuple(n for n in names if n not in SACCT_REQUIRED + SACCT_OPTIONAL)
    rows = _Rows()
    steps = orphans = 0
    seen: set = set()
    for where, rec in rows_in:
        jid, step = _job_id(rec["JobID"], where)
        if step:
            steps += 1
            orphans += jid not in seen
            continue
        if max_jobs is not None and len(rows.ids) >= max_jobs:
            break
        seen.add(jid)
        if rows.other(partition, rec["Partition"].strip() if partition else ""):
            continue
        limit = _limit(rec.get("Timelimit", "").strip(), where, "Timelimit", rows.counts)
        rows.add(jid, slurm_time(rec["Submit"], where, "Submit", tz),
                 slurm_time(rec["Start"], where, "Start", tz),
                 slurm_time(rec["End"], where, "End", tz) if "End" in rec else None,
                 duration(rec["Elapsed"], where, "Elapsed") if "Elapsed" in rec else None,
                 limit, _count(rec["NNodes"], where, "NNodes"), rec["State"].strip(),
                 rec.get("Partition", "").strip(), rec.get("User", "").strip(),
                 _count(rec["NCPUS"], where, "NCPUS") if sizes == "cores" else None,
                 rec.get("Account", "").strip())
    cols, notes = rows.finish(header)
    if steps:
        notes.insert(0, f"{steps:,} job step line(s) folded into their jobs"
                     + (f" ({orphans:,} without their job's line)" if orphans else ""))
    return cols, ignored, notes


def parse_jobcomp(text: str, src: str, header: SwfHeader, max_jobs: int | None, *,
                  tz="local", sizes: str = "nodes", partition: str | None = None,
                  ) -> tuple[dict[str, np.ndarray], tuple[str, ...], list[str]]:
    """Columns, ignored fields (none) and report notes of a ``jobcomp/filetxt`` log; ``tz``,
    ``sizes`` (``ProcCnt`` for cores) and ``partition`` as for ``parse_sacct``; ``Account=``
    as sacct's ``Account``."""
    tz = time_zone(tz)
    sizes = _sizes(sizes)
    rows = _Rows()
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if max_jobs is not None and len(rows.ids) >= max_jobs:
            break
        where = f"{src}:{lineno}"
        rec = jobcomp_fields(line)
        for key in ("JobId", "SubmitTime", "StartTime", "EndTime", "NodeCnt", "JobState",
                    *(("ProcCnt",) if sizes == "cores" else ())):
            if key not in rec:
                raise TraceError(f"{where}: missing {key}=; expected a jobcomp/filetxt line "
                                 "(JobId=... SubmitTime=... StartTime=... EndTime=... "
                                 "NodeCnt=... ProcCnt=... JobState=...)")
        if rows.other(partition, rec.get("Partition", "")):
            continue
        jid: int | str = _count(rec["JobId"], where, "JobId")
        if rec.get("ArrayJobId") and rec.get("ArrayTaskId"):
            jid = f"{rec['ArrayJobId']}_{rec['ArrayTaskId']}"
        elif rec.get("HetJobId", "0") not in ("", "0") and rec.get("HetJobOffset"):
            jid = f"{rec['HetJobId']}+{rec['HetJobOffset']}"  # as sacct names it
        limit = _limit(rec.get("TimeLimit", ""), where, "TimeLimit", rows.counts)
        nodes = _count(rec["NodeCnt"], where, "NodeCnt")
        start = slurm_time(rec["StartTime"], where, "StartTime", tz)
        if nodes == 0:
            start = None  # it never ran (StartTime is its end)
        user = rec.get("UserId", "").split("(")[0]
        rows.add(jid, slurm_time(rec["SubmitTime"], where, "SubmitTime", tz), start,
                 slurm_time(rec["EndTime"], where, "EndTime", tz), None, limit, nodes,
                 rec["JobState"], rec.get("Partition", ""), user,
                 _count(rec["ProcCnt"], where, "ProcCnt") if sizes == "cores" else None,
                 rec.get("Account", ""))
    cols, notes = rows.finish(header)
    return cols, (), notes
