"""Metrics definitions and the CQSim cross-check on the Lublin model trace."""

from __future__ import annotations

import pytest

import hpcopt
from hpcopt.domain import Job
from hpcopt.sim.metrics import summarize

from .conftest import shared_file


def test_metrics_by_hand():
    # two jobs on 2 nodes: A runs 0-100 (2 nodes); B (1 node, run 5, waits 100)
    jobs = [Job(1, 0, 100, 100, 2), Job(2, 0, 5, 5, 1)]
    res = hpcopt.simulate(jobs, nodes=2, backfill="none")
    t = res.jobs.set_index("job_id")
    assert t.loc[2, "wait"] == 100 and t.loc[2, "response"] == 105
    assert t.loc[2, "slowdown"] == pytest.approx(105 / 5)
    assert t.loc[2, "bounded_slowdown"] == pytest.approx(105 / 10)  # runtime below 10 s
    assert t.loc[1, "bounded_slowdown"] == 1.0
    s = res.summary
    assert s["avg_wait"] == 50 and s["max_wait"] == 100 and s["makespan"] == 105
    assert s["utilization"] == pytest.approx((200 + 5) / (2 * 105))
    assert s["job_count"] == 2


def test_trimming_warmup_and_cooldown():
    jobs = [Job(i, 10 * i, 5, 5, 1) for i in range(10)]
    res = hpcopt.simulate(jobs, nodes=1, warmup=0.2, cooldown=3)
    assert res.summary["job_count"] == 5
    assert res.summary["trimmed_warmup"] == 2 and res.summary["trimmed_cooldown"] == 3
    with pytest.raises(ValueError):
        summarize(res.jobs, 1, warmup=6, cooldown=6)


def test_simulation_result_files(tmp_path):
    import json

    import pandas as pd

    res = hpcopt.simulate([Job(1, 0, 5, 10, 1, bb=3.0)], system=hpcopt.System(1, bb=10.0))
    jobs_csv, summary_json = res.write(tmp_path / "out")
    df = pd.read_csv(jobs_csv)
    assert list(df.columns[:12]) == ["job_id", "submit", "start", "end", "nodes", "walltime",
                                     "runtime", "wait", "response", "slowdown",
                                     "bounded_slowdown", "mode"]
    assert "bb" in df.columns  # one column per further resource a job uses
    summary = json.loads(summary_json.read_text())
    assert summary["avg_wait"] == 0 and summary["settings"]["policy"] == "fcfs"


def test_fcfs_easy_matches_cqsim_on_lublin_256():
    """CQSim's FCFS+EASY on the first 10,000 lublin_256 jobs: avg wait 97,181 s, util 0.9363."""
    path = shared_file("hpc_swf/lublin_model/lublin_256.swf.gz")
    res = hpcopt.simulate(path, nodes=256, jobs=10_000, policy="fcfs")
    assert res.summary["job_count"] == 10_000
    assert res.summary["avg_wait"] == pytest.approx(97_181, rel=0.005)
    assert res.summary["utilization"] == pytest.approx(0.9363, abs=0.001)


def test_simulate_needs_a_system_size_for_job_lists():
    with pytest.raises(hpcopt.errors.SimulationError, match="nodes="):
        hpcopt.simulate([Job(1, 0, 5, 10, 1)])


def test_unknown_policy_and_option_are_clear_errors():
    from hpcopt.errors import SimulationError, UnknownPolicyError

    with pytest.raises(UnknownPolicyError, match="Did you mean 'fcfs'"):
        hpcopt.simulate([Job(1, 0, 5, 10, 1)], nodes=1, policy="fcfz")
    with pytest.raises(SimulationError, match="does not take"):
        hpcopt.simulate([Job(1, 0, 5, 10, 1)], nodes=1, policy="fcfs", backend="dp")


def test_a_trace_file_with_burst_buffer_runs_on_a_given_system(tmp_path):
    table = tmp_path / "jobs.csv"
    table.write_text("id,submit,runtime,walltime,nodes,bb\n1,0,10,20,2,30\n2,0,10,20,2,30\n")
    with pytest.raises(hpcopt.errors.SimulationError, match="has neither"):
        hpcopt.simulate(table)  # the file knows nodes only: never ignore the burst buffer
    res = hpcopt.simulate(table, system=hpcopt.System(4, bb=40.0))
    assert list(res.jobs["start"]) == [0, 10]  # 60 GB asked, 40 GB there: one at a time
    assert list(res.jobs["bb"]) == [30, 30]
