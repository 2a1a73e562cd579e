"""``hpcopt backends``: the solver backends, the models each solves, whether installed."""

from __future__ import annotations

from .common import add_json_flag, print_listing


def register(sub) -> None:
    b = sub.add_parser("backends", help="list solver backends")
    add_json_flag(b)
    b.set_defaults(run=run)


def run(args) -> int:
    from ..solvers import describe

    print_listing(describe(), ["backend", "models", "exact", "available"], ["doc", "needs"],
                  args.json)
    return 0
