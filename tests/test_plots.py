"""``hpcopt plot``: each kind writes a valid PNG with the expected axes, and the numbers drawn
agree with what the simulator itself reports (not pixel comparisons)."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

import hpcopt
from hpcopt.cli import main
from hpcopt.instances import bundled_path
from hpcopt.plots import (
    PlotError,
    gantt_figure,
    osdec_figure,
    osdec_load,
    pareto_figure,
    read_fronts,
    read_run,
    run_figure,
    timeline_figure,
    utilization_series,
)
from hpcopt.sim.metrics import timeline
from tests.conftest import INSTANCES, shared_file

pytest.importorskip("matplotlib")


def png_size(path) -> tuple[int, int]:
    """(width, height) of a PNG file, after checking its signature and header chunk."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two simulate --out folders of the demo trace (FCFS and SJF, both with EASY)."""
    base = tmp_path_factory.mktemp("runs")
    trace = bundled_path("traces", "demo.swf")
    out = {}
    for policy in ("fcfs", "sjf"):
        res = hpcopt.simulate(trace, policy=policy)
        res.write(base / policy)
        out[policy] = (base / policy, res.summary)
    return out


def test_utilization_series_is_the_exact_integral():
    # 4 nodes: a 2-node job on [0, 10), another on [5, 10): half busy, then full
    centres, util = utilization_series(np.array([0.0, 0.0]), np.array([0.0, 5.0]),
                                       np.array([10.0, 10.0]), np.array([2.0, 2.0]), 4, bins=2)
    assert centres.tolist() == [2.5, 7.5]
    assert util.tolist() == [0.5, 1.0]


def test_run_plot_agrees_with_the_summary_and_writes_a_png(runs, tmp_path):
    for folder, summary in runs.values():
        run = read_run(folder)
        _, util = utilization_series(run["submit"], run["start"], run["end"], run["nodes"],
                                     run["machine"])
        # equal bins over [first submit, last end]: their mean is the run's utilization
        assert util.mean() == pytest.approx(summary["utilization"], rel=1e-9)
        assert run["wait"].mean() == pytest.approx(summary["avg_wait"], rel=1e-9)
    fig = run_figure([runs["fcfs"][0], runs["sjf"][0]])
    wait_ax, util_ax = fig.axes
    # every axis names its unit; waits on a log scale (linear below a minute, for zeros)
    assert wait_ax.get_xlabel().startswith("wait (hours; log scale")
    assert wait_ax.get_xscale() == "symlog"
    assert wait_ax.get_ylabel() == "fraction of jobs (cumulative)"
    assert (util_ax.get_xlabel(), util_ax.get_ylabel()) == (
        "time (days)", "utilization (fraction of nodes busy)")
    assert len(wait_ax.get_lines()) == len(util_ax.get_lines()) == 2
    assert [t.get_text() for t in util_ax.get_legend().get_texts()] == ["fcfs", "sjf"]

    out = tmp_path / "cmp.png"
    assert main(["plot", "run", str(runs["fcfs"][0]), str(runs["sjf"][0]), "--out",
                 str(out)]) == 0
    assert png_size(out) == (1100, 400)
    # default: next to the CSVs
    assert main(["plot", "run", str(runs["fcfs"][0] / "jobs.csv")]) == 0
    png_size(runs["fcfs"][0] / "run.png")


def test_run_plot_on_a_real_trace(tmp_path):
    trace = shared_file("hpc_swf/pwa/KTH-SP2-1996-2.1-cln.swf.gz")
    res = hpcopt.simulate(trace, policy="fcfs", jobs=3000)
    res.write(tmp_path / "kth")
    run = read_run(tmp_path / "kth")
    _, util = utilization_series(run["submit"], run["start"], run["end"], run["nodes"],
                                 run["machine"])
    assert util.mean() == pytest.approx(res.summary["utilization"], rel=1e-9)
    assert util.max() <= 1 + 1e-9
    assert main(["plot", "run", str(tmp_path / "kth")]) == 0
    png_size(tmp_path / "kth" / "run.png")


def test_pareto_plot_marks_the_rules_choice(tmp_path):
    rows = tmp_path / "rows.jsonl"
    assert main(["solve", str(INSTANCES / "bbsched" / "table1.json"), "--backend",
                 "pareto-exact", "--out", str(rows), "--no-progress"]) == 0
    row = json.loads(rows.read_text().splitlines()[0])
    (front,) = read_fronts(rows)
    assert front["points"] == [tuple(p["objectives"]) for p in row["pareto"]]
    chosen = next(p for p in row["pareto"] if p["jobs"] == row["decision"])
    assert front["chosen"] == tuple(chosen["objectives"])

    fig = pareto_figure([rows])
    (ax,) = fig.axes
    assert ax.get_xlabel().startswith("nodes") and ax.get_ylabel().startswith("burst buffer")
    assert "table1" in ax.get_title()
    stars = [line for line in ax.get_lines() if line.get_marker() == "*"]
    assert len(stars) == 1
    assert (stars[0].get_xdata()[0], stars[0].get_ydata()[0]) == front["chosen"][:2]

    assert main(["plot", "pareto", str(rows)]) == 0
    png_size(tmp_path / "rows.pareto.png")


def test_pareto_plot_refuses_rows_without_a_front(tmp_path, capsys):
    rows = tmp_path / "knap.jsonl"
    assert main(["solve", str(INSTANCES / "knapsack" / "bb_table1.json"), "--out", str(rows),
                 "--no-progress"]) == 0
    with pytest.raises(PlotError, match="no row with a Pareto front"):
        read_fronts(rows)
    capsys.readouterr()
    assert main(["plot", "pareto", str(rows)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "knap.jsonl" in err[0]


def test_osdec_plot_load_matches_the_run(tmp_path):
    day = INSTANCES / "osdec" / "small_12slots_20jobs.json"
    res = hpcopt.simulate_osdec(day, policy="fifo")
    res.write(tmp_path / "fifo")
    model = hpcopt.load_instance(day).model
    jobs = res.jobs
    started = jobs[jobs["mode"] != "dropped"]
    load = osdec_load(model, dict(zip(started["job_id"].astype(str), started["start"])))
    capacity = np.asarray(model.capacity, dtype=float)
    # the summary's utilization is sum_t min(load_t, C_t) / sum_t C_t
    assert np.minimum(load, capacity).sum() / capacity.sum() == pytest.approx(
        res.summary["utilization"], rel=1e-9)

    fig = osdec_figure(day, [tmp_path / "fifo"])
    (ax,) = fig.axes
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("slot", "cores")
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["capacity C_t", "load: fifo"]
    assert main(["plot", "osdec", str(day), str(tmp_path / "fifo")]) == 0
    png_size(tmp_path / "fifo" / "load.png")
    with pytest.raises(PlotError, match="an OSDEC run.*hpcopt plot osdec"):
        read_run(tmp_path / "fifo")


def test_plot_errors_are_one_line(tmp_path, capsys):
    assert main(["plot", "run", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing: not found" in err[0]
    assert main(["plot", "osdec", str(INSTANCES / "knapsack" / "bb_table1.json"),
                 str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "expected an osdec instance" in err[0]


def test_timeline_csv_and_plot_agree_with_the_schedule(runs, tmp_path):
    """The timeline after each event: queued and running jobs counted from the job table by
    brute force, busy nodes within the machine, and its plot from the folder or the CSV."""
    folder, summary = runs["fcfs"]
    res_jobs = read_run(folder)
    tl = timeline(res_jobs, res_jobs["machine"])
    submit, start, end, nodes = (res_jobs[k] for k in ("submit", "start", "end", "nodes"))
    for k in range(0, len(tl["time_s"]), max(1, len(tl["time_s"]) // 50)):
        t = tl["time_s"][k]
        assert tl["queued_jobs"][k] == int(((submit <= t) & (start > t)).sum())
        assert tl["running_jobs"][k] == int(((start <= t) & (end > t)).sum())
        assert tl["busy_nodes"][k] == nodes[(start <= t) & (end > t)].sum()
    assert tl["utilization"].max() <= 1 and tl["running_jobs"][-1] == 0
    csv_path = tmp_path / "tl.csv"
    assert main(["simulate", str(bundled_path("traces", "demo.swf")), "--policy", "fcfs",
                 "--timeline", str(csv_path),
                 "--no-progress"]) == 0
    assert csv_path.read_text().splitlines()[0] == \
        "time_s,queued_jobs,running_jobs,busy_nodes,utilization"
    for source in (folder, csv_path):
        out = tmp_path / f"{source.name}.png"
        assert main(["plot", "timeline", str(source), "--out", str(out)]) == 0
        png_size(out)
    fig = timeline_figure(folder)
    assert [ax.get_ylabel() for ax in fig.axes] == [
        "queued jobs (jobs)", "running jobs (jobs)", "utilization (fraction of nodes busy)"]
    assert fig.axes[-1].get_xlabel() == "time (hours)"


def test_gantt_says_how_nodes_are_drawn(runs):
    fig = gantt_figure(runs["fcfs"][0])
    (ax,) = fig.axes
    assert ax.get_ylabel() == "node rank (drawn, not node ids)"
    assert ax.get_xlabel() == "time (hours)"
    assert any("drawn by the plot" in t.get_text() for t in ax.get_legend().get_texts())


def test_pareto_plot_says_one_point_and_keeps_its_legend_off_the_front(tmp_path):
    rows = tmp_path / "one.jsonl"
    assert main(["solve", str(INSTANCES / "bbsched" / "table1.json"), "--backend",
                 "pareto-exact", "--out", str(rows), "--no-progress"]) == 0
    row = json.loads(rows.read_text())
    row["pareto"] = row["pareto"][:1]
    row["decision"] = row["pareto"][0]["jobs"]
    rows.write_text(json.dumps(row) + "\n")
    fig = pareto_figure([rows])
    (ax,) = fig.axes
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.endswith("(1 point)") for t in texts), texts
    fig.canvas.draw()
    legend = ax.get_legend().get_window_extent()
    assert legend.y1 <= ax.get_window_extent().y0  # below the axes, never over the front
    assert ax.get_ylabel().endswith("GB)")
