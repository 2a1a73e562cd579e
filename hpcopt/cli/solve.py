"""``hpcopt solve``: batch-solve instance files (rows streamed to --out)."""

from __future__ import annotations

import json
import signal
import sys
from collections import Counter

from ..cliargs import positive_int
from ..errors import HpcoptError, closest
from ..jsonsafe import json_safe
from .common import add_executor_flags, executor, print_rows


def register(sub) -> None:
    s = sub.add_parser("solve", help="batch-solve instance files")
    s.add_argument("files", nargs="+",
                   help="instance files, folders or quoted globs ('instances/*.json'); - reads "
                        "instances from standard input (one envelope, a JSON array of "
                        "envelopes, or JSON Lines)")
    s.add_argument("--backend", action="append", default=None,
                   help="backend name, repeatable or comma-separated (default: each model's "
                        "own: dp for knapsack, pareto-exact for bbsched)")
    s.add_argument("--rule", default=None,
                   help="decision rule that picks from a Pareto set: bbsched (default), "
                        "weighted, lexicographic")
    s.add_argument("--time-limit", type=float, default=None, help="seconds per solve")
    s.add_argument("--max-memory-mb", type=positive_int, default=None, metavar="MB",
                   help="memory cap per solve: a backend honours it or refuses up front "
                        "(its build would not fit) and the model's greedy answer comes back")
    s.add_argument("--seed", type=int, default=None,
                   help="batch seed (default 0): each instance is solved with a seed derived "
                        "from (this seed, the instance name), the same on every executor")
    add_executor_flags(s)
    s.add_argument("--out", default=None, metavar="F",
                   help="write each row as soon as it is solved to F.jsonl or F.csv (a new "
                        "file unless --resume; the folder is created); - streams JSONL to "
                        "standard output (the table then goes to standard error)")
    s.add_argument("--resume", action="store_true",
                   help="keep the rows already in --out and skip their (instance, backend) "
                        "pairs; error and interrupted rows are solved again")
    s.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    s.add_argument("--solver-log", action="store_true",
                   help="the solver's own log (SCIP's, CP-SAT's search log; other backends "
                        "their notes): printed on standard error as each solve ends and kept "
                        "in the row's log field")
    s.add_argument("--json", action="store_true",
                   help="print a summary of the batch (counts by status, and per row its "
                        "instance, backend, status, objective, bound, gap and time) as one "
                        "JSON object on standard output; the table goes to standard error")
    s.set_defaults(run=run)


def _backends(args) -> list[str] | None:
    if not args.backend:
        return None
    names = []
    for item in args.backend:
        names.extend(n.strip() for n in item.split(",") if n.strip())
    return names


def run(args) -> int:
    from ..batch import RowWriter, run_batch
    from ..solvers import get_solver

    backends = _backends(args)
    for name in backends or []:
        get_solver(name)  # an unknown backend is a usage error, not a row per file
    if args.rule is not None:
        from ..models.pareto_rules import RULES

        if args.rule not in RULES:
            raise HpcoptError(f"--rule {args.rule!r}: expected one of {sorted(RULES)}."
                              + closest(args.rule, RULES))
    if args.resume and args.out is None:
        raise HpcoptError("--resume needs --out FILE: the rows already solved are read from it")
    if args.json and args.out == "-":
        raise HpcoptError("--json and --out - both write standard output: give --out a file")
    _check_inputs(args.files)
    info = sys.stderr if args.out == "-" or args.json else sys.stdout  # stdout: rows or JSON
    options = {}
    if args.max_memory_mb is not None:
        options["max_memory_mb"] = args.max_memory_mb
    if args.solver_log:
        options["solver_log"] = True
    # before solving ('' too: RowWriter refuses it)
    writer = RowWriter(args.out, resume=args.resume) if args.out is not None else None
    ex = None
    try:
        if args.dask:
            ex = executor(args)
            print(f"solving on {ex.describe()}", file=info)
        if args.resume:
            cut = f" ({writer.unreadable} unreadable lines ignored)" if writer.unreadable else ""
            print(f"resume: {len(writer.done)} finished (instance, backend) pairs in "
                  f"{args.out} are skipped{cut}", file=info)
        batch = run_batch(args.files, backends, time_limit=args.time_limit, seed=args.seed,
                          workers=args.workers, progress=not args.no_progress, rule=args.rule,
                          writer=writer, handle_signals=True, solver_options=options or None,
                          executor=ex, chunk=args.chunk,
                          on_row=_print_log if args.solver_log else None)
    finally:
        if writer is not None:
            writer.close()
        if ex is not None:
            ex.close()
    rows = batch.rows
    if args.json:
        _print_json(rows, batch, args)
    if batch.signum is not None:
        if writer is None:
            print_rows(rows, file=info)  # nothing on disk: show what was solved
        count = writer.count if writer is not None else len(rows)
        kept = (f"{count} row{'' if count == 1 else 's'} (one per file and backend, the "
                f"interrupted one included) " + (f"written to {args.out}" if writer is not None
                                                 else "above"))
        name = signal.Signals(batch.signum).name
        print(f"hpcopt: interrupted by {name}: {batch.finished} of {batch.items} files done "
              f"with every backend; {kept}" + (" (rerun with --resume to finish)"
                                               if writer is not None and writer.path is not None
                                               else ""), file=sys.stderr)
        return 128 + batch.signum
    if rows:
        print_rows(rows, file=info)
    if batch.skipped:
        print(f"skipped {batch.skipped} pairs already in {args.out}", file=info)
    if writer is not None and writer.path is not None:
        print(f"wrote {writer.count} rows to {args.out}", file=info)
    errors = sum(r["status"] == "ERROR" for r in rows)
    if errors:
        print(f"hpcopt: error: {errors} of {len(rows)} rows failed", file=sys.stderr)
    return 1 if errors else 0


def _check_inputs(patterns) -> None:
    """A named input that does not exist (a file, a folder, a pattern matching nothing) stops
    the command before anything is solved: exit 2, like every command's missing input."""
    from ..batch import STDIN
    from ..instances import expand_paths

    for pattern in patterns:
        if str(pattern) != STDIN:
            expand_paths([pattern])


def _print_log(row: dict) -> None:
    log = row.get("log") or "(no log: the backend keeps none)"
    print(f"--- solver log: {row.get('instance')} by {row.get('backend')} "
          f"({row.get('status')}) ---\n{log.rstrip()}", file=sys.stderr, flush=True)


SUMMARY_FIELDS = ("file", "instance", "backend", "status", "objective", "bound", "gap",
                  "wall_time_s", "limit", "certified", "error")


def _print_json(rows: list[dict], batch, args) -> None:
    """The batch's machine-readable summary: one JSON object on standard output."""

    doc = {"rows": len(rows), "files": batch.items, "finished": batch.finished,
           "skipped": batch.skipped,
           "status": dict(Counter(r.get("status") for r in rows)),
           "errors": sum(r.get("status") == "ERROR" for r in rows),
           "interrupted": None if batch.signum is None else signal.Signals(batch.signum).name,
           "wall_time_s": sum(r.get("wall_time_s") or 0.0 for r in rows),
           "out": args.out,
           "results": [{k: r.get(k) for k in SUMMARY_FIELDS} for r in rows]}
    print(json.dumps(json_safe(doc), allow_nan=False), flush=True)
