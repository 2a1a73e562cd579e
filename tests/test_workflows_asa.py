"""ASA's decision point, the default accounting, strategy objects, ``Simulator.run_until``,
paper-shaped workflows and the probe rule for background periods."""

from __future__ import annotations

import copy
import json
import math

import pytest

from hpcopt.domain import Job, System
from hpcopt.policies import build_policy
from hpcopt.sim.driver import Simulator
from hpcopt.workflows import (
    STRATEGIES,
    Stage,
    Strategy,
    WorkflowError,
    WorkflowRun,
    paper_workflow,
    run_workflow,
)
from hpcopt.workflows.paper import PAPER_WORKFLOWS
from hpcopt.workflows.periods import choose_periods, probe_wait
from hpcopt.workflows.runner import PerStage

from .conftest import SHARED_DATA, needs_data

DATA = SHARED_DATA
KTH = DATA / "hpc_swf" / "pwa" / "KTH-SP2-1996-2.1-cln.swf.gz"
WFI = DATA / "workflows" / "wfinstances"
needs_kth = needs_data("hpc_swf/pwa/KTH-SP2-1996-2.1-cln.swf.gz")
needs_wf_kth = needs_data("hpc_swf/pwa/KTH-SP2-1996-2.1-cln.swf.gz",
                          "workflows/wfinstances/blast/blast-chameleon-medium-001.json.gz")

STAGES = [Stage(0, 8, 4, 3000.0, 9000.0), Stage(1, 2, 2, 500.0, 900.0),
          Stage(2, 16, 8, 4000.0, 20000.0), Stage(3, 1, 1, 800.0, 800.0)]


@pytest.fixture(scope="module")
def kth():
    from hpcopt.traces import load_trace

    tr = load_trace(KTH)
    return tr.jobs[:600], tr.system


def _records(sim):
    return {i: (r.start, r.end) for i, r in sim.records.items()}


# ---------------------------------------------------------------- Simulator.run_until
@needs_kth
@pytest.mark.parametrize("period", [None, 900.0])
def test_run_until_stops_where_it_holds_and_the_loop_goes_on(kth, period):
    jobs, system = kth
    plain = Simulator(jobs, system, build_policy("fcfs"), period=period).run()
    sim = Simulator(jobs, system, build_policy("fcfs"), period=period)
    assert sim.run_until(lambda s: True) and sim.passes == 0  # held before any event
    target = jobs[300].submit
    assert sim.run_until(lambda s: s.now >= target)
    assert sim.now >= target
    if period is None:  # passes at every event: it stops at the first event time >= target
        assert sim.now == target
    done = sum(not math.isnan(r.end) and r.end <= sim.now for r in sim.records.values())
    assert 0 < done < len(jobs)
    fork = copy.deepcopy(sim)  # a what-if copy runs on without touching the original
    fork.submit(Job(id=10 ** 9, submit=fork.now, runtime=3600, walltime=3600, nodes=1))
    assert fork.run_until(lambda s: not math.isnan(s.records[10 ** 9].start))
    assert 10 ** 9 not in sim.records and sim.now >= target
    assert not sim.run_until(lambda s: False)  # everything finished first
    assert _records(sim) == _records(plain)  # resumed: exactly the uninterrupted run


# ---------------------------------------------------------------- the decision point
class _Keyed:
    """An estimator stub answering a fixed wait per key (stage cores); records what it
    observes."""

    prior = 0.0

    def __init__(self, waits):
        self.waits, self.observed = waits, []

    def sample(self, key, estimate_s=None):
        return 0, self.waits[key]

    def observe(self, key, index, true_wait, estimate_s=None):
        self.observed.append((key, true_wait))
        return 0

    def config(self):
        return {"policy": "keyed"}


TWO = [Stage(0, 4, 4, 1000.0, 4000.0), Stage(1, 2, 2, 100.0, 200.0)]
# the 4 nodes are busy until 5000; a 1-node job arrives at 700 (an event: a pass)
BUSY = [Job(id=0, submit=0.0, runtime=5000.0, walltime=5000.0, nodes=4),
        Job(id=1, submit=700.0, runtime=10.0, walltime=10.0, nodes=1)]


def _stage(res, y):
    return next(x for x in res.rows if x["stage"] == y and not x["cancelled"])


def test_plan_submit_plans_from_the_expected_end_before_the_predecessor_starts():
    # stage 0 expected to start at once (wait 0) -> T = 1000, stage 1 due at 1000 - 500
    est = _Keyed({4: 0.0, 2: 500.0})
    res = run_workflow(TWO, (BUSY, System(4)), "asa", estimator=est, at=0.0, warmup=0.0,
                       key="stage")
    s0, s1 = _stage(res, 0), _stage(res, 1)
    assert s0["alloc_start"] == 5000  # the machine was busy
    assert s1["submit"] == 700  # the first pass at or after 500, long before stage 0 started
    assert s1["submit"] < s0["alloc_start"]  # the lead exceeds t_0: impossible at its start
    assert s1["start"] == 6000 and s1["outcome"] == "hit"
    # stage 0's sampled wait is observed; stage 1 started the moment stage 0 ended (its
    # 5300 s blocked on the dependency are not a queue wait)
    assert est.observed == [(4, 5000.0), (2, 0.0)]
    assert s1["eligible"] == 6000
    start = run_workflow(TWO, (BUSY, System(4)), "asa", estimator=_Keyed({4: 0.0, 2: 500.0}),
                         at=0.0, warmup=0.0, plan="start", key="stage")
    assert _stage(start, 1)["submit"] == 5500  # today's rule: when stage 0 starts, T - a
    assert start.settings["plan"] == "start" and res.settings["plan"] == "submit"


def test_plan_submit_is_refined_when_the_predecessor_starts():
    # stage 0 expected to wait 10000 s -> T = 11000, due at 10500; it starts at 5000:
    # T = 6000 exactly, and stage 1 is injected at 5500 (not 10500)
    res = run_workflow(TWO, (BUSY, System(4)), "asa", estimator=_Keyed({4: 10000.0, 2: 500.0}),
                       at=0.0, warmup=0.0, key="stage")
    s1 = _stage(res, 1)
    assert s1["submit"] == 5500 and s1["start"] == 6000 and s1["perceived_wait"] == 0


def test_key_workflow_shares_one_estimate_across_the_stages():
    # key "workflow" (the default): both stages sample and observe under the workflow's
    # geometry (4 cores), so stage 1 uses the 4-core wait (3000) instead of its own (500)
    est = _Keyed({4: 3000.0, 2: 500.0})
    res = run_workflow(TWO, (BUSY, System(4)), "asa", estimator=est, at=0.0, warmup=0.0)
    assert [k for k, _ in est.observed] == [4, 4]
    s0, s1 = _stage(res, 0), _stage(res, 1)
    # the next pass after 700 is stage 0's start at 5000, where T = 6000 exactly: stage 1 is
    # due at 6000 - 3000 (past: submitted at once); keyed by its own cores, at 6000 - 500
    assert s0["alloc_start"] == 5000
    assert s1["submit"] == 5000 and s1["start"] == 6000
    assert res.settings["key"] == "workflow"
    stage = run_workflow(TWO, (BUSY, System(4)), "asa", estimator=_Keyed({4: 3000.0, 2: 500.0}),
                         at=0.0, warmup=0.0, key="stage")
    assert _stage(stage, 1)["submit"] == 5500 and stage.settings["key"] == "stage"
    with pytest.raises(WorkflowError, match="key: expected one of stage, workflow"):
        WorkflowRun(TWO, BUSY, System(4), "asa", key="geometry")


def test_an_infinite_estimate_submits_the_whole_chain_at_once():
    # plan submit: eager (an infinite estimate) submits every stage at a_r, exactly the
    # afterok oracle's chain; a long finite estimate submits stages before their
    # predecessors start; all at Per-Stage's core-hours
    bg = [Job(id=i, submit=600.0 * i, runtime=1800.0, walltime=3600.0, nodes=1 + i % 8)
          for i in range(60)]
    kw = dict(at=1200.0, warmup=1200.0, runs=2, interval=900.0)
    runs = {name: run_workflow(STAGES, (bg, System(16)), name, **kw,
                               estimator=_Keyed({c: 90000.0 for c in (1, 2, 4, 8)}))
            for name in ("asa", "eager", "oracle", "perstage")}
    for name in ("eager", "oracle"):
        res = runs[name]
        assert all(x["submit"] == res.runs[x["run"]]["submit"] for x in res.rows)
    key = ("run", "stage", "submit", "alloc_start", "end", "perceived_wait")
    assert [[x[k] for k in key] for x in runs["eager"].rows] == \
        [[x[k] for k in key] for x in runs["oracle"].rows]
    assert runs["eager"].runs == runs["oracle"].runs
    early = [(cur["submit"], prev["alloc_start"])
             for res in (runs["asa"],) for prev, cur in zip(res.rows, res.rows[1:])
             if cur["run"] == prev["run"] and cur["stage"] == prev["stage"] + 1]
    assert sum(s < a for s, a in early) >= 2  # before the predecessor started
    for name in ("asa", "eager", "oracle"):
        for a, b in zip(runs[name].runs, runs["perstage"].runs):
            assert a["core_hours"] == pytest.approx(b["core_hours"])
            assert a["overhead_core_hours"] == 0


def test_dependency_mode_plans_no_earlier_than_the_predecessors_start():
    # a hold needs its predecessor's end: in the dependency mode the plan waits for it
    res = run_workflow(TWO, (BUSY, System(4)), "asa", estimator=_Keyed({4: 0.0, 2: 500.0}),
                       at=0.0, warmup=0.0, mode="dependency", key="stage")
    assert _stage(res, 1)["submit"] == 5500


# ---------------------------------------------------------------- accounting and objects
def test_default_mode_is_the_papers_accounting():
    bg = [Job(id=i, submit=300.0 * i, runtime=2400.0, walltime=3600.0, nodes=1 + i % 12)
          for i in range(120)]
    for name in STRATEGIES:
        res = run_workflow(STAGES, (bg, System(16)), name, at=3600.0, warmup=3600.0, runs=2)
        want = {"bigjob": "dependency", "asa-naive": "naive"}.get(name, "afterok")
        assert res.settings["mode"] == want
        if want == "afterok":  # nothing held early: charged the stages' useful work
            for p in res.runs:
                assert p["overhead_core_hours"] == 0
                assert p["core_hours"] == pytest.approx(
                    sum(s.cores * s.runtime for s in STAGES) / 3600)


def test_strategies_are_objects_and_new_ones_use_the_same_hooks():
    bg = [Job(id=i, submit=500.0 * i, runtime=2000.0, walltime=3000.0, nodes=1 + i % 10)
          for i in range(80)]
    a = run_workflow(STAGES, (bg, System(16)), "perstage", at=2000.0, warmup=2000.0, runs=2)
    b = WorkflowRun(STAGES, bg, System(16), PerStage(), at=2000.0, warmup=2000.0,
                    runs=2).run()
    assert a.rows == b.rows and a.runs == b.runs

    class Late(Strategy):
        """Each stage 600 s after its predecessor's job finished."""

        name = "late"

        def completed(self, run, att):
            if att.stage + 1 < len(run.stages):
                at = run.sim.now + 600.0
                run.submit_stage(att.run, att.stage + 1, at, ready=run.sim.now,
                                 deps=run.mode.deps(att))

    late = WorkflowRun(STAGES, bg, System(16), Late(), at=2000.0, warmup=2000.0).run()
    rows = sorted(late.rows, key=lambda x: x["stage"])
    for prev, cur in zip(rows, rows[1:]):
        assert cur["submit"] == pytest.approx(prev["end"] + 600.0)
        assert cur["perceived_wait"] >= 600.0
    with pytest.raises(WorkflowError, match="mode: afterok is for perstage, asa, eager, "
                                            "oracle, not bigjob"):
        WorkflowRun(STAGES, bg, System(16), "bigjob", mode="afterok")
    with pytest.raises(WorkflowError, match="plan: expected one of submit, start"):
        WorkflowRun(STAGES, bg, System(16), "asa", plan="later")


# ---------------------------------------------------------------- paper-shaped workflows
def test_paper_workflows_have_the_papers_stage_structure():
    kinds = {name: "".join("P" if s.cores == 320 else "S" for s in paper_workflow(name, 320))
             for name in PAPER_WORKFLOWS}
    assert kinds == {"Montage": "PPSSPSSSS", "BLAST": "PS", "Statistics": "SPSP"}
    for name in PAPER_WORKFLOWS:
        st = paper_workflow(name, 28)
        assert [s.index for s in st] == list(range(len(st)))
        assert all(300 <= s.runtime <= 3600 and s.work == s.cores * s.runtime for s in st)
        big = 28 * sum(s.runtime for s in st)  # Big Job's core-seconds against Per-Stage's
        ratio = big / sum(s.work for s in st)
        assert {"Montage": 1.5, "BLAST": 1.0, "Statistics": 1.9}[name] <= ratio <= \
            {"Montage": 1.7, "BLAST": 1.1, "Statistics": 2.0}[name]
    for bad, msg in ((("Tigres", 28), "unknown 'Tigres'"), (("BLAST", 0), "cores")):
        with pytest.raises(WorkflowError, match=msg):
            paper_workflow(*bad)


# ---------------------------------------------------------------- periods by a probe
@needs_kth
def test_probe_wait_is_the_wait_of_that_job_in_the_replayed_trace(kth):
    jobs, system = kth
    for k in (150, 320, 450):
        at = jobs[k].submit + 1.0
        got = probe_wait(jobs, system, at, 40, 3600.0, warmup=86400.0)
        lo = [j for j in jobs if j.submit >= at - 86400.0]
        probe = Job(id=10 ** 9, submit=at, runtime=3600.0, walltime=3600.0, nodes=40)
        sim = Simulator(lo + [probe], system, build_policy("fcfs")).run()
        assert got == sim.records[10 ** 9].start - at


@needs_kth
def test_choose_periods_keeps_what_the_rule_says(kth):
    jobs, system = kth
    first = jobs[0].submit
    cands = [first + h * 3600.0 for h in range(48, 24 * 40, 6)]
    kept = choose_periods(jobs, system, cands, 40, 3600.0, low=300.0, high=5 * 3600.0,
                          gap=86400.0, warmup=86400.0)
    assert kept, "the KTH-SP2 slice has busy hours"
    for (t, w), nxt in zip(kept, kept[1:] + [None]):
        assert 300.0 <= w <= 5 * 3600.0
        assert w == probe_wait(jobs, system, t, 40, 3600.0, warmup=86400.0)
        if nxt is not None:
            assert nxt[0] >= t + 86400.0
    assert choose_periods(jobs, system, cands, 40, 3600.0, gap=86400.0, warmup=86400.0,
                          count=1) == kept[:1]
    with pytest.raises(WorkflowError, match="probe: 101 nodes on a machine of 100"):
        probe_wait(jobs, system, first, 101, 60.0)


# ---------------------------------------------------------------- the command line
@needs_wf_kth
def test_cli_plan_flag(tmp_path):
    from hpcopt.cli import main

    wf = WFI / "blast" / "blast-chameleon-medium-001.json.gz"
    base = ["workflow", str(wf), "--trace", str(KTH), "--cap", "4", "--runs", "2",
            "--interval", "1800", "--at", str(20 * 86400), "--warmup", "86400",
            "--no-progress", "--strategy", "asa"]
    for plan in ("submit", "start"):
        assert main(base + ["--plan", plan, "--out", str(tmp_path / plan)]) == 0
        s = json.loads((tmp_path / plan / "summary.json").read_text())
        assert s["settings"]["plan"] == plan and s["settings"]["mode"] == "afterok"
        assert s["overhead_core_hours"] == 0 and s["settings"]["key"] == "workflow"
    assert main(base + ["--key", "stage", "--out", str(tmp_path / "skey")]) == 0
    s = json.loads((tmp_path / "skey" / "summary.json").read_text())
    assert s["settings"]["key"] == "stage"
    with pytest.raises(SystemExit):
        main(base + ["--plan", "never", "--out", str(tmp_path / "x")])
    d = tmp_path / "eager"
    assert main(base[:-1] + ["eager", "--out", str(d)]) == 0
    rows = (d / "stages.csv").read_text().splitlines()[1:]
    assert len(rows) == 2 * 3



def test_a_real_queues_launch_delay_and_reaction():
    # an idle machine: every start comes launch_delay after its decision, and Per-Stage
    # submits each stage reaction seconds after its predecessor's end
    idle = [Job(id=0, submit=0.0, runtime=1.0, walltime=1.0, nodes=1)]
    res = run_workflow(TWO, (idle, System(8)), "perstage", at=10.0, warmup=10.0,
                       launch_delay=50.0, reaction=20.0)
    s0, s1 = _stage(res, 0), _stage(res, 1)
    assert (s0["start"], s0["end"]) == (60.0, 1060.0)
    assert (s1["submit"], s1["start"], s1["end"]) == (1080.0, 1130.0, 1230.0)
    assert res.runs[0]["perceived_wait"] == 50.0 + 70.0 and res.runs[0]["makespan"] == 1220.0
    assert res.simulator.records[0].start == 50.0  # the background's starts too
    asa = run_workflow(TWO, (idle, System(8)), "asa", estimator=_Keyed({4: 0.0, 2: 0.0}),
                       at=10.0, warmup=10.0, key="stage", launch_delay=50.0, reaction=20.0)
    assert _stage(asa, 1)["start"] == 1110.0  # afterok: released at the end, no reaction
    # the queue is told a longer walltime (whole minutes), the work stays the stage's
    told = run_workflow(TWO, (idle, System(8)), "perstage", at=10.0, warmup=10.0,
                        requested_walltime=lambda w: 60.0 * math.ceil(w / 60.0 + 1))
    rec = told.simulator.records[_stage(told, 1)["job_id"]]
    assert (rec.job.walltime, rec.end - rec.start) == (180.0, 100.0)
    with pytest.raises(WorkflowError, match="launch_delay"):
        run_workflow(TWO, (idle, System(8)), "perstage", launch_delay=-1.0)
