"""Plain JSON values from anything a result, a row or a setting holds: one conversion for
batch and sweep rows, service replies and simulation settings, so all write strict JSON
(RFC 8259) the same way."""

from __future__ import annotations

import math
from enum import Enum


def json_safe(value: object) -> object:  # (no typing import: 2 ms of every command)
    """``value`` made of JSON types only: non-finite floats -> None, numpy scalars -> Python,
    tuples -> lists, enums -> their value, anything else unknown -> ``str``."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, Enum):
        return json_safe(value.value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v) for v in value]
    item = getattr(value, "item", None)  # numpy scalar
    if callable(item) and getattr(value, "ndim", None) == 0:
        return json_safe(item())
    if hasattr(value, "tolist"):
        return json_safe(value.tolist())
    return str(value)
