"""Workflows in a simulated queue: Big Job, Per-Stage, ASA, eager, ASA Naive and an oracle.

A workflow's stages (``hpcopt.workflows.stages``) enter a real background trace replayed by
the one driver loop (``Simulator.run``; any policy, FCFS + EASY by default).  Stage jobs are
injected with ``Simulator.submit`` and followed with ``subscribe`` (START, COMPLETE, PASS);
what-if questions fork the simulator and ask ``Simulator.run_until``; there is no second
simulation loop and no copy of a scheduling rule (docs/architecture.md, "One loop").  The ASA
paper's sections 2.2, 3.2 and 4.1.

A *strategy* says when each stage job is submitted; a *mode* says what an allocation that
would start before its predecessor ends does.  Both are small objects (``Strategy``,
``Mode``), named in ``STRATEGIES`` and ``MODES``.

Strategies (stage i: n_i cores for t_i seconds; run r submitted at a_r)
-----------------------------------------------------------------------
* ``bigjob``: one job of max n_i cores for sum t_i, submitted at a_r.
* ``perstage``: stage 1 at a_r, stage y when stage y-1 ends (its COMPLETE event).
* ``asa``: stage 1 at a_r; stage y is submitted at ``T - a``, where T is the expected end of
  stage y-1 and ``a`` a queue wait sampled from ``ASAEstimator``; the estimator observes the
  stage job's queue wait (start - eligible, see "Modes") when it starts.  Its key, the
  paper's "job geometry", is the ``key`` rule: ``"workflow"`` (the default) the workflow's
  geometry (its widest stage, what Big Job asks), so every stage of a workflow at one scale
  shares one estimate, as the paper shares it "in a per job-geometry basis" and reports it
  per workflow geometry (28 ... 640 cores, its Table 2); ``"stage"`` the stage's own cores, so
  each stage size learns its own waits.  When stage y is planned is the ``plan`` rule:

  - ``plan="submit"`` (the default, the paper's algorithm): as soon as T is estimable, at
    stage y-1's submission: T = its estimated start + t_{y-1}, where the estimated start is
    ``max(T_{y-2}, submit + its own sampled wait)`` (stage 1's wait is sampled too, and
    observed when it starts); T is refined when stage y-1 starts (then it is exact).  The
    lead can exceed t_{y-1}: a long estimate submits several stages at once.  Before stage
    y-1 starts, a plan falls due at the first scheduling pass at or after its time (the
    driver has no timer; stage y-1 waiting in the queue makes a pass at every event); after
    it, the job is injected at its exact time.  In the ``dependency`` and ``naive`` modes an
    early allocation must know when its predecessor ends, so there a plan falls due no
    earlier than stage y-1's start.
  - ``plan="start"``: stage y is planned when stage y-1 starts (T exact), so its lead is at
    most t_{y-1}.

  Submitted at ``max(now, T - a)``.  With ``prior > 0`` the sample may be the start-time
  estimate of the driver itself (``squeue --start``): a what-if pass ``Simulator.at(now,
  ...)`` on the current queue and running jobs, planned with requested walltimes, plus the
  new job; ``run()`` of that state gives the job's planned start.
* ``eager``: ``asa`` with an infinite estimate (no learning): each stage is submitted the
  moment its plan is made -- with ``plan="submit"`` the whole chain at a_r, with
  ``plan="start"`` stage y when stage y-1 starts.  It bounds what any estimate can gain.
* ``asa-naive``: ``asa`` in the naive mode below.
* ``oracle``: in the ``dependency`` and ``naive`` modes, ``asa`` with the true wait instead of
  an estimate, decided when stage y-1 starts: the latest submit time ``s`` in [now, T] whose
  allocation starts no later than T (when none does: now or T, whichever starts first -- an
  early submission asks for a longer walltime, which can backfill worse).  It is computed by
  what-if *forks* of the running simulation (``copy.deepcopy`` of the simulator at the end
  of the pass, run with ``Simulator.run_until`` until the probe job starts): first ``s = T``
  and ``s = now``, then bisection (at most ``oracle_steps`` forks, 60 s resolution).  The
  fork knows the whole future background trace but not the decisions later stages or other
  runs take after the fork, so it is exact for a single run and an upper bound in spirit
  otherwise.  In the ``afterok`` mode it is the earliest submission, with no estimate: every
  stage of run r is submitted at ``a_r`` as one afterok chain, as a Slurm user who submits
  the whole workflow at once.  With no cost for early submission and the FCFS key being the
  submit time, this is the best queue position a stage can have; not an optimum (the aged
  stages change the order among runs and the background, and EASY is not monotone in
  priority).

Modes (what happens when an allocation starts before its predecessor ends)
--------------------------------------------------------------------------
* ``afterok`` (Slurm's ``--dependency=afterok:<id>``; the default for ``perstage``, ``asa``,
  ``eager`` and ``oracle``, the paper's accounting: "a job cannot have its resources
  allocated (and thus charged) until all dependent jobs completed"): the stage job is
  submitted at the strategy's time with ``Job.deps = (id of the previous stage's job,)``.
  The driver keeps it out of the queue until the predecessor has finished and then queues
  it by its own (early) submit time, so under FCFS it has aged in the queue and may overtake
  jobs submitted after it.  It never starts before its predecessor ends, holds no cores
  early (``overhead_core_hours`` is 0, ``core_hours`` is the useful work) and is never
  cancelled; it asks for ``t_y`` of walltime.  The estimator observes ``start - eligible``,
  eligible = ``max(submit, predecessor's end)`` (Slurm's ``eligible_time``): the wait the
  queue gave once the job could run.  ``start - submit`` would include the time blocked on
  the dependency, which is the lead ASA itself chose (at least ``a``), so each sample would
  confirm the estimate that made it; the paper's waits (its Table 2) are those of jobs
  without dependencies, where the two agree.  In the other modes eligible = submit.  A
  proactive stage is a ``hit`` when it started at its release (start = T) and a ``miss``
  when it started later.
* ``dependency`` (an early allocation is held and charged): the stage job holds its cores
  from its start; its useful work begins when the predecessor ends.  Its runtime in the
  simulator is ``hold + t_y`` (hold = predecessor end - start), set when it starts; the hold
  is **overhead**: ``cores x hold`` core-hours, part of ``core_hours`` too.  The requested
  walltime covers the longest possible hold: ``t_y + max(0, T - submit)``.  A proactive
  allocation that starts early is a ``miss`` (an over-estimate), else a ``hit``.
* ``naive`` (the default for ``asa-naive``, the paper's "ASA Naive"): no dependency; an
  allocation that starts before the predecessor ends is cancelled (it holds its cores for
  ``cancel_delay`` seconds, default 0, counted as overhead) and the stage is resubmitted when
  the predecessor ends (``max(T, cancel time)``, a plain submission).

``bigjob`` has no stage to hold (its mode is reported as ``dependency`` and changes
nothing); ``perstage`` submits at the predecessor's end, so every mode gives it the same
schedule (tested).

Machine and geometry
--------------------
Stage cores are the workflow's (one core per task, ``--cap`` bounds them).  The trace's
machine has ``system.nodes`` nodes of ``cores_per_node`` cores; a stage of n cores asks
``ceil(n / cores_per_node)`` whole nodes and is charged for the cores of those nodes
(``core_hours``).

A real queue's delays (both 0 by default: the model starts a job the instant it can)
------------------------------------------------------------------------------------
``launch_delay``: seconds from the driver's start decision to the job's start, for every
job (the driver's own ``launch_delay``; a real Slurm's scheduling cadence and job launch).
``reaction``: seconds from a stage's end to its successor's submission where the strategy
submits on seeing the end (``perstage``, a naive resubmission): the user's or the runner's
reaction.  ``benchmarks/asa_slurm.py`` measures both on real runs.  ``requested_walltime``
(a function of the walltime a stage job needs) is the walltime the queue is told, where it
asks more (a real Slurm's whole-minute limits: ``onslurm.limit_minutes``); the backfill
plans with it.

Metrics (per run; section 4.1 of the paper)
-------------------------------------------
``makespan`` = last stage end - a_r.  ``total_wait`` = sum of queue waits (start - submit)
of every allocation of the run (cancelled ones included).  ``perceived_wait`` = sum over
stages of (useful start - ready), ready = a_r for the first stage and the predecessor's end
after: the time the workflow stood still waiting for resources (the paper's TWT: the single
wait of Big Job, the sum of waits of Per-Stage, the sum of PWT of ASA).  ``core_hours`` =
sum of allocated cores x held time.  ``overhead_core_hours`` = holds and cancelled
allocations.  ``hits``/``misses``: proactive submissions, per mode as above.

The background trace is replayed from ``warmup`` seconds before the first workflow submit
to ``horizon`` seconds after the last; if a workflow event falls after the last replayed
background submission the simulation is redone with a 4x longer horizon (the estimator
restored first), so the cut never changes a result.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, replace

from hpcopt.agents.asa import ASAEstimator
from hpcopt.domain import Job, System
from hpcopt.errors import closest
from hpcopt.sim.driver import Event, Simulator
from hpcopt.sim.settings import DriverOptions

from .reader import Workflow, WorkflowError
from .stages import Stage, stages_of

PLANS = ("submit", "start")
KEYS = ("stage", "workflow")


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
    eligible: float = math.nan  # when it could first start (``WorkflowRun.eligible_time``)
    start: float = math.nan
    useful_start: float = math.nan
    end: float = math.nan
    alloc_end: float = math.nan
    hold: float = 0.0
    cancelled: bool = False
    outcome: str = ""
    sampled: bool = False  # its wait was sampled from the estimator (observed at its start)


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


# ---------------------------------------------------------------------- modes
class Mode:
    """What an allocation that would start before its predecessor ends does (module
    docstring, "Modes")."""

    name = ""
    early = True  # an allocation may start before its predecessor ends

    def deps(self, prev: Attempt) -> tuple:
        """The driver dependencies of a stage job whose predecessor is ``prev``."""
        return ()

    def walltime(self, runtime: float, lead: float) -> float:
        """The walltime a stage of ``runtime`` asks when submitted ``lead`` s before T."""
        return runtime

    def early_runtime(self, run: WorkflowRun, now: float, ready: float,
                      runtime: float) -> float:
        """The simulated runtime of an allocation starting at ``now`` < ``ready``."""
        raise NotImplementedError

    def outcome(self, start: float, ready: float, slack: float = 0.0) -> str:
        """A proactive submission's ``hit`` or ``miss`` (``slack``: how late a start still
        counts as at its release; 0 in the simulator, a real queue's start latency)."""
        return "miss" if start < ready else "hit"

    def early_start(self, run: WorkflowRun, att: Attempt, rec, ready: float) -> bool:
        """Handle an allocation that started before ``ready``; True: it is done with."""
        return False


class Dependency(Mode):
    """The early allocation is held (and charged) until its predecessor ends."""

    name = "dependency"

    def walltime(self, runtime, lead):
        return runtime + max(0.0, lead)

    def early_runtime(self, run, now, ready, runtime):
        return ready - now + runtime


class Naive(Mode):
    """No dependency: an early allocation is cancelled and the stage resubmitted at T."""

    name = "naive"

    def early_runtime(self, run, now, ready, runtime):
        return run.cancel_delay

    def early_start(self, run, att, rec, ready):
        att.cancelled = True
        att.hold = rec.end - run.sim.now  # the cancel delay
        run.submit_stage(att.run, att.stage, max(ready, rec.end) + run.reaction, ready=ready)
        return True


class Afterok(Mode):
    """Slurm's ``afterok``: queued only once the predecessor has finished, never early."""

    name = "afterok"
    early = False

    def deps(self, prev):
        return (prev.job_id,)

    def outcome(self, start, ready, slack=0.0):
        return "hit" if start <= ready + slack + 1e-6 else "miss"


MODES = {m.name: m for m in (Dependency(), Naive(), Afterok())}


# ---------------------------------------------------------------------- strategies
class Strategy:
    """When each stage job of a run is submitted (module docstring, "Strategies").  The
    runner calls ``begin`` at set-up and the other hooks from the driver's events."""

    name = ""
    modes: tuple = ("afterok", "dependency", "naive")
    default_mode = "afterok"
    learns = False  # it samples ASA's estimator

    def reset(self) -> None:
        """Forget the state of an earlier simulation (a longer-horizon redo)."""

    def begin(self, run: WorkflowRun, r: int, a_r: float) -> None:
        """Submit what run ``r`` submits at its start ``a_r``."""
        run.submit_stage(r, 0, a_r, ready=a_r)

    def started(self, run: WorkflowRun, att: Attempt) -> None:
        """Stage ``att`` began its useful work (its end is known)."""

    def completed(self, run: WorkflowRun, att: Attempt) -> None:
        """Stage ``att``'s job finished."""

    def on_pass(self, run: WorkflowRun) -> None:
        """A scheduling pass ended (decisions that need the driver's state are made here)."""


class BigJob(Strategy):
    """One allocation of the widest stage's cores for the whole workflow."""

    name = "bigjob"
    modes = ("dependency", "naive")
    default_mode = "dependency"

    def begin(self, run, r, a_r):
        total = sum(s.runtime for s in run.stages)
        run.submit_job(r, -1, a_r, run.geometry, total, total, ready=a_r)


class PerStage(Strategy):
    """Each stage submitted when its predecessor ends."""

    name = "perstage"

    def completed(self, run, att):
        if att.stage + 1 < len(run.stages):
            run.submit_stage(att.run, att.stage + 1, run.sim.now + run.reaction,
                             ready=run.sim.now, deps=run.mode.deps(att))


class ASA(Strategy):
    """Stage y submitted an estimated queue wait before stage y-1's expected end; when it is
    planned is the runner's ``plan`` rule."""

    name = "asa"
    learns = True

    def __init__(self) -> None:
        self._waiting: dict = {}  # run -> (stage, index, estimate, start estimate) or None

    def reset(self):
        self._waiting = {}

    def begin(self, run, r, a_r):
        super().begin(run, r, a_r)
        if run.plan == "submit":
            self._waiting[r] = None  # planned from the first pass at or after a_r

    def sample(self, run: WorkflowRun, stage: Stage, shadow=None) -> tuple:
        """(index, wait estimate) for a submission of ``stage``."""
        return run.estimator.sample(run.key_of(stage.cores), estimate_s=shadow)

    def started(self, run, att):
        if att.stage + 1 < len(run.stages):
            run.pending.append(att.run)

    def on_pass(self, run):
        pending, run.pending = run.pending, []
        for r in pending + [r for r in self._waiting if r not in pending]:
            self._plan(run, r)

    def _plan(self, run: WorkflowRun, r: int) -> None:
        """Submit every stage of run ``r`` whose plan falls due now (module docstring)."""
        now, n = run.sim.now, len(run.stages)
        while True:
            k = run.submitted.get(r, 0)
            prev = run.live.get((r, k - 1))
            if k >= n or prev is None:
                self._waiting.pop(r, None)
                return
            if prev.submit > now:  # injected for later: plan the next one once it is in
                self._waiting[r] = self._waiting.get(r)
                return
            started = not math.isnan(prev.useful_start)
            if not started and (run.plan == "start" or run.mode.early):
                self._waiting.pop(r, None)
                return  # planned when stage k-1 starts (its START puts r in pending)
            if k == 1 and not started and not prev.sampled and run.estimator is not None:
                prev.index, prev.estimate = self.sample(run, run.stages[0])  # its start
                prev.sampled = True
            plan = self._waiting.get(r)
            if plan is None or plan[0] != k:
                st = run.stages[k]
                shadow = None
                if run.estimator is not None and run.estimator.prior > 0:
                    shadow = run.start_estimate(run.nodes(st.cores), st.runtime)
                plan = (k, *self.sample(run, st, shadow), shadow)
            _, idx, est, shadow = plan
            end = run.expected_end(r, k - 1)
            at = now if est == math.inf else end - est
            if at > now and not started:
                self._waiting[r] = plan  # not yet due: T may still move
                return
            self._waiting.pop(r, None)
            at = max(now, at)
            ready = end if started else math.nan
            run.submit_stage(r, k, at, ready=ready, lead=end - at, proactive=True,
                             estimate=est, index=idx, start_estimate=shadow,
                             sampled=run.estimator is not None, deps=run.mode.deps(prev))
            if at > now:
                return  # stage k+1 is planned once stage k is submitted


class Eager(ASA):
    """ASA's rule with an infinite estimate: every stage submitted when it is planned."""

    name = "eager"
    learns = False

    def sample(self, run, stage, shadow=None):
        return None, math.inf


class ASANaive(ASA):
    """ASA without dependencies (the paper's "ASA Naive")."""

    name = "asa-naive"
    modes = ("naive", "dependency")
    default_mode = "naive"


class Oracle(Strategy):
    """The true waits by what-if forks (dependency, naive), or the whole chain at a_r
    (afterok)."""

    name = "oracle"

    def begin(self, run, r, a_r):
        prev = run.submit_stage(r, 0, a_r, ready=a_r)
        if run.mode.name == "afterok":  # the whole chain at a_r (module docstring)
            for st in run.stages[1:]:
                prev = run.submit_stage(r, st.index, a_r, ready=math.nan, proactive=True,
                                        deps=(prev.job_id,))

    def started(self, run, att):
        if run.mode.name != "afterok" and att.stage + 1 < len(run.stages):
            run.pending.append(att.run)

    def on_pass(self, run):
        pending, run.pending = run.pending, []
        for r in pending:
            y = run.submitted[r]
            st, ready = run.stages[y], run.ready[(r, y)]
            at = run.oracle_submit(run.nodes(st.cores), st.runtime, ready)
            run.submit_stage(r, y, at, ready=ready, lead=ready - at, proactive=True,
                             estimate=ready - at, deps=run.mode.deps(run.live[(r, y - 1)]))


STRATEGIES = {s.name: s for s in (BigJob, PerStage, ASA, Eager, ASANaive, Oracle)}


class WorkflowRun:
    """One simulation of ``runs`` copies of a workflow in a background trace (see module).

    ``strategy`` is a name in ``STRATEGIES`` or a ``Strategy``; ``mode`` a name in ``MODES``
    (default: the strategy's); ``plan`` the ASA decision point (``PLANS``); ``key`` what
    the ASA estimator is keyed by (``KEYS``)."""

    slack = 0.0  # how late a start still counts as at its release (Mode.outcome)

    def __init__(self, stages, jobs, system: System, strategy, *, policy="fcfs",
                 policy_options: dict | None = None, cores_per_node: int = 1,
                 runs: int = 1, interval: float = 3600.0, at: float | None = None,
                 warmup: float = 2 * 86400.0, horizon: float = 7 * 86400.0,
                 estimator=None, mode: str | None = None, plan: str = "submit",
                 key: str = "workflow", cancel_delay: float = 0.0, oracle_steps: int = 10,
                 launch_delay: float = 0.0, reaction: float = 0.0, requested_walltime=None,
                 seed: int = 0, progress: bool = False, name: str = "workflow") -> None:
        if isinstance(strategy, str):
            if strategy not in STRATEGIES:
                raise WorkflowError(f"strategy: unknown {strategy!r}; expected one of "
                                    f"{', '.join(STRATEGIES)}."
                                    f"{closest(strategy, STRATEGIES)}".rstrip("."))
            strategy = STRATEGIES[strategy]()
        if mode is None:
            mode = strategy.default_mode
        if mode not in MODES:
            raise WorkflowError(f"mode: expected one of {', '.join(MODES)}, got {mode!r}")
        if mode not in strategy.modes:
            allowed = ", ".join(s.name for s in STRATEGIES.values() if mode in s.modes)
            raise WorkflowError(f"mode: {mode} is for {allowed}, not {strategy.name}")
        if plan not in PLANS:
            raise WorkflowError(f"plan: expected one of {', '.join(PLANS)}, got {plan!r}")
        if key not in KEYS:
            raise WorkflowError(f"key: expected one of {', '.join(KEYS)}, got {key!r}")
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
        for what, v in (("cancel_delay", cancel_delay), ("launch_delay", launch_delay),
                        ("reaction", reaction)):
            if not (math.isfinite(v) and v >= 0):
                raise WorkflowError(f"{what}: expected seconds >= 0, got {v!r}")
        self.cpn = int(cores_per_node)
        self.system = system
        self.geometry = max(s.cores for s in self.stages)  # the widest stage: Big Job's size
        for st in self.stages:  # the widest one is Big Job's allocation too
            if self.nodes(st.cores) > system.nodes:
                raise WorkflowError(
                    f"cap: a stage of {st.cores} cores needs {self.nodes(st.cores)} nodes of "
                    f"{self.cpn} cores; the machine has {system.nodes}")
        self.strategy, self.mode, self.plan, self.key = strategy, MODES[mode], plan, key
        self.policy_name, self.policy_options = policy, dict(policy_options or {})
        self.runs, self.interval = int(runs), float(interval)
        self.jobs = sorted(jobs, key=lambda j: (j.submit, j.id))
        first = self.jobs[0].submit if self.jobs else 0.0
        self.at = float(first + warmup if at is None else at)
        self.warmup, self.horizon = float(warmup), float(horizon)
        if strategy.learns and estimator is None:
            estimator = ASAEstimator(seed=seed)
        self.estimator = estimator if strategy.learns else None
        self.cancel_delay = float(cancel_delay)
        self.launch_delay, self.reaction = float(launch_delay), float(reaction)
        self.slack = self.launch_delay  # a start that late is still at its release
        self.requested_walltime = requested_walltime
        self.oracle_steps = int(oracle_steps)
        self.seed, self.progress, self.name = seed, progress, name
        ids = [j.id for j in self.jobs]
        self._int_ids = all(isinstance(i, int) for i in ids)
        self._id_base = (max(ids) + 1 if ids else 0) if self._int_ids else 0
        self.sim = None

    # ------------------------------------------------------------------ helpers
    def nodes(self, cores: int) -> int:
        """Whole nodes a stage of ``cores`` cores asks for."""
        return max(1, -(-int(cores) // self.cpn))

    def key_of(self, cores: int) -> int:
        """The estimator's key for a stage of ``cores`` cores (the ``key`` rule)."""
        return self.geometry if self.key == "workflow" else cores

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

    def expected_end(self, r: int, y: int) -> float:
        """The end of stage y of run r: exact once it started, else its expected start
        (``max(T_{y-1}, submit + its sampled wait)``) plus t_y."""
        att = self.live[(r, y)]
        if not math.isnan(att.useful_start):
            return att.end
        before = self.at + r * self.interval if y == 0 else self.expected_end(r, y - 1)
        wait = att.estimate if att.sampled or att.proactive else None
        return max(before, att.submit + (wait or 0.0)) + self.stages[y].runtime

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
        sim = Simulator(self._bg, self.system, self._policy(),
                        DriverOptions(progress=self.progress, launch_delay=self.launch_delay))
        self.sim = sim
        sim.on_start(self._hook)
        self._counter = 0
        self.attempts: list[Attempt] = []
        self._by_id: dict = {}
        self.live: dict = {}  # (run, stage) -> its latest attempt
        self.submitted: dict = {}  # run -> stages submitted so far
        self.ready: dict = {}  # (run, stage) -> predecessor end (a_r for stage 0)
        self.pending: list = []  # runs with a decision due at the next pass
        self._probe = None
        self.strategy.reset()
        sim.subscribe(Event.START, self._on_start)
        sim.subscribe(Event.COMPLETE, self._on_complete)
        sim.subscribe(Event.PASS, self._on_pass)
        for r in range(self.runs):
            a_r = self.at + r * self.interval
            self.ready[(r, 0)] = a_r
            self.strategy.begin(self, r, a_r)
        sim.run()
        unfinished = [a for a in self.attempts if math.isnan(a.end) and not a.cancelled]
        if unfinished:  # pragma: no cover - every job finishes in run()
            raise WorkflowError(f"run {unfinished[0].run} stage {unfinished[0].stage} did "
                                "not finish")

    def submit_stage(self, r: int, y: int, at: float, *, ready: float, lead: float = 0.0,
                     **kw) -> Attempt:
        """Submit stage y of run r at ``at`` (walltime by the mode, for a lead before T)."""
        st = self.stages[y]
        return self.submit_job(r, y, at, st.cores, self.mode.walltime(st.runtime, lead),
                               st.runtime, ready=ready, **kw)

    def submit_job(self, r, y, at, cores, walltime, runtime, *, ready, proactive=False,
                   estimate=None, index=None, start_estimate=None, sampled=False,
                   deps=()) -> Attempt:
        """Inject one allocation request of run r (stage y; -1: the Big Job)."""
        k = sum(1 for a in self.attempts if a.run == r and a.stage == y)
        nodes = self.nodes(cores)
        att = Attempt(r, y, k, self._new_id(), cores, nodes, nodes * self.cpn, float(at),
                      float(walltime), proactive, estimate, index, start_estimate,
                      ready=ready, sampled=sampled)
        self.attempts.append(att)
        self._by_id[att.job_id] = att
        if k == 0:
            self.submitted[r] = self.submitted.get(r, 0) + 1
        self.live[(r, y)] = att
        self.enqueue(att, runtime, tuple(deps))
        return att

    def enqueue(self, att: Attempt, runtime: float, deps: tuple) -> None:
        """Hand the allocation request ``att`` to the queue (here: the driver, at
        ``att.submit``)."""
        wall = att.walltime
        if self.requested_walltime is not None:
            wall = max(wall, float(self.requested_walltime(wall)))
        self.sim.submit(Job(id=att.job_id, submit=att.submit, runtime=runtime,
                            walltime=wall, nodes=att.nodes, deps=deps))

    # ------------------------------------------------------------------ driver callbacks
    def _hook(self, sim, job: Job):
        """The runtime of a workflow allocation, decided when it starts (pure: forks call it
        too)."""
        att = self._by_id.get(job.id)
        if att is None or att.stage <= 0 or not att.proactive or not self.mode.early:
            return None
        ready = self.ready.get((att.run, att.stage))
        if ready is None or sim.now >= ready:
            return None
        rt = self.mode.early_runtime(self, sim.now, ready, self.stages[att.stage].runtime)
        return replace(job, runtime=rt, walltime=max(job.walltime, rt))

    def _on_start(self, sim, event, rec) -> None:
        if sim is not self.sim:
            return
        att = self._by_id.get(rec.job.id)
        if att is not None:  # it runs from rec.start: the decision plus the launch delay
            self.stage_started(att, rec.start, rec)

    def stage_started(self, att: Attempt, now: float, rec) -> None:
        """Allocation ``att`` started at ``now`` (``rec.end``: its allocation's end): the
        one start rule of every runner (the simulator's START event, a real queue's record)."""
        att.start = now
        att.alloc_end = rec.end
        if att.stage < 0:  # the Big Job
            att.eligible = att.submit
            att.useful_start, att.end = now, rec.end
            return
        y, r = att.stage, att.run
        ready = self.ready[(r, y)]
        if math.isnan(att.ready):  # submitted before T was known
            att.ready = ready
            if att.proactive and att.estimate is None:
                att.estimate = ready - att.submit  # the lead it had (oracle chain)
        if now < ready and not self.mode.early:  # pragma: no cover - the driver's afterok
            raise WorkflowError(f"run {r} stage {y} started at {now} before its "
                                f"predecessor ended ({ready})")
        if att.proactive:
            att.outcome = self.mode.outcome(now, ready, self.slack)
        att.eligible = self.eligible_time(att, ready)
        if att.sampled:
            self.observe(att, now - att.eligible)
        if now < ready and y > 0 and self.mode.early_start(self, att, rec, ready):
            return
        att.useful_start = max(now, ready)
        att.hold = att.useful_start - now
        att.end = att.useful_start + self.stages[y].runtime
        if y + 1 < len(self.stages):
            self.ready[(r, y + 1)] = att.end
        self.strategy.started(self, att)

    def eligible_time(self, att: Attempt, ready: float) -> float:
        """When ``att`` could first start: its submission, or its predecessor's end
        (``ready``) when a dependency held it (module docstring, ``afterok``)."""
        if self.mode.early or att.stage <= 0:
            return att.submit
        return max(att.submit, ready)

    def observe(self, att: Attempt, wait: float) -> None:
        """The estimator learns the queue wait of ``att`` (a sampled submission)."""
        self.estimator.observe(self.key_of(att.cores), att.index, wait,
                               estimate_s=att.start_estimate)

    def _on_complete(self, sim, event, rec) -> None:
        if sim is not self.sim:
            return
        att = self._by_id.get(rec.job.id)
        if att is not None:
            self.stage_completed(att)

    def stage_completed(self, att: Attempt) -> None:
        """Allocation ``att`` finished (the strategy hears of a stage's end)."""
        if att.stage >= 0 and not att.cancelled:
            self.strategy.completed(self, att)

    def _on_pass(self, sim, event, time) -> None:
        if sim is self.sim:
            self.strategy.on_pass(self)

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
        simulation (the same driver, ``run_until`` the probe starts)."""
        sim = self.sim
        if sim.period is not None:
            raise WorkflowError("oracle: what-if forks need a policy without periodic passes")
        memo = {id(r.job): r.job for r in sim.records.values()}  # jobs are immutable
        memo[id(self)] = self
        fork = copy.deepcopy(sim, memo)
        pid = self._new_probe_id()
        wall = runtime + max(0.0, ready - submit)  # as a dependency-mode submission asks
        fork.submit(Job(id=pid, submit=submit, runtime=wall, walltime=wall, nodes=nodes))
        rec = fork.records[pid]
        fork.run_until(lambda _: not math.isnan(rec.start))
        return rec.start

    def oracle_submit(self, nodes: int, runtime: float, ready: float) -> float:
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
            if atts[0].stage < 0:  # the Big Job
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
        settings = self._settings()
        if self.estimator is not None:
            settings["estimator"] = {k: v for k, v in self.estimator.config().items()
                                     if k != "candidates"}
        return WorkflowResult(rows, per_run, {**summary, "runs": per_run}, settings,
                              self.estimator, self.sim)

    def _settings(self) -> dict:
        """The run's settings in ``summary.json``."""
        return {
            "workflow": self.name, "strategy": self.strategy.name, "mode": self.mode.name,
            "plan": self.plan, "key": self.key,
            "policy": self.policy_name, "order": self.sim.order_name,
            "backfill": "easy" if self.sim.backfilling else "none",
            "nodes": self.system.nodes, "cores_per_node": self.cpn, "runs": self.runs,
            "interval": self.interval, "at": self.at, "warmup": self.warmup,
            "horizon": self.horizon_used, "background_jobs": len(self._bg),
            "cancel_delay": self.cancel_delay, "launch_delay": self.launch_delay,
            "reaction": self.reaction, "seed": self.seed,
            "stages": [{"index": s.index, "tasks": s.tasks, "cores": s.cores,
                        "nodes": self.nodes(s.cores), "runtime": s.runtime, "work": s.work}
                       for s in self.stages],
        }

    @staticmethod
    def _row(a: Attempt, stage, cores, start, end, *, wait, pwait, overhead) -> dict:
        return {"run": a.run, "stage": stage, "attempt": a.attempt, "job_id": a.job_id,
                "cores": cores, "nodes": a.nodes, "alloc_cores": a.alloc_cores,
                "submit": a.submit, "eligible": a.eligible, "alloc_start": a.start,
                "start": start, "end": end, "alloc_end": a.alloc_end, "wait": wait,
                "perceived_wait": pwait,
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
