"""The real Slurm cluster fixture, for every test module that drives one.

``cluster`` (module scope) starts one testbed of 8 emulated nodes per module and per Slurm
version: 22.05 (the host's packages) and 24.11 (Debian 13's, in the chroot that
``hpcopt.testbed.build_chroot`` builds once and caches; every later module and run
reuses it).  It yields a ``Cluster``: ``.dir`` (the testbed's directory), ``.env`` (SLURM_CONF
and PATH with the testbed's client commands first), ``.version`` ("22.05" or "24.11"),
``.run()``, ``.submit()``, ``.jobs()``/``.state()`` (squeue records flattened to 22.05's
shapes: numbers plain, ``job_state`` a string, whatever the version), ``.wait()``,
``.cancel()``, ``.adapter()``, ``.cli()``, ``.releases()``.  Released first thing is a
one-node job with a one-minute limit that sleeps five (``.timeout_job``), for a module's
last test to check its TIMEOUT; a module that does not want it can cancel it.

Skips, with the reason: Slurm 22.05 or root missing (a failure in CI, CI=true); the 24.11
chroot that cannot be built (no debootstrap, Debian 13's packages unreachable), also in CI,
where the reason is printed by ``pytest -rs``.  ``HPCOPT_SLURM_VERSIONS=22.05`` (comma list)
runs only those versions.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from hpcopt import testbed
from hpcopt.policies import build_policy
from hpcopt.slurm.adapter import Adapter, Settings
from hpcopt.slurm.state import Slurm, SlurmCommandError, job_state, number

HPCOPT = [str(Path(sys.executable).with_name("hpcopt"))]
VERSIONS = [v for v in os.environ.get("HPCOPT_SLURM_VERSIONS", "22.05,24.11").split(",")
            if v in testbed.VERSIONS]
_chroot_failed: list[str] = []  # why the 24.11 chroot could not be built (once per session)


def _requirements(version: str) -> str | None:
    if os.geteuid() != 0:
        return "the Slurm testbed runs its daemons as root"
    missing = testbed.missing_tools(version)
    if missing and version == "22.05":
        return "Slurm is not installed (missing " + ", ".join(missing) + \
            "; apt-get install slurm-wlm munge)"
    if missing:
        return "the Slurm 24.11 testbed needs " + ", ".join(missing)
    return None


def _chroot() -> str | None:
    """None when the 24.11 chroot is there (built now if need be), else why not."""
    if _chroot_failed:
        return _chroot_failed[0]
    try:
        t0 = time.monotonic()
        root = testbed.build_chroot()
        took = time.monotonic() - t0
        if took > 1:
            print(f"\nbuilt the Slurm 24.11 chroot in {took:.0f} s ({root})", file=sys.stderr)
    except testbed.TestbedError as exc:
        _chroot_failed.append(f"Slurm 24.11 skipped: {exc}")
        return _chroot_failed[0]
    return None


@contextmanager
def started_testbed(version: str, name: str, nodes: int = 8, cls=None, **options):
    """A testbed of ``nodes`` nodes of Slurm ``version`` in a new directory ``NAME<version>``,
    started with ``testbed.start``'s ``options``, as a ``cls`` (default ``Cluster``); stopped
    at the end.  Skips with the reason where it cannot run (a failure in CI for 22.05, which
    CI installs; 24.11 skips when its chroot cannot be built, in CI too)."""
    why = _requirements(version) or (_chroot() if version == "24.11" else None)
    if why:
        if os.environ.get("CI") == "true" and version == "22.05":
            pytest.fail(f"CI must run the Slurm tests: {why}")
        pytest.skip(why)
    # not under pytest's base temp: another pytest session resets that to mode 0700 when it
    # starts, and the tests' unprivileged users must reach slurm.conf and munge's socket
    d = Path(tempfile.mkdtemp(prefix=f"hpcopt-{name}{version}-"))
    try:
        testbed.start(d, nodes, slurm=version, **options)
        try:
            yield (cls or Cluster)(d, testbed.env(d), version)
        finally:
            testbed.stop(d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def free_udp_port() -> int:
    """A UDP port of loopback that nothing listens on now."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def unix_user(name: str):
    """An unprivileged user ``name`` (made with useradd when missing, removed at the end when
    made here)."""
    made = False
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "-M", "-s", "/bin/sh", name], check=True,
                       capture_output=True)
        made = True
    try:
        yield name
    finally:
        if made:
            subprocess.run(["userdel", name], capture_output=True)


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def cluster(request):
    with started_testbed(request.param, "slurm") as c:
        # the time-limit job: one node, limit one minute, sleeps five; checked by a last test
        c.timeout_job = c.submit("-t", "1", "-N", "1", sleep=300)
        c.run("scontrol", "release", str(c.timeout_job))
        c.wait(lambda: c.state(c.timeout_job) == "RUNNING", 10)
        yield c


def flat(job: dict) -> dict:
    """A ``squeue --json`` job with 22.05's shapes: ``{set, infinite, number}`` numbers
    plain (None when unset), a 23.11+ ``job_state`` list as its state string."""
    out = dict(job)
    for k, v in job.items():
        if isinstance(v, dict) and "set" in v and "number" in v:
            n = number(v, "squeue job", k)
            out[k] = None if n is None else (NO_VAL_SHOWN if n == float("inf") else n)
    out["job_state"] = job_state(job.get("job_state", ""), "squeue job")
    return out


NO_VAL_SHOWN = 4294967294  # how 22.05 prints an infinite number


class Cluster:
    def __init__(self, d: Path, env: dict, version: str = "22.05") -> None:
        self.dir, self.env, self.version = d, env, version
        self.timeout_job = None

    def run(self, *cmd: str, check: bool = True) -> str:
        p = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=30)
        if check and p.returncode:
            raise AssertionError(f"{cmd}: {p.stderr}")
        return p.stdout

    def submit(self, *args: str, sleep: float = 2) -> int:
        out = self.run("sbatch", "--parsable", "-o", "/dev/null", *args, "--wrap",
                       f"sleep {sleep}")
        return int(out.strip().split(";")[0])

    def jobs(self) -> dict[int, dict]:
        """Every job, by id, finished ones included, flattened to 22.05's shapes (``flat``).
        ``--states=all``: 24.11's ``squeue --json`` leaves finished jobs out (22.05's shows
        them until MinJobAge)."""
        out = self.run("squeue", "--json", "--states=all")
        return {j["job_id"]: flat(j) for j in json.loads(out)["jobs"]}

    def state(self, jid: int) -> str:
        return self.jobs()[jid]["job_state"]

    def wait(self, cond, timeout: float, step: float = 0.3) -> None:
        end = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > end:
                raise AssertionError(f"not reached in {timeout} s: {self.jobs()}")
            time.sleep(step)

    def cancel(self, ids) -> None:
        ids = [str(i) for i in ids]
        if ids:
            self.run("scancel", *ids, check=False)
            self.wait(lambda: all(self.jobs()[int(i)]["job_state"] not in
                                  ("PENDING", "RUNNING", "COMPLETING") for i in ids), 20)

    def adapter(self, policy="fcfs", slurm: Slurm | None = None, **kw) -> Adapter:
        """An adapter on this cluster; ``policy`` a registered name or a policy object;
        ``kw``: its ``Settings`` and the driver's options."""
        slurm = slurm or Slurm(env=self.env, timeout=5, retries=1, backoff=0.2)
        mine = {k: kw.pop(k) for k in list(kw) if k in Settings.__dataclass_fields__}
        return Adapter(build_policy(policy), Settings(**mine), slurm=slurm,
                       say=lambda s: None, **kw)

    def releases(self) -> list[int]:
        """Job ids in Slurm's log lines 'release hold on JobId=...', in order."""
        text = (self.dir / "log" / "slurmctld.log").read_text(errors="replace")
        return [int(m) for m in re.findall(r"release hold on JobId=(\d+)", text)]

    def cli(self, *args: str, **kw) -> subprocess.Popen:
        from .conftest import default_signals  # here: conftest imports this module

        return subprocess.Popen([*HPCOPT, "slurm", *args], env=self.env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                preexec_fn=default_signals, **kw)


class Accounts(Cluster):
    """A cluster whose jobs unprivileged users submit, each for one account: ``users``
    maps each account to its user (made with ``unix_user``; ``sacctmgr`` associations are
    the test's)."""

    users: dict[str, str] = {}

    def as_user(self, account: str, *args: str, sleep: int = 2) -> int:
        env = [f"{k}={self.env[k]}" for k in ("SLURM_CONF", "PATH")]
        p = subprocess.run(["runuser", "-u", self.users[account], "--", "env", *env,
                            "sbatch", "--parsable", "-D", "/tmp", "-o", "/dev/null", "-A",
                            account, *args, "--wrap", f"sleep {sleep}"],
                           capture_output=True, text=True, timeout=30, cwd="/tmp")
        assert p.returncode == 0, p.stderr
        return int(p.stdout.strip().split(";")[0])


@contextmanager
def accounts_testbed(version: str, name: str, users: dict[str, str], **options):
    """A testbed with accounting (``started_testbed``'s ``options``) as an ``Accounts`` whose
    ``users`` exist as unprivileged users (skips without runuser and useradd); their jobs
    are cancelled at the end."""
    if shutil.which("runuser") is None or shutil.which("useradd") is None:
        pytest.skip("runuser and useradd are needed to act as unprivileged users")
    with ExitStack() as stack:
        for user in users.values():
            stack.enter_context(unix_user(user))
        c = stack.enter_context(started_testbed(version, name, cls=Accounts, accounting=True,
                                                **options))
        c.users = dict(users)
        try:
            yield c
        finally:
            for user in users.values():
                c.run("scancel", "--quiet", "--user", user, check=False)


ENDED = ("COMPLETED", "CANCELLED", "TIMEOUT", "FAILED", "NODE_FAIL")


def check_released_fit_bb(c: Cluster, ids, reason: str, drive) -> list[dict]:
    """Cycle an adapter through ``drive(until)`` until every job of ``ids`` ended, then
    check that none waited in Slurm with ``reason`` (its burst buffer taken: Licenses,
    BurstBufferResources), that no cycle released more burst buffer than was free, and that
    each job was released once and completed; the cycles' records."""
    waited = []

    def done():
        jobs = c.jobs()
        waited.extend(i for i in ids if jobs[i]["state_reason"] == reason)
        return all(jobs[i]["job_state"] in ENDED for i in ids)

    records = drive(done)
    assert not waited, f"released jobs waited with {reason}: {sorted(set(waited))}"
    for rec in records:
        assert rec["released_bb"] <= rec["free_bb"] + 1e-9, rec
    assert sorted(str(k) for r in records for k in r["released"]) == sorted(map(str, ids))
    assert all(c.jobs()[i]["job_state"] == "COMPLETED" for i in ids)
    return records


def cycle_until_placed(adapter, n: int, tries: int = 40) -> dict[str, str]:
    """Cycle ``adapter`` (on a topology) until ``n`` jobs were placed; their nodes by id."""
    placed: dict[str, str] = {}
    for _ in range(tries):
        rec = adapter.cycle()
        assert rec["ok"], rec.get("error")
        placed.update(rec["placed"])
        if len(placed) == n:
            break
    return placed


__all__ = ["ENDED", "HPCOPT", "Cluster", "SlurmCommandError", "check_released_fit_bb",
           "cluster", "cycle_until_placed", "flat"]
