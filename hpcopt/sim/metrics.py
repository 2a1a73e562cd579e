"""Per-job table and summary metrics of a finished simulation.

Definitions (seconds): wait = start - submit; response = end - submit; slowdown =
response / max(runtime, 1); bounded slowdown = max(1, response / max(runtime, 10));
utilization = used node-seconds / (system nodes x (last end - first submit)); makespan =
last end - first submit.  Multi-resource runs (BBSched) add, over the same span:
burst-buffer usage = used BB GB-seconds / (system BB x span); SSD usage = requested SSD
GB-seconds (ssd per node x nodes x runtime) / (total SSD x span); wasted SSD = (assigned minus
requested SSD) GB-seconds / (total SSD x span), where a job's assigned SSD is the size of the
class of every node it got.  Runs on a topology add the average communication-hop cost per job
(``avg_comm_cost``, from the ``comm_cost`` column).  Trimming drops the first ``warmup`` and
last ``cooldown`` jobs by submission order (a count, or a fraction of the jobs when below 1)
before computing the summary, to remove the warm-up and cool-down periods.
"""

from __future__ import annotations

import csv
import math
from operator import attrgetter

import numpy as np

from hpcopt.errors import SimulationError

BSLD_THRESHOLD = 10.0
CORE_COLUMNS = ("job_id", "submit", "start", "end", "nodes", "walltime", "runtime", "wait",
                "response", "slowdown", "bounded_slowdown", "mode")

#: columns after the core ones that ``write_job_csv`` renders itself: the codes of who
#: submitted each job and where (integers), the partition (numbers, or Slurm's names) and
#: the account (Slurm's names)
WHO_COLUMNS = ("user", "group", "queue", "partition", "account")

_by_submit_id = attrgetter("job.submit", "job.id")


def job_columns(records, extra_columns: dict | None = None) -> dict:
    """The per-job table as plain columns (numpy arrays and lists), sorted by
    (submit, job_id): what ``job_table`` puts in a DataFrame, without importing pandas."""
    recs = list(records)
    n = len(recs)
    jobs = list(map(attrgetter("job"), recs))

    def floats(values):
        return np.fromiter(values, dtype=float, count=n)

    submit = floats(map(attrgetter("submit"), jobs))
    ids = list(map(attrgetter("id"), jobs))
    # a finished Simulator's records are in (submit, id) order unless jobs were injected
    in_order = n < 2 or _ascending(submit, ids)
    if not in_order:
        recs = sorted(recs, key=_by_submit_id)
        jobs = list(map(attrgetter("job"), recs))
        submit = floats(map(attrgetter("submit"), jobs))
        ids = list(map(attrgetter("id"), jobs))
    start = floats(map(attrgetter("start"), recs))
    end = floats(map(attrgetter("end"), recs))
    runtime = floats(map(attrgetter("runtime"), jobs))
    wait = start - submit
    response = end - submit
    cols = {
        "job_id": ids,
        "submit": submit,
        "start": start,
        "end": end,
        "nodes": np.fromiter(map(attrgetter("nodes"), jobs), dtype=np.int64, count=n),
        "walltime": floats(map(attrgetter("walltime"), jobs)),
        "runtime": runtime,
        "wait": wait,
        "response": response,
        "slowdown": response / np.maximum(runtime, 1.0),
        "bounded_slowdown": np.maximum(1.0, response / np.maximum(runtime, BSLD_THRESHOLD)),
        "mode": list(map(attrgetter("mode"), recs)),
    }
    for name, getter in (extra_columns or {}).items():
        cols[name] = [getter(r) for r in recs]
    return cols


def _all_of_type(values, kind: type) -> bool:
    """Whether every value is exactly of type ``kind`` (one C-level pass)."""
    return set(map(type, values)) <= {kind}


def _ascending(submit: np.ndarray, ids: list) -> bool:
    """Whether (submit, id) strictly increases along the rows (integer ids only)."""
    if not _all_of_type(ids, int):
        return False
    try:
        key = np.array(ids, dtype=np.int64)
    except OverflowError:
        return False
    later = submit[1:] > submit[:-1]
    tie = submit[1:] == submit[:-1]
    return bool(np.all(later | (tie & (key[1:] > key[:-1]))))


def job_table(records, extra_columns: dict | None = None):
    """pandas DataFrame, one row per job, sorted by (submit, job_id)."""
    import pandas as pd  # heavy: loaded only when a DataFrame is asked for

    return pd.DataFrame(job_columns(records, extra_columns))


def write_job_csv(columns: dict, path) -> bool:
    """Write ``job_columns`` output as CSV, byte for byte what pandas' ``to_csv(index=False)``
    writes for the same table, without pandas.  Returns False (nothing written) for tables
    it does not know how to render exactly (further resource columns, ids that are not all
    integers); the caller then uses pandas."""
    names = tuple(columns)
    extras = names[len(CORE_COLUMNS):]
    if names[:len(CORE_COLUMNS)] != CORE_COLUMNS or not set(extras) <= set(WHO_COLUMNS):
        return False
    ids, modes = columns["job_id"], columns["mode"]
    if not _all_of_type(ids, int) or not _all_of_type(modes, str):
        return False
    text = [e for e in extras if not _all_of_type(columns[e], int)]
    if not all(_all_of_type(columns[e], str) for e in text):
        return False
    out = [list(map(str, ids))]
    for name in CORE_COLUMNS[1:-1]:
        col = columns[name]
        if name == "nodes":
            out.append(list(map(str, col.tolist())))
        else:
            out.append(_float_text(col))
    out.append(modes)
    out.extend(list(columns[e]) if e in text else list(map(str, columns[e])) for e in extras)
    if set(modes) <= _PLAIN_MODES and not text:
        with open(path, "w", newline="") as fh:  # nothing to quote: plain joins, as csv
            fh.write(",".join(names) + "\n")
            if modes:
                fh.write("\n".join(map(",".join, zip(*out))) + "\n")
        return True
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(names)
        writer.writerows(zip(*out))
    return True


_PLAIN_MODES = {"ready", "reserved", "backfilled", ""}


def _float_text(col: np.ndarray) -> list[str]:
    """float64 values as pandas writes them: numpy's shortest repr (Python's ``repr``), NaN
    as an empty field.  Whole numbers below 1e16 (no -0.0) are written from their integers,
    which is the same text, faster."""
    finite = np.isfinite(col)
    if finite.all() and (np.abs(col) < 1e16).all():
        whole = col.astype(np.int64)
        if (whole == col).all() and not (np.signbit(col) & (col == 0)).any():
            return [f"{i}.0" for i in whole.tolist()]
    text = list(map(repr, col.tolist()))
    if np.isnan(col).any():
        text = ["" if t == "nan" else t for t in text]
    return text


#: the unit of each summary metric (``summary.json``'s ``units`` block, the console table's
#: row labels): seconds of the trace's clock, counts, or a ratio (a fraction of the machine)
UNITS = {
    "job_count": "jobs", "avg_wait": "s", "max_wait": "s", "avg_response": "s",
    "avg_slowdown": "ratio", "avg_bounded_slowdown": "ratio",
    "utilization": "fraction", "makespan": "s", "node_seconds": "node-s",
    "first_submit": "s", "last_end": "s", "trimmed_warmup": "jobs", "trimmed_cooldown": "jobs",
    "bb_usage": "fraction", "ssd_usage": "fraction", "wasted_ssd": "fraction",
    "avg_comm_cost": "hops",
    # an OSDEC day (hpcopt.osdec): every core-slot a job runs earns 1
    "total_reward": "core-slots", "revenue": "core-slots", "delay_penalty": "core-slots",
    "violation_penalty": "core-slots", "started": "jobs", "dropped": "jobs", "jobs": "jobs",
    "slots": "slots", "gap_to_offline": "fraction",
}


def units_of(summary: dict) -> dict:
    """The units of the metrics in ``summary`` that have one (``UNITS``)."""
    return {k: UNITS[k] for k in summary if k in UNITS}


def format_summary(summaries: dict[str, dict], keys, units: dict | None = None) -> str:
    """The console table of summary metrics: one row per key (``key (unit)`` with
    ``units``), one column per run, numbers >= 1000 with thousands separators, others with 4
    significant digits (the layout of pandas' ``DataFrame.to_string``)."""
    def fmt(v) -> str:
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"

    names = list(summaries)
    cells = {name: [fmt(summaries[name][k]) for k in keys] for name in names}
    if units:
        keys = [f"{k} ({units[k]})" if units.get(k) else k for k in keys]
    kw = max(len(k) for k in keys)
    widths = [max([len(str(name))] + [1 + len(c) for c in cells[name]]) for name in names]
    lines = [" " * kw + "".join(" " + str(name).rjust(w) for name, w in zip(names, widths))]
    for i, k in enumerate(keys):
        lines.append(k.ljust(kw) + "".join(" " + cells[name][i].rjust(w)
                                           for name, w in zip(names, widths)))
    return "\n".join(lines)


TIMELINE_COLUMNS = ("time_s", "queued_jobs", "running_jobs", "busy_nodes", "utilization")


def timeline(jobs, system_nodes: int) -> dict:
    """The machine's state over time from a job table (``job_columns`` or its DataFrame):
    at each time a job is submitted, starts or ends (seconds, after every event at that
    time), the jobs waiting in the queue, the jobs running, the nodes they hold and the
    utilization (busy nodes / ``system_nodes``).  Jobs that never started are left out."""
    def col(name):
        c = jobs[name]
        return np.asarray(c.to_numpy() if hasattr(c, "to_numpy") else c, dtype=float)

    submit, start, end, nodes = col("submit"), col("start"), col("end"), col("nodes")
    ran = ~np.isnan(start) & ~np.isnan(end)
    submit, start, end, nodes = submit[ran], start[ran], end[ran], nodes[ran]
    times = np.unique(np.concatenate([submit, start, end]))
    by_start, by_end = np.argsort(start, kind="stable"), np.argsort(end, kind="stable")
    submitted = np.searchsorted(np.sort(submit), times, side="right")
    started = np.searchsorted(start[by_start], times, side="right")
    ended = np.searchsorted(end[by_end], times, side="right")
    held = np.concatenate([[0.0], np.cumsum(nodes[by_start])])[started] - \
        np.concatenate([[0.0], np.cumsum(nodes[by_end])])[ended]
    return {"time_s": times, "queued_jobs": submitted - started,
            "running_jobs": started - ended, "busy_nodes": held,
            "utilization": held / system_nodes}


def write_timeline_csv(line: dict, path) -> None:
    """``timeline`` output as CSV, one row per time."""
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(TIMELINE_COLUMNS)
        writer.writerows(zip(line["time_s"].tolist(), line["queued_jobs"].tolist(),
                             line["running_jobs"].tolist(),
                             line["busy_nodes"].astype(np.int64).tolist(),
                             [round(u, 6) for u in line["utilization"].tolist()]))


def _trim_count(n_jobs: int, amount: float) -> int:
    if not 0 <= amount < float("inf"):  # NaN and infinity too
        raise SimulationError(f"warm-up/cool-down must be a number >= 0, got {amount}")
    return int(round(amount * n_jobs)) if amount < 1 else int(amount)


def summarize(jobs, system_nodes: int, *, warmup: float = 0, cooldown: float = 0,
              bb_capacity: float = 0.0, ssd_capacity: float = 0.0) -> dict:
    """Summary metrics (snake_case keys) of a job table, after trimming.

    ``jobs`` is a DataFrame (``job_table``) or its columns (``job_columns``); numpy does the
    arithmetic either way, so both give the same numbers (pandas' reductions are numpy's).
    ``bb_capacity`` (GB) and ``ssd_capacity`` (GB over all nodes) add the burst-buffer and SSD
    metrics when positive (the table then needs ``bb``, resp. ``ssd`` and ``ssd_assigned``
    columns; missing ones count as zero use)."""
    n = len(jobs) if hasattr(jobs, "iloc") else len(jobs["submit"])
    lo, hi = _trim_count(n, warmup), n - _trim_count(n, cooldown)
    if lo >= hi:
        raise SimulationError(
            f"trimming {lo} warm-up and {n - hi} cool-down jobs leaves none of {n}")

    def kept(name):
        col = jobs[name]
        return (col.to_numpy() if hasattr(col, "to_numpy") else np.asarray(col))[lo:hi]

    runtime, nodes = kept("runtime"), kept("nodes")
    first, last = float(_nanmin(kept("submit"))), float(_nanmax(kept("end")))
    span = last - first
    node_seconds = float(_nansum(nodes * runtime))
    extra = {}
    if bb_capacity > 0:
        bb = kept("bb") if "bb" in jobs else 0.0
        extra["bb_usage"] = float(_nansum(bb * runtime)) / (bb_capacity * span) \
            if span > 0 else 0.0
    if ssd_capacity > 0:
        req = kept("ssd") * nodes if "ssd" in jobs else 0.0 * nodes
        got = kept("ssd_assigned") if "ssd_assigned" in jobs else req
        denom = ssd_capacity * span if span > 0 else math.inf
        extra["ssd_usage"] = float(_nansum(req * runtime)) / denom
        extra["wasted_ssd"] = float(_nansum((got - req) * runtime)) / denom
    if "comm_cost" in jobs:
        extra["avg_comm_cost"] = float(_nanmean(kept("comm_cost")))
    wait = kept("wait")
    return {
        "job_count": int(hi - lo),
        "avg_wait": float(_nanmean(wait)),
        "max_wait": float(_nanmax(wait)),
        "avg_response": float(_nanmean(kept("response"))),
        "avg_slowdown": float(_nanmean(kept("slowdown"))),
        "avg_bounded_slowdown": float(_nanmean(kept("bounded_slowdown"))),
        "utilization": node_seconds / (system_nodes * span) if span > 0 else 0.0,
        "makespan": span,
        "node_seconds": node_seconds,
        "first_submit": first,
        "last_end": last,
        "trimmed_warmup": lo,
        "trimmed_cooldown": n - hi,
        **extra,
    }


# pandas' skip-NaN reductions (Series.mean/sum/min/max), which sum with numpy the same way
def _nan_mask(a):
    return np.isnan(a) if a.dtype.kind == "f" else None


def _nansum(a):
    mask = _nan_mask(a)
    if mask is not None and mask.any():
        a = np.where(mask, 0.0, a)
    return a.sum(dtype=np.float64 if a.dtype.kind in "iub" else a.dtype)


def _nanmean(a):
    if a.dtype.kind == "O":
        a = a.astype(np.float64)
    mask = _nan_mask(a)
    count = a.size
    if mask is not None and mask.any():
        count = a.size - int(mask.sum())
        a = np.where(mask, 0.0, a)
        if count == 0:
            return math.nan
    return a.sum(dtype=np.float64 if a.dtype.kind in "iub" else a.dtype) / np.float64(count)


def _nanmax(a):
    mask = _nan_mask(a)
    if mask is not None and mask.any():
        return np.nanmax(a) if not mask.all() else math.nan
    return a.max()


def _nanmin(a):
    mask = _nan_mask(a)
    if mask is not None and mask.any():
        return np.nanmin(a) if not mask.all() else math.nan
    return a.min()
