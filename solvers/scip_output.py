"""Running SCIP: one set-up, its output kept off stdout, its time limit leaving room to read
back.

Output: ``hpcopt solve --out -`` writes JSON Lines to stdout.
``hideOutput`` silences SCIP's message handler, but SCIP's Ctrl-C handler prints its
"pressed CTRL-C 1 times (5 times for forcing termination)" line with C ``printf`` to file
descriptor 1.  ``optimize`` points descriptor 1 at the null device while SCIP runs (hpcopt
says itself that it was interrupted, and what SCIP's search returned) and flushes C's
buffers before putting stdout back.  Nested or concurrent solves share one redirect: the
first to start makes it, the last to end undoes it.
"""

from __future__ import annotations

import ctypes
import os
import sys
import tempfile
import threading
from contextlib import contextmanager

from hpcopt.errors import SolverOptionError

# reading a solution back and freeing the model after the search, per variable (measured
# ~1.2e-5 s on an OSDEC day of 47k variables, busy 2-core machine; with a margin)
READ_SECONDS_PER_VAR = 1.5e-5

_lock = threading.Lock()
_state = {"depth": 0, "saved": None}


def _flush_c() -> None:
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no C library to flush: nothing buffered there
        pass


@contextmanager
def stdout_silenced():
    """File descriptor 1 goes to the null device inside the block (C and Python writes
    alike): what a solver library prints from C is not hpcopt's output."""
    with _lock:
        if _state["depth"] == 0:
            try:
                sys.stdout.flush()
                _flush_c()
                _state["saved"] = os.dup(1)
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1)
                os.close(null)
            except (OSError, ValueError):  # no descriptor 1: nothing to keep apart
                _state["saved"] = None
        _state["depth"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["depth"] -= 1
            if _state["depth"] == 0 and _state["saved"] is not None:
                try:
                    sys.stdout.flush()
                except (OSError, ValueError):
                    pass
                _flush_c()
                os.dup2(_state["saved"], 1)
                os.close(_state["saved"])
                _state["saved"] = None


def new_model(name: str, opts, params: dict):
    """A quiet PySCIPOpt model with the solve's memory cap (``limits/memory``), seed
    (``randomization/randomseedshift``) and SCIP parameters ``params`` (a bad one is a
    ``SolverOptionError``): the one SCIP set-up of every SCIP formulation."""
    import pyscipopt  # lazy: a missing SCIP is the registry's SolverUnavailableError

    scip = pyscipopt.Model(name)
    scip.hideOutput()  # no SCIP log (the message handler)
    if opts.max_memory_mb is not None:
        scip.setParam("limits/memory", opts.max_memory_mb)
    if opts.seed is not None:
        scip.setParam("randomization/randomseedshift", opts.seed)
    for key, val in params.items():
        try:
            scip.setParam(key, val)
        except (KeyError, ValueError, TypeError, LookupError) as err:
            raise SolverOptionError(f"scip: bad SCIP parameter {key}={val!r} ({err})") from None
    return scip


def optimize(scip, left: float | None = None, log: list | None = None) -> None:
    """``scip.optimize()`` with its C-level output silenced; with ``left`` (seconds left of
    the solve's time limit) SCIP's ``limits/time`` keeps the read-back time out of it; with
    ``log`` (a list) SCIP's log, written to a log file while its screen output stays off, is
    appended to it."""
    if left is not None:
        read = READ_SECONDS_PER_VAR * scip.getNVars()
        scip.setParam("limits/time", max(left - read, 0.05 * left, 1e-3))
    if log is None:
        with stdout_silenced():
            scip.optimize()
        return
    fd, path = tempfile.mkstemp(prefix="hpcopt-scip-", suffix=".log")
    os.close(fd)
    try:
        scip.setLogfile(path)
        try:
            with stdout_silenced():
                scip.optimize()
        finally:
            scip.setLogfile(None)
            with open(path, encoding="utf-8", errors="replace") as f:
                log.append(f.read())
    finally:
        os.unlink(path)
