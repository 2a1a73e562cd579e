"""``hpcopt workflow --slurm`` on the real testbed (slow tier): each strategy's stages run in
order as real Slurm jobs, afterok dependencies hold, the table's waits are Slurm's own
records, a restart adopts the jobs already submitted, a failed stage and bad input stop it.

One testbed per Slurm version, ``--no-hold`` (Slurm's own scheduler, as at the paper's
sites).  A 3-stage workflow of 100 s stages at ``time_scale`` 0.02: 2 s sleeps.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from .slurm_fixtures import HPCOPT, VERSIONS, started_testbed

pytestmark = pytest.mark.slow

SCALE = 0.02
LEVELS = [(2, 100.0), (1, 100.0), (12, 100.0)]  # (tasks, runtime s) per DAG level


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def tb(request):
    with started_testbed(request.param, "wf", hold=False) as c:
        yield c


@pytest.fixture(scope="module")
def wf_file(tmp_path_factory):
    """A WfFormat 1.5 file whose levels are ``LEVELS``."""
    spec, exe, prev = [], [], []
    for lv, (n, rt) in enumerate(LEVELS):
        ids = [f"t{lv}_{i}" for i in range(n)]
        for t in ids:
            spec.append({"id": t, "name": t, "parents": prev, "children": []})
            exe.append({"id": t, "runtimeInSeconds": rt})
        prev = ids
    doc = {"name": "chain", "schemaVersion": "1.5",
           "workflow": {"specification": {"tasks": spec}, "execution": {"tasks": exe}}}
    p = tmp_path_factory.mktemp("wf") / "chain.json"
    p.write_text(json.dumps(doc))
    return p


def _cli(tb, *args, timeout=120):
    return subprocess.run([*HPCOPT, "workflow", *args], env=tb.env, capture_output=True,
                          text=True, timeout=timeout)


def _rows(out):
    import csv

    with open(out / "stages.csv") as fh:
        return list(csv.DictReader(fh))


def _killed_at_second_stage(p, out):
    """Kill the run ``p`` (SIGKILL: no clean-up) once its second stage is submitted; its
    journal."""
    journal = out / "slurm-run.json"
    end = time.monotonic() + 60
    while time.monotonic() < end:
        if journal.exists():
            try:
                if len(json.loads(journal.read_text())["jobs"]) >= 2:
                    break
            except ValueError:
                pass
        time.sleep(0.2)
    p.send_signal(signal.SIGKILL)
    p.wait()
    return journal


def _ours(tb, tag):
    return [j for j in tb.jobs().values() if str(j.get("comment", "")).startswith(
        f"hpcopt-wf:{tag}:")]


@pytest.mark.parametrize("strategy", ["bigjob", "perstage", "asa", "asa-naive"])
def test_strategy_on_slurm(tb, wf_file, tmp_path, strategy):
    out = tmp_path / strategy
    p = _cli(tb, str(wf_file), "--slurm", "--strategy", strategy, "--time-scale", str(SCALE),
             "--out", str(out), "--state", str(tmp_path / "asa.json"))
    assert p.returncode == 0, p.stderr
    summary = json.loads((out / "summary.json").read_text())
    for k in ("makespan", "core_hours", "perceived_wait", "hits", "misses", "resubmissions"):
        assert summary[k] is not None
    assert summary["settings"]["queue"] == "slurm"
    rows = [r for r in _rows(out) if r["cancelled"] == "False"]
    assert [int(r["stage"]) for r in rows] == list(range(len(LEVELS)))
    jobs = tb.jobs()
    tag = summary["settings"]["tag"]
    ours = _ours(tb, tag)
    # no duplicates: one job per (run, stage, attempt)
    keys = [tuple(j["comment"].split(":")[2:5]) for j in ours]
    assert len(keys) == len(set(keys)) == len({r["slurm_job"] for r in _rows(out)})
    for r in _rows(out):
        j = jobs[int(r["slurm_job"])]
        # the waits are Slurm's own records, in workflow seconds
        if float(r["wait"]) or strategy != "bigjob":
            assert float(r["wait"]) == pytest.approx((j["start_time"] - j["submit_time"])
                                                     / SCALE)
        assert float(r["slurm_start"]) == j["start_time"]
        if strategy != "bigjob" and r["cancelled"] == "False":
            # what ASA learns from: start - Slurm's eligible time (its dependency met)
            assert float(r["eligible"]) == pytest.approx(
                (j["eligible_time"] - summary["settings"]["t0"]) / SCALE)
    if strategy != "bigjob":
        for a, b in zip(rows, rows[1:]):  # in order: a stage starts after its predecessor
            ja, jb = jobs[int(a["slurm_job"])], jobs[int(b["slurm_job"])]
            assert jb["start_time"] >= ja["end_time"]
        if summary["settings"]["mode"] == "afterok":
            for a, b in zip(rows, rows[1:]):
                if b["outcome"]:  # a proactive stage: linked to its predecessor
                    assert float(b["submit"]) <= float(a["end"])
    assert all(j["job_state"] == "COMPLETED" for j in ours
               if j["job_id"] in {int(r["slurm_job"]) for r in rows})


def test_restart_adopts_jobs(tb, wf_file, tmp_path):
    out = tmp_path / "restart"
    args = [*HPCOPT, "workflow", str(wf_file), "--slurm", "--strategy", "perstage",
            "--time-scale", str(SCALE), "--out", str(out)]
    p = subprocess.Popen(args, env=tb.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    journal = _killed_at_second_stage(p, out)
    tag = json.loads(journal.read_text())["tag"]
    before = {j["job_id"] for j in _ours(tb, tag)}
    assert before
    q = _cli(tb, str(wf_file), "--slurm", "--strategy", "perstage", "--time-scale",
             str(SCALE), "--out", str(out))
    assert q.returncode == 0, q.stderr
    assert "found Slurm job" in q.stderr
    ours = _ours(tb, tag)
    keys = [tuple(j["comment"].split(":")[2:5]) for j in ours]
    assert len(keys) == len(set(keys)) == len(LEVELS)
    assert before <= {j["job_id"] for j in ours}
    # a finished run started again submits nothing
    r = _cli(tb, str(wf_file), "--slurm", "--strategy", "perstage", "--time-scale",
             str(SCALE), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert len(_ours(tb, tag)) == len(LEVELS)


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def tb_acct(request):
    """A testbed with accounting (slurmdbd) that forgets finished jobs 2 s after they end."""
    with started_testbed(request.param, "wfacct", hold=False, accounting=True,
                         min_job_age=2) as c:
        yield c


def _sacct(tb, jid):
    out = tb.run("env", "SLURM_TIME_FORMAT=%s", "sacct", "-X", "-n", "-P", "-j", str(jid),
                 "-o", "Submit,Start,End")
    return [float(x) for x in out.strip().split("|")]


def test_restart_after_min_job_age_reads_accounting(tb_acct, wf_file, tmp_path):
    out = tmp_path / "acct"
    args = [str(wf_file), "--slurm", "--strategy", "perstage", "--time-scale", str(SCALE),
            "--out", str(out)]
    p = subprocess.Popen([*HPCOPT, "workflow", *args], env=tb_acct.env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    journal = _killed_at_second_stage(p, out)
    first = json.loads(journal.read_text())["jobs"]["0:0:0"]
    # squeue forgets the first stage (MinJobAge 2 s; slurmctld purges about once a minute)
    tb_acct.wait(lambda: first not in tb_acct.jobs(), 180, step=2)
    q = _cli(tb_acct, *args)
    assert q.returncode == 0, q.stderr
    rows = _rows(out)
    assert [int(r["stage"]) for r in rows] == list(range(len(LEVELS)))
    # the forgotten stage's times are accounting's, and nothing was submitted twice
    r0 = next(r for r in rows if int(r["slurm_job"]) == first)
    assert [float(r0[k]) for k in ("slurm_submit", "slurm_start", "slurm_end")] == \
        _sacct(tb_acct, first)
    def recorded():  # slurmdbd records a job a moment after it ends
        return tb_acct.run("sacct", "-X", "-n", "-P", "--allusers", "-S", "now-1hour",
                           "--name", "hpcopt-wf", "-o", "JobID").split()

    tb_acct.wait(lambda: len(recorded()) >= len(LEVELS), 30, step=1)
    assert len(recorded()) == len(LEVELS)


def test_run_commands_runs_the_tasks_own_commands(tb, tmp_path):
    # a file every job can reach (24.11's jobs run in its chroot, where the testbed's own
    # directory is mounted at the same path)
    log = tb.dir / f"wfcmd-{tmp_path.name}.txt"
    spec, exe = [], []
    for lv, ids in enumerate([["a"], ["b", "c", "d"]]):
        for t in ids:
            spec.append({"id": t, "name": t, "parents": ["a"] if lv else [], "children": []})
            exe.append({"id": t, "runtimeInSeconds": 1.0, "command": {
                "program": "sh", "arguments": ["-c", f"echo {t} >> {log}"]}})
    wf = tmp_path / "cmd.json"
    wf.write_text(json.dumps({"name": "cmd", "schemaVersion": "1.5", "workflow": {
        "specification": {"tasks": spec}, "execution": {"tasks": exe}}}))
    out = tmp_path / "cmd"
    p = _cli(tb, str(wf), "--slurm", "--strategy", "perstage", "--run-commands",
             "--time-scale", "1", "--out", str(out))
    assert p.returncode == 0, p.stderr
    lines = log.read_text().split()
    assert lines[0] == "a" and sorted(lines[1:]) == ["b", "c", "d"]
    assert [int(r["stage"]) for r in _rows(out)] == [0, 1]
    # opting in needs time scale 1, and it never runs in the simulator
    p = _cli(tb, str(wf), "--slurm", "--strategy", "perstage", "--run-commands",
             "--out", str(tmp_path / "scaled"))
    assert p.returncode != 0 and "time scale 1" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    log.unlink()


def test_failed_stage_stops(tb, wf_file, tmp_path):
    out = tmp_path / "fail"
    p = subprocess.Popen([*HPCOPT, "workflow", str(wf_file), "--slurm", "--strategy", "asa",
                          "--time-scale", "0.1", "--out", str(out)], env=tb.env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    journal = out / "slurm-run.json"
    end = time.monotonic() + 30
    first = None
    while first is None and time.monotonic() < end:
        if journal.exists():
            try:
                first = json.loads(journal.read_text())["jobs"].get("0:0:0")
            except ValueError:
                pass
        time.sleep(0.2)
    assert first
    tb.run("scancel", str(first))
    _, err = p.communicate(timeout=60)
    assert p.returncode != 0
    assert "run 0 stage 0 (Slurm job" in err and "CANCELLED" in err
    assert len(err.strip().splitlines()) == 1, err
    tag = json.loads(journal.read_text())["tag"]
    tb.wait(lambda: all(j["job_state"] not in ("PENDING", "RUNNING")
                        for j in _ours(tb, tag)), 20)


def test_interrupt_cancels(tb, wf_file, tmp_path):
    from .conftest import default_signals

    out = tmp_path / "int"
    p = subprocess.Popen([*HPCOPT, "workflow", str(wf_file), "--slurm", "--strategy",
                          "perstage", "--time-scale", "0.1", "--out", str(out)], env=tb.env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=default_signals)
    journal = out / "slurm-run.json"
    end = time.monotonic() + 30
    while time.monotonic() < end and not (journal.exists() and
                                          "0:0:0" in journal.read_text()):
        time.sleep(0.2)
    time.sleep(1)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    assert "job(s) of the workflow cancelled" in err
    tag = json.loads(journal.read_text())["tag"]
    tb.wait(lambda: all(j["job_state"] not in ("PENDING", "RUNNING")
                        for j in _ours(tb, tag)), 20)


def test_bad_input_submits_nothing(tb, wf_file, tmp_path):
    n = len(tb.jobs())
    p = _cli(tb, str(wf_file), "--slurm", "--strategy", "perstage", "--cap", "12",
             "--cores-per-node", "1", "--out", str(tmp_path / "wide"))
    assert p.returncode != 0
    assert "needs" in p.stderr and "nodes" in p.stderr and len(p.stderr.splitlines()) == 1
    p = _cli(tb, str(wf_file), "--slurm", "--strategy", "oracle", "--out",
             str(tmp_path / "o"))
    assert p.returncode != 0 and "oracle" in p.stderr
    p = _cli(tb, str(wf_file), "--slurm", "--strategy", "perstage", "--partition", "nope",
             "--out", str(tmp_path / "p"))
    assert p.returncode != 0 and "nope" in p.stderr
    assert len(tb.jobs()) == n
