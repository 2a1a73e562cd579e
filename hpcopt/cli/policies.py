"""``hpcopt policies``: the scheduling policies, their defaults, options and the extra they
need (``ml``: torch, for the learned ones)."""

from __future__ import annotations

from .common import add_json_flag, print_listing


def register(sub) -> None:
    p = sub.add_parser("policies", help="list scheduling policies")
    add_json_flag(p)
    p.set_defaults(run=run)


def run(args) -> int:
    from ..policies import describe_policies

    print_listing(describe_policies(), ["policy", "order", "window", "needs"],
                  ["doc", "options"], args.json)
    return 0
