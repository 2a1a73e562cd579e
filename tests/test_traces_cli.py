"""Traces through ``hpcopt simulate`` and ``hpcopt.simulate``: the machine and dropped-jobs
lines, text ids and ISO 8601 times to jobs.csv, Batsim JSON, MetaCentrum's extra fields,
generated S1-S7 workloads, and one-line errors for malformed input."""

from __future__ import annotations

import csv
import gzip
import json
import time
from datetime import datetime, timezone

import pytest

import hpcopt
from hpcopt.cli import main

from .conftest import shared_file

ATLAS = "hpc_swf/pwa/LLNL-Atlas-2006-2.1-cln.swf.gz"
KTH = "hpc_swf/pwa/KTH-SP2-1996-2.1-cln.swf.gz"
KOPANSKI = "burst_buffer/kopanski_kth_batsim/KTH-SP2-1996-2.1-cln-io-aware-1000.json.gz"
METACENTRUM = "hpc_swf/metacentrum/wagap-2013-alea-extended.swf.gz"


def _run(capsys, *argv):
    code = main(["simulate", *map(str, argv), "--no-progress"])
    out, err = capsys.readouterr()
    return code, out, err


def test_atlas_console_says_machine_and_dropped_jobs(capsys):
    path = shared_file(ATLAS)
    n = 2500
    records = []
    with gzip.open(path, "rt") as fh:  # count the records without a size here, by hand
        for line in fh:
            if line.strip() and not line.startswith(";"):
                records.append(line.split())
                if len(records) == n:
                    break
    no_size = sum(1 for f in records if float(f[7]) <= 0 and float(f[4]) <= 0)
    assert no_size > 0
    code, out, err = _run(capsys, path, "--jobs", n)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == ("LLNL-Atlas-2006-2.1-cln: 1,152 nodes x 8 cores "
                        "(from the SWF header MaxNodes/MaxProcs)")
    assert lines[1] == f"dropped {no_size:,} of {n:,} jobs: {no_size:,} size unknown (< 1)"
    assert f"{n - no_size:,}" in out  # job_count of the summary table


def test_atlas_cores_per_node_override_on_the_command_line(tmp_path, capsys):
    path = shared_file(ATLAS)
    code, out, _ = _run(capsys, path, "--jobs", 300, "--cores-per-node", 1, "--out", tmp_path)
    assert code == 0
    assert out.splitlines()[0].startswith(
        "LLNL-Atlas-2006-2.1-cln: 9,216 nodes x 1 core (nodes from header MaxProcs; "
        "cores per node cores_per_node=)")
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert doc["settings"]["nodes"] == 9216 and doc["settings"]["cores_per_node"] == 1
    assert doc["cleaning"]["cores_per_node_source"] == "cores_per_node="
    code, out, _ = _run(capsys, path, "--jobs", 300, "--out", tmp_path)
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert (doc["settings"]["nodes"], doc["settings"]["cores_per_node"]) == (1152, 8)
    assert doc["cleaning"]["cores_per_node_source"] == "header MaxProcs/MaxNodes"


def test_text_ids_and_iso_times_end_to_end(tmp_path, monkeypatch):
    monkeypatch.setenv("TZ", "America/New_York")  # a time without offset is UTC, not local
    time.tzset()
    table = tmp_path / "slurm.csv"
    table.write_text(
        "id,submit,runtime,walltime,nodes\n"
        "123_4,2022-01-03T04:05:06Z,100,200,2\n"
        "123_5,2022-01-03T04:05:06Z,50,100,4\n"
        "124,2022-01-03T05:05:07+01:00,30,60,4\n"  # 04:05:07 UTC
        "125,2022-01-03 04:05:10,10,60,1\n"  # no offset: UTC
    )
    t0 = datetime(2022, 1, 3, 4, 5, 6, tzinfo=timezone.utc).timestamp()
    res = hpcopt.simulate(table)
    res.write(tmp_path / "out")
    with open(tmp_path / "out" / "jobs.csv", newline="") as fh:
        rows = {r["job_id"]: r for r in csv.DictReader(fh)}
    assert set(rows) == {"123_4", "123_5", "124", "125"}
    assert [float(rows[k]["submit"]) - t0 for k in ("123_4", "123_5", "124", "125")] == [
        0.0, 0.0, 1.0, 4.0]
    assert all(float(r["start"]) >= float(r["submit"]) for r in rows.values())
    assert float(rows["123_5"]["start"]) == float(rows["123_4"]["end"])  # 2 + 4 > 4 nodes
    assert list(res.jobs["job_id"]) == ["123_4", "123_5", "124", "125"]
    # the same jobs as JSON, ints and text ids mixed: every id becomes text
    doc = [{"id": "a_1", "submit": "2022-01-03T04:05:06Z", "runtime": 5, "nodes": 1},
           {"id": 7, "submit": "2022-01-03T04:05:08Z", "runtime": 5, "nodes": 1}]
    (tmp_path / "j.json").write_text(json.dumps(doc))
    t = hpcopt.load_trace(tmp_path / "j.json")
    assert [j.id for j in t.jobs] == ["a_1", "7"] and t.jobs[1].submit - t0 == 2.0
    # all-int ids stay ints
    (tmp_path / "i.csv").write_text("id,submit,runtime,nodes\n8,0,5,1\n9,1,5,1\n")
    assert [j.id for j in hpcopt.load_trace(tmp_path / "i.csv").jobs] == [8, 9]
    monkeypatch.undo()
    time.tzset()


def test_duplicate_text_ids_are_dropped(tmp_path):
    (tmp_path / "d.csv").write_text("id,submit,runtime,nodes\nx_1,0,5,1\nx_1,1,5,1\nx_2,2,5,1\n")
    t = hpcopt.load_trace(tmp_path / "d.csv")
    assert [j.id for j in t.jobs] == ["x_1", "x_2"] and t.report.dropped["duplicate_id"] == 1


def test_workload_s2_seed_0_is_deterministic(tmp_path, capsys):
    path = shared_file(KTH)
    shared_file(KOPANSKI)  # the burst-buffer pool
    runs = []
    for k, seed in enumerate((0, 0, 1)):
        out = tmp_path / f"run{k}"
        code, text, err = _run(capsys, path, "--jobs", 200, "--workload", "S2", "--seed", seed,
                               "--out", out)
        assert code == 0, err
        runs.append(((out / "jobs.csv").read_text(), text.replace(str(out), "OUT")))
    assert runs[0] == runs[1] and runs[0][0] != runs[2][0]
    assert "workload S2 (seed 0): 150 of 200 jobs ask for burst buffer (500 GB on the system)" \
        in runs[0][1]
    with open(tmp_path / "run0" / "jobs.csv", newline="") as fh:
        bb = [float(r["bb"]) for r in csv.DictReader(fh)]
    assert sum(b > 0 for b in bb) == 150 and max(bb) <= 500
    doc = json.loads((tmp_path / "run0" / "summary.json").read_text())
    assert (doc["settings"]["workload"], doc["settings"]["workload_seed"]) == ("S2", 0)
    assert doc["bb_usage"] > 0


def test_workload_name_is_checked(capsys):
    code, _, err = _run(capsys, shared_file(KTH), "--jobs", 10, "--workload", "S9")
    assert code == 2 and err.count("\n") == 1 and "--workload 'S9': expected one of" in err


def test_batsim_json_via_cli(tmp_path, capsys):
    code, out, err = _run(capsys, shared_file(KOPANSKI), "--jobs", 150, "--out", tmp_path)
    assert code == 0, err
    assert out.splitlines()[0].startswith("KTH-SP2-1996-2.1-cln: 96 nodes x 1 core "
                                          "(nodes from nb_res")
    assert "dropped none of 150 jobs" in out
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert doc["cleaning"]["fmt"] == "batsim" and doc["job_count"] == 150
    assert doc["bb_usage"] > 0  # the 480 GB burst buffer came with the workload
    # a Batsim document under another name, with --format
    tiny = {"nb_res": 4, "jobs": [{"id": "w!1", "subtime": 0, "walltime": 10, "res": 2,
                                   "profile": "p"}],
            "profiles": {"p": {"cpu": 5e9, "bb": 1e9}}}
    (tmp_path / "w.txt").write_text(json.dumps(tiny))
    code, out, err = _run(capsys, tmp_path / "w.txt", "--format", "batsim", "--out", tmp_path)
    assert code == 0, err
    with open(tmp_path / "jobs.csv", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert (row["job_id"], float(row["runtime"]), float(row["bb"])) == ("w!1", 5.0, 2.0)


def test_metacentrum_extra_fields_via_cli(tmp_path, capsys):
    path = shared_file(METACENTRUM)
    code, _, err = _run(capsys, path, "--jobs", 200)
    assert code == 2 and err.count("\n") == 1
    assert ":1: expected 18 fields, got 21" in err and "--extra-fields ignore" in err
    code, out, err = _run(capsys, path, "--jobs", 200, "--extra-fields", "ignore",
                          "--out", tmp_path)
    assert code == 0, err
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert doc["cleaning"]["extra_fields_ignored"] == 200 and doc["job_count"] > 0
    with gzip.open(path, "rt") as fh:  # the first record's id, submit and 64 processors
        first = fh.readline().split()
    with open(tmp_path / "jobs.csv", newline="") as fh:
        rows = {r["job_id"]: r for r in csv.DictReader(fh)}
    row = rows[first[0]]
    assert (float(row["submit"]), int(row["nodes"])) == (float(first[1]), int(first[7]))


@pytest.mark.parametrize("name, text, needle", [
    ("t.csv", "id,submit,runtime,nodes\n1,2022-13-01T00:00:00Z,5,1\n",
     "t.csv:2: column 'submit': expected seconds or an ISO 8601 time"),
    ("t.csv", "id,submit,runtime,nodes\n1.5,0,5,1\n", "t.csv:2: column 'id': expected an "
                                                      "integer"),
    ("t.csv", "id,submit,runtime,nodes\n,0,5,1\n", "t.csv:2: column 'id': missing value"),
    ("t.json", '[{"id": [1], "submit": 0, "runtime": 5, "nodes": 1}]',
     "t.json: job 0: column 'id': expected an integer or a text id, got [1]"),
    ("b.json", '{"nb_res": 4, "jobs": [{"id": 1, "subtime": 0, "walltime": 10, "res": 9, '
               '"profile": "p"}], "profiles": {"p": {"cpu": 1, "bb": 0}}}',
     "b.json: jobs[0]: expected 1 <= res <= 4"),
    ("b.json", '{"nb_res": 4, "jobs": [{"id": 1, "subtime": 0, "walltime": 10, "res": 1, '
               '"profile": "q"}], "profiles": {"p": {"cpu": 1, "bb": 0}}}',
     "b.json: jobs[0]: expected id, subtime, walltime, res and a profile"),
    ("b.json", '{"nb_res": "many", "jobs": [], "profiles": {}}',
     "b.json: expected nb_res an integer"),
    ("s.swf", "; MaxNodes: 4\n1 0 0 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1\n",
     "s.swf:2: expected 18 fields, got 17: field 18 (think time) is missing"),
])
def test_malformed_input_is_one_line(tmp_path, capsys, name, text, needle):
    (tmp_path / name).write_text(text)
    code, _, err = _run(capsys, tmp_path / name)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert needle in err


def test_option_mistakes_are_one_line(tmp_path, capsys):
    p = shared_file(KOPANSKI)
    code, _, err = _run(capsys, p, "--nodes", 10)
    assert code == 2 and "does not apply to a Batsim workload" in err
    (tmp_path / "t.csv").write_text("id,submit,runtime,nodes\n1,0,5,1\n")
    code, _, err = _run(capsys, tmp_path / "t.csv", "--cores-per-node", 4)
    assert code == 2 and "applies to SWF processor counts only" in err
    code, _, err = _run(capsys, tmp_path / "t.csv", "--format", "batsim")
    assert code == 2 and "t.csv:1:1: invalid JSON" in err
    (tmp_path / "t.json").write_text('[{"id": 1, "submit": 0, "runtime": 5, "nodes": 1}]')
    code, _, err = _run(capsys, tmp_path / "t.json", "--format", "batsim")
    assert code == 2 and "t.json: expected a Batsim workload JSON object" in err
    assert _run(capsys, tmp_path / "t.json")[0] == 0  # a job table by default


def test_write_swf_refuses_text_ids(tmp_path):
    from hpcopt.domain import Job
    from hpcopt.errors import TraceError
    from hpcopt.traces import write_swf

    with pytest.raises(TraceError, match="cannot write job id '123_4' to SWF"):
        write_swf([Job("123_4", 0, 1, 1, 1)], tmp_path / "x.swf")
    write_swf([Job("17", 0, 1, 1, 1)], tmp_path / "y.swf")  # an integer as text is fine
    assert hpcopt.load_trace(tmp_path / "y.swf").jobs[0].id == 17
