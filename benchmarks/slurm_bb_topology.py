"""BBSched's burst buffer and TJAP's placement carried out by a real Slurm (the testbed).

Part ``bb``: a slice of the KTH burst-buffer workload (Kopanski's Batsim JSON: KTH-SP2 jobs
with modelled burst-buffer requests, 96 nodes, 480 GB) scaled to the testbed as
``slurm_validation.scaled_slice`` scales a trace (sizes, sleeps, limits, arrivals), each job's
burst buffer to a count of the testbed's ``bb`` license (``--bb-total``, 100): its share of
the machine's burst buffer per node, times its scaled share of the nodes (so the burst
buffer is as tight, against the nodes, as in the workload), at least 1.  The jobs are
submitted with ``-L bb:N`` at their scaled times to two fresh testbeds
(``--licenses bb:100``), scheduled by ``hpcopt slurm run --bb-license bb --policy bbsched``
and ``--policy fcfs`` (EASY).  Every second the run's ``squeue`` is read for released jobs
that wait with reason Licenses (none may).  Each run is compared with hpcopt's simulation of
the same jobs (``slurm_validation.simulate_same`` with the system's burst buffer: Slurm's
submit times, the real run times, the limits as walltimes; no latency, and the latency
measured on the other run of the same jobs as a constant: out of sample): mean wait, mean
bounded slowdown (tau 10 s), burst-buffer and node utilization (used capacity-seconds over
capacity x (last end - first submit)).

Part ``topo``: a slice of KTH-SP2 (SWF) scaled to a ``--nodes`` testbed (32) with
``--switch-size`` leaves (4 nodes) under ``--pod-size`` pods (2 leaves: four pods, so the
paper's pod level occurs; ``topology/tree``), run (a) by ``hpcopt slurm run --topology
--policy tjap-window`` (each job pinned to the nodes it chose) and (b) by Slurm alone
(``sched/backfill``, ``topology/tree``, no hold: Slurm's own topology-aware selection).  The
communication-hop cost (``hpcopt.topology.FatTree.cost``, the TJAP paper's model, on the node
ids ``read_topology`` gives the names of jobcomp's NodeList) of every job as Slurm ran it:
mean and total, how many jobs have the least cost a job of their size can have on the tree
(its nodes filled leaf by leaf), jobs of at most a leaf on one leaf, of at most a pod in one
pod, jobs across pods, mean wait and bounded
slowdown; for (a) also whether each job ran on the nodes the adapter chose (its log's
``placed``, against jobcomp's NodeList) and the adapter's failed cycles with their errors.

    python benchmarks/slurm_bb_topology.py bb --out benchmarks/results/slurm/bb      (root)
    python benchmarks/slurm_bb_topology.py topo --out benchmarks/results/slurm/topology
    python benchmarks/slurm_bb_topology.py bb --analyze-only --out ...           (no Slurm)
    python benchmarks/slurm_bb_topology.py report benchmarks/results/slurm/bb ...

Writes ``OUT/jobs.json``, ``OUT/run_<kind>.json`` (Slurm's times, node lists, the adapter's
cycles, the squeue reasons seen), ``OUT/summary.json`` and, for ``topo``, ``OUT/jobs_<kind>.csv``
(one row per job: nodes, node list, cost).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import slurm_validation as sv  # noqa: E402  (its scaling, submission, jobcomp and simulation)

BB_TRACE = sv.BB_TRACE
bb_slice = sv.bb_slice


class Watch:
    """A thread that calls ``sample`` every ``period`` s while the ``with`` block runs."""

    def __init__(self, period: float):
        self.period = period
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        while not self.stop.wait(self.period):
            self.sample()

    def sample(self):
        raise NotImplementedError

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(15)


class ReasonWatch(Watch):
    """Every ``period`` s, the pending jobs of each run's testbed that are not held, with
    Slurm's reason (``squeue``): {kind: {name: [reasons]}}."""

    def __init__(self, workdir: Path, kinds, period: float = 1.0):
        super().__init__(period)
        self.workdir, self.kinds = workdir, list(kinds)
        self.seen = {k: {} for k in self.kinds}

    def sample(self):
        for kind in self.kinds:
            conf = self.workdir / kind / "slurm.conf"
            if not conf.exists():
                continue
            try:
                out = subprocess.run(["squeue", "-h", "-t", "PD", "-o", "%j|%r"],
                                     env={**os.environ, "SLURM_CONF": str(conf)},
                                     capture_output=True, text=True, timeout=10).stdout
            except (subprocess.SubprocessError, OSError):
                continue
            for line in out.splitlines():
                name, _, reason = line.partition("|")
                if reason and reason not in ("JobHeldUser", "JobHeldAdmin"):
                    reasons = self.seen[kind].setdefault(name, [])
                    if reason not in reasons:
                        reasons.append(reason)


def node_lists(testbed_dir: Path) -> dict[str, str]:
    """Each finished job's NodeList, by name, from the testbed's jobcomp log."""
    from hpcopt.traces.slurm import jobcomp_fields

    log = testbed_dir / "log" / "jobcomp.txt"
    return {rec["Name"]: rec.get("NodeList", "") for rec in
            (jobcomp_fields(line) for line in log.read_text().splitlines()) if "Name" in rec}


KEEP = ("time", "cycle", "ok", "error", "pending", "free_nodes", "free_bb", "released",
        "released_nodes", "released_bb", "reserved", "placed", "waiting_start", "changed")


def compact(run: dict) -> dict:
    """The run with its cycle log cut to what the analysis reads: the cycle counts, and the
    cycles that released a job or failed (the ``KEEP`` fields), not the releasing events."""
    if "cycles_total" in run:
        return run
    cycles = [c for c in run["cycles"] if "event" not in c]
    run["cycles_total"] = len(cycles)
    run["cycles_failed"] = sum(not c.get("ok") for c in cycles)
    run["cycles"] = [{k: c[k] for k in KEEP if k in c} for c in cycles
                     if c.get("released") or not c.get("ok")]
    return run


def run_all(jobs, args, out: Path, testbed_opts: dict, adapter_args: tuple) -> dict:
    """The runs of ``args.runs`` at the same time (``slurm_validation.replay_all``), the
    squeue reasons and node lists of each; saved as ``run_<kind>.json``."""
    work = Path(tempfile.mkdtemp(prefix="hpcopt-slurm-bbtopo-"))  # kept: each testbed's logs
    print(f"testbeds in {work}", flush=True)
    args.parallel = True
    with ReasonWatch(work, args.runs) as watch:
        runs = sv.replay_all(jobs, args, work, testbed_opts, adapter_args)
    for kind, run in runs.items():
        run["reasons"] = watch.seen[kind]
        run["nodelist"] = node_lists(work / kind)
        run["jobid"] = {jid: rec["name"] for jid, rec in
                        sv.completed_jobs(work / kind, by="JobId").items()}
        run["testbed"] = str(work / kind)
        compact(run)
        (out / f"run_{kind}.json").write_text(json.dumps(run))
    return runs


def utilization(real: dict, amount: dict[str, float], capacity: float,
                start: dict[str, float] | None = None) -> float:
    """Used capacity-seconds over capacity x (last end - first submit); ``start`` replaces
    the real starts (a simulation: the same run times)."""
    t0 = min(s for s, _, _ in real.values())
    used, last = 0.0, t0
    for n, (_, st, e) in real.items():
        s = st if start is None else start[n]
        used += amount[n] * (e - st)
        last = max(last, s + (e - st))
    return used / (capacity * (last - t0))


def slice_and_runs(args, out: Path, make_slice, testbed_opts: dict, adapter_args: tuple):
    """The part's jobs and runs: read back from ``out`` (``--analyze-only``), or the slice
    ``make_slice(args)`` made, saved and run on fresh testbeds (``run_all``)."""
    out.mkdir(parents=True, exist_ok=True)
    if args.analyze_only:
        jobs = json.loads((out / "jobs.json").read_text())
        return jobs, {k: json.loads((out / f"run_{k}.json").read_text()) for k in args.runs}
    jobs = make_slice(args)
    (out / "jobs.json").write_text(json.dumps(jobs, indent=1))
    bb = (f", bb {min(j['bb'] for j in jobs)}-{max(j['bb'] for j in jobs)} of {args.bb_total}"
          if "bb" in jobs[0] else "")
    print(f"{len(jobs)} jobs from record {args.first}: nodes "
          f"{min(j['nodes'] for j in jobs)}-{max(j['nodes'] for j in jobs)}{bb}, arrivals over "
          f"{jobs[-1]['at']:.0f} s", flush=True)
    return jobs, run_all(jobs, args, out, testbed_opts, adapter_args)


def cmd_bb(args) -> None:
    out = Path(args.out)
    jobs, runs = slice_and_runs(args, out, bb_slice, {"licenses": f"bb:{args.bb_total}"},
                                ("--bb-license", "bb"))
    by_name = {j["name"]: j for j in jobs}
    bb = {n: float(j["bb"]) for n, j in by_name.items()}
    nodes = {n: float(j["nodes"]) for n, j in by_name.items()}
    rows = []
    # the latency a run is simulated with is measured on the other runs of the same jobs,
    # never on the run it predicts (out of sample)
    gaps = {k: sv.latency_kept({n: tuple(v) for n, v in runs[k]["real"].items()})
            for k in args.runs}
    for kind in args.runs:
        run = runs[kind]
        real = {k: tuple(v) for k, v in run["real"].items()}
        lic_wait = sorted(n for n, rs in run["reasons"].items() if "Licenses" in rs)
        others = np.concatenate([gaps[k] for k in args.runs if k != kind] or [np.zeros(0)])
        measured = round(float(others.mean()), 2) if len(others) else 0.0
        ok = [c for c in compact(run)["cycles"] if c.get("ok")]
        for model, delay in (("none", 0.0), ("measured", measured)):
            sim = sv.simulate_same(jobs, real, kind, args.nodes, delay, bb=float(args.bb_total))
            cmp = sv.compare(real, sim)
            row = dict(run=f"hpcopt {kind}", model=model, launch_delay=delay,
                       wall_s=round(run["wall"], 1), cycles=run["cycles_total"],
                       failed_cycles=run["cycles_failed"],
                       bb_over_free=sum(c["released_bb"] > c["free_bb"] + 1e-9 for c in ok),
                       nodes_over_free=sum(c["released_nodes"] > c["free_nodes"] for c in ok),
                       licenses_waited=len(lic_wait), licenses_waited_jobs=lic_wait,
                       other_reasons=sorted({r for rs in run["reasons"].values() for r in rs}),
                       **{k: cmp[k] for k in ("jobs", "tau", "wait_real", "wait_sim",
                                              "wait_dev_pct", "bsld_real", "bsld_sim",
                                              "bsld_dev_pct")},
                       bb_util_real=round(utilization(real, bb, args.bb_total), 4),
                       bb_util_sim=round(utilization(real, bb, args.bb_total, sim), 4),
                       node_util_real=round(utilization(real, nodes, args.nodes), 4),
                       node_util_sim=round(utilization(real, nodes, args.nodes, sim), 4))
            rows.append(row)
            print(json.dumps(row), flush=True)
    (out / "summary.json").write_text(json.dumps(rows, indent=1))


def cmd_topo(args) -> None:
    from hpcopt.slurm.topology import read_topology
    from hpcopt.testbed import topology_conf
    from hpcopt.topology import PAPER_COST

    out = Path(args.out)
    shape = {"switch_size": args.switch_size, "pod_size": args.pod_size}
    jobs, runs = slice_and_runs(args, out, sv.scaled_slice, shape,
                                ("--topology", "--tau", str(args.tau)))
    conf = out / "topology.conf"  # the testbed's own file (the same for every run)
    conf.write_text(topology_conf(args.nodes, args.switch_size, args.pod_size))
    topo = read_topology(conf)
    tree = topo.tree
    assert tree.cost_model == PAPER_COST
    rows = []
    for kind in args.runs:
        run = runs[kind]
        real = {k: tuple(v) for k, v in run["real"].items()}
        compact(run)
        placed = {}  # Slurm job id -> the nodes the adapter pinned it to (its last release)
        for c in run["cycles"]:
            for jid, nl in (c.get("placed") or {}).items():
                placed[str(jid)] = nl
        costs, one_leaf, per_job, pods = [], 0, [], []
        for name, (sub, st, _end) in sorted(real.items(), key=lambda kv: kv[1][0]):
            ids = topo.ids(run["nodelist"][name])
            cost = tree.cost(ids)
            costs.append(cost)
            leaves = len({int(tree.leaf[i]) for i in ids})
            one_leaf += leaves == 1
            pods.append(len({int(tree.pod[i]) for i in ids}))
            per_job.append((name, len(ids), run["nodelist"][name], leaves, cost, st - sub))
        with open(out / f"jobs_{kind}.csv", "w") as f:
            f.write("name,nodes,nodelist,leaves,cost,wait\n")
            for name, n, nl, lv, cost, wait in per_job:
                f.write(f'{name},{n},"{nl}",{lv},{cost:g},{wait:.0f}\n')
        multi = [c for (_, n, _, _, c, _) in per_job if n > 1]
        # the least cost a job of n nodes can have on this tree: n nodes from the first leaf on
        excess = [c - tree.cost(range(n)) for (_, n, _, _, c, _) in per_job]
        sizes = np.array([n for (_, n, *_rest) in per_job])
        fits_leaf = int((sizes <= args.switch_size).sum())
        fits_one = sum(1 for (_, n, _, lv, _, _) in per_job if n <= args.switch_size and lv == 1)
        pod_nodes = tree.nodes_per_pod
        fits_pod = [p for (_, n, *_r), p in zip(per_job, pods) if n <= pod_nodes]
        wait = np.array([w for (*_x, w) in per_job])
        run_t = np.array([real[n][2] - real[n][1] for (n, *_r) in per_job])
        bsld = np.maximum(1.0, (wait + run_t) / np.maximum(run_t, 10.0))
        compact(run)
        row = dict(run="slurm topology/tree" if kind == "slurm" else f"hpcopt {kind}",
                   jobs=len(per_job), cost_total=round(float(sum(costs)), 1),
                   cost_mean=round(float(np.mean(costs)), 1),
                   cost_mean_multi=round(float(np.mean(multi)), 1) if multi else 0.0,
                   cost_excess_total=round(float(sum(excess)), 1),
                   at_least_cost=sum(e < 1e-6 for e in excess),
                   one_leaf=one_leaf, fit_leaf=fits_leaf, fit_leaf_on_one=fits_one,
                   pod_nodes=pod_nodes, fit_pod=len(fits_pod),
                   fit_pod_on_one=sum(p == 1 for p in fits_pod),
                   across_pods=sum(p > 1 for p in pods),
                   wait_mean=round(float(wait.mean()), 1), bsld_mean=round(float(bsld.mean()), 3),
                   wall_s=round(run["wall"], 1),
                   other_reasons=sorted({r for rs in run["reasons"].values() for r in rs}))
        if kind != "slurm":
            from hpcopt.slurm.topology import expand_hostlist

            same = diff = unknown = 0  # the logged placement against jobcomp's NodeList
            for jid, nl in placed.items():
                name = run["jobid"].get(jid)
                if name is None:
                    unknown += 1
                    continue
                want = sorted(expand_hostlist(nl) if isinstance(nl, str) else nl)
                got = sorted(expand_hostlist(run["nodelist"][name]))
                same, diff = same + (want == got), diff + (want != got)
            row.update(placed_logged=len(placed), ran_where_placed=same, ran_elsewhere=diff,
                       placed_unmatched=unknown, cycles=run["cycles_total"],
                       failed_cycles=run["cycles_failed"],
                       errors=sorted({c["error"] for c in run["cycles"] if c.get("error")}))
        rows.append(row)
        print(json.dumps(row), flush=True)
    (out / "summary.json").write_text(json.dumps(rows, indent=1))


def cmd_report(args) -> None:
    """The markdown tables of benchmarks/README.md from saved ``summary.json`` files."""
    rows = [(Path(d).name, r) for d in args.dirs
            for r in json.loads((Path(d) / "summary.json").read_text())]
    bb = [(name, r) for name, r in rows if "model" in r]
    if bb:
        print("| replay | run | wait real / sim (dev) | bsld real / sim (dev) | bb util real / "
              "sim | node util real / sim | tau | waited on Licenses | cycles: bb / nodes "
              "over free, failed |")
        print("|---|---|---|---|---|---|---|---|---|")
        for name, r in bb:
            if r["model"] != args.model:
                continue
            print(f"| {name} | {r['run']} | {r['wait_real']:.0f} / {r['wait_sim']:.0f} "
                  f"({r['wait_dev_pct']:+.1f}%) | {r['bsld_real']:.2f} / {r['bsld_sim']:.2f} "
                  f"({r['bsld_dev_pct']:+.1f}%) | {r['bb_util_real']:.3f} / "
                  f"{r['bb_util_sim']:.3f} | {r['node_util_real']:.3f} / "
                  f"{r['node_util_sim']:.3f} | {r['tau']:.3f} | {r['licenses_waited']} | "
                  f"{r['bb_over_free']} / {r['nodes_over_free']}, {r['failed_cycles']} of "
                  f"{r['cycles']} |")
    topo = [(name, r) for name, r in rows if "cost_total" in r]
    if topo:
        print("| replay | run | CH cost total | mean (all / >1 node) | at the least cost for "
              "its size | <=leaf on one leaf | <=pod on one pod | across pods | "
              "mean wait (s) | mean bsld | ran where placed | failed cycles |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for name, r in topo:
            placed = (f"{r['ran_where_placed']} of {r['placed_logged']}"
                      if "placed_logged" in r else "—")
            failed = f"{r['failed_cycles']} of {r['cycles']}" if "cycles" in r else "—"
            print(f"| {name} | {r['run']} | {r['cost_total']:,.0f} | {r['cost_mean']:,.0f} / "
                  f"{r['cost_mean_multi']:,.0f} | {r['at_least_cost']} of {r['jobs']} | "
                  f"{r['fit_leaf_on_one']} of {r['fit_leaf']} | "
                  + (f"{r['fit_pod_on_one']} of {r['fit_pod']} | {r['across_pods']} | "
                     if "fit_pod" in r else "— | — | ") +
                  f"{r['wait_mean']:.1f} | {r['bsld_mean']:.2f} | {placed} | {failed} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="part", required=True)
    for name, trace, first, nodes, runs in (
            ("bb", BB_TRACE, 600, 8, ["bbsched", "fcfs"]),
            ("topo", sv.DEFAULT_TRACE, 5000, 32, ["tjap-window", "slurm"])):
        r = sub.add_parser(name)
        r.add_argument("--trace", default=str(trace))
        r.add_argument("--first", type=int, default=first, help="first record of the slice")
        r.add_argument("--jobs", type=int, default=100)
        r.add_argument("--nodes", type=int, default=nodes)
        r.add_argument("--run-min", type=float, default=5)
        r.add_argument("--run-max", type=float, default=30)
        r.add_argument("--limit-max", type=int, default=2, help="longest limit in minutes")
        r.add_argument("--load", type=float, default=1.1, help="offered load of the arrivals")
        r.add_argument("--interval", type=float, default=0.5 if name == "bb" else 1.0,
                       help="adapter cycle, seconds")
        r.add_argument("--runs", nargs="+", default=runs)
        r.add_argument("--max-minutes", type=float, default=25)
        r.add_argument("--analyze-only", action="store_true",
                       help="analyze the runs saved in --out again (no Slurm)")
        r.add_argument("--out", required=True)
        if name == "bb":
            r.add_argument("--bb-total", type=int, default=100, help="the bb license's total")
        else:
            r.add_argument("--switch-size", type=int, default=4, help="nodes per leaf switch")
            r.add_argument("--pod-size", type=int, default=2,
                           help="leaf switches per pod switch (three levels)")
            r.add_argument("--tau", type=float, default=1.0,
                           help="tjap-window's period, seconds (its --tau)")
    t = sub.add_parser("report")
    t.add_argument("dirs", nargs="+", help="--out folders of earlier runs")
    t.add_argument("--model", default="measured", choices=["none", "measured"],
                   help="the simulation's latency model in the bb table")
    args = p.parse_args()
    {"bb": cmd_bb, "topo": cmd_topo, "report": cmd_report}[args.part](args)


if __name__ == "__main__":
    main()
