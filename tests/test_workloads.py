"""Burst-buffer workloads: the Kopanski Batsim reader, SWF with extra columns, S1-S7."""

from __future__ import annotations

import numpy as np
import pytest

from hpcopt import load_trace, simulate
from hpcopt.errors import TraceError
from hpcopt.workloads.burst_buffer import (
    KOPANSKI,
    bb_system,
    load_batsim,
    load_bb_swf,
    make_workload,
    write_bb_swf,
)

from .conftest import shared_file

KTH = "hpc_swf/pwa/KTH-SP2-1996-2.1-cln.swf.gz"


def test_kopanski_workload_loads_with_its_burst_buffer():
    trace = load_batsim(shared_file(KOPANSKI))
    assert len(trace.jobs) == 1000 and trace.system.nodes == 96 and trace.system.bb == 480
    assert all(0 < j.bb <= 480 and j.runtime <= j.walltime for j in trace.jobs)
    first = min(trace.jobs, key=lambda j: j.id)
    assert first.id == 15 and first.nodes == 4 and first.bb == pytest.approx(15.275, abs=1e-3)
    assert simulate(trace, policy="bbsched").summary["bb_usage"] > 0


@pytest.mark.parametrize("name, share", [("S1", 0.5), ("S2", 0.75), ("S3", 0.5), ("S4", 0.75)])
def test_burst_buffer_workloads_follow_the_recipe(name, share):
    shared_file(KOPANSKI)
    jobs = load_trace(shared_file(KTH), max_jobs=400).jobs
    system = bb_system(100)
    out = make_workload(jobs, name, system=system, seed=3)
    bb = np.array([j.bb for j in out])
    assert (bb > 0).mean() == pytest.approx(share, abs=0.01)
    threshold = (5e3 if name in ("S1", "S2") else 20e3) / 2.16e6 * system.bb
    assert bb[bb > 0].min() > threshold and bb.max() <= system.bb
    assert [j.bb for j in make_workload(jobs, name, system=system, seed=3)] == bb.tolist()
    assert [j.bb for j in make_workload(jobs, name, system=system, seed=4)] != bb.tolist()


@pytest.mark.parametrize("name, low", [("S5", 0.8), ("S6", 0.5), ("S7", 0.2)])
def test_ssd_workloads_split_requests_and_run(name, low):
    shared_file(KOPANSKI)
    jobs = load_trace(shared_file(KTH), max_jobs=300).jobs
    system = bb_system(100, ssd=True)
    out = make_workload(jobs, name, system=system, seed=1)
    ssd = np.array([j.ssd for j in out])
    assert ssd.max() <= 256 and (ssd <= 128).mean() == pytest.approx(low, abs=0.07)
    assert all(j.ssd <= 128 for j in out if j.nodes > 50)
    summary = simulate(out, system=system, policy="bbsched").summary
    assert 0 < summary["ssd_usage"] <= 1 and summary["wasted_ssd"] >= 0


def test_unknown_workload_and_missing_resources_are_one_line_errors():
    jobs = list(load_trace(shared_file(KTH), max_jobs=10).jobs)
    with pytest.raises(TraceError, match="unknown workload 'S9'; expected one of"):
        make_workload(jobs, "S9", system=bb_system(100))
    with pytest.raises(TraceError, match="256 GB SSD"):
        make_workload(jobs, "S5", system=bb_system(100), pool=[0.1])


def test_swf_with_burst_buffer_columns_round_trips_and_names_bad_fields(tmp_path):
    jobs = make_workload(load_trace(shared_file(KTH), max_jobs=50).jobs, "S6",
                         system=bb_system(100, ssd=True), seed=2, pool=[0.05, 0.2])
    path = write_bb_swf(jobs, tmp_path / "w.swf")
    back = load_bb_swf(path, nodes=100)
    assert [(j.id, j.bb, j.ssd) for j in back.jobs] == [(j.id, j.bb, j.ssd) for j in jobs]
    lines = path.read_text().splitlines()
    lines[3] = lines[3].rsplit(" ", 2)[0] + " x 5"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError, match=r"w.swf:4: field 19 \(burst buffer GB\)"):
        load_bb_swf(path, nodes=100)
