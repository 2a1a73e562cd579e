"""ASA on workflows in a simulated queue: the shape of Table 1 of the ASA paper.

Machines.  Two real traces, their job sizes scaled to the paper's machines (offered load
unchanged; ``scaled``): KTH-SP2 (100 processors) to an HPC2n-sized machine of 602 x 28 =
16,856 cores, ALCF Theta 2022 (4,360 nodes) to an UPPMAX-sized one of 486 x 20 = 9,720
cores.  One workflow core is one core of that machine.  FCFS + EASY, the one driver loop.

Workflows.  The paper-shaped Montage, BLAST and Statistics (``hpcopt.workflows.paper``:
their stage structure, tens of minutes per stage) at the paper's scales, 28/56/112 cores on
the HPC2n-sized machine and 160/320/640 on the UPPMAX-sized one; and four WfCommons
instances (Montage, BLAST, BWA, 1000Genome: stage = DAG level, cores = min(tasks, scale))
at the same scales, as they come.

Periods, by a stated rule (``hpcopt.workflows.periods``).  For each trace and scale the
candidates are the trace's first submission plus 3, 4, 5, ... days; a candidate is kept when
a probe job of the scale's cores and one hour, submitted then into the replayed background,
waits between 5 minutes and 5 hours; kept candidates are at least 2 days apart; the first
``--periods`` are used.  At each kept start, ``--runs`` workflow runs ``--interval`` s apart
(one simulation); every strategy runs at the same starts (paired).

Strategies (``hpcopt.workflows.runner``): Big Job, Per-Stage, and ASA with the estimator of
the paper (policy ``tuned``, R = 50; one estimator per trace and variant kept across every
workflow, scale and start, keyed by the workflow's geometry, the runner's default; keyed by
each stage's cores in ``asa/skey``), in both plans (``submit``: planned
at the predecessor's submission, the paper's; ``start``: at its start) and both accounting
modes (``afterok``: nothing held early, the paper's Table 1; ``dependency``: an early
allocation held and charged); ``eager`` (an infinite estimate: the bound on what any
estimate can gain) in both plans; and three other readings of the paper's estimator: the
plain Algorithm 1 (policy ``default``), ``tuned`` with the driver's start-time estimate as
one more action (prior 0.5), and ``tuned`` with "nearest" measured on a log scale.

Outputs in ``benchmarks/results/``: ``asa_workflows_runs.csv`` (every run) and
``asa_workflows.md`` (the tables of benchmarks/README.md, section "ASA workflows"); with
``--low``/``--high`` other than the defaults, the suffix ``_LOW-HIGH``.

    python benchmarks/asa_workflows.py [--periods 6] [--runs 3] [--interval 3600]
        [--low 300] [--high 18000] [--quick]
"""

from __future__ import annotations

import argparse
import csv
import math
import time
from dataclasses import replace
from pathlib import Path

from hpcopt.agents.asa import ASAEstimator
from hpcopt.datadir import data_root
from hpcopt.domain import System
from hpcopt.traces import load_trace
from hpcopt.workflows import load_wfformat, paper_workflow, run_workflow, stages_of
from hpcopt.workflows.paper import PAPER_MACHINES, PAPER_SCALES, PAPER_WORKFLOWS
from hpcopt.workflows.periods import choose_periods

HERE = Path(__file__).resolve().parent
OUT = HERE / "results"
DATA = data_root()  # HPCOPT_DATA, ../shared/data beside the checkout, or the per-user one
TRACES = {  # name: (file, the paper's machine it is scaled to)
    "KTH-SP2": (DATA / "hpc_swf" / "pwa" / "KTH-SP2-1996-2.1-cln.swf.gz", "HPC2n"),
    "Theta": (DATA / "hpc_swf" / "alcf" / "theta_2022.swf.gz", "UPPMAX"),
}
WFCOMMONS = {
    "wfc-Montage": "montage/montage-chameleon-dss-125d-001",
    "wfc-BLAST": "blast/blast-chameleon-large-001",
    "wfc-BWA": "bwa/bwa-chameleon-large-001",
    "wfc-1000Genome": "1000genome/1000genome-chameleon-10ch-250k-001",
}
# name: (strategy, runner options, estimator options or None)
VARIANTS = {
    "bigjob": ("bigjob", {}, None),
    "perstage": ("perstage", {}, None),
    "asa": ("asa", {}, {"policy": "tuned"}),
    "asa/start": ("asa", {"plan": "start"}, {"policy": "tuned"}),
    "asa/dep": ("asa", {"mode": "dependency"}, {"policy": "tuned"}),
    "asa/start/dep": ("asa", {"plan": "start", "mode": "dependency"}, {"policy": "tuned"}),
    "eager": ("eager", {}, None),
    "eager/start": ("eager", {"plan": "start"}, None),
    "asa-alg1": ("asa", {}, {"policy": "default"}),
    "asa+prior": ("asa", {}, {"policy": "tuned", "prior": 0.5}),
    "asa-log": ("asa", {}, {"policy": "tuned", "distance": "log"}),
    "asa/skey": ("asa", {"key": "stage"}, {"policy": "tuned"}),
}
ASA_VARIANTS = ("asa", "asa/start", "asa/dep", "asa/start/dep", "eager", "eager/start",
                "asa-alg1", "asa+prior", "asa-log", "asa/skey")
METRICS = ("makespan", "perceived_wait", "core_hours", "overhead_core_hours", "hits",
           "misses", "runtime")
PROBE_RUNTIME = 3600.0
LOW, HIGH, GAP = 300.0, 5 * 3600.0, 2 * 86400.0


def scaled(path, machine: str):
    """The trace's jobs with sizes scaled to the paper's machine (at least one core)."""
    tr = load_trace(path)
    cores = PAPER_MACHINES[machine]
    f = cores / tr.system.nodes
    jobs = sorted((replace(j, nodes=min(cores, max(1, round(j.nodes * f)))) for j in tr.jobs),
                  key=lambda j: (j.submit, j.id))
    return jobs, System(cores, name=f"{tr.system.name or 'trace'} as {machine}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--periods", type=int, default=6, help="starts per trace and scale")
    ap.add_argument("--runs", type=int, default=3, help="workflow runs per start")
    ap.add_argument("--interval", type=float, default=3600.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--low", type=float, default=LOW, help="probe rule: shortest wait (s)")
    ap.add_argument("--high", type=float, default=HIGH, help="probe rule: longest wait (s)")
    ap.add_argument("--quick", action="store_true", help="2 starts, 1 run, paper workflows")
    args = ap.parse_args()
    if args.quick:
        args.periods, args.runs = 2, 1
    OUT.mkdir(exist_ok=True)
    wfs = {name: load_wfformat(DATA / "workflows" / "wfinstances" / f"{rel}.json.gz")
           for name, rel in WFCOMMONS.items()}
    rows, periods, learned, t_all = [], {}, {}, time.time()
    for tname, (path, machine) in TRACES.items():
        jobs, system = scaled(path, machine)
        first = jobs[0].submit
        last = jobs[-1].submit - 3 * 86400
        cands = [first + d * 86400 for d in range(3, int((last - first) / 86400))]
        estimators = {v: ASAEstimator(seed=args.seed, **o)
                      for v, (_, _, o) in VARIANTS.items() if o is not None}
        for cores in PAPER_SCALES[machine]:
            t0 = time.time()
            kept = choose_periods(jobs, system, cands, cores, PROBE_RUNTIME, low=args.low,
                                  high=args.high, gap=GAP, count=args.periods)
            periods[(tname, cores)] = [((t - first) / 86400, w) for t, w in kept]
            flows = {name: paper_workflow(name, cores) for name in PAPER_WORKFLOWS}
            if not args.quick:
                flows.update({name: stages_of(wf, cores) for name, wf in wfs.items()})
            for wname, stages in flows.items():
                for variant, (strategy, opts, _) in VARIANTS.items():
                    for t, w in kept:
                        res = run_workflow(stages, (jobs, system), strategy, name=wname,
                                           runs=args.runs, interval=args.interval, at=t,
                                           estimator=estimators.get(variant),
                                           seed=args.seed, **opts)
                        for p in res.runs:
                            rows.append({"trace": tname, "workflow": wname, "cores": cores,
                                         "variant": variant,
                                         "start_day": round((t - first) / 86400, 3),
                                         "probe_wait": w, "run": p["run"],
                                         **{k: p[k] for k in METRICS}})
            print(f"{tname:8s} {cores:4d} cores: {len(kept)} starts "
                  f"{time.time() - t0:6.1f}s", flush=True)
        for v, est in estimators.items():
            learned[(tname, v)] = {k: (est.mode(k)[1], est.state(k)["observations"])
                                   for k in sorted(est.keys())}
    write(rows, periods, learned, args, time.time() - t_all)


# ------------------------------------------------------------------ statistics
def _mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def _ci(xs) -> float:
    """Half-width of the 95% Student-t confidence interval of the mean of ``xs``."""
    xs = list(xs)
    n = len(xs)
    if n < 2:
        return float("nan")
    from scipy.stats import t

    m = _mean(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    return t.ppf(0.975, n - 1) * sd / math.sqrt(n)


def _per_start(rows):
    """(trace, workflow, cores, variant, start) -> mean over the start's runs."""
    acc: dict = {}
    for r in rows:
        acc.setdefault((r["trace"], r["workflow"], r["cores"], r["variant"], r["start_day"]),
                       []).append(r)
    return {k: {m: _mean(x[m] for x in rs) for m in METRICS} | {"probe_wait":
                                                                   rs[0]["probe_wait"]}
            for k, rs in acc.items()}


def _paired(ps, trace, wf, variant, ref, metric, cores=None):
    """Per-start ratios variant / ref - 1 (paired by trace, workflow, cores, start)."""
    out = []
    for (tr, w, c, v, d), x in ps.items():
        if (tr, w, v) == (trace, wf, variant) and (cores is None or c == cores):
            y = ps.get((tr, w, c, ref, d))
            if y is not None and y[metric] > 0:
                out.append(x[metric] / y[metric] - 1)
    return out


# ------------------------------------------------------------------ tables
def write(rows, periods, learned, args, elapsed) -> None:
    keys = ["trace", "workflow", "cores", "variant", "start_day", "probe_wait", "run",
            *METRICS]
    sfx = "" if (args.low, args.high) == (LOW, HIGH) else f"_{args.low:g}-{args.high:g}"
    with (OUT / f"asa_workflows_runs{sfx}.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(keys)
        for r in rows:
            w.writerow([r[k] for k in keys])
    ps = _per_start(rows)
    md = [f"{args.runs} run(s) {args.interval:.0f} s apart per start, up to {args.periods} "
          f"starts per trace and scale, probe waits {args.low / 60:g}-{args.high / 60:g} "
          f"min; wall time {elapsed / 60:.1f} min.", ""]
    md += periods_md(periods) + [""] + targets_md(ps) + [""] + means_md(ps, paper=True)
    md += [""] + learned_md(learned) + [""] + per_start_md(ps) + [""]
    md += targets_md(ps, paper=False) + [""] + means_md(ps, paper=False) + [""]
    md += spread_md(ps)
    (OUT / f"asa_workflows{sfx}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


def periods_md(periods) -> list[str]:
    out = ["Starts kept by the probe rule (day into the trace: probe wait in minutes):", "",
           "| trace | cores | starts |", "|---|---:|---|"]
    for (tr, cores), kept in periods.items():
        cells = ", ".join(f"{d:.0f}: {w / 60:.0f}" for d, w in kept) or "none"
        out.append(f"| {tr} | {cores} | {cells} |")
    return out


def _fmt(xs, pct=True):
    if not xs:
        return "-"
    m, h = _mean(xs), _ci(xs)
    if pct:
        return f"{100 * m:+.1f}% ± {100 * h:.1f}" if not math.isnan(h) else f"{100 * m:+.1f}%"
    return f"{m:.0f} ± {h:.0f}" if not math.isnan(h) else f"{m:.0f}"


def targets_md(ps, paper: bool = True) -> list[str]:
    """The target per trace and workflow (means over scales and starts, paired per start,
    95% CI): makespan below Per-Stage's and within 10% of Big Job's, core-hours within 10%
    of Per-Stage's."""
    title = "the paper-shaped workflows" if paper else "the WfCommons workflows (as they come)"
    out = [f"Target on {title} (per start: value / reference - 1; mean ± 95% CI over the "
           "starts of the three scales; a makespan within 0.05% of Per-Stage's is a tie, "
           "not below):", "",
           "| trace | workflow | variant | makespan vs Per-Stage | makespan vs Big Job | "
           "CH vs Per-Stage | target |", "|---|---|---|---:|---:|---:|---|"]
    flows = PAPER_WORKFLOWS if paper else WFCOMMONS
    variants = ("perstage", *ASA_VARIANTS) if paper else ("asa", "asa/start", "asa/dep",
                                                          "eager")
    for tr in TRACES:
        for wf in flows:
            for v in variants:
                vs_ps = _paired(ps, tr, wf, v, "perstage", "makespan")
                vs_bj = _paired(ps, tr, wf, v, "bigjob", "makespan")
                ch = _paired(ps, tr, wf, v, "perstage", "core_hours")
                if not vs_ps:
                    continue
                # "below": by more than the 0.05% the table rounds away (else a tie)
                ok = _mean(vs_ps) < -0.0005 and _mean(vs_bj) <= 0.10 and _mean(ch) <= 0.10
                out.append(f"| {tr} | {wf} | {v} | {_fmt(vs_ps)} | {_fmt(vs_bj)} | "
                           f"{_fmt(ch)} | {'**yes**' if ok else 'no'} |")
    return out


def means_md(ps, paper: bool) -> list[str]:
    """Means ± 95% CI over the starts, per trace, workflow and scale: makespan (min) and
    core-hours, for the main variants."""
    cols = ("bigjob", "perstage", "asa", "asa/start", "asa/dep", "eager")
    title = "paper-shaped" if paper else "WfCommons"
    out = [f"Means over the starts ({title} workflows): makespan in minutes / core-hours, "
           "± the 95% CI half-width of the makespan:", "",
           "| trace | workflow | cores | " + " | ".join(cols) + " |",
           "|---|---|---:|" + "---:|" * len(cols)]
    groups = sorted({k[:3] for k in ps if (k[1] in PAPER_WORKFLOWS) == paper},
                    key=lambda k: (list(TRACES).index(k[0]), k[1], k[2]))
    for tr, wf, c in groups:
        cells = []
        for v in cols:
            xs = [x for k, x in ps.items() if k[:4] == (tr, wf, c, v)]
            if not xs:
                cells.append("-")
                continue
            mk = [x["makespan"] / 60 for x in xs]
            cells.append(f"{_fmt(mk, pct=False)} / {_mean(x['core_hours'] for x in xs):.0f}")
        out.append(f"| {tr} | {wf} | {c} | " + " | ".join(cells) + " |")
    return out


def learned_md(learned) -> list[str]:
    """What each estimator learned: per key (cores), its most likely wait at the end and how
    many waits it observed."""
    out = ["What the estimators learned (per key: the most likely wait at the end, "
           "in minutes, and the observations):", "",
           "| trace | variant | learned waits (cores: min, observations) |", "|---|---|---|"]
    for (tr, v), keys in learned.items():
        cells = ", ".join(f"{k}: {w / 60:.0f} ({n})" for k, (w, n) in keys.items())
        out.append(f"| {tr} | {v} | {cells} |")
    return out


def per_start_md(ps) -> list[str]:
    """Paper-shaped workflows, one row per start: makespans (min) paired by start."""
    cols = ("bigjob", "perstage", "asa", "asa/start", "eager")
    out = ["Per start (paper-shaped workflows; makespan in minutes, mean over the start's "
           "runs):", "", "| trace | workflow | cores | day | probe wait (min) | "
           + " | ".join(cols) + " |", "|---|---|---:|---:|---:|" + "---:|" * len(cols)]
    keys = sorted({(k[0], k[1], k[2], k[4]) for k in ps if k[1] in PAPER_WORKFLOWS},
                  key=lambda k: (list(TRACES).index(k[0]), k[1], k[2], k[3]))
    for tr, wf, c, d in keys:
        xs = [ps.get((tr, wf, c, v, d)) for v in cols]
        pw = next(x for x in xs if x is not None)["probe_wait"]
        out.append(f"| {tr} | {wf} | {c} | {d:.0f} | {pw / 60:.0f} | " + " | ".join(
            "-" if x is None else f"{x['makespan'] / 60:.0f}" for x in xs) + " |")
    return out


def spread_md(ps) -> list[str]:
    """How far apart the strategies can be at all, per workflow: per start and scale, the
    largest makespan over the smallest minus 1, over every variant and over the variants
    that keep Per-Stage's allocations (all but Big Job: what submission times can change)."""
    out = ["Every workflow: per start and scale, the spread of the makespans (max / min - 1) "
           "over every variant and over every variant but Big Job (what the submission "
           "times can change), mean and largest over the starts; the workflow's runtime "
           "(sum of its stages, min):", "",
           "| trace | workflow | spread, all: mean | largest | spread without Big Job: mean | "
           "largest | runtime (min) |", "|---|---|---:|---:|---:|---:|---:|"]
    fams = sorted({k[:2] for k in ps},
                  key=lambda k: (list(TRACES).index(k[0]), k[1] not in PAPER_WORKFLOWS, k[1]))
    for tr, wf in fams:
        starts = sorted({(k[2], k[4]) for k in ps if k[:2] == (tr, wf)})
        cells = []
        for skip in ((), ("bigjob",)):
            spreads = []
            for c, d in starts:
                ms = [x["makespan"] for k, x in ps.items()
                      if k[:3] == (tr, wf, c) and k[4] == d and k[3] not in skip]
                spreads.append(max(ms) / min(ms) - 1 if min(ms) > 0 else 0.0)
            cells += [f"{100 * _mean(spreads):.1f}%", f"{100 * max(spreads):.1f}%"]
        rts = sorted({x["runtime"] for k, x in ps.items() if k[:2] == (tr, wf)})
        span = sorted({f"{r / 60:.0f}" for r in (rts[0], rts[-1])}, key=float)
        out.append(f"| {tr} | {wf} | " + " | ".join(cells) + f" | {'-'.join(span)} |")
    return out

if __name__ == "__main__":
    main()
