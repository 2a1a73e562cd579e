"""The hpcopt/1 service answers every line: mixed integer and text job ids under every policy,
policy options checked on every request, and exactly one reply (with the id whenever it can
be read) for every line that is not blank."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcopt.policies import make_policy, policy_names
from hpcopt.service import dumps, handle, handle_line, serve_lines
from hpcopt.sim.orders import total_ids


def strict(text: str):
    return json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))


# ------------------------------------------------------------------- mixed job ids

MIXED = [3, "b", 1, "a", 2, "10", 10]  # equal submit times: the ids break every tie


def _window(policy: str, ids) -> dict:
    cloud = policy in ("rolling-mip", "osdec")
    queue = [{"id": jid, "submit": 0, "walltime": 100 + 10 * (k % 3), "nodes": 1 + k % 4}
             for k, jid in enumerate(ids)]
    if not cloud:
        for row in queue:
            row["bb"] = 5
    running = [{"id": "r", "nodes": 5, "expected_end": 50},
               {"id": 7, "nodes": 1, "expected_end": 50}]
    system = {"nodes": 10, "capacity": [10, 8, 6]} if cloud else {"nodes": 10, "bb": 100}
    return {"time": 10, "system": system, "queue": queue, "running": running}


def _as_text(jid):
    """The same total order in text ids only: integers first (zero-padded), then text."""
    return f"!{jid:05d}" if isinstance(jid, int) else jid


def _map(answer: dict, f) -> dict:
    reserve = answer["reserve"]
    return {"start": [f(j) for j in answer["start"]], "backfill": [f(j) for j in
                                                                   answer["backfill"]],
            "reserve": reserve and {"id": f(reserve["id"]), "time": reserve["time"]}}


@pytest.mark.parametrize("policy", policy_names())
def test_mixed_ids_under_every_policy(policy):
    """Integer and text ids with equal submit times: every policy answers, and its answer is
    the one for the same window with text ids in the stated order (integers first)."""
    reply = handle({"id": 1, "op": "decide", "policy": policy, "window": _window(policy,
                                                                                 MIXED)})
    if policy == "tjap-window":  # needs a topology, which a window cannot send
        assert not reply["ok"] and "topology" in reply["error"]["message"]
        return
    assert reply["ok"], reply
    assert set(reply["start"] + reply["backfill"]) <= set(MIXED)
    text = handle({"id": 2, "op": "decide", "policy": policy,
                   "window": _window(policy, [_as_text(j) for j in MIXED])})
    assert text["ok"], text
    back = {_as_text(j): j for j in MIXED}
    assert _map(text, back.__getitem__) == _map(reply, lambda j: j)
    # the ids go back as they came: 1 stays the int 1, "10" stays text
    ids = reply["start"] + reply["backfill"] + [(reply["reserve"] or {}).get("id", 1)]
    assert all(type(j) in (int, str) for j in ids)


def test_mixed_id_order():
    """Integers before text, integers by value, text by code point; equal as integers."""
    from hpcopt.domain import Job

    jobs = total_ids([Job(id=i, submit=0, runtime=1, walltime=1, nodes=1)
                      for i in ["b", 10, "10", 2, "a"]])
    assert [j.id for j in sorted(jobs, key=lambda j: (j.submit, j.id))] == \
        [2, 10, "10", "a", "b"]
    assert jobs[1].id == 10 and hash(jobs[1].id) == hash(10) and json.dumps(jobs[1].id) == "10"
    same = [Job(id=i, submit=0, runtime=1, walltime=1, nodes=1) for i in [3, 1]]
    assert total_ids(same) is same  # one kind of id: left as it is


# ------------------------------------------------------------------- options, every request

BAD_OPTIONS = [
    ("knapsack", {"backend": "sa"}, "does not solve knapsack models"),
    ("knapsack", {"backend": "scas-exact"}, "does not solve knapsack models"),
    ("knapsack", {"backend": "pyomo:nope"}, "pyomo has no solver named 'nope'"),
    ("knapsack", {"backend": "nope"}, "unknown backend"),
    ("bbsched", {"backend": "dp"}, "does not solve bbsched models"),
    ("weighted", {"backend": "nsga2"}, "does not solve knapsack models"),
    ("rolling-mip", {"backend": "dp"}, "does not solve osdec models"),
    ("knapsack", {"window": "x"}, "option window: expected an integer >= 1"),
    ("knapsack", {"window": 0}, "option window: expected an integer >= 1"),
    ("knapsack", {"order": 5}, "option order: expected one of"),
    ("knapsack", {"order": "lifo"}, "unknown order 'lifo'"),
    ("knapsack", {"value": "node_hours"}, "knapsack value must be one of"),
    ("knapsack", {"value": ["nodes"]}, "option value: expected one of"),
    ("bbsched", {"seed": -1}, "option seed: expected an integer >= 0"),
    ("weighted", {"weights": 3}, "option weights: expected a list of finite numbers"),
    ("dras-pg", {"checkpoint": 5}, "option checkpoint: expected a string"),
] + [(policy, {"time_limit": value}, "time_limit")
     for policy in ("knapsack", "bbsched", "constrained-bb", "rolling-mip")
     for value in (-1, "x", 0, 1e400, True, 1e12)]


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize(("policy", "options", "needle"), BAD_OPTIONS)
def test_options_checked_on_every_request(policy, options, needle, jobs):
    """One job or two, a solve needed or not: a bad option is the same error reply."""
    window = _window(policy, list(range(jobs)))
    request = json.loads(json.dumps({"id": "o", "op": "decide", "policy": policy,
                                     "options": options, "window": window}))
    if options.get("time_limit") == 1e400:
        request["options"]["time_limit"] = float("inf")
    reply = handle(request)
    assert reply["ok"] is False and reply["id"] == "o", reply
    message = reply["error"]["message"]
    assert needle in message and "\n" not in message and "Error:" not in message
    if "order" not in options:  # which order names exist is the driver's check
        with pytest.raises(Exception, match=needle.replace("(", r"\(")):
            make_policy(policy, **request["options"])


def test_good_options_still_build():
    for policy, options in [("knapsack", {"backend": "pyomo:appsi_highs", "time_limit": 2}),
                            ("bbsched", {"time_limit": 0.5, "seed": 3}),
                            ("weighted", {"weights": (0.5, 0.5)}),
                            ("rolling-mip", {"backend": "osdec-greedy", "time_limit": 1e9})]:
        assert make_policy(policy, **options).options["time_limit" if "time_limit" in options
                                                      else "weights"] is not None


# ------------------------------------------------------------------- every line, one reply

HELLO = '{"id": %s, "op": "hello"}'
LINES = [  # (line, the id its reply carries, ok)
    ("\ufeff" + HELLO % 5, 5, True),  # a byte-order mark
    (HELLO % '"x"', "x", True),
    (HELLO % "1e400", float("inf"), True),  # valid JSON past the double range: echoed
    ('{"id": 6, "op": "hello", "x": NaN}', 6, False),
    ('{"id": 7, "op": "hello", "x": [Infinity]}', 7, False),
    ('{"id": 8, "op": "decide", "window": {"time": -Infinity}}', 8, False),
    ('{"id": 9, "op": "decide", "window": {"time": 1e999}}', 9, False),
    ('{"id": 10, "op": "hel', 10, False),  # cut short: the id still read
    ('{"id": "11", "op": ', "11", False),
    ('{"id": NaN, "op": "hello"}', None, False),
    ("\u00a0", None, False),  # a non-breaking space is text, not a blank line
    ("\u2003", None, False),  # an em space
    ("\u2028", None, False),
    ("NaN", None, False),
    ("[" * 50_000, None, False),
    ('{"op": "hello", "id": 12}', 12, True),
]


@pytest.mark.parametrize(("line", "rid", "ok"), LINES)
def test_every_line_one_reply(line, rid, ok):
    reply = strict(dumps(handle_line(line)))
    assert reply["ok"] is ok and reply["id"] == rid, reply
    if not ok:
        assert "\n" not in reply["error"]["message"]


def test_serve_stdio_answers_every_line():
    """Through ``hpcopt serve --stdio``: one reply per line that is not JSON whitespace, in
    order, each strict JSON, nothing on stderr."""
    lines = [line for line, _, _ in LINES]
    raw = b"".join(line.encode() + b"\n" for line in lines)
    raw += b" \t\r\n\n"  # blank lines: no reply
    raw += b'{"id": 13, "x": "\xff"}\n'  # not UTF-8: the id still read
    proc = subprocess.run([sys.executable, "-m", "hpcopt.cli", "serve", "--stdio"], input=raw,
                          capture_output=True, timeout=300)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr[-2000:]
    replies = [strict(line) for line in proc.stdout.decode().splitlines()]
    want = [(rid, ok) for _, rid, ok in LINES] + [(13, False)]
    assert [(r["id"], r["ok"]) for r in replies] == want


def test_serve_lines_text_stream():
    import io

    out = io.StringIO()
    serve_lines(iter(["\u00a0\n", "\n", "  \n", HELLO % 1 + "\n"]), out)
    assert [strict(r)["id"] for r in out.getvalue().splitlines()] == [None, 1]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_fuzz_any_text_one_reply(text):
    """Any text on a line: exactly one strict-JSON reply, an error has one line."""
    line = text.replace("\n", " ").replace("\r", " ")
    reply = strict(dumps(handle_line(line)))
    assert set(reply) >= {"id", "ok"} and isinstance(reply["ok"], bool)
    if not reply["ok"]:
        assert "\n" not in reply["error"]["message"]


_values = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(),
                    st.sampled_from(["", "x", "a", "sa", "dp", "pyomo:nope", "fcfs"]),
                    st.lists(st.integers(0, 3), max_size=3))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["fcfs", "sjf", "knapsack", "random", "bbsched", "weighted"]),
       st.dictionaries(st.sampled_from(["backend", "time_limit", "window", "order", "seed",
                                        "value", "rule", "objectives", "weights"]),
                       _values, max_size=2),
       st.lists(st.one_of(st.integers(0, 5), st.sampled_from(["a", "b", "0"])), min_size=1,
                max_size=5, unique=True))
def test_fuzz_decide_requests(policy, options, ids):
    """Random options and mixed ids: one reply, the id echoed, never an internal error."""
    line = json.dumps({"id": "f", "op": "decide", "policy": policy, "options": options,
                       "window": {"time": 5, "system": {"nodes": 8, "bb": 10},
                                  "queue": [{"id": j, "submit": 0, "walltime": 60,
                                             "nodes": 1 + k % 3, "bb": k}
                                            for k, j in enumerate(ids)]}})
    reply = strict(dumps(handle_line(line)))
    assert reply["id"] == "f"
    if not reply["ok"]:
        message = reply["error"]["message"]
        assert "\n" not in message
        assert not message.split(":")[0].endswith("Error"), message  # no internal error
