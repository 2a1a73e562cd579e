"""hpcopt: optimization models and interchangeable solvers for HPC batch-scheduling window
decisions, and a rolling-horizon driver that turns them into online schedulers.

The top-level names are imported lazily so that ``import hpcopt`` stays fast.
"""

from __future__ import annotations

import importlib

from .version import __version__

_LAZY = {
    "simulate": "hpcopt.api",
    "simulate_run": "hpcopt.api",
    "RunSettings": "hpcopt.run_settings",
    "simulate_osdec": "hpcopt.osdec",
    "solve": "hpcopt.api",
    "load_trace": "hpcopt.api",
    "load_instance": "hpcopt.api",
    "SimulationResult": "hpcopt.sim.result",
    "build_scenario": "hpcopt.scenario",
    "Job": "hpcopt.domain",
    "System": "hpcopt.domain",
    "Window": "hpcopt.domain",
    "Decision": "hpcopt.domain",
    "Result": "hpcopt.result",
    "Termination": "hpcopt.result",
    "SolutionStatus": "hpcopt.result",
    "Status": "hpcopt.result",  # the older flat status: a view of the two above
    "Simulator": "hpcopt.sim.driver",
    "forecast": "hpcopt.sim.forecast",
    "RuntimeHistory": "hpcopt.sim.runtime_history",
    "ClusterState": "hpcopt.sim.decide",
    "make_policy": "hpcopt.policies",
}

__all__ = sorted(_LAZY) + ["__version__"]  # noqa: PLE0605 - the names of _LAZY, all strings


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hpcopt' has no attribute {name!r}")


def __dir__():
    return __all__

