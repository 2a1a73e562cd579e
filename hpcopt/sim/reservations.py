"""Advance reservations and maintenance windows: nodes set aside for a fixed time (one
implementation for the simulator and the Slurm adapter).

A ``Reservation`` takes ``nodes`` nodes from ``start`` to ``end``; from ``known`` on (when
it was made) it is a fixed-time block for every job it does not admit (its ``users`` and
``accounts`` may run inside it; a maintenance window admits nobody).  Like the EASY
reservation of the head job, a block is a promise about the future: a job may start now
only if, on the free-node profile with the running jobs counted to their limit ends, it
fits from now to its own limit end beside every block it would meet.  The head job's
shadow is the first time at which it fits the profile with the blocks in it, and a job
backfills when it fits the profile with the head's reservation added as one more block
(which, without blocks, is EASY's test).  Blocks never take nodes from the pool: they only
keep jobs out, so a block "starts" on nodes that are free by construction; a running job
that overruns its limit still holds its nodes (the block then starts late on them).

Blocks are counted nodes: they apply to machines of interchangeable nodes (``NodePool``).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hpcopt.domain import Job
from hpcopt.errors import HpcoptError

from .resources import NodePool, ResourcePool


class ReservationError(HpcoptError):
    """A reservations file or value that cannot be read (one line: where and what)."""


@dataclass(frozen=True)
class Reservation:
    """``nodes`` nodes set aside from ``start`` to ``end`` (seconds), known from ``known``
    (``-inf``: always), for the jobs of ``users`` and ``accounts`` (empty: for nobody, a
    maintenance window)."""

    start: float
    end: float
    nodes: int
    users: frozenset[str] = frozenset()
    accounts: frozenset[str] = frozenset()
    name: str = ""
    known: float = -math.inf

    def __post_init__(self) -> None:
        where = f"reservation {self.name or '(unnamed)'}"
        if not (math.isfinite(self.start) and self.end > self.start):
            raise ReservationError(f"{where}: expected a finite start before its end, got "
                                   f"start {self.start!r}, end {self.end!r}")
        if isinstance(self.nodes, bool) or not isinstance(self.nodes, int) or self.nodes < 1:
            raise ReservationError(f"{where}: expected nodes >= 1, got {self.nodes!r}")
        if self.known > self.start:
            raise ReservationError(f"{where}: known at {self.known:g}, after its start "
                                   f"{self.start:g}")

    def admits(self, user: str, account: str = "") -> bool:
        """Whether a job of ``user`` in ``account`` may run inside it."""
        return user in self.users or (bool(account) and account in self.accounts)


def _who(job: Job, accounts: Mapping) -> tuple[str, str]:
    return str(job.user), str(accounts.get(job.id, ""))


class ReservedPool(ResourcePool):
    """A ``NodePool`` with reservations in it (module docstring): ``fits`` says whether a job
    may start now beside the blocks it meets, ``reservation`` and ``backfill_candidates``
    are EASY's rule on the free-node profile with the blocks.  ``clock`` is the simulator
    (its ``now``, its launch delay ``_delay`` and the running jobs' ``_run_keys``: ``(limit
    end, seq, nodes)``); ``accounts`` maps job ids to accounts (a job's user is its
    ``user``).  A copy counts what it takes on top of the running jobs (a trial)."""

    __slots__ = ("base", "reservations", "clock", "accounts", "taken", "live")
    counts_only = False

    def __init__(self, base: NodePool, reservations: Sequence[Reservation], clock,
                 accounts: Mapping | None = None, taken=None, live: bool = True) -> None:
        if type(base) is not NodePool:
            raise HpcoptError("reservations are planned on machines of interchangeable nodes "
                              "(no topology, burst buffer, SSD classes or capacity profile)")
        self.base, self.reservations, self.clock = base, tuple(reservations), clock
        self.accounts = accounts or {}
        self.taken: list[tuple[float, int]] = list(taken or ())
        self.live = live

    # -- the pool's own rules, delegated
    @property
    def total(self) -> int:
        return self.base.total

    @property
    def free(self) -> int:
        return self.base.free

    @property
    def free_nodes(self) -> int:
        return self.base.free

    def free_dict(self) -> dict[str, float]:
        return self.base.free_dict()

    def plan(self, job: Job):
        return self.base.plan(job)

    def why_not(self, job: Job) -> str:
        if self.base.fits(job):
            return f"needs {job.nodes} nodes beside a reservation it would meet"
        return self.base.why_not(job)

    def copy(self) -> ReservedPool:
        return ReservedPool(self.base.copy(), self.reservations, self.clock, self.accounts,
                            self.taken, live=False)

    def take(self, job: Job, allocation=None):
        got = self.base.take(job, allocation)
        if not self.live:  # the simulator lists what really starts (its _run_keys)
            clock = self.clock
            self.taken.append((clock.now + clock._delay + job.walltime, job.nodes))
        return got

    def give(self, job: Job, allocation) -> None:
        self.base.give(job, allocation)

    # -- the blocks
    def blocks(self, job: Job) -> list[tuple[float, float, int]]:
        """The blocks ``job`` must stay out of now: ``(start, end, nodes)`` of the known
        reservations not over that do not admit it."""
        now = self.clock.now
        user, account = _who(job, self.accounts)
        return [(r.start, r.end, r.nodes) for r in self.reservations
                if r.known <= now < r.end and not r.admits(user, account)]

    def _used(self, t: float) -> int:
        """Nodes the running jobs (and this trial's) hold at ``t`` (> now), by limit ends."""
        return (sum(n for end, _, n in self.clock._run_keys if end > t)
                + sum(n for end, n in self.taken if end > t))

    def clear(self, job: Job, start: float, blocks) -> bool:
        """Whether ``job`` started at ``start`` (now or later) fits beside ``blocks`` until
        its limit end, on the profile of the running jobs (now: the free nodes)."""
        now, end, need, total = self.clock.now, start + job.walltime, job.nodes, self.total
        points = [start] + [s for s, _, _ in blocks if start < s < end]
        for p in points:
            used = total - self.base.free if p <= now else self._used(p)
            held = sum(n for s, e, n in blocks if s <= p < e)
            if used + need + held > total:
                return False
        return True

    def fits(self, job: Job, allocation=None) -> bool:
        return self.base.fits(job, allocation) and self.clear(job, self.clock.now,
                                                              self.blocks(job))

    def reservation(self, job: Job, ends, running, now: float):
        """The first time ``job`` fits the profile with its blocks (the shadow), and the
        head's block for the backfill test; ``None`` when it never fits."""
        if job.bb or job.ssd or job.nodes > self.total:
            return None
        blocks = self.blocks(job)
        if not blocks:  # EASY's walk on the counts
            shadow = self.base.reservation(job, ends, running, now)[0]
            return shadow, (shadow, shadow + job.walltime, job.nodes)
        times = sorted({now, *(e for e, _, _ in ends if e > now),
                        *(e for _, e, _ in blocks if e > now)})
        for t in times:
            if self.clear(job, t, blocks):
                return t, (t, t + job.walltime, job.nodes)
        return None

    def backfill_candidates(self, jobs, reserved: Job, shadow: float, extra, skip,
                            now: float):
        """EASY's scan on the profile: a job backfills when it fits now beside its blocks
        and the head's (``extra``, from ``reservation``).  Allocations are the pool's own."""
        for job in jobs:
            if self.base.free == 0:
                return
            if job.id in skip or job is reserved or not self.base.fits(job):
                continue
            if self.clear(job, now, [*self.blocks(job), extra]):
                yield job, None


def reserved_pool(pool, reservations: Sequence[Reservation] | None, clock,
                  accounts: Mapping | None = None):
    """``pool`` with ``reservations`` in it (``ReservedPool``), or ``pool`` without any."""
    if not reservations:
        return pool
    return ReservedPool(pool, reservations, clock, accounts)


def kept_out(pool, job: Job) -> bool:
    """Whether ``job``, which does not fit ``pool`` now, is kept out by a reservation only
    (a policy's pick that then stays queued; any other misfit is the policy's error)."""
    return isinstance(pool, ReservedPool) and pool.base.fits(job)


# -- reading a scenario's reservations
FIELDS = ("start", "end", "nodes", "users", "accounts", "name", "known")


def read_reservations(path: str | Path) -> tuple[Reservation, ...]:
    """The reservations of a CSV file (a header naming ``start``, ``end``, ``nodes`` and any
    of ``users``, ``accounts`` (names separated by spaces or ``;``), ``name``, ``known``)
    or a JSON file (a list of objects with those keys; ``users`` and ``accounts`` lists).
    Times are seconds on the trace's clock."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ReservationError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if path.suffix.lower() == ".json":
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ReservationError(f"{path}: line {exc.lineno}: not JSON ({exc.msg})") from None
        if not isinstance(rows, list):
            raise ReservationError(f"{path}: expected a list of reservations, got "
                                   f"{type(rows).__name__}")
        return tuple(_reservation(r, f"{path}: reservation {i + 1}")
                     for i, r in enumerate(rows))
    reader = csv.DictReader(io.StringIO(text))
    missing = [f for f in FIELDS[:3] if f not in (reader.fieldnames or ())]
    if missing:
        raise ReservationError(f"{path}: line 1: header lacks {', '.join(missing)} "
                               f"(expected columns {', '.join(FIELDS)})")
    return tuple(_reservation(row, f"{path}: line {reader.line_num}") for row in reader)


def _reservation(row, where: str) -> Reservation:
    """One reservation from a mapping of its fields (text or JSON values)."""
    if not isinstance(row, Mapping):
        raise ReservationError(f"{where}: expected an object with {', '.join(FIELDS[:3])}")
    if None in row:  # a CSV row with more values than its header names
        raise ReservationError(f"{where}: more values than the header's columns")
    unknown = set(row) - set(FIELDS)
    if unknown:
        raise ReservationError(f"{where}: unknown field {sorted(unknown)[0]!r} (expected "
                               f"{', '.join(FIELDS)})")

    def number(field: str, default=None, what: str = "seconds") -> float:
        value: Any = row.get(field)
        if value in (None, "") and default is not None:
            return default
        try:
            if isinstance(value, bool):
                raise TypeError
            out = float(value)
        except (TypeError, ValueError):
            raise ReservationError(f"{where}: field {field}: expected {what}, got "
                                   f"{value!r}") from None
        if math.isnan(out):
            raise ReservationError(f"{where}: field {field}: expected {what}, got {value!r}")
        return out

    nodes = number("nodes", what="a whole number >= 1")
    if nodes != int(nodes) or nodes < 1:
        raise ReservationError(f"{where}: field nodes: expected a whole number >= 1, got "
                               f"{row.get('nodes')!r}")
    try:
        return Reservation(number("start"), number("end"), int(nodes), _names(row, "users"),
                           _names(row, "accounts"), str(row.get("name") or ""),
                           number("known", -math.inf))
    except ReservationError as exc:
        raise ReservationError(f"{where}: {exc}") from None


def _names(row: Mapping, field: str) -> frozenset[str]:
    value = row.get(field) or ()
    if isinstance(value, str):
        value = value.replace(";", " ").split()
    return frozenset(str(v) for v in value)


def with_group_users(reservations: Sequence[Reservation], jobs: Iterable[Job],
                     groups: Mapping) -> tuple[Reservation, ...]:
    """``reservations`` whose ``accounts`` are a trace's groups (``groups``: job id ->
    group), each admitting the users of its groups' jobs as well (a simulation's jobs have
    a user, not an account)."""
    users: dict[str, set[str]] = {}
    for job in jobs:
        if job.id in groups:
            users.setdefault(str(groups[job.id]), set()).add(str(job.user))
    return tuple(r if not r.accounts else Reservation(
        r.start, r.end, r.nodes, r.users.union(*(users.get(a, ()) for a in r.accounts)),
        r.accounts, r.name, r.known) for r in reservations)


def reservations_known(reservations: Iterable[Reservation], now: float
                       ) -> tuple[Reservation, ...]:
    """The reservations known at ``now`` and not over (what a decision at ``now`` sees)."""
    return tuple(r for r in reservations if r.known <= now < r.end)
