"""What every CP-SAT solve shares (the CP-SAT backend's sessions in ``ortools_backends``): the
status map, the parameter setup, hints and the stoppable solve."""

from __future__ import annotations

import threading

from hpcopt.errors import SolverOptionError
from hpcopt.result import Termination

STATUS_MAP = {  # CP-SAT's status name -> termination (FEASIBLE, UNKNOWN: see stopped_by)
    "OPTIMAL": Termination.OPTIMAL,
    "FEASIBLE": Termination.FINISHED,
    "INFEASIBLE": Termination.INFEASIBLE,
    "MODEL_INVALID": Termination.ERROR,
    "UNKNOWN": Termination.UNKNOWN,
}


def parameters(solver, opts, time_limit: float | None, options=None) -> None:
    """CP-SAT parameters: one worker (deterministic), the time limit, the memory cap
    (``max_memory_in_mb``: CP-SAT checks it during the search and stops), the seed, and the
    user's CP-SAT parameters (``options``, default ``opts.solver_options`` without our own
    ``tie_break``)."""
    params = solver.parameters
    params.num_workers = 1
    params.catch_sigint_signal = False  # solve_stoppable turns Ctrl-C into a stop
    if time_limit is not None:
        params.max_time_in_seconds = max(time_limit, 1e-3)
    if opts.max_memory_mb is not None:
        params.max_memory_in_mb = max(1, int(opts.max_memory_mb))
    if opts.seed is not None:
        params.random_seed = opts.seed
    if opts.log is not None:  # solver_log: CP-SAT's search log, line by line
        params.log_search_progress = True
        params.log_to_stdout = False
        solver.log_callback = opts.log.append
    if options is None:
        options = {k: v for k, v in opts.solver_options.items() if k != "tie_break"}
    for key, val in options.items():
        try:
            setattr(params, key, val)
        except (AttributeError, TypeError, ValueError) as err:
            raise SolverOptionError(f"cpsat: bad CP-SAT parameter {key}={val!r} ({err})") from None


def add_hints(cp, variables, values) -> None:
    """Hint ``variables`` with ``values`` (a starting solution: the greedy or a warm start)."""
    for var, val in zip(variables, values):
        cp.add_hint(var, int(val))


def stopped_by(termination: Termination, stopped: bool, timed: bool) -> Termination:
    """What stopped an unproven answer (CP-SAT's FEASIBLE or UNKNOWN): ``interrupted`` when
    Ctrl-C stopped it, ``time_limit`` when a time limit was set; others stand."""
    if termination not in (Termination.FINISHED, Termination.UNKNOWN):
        return termination
    return (Termination.INTERRUPTED if stopped else Termination.TIME_LIMIT if timed
            else termination)


def solve_stoppable(solver, cp) -> tuple[int, bool]:
    """``solver.solve(cp)``, stopped like a limit by a ``KeyboardInterrupt``: returns the
    status code and whether an interrupt stopped it.

    CP-SAT's own Ctrl-C catching (``catch_sigint_signal``) hides the signal from Python and
    leaves SIGINT at SIG_DFL afterwards, so it is off (``parameters``); in the main thread
    the search runs in a helper thread while this one waits, so Python's signal handlers run
    at once: a ``KeyboardInterrupt`` (Ctrl-C, or a handler that raises one, like the batch's
    SIGTERM handler) calls ``stop_search`` and the incumbent is returned.  The interrupt is
    not re-raised: as with SCIP's ``userinterrupt``, it is a limit, recorded in the result;
    a handler that must stop more (the batch) records the signal itself."""
    if threading.current_thread() is not threading.main_thread():
        return solver.solve(cp), False
    done, box = threading.Event(), {}

    def run():
        try:
            box["code"] = solver.solve(cp)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="cpsat-solve", daemon=True).start()
    stopped = False
    while not done.is_set():
        try:
            done.wait(0.1 if stopped else None)
        except KeyboardInterrupt:
            stopped = True
        if stopped and not done.is_set():
            solver.stop_search()  # again until it ends: a stop before the search began is lost
    if "error" in box:
        raise box["error"]
    return box["code"], stopped
