"""The policy protocols and the policy registry.

A policy turns a ``Window`` into a ``Decision``; a one-pick policy (``OnePickPolicy``)
instead picks one job at a time inside the driver's pass (see ``hpcopt.sim.driver``).
``order`` is the base order it implies (the driver uses it unless told otherwise) and
``window`` its default window size (``None`` = the whole queue).  Policies are registered by
name so the CLI and the API can build them, and declare their own options (``Option``): the
CLI makes its policy flags from those declarations.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from numbers import Integral, Real
from os import PathLike
from typing import Any, ClassVar

from hpcopt.domain import Decision, Window
from hpcopt.errors import (
    HpcoptError,
    PolicyOptionError,
    RegistryError,
    SimulationError,
    SolverOptionError,
    UnknownPolicyError,
    closest,
    refuse_duplicate,
)
from hpcopt.sim.orders import ORDERS
from hpcopt.sim.protocol import PolicyHooks

_POLICIES: dict[str, tuple[type, dict]] = {}

# driver settings every policy may take as constructor options; they have their own flags
DRIVER_OPTIONS = ("order", "window", "starvation_bound", "seed")


@dataclass(frozen=True)
class Option:
    """A policy option: ``name`` (a constructor keyword), ``type`` (``int``, ``float``,
    ``str``, ``bool``, or ``"floats"`` for a comma-separated list), ``help``, optional
    ``choices`` or ``min`` (the least value).  Its default is the policy's (the
    registration's, else the constructor's)."""

    name: str
    type: Any
    help: str
    choices: tuple | None = None
    min: float | None = None


class Policy(PolicyHooks):
    """Base class: ``decide(window) -> Decision``; ``reset(seed)`` before each run.

    The optional hooks the driver reads (``one_pick``, ``order``, ``window``, ``backfill``,
    ``period``, ``attach`` ...) and their defaults are ``hpcopt.sim.protocol.PolicyHooks``.
    ``starts_prefix`` (``decide`` is exactly the head-first rule, start the longest prefix of
    the window that fits, which the driver then applies itself through
    ``hpcopt.sim.resources.fitting_prefix``) is reset to False for a subclass that overrides
    ``decide`` without setting it again.  ``OPTIONS`` declares the options a user may set
    (besides ``DRIVER_OPTIONS``); ``options`` holds every constructor option in force once
    built by ``make_policy``.
    """

    name: ClassVar[str] = ""
    doc: ClassVar[str] = ""
    OPTIONS: ClassVar[tuple[Option, ...]] = ()
    options: dict = {}

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "decide" in cls.__dict__ and "starts_prefix" not in cls.__dict__:
            cls.starts_prefix = False

    def reset(self, seed: int | None = None) -> None:
        """Prepare for a new simulation (re-seed random state)."""

    def decide(self, window: Window) -> Decision:  # pragma: no cover - abstract
        raise NotImplementedError


class OnePickPolicy(Policy):
    """A policy that picks one job at a time through the driver's pass protocol.

    ``pick(request) -> Job | None`` gets a ``hpcopt.sim.picks.PickRequest`` and answers one
    of its choices (``None`` ends the current stage).  ``reserve_rule`` (``"picked"`` or
    ``"oldest"``) says which job is reserved when a pick does not fit; ``fit_only`` makes only
    jobs that fit now legal (and reserves nothing).  Built as is (``OnePickPolicy(window=W,
    ...)``) it is the spec a gymnasium environment drives (``hpcopt.sim.env.PickEnv``).
    """

    one_pick: ClassVar[bool] = True

    def __init__(self, window: int | None = None, order: str | None = None,
                 reserve_rule: str = "picked", fit_only: bool = False) -> None:
        self.window = window
        self.order = order
        self.reserve_rule = reserve_rule
        self.fit_only = fit_only

    def decide(self, window: Window) -> Decision:
        raise SimulationError(f"policy {self.name or type(self).__name__!r} picks one job at "
                              "a time; the driver asks it through pick()")

    def pick(self, request):
        raise SimulationError(f"{type(self).__name__} is driven from outside (a gymnasium "
                              "environment sends the picks); it has no pick() of its own")


# the longest time limit a policy takes per solve (about 31 years): beyond it a number is a
# mistake, and some solvers refuse it (SCIP's limit is 1e20 s)
MAX_TIME_LIMIT = 1e9


def window_solver(backend: str, kind: str, time_limit: float | None = None):
    """The backend a policy solves its ``kind`` window models with, checked when the policy
    is built: a run or a request is refused alike whether or not some pass needs a solve.
    ``backend`` must be a registered backend that solves ``kind`` models and can run here
    (a family's named solver exists); ``time_limit`` is None or a number of seconds in
    (0, ``MAX_TIME_LIMIT``]."""
    from hpcopt.solvers import available_backends, get_solver
    from hpcopt.solvers.registry import family_classes

    if time_limit is not None and not (_finite(time_limit)
                                       and 0 < time_limit <= MAX_TIME_LIMIT):
        raise SolverOptionError(f"time_limit: expected a number of seconds > 0 and <= "
                                f"{MAX_TIME_LIMIT:g}, got {repr(time_limit)[:40]}")
    solver = get_solver(backend)
    if kind not in solver.SUPPORTED_MODELS:
        able = available_backends(kind) + [f"{name}:<solver>" for name, cls in
                                           family_classes().items()
                                           if kind in cls.SUPPORTED_MODELS]
        raise PolicyOptionError(f"backend {backend!r} does not solve {kind} models; backends "
                                f"that do: {', '.join(able)}")
    solver.check_ready()
    return solver


def register_policy(name: str, **defaults):
    """Class decorator: register a policy class under ``name`` with constructor defaults.

    A default that is not a driver setting (``kind="pg"``, ``weights=(0.8, 0.2)``) is what the
    name means: ``make_policy`` refuses another value for it, so a name runs what it says.
    A name registered twice by different classes is a ``RegistryError``."""

    def deco(cls):
        refuse_duplicate("policy", name, {k: c for k, (c, _) in _POLICIES.items()}, cls)
        if name in _POLICIES and _POLICIES[name][1] != defaults:
            raise RegistryError(f"policy {name!r} is already registered with other defaults")
        _POLICIES[name] = (cls, defaults)
        return cls

    return deco


def _plain(value):
    return tuple(value) if isinstance(value, list) else value


def fixed_options(name: str) -> dict:
    """The options that define policy ``name`` (its registration's, driver settings aside)."""
    _, defaults = _lookup(name)
    return {k: v for k, v in defaults.items() if k not in DRIVER_OPTIONS}


def _lookup(name: str):
    try:
        return _POLICIES[name]
    except KeyError:
        raise UnknownPolicyError(
            f"unknown policy {name!r}; registered: {', '.join(sorted(_POLICIES))}."
            + closest(name, _POLICIES)
        ) from None


def policy_options(name: str) -> set[str]:
    """Keyword options the policy ``name`` accepts."""
    cls, _ = _lookup(name)
    return set(inspect.signature(cls.__init__).parameters) - {"self"} - set(fixed_options(name))


def option_defaults(name: str) -> dict:
    """Every constructor option of policy ``name`` with its default (registration first)."""
    cls, defaults = _lookup(name)
    params = inspect.signature(cls.__init__).parameters
    out = {k: p.default for k, p in params.items()
           if k != "self" and p.default is not inspect.Parameter.empty}
    out.update(defaults)
    return out


def declared_options(name: str) -> list[tuple[Option, Any]]:
    """The declared options of policy ``name`` with their defaults."""
    cls, _ = _lookup(name)
    defaults = option_defaults(name)
    return [(opt, defaults.get(opt.name)) for opt in cls.OPTIONS]


def check_policy(name: str, **options) -> None:
    """``make_policy``'s checks without building the policy (no checkpoint loaded, no input
    read): the name, each option's name and type, a package the policy needs (torch for the
    learned ones) and a named solver ``backend`` -- what a command checks before it reads
    its inputs."""
    _checked_options(name, options)
    missing = missing_extra(name)
    if missing is not None:
        raise HpcoptError(f"policy {name!r} needs {missing}")
    backend = options.get("backend")
    if isinstance(backend, str):
        from hpcopt.solvers import get_solver

        get_solver(backend)


def _checked_options(name: str, options: dict) -> dict:
    """The options a policy's constructor gets (its fixed ones left out), checked."""
    cls, _ = _lookup(name)
    fixed = fixed_options(name)
    for key in sorted(set(options) & set(fixed)):
        if _plain(options[key]) != _plain(fixed[key]):
            others = sorted(n for n, (c, _) in _POLICIES.items() if c is cls and n != name)
            raise PolicyOptionError(
                f"policy {name!r} means {key}={fixed[key]!r}; another {key} is another "
                f"policy ({', '.join(others) or 'none registered'})")
    options = {k: v for k, v in options.items() if k not in fixed}
    accepted = policy_options(name)
    unknown = set(options) - accepted
    if unknown:
        raise PolicyOptionError(
            f"policy {name!r} does not take option(s) {sorted(unknown)}; "
            f"it takes {sorted(accepted)}"
        )
    _check_declared(name, cls, options)
    return options


def make_policy(name: str, **options) -> Policy:
    """Build a registered policy; ``options`` override its defaults.

    An option the policy does not take, or a value it refuses, is a ``PolicyOptionError``
    naming the option; ``policy.options`` records every option in force, defaults included.
    """
    cls, defaults = _lookup(name)
    options = _checked_options(name, options)
    policy = cls(**{**defaults, **options})
    policy.name = name
    policy.options = {**option_defaults(name), **options}
    return policy


def build_policy(policy, **options):
    """A policy object from a name plus options, rejecting options it does not take."""
    if hasattr(policy, "decide"):
        if options:
            raise PolicyOptionError(f"options {sorted(options)} given with a policy object")
        return policy
    return make_policy(policy, **options)


def _finite(v) -> bool:
    return isinstance(v, Real) and not isinstance(v, bool) and math.isfinite(v)


_TYPES = {int: ("an integer", lambda v: isinstance(v, Integral) and not isinstance(v, bool)),
          float: ("a finite number", _finite),
          "floats": ("a list of finite numbers", lambda v: isinstance(v, Iterable)
                     and not isinstance(v, (str, bytes, dict)) and all(map(_finite, v))),
          bool: ("true or false", lambda v: isinstance(v, bool)),
          # a path passes as text; a callable where a policy takes one (a decision rule)
          str: ("a string", lambda v: isinstance(v, (str, PathLike)) or callable(v))}


def _driver_options() -> tuple[Option, ...]:
    return (Option("order", str, "", choices=tuple(ORDERS)), Option("window", int, "", min=1),
            Option("starvation_bound", int, "", min=1), Option("seed", int, "", min=0))


def _check_declared(name: str, cls: type, options: dict) -> None:
    """Refuse a declared or driver option of the wrong type or below its minimum (``None``
    passes where it is the default), whatever the run later needs."""
    defaults = option_defaults(name)
    for opt in cls.OPTIONS + _driver_options():
        value = options.get(opt.name)
        if opt.name not in options or (value is None and defaults.get(opt.name) is None):
            continue
        what, ok = _TYPES.get(opt.type, (None, None))
        if opt.choices:  # a name: which names is the policy's (or driver's) own check
            what, ok = f"one of {', '.join(map(str, opt.choices))}", _TYPES[str][1]
        elif opt.min is not None and ok is not None:
            what, test = f"{what} >= {opt.min}", ok
            ok = lambda v, test=test, low=opt.min: test(v) and v >= low  # noqa: E731
        if ok is not None and not ok(value):
            raise PolicyOptionError(f"policy {name!r} option {opt.name}: expected {what}, got "
                                    f"{repr(value)[:40]}")


def policy_names() -> list[str]:
    return sorted(_POLICIES)


def _summary(doc: str | None) -> str:
    """A docstring's first sentence (its first paragraph when no sentence ends there), on one
    line: what a policy does, for the listing."""
    para = " ".join((doc or "").strip().split("\n\n")[0].split())
    end = re.search(r"\.\s+(?=[A-Z`])", para)  # a sentence ends; "a . b" is a dot product
    return para if end is None else para[:end.start() + 1]


# a policy's EXTRA -> (the module it needs, how to install it)
EXTRAS = {"ml": ("torch", "pip install 'hpcopt[ml]'")}


def missing_extra(name: str) -> str | None:
    """What policy ``name`` needs that is not installed (``"torch: pip install
    'hpcopt[ml]'"``), or None when it can run here."""
    from hpcopt.solvers.registry import installed

    cls, _ = _lookup(name)
    extra = getattr(cls, "EXTRA", None)
    if extra is None:
        return None
    module, hint = EXTRAS.get(extra, (extra, f"pip install 'hpcopt[{extra}]'"))
    return None if installed(module) else f"{module}: {hint}"


def describe_policies() -> list[dict]:
    """One row per policy (name, default order, default window, the pip extra it needs
    (class attribute ``EXTRA``, e.g. ``"ml"``), options, doc) for ``hpcopt policies``."""
    rows = []
    for name in sorted(_POLICIES):
        cls, defaults = _POLICIES[name]
        p = cls(**defaults)
        opts = ", ".join(f"{o.name}={d!r}" for o, d in declared_options(name))
        rows.append(dict(policy=name, order=p.order or "fcfs", window=p.window,
                         needs=getattr(cls, "EXTRA", None), options=opts,
                         doc=_summary(cls.__doc__)))
    return rows
