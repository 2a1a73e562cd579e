"""The ``hpcopt`` command line: batch solving, simulation, sweeps, training and a service.

Subcommands: solve, sweep, simulate, train, serve, decide, workflow, workload, backends,
policies, demo.

Every error is one line on stderr with a non-zero exit code; ``--debug`` shows tracebacks.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from .cliargs import nonneg_int, positive_int, unit_float
from .errors import HpcoptError, one_line

SUMMARY_KEYS = ["job_count", "avg_wait", "max_wait", "avg_response", "avg_slowdown",
                "avg_bounded_slowdown", "utilization", "makespan"]
TABLE_COLUMNS = ["instance", "backend", "status", "objective", "bound", "wall_time_s",
                 "certified", "decision", "error"]


def instances_dir() -> Path:
    """The bundled instance files the demo reads: package data in an installed wheel, the
    checkout's ``instances/`` folder in an editable install (``hpcopt.instances.bundled_path``).
    """
    from .instances import bundled_path

    here = bundled_path()
    if not (here / "traces" / "demo.swf").is_file():
        raise HpcoptError(f"bundled instances not found at {here}; reinstall hpcopt")
    return here


POLICY_FLAG = "policy_opt_"  # argparse dest prefix of the flags made from policy options


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") \
            from None


def policy_flags() -> dict[str, tuple]:
    """The options every registered policy declares, merged by name:
    ``{name: (Option, [policy names])}``; one name must have one type everywhere."""
    from .policies import policy_names
    from .policies.base import declared_options

    merged: dict[str, tuple] = {}
    for policy in policy_names():
        for opt, _ in declared_options(policy):
            first, users = merged.setdefault(opt.name, (opt, []))
            if first.type is not opt.type or first.choices != opt.choices:
                raise HpcoptError(f"policy option {opt.name!r} is declared with different "
                                  f"types or choices by {users[0]!r} and {policy!r}")
            users.append(policy)
    return merged


def _add_policy_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per declared policy option (``hpcopt policies`` lists them per policy)."""
    group = parser.add_argument_group("policy options (each applies to the policies named)")
    for name, (opt, users) in sorted(policy_flags().items()):
        names = ", ".join(users) if len(users) <= 4 else \
            f"{', '.join(users[:3])} and {len(users) - 3} more"
        kw: dict = dict(dest=POLICY_FLAG + name, default=argparse.SUPPRESS,
                        help=f"{opt.help} [{names}]")
        if opt.type is bool:
            kw["action"] = argparse.BooleanOptionalAction
        else:
            kw["type"] = _floats if opt.type == "floats" else opt.type
            kw["metavar"] = "X,Y,..." if opt.type == "floats" else name.upper()
            if opt.choices:
                kw["choices"] = opt.choices
                del kw["metavar"]
        group.add_argument("--" + name.replace("_", "-"), **kw)


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    p = argparse.ArgumentParser(prog="hpcopt", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"hpcopt {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("solve", help="batch-solve instance files")
    s.add_argument("files", nargs="+",
                   help="instance files, folders or quoted globs ('instances/*.json'); - reads "
                        "instances from standard input (one envelope, a JSON array of "
                        "envelopes, or JSON Lines)")
    s.add_argument("--backend", action="append", default=None,
                   help="backend name, repeatable or comma-separated (default: each model's "
                        "own: dp for knapsack, pareto-exact for bbsched)")
    s.add_argument("--rule", default=None,
                   help="decision rule that picks from a Pareto set: bbsched (default), "
                        "weighted, lexicographic")
    s.add_argument("--time-limit", type=float, default=None, help="seconds per solve")
    s.add_argument("--seed", type=int, default=None,
                   help="batch seed (default 0): each instance is solved with a seed derived "
                        "from (this seed, the instance name), the same on every executor")
    _add_executor_flags(s)
    s.add_argument("--out", default=None, metavar="F",
                   help="write each row as soon as it is solved to F.jsonl or F.csv (a new "
                        "file unless --resume; the folder is created); - streams JSONL to "
                        "standard output (the table then goes to standard error)")
    s.add_argument("--resume", action="store_true",
                   help="keep the rows already in --out and skip their (instance, backend) "
                        "pairs; error and interrupted rows are solved again")
    s.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    w = sub.add_parser("sweep", help="run the Cartesian product of simulate settings x seeds "
                                     "(one summary row per run)")
    w.add_argument("sweep", metavar="SWEEP.json",
                   help='a JSON object of settings, lists are axes: {"trace": [...], "policy": '
                        '[...], "window": [...], "seed": [...], "options": {...}, "jobs": N} '
                        "(see hpcopt.sweep)")
    w.add_argument("--out", required=True, metavar="F",
                   help="write each run's row as soon as it ends to F.jsonl or F.csv (a new "
                        "file unless --resume); - streams JSONL to standard output")
    w.add_argument("--resume", action="store_true",
                   help="keep the runs already in --out and skip them; error and interrupted "
                        "runs are run again")
    _add_executor_flags(w)
    w.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    m = sub.add_parser("simulate", help="simulate a workload trace under a policy")
    m.add_argument("trace", help="SWF (.swf, .swf.gz), CSV/JSON job table or Batsim workload "
                                 "JSON; or an osdec instance file, run online slot by slot "
                                 "(fifo, sjf, tetris, rolling-mip)")
    m.add_argument("--format", choices=["swf", "csv", "json", "batsim"], default=None,
                   help="trace format (default: from the suffix; a .json with nb_res, jobs and "
                        "profiles is Batsim)")
    m.add_argument("--nodes", type=positive_int, default=None, help="system size in nodes")
    m.add_argument("--jobs", type=positive_int, default=None, help="first N jobs of the trace")
    m.add_argument("--cores-per-node", type=positive_int, default=None,
                   help="processors per node: converts SWF processors to nodes (default: the "
                        "SWF header's MaxProcs/MaxNodes when a whole number, else 1)")
    m.add_argument("--extra-fields", choices=["error", "ignore"], default="error",
                   help="SWF lines with more than 18 fields (MetaCentrum's 21): an error, or "
                        "keep the first 18")
    m.add_argument("--workload", default=None, metavar="NAME",
                   help="generate a BBSched workload from the trace: original, S1-S4 (burst "
                        "buffer), S5-S7 (S2 + local SSD), seeded by --seed (default 0); the "
                        "system gets 5 GB of burst buffer per node unless --bb")
    m.add_argument("--policy", default="fcfs", help="policy name (see 'hpcopt policies')")
    m.add_argument("--order", choices=["fcfs", "sjf", "wfp"], default=None, help="base order")
    m.add_argument("--backfill", choices=["easy", "none"], default=None,
                   help="EASY backfilling on or off (default: the policy's, easy for most)")
    m.add_argument("--window", type=positive_int, default=None, help="window size W")
    m.add_argument("--bb", type=float, default=None, metavar="GB",
                   help="shared burst-buffer capacity of the system")
    m.add_argument("--ssd-classes", default=None, metavar="GB:N,...",
                   help="nodes per local-SSD class, e.g. 128:50,256:50 (default with a "
                        "generated S5-S7 workload: half 128 GB, half 256 GB)")
    m.add_argument("--starvation", type=positive_int, default=None, metavar="K",
                   help="serve a job first once it was passed over K times")
    m.add_argument("--warmup", type=float, default=0, help="jobs (or fraction) to trim at start")
    m.add_argument("--cooldown", type=float, default=0, help="jobs (or fraction) to trim at end")
    m.add_argument("--seed", type=int, default=None)
    m.add_argument("--out", default=None, help="directory for jobs.csv and summary.json")
    m.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    m.add_argument("--topology", default=None, metavar="PRESET",
                   help="fat-tree system (paper-1000, hpcschedule-1000); the trace may then be "
                        "a topology job file (id arrival runtime nodes)")
    m.add_argument("--offline-bound", type=float, default=None, metavar="F",
                   help="osdec instance: the offline optimum (or bound) of the same file, for "
                        "gap_to_offline")
    m.add_argument("--offline-backend", default=None, metavar="B",
                   help="osdec instance: solve the offline model with B for gap_to_offline")
    m.add_argument("--offline-time-limit", type=float, default=None, metavar="S",
                   help="seconds for --offline-backend (its bound is the reference when it "
                        "stops at the limit)")
    _add_policy_flags(m)

    t = sub.add_parser("train", help="train a learned scheduling agent")
    tsub = t.add_subparsers(dest="learner", required=True)
    td = tsub.add_parser("dras", help="DRAS three-phase training (sampled, real, synthetic)")
    td.add_argument("--trace", required=True, help="SWF or CSV/JSON trace to learn from")
    td.add_argument("--agent", default="pg", help="pg or dql")
    td.add_argument("--config", default="small", help="small (2-core CPU) or theta (Table III)")
    td.add_argument("--levels", choices=["dras", "decima"], default="dras",
                    help="dras (two levels) or decima (the Decima-PG baseline)")
    td.add_argument("--reward", default=None, help="capability (Eq. 1, default) or capacity "
                                                   "(Eq. 2)")
    td.add_argument("--nodes", type=positive_int, default=None, help="system size in nodes")
    td.add_argument("--sampled", type=int, default=9, help="sampled jobsets (phase 1)")
    td.add_argument("--real", type=int, default=None,
                    help="real one-week jobsets (phase 2; default all training weeks)")
    td.add_argument("--synthetic", type=int, default=82, help="synthetic jobsets (phase 3)")
    td.add_argument("--phases", default="sampled,real,synthetic",
                    help="curriculum order (the paper's Figure 4 compares orders)")
    td.add_argument("--jobs-per-set", type=positive_int, default=2000,
                    help="jobs per sampled jobset")
    td.add_argument("--train-months", type=positive_int, default=2)
    td.add_argument("--validate-months", type=positive_int, default=1)
    td.add_argument("--select", choices=["reward", "avg_wait"], default="reward",
                    help="best checkpoint by validation reward (paper) or by average wait "
                         "with max wait within 2x FCFS+EASY")
    td.add_argument("--seed", type=int, default=0)
    td.add_argument("--out", default="dras-run", help="directory for checkpoints and curve")
    td.add_argument("--no-plot", action="store_true", help="skip curve.png")
    td.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    tn = tsub.add_parser("nsa", help="NSA repair operator (PPO on generated DCAS windows)")
    tn.add_argument("--arch", default="cnn3", help="fcn1..fcn3 or cnn1..cnn3 (Table II)")
    tn.add_argument("--episodes", type=positive_int, default=20000, help="repair episodes")
    tn.add_argument("--topology", default="paper-1000", help="topology preset")
    tn.add_argument("--q", type=positive_int, default=100, help="state rows (first Q entries)")
    tn.add_argument("--n-remove", type=positive_int, default=2, help="n_D: jobs destroyed")
    tn.add_argument("--windows", type=positive_int, default=500, help="windows per pool")
    tn.add_argument("--batch", type=positive_int, default=128, help="episodes per PPO update")
    tn.add_argument("--lr", type=float, default=3e-4)
    tn.add_argument("--baseline", choices=["critic", "group"], default="critic",
                    help="advantage baseline: the critic (paper) or the mean of --group "
                         "repairs of the same destroyed solution")
    tn.add_argument("--group", type=positive_int, default=1, help="repairs per destroyed "
                                                                   "solution (--baseline group)")
    tn.add_argument("--val-episodes", type=int, default=512,
                    help="fixed validation episodes (greedy policy, every 50 updates)")
    tn.add_argument("--time-limit", type=float, default=None, help="stop after S seconds")
    tn.add_argument("--device", default=None, help="cpu or cuda (default: cuda if present)")
    tn.add_argument("--resume", default=None, metavar="PATH",
                    help="start from this checkpoint's weights")
    tn.add_argument("--imitation", type=int, default=0, metavar="N",
                    help="warm start: N updates imitating a softmin-of-block-cost teacher "
                         "before PPO (not in the paper)")
    tn.add_argument("--temperature", type=float, default=2000.0,
                    help="the imitation teacher's temperature, in CH cost units")
    tn.add_argument("--seed", type=int, default=0)
    tn.add_argument("--out", default="nsa-run", help="directory for checkpoints and curve")
    tn.add_argument("--no-plot", action="store_true", help="skip curve.png")
    tn.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    to = tsub.add_parser("osdec", help="OSDEC agent (PPO, attention encoder, auxiliary "
                                       "tasks) on deferrable cloud trajectories")
    to.add_argument("--variant", default="osdec", choices=["osdec", "ppo-att", "ppo-att-auxh",
                                                           "ppo-att-auxl", "ppo-mlp"])
    to.add_argument("--config", default="small", choices=["paper", "small"],
                    help="paper (Table 3) or small (a 2-core CPU in about 30 minutes)")
    to.add_argument("--workload", nargs="+", default=None, metavar="FILE",
                    help="osdec instance files (default: deferrable_suite train split)")
    to.add_argument("--iterations", type=positive_int, default=None,
                    help="PPO iterations (default: the config's)")
    to.add_argument("--train-trajectories", type=positive_int, default=None, metavar="N",
                    help="training days from deferrable_suite('train') (default: the config's)")
    to.add_argument("--val-trajectories", type=positive_int, default=None, metavar="N",
                    help="held-out validation days after them (default: the config's)")
    to.add_argument("--eval-every", type=positive_int, default=None, metavar="N",
                    help="validate every N iterations (default: the config's)")
    to.add_argument("--minutes", type=float, default=None,
                    help="stop after M minutes (the learning rates still decay over "
                    "--iterations, so the run is the same as without a budget, cut short)")
    to.add_argument("--seed", type=int, default=0)
    to.add_argument("--out", default="osdec-run", help="directory for checkpoints and curve")
    to.add_argument("--no-plot", action="store_true", help="skip curve.png")
    to.add_argument("--no-progress", action="store_true", help="hide the progress bar")

    v = sub.add_parser("serve", help="serve the hpcopt/1 protocol (decide one window, solve "
                                     "an instance) over line-delimited JSON")
    v.add_argument("--stdio", action="store_true", required=True,
                   help="one request per line on stdin, one reply per line on stdout")
    sub.add_parser("decide", help="answer one hpcopt/1 request read from stdin (JSON)")
    sub.add_parser("backends", help="list solver backends")
    sub.add_parser("policies", help="list scheduling policies")
    from .workflows.cli import add_workflow_parser

    add_workflow_parser(sub)
    _add_workload_parser(sub)
    d = sub.add_parser("demo", help="a short simulation and a batch solve on bundled data")
    d.add_argument("--out", default=None, help="directory for the demo's outputs")
    return p


def _add_executor_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("where to run (default: this process)")
    ex = group.add_mutually_exclusive_group()
    ex.add_argument("--workers", type=positive_int, default=1, metavar="N",
                    help="N local processes (no extra package)")
    ex.add_argument("--dask", default=None, metavar="local:N|ADDRESS",
                    help="a Dask cluster: local:N (a LocalCluster of N single-threaded "
                         "processes) or a scheduler address tcp://HOST:8786 (or a scheduler "
                         'file .json); needs pip install "hpcopt[dask]"')
    group.add_argument("--chunk", type=positive_int, default=None, metavar="K",
                       help="tasks shipped to a worker at a time (default: about 8 chunks per "
                            "worker, at most 200 tasks each)")


def _executor(args):
    """The executor for --workers/--dask (made before anything runs: a bad address or a
    missing package is a usage error, not a row per file)."""
    from .executors import make_executor

    return make_executor(workers=args.workers, dask=args.dask)


class _Terminated(KeyboardInterrupt):
    """SIGTERM outside a batch: stops like Ctrl-C (exit 143, one line, no traceback)."""


def _on_sigterm(signum, frame):
    raise _Terminated()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    old_term = None
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        try:
            old_term = signal.signal(signal.SIGTERM, _on_sigterm)
        except ValueError:  # not the main thread
            pass
    try:
        return COMMANDS[args.command](args)
    except KeyboardInterrupt as exc:
        if args.debug:
            raise
        name = "SIGTERM" if isinstance(exc, _Terminated) else "SIGINT"
        print(f"hpcopt: interrupted by {name}", file=sys.stderr)
        return 143 if isinstance(exc, _Terminated) else 130
    except BrokenPipeError:  # e.g. --out - | head: the reader is gone, nothing to say
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - no flush error at exit
        except OSError:
            pass
        return 141
    except (HpcoptError, OSError, ValueError, KeyError) as exc:
        if args.debug:
            raise
        print(f"hpcopt: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - never a traceback unless --debug
        if args.debug:
            raise
        print(f"hpcopt: internal error: {type(exc).__name__}: {exc} (rerun with --debug)",
              file=sys.stderr)
        return 3
    finally:
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)


def _backends(args) -> list[str] | None:
    if not args.backend:
        return None
    names = []
    for item in args.backend:
        names.extend(n.strip() for n in item.split(",") if n.strip())
    return names


def cmd_solve(args) -> int:
    from .batch import RowWriter, run_batch
    from .solvers import get_solver

    backends = _backends(args)
    for name in backends or []:
        get_solver(name)  # an unknown backend is a usage error, not a row per file
    if args.rule is not None:
        from .errors import closest
        from .models.pareto_rules import RULES

        if args.rule not in RULES:
            raise HpcoptError(f"--rule {args.rule!r}: expected one of {sorted(RULES)}."
                              + closest(args.rule, RULES))
    if args.resume and not args.out:
        raise HpcoptError("--resume needs --out FILE: the rows already solved are read from it")
    info = sys.stderr if args.out == "-" else sys.stdout  # stdout carries the rows then
    writer = RowWriter(args.out, resume=args.resume) if args.out else None  # before solving
    executor = None
    try:
        if args.dask:
            executor = _executor(args)
            print(f"solving on {executor.describe()}", file=info)
        if args.resume:
            cut = f" ({writer.unreadable} unreadable lines ignored)" if writer.unreadable else ""
            print(f"resume: {len(writer.done)} finished (instance, backend) pairs in "
                  f"{args.out} are skipped{cut}", file=info)
        run = run_batch(args.files, backends, time_limit=args.time_limit, seed=args.seed,
                        workers=args.workers, progress=not args.no_progress, rule=args.rule,
                        writer=writer, handle_signals=True,
                        executor=executor, chunk=args.chunk)
    finally:
        if writer is not None:
            writer.close()
        if executor is not None:
            executor.close()
    rows = run.rows
    if run.signum is not None:
        if writer is None:
            _print_rows(rows, file=info)  # nothing on disk: show what was solved
        kept = (f"{writer.count} rows written to {args.out}" if writer is not None
                else f"{len(rows)} rows above")
        name = signal.Signals(run.signum).name
        print(f"hpcopt: interrupted by {name} after {run.finished} of {run.items} files; "
              f"{kept}" + (" (rerun with --resume to finish)" if writer is not None
                           and writer.path is not None else ""), file=sys.stderr)
        return 128 + run.signum
    if rows:
        _print_rows(rows, file=info)
    if run.skipped:
        print(f"skipped {run.skipped} pairs already in {args.out}", file=info)
    if writer is not None and writer.path is not None:
        print(f"wrote {writer.count} rows to {args.out}", file=info)
    errors = sum(r["status"] == "ERROR" for r in rows)
    if errors:
        print(f"hpcopt: error: {errors} of {len(rows)} rows failed", file=sys.stderr)
    return 1 if errors else 0


def cmd_sweep(args) -> int:
    from .batch import RowWriter
    from .sweep import load_sweep, run_key, run_sweep

    sweep = load_sweep(args.sweep)  # a malformed sweep file stops here, before any run
    info = sys.stderr if args.out == "-" else sys.stdout
    writer = RowWriter(args.out, resume=args.resume, columns=sweep.columns, key=run_key,
                       command="hpcopt sweep")
    executor = None
    try:
        executor = _executor(args) if args.dask else None  # else run_sweep's pool/serial
        where = executor.describe() if executor is not None else (
            f"{args.workers} local processes" if args.workers > 1 else "this process")
        print(f"sweep {args.sweep}: {len(sweep.runs)} runs on {where}", file=info)
        if args.resume:
            cut = f" ({writer.unreadable} unreadable lines ignored)" if writer.unreadable else ""
            print(f"resume: {len(writer.done)} finished runs in {args.out} are skipped{cut}",
                  file=info)
        run = run_sweep(sweep, writer=writer, executor=executor, workers=args.workers,
                        chunk=args.chunk, handle_signals=True, progress=not args.no_progress)
    finally:
        writer.close()
        if executor is not None:
            executor.close()
    if run.signum is not None:
        name = signal.Signals(run.signum).name
        print(f"hpcopt: interrupted by {name} after {run.finished} of {run.runs} runs; "
              f"{writer.count} rows written to {args.out}"
              + (" (rerun with --resume to finish)" if writer.path is not None else ""),
              file=sys.stderr)
        return 128 + run.signum
    errors = sum(r.get("status") == "ERROR" for r in run.rows)
    if run.skipped:
        print(f"skipped {run.skipped} runs already in {args.out}", file=info)
    if writer.path is not None:
        print(f"wrote {writer.count} rows to {args.out}", file=info)
    if errors:
        first = next(r for r in run.rows if r.get("status") == "ERROR")
        print(f"hpcopt: error: {errors} of {len(run.rows)} runs failed (first: "
              f"{first.get('error')})", file=sys.stderr)
    return 1 if errors else 0


def _print_rows(rows: list[dict], file=None) -> None:
    import pandas as pd

    df = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    df["decision"] = df["decision"].map(lambda d: "" if d is None else " ".join(map(str, d)))
    df["decision"] = df["decision"].map(lambda s: s if len(s) <= 40 else s[:37] + "...")
    if not df["error"].fillna("").astype(bool).any():
        df = df.drop(columns="error")
    with pd.option_context("display.width", 200, "display.max_columns", 20,
                           "display.max_colwidth", 60):
        print(df.to_string(index=False), file=file or sys.stdout)


def _ssd_classes(text: str | None) -> dict:
    if not text:
        return {}
    out = {}
    for part in text.split(","):
        size, sep, count = part.partition(":")
        try:
            out[float(size)] = int(count)
        except ValueError:
            raise HpcoptError(f"--ssd-classes {text!r}: expected GB:NODES pairs separated by "
                              "commas, e.g. 128:50,256:50") from None
        if not sep or out[float(size)] < 0:
            raise HpcoptError(f"--ssd-classes {text!r}: expected GB:NODES pairs, e.g. 128:50")
    return out


def _looks_like_swf(path: str) -> bool:
    name = path[:-3] if path.endswith(".gz") else path
    return name.endswith((".swf", ".csv", ".json"))


def cmd_simulate(args) -> int:
    from .api import load_trace, simulate
    from .domain import System

    options = {k[len(POLICY_FLAG):]: v for k, v in vars(args).items()
               if k.startswith(POLICY_FLAG)}
    trace = args.trace
    system = None
    from .cloud import is_osdec_file

    if is_osdec_file(args.trace):
        return _simulate_osdec(args, options)
    if args.topology and args.workload:
        raise HpcoptError("--workload generates burst-buffer/SSD workloads; it does not apply "
                          "with --topology")
    if args.topology and not _looks_like_swf(args.trace):
        from .traces.tjap import load_tjap_jobs

        trace = load_tjap_jobs(args.trace, max_jobs=args.jobs)
    else:
        trace = load_trace(args.trace, nodes=args.nodes, cores_per_node=args.cores_per_node,
                           max_jobs=args.jobs, fmt=args.format, extra_fields=args.extra_fields)
        print(f"{trace.system.name or Path(args.trace).name}: {trace.report.machine_text()}")
        for note in trace.report.notes:
            print(f"  note: {note}")
        print(trace.report.dropped_text())
    if args.topology:
        from .workloads.tjap import tjap_system

        system = tjap_system(args.topology)
    elif args.bb is not None or args.ssd_classes or args.workload:
        system = System(trace.system.nodes, bb=trace.system.bb if args.bb is None else args.bb,
                        ssd_classes=_ssd_classes(args.ssd_classes), name=trace.system.name)
    if args.workload:
        trace, system = _workload(trace, system, args.workload,
                                  0 if args.seed is None else args.seed)
    res = simulate(trace, nodes=args.nodes, system=system, jobs=args.jobs,
                   cores_per_node=args.cores_per_node, policy=args.policy, order=args.order,
                   backfill=args.backfill, window=args.window, seed=args.seed,
                   starvation_bound=args.starvation, warmup=args.warmup,
                   cooldown=args.cooldown, progress=not args.no_progress, **options)
    if args.workload:
        res.settings.update(workload=args.workload,
                            workload_seed=0 if args.seed is None else args.seed)
    _print_summary({f"{args.policy}": res.summary})
    opts = res.settings.get("policy_options") or {}
    if opts:
        print(f"policy {args.policy}: " + ", ".join(f"{k}={v!r}" for k, v in opts.items()
                                                     if k != "seed"))
    if args.out:
        jobs_csv, summary_json = res.write(args.out)
        print(f"wrote {jobs_csv} and {summary_json}")
    return 0


def _simulate_osdec(args, options: dict) -> int:
    """``hpcopt simulate`` of an osdec instance file: online, slot by slot (hpcopt.cloud)."""
    from .cloud import simulate_osdec

    res = simulate_osdec(args.trace, args.policy, seed=args.seed,
                         offline_bound=args.offline_bound,
                         offline_backend=args.offline_backend,
                         offline_time_limit=args.offline_time_limit,
                         progress=not args.no_progress, **options)
    s = res.summary
    print(f"{Path(args.trace).name}: {s['jobs']} deferrable jobs on {s['slots']} slots, "
          f"policy {args.policy}")
    keys = ["total_reward", "revenue", "delay_penalty", "violation_penalty", "started",
            "dropped", "utilization"] + (["gap_to_offline"] if "gap_to_offline" in s else [])
    print("  " + ", ".join(f"{k}={s[k]:.4g}" if isinstance(s[k], float) else f"{k}={s[k]}"
                           for k in keys))
    if args.out:
        jobs_csv, summary_json = res.write(args.out)
        print(f"wrote {jobs_csv} and {summary_json}")
    return 0


def _workload(trace, system, name: str, seed: int):
    """The trace with ``make_workload(name)`` applied and the system it needs (burst buffer:
    5 GB per node unless given; SSD classes for S5-S7: half 128 GB, half 256 GB unless
    given); prints one line saying what was generated."""
    from dataclasses import replace

    from .workloads.burst_buffer import BB_PER_NODE_GB, NAMES, SSD_SPLITS, bb_system, make_workload

    if name not in NAMES:
        from .errors import closest

        raise HpcoptError(f"--workload {name!r}: expected one of {', '.join(NAMES)}."
                          + closest(name, NAMES))
    if name != "original" and system.bb <= 0:
        system = replace(system, bb=BB_PER_NODE_GB * system.nodes)
    if name in SSD_SPLITS and not system.ssd_classes:
        system = replace(system, ssd_classes=bb_system(system.nodes, ssd=True).ssd_classes)
    jobs = make_workload(trace.jobs, name, system=system, seed=seed)
    with_bb = sum(j.bb > 0 for j in jobs)
    with_ssd = sum(j.ssd > 0 for j in jobs)
    print(f"workload {name} (seed {seed}): {with_bb:,} of {len(jobs):,} jobs ask for burst "
          f"buffer ({system.bb:,g} GB on the system)"
          + (f", {with_ssd:,} for local SSD" if name in SSD_SPLITS else ""))
    return replace(trace, jobs=tuple(jobs), system=system), system


def _print_summary(summaries: dict[str, dict]) -> None:
    from .sim.metrics import format_summary  # plain text: no pandas import for a summary

    keys = SUMMARY_KEYS + [k for k in ("bb_usage", "ssd_usage", "wasted_ssd", "avg_comm_cost")
                           if all(k in s for s in summaries.values())]
    print(format_summary(summaries, keys))


def cmd_serve(args) -> int:
    from .service import serve_lines

    return serve_lines()


def cmd_decide(args) -> int:
    from .service import dumps, handle_line

    try:
        reply = handle_line(sys.stdin.buffer.read().decode("utf-8"))
    except UnicodeDecodeError as exc:
        reply = {"id": None, "ok": False, "error": {
            "type": "RequestError", "message": f"not UTF-8 text: {exc.reason}"}}
    print(dumps(reply), flush=True)
    return 0 if reply["ok"] else 1


def cmd_backends(args) -> int:
    import pandas as pd

    from .solvers import describe

    with pd.option_context("display.width", 200, "display.max_colwidth", 70):
        print(pd.DataFrame(describe()).to_string(index=False))
    return 0


def cmd_policies(args) -> int:
    import pandas as pd

    from .policies import describe_policies

    with pd.option_context("display.width", 200, "display.max_colwidth", 90):
        print(pd.DataFrame(describe_policies()).to_string(index=False))
    return 0


def cmd_demo(args) -> int:
    from .api import simulate
    from .batch import solve_batch, write_rows

    base = instances_dir()
    trace = base / "traces" / "demo.swf"
    print(f"== simulation: {trace.name}, FCFS+EASY vs knapsack (W=20, dp) + EASY ==")
    runs = {"fcfs+easy": simulate(trace, policy="fcfs"),
            "knapsack+easy": simulate(trace, policy="knapsack", backend="dp")}
    _print_summary({name: r.summary for name, r in runs.items()})
    print("\n== batch solve: the bundled knapsack/*.json with dp and cpsat ==")
    rows = solve_batch([str(base / "knapsack" / "*.json")], ["dp", "cpsat"])
    _print_rows(rows)
    if args.out:
        for name, r in runs.items():
            r.write(Path(args.out) / name)
        write_rows(rows, Path(args.out) / "solve.csv")
        print(f"wrote results under {args.out}")
    return 1 if any(r["status"] == "ERROR" for r in rows) else 0


def cmd_train(args) -> int:
    try:
        import torch
    except ImportError:
        raise HpcoptError("training needs torch: pip install 'hpcopt[ml]'") from None
    if args.learner == "nsa":
        return _train_nsa(args, torch)
    if args.learner == "osdec":
        return _train_osdec(args, torch)
    from .learn.dras_train import train_dras

    # the small network gains nothing from threads (they only contend on a shared machine)
    torch.set_num_threads(1 if args.config == "small" else max(1, min(torch.get_num_threads(),
                                                                      2)))
    overrides = {"reward": args.reward} if args.reward else {}
    doc = train_dras(args.trace, agent=args.agent, config=args.config, levels=args.levels,
                     out=args.out, seed=args.seed, sampled=args.sampled, real=args.real,
                     synthetic=args.synthetic, jobs_per_set=args.jobs_per_set,
                     train_months=args.train_months, validate_months=args.validate_months,
                     select=args.select, nodes=args.nodes, progress=not args.no_progress,
                     plot=not args.no_plot,
                     phases=[p.strip() for p in args.phases.split(",") if p.strip()],
                     **overrides)
    print(f"trained {doc['episodes']} episodes ({doc['jobs_seen']:,} jobs) in "
          f"{doc['train_seconds']:.0f} s; best episode {doc['best_episode']}: validation "
          f"reward {doc['best_val_reward']:.1f}, average wait {doc['best_val_avg_wait']:.0f} s "
          f"(FCFS+EASY {doc['reference_val_avg_wait']['fcfs']:.0f} s)")
    print(f"wrote {Path(args.out) / 'best.pt'}, curve.csv, train.json"
          + ("" if args.no_plot else ", curve.png"))
    return 0


def _train_nsa(args, torch) -> int:
    from dataclasses import replace

    from .learn.nsa_train import PPOConfig, train

    torch.set_num_threads(max(1, min(torch.get_num_threads(), 2)))
    ppo = replace(PPOConfig(), batch=args.batch, lr=args.lr, baseline=args.baseline,
                  group=args.group, minibatch=min(PPOConfig.minibatch, args.batch))
    doc = train(arch=args.arch, episodes=args.episodes, seed=args.seed, out=args.out,
                topology=args.topology, q=args.q, n_remove=args.n_remove,
                n_windows=args.windows, ppo=ppo, time_limit=args.time_limit,
                device=args.device, progress=not args.no_progress, plot=not args.no_plot,
                resume=args.resume, val_episodes=args.val_episodes,
                imitation=args.imitation, temperature=args.temperature)
    print(f"trained {doc['episodes']} episodes in {doc['train_seconds']:.0f} s; mean reward "
          f"{doc['first_mean_reward']:.4f} (first 20 updates) -> {doc['final_mean_reward']:.4f}"
          f" (last 20); best validation reward {doc['best_val_reward']}")
    print(f"wrote {doc['checkpoint']}, best.pt, curve.csv, train.json"
          + ("" if args.no_plot else ", curve.png"))
    return 0


def _train_osdec(args, torch) -> int:
    from .learn.osdec_train import train

    torch.set_num_threads(1 if args.config == "small" else max(1, min(torch.get_num_threads(),
                                                                      2)))
    doc = train(variant=args.variant, config=args.config, workloads=args.workload,
                iterations=args.iterations, train_trajectories=args.train_trajectories,
                val_trajectories=args.val_trajectories, eval_every=args.eval_every,
                minutes=args.minutes, seed=args.seed,
                out=args.out, progress=not args.no_progress, plot=not args.no_plot)
    print(f"trained {doc['variant']} {doc['iterations']} iterations ({doc['steps']:,} steps, "
          f"{doc['episodes']} episodes) in {doc['train_seconds']:.0f} s; best validation "
          f"total reward {doc['best_val_reward']} (iteration {doc['best_iteration']})"
          + (" [interrupted]" if doc["interrupted"] else ""))
    print(f"wrote {Path(args.out) / 'best.pt'}, last.pt, curve.csv, train.json"
          + ("" if args.no_plot else ", curve.png"))
    return 0


COMMANDS = {"solve": cmd_solve, "simulate": cmd_simulate, "sweep": cmd_sweep,
            "serve": cmd_serve,
            "decide": cmd_decide, "backends": cmd_backends,
            "policies": cmd_policies, "demo": cmd_demo, "train": cmd_train,
            "workflow": lambda args: _cmd_workflow(args)}


def _cmd_workflow(args) -> int:
    from .workflows.cli import cmd_workflow

    return cmd_workflow(args)


def _add_workload_parser(sub) -> None:
    """``hpcopt workload deferrable``: an OSDEC instance file from the Azure v1 derived files
    (the recipe: ``hpcopt.workloads.deferrable``)."""
    wl = sub.add_parser("workload", help="generate workload instance files from trace data")
    wsub = wl.add_subparsers(dest="family", required=True)
    d = wsub.add_parser("deferrable", help="OSDEC deferrable cloud jobs from the Azure v1 "
                                           "derived files (capacity left by on-demand VMs)")
    d.add_argument("azure_file", nargs="?", default=None, metavar="AZURE_FILE",
                   help="v1.train.txt.gz, v1.dev.txt.gz or v1.dev.c2100000.txt.gz (default: "
                        "v1.dev.txt.gz in ../shared/data/cloud/azure_v1_vmtable_derived)")
    d.add_argument("--slots", type=positive_int, default=288, help="horizon T in 300 s slots "
                   "(default 288: one day)")
    d.add_argument("--seed", type=nonneg_int, default=0)
    d.add_argument("--deferrable-share", type=unit_float, default=0.05, metavar="Q",
                   help="share of VMs that are deferrable (seeded Bernoulli; default 0.05)")
    d.add_argument("--split-by", choices=["vm", "batch"], default="vm",
                   help="draw deferrable per VM (default) or per tenant batch")
    d.add_argument("--on-demand-share", type=unit_float, default=0.02, metavar="R",
                   help="share of the on-demand VMs that run on this machine (seeded; "
                        "default 0.02; 1: the whole region, where capacity hardly binds)")
    d.add_argument("--max-defer", type=nonneg_int, default=6, metavar="A",
                   help="earliest = submit + U{0..A} (default 6)")
    d.add_argument("--window", type=nonneg_int, default=12, metavar="W",
                   help="latest = earliest + U{0..W} (default 12)")
    d.add_argument("--start", default="1d", metavar="DAY_OR_BIN",
                   help="first bin of the window: a bin index from the file's first line "
                        "(e.g. 600) or days (e.g. 2d); default 1d (one day of warm-up)")
    d.add_argument("--real-time", action="store_true",
                   help="earliest = latest = submit (the paper's real-time variant)")
    d.add_argument("--synthetic", default=None, metavar="core:K|duration:K",
                   help="the paper's Table 4 sensitivity cases (K = 1, 2, 3): cores over "
                        "{1,2,4,8} or durations over 1..6 slots drawn from the case's mix")
    d.add_argument("--machine-size", type=positive_int, default=None, metavar="CORES",
                   help="machine size M (default: max(on-demand peak, quantile of the total "
                        "demand))")
    d.add_argument("--machine-quantile", type=unit_float, default=0.8, metavar="P",
                   help="quantile of on-demand + deferrable demand for M (default 0.8)")
    d.add_argument("--max-duration", type=positive_int, default=24, metavar="SLOTS",
                   help="cap on job durations (default 24: two hours)")
    d.add_argument("--lifetimes", default=None, metavar="FILE",
                   help="lifetime file (default: the split's own beside AZURE_FILE; a flavor "
                        "file without one draws lifetimes per flavor from another split)")
    d.add_argument("--maps", default=None, metavar="DIR",
                   help="folder of flav_map.txt and v1.interval_map.txt (default: maps/ "
                        "beside AZURE_FILE)")
    d.add_argument("--w1", type=float, default=2.0, help="delay penalty (default 2)")
    d.add_argument("--w2", type=float, default=10.0, help="violation penalty (default 10)")
    d.add_argument("--name", default=None, help="instance name (default: from the settings)")
    d.add_argument("--out", required=True, metavar="W.json", help="instance file to write")
    d.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def cmd_workload(args) -> int:
    from .workloads.deferrable import deferrable_workload, loose_warning, save_workload

    inst = deferrable_workload(
        args.azure_file, slots=args.slots, seed=args.seed,
        deferrable_share=args.deferrable_share, max_defer=args.max_defer, window=args.window,
        start=args.start, real_time=args.real_time, synthetic=args.synthetic,
        split_by=args.split_by, on_demand_share=args.on_demand_share,
        machine_size=args.machine_size,
        machine_quantile=args.machine_quantile, max_duration=args.max_duration,
        lifetimes=args.lifetimes, maps=args.maps, w1=args.w1, w2=args.w2, name=args.name,
        progress=not args.no_progress and sys.stderr.isatty())
    path = save_workload(inst, args.out)
    m = inst["meta"]
    print(f"wrote {path}: {m['jobs']} jobs, {m['slots']} slots, machine {m['machine_size']} "
          f"cores (on-demand peak {m['on_demand_peak']}), capacity mean "
          f"{m['capacity_mean']:.0f} min {m['capacity_min']}")
    if loose_warning(inst):
        print(f"warning: {loose_warning(inst)}", file=sys.stderr)
    return 0


COMMANDS["workload"] = cmd_workload


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
