"""Online OSDEC: an ``osdec`` instance file run slot by slot through the one driver loop.

The same file is the offline model (``hpcopt solve W.json``) and the online workload
(``hpcopt simulate W.json --policy NAME``).  ``osdec_workload`` turns the model into driver
inputs: one ``Job`` per deferrable job (time unit: one slot; ``nodes = cores = c_i``,
``runtime = walltime = d_i``, ``submit = g_i``, ``earliest = e_i``, ``latest = min(l_i, T-1)``:
the model starts jobs only in slots < T; a text id becomes a ``NumberedId``, so that the
driver's base orders break ties by the id's numbers, ``"t:44"`` before ``"t:213"``) and a
``System`` whose capacity profile is ``C_t``.  The system's size is the machine M, a constant
known in advance (``C_t <= M``): the generator records it (``meta.machine_size``), which
``simulate_osdec`` reads from an instance or file; without it the largest ``C_t`` of the day
stands in, which a policy that reads the machine size (DRAS's state, BBSched's utilizations)
would see ahead of time, so give ``machine=`` for such files.
``simulate_osdec`` runs the driver with a period of one slot and no backfilling: at each slot
the capacity moves to ``C_t``, jobs whose ``earliest`` came join the queue (before that the
policy sees them only as the future set, ``Simulator.upcoming``), jobs past ``latest`` are
dropped, and the policy's starts must fit ``max(0, C_t - running cores)``.

The score is the model's own: the online schedule becomes an offline decision (start slot per
job, ``-1`` when dropped) and ``OSDECModel.evaluate`` gives ``total_reward`` (its objective),
``revenue``, ``delay_penalty`` and ``violation_penalty`` -- the same function that certifies
the offline solvers, so online and offline numbers compare exactly.  ``utilization`` is the
share of the capacity used, ``sum_t min(load_t, C_t) / sum_t C_t`` over t < T.  With an
offline reference (an optimum, or a dual bound when the solver stopped at a limit),
``gap_to_offline = (reference - total_reward) / |reference|``.
"""

from __future__ import annotations

import math
from pathlib import Path

from .api import run_simulation
from .domain import Job, NumberedId, System
from .errors import InstanceError, SimulationError
from .instances import (
    decode_instance_bytes,
    load_instance,
    parse_instance_text,
    read_instance_bytes,
)
from .result import SolutionStatus
from .run_settings import RunSettings
from .sim.driver import Simulator
from .sim.orders import total_ids
from .sim.resources import CapacityProfile
from .sim.result import SimulationResult
from .sim.settings import DriverOptions

SUMMARY_KEYS = ("total_reward", "revenue", "delay_penalty", "violation_penalty", "started",
                "dropped", "utilization")


def load_osdec(source):
    """An ``OSDECModel`` from a model, an ``Instance`` or an instance file path."""
    from .models.osdec import OSDECModel  # the model, loaded where a cloud day runs

    if isinstance(source, OSDECModel):
        return source
    if isinstance(source, (str, Path)):
        source = load_instance(source)
    model = getattr(source, "model", None)
    if not isinstance(model, OSDECModel):
        raise SimulationError(f"not an osdec instance: {source!r}")
    return model


def is_osdec_file(path) -> bool:
    """Whether ``path`` is an instance file of the osdec model (``.json`` or gzipped
    ``.json.gz``); a file that cannot be read as an instance is not one."""
    p = Path(path)
    if not p.name.endswith((".json", ".json.gz")) or not p.is_file():
        return False
    try:
        doc = parse_instance_text(decode_instance_bytes(read_instance_bytes(p), p), p)
    except InstanceError:
        return False
    return isinstance(doc, dict) and doc.get("model") == "osdec"


def machine_size(source) -> int | None:
    """The machine size M recorded with an instance (``meta.machine_size``), else None."""
    if isinstance(source, (str, Path)):
        source = load_instance(source)
    size = (getattr(source, "meta", None) or {}).get("machine_size")
    return int(size) if size is not None else None


def osdec_workload(model, machine: int | None = None) -> tuple[list[Job], System]:
    """Driver jobs and system of an OSDEC model (module docstring); ``machine`` is M."""
    T = int(model.slots)
    if model.n_jobs and int(model.submit.min()) < 0:
        i = int(model.submit.argmin())
        raise SimulationError(f"osdec jobs[{i}].submit: expected a slot >= 0 for an online run, "
                              f"got {int(model.submit[i])} (negative slots are for "
                              f"rolling-horizon sub-models)")
    jobs = []
    for i in range(model.n_jobs):
        c, d = int(model.cores[i]), int(model.duration[i])
        jid = model.ids[i]
        jobs.append(Job(id=NumberedId(jid) if isinstance(jid, str) else jid,
                        submit=float(model.submit[i]), runtime=float(d),
                        walltime=float(d), nodes=c, cores=c,
                        earliest=float(model.earliest[i]),
                        latest=float(min(int(model.latest[i]), T - 1))))
    cap = [int(v) for v in model.capacity]
    size = max([1, *cap, *(int(c) for c in model.cores)])
    if machine is not None:
        if int(machine) < size:
            raise SimulationError(f"osdec machine size {machine}: expected >= every capacity "
                                  f"C_t and job's cores ({size})")
        size = int(machine)
    jobs = total_ids(jobs)  # ids may mix integers and text (hpcopt.sim.orders.MixedId)
    return jobs, System(size, capacity=CapacityProfile(cap, period=1.0), name="osdec")


def online_decision(model, records) -> list[int]:
    """The model decision of a finished simulation: each job's start slot, -1 if dropped."""
    out = []
    for jid in model.ids:
        start = records[jid].start
        out.append(-1 if start != start else int(start))
    return out


def online_summary(model, decision, reference: float | None = None) -> dict:
    """``SUMMARY_KEYS`` (and ``gap_to_offline`` given a reference) by ``model.evaluate``."""
    ev = model.evaluate(decision)
    cap = [int(c) for c in model.capacity]
    used = sum(min(load, c) for load, c in zip(ev.load, cap))
    out = {**ev.terms, "started": int(ev.started), "dropped": int(ev.dropped),
           "utilization": used / sum(cap) if sum(cap) else 0.0,
           "overload_core_slots": int(sum(ev.overload)), "feasible": bool(ev.feasible),
           "slots": int(model.slots), "jobs": int(model.n_jobs)}
    if reference is not None:
        out["offline_reference"] = float(reference)
        out["gap_to_offline"] = gap(reference, out["total_reward"])
    return out


def gap(reference: float, value: float) -> float:
    """Relative gap of ``value`` below ``reference``."""
    return (reference - value) / abs(reference) if reference else float(reference != value)


def offline_reference(model, backend: str = "scip", time_limit: float | None = None,
                      seed: int = 0) -> dict:
    """Solve the offline model: ``{reference, objective, bound, status, backend}``; the
    reference is the optimum when proven, else the dual bound (an upper bound on any
    schedule), else the incumbent."""
    from . import solvers  # every backend: loaded where the offline model is solved

    res = solvers.solve(model, backend, time_limit=time_limit, seed=seed)
    status = res.status.value  # the flat status column of the summary
    bound = res.bound
    if bound is not None and not math.isfinite(bound):
        bound = None  # no proven bound yet (stopped before the root LP): not a reference
    ref = res.objective if res.solution == SolutionStatus.OPTIMAL or bound is None else bound
    if ref is None:
        raise SimulationError(f"offline {backend} found no solution of the osdec model "
                              f"({status}); give --offline-bound instead")
    return {"reference": float(ref), "objective": res.objective, "bound": res.bound,
            "status": status, "backend": backend, "wall_time": res.wall_time}


class OsdecResult(SimulationResult):
    """A cloud day run online: the per-job table (with ``cores``, ``earliest``, ``latest``),
    the summary (``SUMMARY_KEYS``, ``gap_to_offline`` given a reference, ``offline``, the
    driver's drops) and the settings, plus the offline ``decision`` the schedule stands for
    (each job's start slot, -1 if dropped; ``OSDECModel.evaluate`` scores it) and the
    finished ``simulator``."""

    def __init__(self, jobs, summary: dict, settings: dict, decision: list[int],
                 simulator: Simulator) -> None:
        super().__init__(jobs, summary, settings)
        self.decision = decision
        self.simulator = simulator


def simulate_osdec(source, policy="fifo", *, seed: int | None = None,
                   offline_bound: float | None = None, offline_backend: str | None = None,
                   offline_time_limit: float | None = None, progress: bool = False,
                   machine: int | None = None, events=None, **policy_options) -> OsdecResult:
    """Run an OSDEC instance (a model, an ``Instance`` or an instance file) online under
    ``policy`` (module docstring): the driver with a period of one slot, no backfilling.
    ``machine`` is the machine size M (default: the instance's ``meta.machine_size``);
    ``offline_bound`` (a known optimum or bound) or ``offline_backend`` (solved here, within
    ``offline_time_limit`` seconds) gives ``gap_to_offline``; ``events`` a path or callable
    for the driver's events (``hpcopt.sim.eventlog``); further keywords are policy
    options."""
    run = RunSettings(policy=policy, policy_options=policy_options, seed=seed,
                      driver=DriverOptions(backfill="none", period=1.0, progress=progress))
    model = load_osdec(source)
    if machine is None and not hasattr(source, "slots"):  # an instance or a file, not a model
        machine = machine_size(source)
    jobs, system = osdec_workload(model, machine)

    def weigh(pol) -> None:  # a learned policy scores with the day's weights
        if hasattr(pol, "set_weights"):
            pol.set_weights(model.w1, model.w2, model.slots)

    extra = {"cores": lambda r: r.job.cores, "earliest": lambda r: r.job.earliest,
             "latest": lambda r: r.job.latest}
    sim, pol, table = run_simulation(jobs, system, run, events=events, columns=extra,
                                     prepare=weigh)
    decision = online_decision(model, sim.records)
    offline = None
    if offline_bound is not None:
        offline = {"reference": float(offline_bound), "status": "given"}
    elif offline_backend:
        offline = offline_reference(model, offline_backend, offline_time_limit)
    summary = online_summary(model, decision, None if offline is None else offline["reference"])
    summary["driver_dropped"] = len(sim.dropped)
    if offline is not None:
        summary["offline"] = offline
    settings = run.record(pol, sim.settings, model="osdec", w1=model.w1, w2=model.w2)
    return OsdecResult(table, summary, settings, decision, sim)


__all__ = ["SUMMARY_KEYS", "OsdecResult", "gap", "is_osdec_file", "load_osdec",
           "machine_size", "offline_reference", "online_decision", "online_summary",
           "osdec_workload", "simulate_osdec"]

