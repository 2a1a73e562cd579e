"""A site's association and QOS limits (``hpcopt.sim.limits``): the admission rule by hand,
in simulations (no limit is ever exceeded at any time; a blocked job does not hold up the
others), in the one decision core (``decide``), and sacctmgr's text read."""

from __future__ import annotations

import random

import pytest

import hpcopt
from hpcopt.domain import Job, System
from hpcopt.errors import SimulationError
from hpcopt.policies import build_policy
from hpcopt.sim.decide import ClusterState, decide
from hpcopt.sim.limits import Limit, SiteLimits, Who
from hpcopt.slurm.state import parse_assoc_limits, parse_qos_limits


def _job(jid, user=1, nodes=1, wall=100.0, submit=0.0, cores=0):
    return Job(jid, submit, wall, wall, nodes, user=user, cores=cores)


def test_admission_by_hand():
    who = {1: Who("a", "u"), 2: Who("a", "u"), 3: Who("a", "v"), 4: Who("b", "w", "q"),
           5: Who("b", "w", "q"), 9: Who("a", "u")}
    limits = SiteLimits(users={("a", "u"): Limit(jobs=2)},
                        accounts={"a": Limit(nodes=5)},
                        qos={"q": Limit(wall=200.0)}, who=who)
    running = [_job(9, nodes=2)]
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
    users, accounts = parse_assoc_limits(ASSOC)
    # alice inherits MaxJobs and MaxWall from acct_a; bob's GrpJobs is below his MaxJobs
    assert users == {("acct_a", "alice"): Limit(jobs=2, wall=3600.0),
                     ("acct_a", "bob"): Limit(jobs=3, cpus=8, wall=3600.0)}
    assert accounts == {"acct_a": Limit(nodes=4), "acct_b": Limit(nodes=6, cpus=16)}
    assert parse_qos_limits("normal|||\nsmall|4|node=2|00:30:00\n") == {
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
