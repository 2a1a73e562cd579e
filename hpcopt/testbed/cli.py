"""``hpcopt slurm testbed``: its parser and what it runs (``hpcopt.cli.slurm`` puts the
parser under ``hpcopt slurm``)."""

from __future__ import annotations

from ..cliargs import positive_int


def add_testbed_parser(verbs) -> None:
    """``testbed start|stop`` under the subparsers ``verbs`` of ``hpcopt slurm``."""
    t = verbs.add_parser("testbed", help="an emulated N-node Slurm cluster on this machine "
                                      "(root; packages slurm-wlm and munge)")
    tt = t.add_subparsers(dest="testbed_command", required=True)
    ts = tt.add_parser("start", help="start it in DIR and print the SLURM_CONF to use")
    ts.add_argument("dir", help="directory for its config, keys, state and logs")
    ts.add_argument("--nodes", type=positive_int, default=8, help="nodes (default 8)")
    ts.add_argument("--cpus", type=positive_int, default=4, help="CPUs per node (default 4)")
    ts.add_argument("--port", type=positive_int, default=None,
                    help="slurmctld port; the nodes take the next ones, then slurmdbd and "
                         "MariaDB (default: a free block from a random port in 16900-29999)")
    ts.add_argument("--scheduler", choices=["builtin", "backfill"], default="builtin",
                    help="Slurm's own scheduler for released jobs (default builtin: FIFO)")
    ts.add_argument("--no-hold", action="store_true",
                    help="without the job_submit.lua: jobs are not held at submission")
    ts.add_argument("--slurm", choices=["22.05", "24.11"], default="22.05",
                    help="Slurm version: 22.05 the host's packages (default), 24.11 Debian "
                         "13's in a chroot (built on first use: debootstrap, network)")
    ts.add_argument("--chroot-cache", default=None, metavar="DIR",
                    help="where the 24.11 chroot is built and kept (default "
                         "/var/cache/hpcopt/slurm-24.11; reused when present)")
    ts.add_argument("--accounting", action="store_true",
                    help="also start slurmdbd with a MariaDB of its own, so that sacct works "
                         "(22.05: packages slurmdbd and mariadb-server; 24.11: installed in "
                         "the chroot)")
    ts.add_argument("--licenses", default=None, metavar="NAME:N[,NAME:N...]",
                    help="Slurm licenses, e.g. bb:100 (slurm.conf Licenses=; jobs ask with "
                         "sbatch -L bb:60)")
    ts.add_argument("--bb-pool", default=None, metavar="NAME:SIZE",
                    help="a burst buffer: the burst_buffer/lua plugin with one pool NAME of "
                         "SIZE units (jobs of ordinary users ask with '#BB_LUA pool=NAME "
                         "capacity=N' in their script; Slurm refuses root's)")
    ts.add_argument("--ssd", default=None, metavar="GB:NODES[,GB:NODES...]",
                    help="local SSD classes in node order, e.g. 128:4,256:4: each node a gres "
                         "ssd counting its GB (jobs ask --gres=ssd:GB per node)")
    ts.add_argument("--ssd-feature", default=None, metavar="PREFIX",
                    help="with --ssd: each node also gets the feature PREFIX<GB>, e.g. ssd128 "
                         "(jobs ask --constraint=ssd256)")
    ts.add_argument("--switch-size", type=positive_int, default=None, metavar="K",
                    help="a fat tree (topology/tree): ceil(nodes/K) leaf switches s1, s2, ... "
                         "of K nodes each, in node order, under one root switch s0")
    ts.add_argument("--pod-size", type=positive_int, default=None, metavar="P",
                    help="with --switch-size: three levels, pod switches p1, p2, ... of P "
                         "leaf switches each under s0 (the nodes must fill every pod)")
    ts.add_argument("--wake-port", type=positive_int, default=None, metavar="P",
                    help="install the EpilogSlurmctld script and the submit script that wake "
                         "`hpcopt slurm run --wake-port P` as each job ends or is submitted")
    ts.add_argument("--split", type=positive_int, default=None, metavar="K",
                    help="batch gets the first K nodes and a second managed partition batch2 "
                         "the others")
    ts.add_argument("--shared", action="store_true",
                    help="a third partition 'shared' on the same nodes whose jobs share nodes "
                         "core by core (OverSubscribe=NO)")
    ts.add_argument("--scheduler-parameters", default=None, metavar="KEY=VALUE[,...]",
                    help="over the testbed's own SchedulerParameters, e.g. "
                         "batch_sched_delay=0,sched_min_interval=0 (jobs start within the "
                         "second they can)")
    ts.add_argument("--min-job-age", type=positive_int, default=600, metavar="S",
                    help="seconds a finished job stays in squeue (MinJobAge; default 600)")
    ts.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="an extra slurm.conf line (repeatable), replacing the testbed's own "
                         "line of that key, e.g. --conf PriorityType=priority/multifactor "
                         "--conf PriorityWeightFairshare=10000 --conf "
                         "AccountingStorageEnforce=associations,limits")
    tp = tt.add_parser("stop", help="stop the testbed in DIR (by its pid files)")
    tp.add_argument("dir")
    t.set_defaults(testbed_run=cmd_testbed)


def cmd_testbed(args) -> int:
    """Run ``hpcopt slurm testbed start|stop``."""
    from .. import testbed

    if args.testbed_command == "stop":
        testbed.stop(args.dir)
        print(f"stopped the testbed in {args.dir}")
        return 0
    conf = testbed.start(args.dir, args.nodes, cpus=args.cpus, port=args.port,
                         scheduler=args.scheduler, hold=not args.no_hold, slurm=args.slurm,
                         chroot_cache=args.chroot_cache, accounting=args.accounting,
                         licenses=args.licenses, switch_size=args.switch_size,
                         pod_size=args.pod_size, bb_pool=args.bb_pool, ssd=args.ssd,
                         ssd_feature=args.ssd_feature,
                         shared=args.shared, wake_port=args.wake_port, split=args.split,
                         scheduler_parameters=args.scheduler_parameters,
                         min_job_age=args.min_job_age, conf_extra=tuple(args.conf),
                         say=print)
    print(f"{args.nodes} nodes up; use it with:\n"
          f"export PATH={conf.parent / 'bin'}:$PATH SLURM_CONF={conf}")
    return 0
