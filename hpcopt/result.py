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
    (and always for heuristics); NO_SOLUTION when it stopped without one.
    """

    OPTIMAL = "OPTIMAL"
    FEASIBLE = "FEASIBLE"
    NO_SOLUTION = "NO_SOLUTION"
    INFEASIBLE = "INFEASIBLE"
    UNBOUNDED = "UNBOUNDED"
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
            "objective": self.objective,
            "bound": self.bound,
            "gap": None if math.isinf(self.gap) else self.gap,
            "wall_time_s": self.wall_time,
            "certified": self.certified,
            "decision": list(self.selected_ids) if self.selected_ids is not None else None,
            "limit": self.limit.value if self.limit else None,
            "seed": self.seed,
            "backend_version": self.backend_version,
        }
