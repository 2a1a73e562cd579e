"""``hpcopt decide``: answer one hpcopt/1 request read from standard input."""

from __future__ import annotations

import sys


def register(sub) -> None:
    d = sub.add_parser("decide", help="answer one hpcopt/1 request read from stdin (JSON)")
    d.set_defaults(run=run)


def run(args) -> int:
    from ..service import dumps, handle_line

    try:
        reply = handle_line(sys.stdin.buffer.read().decode("utf-8"))
    except UnicodeDecodeError as exc:
        reply = {"id": None, "ok": False, "error": {
            "type": "RequestError", "message": f"not UTF-8 text: {exc.reason}"}}
    print(dumps(reply), flush=True)
    return 0 if reply["ok"] else 1
