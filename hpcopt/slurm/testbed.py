"""An emulated N-node Slurm cluster on this machine, all of it inside one directory.

``start(directory)`` writes a munge key and a ``slurm.conf`` of its own there, starts
``munged`` (its own socket), ``slurmctld`` and one ``slurmd -N nX`` per node on loopback
ports, and waits until every node is idle; ``stop(directory)`` shuts them down and ends what
is left by the pid files in ``directory/run`` (never by process name).  Point Slurm's tools
at the cluster with ``SLURM_CONF=directory/slurm.conf``.  Needs root (the daemons run as root,
which is what lets several ``slurmd`` share one host) and the ``slurm-wlm`` and ``munge``
packages.

With ``hold=True`` (default) the cluster loads the ``job_submit.lua`` that
``hpcopt.slurm.lua`` prints, so every job submitted to the managed partition is held until
``hpcopt slurm run`` releases it; ``scheduler="backfill"`` runs Slurm's own backfill
scheduler (``bf_interval=1``) instead of the FIFO ``sched/builtin``.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from ..errors import HpcoptError
from .lua import job_submit_lua

DAEMONS = ("slurmctld", "slurmd", "munged")
PARTITION = "batch"


class TestbedError(HpcoptError):
    """The testbed cannot start or stop (a missing package, a port in use, a daemon died)."""


def missing_tools() -> list[str]:
    """The Slurm and munge programs the testbed needs that are not installed."""
    return [t for t in (*DAEMONS, "scontrol", "squeue", "sinfo", "sbatch")
            if shutil.which(t) is None]


def free_port_block(n: int, first: int = 16_900) -> int:
    """The first port P >= ``first`` such that P..P+n-1 are all free on loopback."""
    port = first
    while port + n < 65_000:
        if all(_free(p) for p in range(port, port + n)):
            return port
        port += n
    raise TestbedError(f"no block of {n} free ports from {first}")


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def slurm_conf(d: Path, nodes: int, cpus: int, port: int, scheduler: str,
               hold: bool) -> str:
    """The cluster's ``slurm.conf`` (``port`` for slurmctld, the next ``nodes`` for slurmd)."""
    sched = "sched/backfill" if scheduler == "backfill" else "sched/builtin"
    lines = [
        "ClusterName=hpcopt",
        "SlurmctldHost=localhost",
        f"SlurmctldPort={port}",
        f"SlurmdPort={port + 1}",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={d}/munge/munge.socket",
        "SlurmUser=root",
        "SlurmdUser=root",
        f"StateSaveLocation={d}/state",
        f"SlurmdSpoolDir={d}/spool/%n",
        f"SlurmctldPidFile={d}/run/slurmctld.pid",
        f"SlurmdPidFile={d}/run/slurmd-%n.pid",
        f"SlurmctldLogFile={d}/log/slurmctld.log",
        f"SlurmdLogFile={d}/log/slurmd-%n.log",
        "SlurmdParameters=config_overrides",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "MpiDefault=none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "ReturnToService=2",
        f"SchedulerType={sched}",
        "SchedulerParameters=bf_interval=1,bf_resolution=1,sched_min_interval=100000"
        if scheduler == "backfill" else "SchedulerParameters=sched_min_interval=100000",
        "JobCompType=jobcomp/filetxt",
        f"JobCompLoc={d}/log/jobcomp.txt",
        "AccountingStorageType=accounting_storage/none",
        "JobAcctGatherType=jobacct_gather/none",
        "MinJobAge=600",
        "OverTimeLimit=0",
        "KillWait=2",
        "InactiveLimit=0",
        "SlurmctldTimeout=30",
        "SlurmdTimeout=30",
        "MessageTimeout=10",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
    ]
    if hold:
        lines.append("JobSubmitPlugins=lua")
    last = port + nodes
    lines += [
        f"NodeName=n[1-{nodes}] NodeHostname=localhost Port=[{port + 1}-{last}] "
        f"CPUs={cpus} RealMemory=1000 State=UNKNOWN",
        f"PartitionName={PARTITION} Nodes=n[1-{nodes}] Default=YES MaxTime=INFINITE "
        "State=UP OverSubscribe=EXCLUSIVE",
    ]
    return "\n".join(lines) + "\n"


def start(directory: str | Path, nodes: int = 8, *, cpus: int = 4, port: int | None = None,
          scheduler: str = "builtin", hold: bool = True, timeout: float = 60.0) -> Path:
    """Start the cluster in ``directory`` (created); returns the path of its slurm.conf."""
    if scheduler not in ("builtin", "backfill"):
        raise TestbedError(f"scheduler must be 'builtin' or 'backfill', got {scheduler!r}")
    if not 1 <= nodes <= 64:
        raise TestbedError(f"nodes must be 1..64, got {nodes}")
    missing = missing_tools()
    if missing:
        raise TestbedError("not installed: " + ", ".join(missing) + " (Debian/Ubuntu: "
                           "apt-get install slurm-wlm munge)")
    if os.geteuid() != 0:
        raise TestbedError("the testbed runs its daemons as root (several slurmd on one host)")
    d = Path(directory).resolve()
    if running(d):
        raise TestbedError(f"{d}: a testbed is running there already (stop it first)")
    for sub in ("munge", "state", "spool", "run", "log"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(d / "munge", 0o700)
    key = d / "munge" / "munge.key"
    if not key.exists():
        key.write_bytes(secrets.token_bytes(1024))
    os.chmod(key, 0o400)
    port = free_port_block(nodes + 2) if port is None else port
    conf = d / "slurm.conf"
    conf.write_text(slurm_conf(d, nodes, cpus, port, scheduler, hold))
    (d / "job_submit.lua").write_text(job_submit_lua(PARTITION))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    _run(["munged", "--force", f"--socket={d}/munge/munge.socket",
          f"--key-file={key}", f"--pid-file={d}/run/munged.pid",
          f"--log-file={d}/log/munged.log", f"--seed-file={d}/munge/munged.seed"], env)
    try:
        _run(["slurmctld", "-i", "-f", str(conf)], env)  # -i: ignore stale saved state
        for i in range(1, nodes + 1):
            (d / "spool" / f"n{i}").mkdir(exist_ok=True)
            _run(["slurmd", "-N", f"n{i}", "-f", str(conf)], env)
        _wait_idle(env, nodes, timeout, d)
    except BaseException:
        stop(d)
        raise
    return conf


def _run(cmd: list[str], env: dict) -> None:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise TestbedError(f"{cmd[0]} failed to start: "
                           + (proc.stderr or proc.stdout).strip().replace("\n", "; "))


def _wait_idle(env: dict, nodes: int, timeout: float, d: Path) -> None:
    deadline = time.monotonic() + timeout
    out = ""
    while time.monotonic() < deadline:
        proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], env=env,
                              capture_output=True, text=True, timeout=20)
        out = proc.stdout
        idle = [ln for ln in out.splitlines() if ln.split()[-1:] == ["idle"]]
        if len(idle) == nodes:
            return
        time.sleep(0.5)
    raise TestbedError(f"{d}: the nodes did not all become idle in {timeout:g} s "
                       f"(sinfo: {out.strip()!r}; logs in {d}/log)")


def pids(directory: str | Path) -> dict[str, int]:
    """The daemons' pid files in ``directory/run`` whose process is alive: name -> pid."""
    alive = {}
    for f in sorted(Path(directory, "run").glob("*.pid")):
        try:
            pid = int(f.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if _alive(pid):
            alive[f.stem] = pid
    return alive


def running(directory: str | Path) -> bool:
    return "slurmctld" in pids(directory)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie or a reused pid of another program is not ours
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].rsplit(b"/", 1)[-1] \
            in (b"slurmctld", b"slurmd", b"munged")
    except OSError:
        return False


def stop(directory: str | Path, timeout: float = 20.0) -> None:
    """Shut the cluster in ``directory`` down: cancel its jobs, ``scontrol shutdown``, then
    SIGTERM (and after half of ``timeout`` SIGKILL) to what its pid files still name;
    munged last."""
    d = Path(directory).resolve()
    conf = d / "slurm.conf"
    env = {**os.environ, "SLURM_CONF": str(conf)}
    if "slurmctld" in pids(d) and conf.exists():
        for cmd in (["scancel", "--quiet", "--partition", PARTITION], ["scontrol", "shutdown"]):
            try:
                subprocess.run(cmd, env=env, capture_output=True, timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
    for munge in (False, True):
        start_t = time.monotonic()
        while True:
            left = {n: p for n, p in pids(d).items() if (n == "munged") == munge}
            if not left:
                break
            waited = time.monotonic() - start_t
            if waited > timeout:
                raise TestbedError(f"{d}: could not stop {sorted(left)}")
            sig = signal.SIGTERM if waited < timeout / 2 else signal.SIGKILL
            for pid in left.values():
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            time.sleep(0.3)
