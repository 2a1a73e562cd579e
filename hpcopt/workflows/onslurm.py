"""Workflows on a real Slurm: the simulator's strategies, each stage a real Slurm job.

``SlurmWorkflowRun`` is a ``WorkflowRun`` whose queue is the Slurm cluster that
``SLURM_CONF`` names instead of the simulator: the same ``Strategy`` objects (Big Job,
Per-Stage, ASA, eager, ASA Naive), the same modes, the same ASA estimator, key and plan rules
and the same start rule (``WorkflowRun.stage_started``) and metrics (``_result``).  Only three
things differ, and they are here:

* **the clock**: workflow seconds since the run began, ``(time.time() - t0) / time_scale``.
  Every time in ``stages.csv`` and ``summary.json`` is in workflow seconds (a real second
  is ``1 / time_scale`` of them), so a run at ``time_scale=0.01`` reads like the simulated
  run of the same workflow, and the estimator learns waits on the same scale as in the
  simulator (its candidates are 10 s .. 28 h).  The ``slurm_*`` columns are Slurm's own
  epoch seconds.
* **the queue** (``enqueue``): a stage job is ``sbatch -N nodes --exclusive -t minutes``
  running ``sleep runtime x time_scale`` (whole-minute limits, at least the sleep plus 10 s:
  ``limit_minutes``),
  named ``hpcopt-wf`` and commented ``hpcopt-wf:TAG:run:stage:attempt:index:estimate``; a
  submission due later waits in the runner until its time (``sbatch`` at that moment, so
  Slurm's own submit time is the submission time the strategy chose).  ``afterok`` stages
  get ``--dependency=afterok:ID``.
* **the events**: the runner polls ``squeue --json --states=all`` every ``poll`` seconds;
  each newly started or finished job becomes a start or completion at Slurm's own
  ``start_time`` / ``end_time`` (completions first at equal times), handed to the same
  callbacks the simulator's events reach.  A stage's real end replaces its expected end
  (start + t_y) as its successor's ready time.

What the estimator observes is what the simulator observes: ``start - eligible`` of each
sampled submission, with Slurm's own ``eligible_time`` (its submission, or for an ``afterok``
stage the scheduling pass that found its dependency met; kept in ``slurm_eligible``): the time
blocked on the dependency is the lead ASA chose, not a queue wait.  A proactive
``afterok`` stage is a hit when it started within ``slack_s`` (4 real seconds: Slurm's
whole seconds and its start latency, 0-1 s measured on the testbed, with room for a busier
controller) of its predecessor's end.

``naive`` mode: a proactive stage that starts while its predecessor still runs is cancelled
(``scancel``) and resubmitted once the predecessor's end has been seen.  ``dependency`` mode
(an early allocation held and charged) and the ``oracle`` (what-if forks) need the simulator.

Safety: every submission is written to ``DIR/slurm-run.json`` before ``sbatch`` and its job
id after; a run started again with the same ``DIR`` resumes: it adopts the jobs it finds by
their comment (the same run, stage and attempt) instead of submitting them again, and the
estimator does not learn twice from a job (the journal lists the jobs it learned from).  A
stage that ends other than COMPLETED (failed, timed out, cancelled by someone else) or that
Slurm will never start (its dependency never satisfied) stops the workflow: its pending and
running jobs are cancelled and ``StageFailed`` names the stage, the job and the state.  On
Ctrl-C (``KeyboardInterrupt``) the workflow's pending and running jobs are cancelled
(``on_interrupt="cancel"``, the default) or left to Slurm (``"leave"``; run again with the
same DIR to follow them to the end).

``run_commands=True`` (``--run-commands``, a site's explicit choice): each stage job runs
its tasks' own commands (``Stage.commands``, from the WfFormat file) instead of ``sleep``:
a bash script (``DIR/scripts``) starts them, as the submitting user in the job's working
directory, at most the stage's cores at a time, with no shell between (each command is the
program and its arguments, quoted; a redirection in the file is an argument like any other),
and exits 1 when one failed (the stage then fails and stops the workflow).  Every stage must
give a command for every task, and the time scale must be 1 (commands take their own time;
the time limit is the stage's runtime plus a margin).

Several workflows share one estimator through ``SharedEstimator`` (``--state F``): each
sample and observation is made on the state read from F under a lock and written back at
once, so concurrent runs, in one process or several, learn from each other's waits.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import secrets
import shlex
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from hpcopt.agents.asa import ASAEstimator
from hpcopt.domain import System
from hpcopt.slurm.state import Slurm, SlurmCommandError, epoch, job_state, number
from hpcopt.traces.slurm import slurm_time

from .reader import Workflow, WorkflowError
from .runner import Attempt, WorkflowRun
from .stages import stages_of

NAME = "hpcopt-wf"
JOURNAL = "slurm-run.json"
#: Slurm's states of a job that has ended
ENDED = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL",
                   "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL", "DEADLINE"})
#: modes a real queue runs (``dependency`` holds an allocation early: simulator only)
SLURM_MODES = ("afterok", "naive")


class StageFailed(WorkflowError):
    """A stage job ended other than COMPLETED, or Slurm will never start it."""

@dataclass(frozen=True, slots=True)
class Record:
    """One job as ``squeue --json`` shows it (epoch seconds; 0: unset)."""

    id: int
    name: str
    comment: str
    state: str
    reason: str
    submit: float
    eligible: float
    start: float
    end: float


def read_jobs(slurm) -> dict[int, Record]:
    """Every job Slurm still knows, finished ones included (``squeue --states=all``; 24.11
    leaves them out otherwise), by id."""

    doc = slurm.json_doc("squeue", "--json", "--states=all")
    out = {}
    for j in doc.get("jobs") or []:
        jid = number(j.get("job_id"), "squeue --json job", "job_id")
        where = f"squeue --json job {jid}"
        out[int(jid)] = Record(
            int(jid), str(j.get("name") or ""), str(j.get("comment") or ""),
            job_state(j.get("job_state", ""), where), str(j.get("state_reason") or ""),
            *(epoch(j.get(f"{k}_time"), where, f"{k}_time")
              for k in ("submit", "eligible", "start", "end")))
    return out


def read_accounting(slurm, ids, comments: dict[int, str]) -> dict[int, Record]:
    """Jobs ``ids`` from Slurm's accounting (``sacct -X``; times as epoch seconds through
    ``SLURM_TIME_FORMAT=%s``), for jobs that ``squeue`` no longer shows (``MinJobAge``
    after they ended); ``comments``: each job's comment as this run wrote it (``sacct``
    keeps a comment only where the site stores it).  {} where accounting is off."""

    if not ids:
        return {}
    times = ("Submit", "Eligible", "Start", "End")
    try:
        rows = slurm.accounting(ids, ("JobID", "JobName", "State", *times))
    except SlurmCommandError:  # no accounting storage here
        return {}
    recs = {}
    for rec in rows:
        jid = int(rec["JobID"]) if rec["JobID"].isdigit() else None
        if jid not in ids:
            continue
        recs[jid] = Record(jid, rec["JobName"], comments.get(jid, ""),
                           rec["State"].split()[0] if rec["State"] else "", "",
                           *(slurm_time(rec[t], "sacct", t) or 0.0 for t in times))
    return recs


def limit_minutes(walltime: float, time_scale: float) -> int:
    """The time limit (``sbatch -t``, whole minutes) of a stage job of ``walltime`` workflow
    seconds: its real seconds plus a 10 s margin, rounded up to a minute."""
    return max(1, math.ceil((walltime * time_scale + 10.0) / 60.0))


def task_script(stages) -> str:
    """The bash script that runs ``stages``' task commands, stage after stage, each with at
    most its cores' worth of tasks at a time; exit 1 after a stage in which one failed."""
    lines = ["#!/bin/bash", "# the tasks' own commands (hpcopt workflow --run-commands)",
             "failed=0"]
    for st in stages:
        lines.append(f"# stage {st.index}: {len(st.commands)} task(s) on {st.cores} core(s)")
        for cmd in st.commands:
            lines.append(f'while [ "$(jobs -rp | wc -l)" -ge {st.cores} ]; do '
                         "wait -n || failed=1; done")
            lines.append(" ".join(shlex.quote(c) for c in cmd) + " &")
        lines.append('while [ -n "$(jobs -p)" ]; do wait -n || failed=1; done')
        lines.append('[ "$failed" = 0 ] || exit 1')
    return "\n".join(lines) + "\n"


def partition_size(slurm, partition: str | None) -> tuple[str, int, int]:
    """(partition, nodes, cores per node) of ``partition`` (None: Slurm's default one)."""
    sizes, default = slurm.partitions()
    name = partition or default
    if name is None:
        raise WorkflowError("--partition: Slurm has no default partition; name one")
    if name not in sizes:
        raise WorkflowError(f"--partition: Slurm has no partition {name!r} (it has "
                            f"{', '.join(sorted(sizes)) or 'none'})")
    return name, *sizes[name]


@contextmanager
def _locked(path: Path):
    lock = path.with_name(path.name + ".lock")
    with open(lock, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class SharedEstimator:
    """An ``ASAEstimator`` kept in a file that several runs share: ``sample`` and
    ``observe`` load the file under a lock, act on it and write it back (an estimator given
    here is the start when the file does not exist yet)."""

    def __init__(self, path, estimator) -> None:
        self.path = Path(path)
        self.est = estimator

    def _with(self, fn):
        with _locked(self.path):
            if self.path.exists():
                self.est = ASAEstimator.load(self.path)
            value = fn(self.est)
            _write_atomic(self.path, json.dumps(self.est.to_dict()))
        return value

    def sample(self, key, estimate_s=None):
        return self._with(lambda e: e.sample(key, estimate_s=estimate_s))

    def observe(self, key, index, true_wait, estimate_s=None):
        return self._with(lambda e: e.observe(key, index, true_wait, estimate_s=estimate_s))

    def __getattr__(self, name):
        return getattr(self.est, name)


class _Clock:
    """What the strategies read as ``run.sim``: the time of the event being handled."""

    order_name = "slurm"
    backfilling = False
    period = None

    def __init__(self) -> None:
        self.now = 0.0


def _fmt(x) -> str:
    return "inf" if x == math.inf else ("" if x is None else repr(float(x)))


class SlurmWorkflowRun(WorkflowRun):
    """``runs`` copies of a workflow on the Slurm cluster ``slurm`` talks to (module
    docstring).  ``out``: the directory of the journal (resumed when it is there)."""

    def __init__(self, stages, strategy, *, slurm, out, partition: str | None = None,
                 time_scale: float = 0.01, poll: float = 0.5, slack_s: float = 4.0,
                 on_interrupt: str = "cancel", run_commands: bool = False, say=None,
                 **options) -> None:
        name = strategy if isinstance(strategy, str) else strategy.name
        if name == "oracle":
            raise WorkflowError("strategy: oracle needs what-if forks of the simulator; on "
                                "Slurm use bigjob, perstage, asa, eager or asa-naive")
        mode = options.get("mode")
        if mode is not None and mode not in SLURM_MODES and name != "bigjob":
            raise WorkflowError(f"mode: {mode} needs the simulator; on Slurm use "
                                f"{' or '.join(SLURM_MODES)}")
        est = options.get("estimator")
        if est is not None and getattr(est, "prior", 0) > 0:
            raise WorkflowError("prior: the start-time estimate action needs the simulator "
                                "(use a state with prior 0 on Slurm)")
        if not (isinstance(time_scale, (int, float)) and 0 < time_scale <= 1000):
            raise WorkflowError(f"time_scale: expected a factor > 0, got {time_scale!r}")
        if on_interrupt not in ("cancel", "leave"):
            raise WorkflowError(f"on_interrupt: expected cancel or leave, got {on_interrupt!r}")
        self.slurm = slurm
        self.partition, nodes, cpn = partition_size(slurm, partition)
        cpn = options.pop("cores_per_node", None) or cpn
        super().__init__(stages, [], System(nodes, name=self.partition), strategy,
                         cores_per_node=cpn, at=0.0, warmup=0.0, horizon=0.0, **options)
        if self.mode.name not in SLURM_MODES and self.strategy.name != "bigjob":
            raise WorkflowError(f"mode: {self.mode.name} needs the simulator; on Slurm use "
                                f"{' or '.join(SLURM_MODES)}")
        self.time_scale, self.poll = float(time_scale), float(poll)
        self.slack = slack_s / self.time_scale
        self.on_interrupt = on_interrupt
        self.run_commands = bool(run_commands)
        if self.run_commands:
            if self.time_scale != 1:
                raise WorkflowError(f"run_commands: the tasks' commands take their own time; "
                                    f"use time scale 1, not {self.time_scale:g}")
            bare = [st.index for st in self.stages if not st.commands]
            if bare:
                raise WorkflowError(f"run_commands: stage {bare[0]}'s tasks do not all give "
                                    "a command (WfFormat execution.tasks[].command)")
        self.out = Path(out)
        self.say = say or (lambda s: None)
        self._bg, self.horizon_used = [], 0.0

    # ------------------------------------------------------------------ journal
    def _settings_key(self) -> dict:
        return {"workflow": self.name, "strategy": self.strategy.name,
                "mode": self.mode.name, "plan": self.plan, "key": self.key,
                "runs": self.runs, "interval": self.interval,
                "time_scale": self.time_scale, "partition": self.partition,
                "stages": [[s.cores, s.runtime] for s in self.stages]}

    def _open_journal(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        path = self.out / JOURNAL
        want = self._settings_key()
        if path.exists():
            try:
                j = json.loads(path.read_text())
                have = j["settings"]
                self.tag, self.t0 = str(j["tag"]), float(j["t0"])
                jobs, observed = dict(j["jobs"]), list(j["observed"])
                comments = dict(j.get("comments", {}))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise WorkflowError(f"{path}: unreadable journal ({exc}); use another --out"
                                    ) from None
            if have != want:
                diff = [k for k in want if have.get(k) != want[k]]
                raise WorkflowError(f"{path}: an earlier run with other settings "
                                    f"({', '.join(diff)}) is there; use another --out")
            self.resumed = True
        else:
            # t0 in whole seconds, as Slurm records times
            self.tag, self.t0 = secrets.token_hex(4), float(int(time.time()))
            jobs, observed, comments = {}, [], {}
            self.resumed = False
        self.journal = {"tag": self.tag, "t0": self.t0, "settings": want, "jobs": jobs,
                        "comments": comments, "observed": observed, "status": "running"}
        self._accounted: dict[int, Record] = {}  # ended jobs found in accounting
        self._observed = set(observed)
        self._save_journal()

    def _save_journal(self) -> None:
        self.journal["observed"] = sorted(self._observed)
        _write_atomic(self.out / JOURNAL, json.dumps(self.journal, indent=1) + "\n")

    # ------------------------------------------------------------------ the clock
    def clock(self) -> float:
        """Workflow seconds since the run began."""
        return (time.time() - self.t0) / self.time_scale

    def wf_time(self, epoch: float) -> float:
        return (epoch - self.t0) / self.time_scale

    # ------------------------------------------------------------------ the run
    def run(self):
        self._open_journal()
        self.sim = _Clock()
        self.sim.now = self.clock()
        self._counter = 0
        self.attempts: list[Attempt] = []
        self._by_id: dict = {}
        self.live, self.submitted, self.ready = {}, {}, {}
        self.pending: list = []
        self._probe = None
        self._timers: list = []  # (att, runtime, deps) not yet handed to Slurm
        self._slurm: dict = {}  # id(att) -> Slurm job id
        self._rec: dict = {}  # id(att) -> its latest Record
        self._seen_start, self._seen_end, self._cancelled_here = set(), set(), set()
        self._recs = {}
        self._found = {}
        self.strategy.reset()
        try:
            self._recs = self._read()
            self._found = self._ours(self._recs)
            for r in range(self.runs):
                a_r = self.at + r * self.interval
                self.ready[(r, 0)] = a_r
                self.strategy.begin(self, r, a_r)
            while True:
                self._handle(self._recs)
                if self._finished():
                    break
                time.sleep(self.poll)
                self._recs = self._read()
                self._found = self._ours(self._recs)
        except KeyboardInterrupt:
            left = self._unfinished_ids(reread=True)
            if self.on_interrupt == "cancel" and left:
                self._cancel(left)
            self.journal["status"] = "interrupted"
            self._save_journal()
            what = ("cancelled" if self.on_interrupt == "cancel" else "left in Slurm")
            print(f"hpcopt workflow: interrupted: {len(left)} job(s) of the workflow {what}"
                  + ("" if self.on_interrupt == "cancel" else
                     f"; run again with --out {self.out} to follow them"), file=sys.stderr)
            raise
        except StageFailed:
            left = self._unfinished_ids()
            if left:
                self._cancel(left)
            self.journal["status"] = "failed"
            self._save_journal()
            raise
        self.journal["status"] = "done"
        self._save_journal()
        return self._result()

    def _read(self) -> dict[int, Record]:
        """Every job of ``squeue``, plus this run's jobs it no longer shows (ended more than
        ``MinJobAge`` ago, as after a long pause) from Slurm's accounting."""
        recs = read_jobs(self.slurm)
        jobs = {jid: key for key, jid in self.journal["jobs"].items() if jid is not None}
        gone = {jid for jid in jobs if jid not in recs and jid not in self._accounted}
        if gone:
            comments = {jid: self.journal["comments"].get(jobs[jid], "") for jid in gone}
            self._accounted.update(
                {jid: rec for jid, rec in read_accounting(self.slurm, gone, comments).items()
                 if rec.state in ENDED})
        recs.update({jid: rec for jid, rec in self._accounted.items() if jid not in recs})
        return recs

    def _ours(self, recs: dict) -> dict:
        """(run, stage, attempt) -> Record of this run's jobs, found by their comment."""
        prefix = f"{NAME}:{self.tag}:"
        out = {}
        for rec in recs.values():
            if rec.comment.startswith(prefix):
                parts = rec.comment[len(prefix):].split(":")
                try:
                    out[(int(parts[0]), int(parts[1]), int(parts[2]))] = (rec, parts[3:])
                except (ValueError, IndexError):
                    continue
        return out

    def _unfinished_ids(self, reread: bool = False) -> list[int]:
        """This run's jobs that have not ended (``reread``: also those found by their comment
        in a fresh read, such as one submitted the moment Ctrl-C came)."""

        out = []
        if reread:
            try:
                self._recs = read_jobs(self.slurm)
            except SlurmCommandError:
                pass
            out = [rec.id for rec, _ in self._ours(self._recs).values()
                   if rec.state not in ENDED]
        for att in self.attempts:
            jid = self._slurm.get(id(att))
            rec = self._recs.get(jid) if jid is not None else None
            if jid is not None and jid not in out and (rec is None or rec.state not in ENDED):
                out.append(jid)
        return out

    def _cancel(self, ids) -> None:
        try:
            self.slurm.call("scancel", *map(str, ids), retry=True)
        except SlurmCommandError as exc:
            self.say(f"scancel {' '.join(map(str, ids))}: {exc}")

    def _finished(self) -> bool:
        if self._timers:
            return False
        for r in range(self.runs):
            ys = [-1] if self.strategy.name == "bigjob" else range(len(self.stages))
            for y in ys:
                att = self.live.get((r, y))
                if att is None or att.cancelled or id(att) not in self._seen_end:
                    return False
        return True

    # ------------------------------------------------------------------ submissions
    def _new_id(self):  # until sbatch gives Slurm's id: a name no Slurm id can equal
        self._counter += 1
        return f"wf-{self._counter}"

    def enqueue(self, att: Attempt, runtime: float, deps: tuple) -> None:
        self._timers.append((att, runtime, deps))
        self._submit_due()

    def _due(self, att: Attempt) -> bool:
        if (att.run, att.stage, att.attempt) in self._found:
            return True  # submitted before a restart: adopted at once
        if att.submit > self.clock():
            return False
        if att.stage > 0 and not att.proactive:  # a stage submitted at its predecessor's end
            prev = self._latest(att.run, att.stage - 1)
            return prev is not None and id(prev) in self._seen_end
        return True

    def _latest(self, r, y) -> Attempt | None:
        done = [a for a in self.attempts if a.run == r and a.stage == y and not a.cancelled]
        return done[-1] if done else None

    def _submit_due(self) -> None:
        keep = []
        for item in self._timers:
            if self._due(item[0]):
                self._sbatch(*item)
            else:
                keep.append(item)
        self._timers = keep

    def _sbatch(self, att: Attempt, runtime: float, deps: tuple) -> None:
        key = f"{att.run}:{att.stage}:{att.attempt}"
        found = self._found.get((att.run, att.stage, att.attempt))
        if found is None and self.journal["jobs"].get(key) is not None:
            raise WorkflowError(f"{self.out / JOURNAL}: run {att.run} stage {att.stage} was "
                                f"submitted as Slurm job {self.journal['jobs'][key]}, which "
                                "Slurm no longer shows (MinJobAge) and its accounting (sacct) "
                                "does not know; not submitting it again")
        if found is not None:  # a restart: adopt it with the estimate it was submitted with
            rec, extra = found
            jid = rec.id
            if len(extra) >= 2 and extra[0]:
                att.index = int(extra[0]) if extra[0] != "None" else None
                att.estimate = float(extra[1]) if extra[1] else None
            self.say(f"found Slurm job {jid} (run {att.run} stage {att.stage})")
        else:
            real = runtime * self.time_scale
            minutes = limit_minutes(att.walltime, self.time_scale)
            # a predecessor that already completed is no dependency (Slurm may have
            # forgotten it: 24.11 refuses a dependency on a job it no longer knows)
            wait_for = [j for j in map(self._job_of, deps)
                        if getattr(self._recs.get(j), "state", "") != "COMPLETED"]
            dep = [f"--dependency=afterok:{':'.join(map(str, wait_for))}"] if wait_for else []
            comment = (f"{NAME}:{self.tag}:{key}:{'' if att.index is None else att.index}:"
                       f"{_fmt(att.estimate)}")
            self.journal["jobs"][key] = None  # the intent, before sbatch
            self.journal["comments"][key] = comment
            self._save_journal()
            logs = self.out / "logs"
            logs.mkdir(exist_ok=True)
            work = ["--wrap", f"sleep {real:.3f}"]
            if self.run_commands:
                scripts = self.out / "scripts"
                scripts.mkdir(exist_ok=True)
                script = scripts / f"{key.replace(':', '-')}.sh"
                script.write_text(task_script(self.stages if att.stage < 0
                                              else [self.stages[att.stage]]))
                work = [str(script)]
            try:
                text = self.slurm.call(
                    "sbatch", "--parsable", "-J", NAME, "--comment", comment,
                    "-o", str(logs / "%j.out"), "-p", self.partition, "-N", str(att.nodes),
                    "--exclusive", "-t", str(minutes), *dep, *work, retry=False)
            except SlurmCommandError as exc:
                raise WorkflowError(f"run {att.run} stage {att.stage}: sbatch failed: "
                                    f"{exc}") from None
            jid = int(text.strip().split(";")[0])
        self.journal["jobs"][key] = jid
        self._save_journal()
        self._by_id.pop(att.job_id, None)
        att.job_id = jid
        self._by_id[jid] = att
        self._slurm[id(att)] = jid
        att.submit = self.clock() if found is None else self.wf_time(found[0].submit)

    def _job_of(self, dep) -> int:
        att = self._by_id.get(dep)
        if att is None or id(att) not in self._slurm:
            raise WorkflowError(f"dependency {dep!r} is not a submitted job")
        return self._slurm[id(att)]

    # ------------------------------------------------------------------ events
    def _handle(self, recs: dict) -> None:
        """Starts and completions Slurm recorded since the last poll, in time order, then a
        pass (the strategies' planning) and the submissions that fell due."""
        while True:
            events, never = [], None
            for att in self.attempts:
                jid = self._slurm.get(id(att))
                rec = recs.get(jid) if jid is not None else None
                if rec is None:
                    continue
                self._rec[id(att)] = rec
                att.submit = self.wf_time(rec.submit)
                started = rec.start > 0 and rec.state not in ("PENDING", "CANCELLED")
                if (rec.state == "CANCELLED" and id(att) in self._seen_start):
                    started = True
                if started and id(att) not in self._seen_start:
                    events.append((rec.start, 1, att.attempt, att, rec))
                if rec.state in ENDED and id(att) not in self._seen_end:
                    events.append((rec.end, 0 if started or id(att) in self._seen_start
                                   else 2, att.attempt, att, rec))
                if rec.state == "PENDING" and rec.reason == "DependencyNeverSatisfied":
                    never = never or (att, rec)
            events.sort(key=lambda e: (e[0], e[1]))
            for t, kind, _, att, rec in events:  # a failed stage is named before its followers
                self.sim.now = self.wf_time(t)
                if kind == 1:
                    self._started(att, rec)
                else:
                    self._ended(att, rec)
            if never is not None:
                raise StageFailed(self._failure(*never, "its dependency can never be "
                                                "satisfied"))
            if not events:
                break
            self._submit_due()
        self.sim.now = self.clock()
        self.strategy.on_pass(self)
        self._submit_due()

    def _failure(self, att, rec, what) -> str:
        where = "the Big Job" if att.stage < 0 else f"stage {att.stage}"
        return f"run {att.run} {where} (Slurm job {rec.id}): {what}"

    def _started(self, att: Attempt, rec: Record) -> None:
        self._seen_start.add(id(att))
        now = self.sim.now
        ready = self.ready.get((att.run, att.stage), -math.inf)
        early = att.stage > 0 and self.mode.early and now < ready
        runtime = (sum(s.runtime for s in self.stages) if att.stage < 0
                   else self.stages[att.stage].runtime)
        end = now if early else now + runtime  # an early naive allocation is cancelled now
        self.stage_started(att, now, SimpleNamespace(end=end))
        if att.cancelled and id(att) not in self._cancelled_here:
            self._cancelled_here.add(id(att))
            self._cancel([rec.id])

    def _ended(self, att: Attempt, rec: Record) -> None:
        self._seen_end.add(id(att))
        end = self.wf_time(rec.end)
        if att.cancelled and id(att) in self._cancelled_here:
            att.alloc_end = end
            att.hold = max(0.0, end - att.start)
            return
        if rec.state != "COMPLETED":
            raise StageFailed(self._failure(att, rec, f"ended {rec.state}"
                                            + (f" ({rec.reason})" if rec.reason not in
                                               ("", "None") else "")))
        att.alloc_end = end
        att.end = end
        if att.stage >= 0 and att.stage + 1 < len(self.stages):
            self.ready[(att.run, att.stage + 1)] = end
            nxt = self.live.get((att.run, att.stage + 1))
            if nxt is not None and id(nxt) not in self._seen_start and \
                    not math.isnan(nxt.ready):
                nxt.ready = end
        self.stage_completed(att)

    def eligible_time(self, att: Attempt, ready: float) -> float:
        rec = self._rec.get(id(att))
        if rec is None or rec.eligible <= 0:
            return super().eligible_time(att, ready)
        return self.wf_time(rec.eligible)

    def observe(self, att: Attempt, wait: float) -> None:
        jid = self._slurm.get(id(att))
        if jid in self._observed:  # learned before a restart
            return
        super().observe(att, wait)
        self._observed.add(jid)
        self._save_journal()

    # ------------------------------------------------------------------ results
    def _settings(self) -> dict:
        return {
            "workflow": self.name, "strategy": self.strategy.name, "mode": self.mode.name,
            "plan": self.plan, "key": self.key, "queue": "slurm",
            "partition": self.partition, "time_scale": self.time_scale, "tag": self.tag,
            "t0": self.t0, "nodes": self.system.nodes, "cores_per_node": self.cpn,
            "runs": self.runs, "interval": self.interval, "at": self.at,
            "slack": self.slack, "seed": self.seed, "resumed": self.resumed,
            "stages": [{"index": s.index, "tasks": s.tasks, "cores": s.cores,
                        "nodes": self.nodes(s.cores), "runtime": s.runtime, "work": s.work}
                       for s in self.stages],
        }

    def _result(self):
        res = super()._result()
        by_job = {self._slurm[id(a)]: a for a in self.attempts if id(a) in self._slurm}
        for row in res.rows:
            att = by_job.get(row["job_id"])
            rec = self._rec.get(id(att)) if att is not None else None
            row.update({"slurm_job": row["job_id"],
                        "slurm_submit": rec.submit if rec else None,
                        "slurm_eligible": rec.eligible if rec else None,
                        "slurm_start": rec.start if rec else None,
                        "slurm_end": rec.end if rec else None,
                        "slurm_state": rec.state if rec else None})
        return res


def run_workflow_on_slurm(workflow, strategy: str, *, slurm=None, out, cap=None,
                          **options):
    """Run ``workflow`` (a ``Workflow`` or a list of ``Stage``) on Slurm under
    ``strategy``; ``options`` are ``SlurmWorkflowRun``'s and ``WorkflowRun``'s."""

    if isinstance(workflow, Workflow):
        stages, name = stages_of(workflow, cap), workflow.name
    else:
        stages, name = list(workflow), options.pop("name", "workflow")
    options.setdefault("name", name)
    slurm = slurm or Slurm(timeout=20, retries=2)
    return SlurmWorkflowRun(stages, strategy, slurm=slurm, out=out, **options).run()
