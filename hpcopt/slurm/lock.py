"""One adapter per managed partition: an advisory lock on a file that names its holder.

``PartitionLock(path).acquire()`` takes an exclusive ``flock`` on ``path`` and writes the
holder's pid, host and start time into it; a second adapter for the same partition fails at
once with a one-line error naming the first.  The kernel drops a ``flock`` when its process
ends, however it ends, so a lock left by a killed adapter never blocks a restart.  Adapters
on several hosts share a lock only through a file system they all see (``--lock``).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import tempfile
import time
from pathlib import Path

from ..errors import HpcoptError


class LockedError(HpcoptError):
    """Another adapter holds the partition."""


def default_lock_path(partition: str, conf: str | None) -> Path:
    """The lock file of ``partition`` of the cluster that ``conf`` (SLURM_CONF) names: one per
    cluster configuration and partition, in /run/lock (else the temporary directory)."""
    where = os.path.realpath(conf) if conf else "/etc/slurm/slurm.conf"
    digest = hashlib.sha256(where.encode()).hexdigest()[:12]
    base = Path("/run/lock") if os.access("/run/lock", os.W_OK) else Path(tempfile.gettempdir())
    return base / f"hpcopt-slurm-{digest}-{partition}.lock"


class PartitionLock:
    """The lock of one managed partition (module docstring)."""

    def __init__(self, path: str | Path, partition: str) -> None:
        self.path, self.partition = Path(path), partition
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or ``LockedError`` naming its holder."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise LockedError(f"lock {self.path}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _holder(fd)
            os.close(fd)
            raise LockedError(f"partition {self.partition!r} is scheduled by another adapter "
                              f"({holder}; lock {self.path})") from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "since": round(time.time(), 3),
                                 "partition": self.partition}).encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None

    __del__ = release

    def __enter__(self) -> PartitionLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _holder(fd: int) -> str:
    """'pid P on host H since T' from the lock file, as far as it can be read."""
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(info["since"])))
        return f"pid {int(info['pid'])} on host {info['host']} since {since}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown"
