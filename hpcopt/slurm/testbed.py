"""An emulated N-node Slurm cluster on this machine, all of it inside one directory.

``start(directory)`` writes a munge key and a ``slurm.conf`` of its own there, starts
``munged`` (its own socket), ``slurmctld`` and one ``slurmd -N nX`` per node on loopback
ports, and waits until every node is idle; ``stop(directory)`` cancels every job, shuts the
daemons down and waits for the processes its pid files named (never by process name).  Point
Slurm's tools at the cluster with ``SLURM_CONF=directory/slurm.conf`` and
``PATH=directory/bin:$PATH`` (``env(directory)`` gives both).  Needs root (the daemons run as
root, which is what lets several ``slurmd`` share one host).

Two Slurm versions: ``slurm="22.05"`` (default) runs the host's ``slurm-wlm`` and ``munge``
(Debian 12); ``slurm="24.11"`` runs Debian 13's, from a chroot that ``build_chroot`` makes
once with ``debootstrap --variant=minbase trixie`` and keeps in ``chroot_cache`` (default
``CHROOT_CACHE``; reused when present).  The 24.11 daemons run inside the chroot, in a
private mount namespace of their own (``unshare --mount``): ``/proc``, ``/sys``, ``/dev``,
the host's ``/etc`` (for its users: the chroot's ``/etc/passwd`` and ``/etc/group`` link
there, so a user added on the host is known at once) and the testbed's directory at the same
path are mounted there only, so nothing is left mounted on the host when the daemons end.
The client commands in ``directory/bin`` (``squeue``, ``sinfo``, ``sbatch``, ...) run the
chroot's programs with the chroot's own loader and libraries (no ``chroot``), so any user can
run them; ``PluginDir`` in ``slurm.conf`` names the chroot's plugins by their host path,
which a link inside the chroot makes valid there too.

With ``hold=True`` (default) the cluster loads the ``job_submit.lua`` that
``hpcopt.slurm.lua`` prints, so every job submitted to the managed partition (``batch``, the
default one) is held until ``hpcopt slurm run`` releases it; a second partition ``debug``
(same nodes, not held) is there for jobs of another partition.  ``scheduler="backfill"``
runs Slurm's own backfill scheduler (``bf_interval=1``) instead of the FIFO
``sched/builtin``.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import shlex
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
#: the second partition: the same nodes, not managed (its jobs are not held)
OTHER_PARTITION = "debug"
VERSIONS = ("22.05", "24.11")
#: where the Debian 13 chroot of Slurm 24.11 is built and kept
CHROOT_CACHE = Path("/var/cache/hpcopt/slurm-24.11")
DEBIAN_MIRROR = os.environ.get("HPCOPT_DEBIAN_MIRROR", "http://deb.debian.org/debian")
#: the client commands put in ``directory/bin``
CLIENTS = ("squeue", "sinfo", "scontrol", "sbatch", "scancel", "sacct", "srun", "salloc",
           "sprio", "sshare", "sstat", "sdiag", "strigger")
#: where the host's /etc is mounted inside the chroot (its passwd and group link there)
HOST_ETC = "/run/hpcopt-host-etc"
_READY = ".hpcopt-ready"
_LIBS = ("usr/lib/x86_64-linux-gnu/slurm-wlm", "usr/lib/x86_64-linux-gnu",
         "lib/x86_64-linux-gnu")
_PLUGINS = "usr/lib/x86_64-linux-gnu/slurm-wlm"


class TestbedError(HpcoptError):
    """The testbed cannot start or stop (a missing package, a port in use, a daemon died)."""


def missing_tools(slurm: str = "22.05") -> list[str]:
    """The programs the testbed of that Slurm version needs that are not installed (24.11:
    the tools that build and enter the chroot; its Slurm comes from the chroot)."""
    if slurm == "24.11":
        need = ("unshare", "nsenter", "chroot", "mount")
        if not (CHROOT_CACHE / _READY).exists():
            need += ("debootstrap",)
        return [t for t in need if shutil.which(t) is None]
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


# ------------------------------------------------------------------ the 24.11 chroot


def build_chroot(cache: str | Path = CHROOT_CACHE, say=None, timeout: float = 900.0) -> Path:
    """The Debian 13 chroot with Slurm 24.11 and munge in ``cache``: built when it is not
    there (debootstrap, then apt-get in the chroot; about 30-60 s and network), reused when
    it is (``cache/.hpcopt-ready`` names the Slurm package installed).  Concurrent callers
    wait for one build (a lock file beside ``cache``)."""
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
        script = (f"set -e; R={shlex.quote(str(tmp))}; mount -t proc proc $R/proc; "
                  "mount --bind /dev $R/dev; mount --bind /dev/pts $R/dev/pts; "
                  "chroot $R apt-get update -qq; DEBIAN_FRONTEND=noninteractive chroot $R "
                  "apt-get install -y -qq --no-install-recommends slurm-wlm slurm-client "
                  "munge >/dev/null; chroot $R dpkg-query -W -f '${Version}' slurm-wlm")
        version = _build_step(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                               script], "apt-get install slurm-wlm munge (in the chroot)",
                              timeout)
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


def _build_step(cmd: list[str], what: str, timeout: float) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise TestbedError(f"cannot build the Slurm 24.11 chroot: {what} took over "
                           f"{timeout:g} s") from None
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines() or ["(no output)"]
        raise TestbedError(f"cannot build the Slurm 24.11 chroot: {what} failed (exit "
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


# ------------------------------------------------------------------ configuration


def slurm_conf(d: Path, nodes: int, cpus: int, port: int, scheduler: str,
               hold: bool, plugin_dir: Path | None = None) -> str:
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
    if plugin_dir is not None:
        lines.append(f"PluginDir={plugin_dir}")
    if hold:
        lines.append("JobSubmitPlugins=lua")
    last = port + nodes
    lines += [
        f"NodeName=n[1-{nodes}] NodeHostname=localhost Port=[{port + 1}-{last}] "
        f"CPUs={cpus} RealMemory=1000 State=UNKNOWN",
        f"PartitionName={PARTITION} Nodes=n[1-{nodes}] Default=YES MaxTime=INFINITE "
        "State=UP OverSubscribe=EXCLUSIVE",
        f"PartitionName={OTHER_PARTITION} Nodes=n[1-{nodes}] Default=NO MaxTime=INFINITE "
        "State=UP OverSubscribe=EXCLUSIVE",
    ]
    return "\n".join(lines) + "\n"


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


def _traversable(d: Path) -> None:
    """Let every user reach ``d`` (x for others on it and each directory above it that
    lacks it: a pytest tmp dir is 0700), so that users can reach the munge socket and
    slurm.conf; nothing becomes readable or writable that was not."""
    for p in (d, *d.parents):
        mode = p.stat().st_mode
        if not mode & 0o001:
            os.chmod(p, (mode & 0o7777) | 0o001)


# ------------------------------------------------------------------ start


def start(directory: str | Path, nodes: int = 8, *, cpus: int = 4, port: int | None = None,
          scheduler: str = "builtin", hold: bool = True, timeout: float = 60.0,
          slurm: str = "22.05", chroot_cache: str | Path | None = None,
          say=None) -> Path:
    """Start the cluster in ``directory`` (created); returns the path of its slurm.conf.
    ``slurm="24.11"`` builds the chroot in ``chroot_cache`` first when it is not there."""
    if scheduler not in ("builtin", "backfill"):
        raise TestbedError(f"scheduler must be 'builtin' or 'backfill', got {scheduler!r}")
    if slurm not in VERSIONS:
        raise TestbedError(f"slurm must be one of {', '.join(VERSIONS)}, got {slurm!r}")
    if not 1 <= nodes <= 64:
        raise TestbedError(f"nodes must be 1..64, got {nodes}")
    if os.geteuid() != 0:
        raise TestbedError("the testbed runs its daemons as root (several slurmd on one host)")
    missing = missing_tools(slurm)
    if missing and slurm == "22.05":
        raise TestbedError("not installed: " + ", ".join(missing) + " (Debian/Ubuntu: "
                           "apt-get install slurm-wlm munge)")
    if missing:
        raise TestbedError("not installed: " + ", ".join(missing) + " (Debian/Ubuntu: "
                           "apt-get install util-linux mount debootstrap)")
    d = Path(directory).resolve()
    if running(d):
        raise TestbedError(f"{d}: a testbed is running there already (stop it first)")
    root = None
    if slurm == "24.11":
        root = build_chroot(chroot_cache or CHROOT_CACHE, say=say)
    for sub in ("munge", "state", "spool", "run", "log"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    # users reach the socket (0755: the directory is listable, the key is root's alone)
    os.chmod(d / "munge", 0o755)
    _traversable(d)
    key = d / "munge" / "munge.key"
    if not key.exists():
        key.write_bytes(secrets.token_bytes(1024))
    os.chmod(key, 0o400)
    port = free_port_block(nodes + 2) if port is None else port
    conf = d / "slurm.conf"
    conf.write_text(slurm_conf(d, nodes, cpus, port, scheduler, hold,
                               root / _PLUGINS if root else None))
    if root is not None:
        # 24.11's slurmd needs cgroups unless told not to use them
        (d / "cgroup.conf").write_text("CgroupPlugin=disabled\n")
        _prepare_root(root, d)
    (d / "job_submit.lua").write_text(job_submit_lua(PARTITION))
    (d / "testbed.json").write_text(json.dumps({"slurm": slurm,
                                                "root": str(root) if root else None}))
    _write_clients(d, root)
    e = env(d)
    munged = ["munged", "--force", f"--socket={d}/munge/munge.socket",
              f"--key-file={key}", f"--pid-file={d}/run/munged.pid",
              f"--log-file={d}/log/munged.log", f"--seed-file={d}/munge/munged.seed"]
    if root is None:
        _run(munged, e)
    else:
        # the private mount namespace: mounted here, then munged (which keeps it alive; the
        # other daemons join it by munged's pid)
        r = shlex.quote(str(root))
        mounts = (f"set -e; R={r}; mount -t proc proc $R/proc; "
                  "mount --bind /sys $R/sys; mount --bind /dev $R/dev; "
                  "mount --bind /dev/pts $R/dev/pts; "
                  f"mount --bind /etc $R{HOST_ETC}; mount -o remount,bind,ro $R{HOST_ETC}; "
                  f"mount --bind {shlex.quote(str(d))} {shlex.quote(str(_in_root(root, d)))}; "
                  f"exec chroot $R /usr/sbin/{shlex.join(munged)}")
        _run(["unshare", "--mount", "--propagation", "private", "sh", "-c", mounts], e)
    try:
        _run([*daemon(d, "slurmctld"), "-i", "-f", str(conf)], e)  # -i: no saved state
        for i in range(1, nodes + 1):
            (d / "spool" / f"n{i}").mkdir(exist_ok=True)
            _run([*daemon(d, "slurmd"), "-N", f"n{i}", "-f", str(conf)], e)
        _wait_idle(e, nodes, timeout, d)
    except BaseException:
        stop(d)
        raise
    return conf


def daemon(directory: str | Path, name: str) -> list[str]:
    """The command that starts the testbed's daemon ``name`` (``slurmctld``, ``slurmd``;
    arguments to add): the host's program, or for 24.11 the chroot's, in the testbed's
    mount namespace (munged must be running)."""
    d = Path(directory).resolve()
    root = info(d).get("root")
    if not root:
        return [name]
    munged = pids(d).get("munged")
    if munged is None:
        raise TestbedError(f"{d}: munged is not running (the 24.11 daemons join its mounts)")
    return ["nsenter", f"--mount=/proc/{munged}/ns/mnt", "chroot", root, f"/usr/sbin/{name}"]


def _run(cmd: list[str], env: dict) -> None:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        name = next((c for c in cmd if c.rsplit("/", 1)[-1] in DAEMONS), cmd[0])
        raise TestbedError(f"{name.rsplit('/', 1)[-1]} failed to start: "
                           + (proc.stderr or proc.stdout).strip().replace("\n", "; "))


def _wait_idle(env: dict, nodes: int, timeout: float, d: Path) -> None:
    deadline = time.monotonic() + timeout
    out = ""
    while time.monotonic() < deadline:
        proc = subprocess.run(["sinfo", "-h", "-N", "-p", PARTITION, "-o", "%N %t"], env=env,
                              capture_output=True, text=True, timeout=20)
        out = proc.stdout
        idle = [ln for ln in out.splitlines() if ln.split()[-1:] == ["idle"]]
        if len(idle) == nodes:
            return
        time.sleep(0.5)
    raise TestbedError(f"{d}: the nodes did not all become idle in {timeout:g} s "
                       f"(sinfo: {out.strip()!r}; logs in {d}/log)")


# ------------------------------------------------------------------ state and stop


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


def _alive(pid: int, names: tuple[bytes, ...] = (b"slurmctld", b"slurmd", b"munged")) -> bool:
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


def stepds(directory: str | Path) -> list[int]:
    """The ``slurmstepd`` processes of this testbed's jobs.  A name alone would also match
    another cluster's, so a process counts when its command is ``slurmstepd`` and it works
    in this testbed's directory: its working directory or one of its open files (a
    slurmstepd keeps its slurmd's log, ``directory/log/slurmd-nX.log``, open and works in
    ``directory/log``) lies under ``directory`` (for 24.11 as the host sees the chroot's
    mount of it: ``root/directory/...``).  Seen: 24.11's slurmstepd has an empty
    environment, so SLURM_CONF in /proc/PID/environ cannot tell; its parent is init."""
    d = Path(directory).resolve()
    root = info(d).get("root")
    mine = (f"{d}/",) + ((f"{root}{d}/",) if root else ())
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            if not (p / "cmdline").read_bytes().startswith(b"slurmstepd"):
                continue
            links = [os.readlink(p / "cwd")]
            for fd in (p / "fd").iterdir():
                try:
                    links.append(os.readlink(fd))
                except OSError:
                    continue
        except OSError:
            continue
        if any(link.startswith(mine) for link in links):
            found.append(int(p.name))
    return found


def _descendants(roots: list[int]) -> list[int]:
    """``roots`` and every process below them (by the parent pid in /proc/PID/stat)."""
    children: dict[int, list[int]] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(p.name))
    out, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def stop(directory: str | Path, timeout: float = 20.0) -> None:
    """Shut the cluster in ``directory`` down: cancel every job of the cluster (all
    partitions), ``scontrol shutdown``, then SIGTERM (and after half of ``timeout`` SIGKILL)
    to the daemons its pid files named when ``stop`` began and to any ``slurmstepd`` of the
    testbed left (with its job's processes); munged last (with it, for 24.11, the mounts of
    its namespace go).  Returns once those processes have ended."""
    d = Path(directory).resolve()
    conf = d / "slurm.conf"
    e = env(d)
    daemons = pids(d)  # now: a busy slurmd's pid file goes before the process ends
    if "slurmctld" in daemons and conf.exists():
        try:
            ids = subprocess.run(["squeue", "--noheader", "--format=%i"], env=e,
                                 capture_output=True, text=True, timeout=10).stdout.split()
            if ids:
                subprocess.run(["scancel", "--quiet", *ids], env=e, capture_output=True,
                               timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        end = time.monotonic() + timeout / 2  # let the jobs end through Slurm first
        while stepds(d) and time.monotonic() < end:
            time.sleep(0.2)
        try:
            subprocess.run(["scontrol", "shutdown"], env=e, capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
    for munge in (False, True):
        mine = {n: p for n, p in daemons.items() if (n == "munged") == munge}
        start_t = time.monotonic()
        while True:
            left = {n: p for n, p in mine.items() if _alive(p)}
            if not munge:
                left.update({f"slurmstepd {p}": p for p in _descendants(stepds(d))})
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
    root = info(d).get("root")
    if root:  # the empty directories made for the mount point (not the chroot's own)
        r, p = Path(root), _in_root(Path(root), d)
        while p.parent != r:
            try:
                p.rmdir()
            except OSError:
                break
            p = p.parent
