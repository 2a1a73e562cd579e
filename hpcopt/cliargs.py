"""argparse value types shared by the ``hpcopt`` subcommands: one line of error each."""

from __future__ import annotations

import argparse
import math


def _number(text: str, kind, expected: str, ok) -> float | int:
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    return _number(text, int, "a positive integer", lambda v: v >= 1)


def nonneg_int(text: str) -> int:
    return _number(text, int, "an integer >= 0", lambda v: v >= 0)


def unit_float(text: str) -> float:
    """A number in [0, 1]."""
    return _number(text, float, "a number in [0, 1]", lambda v: 0 <= v <= 1)


def probability(text: str) -> float:
    """A number in [0, 1)."""
    return _number(text, float, "a probability in [0, 1)", lambda v: 0 <= v < 1)


def seconds(text: str) -> float:
    """A finite number of seconds >= 0."""
    return _number(text, float, "seconds >= 0", lambda v: math.isfinite(v) and v >= 0)


def positive_seconds(text: str) -> float:
    """A finite number of seconds > 0 (an interval, a time limit of one command)."""
    return _number(text, float, "seconds > 0", lambda v: math.isfinite(v) and v > 0)


def out_path(text: str) -> str:
    """An output file or folder: a blank name would run the whole command and write nothing."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a file or folder name, got {text!r}")
    return text
