"""Multi-resource window policies of the BBSched paper (Fan et al., HPDC'19, sections 4.3, 5).

Each sees the first W queued jobs (W = 20 by default) of the base order (FCFS or WFP), picks
the jobs to start now over nodes, burst buffer and SSD classes, and leaves the rest to the
driver: the first window job that did not start gets the EASY reservation and the queue is
backfilled around it.  Jobs passed over ``starvation_bound`` times (50) are served first.

- ``weighted`` / ``weighted-cpu`` / ``weighted-bb``: maximize a weighted sum of utilizations
  (50/50, 80/20, 20/80 over nodes and burst buffer; on a system with SSD classes ``weighted``
  weighs node, burst-buffer and SSD utilization and minus the wasted SSD equally, section 5);
- ``constrained-cpu`` / ``constrained-bb`` / ``constrained-ssd``: maximize one resource
  subject to all constraints (ties broken by the most nodes, or for ``constrained-cpu`` the
  most burst buffer);
- ``alignment-first``: Grandl et al.'s alignment score — the dot product of the free resources and
  a job's demand, both as fractions of the system — highest first, recomputed after each start,
  until nothing else fits;
- ``bbsched``: the Pareto set of ``hpcopt.models.bbsched`` by any multi-objective backend
  (``pareto-exact`` by default, ``bbsched-ga``: seeded by default, the paper's GA with
  ``solver_options={"variant": "paper"}``, ``nsga2``) and a decision rule.

The weighted and constrained policies solve a ``KnapsackModel`` whose rows are the BBSched
constraints (nodes, one row per larger SSD class, burst buffer; ``BBSchedModel.constraint_rows``)
with the ``ortools`` backend by default.  Its integer data are: burst buffer in whole MB
(requests rounded up, the free amount down, so a selection never oversubscribes) and weighted
values as utilization x 10^6 rounded.  The four-resource weighted value charges each job its
waste on its smallest eligible class (exact unless the job spills into a larger class).
Selected jobs start in ``BBSchedModel.start_order`` so the driver assigns SSD classes with the
least waste.  The naive ``baseline`` (Slurm: in queue order until a resource runs out) is the
head-first policy in ``classic``.
"""

from __future__ import annotations

import math

import numpy as np

from hpcopt.domain import Decision, Window
from hpcopt.errors import PolicyOptionError

from .base import Option, Policy, register_policy, window_solver
from .classic import greedy_fill

WINDOW = 20
STARVATION = 50
MB = 1000.0  # burst buffer GB -> integer MB in the knapsack rows


def window_model(window: Window, jobs, objectives: int | str = "auto"):
    """The ``BBSchedModel`` of ``jobs`` on the window's free resources (system totals as the
    capacity that utilizations divide by)."""
    from hpcopt.models.bbsched import BBSchedModel

    system, pool = window.system, window.resources
    free = pool.free_dict()
    classes = None
    if system.ssd_classes:
        classes = {f"{size:g}": int(free.get(f"ssd_{size:g}", 0))
                   for size in sorted(float(s) for s in system.ssd_classes)}
    if objectives == "auto":
        objectives = 4 if len(system.ssd_classes) > 1 else 2
    ssd_total = sum(float(s) * c for s, c in system.ssd_classes.items())
    return BBSchedModel([j.nodes for j in jobs], [j.bb for j in jobs], [j.ssd for j in jobs],
                        free_nodes=pool.free_nodes, free_bb=float(free.get("bb", 0.0)),
                        ssd_classes=classes, objectives=objectives, ids=[j.id for j in jobs],
                        capacity={"nodes": system.nodes, "bb": system.bb, "ssd": ssd_total})


def start_selected(window: Window, model, x) -> tuple:
    """Start the selection ``x`` of ``model``'s jobs in least-waste order; ids started."""
    by_id = {j.id: j for j in window.jobs}
    return greedy_fill(window, [by_id[model.ids[i]] for i in model.start_order(x)])


def _fitting(window: Window) -> list:
    pool = window.resources
    return [j for j in window.jobs if pool.fits(j)]


class _MultiResource(Policy):
    """Shared defaults: window 20, starvation bound 50, the driver's reservation."""

    def __init__(self, window: int | None = WINDOW, order: str | None = None,
                 starvation_bound: int | None = STARVATION) -> None:
        self.window = window
        self.order = order
        self.starvation_bound = starvation_bound

    def select(self, window: Window, model) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def decide(self, window: Window) -> Decision:
        jobs = _fitting(window)
        if not jobs:
            return Decision()
        model = window_model(window, jobs)
        return Decision(start_selected(window, model, self.select(window, model)))


def int_or_auto(text: str) -> int | str:
    """``"auto"`` or an integer (the ``objectives`` option)."""
    return text if text == "auto" else int(text)


class _KnapsackBased(_MultiResource):
    """A single-objective selection solved as a multi-row knapsack."""

    OPTIONS = (
        Option("backend", str, "solver backend of the window model (see 'hpcopt backends')"),
        Option("time_limit", float, "seconds per window solve"),
    )

    def __init__(self, window: int | None = WINDOW, order: str | None = None,
                 starvation_bound: int | None = STARVATION, backend: str = "ortools",
                 time_limit: float | None = None) -> None:
        super().__init__(window, order, starvation_bound)
        self.backend = backend
        self.time_limit = time_limit
        self._solver = window_solver(backend, "knapsack", time_limit)  # fail early

    def values(self, model) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def select(self, window: Window, model) -> np.ndarray:
        from hpcopt.models.knapsack import KnapsackModel

        rows, caps, names = model.constraint_rows()
        rows[-1] = np.ceil(rows[-1] * MB - 1e-6)
        caps[-1] = math.floor(caps[-1] * MB + 1e-6)
        values = self.values(model)
        if (rows <= caps[:, None] + 1e-9).all() and (rows.sum(1) <= caps + 1e-9).all():
            return values > 0  # everything worth starting fits together
        knap = KnapsackModel(values, rows, caps, resources=names)
        result = self._solver.solve(knap, time_limit=self.time_limit)
        return np.asarray(result.require_solution(), dtype=bool)


@register_policy("weighted")
@register_policy("weighted-cpu", weights=(0.8, 0.2))
@register_policy("weighted-bb", weights=(0.2, 0.8))
class WeightedPolicy(_KnapsackBased):
    """Start the window subset of largest weighted utilization (BBSched's Weighted methods)."""

    OPTIONS = _KnapsackBased.OPTIONS + (
        Option("weights", "floats", "utilization weights: nodes,bb[,ssd,wasted ssd]"),)

    def __init__(self, window: int | None = WINDOW, order: str | None = None,
                 starvation_bound: int | None = STARVATION, backend: str = "ortools",
                 time_limit: float | None = None, weights=None) -> None:
        super().__init__(window, order, starvation_bound, backend, time_limit)
        if weights is not None and (len(weights) not in (2, 4) or min(weights) < 0):
            raise PolicyOptionError(f"weights: expected 2 or 4 non-negative numbers (nodes, bb"
                                    f"[, ssd, wasted ssd]), got {weights!r}")
        self.weights = None if weights is None else tuple(float(w) for w in weights)

    def values(self, model) -> np.ndarray:
        cap = model.capacity
        util = [model.nodes / cap["nodes"], model.bb / max(cap["bb"], 1e-300)]
        if model.objectives == 4:
            ssd = max(cap["ssd"], 1e-300)
            util += [model.ssd * model.nodes / ssd, -model.job_waste() / ssd]
        w = np.full(len(util), 1.0 / len(util)) if self.weights is None else \
            np.pad(self.weights, (0, max(0, len(util) - len(self.weights))))[: len(util)]
        return np.round(1e6 * (w @ np.array(util)))


@register_policy("constrained-cpu", resource="nodes")
@register_policy("constrained-bb", resource="bb")
@register_policy("constrained-ssd", resource="ssd")
class ConstrainedPolicy(_KnapsackBased):
    """Start the window subset using the most of one resource, subject to all the others."""

    RESOURCES = ("nodes", "bb", "ssd")
    OPTIONS = _KnapsackBased.OPTIONS + (
        Option("resource", str, "the resource to use the most of", choices=RESOURCES),)

    def __init__(self, window: int | None = WINDOW, order: str | None = None,
                 starvation_bound: int | None = STARVATION, backend: str = "ortools",
                 time_limit: float | None = None, resource: str = "nodes") -> None:
        super().__init__(window, order, starvation_bound, backend, time_limit)
        if resource not in self.RESOURCES:
            raise PolicyOptionError(f"resource: expected one of {self.RESOURCES}, got {resource!r}")
        self.resource = resource

    def values(self, model) -> np.ndarray:
        """Lexicographic: primary x (bound on the secondary + 1) + secondary, in integers."""
        nodes = model.nodes
        bb = np.round(model.bb * MB)
        if self.resource == "nodes":
            return nodes * (bb.sum() + 1) + bb
        primary = bb if self.resource == "bb" else np.round(model.ssd * nodes)
        return primary * (nodes.sum() + 1) + nodes


@register_policy("alignment-first")
class AlignmentPolicy(_MultiResource):
    """Start jobs by highest alignment score (free resources . demand) until none fits."""

    def decide(self, window: Window) -> Decision:
        pool, system = window.resources, window.system
        ssd_sizes = sorted(float(s) for s in system.ssd_classes)
        ssd_total = sum(float(s) * c for s, c in system.ssd_classes.items())
        chosen = []
        jobs = _fitting(window)
        while jobs:
            free = pool.free_dict()
            f_nodes = pool.free_nodes / system.nodes
            f_bb = free.get("bb", 0.0) / system.bb if system.bb > 0 else 0.0
            f_ssd = (sum(s * free.get(f"ssd_{s:g}", 0) for s in ssd_sizes) / ssd_total
                     if ssd_total > 0 else 0.0)
            scores = [f_nodes * j.nodes / system.nodes
                      + (f_bb * j.bb / system.bb if system.bb > 0 else 0.0)
                      + (f_ssd * j.ssd * j.nodes / ssd_total if ssd_total > 0 else 0.0)
                      for j in jobs]
            best = jobs[int(np.argmax(scores))]  # ties: the earlier window job
            pool.take(best)
            chosen.append(best.id)
            jobs = [j for j in jobs if j is not best and pool.fits(j)]
        return Decision(tuple(chosen))


@register_policy("bbsched")
class BBSchedPolicy(_MultiResource):
    """Start the Pareto solution a decision rule picks (BBSched: MOO backend + rule)."""

    OPTIONS = (
        Option("backend", str, "solver backend of the window model (see 'hpcopt backends')"),
        Option("rule", str, "decision rule that picks from the Pareto set (bbsched, weighted, "
                            "lexicographic)"),
        Option("objectives", int_or_auto, "2, 4 or auto (4 when the system has SSD classes)"),
        Option("time_limit", float, "seconds per window solve"),
    )

    def __init__(self, window: int | None = WINDOW, order: str | None = None,
                 starvation_bound: int | None = STARVATION, backend: str = "pareto-exact",
                 rule="bbsched", objectives: int | str = "auto", seed: int | None = None,
                 time_limit: float | None = None, solver_options: dict | None = None) -> None:
        super().__init__(window, order, starvation_bound)
        from hpcopt.models.pareto_rules import RULES

        if isinstance(rule, str) and rule not in RULES:
            raise PolicyOptionError(f"rule: expected one of {sorted(RULES)} or a callable, "
                                    f"got {rule!r}")
        if objectives not in ("auto", 2, 4):
            raise PolicyOptionError(f"objectives: expected 'auto', 2 or 4, got {objectives!r}")
        self.backend = backend
        self.rule = rule
        self.objectives = objectives
        self.time_limit = time_limit
        self.solver_options = dict(solver_options or {})
        self._solver = window_solver(backend, "bbsched", time_limit)
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self.seed = 0 if seed is None else seed  # a fixed default: runs repeat
        self._rng = np.random.default_rng(self.seed)

    def decide(self, window: Window) -> Decision:
        jobs = _fitting(window)
        if not jobs:
            return Decision()
        model = window_model(window, jobs, self.objectives)
        if model.objectives == 2 and sum(j.nodes for j in jobs) <= model.free_nodes \
                and sum(j.bb for j in jobs) <= model.free_bb and model.feasible_many(
                    np.ones((1, len(jobs))))[0]:
            x = np.ones(len(jobs), dtype=bool)  # all fit: the front is this one point
        else:
            seed = int(self._rng.integers(2**31))
            result = self._solver.solve(model, seed=seed, time_limit=self.time_limit,
                                        solver_options=self.solver_options, rule=self.rule)
            x = np.asarray(result.require_solution(), dtype=bool)
        return Decision(start_selected(window, model, x))
