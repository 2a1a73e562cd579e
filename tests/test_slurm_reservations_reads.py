"""Slurm's reservations as the adapter reads them: ``scontrol -o show reservation`` as
recorded on the testbed (both versions; 24.11's ``--json`` agrees), the blocks they put on
a partition, and one adapter cycle around a maintenance window (no Slurm needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpcopt.policies import make_policy
from hpcopt.sim.reservations import Reservation
from hpcopt.slurm.adapter import Adapter, Settings
from hpcopt.slurm.reservations import partition_blocks
from hpcopt.slurm.state import (
    Slurm,
    SlurmCommandError,
    Snapshot,
    parse_job,
    parse_node,
    parse_reservations,
)
from hpcopt.slurm.topology import expand_hostlist

DATA = Path(__file__).parent / "data" / "slurm"


@pytest.mark.parametrize("version", ["22.05", "24.11"])
def test_the_recorded_reservations_read(version):
    """Recorded with SLURM_TIME_FORMAT=%s: a maintenance of every node to come, a user
    reservation under way, a node-count reservation of an account on another partition."""
    got = {r.name: r for r in parse_reservations((DATA / version / "reservations.txt")
                                                 .read_text())}
    maint, now1, cnt = got["maint"], got["now1"], got["cnt"]
    assert maint.nodes == tuple(f"n{i}" for i in range(1, 9)) and "MAINT" in maint.flags
    assert maint.end - maint.start == 600 and not maint.active and maint.users == ("root",)
    assert now1.active and now1.nodes == ("n1", "n2") and now1.partition is None
    assert cnt.accounts == ("root",) and cnt.partition == "debug" and cnt.users == ()
    assert maint.start - now1.start == 90


def test_the_json_of_2411_says_the_same():
    text = {r.name: r for r in parse_reservations((DATA / "24.11" / "reservations.txt")
                                                  .read_text())}
    doc = json.loads((DATA / "24.11" / "reservations.json").read_text())["reservations"]
    assert {r["name"] for r in doc} == set(text)
    for r in doc:
        mine = text[r["name"]]
        assert (mine.start, mine.end) == (r["start_time"]["number"], r["end_time"]["number"])
        assert mine.nodes == tuple(expand_hostlist(r["node_list"]))
        assert mine.flags == frozenset(r["flags"])


def test_unreadable_reservations_are_one_line_errors():
    assert parse_reservations("No reservations in the system\n") == ()
    with pytest.raises(SlurmCommandError, match=r"reservation maint: unreadable line "
                                                r"\(StartTime=2026-11-28T02:57:53, expected "
                                                r"epoch seconds\)"):
        parse_reservations("ReservationName=maint StartTime=2026-11-28T02:57:53 "
                           "EndTime=1 Nodes=n1\n")


def node(name, state="idle", flags=(), partitions=("batch",)):
    return parse_node({"name": name, "state": state, "state_flags": list(flags),
                       "partitions": list(partitions)})


NOW = 1_000_000.0


def resv(name, start, end, nodes):
    return parse_reservations(f"ReservationName={name} StartTime={int(start)} "
                              f"EndTime={int(end)} Nodes={nodes} State=X\n")[0]


def test_blocks_on_a_partition():
    """One to come blocks its usable nodes of the partition; one under way its idle ones;
    one over, or on other nodes, none."""
    nodes = [node("n1", "allocated"), node("n2"), node("n3", flags=["DRAIN"]), node("n4"),
             node("x1", partitions=("other",))]
    found = [resv("future", NOW + 90, NOW + 690, "n[1-4],x1"),
             resv("now", NOW - 10, NOW + 50, "n[1-2]"),
             resv("over", NOW - 100, NOW - 1, "n[1-4]"), resv("elsewhere", NOW, NOW + 9, "x1")]
    assert partition_blocks(found, nodes, "batch", NOW) == (
        Reservation(NOW + 90, NOW + 690, 3, name="future"),
        Reservation(NOW - 10, NOW + 50, 1, name="now"))


def held(jid, nodes, minutes):
    return parse_job({"job_id": jid, "job_state": "PENDING", "state_reason": "JobHeldUser",
                      "priority": 0, "partition": "batch", "submit_time": NOW - 100 + jid,
                      "start_time": 0, "time_limit": minutes, "node_count": nodes,
                      "admin_comment": "hpcopt:held"})


def test_a_cycle_keeps_jobs_out_of_a_maintenance_window():
    """A maintenance of all 8 nodes in 90 s: the 8-node 5-minute job stays held, reserved
    for the window's end; the 2-node 1-minute one is released (it ends before)."""
    class Fake(Slurm):
        def snapshot(self):
            return Snapshot(NOW, (held(1, 8, 5), held(2, 2, 1), held(3, 2, 5)),
                            tuple(node(f"n{i}") for i in range(1, 9)), 0.01)

        def reservations(self):
            return (resv("maint", NOW + 90, NOW + 690, "n[1-8]"),)

    said: list[str] = []
    adapter = Adapter(make_policy("fcfs"), Settings(dry_run=True), slurm=Fake(),
                      say=said.append)
    rec = adapter.cycle()
    assert rec.ok and rec.released == [2]
    assert rec.reserved == {"id": 1, "shadow": NOW + 690}
    assert any(n.startswith("reservation maint: 8 nodes from +90 s") for n in rec.notes)
