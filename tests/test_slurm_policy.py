"""``--policy slurm``: Slurm's main scheduler and sched/backfill against hand-computed
scenarios, an independent brute-force plan, and its slurm.conf reader."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import hpcopt
from hpcopt.domain import Job, System
from hpcopt.errors import PolicyOptionError, SimulationError
from hpcopt.policies import make_policy
from hpcopt.policies.slurm_backfill import SlurmScheduler
from hpcopt.sim.driver import Simulator
from hpcopt.sim.slurmconf import (
    SlurmConf,
    SlurmConfError,
    hostlist_count,
    parse_slurm_conf,
    read_slurm_conf,
)

from .conftest import shared_file


def job(i, submit, minutes, nodes, runtime=None, bb=0.0):
    """A job whose limit is whole minutes and that runs to it unless told otherwise."""
    return Job(i, float(submit), float(runtime if runtime is not None else minutes * 60),
               minutes * 60.0, nodes, bb=bb)


def began(record) -> bool:
    """Whether the job has started (an unstarted record's start is NaN)."""
    return record.start == record.start


def starts(jobs, system, **options):
    sim = Simulator(jobs, system, make_policy("slurm", **options)).run()
    return {jid: rec.start for jid, rec in sim.records.items()}


# ---------------------------------------------------------------- the backfill plan

def reservation_depth_jobs():
    """4 nodes.  J0 (2 nodes) runs to 600 and J1 (1 node) to 1200.  J2 needs all 4 nodes:
    its earliest start is 1200.  J3 (3 nodes, 5 min) fits from 600 to 900, before J2's
    start: the conservative plan reserves that.  J4 (1 node, 15 min) submitted at 30 fits
    now on the free node until 930: it overlaps J3's reservation (600-900), not J2's
    (from 1200)."""
    return [job(0, 0, 10, 2), job(1, 0, 20, 1), job(2, 10, 10, 4), job(3, 20, 5, 3),
            job(4, 30, 15, 1)]


def test_conservative_plan_reserves_every_tested_job():
    got = starts(reservation_depth_jobs(), System(4))
    # J4 waits: at 600 J3 starts (backfill, as planned), at 900 J4 would overlap J2 (1200);
    # J2 starts at 1200 and ends at 1800, when J4 starts
    assert got == {0: 0, 1: 0, 2: 1200, 3: 600, 4: 1800}


def test_one_reservation_backfills_what_the_conservative_plan_holds():
    got = starts(reservation_depth_jobs(), System(4),
                 scheduler_parameters="bf_job_part_count_reserve=1")
    # only J2 is reserved: J4 ends at 930 <= 1200 and starts at 30, the backfill pass
    assert got[4] == 30 and got[2] == 1200
    # the driver's EASY agrees here: one reservation, for the top job
    easy = hpcopt.simulate(reservation_depth_jobs(), system=System(4), policy="fcfs")
    assert easy.jobs.set_index("job_id").loc[4, "start"] == 30


@pytest.mark.parametrize("resolution, started", [(60, False), (1, True)])
def test_bf_resolution_rounds_a_reservation_out_to_its_grid(resolution, started):
    """At 20 s: R holds 1 of 2 nodes until 90.  A (2 nodes) is reserved from 90: on a
    60-s grid from 60.  B (1 node, 1 min) would end at 80: before 90, after 60."""
    r = Job("r", 0.0, 70.0, 70.0, 1)
    a, b = job("a", 0, 1, 2), job("b", 0, 1, 1)
    sim = Simulator.at(20.0, System(2), make_policy(
        "slurm", scheduler_parameters=f"bf_resolution={resolution}"), [a, b],
        running=[(r, 90.0)])
    sim.schedule()
    assert (sim.records["b"].start == 20.0) is started
    assert not began(sim.records["a"])


@pytest.mark.parametrize("interval, expected", [(30, 30.0), (5, 10.0)])
def test_backfill_runs_every_bf_interval(interval, expected):
    """J0 (1 of 2 nodes) from 0 to 300; J1 (2 nodes) waits; J2 (1 node) submitted at 10 can
    backfill, but only a backfill pass starts it: the first after 10 (the agent looks
    bf_interval after its pass at 0, then every second)."""
    jobs = [job(0, 0, 5, 1), job(1, 1, 1, 2), job(2, 10, 1, 1)]
    got = starts(jobs, System(2), scheduler_parameters=f"bf_interval={interval}")
    assert got[2] == expected
    assert got[1] == 300


def test_builtin_never_starts_past_a_job_that_does_not_fit():
    jobs = [job(0, 0, 5, 1), job(1, 1, 1, 2), job(2, 10, 1, 1)]
    conf = SlurmConf(scheduler="builtin")
    sim = Simulator(jobs, System(2), make_policy("slurm", conf=conf)).run()
    assert [sim.records[i].start for i in range(3)] == [0, 300, 360]


@pytest.mark.parametrize("params, j1, j2", [("", 603, 3), ("bf_licenses", 300, 360)])
def test_licenses_in_the_plan_only_with_bf_licenses(params, j1, j2):
    """2 nodes, 10 licenses.  J0 (1 node, all licenses) runs to 300; J1 (2 nodes, all
    licenses) waits for them; J2 (1 node, 10 min) submitted at 2 fits now.  Without
    bf_licenses the main scheduler passes over J1 (licenses taken) and starts J2 at its
    batch pass (3 s after the last timed pass at 0), and J1 then waits for J2's end too;
    with it the main scheduler stops at J1 and the plan holds both nodes for J1 from 300,
    so J2 waits for J1's end (360)."""
    jobs = [job(0, 0, 5, 1, bb=10), job(1, 1, 1, 2, bb=10), job(2, 2, 10, 1)]
    got = starts(jobs, System(2, bb=10), scheduler_parameters=params)
    assert got[1] == j1 and got[2] == j2


def test_a_job_top_at_submission_starts_at_once_otherwise_at_a_pass():
    """5 nodes, J0 holds 3 until 300.  J1 (submitted at 5, top, fits) starts at 5; J2
    (submitted at 6 behind J3, which waits for all 5 nodes) fits but does not start at its
    submission (a higher-priority job waits) nor at the main passes (they stop at J3): the
    next backfill pass, at 30, starts it."""
    jobs = [job(0, 0, 5, 3), job(1, 5, 1, 1), job(3, 5.5, 1, 5), job(2, 6, 1, 1)]
    got = starts(jobs, System(5), scheduler_parameters="bf_interval=30")
    assert got[1] == 5.0
    assert got[2] == 30.0 and got[3] == 300.0


def test_launch_latency_delays_every_start():
    jobs = [job(0, 0, 1, 1), job(1, 0, 1, 1)]
    sim = Simulator(jobs, System(1), make_policy("slurm", launch_latency=0.5)).run()
    assert sim.settings.launch_delay == 0.5
    assert [sim.records[i].start for i in (0, 1)] == [0.5, 61.0]


def test_whole_minute_limits_in_the_plan():
    """A 61-s walltime is a 2-minute Slurm limit: R (1 of 2 nodes, 61 s from 0) is planned
    to 120, so B (1 node, 1 min) submitted at 30 would end at 90 < 120 and backfills next
    to the reservation of A (2 nodes) from 120, not 61."""
    jobs = [Job(0, 0.0, 61.0, 61.0, 1), job(1, 1, 1, 2), job(2, 30, 1, 1)]
    got = starts(jobs, System(2), scheduler_parameters="bf_interval=1")
    assert got[2] == 30.0


def test_shared_cores_reserve_whole_nodes():
    """2 nodes x 2 cores, jobs in cores.  R holds core 0 until 600; A (4 cores) is planned
    from 600 on both nodes.  B (1 core, 15 min) fits now on a free core but overlaps A: no.
    With whole-node reservations off (one unit per node) the same shows in cores."""
    conf = SlurmConf(shared_cores=True, cpus_per_node=2, nodes=2)
    r = Job("r", 0.0, 600.0, 600.0, 1)
    a, b = job("a", 0, 10, 4), job("b", 0, 15, 1)
    c = job("c", 0, 5, 1)  # ends at 300, before A: it backfills on a free core
    sim = Simulator.at(0.0, System(4), make_policy("slurm", conf=conf), [a, b, c],
                       running=[(r, 600.0)])
    sim.schedule()
    assert not began(sim.records["b"]) and sim.records["c"].start == 0.0
    with pytest.raises(SimulationError, match="2 nodes x 2 cores"):
        Simulator([], System(8), make_policy("slurm", conf=conf))


# ------------------------------------- backfill's structure without bf_running_job_reserve
# Slurm's backfill (backfill.c's _attempt_backfill) keeps only its own reservations in the
# plan; running jobs are seen through the node selection's will-run test (_will_run_test,
# select/cons_tres), which frees them in groups.  The plan view (running jobs as slots to
# their exact ends: SlurmScheduler.will_run_test off) starts these jobs otherwise.

def will_run(ends, origin=0.0, now=0.0):
    """The will-run test of a pass at ``now`` over running jobs (end, units)."""
    from hpcopt.policies.slurm_backfill import _WillRunTest

    return _WillRunTest([(end, units, 0.0) for end, units in ends], now, origin)


def test_will_run_test_frees_running_jobs_in_groups_on_the_wall_clock():
    """The first group takes every end up to 30 s past the first end's next multiple of 30 s
    on the wall clock, each later group the next end and those within a window that
    doubles; the start is the group's last end."""
    # 100 and 140: one window (120 + 30): a one-unit job starts at the later end
    assert will_run([(100, 0b01), (140, 0b10)]).start(0b11, 1, False) == (140, 0b11)
    # 100 and 160: different windows: at the first
    assert will_run([(100, 0b01), (160, 0b10)]).start(0b11, 1, False) == (100, 0b01)
    # then a window of 60 s past the anchor (to 180): 160 and 170 go together
    ends = [(100, 0b001), (160, 0b010), (170, 0b100)]
    assert will_run(ends).start(0b111, 2, False) == (170, 0b111)
    # a job on none of the usable units neither anchors nor frees anything
    ends = [(100, 0b100), (140, 0b001), (200, 0b010)]
    assert will_run(ends).start(0b011, 1, False) == (140, 0b001)
    # free now: now; only now (bf_job_part_count_reserve reached): nothing later
    assert will_run([(100, 0b01)], now=5.0).start(0b11, 1, False) == (5.0, 0b10)
    assert will_run([(100, 0b01)]).start(0b01, 1, True) is None
    # a job without a time limit is never freed
    assert will_run([(math.inf, 0b01)]).start(0b01, 1, False) is None


@pytest.mark.parametrize("origin, expected", [(0.0, 140), (15.0, 100), (20.0, 140)])
def test_clock_origin_moves_the_windows(origin, expected):
    """The windows are aligned on the wall clock: ``clock_origin`` is the Unix time of
    simulated time 0.  With 15 s more, 100 is 115 on the clock: the next boundary is 120,
    105 here, and the window ends at 135, before 140; with 20 s more, 100 is 120, on a
    boundary: the next one is 150, 130 here, and 140 is in the window again."""
    got = will_run([(100, 0b01), (140, 0b10)], origin).start(0b11, 1, False)
    assert got[0] == expected


def grouped_jobs():
    """3 nodes.  R0 (node 0) runs to 1020, R1 (node 1) from 40 to 1060; C (2 nodes) waits
    for one of them; D (1 node, 16 min) submitted at 65 runs to 1025 on the free node."""
    return [job(0, 0, 17, 1), job(1, 40, 17, 1), job(2, 45, 10, 2), job(3, 65, 16, 1)]


@pytest.mark.parametrize("origin, c, d", [
    (0.0, 1025.0, 65.0),  # 1020 and 1060 in one window (1050 + 30): C planned at 1060
    (25.0, 1020.0, 1060.0),  # 1045 on the clock: the window ends at 1055: C at 1020
])
def test_running_ends_in_one_window_plan_a_job_at_the_later_end(monkeypatch, origin, c, d):
    """Planned at 1060 on nodes 0-1, C leaves node 2 to D until then: D backfills at once
    and C starts when D ends (1025).  Planned at R0's end (1020), on nodes 0 and 2, C keeps
    D out; the plan view plans C at 1020 whatever the clock."""
    got = starts(grouped_jobs(), System(3), scheduler_parameters="bf_interval=1",
                 clock_origin=origin)
    assert (got[2], got[3]) == (c, d)
    monkeypatch.setattr(SlurmScheduler, "will_run_test", False)
    got = starts(grouped_jobs(), System(3), scheduler_parameters="bf_interval=1",
                 clock_origin=origin)
    assert (got[2], got[3]) == (1020.0, 1060.0)


@pytest.mark.parametrize("unix_start, given, d", [
    (None, None, 65.0), (25, None, 1060.0), (25, 0.0, 65.0)])
def test_a_trace_gives_its_clock(tmp_path, unix_start, given, d):
    """A run from a trace puts the policy on the trace's clock: an SWF header's
    ``UnixStartTime`` (without one, times are taken as Unix times); ``clock_origin`` given
    wins."""
    from hpcopt.traces.swf import write_swf

    header = [("MaxNodes", 3), ("MaxProcs", 3)] + \
        ([("UnixStartTime", unix_start)] if unix_start is not None else [])
    path = write_swf(grouped_jobs(), tmp_path / "t.swf", header)
    options = {} if given is None else {"clock_origin": given}
    res = hpcopt.simulate(str(path), policy="slurm", scheduler_parameters="bf_interval=1",
                          **options)
    assert res.jobs.set_index("job_id").start[3] == d
    assert res.settings["policy_options"]["clock_origin"] == \
        (given if given is not None else float(unix_start or 0))


def test_clock_origin_on_the_command_line(tmp_path, capsys):
    from hpcopt.cli import main
    from hpcopt.traces.swf import write_swf

    path = write_swf(grouped_jobs(), tmp_path / "t.swf", [("MaxNodes", 3), ("MaxProcs", 3)])
    assert main(["simulate", str(path), "--policy", "slurm", "--clock-origin", "25",
                 "--no-progress"]) == 0
    assert "clock_origin=25.0" in capsys.readouterr().out
    assert main(["simulate", str(path), "--policy", "slurm", "--clock-origin", "inf",
                 "--no-progress"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["hpcopt: error: policy 'slurm' option clock_origin: expected a finite "
                   "number, got inf"]


def search(plan_slots, running, need, minutes, test=None):
    """backfill's search for one job (``_will_run_search``) on 4 nodes at time 0, the pass's
    reservations (from, to, units) in the plan (bf_resolution 60, ends rounded up and
    later_start as from 24.11)."""
    from hpcopt.policies.slurm_backfill import _TimeMap

    policy = make_policy("slurm")
    Simulator([], System(4), policy)  # attached: the machine's units
    plan = _TimeMap(0.0, False, 60.0, True, True)
    for lo, hi, units in plan_slots:
        plan.hold(lo, hi, units, 0.0)
    return policy._will_run_search(job(9, 0, minutes, need), minutes * 60.0, plan,
                                   test or will_run(running), False, 86400.0)


def test_a_start_after_a_reservation_ends_is_tried_again_from_there():
    """``later_start``: nodes 2-3 are reserved to 300, nodes 0-1 run to 1000.  Tested from
    now, the job (2 nodes) has only nodes 0-1: the will-run test says 1000; that is after
    the reservation's end, which frees nodes 2-3: tried again from 300, it starts there."""
    assert will_run([(1000, 0b0011)]).start(0b0011, 2, False)[0] == 1000
    assert search([(0, 300, 0b1100)], [(1000, 0b0011)], 2, 10) == (300.0, 0b1100)


def test_a_slot_that_meets_a_later_reservation_is_tried_again_from_its_start():
    """``_test_resv_overlap``: nodes 2-3 are reserved from 1200 to 1980; the test from now
    (10 min) does not reach the reservation and says 1000, on nodes 0-2, but the slot
    960-1620 meets it: tried again from 1000 the nodes are short, and from the
    reservation's end (``later_start``) the job starts at 1980."""
    assert will_run([(1000, 0b0011)]).start(0b1111, 3, False) == (1000, 0b1111)
    assert search([(1200, 1980, 0b1100)], [(1000, 0b0011)], 3, 10) == (1980.0, 0b0111)


def test_a_later_pass_whose_test_reaches_further_is_computed_again():
    """The test from now covers the plan's slots to now + the job's limit: 600 s later the
    job's test reaches the reservation from 1200, so a pass then may plan differently with
    nothing else changed; the agent's repeated passes are computed from then."""
    test = will_run([(1000, 0b0011)])
    search([(1200, 1980, 0b1100)], [], 3, 10, test)
    assert test.stale_at == 600.0


def test_a_whole_node_job_started_by_backfill_stays_in_the_plan(monkeypatch):
    """``_bf_reserve_running``: on whole nodes a job the pass starts is held in the plan,
    to its end on the plan's grid.  4 nodes; R (node 0) runs to 1020 and T (4 nodes) waits
    for it.  At 50 the pass starts S (1 node, to 350, held to 360); N (3 nodes) tested
    next is reserved from 360 on nodes 1-3 (from 24.11 the will-run test from there frees
    S at once); M (1 node, 10 min) finds only node 0, R's, and waits for T.  N starts when
    S ends.  Seen as a slot of the plan to its exact end, S gives the same starts
    (tests/test_slurm_pass_oracle.py checks the pass itself against Slurm's source)."""
    jobs = [job(0, 0, 17, 1), job(1, 45, 10, 4), job(2, 50, 5, 1), job(3, 50, 5, 3),
            job(4, 50, 10, 1)]
    got = starts(jobs, System(4), scheduler_parameters="bf_interval=1")
    assert (got[2], got[3], got[4]) == (50.0, 350.0, 1620.0)
    monkeypatch.setattr(SlurmScheduler, "will_run_test", False)
    got = starts(jobs, System(4), scheduler_parameters="bf_interval=1")
    assert (got[2], got[3], got[4]) == (50.0, 350.0, 1620.0)


@pytest.mark.parametrize("seed", range(6))
def test_running_job_reserve_and_licenses_match_slurms_pass(seed):
    """With ``bf_running_job_reserve`` (which ``bf_licenses`` implies) running jobs are
    reservations of the plan (``_bf_reserve_running``) and the will-run test still gives
    each job's start: every pass of a run with licenses agrees with the oracle written from
    Slurm's source (tests/slurm_pass_oracle.py)."""
    from .slurm_pass_oracle import compare, dump

    rng = np.random.default_rng(seed)
    limits = rng.integers(1, 16, 50) * 60.0
    jobs = [Job(i, float(rng.integers(0, 3000)), float(rng.integers(5, limits[i] + 1)),
                float(limits[i]), int(rng.integers(1, 9)), bb=float(rng.choice([0, 0, 3, 7])))
            for i in range(50)]
    conf = [{"bf_running_job_reserve": True}, {"bf_licenses": True},
            {"bf_licenses": True, "bf_job_part_count_reserve": 1}][seed % 3]
    conf["version"] = ("22.05", "24.11")[seed % 2]
    windows = dump(jobs, System(8, bb=10), conf, float(seed * 7))
    assert windows and not [d for w in windows if (d := compare(w, conf))]


# ---------------------------------------------------------------- an independent plan

def brute_force_pass(now, nodes, running, queue):
    """The conservative plan by brute force, second by second: each queued job in order
    gets the first second t >= now from which its lowest-numbered nodes that are free of
    running jobs and earlier reservations for its whole limit are enough; it starts if
    t == now.  ``running``: (end, node set); queue: (id, nodes, limit seconds)."""
    busy = [(now, end, set(ns)) for end, ns in running]  # (from, to, nodes)
    out = []
    for jid, need, limit in queue:
        for t in itertools.count(int(now)):
            free = [n for n in range(nodes)
                    if not any(n in ns and lo < t + limit and t < hi for lo, hi, ns in busy)]
            if len(free) >= need:
                busy.append((t, t + limit, set(free[:need])))
                if t == now:
                    out.append(jid)
                break
    return out


@pytest.mark.parametrize("seed", range(40))
def test_backfill_pass_matches_a_brute_force_plan(monkeypatch, seed):
    rng = np.random.default_rng(seed)
    nodes = int(rng.integers(2, 7))
    now = float(rng.integers(0, 100))
    running, taken = [], 0
    for k in range(int(rng.integers(0, nodes + 1))):
        n = int(rng.integers(1, nodes - taken + 1)) if taken < nodes else 0
        if not n:
            break
        end = now + float(rng.integers(1, 400))
        running.append((Job(f"r{k}", 0.0, end - now, end - now, n), end, n))
        taken += n
    queue = [job(f"q{k}", 0, int(rng.integers(1, 6)), int(rng.integers(1, nodes + 1)))
             for k in range(int(rng.integers(1, 8)))]
    # the plan view: running jobs in the plan to their exact ends, no will-run test
    # (Slurm's pass with its will-run test: tests/test_slurm_pass_oracle.py)
    conf = SlurmConf(bf_resolution=1, scheduler="backfill", bf_running_job_reserve=True)
    monkeypatch.setattr(SlurmScheduler, "will_run_test", False)  # the plan view
    # the main scheduler's passes would start the head first: start with a blocked head
    policy = make_policy("slurm", conf=conf)
    sim = Simulator.at(now, System(nodes), policy, queue,
                       running=[(j, e) for j, e, _ in running])
    sim.schedule()
    got = [j.id for j in queue if began(sim.records[j.id])]
    # the running jobs hold the lowest nodes in order, as the policy places jobs it did
    # not start; the main pass starts the fitting head jobs, then the backfill pass plans
    held, first = [], 0
    for _, end, n in running:
        held.append((end, range(first, first + n)))
        first += n
    head = 0
    free = nodes - taken
    while head < len(queue) and queue[head].nodes <= free:
        free -= queue[head].nodes
        held.append((now + queue[head].walltime, range(first, first + queue[head].nodes)))
        first += queue[head].nodes
        head += 1
    expected = [q.id for q in queue[:head]] + brute_force_pass(
        now, nodes, held, [(q.id, q.nodes, int(q.walltime)) for q in queue[head:]])
    assert got == expected


def will_run_oracle(now, running, avail, need, origin):
    """Slurm's ``_will_run_test`` loop (select/cons_common/job_test.c, 22.05) transcribed
    line by line on Python sets, apart from the model: ``running`` (end_time, node set)
    sorted by end; each job with a usable node is removed, the first fixing ``end_time`` at
    the next multiple of 30 s of the wall clock; a group stops when the next job (usable or
    not) ends past ``end_time + time_window``; ``time_window`` then doubles (at least once)
    until it covers that next end; after each group the job is tested on the freed nodes.
    Returns the start (now, or the group's last end) and the free nodes, or ``None``."""
    busy = set().union(*(ns for _, ns in running)) if running else set()
    if len(avail - busy) >= need:
        return now, avail - busy
    jobs = sorted(running, key=lambda r: r[0])
    time_window, end_time, it, more = 30, 0, 0, True
    while more:
        last = nxt = None
        while True:
            if it >= len(jobs):
                more = False
                break
            end, nodes = jobs[it]
            it += 1
            if not nodes & avail:
                continue
            if not end_time:
                end_time = end + (time_window - (end + origin) % time_window)
            last = end
            busy = busy - nodes
            if it >= len(jobs):
                more = False
                break
            nxt = jobs[it][0]
            if nxt > end_time + time_window:
                break
        if last is None:
            break
        time_window *= 2
        while nxt is not None and nxt > end_time + time_window:
            time_window *= 2
        if len(avail - busy) >= need:
            return max(last, now), avail - busy
    return None


def kth_running_sets(seed, nodes=100):
    """Running sets of KTH-SP2's shapes: its jobs' sizes and time limits in trace order,
    packed on ``nodes`` nodes at random node numbers, each started up to its limit ago."""
    rng = np.random.default_rng(seed)
    trace = hpcopt.load_trace(shared_file("hpc_swf/pwa/KTH-SP2-1996-2.1-cln.swf.gz"))
    first = int(rng.integers(0, len(trace.jobs) - 400))
    free = list(rng.permutation(nodes))
    now = 1_000_000 + int(rng.integers(0, 30))
    running = []
    for j in trace.jobs[first:first + 400]:
        if j.nodes > len(free):
            break
        taken, free = {int(n) for n in free[:j.nodes]}, free[j.nodes:]
        running.append((now + int(rng.integers(1, max(2, int(j.walltime)))), taken))
    return now, running


@pytest.mark.parametrize("seed", range(12))
def test_will_run_test_matches_slurms_loop_on_kth_shapes(seed):
    """The model's will-run test (``_WillRunTest``) gives the start and nodes of an
    independent transcription of Slurm's loop, for every job size, on usable-node sets of
    all, of a random half and of a reservation-free part, over running sets of KTH-SP2's
    job sizes and limits on 100 nodes (whole-second ends, as Slurm's)."""
    from hpcopt.policies.slurm_backfill import _WillRunTest

    now, running = kth_running_sets(seed)
    rng = np.random.default_rng(seed + 100)
    origin = float(rng.integers(0, 30))
    mask = lambda ns: sum(1 << n for n in ns)  # noqa: E731
    test = _WillRunTest([(end, mask(ns), 0.0) for end, ns in running], now, origin)
    everything = set(range(100))
    for avail in (everything, {n for n in everything if rng.random() < 0.5},
                  set(range(60))):
        for need in range(1, len(avail) + 1, 3):
            want = will_run_oracle(now, running, avail, need, origin)
            got = test.start(mask(avail), need, False)
            if want is None:
                assert got is None, (need, got)
            else:
                assert got is not None and got[0] == want[0] and got[1] == mask(want[1]), \
                    (need, got and got[0], want[0])


# ---------------------------------------------------------------- through the one loop

def test_runs_through_the_api_and_sweeps_like_any_policy(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("SchedulerType=sched/backfill\n"
                    "SchedulerParameters=bf_interval=1,bf_job_part_count_reserve=1\n"
                    "NodeName=n[1-4] CPUs=4\nPartitionName=batch Nodes=n[1-4] Default=YES "
                    "OverSubscribe=EXCLUSIVE\n")
    jobs = reservation_depth_jobs()
    res = hpcopt.simulate(jobs, system=System(4), policy="slurm",
                          slurm_conf=str(conf))
    assert res.jobs.set_index("job_id").loc[4, "start"] == 30
    assert make_policy("slurm", slurm_conf=str(conf)).conf.bf_job_part_count_reserve == 1


def test_no_loop_of_its_own():
    from hpcopt.policies.slurm_backfill import SlurmScheduler

    assert not hasattr(SlurmScheduler, "run") and not hasattr(SlurmScheduler, "simulate")
    with pytest.raises(SimulationError, match="through a Simulator"):
        from hpcopt.domain import Window
        from hpcopt.sim.resources import NodePool

        make_policy("slurm").decide(Window(0.0, [], NodePool(2), [], System(2), 0))


def test_wake_at_is_checked():
    sim = Simulator([job(0, 5, 1, 1)], System(1), make_policy("fcfs"))
    sim.run()
    with pytest.raises(SimulationError, match="expected a time >= now"):
        sim.wake_at(0.0)


# ---------------------------------------------------------------- the slurm.conf reader

def test_defaults_where_the_file_is_silent():
    conf = parse_slurm_conf("ClusterName=x\n")
    assert (conf.scheduler, conf.bf_interval, conf.bf_resolution, conf.bf_window,
            conf.bf_max_job_test, conf.batch_sched_delay, conf.priority) == \
        ("backfill", 30, 60, 86400, 500, 3, "basic")


def test_reads_the_testbeds_file(tmp_path):
    text = ("SchedulerType=sched/backfill  # comment\n"
            "SchedulerParameters=bf_interval=1,bf_resolution=1,sched_min_interval=100000,"
            "bf_window=30,bf_licenses,bf_max_job_test=20,defer\n"
            "SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
            "PriorityType=priority/multifactor\nPriorityWeightAge=1000\nPriorityMaxAge=1-0\n"
            "Licenses=bb:100\n"
            "NodeName=n[1-8] NodeHostname=localhost Port=[20001-20008] CPUs=4 State=UNKNOWN\n"
            "PartitionName=batch Nodes=n[1-8] Default=YES OverSubscribe=EXCLUSIVE\n"
            "PartitionName=shared Nodes=n[1-8] Default=NO OverSubscribe=NO\n")
    (tmp_path / "slurm.conf").write_text(text)
    conf = read_slurm_conf(tmp_path / "slurm.conf")
    assert (conf.bf_interval, conf.bf_resolution, conf.bf_window, conf.bf_max_job_test) == \
        (1, 1, 1800, 20)
    assert conf.sched_min_interval == pytest.approx(0.1)
    assert conf.bf_licenses and conf.bf_running_job_reserve
    assert conf.ignored == ("defer",)
    assert (conf.priority, conf.weight_age, conf.max_age) == ("multifactor", 1000, 86400)
    assert conf.licenses == {"bb": 100}
    assert (conf.nodes, conf.cpus_per_node, conf.shared_cores) == (8, 4, False)
    shared = read_slurm_conf(tmp_path / "slurm.conf", partition="shared")
    assert shared.shared_cores


@pytest.mark.parametrize("text, message", [
    ("SchedulerType=sched/wiki\n", "slurm.conf:1: SchedulerType: expected sched/backfill"),
    ("\nSchedulerParameters=bf_interval=x\n", "slurm.conf:2: SchedulerParameters: "
                                              "'bf_interval=x': expected a number"),
    ("SchedulerParameters=bf_interval=0\n", "bf_interval=0: expected >= 1"),
    ("SchedulerParameters=bf_licenses=1\n", "a flag takes no value"),
    ("PriorityType=priority/fair\n", "PriorityType: expected priority/basic"),
    ("Licenses=bb:x\n", "Licenses: expected NAME[:COUNT]"),
    ("NodeName=n[3-1] CPUs=4\n", "range '3-1' is not N or N-M"),
    ("this is not a key\n", "slurm.conf:1: expected Key=Value"),
])
def test_bad_lines_are_named(text, message):
    with pytest.raises(SlurmConfError, match=message.replace("[", r"\[").replace("(", r"\(")):
        parse_slurm_conf(text)


def test_bad_option_is_one_line(tmp_path):
    with pytest.raises(PolicyOptionError, match="cannot read"):
        make_policy("slurm", slurm_conf=str(tmp_path / "missing.conf"))
    with pytest.raises(PolicyOptionError, match="scheduler_parameters: 'bf_window=-1'"):
        make_policy("slurm", scheduler_parameters="bf_window=-1")


def test_hostlist_count():
    assert hostlist_count("n[1-8],m2", "x") == 9
    assert hostlist_count("r[1-2]n[01-04]", "x") == 8


def test_multifactor_age_and_size_order():
    """Favor large jobs by size weight: the 2-node job submitted later goes first."""
    conf = SlurmConf(priority="multifactor", weight_job_size=1000, scheduler="builtin")
    jobs = [job(0, 0, 5, 2), job(1, 1, 1, 1), job(2, 2, 1, 2)]
    sim = Simulator(jobs, System(2), make_policy("slurm", conf=conf)).run()
    assert sim.records[2].start < sim.records[1].start
    assert math.isclose(sim.records[2].start, 300)


# ---------------------------------------------------------------- a site's month, both ways

def test_against_slurm_prints_per_metric_and_per_user(tmp_path, capsys):
    from hpcopt.cli import main

    sacct = tmp_path / "month.txt"
    rows = ["JobID|Submit|Start|End|Elapsed|Timelimit|NNodes|State|User"]
    for i, (at, run, limit, nodes, user) in enumerate(
            [(0, 600, 10, 2, "alice"), (0, 1200, 20, 1, "bob"), (10, 600, 10, 4, "alice"),
             (20, 300, 5, 3, "bob"), (30, 900, 15, 1, "carol")]):
        t = f"2024-03-01T10:00:{at:02d}"
        rows.append(f"{i}|{t}|{t}|{t}|00:{run // 60:02d}:00|00:{limit:02d}:00|{nodes}|"
                    f"COMPLETED|{user}")
    sacct.write_text("\n".join(rows) + "\n")
    conf = tmp_path / "site.conf"
    conf.write_text("SchedulerType=sched/backfill\n")
    assert main(["simulate", str(sacct), "--format", "sacct", "--tz", "UTC", "--nodes", "4",
                 "--policy", "fcfs", "--against-slurm", str(conf), "--no-progress",
                 "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    # the reservation-depth scenario: job 4 (carol) waits 1770 s more under Slurm's default
    carol = next(line for line in out.splitlines() if line.split()[:2] == ["2", "1"])
    assert carol.split()[2:5] == ["1770.0", "0.0", "-1770.0"]
    assert "avg_wait" in out and (tmp_path / "out" / "slurm" / "jobs.csv").exists()
    # Slurm's options go to the Slurm side, not to the policy compared
    assert main(["simulate", str(sacct), "--format", "sacct", "--tz", "UTC", "--nodes", "4",
                 "--policy", "fcfs", "--against-slurm", str(conf), "--no-progress",
                 "--scheduler-parameters", "bf_job_part_count_reserve=1"]) == 0
    carol = next(line for line in capsys.readouterr().out.splitlines()
                 if line.split()[:2] == ["2", "1"])
    assert carol.split()[2:5] == ["0.0", "0.0", "+0.0"]


def test_against_slurm_per_account_of_a_recorded_dump(tmp_path, capsys):
    """A real sacct dump with accounts (tests/data/slurm/22.05/sacct-accounts.txt): the
    difference per account, then per user; each account's row is its jobs' means in the two
    job tables, which carry the account."""
    import pandas as pd

    from hpcopt.cli import main

    from .test_slurm_traces import RECORDED, _accounts_as_written

    written = _accounts_as_written(RECORDED.read_text())
    conf = tmp_path / "site.conf"
    conf.write_text("SchedulerType=sched/backfill\nPriorityType=priority/multifactor\n"
                    "PriorityWeightFairshare=10000\nPriorityWeightAge=1000\n")
    out = tmp_path / "out"
    assert main(["simulate", str(RECORDED), "--format", "sacct", "--tz", "UTC", "--nodes",
                 "8", "--policy", "knapsack", "--order", "priority", "--against-slurm",
                 str(conf), "--no-progress", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.split()[:2] == ["account", "jobs"])
    assert lines[head + len(set(written.values())) + 2].split()[:2] == ["user", "jobs"]
    ours, slurm = (pd.read_csv(p / "jobs.csv") for p in (out, out / "slurm"))
    assert dict(zip(ours["job_id"], ours["account"])) == written
    for line in lines[head + 1:head + 1 + len(set(written.values()))]:
        account, jobs, wait_slurm, wait_ours = line.split()[:4]
        mine = ours[ours["account"] == account]
        assert int(jobs) == len(mine) == list(written.values()).count(account)
        assert float(wait_ours) == pytest.approx(mine["wait"].mean(), abs=0.05)
        assert float(wait_slurm) == pytest.approx(
            slurm[slurm["account"] == account]["wait"].mean(), abs=0.05)


def test_node_choice_is_cons_tres_best_fit():
    """Whole nodes: the shortest run of consecutive free nodes that is long enough (else the
    longest, then on); cores: one node with the fewest free cores that has enough."""
    from hpcopt.policies.slurm_backfill import SlurmScheduler

    whole = SlurmScheduler()
    Simulator([], System(8), whole)
    free = 0b11101101  # runs: nodes 0, 2-3, 5-7
    assert whole.choose(free, 2) == 0b1100
    assert whole.choose(free, 3) == 0b11100000
    assert whole.choose(free, 4) == 0b11100001  # the longest run, then the tightest (0)
    cores = SlurmScheduler(conf=SlurmConf(shared_cores=True, cpus_per_node=4, nodes=3))
    Simulator([], System(12), cores)
    free = 0b1111_0011_0001  # node 0: 1 free core, node 1: 2, node 2: 4
    assert cores.choose(free, 2) == 0b0011_0000
    assert cores.choose(free, 1) == 0b1
    assert cores.choose(free, 5).bit_count() == 5


def test_a_job_without_a_time_limit_holds_its_nodes_for_good_in_the_plan():
    """No limit (infinite walltime): the plan never frees its nodes; B (1 node) still starts
    next to it, and C (2 nodes) only after it really ends."""
    jobs = [Job(0, 0.0, 100.0, math.inf, 1), job(1, 1, 1, 2), job(2, 2, 1, 1)]
    got = starts(jobs, System(2), scheduler_parameters="bf_interval=1")
    assert got[2] == 2.0 and got[1] == 100.0


@pytest.mark.parametrize("params, j4", [
    ("bf_job_part_count_reserve=1,bf_max_job_test=2", False),  # J4 is the third job tested
    ("bf_job_part_count_reserve=1,bf_max_job_test=3", True),
    ("bf_window=5", True),  # J2 (1200) and J3 (600) start beyond 5 minutes: no reservation
])
def test_bf_max_job_test_and_bf_window(params, j4):
    got = starts(reservation_depth_jobs(), System(4), scheduler_parameters=params)
    assert (got[4] == 30) is j4


# ------------------------------------------------------- release and agent rules

def test_plan_slot_rounds_ends_up_from_24_11_and_down_before():
    """backfill.c: a slot starts on the bf_resolution grid (rounded down); its end is
    rounded up from 24.11 (``_set_slot_time``, commit "Round up end_time") and down before;
    a slot is at least one grid step long (``_add_reservation``)."""
    from hpcopt.policies.slurm_backfill import plan_slot

    assert plan_slot(90, 150.5, 60, True) == (60, 180)
    assert plan_slot(90, 150.5, 60, False) == (60, 120)
    assert plan_slot(65, 100, 60, False) == (60, 120)  # one step at least
    assert plan_slot(61, 121, 1, False) == (61, 121)
    assert plan_slot(0, math.inf, 60, True) == (0, math.inf)


def test_slurm_version_is_read_and_checked():
    assert SlurmConf().round_ends_up and not SlurmConf().with_version("22.05").round_ends_up
    assert SlurmConf().with_version("24.11").round_ends_up
    with pytest.raises(PolicyOptionError, match="slurm_version: expected a Slurm release"):
        make_policy("slurm", slurm_version="22")


@pytest.mark.parametrize("version, started", [("22.05", False), ("24.11", True)])
def test_a_running_jobs_license_slot_is_rounded_by_version(version, started):
    """bf_licenses (so bf_running_job_reserve), bf_resolution=60, at 20 s: R holds 1 of 2
    nodes and all 10 licenses until 90.5.  Its slot in the plan ends at 60 before 24.11
    (rounded down: A, 1 node and all licenses, is reserved from 60 on the free node) and at
    120 from 24.11 (A from 120).  B (1 node, 1 min, no license) ends at 80: it starts now
    only when A's reservation begins after it."""
    r = Job("r", 0.0, 70.5, 70.5, 1, bb=10)
    a, b = job("a", 0, 1, 1, bb=10), job("b", 0, 1, 1)
    sim = Simulator.at(20.0, System(2, bb=10), make_policy(
        "slurm", scheduler_parameters="bf_resolution=60,bf_licenses", slurm_version=version),
        [a, b], running=[(r, 90.5)])
    sim.schedule()
    assert (sim.records["b"].start == 20.0) is started
    assert not began(sim.records["a"])


def test_an_agent_whose_pass_planned_a_job_runs_every_bf_interval():
    """bf_interval=30.  J0 (1 of 2 nodes) runs to 300; J1 (2 nodes, submitted at 1) is
    reserved from 300 by the pass at 30.  That pass set start times, so the agent runs
    again at 60 and 90 although nothing else changed (``_more_work``): J2 (1 node, 1 min),
    submitted at 75, starts at 90, not at the next second."""
    jobs = [job(0, 0, 5, 1), job(1, 1, 1, 2), job(2, 75, 1, 1)]
    got = starts(jobs, System(2), scheduler_parameters="bf_interval=30")
    assert got[2] == 90.0 and got[1] == 300.0


@pytest.mark.parametrize("seed", range(12))
def test_skipped_passes_change_no_start(seed):
    """An armed backfill agent runs every bf_interval; the passes that would repeat the last
    plan (nothing changed since) are not computed.  Random queues with licenses, a launch
    latency, both releases, several SchedulerParameters and (every third) priorities that
    age: the starts are those of running every pass."""
    rng = np.random.default_rng(seed)
    limits = rng.integers(1, 16, 60) * 60.0
    jobs = [Job(i, float(rng.integers(0, 3000)), float(rng.integers(5, limits[i] + 1)),
                float(limits[i]), int(rng.integers(1, 9)), bb=float(rng.choice([0, 0, 3, 7])))
            for i in range(60)]
    params = ["", "bf_interval=1,bf_resolution=1", "bf_job_part_count_reserve=1,bf_window=10",
              "bf_licenses,bf_window=5"][seed % 4]
    aging = SlurmConf(priority="multifactor", weight_age=1000, max_age=600,
                      weight_job_size=500)
    options = dict(scheduler_parameters=params, launch_latency=float(rng.choice([0, 0.5])),
                   slurm_version=["22.05", "24.11"][seed % 2],
                   **({"conf": aging} if seed % 3 == 0 else {}))
    got = []
    for skip in (True, False):
        policy = make_policy("slurm", **options)
        policy.skip_repeated_passes = skip
        sim = Simulator(jobs, System(8, bb=10), policy).run()
        got.append({jid: rec.start for jid, rec in sim.records.items()})
    assert got[0] == got[1]


@pytest.mark.parametrize("version", ["22.05", "24.11"])
@pytest.mark.parametrize("r_end, started", [(87.2, False), (88.0, True)])
def test_a_running_jobs_slot_ends_on_slurms_whole_second(version, r_end, started):
    """bf_licenses, bf_resolution=1, a 0.6-s launch latency, at 27: R (4 of 8 nodes, 16 of
    100 licenses) started at 27.2 with a 1-min limit.  Slurm's ``start_time`` is
    ``time(NULL)``, a whole second (27), so R's ``end_time`` is 87 (``_bf_reserve_running``
    rounds it up from 24.11, down before: 87 either way): A (8 nodes) is reserved from 87
    and B (1 node, 1 min) would end at 87.6, into A's slot: it waits.  Rounding R's 87.2 up
    to 88 would let B in.  R started at 28.0 ends at 88: B fits before A and starts now."""
    r = Job("r", 0.0, 60.0, 60.0, 4, bb=16)
    a, b = job("a", 15, 2, 8, bb=29), job("b", 17, 1, 1, bb=1)
    sim = Simulator.at(27.0, System(8, bb=100), make_policy(
        "slurm", scheduler_parameters="bf_interval=1,bf_resolution=1,bf_licenses,"
        "bf_job_part_count_reserve=1", slurm_version=version, launch_latency=0.6),
        [a, b], running=[(r, r_end)])
    sim.schedule()
    assert began(sim.records["b"]) is started
    assert not began(sim.records["a"])


def test_running_end_is_a_whole_second():
    from hpcopt.policies.slurm_backfill import running_end

    assert running_end(87.2) == 87 and running_end(87.0) == 87
    assert running_end(86.9999999999) == 87  # float noise is not a second less
    assert running_end(math.inf) == math.inf


def test_a_whole_second_end_keeps_a_later_small_job_behind_the_top_job():
    """The measured case it comes from (Slurm 24.11, bf_job_part_count_reserve=1,bf_licenses,
    a 0.61-s latency): J0 holds all 100 licenses until 26.6; J1 and J2 (4 nodes, 1 min)
    start at 27.2 and hold the nodes J3 (8 nodes) needs until 87 in Slurm's plan; J4 (1 node,
    1 min, submitted at 17) would end past that: it starts after J3, not beside J1 and J2."""
    jobs = [Job(0, 0.0, 26.0, 120.0, 5, bb=100), Job(1, 0.3, 19.0, 60.0, 1, bb=8),
            Job(2, 7.0, 5.0, 60.0, 3, bb=8), Job(3, 15.0, 14.0, 120.0, 8, bb=29),
            Job(4, 17.0, 12.0, 60.0, 1, bb=1)]
    got = starts(jobs, System(8, bb=100), launch_latency=0.61, slurm_version="24.11",
                 scheduler_parameters="bf_interval=1,bf_resolution=1,bf_licenses,"
                 "bf_job_part_count_reserve=1")
    assert got[3] < got[4]


# ---------------------------------------------------------------- the site's limits

def _capped_run(params: str | None, cap: int = 4):
    """4 nodes; account ``a`` capped at GrpTRES=node=``cap``.  J0 (account o, 2 nodes)
    runs to 600.  J1 (a, 4 nodes, first in the queue) waits for J0: the nodes keep it
    out, not the cap (nothing of ``a`` runs).  J2 and J3 (a, 1 node, 1 minute) fit now on
    the 2 free nodes, done long before J1's start."""
    from hpcopt.sim.limits import Limit, SiteLimits, Who

    jobs = [job(0, 0, 10, 2), job(1, 10, 5, 4), job(2, 20, 1, 1), job(3, 21, 1, 1)]
    who = {0: Who("o", "0"), 1: Who("a", "1"), 2: Who("a", "1"), 3: Who("a", "2")}
    limits = SiteLimits(accounts={"a": Limit(nodes=cap)}, who=who)
    policy = make_policy("slurm", scheduler_parameters=params)
    return Simulator(jobs, System(4), policy, limits=limits).run().records


def _most_held(rec, ids) -> int:
    """The most nodes the jobs ``ids`` held at once."""
    return max(sum(rec[i].job.nodes for i in ids if rec[i].start <= rec[t].start < rec[i].end)
               for t in ids)


@pytest.mark.parametrize("params", [None, "bf_job_part_count_reserve=1"])
def test_a_pending_job_holds_nothing_of_its_associations_cap(params):
    """Slurm counts only the running jobs (and those it starts in the pass) against an
    association's GrpTRES (acct_policy_job_runnable_post_select: ``grp_used_tres``): J1,
    reserved but not running, leaves the cap to J2 and J3, which backfill at once; J1
    starts when J0 ends."""
    rec = _capped_run(params)
    assert rec[2].start < 60 and rec[3].start < 60
    assert rec[1].start == 600
    assert _most_held(rec, (1, 2, 3)) <= 4


@pytest.mark.parametrize("params", [None, "bf_job_part_count_reserve=1"])
def test_the_cap_counts_the_jobs_started_in_the_same_pass(params):
    """Under a 1-node cap J1 can never start (it waits for ever: the run says so) and
    J2 and J3 take turns: a job is tested against what runs and what the pass started."""
    with pytest.raises(SimulationError, match="site's limits"):
        _capped_run(params, cap=1)
