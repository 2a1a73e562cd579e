"""The knapsack window policy (DRAS's "Optimization" baseline).

Among the first W queued jobs, start the subset that maximizes the chosen value subject to
the free nodes, solved by any knapsack backend.  With backfilling on, the oldest window job
that did not start gets the EASY reservation and the rest of the queue is backfilled.

Values per job i (all non-negative):
- ``nodes``: n_i (maximize node use now);
- ``wait``: wait_i + 1 s (serve long-waiting jobs; the +1 keeps fresh jobs worth starting);
- ``capability``: DRAS Eq. (1) split per job, w1 * wait_i / t_max + (w2 + w3) * n_i / N with
  w1 = w2 = w3 = 1/3, t_max the largest wait in the window (the paper's averages are replaced by
  sums so the objective stays linear).
"""

from __future__ import annotations

from hpcopt.domain import Decision, Window
from hpcopt.errors import PolicyOptionError

from .base import Option, Policy, register_policy, window_solver
from .classic import greedy_fill

VALUES = ("nodes", "wait", "capability")


@register_policy("knapsack", window=20)
class KnapsackPolicy(Policy):
    """Start the window subset of maximum value that fits the free nodes (knapsack backend)."""

    OPTIONS = (
        Option("backend", str, "solver backend of the window model (see 'hpcopt backends')"),
        Option("value", str, "knapsack value of a job", choices=VALUES),
        Option("time_limit", float, "seconds per window solve"),
    )

    def __init__(self, window: int | None = 20, order: str | None = None, backend: str = "dp",
                 value: str = "nodes", time_limit: float | None = None,
                 seed: int | None = None) -> None:
        if value not in VALUES:
            raise PolicyOptionError(f"knapsack value must be one of {VALUES}, got {value!r}")
        self.window = window
        self.order = order
        self.backend = backend
        self.value = value
        self.time_limit = time_limit
        self.seed = seed
        self._solver = window_solver(backend, "knapsack", time_limit)  # fail early

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.seed = seed

    def values(self, window: Window, jobs) -> list[float]:
        """The value of starting each of ``jobs`` at the window's time."""
        if self.value == "nodes":
            return [float(j.nodes) for j in jobs]
        waits = [window.wait(j) for j in jobs]
        if self.value == "wait":
            return [w + 1.0 for w in waits]
        t_max = max(max(waits), 1.0)
        n_sys = window.system.nodes
        return [w / t_max / 3 + 2 * j.nodes / n_sys / 3 for w, j in zip(waits, jobs)]

    def _select(self, window: Window, candidates, free: int) -> tuple:
        """Ids of the best subset of ``candidates`` for the free nodes (and burst buffer)."""
        weights = [[j.nodes for j in candidates]]
        caps = [free]
        if any(j.bb for j in candidates):
            weights.append([j.bb for j in candidates])
            caps.append(window.resources.free_dict()["bb"])
        if all(sum(row) <= cap for row, cap in zip(weights, caps)):
            return tuple(j.id for j in candidates)  # everything fits: optimal trivially
        from hpcopt.models.knapsack import KnapsackModel

        model = KnapsackModel(values=self.values(window, candidates), weights=weights,
                              capacities=caps,
                              ids=[j.id for j in candidates])
        result = self._solver.solve(model, time_limit=self.time_limit, seed=self.seed)
        return tuple(result.selected_ids or ())

    def decide(self, window: Window) -> Decision:
        pool = window.resources
        candidates = [j for j in window.jobs if pool.fits(j)]
        chosen: tuple = ()
        if candidates:
            picked = set(self._select(window, candidates, pool.free_nodes))
            # the model counts nodes and burst buffer; SSD classes are checked on the window's
            # resources, which drop a picked job that no longer fits
            chosen = greedy_fill(window, [j for j in candidates if j.id in picked])
        started = set(chosen)
        waiting = [j for j in window.jobs if j.id not in started]
        reserve = min(waiting, key=lambda j: (j.submit, j.id)).id if waiting else None
        return Decision(chosen, reserve=reserve)
