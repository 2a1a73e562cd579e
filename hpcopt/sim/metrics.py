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

import math

import numpy as np

from hpcopt.errors import SimulationError

BSLD_THRESHOLD = 10.0


def job_table(records, extra_columns: dict | None = None):
    """pandas DataFrame, one row per job, sorted by (submit, job_id)."""
    import pandas as pd

    recs = sorted(records, key=lambda r: (r.job.submit, r.job.id))
    submit = np.array([r.job.submit for r in recs], dtype=float)
    start = np.array([r.start for r in recs], dtype=float)
    end = np.array([r.end for r in recs], dtype=float)
    runtime = np.array([r.job.runtime for r in recs], dtype=float)
    wait = start - submit
    response = end - submit
    cols = {
        "job_id": [r.job.id for r in recs],
        "submit": submit,
        "start": start,
        "end": end,
        "nodes": np.array([r.job.nodes for r in recs], dtype=np.int64),
        "walltime": np.array([r.job.walltime for r in recs], dtype=float),
        "runtime": runtime,
        "wait": wait,
        "response": response,
        "slowdown": response / np.maximum(runtime, 1.0),
        "bounded_slowdown": np.maximum(1.0, response / np.maximum(runtime, BSLD_THRESHOLD)),
        "mode": [r.mode for r in recs],
    }
    for name, getter in (extra_columns or {}).items():
        cols[name] = [getter(r) for r in recs]
    return pd.DataFrame(cols)


def _trim_count(n_jobs: int, amount: float) -> int:
    if amount < 0:
        raise SimulationError(f"warm-up/cool-down must be >= 0, got {amount}")
    return int(round(amount * n_jobs)) if amount < 1 else int(amount)


def summarize(jobs, system_nodes: int, *, warmup: float = 0, cooldown: float = 0,
              bb_capacity: float = 0.0, ssd_capacity: float = 0.0) -> dict:
    """Summary metrics (snake_case keys) of a job table, after trimming.

    ``bb_capacity`` (GB) and ``ssd_capacity`` (GB over all nodes) add the burst-buffer and SSD
    metrics when positive (the table then needs ``bb``, resp. ``ssd`` and ``ssd_assigned``
    columns; missing ones count as zero use)."""
    n = len(jobs)
    lo, hi = _trim_count(n, warmup), n - _trim_count(n, cooldown)
    if lo >= hi:
        raise SimulationError(
            f"trimming {lo} warm-up and {n - hi} cool-down jobs leaves none of {n}")
    kept = jobs.iloc[lo:hi]
    first, last = float(kept["submit"].min()), float(kept["end"].max())
    span = last - first
    node_seconds = float((kept["nodes"] * kept["runtime"]).sum())
    extra = {}
    if bb_capacity > 0:
        bb = kept["bb"] if "bb" in kept else 0.0
        extra["bb_usage"] = float((bb * kept["runtime"]).sum()) / (bb_capacity * span) \
            if span > 0 else 0.0
    if ssd_capacity > 0:
        req = kept["ssd"] * kept["nodes"] if "ssd" in kept else 0.0 * kept["nodes"]
        got = kept["ssd_assigned"] if "ssd_assigned" in kept else req
        denom = ssd_capacity * span if span > 0 else math.inf
        extra["ssd_usage"] = float((req * kept["runtime"]).sum()) / denom
        extra["wasted_ssd"] = float(((got - req) * kept["runtime"]).sum()) / denom
    if "comm_cost" in kept:
        extra["avg_comm_cost"] = float(kept["comm_cost"].mean())
    return {
        "job_count": int(len(kept)),
        "avg_wait": float(kept["wait"].mean()),
        "max_wait": float(kept["wait"].max()),
        "avg_response": float(kept["response"].mean()),
        "avg_slowdown": float(kept["slowdown"].mean()),
        "avg_bounded_slowdown": float(kept["bounded_slowdown"].mean()),
        "utilization": node_seconds / (system_nodes * span) if span > 0 else 0.0,
        "makespan": span,
        "node_seconds": node_seconds,
        "first_submit": first,
        "last_end": last,
        "trimmed_warmup": lo,
        "trimmed_cooldown": n - hi,
        **extra,
    }
