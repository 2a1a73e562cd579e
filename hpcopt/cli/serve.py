"""``hpcopt serve --stdio``: the hpcopt/1 protocol over line-delimited JSON."""

from __future__ import annotations


def register(sub) -> None:
    v = sub.add_parser("serve", help="serve the hpcopt/1 protocol (decide one window, solve "
                                     "an instance) over line-delimited JSON")
    v.add_argument("--stdio", action="store_true", required=True,
                   help="one request per line on stdin, one reply per line on stdout")
    v.set_defaults(run=run)


def run(args) -> int:
    from ..service import serve_lines

    return serve_lines()
