"""The site's priority of a job Slurm holds: Slurm's multifactor value, computed by
``hpcopt.sim.priority`` from what Slurm publishes (``hpcopt.slurm.state.PriorityData``).

A job the submit script holds has priority 0 in Slurm (``sprio`` omits it), so hpcopt
computes the value Slurm would give it once released: the weights of ``scontrol show
config``, the fairshare factor of its association from ``sshare`` (Slurm's own, classic or
fair tree), its partition's and QOS's factors, its nice value, its size against the
cluster's nodes and processors, its age from its eligible time (its begin time, else its
submission: a held job has none; once released Slurm ages it from the release).  In a
partition that gives jobs whole nodes (``OverSubscribe=EXCLUSIVE``) Slurm counts a job's
processors as its nodes' (the cluster's processors per node, nodes taken alike), from its
first recalculation on (every ``PriorityCalcPeriod``; until then the processors asked).
Slurm keeps the integer part of the sum, recomputed every ``PriorityCalcPeriod``; so
``published_priority`` is Slurm's value up to that period's age.
"""

from __future__ import annotations

import math

from hpcopt.sim.priority import (
    Factors,
    PriorityWeights,
    age_factor,
    job_priority,
    size_factor,
)
from hpcopt.sim.slurmconf import SlurmConf

from .state import PriorityData, SlurmJob


def site_orders(conf: SlurmConf) -> bool:
    """The cluster orders its queue by a multifactor priority with some weight set (with
    every weight 0, Slurm 24.11's default, every job ties: submit order)."""
    w = PriorityWeights.of(conf)
    return w.multifactor and any((w.age, w.fairshare, w.job_size, w.partition, w.qos))


def published_priority(job: SlurmJob, data: PriorityData, now: float) -> int:
    """The priority Slurm gives ``job`` at ``now`` (module docstring)."""
    weights = PriorityWeights.of(data.conf)
    eligible = max(job.submit, job.begin) if job.begin else job.submit
    fairshare = (data.fairshare or {}).get((job.account, job.user_name), 0.0)
    partition = job.partition.split(",")[0]
    cpus = job.cpus
    if partition in data.whole_nodes and data.nodes:  # Slurm counts the nodes' processors
        cpus = job.nodes * (data.cpus // data.nodes)
    factors = Factors(
        age=age_factor(eligible, now, weights.max_age),
        fairshare=fairshare,
        job_size=size_factor(job.nodes, max(1, data.nodes), weights.favor_small, cpus,
                             data.cpus),
        partition=data.partitions.get(partition, 0.0),
        qos=data.qos.get(job.qos, 0.0),
        nice=job.nice)
    return max(0, math.floor(job_priority(weights, factors) + 1e-9))
