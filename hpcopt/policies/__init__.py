"""Window policies, registered by name (``make_policy("fcfs")``)."""

from . import classic, dras, knapsack, multi_resource, osdec, osdec_learned, topology  # noqa: F401
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
