"""``hpcopt sweep``: the Cartesian product of simulate settings x seeds, one row per run."""

from __future__ import annotations

import json
import signal
import sys
from collections import Counter

from ..cliargs import out_path
from ..errors import HpcoptError
from ..jsonsafe import json_safe
from .common import add_executor_flags, executor


def register(sub) -> None:
    w = sub.add_parser("sweep", help="run the Cartesian product of simulate settings x seeds "
                                     "(one summary row per run)")
    w.add_argument("sweep", metavar="SWEEP.json",
                   help='a JSON object of settings, lists are axes: {"trace": [...], "policy": '
                        '[...], "window": [...], "seed": [...], "options": {...}, "jobs": N} '
                        "(see hpcopt.sweep)")
    w.add_argument("--out", type=out_path, required=True, metavar="F",
                   help="write each run's row as soon as it ends to F.jsonl or F.csv (a new "
                        "file unless --resume); - streams JSONL to standard output")
    w.add_argument("--resume", action="store_true",
                   help="keep the runs already in --out and skip them; error and interrupted "
                        "runs are run again")
    add_executor_flags(w)
    w.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    w.add_argument("--json", action="store_true",
                   help="print a summary of the sweep (counts by status, and every row) as one "
                        "JSON object on standard output; the other lines go to standard error")
    w.set_defaults(run=run)


def run(args) -> int:
    # every command module loads when ``hpcopt`` starts: the sweep's own (the driver, the
    # policies, the executors) loads when it runs
    from ..batch import RowWriter
    from ..sweep import load_sweep, missing_traces, run_key, run_sweep

    sweep = load_sweep(args.sweep)  # a malformed sweep file stops here, before any run
    missing = missing_traces(sweep)
    if missing:  # a missing input: one line, exit 2, like every command's
        raise HpcoptError(f"{args.sweep}: {missing[0]}"
                          + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    if args.json and args.out == "-":
        raise HpcoptError("--json and --out - both write standard output: give --out a file")
    info = sys.stderr if args.out == "-" or args.json else sys.stdout
    writer = RowWriter(args.out, resume=args.resume, columns=sweep.columns, key=run_key,
                       command="hpcopt sweep")
    ex = None
    try:
        ex = executor(args) if args.dask else None  # else run_sweep's pool/serial
        where = ex.describe() if ex is not None else (
            f"{args.workers} local processes" if args.workers > 1 else "this process")
        print(f"sweep {args.sweep}: {len(sweep.runs)} runs on {where}", file=info)
        if args.resume:
            cut = f" ({writer.unreadable} unreadable lines ignored)" if writer.unreadable else ""
            print(f"resume: {len(writer.done)} finished runs in {args.out} are skipped{cut}",
                  file=info)
        done = run_sweep(sweep, writer=writer, executor=ex, workers=args.workers,
                         chunk=args.chunk, handle_signals=True, progress=not args.no_progress)
    finally:
        writer.close()
        if ex is not None:
            ex.close()
    if args.json:
        doc = {"runs": done.runs, "finished": done.finished, "skipped": done.skipped,
               "status": dict(Counter(r.get("status") for r in done.rows)),
               "errors": sum(r.get("status") == "ERROR" for r in done.rows),
               "interrupted": None if done.signum is None
               else signal.Signals(done.signum).name,
               "out": args.out, "results": done.rows}
        print(json.dumps(json_safe(doc), allow_nan=False), flush=True)
    if done.signum is not None:
        name = signal.Signals(done.signum).name
        print(f"hpcopt: interrupted by {name} after {done.finished} of {done.runs} runs; "
              f"{writer.count} rows written to {args.out}"
              + (" (rerun with --resume to finish)" if writer.path is not None else ""),
              file=sys.stderr)
        return 128 + done.signum
    errors = sum(r.get("status") == "ERROR" for r in done.rows)
    if done.skipped:
        print(f"skipped {done.skipped} runs already in {args.out}", file=info)
    if writer.path is not None:
        print(f"wrote {writer.count} rows to {args.out}", file=info)
    if errors:
        first = next(r for r in done.rows if r.get("status") == "ERROR")
        print(f"hpcopt: error: {errors} of {len(done.rows)} runs failed (first: "
              f"{first.get('error')})", file=sys.stderr)
    return 1 if errors else 0
