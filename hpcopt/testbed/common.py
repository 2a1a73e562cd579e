"""What every part of the testbed shares: its names (daemons, partitions, versions), its
error, where a testbed's record and pid files are, and how its commands are run and waited on."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from ..errors import HpcoptError

DAEMONS = ("slurmctld", "slurmd", "munged", "slurmdbd", "mariadbd")


PARTITION = "batch"


#: the second partition: the same nodes, not managed (its jobs are not held)
OTHER_PARTITION = "debug"


#: the second managed partition of ``split=K``: the nodes after the first K (batch keeps those)
SPLIT_PARTITION = "batch2"


#: the partition of ``shared=True``: the same nodes, shared by jobs core by core
SHARED_PARTITION = "shared"


VERSIONS = ("22.05", "24.11")


#: the client commands put in ``directory/bin``
CLIENTS = ("squeue", "sinfo", "scontrol", "sbatch", "scancel", "sacct", "sacctmgr", "srun",
           "salloc", "sprio", "sshare", "sstat", "sdiag", "strigger")


#: Debian's packages of accounting: slurmdbd and its MariaDB (host for 22.05, chroot for 24.11)
ACCOUNTING_PACKAGES = ("slurmdbd", "mariadb-server", "mariadb-client")


_ACCOUNTING_PROGRAMS = ("slurmdbd", "mariadbd", "mariadb-install-db", "mariadb")


#: the chroot's packages: Slurm, munge and accounting
CHROOT_PACKAGES = ("slurm-wlm", "slurm-client", "munge", *ACCOUNTING_PACKAGES)


#: where the host's /etc is mounted inside the chroot (its passwd and group link there)
HOST_ETC = "/run/hpcopt-host-etc"


class TestbedError(HpcoptError):
    """The testbed cannot start or stop (a missing package, a port in use, a daemon died)."""


def info(directory: str | Path) -> dict:
    """What ``start`` recorded in ``directory/testbed.json``: ``slurm`` (the version),
    ``root`` (the chroot, 24.11 only); a directory without it is a 22.05 testbed."""
    try:
        return json.loads(Path(directory, "testbed.json").read_text())
    except (OSError, ValueError):
        return {"slurm": "22.05", "root": None}


def env(directory: str | Path, base: dict | None = None) -> dict:
    """``base`` (default: this process's environment) with ``SLURM_CONF`` and ``PATH``
    (``directory/bin`` first) set for the testbed's client commands."""
    d = Path(directory).resolve()
    base = dict(os.environ) if base is None else dict(base)
    return {**base, "SLURM_CONF": str(d / "slurm.conf"),
            "PATH": f"{d / 'bin'}:{base.get('PATH', os.defpath)}"}


def daemon(directory: str | Path, name: str) -> list[str]:
    """The command that starts the testbed's daemon ``name`` (``slurmctld``, ``slurmd``,
    ``slurmdbd``, ``mariadbd``, or a program of /usr/bin such as ``mariadb``; arguments to
    add): the host's program, or for 24.11 the chroot's, in the testbed's mount namespace
    (munged must be running)."""
    d = Path(directory).resolve()
    root = info(d).get("root")
    if not root:
        return [name]
    munged = pids(d).get("munged")
    if munged is None:
        raise TestbedError(f"{d}: munged is not running (the 24.11 daemons join its mounts)")
    where = "/usr/sbin" if name in DAEMONS else "/usr/bin"
    return ["nsenter", f"--mount=/proc/{munged}/ns/mnt", "chroot", root, f"{where}/{name}"]


def _wait(cond, timeout: float, message: str, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            try:
                last = log.read_text(errors="replace").strip().splitlines()[-1]
            except (OSError, IndexError):
                last = "(no log)"
            raise TestbedError(f"{message}; its log's last line: {last}")
        time.sleep(0.2)


def _run(cmd: list[str], env: dict, what: str | None = None) -> None:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        name = what or next((c for c in cmd if c.rsplit("/", 1)[-1] in DAEMONS), cmd[0])
        raise TestbedError(f"{name.rsplit('/', 1)[-1]} failed"
                           + ("" if what else " to start") + ": "
                           + (proc.stderr or proc.stdout).strip().replace("\n", "; "))


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


def _alive(pid: int, names: tuple[bytes, ...] = tuple(n.encode() for n in DAEMONS)) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie or a reused pid of another program is not ours
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].rsplit(b"/", 1)[-1] \
            in names
    except OSError:
        return False
