"""Association limits under hpcopt, on a real Slurm enforcing them
(``AccountingStorageEnforce=associations,limits``, slurmdbd; both versions): the adapter
reads them each cycle and releases only what they let start, so no released job ever
waits on an ``Assoc*`` reason, and every job still runs.

Account ``acct_a``: its user at ``MaxJobs=1`` submits three 1-node jobs.  Account
``acct_c`` (``GrpTRES=node=3``): its user submits three 2-node jobs (one at a time fits
the cap).  ``acct_b`` has no limit: its user's two 2-node jobs run beside them.
"""

from __future__ import annotations

import time

import pytest

from .slurm_fixtures import VERSIONS, accounts_testbed

pytestmark = pytest.mark.slow

USERS = {"acct_a": "hpcoptlma", "acct_b": "hpcoptlmb", "acct_c": "hpcoptlmc"}
CONF = ("AccountingStorageEnforce=associations,limits",)


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def site(request):
    with accounts_testbed(request.param, "limits", USERS, scheduler="backfill",
                          conf_extra=CONF) as c:
        c.run("sacctmgr", "-i", "add", "account", "acct_a,acct_b")
        c.run("sacctmgr", "-i", "add", "account", "acct_c", "GrpTRES=node=3")
        for account, user in USERS.items():
            extra = ["MaxJobs=1"] if account == "acct_a" else []
            c.run("sacctmgr", "-i", "add", "user", user, f"account={account}", *extra)
        yield c


def test_limits_hold(site):
    c = site
    ids = {"acct_a": [c.as_user("acct_a", "-N", "1", "-t", "1", sleep=6) for _ in range(3)],
           "acct_c": [c.as_user("acct_c", "-N", "2", "-t", "1", sleep=6) for _ in range(3)],
           "acct_b": [c.as_user("acct_b", "-N", "2", "-t", "1", sleep=6) for _ in range(2)]}
    owner = {jid: acct for acct, jids in ids.items() for jid in jids}
    adapter = c.adapter("fcfs", limits=True)
    assert adapter.slurm.enforces_limits()
    limits = adapter.slurm.site_limits()
    assert limits.accounts["acct_c"].nodes == 3
    assert limits.users["acct_a", USERS["acct_a"]].jobs == 1
    end = time.monotonic() + 120
    blocked_notes = 0
    most = {"acct_a": 0, "acct_c": 0}
    while time.monotonic() < end:
        rec = adapter.cycle()
        assert rec.ok, rec
        blocked_notes += sum("blocked by a limit" in n for n in rec.notes or [])
        jobs = {jid: j for jid, j in c.jobs().items() if jid in owner}
        waiting = {jid: j["state_reason"] for jid, j in jobs.items()
                   if j["job_state"] == "PENDING" and j["priority"] != 0}
        assert not any(r.startswith(("Assoc", "QOS")) for r in waiting.values()), waiting
        busy = [jid for jid, j in jobs.items() if j["job_state"] in ("RUNNING", "COMPLETING")]
        most["acct_a"] = max(most["acct_a"], sum(owner[j] == "acct_a" for j in busy))
        most["acct_c"] = max(most["acct_c"], sum(2 for j in busy if owner[j] == "acct_c"))
        if all(j["job_state"] == "COMPLETED" for j in jobs.values()) and len(jobs) == 8:
            break
        time.sleep(1)
    states = {jid: j["job_state"] for jid, j in c.jobs().items() if jid in owner}
    assert set(states.values()) == {"COMPLETED"}, states
    assert most == {"acct_a": 1, "acct_c": 2}
    assert blocked_notes > 0  # the limits did block jobs that had room
