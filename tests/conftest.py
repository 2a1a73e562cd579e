"""Shared test fixtures: where the shared data lives, and a few job builders."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"
INSTANCES = REPO / "instances"


def default_signals() -> None:
    """``preexec_fn`` for subprocesses that a test signals: SIGINT and SIGTERM at their
    defaults, whatever the test runner inherited (a CI started in the background has SIGINT
    ignored, and hpcopt rightly keeps an ignored SIGINT ignored)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def shared_file(relpath: str) -> Path:
    """A file under ../shared/data, or skip the test when it is not there."""
    path = SHARED_DATA / relpath
    if not path.exists():
        pytest.skip(f"shared data {relpath} not available (expected at {path})")
    return path


try:  # keep torch to one thread on these 2-core machines, if it is installed
    import torch

    torch.set_num_threads(1)
except ImportError:
    pass


# the real Slurm cluster fixture (``cluster``, module scope, over Slurm 22.05 and 24.11), for
# every test module: tests/slurm_fixtures.py
from .slurm_fixtures import cluster  # noqa: E402,F401
