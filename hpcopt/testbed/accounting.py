"""Accounting for the testbed: a MariaDB server and ``slurmdbd`` of its own, so ``sacct``
works."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import time
from pathlib import Path

from .chroot import _PLUGINS
from .common import _run, _wait, daemon, info


def start_accounting(d: Path, e: dict, dbd_port: int, db_port: int, timeout: float,
                     say=None) -> None:
    """MariaDB (a data directory ``d/db``, its socket ``d/db/mariadb.sock``, port
    ``db_port`` on 127.0.0.1; root by the socket only), a database ``slurm_acct_db`` and a
    user ``slurm`` with a random password, then slurmdbd (``d/slurmdbd.conf``, mode 600, port
    ``dbd_port``), waited for until it listens.  Logs in ``d/log``; pids in ``d/run``; ``say``
is told how long it took."""
    t0 = time.monotonic()
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
    if say:
        say(f"accounting up in {time.monotonic() - t0:.1f} s (slurmdbd on port {dbd_port}, "
            f"MariaDB on port {db_port})")
