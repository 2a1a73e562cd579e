"""A site's association and QOS limits: which queued jobs may start now (one implementation
for the simulator and the Slurm adapter, applied by the driver at every pass).

Each job belongs to an association (account, user) and a QOS.  A ``Limit`` caps what the
running jobs of a user association, of an account (all its users) or of a QOS hold at
once: jobs (``MaxJobs``; ``GrpJobs`` for an account or QOS), nodes and processors
(``GrpTRES=node=N,cpu=N``), and each job's time limit (``MaxWall``).  Before a pass the
queue, in the base order, is walked with what runs counted: a job that would take any of its
limits past its cap now is blocked for this pass (it stays queued, is not planned as
starting, and takes no reservation), and each job kept counts as started, so the jobs kept
can all start together without passing a limit.  This is safe, never optimal: a job kept
that then does not fit still holds its room in the count until the next pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from hpcopt.domain import Job


@dataclass(frozen=True)
class Limit:
    """One association's or QOS's caps (``None``: none)."""

    jobs: int | None = None
    """Running jobs at once (``MaxJobs``, or ``GrpJobs`` of an account or QOS)."""
    nodes: int | None = None
    """Nodes held at once by its running jobs (``GrpTRES=node=N``)."""
    cpus: int | None = None
    """Processors held at once (``GrpTRES=cpu=N``)."""
    wall: float | None = None
    """Longest time limit a job may have, seconds (``MaxWall``)."""

    def __bool__(self) -> bool:
        return any(v is not None for v in (self.jobs, self.nodes, self.cpus, self.wall))


@dataclass(frozen=True)
class Who:
    """The association and QOS a job runs under."""

    account: str = ""
    user: str = ""
    qos: str = ""


@dataclass(frozen=True)
class SiteLimits:
    """The limits of a site: per user association (``users[(account, user)]``), per account
    (``accounts[account]``: all its users together) and per QOS (``qos[name]``); ``who``
    maps job ids to their ``Who`` (missing: ``Who(user=str(job.user))``)."""

    users: Mapping[tuple[str, str], Limit] = field(default_factory=dict)
    accounts: Mapping[str, Limit] = field(default_factory=dict)
    qos: Mapping[str, Limit] = field(default_factory=dict)
    who: Mapping = field(default_factory=dict)

    def __bool__(self) -> bool:
        return any(map(bool, (*self.users.values(), *self.accounts.values(),
                              *self.qos.values())))

    def _of(self, job: Job) -> Who:
        return self.who.get(job.id) or Who(user=str(job.user))

    def _caps(self, job: Job) -> list[tuple[tuple, Limit, str]]:
        w = self._of(job)
        out = []
        for key, limit, name in (((("user", w.account, w.user)),
                                  self.users.get((w.account, w.user)),
                                  f"user {w.user} in account {w.account}"),
                                 (("account", w.account), self.accounts.get(w.account),
                                  f"account {w.account}"),
                                 (("qos", w.qos), self.qos.get(w.qos), f"QOS {w.qos}")):
            if limit:
                out.append((key, limit, name))
        return out

    def admissible(self, ordered: Iterable[Job], running: Iterable[Job]
                   ) -> tuple[list[Job], list[tuple[Job, str]]]:
        """The jobs of ``ordered`` that may start now given the ``running`` ones (and the
        ones kept before them), and the blocked ones with the limit that blocks each."""
        held: dict[tuple, list[float]] = {}  # limit key -> [jobs, nodes, cpus]

        def add(job: Job) -> None:
            for key, _, _ in self._caps(job):
                used = held.setdefault(key, [0, 0, 0])
                used[0] += 1
                used[1] += job.nodes
                used[2] += job.cores or job.nodes

        for job in running:
            add(job)
        kept: list[Job] = []
        blocked: list[tuple[Job, str]] = []
        for job in ordered:
            why = self._why_blocked(job, held)
            if why is None:
                kept.append(job)
                add(job)
            else:
                blocked.append((job, why))
        return kept, blocked

    def _why_blocked(self, job: Job, held: dict) -> str | None:
        cpus = job.cores or job.nodes
        for key, limit, name in self._caps(job):
            jobs, nodes, used_cpus = held.get(key, (0, 0, 0))
            if limit.wall is not None and job.walltime > limit.wall + 1e-9:
                return f"{name}: time limit {job.walltime:g} s over MaxWall {limit.wall:g} s"
            if limit.jobs is not None and jobs + 1 > limit.jobs:
                return f"{name}: {jobs} running of at most {limit.jobs} jobs"
            if limit.nodes is not None and nodes + job.nodes > limit.nodes:
                return f"{name}: {nodes} + {job.nodes} nodes over {limit.nodes}"
            if limit.cpus is not None and used_cpus + cpus > limit.cpus:
                return f"{name}: {used_cpus} + {cpus} processors over {limit.cpus}"
        return None

