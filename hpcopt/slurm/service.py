"""Running the adapter as a site's service: its state on one screen, and a systemd unit.

``status_text(log)`` reads the adapter's JSON-lines log (``hpcopt slurm run --log``) and says
what the adapter is doing: its last cycle and how long ago, what it read (held jobs in the
order they queue, the reserved one and its shadow time, free nodes), what it released lately
and why jobs are left held.  ``systemd_unit(run_args)`` is a unit that runs ``hpcopt slurm
run`` with those arguments: restarted on a failure, not on a user error (exit status 2: a bad
option, or the partition's lock held by another adapter), stopped with SIGTERM (held jobs
stay held).
"""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path

from ..errors import HpcoptError

RECENT = 10  # releases listed by status


def read_log(path: str | Path) -> tuple[list[dict], list[dict]]:
    """The cycle records and the event lines of an adapter's log; a line that is not JSON is
    a one-line error naming it."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise HpcoptError(f"{path}: {exc.strerror}") from None
    cycles: list[dict] = []
    events: list[dict] = []
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise HpcoptError(f"{path}:{no}: not a JSON line of the adapter's log "
                              f"({exc.msg})") from None
        (events if "event" in rec else cycles).append(rec)
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
        by_partition.setdefault(c.get("partition", "?"), []).append(c)
    return "\n".join(_partition_status(part, now) for part in by_partition.values())


def _partition_status(cycles: list[dict], now: float) -> str:
    """One partition's block of ``status_text``."""
    last = cycles[-1]
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(last["time"]))
    head = (f"partition {last.get('partition', '?')}: cycle {last['cycle']} at {when} "
            f"({max(0.0, now - last['time']):.0f} s ago)")
    if not last.get("ok"):
        lines = [head, f"  the cycle failed: {last.get('error', '?')}"]
        good = [c for c in cycles if c.get("ok")]
        if not good:
            return "\n".join(lines)
        last = good[-1]
        lines.append(f"  last good cycle {last['cycle']}:")
    else:
        lines = [head]
    slurm = f" (Slurm {last['slurm']})" if last.get("slurm") else ""
    lines.append(f"  read{slurm}: {last['pending']} held in the queue, {last['running']} "
                 f"running, {last['free_nodes']} free nodes, {len(last['waiting_start'])} "
                 "released and starting")
    queue = last.get("queue", [])
    if queue:
        more = f" ... ({last['pending']} in all)" if last["pending"] > len(queue) else ""
        lines.append("  queue: " + " ".join(map(str, queue)) + more)
    if last.get("reserved"):
        r = last["reserved"]
        lines.append(f"  reserved: job {r['id']} at "
                     f"{time.strftime('%H:%M:%S', time.localtime(r['shadow']))} "
                     f"(+{max(0.0, r['shadow'] - last['time']):.0f} s after the cycle)")
    recent = [(c, jid) for c in cycles if c.get("ok") for jid in c["released"]][-RECENT:]
    if recent:
        lines.append("  released lately: " + ", ".join(
            f"{jid} ({time.strftime('%H:%M:%S', time.localtime(c['time']))}"
            + (", backfilled" if jid in c.get("backfilled", []) else "") + ")"
            for c, jid in recent))
    else:
        lines.append("  released lately: nothing")
    for note in last.get("notes", []):
        lines.append(f"  note: {note}")
    return "\n".join(lines)


def systemd_unit(run_args: list[str], hpcopt: str, slurm_conf: str | None = None,
                 user: str = "root") -> str:
    """A systemd unit for ``hpcopt slurm run RUN_ARGS`` (module docstring)."""
    names = [v for k, v in zip(run_args, run_args[1:]) if k == "--partition"] or ["batch"]
    names = ",".join(names).split(",")
    env = f"Environment=SLURM_CONF={slurm_conf}\n" if slurm_conf else ""
    return (
        "[Unit]\n"
        f"Description=hpcopt scheduler of Slurm partition{'s' if len(names) > 1 else ''} "
        f"{', '.join(names)}\n"
        "After=network-online.target slurmctld.service\n"
        "Wants=network-online.target\n\n"
        "[Service]\n"
        f"User={user}\n"
        f"{env}"
        f"ExecStart={shlex.join([hpcopt, 'slurm', 'run', *run_args])}\n"
        "Restart=on-failure\n"
        "RestartSec=5\n"
        "RestartPreventExitStatus=2\n"
        "KillSignal=SIGTERM\n"
        "TimeoutStopSec=60\n\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n")
