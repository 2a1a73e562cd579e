"""Solver backends and their registry (imported as ``hpcopt.solvers``).

Importing this package registers the built-in backends; none of them imports its backend
library until it solves something.
"""

# built-in backends register themselves on import
from . import (  # noqa: E402,F401
    bbsched_exact,
    bbsched_ga,
    dcas_nsa,
    dcas_sa,
    knapsack_dp,
    knapsack_greedy,
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
