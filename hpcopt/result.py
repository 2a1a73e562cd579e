"""Solver results: one frozen ``Result`` type shared by every backend.

Its vocabulary is two words, as pyomo's results: a ``Termination`` (why the solve stopped)
and a ``SolutionStatus`` (what it holds).  ``Status`` and ``Limit``, the public API's older
names, are views of the two (``Result.status``, ``Result.limit``, the table columns)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from .errors import NoSolutionError


class Termination(str, Enum):
    """Why a solve stopped, apart from what it holds (``Result.solution``).

    OPTIMAL: optimality proven; FINISHED: the backend ran to its own end without a proof (a
    heuristic's schedule, a solver's feasible stop); the ``*_LIMIT`` values and INTERRUPTED:
    stopped early (the incumbent, if any, is kept); INFEASIBLE / UNBOUNDED /
    INFEASIBLE_OR_UNBOUNDED: proven of the model; UNKNOWN: the backend stopped without saying
    why; ERROR: the backend (or a batch or sweep row's run) failed.  A sweep row's run ends
    FINISHED, INTERRUPTED or ERROR.
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

    @property
    def rules_out_solution(self) -> bool:
        """Proven of the model (infeasible, unbounded) or a failure: no decision is kept."""
        return self in _NO_SOLUTION

    @property
    def limit(self) -> Limit | None:
        """The limit this termination is (``Result.limit``), ``None`` when none stopped it."""
        return _LIMIT.get(self)


class SolutionStatus(str, Enum):
    """What a result holds: no decision, a certified feasible one, or a proven optimum."""

    NONE = "none"
    FEASIBLE = "feasible"
    OPTIMAL = "optimal"


# The older names of the public API (``hpcopt.Status``, ``Result.status``, ``Result.limit``),
# kept as views of the two above: nothing in the library decides by them.

class Status(str, Enum):
    """The flat ``status`` column of the command-line tables (``Result.status``), a view of
    ``solution`` and ``termination`` kept for the public API: OPTIMAL or FEASIBLE by what
    the result holds; without a decision INFEASIBLE, UNBOUNDED, INFEASIBLE_OR_UNBOUNDED or
    ERROR by the termination, else NO_SOLUTION."""

    OPTIMAL = "OPTIMAL"
    FEASIBLE = "FEASIBLE"
    NO_SOLUTION = "NO_SOLUTION"
    INFEASIBLE = "INFEASIBLE"
    UNBOUNDED = "UNBOUNDED"
    INFEASIBLE_OR_UNBOUNDED = "INFEASIBLE_OR_UNBOUNDED"
    ERROR = "ERROR"

    @property
    def has_solution(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)


class Limit(str, Enum):
    """Which limit stopped a solve (``Result.limit``), a view of the ``*_LIMIT`` and
    INTERRUPTED terminations kept for the public API."""

    TIME = "TIME"
    ITERATION = "ITERATION"
    NODE = "NODE"
    EVALUATION = "EVALUATION"
    MEMORY = "MEMORY"
    INTERRUPT = "INTERRUPT"


_NO_SOLUTION = frozenset({Termination.INFEASIBLE, Termination.UNBOUNDED,
                          Termination.INFEASIBLE_OR_UNBOUNDED, Termination.ERROR})
_LIMIT = {Termination.TIME_LIMIT: Limit.TIME, Termination.ITERATION_LIMIT: Limit.ITERATION,
          Termination.NODE_LIMIT: Limit.NODE, Termination.EVALUATION_LIMIT: Limit.EVALUATION,
          Termination.MEMORY_LIMIT: Limit.MEMORY, Termination.INTERRUPTED: Limit.INTERRUPT}


def flat_status(termination: Termination, solution: SolutionStatus) -> Status:
    """The flat ``Status`` of a (termination, solution) pair: OPTIMAL or FEASIBLE by what is
    held; without a decision the termination's own name where it rules a solution out,
    else NO_SOLUTION."""
    if solution != SolutionStatus.NONE:
        return Status[solution.name]
    return Status[termination.name] if termination.rules_out_solution else Status.NO_SOLUTION


def outcome_columns(termination: Termination,
                    solution: SolutionStatus = SolutionStatus.NONE) -> dict:
    """A table row's outcome columns (``status``, ``termination``, ``solution``, ``limit``):
    a result's (``Result.to_row``), or those of a batch row that holds no decision (a pair
    that failed, or that a signal stopped)."""
    limit = termination.limit
    return {"status": flat_status(termination, solution).value,
            "termination": termination.value, "solution": solution.value,
            "limit": None if limit is None else limit.value}


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

    termination: Termination
    backend: str
    model_kind: str
    decision: tuple[int, ...] | None = None
    objective: float | None = None
    bound: float | None = None
    sense: str = "max"
    objectives: tuple[float, ...] | None = None
    pareto: tuple[ParetoPoint, ...] | None = None
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
    def solution(self) -> SolutionStatus:
        """What the result holds: none, a certified feasible decision, or a proven optimum."""
        if self.decision is None and not self.pareto:
            return SolutionStatus.NONE
        return (SolutionStatus.OPTIMAL if self.termination == Termination.OPTIMAL
                else SolutionStatus.FEASIBLE)

    @property
    def status(self) -> Status:
        """The flat status of the command-line tables (``Status``: the public API's older
        name, a view of ``solution`` and ``termination``)."""
        return flat_status(self.termination, self.solution)

    @property
    def limit(self) -> Limit | None:
        """The limit that stopped the solve (``Limit``: the public API's older name, a view
        of ``termination``); ``None`` when none did."""
        return self.termination.limit

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
                f"backend {self.backend!r} returned no solution (termination "
                f"{self.termination.value})"
            )
        return self.decision

    def to_row(self) -> dict:
        """A flat dict for tables (CSV/JSONL)."""
        outcome = outcome_columns(self.termination, self.solution)
        limit = outcome.pop("limit")
        return {
            "model": self.model_kind,
            "backend": self.backend,
            **outcome,
            "objective": self.objective,
            "bound": None if self.bound is None or math.isinf(self.bound) else self.bound,
            "gap": None if math.isinf(self.gap) else self.gap,
            "wall_time_s": self.wall_time,
            "certified": self.certified,
            "decision": list(self.selected_ids) if self.selected_ids is not None else None,
            "limit": limit,
            "seed": self.seed,
            "backend_version": self.backend_version,
        }
