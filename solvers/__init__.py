"""Solver backends and their registry (imported as ``hpcopt.solvers``).

Importing this package registers the built-in backends; none of them imports its backend
library until it solves something.  Backend modules are named after the model they solve:
knapsack (``knapsack_*``), BBSched (``bbsched_*``, ``pymoo_nsga2``), TJAP, the topology-aware
allocation family (``scas_exact`` for SCAS; ``dcas_sa``, ``dcas_nsa`` for DCAS), OSDEC
(``osdec_*``); the generic MIP/CP backends (``pyomo_backend``, ``scip_backend``,
``ortools_backends``, ``cpsat``) serve several families (docs/architecture.md).
"""

# built-in backends register themselves on import
from . import (  # noqa: E402,F401
    bbsched_exact,
    bbsched_ga,
    dcas_nsa,
    dcas_sa,
    knapsack_dp,
    knapsack_greedy,
    knapsack_mip,
    ortools_backends,
    osdec_greedy,
    pymoo_nsga2,
    pyomo_backend,
    scas_exact,
    scip_backend,
)
from .registry import (
    Availability,
    Outcome,
    SolveOptions,
    Solver,
    available_backends,
    describe,
    get_solver,
    names,
    register,
    solve,
)

__all__ = [
    "Availability",
    "Outcome",
    "Solver",
    "SolveOptions",
    "available_backends",
    "describe",
    "get_solver",
    "names",
    "register",
    "solve",
]
