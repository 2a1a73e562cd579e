"""What each way of reading and releasing costs at 1k to 50k pending single jobs.

The testbed of ``slurm_cycle_scale.py`` (16 nodes, 14 busy, held single one-node jobs,
``MaxJobCount=120000``); at each count every command below runs ``--reps`` times (median
wall seconds), with the CPU seconds it cost slurmctld and the client process, so that a
growth can be told apart: Slurm's daemon answering, or the tool printing.  The commands:
the cycle's whole-queue read (``squeue -O`` of every field it needs), the same split into
the managed partition's pending jobs and every running one, the least squeue can print, the
picked jobs' re-read (one id and two: 22.05's squeue reads the whole queue for more than
one), ``scontrol show job``, the release's ``scontrol update`` and ``release`` one job at a
time and two in one call, ``sinfo --json``, and Slurm's REST daemon (``slurmrestd``, local
authentication over a unix socket; where it is installed) for the whole queue and one job.

    python benchmarks/slurm_read_options.py --counts 1000 5000 20000 50000

Writes ``benchmarks/results/slurm_read_options.json`` and prints one row per count.  Needs
root (the testbed).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from slurm_cycle_scale import busy, held, submit  # noqa: E402  (the same cluster and jobs)

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "slurm_read_options.json"
REST_USER = "nobody"  # slurmrestd's user, and its clients' (local authentication)


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) the process ``pid`` has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str], env: dict, ctld: int) -> dict:
    """One run of ``cmd``: wall, slurmctld CPU and client CPU seconds, output bytes."""
    c0, k0, t0 = cpu_of(ctld), children_cpu(), time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True)
    wall = time.perf_counter() - t0
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)[:200]}: exit {p.returncode}: "
                         f"{p.stderr.decode(errors='replace').strip()[-300:]}")
    return {"wall": wall, "ctld": cpu_of(ctld) - c0, "client": children_cpu() - k0,
            "bytes": len(p.stdout)}


def pending_ids(env: dict, n: int) -> list[str]:
    out = subprocess.run(["squeue", "-h", "-p", "batch", "-t", "PD", "-o", "%i"], env=env,
                         check=True, capture_output=True, text=True).stdout.split()
    return sorted(out, key=int)[-n:]


def start_rest(d: Path, env: dict) -> tuple[subprocess.Popen | None, Path]:
    """``slurmrestd`` on a unix socket in ``d`` (local authentication; as ``REST_USER``: it
    refuses to run as root), or None where it is not installed or does not start."""
    where = d / "rest"
    where.mkdir(mode=0o777)
    where.chmod(0o777)
    sock = where / "rest.sock"
    exe = shutil.which("slurmrestd")
    if exe is None:
        return None, sock
    with open(d / "rest.log", "w") as log:
        proc = subprocess.Popen(["runuser", "-u", REST_USER, "--", exe, "-a",
                                 "rest_auth/local", "-s", "openapi/v0.0.38", f"unix:{sock}"],
                                env=env, stdout=subprocess.DEVNULL, stderr=log)
    for _ in range(50):
        if sock.exists() or proc.poll() is not None:
            break
        time.sleep(0.1)
    if not sock.exists():
        proc.kill()
        proc.wait()
        print("slurmrestd did not start: " + (d / "rest.log").read_text()[-300:], flush=True)
        return None, sock
    return proc, sock


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--counts", type=int, nargs="+", default=[1000, 5000, 20000, 50000])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    from hpcopt import testbed
    from hpcopt.slurm.state import SQUEUE_FORMAT

    rows = []
    with tempfile.TemporaryDirectory(prefix="hpcopt-read-options-") as tmp:
        d = Path(tmp) / "tb"
        conf = testbed.start(d, 16, conf_extra=("MaxJobCount=120000",))
        env = {**os.environ, "SLURM_CONF": str(conf), "SLURM_TIME_FORMAT": "%s"}
        ctld = int((d / "run" / "slurmctld.pid").read_text())
        rest, sock = start_rest(d, env)
        try:
            busy(14, env)  # 14 nodes busy for the whole run, 2 free
            for target in sorted(args.counts):
                submit(max(0, target - held(env)), env)
                time.sleep(2)
                c0 = cpu_of(ctld)
                time.sleep(5)
                row: dict = {"pending": target, "ctld_idle_cpu_share": round(
                    (cpu_of(ctld) - c0) / 5, 3)}
                runs: dict = {}
                for _ in range(args.reps):
                    a, b, c, e = pending_ids(env, 4)
                    cmds = {
                        "squeue_O_all": ["squeue", "-h", "-a", "--array-unique", "-O",
                                         SQUEUE_FORMAT],
                        "squeue_O_pending_batch": ["squeue", "-h", "-a", "--array-unique",
                                                   "-p", "batch", "-t", "PD", "-O",
                                                   SQUEUE_FORMAT],
                        "squeue_O_running": ["squeue", "-h", "-a", "-t",
                                             "R,CG,CF,S,ST,SO,RS,SI", "-O", SQUEUE_FORMAT],
                        "squeue_o_id_only": ["squeue", "-h", "-a", "-o", "%i"],
                        "squeue_O_one_job": ["squeue", "-h", "-a", "--array-unique",
                                             f"--jobs={a}", "-O", SQUEUE_FORMAT],
                        "squeue_O_two_jobs": ["squeue", "-h", "-a", "--array-unique",
                                              f"--jobs={a},{b}", "-O", SQUEUE_FORMAT],
                        "squeue_x_two_jobs": ["squeue", "-h", f"--jobs={a},{b}", "-o",
                                              "%A|%x"],
                        "scontrol_show_job_one": ["scontrol", "-o", "show", "job", a],
                        "scontrol_show_job_all": ["scontrol", "-o", "show", "job"],
                        "sinfo_json": ["sinfo", "--json"],
                        "scontrol_update_one": ["scontrol", "update", f"JobId={a}",
                                                "AdminComment=probe"],
                        "scontrol_update_two": ["scontrol", "update", f"JobId={a},{b}",
                                                "AdminComment=probe"],
                        "scontrol_release_one": ["scontrol", "release", c],
                        "scontrol_release_two": ["scontrol", "release", f"{e},{a}"],
                    }
                    if rest is not None:
                        url = "http://rest/slurm/v0.0.38"
                        curl = ["runuser", "-u", REST_USER, "--", "curl", "-sf",
                                "--unix-socket", str(sock)]
                        cmds["rest_jobs_all"] = [*curl, f"{url}/jobs"]
                        cmds["rest_job_one"] = [*curl, f"{url}/job/{b}"]
                    for name, cmd in cmds.items():
                        runs.setdefault(name, []).append(timed(cmd, env, ctld))
                    submit(max(0, target - held(env)), env)  # back to the count
                for name, rs in runs.items():
                    row[name] = {k: round(statistics.median(r[k] for r in rs), 4)
                                 for k in ("wall", "ctld", "client")}
                    row[name]["mb"] = round(statistics.median(r["bytes"] for r in rs) / 1e6, 2)
                rows.append(row)
                print(json.dumps(row), flush=True)
        finally:
            if rest is not None:
                rest.send_signal(signal.SIGTERM)
                rest.wait(10)
            testbed.stop(d)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"command": " ".join(sys.argv), "rows": rows}, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
