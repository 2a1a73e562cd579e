"""TJAP job files (Lan et al., CLUSTER'23): the data directory's
``topology_alloc``.

Whitespace text, one job a line: id, arrival s, runtime s, nodes (``#`` or ``;`` comment
lines and blank lines skipped; ``.gz`` allowed).  The files carry no requested walltime, so
the walltime is the runtime (the window-period policy never plans with it).  The paper's
generator of such workloads and the fat-tree system they run on are
``hpcopt.workloads.tjap``.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from ..datadir import resolve_input
from ..domain import Job
from ..errors import TraceError


def load_tjap_jobs(path: str | Path, *, max_jobs: int | None = None) -> list[Job]:
    """Jobs of a TJAP job file (or a data set name, ``hpcopt.datadir.resolve_input``); a
    malformed line is a ``TraceError`` naming file and line."""
    path = Path(resolve_input(path, "job file"))
    opener = gzip.open if path.suffix == ".gz" else open
    jobs = []
    try:
        with opener(path, "rt") as fh:
            for lineno, line in enumerate(fh, 1):
                text = line.strip()
                if not text or text.startswith(("#", ";")):
                    continue
                parts = text.split()
                try:
                    if len(parts) != 4:
                        raise ValueError(f"4 fields (id arrival runtime nodes), got {len(parts)}")
                    jid, arrival, runtime, nodes = (float(p) for p in parts)
                    if not (jid == int(jid) and nodes == int(nodes) and nodes >= 1
                            and runtime >= 0 and arrival >= 0):
                        raise ValueError("integer id, arrival >= 0, runtime >= 0, nodes >= 1")
                except ValueError as err:
                    raise TraceError(f"{path}:{lineno}: expected {err}; got {text[:60]!r}") \
                        from None
                jobs.append(Job(int(jid), arrival, runtime, runtime, int(nodes)))
                if max_jobs is not None and len(jobs) >= max_jobs:
                    break
    except OSError as err:
        raise TraceError(f"{path}: cannot read ({err.strerror or err})") from None
    if len({j.id for j in jobs}) != len(jobs):
        raise TraceError(f"{path}: job ids must be unique")
    return jobs
