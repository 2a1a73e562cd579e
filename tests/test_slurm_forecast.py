"""``hpcopt slurm forecast`` and ``hpcopt slurm run --forecast-file``.

Fast: the adapter's forecast file over cycles read from recorded ``squeue``/``sinfo``
documents (a ``Slurm`` that answers them, no accounting): its bands are calibrated by its
own earlier forecasts once their jobs are seen running, and raw on request.

Slow, on a real queue: a testbed with accounting (runtimes from ``sacct``), Slurm 22.05 and
24.11, one node drained: while a 7-node job runs, an unprivileged user's jobs are held by
the submit script.  The command gives every pending job of the partition a forecast (the
held ones by hpcopt's policy, a pending array one per task, the job larger than the
available nodes none, with why), in EASY's order (the array tasks backfilled), with an
ordered band, the running job at its limit when it has outlived every accounted runtime;
the table shows the same; the adapter writes the forecasts after its cycle to a file the
user can read.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import stat
import subprocess
import time
from pathlib import Path

import pytest

from hpcopt.policies import build_policy
from hpcopt.sim.forecast import BandCalibration, JobForecast
from hpcopt.slurm.adapter import Settings
from hpcopt.slurm.forecast import ForecastingAdapter, live_calibration
from hpcopt.slurm.state import Slurm, Snapshot, parse_sinfo, parse_squeue

from .slurm_fixtures import HPCOPT, VERSIONS, Cluster, started_testbed, unix_user

USER = "hpcopt-fc-user"
RECORDED = Path(__file__).parent / "data" / "slurm" / "22.05"


class Recorded(Slurm):
    """Answers each read with the next of ``snapshots``; no accounting (sacct fails)."""

    def __init__(self, snapshots):
        super().__init__(env={}, run=lambda args, **kw: subprocess.CompletedProcess(
            args, 1, "", "sacct: error: Slurm accounting storage is disabled"))
        self.snapshots = iter(snapshots)

    def snapshot(self):
        return next(self.snapshots)

    def reservations(self):
        return ()


def one_job_at_a_time(cycles: int) -> list[Snapshot]:
    """Reads 1000 s apart of a one-node partition (the recorded documents' held job and
    running job, renumbered, on the recorded node n3): at read k, job k runs (since 100 s
    before, limit 10 minutes) and job k + 1 is held behind it; it starts 900 s after that
    read, 400 s later than the 500 s the forecast gives (job k at its limit: every job seen
    so far ran to it)."""
    doc = json.loads((RECORDED / "squeue.json").read_text())
    held = next(j for j in doc["jobs"] if j["job_state"] == "PENDING")
    run = next(j for j in doc["jobs"] if j["job_state"] == "RUNNING" and j["partition"] ==
               "batch")
    node = json.loads((RECORDED / "sinfo.json").read_text())
    node["nodes"] = [{**node["nodes"][0], "name": "n3", "state": "allocated",
                      "partitions": ["batch"]}]
    t0 = float(held["submit_time"]) + 1000
    snaps = []
    for k in range(cycles):
        now = t0 + 1000 * k
        jobs = [{**copy.deepcopy(run), "job_id": 100 + k, "start_time": now - 100,
                 "submit_time": now - 200, "time_limit": 10, "user_id": 1002},  # on n3
                {**copy.deepcopy(held), "job_id": 101 + k, "submit_time": now - 50,
                 "time_limit": 10, "user_id": 1002}]
        snaps.append(Snapshot(now, tuple(parse_squeue({**doc, "jobs": jobs})),
                              tuple(parse_sinfo(node)), 0.01))
    return snaps


def forecast_files(tmp_path, raw_bands=False, cycles=6) -> list[dict]:
    """The forecast file after each cycle of an adapter on ``one_job_at_a_time``."""
    snaps = one_job_at_a_time(cycles)
    path = tmp_path / f"forecasts-{raw_bands}.json"
    adapter = ForecastingAdapter(build_policy("fcfs"), Settings(dry_run=True),
                                 slurm=Recorded(snaps), forecast_file=path, draws=4,
                                 raw_bands=raw_bands, say=lambda s: None)
    if adapter.bands is not None:
        adapter.bands = BandCalibration(min_seen=3, halving=adapter.bands.halving)
    docs = []
    for _ in snaps:
        adapter.cycle()
        docs.append(json.loads(path.read_text()))
    return docs


def test_the_adapter_calibrates_its_bands_by_its_earlier_forecasts(tmp_path):
    docs, raw = forecast_files(tmp_path), forecast_files(tmp_path, raw_bands=True)
    for k, (doc, plain) in enumerate(zip(docs, raw)):
        (row,), (same,) = doc["jobs"], plain["jobs"]
        now = doc["time"]
        assert row["id"] == same["id"] == str(101 + k)
        assert row["start"] == same["start"] == now + 500  # job k at its limit
        assert same["p10"] == same["p90"] == now + 500 and plain["bands"] == "raw"
        if k < 3:  # jobs 101-103 are seen running at reads 1-3: 3 errors, from read 3 on
            assert (row["p10"], row["p90"]) == (now + 500, now + 500)
            assert doc["bands"] == "raw"
        else:  # every forecast was late by 0.8 of its lead of 500 s
            assert (row["p10"], row["p90"]) == (now + 500, now + 900)
            assert doc["bands"] == "calibrated"


def test_an_adapter_keeps_a_jobs_forecast_when_its_lead_halves_and_forgets_jobs_gone():
    cal = BandCalibration(min_seen=1, halving=True)

    def at(job, time, start):
        cal.record(time, [JobForecast(job, start, start, start, start)])

    at("a", 0.0, 1000.0)  # lead 1000 s: kept
    at("a", 10.0, 5000.0)  # lead 4990 s: not half of 1000, not kept
    at("a", 400.0, 1000.0)  # lead 600 s: not kept
    at("a", 500.0, 1000.0)  # lead 500 s: half, kept
    at("b", 20.0, 100.0)
    cal.forget({"a"})  # b is gone without a start: its forecast will not count
    cal.started("b", 1000.0)
    assert not cal.ready
    cal.started("a", 1250.0)  # late by 0.25 and 0.5 of the two kept leads
    assert cal.ready and sorted(cal._shares) == [0.25, 0.5]
    at("a", 2000.0, 9000.0)  # a started: a forecast of it again is a new one, kept
    assert cal._pending["a"] == [(2000.0, 9000.0)]


def test_a_live_adapter_widens_its_bands_from_its_tenth_error():
    """It starts cold at every restart: it cannot wait for the 100 errors a replay does."""
    cal = live_calibration()
    assert cal.halving
    for k in range(10):
        assert not cal.ready
        cal.calibrate(0.0, [JobForecast(k, 100.0, 100.0, 100.0, 100.0)])
        cal.calibrate(1.0, [JobForecast(k, 100.0, 100.0, 100.0, 100.0)])  # lead not halved
        cal.started(k, 130.0)  # late by 0.3 of its lead of 100 s
    assert cal.ready and len(cal._shares) == 10
    (f,) = cal.adjust(0.0, [JobForecast("x", 300.0, 300.0, 300.0, 300.0)])
    assert (f.p10, f.p90) == (300.0, 390.0)


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


@pytest.mark.slow
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
