"""The ASA estimator through the hpcopt/1 service: asa_sample / asa_observe."""

from __future__ import annotations

import json

from hpcopt import service
from hpcopt.agents.asa import ASAEstimator
from hpcopt.service import handle, handle_line


def setup_function():
    service._ESTIMATORS.clear()


def test_sample_observe_is_the_estimator():
    ref = ASAEstimator(policy="tuned", seed=3)
    cfg = {"policy": "tuned", "seed": 3}
    for i, wait in enumerate([600.0, 610.0, 4000.0, 590.0] * 5):
        reply = handle({"id": i, "op": "asa_sample", "key": 56, "config": cfg})
        assert reply["ok"], reply
        idx, w = ref.sample(56)
        assert (reply["index"], reply["wait_s"]) == (idx, w)
        obs = handle({"id": i, "op": "asa_observe", "key": 56, "index": idx, "wait_s": wait})
        assert obs["ok"] and obs["loss"] == ref.observe(56, idx, wait)
        assert obs["observations"] == i + 1 == ref.state(56)["observations"]


def test_named_estimators_prior_and_path(tmp_path):
    path = tmp_path / "asa.json"
    req = {"op": "asa_sample", "estimator": "x", "key": [2, "q"], "estimate_s": 120.0,
           "config": {"prior": 0.5, "seed": 1}, "path": str(path)}
    reply = handle(req)
    assert reply["ok"], reply
    obs = handle({"op": "asa_observe", "estimator": "x", "key": [2, "q"],
                  "index": reply["index"], "wait_s": 100.0, "estimate_s": 120.0,
                  "path": str(path)})
    assert obs["ok"] and obs["observations"] == 1
    saved = ASAEstimator.load(path)
    assert saved.prior == 0.5 and saved.state((2, "q"))["observations"] == 1
    service._ESTIMATORS.clear()  # a new process: loads the saved state from path
    again = handle({"op": "asa_observe", "estimator": "x", "key": [2, "q"], "index": 0,
                    "wait_s": 100.0, "path": str(path)})
    assert again["ok"] and again["observations"] == 2
    assert handle({"op": "asa_sample", "estimator": "other", "key": 1})["ok"]
    assert set(service._ESTIMATORS) == {"x", "other"}


def test_errors_are_replies():
    bad = [
        ({"op": "asa_sample"}, "request.key: missing"),
        ({"op": "asa_sample", "key": {"a": 1}}, "request.key"),
        ({"op": "asa_sample", "key": 1, "config": {"policy": "nope"}}, "policy"),
        ({"op": "asa_sample", "key": 1, "config": {"seed": 7}}, "exists with seed=0"),
        ({"op": "asa_sample", "key": 1, "estimator": "z", "config": {"bogus": 1}}, "config"),
        ({"op": "asa_observe", "key": 1, "index": 999, "wait_s": 5}, "index"),
        ({"op": "asa_observe", "key": 1, "index": 0, "wait_s": -5}, "wait_s"),
        ({"op": "asa_observe", "key": 1, "wait_s": 5}, "index"),
    ]
    for req, text in bad:
        reply = handle({"id": 9, **req})
        assert reply["ok"] is False and reply["id"] == 9
        assert text in reply["error"]["message"] and "\n" not in reply["error"]["message"]
    line = handle_line(json.dumps({"id": 1, "op": "asa_sample", "key": 28}))
    assert line["ok"] and 0 <= line["index"] < 53
