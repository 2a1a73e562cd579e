"""A site's history both ways: the same jobs under an hpcopt policy and under Slurm alone
(``--policy slurm`` configured from the site's ``slurm.conf``), and the difference per
metric, per account (where the trace names accounts, as sacct's ``Account`` does) and per
user (``hpcopt simulate ... --against-slurm slurm.conf``)."""

from __future__ import annotations

import math
from numbers import Real

SLURM_OPTIONS = ("slurm_conf", "scheduler_parameters", "launch_latency", "slurm_partition",
                 "slurm_version", "clock_origin")
"""The options of ``--policy slurm``: on the command line they go to the Slurm side."""


def metric_differences(ours: dict, slurm: dict) -> list[dict]:
    """One row per numeric summary metric both runs have: Slurm's value, the policy's, the
    difference (policy - Slurm) and that difference in percent of Slurm's."""
    rows = []
    for key, value in ours.items():
        other = slurm.get(key)
        if not _number(value) or not _number(other):
            continue
        diff = value - other
        rows.append(dict(metric=key, slurm=other, policy=value, difference=diff,
                         percent=100.0 * diff / other if other else math.nan))
    return rows


def owner_differences(ours, slurm, owners: dict, label: str = "user") -> list[dict]:
    """Per owner of jobs (``owners``: job id -> its user code or account name; a job
    missing there counts under ``-1``, one without an account under ``-``), the jobs, mean
    wait and mean bounded slowdown under Slurm and under the policy (``ours``, ``slurm``:
    the runs' job tables), and the difference of the mean wait (policy - Slurm); each row
    names its owner under ``label``."""
    frame = ours.set_index("job_id")[["wait", "bounded_slowdown"]].copy()
    b = slurm.set_index("job_id").reindex(frame.index)
    frame["wait_slurm"] = b["wait"]
    frame["bounded_slowdown_slurm"] = b["bounded_slowdown"]
    frame["owner"] = [str(owners.get(jid, -1)) or "-" for jid in frame.index]
    rows = []
    for owner, group in frame.groupby("owner", sort=False):
        wait, wait_slurm = float(group["wait"].mean()), float(group["wait_slurm"].mean())
        rows.append({label: owner, "jobs": len(group), "wait_slurm": wait_slurm,
                     "wait_policy": wait, "wait_difference": wait - wait_slurm,
                     "bsld_slurm": float(group["bounded_slowdown_slurm"].mean()),
                     "bsld_policy": float(group["bounded_slowdown"].mean())})
    return sorted(rows, key=lambda r: _owner_key(r[label]))


def format_differences(metrics: list[dict], owners: dict[str, list[dict]], policy: str
                       ) -> str:
    """The tables as text: per metric, then per owner of each kind (``owners``: label ->
    ``owner_differences`` rows, e.g. ``account`` and ``user``)."""
    lines = [f"{'metric':<24}{'slurm':>14}{policy:>14}{'difference':>14}{'%':>9}"]
    for r in metrics:
        pct = "-" if math.isnan(r["percent"]) else f"{r['percent']:+.1f}"
        lines.append(f"{r['metric']:<24}{r['slurm']:>14.6g}{r['policy']:>14.6g}"
                     f"{r['difference']:>+14.6g}{pct:>9}")
    for label, rows in owners.items():
        width = max([len(label), *(len(str(r[label])) for r in rows)]) + 2
        lines.append("")
        lines.append(f"{label:>{width}}{'jobs':>7}{'wait slurm':>14}{'wait ' + policy:>18}"
                     f"{'difference':>14}{'bsld slurm':>12}{'bsld ' + policy:>16}")
        for r in rows:
            lines.append(f"{r[label]:>{width}}{r['jobs']:>7}{r['wait_slurm']:>14.1f}"
                         f"{r['wait_policy']:>18.1f}{r['wait_difference']:>+14.1f}"
                         f"{r['bsld_slurm']:>12.2f}{r['bsld_policy']:>16.2f}")
    return "\n".join(lines)


def _owner_key(owner: str) -> tuple:
    """Numbers in numeric order (user codes, ``-1`` first), then names."""
    try:
        return (0, float(owner), "")
    except ValueError:
        return (1, 0.0, owner)


def _number(v) -> bool:
    return isinstance(v, Real) and not isinstance(v, bool) and math.isfinite(v)
