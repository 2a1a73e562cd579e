"""What every window model shares: the certificate type and the model interface."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from hpcopt.errors import ModelError

from .algebraic import algebraic_form
from .algebraic import to_pyomo as pyomo_model


def field_error(model: str, field: str, expected: str, got: Any = None) -> ModelError:
    """A one-line ``ModelError`` naming ``model`` and ``field``; ``err.field``/``err.detail``
    keep the parts (instance-file messages name ``data.<field>``)."""
    detail = f"expected {expected}"
    if got is not None:
        text = got if isinstance(got, str) else repr(got)
        detail += f", got {text if len(text) <= 60 else text[:57] + '...'}"
    err = ModelError(f"{model} {field}: {detail}")
    err.field, err.detail = field, detail
    return err


def check_labels(model: str, field: str, labels, count: int, types: tuple = (int, str), *,
                 item: str | None = None) -> tuple:
    """``labels`` as a tuple of ``count`` distinct values of ``types`` (numpy scalars
    unwrapped, booleans refused); ``item`` names entry ``{i}`` in messages (default
    ``<field>[{i}]``)."""
    if isinstance(labels, (str, bytes)) or not hasattr(labels, "__len__"):
        raise field_error(model, field, f"a list of {count} labels", repr(labels))
    out = tuple(v.item() if isinstance(v, np.generic) else v for v in labels)
    if len(out) != count:
        raise field_error(model, field, f"{count} labels", f"{len(out)} labels")
    for i, v in enumerate(out):
        if isinstance(v, bool) or not isinstance(v, types):
            kinds = " or ".join(t.__name__ for t in types)
            raise field_error(model, (item or f"{field}[{{i}}]").format(i=i), kinds, repr(v))
    if len(set(out)) != count:
        dup = next(v for i, v in enumerate(out) if v in out[:i])
        raise field_error(model, field, "unique labels", f"{dup!r} twice")
    return out


def number_vector(model: str, field: str, data, n: int | None = None, *, integer: bool = False,
                  minimum: float = 0.0) -> np.ndarray:
    """``data`` as a 1-d float array of ``n`` (if given) finite numbers >= ``minimum``, whole
    numbers with ``integer``; anything else is a one-line ``field_error`` naming the entry."""
    try:
        raw = np.asarray(data)
        if raw.dtype.kind not in "iuf" or raw.ndim != 1:
            raise TypeError
        arr = raw.astype(float)
    except (TypeError, ValueError):
        raise field_error(model, field, "a list of numbers", data) from None
    if n is not None and arr.size != n:
        raise field_error(model, field, f"{n} entries (one per job)", f"{arr.size} entries")
    bad = ~np.isfinite(arr) | (arr < minimum) | (integer & (arr != np.round(arr)))
    if bad.any():
        i = int(np.argmax(bad))
        kind = "an integer" if integer else "a finite number"
        raise field_error(model, f"{field}[{i}]", f"{kind} >= {minimum:g}", float(arr[i]))
    return arr


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

    def to_pyomo(self, **options):
        """The model's algebraic form (``hpcopt.models.algebraic``) as a pyomo
        ``ConcreteModel``, for export to LP/MPS or any pyomo solver."""
        return pyomo_model(algebraic_form(self, "pyomo", **options))
