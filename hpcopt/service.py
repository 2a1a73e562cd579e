"""Decide one window from any language: the ``hpcopt/1`` protocol.

``handle(request) -> reply`` is the whole service, one JSON object in and one out; it never
raises.  ``hpcopt serve --stdio`` runs it over line-delimited JSON (``serve_lines``) and
``hpcopt decide`` once over stdin; an HTTP or Batsim adapter would be a thin wrapper too.

Requests (every reply carries the request's ``id`` and ``"ok": true|false``; a failure is
``{"id", "ok": false, "error": {"type", "message"}}`` with a one-line message):

- ``{"id": 1, "op": "hello"}`` -> ``protocol``, ``version``, ``policies``, ``backends``.
- ``{"id": 2, "op": "solve", "instance": ENVELOPE, "backend": "dp", "time_limit": 1.0}``
  (also ``seed``, ``options``, ``rule``) -> the fields of a ``hpcopt solve`` JSONL row.
- ``{"id": 3, "op": "decide", "policy": "knapsack", "options": {...}, "window": WINDOW}``
  (also ``order``, ``backfill``, ``window_size``, ``starvation_bound``, ``seed``) ->
  ``start`` (ids to start now), ``reserve`` (``{"id", "time"}`` or null), ``backfill``
  (ids), ``status`` (``"decided"``), ``wall_time_s``: exactly the pass the driver would run
  in that state (``hpcopt.sim.driver.Simulator.at``).
- ``{"id": 4, "op": "asa_sample", "key": 56[, "estimate_s": E]}`` -> ``index``, ``wait_s``:
  the ASA queue-wait estimate for a proactive submission of that job geometry
  (``hpcopt.agents.asa.ASAEstimator.sample``); ``{"id": 5, "op": "asa_observe", "key": 56,
  "index": I, "wait_s": W[, "estimate_s": E]}`` -> ``loss``, ``rounds``, ``observations``
  once the job started after waiting W.  Both take ``"estimator": NAME`` (default
  ``"default"``; one estimator per name, kept for the life of the process), ``"config"``
  (``ASAEstimator`` arguments: they make NAME when it is first seen, later they must match
  it) and ``"path"`` (load from that
  file when NAME is first seen and it exists; ``asa_observe`` saves there).

``WINDOW`` is ``{"time": T, "system": {"nodes": N[, "bb": GB, "ssd_classes": {"128": n}]},
"free": {"nodes": F}, "queue": [{"id", "submit", "walltime", "nodes"[, "bb", "ssd",
"priority", "passed"]}, ...], "running": [{"id", "nodes", "expected_end"[, "bb", "ssd"]},
...]}``; ``free`` is optional and, when given, must equal what the running jobs leave.
A cloud-slot state (OSDEC deferrable jobs, ``hpcopt.osdec``) adds ``"capacity": [C_T,
C_T+1, ...]`` to ``system`` (the usable capacity now, then a forecast per slot of
``"slot"`` time units, default 1; the last value holds after), ``"earliest"``/``"latest"`` to
the queued jobs, ``"upcoming"``: the submitted jobs whose earliest start has not come (the
future set, same fields), and ``"weights": {"w1", "w2"[, "end"]}`` for the policies that
price delay and violation (``rolling-mip``; ``end``: the slot where the objective stops
pricing overload, the instance's T); it runs with no backfilling, as ``hpcopt simulate`` does.
Learned policies keep state between passes (a held reservation, online learning), which one
window does not carry: decide answers for them as for a first pass.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
import time
from typing import Any

from .agents.asa import ASAEstimator
from .batch import Item, claim_stdout, release_stdout, solve_item
from .domain import Job, System
from .errors import HpcoptError, closest, one_line
from .jsonsafe import json_safe
from .sim.records import BACKFILLED
from .sim.resources import CapacityProfile
from .version import __version__

PROTOCOL = "hpcopt/1"


class RequestError(HpcoptError):
    """A request that does not follow the protocol (a missing or malformed field)."""


def handle(request: Any) -> dict:
    """The reply to one request object (see the module docstring); never raises."""
    rid = request.get("id") if isinstance(request, dict) else None
    try:
        if not isinstance(request, dict):
            raise RequestError(f"a request is a JSON object, got {_kind(request)}")
        op = request.get("op")
        if op not in OPS:
            raise RequestError(f"op: expected one of {sorted(OPS)}, got {op!r}."
                               + closest(str(op), OPS))
        return {"id": rid, "ok": True, **OPS[op](request)}
    except Exception as exc:  # noqa: BLE001 - a bad request never stops the service
        return {"id": rid, "ok": False,
                "error": {"type": type(exc).__name__, "message": one_line(exc)}}


def handle_line(line: str) -> dict:
    """The reply to one line of text (a UTF-8 byte-order mark before it is skipped).

    A line that is not JSON, or whose numbers are not finite (``NaN``, ``Infinity``, or a
    number past the double range such as ``1e400``), is an error reply; it still carries the
    request's id whenever the id can be read.  An id past the double range is echoed as it
    came."""
    line = line.removeprefix("\ufeff")
    odd: list = []  # the numbers that are not finite, as they are read

    def constant(text: str) -> float:
        odd.append(_NonFinite(text))
        return odd[-1]

    def number(text: str) -> float:
        value = float(text)
        if math.isfinite(value):
            return value
        odd.append(_Huge(text, value))
        return odd[-1]

    try:
        request = json.loads(line, parse_constant=constant, parse_float=number)
    except (ValueError, RecursionError) as exc:
        msg = f"{exc.msg} (column {exc.colno})" if isinstance(exc, json.JSONDecodeError) \
            else str(exc) or "too deep"
        return _error(_leading_id(line), f"not valid JSON: {msg}")
    if not odd:
        return handle(request)
    rid = request.get("id") if isinstance(request, dict) else None
    # an id past the double range is still an id: echoed as it came (dumps)
    where = _non_finite({**request, "id": None} if isinstance(rid, _Huge) else request)
    if where is not None:
        path, value = where
        if isinstance(value, _Huge):
            return _error(rid, f"{path}: expected a finite number, got {value.short} (past "
                               "the range of a double)")
        return _error(rid if path != "request.id" else None,
                      f"not valid JSON: {value.text} at {path} (JSON numbers are finite)")
    return handle(request)


def _error(rid, msg: str) -> dict:
    return {"id": rid, "ok": False, "error": {"type": "RequestError", "message": msg}}


class _NonFinite(float):
    """A number JSON cannot carry (``NaN``, ``Infinity``, ``-Infinity``), kept as its text."""

    def __new__(cls, text: str, value: float | None = None):
        number = super().__new__(cls, text if value is None else value)
        number.text = text
        return number

    @property
    def short(self) -> str:
        return self.text if len(self.text) <= 40 else f"{self.text[:37]}..."


class _Huge(_NonFinite):
    """A JSON number past the double range (``1e400``): valid JSON, so a request's id of
    this kind is echoed as its text."""


def _non_finite(value, path: str = "request"):
    """(path, value) of the first number in ``value`` that is not finite, or None."""
    stack = [(path, value)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, _NonFinite):
            return path, value
        if isinstance(value, dict):
            stack.extend((f"{path}.{k}", v) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(value))))
    return None


_ID = re.compile(r'\s*\{\s*"id"\s*:\s*')


def _leading_id(text: str):
    """The id of a line that is not JSON as a whole, when it opens with ``{"id": VALUE``:
    a string or a finite number (else None)."""
    match = _ID.match(text)
    if match is None:
        return None
    try:
        rid, _ = json.JSONDecoder(parse_constant=_NonFinite).raw_decode(text, match.end())
    except (ValueError, RecursionError):
        return None
    ok = isinstance(rid, str) or (isinstance(rid, (int, float)) and not isinstance(rid, bool)
                                  and math.isfinite(rid))
    return rid if ok else None


def dumps(reply: dict) -> str:
    """Strict JSON (RFC 8259): non-finite numbers become null; an id past the double range
    is written as it came (``1e400``)."""

    rid = reply.get("id")
    if isinstance(rid, _Huge):
        rest = dumps({k: v for k, v in reply.items() if k != "id"})
        return '{"id": ' + rid.text + (", " + rest[1:] if rest != "{}" else "}")
    try:
        return json.dumps(reply, allow_nan=False, default=str)
    except ValueError:
        return json.dumps(json_safe(reply), allow_nan=False, default=str)


# JSON's whitespace: a line of only these is empty and gets no reply (any other text does)
_BLANK = " \t\r\n"


def serve_lines(stdin=None, stdout=None) -> int:
    """Serve ``hpcopt/1`` over line-delimited JSON until EOF; returns 0.

    ``stdin`` yields lines as bytes (default: ``sys.stdin.buffer``) or text.  Every line
    with text besides JSON whitespace gets exactly one reply; a line that is not UTF-8 gets
    an error reply like any other bad line."""

    stdin = stdin if stdin is not None else sys.stdin.buffer
    saved = None
    if stdout is None:  # replies only: what solver libraries print goes to stderr
        stdout, saved = claim_stdout()
    try:
        _serve(stdin, stdout)
    finally:
        release_stdout(stdout, saved)
    return 0


def _serve(stdin, stdout) -> None:
    for line in stdin:
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                if not line.strip(_BLANK.encode()):
                    continue
                text = line.decode("utf-8", errors="replace")
                reply = {"id": _leading_id(text), "ok": False, "error": {
                    "type": "RequestError", "message": f"not UTF-8 text: {exc.reason} at "
                                                       f"byte {exc.start}"}}
                stdout.write(dumps(reply) + "\n")
                stdout.flush()
                continue
        if not line.strip(_BLANK):
            continue
        stdout.write(dumps(handle_line(line.rstrip("\r\n"))) + "\n")
        stdout.flush()


# ---------------------------------------------------------------------------- operations


def op_hello(request: dict) -> dict:
    """The protocol, the version, the policies and backends that can run here, and what each
    of the others needs (``unavailable``: name -> the missing package and how to install
    it)."""
    from .policies import policy_names
    from .policies.base import missing_extra
    from .solvers import names
    from .solvers.registry import family_classes, missing_modules, solver_classes

    classes = {**solver_classes(), **{f"{n}:<solver>": c for n, c in family_classes().items()}}
    unavailable = {n: missing_extra(n) for n in policy_names() if missing_extra(n)}
    unavailable.update((n, missing_modules(classes[n])) for n in names()
                       if missing_modules(classes[n]))
    return {"protocol": PROTOCOL, "version": __version__,
            "policies": [n for n in policy_names() if n not in unavailable],
            "backends": [n for n in names() if n not in unavailable],
            "unavailable": unavailable}


def op_solve(request: dict) -> dict:
    instance = _field(request, "instance", dict)
    backend = _field(request, "backend", str, None)
    time_limit = _number(request, "time_limit", None, minimum=0)
    seed = _field(request, "seed", int, None)
    options = _field(request, "options", dict, None)
    rule = _field(request, "rule", str, None)
    rows, _ = solve_item(Item("request.instance", instance, parsed=True),
                         [backend] if backend else None, time_limit, seed, options, rule)
    row = rows[0]
    if row.get("status") == "ERROR":
        raise RequestError(row.get("error") or "the instance could not be solved")
    return {k: v for k, v in row.items() if k != "file"}


def op_decide(request: dict) -> dict:
    from .policies import make_policy

    window = _field(request, "window", dict)
    policy = make_policy(_field(request, "policy", str, "fcfs"),
                         **_field(request, "options", dict, {}))
    seed = _field(request, "seed", int, None)
    policy.reset(seed)
    t0 = time.perf_counter()
    answer = decide(window, policy, order=_field(request, "order", str, None),
                    backfill=_field(request, "backfill", str, None),
                    window=_field(request, "window_size", int, None),
                    starvation_bound=_field(request, "starvation_bound", int, None))
    return {**answer, "status": "decided", "wall_time_s": time.perf_counter() - t0}


# ASA estimators of this process, by name: their state lives as long as the service
_ESTIMATORS: dict = {}


def _estimator(request: dict):
    """The named estimator (``"estimator"``, default ``"default"``): made on first use from
    ``config`` (``ASAEstimator`` arguments), or loaded from ``path`` when that file exists."""

    name = _field(request, "estimator", str, "default")
    path = _field(request, "path", str, None)
    est = _ESTIMATORS.get(name)
    config = _field(request, "config", dict, {})
    if est is not None:
        have = est.config()
        for k, v in config.items():
            if k not in have:
                raise RequestError(f"config: unknown ASAEstimator argument {k!r}")
            if have[k] != v and not (isinstance(v, list) and list(have[k]) == v):
                raise RequestError(f"config: estimator {name!r} exists with {k}="
                                   f"{json.dumps(have[k])[:40]}, got {json.dumps(v)[:40]}")
    else:
        if path is not None and os.path.exists(path):
            est = ASAEstimator.load(path)
        else:
            try:
                est = ASAEstimator(**config)
            except TypeError as exc:
                raise RequestError(f"config: {exc}") from None
        _ESTIMATORS[name] = est
    return est, path


def _asa_key(request: dict):
    key = request.get("key", _MISSING)
    if key is _MISSING:
        raise RequestError("request.key: missing (expected a job geometry: an integer, a "
                           "string or an array of those)")
    if isinstance(key, list):
        key = tuple(key)
    if isinstance(key, (dict, bool)) or key is None:
        _fail("request.key", "an integer, a string or an array of those", key)
    return key


def op_asa_sample(request: dict) -> dict:
    est, _ = _estimator(request)
    index, wait = est.sample(_asa_key(request),
                             estimate_s=_number(request, "estimate_s", None, minimum=0))
    return {"index": index, "wait_s": wait}


def op_asa_observe(request: dict) -> dict:
    est, path = _estimator(request)
    key = _asa_key(request)
    loss = est.observe(key, _field(request, "index", int),
                       _number(request, "wait_s", minimum=0),
                       estimate_s=_number(request, "estimate_s", None, minimum=0))
    if path is not None:
        est.save(path)
    st = est.state(key)
    return {"loss": loss, "rounds": st["rounds"], "observations": st["observations"]}


OPS = {"hello": op_hello, "solve": op_solve, "decide": op_decide,
       "asa_sample": op_asa_sample, "asa_observe": op_asa_observe}


# ---------------------------------------------------------------------------- decide


def decide(state: dict, policy, **options) -> dict:
    """The driver's pass for the ``state`` (a WINDOW, module docstring) under ``policy``:
    ``{"start": [...], "reserve": {"id", "time"} | None, "backfill": [...]}``.

    ``options`` are the simulator's (``order``, ``backfill``, ``window``,
    ``starvation_bound``); ``None`` values take the policy's defaults.  The WINDOW is read
    into a ``ClusterState`` and decided by ``hpcopt.sim.decide``, the core every embedding
    calls."""
    from .sim.decide import ClusterState
    from .sim.decide import decide as decide_state

    window = state
    now = _number(window, "time", where="window")
    system = _system(_field(window, "system", dict, where="window"), now,
                     _number(window, "slot", 1.0, where="window", minimum=0))
    running = [(_job(r, f"window.running[{i}]", now, running=True),
                _number(r, "expected_end", where=f"window.running[{i}]"))
               for i, r in enumerate(_field(window, "running", list, [], where="window"))]
    queue_rows = _field(window, "queue", list, [], where="window")
    queue = [_job(q, f"window.queue[{i}]", now) for i, q in enumerate(queue_rows)]
    passed = {job.id: _field(q, "passed", int, 0, where=f"window.queue[{i}]")
              for i, (job, q) in enumerate(zip(queue, queue_rows))}
    upcoming = [_job(u, f"window.upcoming[{i}]", now)
                for i, u in enumerate(_field(window, "upcoming", list, [], where="window"))]
    weights = _field(window, "weights", dict, None, where="window")
    if weights is not None:
        weights = (_number(weights, "w1", where="window.weights"),
                   _number(weights, "w2", where="window.weights"),
                   _field(weights, "end", int, None, where="window.weights"))
    free = window.get("free")
    if free is not None and not isinstance(free, dict):
        _fail("window.free", "an object like {\"nodes\": F}", free)
    cluster = ClusterState(now, system, tuple(queue), tuple(running), passed=passed,
                           upcoming=tuple(upcoming), weights=weights)
    decision = decide_state(cluster, policy, **options)
    if free is not None:
        nodes = _field(free, "nodes", int, where="window.free")
        if nodes != decision.free:
            raise RequestError(f"window.free.nodes: {nodes}, but the running jobs leave "
                               f"{decision.free} of {system.nodes} nodes free")
    if decision.set_aside:
        job, why = decision.set_aside[0]
        raise RequestError(f"window.queue: job {job.id} {why}: it can never start")
    start = [job.id for job, mode in decision.started if mode != BACKFILLED]
    backfill = [job.id for job, mode in decision.started if mode == BACKFILLED]
    reserve = None if decision.reserved is None else \
        {"id": decision.reserved.id, "time": decision.shadow}
    return {"start": start, "reserve": reserve, "backfill": backfill}


def _system(obj: dict, now: float = 0.0, slot: float = 1.0):
    nodes = _field(obj, "nodes", int, where="window.system")
    capacity = _field(obj, "capacity", list, None, where="window.system")
    if capacity is not None:
        if not slot > 0:
            _fail("window.slot", "a number > 0", slot)
        if not capacity or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0
                                   for c in capacity):
            _fail("window.system.capacity", "a non-empty list of integers >= 0 (the usable "
                  "capacity now, then per slot)", capacity)
        return System(nodes, capacity=CapacityProfile(capacity, period=slot, start=now))
    bb = _number(obj, "bb", 0.0, where="window.system", minimum=0)
    classes = _field(obj, "ssd_classes", dict, {}, where="window.system")
    try:
        ssd = {float(k): int(v) for k, v in classes.items()}
    except (TypeError, ValueError):
        raise RequestError("window.system.ssd_classes: expected {\"GB\": node count, ...}") \
            from None
    return System(nodes, bb=bb, ssd_classes=ssd)


def _job(obj: Any, where: str, now: float, running: bool = False):
    if not isinstance(obj, dict):
        _fail(where, "an object", obj)
    jid = obj.get("id")
    if not isinstance(jid, (int, str)) or isinstance(jid, bool):
        _fail(f"{where}.id", "a string or an integer", jid)
    nodes = _field(obj, "nodes", int, where=where)
    if running:
        submit, walltime = now, 0.0
    else:
        submit = _number(obj, "submit", where=where)
        walltime = _number(obj, "walltime", where=where, minimum=0)
    earliest = _number(obj, "earliest", None, where=where)
    latest = _number(obj, "latest", None, where=where)
    if earliest is not None and latest is not None and latest < earliest:
        _fail(f"{where}.latest", f"a number >= earliest ({earliest:g})", latest)
    return Job(id=jid, submit=submit, runtime=walltime, walltime=walltime, nodes=nodes,
               bb=_number(obj, "bb", 0.0, where=where, minimum=0),
               ssd=_number(obj, "ssd", 0.0, where=where, minimum=0),
               priority=_field(obj, "priority", int, 0, where=where),
               earliest=earliest, latest=latest)


_MISSING = object()


def _field(obj: dict, name: str, kind, default=_MISSING, where: str = "request"):
    value = obj.get(name, _MISSING) if isinstance(obj, dict) else _MISSING
    if value is _MISSING or (value is None and default is not _MISSING):
        if default is _MISSING:
            raise RequestError(f"{where}.{name}: missing (expected {_name(kind)})")
        return default
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        _fail(f"{where}.{name}", _name(kind), value)
    return value


def _number(obj: dict, name: str, default=_MISSING, where: str = "request",
            minimum: float | None = None) -> float:
    value = _field(obj, name, (int, float), default, where)
    if value is None:
        return value
    if isinstance(value, bool) or not math.isfinite(value) or \
            (minimum is not None and value < minimum):
        _fail(f"{where}.{name}", "a finite number" + (f" >= {minimum}" if minimum is not None
                                                       else ""), value)
    return float(value)


def _name(kind) -> str:
    names = {dict: "an object", list: "an array", str: "a string", int: "an integer",
             (int, float): "a number"}
    return names.get(kind, str(kind))


def _kind(value) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "a number", float: "a number", type(None): "null"}.get(type(value), "?")


def _fail(where: str, expected: str, got) -> None:
    text = json.dumps(got, default=str) if not isinstance(got, (dict, list)) else _kind(got)
    if len(text) > 40:
        text = text[:37] + "..."
    raise RequestError(f"{where}: expected {expected}, got {text}")
