"""``hpcopt workload osdec``: an OSDEC instance file from the Azure v1 derived files
(the recipe: ``hpcopt.workloads.osdec``)."""

from __future__ import annotations

import sys

from ..cliargs import nonneg_int, out_path, positive_int, unit_float


def register(sub) -> None:
    wl = sub.add_parser("workload", help="generate workload instance files from trace data")
    wsub = wl.add_subparsers(dest="family", required=True)
    d = wsub.add_parser("osdec", aliases=["deferrable"],
                        help="OSDEC deferrable cloud jobs from the Azure v1 derived files "
                             "(capacity left by on-demand VMs)")
    d.add_argument("azure_file", nargs="?", default=None, metavar="AZURE_FILE",
                   help="v1.train.txt.gz, v1.dev.txt.gz or v1.dev.c2100000.txt.gz (default: "
                        "cloud/azure_v1_vmtable_derived/v1.dev.txt.gz in the data directory)")
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
    d.add_argument("--out", type=out_path, required=True, metavar="W.json",
                   help="instance file to write")
    d.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    d.set_defaults(run=run)


def run(args) -> int:
    from ..workloads.osdec import deferrable_workload, loose_warning, save_workload

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


