"""Workload and system assembly: a trace plus the settings that shape it -> the jobs and the
``System`` a simulation runs on.

The settings are those of ``hpcopt simulate``: the first N jobs, the system size, processors
per node, a shared burst buffer, local-SSD classes, a generated BBSched workload (S1-S7,
``hpcopt.workloads.make_workload``) or a fat-tree topology preset (the trace may then be a
TJAP job file).  ``ScenarioSettings`` is that part of a run's settings
(``hpcopt.run_settings.RunSettings``): ``hpcopt.simulate``, sweeps and the CLI all build
their runs here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .domain import Job, System
from .errors import SimulationError, closest
from .traces import load_trace
from .traces.tjap import load_tjap_jobs


@dataclass(frozen=True)
class Scenario:
    """The jobs and system of a run; ``report`` is the trace's cleaning report (None for a
    topology job file), ``notes`` say, one line each, what was read and generated, and
    ``settings`` are what a result records of it (the generated workload and its seed);
    ``attributes`` are the trace's per-job columns that ``Job`` has no field for (``{name:
    {job id: value}}``: group, partition), for the job table."""

    jobs: tuple[Job, ...]
    system: System
    report: Any = None
    notes: tuple[str, ...] = field(default=())
    settings: dict = field(default_factory=dict)
    attributes: dict = field(default_factory=dict)
    clock_origin: float = 0.0
    """The Unix time of the jobs' time 0 (``trace_clock_origin``)."""


def trace_clock_origin(trace) -> float:
    """The Unix time of ``trace``'s time 0: an SWF header's ``UnixStartTime`` (plus the
    shift of a rebase), else 0 (Slurm's traces are read in Unix seconds)."""
    start = getattr(getattr(trace, "header", None), "unix_start_time", None)
    report = getattr(trace, "report", None)
    return float(start or 0) + float(getattr(report, "rebase_offset", 0.0) or 0.0)


@dataclass(frozen=True)
class ScenarioSettings:
    """How a trace becomes a scenario (``build``), the one declaration of these settings (the
    Python API's keywords, ``RunSettings.from_flat``, sweep files and ``hpcopt simulate``'s
    flags are read into it by name): its first ``jobs`` jobs, the system size ``nodes``,
    processors per node (``cores_per_node``), the file's format (``fmt``; default from the
    suffix) and what to do with extra SWF fields, a shared burst buffer ``bb`` (GB) and
    local-SSD classes (``{GB: nodes}`` or ``"128:50,256:50"``); a generated BBSched
    ``workload`` (burst-buffer/SSD requests seeded by ``workload_seed``; the system gets 5 GB
    of burst buffer per node unless ``bb``, and half 128 GB / half 256 GB SSD nodes for S5-S7
    unless ``ssd_classes``); a fat-tree ``topology`` preset (``paper-1000``,
    ``hpcschedule-1000``; the trace may then be a TJAP job file); or the whole ``system`` (it
    replaces the trace's).  ``tz``, ``sizes`` and ``partition`` say how a Slurm trace (sacct,
    jobcomp) is read (``hpcopt.traces.load_trace``)."""

    nodes: int | None = None
    jobs: int | None = None
    cores_per_node: int | None = None
    fmt: str | None = None
    extra_fields: str = "error"
    workload: str | None = None
    workload_seed: int = 0
    bb: float | None = None
    ssd_classes: Any = None
    topology: str | None = None
    tz: str | None = None
    sizes: str = "nodes"
    partition: str | None = None
    system: System | None = None

    def build(self, trace) -> Scenario:
        """The scenario of ``trace``: a path or a ``Trace`` (``_from_trace``), a
        ``Scenario`` (used as it is, on ``system`` when given) or a list of ``Job`` (the
        first ``jobs``, on ``system`` or ``nodes`` interchangeable nodes)."""
        if isinstance(trace, Scenario):
            return trace if self.system is None else replace(trace, system=self.system)
        if isinstance(trace, (str, Path)) or hasattr(trace, "system"):  # a path or a Trace
            built = self._from_trace(trace)
            return built if self.system is None else replace(built, system=self.system)
        if self.workload or self.bb is not None or self.ssd_classes or self.topology:
            raise SimulationError("workload=, bb=, ssd_classes= and topology= shape a trace "
                                  "(a path or Trace); a job list needs system=")
        jobs = tuple(trace)[:self.jobs]
        system = self.system
        if system is None:
            if self.nodes is None:
                raise SimulationError("simulate() of a job list needs nodes= or system=")
            system = System(self.nodes)
        return Scenario(jobs, system)

    def _from_trace(self, trace) -> Scenario:
        """The jobs and system of ``trace`` (a path or a ``Trace``) under these settings."""
        if self.workload:
            check_workload_name(self.workload)
        if self.topology and self.workload:
            raise SimulationError("workload= generates burst-buffer/SSD workloads; it does not "
                                  "apply with topology=")
        notes: list[str] = []
        report = None
        attributes: dict = {}
        origin = 0.0
        if self.topology and isinstance(trace, (str, Path)) and not _is_job_table(str(trace)):
            job_list, system = tuple(load_tjap_jobs(trace, max_jobs=self.jobs)), None
        else:
            if isinstance(trace, (str, Path)):
                path = trace
                trace = load_trace(path, nodes=self.nodes, cores_per_node=self.cores_per_node,
                                   max_jobs=self.jobs, fmt=self.fmt,
                                   extra_fields=self.extra_fields, tz=self.tz,
                                   sizes=self.sizes, partition=self.partition)
                report = trace.report
                attributes = _by_id(trace)
                origin = trace_clock_origin(trace)
                notes.append(f"{trace.system.name or Path(path).name}: {report.machine_text()}")
                notes.extend(f"  note: {note}" for note in report.notes)
                notes.append(report.dropped_text())
                if report.changed_text():
                    notes.append(report.changed_text())
                job_list, system = tuple(trace.jobs), trace.system  # (nodes= applied in reading)
            else:  # a Trace already loaded
                report = getattr(trace, "report", None)
                attributes = _by_id(trace)
                origin = trace_clock_origin(trace)
                job_list = tuple(trace.jobs)[:self.jobs]
                system = trace.system if self.nodes in (None, trace.system.nodes) \
                    else System(self.nodes)
        if self.topology:
            from .workloads.tjap import tjap_system  # (as in _generate)

            system = tjap_system(self.topology)
        elif self.bb is not None or self.ssd_classes or self.workload:
            system = System(system.nodes, bb=system.bb if self.bb is None else self.bb,
                            ssd_classes=parse_ssd_classes(self.ssd_classes), name=system.name)
        settings: dict = {}
        if self.workload:
            job_list, system, line = _generate(job_list, system, self.workload,
                                               self.workload_seed)
            notes.append(line)
            settings = dict(workload=self.workload, workload_seed=self.workload_seed)
        return Scenario(job_list, system, report, tuple(notes), settings, attributes, origin)


def parse_ssd_classes(value) -> dict:
    """``"128:50,256:50"`` (GB:NODES pairs) or a dict -> ``{GB: nodes}``."""
    if not value:
        return {}
    if isinstance(value, dict):
        return {float(k): int(v) for k, v in value.items()}
    out = {}
    for part in str(value).split(","):
        size, sep, count = part.partition(":")
        try:
            gb, nodes = float(size), int(count)
        except ValueError:
            raise SimulationError(f"ssd_classes {value!r}: expected GB:NODES pairs separated "
                                  "by commas, e.g. 128:50,256:50") from None
        out[gb] = nodes
        if not sep or nodes < 0 or not 0 <= gb < float("inf"):
            raise SimulationError(f"ssd_classes {value!r}: expected GB:NODES pairs, "
                                  "e.g. 128:50")
    return out


def _is_job_table(path: str) -> bool:
    name = path[:-3] if path.endswith(".gz") else path
    return name.endswith((".swf", ".csv", ".json"))


def build_scenario(trace, **settings) -> Scenario:
    """The jobs and system of ``trace`` (a path or a ``Trace``) under ``settings``, the fields
    of ``ScenarioSettings`` (where each is described)."""
    return ScenarioSettings(**settings).build(trace)


def _by_id(trace) -> dict:
    """A trace's per-job ``attributes`` keyed by job id (``Scenario.attributes``)."""
    ids = [j.id for j in trace.jobs]
    return {name: dict(zip(ids, values))
            for name, values in getattr(trace, "attributes", {}).items()}


def check_workload_name(name: str, label: str = "workload") -> None:
    """A ``SimulationError`` naming ``label`` unless ``name`` is a generated workload."""
    from .workloads import NAMES  # (as in _generate)

    if name not in NAMES:
        raise SimulationError(f"{label} {name!r}: expected one of {', '.join(NAMES)}."
                              + closest(name, NAMES))


def _generate(jobs, system: System, name: str, seed: int):
    """``make_workload(name)`` applied to ``jobs`` and the system it needs, plus one line
    saying what was generated."""
    # every workload generator (burst buffer, topology, cloud): loaded by the runs that
    # generate one, not by every command that reads a scenario
    from .workloads import BB_PER_NODE_GB, SSD_SPLITS, bb_system, make_workload

    check_workload_name(name)
    if name != "original" and system.bb <= 0:
        system = replace(system, bb=BB_PER_NODE_GB * system.nodes)
    if name in SSD_SPLITS and not system.ssd_classes:
        system = replace(system, ssd_classes=bb_system(system.nodes, ssd=True).ssd_classes)
    out = tuple(make_workload(list(jobs), name, system=system, seed=seed))
    with_bb = sum(j.bb > 0 for j in out)
    with_ssd = sum(j.ssd > 0 for j in out)
    line = (f"workload {name} (seed {seed}): {with_bb:,} of {len(out):,} jobs ask for burst "
            f"buffer ({system.bb:,g} GB on the system)"
            + (f", {with_ssd:,} for local SSD" if name in SSD_SPLITS else ""))
    return out, system, line
