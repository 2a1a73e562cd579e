"""Batch solving of instance files: one row per (instance, backend), streamed as solved.

Nothing a batch has solved is lost:

- A file that cannot be read or parsed (binary, not UTF-8/16/32, invalid JSON, nested too
  deeply, too large, against the schema) or a failing backend is a row with status ERROR and
  a one-line ``error`` naming the file; the batch goes on.
- ``RowWriter`` appends each row to a ``.jsonl`` or ``.csv`` file (or JSONL on stdout) and
  flushes it as soon as it is solved; the file is checked and its folder created before the
  first solve.  JSON is strict (RFC 8259): a missing or infinite number is ``null``.  Rows
  on standard output (``-``) are the only thing there: what solver libraries print goes to
  standard error meanwhile (``claim_stdout``).
- With ``handle_signals``, SIGINT/SIGTERM stop the batch: a solve in progress is interrupted
  and recorded as such (``limit`` INTERRUPT, termination ``interrupted``: NO_SOLUTION, or the
  incumbent for backends that stop cleanly, like CP-SAT), the rest is not started, every row
  solved so far is kept (``BatchRun.signum`` says which signal; exit code 128 + signum).
- ``--resume``: the pairs already in the output file are skipped (``RowWriter.done``); the
  rows a resumed run solves again (interrupted or failed before) replace the old ones, so a
  finished batch has one row per (file, instance, backend).

Where the instances are solved is an ``hpcopt.executors.Executor``: here (serial), a local
process pool (``workers > 1``) or a Dask cluster (``executor=DaskExecutor(...)``); files are
shipped as paths in chunks and rows stream back as chunks finish.  Every instance is solved
with the seed ``instance_seed(seed, instance name)`` (``seed`` default ``DEFAULT_SEED``, 0),
whatever the executor, so placement never changes an answer.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import signal
import sys
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import HpcoptError, InstanceError, one_line
from .executors import Interrupted, StopSignals, run_tasks, worker_stop
from .instances import (
    decode_instance_bytes,
    expand_paths,
    instance_from_dict,
    load_instance,
    parse_instance_text,
)
from .jsonsafe import json_safe
from .result import Termination, outcome_columns

COLUMNS = ["instance", "model", "backend", "status", "objective", "bound", "gap",
           "wall_time_s", "certified", "decision", "limit", "seed", "error"]
# every field a row can have, in file order (CSV header)
ROW_COLUMNS = ["file", "instance", "model", "backend", "status", "termination", "solution",
               "objective", "bound", "gap", "wall_time_s", "certified", "decision", "limit",
               "seed", "backend_version", "error", "rule", "pareto", "history", "log"]
STDIN = "-"


# ---------------------------------------------------------------------------- rows


def _finish(row: dict) -> dict:
    """The row with JSON values only, its fields in ``ROW_COLUMNS`` order (then others)."""
    ordered = {k: row[k] for k in ROW_COLUMNS if k in row}
    ordered.update((k, v) for k, v in row.items() if k not in ordered)
    return json_safe(ordered)


def row_json(row: dict) -> str:
    """One strict JSON line (RFC 8259: no NaN or Infinity)."""
    return json.dumps(json_safe(row), allow_nan=False)


def _error_row(file: str, instance: str, backend: str, message: str, model: str = "") -> dict:
    """A row for a pair that failed; its message names the file (a backend's own message
    names only the backend)."""
    if file not in message:
        message = f"{file}: {message}"
    return {**dict.fromkeys(COLUMNS), "file": file, "instance": instance, "model": model,
            "backend": backend, **outcome_columns(Termination.ERROR),
            "certified": False, "error": message}


def _interrupted_row(file: str, instance: str, backend: str, model: str, signum: int,
                     wall: float, seed) -> dict:
    return {**dict.fromkeys(COLUMNS), "file": file, "instance": instance, "model": model,
            "backend": backend, **outcome_columns(Termination.INTERRUPTED),
            "wall_time_s": wall, "seed": seed,
            "certified": False,
            "error": f"interrupted by {signal.Signals(signum).name} before it finished"}


def is_done(row: dict) -> bool:
    """A row that ``--resume`` keeps (of a batch or a sweep): solved or run to the end, its
    termination neither ``error`` nor ``interrupted`` (nor its status column ``ERROR``: a
    row marked failed by hand, or by an older version, is run again)."""
    return (row.get("termination") not in (Termination.ERROR.value,
                                           Termination.INTERRUPTED.value)
            and row.get("status") != "ERROR")


def row_key(row: dict) -> tuple:
    return (row.get("file") or None, row.get("instance"), row.get("backend"))


# ---------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Item:
    """One instance to solve: a file path, or an envelope already read (from stdin)."""

    file: str
    obj: Any = None
    parsed: bool = False
    error: str | None = None
    index: int = 0
    where: str | None = None  # the path to read, when not ``file`` (absolute, for Dask)

    @property
    def name(self) -> str:
        """What an error row calls the instance when the file cannot be loaded."""
        return self.file if self.parsed or self.error else Path(self.file).name

    def load(self):
        if self.error is not None:
            raise InstanceError(self.error)
        if self.parsed:
            return instance_from_dict(self.obj, self.file)
        if self.where is not None and self.where != self.file:
            try:
                return load_instance(self.where)
            except InstanceError as err:  # name the file as the user gave it
                raise InstanceError(str(err).replace(self.where, self.file)) from None
        return load_instance(self.file)


def read_stdin_items(stream) -> list[Item]:
    """Instances from a binary stream: one envelope, a JSON array of envelopes, or JSON
    Lines (one envelope per line).  Entries are named ``<stdin>``, ``<stdin>[i]`` (array
    index) or ``<stdin>:N`` (line); one that cannot be parsed is an error item."""

    label = "<stdin>"
    try:
        text = decode_instance_bytes(stream.read(), label)
    except InstanceError as err:
        return [Item(label, error=one_line(err))]
    try:
        obj = parse_instance_text(text, label)
    except InstanceError as err:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
        if len(lines) < 2:
            return [Item(label, error=one_line(err))]
        items = []
        for n, line in lines:  # JSON Lines
            where = f"{label}:{n}"
            try:
                items.append(Item(where, parse_instance_text(line, where), parsed=True))
            except InstanceError as line_err:
                items.append(Item(where, error=one_line(line_err)))
        return items
    if isinstance(obj, list):
        return [Item(f"{label}[{i}]", o, parsed=True) for i, o in enumerate(obj)]
    return [Item(label, obj, parsed=True)]


def expand_items(patterns, stdin=None) -> list[Item]:
    """Items for file names, folders, quoted globs and ``-`` (stdin, read once), in order
    without duplicates; a pattern that matches nothing is an error item (its rows say so)."""

    items: dict[str, Item] = {}
    for pattern in patterns:
        text = str(pattern)
        if text == STDIN:
            if not any(i.parsed or i.error for i in items.values()):
                stream = stdin if stdin is not None else sys.stdin.buffer
                items.update((i.file, i) for i in read_stdin_items(stream))
            continue
        try:
            items.update((str(p), Item(str(p))) for p in expand_paths([text])
                         if str(p) not in items)
        except HpcoptError as exc:
            items.setdefault(f"\0{text}", Item(text, error=one_line(exc)))
    return [Item(i.file, i.obj, i.parsed, i.error, n) for n, i in enumerate(items.values())]


# ---------------------------------------------------------------------------- solving


def instance_seed(seed: int | None, name: str) -> int:
    """The seed an instance is solved with: a stable hash (SHA-256, not Python's salted
    ``hash``) of the batch seed (``None``: ``DEFAULT_SEED``) and the instance name, in
    0..2**31-1.  The same on every machine and executor, so placement never changes answers,
    and different instances get independent streams."""
    from .solvers.registry import DEFAULT_SEED

    base = DEFAULT_SEED if seed is None else int(seed)
    digest = hashlib.sha256(f"{base}\0{name}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def solve_item(item: Item, backends: list[str] | None, time_limit: float | None = None,
               seed: int | None = None, solver_options: dict | None = None, rule=None,
               done: frozenset | set = frozenset(),
               stop: StopSignals | None = None, derive_seed: bool = True) -> tuple[list[dict], int]:
    """Rows for one item solved by each backend (``None``: the model's default), and how
    many (instance, backend) pairs were skipped because they are in ``done``.

    The solver's seed is ``instance_seed(seed, instance name)`` (``derive_seed=False``:
    ``seed`` itself).  Multi-objective rows also carry ``pareto`` (a list of ``{"jobs",
    "objectives"}``) and ``rule``; their ``decision`` is the rule's pick."""
    from .solvers import solve

    stop = stop if stop is not None else worker_stop()
    if stop is not None and stop.signum is not None:
        return [], 0
    try:
        inst = item.load()
    except Exception as exc:  # noqa: BLE001 - a batch never dies because of one file
        return [_finish(_error_row(item.file, item.name, b, one_line(exc)))
                for b in backends or ["(default)"]], 0
    if derive_seed:
        seed = instance_seed(seed, inst.name)
    rows, skipped = [], 0
    for backend in backends or [inst.model.default_backend]:
        if (item.file, inst.name, backend) in done or (None, inst.name, backend) in done:
            skipped += 1
            continue
        if stop is not None and stop.signum is not None:
            break
        t0 = time.perf_counter()
        try:
            with stop.solving() if stop is not None else nullcontext():
                res = solve(inst.model, backend, time_limit=time_limit, seed=seed,
                            solver_options=solver_options, rule=rule)
            row = {"file": item.file, "instance": inst.name, **res.to_row(), "error": ""}
            if isinstance(solver_options, dict) and solver_options.get("solver_log"):
                row["log"] = res.log  # the solver's own log (solver_log), kept in the row
            if res.pareto is not None:
                row["rule"] = res.extra.get("rule")
                row["pareto"] = [{"jobs": list(inst.model.decision_ids(p.decision)),
                                  "objectives": list(p.objectives)} for p in res.pareto]
            if res.history:
                row["history"] = res.history  # a population search's convergence
            rows.append(_finish(row))
            if res.termination == Termination.INTERRUPTED:
                # Ctrl-C stopped this solve: a backend that catches SIGINT itself (SCIP) keeps
                # it from the batch's handler, so the batch stops here, as for any other
                if stop is not None and stop.signum is None:
                    stop.signum = signal.SIGINT
                break
        except Interrupted as exc:
            rows.append(_finish(_interrupted_row(
                item.file, inst.name, backend, inst.model.kind, exc.signum,
                time.perf_counter() - t0, seed)))
            break
        except Exception as exc:  # noqa: BLE001 - a batch never dies because of one instance
            rows.append(_finish(_error_row(item.file, inst.name, backend, one_line(exc),
                                             inst.model.kind)))
        finally:
            if stop is not None and stop is not worker_stop():
                stop.reinstall()
    return rows, skipped


def _solve_job(args):
    """Worker side of a batch: ``solve_item(*args)`` with the worker's stop handlers."""
    return solve_item(*args)


def _solve_here(args, stop):
    return solve_item(*args, stop=stop)


@dataclass
class BatchRun:
    """What ``run_batch`` did: the rows (in input order), the stop signal if one came,
    how many items there were and how many were finished, and skipped (resumed) pairs."""

    rows: list[dict] = field(default_factory=list)
    signum: int | None = None
    items: int = 0
    finished: int = 0
    skipped: int = 0


def run_batch(patterns, backends=None, *, time_limit=None, seed=None, workers: int = 1,
              progress: bool = False, solver_options: dict | None = None, rule=None,
              writer: RowWriter | None = None, handle_signals: bool = False,
              stdin=None, executor=None, chunk: int | None = None,
              on_row=None) -> BatchRun:
    """Solve every file matched by ``patterns`` (paths, folders, quoted globs, ``-`` for
    stdin) with every backend (``None``: each model's default); ``rule`` picks from Pareto
    sets.  Each row goes to ``writer`` as soon as it is solved; with ``handle_signals``
    SIGINT/SIGTERM stop the batch (``BatchRun.signum``) instead of raising.

    ``executor`` (``hpcopt.executors``) says where: default serial, or a local process pool
    when ``workers > 1``; ``chunk`` files per task shipped to a worker (default: about 8
    chunks per worker, at most 200 files each).  Rows are identical on every executor.
    ``on_row(row)`` is called with each row as it comes back (after ``writer``)."""
    # inputs first: Ctrl-C while stdin is read (a terminal) is a plain KeyboardInterrupt
    items = expand_items(patterns, stdin)
    if executor is not None and executor.remote:  # workers elsewhere: absolute paths
        items = [Item(i.file, i.obj, i.parsed, i.error, i.index,
                      None if i.parsed or i.error else os.path.abspath(i.file))
                 for i in items]
    run = BatchRun(items=len(items))
    order: list[tuple[int, dict]] = []
    done = writer.done if writer is not None else set()
    by_file: dict = {}
    for key in done:
        by_file.setdefault(key[0], set()).add(key)

    def args(item: Item) -> tuple:
        mine = by_file.get(item.file, set()) | by_file.get(None, set())
        return (item, None if backends is None else list(backends), time_limit, seed,
                solver_options, rule, mine)

    def on_result(i: int, result, error: str | None, stop: StopSignals) -> None:
        item = items[i]
        if error is not None:  # the worker failed outside solve_item (it died)
            rows, skipped = [_finish(_error_row(item.file, item.name, b, error))
                             for b in backends or ["(worker)"]], 0
        else:
            rows, skipped = result
        for row in rows:
            if writer is not None:
                writer.write(row)
            if on_row is not None:
                on_row(row)
            order.append((item.index, row))
        run.skipped += skipped
        if (rows or skipped) and not any(r.get("termination") == "interrupted"
                                         for r in rows):
            run.finished += 1
        elif stop.signum is None and any(r.get("limit") == "INTERRUPT" for r in rows):
            stop.signum = signal.SIGINT  # a backend that caught Ctrl-C itself

    run.signum = run_tasks([args(item) for item in items], _solve_job, _solve_here,
                           on_result, executor=executor, workers=workers, chunk=chunk,
                           handle_signals=handle_signals, progress=progress)
    run.rows = [row for _, row in sorted(order, key=lambda p: p[0])]
    return run


def solve_batch(patterns, backends=None, *, time_limit=None, seed=None, workers: int = 1,
                progress: bool = False, solver_options: dict | None = None,
                rule=None) -> list[dict]:
    """The rows of ``run_batch`` (no output file, no signal handling)."""
    return run_batch(patterns, backends, time_limit=time_limit, seed=seed, workers=workers,
                     progress=progress, solver_options=solver_options, rule=rule).rows


# ---------------------------------------------------------------------------- output


class RowWriter:
    """Rows to a ``.jsonl`` or ``.csv`` file, or JSONL on stdout (``-``): each row is
    appended and flushed when written, so an interrupted batch keeps every row it solved.

    The name is checked and the folder created when the writer is made (before the first
    solve).  With ``resume`` an existing file is read first: ``done`` holds its finished
    (file, instance, backend) keys, a truncated last line is dropped, and rows are appended
    (a CSV keeps its header); ``close`` then drops the old rows that a new row replaced.

    ``columns`` (the CSV header), ``key`` (a row's resume key) and ``command`` default to
    ``hpcopt solve``'s; ``hpcopt sweep`` passes its own."""

    def __init__(self, out: str | Path, *, resume: bool = False, stdout=None,
                 columns: list[str] = ROW_COLUMNS, key=row_key,
                 command: str = "hpcopt solve"):
        self.out = str(out)
        self.columns, self.key, self.command = columns, key, command
        self.count = 0
        self.done: set[tuple] = set()
        self.unreadable = 0
        self.path: Path | None = None
        self._own = False
        self._resumed = False
        self._saved_fd = None
        if self.out == STDIN:
            if resume:
                raise HpcoptError("--resume needs --out FILE (it reads the rows already "
                                  "written there), not -")
            self.kind = "jsonl"
            self._fh, self._saved_fd = (stdout, None) if stdout is not None else claim_stdout()
            return
        if not self.out.strip():
            raise HpcoptError(f"--out {self.out!r}: expected a file name ending in .jsonl or "
                              ".csv, or - for JSONL on standard output")
        path = Path(self.out)
        suffix = path.suffix.lower()
        if path.is_dir():
            raise HpcoptError(f"--out {self.out}: is a directory; expected a .jsonl or .csv "
                              "file name")
        if suffix not in (".jsonl", ".csv"):
            hint = " (.jsonl: one JSON object per line)" if suffix == ".json" else ""
            raise HpcoptError(f"--out {self.out}: expected a file name ending in .jsonl or "
                              f".csv{hint}, or - for JSONL on standard output")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise HpcoptError(f"--out {self.out}: cannot create the folder {path.parent} "
                              f"({err.strerror or err})") from None
        self.kind, self.path = suffix[1:], path
        header = None
        if resume and path.is_file():
            header = self._read_existing(path)
            self._resumed = True
        try:
            self._fh = path.open("a" if resume else "w", encoding="utf-8",
                                 newline="" if self.kind == "csv" else None)
        except OSError as err:
            raise HpcoptError(f"--out {self.out}: cannot write ({err.strerror or err})") \
                from None
        self._own = True
        if self.kind == "csv":
            self._csv = csv.DictWriter(self._fh, fieldnames=header or self.columns,
                                       extrasaction="ignore")
            if not header:
                self._csv.writeheader()
                self._fh.flush()

    def _read_existing(self, path: Path) -> list[str] | None:
        try:
            data = path.read_bytes()
        except OSError as err:
            raise HpcoptError(f"--resume: cannot read {path} ({err.strerror})") from None
        if data and not data.endswith(b"\n"):  # a row cut short when the last run stopped
            cut = data.rfind(b"\n") + 1
            with path.open("r+b") as fh:
                fh.truncate(cut)
            data = data[:cut]
            self.unreadable += 1
        text = data.decode("utf-8", errors="replace")
        if self.kind == "jsonl":
            rows = []
            for line in text.splitlines():
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError:
                    self.unreadable += 1
                    continue
                if isinstance(row, dict):
                    rows.append(row)
            header = None
        else:
            reader = csv.DictReader(text.splitlines())
            header = reader.fieldnames
            need = {"instance", "backend"} if self.key is row_key else {self.columns[0]}
            if header and not need <= set(header):
                raise HpcoptError(f"--resume: {path} is not an '{self.command}' CSV (no "
                                  f"{' and '.join(sorted(need))} column)")
            rows = list(reader)
        self.done = {self.key(r) for r in rows if is_done(r)}
        return header

    def write(self, row: dict) -> None:
        if self.kind == "jsonl":
            self._fh.write(row_json(row) + "\n")
        else:
            safe = json_safe(row)
            flat = {k: json.dumps(v, allow_nan=False) if isinstance(v, dict) else v
                    for k, v in safe.items()}
            flat["decision"] = _ids_text(safe.get("decision"))
            if safe.get("pareto") is not None:
                flat["pareto"] = json.dumps(safe["pareto"], allow_nan=False)
            self._csv.writerow(flat)
        self._fh.flush()
        self.count += 1

    def close(self) -> None:
        if self._saved_fd is not None:
            release_stdout(self._fh, self._saved_fd)
            self._saved_fd = None
        if self._own:
            self._fh.close()
            self._own = False
            if self._resumed and self.count:
                self._drop_replaced()

    def _drop_replaced(self) -> None:
        """Rewrite the file without the unfinished rows (interrupted, failed) that a later
        row replaced: the same key, or for a file that could not be read (no model) the same
        file and backend, or the same file when the backend was a placeholder.  Written
        aside and renamed over the file, so a stop in between loses nothing."""
        text = self.path.read_text(encoding="utf-8", errors="replace")
        if self.kind == "jsonl":
            lines = [line for line in text.splitlines() if line.strip()]
            rows = []
            for line in lines:
                try:
                    row = json.loads(line)
                except ValueError:
                    row = None
                rows.append(row if isinstance(row, dict) else {})
            header = None
        else:
            reader = csv.DictReader(text.splitlines())
            rows = list(reader)
            lines, header = rows, reader.fieldnames
        keys, pairs, files, keep = set(), set(), set(), []
        for line, row in zip(reversed(lines), reversed(rows)):
            key, file, backend = self.key(row), row.get("file"), row.get("backend")
            replaced = key in keys
            if self.key is row_key and file is not None and not row.get("model"):
                # the file could not be read: its instance name is the file's, and a
                # backend in parentheses ("(default)") stands for whichever ran later
                replaced = replaced or (file, backend) in pairs or (
                    str(backend).startswith("(") and file in files)
            if row and not is_done(row) and replaced:
                continue
            keys.add(key)
            pairs.add((file, backend))
            files.add(file)
            keep.append(line)
        if len(keep) == len(lines):
            return
        keep.reverse()
        tmp = self.path.with_name(self.path.name + ".tmp")
        with tmp.open("w", encoding="utf-8", newline="" if self.kind == "csv" else None) as fh:
            if self.kind == "jsonl":
                fh.write("".join(line + "\n" for line in keep))
            else:
                out = csv.DictWriter(fh, fieldnames=header, extrasaction="ignore")
                out.writeheader()
                out.writerows(keep)
        os.replace(tmp, self.path)


def claim_stdout(stream=None):
    """``(text stream, saved fd)``: a stream on the process's standard output for lines a
    program reads (rows, replies), while file descriptor 1 points at standard error, so what
    libraries print from C goes to stderr (SCIP's "pressed CTRL-C" banner is silenced where
    SCIP runs), never among the lines; ``release_stdout`` undoes it.  ``(stream, None)``
    when ``stream`` (default ``sys.stdout``) is not file descriptor 1, such as a test's
    capture."""
    stream = sys.stdout if stream is None else stream
    try:
        if stream.fileno() != 1:
            return stream, None
    except (AttributeError, OSError, ValueError):
        return stream, None
    stream.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    return os.fdopen(os.dup(saved), "w", encoding="utf-8"), saved


def release_stdout(stream, saved: int | None) -> None:
    """Point file descriptor 1 back at standard output (``claim_stdout``)."""
    if saved is None:
        return
    stream.close()
    sys.stdout.flush()
    os.dup2(saved, 1)
    os.close(saved)


def write_rows(rows: list[dict], path: str | Path) -> Path:
    """Write rows as CSV (decision as space-separated ids) or JSONL, chosen by suffix."""
    writer = RowWriter(path)
    try:
        for row in rows:
            writer.write(row)
    finally:
        writer.close()
    return Path(path)


def _ids_text(ids) -> str:
    return "" if ids is None else " ".join(str(i) for i in ids)
