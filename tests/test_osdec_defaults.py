"""OSDEC workloads are in the paper's regime by default: on a generated day the capacity binds
and the online policies differ; a loose day (the whole region as one machine) is named on the
console with what to change."""

from __future__ import annotations

import pytest

from hpcopt.cli import main
from hpcopt.instances import instance_from_dict
from hpcopt.osdec import simulate_osdec
from hpcopt.workloads.osdec import (
    DEFERRABLE_FAMILY,
    LOOSE_LOAD,
    deferrable_workload,
    loose_warning,
)

from .conftest import shared_file

DEV = "cloud/azure_v1_vmtable_derived/v1.dev.txt.gz"
WHOLE_REGION = {"on_demand_share": 1.0, "machine_quantile": 0.9, "max_duration": None}


@pytest.fixture(scope="module")
def dev():
    return shared_file(DEV)


@pytest.fixture(scope="module")
def default_day(dev):
    return deferrable_workload(dev, seed=1)


def test_the_defaults_are_the_benchmark_family(dev, default_day):
    family = deferrable_workload(dev, seed=1, **DEFERRABLE_FAMILY)
    assert family["data"] == default_day["data"]


def test_on_a_default_day_capacity_binds_and_policies_differ(default_day):
    m = default_day["meta"]
    assert m["load"] > 2 * LOOSE_LOAD and m["binding_slots"] >= 0.1 * m["slots"]
    assert loose_warning(default_day) is None
    inst = instance_from_dict(default_day)
    reward = {p: simulate_osdec(inst, p, seed=0).summary["total_reward"]
              for p in ("fifo", "sjf")}
    assert abs(reward["sjf"] - reward["fifo"]) > 0.005 * reward["fifo"]  # 2.2% here


def test_a_loose_day_is_named_with_what_to_change(dev):
    loose = deferrable_workload(dev, seed=1, **WHOLE_REGION)
    assert loose["meta"]["load"] < LOOSE_LOAD
    text = loose_warning(loose)
    assert "loose" in text and "--on-demand-share 0.02" in text and "--machine-quantile" in text


def test_the_cli_warns_on_a_loose_day_only(dev, tmp_path, capsys):
    assert main(["workload", "osdec", str(dev), "--seed", "1", "--no-progress",
                 "--out", str(tmp_path / "day.json")]) == 0
    out = capsys.readouterr()
    assert "warning" not in out.err and "machine 949 cores" in out.out
    assert main(["workload", "osdec", str(dev), "--seed", "1", "--on-demand-share", "1",
                 "--machine-quantile", "0.9", "--no-progress",
                 "--out", str(tmp_path / "loose.json")]) == 0
    err = capsys.readouterr().err.strip()
    assert err.startswith("warning: this day is loose") and "\n" not in err
