"""What the generic MIP backends (``scip``, ``cpsat``, ``pyomo:<solver>``) share.

A generic backend knows no model kinds.  It builds a model's algebraic form
(``hpcopt.models.algebraic``: the form each model registers beside itself) into its solver
(``MipBackend.session``) and solves it, or, where a model registers a procedure of its own for
the backend's family here (``@procedure(kind, family)``: a solve loop kept for exactness or
speed, which says why in its docstring), runs that.  ``SUPPORTED_MODELS`` follows from the two
tables, so adding a model means writing its form once.

The shared flow, for every form: ``solver_options`` named like the form's options (e.g.
``formulation``) build the form, ``greedy_start`` (default true) hands the model's greedy start
(or a ``warm_start``, which must be feasible) to the solver as a first incumbent or hint, and
any other key is a parameter of the wrapped solver.  A build that leaves no time returns the
start; an answer stopped by a limit is never worse than the start.

Each backend builds a form into its solver as a ``Session`` (``MipBackend.session``): solved
once for a form, or solved again after changes (a row added, the objective replaced, a
variable fixed) by a procedure's loop, so a loop is written once for every backend.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar, NamedTuple

import numpy as np

from hpcopt.errors import SolverOptionError, refuse_duplicate
from hpcopt.models import MODEL_KINDS, model_class
from hpcopt.models.algebraic import AlgebraicForm, algebraic_form, builder, form_defaults
from hpcopt.result import Termination

from .registry import Footprint, Outcome, SolveOptions, Solver

# (model kind, family) -> (fn(backend, model, opts) -> Outcome, whether footprint applies)
_PROCEDURES: dict[tuple[str, str], tuple[Callable, bool]] = {}
MIP_OPTIONS = ("greedy_start", "tie_break")  # ours; the forms' options are added per model


def procedure(kind: str, family: str, *, sized: bool = True):
    """Function decorator: ``fn(backend, model, opts) -> Outcome`` solves model ``kind`` on
    the generic backend of ``family`` instead of its algebraic form.  ``sized``: the
    backend's build estimate (``footprint``, from ``model.algebraic_size()``) applies."""

    def deco(fn):
        named = {f"{k}/{f}": v[0] for (k, f), v in _PROCEDURES.items()}
        refuse_duplicate("procedure", f"{kind}/{family}", named, fn)
        _PROCEDURES[(kind, family)] = (fn, sized)
        return fn

    return deco


def as_held(termination: Termination, values) -> Termination:
    """A solver's ``termination`` given the ``values`` it holds (None: none): one that says it
    finished (optimal, or at a stop of its own) without values stopped for no reason it
    states (``unknown``); a limit stays the limit."""
    if values is None and termination in (Termination.OPTIMAL, Termination.FINISHED):
        return Termination.UNKNOWN
    return termination


class Answer(NamedTuple):
    """One solve of a ``Session``: ``values`` of the form's variables (None without an
    incumbent), why it stopped (``termination``), the solver's ``bound`` on the current
    objective (None when it has none), its ``native`` status, its log and what else it
    reports (``extra``)."""

    termination: Termination
    values: np.ndarray | None = None
    bound: float | None = None  # in the objective's units (``form_bound``)
    native: str = ""
    log: str = ""
    extra: dict = {}


class Session:
    """A form built into one backend's solver, to solve and change and solve again.

    ``solve(opts)`` solves within what ``opts.deadline`` leaves (an ``Answer``; no time left
    is termination ``time_limit`` without values).  Between solves: ``add_row`` (``sum(coefs *
    x[index]) sense rhs``, sense ``"<="`` or ``">="``), ``set_objective`` (the form's sense,
    over ``index``), ``fix`` (a variable's value) and ``tighten`` (the solver's feasibility
    tolerance as tight as it goes, for rows that must hold almost exactly).
    """

    def solve(self, opts: SolveOptions) -> Answer:  # pragma: no cover - abstract
        raise NotImplementedError

    def add_row(self, index: Sequence[int], coefs: Sequence[float], sense: str,
                rhs: float) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def set_objective(self, index: Sequence[int],
                      coefs: Sequence[float]) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def fix(self, index: int, value: float) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def tighten(self) -> None:
        """By default the solver's tolerances stay (an exact solver needs none)."""


class _SupportedModels:
    """``SUPPORTED_MODELS`` of a generic backend: the model kinds with a form or a procedure
    for its family (model modules are imported to register their forms)."""

    def __get__(self, obj, cls) -> tuple[str, ...]:
        for kind in MODEL_KINDS:
            model_class(kind)
        return tuple(k for k in MODEL_KINDS if (k, cls.FAMILY) in _PROCEDURES
                     or builder(k, cls.FAMILY) is not None)


class MipBackend(Solver):
    """Base of the generic MIP backends: subclasses set ``FAMILY`` and implement
    ``session``; the model's form or procedure comes from the tables above."""

    FAMILY: ClassVar[str] = ""
    INTEGER_DATA: ClassVar[bool] = False  # the solver takes integer rows and objective only
    SUPPORTED_MODELS = _SupportedModels()
    EXACT = True
    GREEDY_START = True
    NATIVE_OPTIONS = True  # any other key is a parameter of the wrapped solver
    SECONDS_PER_NZ: ClassVar[float] = 0.0  # the build estimate (``footprint``)
    SECONDS_PER_ROW: ClassVar[float] = 0.0
    MB_PER_NZ: ClassVar[float] = 0.0
    MB_PER_ROW: ClassVar[float] = 0.0

    def form_options(self, model, solver_options: dict) -> dict:
        """The form's options for this solve: its defaults, overridden by ``solver_options``."""
        defaults = form_defaults(model.kind, self.FAMILY)
        return {**defaults, **{k: v for k, v in solver_options.items() if k in defaults}}

    def algebraic_size(self, model, solver_options: dict) -> tuple[int, int, int]:
        """(variables, rows, nonzeros) of the form this solve builds, without building it."""
        if (model.kind, self.FAMILY) in _PROCEDURES:
            return model.algebraic_size()
        return model.algebraic_size(**self.form_options(model, solver_options))

    def footprint(self, model, opts: SolveOptions) -> Footprint | None:
        """The build, by the form's nonzeros and rows (``SECONDS_PER_NZ`` ...)."""
        proc = _PROCEDURES.get((model.kind, self.FAMILY))
        if proc is not None and not proc[1]:
            return None
        _, rows, nz = self.algebraic_size(model, opts.solver_options)
        return Footprint(nz * self.SECONDS_PER_NZ + rows * self.SECONDS_PER_ROW,
                         nz * self.MB_PER_NZ + rows * self.MB_PER_ROW)

    def _solve(self, model, opts: SolveOptions) -> Outcome:
        proc = _PROCEDURES.get((model.kind, self.FAMILY))
        if proc is not None:
            return proc[0](self, model, opts)
        form_opts = self.form_options(model, opts.solver_options)
        native = {k: v for k, v in opts.solver_options.items()
                  if k not in form_opts and k not in MIP_OPTIONS}
        start = self._start(model, opts)
        form = algebraic_form(model, self.FAMILY, **form_opts)
        if form.n_variables == 0:
            return Outcome(Termination.OPTIMAL, form.decode(np.zeros(0)))
        values = None if start is None or form.encode is None else form.encode(start)
        if opts.left() is not None and opts.left() <= 0:  # the build took the time
            return Outcome(Termination.TIME_LIMIT, start)
        session = self.session(model, form, opts, native, values)
        answer = session.solve(opts)
        decision = None if answer.values is None else form.decode(answer.values)
        out = Outcome(answer.termination, decision, bound=answer.bound, log=answer.log,
                      extra={"native_status": answer.native, **answer.extra})
        if out.termination != Termination.OPTIMAL:
            out.decision = _better(model, out.decision, start)
        out.extra.update(variables=form.n_variables, rows=form.n_rows,
                         nonzeros=form.n_nonzeros)
        return out

    def session(self, model, form: AlgebraicForm, opts: SolveOptions, native: dict,
                start: np.ndarray | None) -> Session:  # pragma: no cover - abstract
        """``form`` (of ``model``) built in the backend with ``native`` parameters, starting
        from ``start`` (variable values) where the backend takes a start."""
        raise NotImplementedError

    def _start(self, model, opts: SolveOptions):
        """The starting decision: ``warm_start`` when given (it must be feasible), else the
        model's greedy start (``opts.start``) unless ``greedy_start`` is false."""
        use = opts.solver_options.get("greedy_start", True)
        if not isinstance(use, bool):
            raise SolverOptionError(f"backend {self.full_name!r}: greedy_start must be true or "
                                    f"false, got {use!r}")
        if opts.warm_start is not None:
            if not model.evaluate(opts.warm_start).feasible:
                raise SolverOptionError(f"backend {self.full_name!r}: warm_start is not a "
                                        "feasible decision")
            return [int(s) for s in opts.warm_start]
        if not use or opts.start is None:
            return None
        return [int(s) for s in opts.start]


def form_bound(form: AlgebraicForm, value: float, scale: float = 1.0,
               slack: float = 0.0) -> float:
    """A solver's dual bound ``value`` (of the objective times ``scale``, rounded within
    ``slack``) in the objective's units, widened by the round-off."""
    bound = float(value) / scale
    return bound + slack if form.sense == "max" else bound - slack


def _better(model, decision, incumbent):
    """The better of two decisions by the model's own objective (``decision`` on ties)."""
    if incumbent is None:
        return decision
    if decision is None:
        return incumbent
    sign = 1.0 if model.sense == "max" else -1.0
    if sign * model.evaluate(incumbent).objective > sign * model.evaluate(decision).objective \
            + 1e-9:
        return incumbent
    return decision
