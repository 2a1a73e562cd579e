"""The policy protocol (hpcopt.sim.protocol): every hook the driver reads is declared once,
with its default, and the driver reads them through that declaration."""

from __future__ import annotations

import re
from pathlib import Path

from hpcopt.domain import Decision, Job, System
from hpcopt.policies import make_policy
from hpcopt.policies.base import Policy
from hpcopt.sim.driver import Simulator
from hpcopt.sim.protocol import HOOKS, PolicyHooks, policy_hooks

DRIVER = Path(__file__).resolve().parents[1] / "hpcopt" / "sim" / "driver.py"


class Bare:
    """A duck-typed policy: decide and reset only."""

    def reset(self, seed=None):
        pass

    def decide(self, window):
        return Decision(start=[j.id for j in window.jobs[:1]])


def test_every_hook_has_a_default_and_a_docstring():
    source = Path(PolicyHooks.__module__.replace(".", "/") + ".py")
    text = (Path(__file__).resolve().parents[1] / source).read_text()
    for name in HOOKS:
        # the attribute line is followed by its one-line (or short) docstring
        assert re.search(rf"\n    {name}: [^\n]+ = [^\n]+\n    \"\"\"\S", text), name
    assert {"one_pick", "fit_only", "reserve_rule", "order", "backfill", "window",
            "window_fixed", "starvation_bound", "period", "waits_for_head", "machine",
            "starts_prefix", "launch_delay", "checks_limits"} == set(HOOKS)


def test_a_duck_typed_policy_gets_the_declared_defaults():
    hooks = policy_hooks(Bare())
    assert {n: getattr(hooks, n) for n in HOOKS} == {n: getattr(PolicyHooks, n) for n in HOOKS}
    sim = Simulator([Job(1, 0, 10, 10, 1)], System(2), Bare())
    assert (sim.order_name, sim.backfilling, sim.window_size, sim.period,
            sim.starvation_bound) == ("fcfs", True, None, None, None)


def test_attributes_a_policy_sets_are_what_the_driver_uses():
    pol = Bare()
    pol.order, pol.backfill, pol.window, pol.period, pol.starvation_bound = \
        "sjf", "none", 3, 60.0, 7
    sim = Simulator([Job(1, 0, 10, 10, 1)], System(2), pol)
    assert (sim.order_name, sim.backfilling, sim.window_size, sim.period,
            sim.starvation_bound) == ("sjf", False, 3, 60.0, 7)


def test_a_policy_brings_its_launch_delay_unless_the_caller_sets_one():
    pol = Bare()
    pol.launch_delay = 0.5
    assert Simulator([Job(1, 0, 10, 10, 1)], System(2), pol).launch_delay == 0.5
    assert Simulator([Job(1, 0, 10, 10, 1)], System(2), pol, launch_delay=0.0).launch_delay == 0
    assert Simulator([Job(1, 0, 10, 10, 1)], System(2), Bare()).launch_delay == 0


def test_starts_prefix_is_read_from_the_class_and_dropped_when_decide_is_patched():
    fcfs = make_policy("fcfs")
    assert isinstance(fcfs, Policy) and policy_hooks(fcfs).starts_prefix
    fcfs.starts_prefix = False  # an instance attribute does not count: the class declares it
    assert policy_hooks(fcfs).starts_prefix
    fcfs.decide = Bare().decide
    assert not policy_hooks(fcfs).starts_prefix


def test_the_driver_reads_no_hook_with_its_own_getattr():
    text = DRIVER.read_text()
    for name in HOOKS:
        assert not re.search(rf"getattr\((type\()?policy\)?, \"{name}\"", text), name
