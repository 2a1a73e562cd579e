"""The driver's settings: what a caller asks (``DriverOptions``, ``None`` = the policy's own)
resolved once, against the policy's hooks, into the frozen ``DriverSettings`` a
``Simulator`` runs under."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from hpcopt.domain import Job
from hpcopt.errors import SimulationError

from .protocol import policy_hooks

RESERVE_RULES = ("picked", "oldest")  # the job a one-pick pass reserves (hpcopt.sim.picks)


@dataclass(frozen=True, slots=True)
class DriverOptions:
    """The driver settings a caller chooses; ``None`` leaves each to the policy (``order``:
    its base order, else fcfs; ``backfill``: ``"easy"`` or ``"none"``, default its own, easy
    for most; ``window`` W; ``starvation_bound`` K; ``period``: passes every so many seconds
    instead of at every event).  ``launch_delay`` is seconds between a start decision and
    the real start (or ``f(job) -> seconds``; ``None``: the policy's own, else 0);
    ``progress`` shows a progress bar; ``limits`` are the site's association and QOS
    limits (``hpcopt.sim.limits.SiteLimits``: a job a limit blocks does not start);
    ``reservations`` are advance reservations and maintenance windows
    (``hpcopt.sim.reservations.Reservation``: their nodes are kept from the jobs they do
    not admit)."""

    order: str | None = None
    backfill: str | bool | None = None
    window: int | None = None
    starvation_bound: int | None = None
    period: float | None = None
    progress: bool = False
    launch_delay: float | Callable[[Job], float] | None = None
    limits: Any = None
    reservations: Any = None

    def as_kwargs(self) -> dict:
        """These options as keywords (of ``Simulator``, ``hpcopt.sim.forecast.forecast``)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def driver_options(options: DriverOptions | None, settings: dict) -> DriverOptions:
    """The ``DriverOptions`` a ``Simulator`` was given: ``options`` itself, or the same
    settings as keywords (``settings``), not both; an unknown name is a ``TypeError`` that
    lists the known ones."""
    if options is not None:
        if settings:
            raise TypeError(f"Simulator: give the driver settings as options= or as keywords, "
                            f"not both (got options and {', '.join(sorted(settings))})")
        return options
    unknown = sorted(set(settings) - {f.name for f in fields(DriverOptions)})
    if unknown:
        known = ", ".join(f.name for f in fields(DriverOptions))
        raise TypeError(f"Simulator: unknown driver setting(s) {', '.join(unknown)}; the "
                        f"settings are {known}")
    return DriverOptions(**settings)


@dataclass(frozen=True, slots=True)
class DriverSettings:
    """The settings a simulator runs under, resolved and checked (``resolve``)."""

    order: str
    """The base order: ``fcfs``, ``sjf`` or ``wfp``."""
    backfill: bool
    """EASY backfilling on."""
    window: int | None
    """W, the queued jobs a policy sees; ``None``: all."""
    starvation_bound: int | None
    """K: a job passed over K times is served first; ``None``: off."""
    period: float | None
    """Seconds between passes; ``None``: a pass at every event time."""
    progress: bool
    """A progress bar over completed jobs."""
    launch_delay: float
    """Seconds from a start decision to the job's real start (0 when ``delay_of`` is set)."""
    delay_of: Callable[[Job], float] | None
    """Each start's own delay, drawn per job; ``None``: ``launch_delay`` for all."""
    one_pick: bool
    """The policy picks one job at a time (``hpcopt.sim.picks``) instead of deciding."""
    fit_only: bool
    """One-pick: only jobs that fit are legal picks, and nothing is reserved."""
    reserve_rule: str
    """One-pick: the job reserved when a pick does not fit (``picked`` or ``oldest``)."""
    waits_for_head: bool
    """The policy starts nothing while the head does not fit (passes may be skipped)."""
    limits: Any = None
    """The site's limits (``SiteLimits``; ``None``: none): each pass starts only the jobs
    they admit."""
    checks_limits: bool = False
    """The policy applies the limits itself: each pass offers it every queued job."""
    reservations: tuple = ()
    """Advance reservations and maintenance windows (``Reservation``; empty: none)."""

    @classmethod
    def resolve(cls, policy, options: DriverOptions, *, capacity: bool = False
                ) -> DriverSettings:
        """``options`` completed by ``policy``'s hooks (``hpcopt.sim.protocol``) and checked;
        ``capacity``: the system has a time-varying capacity (no EASY backfilling there)."""
        hooks = policy_hooks(policy)
        one_pick = bool(hooks.one_pick)
        if one_pick and hooks.reserve_rule not in RESERVE_RULES:
            raise SimulationError(f"reserve rule must be one of {RESERVE_RULES}, got "
                                  f"{hooks.reserve_rule!r}")
        backfill = hooks.backfill if options.backfill is None else options.backfill
        if backfill not in (True, False, "easy", "none"):
            raise SimulationError(f"backfill must be 'easy' or 'none', got {backfill!r}")
        backfill = backfill in (True, "easy")
        if capacity and backfill:
            raise SimulationError("EASY backfilling plans on a fixed machine; a system with a "
                                  "capacity profile runs with backfill='none'")
        window = options.window
        if window is not None and hooks.window_fixed and window != hooks.window:
            raise SimulationError(f"policy {getattr(policy, 'name', '?')!r} picks among "
                                  f"W={hooks.window} jobs (its network's input); window "
                                  f"{window} does not apply")
        window = hooks.window if window is None else window
        if window is not None and window < 1:
            raise SimulationError(f"window must be >= 1, got {window}")
        bound = hooks.starvation_bound if options.starvation_bound is None \
            else options.starvation_bound
        if bound is not None and bound < 1:
            raise SimulationError(f"starvation bound must be >= 1, got {bound}")
        period = hooks.period if options.period is None else options.period
        if period is not None and not period > 0:
            raise SimulationError(f"period must be > 0 seconds, got {period}")
        delay = options.launch_delay
        if delay is None:
            delay = hooks.launch_delay or 0.0
        delay_of = delay if callable(delay) else None
        if delay_of is not None:
            delay = 0.0
        elif not (math.isfinite(delay) and delay >= 0):
            raise SimulationError(f"launch delay must be >= 0 seconds, got {delay!r}")
        return cls(order=options.order or hooks.order or "fcfs", backfill=backfill,
                   window=window, starvation_bound=bound, period=period,
                   progress=bool(options.progress), launch_delay=float(delay),
                   delay_of=delay_of, one_pick=one_pick, fit_only=bool(hooks.fit_only),
                   reserve_rule=hooks.reserve_rule, waits_for_head=bool(hooks.waits_for_head),
                   limits=options.limits or None, checks_limits=bool(hooks.checks_limits),
                   reservations=tuple(options.reservations or ()))
