"""The policy protocol: everything the driver reads from a policy, declared once.

A policy is any object with ``decide(window) -> Decision`` (or, when ``one_pick``,
``pick(request)``) and ``reset(seed)``.  Every other hook is optional: ``PolicyHooks``
lists them with the default the driver uses when a policy lacks one, and ``policy_hooks``
is how the driver reads them.  ``hpcopt.policies.base.Policy`` inherits these defaults, so
a policy class overrides only what it needs.
"""

from __future__ import annotations

from typing import Any


class PolicyHooks:
    """The optional hooks and attributes of a policy, with their defaults."""

    one_pick: bool = False
    """Picks one job at a time through ``pick(request)`` instead of answering ``decide``."""
    fit_only: bool = False
    """One-pick: only the jobs that fit now are legal picks, and nothing is reserved."""
    reserve_rule: str = "picked"
    """One-pick: the job reserved when a pick does not fit (``picked`` or ``oldest``)."""
    order: str | None = None
    """The base order the policy implies (``fcfs``, ``sjf``, ``wfp``); ``None``: fcfs."""
    backfill: str | bool = "easy"
    """The backfilling it runs with unless the caller says otherwise (``easy``, ``none``)."""
    window: int | None = None
    """Its default window size W; ``None``: the whole queue."""
    window_fixed: bool = False
    """W is fixed (a network's input size): another ``window=`` is an error."""
    starvation_bound: int | None = None
    """Its default starvation bound K (a job passed over K times is served first); off."""
    period: float | None = None
    """Its default pass period in seconds; ``None``: a pass at every event."""
    waits_for_head: bool = False
    """Starts nothing while the first queued job does not fit (lets the driver skip passes)."""
    machine: str | None = None
    """The machine it needs: ``capacity`` (cloud slots: a capacity profile), ``topology``
    (nodes told apart on a network), or ``None``: any (embeddings refuse it up front)."""
    launch_delay: float | None = None
    """Its default launch delay: seconds from a start decision to the real start (a
    resource manager's latency it models); ``None``: none, unless the caller sets one."""
    checks_limits: bool = False
    """``decide`` applies the site's limits itself, job by job as it starts them
    (``Simulator.limit_usage``): the driver offers it every queued job, not only those the
    limits admit with the jobs before them counted as started."""
    starts_prefix: bool = False
    """``decide`` is exactly the head-first rule, which the driver then applies itself; read
    from the class, and ignored when ``decide`` is replaced on the instance."""

    def attach(self, sim) -> None:
        """Called once by the driver's constructor, before any other hook is read (load a
        checkpoint, fix the window, subscribe to events)."""

    def set_weights(self, w1: float, w2: float, end: int | None = None) -> None:
        """The prices of a cloud day, set by whoever knows them (``hpcopt.osdec``, the
        service's ``window.weights``, ``hpcopt.sim.decide``): ``w1`` per unit of delay, ``w2``
        per unit of capacity overload, up to slot ``end``.  Ignored by a policy that prices
        neither."""


HOOKS = tuple(name for name, value in vars(PolicyHooks).items()
              if not name.startswith("_") and not callable(value))


def policy_hooks(policy: Any) -> PolicyHooks:
    """The hooks of ``policy`` with the declared defaults filled in (``attach`` aside)."""
    hooks = object.__new__(PolicyHooks)
    for name in HOOKS:
        setattr(hooks, name, getattr(policy, name, getattr(PolicyHooks, name)))
    hooks.starts_prefix = bool(getattr(type(policy), "starts_prefix", False)) \
        and "decide" not in getattr(policy, "__dict__", ())
    return hooks
