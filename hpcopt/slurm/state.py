"""Slurm's state, read through its own command-line tools.

``squeue --json`` gives every job (id, state, reason, priority, submit and start times, time
limit, node count, allocated nodes) and ``sinfo --json`` every node with its state and flags
(Slurm 22.05: OpenAPI data v0.0.38); ``scontrol release`` starts a held job.  Each command
runs under a time limit and is retried with a growing pause; a command that still fails is a
``SlurmCommandError`` (one line: the command, its exit status and Slurm's message), which the
adapter logs and survives.  ``SLURM_CONF`` is honored as by Slurm's tools (they read it).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import HpcoptError

NO_VALUE = 0xFFFFFFFE  # Slurm's INFINITE (and NO_VAL - 1) for a time limit in minutes
#: node state flags that keep a node from taking new jobs (it stays out of the capacity)
UNAVAILABLE = frozenset({"DRAIN", "DRAINING", "DRAINED", "FAIL", "FAILING", "MAINTENANCE",
                         "REBOOT_REQUESTED", "REBOOT_ISSUED", "POWERED_DOWN",
                         "POWERING_DOWN", "POWER_DOWN", "POWERING_UP", "NOT_RESPONDING",
                         "INVALID_REG", "RESERVED", "PLANNED"})
USABLE_STATES = frozenset({"idle", "allocated", "mixed"})


class SlurmCommandError(HpcoptError):
    """A Slurm command failed or timed out after its retries."""


@dataclass(frozen=True, slots=True)
class SlurmJob:
    """One job as ``squeue --json`` shows it (times in epoch seconds, limit in seconds)."""

    id: int
    state: str
    reason: str
    priority: int
    partition: str
    submit: float
    start: float
    limit: float | None  # None: no time limit
    nodes: int
    node_names: tuple[str, ...]

    @property
    def held(self) -> bool:
        """Pending with priority 0: held (``sbatch -H``, the job_submit.lua, scontrol hold)."""
        return self.state == "PENDING" and self.priority == 0


@dataclass(frozen=True, slots=True)
class SlurmNode:
    name: str
    state: str  # idle, allocated, mixed, down, ...
    flags: frozenset[str]
    partitions: tuple[str, ...]

    @property
    def usable(self) -> bool:
        """Up and taking jobs (idle, allocated or mixed, with no draining/failing flag)."""
        return self.state in USABLE_STATES and not (self.flags & UNAVAILABLE)

    @property
    def idle(self) -> bool:
        """Free for a job now (usable, idle and not completing a job)."""
        return self.usable and self.state == "idle" and "COMPLETING" not in self.flags


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What one read saw: ``time`` is when the read began (epoch seconds)."""

    time: float
    jobs: tuple[SlurmJob, ...]
    nodes: tuple[SlurmNode, ...]
    read_s: float
    version: str = ""


Runner = Callable[..., subprocess.CompletedProcess]


class Slurm:
    """Slurm's command-line tools with a time limit per call and retries.

    ``timeout`` seconds per call, ``retries`` further tries after a failure, pausing
    ``backoff``, then twice that, ...; ``on_error(message)`` hears every failed try (the
    adapter logs them).  ``env`` (default: this process's) is passed to the tools.
    """

    def __init__(self, *, timeout: float = 10.0, retries: int = 2, backoff: float = 0.5,
                 env: dict | None = None, on_error: Callable[[str], None] | None = None,
                 run: Runner = subprocess.run) -> None:
        self.timeout, self.retries, self.backoff = timeout, retries, backoff
        self.env = dict(os.environ) if env is None else env
        self.on_error = on_error
        self._run = run

    def call(self, *args: str, retry: bool = True) -> str:
        """Run one command; its standard output, or ``SlurmCommandError`` after the retries."""
        tries = self.retries + 1 if retry else 1
        pause = self.backoff
        for attempt in range(tries):
            try:
                proc = self._run(list(args), env=self.env, capture_output=True, text=True,
                                 timeout=self.timeout)
            except subprocess.TimeoutExpired:
                msg = f"{args[0]}: no answer in {self.timeout:g} s"
            except OSError as exc:
                msg = f"{args[0]}: {exc.strerror or exc}"
            else:
                if proc.returncode == 0:
                    return proc.stdout
                text = (proc.stderr or proc.stdout).strip().replace("\n", "; ")
                msg = f"{' '.join(args[:2])}: exit {proc.returncode}: {text}"
            if self.on_error is not None:
                self.on_error(msg + (f" (try {attempt + 1} of {tries})" if tries > 1 else ""))
            if attempt + 1 < tries:
                time.sleep(pause)
                pause *= 2
        raise SlurmCommandError(msg)

    def _json(self, *args: str) -> dict:
        out = self.call(*args)
        try:
            doc = json.loads(out)
        except json.JSONDecodeError as exc:
            raise SlurmCommandError(f"{' '.join(args)}: not JSON ({exc.msg} at line "
                                    f"{exc.lineno})") from None
        errors = doc.get("errors") or []
        if errors:
            raise SlurmCommandError(f"{' '.join(args)}: {errors[0]}")
        return doc

    def jobs(self) -> tuple[tuple[SlurmJob, ...], str]:
        """Every job Slurm knows (all partitions and states), and Slurm's version."""
        doc = self._json("squeue", "--json")
        return tuple(parse_job(j) for j in doc.get("jobs", [])), _version(doc)

    def nodes(self) -> tuple[SlurmNode, ...]:
        doc = self._json("sinfo", "--json")
        return tuple(parse_node(n) for n in doc.get("nodes", []))

    def snapshot(self) -> Snapshot:
        """Jobs, then nodes (a job that ends between the two reads leaves an idle node that
        the jobs' read still counts as busy: the safe side)."""
        t0, c0 = time.time(), time.perf_counter()
        jobs, version = self.jobs()
        nodes = self.nodes()
        return Snapshot(t0, jobs, nodes, time.perf_counter() - c0, version)

    def release(self, job_id: int) -> None:
        """Release a held job (once: a release is not retried, so it never happens twice)."""
        self.call("scontrol", "release", str(job_id), retry=False)


def parse_job(j: dict) -> SlurmJob:
    limit = j.get("time_limit")
    names = tuple(n["nodename"] for n in
                  (j.get("job_resources") or {}).get("allocated_nodes") or ())
    return SlurmJob(
        id=int(j["job_id"]),
        state=str(j.get("job_state", "")),
        reason=str(j.get("state_reason", "")),
        priority=int(j.get("priority") or 0),
        partition=str(j.get("partition", "")),
        submit=float(j.get("submit_time") or 0),
        start=float(j.get("start_time") or 0),
        limit=None if limit is None or int(limit) >= NO_VALUE else int(limit) * 60.0,
        nodes=max(1, int(j.get("node_count") or 1)),
        node_names=names,
    )


def parse_node(n: dict) -> SlurmNode:
    return SlurmNode(name=str(n["name"]), state=str(n.get("state", "")).lower(),
                     flags=frozenset(str(f).upper() for f in n.get("state_flags") or ()),
                     partitions=tuple(n.get("partitions") or ()))


def _version(doc: dict) -> str:
    return str(((doc.get("meta") or {}).get("Slurm") or {}).get("release", ""))
