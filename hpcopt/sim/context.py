"""The pass context: the part of a simulator's state that its pass strategies (the EASY rule,
``hpcopt.sim.easy``; one-pick passes, ``hpcopt.sim.picks``) read and change, named once.

The simulator builds one context and hands it to each strategy; a strategy reaches the
simulator's state only through it.  The fields are the live objects (the resource pool, the
running jobs' lists, the records, the subscribers), so the context never goes stale."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .records import Event


class PassContext:
    """What a pass strategy works on (module docstring).

    ``sim`` is the simulator (its clock ``sim.now``, and what a ``PickRequest`` carries),
    ``settings`` its ``DriverSettings``, ``pool`` its free resources, ``ends`` and
    ``running`` the running jobs in order of estimated end (``(estimated end, seq, nodes)``
    keys and ``RunningJob`` values), ``records`` the per-job records, ``start(job, mode,
    allocation)`` starts a queued job, ``begin()`` opens a pass (it counts it and returns
    the queue in the base order), ``serve_starved(ordered, started)`` starts the jobs of
    the starvation bound (returns the job to reserve, if one did not fit), ``finish(ordered,
    started)`` closes a pass (started jobs leave the queue, passed-over ones are counted, the
    ``pass`` event is announced)."""

    __slots__ = ("sim", "settings", "pool", "ends", "running", "records", "start", "begin",
                 "serve_starved", "finish", "subscribers")

    def __init__(self, sim: Any, settings, pool, ends: list, running: list, records: dict,
                 start: Callable, begin: Callable, serve_starved: Callable, finish: Callable,
                 subscribers: dict) -> None:
        self.sim, self.settings, self.pool = sim, settings, pool
        self.ends, self.running, self.records = ends, running, records
        self.start, self.begin = start, begin
        self.serve_starved, self.finish = serve_starved, finish
        self.subscribers = subscribers

    def listens(self, event: Event) -> bool:
        """Whether anyone subscribed to ``event``."""
        subs = self.subscribers
        return bool(subs) and bool(subs.get(event))

    def emit(self, event: Event, payload) -> None:
        """Tell ``event``'s subscribers: ``callback(sim, event, payload)``."""
        for cb in list(self.subscribers[event]):
            cb(self.sim, event, payload)
