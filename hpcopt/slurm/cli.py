"""``hpcopt slurm``: run the adapter (``run``), start or stop a local testbed (``testbed``),
print the ``job_submit.lua`` that holds the managed partition's jobs (``job-submit-lua``).

``run`` exits 2 on a usage error (which its systemd unit does not restart) and 75 on a fault
(its lock, its log, its wake-up port, Slurm's answers: restarted); see
``hpcopt.slurm.service``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..cliargs import nonneg_int, positive_int, positive_seconds
from ..errors import HpcoptError, OptionError, one_line


def add_slurm_parser(sub, add_policy_flags, add_testbed_parser) -> argparse.ArgumentParser:
    """The ``slurm`` subcommand (called by ``hpcopt.cli.slurm``, which passes its function that adds
    one flag per policy option, as ``hpcopt simulate`` has them, and the testbed's parser, which
    sets ``testbed_run``)."""
    s = sub.add_parser("slurm", help="schedule a real Slurm cluster (an external scheduler), "
                                     "or start a local testbed")
    ss = s.add_subparsers(dest="slurm_command", required=True)

    r = ss.add_parser("run", help="each cycle: read Slurm, ask the policy, release the held "
                                  "jobs to start now (SLURM_CONF names the cluster)")
    r.add_argument("--policy", required=True, help="a registered policy (hpcopt policies)")
    r.add_argument("--partition", action="append", default=None, metavar="P",
                   help="the partition hpcopt schedules (default batch); several (given "
                        "again, or as a comma list) are each decided on their own, one log "
                        "line each, and must have disjoint nodes")
    r.add_argument("--interval", type=positive_seconds, default=5.0, metavar="S",
                   help="seconds between cycles (default 5)")
    r.add_argument("--once", action="store_true", help="one cycle, then exit")
    r.add_argument("--dry-run", action="store_true",
                   help="print each decision, release nothing")
    r.add_argument("--log", default=None, metavar="FILE.jsonl",
                   help="append one JSON line per cycle (time, counts, released ids, "
                        "reservation, decision and read times)")
    r.add_argument("--release-on-exit", action="store_true",
                   help="on SIGINT/SIGTERM release every held job to Slurm's own scheduler "
                        "(default: they stay held)")
    r.add_argument("--order", choices=["fcfs", "sjf", "wfp", "priority"], default=None,
                   help="base order; priority: the priority Slurm would give each held job "
                        "(its multifactor weights from scontrol show config, fairshare from "
                        "sshare, partition and QOS factors, nice, size, age), computed each "
                        "cycle (default: priority when the cluster's PriorityType is "
                        "priority/multifactor with a weight set and the policy's own order "
                        "is first come first served; else the policy's)")
    r.add_argument("--backfill", choices=["easy", "none"], default=None,
                   help="EASY backfilling (default: the policy's, mostly easy)")
    r.add_argument("--window", type=positive_int, default=None,
                   help="W, the queued jobs the policy sees (default: the policy's)")
    r.add_argument("--seed", type=int, default=None, help="the policy's seed")
    r.add_argument("--starvation", type=positive_int, default=None, metavar="K",
                   help="starvation bound: a job passed over K times is served first (the "
                        "counts live in the adapter: a restart starts them anew)")
    r.add_argument("--bb-license", default=None, metavar="NAME",
                   help="the Slurm license that is the burst buffer (Licenses=NAME:GB in "
                        "slurm.conf; sbatch -L NAME:GB): its total is the machine's burst "
                        "buffer, each job's count its request (bbsched, constrained-bb)")
    r.add_argument("--bb-pool", default=None, metavar="NAME",
                   help="the burst_buffer plugin's pool that is the burst buffer (scontrol "
                        "show burst; jobs ask with '#BB_LUA pool=NAME capacity=GB' in their "
                        "script): its total is the machine's, each job's capacity its request")
    r.add_argument("--ssd-gres", default=None, metavar="NAME",
                   help="the gres that is each node's local SSD in GB (Gres=NAME:GB; jobs ask "
                        "--gres=NAME:GB per node): the machine's SSD classes, each job's "
                        "count its request; released jobs are pinned to nodes that fit")
    r.add_argument("--ssd-feature", default=None, metavar="PREFIX",
                   help="where node features name each node's local SSD (Feature=PREFIX<GB>, "
                        "e.g. ssd256; jobs ask --constraint=ssd256, or several joined by |): "
                        "the machine's SSD classes, each job's smallest its request per node; "
                        "released jobs are pinned to nodes that fit")
    r.add_argument("--topology", nargs="?", const="auto", default=None, metavar="FILE",
                   help="place jobs on the network of Slurm's topology.conf (topology/tree; "
                        "default file: the one beside slurm.conf): the policy chooses the "
                        "nodes (tjap-window) and each job is pinned to them")
    r.add_argument("--wake-port", type=positive_int, default=None, metavar="P",
                   help="also cycle as soon as a job ends or is submitted: listen on UDP port "
                        "P of loopback for the EpilogSlurmctld script that `hpcopt slurm "
                        "epilog --wake-port P` prints and the submit script of `hpcopt slurm "
                        "job-submit-lua --wake-port P` (the interval stays the fallback)")
    r.add_argument("--lock", default=None, metavar="FILE",
                   help="the lock file of the partitions: one adapter per partition (default: "
                        "one per controller and partition in /run/hpcopt; adapters on "
                        "several hosts need a file on a file system they share)")
    r.add_argument("--allow-requeue", action="store_true",
                   help="release jobs requeueable as submitted (by default each is released "
                        "with Requeue=0: its owner cannot requeue it and have Slurm start it "
                        "again while no adapter runs); with this flag a job its owner "
                        "requeues while the adapter is stopped starts when its requeue delay "
                        "(about 2 minutes) passes, without hpcopt")
    r.add_argument("--no-requeue", action="store_true",
                   help="the default (jobs released with Requeue=0); kept for old command lines")
    r.add_argument("--timeout", type=positive_seconds, default=10.0, metavar="S",
                   help="seconds a Slurm command may take (default 10)")
    r.add_argument("--retries", type=nonneg_int, default=2,
                   help="further tries of a failed Slurm read (default 2)")
    add_policy_flags(r)

    r.add_argument("--forecast-file", default=None, metavar="FILE.json",
                   help="after each cycle, write every pending job's forecast start to FILE "
                        "(as `hpcopt slurm forecast --json`; readable by every user)")
    r.add_argument("--forecast-raw-bands", action="store_true",
                   help="with --forecast-file: keep each forecast's 10%%-90%% band as the "
                        "draws give it (default: widened by the errors of the adapter's "
                        "earlier forecasts of jobs that have started)")
    add_forecast_parser(ss, add_policy_flags)
    add_testbed_parser(ss)  # hpcopt.testbed.cli: `hpcopt slurm testbed start|stop`

    st = ss.add_parser("status", help="what the adapter is doing, from its log: last cycle, "
                                      "queue, reservation, recent releases, notes")
    st.add_argument("--log", required=True, metavar="FILE.jsonl", help="the adapter's --log")
    u = ss.add_parser("unit", help="print a systemd unit that runs `hpcopt slurm run` with the "
                                   "arguments after --")
    u.add_argument("--user", default="slurm",
                   help="the user it runs as (default slurm, Debian's SlurmUser; it must be "
                        "SlurmUser, root or a Slurm operator, and one of the submit script's "
                        "--admin users)")
    u.add_argument("--slurm-conf", default=None, metavar="FILE",
                   help="SLURM_CONF for the service (default: Slurm's own default)")
    u.add_argument("run_args", nargs=argparse.REMAINDER, metavar="-- RUN ARGS",
                   help="the arguments of `hpcopt slurm run`")
    s.set_defaults(run_parser=r)
    e = ss.add_parser("epilog", help="print the EpilogSlurmctld script that wakes the "
                                     "adapter as each job ends")
    e.add_argument("--wake-port", type=positive_int, required=True, metavar="P",
                   help="the adapter's --wake-port")
    j = ss.add_parser("job-submit-lua", help="print the job_submit.lua that holds every job "
                                             "of the partition for hpcopt")
    j.add_argument("--partition", action="append", default=None, metavar="P",
                   help="the managed partition (default batch); repeatable, or a comma list")
    j.add_argument("--admin", action="append", default=[], metavar="USER",
                   help="a user (name or uid) who, besides root, may release and change the "
                        "partition's jobs: give SlurmUser and the adapter's user; repeatable")
    j.add_argument("--wake-port", type=positive_int, default=None, metavar="P",
                   help="also wake `hpcopt slurm run --wake-port P` at each submission")
    return s


def add_forecast_parser(ss, add_policy_flags) -> None:
    """``hpcopt slurm forecast``: the pending jobs' forecast starts (``hpcopt.slurm.forecast``)."""
    f = ss.add_parser("forecast", help="when each pending job of the partition will start, "
                                       "under the adapter's policy (a table, or --json)")
    f.add_argument("--policy", default="fcfs", help="the adapter's policy (default fcfs)")
    f.add_argument("--partition", default="batch", help="the managed partition (default batch)")
    f.add_argument("--order", choices=["fcfs", "sjf", "wfp"], default=None,
                   help="the adapter's base order (default: the policy's)")
    f.add_argument("--backfill", choices=["easy", "none"], default=None,
                   help="the adapter's backfilling (default: the policy's)")
    f.add_argument("--window", type=positive_int, default=None,
                   help="the adapter's window W (default: the policy's)")
    f.add_argument("--seed", type=int, default=None, help="the policy's and the draws' seed")
    f.add_argument("--draws", type=positive_int, default=20,
                   help="runs forward: the start is their median, the band their 10%% and 90%% "
                        "quantiles (default 20)")
    f.add_argument("--history-days", type=positive_seconds, default=14.0, metavar="D",
                   help="days of accounting (sacct) the runtimes are predicted from (default 14)")
    f.add_argument("--json", action="store_true",
                   help='one JSON object: {"jobs": [{"id", "start", "p10", "p90", ...}]}')
    f.add_argument("--timeout", type=positive_seconds, default=10.0, metavar="S")
    f.add_argument("--retries", type=nonneg_int, default=2)
    add_policy_flags(f)


def cmd_slurm(args, policy_options: dict) -> int:
    """Run ``hpcopt slurm``; ``policy_options`` are the policy flags given (``{name: value}``)."""
    if args.slurm_command == "job-submit-lua":
        from .lua import admin_uids, job_submit_lua

        print(job_submit_lua(args.partition or ["batch"], admin_uids(args.admin),
                             args.wake_port), end="")
        return 0
    if args.slurm_command == "status":
        from .service import status_text

        print(status_text(args.log))
        return 0
    if args.slurm_command == "unit":
        return _unit(args)
    if args.slurm_command == "epilog":
        from .wake import epilog_script

        print(epilog_script(args.wake_port), end="")
        return 0
    if args.slurm_command == "testbed":
        return args.testbed_run(args)
    if args.slurm_command == "forecast":
        from .forecast import run_forecast

        return run_forecast(args, policy_options)
    return _run(args, policy_options)


def _unit(args) -> int:
    from .service import systemd_unit

    run_args = args.run_args[1:] if args.run_args[:1] == ["--"] else args.run_args
    if not run_args:
        raise OptionError("unit: give the arguments of `hpcopt slurm run` after --, e.g. "
                          "hpcopt slurm unit -- --policy fcfs --partition batch")
    try:
        args.run_parser.parse_args(run_args)
    except SystemExit:
        raise OptionError("unit: the arguments after -- are not those of `hpcopt slurm run` "
                          "(see above)") from None
    hpcopt = str(Path(sys.executable).with_name("hpcopt"))
    print(systemd_unit(run_args, hpcopt, args.slurm_conf, args.user), end="")
    return 0


def _run(args, options: dict) -> int:
    from ..policies import build_policy
    from .adapter import Adapter, Settings, run_adapters
    from .forecast import ForecastingAdapter
    from .lua import partition_names
    from .state import Slurm

    conf = os.environ.get("SLURM_CONF")
    if conf and not os.path.isfile(conf):
        raise OptionError(f"SLURM_CONF={conf}: no such file (Slurm's tools read the cluster's "
                          "configuration from it)")
    partitions = partition_names(args.partition or ["batch"])
    if args.forecast_raw_bands and args.forecast_file is None:
        raise OptionError("--forecast-raw-bands says how --forecast-file FILE.json writes the "
                          "bands: give --forecast-file")
    if args.allow_requeue and args.no_requeue:
        raise OptionError("--allow-requeue and --no-requeue contradict each other (jobs are "
                          "released with Requeue=0 unless --allow-requeue is given)")
    if len(partitions) > 1 and (args.bb_license or args.bb_pool or args.topology is not None):
        raise OptionError("--bb-license, --bb-pool and --topology schedule one partition: give "
                          f"one --partition (got {', '.join(partitions)})")
    topology = None
    if args.topology is not None:
        from .topology import read_topology

        where = args.topology if args.topology != "auto" else \
            Path(conf or "/etc/slurm/slurm.conf").parent / "topology.conf"
        topology = read_topology(where)
    slurm = Slurm(timeout=args.timeout, retries=args.retries, env=dict(os.environ))
    try:
        log = open(Path(args.log), "a", encoding="utf-8") if args.log else None  # noqa: SIM115
    except OSError as exc:
        return _fault(f"--log {args.log}: {exc.strerror}")
    try:
        adapters = []
        for p in partitions:
            policy = build_policy(args.policy, **options)  # each partition its own
            policy.reset(args.seed)
            lock = None if args.dry_run else (args.lock or _default_lock(p, conf))
            say = None if len(partitions) == 1 else \
                (lambda s, p=p: print(f"partition {p}: {s}", flush=True))
            settings = Settings(p, args.bb_license, args.bb_pool, args.ssd_gres,
                                args.ssd_feature, topology, args.dry_run, lock,
                                allow_requeue=args.allow_requeue)
            kind, more = (Adapter, {}) if args.forecast_file is None else \
                (ForecastingAdapter, {"forecast_file": args.forecast_file,
                                      "raw_bands": args.forecast_raw_bands})
            adapters.append(kind(
                policy, settings, slurm=slurm, log=log, say=say, order=args.order,
                backfill=args.backfill, window=args.window,
                starvation_bound=args.starvation, site_rules=True, **more))
        return run_adapters(adapters, args.interval, once=args.once,
                            release_on_exit=args.release_on_exit, wake_port=args.wake_port)
    except OptionError:
        raise  # a usage error: exit status 2, not restarted
    except (HpcoptError, OSError) as exc:  # a fault (lock, log, port, Slurm's answers)
        return _fault(one_line(exc))
    finally:
        if log is not None:
            try:
                log.close()
            except OSError:
                pass


def _default_lock(partition: str, conf: str | None) -> Path:
    """The partition's lock in the root-only lock directory, made if missing
    (``hpcopt.slurm.lock``)."""
    from .lock import LOCK_DIR, default_lock_path, ensure_lock_dir

    ensure_lock_dir(LOCK_DIR)
    return default_lock_path(partition, conf, LOCK_DIR)


def _fault(message: str) -> int:
    """A fault of ``hpcopt slurm run`` (not a usage error): one line, exit status
    ``EXIT_FAULT``, which the unit restarts."""
    from .service import EXIT_FAULT

    print(f"hpcopt: error: {message}", file=sys.stderr)
    return EXIT_FAULT
