"""The adapter's real cycle (read, decide, release) at 1k to 50k pending single jobs.

A 16-node testbed (Slurm 22.05 of the host; ``MaxJobCount`` raised to 120,000) with 14
nodes busy with long jobs; single one-node jobs are submitted (held by the submit script)
until the queue holds each target count.  At each count, cycles of the code under test
alternate with cycles of a baseline (``--baseline REV``: the package at that git revision,
by default the merge base with ``main``), each in its own process on the same cluster, in
the same minute.  The code under test reads ``squeue -O`` text and, before their release,
the picked jobs one ``squeue --jobs=ID`` each (squeue reads the whole queue for several
ids); 0b4b145 is the code that read ``squeue --json`` (every job, twice per releasing
cycle), bb4bb1a the one that read the text and the picked jobs in one call.  A cycle
releases the 2 free nodes' jobs (they run 1 s; each cycle waits for them to end), as
``hpcopt slurm run`` does.  Also timed: ``squeue --json`` and ``squeue -O`` alone, and
their output sizes; hpcopt's own part of a
cycle in this process (``own_*_s``: reading the ``squeue -O`` text and building the state,
with the garbage collector paused as the adapter does and left on, deciding, a whole dry-run
cycle on Slurm's answers read once; best of 3), and
the load average when each count's row is written.

    python benchmarks/slurm_cycle_scale.py --counts 1000 5000 20000 50000
    python benchmarks/slurm_cycle_scale.py --counts 1000 5000 20000 50000 --baseline 0b4b145

Writes ``benchmarks/results/slurm_cycle_scale.json`` and prints one row per count and code.
Needs root (the testbed); other work on the machine shows in the figures, so each count's
two codes run side by side.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "slurm_cycle_scale.json"

#: one cycle in a fresh process of the package on PYTHONPATH: the record's figures and the
#: cycle's wall time (the process's start and imports aside)
CYCLE = r"""
import json, sys, time
from hpcopt.policies import make_policy
from hpcopt.slurm import adapter as a
from hpcopt.slurm.state import Slurm
slurm = Slurm(timeout=120)
policy = make_policy("fcfs")
if hasattr(a, "Settings"):
    ad = a.Adapter(policy, a.Settings("batch"), slurm=slurm, say=lambda s: None)
else:
    ad = a.Adapter(policy, slurm=slurm, partition="batch", say=lambda s: None)
t0 = time.perf_counter()
rec = ad.cycle()
wall = time.perf_counter() - t0
rec = rec.as_json() if hasattr(rec, "as_json") else rec
print(json.dumps({"wall_s": wall, **{k: rec.get(k) for k in
      ("ok", "pending", "read_s", "decide_s", "release_s", "released", "error", "free_nodes",
       "completing", "notes", "changed")}}))
"""


def package_tree(rev: str | None, where: Path) -> Path:
    """The package as installed (``models/`` and ``solvers/`` as ``hpcopt.models`` and
    ``hpcopt.solvers``) under ``where``: at git revision ``rev``, or the working tree's."""
    where.mkdir(parents=True, exist_ok=True)
    if rev is None:
        shutil.copytree(ROOT / "hpcopt", where / "hpcopt", symlinks=True)
        for part in ("models", "solvers"):
            shutil.copytree(ROOT / part, where / part)
    else:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "hpcopt", "models",
                                  "solvers"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    for part in ("models", "solvers"):
        link = where / "hpcopt" / part  # (a link to ../part in later trees)
        if link.is_symlink():
            link.unlink()
        (where / part).rename(link)
    return where


def raise_max_jobs(d: Path, conf: Path, env: dict) -> None:
    """Restart slurmctld with ``MaxJobCount=120000`` (Slurm reads it at start only)."""
    from hpcopt import testbed

    conf.write_text(conf.read_text() + "MaxJobCount=120000\n")
    pid = int((d / "run" / "slurmctld.pid").read_text())
    os.kill(pid, signal.SIGTERM)
    for _ in range(100):
        if not testbed.running(d):
            break
        time.sleep(0.1)
    subprocess.run([*testbed.daemon(d, "slurmctld"), "-f", str(conf)], env=env, check=True)
    for _ in range(300):
        out = subprocess.run(["sinfo", "-h", "-o", "%t"], env=env, capture_output=True,
                             text=True).stdout.split()
        if out and all(s == "idle" for s in out):
            return
        time.sleep(0.2)
    raise SystemExit("the testbed's nodes did not come back after the restart")


def busy(n: int, env: dict) -> None:
    """``n`` nodes busy for the whole run: one-node jobs of ten hours, released."""
    for _ in range(n):
        out = subprocess.run(["sbatch", "--parsable", "-o", "/dev/null", "-N", "1", "-t",
                              "600", "--wrap", "sleep 36000"], env=env, check=True,
                             capture_output=True, text=True).stdout
        subprocess.run(["scontrol", "release", out.strip()], env=env, check=True)


def submit(n: int, env: dict, workers: int = 4) -> None:
    """``n`` single one-node jobs (one-minute limit, 1 s of sleep), ``workers`` sbatch at a
    time."""
    def one(_):
        subprocess.run(["sbatch", "-o", "/dev/null", "-N", "1", "-t", "1", "--wrap",
                        "sleep 1"], env=env, check=True, capture_output=True, timeout=120)

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, range(n)))


def wait_done(ids, env: dict, timeout: float = 120.0) -> None:
    """Until the jobs ``ids`` (a cycle's releases) have run and ended."""
    t0 = time.monotonic()
    while ids and time.monotonic() - t0 < timeout:
        out = subprocess.run(["squeue", "-h", "-t", "PD,R,CG,CF", "-o", "%i",
                              "--jobs=" + ",".join(map(str, ids))], env=env,
                             capture_output=True, text=True).stdout
        if not out.split():
            return
        time.sleep(0.3)
    if ids:
        raise SystemExit(f"jobs {ids} still not ended after {timeout:g} s")


def held(env: dict) -> int:
    out = subprocess.run(["squeue", "-h", "-t", "PD", "-o", "%i"], env=env, check=True,
                         capture_output=True, text=True).stdout
    return len(out.split())


def timed(cmd: list[str], env: dict) -> tuple[float, int]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, check=True, capture_output=True).stdout
    return time.perf_counter() - t0, len(out)


def cycle(path: Path, env: dict) -> dict:
    """One cycle of the package under ``path`` (``python -S`` out of the source tree: no
    editable install's path hook, the libraries from this environment's site-packages)."""
    libs = {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}
    run_env = {**env, "PYTHONPATH": os.pathsep.join([str(path), *sorted(libs)])}
    p = subprocess.run([sys.executable, "-S", "-c", CYCLE], env=run_env, cwd="/",
                       capture_output=True, text=True, timeout=600)
    if p.returncode:
        raise SystemExit(f"cycle of {path} failed: {p.stderr.strip()[-400:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def own_part(env: dict, repeat: int = 3) -> dict:
    """hpcopt's own part of a cycle, in this process (this tree's code), best of
    ``repeat``, on Slurm's answers read once beforehand: reading the ``squeue -O`` text and
    building the cycle's state, with the cyclic garbage collector paused (as
    ``Adapter.read_state`` does) and left on (``*_gc_on``); the decision (``fcfs``); a whole
    dry-run cycle (``Adapter.cycle``: read, state, decision, record; no re-read or release)
    with those answers in place of Slurm's commands."""
    from hpcopt.policies import make_policy
    from hpcopt.sim.decide import decide
    from hpcopt.slurm.adapter import Adapter, Settings, cycle_state
    from hpcopt.slurm.state import SQUEUE_FORMAT, Slurm, Snapshot, parse_sinfo, parse_squeue_text

    text = subprocess.run(["squeue", "-h", "-a", "--array-unique", "-O", SQUEUE_FORMAT],
                          env={**env, "SLURM_TIME_FORMAT": "%s"}, check=True,
                          capture_output=True, text=True).stdout
    doc = subprocess.run(["sinfo", "--json"], env=env, check=True, capture_output=True,
                         text=True).stdout
    nodes = parse_sinfo(json.loads(doc))
    policy = make_policy("fcfs")

    def answer(cmd, **_):  # Slurm's answers as read above, for a whole cycle
        return subprocess.CompletedProcess(cmd, 0, text if cmd[0] == "squeue" else doc, "")

    adapter = Adapter(policy, Settings("batch", dry_run=True), slurm=Slurm(run=answer),
                      say=lambda s: None)
    best: dict = {"own_read_state_s": [], "own_read_state_gc_on_s": [], "own_decide_s": [],
                  "own_cycle_s": []}
    for _ in range(repeat):
        took = []
        for paused in (True, False):
            if paused:
                gc.disable()
            try:
                t0 = time.perf_counter()
                jobs = parse_squeue_text(text)
                state = cycle_state(Snapshot(time.time(), jobs, nodes, 0.0), Settings("batch"))
                took.append(time.perf_counter() - t0)
            finally:
                gc.enable()
        t0 = time.perf_counter()
        decide(state.cluster, policy)
        took.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        adapter.cycle()
        took.append(time.perf_counter() - t0)
        for k, v in zip(best, took):
            best[k].append(v)
    return {k: round(min(v), 4) for k, v in best.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--counts", type=int, nargs="+", default=[1000, 5000, 20000, 50000])
    ap.add_argument("--cycles", type=int, default=3, help="cycles per count and code")
    ap.add_argument("--baseline", default=None, help="git revision of the baseline code "
                    "(default: the merge base with main)")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    from hpcopt import testbed

    rev = args.baseline or subprocess.run(
        ["git", "-C", str(ROOT), "merge-base", "main", "HEAD"], check=True,
        capture_output=True, text=True).stdout.strip()
    rows = []
    with tempfile.TemporaryDirectory(prefix="hpcopt-cycle-scale-") as tmp:
        codes = {"baseline": package_tree(rev, Path(tmp) / "baseline"),
                 "this": package_tree(None, Path(tmp) / "this")}
        d = Path(tmp) / "tb"
        conf = testbed.start(d, 16)
        env = {**os.environ, "SLURM_CONF": str(conf)}
        try:
            raise_max_jobs(d, conf, env)
            busy(14, env)  # 14 nodes busy for the whole run, 2 free
            for target in sorted(args.counts):
                t0 = time.monotonic()
                submit(max(0, target - held(env)), env)
                fill_s = time.monotonic() - t0
                json_s, json_b = timed(["squeue", "--json"], env)
                text_s, text_b = timed(["env", "SLURM_TIME_FORMAT=%s", "squeue", "-h", "-a",
                                        "-O", testbed_format()], env)
                own = own_part(env)
                runs: dict = {name: [] for name in codes}
                for _ in range(args.cycles):
                    for name, path in codes.items():
                        submit(max(0, target - held(env)), env)  # back to the count
                        runs[name].append(cycle(path, env))
                        wait_done(runs[name][-1]["released"], env)
                for name, recs in runs.items():
                    bad = [r for r in recs if not r["ok"]]
                    if bad:
                        raise SystemExit(f"{name} at {target}: {bad[0]}")
                    row = dict(
                        pending=target, code=name,
                        rev=rev[:10] if name == "baseline" else "HEAD",
                        cycles=len(recs),
                        cycle_s_median=round(statistics.median(r["wall_s"] for r in recs), 3),
                        read_s_median=round(statistics.median(r["read_s"] for r in recs), 3),
                        decide_s_median=round(statistics.median(r["decide_s"] for r in recs),
                                              3),
                        release_s_median=round(statistics.median(r["release_s"]
                                                                 for r in recs), 3),
                        released=sum(len(r["released"]) for r in recs),
                        squeue_json_s=round(json_s, 3), squeue_json_mb=round(json_b / 1e6, 1),
                        squeue_text_s=round(text_s, 3), squeue_text_mb=round(text_b / 1e6, 1),
                        fill_s=round(fill_s, 1), load=round(os.getloadavg()[0], 1),
                        **(own if name == "this" else {}))
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    if os.environ.get("HPCOPT_BENCH_DEBUG"):
                        print(json.dumps(recs), flush=True)
        finally:
            testbed.stop(d)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"command": " ".join(sys.argv), "rows": rows}, indent=1) + "\n")
    print(f"wrote {out}")


def testbed_format() -> str:
    from hpcopt.slurm.state import SQUEUE_FORMAT

    return SQUEUE_FORMAT


if __name__ == "__main__":
    main()
