"""The pandas-free metrics path gives pandas' numbers and bytes (job table, summary, CSV,
console table), so that an FCFS run need not import pandas."""

from __future__ import annotations

import math
import random
import subprocess
import sys

import pandas as pd
import pytest

import hpcopt
from hpcopt.domain import Job, System
from hpcopt.policies import make_policy
from hpcopt.sim.driver import Simulator
from hpcopt.sim.metrics import format_summary, job_columns, job_table, summarize, write_job_csv

from .conftest import shared_file


def _jobs(seed, n=300, start_id=0):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        wall = rng.choice([1.5, 10.0, 60.0, 3600.0, 1e7 / 3])
        out.append(Job(id=start_id + rng.randrange(10**6) * 1000 + i,
                       submit=round(rng.random() * 5000, rng.choice([0, 1, 3])),
                       runtime=wall * rng.choice([0.0, 0.1, 1 / 3, 1.0]), walltime=wall,
                       nodes=rng.choice([1, 2, 3, 8])))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_columns_csv_and_summary_equal_pandas(tmp_path, seed):
    sim = Simulator(_jobs(seed), System(8), make_policy("fcfs")).run()
    cols = job_columns(sim.records.values())
    frame = job_table(sim.records.values())
    assert frame.equals(pd.DataFrame(cols))
    assert write_job_csv(cols, tmp_path / "fast.csv")
    frame.to_csv(tmp_path / "pandas.csv", index=False)
    assert (tmp_path / "fast.csv").read_bytes() == (tmp_path / "pandas.csv").read_bytes()
    for warmup, cooldown in ((0, 0), (0.1, 5), (7, 0.25)):
        kw = dict(warmup=warmup, cooldown=cooldown)
        assert summarize(cols, 8, **kw) == summarize(frame, 8, **kw)


def test_columns_are_sorted_whatever_the_record_order():
    sim = Simulator(_jobs(9), System(8), make_policy("fcfs")).run()
    recs = list(sim.records.values())
    random.Random(0).shuffle(recs)
    assert job_table(recs).equals(job_table(sim.records.values()))
    ids = job_columns(recs)["job_id"]
    subs = job_columns(recs)["submit"]
    assert list(zip(subs, ids)) == sorted(zip(subs, ids))


def test_csv_writer_declines_tables_it_cannot_render(tmp_path):
    sim = Simulator(_jobs(1, 20), System(8), make_policy("fcfs")).run()
    cols = job_columns(sim.records.values(), {"bb": lambda r: r.job.bb})
    assert not write_job_csv(cols, tmp_path / "x.csv")
    cols = job_columns(sim.records.values())
    cols["job_id"] = [str(i) for i in cols["job_id"]]
    assert not write_job_csv(cols, tmp_path / "x.csv")
    assert not (tmp_path / "x.csv").exists()


def test_summary_with_nan_matches_pandas():
    cols = {"submit": [0.0, 1.0, 2.0, 3.0], "end": [5.0, math.nan, 9.0, 4.0],
            "nodes": [1, 2, 3, 4], "runtime": [1.0, 2.0, math.nan, 4.0],
            "wait": [1.0, math.nan, 3.0, 0.5], "response": [2.0, 3.0, 4.0, 5.0],
            "slowdown": [1.0, 1.0, 1.0, 1.0], "bounded_slowdown": [1.0, 2.0, 3.0, 4.0],
            "job_id": [1, 2, 3, 4]}
    got = summarize(cols, 4)
    want = summarize(pd.DataFrame(cols), 4)
    assert got == want


def test_format_summary_is_pandas_to_string_layout():
    summaries = {"fcfs": {"job_count": 28475, "avg_wait": 6837.2, "x": 0.69714},
                 "knapsack+easy+long-name": {"job_count": 28475, "avg_wait": 5.5, "x": 0}}
    keys = ["job_count", "avg_wait", "x"]
    df = pd.DataFrame({n: {k: s[k] for k in keys} for n, s in summaries.items()})

    def fmt(v):
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"

    assert format_summary(summaries, keys) == df.map(fmt).to_string()


def test_simulate_and_write_match_the_pandas_table(tmp_path):
    trace = hpcopt.load_trace(shared_file("hpc_swf/pwa/KTH-SP2-1996-2.1-cln.swf.gz"),
                              max_jobs=2000)
    res = hpcopt.simulate(trace, policy="fcfs")
    csv_path, _ = res.write(tmp_path / "fast")
    res.jobs.to_csv(tmp_path / "pandas.csv", index=False)  # builds the DataFrame
    assert csv_path.read_bytes() == (tmp_path / "pandas.csv").read_bytes()
    assert summarize(res.jobs, trace.system.nodes) == res.summary


def test_fcfs_cli_run_imports_neither_pandas_nor_learning_stacks(tmp_path):
    path = shared_file("hpc_swf/pwa/KTH-SP2-1996-2.1-cln.swf.gz")
    code = ("import sys\nfrom hpcopt.cli import main\n"
            f"sys.argv = ['hpcopt', 'simulate', {str(path)!r}, '--jobs', '500', "
            f"'--no-progress', '--out', {str(tmp_path)!r}]\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "heavy = {'pandas', 'torch', 'gymnasium', 'tqdm', 'scipy', 'matplotlib', 'pyomo'}\n"
            "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "jobs.csv").exists()


def test_jobs_csv_carries_the_swf_user_group_queue_and_partition(tmp_path):
    """SWF fields 12, 13, 15 and 16 (user, group, queue, partition) reach jobs.csv, in the
    bytes pandas would write."""
    swf = tmp_path / "t.swf"
    swf.write_text("; MaxNodes: 4\n; MaxProcs: 4\n"
                   "1 0 -1 10 2 -1 -1 2 20 -1 1 5 7 -1 3 2 -1 -1\n"
                   "2 5 -1 10 4 -1 -1 4 20 -1 1 6 8 -1 1 1 -1 -1\n")
    res = hpcopt.simulate(swf)
    jobs_csv, summary = res.write(tmp_path / "out")
    df = pd.read_csv(jobs_csv)
    assert df[["user", "group", "queue", "partition"]].values.tolist() == [[5, 7, 3, 2],
                                                                          [6, 8, 1, 1]]
    res.jobs.to_csv(tmp_path / "p.csv", index=False)
    assert jobs_csv.read_bytes() == (tmp_path / "p.csv").read_bytes()
    import json

    units = json.loads(summary.read_text())["units"]
    assert units["avg_wait"] == "s" and units["job_count"] == "jobs"
