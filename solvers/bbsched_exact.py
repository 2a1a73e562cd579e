"""The exact Pareto set of a BBSched model (backend ``pareto-exact``).

A dynamic program over the window jobs keeps the set of *states* reachable by the jobs seen
so far: a state is a selection summarized by what its objectives and constraints depend on —
nodes per SSD demand level (their sum is f1, Hall's condition reads them, and so does the
least-waste SSD assignment), burst buffer (f2) and, for four objectives, requested SSD (f3;
f4 = f3 minus the assigned SSD, a function of the levels) — plus the bitmask of its jobs.
Adding a job to every state and keeping the feasible results enumerates every feasible
selection, up to these exact reductions:

1. identical states are kept once (same objectives and the same future);
2. *slack dominance*: among states with the same node levels, if state A has at least B's
   burst buffer (and SSD) and A's burst buffer plus all the burst buffer still to come fits
   the free amount, every completion open to B is open to A and ends no worse, so B goes.
   Jobs with burst buffer are processed first; after them nothing is to come, so each
   node-level group keeps only its non-dominated burst-buffer/SSD states.

Every state is itself a feasible selection (all jobs are optional), so the final states
contain a selection for every point of the front; pymoo's non-dominated sorting picks it out.
The worst case stays exponential in the number of burst-buffer jobs (the problem is NP-hard),
but windows of real traces keep few states: see ``benchmarks/bbsched_solvers.py``.  Windows
of up to 62 jobs (bitmasks are int64).  A time limit returns the front of the states so far
(FEASIBLE), never a claim of optimality.
"""

from __future__ import annotations

import time

import numpy as np

from hpcopt.errors import ModelError
from hpcopt.result import Limit, Status

from .bbsched_ga import front_points
from .registry import Outcome, SolveOptions, Solver, register

MAX_JOBS = 62


def _dominated_in_group(keys: np.ndarray, b: np.ndarray, s: np.ndarray,
                        slack: np.ndarray) -> np.ndarray:
    """States dominated by a slack state of the same group (``keys`` rows) with b' >= b and
    s' >= s, not identical (identical states were removed before)."""
    _, group = np.unique(keys, axis=0, return_inverse=True)
    group = group.ravel()
    # order: group, then b descending, then s descending; slack states carry their s forward
    order = np.lexsort((-s, -b, group))
    g, so, sl = group[order], s[order], slack[order]
    carried = np.where(sl, so, -np.inf)
    span = float(np.abs(s).max(initial=0.0)) + 1.0
    shifted = carried + g * (3 * span)  # running max restarts per group: groups ascend
    shifted[~sl] = -np.inf
    best = np.maximum.accumulate(np.where(sl, shifted, -np.inf))
    prev = np.concatenate([[-np.inf], best[:-1]])
    prev_s = prev - g * (3 * span)
    new_group = np.concatenate([[True], g[1:] != g[:-1]])
    prev_s[new_group] = -np.inf
    dominated = np.zeros(len(b), dtype=bool)
    # an earlier slack state in the group has b' >= b; dominated when also s' >= s
    dominated[order] = prev_s >= so - 1e-9
    return dominated


@register("pareto-exact")
class ParetoExact(Solver):
    """Exact Pareto set of bbsched models: state DP with exact dominance pruning."""

    doc = "exact Pareto front (DP over node levels and burst buffer); bbsched models"
    SUPPORTED_MODELS = ("bbsched",)
    REQUIRED_MODULES = ("pymoo",)
    EXACT = True

    def version(self) -> str:
        return ""

    def _solve(self, model, opts: SolveOptions) -> Outcome:
        n = model.n_items
        if n > MAX_JOBS:
            raise ModelError(f"pareto-exact: windows of at most {MAX_JOBS} jobs, got {n}; use "
                             "bbsched-ga or nsga2")
        deadline = None if opts.time_limit is None else time.perf_counter() + opts.time_limit
        four = model.objectives == 4
        demand = model._demand  # (n, levels): nodes each job puts on each demand level
        suffix_free = model._suffix_free
        lone = model.feasible_many(np.eye(n, dtype=bool))
        jobs = [i for i in np.lexsort((np.arange(n), model.bb == 0)) if lone[i]]
        bb_after = np.append(np.cumsum(model.bb[jobs][::-1])[::-1], 0.0)[1:]
        K = demand.shape[1]
        L = np.zeros((1, K))
        b = np.zeros(1)
        s = np.zeros(1)
        mask = np.zeros(1, dtype=np.int64)
        tol = 1e-9 * max(1.0, model.free_bb)
        limit = None
        peak = 1
        for step, i in enumerate(jobs):
            if deadline is not None and time.perf_counter() > deadline:
                limit = Limit.TIME
                break
            L2 = L + demand[i]
            b2 = b + model.bb[i]
            ok = (b2 <= model.free_bb + tol) & (
                (np.cumsum(L2[:, ::-1], axis=1)[:, ::-1] <= suffix_free + 1e-9).all(axis=1))
            L = np.concatenate([L, L2[ok]])
            b = np.concatenate([b, b2[ok]])
            s = np.concatenate([s, s[ok] + model.ssd[i] * model.nodes[i]]) if four else \
                np.zeros(len(b))
            mask = np.concatenate([mask, mask[ok] | (np.int64(1) << np.int64(i))])
            keys = np.column_stack([L, b, s])
            _, first = np.unique(keys, axis=0, return_index=True)
            if len(first) < len(b):
                first.sort()
                L, b, s, mask = L[first], b[first], s[first], mask[first]
            slack = b + bb_after[step] <= model.free_bb + tol
            if slack.any():
                keep = ~_dominated_in_group(L, b, s, slack)
                L, b, s, mask = L[keep], b[keep], s[keep], mask[keep]
            peak = max(peak, len(b))
        X = ((mask[:, None] >> np.arange(n, dtype=np.int64)) & 1).astype(bool)
        F, _ = model.evaluate_many(X)
        from .bbsched_ga import pareto_rows

        keep = pareto_rows(F, np.arange(len(F)))
        status = Status.OPTIMAL if limit is None else Status.FEASIBLE
        return Outcome(status, pareto=front_points(model, X[keep], F[keep]), limit=limit,
                       extra={"states_peak": int(peak), "jobs_used": len(jobs)})
