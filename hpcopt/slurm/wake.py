"""Wake the adapter when a job ends or is submitted: Slurm's hooks send a datagram.

slurmctld runs the ``EpilogSlurmctld`` script on the controller as each job ends (within a
second of its end time, ``SLURM_JOB_ID`` set).  ``epilog_script(port)`` is such a script: it
sends ``end JOBID`` to the adapter's UDP port on loopback (bash's ``/dev/udp``, nothing to
install) and exits 0 at once, whether or not an adapter listens.  Submissions have no such
script: the submit hook that holds each managed job (``hpcopt.slurm.lua``) runs
``submit_command(port)`` in the background, which sends ``submit``.  ``Waker(port)`` is the
adapter's end: ``wait(timeout)`` returns as soon as a datagram came (True) or when the
timeout passed (False).  A lost datagram only costs latency: the adapter still cycles every
``--interval``.

Any local process can send a datagram to a loopback port, so what one buys is bounded: a
wake-up only brings the next cycle forward, never decides anything, and wake-ups are
rationed by a token bucket (``BURST`` at once, then ``RATE`` a second): a flood of
datagrams costs at most ``RATE`` extra cycles a second, and the kernel drops what the small
receive buffer (``RCVBUF``) cannot hold while the adapter is not reading.
"""

from __future__ import annotations

import select
import socket
import time

from ..errors import HpcoptError

MIN_GAP = 0.05  # seconds a wake-up waits for the rest of its burst before the cycle
RATE = 1.0  # wake-ups a second, sustained (a token bucket)
BURST = 4  # wake-ups at once (job ends close together), before RATE rations them
RCVBUF = 4096  # bytes of datagrams the kernel keeps while the adapter is not reading


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
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        self.sock.setblocking(False)
        self.woken = 0  # datagrams received
        self.wakeups = 0  # times wait returned True
        self._tokens, self._filled = float(BURST), time.monotonic()

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds; True when a datagram came and the bucket allows a
        wake-up (all waiting datagrams are read, so a burst wakes once); while the bucket is
        empty the socket is not read and the call sleeps instead."""
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            now = time.monotonic()
            self._tokens = min(float(BURST), self._tokens + (now - self._filled) * RATE)
            self._filled = now
            left = deadline - now
            if left <= 0:
                return False
            if self._tokens < 1.0:  # rationed: wait for the next token (or the deadline)
                time.sleep(min(left, (1.0 - self._tokens) / RATE))
                continue
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                return False
            self._drain()
            self._tokens -= 1.0
            self.wakeups += 1
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
