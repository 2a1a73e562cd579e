"""What every window model shares: the certificate type and the model interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class Evaluation:
    """The certificate of a decision, independent of any solver.

    ``objectives`` are in the model's own sense; ``violations`` hold, per constraint, how far
    the decision exceeds it (0 when satisfied).  ``feasible`` is true when none is positive.
    """

    feasible: bool
    objectives: tuple[float, ...]
    violations: tuple[float, ...] = ()

    @property
    def objective(self) -> float:
        return self.objectives[0]


class Model(ABC):
    """A window decision model: validated plain data plus ``evaluate``.

    Subclasses are frozen dataclasses; ``kind`` names them in instance files and in the
    solver registry.  Decisions are 0-1 (or integer) vectors over the model's items.
    """

    kind: ClassVar[str]
    sense: ClassVar[str] = "max"
    default_backend: ClassVar[str] = ""

    @abstractmethod
    def evaluate(self, x) -> Evaluation:
        """Certificate of decision ``x``."""

    @abstractmethod
    def to_dict(self) -> dict:
        """The ``data`` part of an instance file."""

    @classmethod
    @abstractmethod
    def from_dict(cls, data: dict) -> Model:
        """Build from the ``data`` part of an instance file (raises ``ModelError``)."""

    def decision_ids(self, x) -> tuple[Any, ...]:
        """Ids of the items a decision selects (for tables and the CLI)."""
        return tuple(i for i, v in enumerate(x) if v)

    def to_pyomo(self):  # pragma: no cover - overridden by mathematical programs
        raise NotImplementedError(f"model {self.kind!r} has no algebraic form")
