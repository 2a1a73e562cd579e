"""``hpcopt trace convert``: a trace (SWF, a job table, Slurm's sacct or jobcomp) written
again as SWF or CSV (``hpcopt.traces.convert``)."""

from __future__ import annotations

from ..cliargs import out_path, positive_int
from .common import add_slurm_trace_flags


def register(sub) -> None:
    t = sub.add_parser("trace", help="convert workload traces")
    ts = t.add_subparsers(dest="trace_command", required=True)
    c = ts.add_parser("convert", help="write a trace (sacct, jobcomp, SWF, CSV, JSON) as SWF "
                                      "or CSV, cleaned as every command reads it")
    c.add_argument("input", metavar="IN", help="the trace to read")
    c.add_argument("output", metavar="OUT", type=out_path, help="the file to write")
    c.add_argument("--to", required=True, choices=["swf", "csv"],
                   help="swf: SWF v2.2 (text ids such as Slurm array tasks numbered 1, 2, "
                        "... with the map in OUT.ids.csv); csv: a job table")
    c.add_argument("--format", default=None,
                   choices=["swf", "csv", "json", "batsim", "sacct", "jobcomp"],
                   help="the input's format (default: from its name or first line)")
    add_slurm_trace_flags(c)
    c.add_argument("--nodes", type=positive_int, default=None,
                   help="the machine's size in nodes (default: from the trace)")
    c.add_argument("--cores-per-node", type=positive_int, default=None,
                   help="SWF: processors per node; with --sizes cores: the machine's cores "
                        "per node (its size is then --nodes x this many cores)")
    c.set_defaults(run=run)


def run(args) -> int:
    from ..traces import load_trace
    from ..traces.convert import convert

    trace = load_trace(args.input, nodes=args.nodes, cores_per_node=args.cores_per_node,
                       fmt=args.format, tz=args.tz, sizes=args.sizes,
                       partition=args.partition)
    report = trace.report
    print(f"{args.input}: {report.fmt}, {report.machine_text()}")
    for note in report.notes:
        print(f"  note: {note}")
    print(report.dropped_text())
    if report.changed_text():
        print(report.changed_text())
    written = convert(trace, args.output, args.to)
    print(f"wrote {written[0]} ({len(trace.jobs):,} jobs)"
          + (f" and the id map {written[1]}" if len(written) > 1 else ""))
    return 0
