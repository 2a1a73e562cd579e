"""SWF headers decide the machine: cores per node = MaxProcs / MaxNodes (LLNL-Atlas), checked
against the raw SWF lines read here independently; overrides; the traces that keep 1."""

from __future__ import annotations

import gzip
import math
import re

import pytest

from hpcopt.traces import load_trace

from .conftest import shared_file

ATLAS = "hpc_swf/pwa/LLNL-Atlas-2006-2.1-cln.swf.gz"
N = 3000


def _raw_records(path, n):
    """Header dict and the first ``n`` records of an SWF file, split by hand."""
    header, records = {}, []
    with gzip.open(path, "rt") as fh:
        for line in fh:
            if line.startswith(";"):
                m = re.match(r";\s*(\w+):\s*(.*)", line)
                if m:
                    header.setdefault(m.group(1), m.group(2).strip())
            elif line.strip():
                records.append([float(x) for x in line.split()])
                if len(records) == n:
                    break
    return header, records


def test_atlas_is_1152_nodes_of_8_cores_and_requests_become_nodes():
    path = shared_file(ATLAS)
    header, raw = _raw_records(path, N)
    assert (header["MaxNodes"], header["MaxProcs"]) == ("1152", "9216")
    t = load_trace(path, max_jobs=N)
    r = t.report
    assert t.system.nodes == 1152 and r.system_nodes == 1152
    assert (r.cores_per_node, r.cores_per_node_source) == (8, "header MaxProcs/MaxNodes")
    assert r.system_source == "header MaxNodes"
    assert r.to_dict()["cores_per_node"] == 8
    assert r.machine_text() == "1,152 nodes x 8 cores (from the SWF header MaxNodes/MaxProcs)"
    jobs = {j.id: j for j in t.jobs}
    checked = 0
    for rec in raw[::37]:  # a sample of the raw lines: requested processors, else allocated
        procs = rec[7] if rec[7] > 0 else rec[4]
        if procs <= 0 or rec[3] < 0:
            assert int(rec[0]) not in jobs
            continue
        assert jobs[int(rec[0])].nodes == math.ceil(procs / 8), rec
        checked += 1
    assert checked > 50
    # a 64-processor request takes 8 nodes, the biggest one fits the 1,152 nodes
    big = max(raw, key=lambda rec: rec[7])
    assert jobs[int(big[0])].nodes == math.ceil(big[7] / 8) <= 1152
    # dropped: exactly the records without a size (Atlas has no run time < 0)
    no_size = sum(1 for rec in raw if rec[7] <= 0 and rec[4] <= 0)
    assert r.dropped_total == r.dropped["size_unknown"] == no_size > 0
    assert r.kept == N - no_size


def test_cores_per_node_overrides_the_header():
    path = shared_file(ATLAS)
    _, raw = _raw_records(path, 400)
    procs = {int(rec[0]): rec[7] if rec[7] > 0 else rec[4] for rec in raw}
    one = load_trace(path, max_jobs=400, cores_per_node=1)  # the old meaning: processors
    assert one.system.nodes == 9216 and one.report.cores_per_node_source == "cores_per_node="
    assert all(j.nodes == procs[j.id] for j in one.jobs)
    four = load_trace(path, max_jobs=400, cores_per_node=4)
    assert four.system.nodes == 2304 and four.report.system_source == "header MaxProcs // 4"
    assert all(j.nodes == math.ceil(procs[j.id] / 4) for j in four.jobs)
    assert "MaxNodes 1152 differs" in four.report.notes[0]
    assert load_trace(path, max_jobs=400, nodes=500).system.nodes == 500  # still 8 cores/node


@pytest.mark.parametrize("relpath, nodes, source", [
    ("hpc_swf/pwa/KTH-SP2-1996-2.1-cln.swf.gz", 100, "default: header MaxNodes = MaxProcs"),
    ("hpc_swf/pwa/NASA-iPSC-1993-3.1-cln.swf.gz", 128, "default: header MaxNodes = MaxProcs"),
    ("hpc_swf/pwa_subsets/HPC2N-2002-2.2-alea-subset.swf.gz", 240,
     "default: header MaxNodes = MaxProcs"),
    ("hpc_swf/alcf/theta_2022.swf.gz", 4360, "default: header MaxNodes = MaxProcs"),
    ("hpc_swf/lublin_model/lublin_256.swf.gz", 256, "default: the header has only MaxNodes"),
    ("hpc_swf/lublin_model/lublin-aaroh.swf.gz", 256, "default: the header has only MaxNodes"),
])
def test_other_shared_traces_keep_one_core_per_node(relpath, nodes, source):
    path = shared_file(relpath)
    _, raw = _raw_records(path, 300)
    t = load_trace(path, max_jobs=300)
    assert (t.system.nodes, t.report.cores_per_node, t.report.cores_per_node_source) == (
        nodes, 1, source)
    procs = {int(rec[0]): rec[7] if rec[7] > 0 else rec[4] for rec in raw}
    assert all(j.nodes == procs[j.id] for j in t.jobs)


def test_metacentrum_has_no_header():
    t = load_trace(shared_file("hpc_swf/metacentrum/wagap-2013-alea-extended.swf.gz"),
                   max_jobs=300, extra_fields="ignore")
    assert t.report.cores_per_node == 1
    assert t.report.cores_per_node_source == "default: no MaxNodes/MaxProcs in the header"
    assert t.report.system_source == "largest job"


def test_header_that_does_not_divide_keeps_processors(tmp_path):
    p = tmp_path / "odd.swf"
    p.write_text("; MaxNodes: 30\n; MaxProcs: 100\n"
                 " 1 0 0 10 7 -1 -1 7 20 -1 1 1 1 -1 1 -1 -1 -1\n")
    t = load_trace(p)
    assert (t.system.nodes, t.report.cores_per_node, t.jobs[0].nodes) == (100, 1, 7)
    assert t.report.cores_per_node_source == (
        "default: header MaxProcs 100 is not a multiple of MaxNodes 30")
    assert "pass cores_per_node" in t.report.notes[0]
    # fewer processors than nodes: also not a multiple, processors stay the unit
    p.write_text("; MaxNodes: 64\n; MaxProcs: 32\n"
                 " 1 0 0 10 7 -1 -1 7 20 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert load_trace(p).system.nodes == 32
    t = load_trace(p, cores_per_node=2)  # the override still applies
    assert (t.system.nodes, t.jobs[0].nodes) == (16, 4)


def test_tables_take_no_cores_per_node(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("id,submit,runtime,nodes\n1,0,5,3\n")
    t = load_trace(p)
    assert (t.report.cores_per_node, t.report.cores_per_node_source) == (
        1, "default: csv sizes are nodes")
    assert load_trace(p, cores_per_node=1).jobs == t.jobs
    with pytest.raises(Exception, match="applies to SWF processor counts only"):
        load_trace(p, cores_per_node=4)
