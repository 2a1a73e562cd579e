"""One adapter per managed partition: an advisory lock on a file that names its holder.

``PartitionLock(path).acquire()`` takes an exclusive ``flock`` on ``path`` and writes the
holder's pid, host and start time into it; a second adapter for the same partition fails at
once with a one-line error naming the first.  The kernel drops a ``flock`` when its process
ends, however it ends, so a lock left by a killed adapter never blocks a restart.

The default lock is keyed on the controller, not on a file path: the cluster's
``ClusterName`` and controller address and port as ``slurm.conf`` gives them
(``controller_key``), so a copy of ``slurm.conf`` elsewhere names the same lock.  It lies in
``LOCK_DIR`` (``/run/hpcopt``), a directory that must belong to root or to the adapter's
user and that nobody else may write (the unit's ``RuntimeDirectory=hpcopt`` makes it;
root's adapter makes it itself).  The file is opened without following a symbolic link, and an
existing file is used only when it belongs to the adapter's user and holds a lock record
(or nothing): a file someone else made is refused, never truncated.  Adapters on several
hosts share a lock only through a file system they all see (``--lock``).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import pwd
import socket
import stat
import time
from pathlib import Path

from ..errors import HpcoptError
from ..sim.slurmconf import SlurmConfError, conf_lines

LOCK_DIR = Path("/run/hpcopt")
RECORD_MAX = 4096  # bytes of a lock record read at most


class LockedError(HpcoptError):
    """Another adapter holds the partition, or the lock file cannot be used safely."""


def controller_key(conf: str | Path | None) -> str:
    """``CLUSTER@HOST:PORT`` of the controller that ``conf`` (SLURM_CONF; default
    ``/etc/slurm/slurm.conf``) names: ``ClusterName``, the first ``SlurmctldHost`` (its
    address in brackets when given: ``ctl(10.0.0.1)``; older ``ControlMachine`` /
    ``ControlAddr`` too) and ``SlurmctldPort`` (default 6817).  ``Include`` lines are not
    followed: these keys must be in the file itself, as Slurm's own tools need them."""
    path = Path(conf or "/etc/slurm/slurm.conf")
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise LockedError(f"{path}: {exc.strerror} (the lock is keyed on the controller "
                          "slurm.conf names)") from None
    keys: dict[str, str] = {}
    try:
        for pairs, _ in conf_lines(text, str(path)):
            for key, value in pairs.items():
                keys.setdefault(key, value)  # the first SlurmctldHost is the primary
    except SlurmConfError as exc:
        raise LockedError(f"{exc} (the lock is keyed on the controller slurm.conf names)"
                          ) from None
    host = keys.get("slurmctldhost") or keys.get("controlmachine")
    if not host:
        raise LockedError(f"{path}: no SlurmctldHost (the lock is keyed on the controller)")
    name, _, addr = host.partition("(")
    addr = addr.rstrip(")") or keys.get("controladdr") or name
    port = keys.get("slurmctldport", "6817").split("-", 1)[0]
    return f"{keys.get('clustername', 'cluster')}@{addr}:{port}"


def default_lock_path(partition: str, conf: str | None, where: Path = LOCK_DIR) -> Path:
    """The lock file of ``partition`` of the controller ``conf`` names (``controller_key``),
    in ``where`` (default ``LOCK_DIR``)."""
    digest = hashlib.sha256(controller_key(conf).encode()).hexdigest()[:16]
    return where / f"slurm-{digest}-{partition}.lock"


def ensure_lock_dir(where: Path = LOCK_DIR) -> None:
    """Make ``where`` (mode 0755, this user's) if missing; refuse one that another user
    than root or this one owns, that is group- or world-writable, or that is a link."""
    try:
        os.mkdir(where, 0o755)
    except FileExistsError:
        pass
    except OSError as exc:
        raise LockedError(f"lock directory {where}: {exc.strerror} (create it owned by "
                          f"{_user(os.geteuid())}, mode 0755: RuntimeDirectory=hpcopt in "
                          "the unit; or give --lock FILE)") from None
    st = os.lstat(where)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid not in (0, os.geteuid()) or \
            st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise LockedError(f"lock directory {where}: must be a directory of root or "
                          f"{_user(os.geteuid())} that no one else may write (it is "
                          f"{_user(st.st_uid)}'s, mode {stat.S_IMODE(st.st_mode):04o})")


class PartitionLock:
    """The lock of one managed partition (module docstring)."""

    def __init__(self, path: str | Path, partition: str) -> None:
        self.path, self.partition = Path(path), partition
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or ``LockedError`` naming its holder or what is wrong with the
        file."""
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        try:
            fd = os.open(self.path, flags, 0o644)
        except OSError as exc:
            why = "a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
            raise LockedError(f"lock {self.path}: {why}; refused") from None
        try:
            self._check(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise LockedError(f"partition {self.partition!r} is scheduled by another "
                                  f"adapter ({_holder(fd)}; lock {self.path})") from None
            record = json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "since": round(time.time(), 3),
                                 "partition": self.partition}).encode()
            os.ftruncate(fd, 0)  # ours (checked above): a record of this user's adapter
            os.pwrite(fd, record, 0)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def _check(self, fd: int) -> None:
        """Refuse a file that is not a lock record of this user: another user's, not a
        plain file, a hard link, or a file with other content (never truncated)."""
        st = os.fstat(fd)
        if st.st_uid != os.geteuid():
            raise LockedError(f"lock {self.path} belongs to {_user(st.st_uid)}, not to "
                              f"{_user(os.geteuid())} who runs this adapter ({_holder(fd)}); "
                              "refused: remove it if no adapter of that user runs")
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            raise LockedError(f"lock {self.path}: not a plain file with one name; refused")
        if st.st_size:
            try:
                record = json.loads(os.pread(fd, RECORD_MAX, 0))
                ok = isinstance(record, dict) and "pid" in record
            except ValueError:
                ok = False
            if not ok:
                raise LockedError(f"lock {self.path}: holds something else than a lock "
                                  "record; refused (not overwritten)")

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


def _user(uid: int) -> str:
    try:
        return f"user {pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _holder(fd: int) -> str:
    """'pid P on host H since T' from the lock file, as far as it can be read."""
    try:
        info = json.loads(os.pread(fd, RECORD_MAX, 0) or b"{}")
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(info["since"])))
        return f"pid {int(info['pid'])} on host {info['host']} since {since}"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown"
