"""Slurm 24.11 from a Debian 13 chroot: building it once (debootstrap), adding the accounting
packages, the testbed's folder inside it and the client commands that run its programs."""

from __future__ import annotations

import fcntl
import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

from .common import (
    _ACCOUNTING_PROGRAMS,
    ACCOUNTING_PACKAGES,
    CHROOT_PACKAGES,
    CLIENTS,
    HOST_ETC,
    TestbedError,
)

#: where the Debian 13 chroot of Slurm 24.11 is built and kept
CHROOT_CACHE = Path("/var/cache/hpcopt/slurm-24.11")


DEBIAN_MIRROR = os.environ.get("HPCOPT_DEBIAN_MIRROR", "http://deb.debian.org/debian")


_READY = ".hpcopt-ready"


_LIBS = ("usr/lib/x86_64-linux-gnu/slurm-wlm", "usr/lib/x86_64-linux-gnu",
         "lib/x86_64-linux-gnu")


_PLUGINS = "usr/lib/x86_64-linux-gnu/slurm-wlm"


def missing_tools(slurm: str = "22.05", accounting: bool = False) -> list[str]:
    """The programs the testbed of that Slurm version needs that are not installed (24.11:
    the tools that build and enter the chroot; its Slurm comes from the chroot, and so do
    slurmdbd and MariaDB, installed there on demand)."""
    if slurm == "24.11":
        need = ("unshare", "nsenter", "chroot", "mount")
        if not (CHROOT_CACHE / _READY).exists():
            need += ("debootstrap",)
        return [t for t in need if shutil.which(t) is None]
    need = ("slurmctld", "slurmd", "munged", "scontrol", "squeue", "sinfo", "sbatch")
    if accounting:
        need += _ACCOUNTING_PROGRAMS
    return [t for t in need if shutil.which(t) is None]


def build_chroot(cache: str | Path = CHROOT_CACHE, say=None, timeout: float = 900.0) -> Path:
    """The Debian 13 chroot with Slurm 24.11, munge, slurmdbd and MariaDB in ``cache``: built
    when it is not there (debootstrap, then apt-get in the chroot; about 30-60 s and
    network), reused when it is (``cache/.hpcopt-ready`` names the Slurm package installed;
    a chroot built before accounting was part of it gets slurmdbd and MariaDB from
    ``chroot_accounting`` when a testbed with accounting first needs them).  Concurrent
    callers wait for one build (a lock file beside ``cache``)."""
    root = Path(cache).resolve()
    if (root / _READY).exists():
        return root
    if os.geteuid() != 0:
        raise TestbedError("building the Slurm 24.11 chroot needs root")
    if shutil.which("debootstrap") is None:
        raise TestbedError("cannot build the Slurm 24.11 chroot: debootstrap is not installed "
                           "(apt-get install debootstrap)")
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.with_name(root.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / _READY).exists():
            return root
        tmp = root.with_name(root.name + ".building")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
        if say:
            say(f"building the Slurm 24.11 chroot in {root} (debootstrap trixie, "
                f"{DEBIAN_MIRROR})")
        t0 = time.monotonic()
        _build_step(["debootstrap", "--variant=minbase", "trixie", str(tmp), DEBIAN_MIRROR],
                    "debootstrap", timeout)
        for f in ("resolv.conf", "hosts"):
            shutil.copyfile(f"/etc/{f}", tmp / "etc" / f)
        # apt inside the chroot, with /proc and /dev mounted in a private namespace only
        script = _apt_script(tmp, CHROOT_PACKAGES) + \
            "; chroot $R dpkg-query -W -f '${Version}' slurm-wlm"
        version = _build_step(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                               script], "apt-get install " + " ".join(CHROOT_PACKAGES)
                              + " (in the chroot)", timeout)
        # users: the host's, live (the host's /etc is mounted at HOST_ETC when it runs)
        (tmp / HOST_ETC.lstrip("/")).mkdir(parents=True, exist_ok=True)
        for f in ("passwd", "group"):
            (tmp / "etc" / f).rename(tmp / "etc" / f"{f}.chroot")
            (tmp / "etc" / f).symlink_to(f"{HOST_ETC}/{f}")
        (tmp / _READY).write_text(f"slurm-wlm {version.strip()}\n"
                                  f"built in {time.monotonic() - t0:.0f} s\n")
        tmp.rename(root)
        if say:
            say(f"built in {time.monotonic() - t0:.0f} s: slurm-wlm {version.strip()}")
    return root


def _apt_script(root: Path, packages) -> str:
    """Shell text that installs ``packages`` with apt-get inside the chroot ``root`` ($R),
    with /proc and /dev mounted (run it in a private mount namespace) and no service started
    (a policy-rc.d that says no while apt runs)."""
    return (f"set -e; R={shlex.quote(str(root))}; mount -t proc proc $R/proc; "
            "mount --bind /dev $R/dev; mount --bind /dev/pts $R/dev/pts; "
            "printf '#!/bin/sh\\nexit 101\\n' > $R/usr/sbin/policy-rc.d; "
            "chmod 755 $R/usr/sbin/policy-rc.d; "
            "chroot $R apt-get update -qq; DEBIAN_FRONTEND=noninteractive chroot $R "
            "apt-get install -y -qq --no-install-recommends "
            f"{' '.join(packages)} >/dev/null; rm -f $R/usr/sbin/policy-rc.d")


def _has_accounting(root: Path) -> bool:
    return all((root / "usr" / sub / prog).exists() for sub, prog in (
        ("sbin", "slurmdbd"), ("sbin", "mariadbd"), ("bin", "mariadb-install-db"),
        ("bin", "mariadb")))


def chroot_accounting(cache: str | Path = CHROOT_CACHE, say=None,
                      timeout: float = 900.0) -> Path:
    """The 24.11 chroot (``build_chroot``) with slurmdbd and MariaDB: a chroot built without
    them gets them now (apt-get in the chroot: about 10-30 s and network).  While they are
    installed the chroot's own ``passwd`` and ``group`` stand in /etc (the packages add
    system users there); the links to the host's come back after."""
    root = build_chroot(cache, say=say, timeout=timeout)
    if _has_accounting(root):
        return root
    if os.geteuid() != 0:
        raise TestbedError("installing slurmdbd and MariaDB into the Slurm 24.11 chroot "
                           "needs root")
    with open(root.with_name(root.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _has_accounting(root):
            return root
        if say:
            say(f"installing {' '.join(ACCOUNTING_PACKAGES)} into {root}")
        t0 = time.monotonic()
        etc = root / "etc"
        for f in ("passwd", "group"):
            if (etc / f).is_symlink() and (etc / f"{f}.chroot").exists():
                (etc / f).unlink()
                (etc / f"{f}.chroot").rename(etc / f)
        try:
            _build_step(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                         _apt_script(root, ACCOUNTING_PACKAGES)],
                        "apt-get install " + " ".join(ACCOUNTING_PACKAGES) + " (in the chroot)",
                        timeout, "add accounting to")
        finally:
            for f in ("passwd", "group"):
                if not (etc / f).is_symlink():
                    (etc / f).rename(etc / f"{f}.chroot")
                    (etc / f).symlink_to(f"{HOST_ETC}/{f}")
        if say:
            say(f"installed in {time.monotonic() - t0:.0f} s")
    return root


def _build_step(cmd: list[str], what: str, timeout: float, verb: str = "build") -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TestbedError(f"cannot {verb} the Slurm 24.11 chroot: {what} took over "
                           f"{timeout:g} s") from None
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines() or ["(no output)"]
        raise TestbedError(f"cannot {verb} the Slurm 24.11 chroot: {what} failed (exit "
                           f"{proc.returncode}): {lines[-1]}")
    return proc.stdout


def _in_root(root: Path, path: Path | str) -> Path:
    """``path`` (absolute, of the host) as a path under the chroot ``root``."""
    return root / str(path).lstrip("/")


def _prepare_root(root: Path, d: Path) -> None:
    """Make the host paths in slurm.conf valid inside the chroot: the testbed's directory
    (mounted there at start) and ``root`` itself, a link to / (so ``PluginDir``, the host
    path of the chroot's plugins, names the same plugins inside)."""
    _in_root(root, d).mkdir(parents=True, exist_ok=True)
    link = _in_root(root, root)
    if not link.is_symlink():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to("/")


def _write_clients(d: Path, root: Path | None) -> None:
    """``d/bin``: one script per client command, with the testbed's SLURM_CONF unless the
    caller sets its own.  22.05: the host's program.  24.11: the chroot's, through the
    chroot's loader with the chroot's libraries (no ``chroot``: any user may run it)."""
    b = d / "bin"
    b.mkdir(exist_ok=True)
    conf = shlex.quote(str(d / "slurm.conf"))
    for name in CLIENTS:
        if root is None:
            host = shutil.which(name, path=os.environ.get("PATH", os.defpath)
                                .replace(f"{b}:", ""))
            if host is None:
                continue
            run = shlex.quote(host)
        else:
            prog = root / "usr" / "bin" / name
            if not prog.exists():
                continue
            libs = ":".join(str(root / lib) for lib in _LIBS)
            run = (f"{shlex.quote(str(root / 'lib64' / 'ld-linux-x86-64.so.2'))} "
                   f"--library-path {shlex.quote(libs)} {shlex.quote(str(prog))}")
        f = b / name
        f.write_text(f"#!/bin/sh\n# hpcopt testbed {d}: Slurm {'24.11' if root else '22.05'}"
                     f" {name}\nexport SLURM_CONF=\"${{SLURM_CONF:-{conf}}}\"\n"
                     f'exec {run} "$@"\n')
        f.chmod(0o755)
