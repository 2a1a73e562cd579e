"""Reading a trace file's text and validating the small numeric arguments of the readers."""

from __future__ import annotations

import gzip
import re
import zlib
from pathlib import Path

import numpy as np

from ..errors import TraceError

#: A decimal number as the readers accept it (no inf/nan, no hex, no thousands separators).
NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def read_bytes(p: Path, src: str, error: type[Exception] = TraceError,
               what: str = "trace") -> bytes:
    """The file's bytes, gunzipped when they start with the gzip magic bytes; ``error``
    (one line naming ``src``) when it cannot be read or the gzip data is corrupt."""
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise error(f"{src}: cannot read {what}: {exc.strerror or exc}") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise error(f"{src}: corrupt gzip data: {exc}") from None
    return raw


def read_text(p: Path, src: str) -> str:
    """The file's text: gunzipped when it starts with the gzip magic bytes, UTF-8 else latin-1."""
    raw = read_bytes(p, src)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")  # header comments of old logs; records are ASCII


def whole(name: str, value, minimum: int) -> int:
    """``value`` as an int >= ``minimum``, or a one-line ``TraceError``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        kind = "a positive" if minimum == 1 else "a non-negative"
        raise TraceError(f"{name} must be {kind} integer, got {value!r}")
    return int(value)
