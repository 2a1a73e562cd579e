"""Big Job, Per-Stage and ASA on a real Slurm, against the simulator on the same jobs.

For each strategy a fresh ``--no-hold`` testbed (8 nodes x 4 cores, Slurm's own
``sched/backfill``; ``--scheduler-parameters`` over the testbed's own) gets the same
background load -- a KTH-SP2 slice scaled as in ``slurm_validation.py`` (sizes 1..8 nodes,
sleeps ``--run-min``..``--run-max`` s, limits of whole minutes up to ``--limit-max``,
arrivals at an offered load ``--load``; ``--stretch K`` multiplies its sleeps, limits and
arrival times by K, so that with a K times larger ``--time-scale`` and ``--lag`` the run is
the same experiment in workflow seconds on a K times slower clock) -- and, ``--lag``
seconds after the first background job, the paper's three workflow shapes (Montage,
BLAST, Statistics; ``hpcopt.workflows.paper_workflow`` at ``--cores`` cores) at
``--time-scale``, all at once, sharing one fresh ASA estimator per strategy.
``--parallel`` runs the strategies' testbeds at the same time.  Every real run is saved
(``OUT/runs.json``: the stage rows with Slurm's own times, the background's jobcomp
records).

Then the simulator (FCFS + EASY, ``run_workflow``) plays each workflow against the jobs
that ran beside it as Slurm recorded them -- the background and the other two workflows'
stage jobs (submit or eligible times, real run times, limits) -- with its own stage jobs
asking the same whole-minute limits as the real ones (``requested_walltime``), all in
workflow seconds, twice: with no delay, and with a real queue's three delays measured on
the *other* runs (leave one run out: never the run it predicts) -- ``launch_delay`` (the
median of start - eligible of stage jobs), ``reaction`` (the median of submit - the
predecessor's end of Per-Stage's stages) and the stage jobs' run-time overhead (the median
of end - start - sleep, added to each stage job's runtime).  The deviation of each run is
reported against both.

    python benchmarks/asa_slurm.py --out results/asa_slurm        (root)
    python benchmarks/asa_slurm.py --out results/asa_slurm --analyze-only

``--probe N`` measures Slurm's own start latency instead, on an idle 4-node testbed
(``--slurm`` version, ``--scheduler-parameters``), N times each: a job submitted to idle
nodes (start - submit), an ``afterok`` job released by its predecessor's end (start - that
end, and its eligible time - that end), and a job submitted the moment its predecessor is
seen ended (start - submit); Slurm's whole seconds, so the means are the numbers to read.

    python benchmarks/asa_slurm.py --probe 8 --slurm 24.11 \
        --scheduler-parameters batch_sched_delay=0,sched_min_interval=0

Writes ``OUT/runs.json`` and ``OUT/rows.json`` and prints the markdown tables.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))

from slurm_validation import DEFAULT_TRACE, completed_jobs, scaled_slice, submit_all  # noqa: E402

from hpcopt import testbed  # noqa: E402
from hpcopt.domain import Job, System  # noqa: E402
from hpcopt.slurm.state import Slurm  # noqa: E402
from hpcopt.workflows import paper_workflow, run_workflow  # noqa: E402
from hpcopt.workflows.onslurm import (  # noqa: E402
    SharedEstimator,
    SlurmWorkflowRun,
    limit_minutes,
)

WORKFLOWS = ("Montage", "BLAST", "Statistics")
KEYS = ("makespan", "core_hours", "perceived_wait")


def real_runs(strategy, bg, args, work: Path) -> dict:
    """Run the three workflows under ``strategy`` with the background ``bg`` on a fresh
    testbed: {"workflows": {name: rows, summary, settings}, "background": jobcomp records}."""
    from hpcopt.agents.asa import ASAEstimator

    d = work / strategy
    testbed.start(d, 8, hold=False, scheduler="backfill",
                  scheduler_parameters=args.scheduler_parameters)
    try:
        env = testbed.env(d)
        slurm = Slurm(env=env, timeout=20, retries=2)
        feeder = threading.Thread(target=submit_all, args=(bg, env), daemon=True)
        feeder.start()
        time.sleep(args.lag)
        state = work / f"{strategy}-asa.json"
        results, threads = {}, []
        for name in WORKFLOWS:
            est = SharedEstimator(state, ASAEstimator(seed=args.seed))
            run = SlurmWorkflowRun(paper_workflow(name, args.cores), strategy, slurm=slurm,
                                   out=work / f"{strategy}-{name}", poll=args.poll,
                                   time_scale=args.time_scale, estimator=est,
                                   name=name, seed=args.seed)

            def go(run=run, name=name):
                results[name] = run.run()

            t = threading.Thread(target=go)
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
        feeder.join()
        deadline = time.monotonic() + 600 + 60 * args.limit_max * args.stretch
        while len(completed_jobs(d)) < len(bg) and time.monotonic() < deadline:
            time.sleep(2)
        missing = [n for n in WORKFLOWS if n not in results]
        if missing:
            raise RuntimeError(f"{strategy}: {', '.join(missing)} did not finish")
        return {"workflows": {n: {"rows": r.rows, "summary": r.summary,
                                  "settings": r.settings} for n, r in results.items()},
                "background": completed_jobs(d)}
    finally:
        testbed.stop(d)


# ---------------------------------------------------------------------- Slurm's latency
def probe(args) -> dict[str, list[float]]:
    """Slurm's own start latency on an idle testbed (module docstring, ``--probe``)."""
    from hpcopt.workflows.onslurm import ENDED, read_jobs

    d = Path(tempfile.mkdtemp(prefix="hpcopt-asa-probe-"))
    testbed.start(d, 4, hold=False, scheduler="backfill", slurm=args.slurm,
                  scheduler_parameters=args.scheduler_parameters)
    slurm = Slurm(env=testbed.env(d), timeout=20, retries=2)

    def submit(*extra) -> int:
        out = slurm.call("sbatch", "--parsable", "-N", "1", "--exclusive", "-t", "1",
                         "-o", "/dev/null", *extra, "--wrap", "sleep 2", retry=False)
        return int(out.split(";")[0])

    def until(jid: int, started: bool):
        while True:
            rec = read_jobs(slurm).get(jid)
            if rec is not None and (rec.state in ENDED or (started and rec.start > 0)):
                return rec
            time.sleep(0.05)

    out: dict[str, list[float]] = {"idle": [], "afterok": [], "afterok_eligible": [],
                                   "at_end": []}
    try:
        for _ in range(args.probe):
            a = submit()
            ra = until(a, True)
            out["idle"].append(ra.start - ra.submit)
            b = submit(f"--dependency=afterok:{a}")
            ra, rb = until(a, False), until(b, True)
            out["afterok"].append(rb.start - ra.end)
            out["afterok_eligible"].append(rb.eligible - ra.end)
            until(b, False)
            until(submit(), False)  # a job ends; the next is submitted when that is seen
            rc = until(submit(), True)
            out["at_end"].append(rc.start - rc.submit)
            until(rc.id, False)
    finally:
        testbed.stop(d)
    return out


# ---------------------------------------------------------------------- delays
def delays_of(run: dict, strategy: str, scale: float, job_ends: list[float]
              ) -> dict[str, list[float]]:
    """The delays one real workflow run shows, in real seconds (Slurm's whole seconds):
    ``launch`` each stage job's start - the event that let it start (the later of its
    eligible time and the last job end at or before its start; ``job_ends``: every end on
    its testbed), ``overhead`` end - start - sleep, ``reaction`` (Per-Stage) submit - the
    predecessor's end."""
    rows = [r for r in run["rows"] if not r["cancelled"] and r.get("slurm_start")]
    stages = run["settings"]["stages"]
    out: dict[str, list[float]] = {"launch": [], "overhead": [], "reaction": []}
    ends, seen = {}, set()
    for r in rows:
        ends[(r["run"], r["stage"])] = r["slurm_end"]
        if r["slurm_job"] in seen:  # the Big Job: one job, a row per stage
            continue
        seen.add(r["slurm_job"])
        el = r["slurm_eligible"] if r["slurm_eligible"] else r["slurm_submit"]
        last = max((e for e in job_ends if e <= r["slurm_start"]), default=el)
        out["launch"].append(r["slurm_start"] - max(el, last))
        runtime = (sum(s["runtime"] for s in stages) if strategy == "bigjob"
                   else stages[r["stage"]]["runtime"])
        out["overhead"].append(r["slurm_end"] - r["slurm_start"] - runtime * scale)
    if strategy == "perstage":
        for r in rows:
            prev = ends.get((r["run"], r["stage"] - 1))
            if r["stage"] > 0 and prev is not None:
                out["reaction"].append(r["slurm_submit"] - prev)
    return out


def out_of_sample(runs: dict, strategy: str, name: str, scale: float) -> dict:
    """The three delays (workflow seconds) for the run (strategy, name), each the median over
    every *other* real run of this experiment."""
    pooled: dict[str, list[float]] = {"launch": [], "overhead": [], "reaction": []}
    for s, rec in runs.items():
        ends = [j["end"] for j in rec["background"].values()] + [
            r["slurm_end"] for run in rec["workflows"].values() for r in run["rows"]
            if r.get("slurm_end")]
        for n, run in rec["workflows"].items():
            if (s, n) == (strategy, name):
                continue
            for k, v in delays_of(run, s, scale, ends).items():
                pooled[k] += v
    return {k: max(0.0, statistics.median(v)) / scale if v else 0.0
            for k, v in pooled.items()}


# ---------------------------------------------------------------------- the simulator
def other_stage_jobs(strategy, rec: dict, name: str, args) -> list[dict]:
    """The stage jobs of the *other* workflows that ran on the same testbed, as Slurm
    recorded them (``eligible``: when its dependency was met; ``limit``: what it asked, in
    minutes).  Submitted in the same whole second as a job of ``name``, a job Slurm numbered
    after it comes after it (``tie``), as in Slurm's FIFO order."""
    own = {}
    for r in rec["workflows"][name]["rows"]:
        if r.get("slurm_submit"):
            own[r["slurm_submit"]] = min(own.get(r["slurm_submit"], math.inf), r["slurm_job"])
    out, seen = [], set()
    for other, run in rec["workflows"].items():
        if other == name:
            continue
        stages = run["settings"]["stages"]
        for r in run["rows"]:
            if r["cancelled"] or not r.get("slurm_start") or r["slurm_job"] in seen:
                continue
            seen.add(r["slurm_job"])
            need = (sum(s["runtime"] for s in stages) if strategy == "bigjob"
                    else stages[r["stage"]]["runtime"])
            out.append({"submit": r["slurm_submit"], "eligible": r["slurm_eligible"],
                        "start": r["slurm_start"], "end": r["slurm_end"],
                        "nodes": r["nodes"], "limit": limit_minutes(need, args.time_scale),
                        "tie": r["slurm_job"] > own.get(r["slurm_submit"], math.inf)})
    return out


def simulated(strategy, run: dict, rec: dict, bg, args, delays: dict | None):
    """The simulator's run of the same workflow against the jobs Slurm ran beside it: the
    background and the other workflows' stage jobs (``delays``: a real queue's delays in
    workflow seconds; None: none)."""
    t0, scale = run["settings"]["t0"], args.time_scale
    limits = {j["name"]: j["limit"] for j in bg}
    name = run["settings"]["workflow"]
    beside = [{**r, "limit": limits[n]} for n, r in sorted(rec["background"].items())
              if n in limits] + other_stage_jobs(strategy, rec, name, args)
    jobs = []
    for i, r in enumerate(beside):
        submit = (r["submit"] - t0) / scale + (1e-6 if r.get("tie") else 0.0)
        eligible = ((r["eligible"] - t0) / scale if r.get("eligible") else submit)
        jobs.append(Job(id=i + 1, submit=submit,
                        runtime=max(1.0, (r["end"] - r["start"]) / scale),
                        walltime=max(r["limit"] * 60.0 / scale,
                                     (r["end"] - r["start"]) / scale),
                        nodes=max(1, r["nodes"]),
                        earliest=eligible if eligible > submit else None))
    first = min(j.submit for j in jobs)
    stages = paper_workflow(name, args.cores)
    # the queue is told the whole-minute limits the real stage jobs asked
    options = {"requested_walltime": lambda w: limit_minutes(w, scale) * 60.0 / scale}
    if delays:
        over = delays["overhead"]
        # each stage job runs its sleep plus the overhead; the Big Job is one job
        stages = [replace(s, runtime=s.runtime + (over if strategy != "bigjob" or i == 0
                                                  else 0.0))
                  for i, s in enumerate(stages)]
        options.update(launch_delay=delays["launch"], reaction=delays["reaction"])
    return run_workflow(stages, (jobs, System(8)), strategy, cores_per_node=4, at=0.0,
                        warmup=-first if first < 0 else 0.0, horizon=1e9, name=name,
                        seed=args.seed, **options)


def analyze(saved: dict, bg, args) -> list[dict]:
    rows = []
    runs = saved["runs"]
    for strategy, rec in runs.items():
        for name in WORKFLOWS:
            run = rec["workflows"][name]
            real = run["summary"]
            d = out_of_sample(runs, strategy, name, args.time_scale)
            sim0 = simulated(strategy, run, rec, bg, args, None).summary
            sim1 = simulated(strategy, run, rec, bg, args, d).summary
            row = {"workflow": name, "strategy": strategy, "delays": d}
            for k in KEYS:
                row[f"real_{k}"], row[f"sim_{k}"], row[f"simd_{k}"] = \
                    real[k], sim0[k], sim1[k]
            row["real_hits"], row["real_misses"] = real["hits"], real["misses"]
            row["simd_hits"], row["simd_misses"] = sim1["hits"], sim1["misses"]
            rows.append(row)
    return rows


def _dev(a, b):
    return f"{(a - b) / b:+.0%}" if b else "n/a"


def print_tables(rows: list[dict]) -> None:
    print("| workflow | strategy | makespan real / sim / sim+delays (s) | core-hours real / "
          "sim / sim+delays | perceived wait real / sim / sim+delays (s) | ASA hits / misses "
          "real (sim+delays) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        def three(k, fmt, r=r):
            a, b, c = r[f"real_{k}"], r[f"sim_{k}"], r[f"simd_{k}"]
            return (f"{a:{fmt}} / {b:{fmt}} ({_dev(a, b)}) / {c:{fmt}} ({_dev(a, c)})")
        hm = (f"{r['real_hits']:.0f} / {r['real_misses']:.0f} ({r['simd_hits']:.0f} / "
              f"{r['simd_misses']:.0f})" if r["strategy"] == "asa" else "")
        print(f"| {r['workflow']} | {r['strategy']} | {three('makespan', '.0f')} | "
              f"{three('core_hours', '.2f')} | {three('perceived_wait', '.0f')} | {hm} |")
    print()
    print("| workflow | strategy | launch delay (s) | reaction (s) | run-time overhead (s) |")
    print("|---|---|---|---|---|")
    for r in rows:
        d = r["delays"]
        print(f"| {r['workflow']} | {r['strategy']} | {d['launch']:.0f} | "
              f"{d['reaction']:.0f} | {d['overhead']:.0f} |")
    print()
    by = {(r["workflow"], r["strategy"]): r for r in rows}
    print("| workflow | ASA makespan / Big Job's: real, sim+delays | ASA core-hours / "
          "Per-Stage's: real, sim+delays |")
    print("|---|---|---|")
    for w in WORKFLOWS:
        if not all((w, s) in by for s in ("asa", "bigjob", "perstage")):
            continue
        a, b, p = by[(w, "asa")], by[(w, "bigjob")], by[(w, "perstage")]
        print(f"| {w} | {a['real_makespan'] / b['real_makespan']:.2f}, "
              f"{a['simd_makespan'] / b['simd_makespan']:.2f} | "
              f"{a['real_core_hours'] / p['real_core_hours']:.2f}, "
              f"{a['simd_core_hours'] / p['simd_core_hours']:.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trace", default=str(DEFAULT_TRACE))
    ap.add_argument("--first", type=int, default=5000)
    ap.add_argument("--jobs", type=int, default=60)
    ap.add_argument("--run-min", type=float, default=5)
    ap.add_argument("--run-max", type=float, default=40)
    ap.add_argument("--limit-max", type=int, default=2)
    ap.add_argument("--load", type=float, default=0.9)
    ap.add_argument("--lag", type=float, default=10.0)
    ap.add_argument("--stretch", type=int, default=1,
                    help="the background's sleeps, limits and arrivals times K")
    ap.add_argument("--cores", type=int, default=16)
    ap.add_argument("--time-scale", type=float, default=0.01)
    ap.add_argument("--poll", type=float, default=0.5, help="the runner's squeue interval")
    ap.add_argument("--scheduler-parameters", default=None,
                    help="key=value,... over the testbed's SchedulerParameters")
    ap.add_argument("--strategies", nargs="+", default=["bigjob", "perstage", "asa"])
    ap.add_argument("--parallel", action="store_true",
                    help="run the strategies' testbeds at the same time")
    ap.add_argument("--analyze-only", action="store_true",
                    help="recompute the tables from OUT/runs.json")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="results/asa_slurm")
    ap.add_argument("--probe", type=int, default=0, metavar="N",
                    help="measure Slurm's own start latency N times instead (module doc)")
    ap.add_argument("--slurm", choices=testbed.VERSIONS, default="22.05",
                    help="--probe: the testbed's Slurm version")
    args = ap.parse_args()
    if args.probe:
        lat = probe(args)
        print(f"| {args.slurm} | {args.scheduler_parameters or 'testbed default'} | "
              + " | ".join(f"{statistics.mean(v):.2f} (max {max(v):.0f})"
                           for v in lat.values()) + " |")
        return
    out = Path(args.out)
    if args.analyze_only:
        saved = json.loads((out / "runs.json").read_text())
        args = SimpleNamespace(**{"stretch": 1, **saved["args"], "out": args.out,
                                  "analyze_only": True})
    bg = scaled_slice(SimpleNamespace(trace=args.trace, first=args.first, jobs=args.jobs,
                                      nodes=8, run_min=args.run_min, run_max=args.run_max,
                                      limit_max=args.limit_max, load=args.load))
    k = getattr(args, "stretch", 1)
    bg = [{**j, "sleep": j["sleep"] * k, "limit": j["limit"] * k, "at": j["at"] * k}
          for j in bg]
    if not args.analyze_only:
        out.mkdir(parents=True, exist_ok=True)
        runs: dict = {}
        with tempfile.TemporaryDirectory(prefix="hpcopt-asa-slurm-") as work:
            def one(strategy):
                t = time.monotonic()
                runs[strategy] = real_runs(strategy, bg, args, Path(work))
                print(f"{strategy}: real runs in {time.monotonic() - t:.0f} s",
                      file=sys.stderr, flush=True)
            if args.parallel:
                threads = [threading.Thread(target=one, args=(s,)) for s in args.strategies]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
            else:
                for s in args.strategies:
                    one(s)
        missing = [s for s in args.strategies if s not in runs]
        if missing:
            sys.exit(f"asa_slurm: no real runs of {', '.join(missing)}")
        saved = {"args": vars(args), "runs": {s: runs[s] for s in args.strategies}}
        (out / "runs.json").write_text(json.dumps(saved, indent=1))
    rows = analyze(saved, bg, args)
    (out / "rows.json").write_text(json.dumps({"args": saved["args"], "rows": rows}, indent=1))
    print_tables(rows)


if __name__ == "__main__":
    main()
