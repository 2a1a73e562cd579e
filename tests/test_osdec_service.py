"""The hpcopt/1 ``decide`` op on cloud-slot (OSDEC) states: every slot of an online run,
sent through the service as JSON (capacity forecast, current, running and future sets),
gets the driver's own starts."""

from __future__ import annotations

import json

import pytest

from hpcopt.osdec import load_osdec, osdec_workload
from hpcopt.policies import make_policy
from hpcopt.service import handle
from hpcopt.sim.driver import Simulator

from .conftest import INSTANCES

QUARTER = INSTANCES / "osdec" / "quarter_day_72slots_150jobs.json"


def _row(job, **extra) -> dict:
    return {"id": job.id, "submit": job.submit, "walltime": job.walltime, "nodes": job.nodes,
            "earliest": job.earliest, "latest": job.latest, **extra}


def _state(sim: Simulator, model) -> dict:
    """What a cloud scheduler would send at this slot (the forecast up to the day's end)."""
    prof = sim.system.capacity
    return {"time": sim.now,
            "system": {"nodes": sim.system.nodes,
                       "capacity": [prof.at(t) for t in range(int(sim.now), model.slots)]},
            "queue": [_row(j) for j in sim.queue],
            "running": [{"id": r.job.id, "nodes": r.job.nodes, "expected_end": r.est_end}
                        for r in sim.running],
            "upcoming": [_row(j) for j in sim.upcoming.values()],
            "weights": {"w1": model.w1, "w2": model.w2, "end": model.slots}}


@pytest.mark.parametrize(("policy", "options"), [
    ("fifo", {}), ("sjf", {}), ("tetris", {"knob": 0.5}),
    ("rolling-mip", {"horizon": 6, "backend": "osdec-greedy", "forecast": "oracle"}),
])
def test_decide_replays_every_osdec_slot(policy, options):
    model = load_osdec(QUARTER)
    jobs, system = osdec_workload(model)
    pol = make_policy(policy, **options)
    if hasattr(pol, "set_weights"):
        pol.set_weights(model.w1, model.w2, model.slots)
    sim = Simulator(jobs, system, pol, backfill="none", period=1.0)
    inner, passes = pol.decide, []

    def decide(window):  # each pass: the same state through the service, then the driver
        request = json.loads(json.dumps({"id": len(passes), "op": "decide", "policy": policy,
                                         "options": options,
                                         "window": _state(sim, model)}))
        decision = inner(window)
        reply = handle(request)
        assert reply["ok"], reply
        assert reply["start"] == list(decision.start) and reply["backfill"] == [], sim.now
        passes.append(len(decision.start))
        return decision

    pol.decide = decide
    sim.run()
    assert len(passes) > 30 and sum(passes) > 50


def test_decide_cloud_state_errors():
    base = {"time": 3, "system": {"nodes": 8, "capacity": [4]},
            "queue": [{"id": "a", "submit": 0, "walltime": 2, "nodes": 2, "earliest": 1,
                       "latest": 5}]}
    ok = handle({"id": 1, "op": "decide", "policy": "fifo", "window": base})
    assert ok["ok"] and ok["start"] == ["a"]
    full = dict(base, running=[{"id": "r", "nodes": 4, "expected_end": 9}])
    assert handle({"id": 2, "op": "decide", "policy": "fifo", "window": full})["start"] == []
    for window, needle in [
        (dict(base, system={"nodes": 8, "capacity": [-1]}), "window.system.capacity"),
        (dict(base, upcoming=[{"id": "u", "submit": 0, "walltime": 1, "nodes": 1,
                               "earliest": 2, "latest": 4}]), "upcoming job u"),
        (dict(base, queue=[{"id": "a", "submit": 0, "walltime": 2, "nodes": 2,
                            "earliest": 4, "latest": 1}]), "window.queue[0].latest"),
    ]:
        reply = handle({"id": 3, "op": "decide", "policy": "fifo", "window": window})
        assert not reply["ok"] and needle in reply["error"]["message"], reply
