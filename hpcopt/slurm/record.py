"""The record of one adapter cycle: what the log writes and ``hpcopt slurm status`` reads."""

from __future__ import annotations

from dataclasses import dataclass, field

#: queue entries a cycle's record names, in submission order
QUEUE_SHOWN = 20


@dataclass
class CycleRecord:
    """One cycle as the log writes it (one JSON line: ``as_json``; ``hpcopt slurm status``
    reads it back with ``from_json``).  A cycle that could not read Slurm, or whose policy
    failed, is ``ok`` False with its ``error``; the read's figures are set once Slurm was
    read (``read_s`` seconds, Slurm's version, the held ``pending`` entries and the first
    ``QUEUE_SHOWN`` of them, nodes ``completing``, jobs ``running`` and released jobs
    ``waiting_start``, nodes and burst buffer free, the first ``QUEUE_SHOWN`` held jobs
    that cannot start now as ``later``: each ``{id, not_before}``, the earliest it could
    start (its begin time, its asked nodes' estimated free time; ``None``: unknown), with
    ``after``, the jobs whose ends it waits for, where it has a dependency); the decision's
    once it was taken, with
    the ids released (``backfilled`` among them), the reservation (``{id, shadow}``), the
    jobs whose release failed, that ``changed`` since the read or were ``reheld`` after a
    requeue, ``notes`` and the failed tries of Slurm commands (``errors``); where jobs are
    placed, the nodes each released job is pinned to (``placed``).  Unset figures are left
    out of the log line; ``rec["released"]`` reads a field as the log line has it."""

    time: float
    cycle: int
    partition: str = "?"
    dry_run: bool = False
    read_s: float | None = None
    slurm: str | None = None
    pending: int | None = None
    completing: int | None = None
    queue: list | None = None
    running: int | None = None
    waiting_start: list | None = None
    later: list | None = None
    free_nodes: int | None = None
    free_bb: float | None = None
    decide_s: float | None = None
    release_s: float | None = None
    ok: bool = False
    error: str | None = None
    released: list | None = None
    released_nodes: int | None = None
    released_bb: float | None = None
    backfilled: list | None = None
    reserved: dict | None = None
    release_failed: list | None = None
    changed: list | None = None
    reheld: list | None = None
    notes: list | None = None
    errors: list = field(default_factory=list)
    placed: dict | None = None

    def as_json(self) -> dict:
        """The log line's fields (the reservation written whenever the cycle decided)."""
        return {k: v for k, v in self.__dict__.items()
                if v is not None or (k == "reserved" and self.released is not None)}

    @classmethod
    def from_json(cls, rec: dict) -> CycleRecord:
        """A record from its log line (fields it does not know are ignored)."""
        known = cls.__dataclass_fields__
        return cls(**{k: v for k, v in rec.items() if k in known})

    def __getitem__(self, name: str):
        return self.as_json()[name]

    def get(self, name: str, default=None):
        return self.as_json().get(name, default)
