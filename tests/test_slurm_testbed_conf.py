"""The testbed's configuration text (fast tier: no Slurm is started): licenses, the fat
tree of topology.conf, accounting and the shared partition in slurm.conf."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpcopt import testbed
from hpcopt.testbed import TestbedError as BedError
from hpcopt.testbed import licenses_option, slurm_conf, topology_conf


def test_licenses():
    assert licenses_option("bb:100") == {"bb": 100}
    assert licenses_option("bb:100, ssd:4") == {"bb": 100, "ssd": 4}
    assert licenses_option({"bb": 10}) == {"bb": 10}
    assert licenses_option(None) == {}
    for bad in ("bb", "bb:0", "bb:x", "1bb:3", "bb:1,bb:2", "b b:3"):
        with pytest.raises(BedError, match=r"licenses: expected NAME:COUNT"):
            licenses_option(bad)


def test_fat_tree():
    assert topology_conf(8, 4).splitlines()[1:] == [
        "SwitchName=s1 Nodes=n[1-4]", "SwitchName=s2 Nodes=n[5-8]",
        "SwitchName=s0 Switches=s[1-2]"]
    assert topology_conf(7, 3).splitlines()[1:] == [
        "SwitchName=s1 Nodes=n[1-3]", "SwitchName=s2 Nodes=n[4-6]", "SwitchName=s3 Nodes=n7",
        "SwitchName=s0 Switches=s[1-3]"]
    assert topology_conf(4, 4).splitlines()[1:] == ["SwitchName=s1 Nodes=n[1-4]",
                                                    "SwitchName=s0 Switches=s1"]
    with pytest.raises(BedError, match="switch_size must be >= 1"):
        topology_conf(4, 0)


def test_slurm_conf_options():
    d = Path("/tb")
    plain = slurm_conf(d, 8, 4, 20000, "builtin", True)
    assert "AccountingStorageType=accounting_storage/none" in plain
    assert "Licenses=" not in plain and "TopologyPlugin" not in plain
    assert "PartitionName=shared" not in plain
    full = slurm_conf(d, 8, 4, 20000, "backfill", False, dbd_port=20009,
                      licenses={"bb": 100, "ssd": 4}, topology=True, shared=True).splitlines()
    assert "AccountingStorageType=accounting_storage/slurmdbd" in full
    assert "AccountingStoragePort=20009" in full
    assert "AccountingStoragePass=/tb/munge/munge.socket" in full
    assert "Licenses=bb:100,ssd:4" in full and "TopologyPlugin=topology/tree" in full
    assert ("PartitionName=shared Nodes=n[1-8] Default=NO MaxTime=INFINITE State=UP "
            "OverSubscribe=NO") in full


def test_start_checks_its_options_first(tmp_path):
    with pytest.raises(BedError, match="licenses: expected"):
        testbed.start(tmp_path, licenses="bb")
    with pytest.raises(BedError, match=r"switch_size must be 1..4 \(the nodes\), got 5"):
        testbed.start(tmp_path, 4, switch_size=5)


def test_free_port_block_from_a_given_port():
    port = testbed.free_port_block(3, 40_000)
    assert 40_000 <= port < 65_000
    assert 16_900 <= testbed.free_port_block(3) < 30_000 + 3


def test_scheduler_parameters_and_min_job_age():
    d = Path("/tb")

    def line(text, key):
        return next(x for x in text.splitlines() if x.startswith(key + "="))

    assert line(slurm_conf(d, 8, 4, 20000, "backfill", False), "SchedulerParameters") == \
        "SchedulerParameters=bf_interval=1,bf_resolution=1,sched_min_interval=100000"
    fast = slurm_conf(d, 8, 4, 20000, "backfill", False, min_job_age=5,
                      scheduler_parameters="batch_sched_delay=0,sched_min_interval=0,defer")
    assert line(fast, "SchedulerParameters") == ("SchedulerParameters=bf_interval=1,"
                                                 "bf_resolution=1,sched_min_interval=0,"
                                                 "batch_sched_delay=0,defer")
    assert line(fast, "MinJobAge") == "MinJobAge=5"
    for bad in ("x y=1", "a=1\nSlurmUser=me", "Bad=1"):
        with pytest.raises(BedError, match="scheduler_parameters: expected key=value"):
            testbed.parse_scheduler_parameters(bad)


def test_extra_conf_lines_replace_the_testbeds_own():
    text = slurm_conf(Path("/tb"), 8, 4, 20000, "builtin", True, conf_extra=(
        "PriorityType=priority/multifactor", "PriorityWeightAge=1000",
        "MinJobAge=30", " AccountingStorageEnforce=associations,limits "))
    lines = text.splitlines()
    assert lines[-4:] == ["PriorityType=priority/multifactor", "PriorityWeightAge=1000",
                          "MinJobAge=30", "AccountingStorageEnforce=associations,limits"]
    assert [line for line in lines if line.startswith("MinJobAge")] == ["MinJobAge=30"]
    for bad, why in (("PriorityType", "expected KEY=VALUE"), ("=3", "expected KEY=VALUE"),
                     ("Weight Age=3", "expected KEY=VALUE"), ("MinJobAge=", "KEY=VALUE"),
                     ("NodeName=n9 CPUs=1", "its own NodeName")):
        with pytest.raises(BedError, match=why):
            slurm_conf(Path("/tb"), 8, 4, 20000, "builtin", True, conf_extra=(bad,))
