"""No way around hpcopt, second round: begin times and requeues, the lock, the wake-up, the
service unit and its exit codes.

Fast tier: what the adapter makes of jobs that cannot start now (a begin time ahead, nodes
asked that are busy, nodes excluded) and of released jobs delayed afterwards; "now" after a
stalled read; the lock (keyed on the controller, no symbolic link followed, another user's
file refused and left as it was); the wake-up's ration under a flood; the log of woken cycles;
``hpcopt slurm status`` on bytes that are not UTF-8; the unit's hardening and the exit codes.
Slow tier (``-m slow``, both Slurm versions): an ordinary user made with useradd tries each
attack on a 4-node testbed, with the adapter stopped and with it running.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hpcopt.cli import main
from hpcopt.slurm.adapter import cycle_state
from hpcopt.slurm.lock import (
    LockedError,
    PartitionLock,
    controller_key,
    default_lock_path,
    ensure_lock_dir,
)
from hpcopt.slurm.service import EXIT_FAULT, status_text, systemd_unit
from hpcopt.slurm.state import Slurm, Snapshot, parse_job, parse_node, parse_sinfo, parse_squeue
from hpcopt.slurm.wake import BURST, RATE, Waker

from .slurm_fixtures import HPCOPT, VERSIONS, flat, free_udp_port, started_testbed, unix_user
from .test_slurm_guard import USER, Guarded

NOW = 1_000_000.0


def job(jid, priority=0, nodes=1, reason=None, mark=None, **more):
    """A pending ``squeue --json`` record of the managed partition (held unless a priority is
    given)."""
    held = priority == 0
    rec = {"job_id": jid, "job_state": "PENDING", "priority": priority, "partition": "batch",
           "state_reason": reason or ("JobHeldUser" if held else "None"),
           "admin_comment": mark or ("hpcopt:held" if held else "hpcopt:released:0"),
           "submit_time": NOW - 100, "start_time": 0, "time_limit": 5, "node_count": nodes,
           **more}
    return parse_job(rec)


def nodes(busy=()):
    return tuple(parse_node({"name": f"n{i}", "state": "allocated" if f"n{i}" in busy
                             else "idle", "state_flags": [], "partitions": ["batch"]})
                 for i in range(1, 5))


# --- fast tier: jobs that cannot start now -------------------------------------------------

def test_jobs_that_cannot_start_now_stay_held_and_count_nowhere():
    jobs = (job(1, eligible_time=NOW + 3600),           # a begin time an hour ahead
            job(2, required_nodes="n4"),                 # asks a busy node
            job(3, nodes=2, excluded_nodes="n[1-2]"),    # only n3 free of the others
            job(4, nodes=1, excluded_nodes="n1"),        # fits on n2 or n3
            job(5, eligible_time=NOW - 10),              # its begin time passed
            job(6, priority=900, reason="BeginTime", eligible_time=NOW + 3600),  # delayed
            job(7, priority=900, reason="Dependency", dependency="afterok:5(unfulfilled)"))
    s = cycle_state(Snapshot(NOW, jobs, nodes(busy=("n4",)), 0.01), "batch")
    assert [str(j.id) for j in s.cluster.queue] == ["4", "5"]
    notes = "\n".join(s.notes)
    assert "job 1 waits for its begin time (" in notes
    assert "job 2 asks nodes n4, not all free: left held" in notes
    assert "job 3 excludes nodes n[1-2]: too few of the others free: left held" in notes
    assert sorted(j.id for j in s.rehold) == [6, 7] and s.starting == []
    assert s.cluster.starting == ()  # the delayed released jobs take no node


def running(jid, node, minutes=5, ran=60):
    """A job running on ``node`` for ``ran`` seconds with a limit of ``minutes``."""
    return parse_job({"job_id": jid, "job_state": "RUNNING", "priority": 1, "partition": "batch",
                      "state_reason": "None", "submit_time": NOW - ran - 10,
                      "start_time": NOW - ran, "time_limit": minutes, "node_count": 1,
                      "job_resources": {"allocated_nodes": [{"nodename": node}]}})


def later_jobs(down=False):
    """A snapshot: n4 busy until NOW + 240 (a job running since NOW - 60, limit 5 minutes),
    n3 down or free, and held jobs that cannot start now."""
    node_list = tuple(parse_node({"name": f"n{i}", "partitions": ["batch"], "state_flags": [],
                                  "state": "allocated" if i == 4 else
                                  "down" if i == 3 and down else "idle"}) for i in range(1, 5))
    jobs = (running(10, "n4"),
            job(1, eligible_time=NOW + 3600),                       # a begin time
            job(2, required_nodes="n4"),                            # asks busy n4
            job(3, nodes=1, excluded_nodes="n[1-3]"),               # only n4 would do
            job(4, reason="Dependency", dependency="afterok:10(unfulfilled)"),  # after job 10
            job(5, required_nodes="n3"),                            # free, or down
            job(6, excluded_nodes="n9", reason="Dependency",
                dependency="afterany:2(unfulfilled)"),              # after a later job
            job(7, reason="Dependency",                             # after 1 or 10
                dependency="afterok:1(unfulfilled)?afterok:10(unfulfilled)"))
    return Snapshot(NOW, jobs, node_list, 0.01)


def test_jobs_that_cannot_start_now_get_their_earliest_start():
    s = cycle_state(later_jobs(), "batch")
    later = {str(k): w for k, w in s.later.items()}
    assert [str(j.id) for j in s.cluster.queue] == ["5"]  # none of the others counted
    assert later["1"].not_before == NOW + 3600
    assert later["2"].not_before == later["3"].not_before == NOW + 240  # n4's estimated end
    assert later["4"].not_before == NOW and later["4"].after == (10,)
    assert later["6"].after == (2,)
    down = cycle_state(later_jobs(down=True), "batch")
    assert {str(k): w.not_before for k, w in down.later.items()}["5"] is None  # n3 is down


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_a_begin_time_in_either_version_s_json_is_the_earliest_start(version):
    """The recorded documents of each version (tests/data/slurm): held job 1 given a begin
    time ahead and a dependency on running job 3, in the version's own shapes."""
    data = Path(__file__).parent / "data" / "slurm" / version
    squeue = json.loads((data / "squeue.json").read_text())
    held = next(j for j in squeue["jobs"] if j["job_id"] == 1)
    begin = 1_900_000_000
    held["eligible_time"] = begin if version == "22.05" else \
        {"set": True, "infinite": False, "number": begin}
    held["dependency"] = "afterok:3(unfulfilled)"
    jobs = tuple(parse_squeue(squeue))
    nodes = tuple(parse_sinfo(json.loads((data / "sinfo.json").read_text())))
    s = cycle_state(Snapshot(max(j.submit for j in jobs) + 10, jobs, nodes, 0.01), "batch")
    assert s.cluster.queue == ()
    (w,) = s.later.values()
    assert str(w.entry.job.id) == "1" and w.not_before == begin and w.after == (3,)


def test_forecasts_start_jobs_that_cannot_start_now_no_earlier_than_they_can():
    from hpcopt.policies import build_policy
    from hpcopt.slurm.forecast import pending_forecasts

    snap = later_jobs(down=True)
    s = cycle_state(snap, "batch")
    rows = {r["id"]: r for r in pending_forecasts(snap, s, "batch", build_policy("fcfs"),
                                                   None, draws=1)}
    assert rows["1"]["start"] == NOW + 3600              # at its begin time
    assert rows["2"]["start"] == NOW + 240               # once n4 is free
    assert rows["3"]["start"] == NOW + 240
    assert rows["4"]["start"] == NOW + 240               # after job 10 (its limit's end)
    assert rows["6"]["start"] == NOW + 540               # after job 2 (from NOW + 240, 5 min)
    # after the first of 10 and 1 (1 begins in an hour), once a node is free (2, 3, 4 first)
    assert rows["7"]["start"] == NOW + 540
    assert rows["5"]["start"] is None and "node it needs is down" in rows["5"]["reason"]
    up = later_jobs()
    s = cycle_state(up, "batch")
    rows = {r["id"]: r for r in pending_forecasts(up, s, "batch", build_policy("fcfs"), None,
                                                   draws=1)}
    assert rows["5"]["start"] == NOW


def test_the_record_and_status_name_the_jobs_that_cannot_start_now(tmp_path):
    from hpcopt.policies import build_policy
    from hpcopt.slurm.adapter import Adapter, Settings

    class Read(Slurm):
        def snapshot(self):
            return later_jobs()

        def reservations(self):
            return ()

    log = tmp_path / "a.jsonl"
    with open(log, "w") as f:
        rec = Adapter(build_policy("fcfs"), Settings(dry_run=True), slurm=Read(env={}),
                      log=f, say=lambda s: None).cycle()
    later = {str(w["id"]): w for w in rec.later}
    assert later["1"]["not_before"] == NOW + 3600 and later["4"]["after"] == [10]
    text = status_text(log, now=NOW)
    assert "cannot start now: 1 from " in text and "4 from " in text and "after job 10" in text


def test_now_is_when_the_jobs_were_read_not_when_the_read_began():
    doc = json.dumps({"meta": {"Slurm": {"version": {"major": 22, "micro": 8, "minor": 5}}},
                      "jobs": [], "nodes": [], "errors": []})

    def stalled(args, **kw):  # slurmctld answers the jobs' read (squeue -O text) 1.5 s late
        if args[0] == "squeue":
            time.sleep(1.5)
            return subprocess.CompletedProcess(args, 0, "", "")
        return subprocess.CompletedProcess(args, 0, doc, "")

    t0 = time.time()
    snap = Slurm(run=stalled, env={}).snapshot()
    assert snap.time >= t0 + 1.5


# --- fast tier: the lock -------------------------------------------------------------------

def _conf(path: Path, cluster="c1", host="ctl(10.0.0.1)", port=7000) -> str:
    path.write_text(f"# a site\nClusterName={cluster}\nSlurmctldHost={host}\n"
                    f"SlurmctldHost=backup\nSlurmctldPort={port}\n")
    return str(path)


def test_the_lock_is_keyed_on_the_controller(tmp_path):
    a = _conf(tmp_path / "slurm.conf")
    copy = _conf(tmp_path / "elsewhere.conf")  # a copy of slurm.conf elsewhere
    assert controller_key(a) == "c1@10.0.0.1:7000"
    assert default_lock_path("batch", a) == default_lock_path("batch", copy)
    assert default_lock_path("batch", a).parent == Path("/run/hpcopt")
    other = _conf(tmp_path / "other.conf", port=7001)
    assert default_lock_path("batch", a) != default_lock_path("batch", other)
    assert default_lock_path("batch", a) != default_lock_path("debug", a)
    (tmp_path / "none.conf").write_text("ClusterName=x\n")
    with pytest.raises(LockedError, match="no SlurmctldHost"):
        controller_key(tmp_path / "none.conf")


def test_the_lock_follows_no_link_and_overwrites_nothing_it_did_not_make(tmp_path):
    target = tmp_path / "precious"
    target.write_text("keep me\n")
    link = tmp_path / "batch.lock"
    link.symlink_to(target)
    with pytest.raises(LockedError, match="a symbolic link; refused"):
        PartitionLock(link, "batch").acquire()
    assert target.read_text() == "keep me\n"
    with pytest.raises(LockedError, match="something else than a lock record; refused"):
        PartitionLock(target, "batch").acquire()  # --lock naming a file of other content
    assert target.read_text() == "keep me\n"
    hard = tmp_path / "hard.lock"
    os.link(target, hard)
    with pytest.raises(LockedError, match="not a plain file with one name"):
        PartitionLock(hard, "batch").acquire()
    assert target.read_text() == "keep me\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_a_lock_file_of_another_user_is_refused(tmp_path):
    forged = tmp_path / "batch.lock"
    forged.write_text(json.dumps({"pid": 1, "host": "forged", "since": 0}))
    os.chown(forged, 65534, 65534)  # nobody's
    with pytest.raises(LockedError, match=r"belongs to (user \S+ \()?uid 65534.*refused"):
        PartitionLock(forged, "batch").acquire()
    assert json.loads(forged.read_text())["host"] == "forged"  # left as it was
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o1777)  # like /run/lock or /tmp: anyone could plant the lock there
    with pytest.raises(LockedError, match="that no one else may write"):
        ensure_lock_dir(shared)
    own = tmp_path / "own"
    ensure_lock_dir(own)
    assert oct(own.stat().st_mode & 0o777) == "0o755"


# --- fast tier: the wake-up under a flood ---------------------------------------------------

def flood(port: int, seconds: float, counted: list) -> None:
    """Datagrams to ``port`` on loopback as fast as they go, for ``seconds`` (then it
    stops by itself); their count in ``counted``."""
    end = time.monotonic() + seconds
    n = 0
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        while time.monotonic() < end:
            for _ in range(100):
                s.sendto(b"end 1", ("127.0.0.1", port))
            n += 100
    counted.append(n)


def test_a_flood_of_wake_ups_is_rationed():
    port = free_udp_port()
    waker = Waker(port)
    sent: list = []
    sender = threading.Thread(target=flood, args=(port, 3.0, sent))
    try:
        sender.start()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 3.0:
            waker.wait(5.0)
        sender.join()
    finally:
        waker.close()
    took = time.monotonic() - t0
    assert sent[0] > 1000
    assert waker.wakeups <= BURST + RATE * took + 1, (waker.wakeups, took)


def test_woken_cycles_that_changed_nothing_log_once_per_interval(tmp_path):
    from hpcopt.policies import build_policy
    from hpcopt.slurm.adapter import Adapter
    from hpcopt.slurm.record import CycleRecord

    log = (tmp_path / "a.jsonl").open("w")
    a = Adapter(build_policy("fcfs"), slurm=Slurm(env={}), log=log, say=lambda s: None)
    a.quiet_for = 5.0
    def rec(time, cycle, pending=0, read_s=0.01):
        return CycleRecord(time, cycle, ok=True, pending=pending, read_s=read_s)

    for i in range(20):  # twenty woken cycles in two seconds, nothing new
        a._write_cycle(rec(NOW + i / 10, i + 1, read_s=0.01 * i))
    a._write_cycle(rec(NOW + 6, 21))             # an interval later: written
    a._write_cycle(rec(NOW + 6.1, 22, pending=1))  # something new: written
    log.close()
    assert [json.loads(x)["cycle"] for x in (tmp_path / "a.jsonl").read_text().splitlines()] \
        == [1, 21, 22]


# --- fast tier: status, the unit, exit codes ------------------------------------------------

def test_status_reads_a_log_with_bytes_that_are_not_utf8(tmp_path, capsys):
    log = tmp_path / "a.jsonl"
    rec = {"time": NOW, "cycle": 1, "partition": "batch", "ok": True, "slurm": "22.05.8",
           "pending": 0, "running": 0, "waiting_start": [], "free_nodes": 4, "released": [],
           "notes": ["job 7 is not marked by the submit script (AdminComment 'X'): left held"]}
    raw = json.dumps(rec).encode().replace(b"'X'", b"'\xff\xfe'")
    log.write_bytes(raw + b"\n")
    assert "cycle 1" in status_text(log, now=NOW)
    assert main(["slurm", "status", "--log", str(log)]) == 0
    assert "AdminComment '\ufffd\ufffd'" in capsys.readouterr().out


def test_the_unit_runs_hardened_as_a_dedicated_user():
    unit = systemd_unit(["--policy", "fcfs", "--log", "/var/log/hpcopt/batch.jsonl"],
                        "/opt/hpcopt/bin/hpcopt", "/etc/slurm/slurm.conf")
    for line in ("User=slurm", "NoNewPrivileges=yes", "ProtectSystem=strict",
                 "ProtectHome=yes", "PrivateTmp=yes", "CapabilityBoundingSet=",
                 "RuntimeDirectory=hpcopt", "LogsDirectory=hpcopt",
                 "RestartPreventExitStatus=2", "Restart=on-failure"):
        assert line in unit.splitlines(), line
    unit = systemd_unit(["--policy", "fcfs", "--log=/srv/x/a.jsonl", "--lock", "/srv/l/b.lock"],
                        "/root/venv/bin/hpcopt", user="hpcopt")
    assert "ReadWritePaths=/srv/x" in unit and "ReadWritePaths=/srv/l" in unit
    assert "ProtectHome=read-only" in unit and "User=hpcopt" in unit  # hpcopt under /root
    if shutil.which("systemd-analyze") is None:
        return
    path = Path("/tmp") / f"hpcopt-test-{os.getpid()}.service"
    path.write_text(systemd_unit(["--policy", "fcfs"], shutil.which("true") or "/bin/true",
                                 user="root"))
    try:
        p = subprocess.run(["systemd-analyze", "verify", str(path)], capture_output=True,
                           text=True, timeout=60)
        bad = [x for x in p.stderr.splitlines() if path.name in x and "nknown" in x]
        assert not bad, p.stderr
    finally:
        path.unlink()


def test_exit_codes_tell_usage_errors_from_faults(tmp_path):
    conf = _conf(tmp_path / "slurm.conf")
    env = {**os.environ, "SLURM_CONF": conf}

    def run(*args):
        return subprocess.run([*HPCOPT, "slurm", "run", "--policy", "fcfs", "--once", *args],
                              env=env, capture_output=True, text=True, timeout=60)

    p = run("--interval", "0")
    assert p.returncode == 2 and "Traceback" not in p.stderr  # usage: not restarted
    lock = tmp_path / "b.lock"
    with PartitionLock(lock, "batch"):  # another adapter holds the partition: a fault
        p = run("--lock", str(lock))
    assert p.returncode == EXIT_FAULT and "scheduled by another adapter" in p.stderr
    assert p.stderr.count("\n") == 1
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    if os.geteuid() != 0:  # root writes anyway: a file in the way stands in for it
        p = run("--log", str(ro / "a.jsonl"), "--lock", str(lock))
    else:
        (ro / "a.jsonl").mkdir()
        p = run("--log", str(ro / "a.jsonl"), "--lock", str(lock))
    assert p.returncode == EXIT_FAULT and "--log" in p.stderr and "Traceback" not in p.stderr


# --- slow tier: an ordinary user against the real testbed ----------------------------------

class Site(Guarded):
    """The testbed, its tools run as root or as the test user, and the adapter."""

    def job(self, jid: int) -> dict:
        """The job's squeue record, finished jobs too (24.11 leaves them out by default)."""
        jobs = json.loads(self.root("squeue", "--json", "--states=all").stdout)["jobs"]
        return flat(next(j for j in jobs if j["job_id"] == jid))

    def adapter(self, *args: str) -> subprocess.Popen:
        """``hpcopt slurm run --policy fcfs --interval 1`` with the lock in the testbed."""
        return subprocess.Popen([*HPCOPT, "slurm", "run", "--policy", "fcfs", "--interval",
                                 "1", "--lock", str(self.dir / "adapter.lock"), *args],
                                env=self.env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def site(request):
    if shutil.which("runuser") is None or shutil.which("useradd") is None:
        pytest.skip("runuser and useradd are needed to act as an unprivileged user")
    port = free_udp_port()
    with unix_user(USER), started_testbed(request.param, "guard2", 4, cls=Site,
                                          wake_port=port) as s:
        s.wake_port = port
        try:
            yield s
        finally:
            subprocess.run(["scancel", "--quiet", "--user", USER], env=s.env,
                           capture_output=True, timeout=10)


def _stop(proc: subprocess.Popen) -> str:
    proc.terminate()
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


def _held(j: dict) -> bool:  # (the mark is checked by the submit script's own tests)
    return j["job_state"] == "PENDING" and j["priority"] == 0 and \
        j["state_reason"] == "JobHeldUser"


@pytest.mark.slow
def test_requeue_then_starttime_runs_nothing_without_a_release(site):
    s = site
    jid = s.submit("-N", "1", "-t", "1", sleep=1)
    s.root("scontrol", "release", str(jid))  # as the adapter would
    s.wait(lambda: s.job(jid)["job_state"] == "COMPLETED", 30)
    # the adapter stopped: requeue, then ask for the start now
    assert s.user("scontrol", "requeue", str(jid)).returncode == 0
    s.wait(lambda: s.job(jid)["job_state"] == "PENDING", 10)
    for start in ("now", "now+5"):
        p = s.user("scontrol", "update", f"jobid={jid}", f"StartTime={start}")
        assert p.returncode != 0, f"StartTime={start} was accepted"
    time.sleep(5)
    j = s.job(jid)  # still waiting out the requeue's delay (about 2 minutes), not started
    assert j["job_state"] == "PENDING" and j["eligible_time"] > time.time() + 60, j
    # the adapter running: it holds the requeued job again before Slurm can start it
    proc = s.adapter()
    try:
        s.wait(lambda: _held(s.job(jid)), 20)
        assert s.user("scontrol", "update", f"jobid={jid}", "StartTime=now").returncode != 0
        assert s.user("scontrol", "release", str(jid)).returncode != 0
    finally:
        _stop(proc)
    s.root("scancel", str(jid))


@pytest.mark.slow
def test_released_jobs_cannot_be_requeued_by_their_owners(site):
    s = site
    jid = s.submit("-N", "1", "-t", "1", sleep=1)
    assert s.user("scontrol", "update", f"jobid={jid}", "Requeue=0").returncode != 0
    proc = s.adapter()  # the default: released with Requeue=0
    try:
        s.wait(lambda: s.job(jid)["job_state"] == "COMPLETED", 30)
    finally:
        _stop(proc)
    assert s.user("scontrol", "update", f"jobid={jid}", "Requeue=1").returncode != 0
    p = s.user("scontrol", "requeue", str(jid))
    assert p.returncode != 0 and "disabled" in p.stderr, p.stderr
    time.sleep(2)
    assert s.job(jid)["job_state"] == "COMPLETED"
    bad = subprocess.run([*HPCOPT, "slurm", "run", "--policy", "fcfs", "--once",
                          "--allow-requeue", "--no-requeue"], env=s.env, capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and "contradict" in bad.stderr


def _down_under(s, jid: int) -> str:
    """Set the node of running ``jid`` DOWN (as a node failure would); returns its name."""
    s.wait(lambda: s.job(jid)["job_state"] == "RUNNING", 30)
    node = s.root("squeue", "-h", "-j", str(jid), "-o", "%N").stdout.strip()
    assert s.root("scontrol", "update", f"nodename={node}", "state=down",
                  "reason=hpcopt-test").returncode == 0
    return node


def _back_up(s, node: str) -> None:
    """Resume ``node`` (its slurmd may have brought it back already: ReturnToService=2)."""
    s.root("scontrol", "update", f"nodename={node}", "state=resume", check=False)
    s.wait(lambda: "down" not in s.root("sinfo", "-h", "-n", node, "-o", "%T").stdout, 60)


@pytest.mark.slow
def test_a_node_failure_ends_a_released_job_and_nothing_restarts_it(site):
    s = site
    jid = s.submit("-N", "1", "-t", "2", sleep=120)
    proc = s.adapter()
    try:
        node = _down_under(s, jid)
        try:
            s.wait(lambda: s.job(jid)["job_state"] == "NODE_FAIL", 20)
            # measured on 22.05.8 and 24.11.5: once ended, a job released with Requeue=0
            # cannot be requeued, not even by the administrator ("presently disabled")
            held = s.root("scontrol", "requeuehold", str(jid), check=False)
            assert held.returncode != 0 and "disabled" in held.stderr, held.stderr
            assert s.root("scontrol", "update", f"jobid={jid}", "Requeue=1",
                          check=False).returncode != 0
            time.sleep(3)
            assert s.job(jid)["job_state"] == "NODE_FAIL"
        finally:
            _back_up(s, node)
    finally:
        _stop(proc)


@pytest.mark.slow
def test_allow_requeue_a_node_failure_requeues_and_the_adapter_holds_it_again(site):
    s = site
    jid = s.submit("-N", "1", "-t", "2", sleep=120)
    proc = s.adapter("--allow-requeue")
    try:
        node = _down_under(s, jid)
        try:
            # Slurm requeues it (pending, a begin time ahead); the adapter holds it again
            s.wait(lambda: _held(s.job(jid)) and s.job(jid)["restart_cnt"] >= 1, 30)
            assert s.user("scontrol", "release", str(jid)).returncode != 0
        finally:
            _back_up(s, node)
    finally:
        _stop(proc)
    s.root("scancel", str(jid))


@pytest.mark.slow
def test_no_banked_releases_begin_times_and_busy_nodes(site):
    s = site
    later = s.submit("-N", "4", "-t", "30", "--begin=now+3600")
    busy = s.submit("-N", "1", "-w", "n4", "-t", "5", sleep=300)
    s.root("scontrol", "release", str(busy))
    s.wait(lambda: s.job(busy)["job_state"] == "RUNNING", 20)
    pinned = s.submit("-N", "1", "-w", "n4", "-t", "1")   # n4 is busy
    excluded = s.submit("-N", "1", "-x", "n[1-3]", "-t", "1")  # only n4 would do
    after = s.submit("-N", "1", "-t", "1", f"--dependency=afterok:{busy}")
    log = s.dir / "banked.jsonl"
    proc = s.adapter("--log", str(log))
    try:
        s.wait(lambda: log.exists() and log.read_text().count("\n") >= 3, 30)
        for jid in (later, pinned, excluded):
            assert _held(s.job(jid)), jid  # none released: none can start now
        last = [json.loads(x) for x in log.read_text().splitlines() if '"event"' not in x][-1]
        notes = "\n".join(last["notes"])
        assert f"job {later} waits for its begin time" in notes
        assert f"job {pinned} asks nodes n4, not all free" in notes
        assert f"job {excluded} excludes nodes n[1-3]" in notes
        assert last["released"] == [] and last["free_nodes"] == 3
        # each has a planned start that respects what holds it back: in the record, and in
        # the forecasts (no earlier than its begin time, n4's end at its limit, job busy's end)
        free_at = s.job(busy)["start_time"] + 300
        begin = s.job(later)["eligible_time"]
        planned = {w["id"]: w for w in last["later"]}
        assert planned[later]["not_before"] == pytest.approx(begin, abs=1)
        assert planned[pinned]["not_before"] == planned[excluded]["not_before"] == free_at
        assert planned[after]["after"] == [busy]
        assert "cannot start now: " in s.root(*HPCOPT, "slurm", "status", "--log",
                                               str(log)).stdout
        got = json.loads(s.root(*HPCOPT, "slurm", "forecast", "--policy", "fcfs",
                                "--json").stdout)
        rows = {int(r["id"]): r for r in got["jobs"]}
        assert rows[later]["start"] >= begin - 1
        for jid in (pinned, excluded, after):
            assert rows[jid]["start"] >= free_at - 1, rows[jid]
        # and the user cannot bring the begin time forward (a later one stays theirs)
        assert s.user("scontrol", "update", f"jobid={later}", "StartTime=now").returncode != 0
        assert s.user("scontrol", "update", f"jobid={later}",
                      "StartTime=now+7200").returncode == 0
        assert _held(s.job(later))
    finally:
        _stop(proc)
    s.root("scancel", str(later), str(busy), str(pinned), str(excluded), str(after))


@pytest.mark.slow
def test_a_user_cannot_forge_or_plant_the_lock(site):
    s = site
    lock_dir = Path("/run/hpcopt")
    ensure_lock_dir(lock_dir)
    path = default_lock_path("batch", s.env["SLURM_CONF"])
    # an earlier testbed on the same controller port may have left its (root's) lock here
    path.unlink(missing_ok=True)
    p = s.user("sh", "-c", f"echo '{{\"pid\": 1, \"host\": \"forged\"}}' > {path}")
    assert p.returncode != 0 and not path.exists()  # the directory is root's alone
    # a lock the user plants where anyone may write (--lock there): refused, left alone
    shared = s.dir / "shared"  # (not pytest's temporary directory: the user cannot reach it)
    shared.mkdir()
    shared.chmod(0o1777)
    planted = shared / "batch.lock"
    p = s.user("sh", "-c", f"echo '{{\"pid\": 1, \"host\": \"forged\", \"since\": 0}}' "
                           f"> {planted}")
    assert p.returncode == 0, p.stderr
    run = subprocess.run([*HPCOPT, "slurm", "run", "--policy", "fcfs", "--once", "--lock",
                          str(planted)], env=s.env, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == EXIT_FAULT and f"belongs to user {USER}" in run.stderr
    assert "forged" in planted.read_text()
    target = s.dir / "precious"
    target.write_text("keep\n")
    link = shared / "link.lock"
    assert s.user("ln", "-s", str(target), str(link)).returncode == 0
    run = subprocess.run([*HPCOPT, "slurm", "run", "--policy", "fcfs", "--once", "--lock",
                          str(link)], env=s.env, capture_output=True, text=True, timeout=60)
    # refused: by O_NOFOLLOW, or before it by the kernel's protected_symlinks
    assert run.returncode == EXIT_FAULT and "link.lock: " in run.stderr
    assert "refused" in run.stderr and run.stderr.count("\n") == 1
    assert target.read_text() == "keep\n"


@pytest.mark.slow
def test_a_user_flooding_the_wake_port_costs_a_bounded_few_cycles(site):
    s = site
    log = s.dir / "flood.jsonl"
    proc = subprocess.Popen([*HPCOPT, "slurm", "run", "--policy", "fcfs", "--interval", "5",
                             "--wake-port", str(s.wake_port), "--lock",
                             str(s.dir / "adapter.lock"), "--log", str(log)],
                            env=s.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        s.wait(lambda: log.exists() and log.read_text(), 30)
        before = log.stat().st_size
        code = (f"import socket, time\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                f"end, n = time.monotonic() + 5, 0\nwhile time.monotonic() < end:\n"
                f"    s.sendto(b'end 1', ('127.0.0.1', {s.wake_port})); n += 1\nprint(n)\n")
        python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
        p = s.user(python, "-c", code)  # an ordinary user, 5 s, then it stops
        assert p.returncode == 0, p.stderr
        sent = int(p.stdout)
        grown = log.stat().st_size - before
    finally:
        _stop(proc)
    assert sent > 10_000
    # nothing changed on the cluster: a line per interval, not one per woken cycle
    assert grown < 4 * 1024, grown
