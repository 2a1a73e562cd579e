"""Declarative window-decision models (imported as ``hpcopt.models``).

One module per model kind, grouped by feature family (docs/architecture.md):
knapsack (``knapsack``), BBSched (``bbsched``, ``pareto_rules``), TJAP, the topology-aware
allocation family (``allocation``, the shared node-sequence part; ``scas`` and ``dcas``, the
paper's two methods), OSDEC (``osdec``).

A model never imports a solver, the driver, torch or pyomo at import time.
"""

from __future__ import annotations

import importlib

from hpcopt.errors import InstanceError, closest

from .base import Evaluation, Model

# model kind (as written in instance files) -> "module:Class", imported on first use
MODEL_KINDS: dict[str, str] = {
    "knapsack": "hpcopt.models.knapsack:KnapsackModel",
    "bbsched": "hpcopt.models.bbsched:BBSchedModel",
    "scas": "hpcopt.models.scas:SCASModel",
    "dcas": "hpcopt.models.dcas:DCASModel",
    "osdec": "hpcopt.models.osdec:OSDECModel",
}


def model_class(kind: str) -> type[Model]:
    """The model class for an instance-file ``model`` name."""
    try:
        target = MODEL_KINDS[kind]
    except KeyError:
        raise InstanceError(
            f"unknown model {kind!r}; expected one of {sorted(MODEL_KINDS)}."
            + closest(kind, MODEL_KINDS)
        ) from None
    module, _, cls = target.partition(":")
    return getattr(importlib.import_module(module), cls)


__all__ = ["Evaluation", "Model", "MODEL_KINDS", "model_class"]
