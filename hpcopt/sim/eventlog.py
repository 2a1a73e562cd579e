"""A simulation's events as tidy rows: one JSON object per driver event, in the order the
driver announced them (``hpcopt simulate --events FILE.jsonl``, ``simulate(events=...)``).

Every row has ``time`` (simulated seconds), ``event`` (``submit``, ``start``, ``reserve``,
``complete``, ``drop``), ``job`` (its id) and ``nodes``; then per event:

- ``submit``: ``walltime`` (requested seconds);
- ``start``: ``mode`` (``ready``, ``reserved`` or ``backfilled``: how the job started),
  ``wait`` and, where the system places jobs, ``allocation`` (node ids on a topology, nodes
  per SSD class on an SSD system);
- ``reserve``: ``shadow`` (the time the reserved job is guaranteed to start by: EASY gives
  one reservation at each pass, so a job waiting through many passes has many rows);
- ``complete``: ``start`` and ``end``;
- ``drop``: nothing more (a deferrable job whose latest start passed).
"""

from __future__ import annotations

import json
from pathlib import Path

from .records import Event

LOGGED = (Event.SUBMIT, Event.START, Event.RESERVE, Event.COMPLETE, Event.DROP)


def event_row(sim, event: Event, payload) -> dict:
    """The row of one driver event (see the module docstring)."""
    now = float(sim.now)
    if event is Event.SUBMIT:
        job = payload
        return {"time": now, "event": "submit", "job": job.id, "nodes": job.nodes,
                "walltime": job.walltime}
    if event is Event.RESERVE:
        job, shadow = payload
        return {"time": now, "event": "reserve", "job": job.id, "nodes": job.nodes,
                "shadow": float(shadow)}
    rec = payload
    row = {"time": now, "event": event.value, "job": rec.job.id, "nodes": rec.job.nodes}
    if event is Event.START:
        row["mode"] = rec.mode
        row["wait"] = float(rec.start - rec.job.submit)
        if rec.allocation is not None and not isinstance(rec.allocation, (int, float)):
            row["allocation"] = [int(a) for a in rec.allocation]
    elif event is Event.COMPLETE:
        row["start"], row["end"] = float(rec.start), float(rec.end)
    return row


class EventLog:
    """Subscribes to a ``Simulator``'s events and hands each row to ``sink``: a path (JSON
    Lines, written as the run goes; ``close()`` ends it) or a callable taking the row."""

    def __init__(self, sink) -> None:
        self._file = None
        self.count = 0
        if callable(sink):
            self._write = sink
        else:
            path = Path(sink)
            if path.parent and not path.parent.is_dir():
                path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
            self._write = self._line
        self.path = None if callable(sink) else Path(sink)

    def _line(self, row: dict) -> None:
        self._file.write(json.dumps(row, default=str) + "\n")

    def attach(self, sim) -> EventLog:
        for event in LOGGED:
            sim.subscribe(event, self._on)
        return self

    def _on(self, sim, event, payload) -> None:
        self.count += 1
        self._write(event_row(sim, event, payload))

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def run_logged(sim, events=None, run=None):
    """``sim.run()`` (or ``run(sim)``), with its events to ``events`` (a path or a callable)
    when given; the log is closed, every row so far kept, however the run ends.  Returns
    what the run returns."""
    run = type(sim).run if run is None else run
    if events is None:
        return run(sim)
    log = EventLog(events).attach(sim)
    try:
        return run(sim)
    finally:
        log.close()
