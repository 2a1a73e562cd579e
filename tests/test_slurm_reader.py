"""The sacct/jobcomp reader's options and rules found on a real slurmdbd (fast tier): the
zone of the times, Slurm's 365-day stand-in for no limit, time formats that lose precision,
sizes in cores, and ``hpcopt trace convert`` (array ids numbered for SWF, the map beside)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

import hpcopt
from hpcopt.errors import TraceError
from hpcopt.traces.convert import convert

HEAD = "JobID|Submit|Start|End|Elapsed|Timelimit|NNodes|NCPUS|State|Partition|User\n"
# as sacct printed them on the testbed (22.05.8 with slurmdbd): no -t on a MaxTime=INFINITE
# partition is 365-00:00:00; three 1-core jobs shared node n8 of the partition shared
REAL = HEAD + """\
1|2026-11-26T14:21:00|2026-11-26T14:21:00|2026-11-26T14:21:02|00:00:02|365-00:00:00|1|4|COMPLETED|batch|root
1.batch|2026-11-26T14:21:00|2026-11-26T14:21:00|2026-11-26T14:21:02|00:00:02||1|4|COMPLETED||
2|2026-11-26T14:21:00|2026-11-26T14:21:00|2026-11-26T14:21:03|00:00:03|365-00:00:00|1|1|COMPLETED|shared|root
3|2026-11-26T14:21:00|2026-11-26T14:21:00|2026-11-26T14:21:03|00:00:03|00:05:00|1|1|COMPLETED|shared|root
8+0|2026-11-26T14:21:18|2026-11-26T14:21:18|2026-11-26T14:21:20|00:00:02|UNLIMITED|1|4|COMPLETED|batch|root
8+1|2026-11-26T14:21:18|2026-11-26T14:21:18|2026-11-26T14:21:20|00:00:02|UNLIMITED|2|8|COMPLETED|batch|root
11_1|2026-11-26T14:21:18|2026-11-26T14:21:18|2026-11-26T14:21:20|00:00:02|365-00:00:00|1|4|COMPLETED|batch|root
11_2|2026-11-26T14:21:18|2026-11-26T14:21:18|2026-11-26T14:21:20|00:00:02|365-00:00:00|1|4|COMPLETED|batch|root
"""  # noqa: E501
JOBCOMP = (
    "JobId=1 UserId=root(0) GroupId=root(0) Name=wrap JobState=COMPLETED Partition=batch "
    "TimeLimit=525600 StartTime=2026-11-26T14:21:00 EndTime=2026-11-26T14:21:02 NodeList=n7 "
    "NodeCnt=1 ProcCnt=4 SubmitTime=2026-11-26T14:21:00\n"
    "JobId=2 UserId=root(0) GroupId=root(0) Name=wrap JobState=COMPLETED Partition=shared "
    "TimeLimit=5 StartTime=2026-11-26T14:21:00 EndTime=2026-11-26T14:21:03 NodeList=n8 "
    "NodeCnt=1 ProcCnt=1 SubmitTime=2026-11-26T14:21:00\n")
UTC_14_21 = 1795702860.0  # 2026-11-26T14:21:00Z


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.fixture
def local_zone(monkeypatch):
    """Set this process's local zone (TZ) for a test; the old one comes back after."""
    def set_zone(name: str) -> None:
        monkeypatch.setenv("TZ", name)
        time.tzset()
    yield set_zone
    monkeypatch.undo()
    time.tzset()


def test_times_in_a_named_zone_follow_its_daylight_saving_rules(tmp_path):
    p = _write(tmp_path, "h.txt", REAL)
    utc = {j.id: j.submit for j in hpcopt.load_trace(p, tz="UTC").jobs}
    assert utc["1"] == UTC_14_21
    ny = {j.id: j.submit for j in hpcopt.load_trace(p, tz="America/New_York").jobs}
    assert ny["1"] - utc["1"] == 5 * 3600  # November: EST, UTC-5
    summer = REAL.replace("2026-11-26", "2026-07-01")
    ny = hpcopt.load_trace(_write(tmp_path, "s.txt", summer), tz="America/New_York").jobs
    assert ny[0].submit == 1782915660.0 + 4 * 3600  # July: EDT, UTC-4
    # across the change (2026-03-08 02:00 EST -> 03:00 EDT): one hour of wall clock apart,
    # 0 s of real time apart... the reader gives real seconds
    across = HEAD + ("1|2026-03-08T01:30:00|2026-03-08T01:59:00|2026-03-08T03:01:00|00:02:00|"
                     "00:05:00|1|4|COMPLETED|batch|root\n")
    job = hpcopt.load_trace(_write(tmp_path, "d.txt", across), tz="America/New_York").jobs[0]
    assert job.submit == 1772951400.0  # 01:30 EST = 06:30Z
    assert job.runtime == 120  # from Elapsed, not End - Start (62 min of wall clock)


def test_the_default_zone_is_the_local_one(tmp_path, local_zone):
    p = _write(tmp_path, "h.txt", REAL)
    local_zone("Europe/Berlin")
    berlin = hpcopt.load_trace(p).jobs[0].submit
    assert berlin == UTC_14_21 - 3600  # CET, UTC+1
    assert hpcopt.load_trace(p, tz="Europe/Berlin").jobs[0].submit == berlin
    local_zone("UTC")
    assert hpcopt.load_trace(p).jobs[0].submit == UTC_14_21
    jc = _write(tmp_path, "jobcomp.txt", JOBCOMP)
    assert hpcopt.load_trace(jc, tz="Asia/Tokyo").jobs[0].submit == UTC_14_21 - 9 * 3600


def test_an_unknown_zone_or_an_option_of_another_format_is_one_line(tmp_path):
    p = _write(tmp_path, "h.txt", REAL)
    with pytest.raises(TraceError, match=r"^tz 'Mars/Olympus': unknown time zone; expected "
                                         r"an IANA name"):
        hpcopt.load_trace(p, tz="Mars/Olympus")
    table = _write(tmp_path, "t.csv", "id,submit,runtime,nodes\n1,0,10,1\n")
    with pytest.raises(TraceError, match=r"t.csv: tz= applies to Slurm's sacct and jobcomp "
                                         r"formats, not csv"):
        hpcopt.load_trace(table, tz="UTC")
    with pytest.raises(TraceError, match="sizes must be 'nodes' or 'cores', got 'cpus'"):
        hpcopt.load_trace(p, sizes="cpus")


def test_slurms_365_days_for_no_limit_count_as_unlimited(tmp_path):
    t = hpcopt.load_trace(_write(tmp_path, "h.txt", REAL), tz="UTC")
    by_id = {j.id: j for j in t.jobs}
    assert by_id["1"].walltime == 2 and by_id["11_1"].walltime == 2  # the run time stands in
    assert by_id["3"].walltime == 300
    notes = "\n".join(t.report.notes)
    assert ("4 Timelimit 365-00:00:00 (Slurm's 365 days for no limit): walltime from run "
            "time") in notes
    assert "2 Timelimit UNLIMITED: walltime from run time" in notes
    assert t.report.walltime_from_runtime == 6
    jc = hpcopt.load_trace(_write(tmp_path, "jobcomp.txt", JOBCOMP), tz="UTC")
    assert [j.walltime for j in jc.jobs] == [2, 300]
    assert ("1 TimeLimit 525600 (Slurm's 365 days for no limit): walltime from run time"
            in jc.report.notes)


@pytest.mark.parametrize("fmt, stamp, lost", [
    ("%Y-%m-%d %H:%M", "2026-11-26 14:21", "seconds"),
    ("%F", "2026-11-26", "the time of day"),
    ("%Y-%m-%dT%H:%M", "2026-11-26T14:21", "seconds"),
])
def test_time_formats_that_lose_precision_are_refused_naming_the_setting(tmp_path, fmt,
                                                                         stamp, lost):
    text = REAL.replace("2026-11-26T14:21:00", stamp)
    with pytest.raises(TraceError) as err:
        hpcopt.load_trace(_write(tmp_path, "h.txt", text), tz="UTC")
    msg = str(err.value)
    assert msg.startswith(f"{tmp_path / 'h.txt'}:2: field 'Submit': '{stamp}' has no "
                          f"{lost}: ")
    assert "SLURM_TIME_FORMAT" in msg and "\n" not in msg
    jc = JOBCOMP.replace("SubmitTime=2026-11-26T14:21:00", f"SubmitTime={stamp}", 1)
    if " " not in stamp:  # a space would split the jobcomp field
        with pytest.raises(TraceError, match=r"jobcomp.txt:1: field 'SubmitTime': .*"
                                             r"SLURM_TIME_FORMAT"):
            hpcopt.load_trace(_write(tmp_path, "jobcomp.txt", jc), tz="UTC")


def test_full_precision_formats_are_read(tmp_path):
    spaced = REAL.replace("T14:", " 14:")  # SLURM_TIME_FORMAT="%Y-%m-%d %H:%M:%S"
    assert hpcopt.load_trace(_write(tmp_path, "a.txt", spaced), tz="UTC").jobs[0].submit \
        == UTC_14_21
    epoch = REAL.replace("2026-11-26T14:21:00", "1795702860")  # SLURM_TIME_FORMAT=%s
    jobs = hpcopt.load_trace(_write(tmp_path, "b.txt", epoch), tz="Asia/Tokyo").jobs
    assert {j.id: j.submit for j in jobs}["1"] == UTC_14_21  # epoch seconds have no zone
    with pytest.raises(TraceError, match=r"c.txt:2: field 'Start': expected a time like "
                                         r"2024-01-02T03:04:05 \(SLURM_TIME_FORMAT unset"):
        hpcopt.load_trace(_write(tmp_path, "c.txt", REAL.replace(  # =relative
            "1|2026-11-26T14:21:00|2026-11-26T14:21:00|", "1|2026-11-26T14:21:00|Thu 14:21|",
            1)), tz="UTC")


def test_sizes_in_cores_for_a_shared_partition(tmp_path):
    p = _write(tmp_path, "h.txt", REAL)
    nodes = {j.id: j.nodes for j in hpcopt.load_trace(p, tz="UTC").jobs}
    assert (nodes["2"], nodes["3"], nodes["8+1"]) == (1, 1, 2)
    t = hpcopt.load_trace(p, tz="UTC", sizes="cores", nodes=8, cores_per_node=4)
    cores = {j.id: j.nodes for j in t.jobs}
    assert (cores["1"], cores["2"], cores["3"], cores["8+1"]) == (4, 1, 1, 8)
    assert t.system.nodes == 32
    assert "sizes in cores: the machine is 8 nodes x 4 cores = 32 cores" in t.report.notes
    t = hpcopt.load_trace(p, tz="UTC", sizes="cores")
    assert t.system.nodes == 8  # the largest job
    jc = hpcopt.load_trace(_write(tmp_path, "jobcomp.txt", JOBCOMP), tz="UTC", sizes="cores")
    assert [j.nodes for j in jc.jobs] == [4, 1]
    with pytest.raises(TraceError, match=r"h.txt: sizes='cores' with nodes=8 needs "
                                         r"cores_per_node"):
        hpcopt.load_trace(p, sizes="cores", nodes=8)
    no_ncpus = "\n".join("|".join(f for k, f in enumerate(line.split("|")) if k != 7)
                         for line in REAL.splitlines())
    with pytest.raises(TraceError, match=r"n.txt:1: missing sacct field\(s\) NCPUS \(sizes in "
                                         r"cores\)"):
        hpcopt.load_trace(_write(tmp_path, "n.txt", no_ncpus), sizes="cores")
    with pytest.raises(TraceError, match=r"j.txt:2: missing ProcCnt="):
        hpcopt.load_trace(_write(tmp_path, "j.txt", JOBCOMP.replace(" ProcCnt=1", "")),
                          fmt="jobcomp", sizes="cores")


def test_convert_to_swf_numbers_text_ids_and_writes_the_map(tmp_path):
    t = hpcopt.load_trace(_write(tmp_path, "h.txt", REAL), tz="UTC")
    swf, ids = convert(t, tmp_path / "h.swf", "swf")
    assert ids == tmp_path / "h.swf.ids.csv"
    rows = list(csv.reader(ids.open()))
    assert rows[0] == ["swf_id", "id"]
    assert [r[1] for r in rows[1:]] == [str(j.id) for j in t.jobs]
    back = hpcopt.load_trace(swf)
    assert [j.id for j in back.jobs] == list(range(1, len(t.jobs) + 1))
    for a, b in zip(t.jobs, back.jobs):
        assert (a.submit, a.runtime, a.walltime, a.nodes) == (b.submit, b.runtime, b.walltime,
                                                              b.nodes)
    assert back.system.nodes == t.system.nodes
    assert back.header["partitions"] == "batch=0,shared=1"
    # plain integer ids are kept, no map
    plain = HEAD + "\n".join(line for line in REAL.splitlines()[1:] if line[:2] in ("1|", "2|"))
    t2 = hpcopt.load_trace(_write(tmp_path, "p.txt", plain + "\n"), tz="UTC")
    assert convert(t2, tmp_path / "p.swf", "swf") == [tmp_path / "p.swf"]
    assert [j.id for j in hpcopt.load_trace(tmp_path / "p.swf").jobs] == [1, 2]


def test_convert_keeps_cores_as_cores(tmp_path):
    t = hpcopt.load_trace(_write(tmp_path, "h.txt", REAL), tz="UTC", sizes="cores", nodes=8,
                          cores_per_node=4)
    swf = convert(t, tmp_path / "c.swf", "swf")[0]
    back = hpcopt.load_trace(swf)
    assert back.system.nodes == 32 and back.report.cores_per_node == 1
    assert [j.nodes for j in back.jobs] == [j.nodes for j in t.jobs]
    table = convert(t, tmp_path / "c.csv", "csv")[0]
    again = hpcopt.load_trace(table, nodes=32)
    assert [(j.id, j.nodes, j.walltime) for j in again.jobs] == \
        [(j.id, j.nodes, j.walltime) for j in t.jobs]


def test_trace_convert_command(tmp_path):
    p = _write(tmp_path, "history.txt", REAL)
    out = subprocess.run([str(Path(sys.executable).with_name("hpcopt")), "trace", "convert",
                          str(p), "--to", "swf", str(tmp_path / "h.swf"), "--tz", "UTC"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"wrote {tmp_path / 'h.swf'} (7 jobs) and the id map {tmp_path / 'h.swf.ids.csv'}" \
        in out.stdout
    assert "note: 1 job step line(s) folded into their jobs" in out.stdout
    bad = subprocess.run([str(Path(sys.executable).with_name("hpcopt")), "trace", "convert",
                          str(_write(tmp_path, "b.txt", REAL.replace("T14:21:18", " 14:21"))),
                          "--to", "csv", str(tmp_path / "b.csv")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "b.txt:6: field 'Submit'" in bad.stderr


def test_jobcomp_names_array_tasks_and_hetjob_components_as_sacct_does(tmp_path):
    lines = (  # as the testbed's jobcomp log has them (22.05.8 and 24.11.5 alike)
        "JobId=5 UserId=root(0) JobState=COMPLETED Partition=batch TimeLimit=UNLIMITED "
        "StartTime=2026-11-26T14:24:47 EndTime=2026-11-26T14:24:48 NodeCnt=1 ProcCnt=4 "
        "SubmitTime=2026-11-26T14:24:46 HetJobId=5 HetJobOffset=0\n"
        "JobId=6 UserId=root(0) JobState=COMPLETED Partition=batch TimeLimit=UNLIMITED "
        "StartTime=2026-11-26T14:24:47 EndTime=2026-11-26T14:24:48 NodeCnt=2 ProcCnt=8 "
        "SubmitTime=2026-11-26T14:24:46 HetJobId=5 HetJobOffset=1\n"
        "JobId=12 UserId=root(0) JobState=COMPLETED Partition=batch TimeLimit=525600 "
        "StartTime=2026-11-26T14:24:47 EndTime=2026-11-26T14:24:49 NodeCnt=1 ProcCnt=4 "
        "SubmitTime=2026-11-26T14:24:46 ArrayJobId=8 ArrayTaskId=1\n")
    t = hpcopt.load_trace(_write(tmp_path, "jobcomp.txt", lines), tz="UTC")
    assert sorted(j.id for j in t.jobs) == ["5+0", "5+1", "8_1"]


def test_one_partition_kept(tmp_path):
    p = _write(tmp_path, "h.txt", REAL)
    t = hpcopt.load_trace(p, tz="UTC", partition="shared", sizes="cores", nodes=8,
                          cores_per_node=4)
    assert [j.id for j in t.jobs] == [2, 3] and [j.nodes for j in t.jobs] == [1, 1]
    assert "5 job(s) of other partitions left out (batch: 5)" in t.report.notes
    jc = hpcopt.load_trace(_write(tmp_path, "jobcomp.txt", JOBCOMP), tz="UTC",
                           partition="batch")
    assert [j.id for j in jc.jobs] == [1]
    assert "1 job(s) of other partitions left out (shared: 1)" in jc.report.notes
    with pytest.raises(TraceError, match=r"t.csv: partition= applies to Slurm's sacct"):
        hpcopt.load_trace(_write(tmp_path, "t.csv", "id,submit,runtime,nodes\n1,0,1,1\n"),
                          partition="batch")


def test_simulate_reads_a_shared_partition_in_cores(tmp_path, capsys):
    from hpcopt.cli import main

    p = _write(tmp_path, "h.txt", REAL)
    assert main(["simulate", str(p), "--tz", "UTC", "--sizes", "cores", "--partition",
                 "shared", "--nodes", "8", "--cores-per-node", "4", "--json",
                 "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["job_count"] == 2 and doc["settings"]["nodes"] == 32
    res = hpcopt.simulate(p, tz="UTC", sizes="cores", partition="shared", nodes=8,
                          cores_per_node=4)
    assert res.summary["job_count"] == 2 and res.settings["nodes"] == 32


def test_jobs_csv_carries_user_queue_and_the_partition_names(tmp_path):
    """A Slurm trace's jobs keep who submitted them and where: jobs.csv has user, group and
    queue (codes) and the partition by name."""
    import pandas as pd

    res = hpcopt.simulate(_write(tmp_path, "h.txt", REAL), tz="UTC")
    jobs_csv, _ = res.write(tmp_path / "out")
    df = pd.read_csv(jobs_csv, keep_default_na=False)
    assert list(df.columns[12:16]) == ["user", "group", "queue", "partition"]
    names = dict(zip(df["job_id"].astype(str), df["partition"]))
    assert names["2"] == names["3"] == "shared" and set(names.values()) == {"batch", "shared"}
    assert set(df["group"]) == {-1} and (df["user"] >= 0).all()
    # the same bytes as pandas writes (hpcopt writes the table itself)
    res.jobs.to_csv(tmp_path / "p.csv", index=False)
    assert jobs_csv.read_text() == (tmp_path / "p.csv").read_text()
