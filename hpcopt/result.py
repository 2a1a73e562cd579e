"""Solver results: one frozen ``Result`` type shared by every backend."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from .errors import NoSolutionError


class Status(str, Enum):
    """Why a solve ended and what it holds.

    OPTIMAL only when proven; FEASIBLE when a limit stopped the backend with an incumbent
    (and always for heuristics); NO_SOLUTION when it stopped without one.  The rows of a
    batch (``hpcopt.batch``) and of a sweep (``hpcopt.sweep``) use the same values, with a
    ``termination`` column of ``Termination`` values: a simulation run that finished is
    FEASIBLE (a schedule the driver checked, never claimed optimal), one stopped by a signal
    is NO_SOLUTION (termination ``interrupted``), a failed one ERROR.
    """

    OPTIMAL = "OPTIMAL"
    FEASIBLE = "FEASIBLE"
    NO_SOLUTION = "NO_SOLUTION"
    INFEASIBLE = "INFEASIBLE"
    UNBOUNDED = "UNBOUNDED"
    INFEASIBLE_OR_UNBOUNDED = "INFEASIBLE_OR_UNBOUNDED"
    INTERRUPTED = "INTERRUPTED"
    ERROR = "ERROR"

    @property
    def has_solution(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)


class Limit(str, Enum):
    """Which limit stopped a backend, when one did."""

    TIME = "TIME"
    ITERATION = "ITERATION"
    NODE = "NODE"
    EVALUATION = "EVALUATION"
    MEMORY = "MEMORY"
    INTERRUPT = "INTERRUPT"


class Termination(str, Enum):
    """Why a solve stopped, apart from what it holds (``Result.solution``).

    OPTIMAL: optimality proven; FINISHED: a heuristic ran to the end of its own schedule;
    the ``*_LIMIT`` values and INTERRUPTED: stopped early (the incumbent, if any, is kept);
    INFEASIBLE / UNBOUNDED / INFEASIBLE_OR_UNBOUNDED: proven of the model; UNKNOWN: the
    backend stopped without saying why; ERROR: the backend failed.
    """

    OPTIMAL = "optimal"
    FINISHED = "finished"
    TIME_LIMIT = "time_limit"
    ITERATION_LIMIT = "iteration_limit"
    NODE_LIMIT = "node_limit"
    EVALUATION_LIMIT = "evaluation_limit"
    MEMORY_LIMIT = "memory_limit"
    INTERRUPTED = "interrupted"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    INFEASIBLE_OR_UNBOUNDED = "infeasible_or_unbounded"
    UNKNOWN = "unknown"
    ERROR = "error"


class RunStatus(str, Enum):
    """The status of a simulation run (a sweep row): a simulation has no solver status.

    DONE: the run finished; INTERRUPTED: a signal stopped it; ERROR: it failed (the row's
    ``error`` says why)."""

    DONE = "DONE"
    INTERRUPTED = "INTERRUPTED"
    ERROR = "ERROR"


class SolutionStatus(str, Enum):
    """What a result holds: no decision, a certified feasible one, or a proven optimum."""

    NONE = "none"
    FEASIBLE = "feasible"
    OPTIMAL = "optimal"


_LIMIT_TERMINATION = {Limit.TIME: Termination.TIME_LIMIT,
                      Limit.ITERATION: Termination.ITERATION_LIMIT,
                      Limit.NODE: Termination.NODE_LIMIT,
                      Limit.EVALUATION: Termination.EVALUATION_LIMIT,
                      Limit.MEMORY: Termination.MEMORY_LIMIT,
                      Limit.INTERRUPT: Termination.INTERRUPTED}
_STATUS_TERMINATION = {Status.OPTIMAL: Termination.OPTIMAL,
                       Status.FEASIBLE: Termination.FINISHED,
                       Status.NO_SOLUTION: Termination.UNKNOWN,
                       Status.INFEASIBLE: Termination.INFEASIBLE,
                       Status.UNBOUNDED: Termination.UNBOUNDED,
                       Status.INFEASIBLE_OR_UNBOUNDED: Termination.INFEASIBLE_OR_UNBOUNDED,
                       Status.INTERRUPTED: Termination.INTERRUPTED,
                       Status.ERROR: Termination.ERROR}


def termination_of(status: Status, limit: Limit | None) -> Termination:
    """The termination a (flat status, limit) pair stands for: a limit names why the solve
    stopped whatever it holds; otherwise the status does."""
    if limit is not None and status != Status.OPTIMAL:
        return _LIMIT_TERMINATION[limit]
    return _STATUS_TERMINATION[status]


@dataclass(frozen=True)
class ParetoPoint:
    """One non-dominated solution of a multi-objective solve."""

    decision: tuple[int, ...]
    objectives: tuple[float, ...]


@dataclass(frozen=True)
class Result:
    """What a backend returns.

    ``objective`` is in the model's own sense (a maximization reports the maximum), ``None``
    without an incumbent. ``bound`` is the dual bound in the same sense, or +/-inf when the
    backend has none. ``certificate`` is ``model.evaluate(decision)``, computed by the
    registry, never by the backend.
    """

    status: Status
    backend: str
    model_kind: str
    decision: tuple[int, ...] | None = None
    objective: float | None = None
    bound: float | None = None
    sense: str = "max"
    objectives: tuple[float, ...] | None = None
    pareto: tuple[ParetoPoint, ...] | None = None
    limit: Limit | None = None
    wall_time: float = 0.0
    backend_version: str = ""
    seed: int | None = None
    certificate: Any = None
    selected_ids: tuple | None = None
    n_evals: int | None = None
    extra: dict = field(default_factory=dict)
    log: str = ""

    @property
    def history(self) -> list[dict]:
        """The convergence history of a population search (``bbsched-ga``, ``nsga2``): one row
        per recorded generation (``generation``, ``evaluations``, ``front_size`` and
        ``best_<objective>`` on the current front); empty for other backends.
        ``pandas.DataFrame(result.history)`` is the tidy table; ``hpcopt plot pareto``
        draws it from ``solve --out`` rows."""
        return list(self.extra.get("history") or [])

    @property
    def termination(self) -> Termination:
        """Why the solve stopped (see ``Termination``), independent of ``solution``."""
        return termination_of(self.status, self.limit)

    @property
    def solution(self) -> SolutionStatus:
        """What the result holds: none, a certified feasible decision, or a proven optimum."""
        if self.decision is None and not self.pareto:
            return SolutionStatus.NONE
        return SolutionStatus.OPTIMAL if self.status == Status.OPTIMAL else SolutionStatus.FEASIBLE

    @property
    def certified(self) -> bool:
        """True when the decision exists and passed the model's own ``evaluate``."""
        return self.certificate is not None and bool(self.certificate.feasible)

    @property
    def gap(self) -> float:
        """Relative gap |bound - objective| / max(1, |objective|); inf when either is missing."""
        if self.objective is None or self.bound is None or math.isinf(self.bound):
            return math.inf
        return abs(self.bound - self.objective) / max(1.0, abs(self.objective))

    def require_solution(self) -> tuple[int, ...]:
        """The decision, or ``NoSolutionError`` when the backend found none."""
        if self.decision is None:
            raise NoSolutionError(
                f"backend {self.backend!r} returned no solution (status {self.status.value})"
            )
        return self.decision

    def to_row(self) -> dict:
        """A flat dict for tables (CSV/JSONL)."""
        return {
            "model": self.model_kind,
            "backend": self.backend,
            "status": self.status.value,
            "termination": self.termination.value,
            "solution": self.solution.value,
            "objective": self.objective,
            "bound": None if self.bound is None or math.isinf(self.bound) else self.bound,
            "gap": None if math.isinf(self.gap) else self.gap,
            "wall_time_s": self.wall_time,
            "certified": self.certified,
            "decision": list(self.selected_ids) if self.selected_ids is not None else None,
            "limit": self.limit.value if self.limit else None,
            "seed": self.seed,
            "backend_version": self.backend_version,
        }
