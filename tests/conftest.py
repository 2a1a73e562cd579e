"""Shared test fixtures: where the real data lives, and a few job builders."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpcopt.datadir import data_root
from hpcopt.datadir import missing_data as _missing_data

REPO = Path(__file__).resolve().parents[1]
# the data directory the tests read: HPCOPT_DATA, else ../shared/data beside the checkout (as
# CI lays it out), else the per-user one that 'hpcopt data fetch' fills (hpcopt.datadir)
SHARED_DATA = data_root()
INSTANCES = REPO / "instances"
BENCH = REPO / "benchmarks"


def default_signals() -> None:
    """``preexec_fn`` for subprocesses that a test signals: SIGINT and SIGTERM at their
    defaults, whatever the test runner inherited (a CI started in the background has SIGINT
    ignored, and hpcopt rightly keeps an ignored SIGINT ignored)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@pytest.fixture(scope="module")
def sv():
    """benchmarks/slurm_validation.py as a module (it imports its sibling benchmarks)."""
    import importlib
    import sys

    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("slurm_validation")
    finally:
        sys.path.remove(str(BENCH))


def missing_data(*relpaths: str) -> str | None:
    """Why a test of these files of ``SHARED_DATA`` cannot run, or None."""
    return _missing_data(*relpaths, root=SHARED_DATA)


def needs_data(*relpaths: str):
    """Skip mark of a test that reads these data-directory files (the reason names the
    ``hpcopt data fetch`` that brings them: ``hpcopt.datadir.missing_data``)."""
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
