"""What several subcommands share: policy flags, executor flags, tables and listings."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

from ..cliargs import positive_int
from ..errors import HpcoptError

SUMMARY_KEYS = ["job_count", "avg_wait", "max_wait", "avg_response", "avg_slowdown",
                "avg_bounded_slowdown", "utilization", "makespan"]
TABLE_COLUMNS = ["instance", "backend", "status", "objective", "bound", "wall_time_s",
                 "certified", "decision", "error"]
POLICY_FLAG = "policy_opt_"  # argparse dest prefix of the flags made from policy options
WIDTH = 100  # listings fit a 100-column terminal


def instances_dir() -> Path:
    """The bundled instance files the demo reads: package data in an installed wheel, the
    checkout's ``instances/`` folder in an editable install (``hpcopt.instances.bundled_path``).
    """
    from ..instances import bundled_path

    here = bundled_path()
    if not (here / "traces" / "demo.swf").is_file():
        raise HpcoptError(f"bundled instances not found at {here}; reinstall hpcopt")
    return here


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") \
            from None


def policy_flags() -> dict[str, tuple]:
    """The options every registered policy declares, merged by name:
    ``{name: (Option, [policy names])}``; one name must have one type everywhere."""
    from ..policies import policy_names
    from ..policies.base import declared_options

    merged: dict[str, tuple] = {}
    for policy in policy_names():
        for opt, _ in declared_options(policy):
            first, users = merged.setdefault(opt.name, (opt, []))
            if first.type is not opt.type or first.choices != opt.choices:
                raise HpcoptError(f"policy option {opt.name!r} is declared with different "
                                  f"types or choices by {users[0]!r} and {policy!r}")
            users.append(policy)
    return merged


def add_policy_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per declared policy option (``hpcopt policies`` lists them per policy)."""
    group = parser.add_argument_group("policy options (each applies to the policies named)")
    for name, (opt, users) in sorted(policy_flags().items()):
        names = ", ".join(users) if len(users) <= 4 else \
            f"{', '.join(users[:3])} and {len(users) - 3} more"
        kw: dict = dict(dest=POLICY_FLAG + name, default=argparse.SUPPRESS,
                        help=f"{opt.help} [{names}]")
        if opt.type is bool:
            kw["action"] = argparse.BooleanOptionalAction
        else:
            kw["type"] = _floats if opt.type == "floats" else opt.type
            kw["metavar"] = "X,Y,..." if opt.type == "floats" else name.upper()
            if opt.choices:
                kw["choices"] = opt.choices
                del kw["metavar"]
        group.add_argument("--" + name.replace("_", "-"), **kw)


def policy_options(args) -> dict:
    """The policy options given on the command line (``{name: value}``)."""
    return {k[len(POLICY_FLAG):]: v for k, v in vars(args).items() if k.startswith(POLICY_FLAG)}


def add_executor_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("where to run (default: this process)")
    ex = group.add_mutually_exclusive_group()
    ex.add_argument("--workers", type=positive_int, default=1, metavar="N",
                    help="N local processes (no extra package)")
    ex.add_argument("--dask", default=None, metavar="local:N|ADDRESS",
                    help="a Dask cluster: local:N (a LocalCluster of N single-threaded "
                         "processes) or a scheduler address tcp://HOST:8786 (or a scheduler "
                         'file .json); needs pip install "hpcopt[dask]"')
    group.add_argument("--chunk", type=positive_int, default=None, metavar="K",
                       help="tasks shipped to a worker at a time (default: about 8 chunks per "
                            "worker, at most 200 tasks each)")


def executor(args):
    """The executor for --workers/--dask (made before anything runs: a bad address or a
    missing package is a usage error, not a row per file)."""
    from ..executors import make_executor

    return make_executor(workers=args.workers, dask=args.dask)


def print_summary(summaries: dict[str, dict], file=None) -> None:
    from ..sim.metrics import UNITS, format_summary  # plain text: no pandas for a summary

    keys = SUMMARY_KEYS + [k for k in ("bb_usage", "ssd_usage", "wasted_ssd", "avg_comm_cost")
                           if all(k in s for s in summaries.values())]
    print(format_summary(summaries, keys, UNITS), file=file)


def print_rows(rows: list[dict], file=None) -> None:
    """Batch rows as a table (decisions shortened)."""
    import pandas as pd

    df = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    df["decision"] = df["decision"].map(lambda d: "" if d is None else " ".join(map(str, d)))
    df["decision"] = df["decision"].map(lambda s: s if len(s) <= 40 else s[:37] + "...")
    if not df["error"].fillna("").astype(bool).any():
        df = df.drop(columns="error")
    with pd.option_context("display.width", 200, "display.max_columns", 20,
                           "display.max_colwidth", 60):
        print(df.to_string(index=False), file=file or sys.stdout)


def add_slurm_trace_flags(parser: argparse.ArgumentParser) -> None:
    """``--tz``, ``--sizes``, ``--partition``: how a Slurm trace (sacct, jobcomp) is read
    (``hpcopt.traces.load_trace``'s ``tz=``, ``sizes=``, ``partition=``)."""
    parser.add_argument("--tz", default=None, metavar="ZONE",
                        help="sacct/jobcomp: the zone their times were printed in (an IANA "
                             "name such as Europe/Berlin, or UTC; default: the local zone)")
    parser.add_argument("--sizes", choices=["nodes", "cores"], default="nodes",
                        help="sacct/jobcomp: job sizes in nodes (NNodes, default) or in cores "
                             "(NCPUS: a partition whose jobs share nodes)")
    parser.add_argument("--partition", default=None, metavar="P",
                        help="sacct/jobcomp: keep the jobs of partition P only (default: all)")


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true",
                        help="one JSON object per line instead of the table")


def print_listing(rows: list[dict], columns: list[str], texts: list[str],
                  as_json: bool) -> None:
    """``rows`` as JSON Lines, or as a table of ``columns`` with each row's ``texts`` fields
    wrapped below it (the field name first when it is not the first), within ``WIDTH``."""
    if as_json:
        for row in rows:
            print(json.dumps(row, default=str))
        return
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip())
    for row, cell in zip(rows, cells):
        print("  ".join(v.ljust(w) for v, w in zip(cell, widths)).rstrip())
        for i, key in enumerate(texts):
            value = str(row.get(key) or "")
            if value:
                body = value if i == 0 else f"{key}: {value}"
                for part in textwrap.wrap(body, WIDTH - 4, subsequent_indent="  " * (i > 0),
                                          break_on_hyphens=False):
                    print("    " + part)


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)
