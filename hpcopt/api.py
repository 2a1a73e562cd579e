"""The Python API that mirrors the CLI: simulate, solve, load_trace, load_instance."""

from __future__ import annotations

from collections.abc import Iterable
from operator import attrgetter
from pathlib import Path

from .domain import Job, System
from .errors import SimulationError
from .jsonsafe import json_safe
from .scenario import Scenario, build_scenario
from .sim.result import SimulationResult


def load_trace(path, **kwargs):
    """Read a workload trace (SWF, CSV or JSON job table, Batsim JSON); see
    ``hpcopt.traces.load_trace``."""
    from .traces import load_trace as _load

    return _load(path, **kwargs)


def load_instance(path):
    """Read and validate an instance file; see ``hpcopt.instances.load_instance``."""
    from .instances import load_instance as _load

    return _load(path)


def solve(model_or_path, backend: str | None = None, **kwargs):
    """Solve a model (or an instance file) with a named backend (default: the model's own,
    e.g. ``dp`` for knapsack, ``pareto-exact`` for bbsched); returns a ``Result``.

    ``rule=`` picks the decision from a multi-objective backend's Pareto set (see
    ``hpcopt.models.pareto_rules``)."""
    from .solvers import solve as _solve

    model = model_or_path
    if isinstance(model_or_path, (str, Path)):
        model = load_instance(model_or_path).model
    elif hasattr(model_or_path, "model") and not hasattr(model_or_path, "evaluate"):
        model = model_or_path.model  # an Instance
    return _solve(model, backend, **kwargs)


def simulate(
    trace,
    *,
    nodes: int | None = None,
    system: System | None = None,
    jobs: int | None = None,
    cores_per_node: int | None = None,
    policy="fcfs",
    order: str | None = None,
    backfill: str | bool | None = None,
    window: int | None = None,
    seed: int | None = None,
    starvation_bound: int | None = None,
    period: float | None = None,
    warmup: float = 0,
    cooldown: float = 0,
    progress: bool = False,
    workload: str | None = None,
    workload_seed: int | None = None,
    bb: float | None = None,
    ssd_classes=None,
    topology: str | None = None,
    tz: str | None = None,
    sizes: str = "nodes",
    partition: str | None = None,
    events=None,
    **policy_options,
) -> SimulationResult:
    """Simulate a trace (path, ``Trace`` or list of ``Job``) under a policy.

    ``policy`` is a registered name (``hpcopt policies``) or a policy object; further keyword
    options (``backend=``, ``value=`` ...) go to the policy.  ``nodes`` overrides the system
    size, ``system`` gives the whole machine (burst buffer, SSD classes; a trace file only
    knows the node count), and ``jobs`` keeps the first N jobs.  ``cores_per_node`` converts
    the processors of an SWF file to nodes (default: from its header ``MaxProcs / MaxNodes``,
    else 1; see ``hpcopt.traces.cleaning``).  ``backfill`` and ``period``
    default to the policy's own (EASY and none for most).  ``workload`` (S1-S7, seeded by
    ``workload_seed``, default ``seed``), ``bb``, ``ssd_classes`` and ``topology`` shape the
    trace's jobs and system (``hpcopt.scenario.build_scenario``, which the CLI uses too);
    ``tz``, ``sizes`` and ``partition`` say how a Slurm trace (sacct, jobcomp) is read
    (``hpcopt.traces.load_trace``).
    ``events`` (a path, or a callable taking a dict) gets one row per driver event: submit,
    start (with how the job started), reserve, complete, drop (``hpcopt.sim.eventlog``).
    Returns a ``SimulationResult``.

    An ``osdec`` instance (file, ``Instance`` or model) runs online slot by slot
    (``hpcopt.cloud.simulate_osdec``; options ``offline_bound=``, ``offline_backend=``,
    ``offline_time_limit=`` give the gap to the offline optimum).
    """
    from .cloud import is_osdec_file, simulate_osdec
    from .policies import build_policy
    from .sim.driver import Simulator, fewer_collections
    from .sim.eventlog import run_logged
    from .sim.metrics import job_columns, summarize

    if getattr(trace, "kind", None) == "osdec" or getattr(getattr(trace, "model", None),
                                                          "kind", None) == "osdec" \
            or (isinstance(trace, (str, Path)) and is_osdec_file(trace)):
        # a deferrable-job instance: the cloud-slot run (hpcopt.cloud), driver settings fixed
        return simulate_osdec(trace, policy, seed=seed, progress=progress, events=events,
                              **policy_options)
    cleaning, shaped = None, {}
    if isinstance(trace, (str, Path)) or hasattr(trace, "system"):  # a path, Trace, Scenario
        if not isinstance(trace, Scenario):  # (a Scenario is already shaped: used as it is)
            trace = build_scenario(trace, nodes=nodes, jobs=jobs, cores_per_node=cores_per_node,
                                   workload=workload, bb=bb, ssd_classes=ssd_classes,
                                   topology=topology, tz=tz, sizes=sizes,
                                   partition=partition, workload_seed=(
                                       (seed or 0) if workload_seed is None else workload_seed))
        job_list, shaped = list(trace.jobs), trace.settings
        system = trace.system if system is None else system
        cleaning = trace.report.to_dict() if trace.report is not None else None
    else:
        if workload or bb is not None or ssd_classes or topology:
            raise SimulationError("workload=, bb=, ssd_classes= and topology= shape a trace "
                                  "(a path or Trace); a job list needs system=")
        job_list = list(trace)
        if jobs is not None:
            job_list = job_list[:jobs]
        if system is None:
            if nodes is None:
                raise SimulationError("simulate() of a job list needs nodes= or system=")
            system = System(nodes)
    pol = build_policy(policy, **policy_options)
    pol.reset(seed)
    with fewer_collections():  # records, running jobs, events and the table: no cycles
        sim = Simulator(job_list, system, pol, order=order, backfill=backfill, window=window,
                        starvation_bound=starvation_bound, period=period,
                        progress=progress)
        run_logged(sim, events)
        table = job_columns(sim.records.values(), _extra_columns(job_list, system))
    ssd_total = sum(float(size) * count for size, count in system.ssd_classes.items())
    summary = summarize(table, system.nodes, warmup=warmup, cooldown=cooldown,
                        bb_capacity=system.bb, ssd_capacity=ssd_total)
    settings = dict(policy=getattr(pol, "name", type(pol).__name__), order=sim.order_name,
                    backfill="easy" if sim.backfilling else "none", window=sim.window_size,
                    starvation_bound=sim.starvation_bound, period=sim.period, seed=seed,
                    nodes=system.nodes,
                    cores_per_node=cleaning["cores_per_node"] if cleaning else None,
                    policy_options=json_safe({**getattr(pol, "options", {}), **policy_options}),
                    **shaped)
    return SimulationResult(table, summary, settings, cleaning)


def _extra_columns(jobs: Iterable[Job], system: System) -> dict:
    """Columns for the further resources: burst buffer (GB), SSD per node (GB) and, on a
    system with SSD classes, the SSD GB of the nodes each job got (``ssd_assigned``); on a
    system with a topology, the communication-hop cost of each job's nodes (``comm_cost``)."""
    cols = {}
    if system.bb > 0 or any(map(attrgetter("bb"), jobs)):
        cols["bb"] = lambda r: r.job.bb
    if system.ssd_classes or any(map(attrgetter("ssd"), jobs)):
        cols["ssd"] = lambda r: r.job.ssd
    if system.ssd_classes:
        sizes = sorted(float(s) for s in system.ssd_classes)
        cols["ssd_assigned"] = lambda r: float(sum(n * s for n, s in zip(r.allocation, sizes)))
    if system.topology is not None:
        cols["comm_cost"] = lambda r: system.topology.cost(r.allocation)
    return cols
