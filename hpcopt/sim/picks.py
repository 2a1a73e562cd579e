"""One-pick passes of the driver (module docstring of ``hpcopt.sim.driver``): the requests
a one-pick policy answers, what became of each pick, and the select and backfill stages that
ask for them, with the driver's own fit, reserve and backfill steps."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from hpcopt.domain import Job
from hpcopt.errors import InvalidDecisionError

from .context import PassContext
from .easy import EasyBackfill
from .records import BACKFILLED, DROPPED, READY, RESERVED, Event
from .settings import RESERVE_RULES

SELECT, BACKFILL = "select", "backfill"  # the two stages of a one-pick pass
__all__ = ["BACKFILL", "RESERVE_RULES", "SELECT", "OnePickPasses", "Pick", "PickRequest"]


@dataclass(frozen=True, slots=True)
class PickRequest:
    """One choice a one-pick policy makes inside a pass.

    ``choices`` are the jobs it may pick from (at most W); ``mask`` marks the legal ones
    (``None``: all are).  ``waiting`` are the jobs of this pass not started yet, in the base
    order (a live list: read it before answering).  In stage ``backfill`` the pass reserved
    ``reserved`` at ``shadow``.  ``pass_index`` counts the driver's passes.
    """

    stage: str
    choices: Sequence[Job]
    mask: Sequence[bool] | None
    waiting: Sequence[Job]
    reserved: Job | None
    shadow: float | None
    pass_index: int
    sim: Any  # the Simulator that asks (this module sits below the driver)


@dataclass(frozen=True, slots=True)
class Pick:
    """What became of a pick: ``mode`` is ``ready`` or ``backfilled`` when the job started,
    ``reserved`` when it did not fit (the reservation then went to it or to the oldest job);
    ``waiting`` are the jobs of the pass still waiting afterwards and ``longest_wait`` the
    longest wait among those waiting before the pick (the picked job included)."""

    job: Job
    mode: str
    waiting: Sequence[Job]
    longest_wait: float


class OnePickPasses:
    """A pass of a one-pick policy, as a generator of requests, over a ``PassContext`` and
    the EASY rule.  It keeps the one state of its own: the job the policy reserved, which
    keeps its reservation over later passes until it starts (``held``)."""

    __slots__ = ("ctx", "easy", "held")

    def __init__(self, ctx: PassContext, easy: EasyBackfill) -> None:
        self.ctx = ctx
        self.easy = easy
        self.held: Job | None = None

    def _holding(self) -> Job | None:
        """The reserved job, while it still waits (as its record now holds it: a start hook
        may have replaced it); ``None`` once it started or was dropped."""
        held = self.held
        if held is not None:
            rec = self.ctx.records[held.id]
            if rec.start == rec.start or rec.mode == DROPPED:
                self.held = None
                return None
            return rec.job
        return None

    def run(self) -> Iterator[PickRequest]:
        """One pass of a one-pick policy (module docstring of ``hpcopt.sim.driver``)."""
        ctx = self.ctx
        ordered = ctx.begin()
        if ordered is None:
            return
        waiting = list(ordered)
        started: set[int] = set()
        reserved: Job | None = None
        if ctx.settings.starvation_bound is not None:
            reserved = ctx.serve_starved(ordered, started)
            if started:
                waiting = [j for j in waiting if j.id not in started]
        held = self._holding()
        if reserved is None and held is not None:
            if ctx.pool.fits(held):
                self._start_waiting(held, READY, None, waiting, started)
            else:
                reserved = held
        if reserved is None:
            reserved = yield from self._select_stage(waiting, started)
        if reserved is not None and ctx.settings.backfill:
            shadow, extra = self.easy.reserve(reserved)
            yield from self._backfill_stage(waiting, reserved, shadow, extra, started)
        ctx.finish(ordered, started)

    def _select_stage(self, waiting: list[Job], started: set[int]):
        """Picks among the first W waiting jobs; returns the job reserved, if any."""
        ctx = self.ctx
        pool, settings = ctx.pool, ctx.settings
        w, fit_only = settings.window, settings.fit_only
        while waiting:
            choices = waiting if w is None or w >= len(waiting) else waiting[:w]
            mask = None
            if fit_only:
                mask = [pool.fits(j) for j in choices]
                if not any(mask):
                    return None
            job = yield PickRequest(SELECT, choices, mask, waiting, None, None,
                                    ctx.sim.passes, ctx.sim)
            if job is None:
                return None
            self._check_pick(job, choices, mask)
            longest = self._longest_wait(waiting)
            if pool.fits(job):
                self._start_waiting(job, READY, None, waiting, started)
                self._emit_pick(job, READY, waiting, longest)
                continue
            target = job if settings.reserve_rule == "picked" else waiting[0]
            if target is not job and pool.fits(target):  # the oldest fits: start it, go on
                self._start_waiting(target, READY, None, waiting, started)
                self._emit_pick(job, RESERVED, waiting, longest)
                continue
            self.held = target
            self._emit_pick(job, RESERVED, waiting, longest)
            return target
        return None

    def _backfill_stage(self, waiting: list[Job], reserved: Job, shadow: float, extra,
                        started: set[int]):
        """Picks among the backfill candidates (the first W) until none is left."""
        ctx = self.ctx
        w = ctx.settings.window
        while True:
            cands = self.easy.candidates(waiting, reserved, shadow, extra)
            found = [c for _, c in zip(range(w), cands)] if w is not None else list(cands)
            if not found:
                return
            choices = [job for job, _ in found]
            job = yield PickRequest(BACKFILL, choices, None, waiting, reserved, shadow,
                                    ctx.sim.passes, ctx.sim)
            if job is None:
                return
            self._check_pick(job, choices, None)
            longest = self._longest_wait(waiting)
            alloc = next(a for j, a in found if j is job)
            if alloc is not None:
                extra.take(job, alloc)
            self._start_waiting(job, BACKFILLED, alloc, waiting, started)
            self._emit_pick(job, BACKFILLED, waiting, longest)

    def _check_pick(self, job, choices: Sequence[Job], mask) -> None:
        name = getattr(self.ctx.sim.policy, "name", "?")
        for i, j in enumerate(choices):
            if j is job:
                if mask is not None and not mask[i]:
                    raise InvalidDecisionError(
                        f"policy {name!r} picked job {job.id}, which does not fit now")
                return
        raise InvalidDecisionError(
            f"policy {name!r} picked {getattr(job, 'id', job)!r}, which is not among its "
            "choices")

    def _start_waiting(self, job: Job, mode: str, alloc, waiting: list[Job],
                       started: set[int]) -> None:
        self.ctx.start(job, mode, alloc)
        started.add(job.id)
        waiting.remove(job)

    def _longest_wait(self, waiting: list[Job]) -> float:
        if not self.ctx.listens(Event.PICK):
            return math.nan  # nobody listens: skip the O(queue) scan
        return self.ctx.sim.now - min(j.submit for j in waiting)

    def _emit_pick(self, job: Job, mode: str, waiting: list[Job], longest: float) -> None:
        if self.ctx.listens(Event.PICK):
            self.ctx.emit(Event.PICK, Pick(job, mode, waiting, longest))
