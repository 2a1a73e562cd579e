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

Options of ``start``: ``accounting=True`` runs slurmdbd with a MariaDB server of the
testbed's own (data in ``directory/db``, its own socket and loopback port, a database user
with a random password in ``slurmdbd.conf``, mode 600), so that ``sacct`` works: 22.05 uses
the host's ``slurmdbd`` and ``mariadb-server`` packages, 24.11 the chroot's (installed into
a chroot built without them on first use).  ``licenses="bb:100"`` sets ``Licenses=``;
``switch_size=K`` a fat tree (``topology/tree``; ``pod_size=P``: three levels),
``bb_pool="bb:100"`` a ``burst_buffer/lua`` pool, ``ssd="128:4,256:4"`` SSD classes (a gres
``ssd``; with ``ssd_feature="ssd"`` also node features ``ssd128``, ...); ``shared=True`` a partition
``shared`` whose jobs share nodes core by core.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
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
from .wake import epilog_script

DAEMONS = ("slurmctld", "slurmd", "munged", "slurmdbd", "mariadbd")
PARTITION = "batch"
#: the second partition: the same nodes, not managed (its jobs are not held)
OTHER_PARTITION = "debug"
#: the second managed partition of ``split=K``: the nodes after the first K (batch keeps those)
SPLIT_PARTITION = "batch2"
#: the partition of ``shared=True``: the same nodes, shared by jobs core by core
SHARED_PARTITION = "shared"
VERSIONS = ("22.05", "24.11")
#: where the Debian 13 chroot of Slurm 24.11 is built and kept
CHROOT_CACHE = Path("/var/cache/hpcopt/slurm-24.11")
DEBIAN_MIRROR = os.environ.get("HPCOPT_DEBIAN_MIRROR", "http://deb.debian.org/debian")
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
_READY = ".hpcopt-ready"
_LIBS = ("usr/lib/x86_64-linux-gnu/slurm-wlm", "usr/lib/x86_64-linux-gnu",
         "lib/x86_64-linux-gnu")
_PLUGINS = "usr/lib/x86_64-linux-gnu/slurm-wlm"


class TestbedError(HpcoptError):
    """The testbed cannot start or stop (a missing package, a port in use, a daemon died)."""


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


def free_port_block(n: int, first: int | None = None) -> int:
    """The first port P >= ``first`` such that P..P+n-1 are all free on loopback; without
    ``first``, from a random port in 16900..29999 (testbeds started at the same moment by
    several processes then rarely race for one block), wrapping round to 16900."""
    if first is not None:
        starts = range(first, 65_000 - n, n)
    else:
        pick = secrets.randbelow(13_100) + 16_900
        starts = [*range(pick, 65_000 - n, n), *range(16_900, pick, n)]
    for port in starts:
        if all(_free(p) for p in range(port, port + n)):
            return port
    raise TestbedError(f"no block of {n} free ports from {first or 16_900}")


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


# ------------------------------------------------------------------ the 24.11 chroot


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


# ------------------------------------------------------------------ configuration


def slurm_conf(d: Path, nodes: int, cpus: int, port: int, scheduler: str,
               hold: bool, plugin_dir: Path | None = None, *, dbd_port: int | None = None,
               licenses: dict[str, int] | None = None, topology: bool = False,
               shared: bool = False, epilog: Path | None = None, bb_pool: bool = False,
               ssd: list[tuple[int, int]] | None = None, ssd_feature: str | None = None,
               split: int | None = None, batch_sched_delay: int | None = None,
               scheduler_parameters: str | None = None, min_job_age: int = 600) -> str:
    """The cluster's ``slurm.conf`` (``port`` for slurmctld, the next ``nodes`` for slurmd;
    ``dbd_port``: accounting through the slurmdbd there; ``licenses``: ``Licenses=``;
    ``topology``: ``topology/tree`` from the ``topology.conf`` beside it; ``shared``: a
    partition ``shared`` whose jobs share nodes core by core; ``bb_pool``: the
    ``burst_buffer/lua`` plugin, ``burst_buffer_files``; ``ssd``: SSD classes ``[(GB,
    nodes), ...]`` in node order, each node a gres ``ssd`` of that count and, with
    ``ssd_feature``, a feature ``ssd_feature`` + GB, e.g. ``ssd128``; ``split=K``:
    ``batch`` has the first K nodes, the managed partition ``batch2`` the others;
    ``batch_sched_delay``: Slurm's, the seconds a batch job's scheduling may wait, 3 unset;
    ``scheduler_parameters``: ``key=value,...`` over the testbed's own
    ``SchedulerParameters``; ``min_job_age``: seconds a finished job stays in ``squeue``)."""
    sched = "sched/backfill" if scheduler == "backfill" else "sched/builtin"
    params = dict(kv.partition("=")[::2] for kv in (
        "bf_interval=1,bf_resolution=1," if scheduler == "backfill" else "").split(",") if kv)
    params["sched_min_interval"] = "100000"
    if batch_sched_delay is not None:
        params["batch_sched_delay"] = str(batch_sched_delay)
    params.update(parse_scheduler_parameters(scheduler_parameters))
    if dbd_port is None:
        accounting = ["AccountingStorageType=accounting_storage/none"]
    else:
        accounting = ["AccountingStorageType=accounting_storage/slurmdbd",
                      "AccountingStorageHost=localhost", f"AccountingStoragePort={dbd_port}",
                      # the munge socket for slurmdbd (AuthInfo's is not used for it)
                      f"AccountingStoragePass={d}/munge/munge.socket"]
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
        "SchedulerParameters=" + ",".join(k if v == "" else f"{k}={v}"
                                          for k, v in params.items()),
        "JobCompType=jobcomp/filetxt",
        f"JobCompLoc={d}/log/jobcomp.txt",
        *accounting,
        "JobAcctGatherType=jobacct_gather/none",
        f"MinJobAge={min_job_age}",
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
    if licenses:
        lines.append("Licenses=" + ",".join(f"{k}:{v}" for k, v in licenses.items()))
    if topology:
        lines.append("TopologyPlugin=topology/tree")
    if epilog is not None:  # wakes an adapter as each job ends (hpcopt.slurm.wake)
        lines.append(f"EpilogSlurmctld={epilog}")
    if bb_pool:  # burst_buffer.conf and burst_buffer.lua beside slurm.conf
        lines.append("BurstBufferType=burst_buffer/lua")
    if ssd:
        lines.append("GresTypes=ssd")
    first = 1
    for size, count in ssd or [(None, nodes)]:  # one NodeName line per SSD class
        last = first + count - 1
        lines.append(f"NodeName=n[{first}-{last}] NodeHostname=localhost "
                     f"Port=[{port + first}-{port + last}] CPUs={cpus} RealMemory=1000 "
                     + (f"Gres=ssd:{size} " if size is not None else "")
                     + (f"Feature={ssd_feature}{size} " if size is not None and ssd_feature
                        else "") + "State=UNKNOWN")
        first = last + 1
    lines += [
        f"PartitionName={PARTITION} Nodes=n[1-{split or nodes}] Default=YES MaxTime=INFINITE "
        "State=UP OverSubscribe=EXCLUSIVE",
        f"PartitionName={OTHER_PARTITION} Nodes=n[1-{nodes}] Default=NO MaxTime=INFINITE "
        "State=UP OverSubscribe=EXCLUSIVE",
    ]
    if split:
        lines.append(f"PartitionName={SPLIT_PARTITION} Nodes=n[{split + 1}-{nodes}] Default=NO "
                     "MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE")
    if shared:
        lines.append(f"PartitionName={SHARED_PARTITION} Nodes=n[1-{nodes}] Default=NO "
                     "MaxTime=INFINITE State=UP OverSubscribe=NO")
    return "\n".join(lines) + "\n"


def parse_scheduler_parameters(text: str | None) -> dict[str, str]:
    """``"batch_sched_delay=0,defer"`` as {key: value} (a flag's value is "")."""
    out: dict[str, str] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        key, _, value = item.partition("=")
        if not re.fullmatch(r"[a-z_]+", key) or not re.fullmatch(r"[\w.:-]*", value):
            raise TestbedError(f"scheduler_parameters: expected key=value,..., got {item!r}")
        out[key] = value
    return out


def parse_licenses(text: str | dict | None) -> dict[str, int]:
    """``bb:100,ssd:4`` (or a dict) as ``{name: count}``: names of letters, digits, ``_``
    and ``-``, counts whole numbers >= 1; a one-line ``TestbedError`` otherwise."""
    if not text:
        return {}
    items = text.items() if isinstance(text, dict) else \
        [part.partition(":")[::2] for part in str(text).split(",")]
    out: dict[str, int] = {}
    for name, count in items:
        name, count = str(name).strip(), str(count).strip()
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", name) or not count.isdigit() \
                or int(count) < 1 or name in out:
            raise TestbedError(f"licenses: expected NAME:COUNT[,NAME:COUNT...] (distinct "
                               f"names, counts >= 1; e.g. bb:100), got {text!r}")
        out[name] = int(count)
    return out


def parse_bb_pool(text: str) -> tuple[str, int]:
    """``NAME:SIZE`` (a burst-buffer pool of SIZE units, GB in hpcopt) as ``(name, size)``;
    a one-line ``TestbedError`` otherwise."""
    name, _, size = str(text).partition(":")
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", name) or not size.isdigit() \
            or int(size) < 1:
        raise TestbedError(f"bb_pool: expected NAME:SIZE (a pool name and a whole number "
                           f">= 1; e.g. bb:100), got {text!r}")
    return name, int(size)


def parse_ssd(text: str, nodes: int) -> list[tuple[int, int]]:
    """``GB:NODES[,GB:NODES...]`` (SSD classes in node order, e.g. ``128:4,256:4``) as
    ``[(GB, nodes), ...]``; the counts must add up to ``nodes``; a one-line ``TestbedError``
    otherwise."""
    out = []
    for part in str(text).split(","):
        size, _, count = part.strip().partition(":")
        if not size.isdigit() or not count.isdigit() or int(size) < 1 or int(count) < 1:
            out = None
            break
        out.append((int(size), int(count)))
    if not out or sum(c for _, c in out) != nodes:
        raise TestbedError(f"ssd: expected GB:NODES[,GB:NODES...] with node counts adding up "
                           f"to the {nodes} nodes (e.g. 128:{nodes // 2 or 1},"
                           f"256:{nodes - nodes // 2}), got {text!r}")
    return out


def burst_buffer_files(name: str, size: int) -> dict[str, str]:
    """``burst_buffer.conf`` and ``burst_buffer.lua`` of a ``burst_buffer/lua`` plugin with
    one pool ``name`` of ``size`` units (granularity 1): every ``slurm_bb_*`` function the
    plugin calls succeeds at once (no data moves), so a job's request (``#BB_LUA
    pool=NAME capacity=N`` in its script) only takes its share of the pool from stage-in to
    teardown, which Slurm accounts (``scontrol show burst``)."""
    pools = json.dumps({"pools": [{"id": name, "quantity": size, "granularity": 1}]})
    steps = ("job_process", "setup", "data_in", "test_data_in", "real_size", "paths",
             "pre_run", "post_run", "data_out", "test_data_out", "job_teardown")
    lua = "\n".join([
        f"-- hpcopt testbed: burst_buffer/lua with one pool, {name} of {size} units",
        f"local pools = {json.dumps(pools)}",
        "function slurm_bb_pools(...) return slurm.SUCCESS, pools end",
        *(f"function slurm_bb_{step}(...) return slurm.SUCCESS end" for step in steps),
        f"function slurm_bb_get_status(...) return slurm.SUCCESS, \"pool {name}: {size}\\n\" end",
    ]) + "\n"
    conf = ("# hpcopt testbed: burst_buffer/lua (its pool is burst_buffer.lua's)\n"
            "StageInTimeout=30\nStageOutTimeout=30\nOtherTimeout=30\n")
    return {"burst_buffer.conf": conf, "burst_buffer.lua": lua}


def topology_conf(nodes: int, switch_size: int, pod_size: int | None = None) -> str:
    """A fat tree over ``n1..n{nodes}``: leaf switches ``s1..sL`` of ``switch_size`` nodes
    each in order (the last may have fewer; L = ceil(nodes / switch_size)) under one root
    switch ``s0``; with ``pod_size=P`` three levels: pod switches ``p1..pM`` of ``P`` leaves
    each in order under the root (the nodes must then fill every leaf and pod)."""
    if switch_size < 1:
        raise TestbedError(f"switch_size must be >= 1, got {switch_size}")
    leaves = -(-nodes // switch_size)
    if pod_size is not None and (pod_size < 1 or nodes % (switch_size * pod_size)):
        raise TestbedError(f"pod_size: expected a number P >= 1 of leaves per pod such that "
                           f"the {nodes} nodes fill pods of P x {switch_size} nodes, "
                           f"got {pod_size}")
    pods = leaves // pod_size if pod_size else 0
    lines = ["# hpcopt testbed: a " + (f"three-level fat tree, {pods} pod switch(es) of "
                                        f"{pod_size} leaf switch(es)" if pods else
                                        f"two-level fat tree, {leaves} leaf switch(es)")
             + f" of {switch_size} node(s) under s0"]
    for i in range(leaves):
        lo, hi = i * switch_size + 1, min(nodes, (i + 1) * switch_size)
        lines.append(f"SwitchName=s{i + 1} Nodes=" + (f"n{lo}" if lo == hi else f"n[{lo}-{hi}]"))
    for i in range(pods):
        lo, hi = i * pod_size + 1, (i + 1) * pod_size
        lines.append(f"SwitchName=p{i + 1} Switches=" + (f"s{lo}" if lo == hi else
                                                          f"s[{lo}-{hi}]"))
    top, n = ("p", pods) if pods else ("s", leaves)
    lines.append("SwitchName=s0 Switches=" + (f"{top}1" if n == 1 else f"{top}[1-{n}]"))
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
          accounting: bool = False, licenses: str | dict | None = None,
          switch_size: int | None = None, pod_size: int | None = None, shared: bool = False,
          wake_port: int | None = None, bb_pool: str | None = None, ssd: str | None = None,
          ssd_feature: str | None = None, split: int | None = None,
          batch_sched_delay: int | None = None, scheduler_parameters: str | None = None,
          min_job_age: int = 600, say=None) -> Path:
    """Start the cluster in ``directory`` (created); returns the path of its slurm.conf.
    ``slurm="24.11"`` builds the chroot in ``chroot_cache`` first when it is not there.

    ``accounting=True`` also starts a MariaDB server and slurmdbd of the testbed's own
    (``accounting``), so that ``sacct`` works; ``licenses`` (``"bb:100,ssd:4"`` or a dict)
    become ``Licenses=``; ``switch_size=K`` writes a ``topology.conf`` (``topology_conf``:
    ceil(nodes / K) leaf switches of K nodes under one root) and sets
    ``TopologyPlugin=topology/tree``, and ``pod_size=P`` groups the leaves P by P under pod
    switches (three levels); ``bb_pool="bb:100"`` configures ``burst_buffer/lua`` with that
    pool (``burst_buffer_files``); ``ssd="128:4,256:4"`` gives the nodes, in order, SSD
    classes as a gres ``ssd`` counting GB (jobs ask ``--gres=ssd:100``), and with
    ``ssd_feature="ssd"`` as node features too, ``ssd128`` ... (jobs ask
    ``--constraint=ssd256``); ``shared=True``
    adds the partition ``shared`` (the same nodes, ``OverSubscribe=NO``: jobs share nodes
    core by core); ``wake_port=P`` installs ``hpcopt.slurm.wake``'s ``EpilogSlurmctld``
    script and the submit script's wake-up, which wake ``hpcopt slurm run --wake-port P`` as
    each job ends or is submitted; ``split=K`` gives ``batch`` the first K nodes and a
    second managed partition ``batch2`` the others (the submit script holds the jobs of
    both); ``batch_sched_delay=S`` sets Slurm's scheduling parameter of that name (how long
    a batch job's scheduling may be put off; Slurm's default 3 s); ``scheduler_parameters``
    (``"sched_min_interval=0"``) are set over the testbed's own ``SchedulerParameters``;
    ``min_job_age`` is how many seconds a finished job stays in ``squeue`` (Slurm's
    ``MinJobAge``)."""
    if scheduler not in ("builtin", "backfill"):
        raise TestbedError(f"scheduler must be 'builtin' or 'backfill', got {scheduler!r}")
    if slurm not in VERSIONS:
        raise TestbedError(f"slurm must be one of {', '.join(VERSIONS)}, got {slurm!r}")
    if not 1 <= nodes <= 64:
        raise TestbedError(f"nodes must be 1..64, got {nodes}")
    lic = parse_licenses(licenses)
    pool = parse_bb_pool(bb_pool) if bb_pool else None
    classes = parse_ssd(ssd, nodes) if ssd else None
    if split is not None and not 1 <= split < nodes:
        raise TestbedError(f"split must be 1..{nodes - 1} (batch's nodes), got {split}")
    if ssd_feature is not None and (not classes or
                                    not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", ssd_feature)):
        raise TestbedError(f"ssd_feature: expected a feature prefix of letters, digits, _ and "
                           f"- (e.g. ssd), with ssd classes; got {ssd_feature!r}"
                           + ("" if classes else " without ssd"))
    parse_scheduler_parameters(scheduler_parameters)
    if not 2 <= min_job_age:
        raise TestbedError(f"min_job_age must be at least 2 s, got {min_job_age}")
    if switch_size is not None and not 1 <= switch_size <= nodes:
        raise TestbedError(f"switch_size must be 1..{nodes} (the nodes), got {switch_size}")
    if pod_size is not None and switch_size is None:
        raise TestbedError("pod_size groups leaf switches: give switch_size too")
    if switch_size is not None:
        topology_conf(nodes, switch_size, pod_size)  # checked before anything starts
    if os.geteuid() != 0:
        raise TestbedError("the testbed runs its daemons as root (several slurmd on one host)")
    missing = missing_tools(slurm, accounting)
    if missing and slurm == "22.05":
        raise TestbedError("not installed: " + ", ".join(missing) + " (Debian/Ubuntu: "
                           "apt-get install slurm-wlm munge"
                           + (" slurmdbd mariadb-server" if accounting else "") + ")")
    if missing:
        raise TestbedError("not installed: " + ", ".join(missing) + " (Debian/Ubuntu: "
                           "apt-get install util-linux mount debootstrap)")
    d = Path(directory).resolve()
    if pids(d):
        raise TestbedError(f"{d}: a testbed is running there already (stop it first)")
    root = None
    if slurm == "24.11":
        cache = chroot_cache or CHROOT_CACHE
        root = chroot_accounting(cache, say=say) if accounting else build_chroot(cache, say=say)
    for sub in ("munge", "state", "spool", "run", "log"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    # users reach the socket (0755: the directory is listable, the key is root's alone)
    os.chmod(d / "munge", 0o755)
    _traversable(d)
    key = d / "munge" / "munge.key"
    if not key.exists():
        key.write_bytes(secrets.token_bytes(1024))
    os.chmod(key, 0o400)
    # ports: slurmctld, one per slurmd, then slurmdbd and MariaDB
    port = free_port_block(nodes + 3) if port is None else port
    dbd_port = port + nodes + 1 if accounting else None
    conf = d / "slurm.conf"
    conf.write_text(slurm_conf(d, nodes, cpus, port, scheduler, hold,
                               root / _PLUGINS if root else None, dbd_port=dbd_port,
                               licenses=lic, topology=switch_size is not None, shared=shared,
                               bb_pool=pool is not None, ssd=classes, ssd_feature=ssd_feature,
                               epilog=d / "wake-epilog.sh" if wake_port is not None else None,
                               split=split, batch_sched_delay=batch_sched_delay,
                               scheduler_parameters=scheduler_parameters,
                               min_job_age=min_job_age))
    if wake_port is not None:
        (d / "wake-epilog.sh").write_text(epilog_script(wake_port))
        os.chmod(d / "wake-epilog.sh", 0o755)
    if switch_size is not None:
        (d / "topology.conf").write_text(topology_conf(nodes, switch_size, pod_size))
    for name, text in (burst_buffer_files(*pool) if pool else {}).items():
        (d / name).write_text(text)
    if root is not None:
        # 24.11's slurmd needs cgroups unless told not to use them
        (d / "cgroup.conf").write_text("CgroupPlugin=disabled\n")
        _prepare_root(root, d)
    managed = (PARTITION, SPLIT_PARTITION) if split else (PARTITION,)
    (d / "job_submit.lua").write_text(job_submit_lua(managed, wake_port=wake_port))
    (d / "testbed.json").write_text(json.dumps({
        "slurm": slurm, "root": str(root) if root else None, "accounting": accounting,
        "dbd_port": dbd_port, "db_port": dbd_port + 1 if accounting else None}))
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
        if accounting:
            t0 = time.monotonic()
            _start_accounting(d, e, dbd_port, dbd_port + 1, timeout)
            if say:
                say(f"accounting up in {time.monotonic() - t0:.1f} s (slurmdbd on port "
                    f"{dbd_port}, MariaDB on port {dbd_port + 1})")
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


def _start_accounting(d: Path, e: dict, dbd_port: int, db_port: int, timeout: float) -> None:
    """MariaDB (a data directory ``d/db``, its socket ``d/db/mariadb.sock``, port
    ``db_port`` on 127.0.0.1; root by the socket only), a database ``slurm_acct_db`` and a
    user ``slurm`` with a random password, then slurmdbd (``d/slurmdbd.conf``, mode 600, port
    ``dbd_port``), waited for until it listens.  Logs in ``d/log``; pids in ``d/run``."""
    db = d / "db"
    sock = db / "mariadb.sock"
    data = db / "data"
    if not (data / "mysql").is_dir():
        shutil.rmtree(data, ignore_errors=True)
        data.mkdir(parents=True)
        _run([*daemon(d, "mariadb-install-db"), "--no-defaults", f"--datadir={data}",
              "--user=root", "--auth-root-authentication-method=socket", "--skip-test-db",
              "--skip-name-resolve", "--innodb-log-file-size=8M"], e, "mariadb-install-db")
    with open(d / "log" / "mariadbd.out", "ab") as out:
        subprocess.Popen([*daemon(d, "mariadbd"), "--no-defaults", f"--datadir={data}",
                          f"--socket={sock}", f"--port={db_port}", "--bind-address=127.0.0.1",
                          f"--pid-file={d}/run/mariadbd.pid",
                          f"--log-error={d}/log/mariadbd.log", "--user=root", "--skip-log-bin",
                          "--skip-name-resolve", "--innodb-buffer-pool-size=32M",
                          "--innodb-log-file-size=8M"],
                         env=e, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                         start_new_session=True)
    password = secrets.token_hex(16)
    sql = ("CREATE DATABASE IF NOT EXISTS slurm_acct_db; "
           + " ".join(f"CREATE OR REPLACE USER 'slurm'@'{h}' IDENTIFIED BY '{password}'; "
                      f"GRANT ALL ON slurm_acct_db.* TO 'slurm'@'{h}';"
                      for h in ("127.0.0.1", "localhost")))
    client = [*daemon(d, "mariadb"), "--no-defaults", f"--socket={sock}", "-u", "root"]
    _wait(lambda: subprocess.run([*client, "-e", "SELECT 1"], env=e, capture_output=True,
                                 timeout=10).returncode == 0,
          timeout, f"{d}: MariaDB did not start in {timeout:g} s (log: {d}/log/mariadbd.log)",
          d / "log" / "mariadbd.log")
    _run([*client, "-e", sql], e, "mariadb")
    root = info(d).get("root")
    dbd = d / "slurmdbd.conf"
    dbd.touch(mode=0o600)
    os.chmod(dbd, 0o600)
    dbd.write_text("\n".join([
        "AuthType=auth/munge",
        f"AuthInfo=socket={d}/munge/munge.socket",
        "DbdHost=localhost",
        f"DbdPort={dbd_port}",
        "SlurmUser=root",
        f"PidFile={d}/run/slurmdbd.pid",
        f"LogFile={d}/log/slurmdbd.log",
        "DebugLevel=info",
        "StorageType=accounting_storage/mysql",
        "StorageHost=127.0.0.1",
        f"StoragePort={db_port}",
        "StorageUser=slurm",
        f"StoragePass={password}",
        "StorageLoc=slurm_acct_db",
        *([f"PluginDir={Path(root) / _PLUGINS}"] if root else []),
    ]) + "\n")
    _run(daemon(d, "slurmdbd"), e)  # it reads slurmdbd.conf beside SLURM_CONF

    def listening() -> bool:
        with socket.socket() as s:
            s.settimeout(1)
            return s.connect_ex(("127.0.0.1", dbd_port)) == 0

    _wait(listening, timeout, f"{d}: slurmdbd did not listen on port {dbd_port} in "
          f"{timeout:g} s", d / "log" / "slurmdbd.log")


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


def _wait_idle(env: dict, nodes: int, timeout: float, d: Path) -> None:
    deadline = time.monotonic() + timeout
    out = ""
    while time.monotonic() < deadline:
        proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %t"], env=env,
                              capture_output=True, text=True, timeout=20)
        out = proc.stdout  # (a node once per partition it is in)
        idle = {ln.split()[0] for ln in out.splitlines() if ln.split()[-1:] == ["idle"]}
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
    testbed left (with its job's processes); then slurmdbd and MariaDB; munged last (with
    it, for 24.11, the mounts of its namespace go).  Returns once those processes have
    ended."""
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
    # Slurm's daemons (and the jobs' slurmstepds) first, then slurmdbd (slurmctld has sent
    # it what it had), MariaDB, munged last
    last = ("slurmdbd", "mariadbd", "munged")
    for stage in (None, *last):
        mine = {n: p for n, p in daemons.items()
                if n == stage or (stage is None and n not in last)}
        start_t = time.monotonic()
        while True:
            left = {n: p for n, p in mine.items() if _alive(p)}
            if stage is None:
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
