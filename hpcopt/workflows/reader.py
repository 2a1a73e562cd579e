"""WfFormat reader: ``load_wfformat(path)`` -> ``Workflow`` (stdlib json + gzip only).

The ``wfcommons`` package fetches its JSON schema from the network when it loads an
instance, so it cannot run offline; this reader reads the documents directly.

Schema versions read
--------------------
* **1.5** (and any version with ``workflow.specification``/``workflow.execution``, the
  WfInstances snapshot in the data directory's ``workflows/wfinstances``):
  ``workflow.specification.tasks[{id, parents}]`` give the DAG,
  ``workflow.execution.tasks[{id, runtimeInSeconds, coreCount?}]`` the measured runtimes.
  Every specification task must have an execution record (and the other way round).
* **<= 1.4** (one task list): ``workflow.tasks`` (1.2-1.4) or ``workflow.jobs`` (1.0-1.1),
  each ``{name | id, parents, runtimeInSeconds | runtime, cores?}``; ``parents`` entries are
  task names or ``{"name": ...}`` objects.

Bad input raises ``WorkflowError`` with one line naming the file and the field, e.g.
``montage.json: workflow.execution.tasks[3].runtimeInSeconds: expected a number >= 0, got
'x'``.  Checked: valid JSON (gzip detected from the magic bytes), the lists above, unique
task ids, runtimes between 0 and ``MAX_RUNTIME`` seconds, core counts whole numbers between 1
and ``MAX_CORES``, every parent a known task, no cycle.

``coreCount``/``cores`` is kept on each task (default 1) but the stage rule in
``hpcopt.workflows.stages`` counts a task as one core, like the paper's Tigres tasks.

A task's ``command`` (``{program, arguments}``: in the execution record in 1.5, on the task
in 1.2-1.4) is kept as ``Task.command``, the program and its arguments as strings (empty
when the file gives none); ``hpcopt workflow --slurm --run-commands`` runs it.
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass
from pathlib import Path

from hpcopt.datadir import resolve_input
from hpcopt.errors import HpcoptError

# the bounds of a task: longer or wider is a mistake in the file, and would overflow the sums
# of runtimes a schedule adds up
MAX_RUNTIME = 1e9  # seconds, about 31 years
MAX_CORES = 10**7


class WorkflowError(HpcoptError, ValueError):
    """Bad workflow input or settings (one line naming the file and field)."""


@dataclass(frozen=True, slots=True)
class Task:
    """One workflow task: its id, measured runtime (s), parents (ids), core count and
    command (program and arguments; empty: none given)."""

    id: str
    runtime: float
    parents: tuple[str, ...] = ()
    cores: int = 1
    command: tuple[str, ...] = ()


@dataclass(frozen=True)
class Workflow:
    """A workflow DAG read from a WfFormat file; ``tasks`` in file order."""

    name: str
    tasks: tuple[Task, ...]
    source: str = ""
    schema_version: str = ""

    def levels(self) -> list[list[Task]]:
        """Tasks grouped by DAG level: level(t) = 0 for a task without parents, else
        1 + max level of its parents (the longest path from a source)."""
        return _levels(self.tasks, self.source or self.name)


def _fail(src: str, field: str, msg: str):
    raise WorkflowError(f"{src}: {field}: {msg}")


def _read_doc(path: Path, src: str):
    from hpcopt.traces._text import read_bytes

    raw = read_bytes(path, src, WorkflowError, "workflow")
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise WorkflowError(f"{src}: not UTF-8 text: {exc}") from None
    except json.JSONDecodeError as exc:
        raise WorkflowError(f"{src}: invalid JSON at line {exc.lineno} column {exc.colno}: "
                            f"{exc.msg}") from None
    except RecursionError:
        raise WorkflowError(f"{src}: invalid JSON: nested too deeply (expected a WfFormat "
                            "document)") from None


def _list(src, field, value):
    if not isinstance(value, list):
        _fail(src, field, f"expected a list, got {type(value).__name__}")
    return value


def _obj(src, field, value):
    if not isinstance(value, dict):
        _fail(src, field, f"expected an object, got {type(value).__name__}")
    return value


def _runtime(src, field, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not 0 <= value <= MAX_RUNTIME:  # NaN fails too
        _fail(src, field, f"expected seconds from 0 to {MAX_RUNTIME:g}, got {_show(value)}")
    return float(value)


def _cores(src, field, value) -> int:
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not 1 <= value <= MAX_CORES or value != math.floor(value):  # NaN fails too
        _fail(src, field, f"expected a whole number from 1 to {MAX_CORES}, got {_show(value)}")
    return int(value)


def _command(src, field, value) -> tuple[str, ...]:
    if value is None:
        return ()
    rec = _obj(src, field, value)
    program = rec.get("program")
    if not isinstance(program, str) or not program.strip():
        _fail(src, f"{field}.program", f"expected a program name, got {_show(program)}")
    args = _list(src, f"{field}.arguments", rec.get("arguments", []))
    for i, a in enumerate(args):
        if isinstance(a, bool) or not isinstance(a, (str, numbers.Real)):
            _fail(src, f"{field}.arguments[{i}]", f"expected a string, got {_show(a)}")
    return (program, *(str(a) for a in args))


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _task_id(src, field, rec) -> str:
    for name in ("id", "name"):
        v = rec.get(name)
        if v is not None:
            if not isinstance(v, (str, int)) or isinstance(v, bool) or v == "":
                _fail(src, f"{field}.{name}", f"expected a non-empty string, got {v!r}")
            return str(v)
    _fail(src, field, "a task needs an 'id' (or 'name')")


def _parents(src, field, value) -> tuple[str, ...]:
    out = []
    for i, p in enumerate(_list(src, field, [] if value is None else value)):
        if isinstance(p, dict):
            p = p.get("id", p.get("name"))
        if not isinstance(p, (str, int)) or isinstance(p, bool):
            _fail(src, f"{field}[{i}]", f"expected a task id, got {p!r}")
        out.append(str(p))
    return tuple(out)


def load_wfformat(path) -> Workflow:
    """Read a WfFormat instance (``.json`` or ``.json.gz``; or a data set name such as
    ``wf-bwa/bwa-chameleon-large-001``, ``hpcopt.datadir.resolve_input``) into a ``Workflow``."""
    path = resolve_input(path, "workflow")
    p = Path(path)
    src = str(path)
    doc = _obj(src, "document", _read_doc(p, src))
    version = str(doc.get("schemaVersion", ""))
    wf = _obj(src, "workflow", doc.get("workflow"))
    name = p.name.split(".json")[0] or str(doc.get("name", ""))
    if "specification" in wf or "execution" in wf:
        spec = _obj(src, "workflow.specification", wf.get("specification"))
        exe = _obj(src, "workflow.execution", wf.get("execution"))
        stasks = _list(src, "workflow.specification.tasks", spec.get("tasks"))
        etasks = _list(src, "workflow.execution.tasks", exe.get("tasks"))
        runs: dict[str, tuple[float, int, tuple[str, ...]]] = {}
        for i, rec in enumerate(etasks):
            f = f"workflow.execution.tasks[{i}]"
            rec = _obj(src, f, rec)
            tid = _task_id(src, f, rec)
            if tid in runs:
                _fail(src, f"{f}.id", f"duplicate task id {tid!r}")
            if "runtimeInSeconds" not in rec:
                _fail(src, f"{f}.runtimeInSeconds", "missing")
            runs[tid] = (_runtime(src, f"{f}.runtimeInSeconds", rec["runtimeInSeconds"]),
                         _cores(src, f"{f}.coreCount", rec.get("coreCount")),
                         _command(src, f"{f}.command", rec.get("command")))
        tasks, seen = [], set()
        for i, rec in enumerate(stasks):
            f = f"workflow.specification.tasks[{i}]"
            rec = _obj(src, f, rec)
            tid = _task_id(src, f, rec)
            if tid in seen:
                _fail(src, f"{f}.id", f"duplicate task id {tid!r}")
            seen.add(tid)
            if tid not in runs:
                _fail(src, f"{f}.id", f"task {tid!r} has no record in workflow.execution.tasks")
            rt, cores, command = runs[tid]
            tasks.append(Task(tid, rt, _parents(src, f"{f}.parents", rec.get("parents")), cores,
                              command))
        extra = [t for t in runs if t not in seen]
        if extra:
            _fail(src, "workflow.execution.tasks",
                  f"task {extra[0]!r} is not in workflow.specification.tasks")
    else:
        key = "tasks" if "tasks" in wf else "jobs"
        items = _list(src, f"workflow.{key}", wf.get(key))
        tasks, seen = [], set()
        for i, rec in enumerate(items):
            f = f"workflow.{key}[{i}]"
            rec = _obj(src, f, rec)
            tid = _task_id(src, f, rec)
            if tid in seen:
                _fail(src, f"{f}.id", f"duplicate task id {tid!r}")
            seen.add(tid)
            rname = "runtimeInSeconds" if "runtimeInSeconds" in rec else "runtime"
            if rname not in rec:
                _fail(src, f"{f}.runtimeInSeconds", "missing (nor 'runtime')")
            tasks.append(Task(tid, _runtime(src, f"{f}.{rname}", rec[rname]),
                              _parents(src, f"{f}.parents", rec.get("parents")),
                              _cores(src, f"{f}.cores", rec.get("cores",
                                                               rec.get("coreCount"))),
                              _command(src, f"{f}.command", rec.get("command"))))
    if not tasks:
        _fail(src, "workflow tasks", "the workflow has no task")
    ids = {t.id for t in tasks}
    for t in tasks:
        for p in t.parents:
            if p not in ids:
                _fail(src, f"task {t.id!r}.parents", f"unknown parent {p!r}")
    wfl = Workflow(name, tuple(tasks), src, version)
    _levels(wfl.tasks, src)  # raises on a cycle
    return wfl


def _levels(tasks, src) -> list[list[Task]]:
    """Kahn's algorithm in file order; level = longest path from a source."""
    by_id = {t.id: t for t in tasks}
    children: dict[str, list[str]] = {t.id: [] for t in tasks}
    indeg = {t.id: len(set(t.parents)) for t in tasks}
    for t in tasks:
        for p in set(t.parents):
            children[p].append(t.id)
    level = {t.id: 0 for t in tasks}
    ready = [t.id for t in tasks if indeg[t.id] == 0]
    done = 0
    while ready:
        nxt = []
        for tid in ready:
            done += 1
            for c in children[tid]:
                level[c] = max(level[c], level[tid] + 1)
                indeg[c] -= 1
                if indeg[c] == 0:
                    nxt.append(c)
        ready = nxt
    if done != len(tasks):
        stuck = next(t.id for t in tasks if indeg[t.id] > 0)
        raise WorkflowError(f"{src}: workflow tasks: the DAG has a cycle (through task "
                            f"{stuck!r})")
    out: list[list[Task]] = [[] for _ in range(max(level.values()) + 1)]
    for t in tasks:
        out[level[t.id]].append(by_id[t.id])
    return out
