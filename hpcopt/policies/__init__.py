"""Window policies, registered by name (``make_policy("fcfs")``), one module per family:
``classic`` (FCFS, SJF, WFP, baseline, largest-first, random), ``knapsack``,
``multi_resource`` (BBSched and its weighted / constrained rivals), ``dras`` (learned),
``tjap`` (topology-aware allocation: SCAS or DCAS placement), ``slurm_backfill`` (Slurm
alone: its main scheduler and sched/backfill), ``osdec`` (cloud slots:
FIFO, Tetris, rolling MIP) and ``osdec_learned`` (the OSDEC agent and its ablations)."""

from . import (  # noqa: F401
    classic,
    dras,
    knapsack,
    multi_resource,
    osdec,
    osdec_learned,
    slurm_backfill,
    tjap,
)
from .base import (
    Policy,
    build_policy,
    check_policy,
    describe_policies,
    make_policy,
    policy_names,
    register_policy,
)

__all__ = ["Policy", "build_policy", "check_policy", "describe_policies", "make_policy",
           "policy_names", "register_policy"]
