"""Big Job, Per-Stage and ASA on a real Slurm, against the simulator on the same jobs.

For each strategy a fresh ``--no-hold`` testbed (8 nodes x 4 cores, Slurm's own
``sched/backfill``) gets the same background load -- a KTH-SP2 slice scaled as in
``slurm_validation.py`` (sizes 1..8 nodes, sleeps ``--run-min``..``--run-max`` s, limits of
whole minutes, arrivals at an offered load ``--load``) -- and, ``--lag`` seconds after the
first background job, the paper's three workflow shapes (Montage, BLAST, Statistics;
``hpcopt.workflows.paper_workflow`` at ``--cores`` cores) at ``--time-scale``, all at once,
sharing one ASA estimator (``--state`` per strategy run, fresh).  Then the simulator
(FCFS + EASY, ``run_workflow``) plays each workflow against the background jobs as Slurm
recorded them (jobcomp: submit times, real run times, limits), all in workflow seconds, and
the deviation per workflow run is reported (out of sample: nothing is fitted).

    python benchmarks/asa_slurm.py --out results/asa_slurm        (root; about 8 minutes)

Writes ``OUT/rows.json`` and prints the markdown table.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))

from slurm_validation import DEFAULT_TRACE, completed_jobs, scaled_slice, submit_all  # noqa: E402

from hpcopt.domain import Job, System  # noqa: E402
from hpcopt.slurm import testbed  # noqa: E402
from hpcopt.slurm.state import Slurm  # noqa: E402
from hpcopt.workflows import paper_workflow, run_workflow  # noqa: E402
from hpcopt.workflows.onslurm import SharedEstimator, SlurmWorkflowRun  # noqa: E402

WORKFLOWS = ("Montage", "BLAST", "Statistics")
KEYS = ("makespan", "core_hours", "perceived_wait")


def real_runs(strategy, bg, args, work: Path) -> tuple[dict, dict, float]:
    """Run the three workflows under ``strategy`` with the background ``bg`` on a fresh
    testbed; {workflow: WorkflowResult}, the background's jobcomp records, the testbed t0."""
    d = work / strategy
    testbed.start(d, 8, hold=False, scheduler="backfill")
    try:
        env = testbed.env(d)
        slurm = Slurm(env=env, timeout=20, retries=2)
        feeder = threading.Thread(target=submit_all, args=(bg, env), daemon=True)
        feeder.start()
        time.sleep(args.lag)
        from hpcopt.agents.asa import ASAEstimator

        state = work / f"{strategy}-asa.json"
        results, threads = {}, []
        for name in WORKFLOWS:
            est = SharedEstimator(state, ASAEstimator(seed=args.seed))
            run = SlurmWorkflowRun(paper_workflow(name, args.cores), strategy, slurm=slurm,
                                   out=work / f"{strategy}-{name}",
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
        deadline = time.monotonic() + 600
        while len(completed_jobs(d)) < len(bg) and time.monotonic() < deadline:
            time.sleep(2)
        done = completed_jobs(d)
        return results, done, min(r.settings["t0"] for r in results.values())
    finally:
        testbed.stop(d)


def simulated(strategy, result, done: dict, bg, args):
    """The simulator's run of the same workflow against the background jobs Slurm ran."""
    t0, scale = result.settings["t0"], args.time_scale
    limits = {j["name"]: j["limit"] for j in bg}
    jobs = [Job(id=i + 1, submit=(r["submit"] - t0) / scale,
                runtime=max(1.0, (r["end"] - r["start"]) / scale),
                walltime=max(limits.get(name, 1) * 60.0 / scale,
                             (r["end"] - r["start"]) / scale),
                nodes=max(1, r["nodes"]))
            for i, (name, r) in enumerate(sorted(done.items())) if name in limits]
    first = min(j.submit for j in jobs)
    return run_workflow(paper_workflow(result.settings["workflow"], args.cores),
                        (jobs, System(8)), strategy, cores_per_node=4, at=0.0,
                        warmup=-first if first < 0 else 0.0, horizon=1e9,
                        name=result.settings["workflow"], seed=args.seed)


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
    ap.add_argument("--cores", type=int, default=16)
    ap.add_argument("--time-scale", type=float, default=0.01)
    ap.add_argument("--strategies", nargs="+", default=["bigjob", "perstage", "asa"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="results/asa_slurm")
    args = ap.parse_args()
    bg = scaled_slice(SimpleNamespace(trace=args.trace, first=args.first, jobs=args.jobs,
                                      nodes=8, run_min=args.run_min, run_max=args.run_max,
                                      limit_max=args.limit_max, load=args.load))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="hpcopt-asa-slurm-") as work:
        for strategy in args.strategies:
            t = time.monotonic()
            results, done, _ = real_runs(strategy, bg, args, Path(work))
            print(f"{strategy}: real runs in {time.monotonic() - t:.0f} s", file=sys.stderr)
            for name in WORKFLOWS:
                real = results[name].summary
                sim = simulated(strategy, results[name], done, bg, args).summary
                row = {"workflow": name, "strategy": strategy}
                for k in KEYS:
                    row[f"real_{k}"], row[f"sim_{k}"] = real[k], sim[k]
                row["real_hits"], row["real_misses"] = real["hits"], real["misses"]
                rows.append(row)
    (out / "rows.json").write_text(json.dumps({"args": vars(args), "rows": rows}, indent=1))
    print("| workflow | strategy | makespan real / sim (s) | core-hours real / sim | "
          "perceived wait real / sim (s) | ASA hits / misses |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        def pair(k, fmt, r=r):
            a, b = r[f"real_{k}"], r[f"sim_{k}"]
            dev = f" ({(a - b) / b:+.0%})" if b else ""
            return f"{a:{fmt}} / {b:{fmt}}{dev}"
        hm = (f"{r['real_hits']:.0f} / {r['real_misses']:.0f}" if r["strategy"] == "asa"
              else "")
        print(f"| {r['workflow']} | {r['strategy']} | {pair('makespan', '.0f')} | "
              f"{pair('core_hours', '.2f')} | {pair('perceived_wait', '.0f')} | {hm} |")


if __name__ == "__main__":
    main()
