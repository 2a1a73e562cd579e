"""The site's priority under hpcopt, on a real Slurm with slurmdbd (both versions): the
adapter's ``--order priority`` computes, for jobs the submit script holds (Slurm gives them
0), the multifactor value Slurm gives them once released, from what Slurm publishes.

A testbed with ``priority/multifactor`` (fairshare, age, job size and partition weights,
``PriorityCalcPeriod`` one minute) and two accounts, each with an unprivileged user of its
own.  The user of ``acct_a`` runs the whole machine until ``sshare`` shows its usage; then
both submit a 1-node and a 4-node job (held).  With the machine still busy the adapter
releases nothing and reserves the head of the site's order: ``acct_b``'s 4-node job
(fairshare, then size), where FCFS reserves the first submitted; ``hpcopt slurm run``
does the same without ``--order`` (the cluster's multifactor priority is its default).
Then the four are released by hand behind the busy machine, and Slurm's own priorities
(``squeue``) equal hpcopt's computed values within one recalculation period of age, in
the same order.
"""

from __future__ import annotations

import time

import pytest

from hpcopt.slurm.priority import published_priority
from hpcopt.slurm.state import Slurm

from .slurm_fixtures import VERSIONS, accounts_testbed

pytestmark = pytest.mark.slow

USERS = {"acct_a": "hpcoptfsa", "acct_b": "hpcoptfsb"}
WEIGHT_AGE, MAX_AGE, CALC = 1000, 3600, 60
CONF = ("PriorityType=priority/multifactor", f"PriorityWeightAge={WEIGHT_AGE}",
        "PriorityWeightJobSize=1000", "PriorityWeightFairshare=10000",
        "PriorityWeightPartition=100", "PriorityMaxAge=1:00:00",
        "PriorityDecayHalfLife=1:00:00", f"PriorityCalcPeriod={CALC // 60}")
# Slurm recomputes every PriorityCalcPeriod; hpcopt's value is of now: the age between
TOLERANCE = WEIGHT_AGE * (CALC + 5) / MAX_AGE + 1


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def site(request):
    with accounts_testbed(request.param, "prio", USERS, scheduler="backfill",
                          conf_extra=CONF) as c:
        c.run("sacctmgr", "-i", "add", "account", "acct_a,acct_b")
        for account, user in USERS.items():
            c.run("sacctmgr", "-i", "add", "user", user, f"account={account}")
        yield c


def test_site_priority_is_slurms(site):
    c = site
    slurm = Slurm(env=c.env, timeout=10, retries=1, backoff=0.2)
    assert slurm.priority_config().priority == "multifactor"
    busy = c.as_user("acct_a", "-N", "8", "-t", "20", sleep=1200)
    c.run("scontrol", "release", str(busy))
    c.wait(lambda: c.state(busy) == "RUNNING", 30)

    def fairshare():
        return slurm.priority_data().fairshare or {}

    # Slurm charges running jobs every PriorityCalcPeriod
    c.wait(lambda: fairshare().get(("acct_a", USERS["acct_a"]), 1.0)
           < fairshare().get(("acct_b", USERS["acct_b"]), 0.0), 3 * CALC + 30, step=2)
    ids = {}
    for account in ("acct_a", "acct_b"):
        for n in (1, 4):
            ids[account, n] = c.as_user(account, "-N", str(n), "-n", str(n), "-t", "2")
    site_rec = c.adapter("fcfs", order="priority").cycle()
    fcfs_rec = c.adapter("fcfs", order="fcfs", dry_run=True).cycle()
    assert site_rec.ok and not site_rec.released, site_rec
    assert site_rec.reserved["id"] == ids["acct_b", 4], (site_rec, ids)
    assert fcfs_rec.reserved["id"] == ids["acct_a", 1], (fcfs_rec, ids)
    # the command's default order on this cluster is the site's
    p = c.cli("run", "--policy", "fcfs", "--once", "--dry-run", "--lock",
              str(c.dir / "cli.lock"))
    out, err = p.communicate(timeout=90)
    assert p.returncode == 0 and f"reserved {ids['acct_b', 4]} at" in out, (out, err)

    for jid in ids.values():  # Slurm's own numbers: released behind the busy machine
        c.run("scontrol", "release", str(jid))
    seen: dict = {}

    def agree() -> bool:
        data = slurm.priority_data()
        now = time.time()
        jobs = {j.id: j for j in slurm.jobs() if j.id in ids.values()}
        seen.clear()
        seen.update({jid: (j.priority, published_priority(j, data, now))
                     for jid, j in jobs.items()})
        return len(seen) == 4 and all(j.state == "PENDING" for j in jobs.values()) and all(
            abs(theirs - ours) <= TOLERANCE for theirs, ours in seen.values())

    c.wait(agree, 2 * CALC + 30, step=2)  # Slurm's first recalculation counts whole nodes
    by_slurm = sorted(ids.values(), key=lambda jid: -seen[jid][0])
    assert by_slurm[0] == ids["acct_b", 4]
    assert by_slurm == sorted(ids.values(), key=lambda jid: -seen[jid][1]), seen
    c.cancel([busy, *ids.values()])


PAIR_MAX_AGE = 300  # seconds: a short PriorityMaxAge, so that two minutes of age decide
PAIR_CONF = tuple(f"PriorityMaxAge={PAIR_MAX_AGE // 60}" if line.startswith("PriorityMaxAge")
                  else line for line in CONF)


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def pair(request):
    """Two testbeds of one version with the weights above (``PriorityMaxAge`` five
    minutes) and the same accounts: ``hpcopt`` (the submit script holds every job) and
    ``alone`` (no submit script: Slurm's own order)."""
    def users(tag):
        return {a: f"hpcoptfs{tag}{a[-1]}" for a in USERS}

    with accounts_testbed(request.param, "prioh", users("h"), scheduler="backfill",
                          conf_extra=PAIR_CONF) as held, \
            accounts_testbed(request.param, "prios", users("s"), scheduler="backfill",
                             conf_extra=PAIR_CONF, hold=False) as alone:
        for c in (held, alone):
            c.run("sacctmgr", "-i", "add", "account", "acct_a,acct_b")
            for account, user in c.users.items():
                c.run("sacctmgr", "-i", "add", "user", user, f"account={account}")
        yield held, alone


def test_started_order_is_slurms(pair):
    """The same submissions start in the same order under hpcopt (fcfs over the site's
    priority) as under Slurm alone, where fairshare, size and age each decide a place.

    ``acct_a``'s user runs the machine until its usage shows in the fairshare, and submits
    a 5-node job as it starts; two and a half minutes later, ``acct_a`` an 8-node job and
    ``acct_b`` a 5-node and an 8-node job.  Each needs more than half the machine, so they
    start one at a time once the machine is freed (on both testbeds at once): ``acct_b``'s
    first (fairshare: at least 2,000 of weight 10,000 apart), each account's 8-node job
    before its 5-node one (size: 375 of 1,000) except where the 5-node job is 150 s older
    (age: 500 of 1,000 over five minutes).  Submit order would start ``acct_a``'s first."""
    held, alone = pair
    busy, labels = {}, {c: {} for c in pair}  # (each testbed numbers its own jobs)
    for c in pair:
        busy[c] = c.as_user("acct_a", "-N", "8", "-t", "20", sleep=1200)
        if c is held:
            c.run("scontrol", "release", str(busy[c]))
    t0 = time.monotonic()
    for c in pair:
        c.wait(lambda c=c: c.state(busy[c]) == "RUNNING", 30)
        labels[c][c.as_user("acct_a", "-N", "5", "-t", "2", sleep=4)] = ("acct_a", 5, "old")
    for c in pair:
        slurm = Slurm(env=c.env, timeout=10, retries=1, backoff=0.2)

        def fairshare(account, slurm=slurm, c=c):
            return (slurm.priority_data().fairshare or {}).get((account, c.users[account]))

        c.wait(lambda fs=fairshare: (fs("acct_a") or 1.0) < (fs("acct_b") or 0.0) - 0.2,
               3 * CALC + 30, step=2)
    time.sleep(max(0.0, t0 + 150 - time.monotonic()))
    for c in pair:
        for account, n in (("acct_a", 8), ("acct_b", 5), ("acct_b", 8)):
            labels[c][c.as_user(account, "-N", str(n), "-t", "2", sleep=4)] = (account, n, "")
    time.sleep(CALC + 5)  # Slurm's priorities recalculated once since the submissions
    adapter = held.adapter("fcfs", order="priority")
    for c in pair:
        c.cancel([busy[c]])
    end = time.monotonic() + 180
    while time.monotonic() < end:
        adapter.cycle()
        done = True
        for c in pair:
            jobs = c.jobs()
            assert not any(jobs[j]["job_state"] == "PENDING" and jobs[j]["priority"] != 0
                           and jobs[j]["state_reason"].startswith(("Assoc", "QOS"))
                           for j in labels[c])
            done = done and all(jobs[j]["job_state"] == "COMPLETED" for j in labels[c])
        if done:
            break
        time.sleep(1)
    orders = {}
    for c in pair:
        jobs = c.jobs()
        assert all(jobs[j]["job_state"] == "COMPLETED" for j in labels[c]), jobs
        assert len({jobs[j]["start_time"] for j in labels[c]}) == 4  # one at a time: no ties
        orders[c is held] = [labels[c][j] for j in sorted(labels[c],
                                                          key=lambda j: jobs[j]["start_time"])]
    assert orders[True] == orders[False] == [("acct_b", 8, ""), ("acct_b", 5, ""),
                                             ("acct_a", 5, "old"), ("acct_a", 8, "")], orders
