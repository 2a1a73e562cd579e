"""Start-time forecasts (``hpcopt.sim.forecast``): the driver run forward from a state.

A hand-checked state where the forecast is exact (runtimes known from history) and the
limit-based one is not; along a real trace slice (KTH-SP2): every waiting job gets a forecast
at every forecast time, its band is ordered, the same seed gives the same forecasts, and
nothing after the forecast's time (later arrivals, the actual runtimes of unfinished jobs)
changes any forecast.
"""

from __future__ import annotations

import csv
import importlib.util
import json
from dataclasses import replace

import numpy as np
import pytest

import hpcopt
from hpcopt.domain import Job, System
from hpcopt.policies import build_policy
from hpcopt.sim.decide import ClusterState
from hpcopt.sim.driver import Simulator
from hpcopt.sim.forecast import BandCalibration, JobForecast, forecast, replay_forecasts
from hpcopt.sim.runtime_history import RuntimeHistory

from .conftest import BENCH, shared_file

KTH = "hpc_swf/pwa/KTH-SP2-1996-2.1-cln.swf.gz"


def benchmark(name: str, monkeypatch=None):
    """``benchmarks/<name>.py`` as a module; with ``monkeypatch``, its folder on the path for
    the siblings it imports."""
    if monkeypatch is not None:
        monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hand_state():
    """4 nodes at t=100: job 1 (4 nodes, limit 400) runs since 0; queued 2 (2 nodes, limit
    200), 3 (4 nodes, limit 100), 4 (2 nodes, limit 1000); user 7's jobs run half their
    limit."""
    system = System(4)
    running = ((Job(1, 0.0, 0.0, 400.0, 4, user=7), 400.0),)
    queue = (Job(2, 10.0, 0.0, 200.0, 2, user=7), Job(3, 20.0, 0.0, 100.0, 4, user=7),
             Job(4, 30.0, 0.0, 1000.0, 2, user=7))
    return ClusterState(100.0, system, queue, running), {1: 0.0}


def test_forecast_is_exact_when_runtimes_are_known():
    # job 1 ends at 200; 2 starts (ends 300), 3 does not fit and is reserved at 400 (2's
    # limit), 4 may not backfill (it would end after 400 on the nodes 3 needs); 3 starts
    # when 2 really ends, 300, and ends at 350, when 4 starts
    state, started = hand_state()
    history = RuntimeHistory()
    for _ in range(3):
        history.add(7, 50.0, 100.0)
    got = forecast(state, build_policy("fcfs"), history, started=started, draws=5)
    assert [(f.job, f.p10, f.start, f.p90) for f in got] == [
        (2, 200.0, 200.0, 200.0), (3, 300.0, 300.0, 300.0), (4, 350.0, 350.0, 350.0)]
    # Slurm's assumption (every job runs to its limit): 1 ends at 400, 2 runs 400-600, ...
    limits = forecast(state, build_policy("fcfs"), None, started=started)
    assert [f.start for f in limits] == [400.0, 600.0, 700.0]
    # and the truth, simulated with those runtimes from t=100, is the history's forecast
    truth = Simulator.at(100.0, state.system, build_policy("fcfs"),
                         [replace(j, runtime=j.walltime / 2) for j in state.queue],
                         [(state.running[0][0], 400.0)], ends={1: 200.0}).run()
    assert [truth.records[j].start for j in (2, 3, 4)] == [200.0, 300.0, 350.0]


def test_running_job_draws_only_longer_runtimes_and_band_is_ordered():
    state, started = hand_state()
    history = RuntimeHistory()
    for r in (0.1, 0.2, 0.9, 0.3, 0.6, 0.05):  # job 1 ran 100 of 400 s: 0.3, 0.6, 0.9 remain
        history.add(7, r * 400, 400.0)
    got = forecast(state, build_policy("fcfs"), history, started=started, draws=40, seed=3)
    first = got[0]
    assert 100.0 <= first.p10 <= first.start <= first.p90 <= 400.0
    assert first.p10 >= 120.0  # 0.3 * 400: never a runtime it has outlived
    assert all(f.p10 <= f.p50 == f.start <= f.p90 for f in got)
    again = forecast(state, build_policy("fcfs"), history, started=started, draws=40, seed=3)
    assert again == got


def test_jobs_that_fit_now_start_now_on_an_idle_machine():
    state = ClusterState(50.0, System(4), queue=(Job(1, 10.0, 0.0, 100.0, 2, user=1),
                                                 Job(2, 20.0, 0.0, 100.0, 4, user=1)))
    got = forecast(state, build_policy("fcfs"), None)
    assert [(f.job, f.start) for f in got] == [(1, 50.0), (2, 150.0)]


def test_job_that_cannot_fit_has_no_start_and_says_why():
    state, started = hand_state()
    state = replace(state, queue=state.queue + (Job(9, 50.0, 0.0, 10.0, 5),))
    got = forecast(state, build_policy("fcfs"), None, started=started)
    assert got[-1].start is None and "asks 5 nodes, 4 available" in got[-1].reason
    assert all(f.start is not None for f in got[:-1])


@pytest.fixture(scope="module")
def kth():
    trace = hpcopt.load_trace(shared_file(KTH), max_jobs=400)
    return list(trace.jobs), trace.system


def replay(jobs, system, policy="fcfs", every=1800.0, seed=0, **options):
    """(time, queued ids, forecasts) at every forecast time of a run of ``jobs``."""
    pol, twin = build_policy(policy, **options), build_policy(policy, **options)
    sim = Simulator(jobs, system, pol)
    seen = []

    def on_state(state, known):
        got = forecast(state, twin, known.history, started=known.started, draws=8, seed=seed)
        seen.append((state.time, [j.id for j in state.queue], got))
        return got

    replay_forecasts(sim, every, on_state)
    return seen, sim


def test_every_waiting_job_gets_an_ordered_forecast_along_a_trace(kth):
    seen, sim = replay(*kth)
    assert len(seen) > 50
    for time, queued, got in seen:
        assert [f.job for f in got] == queued
        for f in got:
            assert time <= f.p10 <= f.start <= f.p90
    # the run itself is the run without forecasts
    plain = Simulator(*kth, build_policy("fcfs")).run()
    assert {j: r.start for j, r in sim.records.items()} == \
        {j: r.start for j, r in plain.records.items()}


def test_same_seed_same_forecasts(kth):
    a, _ = replay(*kth, policy="knapsack", seed=5)
    b, _ = replay(*kth, policy="knapsack", seed=5)
    assert a == b


def changed_after(jobs, system, t):
    """``jobs`` with what is unknown at ``t`` changed: later arrivals re-timed and resized,
    and every job still running or not started at ``t`` given another runtime (one that
    still ends after ``t``): the real starts after ``t`` change, none before."""
    rng = np.random.default_rng(1)
    real = dict(Simulator(jobs, system, build_policy("fcfs")).run().records)
    changed = []
    for j in jobs:
        if j.submit > t:
            run = float(rng.integers(1, 20000))
            j = replace(j, submit=j.submit + float(rng.uniform(0, 5000)), runtime=run,
                        walltime=run * 2, nodes=int(rng.integers(1, system.nodes + 1)))
        elif real[j.id].end > t:  # unfinished at t: any runtime that ends after t
            ran = t - real[j.id].start if real[j.id].start <= t else 0.0
            j = replace(j, runtime=float(rng.uniform(min(ran + 1.0, j.walltime), j.walltime)))
        changed.append(j)
    return changed


def test_nothing_after_the_forecast_time_changes_a_forecast(kth):
    jobs, system = kth
    t = jobs[250].submit
    base, _ = replay(jobs, system)
    other, _ = replay(changed_after(jobs, system, t), system)
    before = [s for s in base if s[0] <= t]
    assert len(before) > 20
    assert [s for s in other if s[0] <= t] == before
    # (and the check can fail: the changes do change the forecasts after t)
    assert [s for s in other if s[0] > t] != [s for s in base if s[0] > t]


def test_simulate_writes_forecasts_joined_with_real_starts(kth, tmp_path):
    jobs, system = kth
    res = hpcopt.simulate(jobs[:150], system=system, forecast_every=3600, forecast_draws=5)
    rows = res.forecasts
    assert rows and all(r["actual_start"] >= r["time"] for r in rows)
    starts = dict(zip(res.jobs["job_id"], res.jobs["start"]))
    assert all(r["actual_start"] == starts[r["job"]] for r in rows)
    res.write(tmp_path)
    with open(tmp_path / "forecasts.csv") as f:
        table = list(csv.DictReader(f))
    assert len(table) == len(rows)
    assert list(table[0]) == ["time", "job", "submit", "nodes", "walltime", "start", "p10",
                              "p50", "p90", "actual_start"]


def coverage(rows):
    return sum(r["p10"] <= r["actual_start"] <= r["p90"] for r in rows) / len(rows)


def test_simulate_calibrates_the_bands_from_earlier_starts_only(kth):
    jobs, system = kth
    t = jobs[250].submit

    def bands(jobs, raw=False):
        res = hpcopt.simulate(jobs, system=system, forecast_every=1800, forecast_draws=8,
                              forecast_raw_bands=raw, progress=False)
        return res.forecasts

    cal, raw = bands(jobs), bands(jobs, raw=True)
    # the same forecasts, bands widened: on this slice the band holds 0.52 of the real
    # starts raw, 0.66 calibrated
    assert [r["start"] for r in cal] == [r["start"] for r in raw]
    assert all(c["p10"] <= r["p10"] and c["p90"] >= r["p90"] for c, r in zip(cal, raw))
    assert coverage(raw) < 0.6 < coverage(cal)
    # no future: other real starts after t change no band of a forecast made by t
    other = bands(changed_after(jobs, system, t))

    def made_by_t(rows):
        return [{k: v for k, v in r.items() if k != "actual_start"} for r in rows
                if r["time"] <= t]

    before = made_by_t(cal)
    assert len(before) > 200 and made_by_t(other) == before
    assert before != made_by_t(raw)  # calibrated before t already
    # (and the check can fail: after t the bands differ)
    assert [(r["job"], r["p10"], r["p90"]) for r in other if r["time"] > t] != \
        [(r["job"], r["p10"], r["p90"]) for r in cal if r["time"] > t]


def test_cli_forecasts_and_its_one_line_errors(tmp_path, capsys):
    from hpcopt.cli import main

    from .conftest import INSTANCES

    demo = str(INSTANCES / "traces" / "demo.swf")
    assert main(["simulate", demo, "--jobs", "120", "--forecast-every", "3600",
                 "--forecast-draws", "4", "--out", str(tmp_path), "--no-progress"]) == 0
    with open(tmp_path / "forecasts.csv") as f:
        table = list(csv.DictReader(f))
    assert table and all(float(r["p10"]) <= float(r["start"]) <= float(r["p90"])
                         for r in table)
    assert "forecasts.csv" in capsys.readouterr().out
    assert main(["simulate", demo, "--forecast-every", "600", "--no-progress"]) == 2
    assert "give --out DIR" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["simulate", demo, "--forecast-every", "0", "--out", str(tmp_path)])
    assert "expected seconds > 0, got '0'" in capsys.readouterr().err


def test_history_by_limit_picks_the_users_jobs_with_the_same_limit_first():
    history = RuntimeHistory(by_limit=True)
    for r in (0.1, 0.2):
        history.add(7, r * 100, 100.0)
    for r in (0.8, 0.9):
        history.add(7, r * 500, 500.0)
    history.add(7, 300.0, 1000.0)  # one job of limit 1000: too few, the user's last 4
    assert history.ratios(7, 100.0) == (0.1, 0.2)
    assert history.ratios(7, 500.0) == (0.8, 0.9)
    assert history.ratios(7, 1000.0) == (0.2, 0.8, 0.9, 0.3)
    assert RuntimeHistory().ratios(7, 100.0) == ()  # no history: no ratios
    plain = RuntimeHistory(by_limit=False)
    plain.add(7, 10.0, 100.0)
    plain.add(7, 400.0, 500.0)
    assert plain.ratios(7, 100.0) == (0.1, 0.8)  # without by_limit: every job of the user


def test_running_jobs_count_in_their_users_ratios_without_changing_the_history():
    history = RuntimeHistory()
    for r in (0.1, 0.2, 0.5, 0.9):
        history.add(7, r * 100, 100.0)
    # one of user 7's jobs has run 30 of 100 s: as the median of 0.5 and 0.9 longer
    # (0.9, the upper one); one has outlived them all: as its limit (1.0)
    now = history.with_running([(7, 100.0, 30.0), (7, 100.0, 95.0), (8, 100.0, 50.0)])
    assert now.ratios(7) == (0.1, 0.2, 0.5, 0.9, 0.9, 1.0)
    assert history.ratios(7) == (0.1, 0.2, 0.5, 0.9)  # the history itself is as it was
    assert now.ratios(8) == history.ratios(8)  # user 8 has no ratios of its own


def test_jobs_draw_together_or_apart():
    # behind a 4-node job of user 1, two of user 3 and one of user 2, each user's jobs with
    # ratios 0.1 or 1.0 (10 s or 100 s); the last job starts after three runtimes.  Drawn
    # together ("all") they are all short in a third of the runs (start 30); by user, the
    # two jobs of user 3 are short together, with job 1 in 1/6 of the runs (still 30 at 10%);
    # each on its own ("job"), all three are short in only 1/12 of them
    running = ((Job(1, 0.0, 0.0, 100.0, 4, user=1), 100.0),)
    queue = (Job(2, 1.0, 0.0, 100.0, 4, user=3), Job(3, 2.0, 0.0, 100.0, 4, user=3),
             Job(4, 3.0, 0.0, 100.0, 4, user=2))
    state = ClusterState(5.0, System(4), queue, running)
    history = RuntimeHistory()
    for user in (1, 2, 3):
        for r in (0.1, 1.0):
            history.add(user, r * 100, 100.0)
    got = {together: forecast(state, build_policy("fcfs"), history, started={1: 0.0},
                              draws=100, seed=1, together=together)
           for together in ("all", "user", "job")}
    assert got["all"][-1].p10 == got["user"][-1].p10 == 30.0
    assert got["job"][-1].p10 > 100.0
    assert got["all"][1].start > got["user"][1].start == got["job"][1].start
    with pytest.raises(ValueError, match="together must be one of all, user, job"):
        forecast(state, build_policy("fcfs"), history, together="users")
    # the mean of the runs' starts instead of their median: job 3 starts at 20 in a third
    # of the "all" runs, 110 in a sixth, 200 in half: a mean near 125, a median of 155
    mean = forecast(state, build_policy("fcfs"), history, started={1: 0.0}, draws=100,
                    seed=1, together="all", point="mean")
    assert mean[1].p50 == got["all"][1].p50 == 155.0
    assert mean[1].start == pytest.approx(125.0, abs=10.0)
    with pytest.raises(ValueError, match="point must be median or mean"):
        forecast(state, build_policy("fcfs"), history, point="mode")


def test_band_calibration_widens_by_the_errors_of_jobs_already_started():
    cal = BandCalibration(min_seen=10)
    made = [JobForecast(k, 100.0, 100.0, 100.0, 100.0) for k in range(20)]
    cal.record(0.0, made)  # leads of 100 s, a band of width 0
    for k in range(9):
        cal.started(k, 100.0 + 50.0 * k)  # late by 0 to 4 leads... 9 errors: not enough
    f = JobForecast("x", 1000.0, 950.0, 1000.0, 1100.0)
    assert cal.adjust(500.0, [f]) == [f]
    cal.started(9, 100.0 - 100.0)  # one early by a whole lead
    cal.started(9, 5000.0)  # scored once: its forecasts are spent
    (g,) = cal.adjust(500.0, [f])
    # shares 0, 0.5, ..., 4 and -1: 10% quantile -0.1, 90% 3.55, times the lead of 500 s
    assert g.start == f.start and g.p10 == pytest.approx(950.0)
    assert g.p90 == pytest.approx(1000.0 + 3.55 * 500.0)
    (h,) = cal.adjust(990.0, [JobForecast("y", 1000.0, 1000.0, 1000.0, 1000.0)])
    assert h.p10 == pytest.approx(1000.0 - 0.1 * 60.0)  # a lead of at least 60 s
    assert cal.adjust(0.0, [JobForecast("z", None, None, None, None, "too big")])[0].start is None


def slurm_state():
    """4 nodes at t=40: jobs 0 (2 nodes, to 600) and 1 (1 node, to 1200) run; queued 2 (4
    nodes, limit 600), 3 (3 nodes, 300), 4 (1 node, 900), in submission order."""
    queue = (Job(2, 10.0, 0.0, 600.0, 4), Job(3, 20.0, 0.0, 300.0, 3),
             Job(4, 30.0, 0.0, 900.0, 1))
    running = ((Job(0, 0.0, 0.0, 600.0, 2), 600.0), (Job(1, 0.0, 0.0, 1200.0, 1), 1200.0))
    return ClusterState(40.0, System(4), queue, running), {0: 0.0, 1: 0.0}


def test_slurm_policy_forecast_with_limits_is_slurms_backfill_plan():
    """Under ``--policy slurm`` the limit-based forecast is Slurm's conservative plan (what
    ``squeue --start`` shows): 2 is planned at 1200 on all 4 nodes, 3 at 600 before it (on
    job 0's 2 nodes and the free one; the run forward starts it at 610, the backfill
    agent's next pass, every ``bf_interval`` of 30 s from 40: the main scheduler stops at
    2, which cannot start), so 4 (900 s on the free node) waits until 2 ends at 1800.
    With a reservation for the top job only, 4 starts now and 3 only after 2; EASY (fcfs)
    starts 4 now too.  The benchmark's ``slurm_plan`` gives what squeue shows (the pass's
    ``planned_starts``): the plan's start for every tested job by default (3 at 600, not
    the forward run's 610), none past ``bf_job_part_count_reserve`` reservations (3) or
    beyond ``bf_max_job_test`` (3, 4); a job started now is shown at now."""
    state, started = slurm_state()
    bench = benchmark("forecast_accuracy")
    policies = {}
    for params, starts, shown in (
            (None, [1200.0, 610.0, 1800.0], {2: 1200.0, 3: 600.0, 4: 1800.0}),
            ("bf_job_part_count_reserve=1", [1200.0, 1800.0, 40.0], {2: 1200.0, 4: 40.0}),
            ("bf_max_job_test=1", [1200.0, 1800.0, 1800.0], {2: 1200.0})):
        policy = build_policy("slurm", scheduler_parameters=params)
        fs = forecast(state, policy, None, started=started)
        assert [f.start for f in fs] == starts, params
        plan = {f.job: f.start for f in bench.slurm_plan(state, policy) if f.start is not None}
        assert plan == shown, params
        policies[params] = policy
    easy = forecast(state, build_policy("fcfs"), None, started=started)
    assert [f.start for f in easy] == [1200.0, 1800.0, 40.0]
    # the same policy object again (forecast reuses it): its controller starts idle again
    again = forecast(state, policies[None], None, started=started)
    assert [f.start for f in again] == [1200.0, 610.0, 1800.0]


def test_point_shift_tried_in_the_benchmark_learns_only_errors_known_by_then(monkeypatch):
    """``forecast_decompose.ShiftedCalibration`` (the point correction the benchmark tried):
    on a synthetic stream whose errors are known, a forecast is moved by the median share of
    the errors of jobs started before its time, times its lead, within its band; a start
    after the forecast's time changes nothing (``calibrated``); by lead, each bucket learns
    its own; counting waiting jobs (censored) moves a forecast later when they wait long."""
    bench = benchmark("forecast_decompose", monkeypatch)
    # 10 forecasts at 0 with a lead of 100 s, late by half a lead; 10 with 2000 s, on time
    rows = [{"time": 0.0, "job": k, "start": 100.0, "p10": 100.0, "p90": 100.0,
             "actual": 150.0} for k in range(10)]
    rows += [{"time": 0.0, "job": 10 + k, "start": 2000.0, "p10": 2000.0, "p90": 2000.0,
              "actual": 2000.0} for k in range(10)]
    # later forecasts of one job (id "x", starting at 9000), lead 1000 s (the 10m-1h bucket)
    rows += [{"time": t, "job": "x", "start": t + 1000.0, "p10": t + 900.0,
              "p90": t + 1100.0, "actual": 9000.0} for t in (140.0, 160.0, 2100.0)]
    pooled = bench.calibrated(rows, bench.ShiftedCalibration(by_lead=False, min_seen=10),
                              "pooled")
    by_lead = bench.calibrated(rows, bench.ShiftedCalibration(by_lead=True, min_seen=10),
                               "by lead")
    x = {r["time"]: r for r in pooled if r["job"] == "x"}
    assert x[140.0]["start"] == 1140.0  # no job started by 140: nothing known, not moved
    assert x[160.0]["start"] == pytest.approx(1160.0 + 0.5 * 1000.0)  # 10 shares of 0.5
    assert x[160.0]["p10"] <= x[160.0]["start"] <= x[160.0]["p90"]
    assert x[2100.0]["start"] == pytest.approx(3100.0 + 0.25 * 1000.0)  # 0.5 and 0: median
    y = {r["time"]: r for r in by_lead if r["job"] == "x"}
    assert y[160.0]["start"] == pytest.approx(1660.0)  # its bucket knows none: all of them
    assert y[2100.0]["start"] == pytest.approx(3100.0)  # its bucket (lead 2000 s): on time
    # censored: at 3000, of 20 forecasts of 1000 (lead 1000 s), 8 started on time, 4 three
    # leads late and 8 still wait (at least 2 leads late): known alone, the median share is
    # 0; with the waiting ones (Kaplan-Meier), 3
    moved = []
    for censored in (False, True):
        cal = bench.ShiftedCalibration(by_lead=False, censored=censored, min_seen=10)
        cal.record(0.0, [JobForecast(k, 1000.0, 1000.0, 1000.0, 1000.0) for k in range(20)])
        for k in range(12):
            cal.started(k, 1000.0 if k < 8 else 4000.0)
        (f,) = cal.adjust(3000.0, [JobForecast("z", 4000.0, 4000.0, 4000.0, 4000.0)])
        moved.append(f.start)
    assert moved == [4000.0, pytest.approx(7000.0)]


def test_slurms_shown_start_is_the_will_run_groups_last_end():
    """Without ``bf_running_job_reserve`` Slurm's backfill asks the will-run test, which frees
    running jobs in groups on 30-s windows of the wall clock: jobs 0 and 1 end at 600 and
    620 s, one window, so job 2 (the 2 nodes job 0 frees would do) is shown at 620, the
    group's last end, while Slurm's own run with every job at its limit starts it at 600."""
    bench = benchmark("forecast_accuracy")
    running = ((Job(0, 0.0, 0.0, 600.0, 2), 600.0), (Job(1, 0.0, 0.0, 620.0, 2), 620.0))
    state = ClusterState(40.0, System(4), (Job(2, 30.0, 0.0, 600.0, 2),), running)
    policy = build_policy("slurm")
    assert [f.start for f in bench.slurm_plan(state, policy)] == [620.0]
    assert [f.start for f in forecast(state, policy, None, started={0: 0.0, 1: 0.0})] == [600.0]


def test_the_live_benchmark_scores_a_band_miss_on_its_side_and_rescores_what_it_saved(
        monkeypatch, tmp_path, capsys):
    """``slurm_forecast.py``: a real start before the band (by over a second) and one after
    it are counted apart, a start within a second of an end is inside, a sample without a
    forecast counts in no error; ``--rescore`` scores the saved samples again."""
    bench = benchmark("slurm_forecast", monkeypatch)
    band = {"submit": 0.0, "start": 100.0, "p10": 50.0, "p90": 200.0, "bands": "calibrated"}
    rows = [{**band, "time": 10.0, "job": k, "actual": actual}
            for k, actual in enumerate((20.0, 49.5, 120.0, 201.0, 260.0))]
    for kind in ("hpcopt", "slurm"):
        with open(tmp_path / f"samples_{kind}.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=bench.FIELDS)
            w.writeheader()
            w.writerows(rows + [{**rows[0], "job": 9, "start": None, "p10": None,
                                 "p90": None, "bands": "-"}])
    monkeypatch.setattr("sys.argv", ["slurm_forecast.py", "--rescore", "--out", str(tmp_path)])
    assert bench.main() == 0
    got = json.loads((tmp_path / "summary.json").read_text())["hpcopt"]
    assert got["samples"] == 6 and got["no_forecast"] == pytest.approx(1 / 6)
    assert (got["before_band"], got["band"], got["after_band"]) == \
        pytest.approx((1 / 5, 3 / 5, 1 / 5))
    assert got["mae_s"] == pytest.approx((80 + 50.5 + 20 + 101 + 160) / 5)
    assert "before the band 0.200, after it 0.200" in capsys.readouterr().out
