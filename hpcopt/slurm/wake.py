"""Wake the adapter when a job ends or is submitted: Slurm's hooks send a datagram.

slurmctld runs the ``EpilogSlurmctld`` script on the controller as each job ends (within a
second of its end time, ``SLURM_JOB_ID`` set).  ``epilog_script(port)`` is such a script: it
sends ``end JOBID`` to the adapter's UDP port on loopback (bash's ``/dev/udp``, nothing to
install) and exits 0 at once, whether or not an adapter listens.  Submissions have no such
script: the submit hook that holds each managed job (``hpcopt.slurm.lua``) runs
``submit_command(port)`` in the background, which sends ``submit``.  ``Waker(port)`` is the
adapter's end: ``wait(timeout)`` returns as soon as a datagram came (True) or when the
timeout passed (False).  A lost datagram only costs latency: the adapter still cycles every
``--interval``.  Any local process can send one; it buys nothing but an earlier cycle, and
cycles are spaced by ``MIN_GAP`` at least.
"""

from __future__ import annotations

import select
import socket
import time

from ..errors import HpcoptError

MIN_GAP = 0.05  # seconds between two cycles at the least, however many datagrams come


def epilog_script(port: int) -> str:
    """The ``EpilogSlurmctld`` script that wakes an adapter listening on ``port``."""
    _check_port(port)
    return ("#!/bin/bash\n"
            "# EpilogSlurmctld (hpcopt): wake `hpcopt slurm run --wake-port "
            f"{port}` as a job ends.\n"
            "# Install: EpilogSlurmctld=/path/to/this/script in slurm.conf (executable by "
            "SlurmUser).\n"
            f'echo "end ${{SLURM_JOB_ID:-0}}" > /dev/udp/127.0.0.1/{port} 2>/dev/null\n'
            "exit 0\n")


def submit_command(port: int) -> str:
    """The shell command the submit hook runs (in the background: slurmctld does not wait for
    it) to wake an adapter listening on ``port`` as a managed job is submitted."""
    _check_port(port)
    return f"bash -c 'echo submit > /dev/udp/127.0.0.1/{port}' >/dev/null 2>&1 &"


def _check_port(port: int) -> None:
    if not (isinstance(port, int) and not isinstance(port, bool) and 1 <= port <= 65535):
        raise HpcoptError(f"--wake-port: a port 1..65535 expected, got {port!r}")


class Waker:
    """The adapter's UDP socket on loopback (module docstring)."""

    def __init__(self, port: int) -> None:
        _check_port(port)
        self.port = port
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self.sock.bind(("127.0.0.1", port))
        except OSError as exc:
            self.sock.close()
            raise HpcoptError(f"--wake-port {port}: {exc.strerror} (another adapter, or "
                              "another program, listens there)") from None
        self.sock.setblocking(False)
        self.woken = 0  # datagrams received

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds; True when a datagram came (all waiting ones are
        read, so a burst wakes once)."""
        deadline = time.monotonic() + max(0.0, timeout)
        ready, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
        if not ready:
            return False
        self._drain()
        left = deadline - time.monotonic()
        if left > 0:
            time.sleep(min(MIN_GAP, left))
            self._drain()
        return True

    def _drain(self) -> None:
        while True:
            try:
                self.sock.recv(256)
            except (BlockingIOError, InterruptedError):
                return
            self.woken += 1

    def close(self) -> None:
        self.sock.close()
