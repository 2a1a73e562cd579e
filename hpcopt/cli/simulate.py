"""``hpcopt simulate``: a workload trace (or an osdec instance) under a policy."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

from ..cliargs import out_path, positive_int, positive_seconds
from ..errors import HpcoptError
from .common import add_policy_flags, add_slurm_trace_flags, policy_options, print_summary


def register(sub) -> None:
    m = sub.add_parser("simulate", help="simulate a workload trace under a policy")
    m.add_argument("trace", help="SWF (.swf, .swf.gz), CSV/JSON job table or Batsim workload "
                                 "JSON, or a data set's name (kth-sp2; hpcopt data list) or "
                                 "path in the data directory; or an osdec instance file or "
                                 "bundled name (osdec/tiny_4jobs), run online slot by slot "
                                 "(fifo, sjf, tetris, rolling-mip)")
    m.add_argument("--format", default=None,
                   choices=["swf", "csv", "json", "batsim", "sacct", "jobcomp"],
                   help="trace format (default: from the suffix; a .json with nb_res, jobs and "
                        "profiles is Batsim)")
    add_slurm_trace_flags(m)
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
                        "buffer; sizes from the Kopanski KTH workload in the data directory), "
                        "S5-S7 (S2 + local SSD), seeded by --seed (default 0); the system "
                        "gets 5 GB of burst buffer per node unless --bb")
    m.add_argument("--policy", default="fcfs", help="policy name (see 'hpcopt policies')")
    m.add_argument("--order", choices=["fcfs", "sjf", "wfp", "priority"], default=None,
                   help="base order; priority: Slurm's multifactor priority with the weights "
                        "of --slurm-conf FILE (age, job size, fairshare with the trace's "
                        "groups as accounts and its users under them, partition)")
    m.add_argument("--limits", action="append", default=None, metavar="FILE",
                   help="the site's association and QOS limits, repeatable: saved output "
                        "of sacctmgr -P show assoc (the tree: format=account,user,"
                        "parentname,maxjobs,grpjobs,grptres,maxwall,maxsubmitjobs,"
                        "grpsubmitjobs,maxtresminsperjob,grptresmins,grptresrunmins), of "
                        "sacctmgr -P show qos, or of sshare -a -P -o account,user,"
                        "grptresraw (usage for GrpTRESMins), told apart by their headers; "
                        "the trace's groups are the accounts and its user numbers the users; "
                        "a job a limit blocks waits, a submission over MaxSubmitJobs is "
                        "refused (counted as refused in the summary)")
    m.add_argument("--reservations", default=None, metavar="FILE",
                   help="advance reservations and maintenance windows: a CSV with columns "
                        "start,end,nodes and optional users,accounts,name,known (seconds on "
                        "the trace's clock; users are the trace's user numbers, accounts its "
                        "groups), or a JSON list of such objects; their nodes are kept from "
                        "every other job")
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
    m.add_argument("--out", type=out_path, default=None,
                   help="directory for jobs.csv and summary.json")
    m.add_argument("--events", type=out_path, default=None, metavar="FILE.jsonl",
                   help="write one JSON line per driver event: submit, start (with how the "
                        "job started: ready, reserved, backfilled), reserve, complete, drop")
    m.add_argument("--timeline", type=out_path, default=None, metavar="FILE.csv",
                   help="write the queue length, running jobs, busy nodes and utilization "
                        "after each submit, start and end (time in seconds); hpcopt plot "
                        "timeline draws it")
    m.add_argument("--forecast-every", type=positive_seconds, default=None, metavar="S",
                   help="every S seconds of the run, forecast each waiting job's start (the "
                        "same driver and policy run forward from that moment, runtimes drawn "
                        "from the jobs finished so far; no later submissions): "
                        "OUT/forecasts.csv, each forecast with the real start (needs --out)")
    m.add_argument("--forecast-draws", type=positive_int, default=20, metavar="N",
                   help="runs per forecast: the start is their median, the band their 10%% "
                        "and 90%% quantiles (default 20)")
    m.add_argument("--forecast-stream", type=positive_seconds, default=None, metavar="S",
                   help="forecasts model later submissions: the jobs submitted in the S "
                        "seconds before come again, three times over (default: none)")
    m.add_argument("--forecast-raw-bands", action="store_true",
                   help="keep each forecast's 10%%-90%% band as the draws give it (default: "
                        "widened by the errors of the earlier forecasts whose jobs had started)")
    m.add_argument("--json", action="store_true",
                   help="print the summary and settings as one JSON object on standard output "
                        "(the other lines go to standard error)")
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
    m.add_argument("--against-slurm", default=None, metavar="SLURM_CONF",
                   help="also replay the trace under --policy slurm configured from this "
                        "slurm.conf (with the --scheduler-parameters, --launch-latency, "
                        "--slurm-partition, --slurm-version given) and print the differences "
                        "per metric, per "
                        "account (where the trace names accounts, as sacct's Account) and "
                        "per user (OUT/slurm gets its files)")
    add_policy_flags(m)
    m.set_defaults(run=run)


def _emit_json(res, files: dict) -> None:
    from ..sim.metrics import units_of

    doc = {"summary": res.summary, "units": units_of(res.summary), "settings": res.settings,
           "files": {k: str(v) for k, v in files.items() if v is not None}}
    from ..jsonsafe import json_safe  # (as in run)

    print(json.dumps(json_safe(doc), default=str))


def run_settings(args, options: dict):
    """The ``RunSettings`` the command line describes (``hpcopt.run_settings``)."""
    from dataclasses import fields  # (as the other imports of a subcommand's code)

    from ..run_settings import RunSettings  # (as in run: these load the trace readers)
    from ..scenario import ScenarioSettings
    from ..sim.settings import DriverOptions

    # the flags named as ScenarioSettings' fields, and the two that are not (--format, --seed)
    flags = {f.name: getattr(args, f.name) for f in fields(ScenarioSettings)
             if hasattr(args, f.name)}
    return RunSettings(
        scenario=ScenarioSettings(**flags, fmt=args.format,
                                  workload_seed=0 if args.seed is None else args.seed),
        policy=args.policy, policy_options=options,
        driver=DriverOptions(order=args.order, backfill=args.backfill, window=args.window,
                             starvation_bound=args.starvation,
                             progress=not args.no_progress,
                             limits=_site_limits(args.limits),
                             reservations=_reservations(args.reservations)),
        seed=args.seed, warmup=args.warmup, cooldown=args.cooldown)


def run(args) -> int:
    # every command module loads when ``hpcopt`` starts: the driver, the policies and the
    # readers load when this command runs
    from ..api import simulate_run
    from ..osdec import is_osdec_file
    from ..policies import check_policy
    from ..scenario import check_workload_name

    options = policy_options(args)
    if args.order == "priority":
        args.order = _site_priority(args, options)
    slurm_side = None
    if args.against_slurm:  # Slurm's options go to the Slurm side (hpcopt.site_compare)
        from ..site_compare import SLURM_OPTIONS

        slurm_side = {k: options[k] for k in SLURM_OPTIONS if k in options}
        if args.policy != "slurm":
            options = {k: v for k, v in options.items() if k not in SLURM_OPTIONS}
        slurm_side["slurm_conf"] = args.against_slurm
        check_policy("slurm", **slurm_side)
    check_policy(args.policy, **options)  # a typo is reported before any input is read
    if args.events and not args.events.endswith(".jsonl"):
        raise HpcoptError(f"--events {args.events}: expected a file name ending in .jsonl "
                          "(one JSON object per line)")
    info = sys.stderr if args.json else sys.stdout
    if not Path(args.trace).exists():  # a bundled osdec instance by name (osdec/tiny_4jobs)
        from ..instances import bundled_instance

        args.trace = str(bundled_instance(args.trace) or args.trace)
    if args.forecast_every is not None and not args.out:
        raise HpcoptError("--forecast-every writes OUT/forecasts.csv: give --out DIR")
    if is_osdec_file(args.trace):  # the one place a file is told apart: a cloud day
        if args.timeline:
            raise HpcoptError("--timeline: an osdec day's load by slot is hpcopt plot osdec "
                              "DAY.json DIR")
        if args.forecast_every is not None:
            raise HpcoptError("--forecast-every forecasts a trace's waiting jobs; an osdec "
                              "instance (a cloud day) has no forecasts")
        return _simulate_osdec(args, options, info)
    if args.workload:
        check_workload_name(args.workload, "--workload")
        if args.topology:
            raise HpcoptError("--workload generates burst-buffer/SSD workloads; it does not "
                              "apply with --topology")
    run = run_settings(args, options)
    scenario = run.scenario.build(args.trace)
    for line in scenario.notes:
        print(line, file=info)
    res = simulate_run(scenario, run, events=args.events, forecast_every=args.forecast_every,
                       forecast_draws=args.forecast_draws,
                       forecast_stream=args.forecast_stream,
                       forecast_raw_bands=args.forecast_raw_bands)
    print_summary({f"{args.policy}": res.summary}, file=info)
    opts = res.settings.get("policy_options") or {}
    if opts:
        print(f"policy {args.policy}: " + ", ".join(f"{k}={v!r}" for k, v in opts.items()
                                                     if k != "seed"), file=info)
    if slurm_side is not None:
        _against_slurm(args, run, scenario, res, slurm_side, info)
    return _written(args, res, info)


def _site_limits(paths: list[str] | None):
    """The limits of the ``--limits FILE`` texts together (``None`` without one)."""
    if not paths:
        return None
    from ..slurm.limits_text import LimitsTextError, merged, parse_limits_dump  # (as in run)

    parts = []
    for path in paths:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise HpcoptError(f"--limits {path}: cannot read: {exc.strerror or exc}") from None
        try:
            parts.append(parse_limits_dump(text, f"--limits {path}"))
        except LimitsTextError as exc:
            raise HpcoptError(str(exc)) from None
    return merged(parts)


def _reservations(path: str | None):
    """The reservations of ``--reservations FILE`` (none without one)."""
    if path is None:
        return None
    from ..sim.reservations import ReservationError, read_reservations  # (as in run)

    try:
        return read_reservations(path)
    except ReservationError as exc:
        raise HpcoptError(f"--reservations {exc}") from None


def _site_priority(args, options: dict):
    """The order ``--order priority`` names: the weights of ``--slurm-conf`` (which goes to
    the policy only where it is ``slurm``), else Slurm's defaults."""
    from ..sim.priority import SitePriority  # (as in run)

    conf = options.get("slurm_conf") if args.policy == "slurm" else options.pop("slurm_conf",
                                                                                 None)
    return SitePriority.from_conf(conf) if conf else "priority"


def _against_slurm(args, run, scenario, res, options: dict, info) -> None:
    """The same scenario under ``--policy slurm`` and the differences (``--against-slurm``)."""
    from ..api import simulate_run
    from ..site_compare import format_differences, metric_differences, owner_differences

    slurm = simulate_run(scenario, replace(run, policy="slurm", policy_options=options))
    owners = {"user": {job.id: job.user for job in scenario.jobs}}
    if "account" in scenario.attributes:  # sacct's Account: the site's accounts first
        owners = {"account": scenario.attributes["account"], **owners}
    print(f"\nagainst Slurm alone ({options['slurm_conf']}): {args.policy} - slurm", file=info)
    print(format_differences(metric_differences(res.summary, slurm.summary),
                             {label: owner_differences(res.jobs, slurm.jobs, who, label)
                              for label, who in owners.items()}, args.policy), file=info)
    if args.out:
        jobs, summary = slurm.write(Path(args.out) / "slurm")
        print(f"wrote {jobs} and {summary}", file=info)


def _written(args, res, info) -> int:
    files = {"events": args.events}
    if args.out:
        files["jobs"], files["summary"] = res.write(args.out)
        print(f"wrote {files['jobs']} and {files['summary']}", file=info)
        if res.forecasts is not None:
            files["forecasts"] = Path(args.out) / "forecasts.csv"
            print(f"wrote {files['forecasts']} ({len(res.forecasts)} forecasts)", file=info)
    if getattr(args, "timeline", None):
        files["timeline"] = res.write_timeline(args.timeline)
        print(f"wrote {files['timeline']}", file=info)
    if args.events:
        print(f"wrote {args.events}", file=info)
    if args.json:
        _emit_json(res, files)
    return 0


def _simulate_osdec(args, options: dict, info) -> int:
    """An osdec instance file: a cloud day, online, slot by slot (hpcopt.osdec)."""
    from ..osdec import simulate_osdec  # (as in run)

    res = simulate_osdec(args.trace, args.policy, seed=args.seed,
                         offline_bound=args.offline_bound,
                         offline_backend=args.offline_backend,
                         offline_time_limit=args.offline_time_limit,
                         progress=not args.no_progress, events=args.events, **options)
    s = res.summary
    print(f"{Path(args.trace).name}: {s['jobs']} deferrable jobs on {s['slots']} slots, "
          f"policy {args.policy}", file=info)
    keys = ["total_reward", "revenue", "delay_penalty", "violation_penalty", "started",
            "dropped", "utilization"] + (["gap_to_offline"] if "gap_to_offline" in s else [])
    from ..sim.metrics import UNITS

    units = {k: " " + UNITS[k] for k in keys if k in UNITS}
    print("  " + ", ".join((f"{k}={s[k]:.4g}" if isinstance(s[k], float) else f"{k}={s[k]}")
                           + units.get(k, "") for k in keys), file=info)
    return _written(args, res, info)
