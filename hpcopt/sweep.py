"""Parameter sweeps: the Cartesian product of ``simulate`` settings x seeds, one summary row
per run, on the same executors as ``hpcopt solve`` (serial, local pool, Dask).

A sweep file (``SWEEP.json``) is one JSON object; every key is a setting, a list is an axis
of the product and anything else a single value::

    {
      "trace":  ["instances/traces/demo.swf"],     # required; relative to the sweep file
      "policy": ["fcfs", "knapsack"],
      "backend": ["dp", "cpsat"],                  # a policy option, like "value", "time_limit"
      "window": [10, 20],
      "seed":   [0, 1, 2],                         # default [0]
      "jobs":   500,                               # first N jobs of each trace
      "options": {"value": ["nodes", "node_hours"]}   # policy options may also go here
    }

Settings: ``trace``, ``nodes``, ``jobs``, ``cores_per_node``, ``policy``, ``order``,
``backfill``, ``window``, ``seed``, ``starvation_bound``, ``period``, ``warmup``,
``cooldown``, ``workload``, ``workload_seed``, ``bb``, ``ssd_classes``, ``topology`` (the
flat names of ``hpcopt.run_settings.RunSettings``, as ``hpcopt.simulate`` takes them; each
run is one ``RunSettings``) and the options of any registered policy
(``hpcopt policies``), at the top level or under ``"options"``.  A policy option goes only to
the policies that take it (``backend`` does not multiply the ``fcfs`` runs); runs that end
up with the same settings are run once.  An option whose value is itself a list (``weights``)
is written as a list of lists (``[[0.5, 0.5]]``: one value).

Each row: ``run`` (a stable id of the settings: the ``--resume`` key), the run's settings,
``status`` (the run's own, the spelling of its termination that sweep files have always
had: ``DONE`` for a finished run, ``INTERRUPTED``, ``ERROR``; a simulation has no solver
status), every ``summary`` metric, ``wall_time_s``, ``termination`` (``finished``,
``interrupted``, ``error``) and ``error``.  A run that fails (a window of 0, a trace that cannot be
read) is an error row and the sweep goes on; unknown policy and backend names stop
``load_sweep`` at once; ``--resume`` skips the runs already finished in ``--out``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import signal
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .api import simulate_run
from .batch import is_done
from .datadir import resolve_input
from .errors import (
    DataNotFoundError,
    HpcoptError,
    UnknownPolicyError,
    UnknownSolverError,
    closest,
    one_line,
)
from .executors import Interrupted, run_tasks, worker_stop
from .jsonsafe import json_safe
from .policies import policy_names
from .policies.base import policy_options
from .result import Termination
from .run_settings import RunSettings
from .solvers import get_solver

SIM_KEYS = ["trace", "nodes", "jobs", "cores_per_node", "policy", "order", "backfill",
            "window", "seed", "starvation_bound", "period", "warmup", "cooldown", "workload",
            "workload_seed", "bb", "ssd_classes", "topology"]
METRICS = ["job_count", "avg_wait", "max_wait", "avg_response", "avg_slowdown",
           "avg_bounded_slowdown", "utilization", "makespan", "node_seconds", "first_submit",
           "last_end", "trimmed_warmup", "trimmed_cooldown", "bb_usage", "ssd_usage",
           "wasted_ssd", "avg_comm_cost"]
TAIL = ["wall_time_s", "termination", "error"]
# a run's ``status`` column: its termination as sweep files spell it (a simulation has no
# solver status)
RUN_STATUS = {Termination.FINISHED: "DONE", Termination.INTERRUPTED: "INTERRUPTED",
              Termination.ERROR: "ERROR"}
DEFAULT_SEEDS = [0]


def run_key(row: dict) -> str | None:
    """A sweep row's resume key: its ``run`` id."""
    return row.get("run") or None


def run_id(settings: dict) -> str:
    """A stable id of a run's settings (SHA-256 of their canonical JSON, 16 hex digits)."""
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class Sweep:
    """The runs of a sweep file: ``runs`` (settings dicts, in product order), the folder
    relative trace paths are read from, and the CSV columns."""

    runs: list[dict]
    base: Path
    keys: list[str]

    @property
    def columns(self) -> list[str]:
        return ["run", *self.keys, "status", *METRICS, *TAIL]


def _policy_option_names() -> set[str]:
    return set().union(*(policy_options(p) for p in policy_names())) - set(SIM_KEYS)


def _accepts(policy: Any, option: str) -> bool:
    try:
        return option in policy_options(policy)
    except Exception:  # noqa: BLE001 - an unknown policy: its run is an error row
        return True


def load_sweep(spec: str | Path | dict, base: str | Path | None = None) -> Sweep:
    """The runs of a sweep (a file name or the parsed object); a malformed sweep file (not a
    JSON object, an unknown or missing key, an empty axis) is an ``HpcoptError``."""
    label = "sweep"
    if not isinstance(spec, dict):
        label = str(spec)
        path = Path(spec)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise HpcoptError(f"{label}: cannot read ({getattr(err, 'strerror', None) or err})"
                              ) from None
        try:
            spec = json.loads(text)
        except ValueError as err:
            raise HpcoptError(f"{label}: not JSON ({err})") from None
        base = path.resolve().parent if base is None else base
    if not isinstance(spec, dict):
        raise HpcoptError(f"{label}: expected a JSON object of settings, e.g. "
                          '{"trace": "t.swf", "policy": ["fcfs", "sjf"], "seed": [0, 1]}')
    spec = dict(spec)
    options = spec.pop("options", {})
    if not isinstance(options, dict):
        raise HpcoptError(f"{label}: options: expected an object of policy options")
    known = _policy_option_names()
    axes: dict[str, list] = {}
    for name, value in [*spec.items(), *options.items()]:
        if name in axes:
            raise HpcoptError(f"{label}: {name} is given twice (top level and options)")
        if name not in SIM_KEYS and name not in known:
            raise HpcoptError(f"{label}: unknown setting {name!r}; expected one of "
                              f"{', '.join(SIM_KEYS)} or a policy option ("
                              f"{', '.join(sorted(known))})." + closest(name, SIM_KEYS
                                                                          + sorted(known)))
        values = value if isinstance(value, list) else [value]
        if not values:
            raise HpcoptError(f"{label}: {name}: an empty list leaves nothing to run")
        axes[name] = values
    if "trace" not in axes:
        raise HpcoptError(f"{label}: 'trace' is required (a trace file or a list of them)")
    for t in axes["trace"]:
        if not isinstance(t, str) or not t:
            raise HpcoptError(f"{label}: trace: expected file names, got {t!r}")
    axes.setdefault("policy", ["fcfs"])
    axes.setdefault("seed", DEFAULT_SEEDS)
    _check_names(label, axes)
    keys = [k for k in SIM_KEYS if k in axes] + [k for k in axes if k not in SIM_KEYS]
    runs, seen = [], set()
    for combo in itertools.product(*(axes[k] for k in keys)):
        settings = dict(zip(keys, combo))
        settings = {k: v for k, v in settings.items()
                    if k in SIM_KEYS or _accepts(settings["policy"], k)}
        ident = run_id(settings)
        if ident not in seen:
            seen.add(ident)
            runs.append(settings)
    return Sweep(runs, Path(base) if base is not None else Path.cwd(), keys)


def _check_names(label: str, axes: dict) -> None:
    """Policy and backend names are checked with the file, before any run: a typo is one
    line, not a row per run."""
    for name in axes["policy"]:
        if isinstance(name, str):
            try:
                policy_options(name)
            except UnknownPolicyError as err:
                raise HpcoptError(f"{label}: policy: {err}") from None
    for name in axes.get("backend", []):
        if isinstance(name, str):
            try:
                get_solver(name)
            except UnknownSolverError as err:
                raise HpcoptError(f"{label}: backend: {err}") from None


def trace_path(sweep: Sweep, trace: str) -> Path:
    """The file of a sweep's ``trace``: a path (a relative one under ``sweep.base``), else a
    data set name or a path in the data directory (``hpcopt.datadir.resolve_input``)."""
    path = Path(trace)
    local = path if path.is_absolute() else sweep.base / path
    return local if local.exists() else Path(resolve_input(trace, "trace"))


def missing_traces(sweep: Sweep) -> list[str]:
    """Why each of the sweep's traces that name no file (``trace_path``) is missing: "no such
    file", or what the data directory lacks and the fetch that brings it."""
    traces = dict.fromkeys(s["trace"] for s in sweep.runs)
    missing = []
    for t in traces:
        try:
            if not trace_path(sweep, t).exists():
                missing.append(f"trace {t}: no such file")
        except DataNotFoundError as err:
            missing.append(f"trace {err}")
    return missing


def _row(settings: dict, termination: Termination, **fields) -> dict:
    """A strict-JSON row: run id, settings, status, metrics, then wall time, termination
    and error."""
    tail = {k: fields.pop(k, None) for k in TAIL}
    tail["termination"] = termination.value
    return json_safe({"run": run_id(settings), **settings,
                      "status": RUN_STATUS[termination], **fields, **tail})


def run_one(task: tuple, stop=None) -> dict:
    """Worker side: the row of one run (``task`` = (settings, trace path to read))."""
    settings, path = task
    stop = stop if stop is not None else worker_stop()
    t0 = time.perf_counter()
    try:
        run = RunSettings.from_flat(**{k: v for k, v in settings.items() if k != "trace"})
        with stop.solving() if stop is not None else nullcontext():
            res = simulate_run(path, run)
        summary = {k: res.summary[k] for k in METRICS if k in res.summary}
        summary.update((k, v) for k, v in res.summary.items() if k not in summary)
        return _row(settings, Termination.FINISHED, **summary,
                    wall_time_s=time.perf_counter() - t0, error="")
    except Interrupted as exc:
        return _row(settings, Termination.INTERRUPTED,
                    wall_time_s=time.perf_counter() - t0,
                    error=f"interrupted by {signal.Signals(exc.signum).name} before it "
                          "finished")
    except Exception as exc:  # noqa: BLE001 - a bad setting is an error row
        return _row(settings, Termination.ERROR, wall_time_s=time.perf_counter() - t0,
                    error=one_line(exc) or type(exc).__name__)
    finally:
        if stop is not None and stop is not worker_stop():
            stop.reinstall()


def _run_here(task, stop):
    return run_one(task, stop)


@dataclass
class SweepRun:
    """What ``run_sweep`` did: rows (in sweep order), the stop signal if one came, the
    number of runs, how many finished, and how many were skipped (already in ``--out``)."""

    rows: list[dict] = field(default_factory=list)
    signum: int | None = None
    runs: int = 0
    finished: int = 0
    skipped: int = 0


def run_sweep(sweep: Sweep | str | Path | dict, *, writer=None, executor=None,
              workers: int = 1, chunk: int | None = None, handle_signals: bool = False,
              progress: bool = False) -> SweepRun:
    """Run every setting of ``sweep`` (a ``Sweep``, a sweep file or its object); each row
    goes to ``writer`` (a ``RowWriter``) as soon as its run ends.  The executor and stop
    handling are ``hpcopt solve``'s (``hpcopt.executors.run_tasks``)."""
    if not isinstance(sweep, Sweep):
        sweep = load_sweep(sweep)
    done = writer.done if writer is not None else set()
    todo = [(i, s) for i, s in enumerate(sweep.runs) if run_id(s) not in done]
    run = SweepRun(runs=len(sweep.runs), skipped=len(sweep.runs) - len(todo))
    rows: list[tuple[int, dict]] = []

    def where(trace: str) -> str:
        return str(trace_path(sweep, trace))

    def on_result(i: int, row, error: str | None, stop) -> None:
        index, settings = todo[i]
        if error is not None:  # the worker died
            row = _row(settings, Termination.ERROR, error=error)
        if writer is not None:
            writer.write(row)
        rows.append((index, row))
        if is_done(row):
            run.finished += 1

    tasks = [(s, os.path.abspath(where(s["trace"]))) for _, s in todo]
    run.signum = run_tasks(tasks, run_one, _run_here, on_result, executor=executor,
                           workers=workers, chunk=chunk, handle_signals=handle_signals,
                           progress=progress, desc="sweep", unit="run")
    run.rows = [row for _, row in sorted(rows, key=lambda p: p[0])]
    return run
