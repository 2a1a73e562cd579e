"""Advance reservations and maintenance windows in the decision core and the simulator
(``hpcopt.sim.reservations``), checked against an independent oracle: a sweep over whole
seconds of the free-node profile (running jobs to their limit ends, the blocks in it)."""

from __future__ import annotations

import json
import random

import pytest

from hpcopt.domain import Job, System
from hpcopt.policies import build_policy
from hpcopt.sim.decide import ClusterState, decide
from hpcopt.sim.driver import Simulator
from hpcopt.sim.reservations import Reservation, ReservationError, read_reservations

TOTAL = 8


def profile(running, blocks, horizon):
    """Nodes used (running jobs to their ends, ``(end, nodes)``) plus blocked at each
    whole second ``0 <= t < horizon``."""
    return [sum(n for end, n in running if end > t)
            + sum(n for s, e, n in blocks if s <= t < e) for t in range(horizon)]


def fits_from(used, start, walltime, nodes):
    return all(used[t] + nodes <= TOTAL for t in range(start, start + walltime))


def random_case(rng, horizon=200):
    running = [(rng.randint(1, 120), rng.randint(1, 4)) for _ in range(rng.randint(0, 3))]
    while sum(n for _, n in running) > TOTAL:
        running.pop()
    blocks = []
    for _ in range(rng.randint(1, 3)):
        s = rng.randint(1, 120)
        b = (s, s + rng.randint(5, 60), rng.randint(1, TOTAL))
        if max(profile(running, [*blocks, b], horizon)) <= TOTAL:  # a consistent machine
            blocks.append(b)
    return running, blocks


def state(running, blocks, queue):
    return ClusterState(0.0, System(nodes=TOTAL), tuple(queue),
                        tuple((Job(-1 - i, 0, 0, 0, n), float(end))
                              for i, (end, n) in enumerate(running)),
                        reservations=tuple(Reservation(float(s), float(e), n, name=f"r{k}")
                                           for k, (s, e, n) in enumerate(blocks)))


@pytest.mark.parametrize("seed", range(300))
def test_the_shadow_is_the_first_fit_of_the_profile_with_blocks(seed):
    rng = random.Random(seed)
    running, blocks = random_case(rng)
    head = Job(1, 0, 0, rng.randint(1, 60), rng.randint(1, TOTAL))
    d = decide(state(running, blocks, [head]), build_policy("fcfs"))
    used = profile(running, blocks, 400)
    first = next(t for t in range(400) if fits_from(used, t, int(head.walltime), head.nodes))
    if first == 0:
        assert [j.id for j, _ in d.started] == [1] and d.reserved is None
    else:
        assert not d.started and d.reserved.id == 1 and d.shadow == first


@pytest.mark.parametrize("seed", range(300))
def test_backfilling_keeps_blocks_and_the_head_and_misses_no_candidate(seed):
    """What starts keeps every block and the head's shadow; each queued job left out could
    not have started in the final state (the EASY scan rejects only what still does not
    fit after it)."""
    rng = random.Random(seed)
    running, blocks = random_case(rng)
    jobs = [Job(i, 0, 0, rng.randint(1, 80), rng.randint(1, TOTAL)) for i in range(1, 8)]
    d = decide(state(running, blocks, jobs), build_policy("fcfs"))
    started = {j.id for j, _ in d.started}
    now_run = running + [(int(j.walltime), j.nodes) for j, _ in d.started]
    used = profile(now_run, blocks, 400)
    assert max(used) <= TOTAL
    if d.reserved is None:
        return
    head = d.reserved
    shadow = int(d.shadow)
    assert fits_from(used, shadow, int(head.walltime), head.nodes)
    with_head = profile(now_run, [*blocks, (shadow, shadow + int(head.walltime), head.nodes)],
                        400)
    for job in jobs:
        if job.id not in started and job is not head:
            assert not fits_from(with_head, 0, int(job.walltime), job.nodes), job


def test_without_blocks_the_decision_is_easys():
    rng = random.Random(7)
    for _ in range(100):
        running, _ = random_case(rng)
        jobs = [Job(i, 0, 0, rng.randint(1, 80), rng.randint(1, TOTAL)) for i in range(1, 8)]
        plain = decide(state(running, [], jobs), build_policy("fcfs"))
        far = state(running, [(10**6, 10**6 + 1, 1)], jobs)  # a block no job reaches
        blocked = decide(far, build_policy("fcfs"))
        assert (plain.started, plain.reserved, plain.shadow) == \
            (blocked.started, blocked.reserved, blocked.shadow)


def maintenance_trace():
    rng = random.Random(3)
    return [Job(i, rng.randint(0, 2000), w, w, rng.randint(1, TOTAL))
            for i, w in enumerate(rng.randint(10, 400) for _ in range(120))]


@pytest.mark.parametrize("policy", ["fcfs", "knapsack", "sjf"])
def test_a_simulation_keeps_the_maintenance_window_free(policy):
    """Runtimes equal to limits: no job runs in the window, every job runs."""
    window = Reservation(1000.0, 1600.0, TOTAL, name="maint")
    sim = Simulator(maintenance_trace(), System(nodes=TOTAL), build_policy(policy),
                    reservations=(window,)).run()
    recs = list(sim.records.values())
    assert all(r.start == r.start for r in recs)  # all ran
    assert not [r.job.id for r in recs if r.start < 1600 and r.end > 1000]
    # jobs did run before and after it
    assert any(r.end <= 1000 for r in recs) and any(r.start >= 1600 for r in recs)


def test_a_partial_reservation_leaves_its_nodes_only():
    res = Reservation(500.0, 900.0, 3, name="part")
    sim = Simulator(maintenance_trace(), System(nodes=TOTAL), build_policy("fcfs"),
                    reservations=(res,)).run()
    for t in range(500, 900, 5):
        busy = sum(r.job.nodes for r in sim.records.values() if r.start <= t < r.end)
        assert busy <= TOTAL - 3, t


def test_the_reservations_users_may_run_inside_it():
    """A user reservation of the whole machine: its user's job runs in it, another's
    waits for its end."""
    res = Reservation(0.0, 500.0, TOTAL, users=frozenset({"7"}), name="mine")
    jobs = [Job(1, 0, 100, 100, 4, user=7), Job(2, 0, 100, 100, 4, user=8)]
    sim = Simulator(jobs, System(nodes=TOTAL), build_policy("fcfs"),
                    reservations=(res,)).run()
    assert sim.records[1].start == 0 and sim.records[2].start == 500


def test_a_reservation_matters_only_from_when_it_is_known():
    """Decided at 0, a maintenance made known at 10 cannot have kept the first job; the job
    submitted after it is known waits for its end."""
    maint = Reservation(50.0, 150.0, TOTAL, name="maint", known=10.0)
    jobs = [Job(1, 0, 100, 100, 8), Job(2, 20, 100, 100, 8)]
    sim = Simulator(jobs, System(nodes=TOTAL), build_policy("fcfs"),
                    reservations=(maint,)).run()
    assert sim.records[1].start == 0 and sim.records[2].start == 150
    known_early = Simulator(jobs, System(nodes=TOTAL), build_policy("fcfs"),
                            reservations=(Reservation(50.0, 150.0, TOTAL),)).run()
    assert known_early.records[1].start == 150


def test_no_reservation_changes_nothing():
    trace = maintenance_trace()
    plain = Simulator(trace, System(nodes=TOTAL), build_policy("fcfs")).run()
    none = Simulator(trace, System(nodes=TOTAL), build_policy("fcfs"), reservations=()).run()
    assert [(r.start, r.mode) for r in plain.records.values()] == \
        [(r.start, r.mode) for r in none.records.values()]


def test_reservations_need_counted_nodes():
    from hpcopt.errors import HpcoptError

    with pytest.raises(HpcoptError, match="interchangeable nodes"):
        Simulator([], System(nodes=8, bb=10.0), build_policy("fcfs"),
                  reservations=(Reservation(0.0, 1.0, 1),))


def test_reservation_files(tmp_path):
    csv = tmp_path / "r.csv"
    csv.write_text("start,end,nodes,users,name\n100,700,8,,maint\n0,50,2,alice;bob,u\n")
    got = read_reservations(csv)
    assert got[0] == Reservation(100.0, 700.0, 8, name="maint")
    assert got[1].users == frozenset({"alice", "bob"})
    js = tmp_path / "r.json"
    js.write_text(json.dumps([{"start": 1, "end": 2, "nodes": 1, "accounts": ["a"],
                               "known": 0}]))
    assert read_reservations(js)[0].accounts == frozenset({"a"})
    for text, match in (("start,end\n1,2\n", r"r.csv: line 1: header lacks nodes"),
                        ("start,end,nodes\n1,2,x\n", r"line 2: field nodes"),
                        ("start,end,nodes\n5,2,1\n", r"line 2: .*start before its end"),
                        ("start,end,nodes,color\n1,2,1,red\n", r"unknown field 'color'"),
                        ("start,end,nodes\n1,2,0\n", r"whole number >= 1"),
                        ("start,end,nodes,known\n1,2,1,5\n", r"known at 5, after"),
                        ("start,end,nodes\n1,2,1,4\n", r"line 2: more values than")):
        csv.write_text(text)
        with pytest.raises(ReservationError, match=match):
            read_reservations(csv)
    js.write_text(json.dumps([{"start": True, "end": 2, "nodes": 1}]))
    with pytest.raises(ReservationError, match=r"reservation 1: field start: expected seconds"):
        read_reservations(js)
    js.write_text("[{")
    with pytest.raises(ReservationError, match=r"r.json: line 1: not JSON"):
        read_reservations(js)
    with pytest.raises(ReservationError, match="cannot read"):
        read_reservations(tmp_path / "missing.csv")


def test_simulate_with_a_maintenance_file(tmp_path, capsys):
    """``hpcopt simulate --reservations FILE``: no job runs in the window, the settings
    name it; a bad file is a one-line error naming it."""
    import pandas as pd

    from hpcopt.cli import main

    from .test_cli import DEMO_TRACE

    maint = tmp_path / "maint.csv"
    maint.write_text("start,end,nodes,name\n50000,80000,64,maint\n")
    out = tmp_path / "out"
    assert main(["simulate", DEMO_TRACE, "--reservations", str(maint), "--out", str(out),
                 "--no-progress"]) == 0
    jobs = pd.read_csv(out / "jobs.csv")
    assert not ((jobs.start < 80000) & (jobs.end > 50000)).any()
    assert ((jobs.end <= 50000).any() and (jobs.start >= 80000).any())
    summary = json.loads((out / "summary.json").read_text())
    assert summary["settings"]["reservations"] == [
        {"name": "maint", "start": 50000.0, "end": 80000.0, "nodes": 64}]
    maint.write_text("start,end,nodes\n1,2,many\n")
    capsys.readouterr()
    assert main(["simulate", DEMO_TRACE, "--reservations", str(maint)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"hpcopt: error: --reservations {maint}: line 2: field nodes: expected "
                   "a whole number >= 1, got 'many'")


def test_accounts_are_the_traces_groups():
    """A reservation for an account (a trace's group) admits the users of its jobs."""
    from hpcopt.sim.reservations import with_group_users

    jobs = [Job(1, 0, 10, 10, 1, user=7), Job(2, 0, 10, 10, 1, user=8),
            Job(3, 0, 10, 10, 1, user=9)]
    res = (Reservation(0.0, 5.0, 1, accounts=frozenset({"g1"}), users=frozenset({"3"})),
           Reservation(0.0, 5.0, 1))
    got = with_group_users(res, jobs, {1: "g1", 2: "g2", 3: "g1"})
    assert got[0].users == frozenset({"3", "7", "9"}) and got[1] == res[1]
