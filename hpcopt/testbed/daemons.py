"""Starting and stopping the testbed's daemons: munged, slurmctld, one slurmd per node
(and accounting's), its ports, and what runs in it."""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path

from ..slurm.lua import job_submit_lua
from ..slurm.wake import epilog_script
from .accounting import start_accounting
from .chroot import (
    _PLUGINS,
    CHROOT_CACHE,
    _in_root,
    _prepare_root,
    _write_clients,
    build_chroot,
    chroot_accounting,
    missing_tools,
)
from .common import (
    HOST_ETC,
    PARTITION,
    SPLIT_PARTITION,
    VERSIONS,
    TestbedError,
    _alive,
    _run,
    daemon,
    env,
    info,
    pids,
)
from .config import (
    burst_buffer_files,
    check_conf_line,
    licenses_option,
    parse_bb_pool,
    parse_scheduler_parameters,
    parse_ssd,
    slurm_conf,
    topology_conf,
)


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


def _traversable(d: Path) -> None:
    """Let every user reach ``d`` (x for others on it and each directory above it that
    lacks it: a pytest tmp dir is 0700), so that users can reach the munge socket and
    slurm.conf; nothing becomes readable or writable that was not."""
    for p in (d, *d.parents):
        mode = p.stat().st_mode
        if not mode & 0o001:
            os.chmod(p, (mode & 0o7777) | 0o001)


def start(directory: str | Path, nodes: int = 8, *, cpus: int = 4, port: int | None = None,
          scheduler: str = "builtin", hold: bool = True, timeout: float = 60.0,
          slurm: str = "22.05", chroot_cache: str | Path | None = None,
          accounting: bool = False, licenses: str | dict | None = None,
          switch_size: int | None = None, pod_size: int | None = None, shared: bool = False,
          wake_port: int | None = None, bb_pool: str | None = None, ssd: str | None = None,
          ssd_feature: str | None = None, split: int | None = None,
          batch_sched_delay: int | None = None, scheduler_parameters: str | None = None,
          min_job_age: int = 600, conf_extra: tuple[str, ...] = (), say=None) -> Path:
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
    ``MinJobAge``); ``conf_extra`` are ``KEY=VALUE`` lines over the slurm.conf (each
    replaces the testbed's own line of that key: ``config.check_conf_line``)."""
    conf_extra = tuple(check_conf_line(line) for line in conf_extra)
    lic, pool, classes = _checked_options(
        nodes, scheduler=scheduler, slurm=slurm, licenses=licenses, bb_pool=bb_pool, ssd=ssd,
        ssd_feature=ssd_feature, split=split, scheduler_parameters=scheduler_parameters,
        min_job_age=min_job_age, switch_size=switch_size, pod_size=pod_size,
        accounting=accounting)
    d = Path(directory).resolve()
    if pids(d):
        raise TestbedError(f"{d}: a testbed is running there already (stop it first)")
    root = None
    if slurm == "24.11":
        cache = chroot_cache or CHROOT_CACHE
        root = chroot_accounting(cache, say=say) if accounting else build_chroot(cache, say=say)
    key = _folders_and_key(d)
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
                               min_job_age=min_job_age, conf_extra=conf_extra))
    _write_files(d, root, nodes=nodes, wake_port=wake_port, switch_size=switch_size,
                 pod_size=pod_size, pool=pool, split=split)
    (d / "testbed.json").write_text(json.dumps({  # what info() reads
        "slurm": slurm, "root": str(root) if root else None, "accounting": accounting,
        "dbd_port": dbd_port, "db_port": dbd_port + 1 if accounting else None}))
    e = env(d)
    _start_munged(d, root, key, e)
    try:
        if dbd_port is not None:
            start_accounting(d, e, dbd_port, dbd_port + 1, timeout, say)
        _run([*daemon(d, "slurmctld"), "-i", "-f", str(conf)], e)  # -i: no saved state
        for i in range(1, nodes + 1):
            (d / "spool" / f"n{i}").mkdir(exist_ok=True)
            _run([*daemon(d, "slurmd"), "-N", f"n{i}", "-f", str(conf)], e)
        _wait_idle(e, nodes, timeout, d)
    except BaseException:
        stop(d)
        raise
    return conf


def _checked_options(nodes: int, *, scheduler: str, slurm: str, licenses, bb_pool, ssd,
                     ssd_feature, split, scheduler_parameters, min_job_age: int, switch_size,
                     pod_size, accounting: bool):
    """``start``'s options checked before anything is written or started, and this machine
    able to run them (root, the programs): ``(licenses, bb pool, ssd classes)`` parsed."""
    if scheduler not in ("builtin", "backfill"):
        raise TestbedError(f"scheduler must be 'builtin' or 'backfill', got {scheduler!r}")
    if slurm not in VERSIONS:
        raise TestbedError(f"slurm must be one of {', '.join(VERSIONS)}, got {slurm!r}")
    if not 1 <= nodes <= 64:
        raise TestbedError(f"nodes must be 1..64, got {nodes}")
    lic = licenses_option(licenses)
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
    return lic, pool, classes


def _folders_and_key(d: Path) -> Path:
    """The testbed's folders in ``d`` and its munge key (made once); the key's path."""
    for sub in ("munge", "state", "spool", "run", "log"):
        (d / sub).mkdir(parents=True, exist_ok=True)
    # users reach the socket (0755: the directory is listable, the key is root's alone)
    os.chmod(d / "munge", 0o755)
    _traversable(d)
    key = d / "munge" / "munge.key"
    if not key.exists():
        key.write_bytes(secrets.token_bytes(1024))
    os.chmod(key, 0o400)
    return key


def _write_files(d: Path, root: Path | None, *, nodes: int, wake_port, switch_size, pod_size,
                 pool, split) -> None:
    """The files beside ``slurm.conf`` that the options ask for: the wake-up epilog, the
    topology, the burst buffer's lua files, 24.11's cgroup.conf, the job_submit.lua; and the
    client commands in ``d/bin``."""
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
    _write_clients(d, root)


def _start_munged(d: Path, root: Path | None, key: Path, e: dict) -> None:
    """munged on the testbed's own socket; for 24.11 inside the chroot, in a private mount
    namespace made here (munged keeps it alive; the other daemons join it by munged's pid)."""
    munged = ["munged", "--force", f"--socket={d}/munge/munge.socket",
              f"--key-file={key}", f"--pid-file={d}/run/munged.pid",
              f"--log-file={d}/log/munged.log", f"--seed-file={d}/munge/munged.seed"]
    if root is None:
        _run(munged, e)
        return
    r = shlex.quote(str(root))
    mounts = (f"set -e; R={r}; mount -t proc proc $R/proc; "
              "mount --bind /sys $R/sys; mount --bind /dev $R/dev; "
              "mount --bind /dev/pts $R/dev/pts; "
              f"mount --bind /etc $R{HOST_ETC}; mount -o remount,bind,ro $R{HOST_ETC}; "
              f"mount --bind {shlex.quote(str(d))} {shlex.quote(str(_in_root(root, d)))}; "
              f"exec chroot $R /usr/sbin/{shlex.join(munged)}")
    _run(["unshare", "--mount", "--propagation", "private", "sh", "-c", mounts], e)


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
