"""Background periods chosen by a stated rule: how long a probe job would wait.

Which days of a trace a workflow experiment runs on decides what it can show: on a day
when a stage-sized job starts at once no strategy can differ, and on a day when it waits
a week every strategy is that week.  ``probe_wait`` measures the queue wait of one probe job
(a stage's size, an exact walltime) submitted at a time ``t`` into the real background,
replayed by the one driver loop from ``warmup`` seconds before (as the workflow runner
replays it) until the probe starts; ``choose_periods`` keeps the candidate times whose
probe waits between ``low`` and ``high`` seconds (for example a few minutes and a few
hours), at least ``gap`` apart.
"""

from __future__ import annotations

import math
from bisect import bisect_left

from hpcopt.domain import Job, System
from hpcopt.sim.driver import Simulator
from hpcopt.sim.settings import DriverOptions

from .reader import WorkflowError


def probe_wait(jobs, system: System, at: float, nodes: int, runtime: float, *,
               warmup: float = 2 * 86400.0, policy="fcfs", submits=None) -> float:
    """Seconds a probe of ``nodes`` nodes and ``runtime`` s (exact walltime) submitted at
    ``at`` waits in ``jobs`` (sorted by submit time; ``submits`` their submit times, to
    share between calls) replayed from ``at - warmup`` under ``policy``."""
    from hpcopt.policies import build_policy

    if not 1 <= nodes <= system.nodes:
        raise WorkflowError(f"probe: {nodes} nodes on a machine of {system.nodes}")
    submits = [j.submit for j in jobs] if submits is None else submits
    lo = bisect_left(submits, at - warmup)
    ids = [j.id for j in jobs]
    pid = (max(ids) + 1 if ids else 0) if all(isinstance(i, int) for i in ids) else "probe"
    probe = Job(id=pid, submit=float(at), runtime=float(runtime), walltime=float(runtime),
                nodes=int(nodes))
    hi = lo
    sim = None
    span = 2 * 86400.0
    while True:  # replay a growing slice until the probe starts inside it
        hi = bisect_left(submits, at + span)
        sim = Simulator(list(jobs[lo:hi]), system, build_policy(policy) if
                        isinstance(policy, str) else policy, DriverOptions())
        sim.submit(probe)
        rec = sim.records[pid]
        sim.run_until(lambda _, rec=rec: not math.isnan(rec.start))
        if rec.start <= at + span or hi >= len(jobs):
            return rec.start - at
        span *= 4


def choose_periods(jobs, system: System, candidates, nodes: int, runtime: float, *,
                   low: float = 300.0, high: float = 5 * 3600.0, gap: float = 2 * 86400.0,
                   count: int | None = None, warmup: float = 2 * 86400.0, policy="fcfs"
                   ) -> list[tuple[float, float]]:
    """``(time, probe wait)`` of the candidate times (in order) whose probe waits within
    [low, high], each at least ``gap`` after the previous one kept; at most ``count``."""
    jobs = sorted(jobs, key=lambda j: (j.submit, j.id))
    submits = [j.submit for j in jobs]
    out: list[tuple[float, float]] = []
    for t in candidates:
        if out and t < out[-1][0] + gap:
            continue
        w = probe_wait(jobs, system, t, nodes, runtime, warmup=warmup, policy=policy,
                       submits=submits)
        if low <= w <= high:
            out.append((float(t), w))
            if count is not None and len(out) >= count:
                break
    return out
