"""Reservations under hpcopt on a real Slurm (both versions): the adapter reads
``scontrol show reservation`` each cycle, keeps held jobs out of a reservation they would
meet, and leaves jobs submitted for a reservation to Slurm.  Each scenario runs twice, at
the same time on two alike 8-node testbeds: Slurm alone (the unmanaged partition ``debug``)
and hpcopt (``batch``, held by the submit script, released by an fcfs adapter).  The jobs
start in the same rounds both times, and no job hpcopt released ever waits in Slurm.

Maintenance: every node from 90 s on, for one minute.  Jobs: 8 nodes for 2 minutes (meets
it), 2 nodes for 1 minute (ends before), 2 nodes for 2 minutes (meets it), 4 nodes for 1
minute (ends before).

User reservation of n[1-4] from 90 s on, for one minute, for root: root's 4-node job asks
for it (Slurm's, inside it); the others: 6 nodes for 2 minutes (too many beside it), 4
nodes for 2 minutes (fits beside it), 2 nodes for 1 minute (ends before it).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from hpcopt.slurm.state import Slurm

from .slurm_fixtures import VERSIONS, started_testbed

pytestmark = pytest.mark.slow

ROUND_S = 3.0  # starts this close together are one round


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def site(request):
    """Two testbeds of one version: Slurm alone plays on the first while hpcopt plays the
    same submissions on the second, at the same time (each play mostly waits for its
    reservation to pass)."""
    with started_testbed(request.param, "resv", scheduler="backfill") as alone, \
            started_testbed(request.param, "resv", scheduler="backfill") as ours:
        yield alone, ours


def both(site, reservation: list[str], jobs: dict[str, list[str]]):
    """``play`` by Slurm alone (partition debug of the first testbed) and under hpcopt
    (fcfs, partition batch of the second) at once: the rounds of each, and what hpcopt's
    released jobs waited on."""
    alone, ours = site
    with ThreadPoolExecutor(1) as pool:
        by_slurm = pool.submit(play, alone, "debug", reservation, jobs)
        by_us, waited = play(ours, "batch", reservation, jobs, ours.adapter("fcfs"))
        return by_slurm.result()[0], by_us, waited


def rounds(starts: dict[str, float]) -> list[set[str]]:
    """The jobs' labels grouped into rounds of starts (each within ``ROUND_S`` of the
    previous start), in time order."""
    out: list[set[str]] = []
    last = None
    for label, t in sorted(starts.items(), key=lambda kv: kv[1]):
        if last is None or t - last > ROUND_S:
            out.append(set())
        out[-1].add(label)
        last = t
    return out


def play(c, partition: str, reservation: list[str], jobs: dict[str, list[str]],
         adapter=None) -> tuple[list[set[str]], list[str]]:
    """Create ``reservation`` (scontrol fields), submit ``jobs`` (label -> sbatch args) to
    ``partition`` and run them all, cycling ``adapter`` if given; the rounds of starts and
    what hpcopt's released jobs waited on in Slurm (none expected).  The adapter's first
    reservation of a job is at the end of the reservation (its shadow respects it)."""
    name = reservation[0].split("=", 1)[1]
    c.run("scontrol", "create", "reservation", *reservation)
    made = {r.name: r for r in Slurm(env=c.env).reservations()}[name]
    try:
        ids = {label: c.submit("-p", partition, *args, sleep=4) for label, args in
               jobs.items()}
        label = {v: k for k, v in ids.items()}
        waited, starts, shadows = [], {}, []
        end = time.monotonic() + 300
        while time.monotonic() < end:
            if adapter is not None:
                rec = adapter.cycle()
                assert rec.ok, rec
                if rec.reserved:
                    shadows.append(rec.reserved["shadow"])
            now = c.jobs()
            for jid, j in now.items():
                if jid not in label:
                    continue
                if j["job_state"] == "PENDING" and str(j.get("admin_comment", "")).startswith(
                        "hpcopt:released"):
                    waited.append(f"{label[jid]}: {j['state_reason']}")
                if j["job_state"] != "PENDING" and label[jid] not in starts:
                    starts[label[jid]] = float(j["start_time"])
            if all(now[i]["job_state"] == "COMPLETED" for i in ids.values()):
                assert adapter is None or shadows[0] == made.end, (shadows, made)
                return rounds(starts), waited
            time.sleep(1)
        raise AssertionError(f"not all ran: {c.jobs()}")
    finally:
        c.run("scontrol", "delete", f"ReservationName={name}", check=False)


# a released job may wait a moment for Slurm to start it (its scheduler's next pass)
PASSING = ("None", "Priority", "Resources")


MAINT = ["ReservationName=maint", "StartTime=now+90", "Duration=1", "Nodes=ALL",
         "Flags=MAINT,IGNORE_JOBS", "Users=root"]
MAINT_JOBS = {"big": ["-N", "8", "-t", "2"], "short2": ["-N", "2", "-t", "1"],
              "long2": ["-N", "2", "-t", "2"], "short4": ["-N", "4", "-t", "1"]}


def test_a_maintenance_window(site):
    alone, ours, waited = both(site, MAINT, MAINT_JOBS)
    assert alone[0] == {"short2", "short4"}, alone  # what Slurm says the window leaves
    assert ours == alone
    assert not [w for w in waited if not w.endswith(PASSING)], waited


USER = ["ReservationName=ures", "StartTime=now+90", "Duration=1", "Nodes=n[1-4]",
        "Users=root"]
USER_JOBS = {"wide": ["-N", "6", "-t", "2"], "beside": ["-N", "4", "-t", "2"],
             "short": ["-N", "2", "-t", "1"], "inside": ["-N", "4", "-t", "1",
                                                         "--reservation=ures"]}


def test_a_user_reservation(site):
    alone, ours, waited = both(site, USER, USER_JOBS)
    assert alone[0] == {"beside", "short"} and {"inside"} in alone, alone
    assert ours == alone
    assert not [w for w in waited if not w.endswith(PASSING)], waited
