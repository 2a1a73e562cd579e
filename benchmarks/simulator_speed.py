"""Simulator speed: hpcopt's FCFS+EASY against a plain-Python reference loop, and scaling.

Four tables (issues #2 and #11):

``classic``  FCFS+EASY and the knapsack policy on whole real traces, jobs per second
             (issue #2's target: all of KTH-SP2 under FCFS+EASY in at most 3 s).
``reference`` replays of the largest real traces (>= 100k jobs, written once as clean SWF
             files under OUT/replays) run by ``hpcopt simulate FILE --nodes N --no-progress``
             and by ``benchmarks/reference_easy.py FILE --nodes N`` as whole processes, and
             in-process (``hpcopt.simulate`` vs ``reference_easy.simulate_easy`` on the same
             parsed jobs); runs interleaved, best of ``--repeat``; start times asserted
             identical job by job.  A third whole process reads the file with hpcopt's
             reader and runs the reference loop (``ref_hpload``: the loop's share alone).
             Also a whole-process breakdown (interpreter + imports,
             trace load, simulate loop, metrics, summary print, writing).
``scaling``  one process per size (10k .. 500k jobs of a replay): jobs per second of the
             loop and peak resident memory of the whole process, hpcopt and reference.
``loops``    the loop ratio on the replays (``Simulator.run`` and ``hpcopt.simulate`` over
             the reference loop, CPU seconds, best of 2 in each process) of this tree and of
             ``--baseline``, one process per run, interleaved; medians of ``--repeat``.

A replay concatenates copies of a real trace, each shifted by the trace's submit span plus
one day, with ids renumbered 1..N.

    python benchmarks/simulator_speed.py [--tables classic,reference,scaling,loops]
                                         [--repeat 3] [--baseline DIR]
                                         [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import hpcopt
from hpcopt.datadir import data_root

HERE = Path(__file__).resolve().parent
DATA = data_root() / "hpc_swf"  # the data directory (hpcopt.datadir)
TRACES = {
    "KTH-SP2": (DATA / "pwa" / "KTH-SP2-1996-2.1-cln.swf.gz", {}),
    "lublin_256": (DATA / "lublin_model" / "lublin_256.swf.gz", {"nodes": 256}),
}
POLICIES = {
    "fcfs+easy": dict(policy="fcfs"),
    "knapsack(W=20,dp)+easy": dict(policy="knapsack", backend="dp"),
}
# the largest real traces, replayed to >= 100k jobs: name -> (file, load_trace kwargs, jobs)
REPLAYS = {
    "KTH-SP2 x4": (DATA / "pwa" / "KTH-SP2-1996-2.1-cln.swf.gz", {}, 113_900),
    "Atlas x3": (DATA / "pwa" / "LLNL-Atlas-2006-2.1-cln.swf.gz",
                 {"cores_per_node": 8, "nodes": 1152}, 117_621),
    "Theta-2022 x5": (DATA / "alcf" / "theta_2022.swf.gz", {}, 119_555),
}
SCALING_TRACE = "KTH-SP2 x4"
SCALING_SIZES = [10_000, 20_000, 50_000, 100_000, 200_000, 500_000]
REFERENCE = HERE / "reference_easy.py"


def _reference_module():
    spec = importlib.util.spec_from_file_location("reference_easy", REFERENCE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def write_replay(path: Path, src: Path, kwargs: dict, n_jobs: int) -> int:
    """Write ``n_jobs`` of a replay of ``src`` as a clean SWF file; returns the node count."""
    trace = hpcopt.load_trace(src, **kwargs)
    jobs = list(trace.jobs)
    first = jobs[0].submit
    shift = jobs[-1].submit - first + 86_400.0
    nodes = trace.system.nodes
    lines = ["; Version: 2.2", f"; MaxNodes: {nodes}", f"; MaxProcs: {nodes}",
             f"; Note: replay of {src.name} ({len(jobs)} cleaned jobs) shifted by "
             f"{shift:g} s per copy, ids renumbered"]
    k = 0
    while len(lines) - 4 < n_jobs:
        for j in jobs:
            i = len(lines) - 4
            if i == n_jobs:
                break
            size = str(j.nodes)
            lines.append(" ".join([str(i + 1), _num(j.submit - first + k * shift), "-1",
                                   _num(j.runtime), size, "-1", "-1", size, _num(j.walltime),
                                   "-1", "-1", "-1", "-1", "-1", "-1", "-1", "-1", "-1"]))
        k += 1
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return nodes


def _run(cmd: list[str]) -> tuple[float, float, str]:
    """Wall seconds, 0.0 (unused) and stdout of a child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err}")
    return wall, 0.0, out


def _hpcopt_cmd(path: Path, nodes: int, out: Path | None = None) -> list[str]:
    cmd = [str(Path(sys.executable).parent / "hpcopt"), "simulate", str(path), "--nodes",
           str(nodes), "--no-progress"]
    return cmd + (["--out", str(out)] if out else [])


def _baseline_cmd(root: str, path: Path, nodes: int) -> list[str]:
    """``hpcopt simulate`` from another source tree (``--baseline``: e.g. an older commit's
    ``git archive``), imported first through ``sys.path``."""
    code = (f"import sys; sys.path.insert(0, {root!r}); from hpcopt.cli import main; "
            f"sys.exit(main(['simulate', {str(path)!r}, '--nodes', '{nodes}', '--no-progress']))")
    return [sys.executable, "-c", code]


def _ref_cmd(path: Path, nodes: int, out: Path | None = None) -> list[str]:
    cmd = [sys.executable, str(REFERENCE), str(path), "--nodes", str(nodes)]
    return cmd + (["--out", str(out)] if out else [])


REF_HPLOAD = r"""
import sys, importlib.util
from hpcopt.api import load_trace
spec = importlib.util.spec_from_file_location("ref", sys.argv[3])
ref = importlib.util.module_from_spec(spec); spec.loader.exec_module(ref)
trace = load_trace(sys.argv[1], nodes=int(sys.argv[2]))
jobs = [(j.id, j.submit, j.runtime, j.walltime, j.nodes) for j in trace.jobs]
start = ref.simulate_easy(jobs, int(sys.argv[2]))
waits = [start[j[0]] - j[1] for j in jobs]
print(f"jobs {len(jobs)}  avg_wait {sum(waits) / len(waits):.1f}  max_wait {max(waits):g}")
"""


def _ref_hpload_cmd(path: Path, nodes: int) -> list[str]:
    return [sys.executable, "-c", REF_HPLOAD, str(path), str(nodes), str(REFERENCE)]


def _check_identical(hp_csv: Path, ref_csv: Path, name: str) -> None:
    import csv

    with open(hp_csv) as fh:
        hp = {int(r["job_id"]): float(r["start"]) for r in csv.DictReader(fh)}
    with open(ref_csv) as fh:
        ref = {int(r["id"]): float(r["start"]) for r in csv.DictReader(fh)}
    if hp != ref:
        bad = [k for k in ref if hp.get(k) != ref[k]][:5]
        raise SystemExit(f"{name}: hpcopt and the reference differ (jobs {bad} ...)")


BREAKDOWN = r"""
import sys, time, json
t0 = time.perf_counter()
from hpcopt.cli import _print_summary
from hpcopt.api import load_trace, simulate
t1 = time.perf_counter()
trace = load_trace(sys.argv[1], nodes=int(sys.argv[2]))
t2 = time.perf_counter()
from hpcopt.sim.driver import Simulator
from hpcopt.api import _extra_columns
from hpcopt.policies import build_policy
from hpcopt.sim import metrics
pol = build_policy("fcfs"); pol.reset(None)
jobs = list(trace.jobs)
t3 = time.perf_counter()
sim = Simulator(jobs, trace.system, pol).run()
t4 = time.perf_counter()
res = simulate(trace, policy="fcfs")   # the metrics part = simulate() minus the loop
t5 = time.perf_counter()
import io, contextlib
with contextlib.redirect_stdout(io.StringIO()):
    _print_summary({"fcfs": res.summary})
t6 = time.perf_counter()
res.write(sys.argv[3])
t7 = time.perf_counter()
print(json.dumps(dict(imports=t1 - t0, load=t2 - t1, policy_import=t3 - t2, loop=t4 - t3,
                      simulate=t5 - t4, print=t6 - t5, write=t7 - t6)))
"""


def table_reference(args, out: Path, rows_out: list) -> None:
    import pandas as pd

    ref = _reference_module()
    replays = out / "replays"
    rows, rows_before = [], []
    for name, (src, kwargs, n_jobs) in REPLAYS.items():
        if args.replays and name not in args.replays.split(","):
            continue
        path = replays / (name.replace(" ", "_") + ".swf")
        nodes = write_replay(path, src, kwargs, n_jobs)
        # correctness first: whole-process outputs, start times job by job
        _run(_hpcopt_cmd(path, nodes, out / "hp_out"))
        _run(_ref_cmd(path, nodes, out / "ref_starts.csv"))
        _check_identical(out / "hp_out" / "jobs.csv", out / "ref_starts.csv", name)
        trace = hpcopt.load_trace(path, nodes=nodes)
        tuples = [(j.id, j.submit, j.runtime, j.walltime, j.nodes) for j in trace.jobs]
        res = hpcopt.simulate(trace, policy="fcfs")
        starts = dict(zip(res.jobs["job_id"].tolist(), res.jobs["start"].tolist()))
        if starts != ref.simulate_easy(tuples, nodes):
            raise SystemExit(f"{name}: in-process start times differ")
        best = dict(hp_whole=1e9, ref_whole=1e9, hp_whole_out=1e9, ref_whole_out=1e9,
                    ref_hpload=1e9, hp_sim=1e9, hp_loop=1e9, ref_loop=1e9)
        from hpcopt.policies import build_policy
        from hpcopt.sim.driver import Simulator
        for _ in range(args.repeat):  # interleaved: hpcopt, reference, hpcopt, ...
            best["hp_whole"] = min(best["hp_whole"], _run(_hpcopt_cmd(path, nodes))[0])
            best["ref_whole"] = min(best["ref_whole"], _run(_ref_cmd(path, nodes))[0])
            best["hp_whole_out"] = min(best["hp_whole_out"],
                                       _run(_hpcopt_cmd(path, nodes, out / "hp_out"))[0])
            best["ref_whole_out"] = min(best["ref_whole_out"],
                                        _run(_ref_cmd(path, nodes, out / "ref_starts.csv"))[0])
            best["ref_hpload"] = min(best["ref_hpload"], _run(_ref_hpload_cmd(path, nodes))[0])
            if args.baseline:
                best["before"] = min(best.get("before", 1e9),
                                     _run(_baseline_cmd(args.baseline, path, nodes))[0])
            t0 = time.perf_counter()
            hpcopt.simulate(trace, policy="fcfs")
            best["hp_sim"] = min(best["hp_sim"], time.perf_counter() - t0)
            t0 = time.perf_counter()
            ref.simulate_easy(tuples, nodes)
            best["ref_loop"] = min(best["ref_loop"], time.perf_counter() - t0)
            pol = build_policy("fcfs")
            t0 = time.perf_counter()
            Simulator(list(trace.jobs), trace.system, pol).run()
            best["hp_loop"] = min(best["hp_loop"], time.perf_counter() - t0)
        n = len(tuples)
        if args.baseline:
            rows_before.append(dict(trace=name, jobs=n, before_whole_s=round(best["before"], 3),
                                    hp_whole_s=round(best["hp_whole"], 3),
                                    ref_whole_s=round(best["ref_whole"], 3),
                                    before_ratio=round(best["before"] / best["ref_whole"], 2),
                                    after_ratio=round(best["hp_whole"] / best["ref_whole"], 2),
                                    speedup=round(best["before"] / best["hp_whole"], 2)))
            print("before/after", rows_before[-1], flush=True)
        rows.append(dict(
            trace=name, jobs=n, nodes=nodes,
            hp_whole_s=round(best["hp_whole"], 3), ref_whole_s=round(best["ref_whole"], 3),
            whole_ratio=round(best["hp_whole"] / best["ref_whole"], 2),
            ref_hpload_whole_s=round(best["ref_hpload"], 3),
            whole_ratio_hpload=round(best["hp_whole"] / best["ref_hpload"], 2),
            # the floor: hpcopt's reader + the plain loop, against the plain process
            hpload_vs_ref=round(best["ref_hpload"] / best["ref_whole"], 2),
            hp_whole_out_s=round(best["hp_whole_out"], 3),
            ref_whole_out_s=round(best["ref_whole_out"], 3),
            whole_out_ratio=round(best["hp_whole_out"] / best["ref_whole_out"], 2),
            hp_simulate_s=round(best["hp_sim"], 3), hp_loop_s=round(best["hp_loop"], 3),
            ref_loop_s=round(best["ref_loop"], 3),
            inproc_ratio=round(best["hp_sim"] / best["ref_loop"], 2),
            loop_ratio=round(best["hp_loop"] / best["ref_loop"], 2),
            hp_jobs_per_s=round(n / best["hp_sim"]), identical_starts=True))
        print(rows[-1], flush=True)
        # whole-process breakdown of hpcopt (best of repeat per stage), python startup alone
        stages: dict[str, float] = {}
        for _ in range(args.repeat):
            startup = _run([sys.executable, "-c", "pass"])[0]
            got = json.loads(_run([sys.executable, "-c", BREAKDOWN, str(path), str(nodes),
                                   str(out / "hp_out")])[2].strip().splitlines()[-1])
            got["interpreter"] = startup
            for k, v in got.items():
                stages[k] = min(stages.get(k, 1e9), v)
        stages["metrics"] = max(stages.pop("simulate") - stages["loop"], 0.0)
        rows_out.append(dict(trace=name, **{k: round(v, 3) for k, v in stages.items()}))
        print("breakdown", rows_out[-1], flush=True)
    df = pd.DataFrame(rows)
    df.to_csv(out / "simulator_speed_reference.csv", index=False)
    print(df.to_string(index=False))
    if rows_before:
        ba = pd.DataFrame(rows_before)
        ba.to_csv(out / "simulator_speed_before_after.csv", index=False)
        print(ba.to_string(index=False))
    bd = pd.DataFrame(rows_out)
    bd.to_csv(out / "simulator_speed_breakdown.csv", index=False)
    print(bd.to_string(index=False))


# peak RSS: VmHWM of the process's own address space (ru_maxrss would include the memory of
# the benchmark process it was forked from)
_HWM = ("int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])"
        " / 1024")
SCALE_HP = r"""
import sys, time, json
from hpcopt.api import load_trace, simulate
trace = load_trace(sys.argv[1], nodes=int(sys.argv[2]), max_jobs=int(sys.argv[3]))
t0 = time.perf_counter()
res = simulate(trace, policy="fcfs")
t1 = time.perf_counter()
print(json.dumps(dict(jobs=len(trace.jobs), loop=t1 - t0, rss=HWM)))
""".replace("HWM", _HWM)
SCALE_REF = r"""
import sys, time, json, importlib.util
spec = importlib.util.spec_from_file_location("ref", sys.argv[4])
ref = importlib.util.module_from_spec(spec); spec.loader.exec_module(ref)
jobs = ref.read_clean_swf(sys.argv[1])[:int(sys.argv[3])]
t0 = time.perf_counter()
ref.simulate_easy(jobs, int(sys.argv[2]))
t1 = time.perf_counter()
print(json.dumps(dict(jobs=len(jobs), loop=t1 - t0, rss=HWM)))
""".replace("HWM", _HWM)


def table_scaling(args, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    src, kwargs, _ = REPLAYS[SCALING_TRACE]
    sizes = [s for s in SCALING_SIZES if s <= args.max_jobs]
    rows = []
    for n in sizes:  # one file per size: both processes read exactly n jobs
        path = out / "replays" / (SCALING_TRACE.replace(" ", "_").split("_x")[0] + f"_{n}.swf")
        nodes = write_replay(path, src, kwargs, n)
        best = {}
        for _ in range(args.repeat):
            for who, script in (("hp", SCALE_HP), ("ref", SCALE_REF)):
                text = _run([sys.executable, "-c", script, str(path), str(nodes), str(n),
                             str(REFERENCE)])[2]
                got = json.loads(text.strip().splitlines()[-1])
                assert got["jobs"] == n, got
                for key, v in ((f"{who}_loop", got["loop"]), (f"{who}_rss", got["rss"])):
                    best[key] = min(best.get(key, 1e18), v)
        rows.append(dict(jobs=n, hp_simulate_s=round(best["hp_loop"], 3),
                         hp_jobs_per_s=round(n / best["hp_loop"]),
                         ref_loop_s=round(best["ref_loop"], 3),
                         ref_jobs_per_s=round(n / best["ref_loop"]),
                         hp_peak_rss_mib=round(best["hp_rss"], 1),
                         ref_peak_rss_mib=round(best["ref_rss"], 1)))
        print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    df.to_csv(out / "simulator_speed_scaling.csv", index=False)
    print(df.to_string(index=False))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    a1.plot(df.jobs, df.hp_jobs_per_s, "o-", label="hpcopt.simulate")
    a1.plot(df.jobs, df.ref_jobs_per_s, "s--", label="reference loop")
    a1.set_xscale("log")
    a1.set_xlabel("jobs")
    a1.set_ylabel("jobs per second")
    a1.set_ylim(bottom=0)
    a1.legend()
    a2.plot(df.jobs, df.hp_peak_rss_mib, "o-", label="hpcopt (whole process)")
    a2.plot(df.jobs, df.ref_peak_rss_mib, "s--", label="reference (whole process)")
    a2.set_xlabel("jobs")
    a2.set_ylabel("peak RSS (MiB)")
    a2.legend()
    fig.suptitle(f"FCFS+EASY on {SCALING_TRACE} replay ({nodes} nodes), best of {args.repeat}")
    fig.tight_layout()
    fig.savefig(out / "simulator_speed_scaling.png", dpi=120)
    print(f"wrote {out / 'simulator_speed_scaling.csv'} and .png")


LOOPS = r"""
import importlib.util, json, sys, time
tree, path, nodes, reference = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if tree:
    sys.path.insert(0, tree)
import hpcopt
from hpcopt.policies import build_policy
from hpcopt.sim.driver import Simulator
spec = importlib.util.spec_from_file_location("ref", reference)
ref = importlib.util.module_from_spec(spec); spec.loader.exec_module(ref)
trace = hpcopt.load_trace(path, nodes=nodes)
tuples = [(j.id, j.submit, j.runtime, j.walltime, j.nodes) for j in trace.jobs]
got = dict(loop=1e9, ref=1e9, simulate=1e9)
for _ in range(2):  # CPU seconds (process_time): less sensitive to other processes
    t0 = time.process_time(); ref.simulate_easy(tuples, nodes)
    got["ref"] = min(got["ref"], time.process_time() - t0)
    pol = build_policy("fcfs")
    t0 = time.process_time(); Simulator(list(trace.jobs), trace.system, pol).run()
    got["loop"] = min(got["loop"], time.process_time() - t0)
    t0 = time.process_time(); hpcopt.simulate(trace, policy="fcfs")
    got["simulate"] = min(got["simulate"], time.process_time() - t0)
print(json.dumps(dict(got, file=hpcopt.__file__)))
"""


def table_loops(args, out: Path) -> None:
    """The loop ratio (``Simulator.run`` / the reference loop, and ``hpcopt.simulate`` / the
    reference loop) of this tree and of ``--baseline``, one process per run, the trees
    interleaved (the order flips every repeat); the median over ``--repeat`` runs."""
    import statistics

    import pandas as pd

    trees = {"this tree": ""}
    if args.baseline:
        trees["baseline"] = str(Path(args.baseline).resolve())
    rows = []
    for name, (src, kwargs, n_jobs) in REPLAYS.items():
        if args.replays and name not in args.replays.split(","):
            continue
        path = out / "replays" / (name.replace(" ", "_") + ".swf")
        nodes = write_replay(path, src, kwargs, n_jobs)
        runs: dict[str, list] = {t: [] for t in trees}
        for r in range(args.repeat):
            for tree in (list(trees) if r % 2 == 0 else list(trees)[::-1]):
                text = _run([sys.executable, "-c", LOOPS, trees[tree], str(path), str(nodes),
                             str(REFERENCE)])[2]
                got = json.loads(text.strip().splitlines()[-1])
                if trees[tree] and not got["file"].startswith(trees[tree]):
                    raise SystemExit(f"--baseline {trees[tree]}: imported {got['file']}")
                runs[tree].append(got)
        for tree, got in runs.items():
            rows.append(dict(
                trace=name, tree=tree, runs=len(got),
                loop_ratio=round(statistics.median(g["loop"] / g["ref"] for g in got), 3),
                simulate_ratio=round(statistics.median(g["simulate"] / g["ref"] for g in got),
                                     3),
                loop_s=round(statistics.median(g["loop"] for g in got), 3),
                ref_s=round(statistics.median(g["ref"] for g in got), 3)))
            print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    df.to_csv(out / "simulator_speed_loops.csv", index=False)
    print(df.to_string(index=False))


def table_classic(args, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    rows = []
    for tname, (path, kw) in TRACES.items():
        t0 = time.perf_counter()
        trace = hpcopt.load_trace(path, **kw)
        load_s = time.perf_counter() - t0
        for pname, pkw in POLICIES.items():
            best, res = float("inf"), None
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                res = hpcopt.simulate(trace, **pkw)
                best = min(best, time.perf_counter() - t0)
            n = res.summary["job_count"]
            rows.append(dict(trace=tname, policy=pname, jobs=n, load_s=round(load_s, 3),
                             simulate_s=round(best, 3), jobs_per_s=round(n / best),
                             avg_wait=round(res.summary["avg_wait"], 1),
                             utilization=round(res.summary["utilization"], 4)))
            print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    df.to_csv(out / "simulator_speed.csv", index=False)
    print(df.to_string(index=False))
    ax = df.pivot(index="trace", columns="policy", values="jobs_per_s").plot.bar(rot=0)
    ax.set_ylabel("simulated jobs per second")
    ax.set_title(f"hpcopt driver speed (best of {args.repeat})")
    plt.tight_layout()
    plt.savefig(out / "simulator_speed.png", dpi=120)
    print(f"wrote {out / 'simulator_speed.csv'} and {out / 'simulator_speed.png'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default="classic,reference,scaling",
                    help="comma-separated: classic, reference, scaling, loops")
    ap.add_argument("--repeat", type=int, default=3, help="runs per case; the best is reported")
    ap.add_argument("--max-jobs", type=int, default=max(SCALING_SIZES),
                    help="largest size of the scaling table")
    ap.add_argument("--replays", default="",
                    help=f"comma-separated subset of the reference table's replays "
                         f"({', '.join(REPLAYS)}); default all")
    ap.add_argument("--baseline", default="",
                    help="a source tree holding an older hpcopt/ package (e.g. "
                         "'git archive COMMIT | tar -x -C DIR'): its whole-process time "
                         "joins the reference table, its loop ratios the loops table, "
                         "interleaved")
    ap.add_argument("--out", default=str(HERE / "results"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tables = args.tables.split(",")
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f} at start", flush=True)
    if "classic" in tables:
        table_classic(args, out)
    if "reference" in tables:
        table_reference(args, out, [])
    if "scaling" in tables:
        table_scaling(args, out)
    if "loops" in tables:
        table_loops(args, out)
    print(f"# load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
