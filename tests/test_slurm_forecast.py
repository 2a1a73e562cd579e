"""``hpcopt slurm forecast`` and ``hpcopt slurm run --forecast-file`` on a real queue.

A testbed with accounting (runtimes from ``sacct``), Slurm 22.05 and 24.11, one node
drained: while a 7-node job runs, an unprivileged user's jobs are held by the submit
script.  The command gives every pending job of the partition a forecast (the held ones by
hpcopt's policy, a pending array one per task, the job larger than the available nodes
none, with why), in EASY's order (the array tasks backfilled), with an ordered band, the
running job at its limit when it has outlived every accounted runtime; the table shows the
same; the adapter writes the forecasts after its cycle to a file the user can read.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import time

import pytest

from .slurm_fixtures import HPCOPT, VERSIONS, Cluster, started_testbed, unix_user

pytestmark = pytest.mark.slow

USER = "hpcopt-fc-user"


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def acct(request):
    if shutil.which("runuser") is None or shutil.which("useradd") is None:
        pytest.skip("runuser and useradd are needed to act as an unprivileged user")
    with unix_user(USER), started_testbed(request.param, "forecast", accounting=True) as c:
        yield c


def submit(c: Cluster, *args: str, sleep: int = 3) -> int:
    """A job of ``USER`` (held by the submit script)."""
    env = [f"{k}={c.env[k]}" for k in ("SLURM_CONF", "PATH")]
    p = subprocess.run(["runuser", "-u", USER, "--", "env", *env, "sbatch", "--parsable",
                        "-D", "/tmp", "-o", "/dev/null", *args, "--wrap", f"sleep {sleep}"],
                       capture_output=True, text=True, timeout=30, cwd="/tmp")
    assert p.returncode == 0, p.stderr
    return int(p.stdout.strip().split(";")[0])


def forecast_json(c: Cluster, *args: str) -> dict:
    p = subprocess.run([*HPCOPT, "slurm", "forecast", "--json", *args], env=c.env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_every_pending_job_gets_a_forecast_and_the_file_is_readable(acct):
    c = acct
    adapter = c.adapter("fcfs")
    # history: short jobs that ran about a tenth of their limit, ended and accounted
    short = [submit(c, "-t", "1", "-N", "1", sleep=5) for _ in range(3)]
    for _ in range(40):
        adapter.cycle()
        if all(c.state(j) == "COMPLETED" for j in short):
            break
        time.sleep(0.5)
    c.wait(lambda: all(str(j) in c.run("sacct", "--allusers", "-X", "-n", "-P", "-o",
                                       "JobIDRaw", "--state=CD", "--starttime=now-3600",
                                       "--endtime=now").split() for j in short), 60, 1)
    # n8 drained; the 7 other nodes busy for a minute (limit 3), jobs held behind them
    c.run("scontrol", "update", "nodename=n8", "state=drain", "reason=forecast-test")
    big = submit(c, "-t", "3", "-N", "7", sleep=60)
    adapter.cycle()
    c.wait(lambda: c.state(big) == "RUNNING", 30)
    a = submit(c, "-t", "2", "-N", "4", sleep=20)
    b = submit(c, "-t", "2", "-N", "7", sleep=10)
    arr = submit(c, "-t", "1", "-N", "2", "--array=1-2", sleep=5)
    huge = submit(c, "-t", "1", "-N", "8", sleep=1)  # more than the available nodes
    started = c.jobs()[big]["start_time"]
    c.wait(lambda: time.time() >= started + 25, 40)  # longer than any accounted runtime
    t0 = time.time()
    doc = forecast_json(c, "--policy", "fcfs", "--draws", "10")
    assert doc["history"] == "sacct" and doc["partition"] == "batch"
    rows = {r["id"]: r for r in doc["jobs"]}
    assert set(rows) == {str(a), str(b), f"{arr}_1", f"{arr}_2", str(huge)}
    assert rows[str(huge)]["start"] is None
    assert "asks 8 nodes, 7 available" in rows[str(huge)]["reason"]
    for key in (str(a), str(b), f"{arr}_1", f"{arr}_2"):
        r = rows[key]
        assert t0 - 5 <= r["p10"] <= r["start"] <= r["p90"], r
    # FCFS with EASY: a, then b (all 7 nodes) after a; the array tasks (2 nodes, 1 minute)
    # backfill beside a, before b's reservation at a's limit
    assert rows[str(a)]["start"] < rows[str(b)]["start"]
    assert rows[f"{arr}_1"]["start"] == pytest.approx(rows[str(a)]["start"], abs=1)
    assert rows[f"{arr}_2"]["start"] < rows[str(b)]["start"]
    # the big job outlived every accounted runtime: it runs to its limit in every draw
    assert rows[str(a)]["start"] == pytest.approx(started + 180, abs=2)
    # the table
    p = subprocess.run([*HPCOPT, "slurm", "forecast"], env=c.env, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert f"{arr}_2" in p.stdout and "no forecast: asks 8 nodes" in p.stdout
    # the adapter writes them each cycle, for every user to read
    path = c.dir / "forecasts.json"
    run = subprocess.run([*HPCOPT, "slurm", "run", "--policy", "fcfs", "--once", "--dry-run",
                          "--forecast-file", str(path)], env=c.env, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    env = [f"{k}={c.env[k]}" for k in ("SLURM_CONF", "PATH")]
    mine = subprocess.run(["runuser", "-u", USER, "--", "env", *env, "cat", str(path)],
                          capture_output=True, text=True, timeout=30)
    assert mine.returncode == 0, mine.stderr
    written = {r["id"]: r for r in json.loads(mine.stdout)["jobs"]}
    assert set(written) == set(rows)
    assert written[str(a)]["start"] == pytest.approx(rows[str(a)]["start"], abs=5)
    c.cancel([big, a, b, arr, huge])
    c.run("scontrol", "update", "nodename=n8", "state=resume")
