"""The equal-terms comparison's analysis (benchmarks/slurm_equal_terms.py) on its committed
runs: the run names it starts, and the metrics benchmarks/README.md publishes."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCH))  # the script imports its sibling benchmarks
    try:
        spec = importlib.util.spec_from_file_location("slurm_equal_terms",
                                                      BENCH / "slurm_equal_terms.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(BENCH))


def test_a_runs_name_says_its_scheduler_and_setting(bench):
    kind_setting, best = bench.sv.kind_setting, bench.sv.best_parameters
    assert kind_setting("slurm") == ("slurm", "")
    assert kind_setting("slurm-best") == ("slurm", "best")
    assert kind_setting("tjap-window") == ("tjap-window", "")  # a policy with a hyphen
    assert kind_setting("tjap-window-wake") == ("tjap-window", "wake")
    assert best({}) == "bf_job_part_count_reserve=1"
    assert best({"licenses": "bb:100"}) == "bf_job_part_count_reserve=1,bf_licenses"


def test_the_published_metrics_come_from_the_committed_runs(bench):
    """Mean and max wait, makespan and utilization of the KTH comparison as the README
    table gives them (repetition 1 / 2), computed again from Slurm's recorded times."""
    info, rows = bench.part_rows(BENCH / "results" / "slurm" / "equal-kth")
    got = {(r["kind"], r["rep"]): r for r in rows}
    assert info["kinds"] == ["slurm", "slurm-best", "knapsack", "knapsack-wake"]
    assert len(rows) == 8 and all(r["jobs"] == 150 for r in rows)
    for kind, rep, wait, wait_max, makespan, util in (
            ("slurm", 1, 341.6, 695, 1958, 0.895), ("slurm-best", 2, 308.7, 812, 1976, 0.887),
            ("knapsack-wake", 1, 234.8, 1196, 1965, 0.892),
            ("knapsack-wake", 2, 235.3, 1198, 1890, 0.926)):
        r = got[(kind, rep)]
        assert round(r["wait_mean"], 1) == wait and round(r["wait_max"]) == wait_max
        assert round(r["makespan"]) == makespan and round(r["util"], 3) == util
