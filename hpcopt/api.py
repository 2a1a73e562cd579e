"""The Python API that mirrors the CLI: simulate, solve, load_trace, load_instance."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import replace
from functools import partial
from operator import attrgetter
from pathlib import Path

from . import traces
from .domain import Job, System
from .instances import load_instance as _load
from .policies import build_policy
from .policies.base import policy_options as options_of
from .run_settings import RunSettings
from .sim.driver import Simulator, fewer_collections
from .sim.eventlog import run_logged
from .sim.forecast import (
    BandCalibration,
    forecast,
    forecast_rows,
    join_actual,
    recent_stream,
    replay_forecasts,
)
from .sim.limits import SiteLimits, Who
from .sim.metrics import job_columns, summarize
from .sim.priority import SitePriority
from .sim.reservations import with_group_users
from .sim.result import SimulationResult


def load_trace(path, **kwargs):
    """Read a workload trace (SWF, CSV or JSON job table, Batsim JSON); see
    ``hpcopt.traces.load_trace``."""
    return traces.load_trace(path, **kwargs)


def load_instance(path):
    """Read and validate an instance file; see ``hpcopt.instances.load_instance``."""
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
    forecast_every: float | None = None,
    forecast_draws: int = 20,
    forecast_stream: float | None = None,
    forecast_raw_bands: bool = False,
    **policy_options,
) -> SimulationResult:
    """Simulate a workload trace (path, ``Trace``, ``Scenario`` or list of ``Job``) under a
    policy: the keywords build a ``RunSettings`` and ``simulate_run`` runs it.

    ``policy`` is a registered name (``hpcopt policies``) or a policy object; further keyword
    options (``backend=``, ``value=`` ...) go to the policy.  ``nodes`` overrides the system
    size, ``system`` gives the whole machine (burst buffer, SSD classes; a trace file only
    knows the node count), and ``jobs`` keeps the first N jobs.  ``cores_per_node`` converts
    the processors of an SWF file to nodes (default: from its header ``MaxProcs / MaxNodes``,
    else 1; see ``hpcopt.traces.cleaning``).  ``backfill`` and ``period``
    default to the policy's own (EASY and none for most).  ``workload`` (S1-S7, seeded by
    ``workload_seed``, default ``seed``), ``bb``, ``ssd_classes`` and ``topology`` shape the
    trace's jobs and system (``hpcopt.scenario.ScenarioSettings``, which the CLI uses too);
    ``tz``, ``sizes`` and ``partition`` say how a Slurm trace (sacct, jobcomp) is read
    (``hpcopt.traces.load_trace``).
    ``events`` (a path, or a callable taking a dict) gets one row per driver event: submit,
    start (with how the job started), reserve, complete, drop (``hpcopt.sim.eventlog``).
    ``forecast_every`` (seconds) forecasts every waiting job's start that often along the
    run, by ``forecast_draws`` runs of the same driver and policy forward from the state of
    that moment (``hpcopt.sim.forecast``); the result's ``forecasts`` holds them, each with
    the job's real start, and ``write`` saves them as ``forecasts.csv``.  The forecasts leave
    later submissions out, unless ``forecast_stream`` (seconds): the jobs submitted in that
    span before come again, three times over, as a modelled stream.  Each forecast's band
    is calibrated (``BandCalibration``: widened by the errors of the earlier forecasts
    whose jobs had started by its time), unless ``forecast_raw_bands``: the draws' 10%-90%.
    Returns a ``SimulationResult``.

    A cloud day (an ``osdec`` instance) is ``hpcopt.simulate_osdec``.
    """
    run = RunSettings.from_flat(
        nodes=nodes, system=system, jobs=jobs, cores_per_node=cores_per_node, policy=policy,
        order=order, backfill=backfill, window=window, seed=seed,
        starvation_bound=starvation_bound, period=period, warmup=warmup, cooldown=cooldown,
        progress=progress, workload=workload, workload_seed=workload_seed, bb=bb,
        ssd_classes=ssd_classes, topology=topology, tz=tz, sizes=sizes, partition=partition,
        **policy_options)
    return simulate_run(trace, run, events=events, forecast_every=forecast_every,
                        forecast_draws=forecast_draws, forecast_stream=forecast_stream,
                        forecast_raw_bands=forecast_raw_bands)


def simulate_run(trace, run: RunSettings, *, events=None, forecast_every: float | None = None,
                 forecast_draws: int = 20, forecast_stream: float | None = None,
                 forecast_raw_bands: bool = False) -> SimulationResult:
    """Run ``run`` (``RunSettings``) on ``trace`` (path, ``Trace``, ``Scenario`` or list of
    ``Job``; ``ScenarioSettings.build``); ``events`` and the ``forecast_*`` settings as in
    ``simulate``."""
    scenario = run.scenario.build(trace)
    job_list, system = list(scenario.jobs), scenario.system
    run = _on_trace_clock(run, scenario.clock_origin)
    run = _charged_to_groups(run, job_list, scenario.attributes.get("account")
                             or scenario.attributes.get("group"))
    cleaning = scenario.report.to_dict() if scenario.report is not None else None
    rows: list = []

    def forecasting(pol):  # the run's driving with forecasts every ``forecast_every`` s
        def drive(sim):
            bands = None if forecast_raw_bands else BandCalibration().follow(sim)
            forecaster = _forecaster(run, pol, forecast_draws, forecast_stream, bands)
            rows.extend(replay_forecasts(sim, forecast_every, forecaster,
                                         recent=forecast_stream or 0.0))

        return drive

    sim, pol, table = run_simulation(
        job_list, system, run, events=events,
        columns=_extra_columns(job_list, system, scenario.attributes),
        driving=None if forecast_every is None else forecasting)
    forecasts = None if forecast_every is None else join_actual(rows, sim.records)
    ssd_total = sum(float(size) * count for size, count in system.ssd_classes.items())
    summary = summarize(table, system.nodes, warmup=run.warmup, cooldown=run.cooldown,
                        bb_capacity=system.bb, ssd_capacity=ssd_total)
    if sim.refused:  # submissions over a MaxSubmitJobs cap: never run (mode "refused")
        summary["refused"] = len(sim.refused)
    settings = {**run.record(pol, sim.settings, nodes=system.nodes,
                             cores_per_node=cleaning["cores_per_node"] if cleaning else None),
                **scenario.settings}
    if sim.settings.reservations:
        settings["reservations"] = [
            {"name": r.name, "start": r.start, "end": r.end, "nodes": r.nodes}
            for r in sim.settings.reservations]
    return SimulationResult(table, summary, settings, cleaning, forecasts)


def _forecaster(run: RunSettings, policy, draws: int, stream: float | None,
                bands: BandCalibration | None):
    """``on_state`` of ``replay_forecasts``: the forecast rows of one moment, by the run's
    policy (its own instance, built alike) and driver settings; with ``stream`` (seconds)
    the jobs submitted that long before come again, three times over
    (``hpcopt.sim.forecast.recent_stream``); with ``bands``, the bands calibrated."""
    twin = build_policy(run.policy, **run.policy_options) if isinstance(run.policy, str) \
        else copy.deepcopy(policy)
    twin.reset(run.seed)
    options = {k: v for k, v in run.driver.as_kwargs().items() if k != "progress"}
    seed = 0 if run.seed is None else run.seed

    def on_state(state, known):
        arrivals = recent_stream(known.submitted, state.time, stream, 3) if stream else ()
        got = forecast(state, twin, known.history, draws=draws, started=known.started,
                       seed=seed, arrivals=arrivals, **options)
        return forecast_rows(state, got if bands is None else bands.calibrate(state.time, got))

    return on_state


def _on_trace_clock(run: RunSettings, origin: float) -> RunSettings:
    """``run`` with the trace's clock (``Scenario.clock_origin``) given to a policy that
    takes a ``clock_origin`` option and was not given one (``--policy slurm``: Slurm's
    backfill groups job ends on the wall clock)."""
    if not origin or not isinstance(run.policy, str) or "clock_origin" in run.policy_options \
            or "clock_origin" not in options_of(run.policy):
        return run
    return replace(run, policy_options={**run.policy_options, "clock_origin": origin})


def _charged_to_groups(run: RunSettings, jobs: list[Job], groups: dict | None
                       ) -> RunSettings:
    """``run`` with each job charged to its account (``groups``: the trace's accounts where
    it names them, as sacct's do, else its groups; the users their users), in the site's
    priority order and limits where these name no accounts."""
    driver = run.driver
    order, limits = driver.order, driver.limits
    if order == "priority":
        order = SitePriority()
    if isinstance(order, SitePriority) and not order.accounts and groups:
        driver = replace(driver, order=order.with_accounts(groups))
    if isinstance(limits, SiteLimits) and not limits.who:
        groups = groups or {}
        driver = replace(driver, limits=replace(limits, who={
            j.id: Who(str(groups.get(j.id, "")), str(j.user)) for j in jobs}))
    if driver.reservations and groups:
        driver = replace(driver, reservations=with_group_users(driver.reservations, jobs,
                                                               groups))
    return run if driver is run.driver else replace(run, driver=driver)


def run_simulation(jobs, system: System, run: RunSettings, *, events=None, columns=None,
                   prepare=None, driving=None) -> tuple[Simulator, object, dict]:
    """The steps every simulation of a run shares (``simulate_run``, the cloud day of
    ``hpcopt.osdec.simulate_osdec``): the run's policy built (``prepare(policy)`` before its
    reset: e.g. the day's weights) and reset with the run's seed, the driver built with the
    run's options and run to the end (``events`` as in ``simulate``), and the table of its
    jobs with ``columns`` (name -> function of a job record) added; ``driving(policy)``, when
    given, returns how the driver is run instead of its ``run`` (a function of the
    simulator: forecasts along the way).  Returns ``(simulator, policy, table)``."""
    pol = build_policy(run.policy, **run.policy_options)
    if prepare is not None:
        prepare(pol)
    pol.reset(run.seed)
    with fewer_collections():  # records, running jobs, events and the table: no cycles
        sim = Simulator(list(jobs), system, pol, run.driver)
        run_logged(sim, events, None if driving is None else driving(pol))
        table = job_columns(sim.records.values(), columns or {})
    return sim, pol, table


def _extra_columns(jobs: Iterable[Job], system: System, attributes: dict | None = None) -> dict:
    """Columns after the core ones: who submitted each job and where (``user``, ``group``,
    ``queue``: the trace's numbers, -1 where it has none; ``partition`` and ``account`` where
    the trace names them, as Slurm's do); the further resources: burst buffer (GB), SSD
    per node (GB) and, on a system with SSD classes, the SSD GB of the nodes each job got
    (``ssd_assigned``); on a system with a topology, the communication-hop cost of each
    job's nodes (``comm_cost``)."""
    attributes = attributes or {}
    group = attributes.get("group", {})
    cols = {"user": attrgetter("job.user"), "group": lambda r: group.get(r.job.id, -1),
            "queue": attrgetter("job.queue")}
    for name in ("partition", "account"):
        if name in attributes:
            cols[name] = partial(_attribute, attributes[name])
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


def _attribute(values: dict, record):
    """A job's value of a trace attribute (``""`` where it has none)."""
    return values.get(record.job.id, "")
