"""Reading the torch checkpoints of the learned components (DRAS, NSA, OSDEC): one place for
the checks that turn a missing, unreadable or foreign file into a one-line error."""

from __future__ import annotations

from pathlib import Path

import torch

from hpcopt.errors import HpcoptError


def read_checkpoint(path, what: str, fmt: str, *, error: type = HpcoptError,
                    hint: str = "") -> dict:
    """The state dict saved at ``path`` in format ``fmt`` (tensors and plain data only:
    ``weights_only``).  ``what`` names the component in the messages, ``error`` is the
    exception class raised, ``hint`` is appended to the not-found message."""
    path = Path(path)
    if not path.is_file():
        raise error(f"{what} checkpoint {str(path)!r} not found{hint}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same user error
        raise error(f"{what} checkpoint {path} cannot be read: not a {what} checkpoint "
                    f"({type(exc).__name__})") from None
    if not isinstance(state, dict) or state.get("format") != fmt:
        raise error(f"{path}: not a {what} checkpoint (expected format {fmt!r})")
    return state
