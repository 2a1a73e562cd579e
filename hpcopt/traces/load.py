"""``load_trace``: one entry point over every trace format.

It checks the options, tells the format from the file name (or Slurm's formats from the first
line), has the format's module parse the records, and cleans them into a ``Trace``
(``hpcopt.traces.cleaning``).
"""

from __future__ import annotations

from pathlib import Path

from ..datadir import resolve_input
from ..errors import TraceError
from ._text import read_text, whole
from .batsim import decode_json, is_batsim, read_batsim
from .cleaning import clean, machine_of
from .report import Trace
from .slurm import parse_jobcomp, parse_sacct, sniff
from .swf import SwfHeader, parse_swf
from .tables import parse_csv, parse_json

#: The formats ``load_trace`` reads (``fmt=``, CLI ``--format``).
FORMATS = ("swf", "csv", "json", "batsim", "sacct", "jobcomp")


def load_trace(
    path: str | Path,
    *,
    nodes: int | None = None,
    cores_per_node: int | None = None,
    max_jobs: int | None = None,
    fmt: str | None = None,
    rebase: bool = False,
    extra_fields: str = "error",
    tz: str | None = None,
    sizes: str = "nodes",
    partition: str | None = None,
) -> Trace:
    """Read and clean a workload trace.

    Parameters
    ----------
    path : SWF (``.swf``), CSV (``.csv``) or JSON (``.json``: a job table, or a Batsim
        workload when the object has ``nb_res``, ``jobs`` and ``profiles``), each optionally
        gzipped (detected from the magic bytes; a ``.gz`` suffix is stripped before the
        format guess).
    nodes : system size in nodes; default from the header (see ``hpcopt.traces.cleaning``),
        else the largest job.  Not for Batsim workloads (their platform has ``nb_res``).
    cores_per_node : processors per node, to convert SWF processor counts to nodes
        (``ceil(procs / cores_per_node)``).  ``None`` (default): from the SWF header,
        ``MaxProcs / MaxNodes`` when that is a whole number > 1 (LLNL-Atlas: 8), else 1;
        tables and Batsim give nodes, so only 1 is accepted there.
    max_jobs : keep only the first ``max_jobs`` records of the file (file order, before
        cleaning).
    fmt : ``"swf"``, ``"csv"``, ``"json"`` or ``"batsim"``; default from the suffix (and, for
        ``.json``, from the document's keys).
    rebase : shift submit times so that the first kept job is submitted at 0.
    extra_fields : ``"error"`` (default) or ``"ignore"``: SWF lines with more than 18 fields
        (MetaCentrum's 21) keep their first 18 (counted in the report).
    tz : Slurm formats (sacct, jobcomp): the time zone their times were printed in, an IANA
        name (``"Europe/Berlin"``, daylight saving time by its rules) or ``"UTC"``; default
        (``None``): the local zone of this process (``TZ`` or the system's).  Other formats
        read zone-less times as UTC.
    sizes : Slurm formats: ``"nodes"`` (default: ``NNodes``/``NodeCnt``) or ``"cores"``
        (``NCPUS``/``ProcCnt``), for a partition whose jobs share nodes core by core; the
        machine is then ``nodes`` x ``cores_per_node`` cores (both given), else as large as
        the largest job.
    partition : Slurm formats: keep the jobs of this partition only (a machine per
        partition); the jobs of others are counted in a note.

    ``path`` may also name a data set of the data directory (``"kth-sp2"``, a path relative
    to it; ``hpcopt.datadir.resolve_input``).

    Raises ``TraceError`` (one line naming file, line and field) for unreadable input.
    """
    path = resolve_input(path, "trace")
    src, p = str(path), Path(path)
    fmt = _guess_format(p) if fmt is None else str(fmt).lower()
    nodes, max_jobs = _checked(src, fmt, nodes=nodes, max_jobs=max_jobs,
                               extra_fields=extra_fields, tz=tz, sizes=sizes,
                               partition=partition)
    machine_notes: list[str] = []
    if sizes == "cores":  # job sizes in cores: the machine's unit is a core
        nodes, machine_notes = _machine_in_cores(src, nodes, cores_per_node)
        cores_per_node = None
    text = read_text(p, src)
    header = SwfHeader()
    header.source = src
    doc = decode_json(text, src) if fmt in ("json", "batsim") else None
    if fmt == "json" and is_batsim(doc):
        fmt = "batsim"
    cpn, cpn_source, notes = machine_of(header, fmt, cores_per_node)  # checks a given value
    if fmt == "batsim":  # its platform size is nb_res
        _no_nodes(src, nodes)
        return read_batsim(doc, src, p, max_jobs=max_jobs, rebase=rebase)
    cols, extra, ignored, slurm_notes = _parse(
        fmt, text, doc, src, header, max_jobs, extra_fields=extra_fields, tz=tz, sizes=sizes,
        partition=partition)
    if fmt == "swf":
        cpn, cpn_source, notes = machine_of(header, fmt, cores_per_node)  # now with the header
    if slurm_notes is not None:
        notes = [*notes, *machine_notes, *slurm_notes]
        if sizes == "cores":
            header["Sizes"] = "cores"
            cpn_source = "sizes='cores': a job's size is its cores, the machine's unit a core"
    return clean(cols, src=src, path=p, fmt=fmt, header=header, nodes=nodes,
                 cores_per_node=cpn, cores_per_node_source=cpn_source, max_jobs=max_jobs,
                 rebase=rebase, extra=extra, ignored=ignored, notes=notes)


def _no_nodes(src: str, nodes: int | None) -> None:
    if nodes is not None:
        raise TraceError(f"{src}: nodes={nodes} does not apply to a Batsim workload; its "
                         "platform size is nb_res")


def _checked(src: str, fmt: str, *, nodes, max_jobs, extra_fields: str, tz, sizes: str,
             partition) -> tuple[int | None, int | None]:
    """``load_trace``'s options checked (one-line ``TraceError``s); ``nodes`` and
    ``max_jobs`` as whole numbers."""
    if fmt not in FORMATS:
        raise TraceError(f"{src}: unknown trace format {fmt!r}; expected "
                         + ", ".join(repr(f) for f in FORMATS))
    if extra_fields not in ("error", "ignore"):
        raise TraceError(f"extra_fields must be 'error' or 'ignore', got {extra_fields!r}")
    nodes = None if nodes is None else whole("nodes", nodes, 1)
    max_jobs = None if max_jobs is None else whole("max_jobs", max_jobs, 0)
    if sizes not in ("nodes", "cores"):
        raise TraceError(f"sizes must be 'nodes' or 'cores', got {sizes!r}")
    given = [k for k, v in (("tz", tz), ("sizes", sizes != "nodes" or None),
                            ("partition", partition)) if v is not None]
    if fmt not in ("sacct", "jobcomp") and given:
        raise TraceError(f"{src}: {given[0]}= applies to Slurm's sacct and jobcomp formats, "
                         f"not {fmt}")
    return nodes, max_jobs


def _machine_in_cores(src: str, nodes: int | None, cores_per_node) -> tuple[int | None, list]:
    """With job sizes in cores, the machine in cores (``nodes`` x ``cores_per_node``, both
    needed when ``nodes`` is given) and the note that says so."""
    if nodes is None:
        return None, ["sizes in cores: the machine is as many cores as the largest job (pass "
                      "nodes and cores_per_node for the machine's)"]
    if cores_per_node is None:
        raise TraceError(f"{src}: sizes='cores' with nodes={nodes} needs cores_per_node (the "
                         "machine's cores per node)")
    cpn = whole("cores_per_node", cores_per_node, 1)
    return nodes * cpn, [f"sizes in cores: the machine is {nodes:,} nodes x {cpn} cores = "
                         f"{nodes * cpn:,} cores"]


def _parse(fmt: str, text: str, doc, src: str, header: SwfHeader, max_jobs, *,
           extra_fields: str, tz, sizes: str, partition):
    """The records of a job table (SWF, CSV, JSON, Slurm's): ``(columns, extra SWF fields,
    ignored columns, the Slurm reader's notes or None)``."""
    if fmt == "swf":
        cols, extra = parse_swf(text, src, header, max_jobs, extra_fields == "ignore")
        return cols, extra, (), None
    if fmt in ("csv", "json"):
        cols, ignored = (parse_csv(text, src, max_jobs) if fmt == "csv"
                         else parse_json(doc, src, header, max_jobs))
        return cols, 0, ignored, None
    parse = parse_sacct if fmt == "sacct" else parse_jobcomp  # hpcopt.traces.slurm
    cols, ignored, notes = parse(text, src, header, max_jobs, tz=tz, sizes=sizes,
                                 partition=partition)
    return cols, 0, ignored, notes


def _guess_format(p: Path) -> str:
    name = p.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    for suffix in ("swf", "csv", "json"):
        if name.endswith("." + suffix):
            return suffix
    fmt = sniff(read_text(p, str(p)).partition("\n")[0])  # sacct / jobcomp by content
    if fmt is not None:
        return fmt
    raise TraceError(
        f"{p}: cannot tell the trace format from the file name; "
        "pass fmt='swf', 'csv', 'json', 'batsim', 'sacct' or 'jobcomp' (CLI: --format)"
    )
