"""Trace readers: SWF/CSV/JSON parsing, error messages, cleaning counts, real traces."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from hpcopt.domain import Job
from hpcopt.errors import TraceError
from hpcopt.traces import SWF_FIELDS, CleaningReport, Trace, load_trace, write_swf

from .conftest import SHARED_DATA, needs_data

DATA = SHARED_DATA
REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "instances" / "traces" / "demo.swf"


# every cleaning rule once; the comment after each record says what happens to it
TINY_SWF = """\
; Version: 2.2
; Computer: test machine
; MaxNodes: 8
; MaxProcs: 8
; Note: first line
;         continued here
;
; Note: second note

 1   0  5  100  2 -1 -1  2  200 -1  1  1  1 -1  1 -1 -1 -1
 2  10  0  300  4 -1 -1  4  200 -1  0  2  1 -1  1 -1 -1 -1   \n\
 3  20  0   50  1 -1 -1 -1   -1 -1  1  3  1 -1  2 -1 -1 -1
 4  30  0   -1  2 -1 -1  2  100 -1  5  1  1 -1  1 -1 -1 -1
 5  40  0   10 -1 -1 -1 -1  100 -1  5  1  1 -1  1 -1 -1 -1

 6  50  0   10 16 -1 -1 16  100 -1  1  1  1 -1  1 -1 -1 -1
 7  -1  0   10  1 -1 -1  1  100 -1  1  1  1 -1  1 -1 -1 -1
 1  60  0   10  1 -1 -1  1  100 -1  1  1  1 -1  1 -1 -1 -1
 8   5  0    0  8 -1 -1  0    0 -1  1  4  1 -1  1 -1 -1 -1


"""
# 1: kept as is               2: run time 300 capped at requested 200
# 3: size from allocated (1), walltime from run time
# 4: dropped, run time unknown  5: dropped, size unknown    6: dropped, 16 > 8 nodes
# 7: dropped, submit unknown    second 1: dropped, duplicate id
# 8: size from allocated (8), walltime from run time (0), submitted before 2 (sort)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _line_of(text: str, starts: str) -> int:
    for i, line in enumerate(text.split("\n"), start=1):
        if line.strip().startswith(starts):
            return i
    raise AssertionError(starts)


# ----------------------------------------------------------------------------------- SWF


def test_swf_every_cleaning_rule(tmp_path):
    p = _write(tmp_path, "tiny.swf", TINY_SWF)
    t = load_trace(p)
    assert isinstance(t, Trace) and isinstance(t.report, CleaningReport)
    assert [j.id for j in t.jobs] == [1, 8, 2, 3]  # sorted by (submit, id)
    j1, j8, j2, j3 = t.jobs
    assert j1 == Job(id=1, submit=0.0, runtime=100.0, walltime=200.0, nodes=2, user=1, queue=1)
    assert (j2.runtime, j2.walltime, j2.nodes, j2.user) == (200.0, 200.0, 4, 2)
    assert (j3.runtime, j3.walltime, j3.nodes, j3.queue) == (50.0, 50.0, 1, 2)
    assert (j8.submit, j8.runtime, j8.walltime, j8.nodes) == (5.0, 0.0, 0.0, 8)
    r = t.report
    assert r.records_read == 9
    assert r.kept == 4 == len(t)
    assert dict(r.dropped) == {
        "runtime_unknown": 1,
        "submit_unknown": 1,
        "size_unknown": 1,
        "too_large": 1,
        "duplicate_id": 1,
    }
    assert r.dropped_total == 5
    assert r.runtime_capped == 1
    assert r.walltime_from_runtime == 2
    assert r.size_from_allocated == 2
    assert (r.system_nodes, r.system_source) == (8, "header MaxProcs")
    assert t.system.nodes == 8 and t.system.name == "tiny"
    assert r.rebase_offset == 0.0 and r.max_jobs is None
    d = r.to_dict()
    assert d["kept"] == 4 and d["dropped"]["too_large"] == 1 and d["dropped_total"] == 5
    json.dumps(d)  # serialisable
    s = str(r)
    assert "9 records read, 4 kept, 5 dropped" in s
    assert "capped at walltime 1" in s and "8 nodes" in s


def test_swf_header(tmp_path):
    t = load_trace(_write(tmp_path, "tiny.swf", TINY_SWF))
    h = t.header
    assert h["Version"] == "2.2"
    assert h["Computer"] == "test machine"
    assert h["MaxNodes"] == "8" and h["MaxProcs"] == "8"
    assert h["Note"] == "first line\ncontinued here\nsecond note"
    assert h.max_nodes == 8 and h.max_procs == 8 and h.unix_start_time is None


def test_swf_bad_header_value(tmp_path):
    p = _write(tmp_path, "h.swf", "; MaxProcs: lots\n1 0 0 1 1 -1 -1 1 1 -1 1 1 1 -1 1 -1 -1 -1\n")
    with pytest.raises(TraceError,
                       match=r"h\.swf: header MaxProcs: expected an integer, got 'lots'"):
        load_trace(p)


def test_swf_crlf_and_trailing_space(tmp_path):
    p = tmp_path / "crlf.swf"
    p.write_bytes(TINY_SWF.replace("\n", " \r\n").encode())
    t = load_trace(p)
    ref = load_trace(_write(tmp_path, "tiny.swf", TINY_SWF))
    assert t.jobs == ref.jobs and t.report.dropped == ref.report.dropped
    assert t.header["Note"] == ref.header["Note"]


def test_swf_gzip_by_magic_bytes(tmp_path):
    ref = load_trace(_write(tmp_path, "tiny.swf", TINY_SWF)).jobs
    gz = tmp_path / "tiny.swf.gz"
    gz.write_bytes(gzip.compress(TINY_SWF.encode()))
    assert load_trace(gz).jobs == ref
    disguised = tmp_path / "gzipped.swf"  # gzip content, no .gz suffix
    disguised.write_bytes(gzip.compress(TINY_SWF.encode()))
    assert load_trace(disguised).jobs == ref
    plain = tmp_path / "plain.swf.gz"  # .gz suffix, plain content
    plain.write_text(TINY_SWF)
    assert load_trace(plain).jobs == ref


def test_swf_too_few_fields(tmp_path):
    text = TINY_SWF.replace(" 3  20  0   50  1 -1 -1 -1   -1 -1  1  3  1 -1  2 -1 -1 -1",
                            " 3  20  0   50  1 -1 -1 -1   -1 -1  1  3  1 -1  2 -1 -1")
    p = _write(tmp_path, "few.swf", text)
    line = _line_of(text, "3  20")
    with pytest.raises(TraceError) as err:
        load_trace(p)
    msg = str(err.value)
    assert msg.startswith(f"{p}:{line}: ")
    assert "expected 18 fields, got 17" in msg and "field 18 (think time)" in msg
    assert "\n" not in msg


def test_swf_too_many_fields_and_ignore(tmp_path):
    text = TINY_SWF.replace(" 1 -1 -1 -1\n 2  10", " 1 -1 -1 -1 {1,2} q_1d\n 2  10")
    assert text != TINY_SWF
    p = _write(tmp_path, "many.swf", text)
    line = _line_of(text, "1   0  5")
    with pytest.raises(TraceError, match=rf"many\.swf:{line}: expected 18 fields, got 20: "
                                         r"field 19 is extra"):
        load_trace(p)
    t = load_trace(p, extra_fields="ignore")
    assert t.report.extra_fields_ignored == 1
    assert t.jobs == load_trace(_write(tmp_path, "tiny.swf", TINY_SWF)).jobs
    with pytest.raises(TraceError, match="extra_fields"):
        load_trace(p, extra_fields="drop")


def test_swf_non_numeric_field(tmp_path):
    text = TINY_SWF.replace(" 2  10  0  300", " 2  10  0  abc")
    p = _write(tmp_path, "KTH.swf", text)
    line = _line_of(text, "2  10")
    with pytest.raises(TraceError) as err:
        load_trace(p)
    assert str(err.value) == f"{p}:{line}: field 4 (run time): expected a number, got 'abc'"


@pytest.mark.parametrize(
    ("token", "field", "expect"),
    [
        ("nan", 9, "expected a number, got 'nan'"),
        ("inf", 2, "expected a number, got 'inf'"),
        ("1e999", 4, "expected a finite number, got '1e999'"),
        ("1.5", 1, "expected an integer, got '1.5'"),
        ("0x10", 5, "expected a number, got '0x10'"),
        ("1_0", 12, "expected a number, got '1_0'"),
    ],
)
def test_swf_bad_values(tmp_path, token, field, expect):
    fields = "8 5 0 0 8 -1 -1 0 0 -1 1 4 1 -1 1 -1 -1 -1".split()
    fields[field - 1] = token
    text = TINY_SWF.replace(" 8   5  0    0  8 -1 -1  0    0 -1  1  4  1 -1  1 -1 -1 -1",
                            " ".join(fields))
    p = _write(tmp_path, "bad.swf", text)
    line = _line_of(text, " ".join(fields[:2]))
    with pytest.raises(TraceError) as err:
        load_trace(p)
    assert str(err.value) == f"{p}:{line}: field {field} ({SWF_FIELDS[field - 1]}): {expect}"


def test_swf_exponent_and_decimals_accepted(tmp_path):
    p = _write(tmp_path, "e.swf",
               "1 0.5 -1 1.2e2 2 3.5 -1 2 2E2 -1 1 1 1 -1 1 -1 -1 -1\n")
    (j,) = load_trace(p).jobs
    assert (j.submit, j.runtime, j.walltime, j.nodes) == (0.5, 120.0, 200.0, 2)


def test_cores_per_node(tmp_path):
    text = (
        "; MaxNodes: 4\n; MaxProcs: 16\n"
        " 1 0 0 10 5 -1 -1  5 20 -1 1 1 1 -1 1 -1 -1 -1\n"  # 5 procs -> 2 nodes
        " 2 1 0 10 4 -1 -1  4 20 -1 1 1 1 -1 1 -1 -1 -1\n"  # 4 -> 1
        " 3 2 0 10 1 -1 -1  1 20 -1 1 1 1 -1 1 -1 -1 -1\n"  # 1 -> 1
        " 4 3 0 10 16 -1 -1 16 20 -1 1 1 1 -1 1 -1 -1 -1\n"  # 16 -> 4
        " 5 4 0 10 17 -1 -1 17 20 -1 1 1 1 -1 1 -1 -1 -1\n"  # 17 -> 5 > 4: dropped
    )
    p = _write(tmp_path, "cpn.swf", text)
    t = load_trace(p, cores_per_node=4)
    assert [j.nodes for j in t.jobs] == [2, 1, 1, 4]
    assert t.system.nodes == 4 and t.report.system_source == "header MaxProcs // 4"
    assert t.report.dropped["too_large"] == 1 and t.report.cores_per_node == 4
    assert t.report.notes == ()
    # default: 16 / 4 = 4 cores per node from the header, the same as cores_per_node=4
    t4 = load_trace(p)
    assert t4.jobs == t.jobs and t4.system.nodes == 4
    assert (t4.report.cores_per_node, t4.report.cores_per_node_source) == (
        4, "header MaxProcs/MaxNodes")
    assert t4.report.system_source == "header MaxNodes"
    # cores_per_node=1 overrides: processors are the unit, MaxProcs = 16 of them
    t1 = load_trace(p, cores_per_node=1)
    assert [j.nodes for j in t1.jobs] == [5, 4, 1, 16] and t1.system.nodes == 16
    assert t1.report.cores_per_node_source == "cores_per_node="
    # header disagreeing with cores_per_node is noted
    t8 = load_trace(p, cores_per_node=8)
    assert t8.system.nodes == 2 and "MaxNodes 4 differs" in t8.report.notes[0]
    with pytest.raises(TraceError, match="cores_per_node"):
        load_trace(p, cores_per_node=0)


def test_system_size_sources(tmp_path):
    rec = (" 1 0 0 10 3 -1 -1 3 20 -1 1 1 1 -1 1 -1 -1 -1\n"
           " 2 1 0 10 6 -1 -1 6 20 -1 1 1 1 -1 1 -1 -1 -1\n")
    only_nodes = _write(tmp_path, "n.swf", "; MaxNodes: 32\n; MaxProcs: -1\n" + rec)
    t = load_trace(only_nodes)
    assert (t.system.nodes, t.report.system_source) == (32, "header MaxNodes")
    bare = _write(tmp_path, "bare.swf", rec)
    t = load_trace(bare)
    assert (t.system.nodes, t.report.system_source) == (6, "largest job")
    t = load_trace(bare, nodes=5)
    assert (t.system.nodes, t.report.system_source) == (5, "nodes=")
    assert [j.id for j in t.jobs] == [1] and t.report.dropped["too_large"] == 1
    unsized = _write(tmp_path, "unsized.swf", " 1 0 0 10 -1 -1 -1 -1 20 -1 1 1 1 -1 1 -1 -1 -1\n")
    with pytest.raises(TraceError, match=r"unsized\.swf: no system size.*pass nodes="):
        load_trace(unsized)
    assert load_trace(unsized, nodes=4).report.dropped["size_unknown"] == 1
    with pytest.raises(TraceError, match="nodes must be a positive integer"):
        load_trace(bare, nodes=0)


def test_max_jobs_is_file_order_before_cleaning(tmp_path):
    p = _write(tmp_path, "tiny.swf", TINY_SWF)
    t = load_trace(p, max_jobs=4)  # records 1, 2, 3, 4 (4 is dropped)
    assert t.report.records_read == 4 and t.report.max_jobs == 4
    assert [j.id for j in t.jobs] == [1, 2, 3]
    assert t.report.dropped["runtime_unknown"] == 1
    t = load_trace(p, max_jobs=0)
    assert t.jobs == () and t.system.nodes == 8
    assert load_trace(p, max_jobs=100).report.records_read == 9


def test_rebase(tmp_path):
    text = TINY_SWF.replace(" 1   0  5", " 1 1000  5").replace(" 8   5  0", " 8 1005  0")
    text = text.replace(" 2  10  0", " 2 1010  0").replace(" 3  20  0", " 3 1020  0")
    p = _write(tmp_path, "late.swf", text)
    assert load_trace(p).jobs[0].submit == 1000.0
    t = load_trace(p, rebase=True)
    assert [j.submit for j in t.jobs] == [0.0, 5.0, 10.0, 20.0]
    assert t.report.rebase_offset == 1000.0


def test_empty_and_missing_files(tmp_path):
    with pytest.raises(TraceError, match="no system size"):
        load_trace(_write(tmp_path, "empty.swf", ""))
    t = load_trace(_write(tmp_path, "hdr.swf", "; MaxNodes: 10\n"))
    assert t.jobs == () and t.system.nodes == 10 and t.report.records_read == 0
    with pytest.raises(TraceError, match=r"nope\.swf: cannot read trace"):
        load_trace(tmp_path / "nope.swf")
    with pytest.raises(TraceError, match="cannot tell the trace format"):
        load_trace(_write(tmp_path, "trace.txt", TINY_SWF))
    assert len(load_trace(tmp_path / "trace.txt", fmt="swf")) == 4
    with pytest.raises(TraceError, match="unknown trace format 'xml'"):
        load_trace(tmp_path / "trace.txt", fmt="xml")


def test_write_swf_round_trip(tmp_path):
    jobs = [
        Job(id=3, submit=0.0, runtime=10.0, walltime=60.0, nodes=2, user=7, queue=1),
        Job(id=4, submit=2.5, runtime=60.0, walltime=60.0, nodes=1),
        Job(id=5, submit=2.5, runtime=0.25, walltime=120.0, nodes=4, queue=2),
    ]
    header = {"Computer": "unit test", "MaxNodes": 4, "MaxProcs": 4, "Note": "a\nb"}
    for name in ("rt.swf", "rt.swf.gz"):
        path = write_swf(jobs, tmp_path / name, header=header)
        t = load_trace(path)
        assert t.jobs == tuple(jobs)
        assert t.header["Version"] == "2.2" and t.header["Note"] == "a\nb"
        assert t.system.nodes == 4
    assert (tmp_path / "rt.swf.gz").read_bytes()[:2] == b"\x1f\x8b"
    # processors = nodes * cores_per_node; read back with the same factor
    write_swf(jobs, tmp_path / "c.swf", header={"MaxProcs": 16}, cores_per_node=4)
    assert load_trace(tmp_path / "c.swf", cores_per_node=4).jobs == tuple(jobs)


def test_to_frame(tmp_path):
    t = load_trace(_write(tmp_path, "tiny.swf", TINY_SWF))
    df = t.to_frame()
    assert list(df["id"]) == [1, 8, 2, 3]
    assert list(df["runtime"]) == [100.0, 0.0, 200.0, 50.0]
    assert {"submit", "walltime", "nodes", "user", "queue", "bb", "ssd"} <= set(df.columns)
    empty = load_trace(_write(tmp_path, "hdr.swf", "; MaxNodes: 10\n")).to_frame()
    assert len(empty) == 0 and "nodes" in empty.columns


# -------------------------------------------------------------------------------- tables

CSV_TEXT = """\
id,submit,runtime,walltime,nodes,bb,ssd,priority,user,queue,comment
1,0,100,200,2,10.5,,3,7,1,ok
2,5,300,200,4,,,,,,capped
3,7,50,,1,,128,,,,no walltime
4,9,-1,100,2,,,,,,unknown runtime
5,11,10,100,0,,,,,,size 0
"""


def test_csv_table(tmp_path):
    t = load_trace(_write(tmp_path, "jobs.csv", CSV_TEXT), nodes=4)
    assert [j.id for j in t.jobs] == [1, 2, 3]
    j1, j2, j3 = t.jobs
    assert j1 == Job(id=1, submit=0.0, runtime=100.0, walltime=200.0, nodes=2, bb=10.5,
                     priority=3, user=7, queue=1)
    assert (j2.runtime, j2.walltime, j2.user, j2.queue) == (200.0, 200.0, -1, -1)
    assert (j3.walltime, j3.ssd) == (50.0, 128.0)
    r = t.report
    assert r.fmt == "csv" and r.records_read == 5 and r.kept == 3
    assert r.dropped["runtime_unknown"] == 1 and r.dropped["size_unknown"] == 1
    assert (r.runtime_capped, r.walltime_from_runtime, r.size_from_allocated) == (1, 1, 0)
    assert r.ignored_columns == ("comment",)
    assert (r.system_nodes, r.system_source) == (4, "nodes=")
    assert load_trace(tmp_path / "jobs.csv").system.nodes == 4  # largest job
    assert load_trace(tmp_path / "jobs.csv", max_jobs=2).report.records_read == 2


def test_csv_errors(tmp_path):
    bad = CSV_TEXT.replace("2,5,300,200", "2,5,x,200")
    p = _write(tmp_path, "bad.csv", bad)
    with pytest.raises(TraceError) as err:
        load_trace(p)
    assert str(err.value) == f"{p}:3: column 'runtime': expected a number, got 'x'"
    p = _write(tmp_path, "frac.csv", CSV_TEXT.replace("3,7,50,,1,", "3,7,50,,1.5,"))
    with pytest.raises(TraceError, match=r"frac\.csv:4: column 'nodes': expected an integer"):
        load_trace(p)
    p = _write(tmp_path, "short.csv", CSV_TEXT.replace("5,11,10,100,0,,,,,,size 0", "5,11,10"))
    with pytest.raises(TraceError, match=r"short\.csv:6: expected 11 columns, got 3"):
        load_trace(p)
    p = _write(tmp_path, "nocol.csv", "id,submit,nodes\n1,0,1\n")
    with pytest.raises(TraceError, match=r"nocol\.csv:1: missing column\(s\) 'runtime'"):
        load_trace(p)
    p = _write(tmp_path, "empty_req.csv", "id,submit,runtime,nodes\n1,,5,1\n")
    with pytest.raises(TraceError, match=r"empty_req\.csv:2: column 'submit': missing value"):
        load_trace(p)
    with pytest.raises(TraceError, match="cores_per_node"):
        load_trace(tmp_path / "empty_req.csv", cores_per_node=2)


def test_json_tables(tmp_path):
    rows = [
        {"id": 1, "submit": 0, "runtime": 100, "walltime": 200, "nodes": 2, "bb": 5},
        {"id": 2, "submit": 5, "runtime": 300, "walltime": 200, "nodes": 4, "user": 3},
        {"id": 3, "submit": 7, "runtime": 50, "walltime": None, "nodes": 1, "extra": "x"},
    ]
    p = tmp_path / "jobs.json"
    p.write_text(json.dumps(rows))
    t = load_trace(p)
    assert [j.id for j in t.jobs] == [1, 2, 3] and t.system.nodes == 4
    assert t.jobs[0].bb == 5.0 and t.jobs[1].user == 3 and t.jobs[2].walltime == 50.0
    assert (t.report.runtime_capped, t.report.walltime_from_runtime) == (1, 1)
    assert t.report.ignored_columns == ("extra",)
    q = tmp_path / "obj.json.gz"
    q.write_bytes(gzip.compress(json.dumps({"MaxNodes": 16, "name": "x", "jobs": rows}).encode()))
    t2 = load_trace(q)
    assert t2.jobs == t.jobs and t2.system.nodes == 16 and t2.header["MaxNodes"] == "16"


def test_json_errors(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps([{"id": 1, "submit": 0, "runtime": 1, "nodes": 1},
                             {"id": 2, "submit": 0, "runtime": 1, "nodes": "many"}]))
    with pytest.raises(TraceError) as err:
        load_trace(p)
    assert str(err.value) == f"{p}: job 1: column 'nodes': expected a number, got 'many'"
    p.write_text(json.dumps([{"id": 1, "submit": 0, "runtime": 1, "nodes": 1},
                             {"id": 2, "submit": 0, "nodes": 1}]))
    with pytest.raises(TraceError, match=r"bad\.json: job 1: column 'runtime': missing key"):
        load_trace(p)
    p.write_text('[{"id": 1,\n "submit": }]')
    with pytest.raises(TraceError, match=r"bad\.json:2:12: invalid JSON"):
        load_trace(p)
    p.write_text('{"rows": []}')
    with pytest.raises(TraceError, match="no 'jobs' key"):
        load_trace(p)
    p.write_text('[{"id": true, "submit": 0, "runtime": 1, "nodes": 1}]')
    with pytest.raises(TraceError, match="column 'id': expected an integer or a text id, got True"):
        load_trace(p)


# --------------------------------------------------------------------- real and bundled data


@needs_data("hpc_swf/pwa/KTH-SP2-1996-2.1-cln.swf.gz")
def test_kth_sp2():
    t = load_trace(DATA / "hpc_swf" / "pwa" / "KTH-SP2-1996-2.1-cln.swf.gz")
    r = t.report
    assert r.records_read == 28476
    assert r.kept == 28475 == len(t.jobs)
    assert dict(r.dropped) == {"runtime_unknown": 0, "submit_unknown": 0, "size_unknown": 1,
                               "too_large": 0, "duplicate_id": 0}
    assert (r.runtime_capped, r.walltime_from_runtime, r.size_from_allocated) == (475, 0, 0)
    assert t.system.nodes == 100 and r.system_source == "header MaxProcs"
    assert t.header.max_nodes == 100 and t.header.max_procs == 100
    assert t.header.unix_start_time == 843480031
    assert t.jobs[0].id == 15 and t.jobs[0].submit == 599850.0
    subs = [(j.submit, j.id) for j in t.jobs]
    assert subs == sorted(subs)
    assert all(1 <= j.nodes <= 100 and j.runtime <= j.walltime for j in t.jobs)


@needs_data("hpc_swf/pwa/KTH-SP2-1996-2.1-cln.swf.gz")
def test_fast_path_used_and_equal_to_reference_pass(monkeypatch):
    import hpcopt.traces.swf as traces

    path = DATA / "hpc_swf" / "pwa" / "KTH-SP2-1996-2.1-cln.swf.gz"
    # extra_fields="ignore" always takes the line-by-line reference pass
    slow = load_trace(path, max_jobs=3000, extra_fields="ignore")

    def no_slow_pass(*args, **kwargs):
        raise AssertionError("clean SWF input should not need the line-by-line pass")

    monkeypatch.setattr(traces, "_swf_slow", no_slow_pass)
    fast = load_trace(path, max_jobs=3000)
    assert fast.jobs == slow.jobs and fast.report.dropped == slow.report.dropped


@needs_data("hpc_swf/lublin_model/lublin_256.swf.gz")
def test_lublin_256_walltime_from_runtime():
    t = load_trace(DATA / "hpc_swf" / "lublin_model" / "lublin_256.swf.gz")
    r = t.report
    assert (r.records_read, r.kept, r.dropped_total) == (10000, 10000, 0)
    assert r.walltime_from_runtime == 10000 and r.size_from_allocated == 10000
    assert r.runtime_capped == 0
    assert t.system.nodes == 256 and r.system_source == "header MaxNodes"
    assert all(j.walltime == j.runtime for j in t.jobs)


@needs_data("hpc_swf/alcf/theta_2022.swf.gz")
def test_theta_2022_runtime_capped():
    t = load_trace(DATA / "hpc_swf" / "alcf" / "theta_2022.swf.gz")
    r = t.report
    assert (r.records_read, r.kept, r.dropped_total) == (23911, 23911, 0)
    assert r.runtime_capped == 6264
    assert r.walltime_from_runtime == 0
    assert t.system.nodes == 4360
    assert t.jobs[0].submit > 1.6e9  # epoch seconds kept as they are (rebase=False)
    assert load_trace(DATA / "hpc_swf" / "alcf" / "theta_2022.swf.gz", rebase=True,
                      max_jobs=10).jobs[0].submit == 0.0


@needs_data("hpc_swf/metacentrum/wagap-2013-alea-extended.swf.gz")
def test_extended_swf_needs_ignore():
    p = DATA / "hpc_swf" / "metacentrum" / "wagap-2013-alea-extended.swf.gz"
    with pytest.raises(TraceError, match=r"wagap-2013-alea-extended\.swf\.gz:1: expected 18 "
                                         r"fields, got 21"):
        load_trace(p, max_jobs=50)
    t = load_trace(p, max_jobs=50, extra_fields="ignore")
    assert t.report.records_read == 50 and t.report.extra_fields_ignored == 50


def test_demo_trace():
    t = load_trace(DEMO)
    r = t.report
    assert (r.records_read, r.kept, r.dropped_total) == (400, 400, 0)
    assert (r.runtime_capped, r.walltime_from_runtime) == (0, 0)
    assert t.system.nodes == 64
    assert t.header.max_nodes == 64 and "SYNTHETIC" in t.header["Installation"]
    assert all(60 <= j.runtime <= 4 * 3600 and j.walltime >= j.runtime for j in t.jobs)
    span = t.jobs[-1].submit - t.jobs[0].submit
    load = sum(j.nodes * j.runtime for j in t.jobs) / (64 * span)
    assert 0.8 <= load <= 0.9
