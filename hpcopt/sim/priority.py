"""Slurm's multifactor job priority (``priority/multifactor``): one implementation for the
simulator (the base order ``priority``) and the Slurm adapter.

A job's priority is the sum of its site factor, each normalized factor (0 to 1) times its
weight from the ``slurm.conf`` (``PriorityWeight*``), less its nice value::

    site + W_age * age + W_fairshare * fairshare + W_job_size * size
         + W_partition * partition + W_qos * qos - nice

- **age**: seconds since the job became eligible over ``PriorityMaxAge``, at most 1;
- **job size**: the mean of the job's share of the nodes and (where its processors are
  known) of the processors; with ``PriorityFavorSmall`` each share is ``(total - asked) /
  total`` instead;
- **partition**, **QOS**: the partition's ``PriorityJobFactor`` and the QOS's priority,
  each over the largest among the partitions or QOSes (the adapter reads them from Slurm;
  a simulated machine is one partition, factor 1, and the ``normal`` QOS, factor 0);
- **fairshare**: in the adapter Slurm's own factor of the job's association (``sshare``:
  classic or fair tree, whichever the site runs); in the simulator the classic formula
  ``2 ** (-U / S)`` over associations made of the trace (``SitePriority``).

In the simulator a job's priority is set at its submission and recomputed every
``PriorityCalcPeriod`` (``calc_tick``), with the fairshare factors Slurm's decay thread
leaves (``SitePriority``).

Not modelled: TRES weights (``PriorityWeightTRES``), the association factor
(``PriorityWeightAssoc``), ``PriorityFlags`` (``SMALL_RELATIVE_TO_TIME``, ``ACCRUE_ALWAYS``,
``MAX_TRES``, ...), ``PriorityUsageResetPeriod``, and in the simulator the fair-tree ranking
(Slurm's default since 19.05) and account trees deeper than account -> user.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from hpcopt.domain import Job

from .records import Event
from .slurmconf import SlurmConf, read_slurm_conf


@dataclass(frozen=True)
class PriorityWeights:
    """The site's weights and the settings the factors are computed under (slurm.conf(5));
    every default is Slurm's but ``calc_period``'s."""

    age: float = 0.0
    fairshare: float = 0.0
    job_size: float = 0.0
    partition: float = 0.0
    qos: float = 0.0
    max_age: float = 7 * 86400.0
    """``PriorityMaxAge``, seconds: the age at which the age factor reaches 1."""
    favor_small: bool = False
    """``PriorityFavorSmall``."""
    half_life: float = 7 * 86400.0
    """``PriorityDecayHalfLife``, seconds (0: usage never decays)."""
    multifactor: bool = True
    """``PriorityType=priority/multifactor``; under ``priority/basic`` every factor is 0."""
    cpus_per_node: int = 0
    """Processors per node of a whole-node cluster (``NodeName ... CPUs``; 0 or 1: unknown): a
    job's size factor at its submission counts the processors it asked for (one per node
    unless told) against the cluster's; see ``job_size``."""
    calc_period: float = 0.0
    """``PriorityCalcPeriod``, seconds: how often Slurm recomputes the fairshare factors and
    the pending jobs' priorities (``calc_tick``); 0: at every pass, the limit of short
    periods (a slurm.conf that sets none has Slurm's 5 minutes: ``of``)."""

    @classmethod
    def of(cls, conf: SlurmConf) -> PriorityWeights:
        """The weights of a ``slurm.conf`` read by ``hpcopt.sim.slurmconf``."""
        return cls(age=conf.weight_age, fairshare=conf.weight_fairshare,
                   job_size=conf.weight_job_size, partition=conf.weight_partition,
                   qos=conf.weight_qos, max_age=conf.max_age, favor_small=conf.favor_small,
                   half_life=conf.decay_half_life, multifactor=conf.priority == "multifactor",
                   calc_period=conf.calc_period,
                   cpus_per_node=0 if conf.shared_cores else conf.cpus_per_node)


@dataclass(frozen=True)
class Factors:
    """One job's normalized factors (each 0 to 1), its nice value and its site factor."""

    age: float = 0.0
    fairshare: float = 0.0
    job_size: float = 0.0
    partition: float = 0.0
    qos: float = 0.0
    nice: int = 0
    site: int = 0


def job_priority(weights: PriorityWeights, factors: Factors) -> float:
    """The job's priority: the weighted sum of its factors (module docstring).  Slurm keeps
    the integer part; this is the exact value."""
    if not weights.multifactor:
        return 0.0
    w, f = weights, factors
    return (f.site + w.age * f.age + w.fairshare * f.fairshare + w.job_size * f.job_size
            + w.partition * f.partition + w.qos * f.qos - f.nice)


def age_factor(eligible: float, now: float, max_age: float) -> float:
    """Seconds since ``eligible`` over ``max_age``, between 0 and 1 (1 when ``max_age`` is
    0)."""
    if max_age <= 0:
        return 1.0
    return min(1.0, max(0.0, now - eligible) / max_age)


def size_factor(nodes: int, total_nodes: int, favor_small: bool = False, cpus: int = 0,
                total_cpus: int = 0) -> float:
    """The job-size factor: the mean of the node share and (when ``cpus`` and
    ``total_cpus`` are known) the processor share; each share is ``(total - asked) / total``
    under ``favor_small``.  Between 0 and 1."""
    def share(asked: int, total: int) -> float:
        return (total - asked) / total if favor_small else asked / total

    value = share(nodes, total_nodes)
    if cpus and total_cpus:
        value = (value + share(cpus, total_cpus)) / 2
    return min(1.0, max(0.0, value))


def job_size(job: Job, total_nodes: int, weights: PriorityWeights,
             at_submission: bool) -> float:
    """The job-size factor of ``job``'s priority.  Slurm takes the mean of the node share
    and the processor share (``_get_priority_internal`` in priority_multifactor.c); at the
    job's submission its processors are those it asked for (``min_cpus``: its cores, else
    one per node), later those the node selection's test gave it (``total_cpus``: on a
    whole-node cluster its nodes' processors, the same share as its nodes').  With
    ``weights.cpus_per_node`` unknown (0) or after the submission: the node share alone."""
    cpn = weights.cpus_per_node
    if at_submission and cpn > 1:
        return size_factor(job.nodes, total_nodes, weights.favor_small,
                           job.cores or job.nodes, total_nodes * cpn)
    return size_factor(job.nodes, total_nodes, weights.favor_small)


def classic_fairshare(usage: float, shares: float) -> float:
    """Slurm's classic fairshare factor ``2 ** (-usage / shares)`` of an association's
    normalized effective usage and normalized shares (no shares: 0)."""
    if shares <= 0:
        return 0.0
    return 2.0 ** (-usage / shares)


def calc_tick(now: float, period: float, start: float = 0.0) -> float:
    """The last time by ``now`` at which Slurm recomputed the priorities: its decay thread
    runs every ``period`` seconds (``PriorityCalcPeriod``) from ``start`` (the controller's
    start); a job's priority is set at its submission and again at every tick
    (``_decay_thread`` and ``decay_apply_weighted_factors`` in priority_multifactor.c).
    ``period`` 0: ``now`` (computed at every pass)."""
    if period <= 0:
        return now
    return start + math.floor((now - start) / period + 1e-9) * period


def decayed(half_life: float, seconds: float) -> float:
    """What one unit of usage weighs ``seconds`` later (1 without decay)."""
    return 0.5 ** (seconds / half_life) if half_life > 0 else 1.0


def accrued(rate: float, start: float, end: float, now: float, half_life: float) -> float:
    """Usage at ``now`` of ``rate`` processors busy from ``start`` to ``end`` (capped at
    ``now``), decayed continuously with ``half_life`` (Slurm decays every
    ``PriorityCalcPeriod``; this is the limit of short periods)."""
    end = min(end, now)
    if end <= start:
        return 0.0
    if half_life <= 0:
        return rate * (end - start)
    tau = half_life / math.log(2)
    return rate * tau * (decayed(half_life, now - end) - decayed(half_life, now - start))


class Usage:
    """Decayed usage of the associations (account, user) of one simulation: what the jobs
    that started before ``now`` used up to ``now``, and nothing else.  An association
    exists from its first submitted job on, with one share (sacctmgr's default)."""

    def __init__(self, half_life: float, shares: Mapping | None = None) -> None:
        self.half_life = half_life
        self.shares = dict(shares or {})  # account -> raw shares (missing: 1)
        self._done: dict[tuple, float] = {}  # association -> usage of ended jobs at _at
        self._at = -math.inf
        self._running: dict = {}  # job id -> (association, processors, start)
        self.users: dict[str, dict] = {}  # account -> {user: shares}

    def join(self, account, user) -> None:
        """The association (account, user) exists from now on."""
        self.users.setdefault(account, {}).setdefault(user, 1.0)

    def start(self, job_id, assoc: tuple, rate: float, start: float) -> None:
        self._running[job_id] = (assoc, rate, start)

    def end(self, job_id, end: float) -> None:
        """The job ended at ``end``: its usage joins its association's."""
        item = self._running.pop(job_id, None)
        if item is None:
            return
        assoc, rate, start = item
        self._age_to(end)
        self._done[assoc] = self._done.get(assoc, 0.0) + accrued(rate, start, end, end,
                                                                 self.half_life)

    def _age_to(self, now: float) -> None:
        if now > self._at:
            if self._done and math.isfinite(self._at):
                k = decayed(self.half_life, now - self._at)
                self._done = {a: u * k for a, u in self._done.items()}
            self._at = now

    def at(self, now: float, running_to: float | None = None) -> dict[tuple, float]:
        """Each association's usage at ``now``; the running jobs' counted up to
        ``running_to`` only (default: ``now``)."""
        self._age_to(now)
        usage = dict(self._done)
        upto = now if running_to is None else min(now, running_to)
        for assoc, rate, start in self._running.values():
            usage[assoc] = usage.get(assoc, 0.0) + accrued(rate, start, upto, now,
                                                           self.half_life)
        return usage

    def norms(self, now: float, running_to: float | None = None) -> tuple[dict, dict]:
        """Each association's and each account's share of all the usage at ``now``
        (Slurm's ``usage_norm``; running jobs counted up to ``running_to``, as in ``at``)."""
        usage = self.at(now, running_to)
        total = sum(usage.values())
        if total <= 0:
            return {}, {}
        own = {assoc: u / total for assoc, u in usage.items()}
        accounts: dict = {}
        for (account, _), u in own.items():
            accounts[account] = accounts.get(account, 0.0) + u
        return own, accounts

    def factor(self, assoc: tuple, own: dict, accounts: dict) -> float:
        """The classic fairshare factor of ``assoc`` (account, user) from the norms of
        ``norms``: accounts under the root, users under their account, shares normalized
        among siblings (``UsageEffective`` of a user: its usage plus its account's beyond
        it in proportion to its shares among the account's users)."""
        account, user = assoc
        users = self.users.get(account, {user: 1.0})
        shares = self.shares
        all_shares = sum(shares.get(a, 1.0) for a in {*self.users, *shares})
        raw = users.get(user, 1.0)
        siblings = sum(users.values())
        mine = own.get(assoc, 0.0)
        effective = mine + (accounts.get(account, 0.0) - mine) * raw / siblings
        return classic_fairshare(effective, shares.get(account, 1.0) / all_shares * raw
                                 / siblings)

    def fairshare(self, now: float) -> dict[tuple, float]:
        """The classic fairshare factor (``factor``) of every association at ``now``."""
        own, accounts = self.norms(now)
        return {(account, user): self.factor((account, user), own, accounts)
                for account, users in self.users.items() for user in users}


class SitePriority:
    """The base order ``priority`` of a simulation: Slurm's multifactor priority, highest
    first (ties: the earlier submission, then the id), with ``weights`` (from a slurm.conf:
    ``from_conf``) and the fairshare of associations made of the trace: each job's account
    is ``accounts[job id]`` (the trace's group; missing: one account for all), its user the
    job's user; ``shares``: each account's raw fairshare shares (sacctmgr's ``fairshare=``;
    missing: 1), ``associations``: the (account, user) pairs that exist from the start
    (sacctmgr's users; others exist from their first job on), each user with one share.
    ``bind(sim)`` gives one simulation's key: usage accrues as its jobs run, so a job's
    priority at ``now`` depends only on what happened before ``now``.  As in Slurm, the
    priorities are set at submission and recomputed every ``PriorityCalcPeriod``
    (``weights.calc_period``, ticks from ``decay_start``, the controller's start in the
    simulation's seconds: ``calc_tick``), with the fairshare factors of the tick."""

    name = "priority"

    def __init__(self, weights: PriorityWeights | None = None,
                 accounts: Mapping | None = None, shares: Mapping | None = None,
                 associations: Iterable[tuple] = (), decay_start: float = 0.0) -> None:
        self.weights = weights or PriorityWeights()
        self.accounts = dict(accounts or {})
        self.shares = dict(shares or {})
        self.associations = tuple((str(a), str(u)) for a, u in associations)
        self.decay_start = float(decay_start)

    @classmethod
    def from_conf(cls, path, accounts: Mapping | None = None, **site) -> SitePriority:
        """The order under the weights of the ``slurm.conf`` at ``path`` (``site``:
        ``shares`` and ``associations`` as for the class)."""
        return cls(PriorityWeights.of(read_slurm_conf(path)), accounts, **site)

    def with_accounts(self, accounts: Mapping) -> SitePriority:
        """The same weights and site, jobs charged to ``accounts`` (job id -> account)."""
        return SitePriority(self.weights, accounts, self.shares, self.associations,
                            self.decay_start)

    def __repr__(self) -> str:
        return "priority"

    def bind(self, sim) -> Callable[[Job, float], tuple]:
        """The key function ``(job, now)`` over ``sim``'s events (module docstring)."""
        w = self.weights
        usage = Usage(w.half_life, self.shares)
        for pair in self.associations:
            usage.join(*pair)
        accounts = self.accounts
        system = sim.system
        total_nodes = system.nodes
        period = w.calc_period
        # the fairshare factors in force: computed at every pass, or, with a calculation
        # period, per user as Slurm's decay thread leaves them (``catch_up``)
        cache: dict = {"now": None, "tick": None, "fairshare": {}, "accounts": {}, "own": None}

        def assoc(job: Job) -> tuple:
            return (str(accounts.get(job.id, "")), str(job.user))

        def user_factor(pair: tuple, now: float) -> float:
            """A user's factor, set at its first use after the tick (its efctv is reset
            at the tick and computed again when first needed: ``_get_fairshare_priority``)
            from the usage then, running jobs counted to the tick, against its account's
            usage of the tick."""
            usage.join(*pair)  # (a job being submitted at the tick)
            if cache["own"] is None:  # (the same until a job ends: ratios of one decay)
                cache["own"] = usage.norms(now, cache["tick"])[0]
            value = cache["fairshare"][pair] = usage.factor(pair, cache["own"],
                                                            cache["accounts"])
            return value

        def catch_up(now: float) -> None:
            """The decay thread's last tick by ``now`` (``_decay_thread`` in
            priority_multifactor.c): the accounts' effective usage is set from the usage
            before the tick adds its running jobs' usage (running jobs counted to the tick
            before, ended jobs in full: ``priority_p_job_end``); the users' is reset, and
            set again for each user with pending jobs as the tick recomputes their
            priorities, after the running jobs' usage is added."""
            tick = calc_tick(now, period, self.decay_start)
            if cache["tick"] == tick:
                return
            cache["tick"] = tick
            cache["fairshare"] = {}
            cache["own"] = None
            if not w.fairshare:
                return
            cache["accounts"] = usage.norms(tick, tick - period)[1]
            for pair in {assoc(j) for j in sim.queue if j.submit <= tick}:
                user_factor(pair, tick)

        def on_submit(s, e, job: Job) -> None:
            if period > 0:
                catch_up(s.now)
            usage.join(*assoc(job))
            if period > 0 and w.fairshare and assoc(job) not in cache["fairshare"]:
                user_factor(assoc(job), s.now)  # its priority at submission

        def on_start(s, e, rec) -> None:
            if period > 0:
                catch_up(s.now)
            job = rec.job
            usage.join(*assoc(job))
            usage.start(job.id, assoc(job), float(job.cores or job.nodes), rec.start)
            cache["now"] = None

        def on_complete(s, e, rec) -> None:
            if period > 0:
                catch_up(s.now)
            usage.end(rec.job.id, rec.end)
            cache["now"] = cache["own"] = None

        sim.subscribe(Event.SUBMIT, on_submit)
        sim.subscribe(Event.START, on_start)
        sim.subscribe(Event.COMPLETE, on_complete)

        def key(job: Job, now: float) -> tuple:
            earliest = job.submit if job.earliest is None else max(job.submit, job.earliest)
            pair = assoc(job)
            if period > 0:  # set at submission, then at every tick
                catch_up(now)
                at = max(cache["tick"], earliest)
                fairshare = cache["fairshare"].get(pair)
                if fairshare is None:
                    fairshare = user_factor(pair, now) if w.fairshare else 1.0
            else:
                at = now
                if cache["now"] != now:
                    cache["now"] = now
                    cache["fairshare"] = usage.fairshare(now) if w.fairshare else {}
                fairshare = cache["fairshare"].get(pair, 1.0)
            factors = Factors(
                age=age_factor(earliest, at, w.max_age),
                fairshare=fairshare,
                job_size=job_size(job, total_nodes, w, period > 0 and at == earliest),
                partition=1.0)
            return (-job_priority(w, factors), job.submit, job.id)

        return key


class GivenPriority:
    """A base order by priorities computed outside the simulation (the Slurm adapter's,
    from what Slurm publishes): ``values`` maps job ids to priorities, highest first; a job
    without one counts as 0; ties by submission, then id."""

    name = "priority"

    def __init__(self, values: Mapping) -> None:
        self.values = dict(values)

    def __repr__(self) -> str:
        return "priority"

    def bind(self, sim) -> Callable[[Job, float], tuple]:
        values = self.values

        def key(job: Job, now: float) -> tuple:
            return (-values.get(job.id, 0.0), job.submit, job.id)

        return key
