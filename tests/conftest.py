"""Shared test fixtures: where the real data lives, and a few job builders."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpcopt.datadir import data_dir, user_data_dir
from hpcopt.datasets import dataset_of

REPO = Path(__file__).resolve().parents[1]
# the data directory the tests read: HPCOPT_DATA, else ../shared/data beside the checkout (as
# CI lays it out), else the per-user one that 'hpcopt data fetch' fills (hpcopt.datadir)
SHARED_DATA = data_dir() or user_data_dir()
INSTANCES = REPO / "instances"


def default_signals() -> None:
    """``preexec_fn`` for subprocesses that a test signals: SIGINT and SIGTERM at their
    defaults, whatever the test runner inherited (a CI started in the background has SIGINT
    ignored, and hpcopt rightly keeps an ignored SIGINT ignored)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def missing_data(*relpaths: str) -> str | None:
    """Why a test of these data-directory files cannot run (the ``hpcopt data fetch`` that
    brings them), or None when they are all there."""
    missing = [r for r in relpaths if not (SHARED_DATA / r).exists()]
    if not missing:
        return None
    names = " ".join(dict.fromkeys(dataset_of(r) or r for r in missing))
    return (f"needs {missing[0]}{' and more' if len(missing) > 1 else ''} in the data "
            f"directory {SHARED_DATA}: hpcopt data fetch {names}")


def needs_data(*relpaths: str):
    """Skip mark of a test that reads these data-directory files (``missing_data``)."""
    reason = missing_data(*relpaths)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def shared_file(relpath: str) -> Path:
    """A file of the data directory, or skip the test (saying which fetch brings it)."""
    reason = missing_data(relpath)
    if reason is not None:
        pytest.skip(reason)
    return SHARED_DATA / relpath


try:  # keep torch to one thread on these 2-core machines, if it is installed
    import torch

    torch.set_num_threads(1)
except ImportError:
    pass


# the real Slurm cluster fixture (``cluster``, module scope, over Slurm 22.05 and 24.11), for
# every test module: tests/slurm_fixtures.py
from .slurm_fixtures import cluster  # noqa: E402,F401
