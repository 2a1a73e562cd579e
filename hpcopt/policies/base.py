"""The policy protocol and the policy registry.

A policy turns a ``Window`` into a ``Decision``.  ``order`` is the base order it implies (the
driver uses it unless told otherwise) and ``window`` its default window size (``None`` = the
whole queue).  Policies are registered by name so the CLI and the API can build them.
"""

from __future__ import annotations

from typing import ClassVar

from hpcopt.domain import Decision, Window
from hpcopt.errors import UnknownPolicyError, closest

_POLICIES: dict[str, type[Policy]] = {}


class Policy:
    """Base class: ``decide(window) -> Decision``; ``reset(seed)`` before each run."""

    name: ClassVar[str] = ""
    doc: ClassVar[str] = ""
    order: str | None = None
    window: int | None = None

    def reset(self, seed: int | None = None) -> None:
        """Prepare for a new simulation (re-seed random state)."""

    def decide(self, window: Window) -> Decision:  # pragma: no cover - abstract
        raise NotImplementedError


def register_policy(name: str, **defaults):
    """Class decorator: register a policy class under ``name`` with constructor defaults."""

    def deco(cls):
        _POLICIES[name] = (cls, defaults)
        return cls

    return deco


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
    import inspect

    cls, _ = _lookup(name)
    return set(inspect.signature(cls.__init__).parameters) - {"self"}


def make_policy(name: str, **options) -> Policy:
    """Build a registered policy; ``options`` override its defaults.

    An option the policy does not take is a ``SimulationError`` naming the accepted ones.
    """
    cls, defaults = _lookup(name)
    accepted = policy_options(name)
    unknown = set(options) - accepted
    if unknown:
        from hpcopt.errors import SimulationError

        raise SimulationError(
            f"policy {name!r} does not take option(s) {sorted(unknown)}; "
            f"it takes {sorted(accepted)}"
        )
    policy = cls(**{**defaults, **options})
    policy.name = name
    return policy


def policy_names() -> list[str]:
    return sorted(_POLICIES)


def describe_policies() -> list[dict]:
    """One row per policy (name, default order, default window, doc) for ``hpcopt policies``."""
    rows = []
    for name in sorted(_POLICIES):
        cls, defaults = _POLICIES[name]
        p = cls(**defaults)
        rows.append(dict(policy=name, order=p.order or "fcfs", window=p.window,
                         doc=(cls.__doc__ or "").strip().splitlines()[0]))
    return rows
