"""``hpcopt workflow``: a WfFormat workflow in a simulated queue (Big Job, Per-Stage, ASA).

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
from .reader import WorkflowError
from .runner import KEYS, MODES, PLANS, STRATEGIES

STAGE_COLUMNS = ["run", "stage", "attempt", "job_id", "cores", "nodes", "alloc_cores",
                 "submit", "alloc_start", "start", "end", "alloc_end", "wait",
                 "perceived_wait", "overhead_core_hours", "estimate", "start_estimate",
                 "outcome", "cancelled"]


def add_workflow_parser(sub) -> argparse.ArgumentParser:
    """The ``workflow`` subcommand (called by ``hpcopt.cli``)."""
    w = sub.add_parser("workflow", help="a WfFormat workflow's stages in a real trace: Big "
                                        "Job, Per-Stage, ASA")
    w.add_argument("workflow", metavar="WF.json[.gz]", help="WfFormat instance (WfCommons)")
    w.add_argument("--trace", required=True, help="background trace (SWF, CSV/JSON table)")
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
        wr = csv.writer(fh)
        wr.writerow(STAGE_COLUMNS)
        for row in result.rows:
            wr.writerow(["" if row[c] is None else row[c] for c in STAGE_COLUMNS])
    summary = out / "summary.json"
    doc = {**result.summary, "settings": result.settings}
    summary.write_text(json.dumps(doc, indent=2, allow_nan=False, default=str) + "\n")
    return stages, summary


def cmd_workflow(args) -> int:
    from hpcopt.agents.asa import ASAEstimator
    from hpcopt.traces import load_trace

    from .reader import load_wfformat
    from .runner import run_workflow

    wf = load_wfformat(args.workflow)
    trace = load_trace(args.trace, nodes=args.nodes, cores_per_node=args.cores_per_node)
    system = trace.system
    cpn = args.cores_per_node or trace.report.to_dict().get("cores_per_node") or 1
    if args.nodes is not None and args.nodes != system.nodes:
        from hpcopt.domain import System

        system = System(args.nodes, name=system.name)
    estimator = None
    if STRATEGIES[args.strategy].learns:
        state = Path(args.state) if args.state else None
        if state is not None and state.exists():
            estimator = ASAEstimator.load(state)
            for flag, have in (("--estimator-policy", estimator.policy),
                               ("--prior", estimator.prior)):
                want = getattr(args, flag[2:].replace("-", "_"))
                if want is not None and want != have:
                    raise WorkflowError(f"{flag} {want} differs from the state in {state} "
                                        f"({have}); drop the flag or use a new --state")
        else:
            estimator = ASAEstimator(policy=args.estimator_policy or "default",
                                     prior=args.prior or 0.0, seed=args.seed)
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
    s = result.summary
    print(f"{wf.name}: {args.strategy} ({result.settings['mode']}, plan "
          f"{result.settings['plan']}), {args.runs} run(s): "
          f"makespan {s['makespan']:.0f} s, "
          f"perceived wait {s['perceived_wait']:.0f} s, {s['core_hours']:.2f} core-hours "
          f"(overhead {s['overhead_core_hours']:.2f}), hits {s['hits']:.2f} misses "
          f"{s['misses']:.2f} per run -> {stages}, {summary}")
    return 0
