"""Association and QOS limits under hpcopt, on a real Slurm enforcing them
(``AccountingStorageEnforce=associations,limits``, slurmdbd; both versions): the adapter
reads them each cycle and releases only what they let start, so no released job ever
waits on an ``Assoc*`` or ``QOS*`` reason, every job still runs, and the jobs start in the
order Slurm alone starts the same submissions (a second testbed without the submit script).

The limits, one per account, each binding before the machine's 8 nodes do:

* ``acct_a``: its user at ``MaxJobs=1`` and ``MaxSubmitJobs=3`` (a fourth submission is
  refused by Slurm itself, under hpcopt as without it) submits three 1-node jobs;
* ``acct_c`` under ``grp`` (``GrpTRES=node=3`` on the parent: the tree): three 2-node jobs,
  one at a time;
* ``acct_b``: two 2-node jobs in QOS ``small`` (``MaxJobsPerUser=1``);
* ``acct_d`` (``GrpTRESRunMins=node=4``): three 1-node jobs of 2 minutes, two at a time.

Jobs of different accounts are ordered by no limit: they start as the jobs before them in
their own account end, so the order compared is each account's own (ties across accounts
are left out: the same second on one testbed may be the next on the other).
"""

from __future__ import annotations

import subprocess
import time

import pytest

from .slurm_fixtures import VERSIONS, accounts_testbed

pytestmark = pytest.mark.slow

ACCOUNTS = ("acct_a", "acct_b", "acct_c", "acct_d")
CONF = ("AccountingStorageEnforce=associations,limits",)
JOBS = {"acct_a": (3, "1", "1"), "acct_c": (3, "2", "1"), "acct_b": (2, "2", "1"),
        "acct_d": (3, "1", "2")}  # count, nodes, time limit (minutes)
MOST = {"acct_a": 1, "acct_c": 1, "acct_b": 1, "acct_d": 2}  # running at once


def _users(tag: str) -> dict[str, str]:
    return {a: f"hpcoptl{tag}{a[-1]}" for a in ACCOUNTS}


def _associations(c) -> None:
    c.run("sacctmgr", "-i", "add", "qos", "small", "MaxJobsPerUser=1")
    c.run("sacctmgr", "-i", "add", "account", "acct_a,acct_b")
    c.run("sacctmgr", "-i", "add", "account", "grp", "GrpTRES=node=3")
    c.run("sacctmgr", "-i", "add", "account", "acct_c", "parent=grp")
    c.run("sacctmgr", "-i", "add", "account", "acct_d", "GrpTRESRunMins=node=4")
    for account, user in c.users.items():
        extra = {"acct_a": ["MaxJobs=1", "MaxSubmitJobs=3"],
                 "acct_b": ["qos=normal,small"]}.get(account, [])
        c.run("sacctmgr", "-i", "add", "user", user, f"account={account}", *extra)


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def sites(request):
    """Two testbeds of one version with the same associations: ``hpcopt`` (the submit
    script holds every job) and ``alone`` (Slurm's own scheduling, no submit script)."""
    with accounts_testbed(request.param, "limh", _users("h"), scheduler="backfill",
                          conf_extra=CONF) as held, \
            accounts_testbed(request.param, "lims", _users("s"), scheduler="backfill",
                             conf_extra=CONF, hold=False) as alone:
        for c in (held, alone):
            _associations(c)
        yield held, alone


def _submit(c) -> dict[int, tuple[str, int]]:
    """The same submissions on either testbed: job id -> (account, its rank there); the
    fourth of ``acct_a`` is refused by Slurm (MaxSubmitJobs=3)."""
    owner = {}
    for account, (count, nodes, minutes) in JOBS.items():
        qos = ["--qos", "small"] if account == "acct_b" else []
        for k in range(count):
            owner[c.as_user(account, "-N", nodes, "-t", minutes, *qos, sleep=6)] = (account, k)
    env = [f"{k}={c.env[k]}" for k in ("SLURM_CONF", "PATH")]
    p = subprocess.run(["runuser", "-u", c.users["acct_a"], "--", "env", *env, "sbatch",
                        "-A", "acct_a", "-N", "1", "-o", "/dev/null", "-D", "/tmp", "--wrap",
                        "sleep 1"], capture_output=True, text=True, timeout=30, cwd="/tmp")
    assert p.returncode != 0 and "MaxSubmit" in p.stderr, (p.returncode, p.stderr)
    return owner


def _run(c, owner, cycle) -> dict[str, list[int]]:
    """Until every job completed: ``cycle()`` each second (the adapter's, or nothing), each
    account's jobs running at once checked against its limit, and (under hpcopt) no
    released job waiting on a limit; each account's ranks in start order."""
    end = time.monotonic() + 240
    most = dict.fromkeys(MOST, 0)
    while time.monotonic() < end:
        cycle()
        jobs = {jid: j for jid, j in c.jobs().items() if jid in owner}
        waiting = {jid: j["state_reason"] for jid, j in jobs.items()
                   if j["job_state"] == "PENDING" and j["priority"] != 0}
        if c.held:
            assert not any(r.startswith(("Assoc", "QOS")) for r in waiting.values()), waiting
        for account in MOST:
            most[account] = max(most[account], sum(
                owner[jid][0] == account and j["job_state"] in ("RUNNING", "COMPLETING")
                for jid, j in jobs.items()))
        if len(jobs) == len(owner) and all(j["job_state"] == "COMPLETED"
                                           for j in jobs.values()):
            break
        time.sleep(1)
    jobs = {jid: j for jid, j in c.jobs().items() if jid in owner}
    assert {j["job_state"] for j in jobs.values()} == {"COMPLETED"}, jobs
    assert most == MOST, most
    order = sorted(owner, key=lambda jid: (jobs[jid]["start_time"], jid))
    return {a: [owner[jid][1] for jid in order if owner[jid][0] == a] for a in MOST}


def test_limits_hold_and_start_as_slurm_alone(sites):
    held, alone = sites
    held.held, alone.held = True, False
    owner = _submit(held)
    adapter = held.adapter("fcfs", limits=True)
    assert adapter.slurm.enforces_limits()
    limits = adapter.slurm.site_limits()
    assert limits.accounts["grp"].nodes == 3 and limits.lineage("acct_c")[:2] == ["acct_c",
                                                                                   "grp"]
    assert limits.users["acct_a", held.users["acct_a"]].jobs == 1
    assert limits.qos_users["small"].jobs == 1
    assert limits.accounts["acct_d"].run_mins.node == 4
    notes: list[str] = []

    def cycle():
        rec = adapter.cycle()
        assert rec.ok, rec
        notes.extend(n for n in rec.notes or [] if "blocked by a limit" in n)

    under_hpcopt = _run(held, owner, cycle)
    # every limit did hold back a job that had room
    for name in ("user hpcoptlha in account acct_a", "account grp", "in QOS small",
                 "GrpTRESRunMins"):
        assert any(name in n for n in notes), (name, notes)
    slurm_alone = _run(alone, _submit(alone), lambda: None)
    assert under_hpcopt == slurm_alone


MINS_CONF = CONF + ("PriorityType=priority/multifactor", "PriorityCalcPeriod=1",
                    "PriorityDecayHalfLife=1-0", "PriorityWeightFairshare=1000")


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def used_site(request):
    with accounts_testbed(request.param, "limu", {"acct_e": "hpcoptlme"},
                          scheduler="backfill", conf_extra=MINS_CONF) as c:
        c.run("sacctmgr", "-i", "add", "account", "acct_e", "GrpTRESMins=node=3")
        c.run("sacctmgr", "-i", "add", "user", c.users["acct_e"], "account=acct_e")
        yield c


def test_grp_tres_mins_from_slurms_usage(used_site):
    """``GrpTRESMins=node=3``: a job starts while the account's usage (``sshare``, charged
    by Slurm every ``PriorityCalcPeriod``) is under it; once an 8-node job ran half a
    minute (4 node-minutes), the next job stays held with a note, where released it would
    wait on ``AssocGrpNodeMinutes``."""
    c = used_site
    adapter = c.adapter("fcfs", limits=True)
    first = c.as_user("acct_e", "-N", "8", "-t", "2", sleep=30)

    def cycle() -> list[str]:
        rec = adapter.cycle()
        assert rec.ok, rec
        return [n for n in rec.notes or [] if "blocked by a limit" in n]

    c.wait(lambda: not cycle() and c.state(first) in ("RUNNING", "COMPLETED"), 30, step=1)

    def used() -> float:
        got = adapter.slurm.site_limits().used.get(("account", "acct_e"))
        return (got.node or 0.0) if got else 0.0

    c.wait(lambda: c.state(first) == "COMPLETED" and used() >= 3, 150, step=2)
    second = c.as_user("acct_e", "-N", "1", "-t", "1", sleep=2)
    notes: list[str] = []
    for _ in range(10):
        notes += cycle()
        job = c.jobs()[second]
        assert job["priority"] == 0 and job["job_state"] == "PENDING", job  # still held
        time.sleep(1)
    assert any(f"job {second} blocked" in n and "GrpTRESMins 3" in n for n in notes), notes
    c.cancel([second])
