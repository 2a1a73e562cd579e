"""Slurm accounting as a trace: sacct --parsable2 output and jobcomp/filetxt logs.

The jobcomp lines are copied from the testbed's own log (Slurm 22.05.8); the sacct text
follows sacct's --parsable2 layout (no slurmdbd here to produce it; the cluster tests load a
real jobcomp log as well)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import hpcopt
from hpcopt.errors import TraceError

SACCT = """\
JobID|Submit|Start|End|Elapsed|Timelimit|NNodes|NCPUS|State|Partition|User
100|2024-03-01T10:00:00|2024-03-01T10:00:05|2024-03-01T10:10:05|00:10:00|01:00:00|4|128|COMPLETED|batch|alice
100.batch|2024-03-01T10:00:05|2024-03-01T10:00:05|2024-03-01T10:10:05|00:10:00||1|32|COMPLETED||
100.extern|2024-03-01T10:00:05|2024-03-01T10:00:05|2024-03-01T10:10:05|00:10:00||4|128|COMPLETED||
100.0|2024-03-01T10:00:06|2024-03-01T10:00:06|2024-03-01T10:10:00|00:09:54||4|128|COMPLETED||
101_1|2024-03-01T10:01:00|2024-03-01T10:02:00|2024-03-01T11:02:00|01:00:00|01:00:00|2|64|TIMEOUT|batch|bob
101_2|2024-03-01T10:01:00|2024-03-01T10:02:00|2024-03-01T10:05:00|00:03:00|UNLIMITED|2|64|FAILED|debug|bob
101_[3-5]|2024-03-01T10:01:00|Unknown|Unknown|00:00:00|Partition_Limit|1|1|PENDING|batch|bob
102|2024-03-01T10:03:00|None|2024-03-01T10:04:00|00:00:00|1-00:00:00|8|256|CANCELLED by 0|batch|alice
103|2024-03-01T10:04:00|2024-03-01T10:05:00|Unknown|00:30:00|02:00:00|1|32|RUNNING|batch|alice
104|2024-03-01T10:06:00|2024-03-01T10:06:30|2024-03-01T12:06:31|02:00:01|02:00:00|3|96|TIMEOUT|batch|carol
"""  # noqa: E501

JOBCOMP = """\
JobId=1 UserId=root(0) GroupId=root(0) Name=wrap JobState=COMPLETED Partition=batch TimeLimit=1 StartTime=2026-11-24T17:37:50 EndTime=2026-11-24T17:37:55 NodeList=n[1-2] NodeCnt=2 ProcCnt=8 WorkDir=/tmp ReservationName= Tres=cpu=2,mem=2000M,node=2,billing=2 Account= QOS= WcKey= Cluster=unknown SubmitTime=2026-11-24T17:37:46 EligibleTime=2026-11-24T17:37:50 DerivedExitCode=0:0 ExitCode=0:0
JobId=3 UserId=root(0) GroupId=root(0) Name=wrap JobState=CANCELLED Partition=batch TimeLimit=5 StartTime=2026-11-24T17:44:27 EndTime=2026-11-24T17:44:27 NodeList=(null) NodeCnt=0 ProcCnt=0 WorkDir=/tmp ReservationName= Tres=cpu=1,mem=1000M,node=1,billing=1 Account= QOS= WcKey= Cluster=unknown SubmitTime=2026-11-24T17:40:38 EligibleTime=unknown DerivedExitCode=0:0 ExitCode=0:0
JobId=7 UserId=root(0) GroupId=root(0) Name=wrap JobState=TIMEOUT Partition=batch TimeLimit=UNLIMITED StartTime=2026-11-24T17:45:00 EndTime=2026-11-24T17:47:00 NodeList=n3 NodeCnt=1 ProcCnt=4 WorkDir=/tmp ReservationName= Tres=cpu=1 Account= QOS= WcKey= Cluster=unknown SubmitTime=2026-11-24T17:44:00 EligibleTime=2026-11-24T17:45:00 ArrayJobId=6 ArrayTaskId=1 DerivedExitCode=0:0 ExitCode=0:0
"""  # noqa: E501


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_sacct_folds_steps_keeps_array_ids_and_reports_every_value(tmp_path):
    t = hpcopt.load_trace(_write(tmp_path, "history.txt", SACCT),  # recognized by content
                          tz="UTC")
    r = t.report
    assert r.fmt == "sacct" and r.records_read == 7 and r.kept == 4
    assert r.dropped["runtime_unknown"] == 3  # pending array, cancelled, running
    assert [j.id for j in t.jobs] == ["100", "101_1", "101_2", "104"]  # array ids: text
    by_id = {j.id: j for j in t.jobs}
    assert by_id["100"].runtime == 600 and by_id["100"].walltime == 3600
    assert by_id["100"].nodes == 4 and by_id["100"].submit == 1709287200.0
    assert by_id["101_2"].walltime == 180  # UNLIMITED: the run time stands in
    assert by_id["104"].runtime == 7200 and r.runtime_capped == 1  # 02:00:01 > 02:00:00
    notes = "\n".join(r.notes)
    assert "3 job step line(s) folded into their jobs" in notes
    assert "1 cancelled before start" in notes
    assert "1 never started (PENDING)" in notes
    assert "1 not finished (RUNNING)" in notes
    assert "1 Timelimit UNLIMITED" in notes and "1 Timelimit Partition_Limit" in notes
    assert t.header["partitions"] == "batch=0,debug=1"
    assert t.header["users"] == "alice=0,bob=1,carol=2"
    assert by_id["101_2"].queue == 1 and by_id["104"].user == 2


def test_sacct_with_plain_ids_keeps_ints(tmp_path):
    text = "\n".join(line for line in SACCT.splitlines() if not line.startswith("101"))
    t = hpcopt.load_trace(_write(tmp_path, "h.sacct", text), fmt="sacct")
    assert [j.id for j in t.jobs] == [100, 104]


#: recorded on the testbed (Slurm 22.05, slurmdbd): ``TZ=UTC sacct --allusers --parsable2
#: ... --format JobID,JobName,...,User,Account`` after a run of benchmarks/site_rules.py
RECORDED = Path(__file__).parent / "data" / "slurm" / "22.05" / "sacct-accounts.txt"


def _accounts_as_written(text: str) -> dict:
    """Each job's Account as the dump writes it on the job's own line (steps have none)."""
    lines = text.splitlines()
    names = lines[0].split("|")
    rows = [dict(zip(names, line.split("|"))) for line in lines[1:] if line]
    return {int(r["JobID"]): r["Account"] for r in rows if r["JobID"].isdigit()}


def test_sacct_reads_accounts_of_a_recorded_dump():
    text = RECORDED.read_text()
    written = _accounts_as_written(text)
    t = hpcopt.load_trace(RECORDED, fmt="sacct", tz="UTC")
    assert len(t.jobs) == len(written) and len(set(written.values())) >= 3
    assert dict(zip([j.id for j in t.jobs], t.attributes["account"])) == written
    assert sorted(t.header["accounts"].split(",")) == sorted(
        f"{a}={i}" for i, a in enumerate(dict.fromkeys(written.values())))
    steps = sum(1 for line in text.splitlines()[1:] if "." in line.split("|")[0])
    assert f"{steps} job step line(s) folded into their jobs" in t.report.notes[0]


def test_sacct_without_account_reads_as_before(tmp_path):
    """An old dump (no Account field) reads the same jobs, without accounts."""
    lines = RECORDED.read_text().splitlines()
    at = lines[0].split("|").index("Account")
    old = "\n".join("|".join(f for i, f in enumerate(line.split("|")) if i != at)
                    for line in lines) + "\n"
    assert "Account" not in old
    a = hpcopt.load_trace(RECORDED, fmt="sacct", tz="UTC")
    b = hpcopt.load_trace(_write(tmp_path, "old.txt", old), fmt="sacct", tz="UTC")
    assert a.jobs == b.jobs and "account" not in b.attributes and "accounts" not in b.header
    assert a.report.ignored_columns == b.report.ignored_columns == ()


def test_sacct_jobs_without_an_account_name_none(tmp_path):
    """A job Slurm recorded with no account reads as ``""``; a dump where no job has one has
    no accounts at all."""
    text = SACCT.replace("|Partition|User\n", "|Partition|User|Account\n", 1)
    lines = text.splitlines()
    lines = [lines[0]] + [line + ("|phys" if line.startswith("104|") else "|")
                          for line in lines[1:]]
    t = hpcopt.load_trace(_write(tmp_path, "a.txt", "\n".join(lines) + "\n"), fmt="sacct")
    assert dict(zip([j.id for j in t.jobs], t.attributes["account"])) == {
        "100": "", "101_1": "", "101_2": "", "104": "phys"}
    none = "\n".join([lines[0]] + [line.rstrip("phys") for line in lines[1:]]) + "\n"
    t = hpcopt.load_trace(_write(tmp_path, "n.txt", none), fmt="sacct")
    assert "account" not in t.attributes


@pytest.mark.parametrize("text, where", [
    ("JobID|Submit|Start|NNodes\n1|x|y|1\n", "h.txt:1: missing sacct field(s) State, "
                                              "Elapsed or End"),
    (SACCT.replace("|01:00:00|4|128", "|1h|4|128"), "h.txt:2: field 'Timelimit': expected"),
    (SACCT.replace("|4|128|COMPLETED|batch", "|four|128|COMPLETED|batch"),
     "h.txt:2: field 'NNodes': expected a whole number, got 'four'"),
    (SACCT.replace("2024-03-01T10:00:00|", "yesterday|", 1), "h.txt:2: field 'Submit'"),
    (SACCT.replace("|alice\n", "|alice|extra\n", 1), "h.txt:2: expected 11 '|'-separated"),
    (SACCT.replace("100.batch", "1x0.batch"), "h.txt:3: field 'JobID'"),
])
def test_sacct_errors_name_the_line_and_field(tmp_path, text, where):
    with pytest.raises(TraceError) as err:
        hpcopt.load_trace(_write(tmp_path, "h.txt", text), fmt="sacct")
    assert where in str(err.value) and "\n" not in str(err.value)


def test_jobcomp_log(tmp_path):
    t = hpcopt.load_trace(_write(tmp_path, "jobcomp.txt", JOBCOMP))
    r = t.report
    assert r.fmt == "jobcomp" and r.records_read == 3 and r.kept == 2
    assert [j.id for j in t.jobs] == ["1", "6_1"]  # an array task: text ids
    first = t.jobs[0]
    assert (first.runtime, first.walltime, first.nodes) == (5, 60, 2)
    assert "1 cancelled before start (dropped as run time unknown)" in r.notes
    assert "1 TimeLimit UNLIMITED: walltime from run time" in r.notes


def test_jobcomp_errors(tmp_path):
    with pytest.raises(TraceError, match=r"j.log:2: missing SubmitTime="):
        hpcopt.load_trace(_write(tmp_path, "j.log", JOBCOMP.splitlines()[0] + "\n"
                                 + "JobId=9 JobState=COMPLETED\n"), fmt="jobcomp")
    with pytest.raises(TraceError, match=r"x.dat: cannot tell the trace format.*'sacct'"):
        hpcopt.load_trace(_write(tmp_path, "x.dat", "hello\n"))


def test_simulate_reads_slurm_history(tmp_path):
    """A site's own history through the CLI: format recognized, the report printed."""
    p = _write(tmp_path, "history.txt", SACCT)
    out = subprocess.run([str(Path(sys.executable).with_name("hpcopt")), "simulate", str(p),
                          "--policy", "fcfs", "--no-progress"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "dropped 3 of 7 jobs: 3 run time unknown (< 0)" in out.stdout
    assert "note: 3 job step line(s) folded into their jobs" in out.stdout
    res = hpcopt.simulate(hpcopt.load_trace(p), policy="knapsack")
    assert len(res.jobs) == 4
