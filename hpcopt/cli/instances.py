"""``hpcopt instances``: the bundled instance files, by the name ``solve`` and
``hpcopt.load_instance`` take (``FAMILY/NAME``)."""

from __future__ import annotations

from ..errors import InstanceError, closest
from .common import add_json_flag, print_listing


def register(sub) -> None:
    i = sub.add_parser("instances", help="list the bundled instances (names for solve and "
                                         "load_instance)")
    i.add_argument("family", nargs="?", default=None,
                   help="only this family (bbsched, dcas, knapsack, osdec, scas)")
    add_json_flag(i)
    i.set_defaults(run=run)


def run(args) -> int:
    from ..instances import FAMILIES, bundled_instances

    if args.family is not None and args.family not in FAMILIES:
        raise InstanceError(f"no bundled family {args.family!r}; expected one of "
                            f"{', '.join(FAMILIES)}." + closest(args.family, FAMILIES))
    rows = [r for r in bundled_instances()
            if args.family is None or r["name"].startswith(args.family + "/")]
    for row in rows:
        if isinstance(row["optimum"], float) and row["optimum"].is_integer():
            row["optimum"] = int(row["optimum"])
    print_listing(rows, ["name", "model", "optimum"], ["description"], args.json)
    return 0
