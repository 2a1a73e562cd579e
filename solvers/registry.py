"""The backend registry and the one ``solve`` entry point.

Backends register by name with ``@register("dp")``; families with a parameter
(``pyomo:<solver>``) register their prefix with ``family=True``.  Third-party backends come in
through the entry-point group ``hpcopt.solvers``.  ``Solver.solve`` is a template method: it
validates options, times the backend, and certifies the answer with ``model.evaluate`` so no
backend can report a decision the model does not accept.

The template also owns the limits (docs/limits.md): the clock starts when ``solve`` is
called, so the model's greedy start, the backend's model build and its certification all
count; a backend whose estimated build (``Solver.footprint``) cannot fit the time left or
the memory cap (``max_memory_mb``) is not started; and an anytime backend
(``GREEDY_START``) never returns less than the model's greedy decision.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import time
from dataclasses import dataclass, field, replace
from enum import IntEnum
from importlib import metadata
from typing import Any, ClassVar

from hpcopt.errors import (
    IncompatibleModelError,
    InfeasibleSolutionError,
    ModelError,
    SolverOptionError,
    SolverUnavailableError,
    UnknownSolverError,
    closest,
    refuse_duplicate,
)
from hpcopt.models.pareto_rules import choose, rule_name
from hpcopt.result import ParetoPoint, Result, Termination

_REGISTRY: dict[str, type[Solver]] = {}
_FAMILIES: dict[str, type[Solver]] = {}
# model kind -> canonical(model, decision, seconds_left) -> the canonical optimum of the same
# cost, or None when it could not be found in time (see ``register_canonical``)
_CANONICAL: dict[str, Any] = {}
# model kind -> (greedy(model, deadline, seed) -> (a feasible decision, a dual bound or None),
# the share of the time limit it may use): the model's best heuristic, the start and floor of
# its anytime backends (see ``register_greedy``)
_GREEDY: dict[str, Any] = {}
_entry_points_loaded = False

OBJECTIVE_TOL = 1e-6
DEFAULT_SEED = 0  # the seed of every solve that names none: answers repeat, and say so
# a solve returns within time_limit + OVERSHOOT_S (tests/test_limits.py, docs/limits.md): what
# cannot be stopped (a greedy first pass, one build block, a solver's own stop) fits in it
OVERSHOOT_S = 1.0
GREEDY_SHARE = 0.2  # by default at most this share of the time limit goes to the greedy start
# a build that cannot be stopped starts only when this many times its estimate fits the time
# left and the memory cap: the estimates are fitted on an idle machine, and with both of its
# two cores kept busy the pyomo builds of the large SCAS and OSDEC models took 1.4-2.0x as
# long, up to 1.19x their estimate (benchmarks/README "Limits")
BUILD_MARGIN = 2.5
# solver values at or beyond this magnitude are a solver's "infinity" (SCIP 1e20, HiGHS inf)
SOLVER_INFINITY = 1e19
# solver_options every backend takes (the registry's): the memory cap, and ``solver_log``
# (true: the solver's own log, where the backend can capture it, goes into ``Result.log``)
COMMON_OPTIONS = ("max_memory_mb", "solver_log")


class Availability(IntEnum):
    """Whether a backend can run here; falsy when it cannot."""

    NOT_FOUND = 0
    AVAILABLE = 1


@dataclass
class SolveOptions:
    """Validated common options handed to a backend."""

    time_limit: float | None = None
    seed: int | None = None
    warm_start: Any = None
    solver_options: dict = field(default_factory=dict)
    rule: Any = None
    deadline: float | None = None  # time.perf_counter() at which the whole solve must end
    max_memory_mb: float | None = None  # the memory cap (``solver_options["max_memory_mb"]``)
    start: Any = None  # the model's greedy decision (GREEDY_START backends), or None
    log: list | None = None  # with solver_log: where a backend puts its solver's log lines
    limit: float | None = None  # the time limit as given (``time_limit`` becomes what is left)

    def left(self) -> float | None:
        """Seconds left before the deadline (may be <= 0), None without a time limit."""
        return None if self.deadline is None else self.deadline - time.perf_counter()


@dataclass
class Footprint:
    """A backend's estimate of one solve's model build: seconds and peak megabytes."""

    seconds: float
    megabytes: float
    what: str = "the model build"


@dataclass
class Outcome:
    """What a backend's ``_solve`` hands back to the template (before certification): why
    it stopped, and what it holds (``decision`` or ``pareto``; ``None``: nothing, and
    ignored when the termination rules a solution out)."""

    termination: Termination
    decision: Any = None
    objective: float | None = None
    bound: float | None = None
    pareto: list[tuple[Any, tuple[float, ...]]] | None = None
    n_evals: int | None = None
    extra: dict = field(default_factory=dict)
    log: str = ""


class Solver:
    """Base class of every backend.

    Subclasses set ``SUPPORTED_MODELS`` (model kinds), ``REQUIRED_MODULES`` (import names,
    checked with ``find_spec`` and imported only inside ``_solve``), ``EXACT`` (may claim
    OPTIMAL) and implement ``_solve``.  Family backends receive their parameter (the part
    after ``:``) as ``arg``.
    """

    name: ClassVar[str] = ""
    doc: ClassVar[str] = ""
    SUPPORTED_MODELS: ClassVar[tuple[str, ...]] = ()
    REQUIRED_MODULES: ClassVar[tuple[str, ...]] = ()
    INSTALL_HINT: ClassVar[str] = ""
    EXACT: ClassVar[bool] = False
    # the solver_options keys the backend takes; with NATIVE_OPTIONS any other key is a
    # parameter of the wrapped solver (checked by that solver), else it is refused here
    OPTIONS: ClassVar[tuple[str, ...]] = ()
    NATIVE_OPTIONS: ClassVar[bool] = False
    # True when the backend's OPTIMAL answers already are the model's canonical optimum
    CANONICAL: ClassVar[bool] = False
    # anytime backends: the template computes the model's greedy decision first (``opts.start``,
    # a hint or first incumbent) and returns it whenever the backend's answer is worse
    GREEDY_START: ClassVar[bool] = False

    def __init__(self, arg: str | None = None) -> None:
        self.arg = arg

    @property
    def full_name(self) -> str:
        return f"{self.name}:{self.arg}" if self.arg else self.name

    @classmethod
    def available(cls) -> Availability:
        for module in cls.REQUIRED_MODULES:
            if not installed(module):
                return Availability.NOT_FOUND
        return Availability.AVAILABLE

    def version(self) -> str:
        """Version of the backend library ('' when not applicable)."""
        return _dist_version(self.REQUIRED_MODULES[0]) if self.REQUIRED_MODULES else ""

    def check_ready(self) -> None:
        """Raise ``SolverUnavailableError`` unless this backend can run here (its library is
        installed; a family's named solver exists), so a caller can refuse it up front."""
        if not self.available():
            hint = f" ({self.INSTALL_HINT})" if self.INSTALL_HINT else ""
            raise SolverUnavailableError(
                f"backend {self.full_name!r} needs {', '.join(self.REQUIRED_MODULES)}, "
                f"which is not installed{hint}"
            )

    def supports(self, model) -> bool:
        return model.kind in self.SUPPORTED_MODELS

    def solve(
        self,
        model,
        *,
        time_limit: float | None = None,
        seed: int | None = None,
        warm_start: Any = None,
        solver_options: dict | None = None,
        rule: Any = None,
    ) -> Result:
        """Solve ``model``; hitting a limit is a normal return (its termination, a decision).

        Limits cover the whole call (docs/limits.md): ``time_limit`` seconds from here,
        ``solver_options["max_memory_mb"]`` (any backend), and Ctrl-C (a ``KeyboardInterrupt``
        during the backend is termination ``interrupted``, with the greedy decision where the model
        has one); the answer comes back within ``time_limit + OVERSHOOT_S``.

        ``seed`` defaults to ``DEFAULT_SEED``, so a randomized backend gives the same answer
        on every call, and ``Result.seed`` always records the seed used.

        Multi-objective backends return a Pareto set; ``rule`` (a name from
        ``hpcopt.models.pareto_rules.RULES``, a ``(name, options)`` pair or a callable;
        default ``"bbsched"``) picks the decision from it.
        """
        t0 = time.perf_counter()
        self._check_call(model, time_limit, seed)
        given = solver_options or {}
        given = dict(given) if isinstance(given, dict) else given
        memory = _memory_option(self.full_name, given)
        want_log = _log_option(self.full_name, given)
        self.check_options(given)
        opts = SolveOptions(time_limit, DEFAULT_SEED if seed is None else int(seed), warm_start,
                            given, rule, deadline=None if time_limit is None else t0 + time_limit,
                            max_memory_mb=memory, log=[] if want_log else None,
                            limit=time_limit)
        greedy = _GREEDY.get(model.kind) if self.GREEDY_START else None
        start = None
        if greedy is not None:
            fn, share = greedy
            start = fn(model, None if time_limit is None else t0 + share * time_limit,
                       opts.seed, limit=None if time_limit is None else share * time_limit)
            opts.start = start[0]
        out = self._refusal(model, opts)
        if out is None:
            if opts.deadline is not None:  # backends that time themselves get what is left
                opts.time_limit = max(opts.left(), 1e-3)
            try:
                out = self._solve(model, opts)
            except KeyboardInterrupt:  # Ctrl-C is a limit, as CP-SAT's and SCIP's own are
                out = Outcome(Termination.INTERRUPTED, extra={"interrupted": True})
        if start is not None:
            out = _no_worse_than(model, out, start)
            if (out.termination != Termination.OPTIMAL and out.decision is not None
                    and [int(v) for v in out.decision] == [int(v) for v in start[0]]):
                out.extra["greedy_fallback"] = True  # the answer is the heuristic start's
        if opts.log:  # the solver's own log first, then the backend's notes
            out.log = "\n".join(part.rstrip("\n") for part in [*opts.log, out.log] if part)
        canonical = _CANONICAL.get(model.kind)
        if (canonical is not None and not self.CANONICAL
                and out.termination == Termination.OPTIMAL
                and out.decision is not None):
            left = opts.left()
            decision = None if left is not None and left <= 0 else canonical(
                model, out.decision, left)
            out.extra["canonical"] = decision is not None
            if decision is not None:
                out.decision, out.objective = decision, None
        result = self._certify(model, out, 0.0, opts)
        return replace(result, wall_time=time.perf_counter() - t0)

    def _check_call(self, model, time_limit, seed) -> None:
        """``solve``'s model (one this backend solves, its library installed), time limit
        and seed checked: one-line errors."""
        if not self.supports(model):
            raise IncompatibleModelError(
                f"backend {self.full_name!r} does not solve {model.kind!r} models; "
                f"it supports {list(self.SUPPORTED_MODELS)}"
            )
        if not self.available():
            self.check_ready()
        if time_limit is not None and not (isinstance(time_limit, (int, float))
                                           and time_limit > 0 and math.isfinite(time_limit)):
            raise SolverOptionError(
                f"time_limit must be a positive number of seconds, got {time_limit!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, float))
                                 or int(seed) != seed or seed < 0):
            raise SolverOptionError(f"seed must be a non-negative integer, got {seed!r}")

    def footprint(self, model, opts: SolveOptions) -> Footprint | None:
        """The estimated build of this solve (``None``: nothing worth refusing for)."""
        return None

    def _refusal(self, model, opts: SolveOptions) -> Outcome | None:
        """A time or memory limit (no decision) with the reason when the estimated build,
        times ``BUILD_MARGIN``, cannot fit the memory cap or the time left; ``None`` when the
        backend may start."""
        left = opts.left()
        if left is not None and left <= 0:
            return Outcome(Termination.TIME_LIMIT,
                           extra={"refused": "no time left after the heuristic start (its "
                                             "answer is returned)"})
        est = self.footprint(model, opts)
        if est is None:
            return None
        cap = opts.max_memory_mb
        if cap is not None and BUILD_MARGIN * est.megabytes > cap:
            reason = (f"{est.what} needs about {est.megabytes:.3g} MB and cannot be stopped; "
                      f"it starts only when {BUILD_MARGIN:g}x that fits max_memory_mb={cap:g}")
            return Outcome(Termination.MEMORY_LIMIT, log=reason,
                           extra={"refused": reason})
        if left is not None and BUILD_MARGIN * est.seconds > left:
            reason = (f"{est.what} takes about {est.seconds:.1f} s and cannot be stopped; it "
                      f"starts only when {BUILD_MARGIN:g}x that fits the {left:.1f} s left")
            return Outcome(Termination.TIME_LIMIT, log=reason,
                           extra={"refused": reason})
        return None

    def check_options(self, solver_options: dict) -> None:
        """Refuse ``solver_options`` keys the backend does not take (one shared message)."""
        if not isinstance(solver_options, dict):
            raise SolverOptionError(f"backend {self.full_name!r}: solver_options must be an "
                                    f"object of name: value, got {solver_options!r}")
        unknown = sorted(set(solver_options) - set(self.OPTIONS) - set(COMMON_OPTIONS))
        if unknown and not self.NATIVE_OPTIONS:
            accepted = ", ".join(sorted(self.OPTIONS)) or "none"
            raise SolverOptionError(f"backend {self.full_name!r}: unknown solver option(s) "
                                    f"{', '.join(map(str, unknown))}; it accepts {accepted}")

    def _solve(self, model, opts: SolveOptions) -> Outcome:  # pragma: no cover - abstract
        raise NotImplementedError

    def _certify(self, model, out: Outcome, wall: float, opts: SolveOptions) -> Result:
        termination, bound = out.termination, out.bound
        if termination == Termination.OPTIMAL and not self.EXACT:
            termination = Termination.FINISHED  # heuristics never claim optimality
        held = not termination.rules_out_solution
        extra = dict(out.extra)
        pareto = None
        if out.pareto is not None:
            pareto = self._certify_pareto(model, out.pareto)
            if out.decision is None and pareto and held:
                rule = "bbsched" if opts.rule is None else opts.rule
                points = [(p.decision, p.objectives) for p in pareto]
                out.decision = pareto[choose(model, points, rule)].decision
                extra["rule"] = rule_name(rule)
        decision = certificate = objective = None
        if out.decision is not None and held:
            decision = tuple(int(v) for v in out.decision)
            certificate = model.evaluate(decision)
            if not certificate.feasible:
                raise InfeasibleSolutionError(
                    f"backend {self.full_name!r} returned a decision that violates the model "
                    f"(violations {certificate.violations})"
                )
            objective = float(certificate.objective)
            if not all(math.isfinite(f) for f in certificate.objectives):
                raise ModelError(
                    f"{model.kind} model: the objectives of {self.full_name!r}'s decision are "
                    f"{tuple(certificate.objectives)}: the data overflow float64; rescale them")
            if out.objective is not None and abs(out.objective - objective) > OBJECTIVE_TOL * max(
                1.0, abs(objective)
            ):
                raise InfeasibleSolutionError(
                    f"backend {self.full_name!r} reported objective {out.objective} but its "
                    f"decision evaluates to {objective}"
                )
            if termination == Termination.OPTIMAL and pareto is None:
                bound = objective
        if bound is not None and not abs(float(bound)) < SOLVER_INFINITY:
            bound = None  # a solver's infinity (SCIP's 1e20, HiGHS's inf): no bound
        if bound is None:
            bound = math.inf if model.sense == "max" else -math.inf
        return Result(
            termination=termination,
            backend=self.full_name,
            model_kind=model.kind,
            decision=decision,
            objective=objective,
            bound=float(bound),
            sense=model.sense,
            objectives=None if certificate is None else tuple(certificate.objectives),
            pareto=pareto,
            wall_time=wall,
            backend_version=self.version(),
            seed=opts.seed,
            certificate=certificate,
            selected_ids=None if decision is None else tuple(model.decision_ids(decision)),
            n_evals=out.n_evals,
            extra=extra,
            log=out.log,
        )


    def _certify_pareto(self, model, points) -> tuple[ParetoPoint, ...]:
        """Every Pareto point checked by ``model.evaluate``; objectives are the model's."""
        out = []
        for x, reported in points:
            decision = tuple(int(v) for v in x)
            cert = model.evaluate(decision)
            if not cert.feasible:
                raise InfeasibleSolutionError(
                    f"backend {self.full_name!r} returned a Pareto point that violates the "
                    f"model (violations {cert.violations})")
            if len(reported) != len(cert.objectives) or any(
                    abs(r - c) > OBJECTIVE_TOL * max(1.0, abs(c))
                    for r, c in zip(reported, cert.objectives)):
                raise InfeasibleSolutionError(
                    f"backend {self.full_name!r} reported Pareto objectives {tuple(reported)} but "
                    f"the decision evaluates to {cert.objectives}")
            out.append(ParetoPoint(decision, tuple(float(f) for f in cert.objectives)))
        return tuple(out)


@functools.cache
def _dist_version(module: str) -> str:
    """Installed version of the distribution providing ``module`` (cached: the metadata
    lookup costs ~0.25 ms, more than a small knapsack solve)."""
    dist = {"pyscipopt": "PySCIPOpt", "ortools": "ortools", "pyomo": "pyomo"}
    try:
        return metadata.version(dist.get(module, module))
    except metadata.PackageNotFoundError:
        return ""


def _memory_option(backend: str, options) -> float | None:
    """Pop and check ``max_memory_mb`` (a number > 0) from ``options``."""
    if not isinstance(options, dict) or "max_memory_mb" not in options:
        return None
    mb = options.pop("max_memory_mb")
    if isinstance(mb, bool) or not isinstance(mb, (int, float)) or not (
            mb > 0 and math.isfinite(mb)):
        raise SolverOptionError(f"backend {backend!r}: max_memory_mb must be a number of "
                                f"megabytes > 0, got {mb!r}")
    return float(mb)


def _log_option(backend: str, options) -> bool:
    """Pop and check ``solver_log`` (true or false) from ``options``."""
    if not isinstance(options, dict) or "solver_log" not in options:
        return False
    value = options.pop("solver_log")
    if not isinstance(value, bool):
        raise SolverOptionError(f"backend {backend!r}: solver_log must be true or false, got "
                                f"{value!r}")
    return value


# a backend's answer that stands as it is: optimal, or proven of the model, or a failure
_PROVEN = frozenset({Termination.OPTIMAL, Termination.INFEASIBLE, Termination.UNBOUNDED,
                     Termination.INFEASIBLE_OR_UNBOUNDED, Termination.ERROR})


def _no_worse_than(model, out: Outcome, start) -> Outcome:
    """``out`` with the greedy ``start = (decision, bound)`` folded in when ``out`` stopped
    without a proof: the tighter bound, and the greedy decision when ``out`` holds nothing
    better (by ``model.evaluate``, in the model's sense)."""
    decision, bound = start
    if out.termination in _PROVEN or out.pareto is not None:
        return out
    if bound is not None:
        mine = out.bound if out.bound is not None and abs(out.bound) < SOLVER_INFINITY else None
        out.bound = bound if mine is None else (
            min(bound, mine) if model.sense == "max" else max(bound, mine))
    if decision is None:
        return out
    greedy = model.evaluate(decision).objective
    sign = 1.0 if model.sense == "max" else -1.0
    if out.decision is not None:
        cert = model.evaluate(out.decision)
        if cert.feasible and sign * cert.objective >= sign * greedy - 1e-9 * max(1.0, abs(greedy)):
            return out
    out.decision, out.objective = list(decision), None
    out.extra["greedy_fallback"] = True  # the answer is the heuristic start's, said so here
    return out


def register(name: str, *, family: bool = False):
    """Class decorator: register a backend under ``name`` (a family prefix if ``family``)."""

    def deco(cls: type[Solver]) -> type[Solver]:
        refuse_duplicate("backend", name, _FAMILIES if family else _REGISTRY, cls)
        cls.name = name
        (_FAMILIES if family else _REGISTRY)[name] = cls
        return cls

    return deco


def register_canonical(kind: str):
    """Function decorator: the canonical tie-break of model ``kind``.  Every exact backend
    must return the same optimal decision; ``fn(model, decision, seconds_left)`` maps an
    optimal decision to the canonical optimum (``None`` when out of time), and the registry
    applies it to the OPTIMAL answers of backends that are not ``CANONICAL`` themselves."""

    def deco(fn):
        refuse_duplicate("canonical tie-break of", kind, _CANONICAL, fn)
        _CANONICAL[kind] = fn
        return fn

    return deco


def register_greedy(kind: str, share: float = GREEDY_SHARE):
    """Function decorator: the greedy start of model ``kind``, its best heuristic.
    ``fn(model, deadline, seed, limit=None)`` returns ``(decision, bound)``: the first complete
    pass of the model's greedy (always finished, whatever the deadline), improved until
    ``deadline`` (randomized by the solve's ``seed`` where it is), and a dual bound or None;
    ``limit`` is its share of the time limit in seconds (a heuristic whose work is fixed by the
    limit, not by the clock, reads it).  It may use
    ``share`` of the time limit (1.0: as long as the heuristic itself would run in the same
    limit, so an anytime backend is never below it; whatever it leaves goes to the backend).
    ``GREEDY_START`` backends begin from it and never return less."""
    if not 0 < share <= 1:
        raise ValueError(f"register_greedy({kind!r}): share must be in (0, 1], got {share!r}")

    def deco(fn):
        refuse_duplicate("greedy start of", kind, {k: v[0] for k, v in _GREEDY.items()}, fn)
        _GREEDY[kind] = (fn, float(share))
        return fn

    return deco


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in metadata.entry_points(group="hpcopt.solvers"):
        ep.load()  # the module registers its backends with @register


def names() -> list[str]:
    """Registered backend names; families appear as ``prefix:<solver>``."""
    _load_entry_points()
    return sorted(_REGISTRY) + sorted(f"{f}:<solver>" for f in _FAMILIES)


def get_solver(name: str) -> Solver:
    """Instantiate a backend by name (``dp``, ``cpsat``, ``pyomo:appsi_highs``, ...)."""
    _load_entry_points()
    if not isinstance(name, str) or not name:
        raise UnknownSolverError(f"backend name must be a non-empty string, got {name!r}")
    if name in _REGISTRY:
        return _REGISTRY[name]()
    prefix, sep, arg = name.partition(":")
    if sep and prefix in _FAMILIES and arg:
        return _FAMILIES[prefix](arg)
    known = sorted(_REGISTRY) + [f"{f}:<solver>" for f in sorted(_FAMILIES)]
    raise UnknownSolverError(
        f"unknown backend {name!r}; registered: {', '.join(known)}."
        + closest(name, list(_REGISTRY) + list(_FAMILIES))
    )


def solver_classes() -> dict[str, type[Solver]]:
    """Registered (non-family) backends by name."""
    _load_entry_points()
    return dict(_REGISTRY)


def family_classes() -> dict[str, type[Solver]]:
    _load_entry_points()
    return dict(_FAMILIES)


def available_backends(model_kind: str | None = None) -> list[str]:
    """Names of registered, installed backends (for one model kind if given)."""
    out = []
    for n, cls in solver_classes().items():
        if cls.available() and (model_kind is None or model_kind in cls.SUPPORTED_MODELS):
            out.append(n)
    return sorted(out)


def solve(model, backend: str | None = None, **kwargs) -> Result:
    """Solve ``model`` with the named backend (default: the model's ``default_backend``);
    see ``Solver.solve`` for the options."""
    return get_solver(backend or model.default_backend).solve(model, **kwargs)


def installed(module: str) -> bool:
    """Whether ``module`` can be imported here (without importing it; a finder that refuses
    the name counts as not installed)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_modules(cls: type[Solver]) -> str | None:
    """What backend class ``cls`` needs that is not installed and how to install it
    (``"torch: pip install 'hpcopt[ml]'"``), or None when it can run here."""
    missing = [m for m in cls.REQUIRED_MODULES if not installed(m)]
    if not missing:
        return None
    return ", ".join(missing) + (f": {cls.INSTALL_HINT}" if cls.INSTALL_HINT else "")


def describe() -> list[dict]:
    """One row per backend (name, models, exact, available, needs: what a backend that is
    not available needs, doc) for ``hpcopt backends``."""
    rows = []
    for n, cls in sorted(solver_classes().items()):
        rows.append(dict(backend=n, models=",".join(cls.SUPPORTED_MODELS), exact=cls.EXACT,
                         available=bool(cls.available()), needs=missing_modules(cls),
                         doc=cls.doc))
    for n, cls in sorted(family_classes().items()):
        rows.append(dict(backend=f"{n}:<solver>", models=",".join(cls.SUPPORTED_MODELS),
                         exact=cls.EXACT, available=bool(cls.available()),
                         needs=missing_modules(cls), doc=cls.doc))
    return rows
