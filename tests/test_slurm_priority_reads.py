"""What the adapter reads for the site's priority, on text Slurm 22.05 printed (the testbed:
8 nodes x 4 CPUs, an EXCLUSIVE partition, two accounts), and the value computed from it
against the numbers ``sprio`` showed (fast tier: no Slurm is started)."""

from __future__ import annotations

import pytest

from hpcopt.slurm.priority import published_priority
from hpcopt.slurm.state import (
    SQUEUE_FIELDS,
    PriorityData,
    SlurmCommandError,
    SlurmJob,
    parse_node_cpus,
    parse_partition_factors,
    parse_priority_config,
    parse_qos_priorities,
    parse_squeue_text,
    parse_sshare,
)

CONFIG = """\
Configuration data as of 2026-11-28T00:17:09
AccountingStorageEnforce = none
PriorityParameters      = (null)
PrioritySiteFactorParameters = (null)
PrioritySiteFactorPlugin = (null)
PriorityDecayHalfLife   = 01:00:00
PriorityCalcPeriod      = 00:01:00
PriorityFavorSmall      = No
PriorityFlags           = NO_FAIR_TREE
PriorityMaxAge          = 01:00:00
PriorityUsageResetPeriod = NONE
PriorityType            = priority/multifactor
PriorityWeightAge       = 1000
PriorityWeightAssoc     = 0
PriorityWeightFairShare = 10000
PriorityWeightJobSize   = 1000
PriorityWeightPartition = 100
PriorityWeightQOS       = 0
PriorityWeightTRES      = (null)
"""
SSHARE = """\
Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|GrpTRESMins|TRESRunMins
root|||1.000000|3495||1.000000|0.500000||cpu=0
 root|root|1|0.333333|0|0.000000|0.000000|1.000000||cpu=0
 accta||1|0.333333|3495|1.000000|1.000000|0.125000||cpu=0
  accta|root|1|0.333333|3495|1.000000|1.000000|0.125000||cpu=0
 acctb||1|0.333333|0|0.000000|0.000000|1.000000||cpu=0
  acctb|root|1|0.333333|0|0.000000|0.000000|1.000000||cpu=0
"""
PARTITIONS = (
    "PartitionName=batch AllowGroups=ALL Default=YES PriorityJobFactor=1 PriorityTier=1 "
    "OverSubscribe=EXCLUSIVE State=UP TotalCPUs=32 TotalNodes=8\n"
    "PartitionName=debug AllowGroups=ALL Default=NO PriorityJobFactor=4 PriorityTier=1 "
    "OverSubscribe=NO State=UP TotalCPUs=32 TotalNodes=8\n")


def test_reads():
    conf = parse_priority_config(CONFIG)
    assert (conf.priority, conf.weight_fairshare, conf.weight_age, conf.max_age,
            conf.decay_half_life, conf.favor_small) == ("multifactor", 10000, 1000, 3600,
                                                        3600, False)
    assert parse_sshare(SSHARE) == {("root", "root"): 1.0, ("accta", "root"): 0.125,
                                    ("acctb", "root"): 1.0}
    assert parse_partition_factors(PARTITIONS) == ({"batch": 0.25, "debug": 1.0},
                                                   frozenset({"batch"}))
    assert parse_qos_priorities("normal|0\nhigh|50\n") == {"normal": 0.0, "high": 1.0}
    assert parse_qos_priorities("normal|0\n") == {"normal": 0.0}
    assert parse_node_cpus("n1 4\nn2 4\nn1 4\n") == {"n1": 4, "n2": 4}
    with pytest.raises(SlurmCommandError, match="sshare -l -a -P: no FairShare"):
        parse_sshare("Account|User\nx|y\n")
    with pytest.raises(SlurmCommandError, match="scontrol show config.*PriorityMaxAge.*soon"):
        parse_priority_config("PriorityMaxAge = soon\n")


def test_nice_may_be_negative():
    values = {f: "" for f in SQUEUE_FIELDS}
    values.update(JobID="7", State="PENDING", Reason="None", PriorityLong="10", NumNodes="1",
                  SubmitTime="100", StartTime="0", TimeLimit="5:00", Nice="-10",
                  Account="accta", QOS="normal", NumCPUs="4", UserName="alice",
                  EligibleTime="N/A")
    text = "\x1f".join(values[f] for f in SQUEUE_FIELDS) + "\x1e"
    (job,) = parse_squeue_text(text)
    assert (job.nice, job.account, job.qos, job.cpus, job.user_name) == (-10, "accta",
                                                                          "normal", 4, "alice")


def _job(jid, account, nodes, cpus, nice=0, begin=1000.0):
    return SlurmJob(jid, "PENDING", "Priority", 1, "batch", 1000.0, 0.0, 300.0, nodes, (),
                    cpus=cpus, account=account, qos="normal", nice=nice, user_name="root",
                    begin=begin)


def test_value_is_sprios():
    """sprio on the testbed, 47 s after the jobs became eligible: age 13, fairshare 1250
    (accta) or 10000 (acctb), size 125 (1 node) or 500 (4 nodes) or 250 (2 nodes with 8
    CPUs), partition 100, nice 50 taken off."""
    data = PriorityData(parse_priority_config(CONFIG), parse_sshare(SSHARE),
                        {"batch": 1.0}, {"normal": 0.0}, 8, 32, frozenset({"batch"}))
    now = 1000.0 + 47
    assert published_priority(_job(2, "accta", 1, 1), data, now) == 1250 + 13 + 125 + 100
    assert published_priority(_job(3, "accta", 4, 4), data, now) == 1250 + 13 + 500 + 100
    assert published_priority(_job(5, "acctb", 4, 4), data, now) == 10000 + 13 + 500 + 100
    assert published_priority(_job(6, "acctb", 2, 8, nice=50), data, now) == \
        10000 + 13 + 250 + 100 - 50
    # a held job (no eligible time) ages from its submission; none below 0
    assert published_priority(_job(4, "acctb", 1, 1, begin=0.0), data, now) == 10238
    # the processors asked count where nodes are shared
    shared = PriorityData(data.conf, data.fairshare, {"batch": 1.0}, {}, 8, 32)
    assert published_priority(_job(2, "accta", 1, 1), shared, now) == 1250 + 13 + 78 + 100
