"""Event-driven cycles: Slurm's EpilogSlurmctld wakes the adapter as each job ends, the
submit script as each managed job is submitted.

Fast tier: the scripts and the adapter's socket (a datagram wakes it, a burst wakes it once,
a timeout is a timeout, a port in use is a one-line error).  Slow tier (both Slurm
versions): with polling every 30 s, a sequence of whole-machine jobs runs back to back (each
start follows the previous end by about a second, not by the interval); with polling every
10 minutes, jobs submitted to an idle machine start (only a submission's wake-up can start
them); and (22.05) a burst of 200 short jobs loses none: each is released once and completes.
"""

from __future__ import annotations

import re
import shutil
import signal
import socket
import subprocess
import time

import pytest

from hpcopt.errors import HpcoptError
from hpcopt.slurm.lua import job_submit_lua
from hpcopt.slurm.wake import Waker, epilog_script

from .slurm_fixtures import VERSIONS, started_testbed
from .slurm_fixtures import free_udp_port as free_port


def test_epilog_script_sends_the_job_end(tmp_path):
    port = free_port()
    waker = Waker(port)
    try:
        script = tmp_path / "epilog.sh"
        script.write_text(epilog_script(port))
        script.chmod(0o755)
        bash = shutil.which("bash")
        if bash is None:
            pytest.skip("bash is not installed")
        p = subprocess.run([str(script)], env={"SLURM_JOB_ID": "42"}, timeout=10)
        assert p.returncode == 0
        assert waker.wait(5.0) and waker.woken == 1
        assert not waker.wait(0.05)  # nothing more came
    finally:
        waker.close()
    p = subprocess.run([str(script)], env={"SLURM_JOB_ID": "43"}, timeout=10)
    assert p.returncode == 0  # no listener: still exits 0 at once


def test_the_submit_script_wakes_at_each_managed_submission():
    assert "local WAKE = nil" in job_submit_lua("batch")  # no port: the adapter polls
    port = free_port()
    lua = job_submit_lua("batch", wake_port=port)
    assert "      if WAKE ~= nil then os.execute(WAKE) end\n" in lua
    command = re.search(r'^local WAKE = "(.*)"$', lua, re.M)[1]
    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    waker = Waker(port)
    try:
        t0 = time.monotonic()
        assert subprocess.run(["sh", "-c", command], timeout=10).returncode == 0
        assert time.monotonic() - t0 < 1.0  # in the background: slurmctld does not wait
        assert waker.wait(5.0) and waker.woken == 1
    finally:
        waker.close()
    assert subprocess.run(["sh", "-c", command], timeout=10).returncode == 0  # no listener
    with pytest.raises(HpcoptError, match="--wake-port: a port 1..65535"):
        job_submit_lua("batch", wake_port=0)


def test_a_burst_wakes_once_and_a_port_in_use_is_one_line():
    port = free_port()
    waker = Waker(port)
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for i in range(200):
                s.sendto(f"end {i}".encode(), ("127.0.0.1", port))
        t0 = time.monotonic()
        assert waker.wait(5.0)
        # one wake-up; the kernel keeps what the small receive buffer holds of the burst
        assert time.monotonic() - t0 < 1.0 and 1 <= waker.woken <= 200 and waker.wakeups == 1
        assert not waker.wait(0.1)
        with pytest.raises(HpcoptError, match=rf"^--wake-port {port}: .*listens there\)$"):
            Waker(port)
    finally:
        waker.close()
    with pytest.raises(HpcoptError, match="--wake-port: a port 1..65535"):
        epilog_script(70000)


# ------------------------------------------------------------------ the real testbed


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def woken(request):
    port = free_port()
    with started_testbed(request.param, "wake", wake_port=port) as c:
        c.wake_port = port
        yield c


def _adapter(c, interval: str = "30"):
    return c.cli("run", "--policy", "fcfs", "--interval", interval, "--wake-port",
                 str(c.wake_port), "--lock", str(c.dir / "adapter.lock"))


def _stop(p) -> str:
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    return err


@pytest.mark.slow
def test_whole_machine_jobs_run_back_to_back(woken):
    """Polling every 30 s: without the wake-up the three jobs would take over a minute."""
    c = woken
    ids = [c.submit("-N", "8", "-t", "1", sleep=2) for _ in range(3)]
    p = _adapter(c)
    try:
        c.wait(lambda: all(c.state(i) == "COMPLETED" for i in ids), 40)
    finally:
        err = _stop(p)
    jobs = c.jobs()
    gaps = [jobs[b]["start_time"] - jobs[a]["end_time"] for a, b in zip(ids, ids[1:])]
    assert all(g <= 3 for g in gaps), (gaps, err)


@pytest.mark.slow
def test_a_submission_wakes_the_adapter(woken):
    """Polling every 10 minutes, after a first cycle that saw nothing to start: jobs submitted
    then start only if their submissions wake the adapter."""
    c = woken
    log = c.dir / "submit-wake.jsonl"
    p = c.cli("run", "--policy", "fcfs", "--interval", "600", "--wake-port",
              str(c.wake_port), "--lock", str(c.dir / "adapter.lock"), "--log", str(log))
    try:
        c.wait(lambda: log.exists() and log.read_text().count("\n") >= 1, 30)
        ids = [c.submit("-N", "2", "-t", "1", sleep=1) for _ in range(3)]
        c.wait(lambda: all(c.state(i) in ("RUNNING", "COMPLETED") for i in ids), 30)
    finally:
        err = _stop(p)
    assert sorted(i for i in c.releases() if i in ids) == sorted(ids), err


@pytest.mark.slow
def test_a_burst_of_200_jobs_loses_nothing(woken):
    """About a minute and a half of cluster time: run on 22.05 only (the wake-up's other
    end, Slurm's hook, is tried on both versions by the test above)."""
    c = woken
    if c.version != "22.05":
        pytest.skip("the burst runs on Slurm 22.05 only (CI time)")
    ids = [c.submit("-N", "1", "-t", "1", sleep=0) for _ in range(200)]
    p = _adapter(c, interval="2")
    try:
        c.wait(lambda: all(j["job_state"] == "COMPLETED" for i, j in c.jobs().items()
                           if i in set(ids)) and len(
            [i for i in ids if i in c.jobs()]) == 200, 240, step=1.0)
    finally:
        err = _stop(p)
    released = c.releases()
    assert sorted(i for i in released if i in set(ids)) == sorted(ids), err
    log = (c.dir / "log" / "slurmctld.log").read_text(errors="replace")
    assert len(re.findall(r"release hold on JobId=(\d+)", log)) == len(set(released))
