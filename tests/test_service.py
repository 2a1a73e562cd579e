"""The hpcopt/1 service: golden replies, decide == the driver's pass (replayed from
simulations), strict JSON, and a fuzz run that never kills the process."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from hpcopt import load_trace
from hpcopt.batch import Item, solve_item
from hpcopt.domain import System
from hpcopt.policies import make_policy
from hpcopt.service import PROTOCOL, decide, handle, handle_line, serve_lines
from hpcopt.sim.driver import Simulator
from hpcopt.sim.records import BACKFILLED, Event

from .conftest import INSTANCES

DEMO = INSTANCES / "traces" / "demo.swf"
TINY = INSTANCES / "knapsack" / "ks1_tiny_5.json"


def strict(text: str):
    return json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))


def test_hello():
    reply = handle({"id": 1, "op": "hello"})
    assert reply["id"] == 1 and reply["ok"] is True and reply["protocol"] == PROTOCOL
    assert "knapsack" in reply["policies"] and "dp" in reply["backends"]


def test_solve_is_a_batch_row():
    envelope = json.loads(TINY.read_text())
    reply = handle({"id": "s", "op": "solve", "instance": envelope, "backend": "dp",
                    "time_limit": 1.0})
    row = solve_item(Item(str(TINY)), ["dp"], 1.0)[0][0]
    assert reply["ok"] and reply["id"] == "s"
    for key in ("instance", "model", "backend", "status", "objective", "bound", "decision",
                "certified", "seed"):
        assert reply[key] == row[key], key
    assert reply["status"] == "OPTIMAL" and reply["certified"] is True


def test_decide_golden():
    window = {"time": 10, "system": {"nodes": 10}, "free": {"nodes": 4},
              "queue": [{"id": "a", "submit": 0, "walltime": 100, "nodes": 6},
                        {"id": "b", "submit": 5, "walltime": 50, "nodes": 2},
                        {"id": "c", "submit": 6, "walltime": 500, "nodes": 1}],
              "running": [{"id": "r1", "nodes": 6, "expected_end": 300}]}
    reply = handle({"id": 3, "op": "decide", "policy": "fcfs", "window": window})
    assert reply["ok"], reply
    # a does not fit (4 free): reserved at 300 when r1 ends; b ends by then; c (1 node, runs
    # past 300) fits in the 4 nodes a leaves over at 300
    assert reply["start"] == [] and reply["reserve"] == {"id": "a", "time": 300.0}
    assert reply["backfill"] == ["b", "c"] and reply["status"] == "decided"
    window["free"] = {"nodes": 5}
    bad = handle({"id": 4, "op": "decide", "window": window})
    assert not bad["ok"] and "window.free.nodes: 5" in bad["error"]["message"]


@pytest.mark.parametrize(("request_", "needle"), [
    ({"op": "hello", "id": [1]}, None),
    ({"id": 1}, "op: expected one of"),
    ({"id": 1, "op": "decide"}, "request.window: missing"),
    ({"id": 1, "op": "decide", "window": {"time": "x"}}, "window.time: expected a number"),
    ({"id": 1, "op": "decide", "window": {"time": 0, "system": {"nodes": 4},
                                          "queue": [{"id": 1, "submit": 0, "nodes": 1}]}},
     "window.queue[0].walltime: missing"),
    ({"id": 1, "op": "decide", "policy": "knapsak", "window": {}}, "unknown policy"),
    ({"id": 1, "op": "solve", "instance": {"model": "knapsack"}}, "request.instance: format"),
])
def test_bad_requests_are_error_replies(request_, needle):
    reply = handle(request_)
    if needle is None:
        assert reply["ok"]
        return
    assert reply["ok"] is False and reply["id"] == request_.get("id")
    assert needle in reply["error"]["message"] and "\n" not in reply["error"]["message"]


def _state(sim: Simulator) -> dict:
    """The JSON window of the simulator's current state (what a scheduler would send)."""
    return {"time": sim.now, "system": {"nodes": sim.system.nodes, "bb": sim.system.bb},
            "free": {"nodes": sim.pool.free_nodes},
            "queue": [{"id": j.id, "submit": j.submit, "walltime": j.walltime,
                       "nodes": j.nodes, "bb": j.bb, "passed": sim.records[j.id].passed}
                      for j in sim.queue],
            "running": [{"id": r.job.id, "nodes": r.job.nodes, "bb": r.job.bb,
                         "expected_end": r.est_end} for r in sim.running]}


@pytest.mark.parametrize(("policy", "options", "bb"), [
    ("fcfs", {}, 0.0), ("sjf", {}, 0.0), ("knapsack", {"backend": "dp"}, 0.0),
    ("knapsack", {"backend": "dp", "value": "wait"}, 0.0), ("bbsched", {}, 400.0),
])
def test_decide_replays_the_driver(policy, options, bb):
    """Every pass of a simulation, sent through the service as JSON, gets the driver's answer."""
    trace = load_trace(DEMO, max_jobs=300)
    jobs = list(trace.jobs)
    if bb:
        from dataclasses import replace

        jobs = [replace(j, bb=float((7 * i) % 5) * 20) for i, j in enumerate(jobs)]
    system = System(trace.system.nodes, bb=bb)
    sim = Simulator(jobs, system, make_policy(policy, **options))
    events: list = []
    sim.subscribe(Event.START, lambda s, e, rec: events.append(
        ("backfill" if rec.mode == BACKFILLED else "start", rec.job.id)))
    sim.subscribe(Event.RESERVE, lambda s, e, p: events.append(("reserve", p[0].id, p[1])))
    passes = 0
    while sim.advance():
        if not sim.pass_due or not sim.queue:
            continue
        request = json.loads(json.dumps({"id": passes, "op": "decide", "policy": policy,
                                         "options": options, "window": _state(sim)}))
        events.clear()
        sim.schedule()
        want = {"start": [e[1] for e in events if e[0] == "start"],
                "backfill": [e[1] for e in events if e[0] == "backfill"],
                "reserve": next(({"id": e[1], "time": e[2]} for e in events
                                 if e[0] == "reserve"), None)}
        reply = handle(request)
        assert reply["ok"], reply
        got = {k: reply[k] for k in want}
        assert got == want, (policy, sim.now)
        passes += 1
    assert passes > 100


def test_decide_python_api():
    window = {"time": 0, "system": {"nodes": 4},
              "queue": [{"id": 1, "submit": 0, "walltime": 10, "nodes": 3},
                        {"id": 2, "submit": 0, "walltime": 10, "nodes": 2}]}
    assert decide(window, make_policy("fcfs")) == {"start": [1], "reserve": {"id": 2,
                                                                           "time": 10.0},
                                                   "backfill": []}


def test_serve_lines_strict_json():
    lines = [b'{"id": 1, "op": "hello"}\n', b"\n", b"\xff\xfe\n", b'{"id": 2, "op": "solve"}\n',
             b"[" * 100_000 + b"\n", b"NaN\n"]
    import io

    out = io.StringIO()
    assert serve_lines(iter(lines), out) == 0
    replies = [strict(line) for line in out.getvalue().splitlines()]
    assert [r["ok"] for r in replies] == [True, False, False, False, False]
    assert "not UTF-8" in replies[1]["error"]["message"]


def _fuzz_lines(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    good = json.dumps({"id": 7, "op": "decide", "policy": "fcfs", "window": {
        "time": 5, "system": {"nodes": 8}, "queue": [
            {"id": "a", "submit": 0, "walltime": 60, "nodes": 4}], "running": [
            {"id": "r", "nodes": 6, "expected_end": 50}]}})
    values = [None, True, -1, 0, 1e308, -1e-9, "", "x", [], {}, [1, "a"], {"nodes": "8"},
              2**70, 3.5]
    lines = []
    for _ in range(n):
        kind = rng.randrange(6)
        if kind == 0:  # truncated
            lines.append(good[: rng.randrange(len(good))])
        elif kind == 1:  # mutated character
            i = rng.randrange(len(good))
            lines.append(good[:i] + rng.choice('{}[]":,0x\\') + good[i + 1:])
        elif kind == 2:  # a field replaced by a wrong value
            obj = json.loads(good)
            target = rng.choice([obj, obj["window"], obj["window"]["queue"][0],
                                 obj["window"]["running"][0], obj["window"]["system"]])
            target[rng.choice(list(target))] = rng.choice(values)
            lines.append(json.dumps(obj))
        elif kind == 3:  # random printable noise
            lines.append("".join(chr(rng.randrange(32, 127)) for _ in range(rng.randrange(60))))
        elif kind == 4:
            lines.append(json.dumps({"id": rng.randrange(9), "op": rng.choice(
                ["hello", "solve", "decide", "nope", 5, None])}))
        else:
            lines.append(good)
    return [line.replace("\n", " ") for line in lines]


def test_fuzz_the_service_never_dies():
    lines = [line for line in _fuzz_lines(3000) if line.strip()]
    proc = subprocess.run([sys.executable, "-m", "hpcopt.cli", "serve", "--stdio"],
                          input="\n".join(lines) + "\n", capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    replies = [strict(line) for line in proc.stdout.splitlines()]
    assert len(replies) == len(lines)
    assert all(isinstance(r["ok"], bool) for r in replies)
    bad = [r for r in replies if not r["ok"]]
    assert bad and all(set(r["error"]) == {"type", "message"} for r in bad)
    assert any(r["ok"] for r in replies)
    assert proc.stderr == ""


def test_handle_line_not_json():
    reply = handle_line("{oops")
    assert reply == {"id": None, "ok": False, "error": {
        "type": "RequestError", "message": reply["error"]["message"]}}
    assert reply["error"]["message"].startswith("not valid JSON")


@pytest.mark.parametrize("cmd", [["node", "examples/decide_client.js"],
                                 ["bash", "examples/decide_client.sh"]])
def test_example_clients(cmd):
    import os
    import shutil
    from pathlib import Path

    if shutil.which(cmd[0]) is None:
        pytest.skip(f"{cmd[0]} not installed")
    repo = Path(__file__).resolve().parents[1]
    hpcopt_cmd = Path(sys.executable).with_name("hpcopt")
    if not hpcopt_cmd.exists():
        pytest.skip("the hpcopt console script is not installed next to this python")
    env = {**os.environ, "HPCOPT": str(hpcopt_cmd)}
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert '"reserve": {"id": "a", "time": 300.0}' in proc.stdout or \
        "reserve a@300" in proc.stdout
