"""``hpcopt workflow``: a WfFormat workflow in a simulated queue (Big Job, Per-Stage, ASA),
or with ``--slurm`` on a real Slurm cluster (``hpcopt.workflows.onslurm``).

Writes ``DIR/stages.csv`` (one row per stage allocation of each run) and
``DIR/summary.json`` (the means over runs, each run, the settings); with ``--state F`` the
ASA estimator is loaded from F when it exists and saved there afterwards.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

from ..cliargs import out_path, positive_int, probability, seconds
from ..domain import System
from .reader import WorkflowError
from .runner import KEYS, MODES, PLANS, STRATEGIES

STAGE_COLUMNS = ["run", "stage", "attempt", "job_id", "cores", "nodes", "alloc_cores",
                 "submit", "eligible", "alloc_start", "start", "end", "alloc_end", "wait",
                 "perceived_wait", "overhead_core_hours", "estimate", "start_estimate",
                 "outcome", "cancelled"]
#: the Slurm runner's columns after those: Slurm's job id and its own epoch seconds
SLURM_COLUMNS = ["slurm_job", "slurm_submit", "slurm_eligible", "slurm_start", "slurm_end",
                 "slurm_state"]


def add_workflow_parser(sub) -> argparse.ArgumentParser:
    """The ``workflow`` subcommand (called by ``hpcopt.cli``)."""
    w = sub.add_parser("workflow", help="a WfFormat workflow's stages in a real trace: Big "
                                        "Job, Per-Stage, ASA")
    w.add_argument("workflow", metavar="WF.json[.gz]",
                   help="WfFormat instance (WfCommons), or a data set's file by name "
                        "(wf-bwa/bwa-chameleon-large-001; hpcopt data list wf-bwa)")
    w.add_argument("--trace", default=None, help="background trace (SWF, CSV/JSON table, or a "
                                                 "data set's name such as kth-sp2) of the "
                                                 "simulated queue (not with --slurm)")
    w.add_argument("--slurm", action="store_true",
                   help="run the stages as real jobs on the Slurm cluster SLURM_CONF names "
                        "instead of simulating them (modes afterok and naive)")
    w.add_argument("--partition", default=None,
                   help="--slurm: the partition of the stage jobs (default: Slurm's default)")
    w.add_argument("--time-scale", type=float, default=0.01, metavar="F",
                   help="--slurm: a stage of t seconds sleeps t x F real seconds (default "
                        "0.01); times in the outputs are workflow seconds (real / F)")
    w.add_argument("--poll", type=seconds, default=0.5,
                   help="--slurm: seconds between reads of Slurm's queue (default 0.5)")
    w.add_argument("--run-commands", action="store_true",
                   help="--slurm: each stage job runs its tasks' own commands from the file "
                        "(as you, in the job) instead of sleeping; needs --time-scale 1")
    w.add_argument("--on-interrupt", choices=["cancel", "leave"], default="cancel",
                   help="--slurm: on Ctrl-C cancel the workflow's pending and running jobs "
                        "(default) or leave them to Slurm (run again with the same --out to "
                        "follow them)")
    w.add_argument("--nodes", type=positive_int, default=None, help="machine size in nodes")
    w.add_argument("--cores-per-node", type=positive_int, default=None,
                   help="cores per node: SWF processors -> nodes, and a stage of n cores asks "
                        "ceil(n / C) nodes (default: the SWF header's, else 1)")
    w.add_argument("--strategy", required=True, choices=list(STRATEGIES))
    w.add_argument("--plan", choices=list(PLANS), default="submit",
                   help="when asa/eager plan stage y: submit (default, the paper's): from "
                        "stage y-1's expected end as soon as it is submitted, so the lead "
                        "can exceed its runtime; start: when stage y-1 starts")
    w.add_argument("--key", choices=list(KEYS), default="workflow",
                   help="what the ASA estimator learns waits for: workflow (default, the "
                        "paper's job geometry): the workflow's widest stage, one estimate "
                        "for all its stages; stage: each stage's own core count")
    w.add_argument("--estimator-policy", choices=["default", "greedy", "tuned"],
                   default=None, help="ASA sampling policy (default: default, or the one in "
                                      "--state)")
    w.add_argument("--prior", type=probability, default=None,
                   help="initial weight of the driver's own start-time estimate (EASY shadow "
                        "time, like squeue --start) as one more ASA action (default 0: none)")
    w.add_argument("--runs", type=positive_int, default=1, help="workflow runs (one simulation)")
    w.add_argument("--interval", type=seconds, default=3600.0,
                   help="seconds between the runs' submissions (default 3600)")
    w.add_argument("--cap", type=positive_int, default=None,
                   help="at most C cores per stage (default: the widest level, at most the "
                        "machine's cores)")
    w.add_argument("--at", type=seconds, default=None, metavar="S",
                   help="first workflow submission, seconds after the trace's first job "
                        "(default: --warmup)")
    w.add_argument("--warmup", type=seconds, default=2 * 86400.0,
                   help="background replayed from this many seconds before the first "
                        "workflow (default 2 days)")
    w.add_argument("--policy", default="fcfs", help="scheduling policy (default fcfs + EASY)")
    w.add_argument("--mode", choices=list(MODES), default=None,
                   help="what an allocation that would start before its predecessor ends "
                        "does: afterok (default; asa-naive: naive; bigjob has no stage "
                        "to hold): a Slurm afterok "
                        "dependency, so nothing is held or charged early (the paper's "
                        "accounting); dependency: it is held and the hold charged; naive: "
                        "it is cancelled and the stage resubmitted")
    w.add_argument("--cancel-delay", type=seconds, default=0.0,
                   help="naive mode: seconds a cancelled early allocation holds its cores")
    w.add_argument("--seed", type=int, default=0)
    w.add_argument("--state", default=None, metavar="F",
                   help="ASA estimator state: loaded from F if it exists, saved to F after")
    w.add_argument("--out", type=out_path, required=True, metavar="DIR", help="output directory")
    w.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return w


def write_results(result, out) -> tuple[Path, Path]:
    """``stages.csv`` and ``summary.json`` of a ``WorkflowResult`` in ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    stages = out / "stages.csv"
    with stages.open("w", newline="") as fh:
        columns = STAGE_COLUMNS + [c for c in SLURM_COLUMNS if result.rows and
                                   c in result.rows[0]]
        wr = csv.writer(fh)
        wr.writerow(columns)
        for row in result.rows:
            wr.writerow(["" if row[c] is None else row[c] for c in columns])
    summary = out / "summary.json"
    doc = {**result.summary, "settings": result.settings}
    summary.write_text(json.dumps(doc, indent=2, allow_nan=False, default=str) + "\n")
    return stages, summary


def _estimator(args):
    """The ASA estimator of ``args`` (None for strategies that do not learn): loaded from
    ``--state`` when that file exists, checked against --estimator-policy and --prior."""
    from hpcopt.agents.asa import ASAEstimator

    if not STRATEGIES[args.strategy].learns:
        return None
    state = Path(args.state) if args.state else None
    if state is not None and state.exists():
        estimator = ASAEstimator.load(state)
        for flag, have in (("--estimator-policy", estimator.policy),
                           ("--prior", estimator.prior)):
            want = getattr(args, flag[2:].replace("-", "_"))
            if want is not None and want != have:
                raise WorkflowError(f"{flag} {want} differs from the state in {state} "
                                    f"({have}); drop the flag or use a new --state")
        return estimator
    return ASAEstimator(policy=args.estimator_policy or "default", prior=args.prior or 0.0,
                        seed=args.seed)


def _summary_line(name, args, result) -> str:
    s = result.summary
    return (f"{name}: {args.strategy} ({result.settings['mode']}, plan "
            f"{result.settings['plan']}), {args.runs} run(s): "
            f"makespan {s['makespan']:.0f} s, "
            f"perceived wait {s['perceived_wait']:.0f} s, {s['core_hours']:.2f} core-hours "
            f"(overhead {s['overhead_core_hours']:.2f}), hits {s['hits']:.2f} misses "
            f"{s['misses']:.2f} per run")


def cmd_workflow_slurm(args, wf) -> int:
    """``--slurm``: the stages as real jobs (``hpcopt.workflows.onslurm``)."""
    from .onslurm import SharedEstimator, run_workflow_on_slurm

    if args.trace is not None:
        raise WorkflowError("--trace: a --slurm run's background is the cluster's own load; "
                            "drop --trace")
    if args.prior:
        raise WorkflowError("--prior: the start-time estimate action needs the simulator")
    if not 0 < args.time_scale <= 1000:
        raise WorkflowError(f"--time-scale: expected a factor > 0, got {args.time_scale}")
    estimator = _estimator(args)
    if estimator is not None and args.state:
        estimator = SharedEstimator(args.state, estimator)
    from hpcopt.slurm.state import Slurm

    from .onslurm import partition_size

    slurm = Slurm(timeout=20, retries=2)
    part, nodes, cpn = partition_size(slurm, args.partition)
    cpn = args.cores_per_node or cpn
    cap, widest = args.cap, max(len(level) for level in wf.levels())
    if cap is None and widest > nodes * cpn:
        cap = nodes * cpn
        print(f"--cap {cap}: the widest level has {widest} tasks, more than partition "
              f"{part}'s {cap} cores (--cap C chooses another bound)", file=sys.stderr)
    result = run_workflow_on_slurm(
        wf, args.strategy, slurm=slurm, out=args.out, cap=cap, partition=part,
        cores_per_node=cpn, time_scale=args.time_scale, poll=args.poll,
        on_interrupt=args.on_interrupt, run_commands=args.run_commands, runs=args.runs,
        interval=args.interval, estimator=estimator, mode=args.mode, plan=args.plan,
        key=args.key, seed=args.seed,
        say=None if args.no_progress else (lambda m: print(m, file=sys.stderr)))
    result.settings["workflow_file"] = str(args.workflow)
    result.settings["cap"] = cap
    stages, summary = write_results(result, args.out)
    print(_summary_line(wf.name, args, result) + f" -> {stages}, {summary}")
    return 0


def cmd_workflow(args) -> int:
    from hpcopt.traces import load_trace

    from .reader import load_wfformat
    from .runner import run_workflow

    wf = load_wfformat(args.workflow)
    if args.slurm:
        return cmd_workflow_slurm(args, wf)
    if args.run_commands:
        raise WorkflowError("--run-commands: only a --slurm run has jobs to run them in")
    if args.trace is None:
        raise WorkflowError("--trace: the simulated queue needs a background trace (or "
                            "--slurm for a real cluster)")
    trace = load_trace(args.trace, nodes=args.nodes, cores_per_node=args.cores_per_node)
    system = trace.system
    cpn = args.cores_per_node or trace.report.to_dict().get("cores_per_node") or 1
    if args.nodes is not None and args.nodes != system.nodes:

        system = System(args.nodes, name=system.name)
    estimator = _estimator(args)
    cap, widest = args.cap, max(len(level) for level in wf.levels())
    if cap is None and widest > system.nodes * int(cpn):  # default: what the machine holds
        cap = system.nodes * int(cpn)
        print(f"--cap {cap}: the widest level has {widest} tasks, more than the machine's "
              f"{cap} cores (--cap C chooses another bound)", file=sys.stderr)
    first = trace.jobs[0].submit if trace.jobs else 0.0
    at = first + (args.at if args.at is not None else args.warmup)
    result = run_workflow(wf, (trace.jobs, system), args.strategy, cap=cap,
                          cores_per_node=int(cpn), runs=args.runs, interval=args.interval,
                          at=at, warmup=args.warmup, estimator=estimator, mode=args.mode,
                          plan=args.plan, key=args.key, cancel_delay=args.cancel_delay,
                          policy=args.policy, seed=args.seed, progress=not args.no_progress)
    result.settings["trace"] = str(args.trace)
    result.settings["workflow_file"] = str(args.workflow)
    result.settings["cap"] = cap
    stages, summary = write_results(result, args.out)
    if estimator is not None and args.state:
        estimator.save(args.state)
    print(_summary_line(wf.name, args, result) + f" -> {stages}, {summary}")
    return 0
