"""Value-density greedy heuristic for the 0-1 knapsack (backend ``greedy``).

Items are taken in order of value per normalized weight while they fit; the answer is the
better of that fill and the best single item (which makes it a 1/2-approximation for one
resource).  It never proves optimality.
"""

from __future__ import annotations

import numpy as np

from hpcopt.errors import SolverOptionError
from hpcopt.result import Termination

from .registry import Outcome, SolveOptions, Solver, register, register_greedy

AGGREGATES = ("max", "sum")


@register("greedy")
class Greedy(Solver):
    """Greedy by value density; ``solver_options={"aggregate": "max" | "sum"}``.

    Supported models: ``knapsack``.  The density of item i is ``v_i / s_i`` with
    ``s_i = max_r a_ri / b_r`` (default) or ``sum_r a_ri / b_r``.  Native statuses:
    termination ``finished`` -- a heuristic answer is never optimal.
    Deterministic (ties keep item order); ``time_limit`` and ``seed`` have no effect.
    """

    doc = "greedy by value density (heuristic, never OPTIMAL)"
    SUPPORTED_MODELS = ("knapsack",)
    EXACT = False
    OPTIONS = ("aggregate",)

    def _solve(self, model, opts: SolveOptions) -> Outcome:
        aggregate = opts.solver_options.get("aggregate", "max")
        if aggregate not in AGGREGATES:
            raise SolverOptionError(
                f"greedy: aggregate must be one of {AGGREGATES}, got {aggregate!r}")
        red = model.reduced(backend=self.full_name)
        return Outcome(Termination.FINISHED, red.lift(greedy_fill(red, aggregate)))


@register_greedy("knapsack")
def knapsack_start(model, deadline, seed, limit=None):
    """The greedy start of knapsack models: what the ``greedy`` backend returns."""
    red = model.reduced()
    return red.lift(greedy_fill(red)), None


def greedy_fill(red, aggregate: str = "max") -> np.ndarray:
    """The greedy answer on a ``ReducedKnapsack``: a boolean vector over ``red.items``.

    Also the incumbent other knapsack backends return when a limit stops them early.
    """
    chosen = np.zeros(red.size, dtype=bool)
    if red.size:
        caps = np.asarray(red.capacities, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(caps[:, None] > 0, red.weights / caps[:, None], 0.0)
        size = share.max(axis=0) if aggregate == "max" else share.sum(axis=0)
        order = (-red.values / size).argsort(kind="stable").tolist()
        cols = red.weights.T.tolist()
        room = red.capacities.tolist()
        for i in order:  # plain Python: a window has tens of items
            if all(a <= r for a, r in zip(cols[i], room)):
                chosen[i] = True
                room = [r - a for a, r in zip(cols[i], room)]
        single = int(np.argmax(red.values))  # every reduced item fits alone
        if red.values[single] > red.values[chosen].sum():
            chosen[:] = False
            chosen[single] = True
    return chosen
