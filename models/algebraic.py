"""One algebraic form per mathematical-program model, written once for every MIP backend.

A model that is a (mixed-)integer linear program describes itself as an ``AlgebraicForm``:
named blocks of variables (binary, integer or continuous, bounded below by 0), named blocks of
linear rows (``<=`` or ``==``), a linear objective, and how a vector of variable values maps
back to the model's decision (``decode``) and a decision to variable values (``encode``, for
warm starts).  It is plain numpy data: the generic backends turn it into a SCIP, CP-SAT or
pyomo model (``hpcopt.solvers.scip_backend``, ``ortools_backends``, ``pyomo_backend``), and
``to_pyomo`` gives the pyomo form for export, so adding a model means writing its form once.

The formulation table, keyed by (model kind, formulation family), lives beside each model:
``@formulation("scas")`` registers the shared form ("mip", which every MIP backend takes);
``@formulation("scas", "cpsat")`` a variant one backend family takes instead (its docstring
says why, with the measurement).  ``algebraic_form(model, family, **options)`` looks it up.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hpcopt.errors import ModelError, refuse_duplicate

SHARED = "mip"  # the family of the form every MIP backend takes
VAR_TYPES = ("binary", "integer", "continuous")
SENSES = ("<=", "==")


@dataclass(frozen=True)
class Variables:
    """A block of variables ``name[key]`` (lower bound 0): ``kind`` one of ``VAR_TYPES``,
    ``obj`` the objective coefficient of each, ``ub`` upper bounds (None: 1 for binary,
    unbounded otherwise)."""

    name: str
    keys: list
    kind: str
    obj: np.ndarray
    ub: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.keys)


@dataclass(frozen=True)
class Rows:
    """A block of rows ``name[key]``: row r is ``sum(coefs[r] * var[index[r]]) sense
    rhs[r]``, where ``index[r]`` are positions in the form's whole variable vector."""

    name: str
    keys: list
    index: list
    coefs: list
    sense: str
    rhs: np.ndarray

    def __len__(self) -> int:
        return len(self.keys)


@dataclass(frozen=True)
class IntegerObjective:
    """Integer objective coefficients for integer backends: ``coefs = scale * obj`` exactly
    when ``slack`` is 0; otherwise rounded, and ``|coefs @ x / scale - obj @ x| <= slack``."""

    scale: float
    coefs: np.ndarray
    slack: float = 0.0


@dataclass(frozen=True)
class AlgebraicForm:
    """A linear program over blocks of variables (in order) and of rows; see the module doc.

    ``decode(values) -> decision`` reads a model decision from the variable values (one per
    variable, in block order); ``encode(decision) -> values`` is its inverse for a feasible
    decision (a warm start), or None.  ``integer_objective`` is the model's own integer form
    of the objective when it has one (exact integer costs that a float-scaling would miss).
    """

    name: str
    sense: str
    variables: tuple[Variables, ...]
    rows: tuple[Rows, ...]
    decode: Callable[[np.ndarray], list]
    encode: Callable[[Any], np.ndarray] | None = None
    integer_objective: IntegerObjective | None = None
    offsets: tuple[int, ...] = field(init=False)

    def __post_init__(self) -> None:
        starts = np.cumsum([0] + [len(b) for b in self.variables]).tolist()
        object.__setattr__(self, "offsets", tuple(starts))

    @property
    def n_variables(self) -> int:
        return self.offsets[-1]

    @property
    def n_rows(self) -> int:
        return sum(len(b) for b in self.rows)

    @property
    def n_nonzeros(self) -> int:
        return sum(len(i) for b in self.rows for i in b.index)

    def objective(self) -> np.ndarray:
        """The objective coefficients of every variable, in order."""
        return np.concatenate([b.obj for b in self.variables]).astype(float) \
            if self.variables else np.zeros(0)

    def upper_bounds(self) -> np.ndarray:
        """Each variable's upper bound (``inf`` where none)."""
        out = []
        for b in self.variables:
            if b.ub is not None:
                out.append(np.asarray(b.ub, dtype=float))
            else:
                out.append(np.full(len(b), 1.0 if b.kind == "binary" else np.inf))
        return np.concatenate(out) if out else np.zeros(0)

    def kinds(self) -> list[str]:
        """Each variable's type (``VAR_TYPES``), in order."""
        return [b.kind for b in self.variables for _ in range(len(b))]

    def names(self) -> list[str]:
        """A name per variable: the block's name and its key (``y3_0``)."""
        def text(key) -> str:
            return "_".join(map(str, key)) if isinstance(key, tuple) else str(key)

        return [f"{b.name}{text(k)}" for b in self.variables for k in b.keys]


def to_pyomo(form: AlgebraicForm):
    """A pyomo ``ConcreteModel`` of ``form``: one indexed ``Var`` per variable block and one
    indexed ``Constraint`` per row block, under their names, and the objective ``obj``."""
    import pyomo.environ as pyo  # lazy: pyomo takes ~0.7 s to import

    m = pyo.ConcreteModel(name=form.name)
    domain = {"binary": pyo.Binary, "integer": pyo.NonNegativeIntegers,
              "continuous": pyo.NonNegativeReals}
    flat = []
    for b in form.variables:
        index = pyo.Set(initialize=b.keys, ordered=True, dimen=_dimen(b.keys))
        m.add_component(f"{b.name}_index", index)
        var = pyo.Var(index, within=domain[b.kind])
        m.add_component(b.name, var)
        if b.ub is not None:
            for k, u in zip(b.keys, np.asarray(b.ub).tolist()):
                var[k].setub(u)
        flat.extend(var[k] for k in b.keys)
    obj = form.objective().tolist()
    m.obj = pyo.Objective(expr=sum(c * v for c, v in zip(obj, flat) if c),
                          sense=pyo.maximize if form.sense == "max" else pyo.minimize)
    for b in form.rows:
        rows = {k: (i, c, r) for k, i, c, r in zip(b.keys, b.index, b.coefs, b.rhs.tolist())}

        def rule(m, *key, rows=rows, sense=b.sense):
            idx, coefs, rhs = rows[key[0] if len(key) == 1 else key]
            body = sum(c * flat[i] for i, c in zip(idx.tolist(), coefs.tolist()))
            return body <= rhs if sense == "<=" else body == rhs

        index = pyo.Set(initialize=b.keys, ordered=True, dimen=_dimen(b.keys))
        m.add_component(f"{b.name}_index", index)
        m.add_component(b.name, pyo.Constraint(index, rule=rule))
    return m


def pyomo_values(form: AlgebraicForm, pm) -> np.ndarray:
    """The variable values of a solved ``to_pyomo(form)`` model, in form order (0 if unset)."""
    from pyomo.environ import value  # lazy: see to_pyomo

    out = []
    for b in form.variables:
        var = pm.component(b.name)
        out.extend((value(var[k], exception=False) or 0.0) for k in b.keys)
    return np.asarray(out, dtype=float)


def _dimen(keys) -> int:
    return len(keys[0]) if keys and isinstance(keys[0], tuple) else 1


# (model kind, family) -> builder(model, **options) -> AlgebraicForm
_FORMULATIONS: dict[tuple[str, str], Callable] = {}


def formulation(kind: str, family: str = SHARED):
    """Function decorator: ``fn(model, **options) -> AlgebraicForm`` is model ``kind``'s
    form for backend ``family`` (``"mip"``: the shared one; ``"cpsat"``, ``"scip"`` or
    ``"pyomo"``: a variant that family takes instead).  Keyword parameters of ``fn`` are
    the form's options (``solver_options`` of the same name reach it)."""

    def deco(fn):
        named = {f"{k}/{f}": v for (k, f), v in _FORMULATIONS.items()}
        refuse_duplicate("formulation", f"{kind}/{family}", named, fn)
        _FORMULATIONS[(kind, family)] = fn
        return fn

    return deco


def builder(kind: str, family: str) -> Callable | None:
    """The form builder backend ``family`` uses for model ``kind`` (its own variant, else
    the shared one), or None when the model has no algebraic form."""
    return _FORMULATIONS.get((kind, family)) or _FORMULATIONS.get((kind, SHARED))


def form_defaults(kind: str, family: str) -> dict:
    """The options the form of ``kind`` for ``family`` takes, with their defaults."""
    fn = builder(kind, family)
    if fn is None:
        return {}
    params = list(inspect.signature(fn).parameters.values())[1:]
    return {p.name: p.default for p in params}


def algebraic_form(model, family: str = SHARED, **options) -> AlgebraicForm:
    """Model ``model``'s algebraic form for backend ``family``; ``ModelError`` when it has
    none or an option is not one the form takes."""
    fn = builder(model.kind, family)
    if fn is None:
        raise ModelError(f"model {model.kind!r} has no algebraic form")
    unknown = sorted(set(options) - set(form_defaults(model.kind, family)))
    if unknown:
        raise ModelError(f"{model.kind} form: unknown option(s) {', '.join(unknown)}")
    return fn(model, **options)


def kinds_with_form(family: str) -> tuple[str, ...]:
    """Model kinds (registered so far) with a form ``family`` can take."""
    return tuple(sorted({k for k, f in _FORMULATIONS if f in (family, SHARED)}))
