"""A site's association and QOS limits: which queued jobs may start now, and which
submissions are refused (one implementation for the simulator and the Slurm adapter,
applied by the driver at every pass).

Each job belongs to an association (account, user) and a QOS.  A ``Limit`` caps what the
running jobs of a user association, of an account (its users and all its sub-accounts:
``SiteLimits.parents``), of a QOS, or of one user or one account within a QOS hold at once:
jobs (``MaxJobs``, ``GrpJobs``, ``MaxJobsPerUser``), nodes and processors (``GrpTRES``,
``MaxTRESPerUser``), node- and processor-minutes of running jobs by their time limits
(``GrpTRESRunMins``), minutes used in all (``GrpTRESMins``: the decayed usage, plus what
runs and the job itself where the site enforces ``safe``), and per job its time limit
(``MaxWall``) and its node- and processor-minutes (``MaxTRESMinsPerJob``).  Before a pass the
queue, in the base order, is walked with what runs counted: a job that would take any of its
limits past its cap now is blocked for this pass (it stays queued, is not planned as
starting, and takes no reservation), and each job kept counts as started, so the jobs kept
can all start together without passing a limit.  This is safe, never optimal: a job kept
that then does not fit still holds its room in the count until the next pass.  A policy
that checks the limits itself (``checks_limits``: Slurm's own scheduler, ``--policy
slurm``) is offered the whole queue and tests each job as it starts it, against what runs
and what it started before (``LimitUsage``), as Slurm does.

``MaxSubmitJobs`` (and ``GrpSubmitJobs``, ``MaxSubmitJobsPerUser``) caps the jobs queued
and running at once: Slurm refuses the submission itself, and so does the simulator
(``refusal``: the job never runs, its mode is ``refused``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from hpcopt.domain import Job


@dataclass(frozen=True)
class Tres:
    """Node- and processor-minutes of a TRES-minutes limit or usage (``None``: none)."""

    node: float | None = None
    cpu: float | None = None

    def __bool__(self) -> bool:
        return self.node is not None or self.cpu is not None


NO_TRES = Tres()


@dataclass(frozen=True)
class Limit:
    """One association's or QOS's caps (``None``: none)."""

    jobs: int | None = None
    """Running jobs at once (``MaxJobs``, ``GrpJobs``, ``MaxJobsPerUser``/``PerAccount``)."""
    nodes: int | None = None
    """Nodes held at once by its running jobs (``GrpTRES=node=N``, ``MaxTRESPerUser``)."""
    cpus: int | None = None
    """Processors held at once (``GrpTRES=cpu=N``)."""
    wall: float | None = None
    """Longest time limit a job may have, seconds (``MaxWall``)."""
    submit: int | None = None
    """Jobs queued and running at once (``MaxSubmitJobs``, ``GrpSubmitJobs``): more are
    refused at submission."""
    mins: Tres = NO_TRES
    """TRES-minutes used in all (``GrpTRESMins``)."""
    run_mins: Tres = NO_TRES
    """TRES-minutes its running jobs still hold by their time limits (``GrpTRESRunMins``)."""
    job_mins: Tres = NO_TRES
    """TRES-minutes one job may ask for (``MaxTRESMinsPerJob``: nodes or processors x its
    time limit)."""

    def __bool__(self) -> bool:
        return any(v is not None for v in (self.jobs, self.nodes, self.cpus, self.wall,
                                           self.submit)) \
            or bool(self.mins or self.run_mins or self.job_mins)

    def over(self, other: Limit) -> Limit:
        """This limit with ``other``'s caps where this one sets none (inheritance)."""
        return Limit(*(mine if mine is not None and mine != NO_TRES else theirs
                       for mine, theirs in zip(_fields(self), _fields(other))))


def _fields(limit: Limit) -> tuple:
    return (limit.jobs, limit.nodes, limit.cpus, limit.wall, limit.submit, limit.mins,
            limit.run_mins, limit.job_mins)


@dataclass(frozen=True)
class Who:
    """The association and QOS a job runs under."""

    account: str = ""
    user: str = ""
    qos: str = ""


@dataclass(frozen=True)
class SiteLimits:
    """The limits of a site.

    ``users[(account, user)]``: a user association's own caps (with what it inherits from
    its accounts already merged in); ``accounts[account]``: an account's caps over all its
    users and sub-accounts together; ``parents[account]``: the account above it (the
    association tree: an account's caps hold every account under it); ``qos[name]``: a
    QOS's caps over all its jobs; ``qos_users[name]`` and ``qos_accounts[name]``: a QOS's
    caps for each user (``MaxJobsPerUser``, ``MaxTRESPerUser``, ``MaxSubmitJobsPerUser``)
    and each account (``...PerAccount``) in it.  ``used`` are the TRES-minutes already used
    (Slurm's decayed usage, running jobs included) by each limit's holder: keys
    ``("user", account, user)``, ``("account", account)``, ``("qos", name)``.  ``safe``:
    the site enforces ``safe`` (a job starts only if its whole time limit fits the
    ``GrpTRESMins`` left; else only while the usage is under the cap).  ``run_mins`` are
    Slurm's own count of the TRES-minutes its running jobs hold, by the same keys (it
    lowers them only every ``PriorityCalcPeriod``, so it may be above their minutes left);
    a key without one counts the running jobs' minutes left by their time limits.  ``who``
    maps job ids to their ``Who`` (missing: ``Who(user=str(job.user))``)."""

    users: Mapping[tuple[str, str], Limit] = field(default_factory=dict)
    accounts: Mapping[str, Limit] = field(default_factory=dict)
    qos: Mapping[str, Limit] = field(default_factory=dict)
    who: Mapping = field(default_factory=dict)
    qos_users: Mapping[str, Limit] = field(default_factory=dict)
    qos_accounts: Mapping[str, Limit] = field(default_factory=dict)
    parents: Mapping[str, str] = field(default_factory=dict)
    used: Mapping[tuple, Tres] = field(default_factory=dict)
    safe: bool = False
    run_mins: Mapping[tuple, Tres] = field(default_factory=dict)
    _caps: dict = field(default_factory=dict, init=False, compare=False, repr=False)
    """Each job's ``caps``, by id, found once (the limits and ``who`` never change)."""

    def __bool__(self) -> bool:
        return any(map(bool, self.limits()))

    def limits(self) -> Iterable[Limit]:
        return (*self.users.values(), *self.accounts.values(), *self.qos.values(),
                *self.qos_users.values(), *self.qos_accounts.values())

    @property
    def refusing(self) -> bool:
        """Some limit caps submissions (``MaxSubmitJobs``)."""
        return any(limit.submit is not None for limit in self.limits())

    @property
    def charging(self) -> bool:
        """Some limit caps the TRES-minutes used (``GrpTRESMins``): the simulator keeps
        what its finished jobs used (``charge``)."""
        return any(bool(limit.mins) for limit in self.limits())

    def _of(self, job: Job) -> Who:
        return self.who.get(job.id) or Who(user=str(job.user))

    def lineage(self, account: str) -> list[str]:
        """``account`` and the accounts above it, nearest first (a loop ends it)."""
        out = [account]
        while (up := self.parents.get(out[-1])) is not None and up not in out:
            out.append(up)
        return out

    def caps(self, job: Job) -> list[tuple[tuple, Limit, str]]:
        """Each limit on ``job``: its key (whose jobs it counts), the caps and a name."""
        found = self._caps.get(job.id)
        if found is None:
            found = self._caps[job.id] = self._found(job)
        return found

    def _found(self, job: Job) -> list[tuple[tuple, Limit, str]]:
        w = self._of(job)
        found: list[tuple[tuple, Limit | None, str]] = [
            (("user", w.account, w.user), self.users.get((w.account, w.user)),
             f"user {w.user} in account {w.account}")]
        found += [(("account", a), self.accounts.get(a), f"account {a}")
                  for a in self.lineage(w.account)]
        found += [(("qos", w.qos), self.qos.get(w.qos), f"QOS {w.qos}"),
                  (("qos-user", w.qos, w.user), self.qos_users.get(w.qos),
                   f"user {w.user} in QOS {w.qos}"),
                  (("qos-account", w.qos, w.account), self.qos_accounts.get(w.qos),
                   f"account {w.account} in QOS {w.qos}")]
        return [(key, limit, name) for key, limit, name in found if limit is not None and limit]

    def refusal(self, job: Job, queued: Mapping[tuple, int]) -> str | None:
        """Why a submission of ``job`` is refused (``None``: accepted), ``queued`` counting
        each limit key's jobs already queued or running."""
        for key, limit, name in self.caps(job):
            if limit.submit is not None and queued.get(key, 0) + 1 > limit.submit:
                return f"{name}: {queued.get(key, 0)} submitted of at most {limit.submit} jobs"
        return None

    def charge(self, spent: dict, job: Job, seconds: float) -> None:
        """Add to ``spent`` (key -> [node-min, cpu-min]) what ``job`` used in ``seconds``."""
        for key, _, _ in self.caps(job):
            row = spent.setdefault(key, [0.0, 0.0])
            row[0] += job.nodes * seconds / 60.0
            row[1] += (job.cores or job.nodes) * seconds / 60.0

    def usage(self, running: Iterable[tuple[Job, float]], now: float = 0.0,
              spent: Mapping | None = None) -> LimitUsage:
        """What the ``running`` jobs (each with its start time) hold against each limit at
        ``now``; ``spent`` (the simulator's: key -> [node-min, cpu-min] its finished jobs
        used) adds to ``used`` with the running jobs' minutes so far; without it ``used``
        is taken to count them already (Slurm's usage)."""
        usage = LimitUsage(self, now, spent)
        for job, start in running:
            usage.add(job, start, counted=True)
        return usage

    def admissible(self, ordered: Iterable[Job], running: Iterable[tuple[Job, float]],
                   now: float = 0.0, spent: Mapping | None = None
                   ) -> tuple[list[Job], list[tuple[Job, str]]]:
        """The jobs of ``ordered`` that may start at ``now`` given the ``running`` ones
        (each with its start time) and the ones kept before them, and the blocked ones with
        the limit that blocks each (``spent``: as in ``usage``)."""
        usage = self.usage(running, now, spent)
        kept: list[Job] = []
        blocked: list[tuple[Job, str]] = []
        for job in ordered:
            why = usage.blocks(job)
            if why is None:
                kept.append(job)
                usage.add(job)
            else:
                blocked.append((job, why))
        return kept, blocked


class LimitUsage:
    """What the jobs counted so far hold against each limit of a site at ``now``: ``blocks``
    says which cap a job would pass if it started now, ``add`` counts one that starts."""

    __slots__ = ("limits", "now", "spent", "held")

    def __init__(self, limits: SiteLimits, now: float, spent: Mapping | None) -> None:
        self.limits = limits
        self.now = now
        self.spent = spent
        # limit key -> [jobs, nodes, cpus, node-min left, cpu-min left, node-min, cpu-min used]
        self.held: dict[tuple, list[float]] = {}

    def _row(self, key: tuple) -> list[float]:
        out = self.held.get(key)
        if out is None:
            limits, spent = self.limits, self.spent
            base = limits.used.get(key, NO_TRES)
            extra = spent.get(key, (0.0, 0.0)) if spent is not None else (0.0, 0.0)
            given = limits.run_mins.get(key, NO_TRES)
            out = self.held[key] = [0, 0, 0, given.node or 0.0, given.cpu or 0.0,
                                    (base.node or 0.0) + extra[0],
                                    (base.cpu or 0.0) + extra[1]]
        return out

    def add(self, job: Job, start: float | None = None, counted: bool = False) -> None:
        """Count ``job`` as running from ``start`` (default: it starts now); ``counted``:
        a job already running, whose minutes left a limit with Slurm's own count of its
        running jobs' minutes (``SiteLimits.run_mins``) has already."""
        now = self.now
        start = now if start is None else start
        cpus = job.cores or job.nodes
        left = max(0.0, start + job.walltime - now) / 60.0
        gone = max(0.0, now - start) / 60.0 if self.spent is not None else 0.0
        run_mins = self.limits.run_mins
        for key, _, _ in self.limits.caps(job):
            counts = self._row(key)
            counts[0] += 1
            counts[1] += job.nodes
            counts[2] += cpus
            if not counted or key not in run_mins:
                counts[3] += job.nodes * left
                counts[4] += cpus * left
            counts[5] += job.nodes * gone
            counts[6] += cpus * gone

    def blocks(self, job: Job) -> str | None:
        """The cap ``job`` would pass if it started now, as a reason (``None``: none)."""
        cpus = job.cores or job.nodes
        mins = job.walltime / 60.0
        want = (job.nodes * mins, cpus * mins)
        for key, limit, name in self.limits.caps(job):
            jobs, nodes, used_cpus, node_left, cpu_left, node_used, cpu_used = self._row(key)
            if limit.wall is not None and job.walltime > limit.wall + 1e-9:
                return f"{name}: time limit {job.walltime:g} s over MaxWall {limit.wall:g} s"
            for tres, cap, need in (("node", limit.job_mins.node, want[0]),
                                    ("cpu", limit.job_mins.cpu, want[1])):
                if cap is not None and need > cap + 1e-9:
                    return f"{name}: {need:g} {tres}-minutes over MaxTRESMinsPerJob {cap:g}"
            if limit.jobs is not None and jobs + 1 > limit.jobs:
                return f"{name}: {jobs} running of at most {limit.jobs} jobs"
            if limit.nodes is not None and nodes + job.nodes > limit.nodes:
                return f"{name}: {nodes} + {job.nodes} nodes over {limit.nodes}"
            if limit.cpus is not None and used_cpus + cpus > limit.cpus:
                return f"{name}: {used_cpus} + {cpus} processors over {limit.cpus}"
            for tres, cap, have, need in (("node", limit.run_mins.node, node_left, want[0]),
                                          ("cpu", limit.run_mins.cpu, cpu_left, want[1])):
                if cap is not None and have + need > cap + 1e-9:
                    return (f"{name}: {have:g} + {need:g} running {tres}-minutes over "
                            f"GrpTRESRunMins {cap:g}")
            for tres, cap, have, left, need in (
                    ("node", limit.mins.node, node_used, node_left, want[0]),
                    ("cpu", limit.mins.cpu, cpu_used, cpu_left, want[1])):
                if cap is None:
                    continue
                if have >= cap - 1e-9:
                    return f"{name}: {have:g} {tres}-minutes used of GrpTRESMins {cap:g}"
                if self.limits.safe and have + left + need > cap + 1e-9:
                    return (f"{name}: {have:g} used + {left:g} running + {need:g} "
                            f"{tres}-minutes over GrpTRESMins {cap:g}")
        return None
