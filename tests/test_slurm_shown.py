"""What Slurm showed against the model's plan (benchmarks/slurm_validation.py ``shown``) on
a tiny saved record, and the parsing of ``replay --shown-every``; no Slurm."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from .slurm_fixtures import VERSIONS, started_testbed

T0 = 1_700_000_000.0  # the record's first submission (Unix seconds, as Slurm records them)


def record(folder: Path, shown: list, shown_at: list) -> Path:
    """A replay folder with one sampled Slurm-alone run on the 8-node testbed's slurm.conf:
    j0 (8 nodes, 1 min) runs 0-30 s, j1 (8 nodes, 2 min) waits for it, j2 (4 nodes, 1 min)
    waits behind j1."""
    from hpcopt import testbed

    folder.mkdir()
    jobs = [dict(name="j0", nodes=8, sleep=30, limit=1, at=0.0),
            dict(name="j1", nodes=8, sleep=20, limit=2, at=2.0),
            dict(name="j2", nodes=4, sleep=10, limit=1, at=4.0)]
    real = {"j0": [T0, T0, T0 + 30], "j1": [T0 + 2, T0 + 30, T0 + 50],
            "j2": [T0 + 4, T0 + 50, T0 + 60]}
    conf = testbed.slurm_conf(Path("/testbed"), 8, 4, 20000, "backfill", False)
    (folder / "replay_jobs.json").write_text(json.dumps(jobs))
    (folder / "replay_slurm.json").write_text(json.dumps(dict(
        real=real, cycles=[], wall=60.0, slurm_conf=conf, testbed={"slurm": "22.05"},
        shown_every=2.0, shown_at=shown_at, shown=shown)))
    return folder


def test_the_model_shows_the_plan_of_its_last_pass_at_each_sample(sv, tmp_path, capsys,
                                                                  monkeypatch):
    """Before j0 ends the model plans j1 at j0's start plus its limit (60 s) and j2 after
    j1's two minutes (180 s); after j0's end it has started j1 (at 30 s) and plans j2 at
    j1's start plus its limit (150 s): the sample at 31 s sees the later plan, those before
    30 s the earlier one; a job Slurm shows no start for is the model's only."""
    shown = [[T0 + 3.0, "j1", T0 + 60],
             [T0 + 5.0, "j1", T0 + 60], [T0 + 5.0, "j2", None],
             [T0 + 29.0, "j1", T0 + 61], [T0 + 29.0, "j2", T0 + 240],
             [T0 + 31.0, "j2", T0 + 150]]
    d = record(tmp_path / "shown-tiny", shown, [T0 + t for t in (1.0, 3.0, 5.0, 29.0, 31.0)])
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", ["slurm_validation.py", "shown", str(d), "--out",
                                      str(out)])
    sv.main()
    (row,) = json.loads((out / "shown.json").read_text())
    lines = (out / "shown_rows.csv").read_text().splitlines()
    assert lines[0] == \
        "replay,time,job,submit,real_start,slurm,slurm_nodes,model,model_from,model_pass"
    got = {(float(r.split(",")[1]) - T0, r.split(",")[2]): r.split(",")[7:9]
           for r in lines[1:]}
    assert got == {(3.0, "j1"): [str(T0 + 60), "plan"], (5.0, "j1"): [str(T0 + 60), "plan"],
                   (5.0, "j2"): [str(T0 + 180), "plan"], (29.0, "j1"): [str(T0 + 60), "plan"],
                   (29.0, "j2"): [str(T0 + 180), "plan"],
                   (31.0, "j2"): [str(T0 + 150), "plan"]}  # the pass after j0's end
    assert row["replay"] == "shown-tiny" and row["latency"] == 0.0  # no other run: none
    assert (row["samples"], row["rows"], row["both"], row["only_slurm"], row["only_model"],
            row["neither"], row["model_started"], row["only_slurm_passed"]) == \
        (5, 6, 5, 0, 1, 0, 0, 0)
    assert (row["mae_s"], row["median_s"]) == (12.2, 0.0)  # gaps 0, 0, 1, 60, 0
    assert (row["within_1s"], row["within_60s"]) == (0.8, 1.0)
    slurm_err, model_err = [30, 30, 31, 190, 100], [30, 30, 30, 130, 100]  # to the real start
    assert row["slurm_mae_real_s"] == round(sum(slurm_err) / 5, 2)
    assert row["model_mae_real_s"] == round(sum(model_err) / 5, 2)
    assert row["model_over_slurm"] == round(sum(model_err) / sum(slurm_err), 3)
    assert "| shown-tiny | 22.05 | - | - | 5 | 6 | 0.83 / 0.00 / 0.17 / 0.00 | 12.2, 0.0 | " \
           "0.80, 1.00 |" in capsys.readouterr().out


def test_a_job_the_model_already_started_shows_its_start(sv):
    """A job Slurm still shows pending that the model had started by then shows the
    model's start; one it decided to start but whose start (the latency later) is still
    to come shows its plan, as Slurm shows its own until its start; one the plan lacks
    shows none (where Slurm shows one, after a pass that came after its submission)."""
    plans = sv.PlanLog()
    plans.times, plans.plans = [0.0, 10.0], [{"a": 50.0, "b": 70.0}, {"b": 80.0}]
    run = {"real": {"a": (T0, T0 + 12, T0 + 20), "b": (T0, T0 + 90, T0 + 99),
                    "c": (T0, T0 + 95, T0 + 99)},
           "shown": [[T0 + 9.0, "a", T0 + 50, "n[1-2]"], [T0 + 11.0, "a", None, None],
                     [T0 + 11.0, "b", T0 + 81, "n3"], [T0 + 11.0, "c", T0 + 99, "n4"]]}
    sim = {"a": T0 + 10.5, "b": T0 + 11.5, "c": T0 + 95}  # b: started after the sample
    rows = sv.shown_rows(run, plans, sim)
    assert [(r["model"], r["model_from"]) for r in rows] == [
        (T0 + 50, "plan"), (T0 + 10.5, "started"), (T0 + 80, "plan"), (None, "none")]
    assert [r["slurm_nodes"] for r in rows] == ["n[1-2]", None, "n3", "n4"]
    s = sv.shown_summary(rows, 2)
    assert (s["both"], s["only_slurm"], s["only_model"], s["neither"], s["model_started"]) \
        == (2, 1, 1, 0, 1)
    assert (s["plan_rows"], s["plan_mae_s"], s["mae_s"]) == (2, 0.5, 0.5)  # 0 and 1 s
    assert plans.at(-1.0) == (None, {}) and plans.at(10.0) == (10.0, {"b": 80.0})
    assert [r["model_pass"] for r in rows] == [T0, T0 + 10, T0 + 10, T0 + 10]
    assert s["only_slurm_passed"] == 1  # c: submitted before the pass at 10 s, no start


def test_no_sampled_run_is_a_one_line_error(sv, tmp_path, monkeypatch):
    d = record(tmp_path / "unsampled", [], [])
    run = json.loads((d / "replay_slurm.json").read_text())
    del run["shown"], run["shown_at"]
    (d / "replay_slurm.json").write_text(json.dumps(run))
    monkeypatch.setattr(sys, "argv", ["slurm_validation.py", "shown", str(d)])
    with pytest.raises(SystemExit, match="no run in .* has squeue samples"):
        sv.main()


def test_shown_every_parses_seconds_and_refuses_the_rest(sv, capsys, monkeypatch):
    p = sv.parser()
    assert p.parse_args(["replay", "--shown-every", "2"]).shown_every == 2.0
    assert p.parse_args(["replay", "--shown-every", "0.5"]).shown_every == 0.5
    assert p.parse_args(["replay"]).shown_every is None
    for bad in ("0", "-1", "nan", "inf", "two"):
        with pytest.raises(SystemExit):
            p.parse_args(["replay", "--shown-every", bad])
        assert f"expected seconds > 0, got '{bad}'" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["slurm_validation.py", "replay", "--runs", "fcfs",
                                       "--shown-every", "2"])
    with pytest.raises(SystemExit, match="--shown-every samples Slurm's own run"):
        sv.main()


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_the_sampler_reads_what_squeue_start_shows_until_every_job_started(sv, version):
    """On a real testbed (Slurm alone): a job behind an 8-node one is shown with the start
    and nodes Slurm's backfill plans for it, and once every job is in and none waits the
    sampler ends by itself."""
    with started_testbed(version, "shown", scheduler="backfill", hold=False) as c:
        first = c.submit("-J", "wide", "-N", "8", "-t", "2", sleep=30)
        c.wait(lambda: c.state(first) == "RUNNING", 30)
        sampler = sv.ShownSampler(c.env, 0.5)
        sampler.start()
        c.submit("-J", "behind", "-N", "3", "-t", "1", sleep=1)
        sampler.submitted.set()
        c.wait(lambda: any(r[1] == "behind" and r[2] for r in sampler.rows), 30)
        c.cancel([first])  # "behind" starts: the next sample finds no pending job
        sampler.join(30)
        assert not sampler.is_alive()
        start = c.jobs()[first]["start_time"]
        shown = [r for r in sampler.rows if r[2] is not None]
        assert {r[1] for r in sampler.rows} == {"behind"}
        # planned at the running job's end (its start plus two minutes, whole seconds)
        assert {r[2] for r in shown} == {float(start) + 120}
        assert all(r[3] and r[3].startswith("n") for r in shown)  # the nodes it holds
        assert sampler.times[-1] > shown[-1][0]  # the last sample: nothing pending
