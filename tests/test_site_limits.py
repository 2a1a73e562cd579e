"""A site's association and QOS limits (``hpcopt.sim.limits``): the admission rule by hand,
in simulations (no limit is ever exceeded at any time; a blocked job does not hold up the
others), in the one decision core (``decide``), and sacctmgr's text read."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

import hpcopt
from hpcopt.domain import Job, System
from hpcopt.errors import SimulationError
from hpcopt.policies import build_policy
from hpcopt.sim.decide import ClusterState, decide
from hpcopt.sim.limits import Limit, SiteLimits, Tres, Who
from hpcopt.slurm.limits_text import (
    LimitsTextError,
    merged,
    parse_assoc_limits,
    parse_limits_dump,
    parse_qos_limits,
    parse_qos_usage,
    parse_usage,
)


def _job(jid, user=1, nodes=1, wall=100.0, submit=0.0, cores=0):
    return Job(jid, submit, wall, wall, nodes, user=user, cores=cores)


def test_admission_by_hand():
    who = {1: Who("a", "u"), 2: Who("a", "u"), 3: Who("a", "v"), 4: Who("b", "w", "q"),
           5: Who("b", "w", "q"), 9: Who("a", "u")}
    limits = SiteLimits(users={("a", "u"): Limit(jobs=2)},
                        accounts={"a": Limit(nodes=5)},
                        qos={"q": Limit(wall=200.0)}, who=who)
    running = [(_job(9, nodes=2), 0.0)]
    queue = [_job(1, nodes=1), _job(2, nodes=1), _job(3, nodes=3), _job(4, wall=300.0),
             _job(5, wall=200.0)]
    kept, blocked = limits.admissible(queue, running)
    # u: 9 runs, 1 kept (2 of 2), 2 blocked; account a: 2 + 1 nodes, 3 (v) would make 6 > 5
    assert [j.id for j in kept] == [1, 5]
    assert [(j.id, why) for j, why in blocked] == [
        (2, "user u in account a: 2 running of at most 2 jobs"),
        (3, "account a: 3 + 3 nodes over 5"),
        (4, "QOS q: time limit 300 s over MaxWall 200 s")]
    cpus = SiteLimits(accounts={"": Limit(cpus=8)})
    kept, blocked = cpus.admissible([_job(1, cores=6), _job(2, cores=4), _job(3, cores=2)], [])
    assert [j.id for j in kept] == [1, 3] and "6 + 4 processors over 8" in blocked[0][1]
    assert not SiteLimits() and SiteLimits(qos={"q": Limit(jobs=1)})


def _running_at(table, t):
    ids = table["id"] if "id" in table else table["job_id"]
    return [i for i, s, e in zip(ids, table["start"], table["end"]) if s <= t < e]


@pytest.mark.parametrize("policy", ["fcfs", "knapsack", "sjf"])
def test_no_limit_is_ever_exceeded_in_a_simulation(policy):
    rng = random.Random(5)
    jobs = [_job(i, user=rng.randint(1, 4), nodes=rng.randint(1, 4),
                 wall=float(rng.choice([60, 300, 900])), submit=float(i * 20))
            for i in range(80)]
    groups = {j.id: f"g{j.user % 2}" for j in jobs}
    who = {j.id: Who(groups[j.id], str(j.user)) for j in jobs}
    limits = SiteLimits(users={("g1", "1"): Limit(jobs=1), ("g0", "2"): Limit(jobs=2)},
                        accounts={"g1": Limit(nodes=4)}, who=who)
    free = hpcopt.simulate(jobs, nodes=8, policy=policy)
    res = hpcopt.simulate(jobs, nodes=8, policy=policy, limits=limits)
    table = res.jobs
    by_id = {j.id: j for j in jobs}
    starts = sorted(set(table["start"]))
    for t in starts:
        now = [by_id[i] for i in _running_at(table, t)]
        assert sum(1 for j in now if j.user == 1) <= 1
        assert sum(1 for j in now if j.user == 2) <= 2
        assert sum(j.nodes for j in now if groups[j.id] == "g1") <= 4
    # the limits bind: user 1 ran two jobs at once without them
    loose = free.jobs
    assert max(sum(1 for i in _running_at(loose, t) if by_id[i].user == 1)
               for t in sorted(set(loose["start"]))) > 1


def test_a_blocked_head_does_not_hold_up_the_queue():
    """User 1 may run one job; its second waits while user 2's later jobs start."""
    jobs = [_job(0, user=1, wall=1000.0), _job(1, user=1, submit=1.0),
            _job(2, user=2, submit=2.0), _job(3, user=2, submit=3.0)]
    limits = SiteLimits(users={("", "1"): Limit(jobs=1)})
    table = hpcopt.simulate(jobs, nodes=4, limits=limits).jobs
    start = dict(zip(table["id"] if "id" in table else table["job_id"], table["start"]))
    assert start == {0: 0.0, 1: 1000.0, 2: 2.0, 3: 3.0}


def test_a_job_no_limit_ever_admits_is_an_error():
    limits = SiteLimits(users={("", "1"): Limit(wall=50.0)})
    with pytest.raises(SimulationError, match=r"can never start under the site's limits "
                                              r"\(first: job 0, .*MaxWall 50 s"):
        hpcopt.simulate([_job(0, wall=100.0)], nodes=2, limits=limits)


def test_decide_leaves_blocked_jobs_and_plans_without_them():
    limits = SiteLimits(users={("", "1"): Limit(jobs=1)})
    state = ClusterState(100.0, System(4), queue=(_job(1), _job(2, user=2, nodes=4)),
                         running=((_job(7, nodes=2), 500.0),), limits=limits)
    out = decide(state, build_policy("fcfs"))
    assert [j.id for j, _ in out.blocked] == [1]
    assert "1 running of at most 1 jobs" in out.blocked[0][1]
    assert out.started == () and out.reserved.id == 2 and out.shadow == 500.0


ASSOC = """\
hpcopt|||||
acct_a||2||node=4|01:00:00
acct_a|alice||||
acct_a|bob|5|3|cpu=8|
acct_b||||cpu=16,node=6|
acct_b|carol||||
"""


def test_sacctmgr_limits_read():
    read = parse_assoc_limits(ASSOC)
    # alice inherits MaxJobs and MaxWall from acct_a; bob's GrpJobs is below his MaxJobs
    assert read.users == {("acct_a", "alice"): Limit(jobs=2, wall=3600.0),
                          ("acct_a", "bob"): Limit(jobs=3, cpus=8, wall=3600.0)}
    assert read.accounts == {"acct_a": Limit(nodes=4), "acct_b": Limit(nodes=6, cpus=16)}
    assert parse_qos_limits("normal|||\nsmall|4|node=2|00:30:00\n").qos == {
        "small": Limit(jobs=4, nodes=2, wall=1800.0)}


def test_cli_limits(tmp_path, capsys):
    """``hpcopt simulate --limits``: a sacctmgr dump over the trace's groups and users."""
    from pathlib import Path

    from hpcopt.cli import main
    from hpcopt.traces import load_trace

    demo = str(Path(__file__).resolve().parent.parent / "instances" / "traces" / "demo.swf")
    trace = load_trace(demo)
    top = max({j.user for j in trace.jobs[:200]},
              key=lambda u: sum(j.user == u for j in trace.jobs[:200]))
    group = trace.attributes["group"][[j.user for j in trace.jobs].index(top)]
    dump = tmp_path / "assoc.txt"
    dump.write_text(f"{int(group)}|{top}|1|||\n")
    out = tmp_path / "o"
    assert main(["simulate", demo, "--jobs", "200", "--limits", str(dump), "--out", str(out),
                 "--no-progress"]) == 0
    import csv

    with open(out / "jobs.csv") as f:
        rows = list(csv.DictReader(f))
    mine = [(float(r["start"]), float(r["end"])) for r in rows if int(r["user"]) == top]
    assert len(mine) > 2
    for s, _ in mine:  # never two of the user's jobs at once
        assert sum(1 for s2, e2 in mine if s2 <= s < e2) == 1
    dump.write_text("only|three|fields\n")
    assert main(["simulate", demo, "--limits", str(dump)]) != 0
    err = capsys.readouterr().err
    assert "--limits" in err and "unreadable line" in err and "Traceback" not in err
    # saved sacctmgr texts with their headers, several at once: the tree and a QOS list
    tree = tmp_path / "tree.txt"
    tree.write_text("Account|User|ParentName|MaxJobs|MaxSubmit\n"
                    f"top||||\n{int(group)}||top||2\n{int(group)}|{top}||||\n")
    qos = tmp_path / "qos.txt"
    qos.write_text(QOS)
    out = tmp_path / "o2"
    assert main(["simulate", demo, "--jobs", "200", "--limits", str(tree), "--limits",
                 str(qos), "--out", str(out), "--no-progress"]) == 0
    import json

    summary = json.loads((out / "summary.json").read_text())
    refused = summary.get("refused") or summary.get("summary", {}).get("refused")
    assert refused and refused > 0  # the user's third queued job and on: MaxSubmit 2
    qos.write_text(QOS + "small|x\n")
    assert main(["simulate", demo, "--limits", str(qos)]) != 0
    err = capsys.readouterr().err
    assert f"--limits {qos} line 4: unreadable line 'small|x'" in err and "Traceback" not in err


def test_qos_limits_per_user_and_per_account():
    """``MaxJobsPerUser`` counts each user's jobs in the QOS apart; ``MaxTRESPerAccount``
    each account's; ``MaxWall`` of the QOS holds each job."""
    who = {1: Who("a", "u", "q"), 2: Who("a", "v", "q"), 3: Who("a", "u", "q"),
           4: Who("b", "x", "q"), 5: Who("b", "w", "q"), 7: Who("b", "w", "q"),
           8: Who("a", "y", "q")}
    limits = SiteLimits(qos={"q": Limit(wall=500.0)},
                        qos_users={"q": Limit(jobs=1)},
                        qos_accounts={"q": Limit(cpus=6)}, who=who)
    queue = [_job(1, cores=2), _job(2, cores=2), _job(3), _job(4, cores=4), _job(7),
             _job(8, wall=600.0)]
    kept, blocked = limits.admissible(queue, [(_job(5, cores=3), 0.0)])
    # a: 1 (u) and 2 (v) kept, 3 at u's one job; b: 5 (w) runs on 3 processors, so 4 passes
    # b's 6 and 7 is at w's one job
    assert [j.id for j in kept] == [1, 2]
    assert [(j.id, why) for j, why in blocked] == [
        (3, "user u in QOS q: 1 running of at most 1 jobs"),
        (4, "account b in QOS q: 3 + 4 processors over 6"),
        (7, "user w in QOS q: 1 running of at most 1 jobs"),
        (8, "QOS q: time limit 600 s over MaxWall 500 s")]


TREE = """\
Account|User|ParentName|MaxJobs|GrpJobs|GrpTRES|MaxWall|MaxSubmit|GrpSubmit|MaxTRESMins|GrpTRESMins|GrpTRESRunMins
root|||||||||||
root|root||||||||||
top||root|2||node=5|||4||cpu=1000|node=100
mid||top||||00:10:00|||node=30||
leaf||mid|||||||||
leaf|dee||||||||||
leaf|eve||1||||||||
mid|fay||||||||||
"""


def test_the_association_tree():
    """A limit on an account holds every account under it; ``Max*`` limits pass down the
    tree to each user that sets none, however deep."""
    read = parse_assoc_limits(TREE)
    assert read.parents == {"top": "root", "mid": "top", "leaf": "mid"}
    assert read.lineage("leaf") == ["leaf", "mid", "top", "root"]
    assert read.accounts == {"top": Limit(nodes=5, submit=4, mins=Tres(cpu=1000),
                                          run_mins=Tres(node=100))}
    assert read.users == {("leaf", "dee"): Limit(jobs=2, wall=600.0, job_mins=Tres(node=30)),
                          ("leaf", "eve"): Limit(jobs=1, wall=600.0, job_mins=Tres(node=30)),
                          ("mid", "fay"): Limit(jobs=2, wall=600.0, job_mins=Tres(node=30))}
    who = {1: Who("leaf", "dee"), 2: Who("mid", "fay"), 3: Who("leaf", "eve"),
           4: Who("leaf", "dee")}
    limits = replace(read, who=who)
    kept, blocked = limits.admissible(
        [_job(1, nodes=3, wall=60.0), _job(2, nodes=3, wall=60.0), _job(3, nodes=2, wall=60.0),
         _job(4, nodes=1, wall=700.0)], [])
    # top's 5 nodes hold leaf's and mid's users together; dee's 700 s is over mid's MaxWall
    assert [j.id for j in kept] == [1, 3]
    assert [why for _, why in blocked] == ["account top: 3 + 3 nodes over 5",
                                           "user dee in account leaf: time limit 700 s over "
                                           "MaxWall 600 s"]


def test_tres_minutes():
    """``GrpTRESRunMins`` counts running jobs' minutes left by their time limits;
    ``GrpTRESMins`` the usage (and, where ``safe``, what runs and the job itself);
    ``MaxTRESMinsPerJob`` each job alone."""
    run = SiteLimits(accounts={"": Limit(run_mins=Tres(node=20))})
    # at 300 s the running 2-node 600 s job has 10 node-minutes left: one 10-minute job fits
    kept, blocked = run.admissible([_job(1, wall=600.0), _job(2, wall=60.0)],
                                   [(_job(9, nodes=2, wall=600.0), 0.0)], now=300.0)
    assert [j.id for j in kept] == [1]
    assert blocked[0][1] == "account : 20 + 1 running node-minutes over GrpTRESRunMins 20"
    # Slurm's own count of what runs holds (it lags the minutes left) takes their place
    given = replace(run, run_mins={("account", ""): Tres(node=19)})
    assert [j.id for j in given.admissible([_job(1, wall=60.0), _job(2, wall=60.0)],
                                           [(_job(9, nodes=2), 0.0)],
                                           now=300.0)[0]] == [1]
    used = SiteLimits(accounts={"": Limit(mins=Tres(node=100))}, used={("account", ""): Tres(90)})
    assert [j.id for j in used.admissible([_job(1, wall=1200.0)], [])[0]] == [1]
    safe = replace(used, safe=True)
    assert safe.admissible([_job(1, wall=1200.0)], [])[1][0][1] == \
        "account : 90 used + 0 running + 20 node-minutes over GrpTRESMins 100"
    spent = used.admissible([_job(1)], [], spent={("account", ""): [10.0, 10.0]})
    assert spent[1][0][1] == "account : 100 node-minutes used of GrpTRESMins 100"
    per_job = SiteLimits(users={("", "1"): Limit(job_mins=Tres(cpu=15))})
    kept, blocked = per_job.admissible([_job(1, cores=2, wall=600.0), _job(2, wall=600.0)], [])
    assert [j.id for j in kept] == [2]
    assert blocked[0][1] == "user 1 in account : 20 cpu-minutes over MaxTRESMinsPerJob 15"


def test_grp_tres_mins_charges_finished_jobs():
    """In a simulation each finished job's minutes are charged: on one node, 10-minute jobs
    under a 30 node-minute cap run three, and the fourth never starts."""
    jobs = [_job(i, wall=600.0) for i in range(4)]
    limits = SiteLimits(accounts={"": Limit(mins=Tres(node=30))})
    with pytest.raises(SimulationError, match=r"1 job\(s\) can never start .*job 3, account : "
                                              r"30 node-minutes used of GrpTRESMins 30"):
        hpcopt.simulate(jobs, nodes=1, limits=limits)
    table = hpcopt.simulate(jobs[:3], nodes=1, limits=limits).jobs
    assert list(table["start"]) == [0.0, 600.0, 1200.0]


def test_max_submit_jobs_refuses_submissions():
    """Over ``MaxSubmitJobs`` a submission is refused, as Slurm refuses it: the job never
    runs, its mode is ``refused`` and the summary counts it; once the user's jobs end, new
    submissions are taken again."""
    jobs = [_job(i, wall=100.0, submit=float(i)) for i in range(4)] + \
        [_job(4, wall=100.0, submit=500.0), _job(5, user=2, submit=2.0)]
    limits = SiteLimits(users={("", "1"): Limit(submit=2)})
    res = hpcopt.simulate(jobs, nodes=1, limits=limits)
    table = res.jobs
    ids = list(table["id"] if "id" in table else table["job_id"])
    mode = dict(zip(ids, table["mode"]))
    assert [i for i in ids if mode[i] == "refused"] == [2, 3]
    assert res.summary["refused"] == 2
    start = dict(zip(ids, table["start"]))
    assert start[4] == 500.0 and start[5] == 200.0


def test_decide_in_the_adapter_never_refuses():
    """The jobs a decision is given were taken by Slurm already: no cap on submissions
    refuses them there."""
    limits = SiteLimits(users={("", "1"): Limit(submit=1)})
    state = ClusterState(0.0, System(4), queue=(_job(1), _job(2), _job(3)), limits=limits)
    out = decide(state, build_policy("fcfs"))
    assert sorted(j.id for j, _ in out.started) == [1, 2, 3]


QOS = """\
Name|GrpJobs|GrpTRES|MaxWall|MaxJobsPU|MaxTRESPU|MaxJobsPA|MaxTRESPA|MaxSubmitPU|MaxSubmitPA|GrpSubmit|MaxTRESMins|GrpTRESMins|GrpTRESRunMins
normal||||||||||||||
small|||00:30:00|1|node=2|2|cpu=4,mem=1G|4|5|9|cpu=20|node=50|cpu=77
"""

SSHARE = """\
Account|User|GrpTRESRaw|TRESRunMins
root||cpu=30,mem=0,energy=0,node=12,billing=30|cpu=0,node=0
 top||cpu=30,mem=0,energy=0,node=12,billing=30|cpu=16,mem=0,node=4
  leaf|dee|cpu=3,mem=0,node=1|cpu=16,node=4
"""


def test_qos_and_usage_read(tmp_path):
    read = parse_qos_limits(QOS)
    assert read.qos == {"small": Limit(wall=1800.0, submit=9, mins=Tres(node=50),
                                       run_mins=Tres(cpu=77), job_mins=Tres(cpu=20))}
    assert read.qos_users == {"small": Limit(jobs=1, nodes=2, submit=4)}
    assert read.qos_accounts == {"small": Limit(jobs=2, cpus=4, submit=5)}
    usage = parse_usage(SSHARE)
    assert usage.used == {("account", "root"): Tres(12, 30), ("account", "top"): Tres(12, 30),
                          ("user", "leaf", "dee"): Tres(1, 3)}
    assert usage.run_mins == {("account", "root"): Tres(0, 0), ("account", "top"): Tres(4, 16),
                              ("user", "leaf", "dee"): Tres(4, 16)}
    both = merged([parse_limits_dump(t, "x") for t in (TREE, QOS, SSHARE)])
    assert both.qos_users and both.accounts["top"].nodes == 5 and both.used
    with pytest.raises(LimitsTextError, match=r"^x line 4: unreadable line 'a\|b': expected "
                                              r"14 fields"):
        parse_limits_dump(QOS + "a|b\n", "x")
    with pytest.raises(LimitsTextError, match=r"x: small: maxjobsperuser 'one' is not a whole"):
        parse_limits_dump(QOS.replace("|1|node=2", "|one|node=2"), "x")


def test_qos_usage_read():
    text = ("Current Association Manager state\n\nQOS Records\n\nQOS=normal(1)\n"
            "    UsageRaw=0.000000\n    GrpTRESMins=cpu=N(0),mem=N(0),node=N(0)\n"
            "QOS=small(2)\n    UsageRaw=7200.000000\n"
            "    GrpTRESMins=cpu=N(240),mem=N(0),energy=N(0),node=50(120),billing=N(240)\n")
    assert parse_qos_usage(text).used == {("qos", "normal"): Tres(0, 0),
                                          ("qos", "small"): Tres(120, 240)}
    run = parse_qos_usage(text.replace("GrpTRESMins", "GrpTRESRunMins"))
    assert run.run_mins[("qos", "small")] == Tres(120, 240) and not run.used
