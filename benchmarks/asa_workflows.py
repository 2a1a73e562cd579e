"""ASA on real workflows in a simulated queue: the spirit of Tables 1 and 2 of paper 002.

Workflows (WfCommons instances, ``../shared/data/workflows/wfinstances``): Montage
(``montage-chameleon-dss-125d-001``: 8 levels, a wide first one and short narrow ones),
BLAST (``blast-chameleon-large-001``: split, 100 parallel searches, merge), BWA
(``bwa-chameleon-large-001``: sequential, 1,000 parallel, sequential, the alternation of
the paper's Statistics workflow) and 1000Genome (``1000genome-chameleon-10ch-250k-001``:
three parallel levels), each at three scales.  Stages by ``hpcopt.workflows.stages``: DAG
levels, n_i = min(tasks, cap) cores, t_i = LPT makespan; walltimes are exact.

Background: two real traces replayed by the one driver loop with FCFS + EASY
(``hpcopt.workflows.runner``): KTH-SP2 (100 nodes x 1 processor) and ALCF Theta 2022
(4,360 nodes; its SWF counts nodes, so a workflow core is one Theta node here).

Scales (caps): the paper's geometries are fractions of its machines, 0.17-0.66% of HPC2n
(waits 0.4-1.5 h there) and 1.6-6.6% of UPPMAX (waits 11-17 h).  The same fractions do not
give the same queues here: on KTH-SP2 (100 processors) jobs of 2-7 processors never wait
under EASY (measured over four start days: 0.00 h), so the caps are chosen per trace to
put the real waits in the paper's range: 8/16/32 processors on KTH-SP2 (8-32% of the
machine; mean waits of a 1-h job 1.1/1.8/5.0 h) and 64/128/256 nodes on Theta (1.5-5.9%,
the paper's UPPMAX fractions; 5.3/5.6/8.7 h).  A level narrower than the cap asks for its
task count (BLAST's 100 searches: 64/100/100 on Theta).

Strategies: ``bigjob``, ``perstage``, ``asa`` (estimator policy ``tuned``, R = 50, as the
paper's section 4.4 onward), ``asa+prior`` (the same with the driver's own start-time
estimate as one more action, prior 0.5), ``asa-naive`` (no dependency: early allocations
cancelled and resubmitted) and ``oracle`` (true waits by what-if forks), all in the
runner's ``dependency`` mode (an early allocation holds its cores), plus ``asa/afterok``,
``asa+prior/afterok`` and ``oracle/afterok`` in its ``afterok`` mode (Slurm's
``--dependency=afterok``: the stage is submitted early with a dependency on its
predecessor, queued by its early submit time once that ends, nothing held; the oracle
submits the whole chain at the workflow's start) and ``eager/afterok`` (ASA's decision rule
with an infinite estimate: each stage submitted when its predecessor starts, the earliest
ASA can submit; it separates what learning can gain from what the decision point allows).
Each ASA variant
keeps one estimator per trace across all workflows, scales and runs (the paper keeps its
state across its 54 runs).  Each (trace, workflow, scale, strategy) is ``--runs`` workflow
runs ``--interval`` s apart at each of the ``--starts`` start days (one simulation per
start day).

Outputs in ``benchmarks/results/``: ``asa_workflows_runs.csv`` (every run),
``asa_workflows_table1.csv`` (means per row), ``asa_workflows_table2.csv`` (per trace and
geometry: real wait, ASA estimate, perceived wait, hit/miss, overhead) and
``asa_workflows.md`` (both tables as markdown, Table 1 normalised to the best per row, the
afterok table and the issue's targets per trace and family) and
``asa_workflows.png`` (makespan and core-hours of each strategy relative to Per-Stage).

    python benchmarks/asa_workflows.py [--runs 6] [--interval 3600] [--starts 40,120,200]
        [--traces KTH-SP2,Theta] [--runtime-scale 1] [--quick]
"""

from __future__ import annotations

import argparse
import csv
import time
from dataclasses import replace
from pathlib import Path

from hpcopt.agents.asa import ASAEstimator
from hpcopt.traces import load_trace
from hpcopt.workflows import load_wfformat, run_workflow, stages_of

HERE = Path(__file__).resolve().parent
OUT = HERE / "results"
DATA = HERE.parents[1] / "shared" / "data"
TRACES = {
    "KTH-SP2": DATA / "hpc_swf" / "pwa" / "KTH-SP2-1996-2.1-cln.swf.gz",
    "Theta": DATA / "hpc_swf" / "alcf" / "theta_2022.swf.gz",
}
WORKFLOWS = {
    "Montage": "montage/montage-chameleon-dss-125d-001",
    "BLAST": "blast/blast-chameleon-large-001",
    "BWA": "bwa/bwa-chameleon-large-001",
    "1000Genome": "1000genome/1000genome-chameleon-10ch-250k-001",
}
CAPS = {"KTH-SP2": (8, 16, 32), "Theta": (64, 128, 256)}  # see the docstring
VARIANTS = {  # name: (strategy, estimator prior or None, runner mode or None: default)
    "bigjob": ("bigjob", None, None),
    "perstage": ("perstage", None, None),
    "asa": ("asa", 0.0, None),
    "asa+prior": ("asa", 0.5, None),
    "asa-naive": ("asa-naive", 0.0, None),
    "oracle": ("oracle", None, None),
    "asa/afterok": ("asa", 0.0, "afterok"),
    "asa+prior/afterok": ("asa", 0.5, "afterok"),
    "oracle/afterok": ("oracle", None, "afterok"),
    "eager/afterok": ("asa", "eager", "afterok"),
}
AFTEROK = ("asa/afterok", "asa+prior/afterok", "eager/afterok", "oracle/afterok")


class Eager:
    """An estimator that always answers an infinite wait: ASA's rule then submits stage y at
    ``max(now, T - inf) = now``, when stage y-1 starts (no learning)."""

    prior = 0.0

    def sample(self, key, estimate_s=None):
        return None, float("inf")

    def observe(self, key, index, true_wait, estimate_s=None):
        return 0.0

    def config(self):
        return {"policy": "eager"}
METRICS = ("perceived_wait", "total_wait", "makespan", "core_hours", "overhead_core_hours",
           "hits", "misses", "resubmissions")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=6, help="workflow runs per start day")
    ap.add_argument("--interval", type=float, default=3600.0)
    ap.add_argument("--starts", default="40,120,200,280", help="start days into the trace")
    ap.add_argument("--traces", default=",".join(TRACES))
    ap.add_argument("--warmup", type=float, default=2 * 86400.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--runtime-scale", type=float, default=1.0,
                    help="multiply every stage runtime (a sensitivity run: stages long "
                         "against the waits); outputs get the suffix _xF")
    ap.add_argument("--quick", action="store_true", help="one start, 2 runs, KTH-SP2 only")
    args = ap.parse_args()
    starts = [float(d) for d in args.starts.split(",")]
    traces = args.traces.split(",")
    if args.quick:
        starts, args.runs, traces = starts[:1], 2, traces[:1]
    OUT.mkdir(exist_ok=True)
    wfs = {name: load_wfformat(DATA / "workflows" / "wfinstances" / f"{rel}.json.gz")
           for name, rel in WORKFLOWS.items()}
    rows, t_all = [], time.time()
    for tname in traces:
        tr = load_trace(TRACES[tname])
        caps = CAPS[tname]
        first = tr.jobs[0].submit
        estimators = {v: Eager() if prior == "eager" else
                      ASAEstimator(policy="tuned", prior=prior, seed=args.seed)
                      for v, (_, prior, _) in VARIANTS.items() if prior is not None}
        for wname, wf in wfs.items():
            for cap in caps:
                stages = [replace(s, runtime=s.runtime * args.runtime_scale,
                                  work=s.work * args.runtime_scale)
                          for s in stages_of(wf, cap)]
                for variant, (strategy, _, mode) in VARIANTS.items():
                    t0 = time.time()
                    for day in starts:
                        res = run_workflow(stages, tr, strategy, name=wname,
                                           runs=args.runs, interval=args.interval,
                                           at=first + day * 86400, warmup=args.warmup,
                                           estimator=estimators.get(variant),
                                           mode=mode, seed=args.seed)
                        ests = {}
                        for x in res.rows:
                            if x["estimate"] is not None and x["stage"] > 0:
                                ests.setdefault(x["run"], []).append(
                                    (x["cores"], x["estimate"], x["wait"],
                                     x["perceived_wait"], x["overhead_core_hours"],
                                     x["outcome"]))
                        for p in res.runs:
                            rows.append({"trace": tname, "workflow": wname, "cap": cap,
                                         "variant": variant, "start_day": day,
                                         **{k: p[k] for k in ("run", *METRICS)},
                                         "stages": len(stages),
                                         "max_cores": max(s.cores for s in stages),
                                         "runtime": p["runtime"],
                                         "estimates": ests.get(p["run"], [])})
                    print(f"{tname:8s} {wname:10s} cap {cap:4d} {variant:17s} "
                          f"{time.time() - t0:6.1f}s", flush=True)
    elapsed = time.time() - t_all
    write(rows, args, starts, elapsed)


def _mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def write(rows, args, starts, elapsed) -> None:
    sfx = "" if args.runtime_scale == 1 else f"_x{args.runtime_scale:g}"
    keys = ["trace", "workflow", "cap", "variant", "start_day", "run", *METRICS, "stages",
            "max_cores", "runtime"]
    with (OUT / f"asa_workflows_runs{sfx}.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(keys)
        for r in rows:
            w.writerow([r[k] for k in keys])
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["trace"], r["workflow"], r["cap"], r["variant"]), []).append(r)
    t1 = []
    for (tr, wf, cap, var), rs in groups.items():
        t1.append({"trace": tr, "workflow": wf, "cap": cap, "variant": var, "runs": len(rs),
                   **{k: _mean(r[k] for r in rs) for k in METRICS}})
    with (OUT / f"asa_workflows_table1{sfx}.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, list(t1[0]))
        w.writeheader()
        w.writerows(t1)
    # Table 2: per trace and geometry (stage cores), over every proactive submission
    t2 = []
    for var in ("asa", "asa+prior", "asa-naive", "oracle",
                *(v for v in AFTEROK if v != "eager/afterok")):  # eager: estimate inf
        per: dict = {}
        for r in rows:
            if r["variant"] == var:
                for sub in r["estimates"]:
                    per.setdefault((r["trace"], sub[0]), []).append(sub)
        for (tr, cores), xs in sorted(per.items()):
            t2.append({"trace": tr, "variant": var, "cores": cores, "submissions": len(xs),
                       "real_wait_h": _mean(x[2] for x in xs) / 3600,
                       "estimate_h": _mean(x[1] for x in xs) / 3600,
                       "perceived_wait_h": _mean(x[3] for x in xs) / 3600,
                       "hit": _mean(x[5] == "hit" for x in xs),
                       "miss": _mean(x[5] == "miss" for x in xs),
                       "overhead_ch": _mean(x[4] for x in xs)})
    with (OUT / f"asa_workflows_table2{sfx}.csv").open("w", newline="") as fh:
        w = csv.DictWriter(fh, list(t2[0]) if t2 else ["trace"])
        w.writeheader()
        w.writerows(t2)
    md = [f"Stage runtimes x {args.runtime_scale:g}. "
          f"Runs per row: {args.runs} x {len(starts)} start days "
          f"({', '.join(f'{d:g}' for d in starts)}), interval {args.interval:.0f} s; wall "
          f"time {elapsed / 60:.1f} min.", ""]
    md += table1_md(t1) + [""] + summary_md(t1) + [""] + table2_md(t1, t2)
    md += [""] + afterok_md(t1) + [""] + targets_md(t1)
    (OUT / f"asa_workflows{sfx}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))
    plot(t1, OUT / f"asa_workflows{sfx}.png", args.runtime_scale)


PLOTTED = ("bigjob", "perstage", "asa", "oracle", "asa/afterok", "oracle/afterok")


def plot(t1, path: Path, scale: float) -> None:
    """Table 1 as bars: makespan and core-hours of each strategy, relative to Per-Stage, per
    trace x workflow (means over scales), so "near Big Job's makespan at Per-Stage's
    core-hours" reads off at a glance."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = sorted({(r["trace"], r["workflow"]) for r in t1})
    fig, axes = plt.subplots(2, 1, figsize=(max(8, 1.3 * len(cells)), 7), sharex=True)
    width = 0.8 / len(PLOTTED)
    for ax, metric in zip(axes, ("makespan", "core_hours")):
        for k, var in enumerate(PLOTTED):
            ys = []
            for tr, wf in cells:
                rel = [r[metric] / base[metric]
                       for r in t1 if (r["trace"], r["workflow"], r["variant"]) == (tr, wf, var)
                       for base in t1 if (base["trace"], base["workflow"], base["cap"],
                                          base["variant"]) == (tr, wf, r["cap"], "perstage")
                       and base[metric] > 0]
                ys.append(_mean(rel) if rel else float("nan"))
            ax.bar([i + (k - (len(PLOTTED) - 1) / 2) * width for i in range(len(cells))], ys,
                   width, label=var)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_ylabel(f"{metric.replace('_', '-')} / Per-Stage")
        ax.set_yscale("log")
    axes[0].legend(ncol=(len(PLOTTED) + 1) // 2, fontsize=8)
    axes[1].set_xticks(range(len(cells)), [f"{tr}\n{wf}" for tr, wf in cells], fontsize=8)
    fig.suptitle(f"ASA on workflows in a simulated queue (stage runtimes x {scale:g}); "
                 "mean over scales and runs")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _rel(v, best):
    if best <= 0:
        return "" if v <= 0 else " (+inf)"
    pct = 100 * (v / best - 1)
    return f" (+{pct:.0f}%)" if pct >= 1 else ""


def table1_md(t1) -> list[str]:
    by = {(r["trace"], r["workflow"], r["cap"], r["variant"]): r for r in t1}
    out = ["Table 1 (means over runs): TWT = perceived wait (s), makespan (s), CH = core-hours "
           "(trace processors x h); in parentheses the excess over the best of Big Job, "
           "Per-Stage and ASA in that row.", "",
           "| trace | workflow | cap | Big Job TWT | makespan | CH | Per-Stage TWT | makespan "
           "| CH | ASA TWT | makespan | CH | ASA+prior TWT | makespan | CH | oracle TWT | "
           "makespan | CH |",
           "|---|---|---:|" + "---:|" * 15]
    for tr, wf, cap in sorted({k[:3] for k in by}, key=lambda k: (k[0], k[1], k[2])):
        rs = [by.get((tr, wf, cap, v)) for v in ("bigjob", "perstage", "asa", "asa+prior",
                                                   "oracle")]
        if any(r is None for r in rs):
            continue
        best = {k: min(r[k] for r in rs[:3]) for k in ("perceived_wait", "makespan",
                                                        "core_hours")}
        cells = []
        for r in rs:
            for k in ("perceived_wait", "makespan", "core_hours"):
                fmt = f"{r[k]:.1f}" if k == "core_hours" else f"{r[k]:.0f}"
                cells.append(fmt + _rel(r[k], best[k]))
        out.append(f"| {tr} | {wf} | {cap} | " + " | ".join(cells) + " |")
    return out


def summary_md(t1) -> list[str]:
    """Normalised averages (value / best of Big Job, Per-Stage, ASA per row) per family."""
    by = {(r["trace"], r["workflow"], r["cap"], r["variant"]): r for r in t1}
    out = ["Normalised averages (mean over the rows of value / best of Big Job, Per-Stage, "
           "ASA in the row, minus 1; the paper's 'Normalized Average'):", "",
           "| trace | workflow | variant | TWT | makespan | CH | overhead CH | hit ratio |",
           "|---|---|---|---:|---:|---:|---:|---:|"]
    fams = sorted({k[:2] for k in by})
    for tr, wf in fams:
        caps = sorted({k[2] for k in by if k[:2] == (tr, wf)})
        for v in ("bigjob", "perstage", "asa", "asa+prior", "asa-naive", "oracle", *AFTEROK):
            acc = {"perceived_wait": [], "makespan": [], "core_hours": []}
            oh, hits, n = [], 0.0, 0.0
            for cap in caps:
                rs = [by.get((tr, wf, cap, x)) for x in ("bigjob", "perstage", "asa")]
                r = by.get((tr, wf, cap, v))
                if r is None or any(x is None for x in rs):
                    continue
                for k in acc:
                    best = min(x[k] for x in rs)
                    acc[k].append(r[k] / best - 1 if best > 0 else 0.0)
                oh.append(r["overhead_core_hours"])
                hits += r["hits"]
                n += r["hits"] + r["misses"]
            cells = [f"{100 * _mean(acc[k]):+.0f}%" for k in acc]
            out.append(f"| {tr} | {wf} | {v} | " + " | ".join(cells)
                       + f" | {_mean(oh):.2f} | " + (f"{hits / n:.2f}" if n else "-") + " |")
    return out


def afterok_md(t1) -> list[str]:
    """Table 1 for the afterok variants, next to Per-Stage's makespan and Big Job's CH."""
    by = {(r["trace"], r["workflow"], r["cap"], r["variant"]): r for r in t1}
    out = ["Afterok mode (means over runs): TWT (s), makespan (s), CH; in parentheses the "
           "makespan relative to Per-Stage's and the CH relative to Big Job's.", "",
           "| trace | workflow | cap | Big Job makespan | Per-Stage makespan | Big Job CH | "
           + " | ".join(f"{v} TWT | makespan | CH" for v in AFTEROK) + " |",
           "|---|---|---:|" + "---:|" * (3 + 3 * len(AFTEROK))]
    for tr, wf, cap in sorted({k[:3] for k in by}):
        ps, bj = by.get((tr, wf, cap, "perstage")), by.get((tr, wf, cap, "bigjob"))
        rs = [by.get((tr, wf, cap, v)) for v in AFTEROK]
        if ps is None or bj is None or any(r is None for r in rs):
            continue
        cells = [f"{bj['makespan']:.0f}", f"{ps['makespan']:.0f}", f"{bj['core_hours']:.1f}"]
        for r in rs:
            cells += [f"{r['perceived_wait']:.0f}",
                      f"{r['makespan']:.0f} ({_pct(r['makespan'], ps['makespan'])})",
                      f"{r['core_hours']:.1f} ({_pct(r['core_hours'], bj['core_hours'])})"]
        out.append(f"| {tr} | {wf} | {cap} | " + " | ".join(cells) + " |")
    return out


def _pct(v, ref):
    return f"{100 * (v / ref - 1):+.1f}%" if ref > 0 else "-"


def targets_md(t1) -> list[str]:
    """The issue's targets per trace and family: makespan below Per-Stage's, core-hours
    below Big Job's (means over the scales, and how many of the scales meet each)."""
    by = {(r["trace"], r["workflow"], r["cap"], r["variant"]): r for r in t1}
    out = ["Targets (issue #14) per trace and workflow family: mean over the scales of "
           "makespan / Per-Stage's - 1 and CH / Big Job's - 1; 'k/n' = scales strictly "
           "below.", "",
           "| trace | workflow | variant | makespan vs Per-Stage | below | CH vs Big Job | "
           "below | both targets |",
           "|---|---|---|---:|---:|---:|---:|---|"]
    for tr, wf in sorted({k[:2] for k in by}):
        caps = sorted({k[2] for k in by if k[:2] == (tr, wf)})
        for v in ("asa", "asa+prior", "oracle", *AFTEROK):
            ms, ch, mk, ck, n = [], [], 0, 0, 0
            for cap in caps:
                r, ps, bj = (by.get((tr, wf, cap, x)) for x in (v, "perstage", "bigjob"))
                if r is None or ps is None or bj is None:
                    continue
                n += 1
                ms.append(r["makespan"] / ps["makespan"] - 1)
                ch.append(r["core_hours"] / bj["core_hours"] - 1)
                mk += r["makespan"] < ps["makespan"]
                ck += r["core_hours"] < bj["core_hours"]
            if not n:
                continue
            both = "yes" if _mean(ms) < 0 and _mean(ch) < 0 else "no"
            out.append(f"| {tr} | {wf} | {v} | {100 * _mean(ms):+.1f}% | {mk}/{n} | "
                       f"{100 * _mean(ch):+.1f}% | {ck}/{n} | {both} |")
    return out


def table2_md(t1, t2) -> list[str]:
    out = ["Table 2 (per trace and stage geometry, over every proactive submission, stage "
           ">= 2): mean real queue wait, estimate used and perceived wait (h), hit / miss "
           "ratios (miss: the allocation started before the predecessor ended; in afterok: the "
           "stage started after its release) and the mean "
           "overhead per submission (core-hours).", "",
           "| trace | variant | cores | submissions | real WT (h) | estimate (h) | PWT (h) | "
           "hit | miss | OH (CH) |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in t2:
        out.append(f"| {r['trace']} | {r['variant']} | {r['cores']} | {r['submissions']} | "
                   f"{r['real_wait_h']:.2f} | {r['estimate_h']:.2f} | "
                   f"{r['perceived_wait_h']:.2f} | {r['hit']:.2f} | {r['miss']:.2f} | "
                   f"{r['overhead_ch']:.2f} |")
    return out


if __name__ == "__main__":
    main()
