"""One vocabulary: outcome values shared by results, batch rows and sweep rows; one option
error base for policies and solvers; policy names in one style that run what they say;
registries that refuse a duplicate name."""

from __future__ import annotations

import re

import pytest

from hpcopt.batch import run_batch
from hpcopt.domain import Job, System
from hpcopt.errors import (
    OptionError,
    PolicyOptionError,
    RegistryError,
    SimulationError,
    SolverOptionError,
)
from hpcopt.instances import save_instance
from hpcopt.models.knapsack import KnapsackModel
from hpcopt.policies import make_policy, policy_names
from hpcopt.policies.base import register_policy
from hpcopt.result import Status, Termination
from hpcopt.sim.driver import Simulator
from hpcopt.solvers import solve
from hpcopt.solvers.registry import register
from hpcopt.sweep import run_sweep
from hpcopt.traces import write_swf

STATUSES = {s.value for s in Status}
RUN_STATUSES = {"DONE", "INTERRUPTED", "ERROR"}  # a sweep row's, by its termination
TERMINATIONS = {t.value for t in Termination}


def _trace(tmp_path):
    jobs = [Job(i, 10.0 * i, 50.0 + i, 60.0 + i, 1 + i % 3) for i in range(12)]
    return write_swf(jobs, tmp_path / "t.swf", {"MaxNodes": 4, "MaxProcs": 4})


def test_batch_and_sweep_rows_use_the_result_vocabulary(tmp_path):
    good = save_instance(tmp_path / "ok.json", KnapsackModel([3, 4, 5], [2, 3, 4], 5), "ok")
    (tmp_path / "bad.json").write_text("{not json")
    rows = run_batch([str(good), str(tmp_path / "bad.json")], ["dp"]).rows
    assert {r["status"] for r in rows} == {"OPTIMAL", "ERROR"}
    sweep = {"trace": str(_trace(tmp_path)), "policy": "fcfs", "window": [2, 0]}
    srows = run_sweep(sweep).rows
    assert {(r["status"], r["termination"]) for r in srows} == {  # a run's own status
        ("DONE", "finished"), ("ERROR", "error")}
    for row in rows:
        assert row["status"] in STATUSES and row["termination"] in TERMINATIONS
    for row in srows:
        assert row["status"] in RUN_STATUSES and row["termination"] in TERMINATIONS


def test_policy_and_solver_option_errors_share_one_base():
    with pytest.raises(PolicyOptionError) as pol:
        make_policy("knapsack", value="node_hours")
    with pytest.raises(PolicyOptionError) as unknown:
        make_policy("fcfs", no_such_option=1)
    model = KnapsackModel([3, 4], [2, 3], 4)
    with pytest.raises(SolverOptionError) as sol:
        solve(model, "dp", solver_options={"no_such_option": 1})
    for err in (pol, unknown, sol):
        assert isinstance(err.value, OptionError)
        assert "\n" not in str(err.value)
    assert isinstance(pol.value, SimulationError)  # what callers caught before


def test_policy_names_share_one_style():
    bad = [n for n in policy_names() if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", n)]
    assert bad == []
    assert "largest-first" in policy_names() and "alignment-first" in policy_names()
    assert not {"binpacking", "bin_packing"} & set(policy_names())


def test_largest_first_and_alignment_first_do_what_they_say():
    system = System(8)
    jobs = [Job(1, 0, 100, 100, 1), Job(2, 0, 100, 100, 4), Job(3, 0, 100, 100, 6)]
    sim = Simulator(jobs, system, make_policy("largest-first"), backfill="none").run()
    assert sim.records[3].start == 0 and sim.records[1].start == 0  # 6 + 1 nodes, 4 waits
    assert sim.records[2].start == 100
    pol = make_policy("alignment-first")
    assert "alignment" in type(pol).__doc__


@pytest.mark.parametrize("name, key, value", [("dras-pg", "kind", "dql"),
                                              ("decima-pg", "levels", "dras"),
                                              ("weighted-cpu", "weights", (0.5, 0.5)),
                                              ("constrained-bb", "resource", "nodes"),
                                              ("ppo-mlp", "variant", "osdec")])
def test_a_registered_name_runs_what_it_says(name, key, value):
    with pytest.raises(PolicyOptionError, match=rf"policy '{name}' means {key}="):
        make_policy(name, **{key: value})
    pol = make_policy(name)
    assert pol.options[key] != value


def test_the_name_s_own_value_is_accepted_and_a_free_option_still_works():
    assert make_policy("dras-pg", kind="pg").kind == "pg"
    assert make_policy("weighted-cpu", weights=[0.8, 0.2]).options["weights"] == (0.8, 0.2)
    assert make_policy("weighted", weights=(0.5, 0.5)).weights == (0.5, 0.5)


def test_registries_refuse_a_duplicate_name():
    with pytest.raises(RegistryError, match="policy 'fcfs' is already registered"):
        @register_policy("fcfs")
        class Other:  # noqa: F841
            pass

    with pytest.raises(RegistryError, match="backend 'dp' is already registered"):
        @register("dp")
        class OtherBackend:  # noqa: F841
            pass

    # the registries still hold the originals
    assert solve(KnapsackModel([1], [1], 1), "dp").status is Status.OPTIMAL
    assert type(make_policy("fcfs")).__name__ == "HeadFirst"
