"""What the driver records and announces: the modes a job starts in, the events subscribers
hear, and the mutable record kept per job (``hpcopt.sim.driver``)."""

from __future__ import annotations

import math
from enum import Enum

from hpcopt.domain import Job

READY, RESERVED, BACKFILLED = "ready", "reserved", "backfilled"
DROPPED = "dropped"  # the mode of a job whose latest start passed before it started
REFUSED = "refused"  # the mode of a submission a site limit refused (MaxSubmitJobs)


class Event(str, Enum):
    """What subscribers can listen to; callbacks get ``(sim, event, payload)``."""

    SUBMIT = "submit"  # payload: Job
    START = "start"  # payload: JobRecord
    COMPLETE = "complete"  # payload: JobRecord
    RESERVE = "reserve"  # payload: (Job, shadow time)
    PASS = "pass"  # payload: time of the pass
    PICK = "pick"  # payload: Pick (after a one-pick policy's choice was carried out)
    DROP = "drop"  # payload: JobRecord (a job whose latest start passed, never started)
    END = "end"  # payload: None (every job has finished)


class JobRecord:
    """The driver's mutable bookkeeping of one job."""

    __slots__ = ("job", "start", "end", "mode", "reserved_at", "passed", "allocation")

    def __init__(self, job: Job) -> None:
        self.job = job
        self.start = math.nan
        self.end = math.nan
        self.mode = ""
        self.reserved_at: float | None = None  # first shadow time this job was given
        self.passed = 0  # passes in which a job behind it started
        self.allocation = None
