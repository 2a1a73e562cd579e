"""Workflows in a simulated queue: Big Job, Per-Stage, ASA, ASA Naive and an oracle.

A workflow's stages (``hpcopt.workflows.stages``) enter a real background trace replayed by
the one driver loop (``Simulator.run``; any policy, FCFS + EASY by default).  Stage jobs are
injected with ``Simulator.submit`` and followed with ``subscribe`` (START, COMPLETE, PASS);
there is no second simulation loop and no copy of a scheduling rule (DESIGN.md, "one loop").
Seed paper 002 (ASA) sections 2.2 and 4.1; ``../shared/specs/asa.md``.

Strategies (stage i: n_i cores for t_i seconds; run r submitted at a_r)
-----------------------------------------------------------------------
* ``bigjob``: one job of max n_i cores for sum t_i, submitted at a_r.
* ``perstage``: stage 1 at a_r, stage y when stage y-1 ends (its COMPLETE event).
* ``asa``: stage 1 at a_r; when stage y-1 starts its useful work, its end T is known
  (runtimes are exact: T = useful start + t_{y-1}); stage y is submitted at
  ``max(now, T - a)`` with ``a`` sampled from ``ASAEstimator`` (key = the stage's cores);
  the estimator observes the stage job's true queue wait (start - submit) when it starts.
  With ``prior > 0`` the sample may be the start-time estimate of the driver itself
  (``squeue --start``): a what-if pass ``Simulator.at(now, ...)`` on the current queue and
  running jobs, planned with requested walltimes, plus the new job; ``run()`` of that state
  gives the job's planned start.
* ``asa-naive``: ``asa`` in the naive mode below.
* ``oracle``: ``asa`` with the true wait instead of an estimate: the latest submit time
  ``s`` in [now, T] whose allocation starts no later than T (when none does: now or T,
  whichever starts first -- an early submission asks for a longer walltime, which can
  backfill worse).  It is computed by what-if
  *forks* of the running simulation (``copy.deepcopy`` of the simulator at the end of the
  pass, the same driver stepped with ``advance``/``schedule`` until the probe job starts):
  first ``s = T`` and ``s = now``, then bisection (at most ``oracle_steps`` forks, 60 s
  resolution).  The fork knows the whole future background trace but not the decisions
  later stages or other runs take after the fork, so it is exact for a single run and an
  upper bound in spirit otherwise (an allocation may still arrive a little off).

Dependency modes (what happens when an allocation starts before its predecessor ends)
--------------------------------------------------------------------------------------
* ``dependency`` (Slurm-style, the default for ``asa`` and ``oracle``): the stage job holds
  its cores from its start; its useful work begins when the predecessor ends.  Its runtime
  in the simulator is ``hold + t_y`` (hold = predecessor end - start), set when it starts;
  the hold is **overhead**: ``cores x hold`` core-hours, part of ``core_hours`` too.  The
  requested walltime covers the longest possible hold: ``t_y + max(0, T - submit)``, so a
  user could have asked for it.  No stage's useful work ever begins before its
  predecessor's end.
* ``naive`` (``asa-naive``): no dependency; an allocation that starts before the
  predecessor ends is cancelled (it holds its cores for ``cancel_delay`` seconds, default
  0, counted as overhead) and the stage is resubmitted when the predecessor ends (``max(T,
  cancel time)``, a plain submission: no second early allocation, no loop).
* ``afterok`` (Slurm's ``--dependency=afterok:<id>``; ``asa``, ``oracle``, ``perstage``):
  the stage job is submitted at the strategy's time with ``Job.deps = (id of the previous
  stage's job,)``.  The driver keeps it out of the queue until the predecessor has finished
  and then queues it by its own (early) submit time, so under FCFS it has aged in the queue
  and may overtake jobs submitted after it.  It never starts before its predecessor ends,
  holds no cores early (no overhead: ``overhead_core_hours`` is 0, ``core_hours`` is the
  useful work) and is never cancelled; it asks for ``t_y`` of walltime.  Per strategy:

  - ``asa``: submitted at ``max(now, T - a)`` as above (decided when stage y-1 starts, so
    at most ``t_{y-1}`` early).  The estimator observes ``start - submit`` as always (what
    ``sacct`` reports: in this mode it includes the time blocked on the dependency): a hit
    teaches the lead the stage had, a miss that lead plus the wait after release.  An early
    submission costs nothing here, so nothing teaches it to submit later than it did, and
    a stage whose waits were 0 keeps being submitted at T (Per-Stage's schedule).
  - ``oracle``: the earliest submission, with no estimate: every stage of run r is
    submitted at ``a_r`` as one afterok chain (stage y depends on stage y-1), as a Slurm
    user who submits the whole workflow at once.  With no cost for early submission and the
    FCFS key being the submit time, this is the best queue position a stage can have.  It
    is not ASA with perfect knowledge (its stages also age during stage 1's own wait, which
    ASA, deciding at stage y-1's start, cannot use), and not an optimum: the aged stages
    change the order among runs and the background, and EASY is not monotone in priority
    (``benchmarks/README.md``: one row where it is 12% worse than Per-Stage).
  - ``perstage``: stage y submitted at the predecessor's end with the dependency (already
    met): the same schedule as ``perstage`` in the other modes (tested).

  ``ready`` (T) is the predecessor's end; ``perceived_wait`` = start - T (the time the stage
  waited once it could run); a proactive submission is a ``hit`` when the stage started at
  its release (start = T) and a ``miss`` when it started later (an under-estimate: it was
  not submitted early enough to reach the head of the queue by T, or the machine was
  full).  ``total_wait`` / ``wait`` stay start - submit (including the blocked time).

Machine and geometry
--------------------
Stage cores are the workflow's (one core per task, ``--cap`` bounds them).  The trace's
machine has ``system.nodes`` nodes of ``cores_per_node`` cores; a stage of n cores asks
``ceil(n / cores_per_node)`` whole nodes and is charged for the cores of those nodes
(``core_hours``; on KTH-SP2 and HPC2N one node is one processor).  To scale the paper's
geometries (28/56/112 cores of HPC2n's 16,856, 160/320/640 of UPPMAX's 9,720: fractions of
the machine) choose ``cap`` as that fraction of the trace machine's cores
(``benchmarks/asa_workflows.py`` does; README "Workflows in a simulated queue").

Metrics (per run; section 4.1 of the paper)
-------------------------------------------
``makespan`` = last stage end - a_r.  ``total_wait`` = sum of queue waits (start - submit)
of every allocation of the run (cancelled ones included).  ``perceived_wait`` = sum over
stages of (useful start - ready), ready = a_r for the first stage and the predecessor's end
after: the time the workflow stood still waiting for resources (the paper's TWT: the single
wait of Big Job, the sum of waits of Per-Stage, the sum of PWT of ASA).  ``core_hours`` =
sum of allocated cores x held time.  ``overhead_core_hours`` = holds and cancelled
allocations.  ``hits``/``misses``: proactive submissions (ASA-sampled or oracle) whose
allocation started at or after its predecessor's end / before it (a miss is an
over-estimate: an overhead in ``dependency``, a resubmission in ``naive``; ``afterok``
defines them differently, above).

The background trace is replayed from ``warmup`` seconds before the first workflow submit
to ``horizon`` seconds after the last; if a workflow event falls after the last replayed
background submission the simulation is redone with a 4x longer horizon (the estimator
restored first), so the cut never changes a result.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, replace

from hpcopt.domain import Job, System
from hpcopt.sim.driver import Event, Simulator

from .reader import Workflow, WorkflowError
from .stages import Stage, stages_of

STRATEGIES = ("bigjob", "perstage", "asa", "asa-naive", "oracle")
MODES = ("dependency", "naive", "afterok")
_AFTEROK = ("perstage", "asa", "oracle")  # the strategies with an afterok mode
_PROACTIVE = ("asa", "asa-naive", "oracle")


@dataclass
class Attempt:
    """One allocation request of a workflow run (a stage job, or the Big Job)."""

    run: int
    stage: int  # -1: the Big Job
    attempt: int
    job_id: object
    cores: int  # the stage's cores (workflow cores)
    nodes: int
    alloc_cores: int  # nodes x cores per node: what is charged
    submit: float
    walltime: float
    proactive: bool = False
    estimate: float | None = None
    index: int | None = None
    start_estimate: float | None = None
    ready: float = math.nan  # when the predecessor ends (T); a_r for the first stage
    start: float = math.nan
    useful_start: float = math.nan
    end: float = math.nan
    alloc_end: float = math.nan
    hold: float = 0.0
    cancelled: bool = False
    outcome: str = ""


@dataclass
class WorkflowResult:
    """Rows of every stage of every run, per-run metrics, their means, the settings."""

    rows: list[dict]
    runs: list[dict]
    summary: dict
    settings: dict
    estimator: object = None
    simulator: object = field(default=None, repr=False)


def _mean(values):
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


class WorkflowRun:
    """One simulation of ``runs`` copies of a workflow in a background trace (see module)."""

    def __init__(self, stages, jobs, system: System, strategy: str, *, policy="fcfs",
                 policy_options: dict | None = None, cores_per_node: int = 1,
                 runs: int = 1, interval: float = 3600.0, at: float | None = None,
                 warmup: float = 2 * 86400.0, horizon: float = 7 * 86400.0,
                 estimator=None, mode: str | None = None, cancel_delay: float = 0.0,
                 oracle_steps: int = 10, seed: int = 0, progress: bool = False,
                 name: str = "workflow") -> None:
        if strategy not in STRATEGIES:
            from hpcopt.errors import closest

            raise WorkflowError(f"strategy: unknown {strategy!r}; expected one of "
                                f"{', '.join(STRATEGIES)}.{closest(strategy, STRATEGIES)}"
                                .rstrip("."))
        if mode is None:
            mode = "naive" if strategy == "asa-naive" else "dependency"
        if mode not in MODES:
            raise WorkflowError(f"mode: expected one of {', '.join(MODES)}, got {mode!r}")
        if mode == "afterok" and strategy not in _AFTEROK:
            raise WorkflowError(f"mode: afterok is for {', '.join(_AFTEROK)}, not {strategy}")
        self.stages: list[Stage] = list(stages)
        if not self.stages:
            raise WorkflowError("stages: the workflow has no stage")
        if int(cores_per_node) != cores_per_node or cores_per_node < 1:
            raise WorkflowError(f"cores_per_node: expected an integer >= 1, got "
                                f"{cores_per_node!r}")
        if int(runs) != runs or runs < 1:
            raise WorkflowError(f"runs: expected an integer >= 1, got {runs!r}")
        if not interval >= 0:
            raise WorkflowError(f"interval: expected seconds >= 0, got {interval!r}")
        if not cancel_delay >= 0:
            raise WorkflowError(f"cancel_delay: expected seconds >= 0, got {cancel_delay!r}")
        self.cpn = int(cores_per_node)
        self.system = system
        for st in self.stages + [Stage(-1, 0, max(s.cores for s in self.stages), 0, 0)]:
            if self._nodes(st.cores) > system.nodes:
                raise WorkflowError(
                    f"cap: a stage of {st.cores} cores needs {self._nodes(st.cores)} nodes of "
                    f"{self.cpn} cores; the machine has {system.nodes}")
        self.strategy, self.mode = strategy, mode
        self.policy_name, self.policy_options = policy, dict(policy_options or {})
        self.runs, self.interval = int(runs), float(interval)
        self.jobs = sorted(jobs, key=lambda j: (j.submit, j.id))
        first = self.jobs[0].submit if self.jobs else 0.0
        self.at = float(first + warmup if at is None else at)
        self.warmup, self.horizon = float(warmup), float(horizon)
        if strategy in ("asa", "asa-naive") and estimator is None:
            from hpcopt.agents.asa import ASAEstimator

            estimator = ASAEstimator(seed=seed)
        self.estimator = estimator if strategy in ("asa", "asa-naive") else None
        self.cancel_delay = float(cancel_delay)
        self.oracle_steps = int(oracle_steps)
        self.seed, self.progress, self.name = seed, progress, name
        ids = [j.id for j in self.jobs]
        self._int_ids = all(isinstance(i, int) for i in ids)
        self._id_base = (max(ids) + 1 if ids else 0) if self._int_ids else 0
        self.sim = None

    # ------------------------------------------------------------------ helpers
    def _nodes(self, cores: int) -> int:
        return max(1, -(-int(cores) // self.cpn))

    def _new_id(self):
        self._counter += 1
        return self._id_base + self._counter if self._int_ids else f"wf-{self._counter}"

    def _policy(self):
        from hpcopt.policies import build_policy

        pol = build_policy(self.policy_name, **self.policy_options)
        pol.reset(self.seed)
        return pol

    def __deepcopy__(self, memo):  # forks of the simulator share the runner (read-only)
        return self

    # ------------------------------------------------------------------ the simulation
    def run(self) -> WorkflowResult:
        saved = copy.deepcopy(self.estimator)  # restored before a longer-horizon redo
        horizon = self.horizon
        first = True
        while True:
            if not first and saved is not None:
                self.estimator.__dict__.clear()
                self.estimator.__dict__.update(copy.deepcopy(saved).__dict__)
            first = False
            cutoff = self.at + (self.runs - 1) * self.interval + horizon
            self._simulate(cutoff)
            latest = max(a.alloc_end if a.cancelled else max(a.alloc_end, a.end)
                         for a in self.attempts)
            if latest <= cutoff or not any(j.submit > cutoff for j in self.jobs):
                break
            horizon *= 4
        self.horizon_used = horizon
        return self._result()

    def _simulate(self, cutoff: float) -> None:
        lo = self.at - self.warmup
        self._bg = [j for j in self.jobs if lo <= j.submit <= cutoff]
        sim = Simulator(self._bg, self.system, self._policy(), progress=self.progress)
        self.sim = sim
        sim.on_start(self._hook)
        self._counter = 0
        self.attempts: list[Attempt] = []
        self._by_id: dict = {}
        self._ready: dict = {}  # (run, stage) -> predecessor end (a_r for stage 0)
        self._pending: list = []
        self._probe = None
        sim.subscribe(Event.START, self._on_start)
        sim.subscribe(Event.COMPLETE, self._on_complete)
        sim.subscribe(Event.PASS, self._on_pass)
        for r in range(self.runs):
            a_r = self.at + r * self.interval
            self._ready[(r, 0)] = a_r
            if self.strategy == "bigjob":
                n = max(s.cores for s in self.stages)
                total = sum(s.runtime for s in self.stages)
                self._submit(r, -1, a_r, n, total, ready=a_r)
            else:
                s0 = self.stages[0]
                prev = self._submit(r, 0, a_r, s0.cores, s0.runtime, ready=a_r)
                if self.strategy == "oracle" and self.mode == "afterok":
                    for st in self.stages[1:]:  # the whole chain at a_r (module docstring)
                        prev = self._submit(r, st.index, a_r, st.cores, st.runtime,
                                            ready=math.nan, proactive=True,
                                            deps=(prev.job_id,))
        sim.run()
        unfinished = [a for a in self.attempts if math.isnan(a.end) and not a.cancelled]
        if unfinished:  # pragma: no cover - every job finishes in run()
            raise WorkflowError(f"run {unfinished[0].run} stage {unfinished[0].stage} did "
                                "not finish")

    def _submit(self, r, y, at, cores, walltime, *, ready, proactive=False, estimate=None,
                index=None, start_estimate=None, deps=()) -> Attempt:
        k = sum(1 for a in self.attempts if a.run == r and a.stage == y)
        nodes = self._nodes(cores)
        att = Attempt(r, y, k, self._new_id(), cores, nodes, nodes * self.cpn, float(at),
                      float(walltime), proactive, estimate, index, start_estimate,
                      ready=ready)
        runtime = self.stages[y].runtime if y >= 0 else walltime
        self.attempts.append(att)
        self._by_id[att.job_id] = att
        self.sim.submit(Job(id=att.job_id, submit=att.submit, runtime=runtime,
                            walltime=att.walltime, nodes=nodes, deps=tuple(deps)))
        return att

    # ------------------------------------------------------------------ driver callbacks
    def _hook(self, sim, job: Job):
        """The runtime of a workflow allocation, decided when it starts (pure: forks call it
        too)."""
        att = self._by_id.get(job.id)
        if att is None or att.stage <= 0 or not att.proactive or self.mode == "afterok":
            return None
        ready = self._ready.get((att.run, att.stage))
        if ready is None or sim.now >= ready:
            return None
        if self.mode == "dependency":
            rt = ready - sim.now + self.stages[att.stage].runtime
        else:
            rt = self.cancel_delay
        return replace(job, runtime=rt, walltime=max(job.walltime, rt))

    def _on_start(self, sim, event, rec) -> None:
        if sim is not self.sim:
            return
        att = self._by_id.get(rec.job.id)
        if att is None:
            return
        now = sim.now
        att.start = now
        att.alloc_end = rec.end
        if att.stage < 0:  # the Big Job
            att.useful_start, att.end = now, rec.end
            return
        y, r = att.stage, att.run
        ready = self._ready[(r, y)]
        t_y = self.stages[y].runtime
        if self.mode == "afterok":
            att.ready = ready  # the oracle's chain is submitted before T is known
            if att.proactive and att.estimate is None:
                att.estimate = ready - att.submit  # the lead it had (oracle chain)
            if now < ready:  # pragma: no cover - the driver's afterok guarantees it
                raise WorkflowError(f"run {r} stage {y} started at {now} before its "
                                    f"predecessor ended ({ready})")
        if att.proactive:
            if self.mode == "afterok":
                att.outcome = "hit" if now <= ready + 1e-6 else "miss"
            else:
                att.outcome = "miss" if now < ready else "hit"
            if self.estimator is not None:
                self.estimator.observe(att.cores, att.index, now - att.submit,
                                       estimate_s=att.start_estimate)
        if now < ready and self.mode == "naive" and y > 0:
            att.cancelled = True
            att.hold = rec.end - now  # the cancel delay
            self._submit(r, y, max(ready, rec.end), att.cores, t_y, ready=ready)
            return
        att.useful_start = max(now, ready)
        att.hold = att.useful_start - now
        att.end = att.useful_start + t_y
        if y + 1 < len(self.stages):
            self._ready[(r, y + 1)] = att.end
            if self.strategy in _PROACTIVE and not (
                    self.strategy == "oracle" and self.mode == "afterok"):
                self._pending.append((r, y + 1))

    def _on_complete(self, sim, event, rec) -> None:
        if sim is not self.sim or self.strategy != "perstage":
            return
        att = self._by_id.get(rec.job.id)
        if att is not None and att.stage + 1 < len(self.stages):
            nxt = self.stages[att.stage + 1]
            deps = (att.job_id,) if self.mode == "afterok" else ()
            self._submit(att.run, att.stage + 1, sim.now, nxt.cores, nxt.runtime,
                         ready=sim.now, deps=deps)

    def _on_pass(self, sim, event, time) -> None:
        if sim is not self.sim or not self._pending:
            return
        pending, self._pending = self._pending, []
        for r, y in pending:
            self._decide(r, y)

    # ------------------------------------------------------------------ decisions
    def _decide(self, r: int, y: int) -> None:
        """Submit stage y of run r ahead of its predecessor's end (asa, asa-naive, oracle)."""
        sim, st = self.sim, self.stages[y]
        now, ready = sim.now, self._ready[(r, y)]
        nodes = self._nodes(st.cores)
        est = idx = shadow = None
        if self.strategy == "oracle":
            at = self._oracle_submit(nodes, st.runtime, ready)
            est = ready - at
        else:
            if self.estimator.prior > 0:
                shadow = self.start_estimate(nodes, st.runtime)
            idx, est = self.estimator.sample(st.cores, estimate_s=shadow)
            at = max(now, ready - est)
        wall = st.runtime + (max(0.0, ready - at) if self.mode == "dependency" else 0.0)
        deps = ()
        if self.mode == "afterok":
            prev = [a for a in self.attempts if a.run == r and a.stage == y - 1
                    and not a.cancelled]
            deps = (prev[-1].job_id,)
        self._submit(r, y, at, st.cores, wall, ready=ready, proactive=True, estimate=est,
                     index=idx, start_estimate=shadow, deps=deps)

    def start_estimate(self, nodes: int, walltime: float) -> float:
        """The driver's own start-time estimate for a job submitted now (``squeue --start``):
        a what-if ``Simulator.at`` state with the running jobs (ending at their requested
        walltimes) and the queue planned with requested walltimes, plus the job; its planned
        start minus now."""
        sim = self.sim
        now = sim.now
        # deps of queued and running jobs are met (afterok stages are queued once released;
        # the ones still blocked are not planned, as squeue --start does not plan them)
        running = [(replace(rj.job, deps=()), rj.est_end) for rj in sim.running]
        queue = [replace(j, runtime=j.walltime, deps=()) for j in sim.queue]
        pid = self._new_probe_id()
        queue.append(Job(id=pid, submit=now, runtime=walltime, walltime=walltime, nodes=nodes))
        what = Simulator.at(now, self.system, self._policy(), queue, running,
                            order=sim.order_name,
                            backfill="easy" if sim.backfilling else "none")
        what.run()
        return max(0.0, what.records[pid].start - now)

    def _new_probe_id(self):
        if self._probe is None:
            self._probe = (self._id_base + 10 ** 9) if self._int_ids else "wf-probe"
        return self._probe

    def _fork_start(self, submit: float, nodes: int, runtime: float, ready: float) -> float:
        """Start time of a probe job submitted at ``submit`` in a what-if fork of the running
        simulation (the same driver, stepped until the probe starts)."""
        sim = self.sim
        if sim.period is not None:
            raise WorkflowError("oracle: what-if forks need a policy without periodic passes")
        memo = {id(r.job): r.job for r in sim.records.values()}  # jobs are immutable
        memo[id(self)] = self
        fork = copy.deepcopy(sim, memo)
        pid = self._new_probe_id()
        wall = runtime + max(0.0, ready - submit)  # the walltime _decide would ask
        fork.submit(Job(id=pid, submit=submit, runtime=wall, walltime=wall, nodes=nodes))
        rec = fork.records[pid]
        while math.isnan(rec.start) and fork.advance():
            if fork.pass_due:
                fork.schedule()
        return rec.start

    def _oracle_submit(self, nodes: int, runtime: float, ready: float) -> float:
        """The latest submit time in [now, ready] whose allocation starts by ``ready``; when
        none does, whichever of now and ``ready`` starts first (ties: ``ready``)."""
        now = self.sim.now
        if ready <= now:
            return now
        at_ready = self._fork_start(ready, nodes, runtime, ready)
        if at_ready <= ready:
            return ready
        at_once = self._fork_start(now, nodes, runtime, ready)
        if at_once > ready:
            return now if at_once < at_ready else ready
        lo, hi = now, ready
        for _ in range(max(0, self.oracle_steps - 2)):
            if hi - lo <= 60.0:
                break
            mid = (lo + hi) / 2
            if self._fork_start(mid, nodes, runtime, ready) <= ready:
                lo = mid
            else:
                hi = mid
        return lo

    # ------------------------------------------------------------------ results
    def _result(self) -> WorkflowResult:
        rows, per_run = [], []
        for r in range(self.runs):
            atts = [a for a in self.attempts if a.run == r]
            a_r = self.at + r * self.interval
            if self.strategy == "bigjob":
                big = atts[0]
                t = big.start
                for st in self.stages:
                    first = st.index == 0
                    rows.append(self._row(big, st.index, st.cores, t, t + st.runtime,
                                          wait=(big.start - big.submit) if first else 0.0,
                                          pwait=(big.start - a_r) if first else 0.0,
                                          overhead=0.0))
                    t += st.runtime
                end = big.end
                pwait = big.start - a_r
            else:
                for a in atts:
                    pw = 0.0 if a.cancelled else a.useful_start - a.ready
                    rows.append(self._row(a, a.stage, a.cores, a.useful_start, a.end,
                                          wait=a.start - a.submit, pwait=pw,
                                          overhead=a.alloc_cores * a.hold / 3600.0))
                done = [a for a in atts if not a.cancelled]
                end = max(a.end for a in done)
                pwait = sum(a.useful_start - a.ready for a in done)
            pro = [a for a in atts if a.proactive]
            per_run.append({
                "run": r,
                "submit": a_r,
                "makespan": end - a_r,
                "total_wait": sum(a.start - a.submit for a in atts),
                "perceived_wait": pwait,
                "core_hours": sum(a.alloc_cores * (a.alloc_end - a.start) for a in atts)
                / 3600.0,
                "overhead_core_hours": sum(a.alloc_cores * a.hold for a in atts) / 3600.0,
                "hits": sum(a.outcome == "hit" for a in pro),
                "misses": sum(a.outcome == "miss" for a in pro),
                "resubmissions": sum(a.cancelled for a in atts),
                "runtime": sum(s.runtime for s in self.stages),
            })
        keys = ("makespan", "total_wait", "perceived_wait", "core_hours",
                "overhead_core_hours", "hits", "misses", "resubmissions")
        summary = {k: _mean([p[k] for p in per_run]) for k in keys}
        n_pro = sum(p["hits"] + p["misses"] for p in per_run)
        summary["hit_ratio"] = (sum(p["hits"] for p in per_run) / n_pro) if n_pro else None
        settings = {
            "workflow": self.name, "strategy": self.strategy, "mode": self.mode,
            "policy": self.policy_name, "order": self.sim.order_name,
            "backfill": "easy" if self.sim.backfilling else "none",
            "nodes": self.system.nodes, "cores_per_node": self.cpn, "runs": self.runs,
            "interval": self.interval, "at": self.at, "warmup": self.warmup,
            "horizon": self.horizon_used, "background_jobs": len(self._bg),
            "cancel_delay": self.cancel_delay, "seed": self.seed,
            "stages": [{"index": s.index, "tasks": s.tasks, "cores": s.cores,
                        "nodes": self._nodes(s.cores), "runtime": s.runtime, "work": s.work}
                       for s in self.stages],
        }
        if self.estimator is not None:
            settings["estimator"] = {k: v for k, v in self.estimator.config().items()
                                     if k != "candidates"}
        return WorkflowResult(rows, per_run, {**summary, "runs": per_run}, settings,
                              self.estimator, self.sim)

    @staticmethod
    def _row(a: Attempt, stage, cores, start, end, *, wait, pwait, overhead) -> dict:
        return {"run": a.run, "stage": stage, "attempt": a.attempt, "job_id": a.job_id,
                "cores": cores, "nodes": a.nodes, "alloc_cores": a.alloc_cores,
                "submit": a.submit, "alloc_start": a.start, "start": start, "end": end,
                "alloc_end": a.alloc_end, "wait": wait, "perceived_wait": pwait,
                "overhead_core_hours": overhead, "estimate": a.estimate,
                "start_estimate": a.start_estimate, "outcome": a.outcome,
                "cancelled": a.cancelled}


def run_workflow(workflow, trace, strategy: str, *, cap: int | None = None, **options
                 ) -> WorkflowResult:
    """Simulate ``workflow`` (a ``Workflow`` or a list of ``Stage``) in ``trace`` (a
    ``Trace`` from ``hpcopt.load_trace`` or a ``(jobs, system)`` pair) under ``strategy``;
    ``options`` are ``WorkflowRun``'s."""
    if isinstance(workflow, Workflow):
        stages, name = stages_of(workflow, cap), workflow.name
    else:
        stages, name = list(workflow), options.pop("name", "workflow")
    if hasattr(trace, "jobs") and hasattr(trace, "system"):
        jobs, system = trace.jobs, trace.system
    else:
        jobs, system = trace
    options.setdefault("name", name)
    return WorkflowRun(stages, jobs, system, strategy, **options).run()
