"""OSDEC heuristics break ties by submission order, then the id's numbers, never by the id
as text: the same day with ids written ``"t:44"`` or ``"t:0044"`` (text orders that differ:
``"t:213" < "t:44"`` but ``"t:0044" < "t:0213"``) gets the same schedule from every policy and
from the ``osdec-greedy`` backend."""

from __future__ import annotations

import pytest

from hpcopt.domain import NumberedId, id_order
from hpcopt.instances import instance_from_dict
from hpcopt.osdec import simulate_osdec
from hpcopt.solvers import solve

from .conftest import shared_file

POLICIES = [("fifo", {}), ("sjf", {}), ("tetris", {}), ("tetris", {"knob": 0.5}),
            ("rolling-mip", {"horizon": 4, "time_limit": 60.0}), ("osdec", {}), ("ppo-mlp", {})]


@pytest.fixture(scope="module")
def days():
    """A 48-slot day of the benchmark family with its ids as generated (``"<t>:<index>"``),
    zero-padded (``"<t>:<0index>"``), and zero-padded with the job order reversed."""
    shared_file("cloud/azure_v1_vmtable_derived/v1.dev.txt.gz")
    from hpcopt.workloads.osdec import deferrable_suite

    inst = deferrable_suite("test", 1, seed=2, slots=48)[0]
    jobs = inst["data"]["jobs"]
    padded = [{**j, "id": "{}:{:04d}".format(*map(int, j["id"].split(":")))} for j in jobs]
    return inst, {**inst, "data": {**inst["data"], "jobs": padded}}, \
        {**inst, "data": {**inst["data"], "jobs": padded[::-1]}}


def _by_job(inst, decision):
    """Start slot per (submit, numeric id) of each job."""
    return {(j["submit"], id_order(j["id"])): s for j, s in zip(inst["data"]["jobs"], decision)}


def test_the_day_has_ids_whose_text_order_is_not_their_order(days):
    ids = [j["id"] for j in days[0]["data"]["jobs"]]
    assert sorted(ids) != sorted(ids, key=id_order)
    assert sorted(NumberedId(i) for i in ids) == sorted(ids, key=id_order)
    assert id_order("86400:44") < id_order("86400:213") and id_order(50) < id_order("12")
    from hpcopt.sim.orders import MixedId  # mixed ids: integers first, as the driver orders them

    assert sorted([NumberedId("t:10"), MixedId(7), NumberedId("t:9")]) == [7, "t:9", "t:10"]


@pytest.mark.parametrize(("name", "options"), POLICIES, ids=lambda x: str(x) if x else "")
def test_online_policies_ignore_how_ids_are_spelled(days, name, options):
    plain, _, padded = days
    a = simulate_osdec(instance_from_dict(plain), name, seed=0, **options)
    b = simulate_osdec(instance_from_dict(padded), name, seed=0, **options)
    assert _by_job(plain, a.decision) == _by_job(padded, b.decision)
    assert a.summary["total_reward"] == b.summary["total_reward"]
    # the capacity binds: jobs wait or are dropped, so the order matters on this day
    assert a.summary["dropped"] > 0 or a.summary["delay_penalty"] > 0


def test_the_greedy_backend_ignores_how_ids_are_spelled(days):
    """The plain greedy and its local search follow submission order whatever the file's job
    order; the LP rounding too where the LP is the same (HiGHS's optimum among equal ones may
    depend on the column order, so the LP case keeps the file's order)."""
    for lp, other in ((False, days[2]), (True, days[1])):
        a = solve(instance_from_dict(days[0]).model, "osdec-greedy", solver_options={"lp": lp})
        b = solve(instance_from_dict(other).model, "osdec-greedy", solver_options={"lp": lp})
        assert _by_job(days[0], a.decision) == _by_job(other, b.decision)
        assert a.objective == b.objective
