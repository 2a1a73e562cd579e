"""Slurm's multifactor priority (``hpcopt.sim.priority``) and the base order ``priority``:
hand-computed values, an independent oracle of the formula (usage summed minute by minute,
the tree walked from its definition), no future, the command line."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

import hpcopt
from hpcopt.cli import main
from hpcopt.domain import Job, System
from hpcopt.policies import build_policy
from hpcopt.sim.driver import Simulator
from hpcopt.sim.priority import (
    Factors,
    PriorityWeights,
    SitePriority,
    Usage,
    accrued,
    age_factor,
    classic_fairshare,
    job_priority,
    job_size,
    size_factor,
)
from hpcopt.sim.slurmconf import SlurmConf, parse_slurm_conf

DEMO_TRACE = str(Path(__file__).resolve().parent.parent / "instances" / "traces" / "demo.swf")


def test_factors_by_hand():
    assert age_factor(100.0, 3700.0, 7200.0) == 0.5
    assert age_factor(0.0, 10 * 7200.0, 7200.0) == 1.0
    assert age_factor(50.0, 10.0, 7200.0) == 0.0  # not eligible yet
    assert size_factor(2, 8) == 0.25
    assert size_factor(2, 8, favor_small=True) == 0.75
    assert size_factor(2, 8, cpus=4, total_cpus=32) == pytest.approx((0.25 + 0.125) / 2)
    assert classic_fairshare(0.5, 0.5) == 0.5
    assert classic_fairshare(0.0, 0.2) == 1.0
    assert classic_fairshare(0.1, 0.0) == 0.0
    w = PriorityWeights(age=1000, fairshare=2000, job_size=500, partition=100, qos=300)
    f = Factors(age=0.5, fairshare=0.25, job_size=0.75, partition=1.0, qos=0.5, nice=7, site=3)
    assert job_priority(w, f) == 3 + 500 + 500 + 375 + 100 + 150 - 7
    assert job_priority(PriorityWeights(age=1000, multifactor=False), f) == 0.0


def test_decayed_usage_by_hand():
    assert accrued(2.0, 0.0, 100.0, 100.0, 0.0) == 200.0
    assert accrued(2.0, 0.0, 100.0, 50.0, 0.0) == 100.0  # only up to now
    # a half-life of 100 s: 2 processors for 100 s weigh 2 * (100 / ln 2) * (1 - 1/2) now
    assert accrued(2.0, 0.0, 100.0, 100.0, 100.0) == pytest.approx(100 / math.log(2))
    # and half that 100 s later
    assert accrued(2.0, 0.0, 100.0, 200.0, 100.0) == pytest.approx(50 / math.log(2))


def test_classic_fairshare_by_hand():
    """Accounts A (users a1, a2) and B (b1), one share each; a1 used 300, b1 100."""
    usage = Usage(half_life=0.0)
    for assoc in (("A", "a1"), ("A", "a2"), ("B", "b1")):
        usage.join(*assoc)
    usage.start(1, ("A", "a1"), 3.0, 0.0)
    usage.start(2, ("B", "b1"), 1.0, 0.0)
    usage.end(1, 100.0)
    usage.end(2, 100.0)
    fs = usage.fairshare(100.0)
    # a1: usage 0.75, effective 0.75, shares 0.25 -> 2^-3
    assert fs[("A", "a1")] == pytest.approx(0.125)
    # a2: no usage, effective 0 + (0.75 - 0) * 1/2, shares 0.25 -> 2^-1.5
    assert fs[("A", "a2")] == pytest.approx(2 ** -1.5)
    # b1: 0.25 of the usage on half the shares -> 2^-0.5
    assert fs[("B", "b1")] == pytest.approx(2 ** -0.5)


def test_slurm_conf_weights():
    conf = parse_slurm_conf("PriorityType=priority/multifactor\nPriorityWeightAge=1000\n"
                            "PriorityWeightFairshare=5000\nPriorityWeightJobSize=300\n"
                            "PriorityWeightPartition=20\nPriorityWeightQOS=40\n"
                            "PriorityDecayHalfLife=1-0\nPriorityMaxAge=2:00:00\n"
                            "PriorityFavorSmall=YES\n")
    w = PriorityWeights.of(conf)
    assert w == PriorityWeights(age=1000, fairshare=5000, job_size=300, partition=20, qos=40,
                                max_age=7200, favor_small=True, half_life=86400,
                                calc_period=300, cpus_per_node=1)  # Slurm's 5 minutes when silent
    assert not PriorityWeights.of(parse_slurm_conf("")).multifactor
    assert PriorityWeights.of(parse_slurm_conf("PriorityCalcPeriod=1\n")).calc_period == 60
    nodes = "NodeName=n[1-8] CPUs=4\nPartitionName=p Nodes=n[1-8] Default=YES "
    assert PriorityWeights.of(parse_slurm_conf(nodes + "OverSubscribe=EXCLUSIVE\n")
                              ).cpus_per_node == 4
    shared = nodes + "\nSelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
    assert PriorityWeights.of(parse_slurm_conf(shared)).cpus_per_node == 0


def test_job_size_counts_the_asked_processors_at_submission():
    """Slurm's job-size factor is the mean of the node and processor shares; at submission
    a job's processors are the ones it asked for (one per node: ``min_cpus``), as the
    testbed's logged InitPrio shows (78 of 1000 a node on 8 nodes of 4 CPUs), later its
    nodes' (a whole-node cluster: the node share, 125 a node)."""
    w = PriorityWeights(job_size=1000, cpus_per_node=4)
    one, three = Job(0, 0.0, 60.0, 60.0, 1), Job(1, 0.0, 60.0, 60.0, 3)
    assert job_size(one, 8, w, True) == pytest.approx((1 / 8 + 1 / 32) / 2)
    assert round(1000 * job_size(three, 8, w, True)) == 234
    assert job_size(three, 8, w, False) == pytest.approx(3 / 8)
    assert job_size(three, 8, PriorityWeights(), True) == pytest.approx(3 / 8)


def test_bad_half_life_is_one_line():
    from hpcopt.sim.slurmconf import SlurmConfError

    with pytest.raises(SlurmConfError, match=r"site.conf:2: PriorityDecayHalfLife"):
        parse_slurm_conf("PriorityWeightAge=1\nPriorityDecayHalfLife=soon\n", "site.conf")


# ------------------------------------------------------------------ the oracle
def oracle_priority(job: Job, now: float, history, groups: dict, submitted, w, nodes: int):
    """Slurm's formula written from its documentation, apart from ``hpcopt.sim.priority``:
    usage summed in one-second steps of decayed weight, the account -> user tree of the jobs
    submitted by ``now``, shares of one each, classic fairshare."""
    def usage_of(assoc):
        total = 0.0
        for (acc, user), cpus, start, end in history:
            if (acc, user) != assoc:
                continue
            t = start
            while t < min(end, now):
                step = min(1.0, min(end, now) - t)
                total += cpus * step * 0.5 ** ((now - (t + step / 2)) / w.half_life)
                t += step
        return total

    tree: dict = {}
    for j in submitted:
        tree.setdefault(str(groups.get(j.id, "")), set()).add(str(j.user))
    used = {(a, u): usage_of((a, u)) for a, users in tree.items() for u in users}
    everyone = sum(used.values())
    acc, user = str(groups.get(job.id, "")), str(job.user)
    n_users = len(tree[acc])
    shares = (1 / len(tree)) * (1 / n_users)
    own = used[(acc, user)] / everyone if everyone else 0.0
    account = sum(used[(acc, u)] for u in tree[acc]) / everyone if everyone else 0.0
    effective = own + (account - own) / n_users
    fairshare = 2 ** (-effective / shares)
    age = min(1.0, (now - job.submit) / w.max_age)
    size = job.nodes / nodes
    return w.age * age + w.fairshare * fairshare + w.job_size * size + w.partition


def _workload(seed: int, n: int = 60, nodes: int = 8):
    rng = random.Random(seed)
    jobs, t = [], 0.0
    for i in range(n):
        t += rng.expovariate(1 / 40)
        wall = rng.choice([60, 120, 300, 600])
        jobs.append(Job(i, round(t, 1), rng.uniform(10, wall), wall, rng.randint(1, nodes),
                        user=rng.randint(1, 5)))
    groups = {j.id: f"g{j.user % 2}" for j in jobs}
    return jobs, groups


WEIGHTS = PriorityWeights(age=1000, fairshare=10000, job_size=500, partition=7,
                          max_age=1800, half_life=900)


@pytest.mark.parametrize("seed", [1, 2])
def test_priority_matches_the_oracle_during_a_simulation(seed):
    jobs, groups = _workload(seed)
    order = SitePriority(WEIGHTS, groups)
    sim = Simulator(jobs, System(8), build_policy("fcfs"), order=order)
    probe = order.bind(sim)  # a second key on the same events
    checked = 0
    for t in (600.0, 1200.0, 1800.0):
        sim.run_until(lambda s, t=t: s.now >= t)
        now = sim.now
        history = [((str(groups[r.job.id]), str(r.job.user)), r.job.nodes, r.start,
                    r.end if r.end <= now else now)
                   for r in sim.records.values() if r.start <= now]
        submitted = [j for j in jobs if j.submit <= now]
        for job in sim.queue:
            want = oracle_priority(job, now, history, groups, submitted, WEIGHTS, 8)
            assert -probe(job, now)[0] == pytest.approx(want, rel=1e-4, abs=1e-3)
            checked += 1
        # and the driver's order is by that value
        values = [probe(j, now) for j in sim.ordered_queue()]
        assert values == sorted(values)
    assert checked >= 10


def test_priority_sees_no_future():
    """Changing every job submitted after t (users, sizes, run times, more jobs) changes
    no priority at t."""
    jobs, groups = _workload(3)
    t = jobs[30].submit  # both runs stop there
    later = [j for j in jobs if j.submit > t]
    rng = random.Random(9)
    changed = [j for j in jobs if j.submit <= t] + [
        Job(j.id, j.submit, 5.0, 30.0, rng.randint(1, 8), user=rng.randint(6, 9))
        for j in later] + [Job(1000 + k, t + 1 + k, 1.0, 60.0, 8, user=42) for k in range(5)]
    changed_groups = {**groups, **{j.id: "g-new" for j in changed if j.submit > t}}
    seen = []
    for work, grp in ((jobs, groups), (changed, changed_groups)):
        order = SitePriority(WEIGHTS, grp)
        sim = Simulator(work, System(8), build_policy("fcfs"), order=order)
        probe = order.bind(sim)
        sim.run_until(lambda s: s.now >= t)
        starts = {r.job.id: r.start for r in sim.records.values() if r.start <= sim.now}
        seen.append((sim.now, {j.id: probe(j, sim.now) for j in sim.queue}, starts))
    assert seen[0][0] == t and len(seen[0][1]) >= 3
    assert seen[0] == seen[1]


def test_fairshare_moves_a_heavy_users_jobs_back():
    """Two users submit alike; the one who ran a machine-filling job first waits after."""
    jobs = [Job(0, 0.0, 1000.0, 1000.0, 4, user=1)]
    jobs += [Job(1 + k, 10.0 + k, 100.0, 100.0, 4, user=1 + k % 2) for k in range(6)]
    groups = {j.id: f"acct{j.user}" for j in jobs}
    res = {}
    for name, order in (("fcfs", "fcfs"), ("priority", SitePriority(
            PriorityWeights(fairshare=1000, half_life=3600), groups))):
        out = hpcopt.simulate(jobs, nodes=4, order=order)
        table = out.jobs
        starts = dict(zip(table["job_id"] if "job_id" in table else table["id"],
                          table["start"]))
        res[name] = [k for k, _ in sorted(starts.items(), key=lambda kv: kv[1]) if k]
    assert res["fcfs"] == [1, 2, 3, 4, 5, 6]
    # user 2 (jobs 2, 4, 6) goes first until its usage passes user 1's
    assert res["priority"][:2] == [2, 4]


def test_cli_order_priority(tmp_path, capsys):
    conf = tmp_path / "slurm.conf"
    conf.write_text("PriorityType=priority/multifactor\nPriorityWeightFairshare=10000\n"
                    "PriorityWeightAge=100\nPriorityDecayHalfLife=1-0\n")
    out = tmp_path / "o"
    assert main(["simulate", DEMO_TRACE, "--jobs", "200", "--order", "priority",
                 "--slurm-conf", str(conf), "--out", str(out), "--no-progress",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"]["order"] == "priority"
    assert main(["simulate", DEMO_TRACE, "--jobs", "200", "--no-progress", "--json"]) == 0
    fcfs = json.loads(capsys.readouterr().out)
    assert doc["summary"]["avg_wait"] != fcfs["summary"]["avg_wait"]
    conf.write_text("PriorityWeightFairshare=lots\n")
    assert main(["simulate", DEMO_TRACE, "--order", "priority", "--slurm-conf",
                 str(conf)]) != 0
    err = capsys.readouterr().err
    assert "slurm.conf:1" in err and "Traceback" not in err


def test_account_shares_and_associations_by_hand():
    """Shares normalized over every account given (sacctmgr's fairshare=); a user known from
    the start (sacctmgr's user) halves its sibling's share before it ever submits."""
    usage = Usage(3600.0, shares={"big": 3, "small": 1})
    usage.join("big", "u1")
    usage.start(0, ("big", "u1"), 1.0, 0.0)
    usage.end(0, 100.0)
    # big has all the usage; its share 3/4: F = 2 ** (-1 / 0.75)
    assert usage.fairshare(100.0)[("big", "u1")] == pytest.approx(2 ** (-1 / 0.75))
    usage.join("big", "u2")  # now two users of big: u1 holds 3/8 of the machine
    assert usage.fairshare(100.0)[("big", "u1")] == pytest.approx(2 ** (-1 / 0.375))
    assert usage.fairshare(100.0)[("big", "u2")] == pytest.approx(2 ** (-(0.5) / 0.375))


def test_shares_order_the_accounts():
    """Two accounts run alike; the one with more shares comes first once both have used
    the machine the same, and the driver's order ``priority`` carries the fairshare into
    Slurm's own scheduler (``--policy slurm``)."""
    jobs = [Job(0, 0.0, 100.0, 100.0, 2, user=0), Job(1, 0.0, 100.0, 100.0, 2, user=1)]
    jobs += [Job(2 + k, 10.0 + k, 100.0, 100.0, 4, user=k % 2) for k in range(4)]
    accounts = {j.id: f"acct{j.user}" for j in jobs}
    weights = PriorityWeights(fairshare=1000, half_life=3600)
    slurm = SlurmConf(priority="multifactor", weight_age=1000, weight_job_size=1000)
    for policy, options in (("fcfs", {}), ("slurm", {"conf": slurm})):
        firsts = {}
        for shares in ({"acct0": 1, "acct1": 3}, {"acct0": 3, "acct1": 1}):
            order = SitePriority(weights, accounts, shares=shares)
            sim = Simulator(list(jobs), System(4), build_policy(policy, **options),
                            order=order).run()
            later = sorted(range(2, 6), key=lambda i: sim.records[i].start)
            firsts[max(shares, key=shares.get)] = accounts[later[0]]
        assert firsts == {"acct1": "acct1", "acct0": "acct0"}, policy


def _first_after_the_machine_frees(order) -> int:
    """Job 0 holds the 4 nodes until 55; job 1 (1 node) was submitted at 1, job 2 (4 nodes)
    at 50: which of them starts at 55."""
    jobs = [Job(0, 0.0, 55.0, 55.0, 4), Job(1, 1.0, 10.0, 10.0, 1, user=1),
            Job(2, 50.0, 10.0, 10.0, 4, user=2)]
    sim = Simulator(jobs, System(4), build_policy("fcfs"), order=order).run()
    return min((1, 2), key=lambda i: sim.records[i].start)


def test_priorities_are_recomputed_every_calc_period():
    """Slurm sets a job's priority at its submission and recomputes it every
    PriorityCalcPeriod (priority_multifactor.c's decay thread), not at every pass: at 55
    job 1's age is still the one of its submission (0) under a 60 s period, so job 2's size
    puts it first; recomputed at every pass, job 1's 54 s of age win."""
    weights = dict(age=1000, job_size=300, max_age=100)
    assert _first_after_the_machine_frees(SitePriority(PriorityWeights(**weights))) == 1
    assert _first_after_the_machine_frees(
        SitePriority(PriorityWeights(**weights, calc_period=60))) == 2
    # the decay thread's ticks run from the controller's start: one at 40 ages job 1 by 39 s
    assert _first_after_the_machine_frees(
        SitePriority(PriorityWeights(**weights, calc_period=60), decay_start=40)) == 1


def test_fairshare_holds_between_ticks():
    """Between two ticks of the decay thread a user's fairshare factor stays the one set at
    its first use after the last tick (``_get_fairshare_priority``; running jobs counted up
    to that tick): u1 (jobs 0 and 1) and u2 (jobs 2 and 3) submit before any usage is
    counted, so their jobs 1 and 3 tie at 50 and go in submission order; recomputed at
    every pass, u1's 50 s on 2 nodes (against u2's 20 s) would put job 3 first."""
    jobs = [Job(0, 0.0, 50.0, 50.0, 2, user=1), Job(1, 1.0, 10.0, 10.0, 4, user=1),
            Job(2, 0.0, 20.0, 20.0, 2, user=2), Job(3, 2.0, 10.0, 10.0, 4, user=2)]
    accounts = {0: "a", 1: "a", 2: "b", 3: "b"}

    def first(period: float) -> int:
        order = SitePriority(PriorityWeights(fairshare=10000, half_life=600,
                                             calc_period=period), accounts)
        sim = Simulator(list(jobs), System(4), build_policy("fcfs"), order=order).run()
        return min((1, 3), key=lambda i: sim.records[i].start)

    assert first(0) == 3
    assert first(60) == 1
