"""Running the adapter as a site's service: its state on one screen, and a systemd unit.

``status_text(log)`` reads the adapter's JSON-lines log (``hpcopt slurm run --log``) and says
what the adapter is doing: its last cycle and how long ago, what it read (held jobs in the
order they queue, the reserved one and its shadow time, free nodes), what it released lately
and why jobs are left held.  ``systemd_unit(run_args)`` is a unit that runs ``hpcopt slurm
run`` with those arguments as a dedicated user (default ``slurm``, Debian's SlurmUser, who may
release and hold every job), hardened (no new privileges, no capabilities, the file system
read-only but for its log and lock directories, no home directories, a private /tmp);
restarted on a fault (``EXIT_FAULT``: its lock held or unusable, its log unwritable, Slurm's
answers unreadable), not on a usage error (``EXIT_USAGE``: a bad option), stopped with
SIGTERM (held jobs stay held).
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path, PurePosixPath

from ..errors import HpcoptError
from .lock import LOCK_DIR
from .record import CycleRecord

RECENT = 10  # releases listed by status
EXIT_USAGE = 2  # a bad option or configuration: the unit does not restart it
EXIT_FAULT = 75  # a fault (EX_TEMPFAIL): the unit restarts it


def read_log(path: str | Path) -> tuple[list[CycleRecord], list[dict]]:
    """The cycle records and the event lines of an adapter's log; a line that is not JSON, or
    not a cycle's record, is a one-line error naming it."""
    path = Path(path)
    try:
        # bytes that are not UTF-8 (a torn or foreign line) read as U+FFFD, not a crash
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        raise HpcoptError(f"{path}: {exc.strerror}") from None
    cycles: list[CycleRecord] = []
    events: list[dict] = []
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise HpcoptError(f"{path}:{no}: not a JSON line of the adapter's log "
                              f"({exc.msg})") from None
        if "event" in rec:
            events.append(rec)
            continue
        try:
            cycles.append(CycleRecord.from_json(rec))
        except TypeError:
            raise HpcoptError(f"{path}:{no}: not a cycle record of the adapter's log (its time "
                              "and cycle expected)") from None
    return cycles, events


def status_text(path: str | Path, now: float | None = None) -> str:
    """The adapter's state from its log at ``path`` (module docstring); an adapter of several
    partitions: one block each, in the order of their first cycle."""
    cycles, _ = read_log(path)
    if not cycles:
        return f"{path}: no cycle yet"
    now = time.time() if now is None else now
    by_partition: dict = {}
    for c in cycles:
        by_partition.setdefault(c.partition, []).append(c)
    return "\n".join(_partition_status(part, now) for part in by_partition.values())


def _partition_status(cycles: list[CycleRecord], now: float) -> str:
    """One partition's block of ``status_text``."""
    last = cycles[-1]
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(last.time))
    head = (f"partition {last.partition}: cycle {last.cycle} at {when} "
            f"({max(0.0, now - last.time):.0f} s ago)")
    if not last.ok:
        lines = [head, f"  the cycle failed: {last.error or '?'}"]
        good = [c for c in cycles if c.ok]
        if not good:
            return "\n".join(lines)
        last = good[-1]
        lines.append(f"  last good cycle {last.cycle}:")
    else:
        lines = [head]
    slurm = f" (Slurm {last.slurm})" if last.slurm else ""
    lines.append(f"  read{slurm}: {last.pending} held in the queue, {last.running} "
                 f"running, {last.free_nodes} free nodes, {len(last.waiting_start or [])} "
                 "released and starting")
    queue = last.queue or []
    if queue:
        more = f" ... ({last.pending} in all)" if (last.pending or 0) > len(queue) else ""
        lines.append("  queue: " + " ".join(map(str, queue)) + more)
    if last.later:
        lines.append("  cannot start now: " + ", ".join(map(_later_text, last.later)))
    if last.reserved:
        r = last.reserved
        lines.append(f"  reserved: job {r['id']} at "
                     f"{time.strftime('%H:%M:%S', time.localtime(r['shadow']))} "
                     f"(+{max(0.0, r['shadow'] - last.time):.0f} s after the cycle)")
    recent = [(c, jid) for c in cycles if c.ok for jid in c.released or []][-RECENT:]
    if recent:
        lines.append("  released lately: " + ", ".join(
            f"{jid} ({time.strftime('%H:%M:%S', time.localtime(c.time))}"
            + (", backfilled" if jid in (c.backfilled or []) else "") + ")"
            for c, jid in recent))
    else:
        lines.append("  released lately: nothing")
    for note in last.notes or []:
        lines.append(f"  note: {note}")
    return "\n".join(lines)


def _later_text(w: dict) -> str:
    """One held job that cannot start now (``CycleRecord.later``): from when, after what."""
    t = w.get("not_before")
    text = f"{w['id']} " + ("(from an unknown time)" if t is None else
                            f"from {time.strftime('%H:%M:%S', time.localtime(t))}")
    return text + (f" after job {', '.join(map(str, w['after']))}" if w.get("after") else "")


def systemd_unit(run_args: list[str], hpcopt: str, slurm_conf: str | None = None,
                 user: str = "slurm") -> str:
    """A systemd unit for ``hpcopt slurm run RUN_ARGS`` as ``user`` (module docstring): its
    log's directory writable (``LogsDirectory=`` under /var/log, else ``ReadWritePaths=``),
    the lock directory its ``RuntimeDirectory`` (or the directory of ``--lock``), the home
    directories hidden (read-only where ``hpcopt`` itself lies in one)."""
    names = [v for k, v in zip(run_args, run_args[1:]) if k == "--partition"] or ["batch"]
    names = ",".join(names).split(",")
    env = f"Environment=SLURM_CONF={slurm_conf}\n" if slurm_conf else ""
    log, lock = _option(run_args, "--log"), _option(run_args, "--lock")
    paths = ""
    if log is not None:
        where = PurePosixPath(log).parent
        if where.parent == PurePosixPath("/var/log") and where.name:
            paths += f"LogsDirectory={where.name}\n"
        else:
            paths += f"ReadWritePaths={where}\n"
    if lock is not None:
        paths += f"ReadWritePaths={PurePosixPath(lock).parent}\n"
    home = "read-only" if hpcopt.startswith(("/home/", "/root/", "/run/user/")) else "yes"
    return (
        "[Unit]\n"
        f"Description=hpcopt scheduler of Slurm partition{'s' if len(names) > 1 else ''} "
        f"{', '.join(names)}\n"
        "After=network-online.target slurmctld.service munge.service\n"
        "Wants=network-online.target\n\n"
        "[Service]\n"
        f"User={user}\n"
        f"{env}"
        f"ExecStart={shlex.join([hpcopt, 'slurm', 'run', *run_args])}\n"
        "Restart=on-failure\n"
        "RestartSec=5\n"
        f"RestartPreventExitStatus={EXIT_USAGE}\n"
        "SuccessExitStatus=143\n"
        "KillSignal=SIGTERM\n"
        "TimeoutStopSec=60\n"
        f"RuntimeDirectory={LOCK_DIR.name}\n"
        f"{paths}"
        "NoNewPrivileges=yes\n"
        "ProtectSystem=strict\n"
        f"ProtectHome={home}\n"
        "PrivateTmp=yes\n"
        "CapabilityBoundingSet=\n"
        "AmbientCapabilities=\n\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n")


def _option(args: list[str], name: str) -> str | None:
    """The value of option ``name`` in ``args`` (``--log F`` or ``--log=F``; the last)."""
    found = None
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            found = args[i + 1]
        elif a.startswith(name + "="):
            found = a[len(name) + 1:]
    return found
