"""Limits hold from the first line of a solve, and an answer at a limit is never worse than
the model's greedy one.

Instances are cuts of the ones ``benchmarks/limits.py`` runs at full size (same builders): a
SCAS window from the lzk23 job sizes on the paper-1000 fat-tree, an OSDEC day from the Azure
trace cut to fewer slots, and the deterministic 500-item 3-resource knapsack.  Each is large
enough that building the model is a real part of a 1 s limit.
"""

from __future__ import annotations

import importlib.util
import math
import time
from pathlib import Path

import numpy as np
import pytest

import hpcopt
from hpcopt.errors import SolverOptionError
from hpcopt.result import Limit, Status
from hpcopt.solvers.registry import (
    BUILD_MARGIN,
    GREEDY_SHARE,
    OVERSHOOT_S,
    SolveOptions,
    get_solver,
)

from .conftest import shared_file

LIMIT = 1.0
_spec = importlib.util.spec_from_file_location(
    "limits_benchmark", Path(__file__).resolve().parents[1] / "benchmarks" / "limits.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


@pytest.fixture(scope="module")
def scas():
    shared_file("topology_alloc/lzk23_hpcschedule/data_large_1800_40.txt.gz")
    return bench.allocation_window("scas", n_idle=400, n_jobs=16)


@pytest.fixture(scope="module")
def osdec():
    shared_file("cloud/azure_v1_vmtable_derived/v1.dev.txt.gz")
    return bench.osdec_day(slots=96)


@pytest.fixture(scope="module")
def osdec48():
    shared_file("cloud/azure_v1_vmtable_derived/v1.dev.txt.gz")
    return bench.osdec_day(slots=48)


@pytest.fixture(scope="module")
def knapsack():
    return bench.knapsack()


def timed(model, backend, limit=LIMIT, **kw):
    t0 = time.perf_counter()
    res = hpcopt.solve(model, backend=backend, time_limit=limit, **kw)
    return res, time.perf_counter() - t0


def certified_objective(model, res) -> float:
    assert res.certified and res.decision is not None
    value = model.evaluate(res.decision).objective
    assert value == pytest.approx(res.objective)
    return value


def no_solver_infinity(res) -> None:
    """A bound is a real bound or +/-inf, never a solver's 1e20 (and None in rows)."""
    assert res.bound is None or math.isinf(res.bound) or abs(res.bound) < 1e15
    row = res.to_row()
    assert row["bound"] is None or abs(row["bound"]) < 1e15


# ------------------------------------------------------------------ 1. the whole solve
@pytest.mark.parametrize("backend,options", [
    ("scas-exact", None), ("cpsat", None), ("scip", None), ("scip", {"formulation": "compact"}),
    ("pyomo:appsi_highs", None), ("pyomo:appsi_highs", {"formulation": "compact"})])
def test_scas_window_within_limit_and_never_worse_than_sequential(scas, backend, options):
    greedy = hpcopt.solve(scas, backend="sequential").objective
    res, wall = timed(scas, backend, solver_options=options)
    assert wall <= LIMIT + OVERSHOOT_S, (wall, res.extra)
    assert res.status in (Status.OPTIMAL, Status.FEASIBLE)
    assert certified_objective(scas, res) <= greedy + 1e-6  # a minimization
    no_solver_infinity(res)


@pytest.mark.parametrize("backend", ["osdec-greedy", "cpsat", "scip", "pyomo:appsi_highs"])
def test_osdec_day_within_limit_and_never_worse_than_the_greedy_pass(osdec, backend):
    first = hpcopt.solve(osdec, backend="osdec-greedy",
                         solver_options={"lp": False, "passes": 0}).objective
    assert first > 0
    res, wall = timed(osdec, backend)
    assert wall <= LIMIT + OVERSHOOT_S, (wall, res.extra)
    assert certified_objective(osdec, res) >= first - 1e-6
    no_solver_infinity(res)


@pytest.mark.parametrize("backend", ["dp", "ortools", "cpsat", "scip", "pyomo:appsi_highs"])
def test_knapsack_500_within_limit_and_never_worse_than_greedy(knapsack, backend):
    greedy = hpcopt.solve(knapsack, backend="greedy").objective
    res, wall = timed(knapsack, backend)
    assert wall <= LIMIT + OVERSHOOT_S, (wall, res.extra)
    assert certified_objective(knapsack, res) >= greedy - 1e-6
    no_solver_infinity(res)


def test_a_build_that_cannot_fit_is_not_started_and_says_why(scas):
    """The paper formulation's rows (4) take seconds to build in pyomo: not started within a
    short limit; the greedy decision comes back, with the reason."""
    res, wall = timed(scas, "pyomo:appsi_highs", limit=0.5)
    assert wall <= 0.5 + OVERSHOOT_S
    assert res.status == Status.FEASIBLE and res.limit == Limit.TIME
    assert "takes about" in res.extra["refused"]
    assert res.extra["greedy_fallback"]
    assert res.decision == hpcopt.solve(scas, backend="sequential").decision


@pytest.mark.parametrize("factor", [1.3, 1.9])
def test_a_build_starts_only_with_its_margin_left(scas, factor):
    """Just above its estimate a build on a busy machine could still overrun, so it starts
    only when ``BUILD_MARGIN`` times the estimate fits: the same refusal, in time."""
    backend = get_solver("pyomo:appsi_highs")
    est = backend.footprint(scas, SolveOptions())
    limit = factor * est.seconds  # more than the estimate, less than the margin
    res, wall = timed(scas, "pyomo:appsi_highs", limit=limit)
    assert est.seconds < (1 - GREEDY_SHARE) * limit and BUILD_MARGIN * est.seconds > limit
    assert "cannot be stopped" in res.extra["refused"] and res.extra["greedy_fallback"]
    assert wall <= 1.0 + OVERSHOOT_S  # refused at once, not after the build
    mem = hpcopt.solve(scas, backend="pyomo:appsi_highs", time_limit=60,
                       solver_options={"max_memory_mb": factor * est.megabytes})
    assert mem.limit == Limit.MEMORY
    assert f"{BUILD_MARGIN:g}x that fits max_memory_mb" in mem.extra["refused"]


def shortest_started_limit(backend: str, model) -> float:
    """The shortest time limit at which ``backend`` starts its build of ``model`` even when
    the greedy start takes its whole share, plus a second for the solver."""
    est = get_solver(backend).footprint(model, SolveOptions())
    return (BUILD_MARGIN * est.seconds + 1.0) / (1 - GREEDY_SHARE)


def loaded_spy(monkeypatch):
    """Record, when the solver is run: the time left, the time limit it was given, and whether
    the model was already in the solver (appsi's ``set_instance``)."""
    from hpcopt.solvers.pyomo_backend import Pyomo

    calls = []
    run, solve = Pyomo._run, Pyomo._solve

    def spy_solve(self, model, opts):
        calls.append({"deadline": opts.deadline})
        return solve(self, model, opts)

    def spy_run(self, opt, pm):
        calls[-1].update(left=calls[-1]["deadline"] - time.perf_counter(),
                         given=dict(opt.options), loaded=getattr(opt, "_model", None) is pm)
        return run(self, opt, pm)

    monkeypatch.setattr(Pyomo, "_solve", spy_solve)
    monkeypatch.setattr(Pyomo, "_run", spy_run)
    return calls


def test_highs_gets_what_the_build_and_its_load_leave(osdec48, monkeypatch):
    """appsi's load of the model into HiGHS happened inside its solve, after HiGHS had been
    given all the time left (the OSDEC day ran 36.8 s at 30 s): the model is now loaded
    first, and HiGHS gets the time left less what it may run past its own limit."""
    import pyomo.environ  # noqa: F401  (imported, as in any later solve: not in the estimate)

    calls = loaded_spy(monkeypatch)
    limit = shortest_started_limit("pyomo:appsi_highs", osdec48)
    first = hpcopt.solve(osdec48, backend="osdec-greedy",
                         solver_options={"lp": False, "passes": 0}).objective
    res, wall = timed(osdec48, "pyomo:appsi_highs", limit=limit)
    assert "refused" not in res.extra and len(calls) == 1, res.extra  # built and solved
    stop = get_solver("pyomo:appsi_highs").build_estimate(osdec48).stop_s
    given, left = calls[0]["given"]["time_limit"], calls[0]["left"]
    assert calls[0]["loaded"] and 0 < given <= left - stop + 0.05  # left: read just after
    assert wall <= limit + OVERSHOOT_S, (wall, res.extra)
    assert certified_objective(osdec48, res) >= first - 1e-6


def test_a_load_inside_the_solve_is_taken_off_the_solver_limit():
    """Interfaces that load inside ``solve`` (``scip_direct``, file-based solvers): the
    estimated load, scaled up by how much longer than estimated the build took (a busy
    machine), comes off the solver's limit."""
    from hpcopt.solvers.pyomo_backend import BuildEstimate, Pyomo

    est = BuildEstimate(build_s=1.0, load_s=2.0, stop_s=0.1, megabytes=10.0)
    no_set_instance = object()
    assert Pyomo._load(no_set_instance, None, est, build_s=0.5) == 2.0  # never less
    assert Pyomo._load(no_set_instance, None, est, build_s=3.0) == 6.0


@pytest.mark.parametrize("solver", ["appsi_highs", "scip_direct", "cbc"])
def test_every_pyomo_solver_has_a_costed_load_and_stop(osdec48, solver):
    """A solver without measured costs gets the costliest measured ones."""
    est = get_solver(f"pyomo:{solver}").build_estimate(osdec48)
    assert est.build_s > 0 and est.load_s > 0 and est.stop_s > 0 and est.megabytes > 0
    if solver == "cbc":
        known = [get_solver(f"pyomo:{s}").build_estimate(osdec48)
                 for s in ("appsi_highs", "scip_direct")]
        assert est.load_s >= max(k.load_s for k in known)
        assert est.stop_s >= max(k.stop_s for k in known)


@pytest.mark.slow  # the slow tier (-m slow): a long check, run by CI after the default run
@pytest.mark.parametrize("solver,slots", [("appsi_highs", 288), ("scip_direct", 96)])
def test_pyomo_builds_of_an_osdec_day_hold_the_limit(solver, slots, monkeypatch):
    """The issue's OSDEC day (288 slots) with HiGHS, and a 96-slot day with SCIP (whose load
    of the day's long capacity rows takes most of the time), at the shortest limit that
    starts the build: built, solved, within the limit."""
    import pyomo.environ  # noqa: F401

    shared_file("cloud/azure_v1_vmtable_derived/v1.dev.txt.gz")
    model = bench.osdec_day(slots=slots)
    calls = loaded_spy(monkeypatch)
    backend = f"pyomo:{solver}"
    limit = shortest_started_limit(backend, model)
    res, wall = timed(model, backend, limit=limit)
    assert "refused" not in res.extra and len(calls) == 1, res.extra
    assert wall <= limit + OVERSHOOT_S, (limit, wall, res.extra)
    first = hpcopt.solve(model, backend="osdec-greedy",
                         solver_options={"lp": False, "passes": 0}).objective
    assert certified_objective(model, res) >= first - 1e-6


# ------------------------------------------------------------------ memory cap
@pytest.mark.parametrize("backend", ["cpsat", "scip", "pyomo:appsi_highs"])
def test_a_memory_cap_below_the_build_is_refused_up_front(scas, backend):
    res = hpcopt.solve(scas, backend=backend, time_limit=30,
                       solver_options={"max_memory_mb": 1})
    assert res.limit == Limit.MEMORY and "max_memory_mb=1" in res.extra["refused"]
    assert res.status == Status.FEASIBLE and res.extra["greedy_fallback"]  # the greedy stands


def test_a_memory_cap_the_build_fits_lets_it_run(knapsack):
    res = hpcopt.solve(knapsack, backend="cpsat", time_limit=LIMIT,
                       solver_options={"max_memory_mb": 2000})
    assert "refused" not in res.extra and res.certified


def test_max_memory_mb_is_checked_for_every_backend(knapsack):
    for bad in (0, -1, "x", float("inf"), True):
        with pytest.raises(SolverOptionError, match="max_memory_mb"):
            hpcopt.solve(knapsack, backend="greedy", solver_options={"max_memory_mb": bad})


# ------------------------------------------------------------------ 2. the greedy floor
def test_osdec_greedy_never_returns_less_than_its_first_pass(osdec):
    """Under a limit far shorter than one pass, the pass still completes (it used to return
    the empty schedule, 0.0)."""
    first = hpcopt.solve(osdec, backend="osdec-greedy",
                         solver_options={"lp": False, "passes": 0})
    res = hpcopt.solve(osdec, backend="osdec-greedy", time_limit=0.001)
    assert res.objective >= first.objective > 0


def test_the_issue_knapsack_ortools_at_a_limit_beats_the_old_answer(knapsack):
    """OR-tools' branch and bound alone returned a quarter of greedy's value at the limit."""
    greedy = hpcopt.solve(knapsack, backend="greedy")
    res = hpcopt.solve(knapsack, backend="ortools", time_limit=LIMIT)
    assert res.objective >= greedy.objective
    assert res.bound >= res.objective  # a maximization's bound is above what it holds


def test_scip_without_a_dual_bound_reports_none_not_its_infinity(scas):
    """SCIP's dual bound is -1e20 until its root LP ends: no bound (inf), never that number."""
    res = hpcopt.solve(scas, backend="scip", time_limit=0.05,
                       solver_options={"formulation": "compact"})
    no_solver_infinity(res)
    assert res.certified


# ------------------------------------------------------------------ 3. pareto-exact
def test_pareto_exact_takes_a_300_job_two_objective_window():
    """Two objectives with integer burst buffer have no job limit: a 300-job window is solved
    (or stopped at the limit with a certified front), not refused."""
    model = bench.bbsched(300)
    res, wall = timed(model, "pareto-exact", limit=2.0)
    assert wall <= 2.0 + OVERSHOOT_S
    assert res.status in (Status.OPTIMAL, Status.FEASIBLE) and res.pareto
    assert res.extra["algorithm"] == "bitset"


@pytest.mark.parametrize("backend", ["pareto-exact", "nsga2", "bbsched-ga"])
def test_four_objective_window_within_limit(backend):
    """The four-objective front scan and the certification of a large front count too."""
    model = bench.bbsched(50, four=True)
    res, wall = timed(model, backend)
    assert wall <= LIMIT + OVERSHOOT_S
    assert res.status in (Status.OPTIMAL, Status.FEASIBLE) and res.pareto


def test_pareto_exact_states_refusal_names_the_true_reason():
    model = bench.bbsched(80)
    with pytest.raises(Exception, match=r"states algorithm \(algorithm 'states' was asked for\)"):
        hpcopt.solve(model, backend="pareto-exact", solver_options={"algorithm": "states"})
    rng = np.random.default_rng(0)
    from hpcopt.models.bbsched import BBSchedModel

    four = BBSchedModel(model.nodes, model.bb, rng.integers(0, 257, 80), free_bb=20000.0,
                        ssd_classes={128: 1000, 256: 1000}, objectives=4)
    with pytest.raises(Exception, match=r"four objectives\) takes windows of at most 62"):
        hpcopt.solve(four, backend="pareto-exact", time_limit=1)


# ------------------------------------------------------------------ SCIP's chatter
def test_ctrl_c_during_scip_keeps_stdout_json_lines(tmp_path):
    """SCIP prints "pressed CTRL-C ..." with C printf; with ``--out -`` it must not land among
    the rows on stdout, nor leak into hpcopt's own lines: hpcopt says it was interrupted."""
    import json
    import os
    import shutil
    import signal
    import subprocess
    import sys

    from .conftest import INSTANCES, default_signals
    from .test_batch_signals import hard_knapsack

    shutil.copy(INSTANCES / "knapsack" / "ks1_tiny_5.json", tmp_path / "a.json")
    hard_knapsack(tmp_path / "b.json", n=2000)
    proc = subprocess.Popen(
        [sys.executable, "-m", "hpcopt.cli", "solve", "a.json", "b.json", "--backend", "scip",
         "--out", "-", "--no-progress"], cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=default_signals,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    first = proc.stdout.readline()  # a.json's row: b's SCIP search starts now
    time.sleep(2.0)
    proc.send_signal(signal.SIGINT)
    rest, stderr = proc.communicate(timeout=120)

    def strict(line):
        return json.loads(line, parse_constant=lambda name: pytest.fail(f"not JSON: {name}"))

    rows = [strict(line) for line in (first + rest).splitlines()]
    assert [r["file"] for r in rows] == ["a.json", "b.json"]
    assert rows[1]["termination"] == "interrupted"
    assert proc.returncode == 130, stderr
    assert "pressed CTRL-C" not in stderr and "interrupted by SIGINT" in stderr


def test_dp_tables_are_capped_by_max_memory_mb(knapsack):
    small = bench.knapsack(40, 1)
    assert hpcopt.solve(small, backend="dp").status == Status.OPTIMAL
    res = hpcopt.solve(small, backend="dp", solver_options={"max_memory_mb": 1e-4})
    assert res.limit == Limit.MEMORY and res.certified


def test_ctrl_c_inside_a_backend_is_an_interrupt_limit_with_the_greedy(knapsack, monkeypatch):
    """A KeyboardInterrupt the backend does not catch itself (HiGHS, the Python backends)."""
    from hpcopt.solvers.ortools_backends import OrtoolsKnapsack

    def interrupted(self, model, opts):
        raise KeyboardInterrupt

    monkeypatch.setattr(OrtoolsKnapsack, "_solve", interrupted)
    res = hpcopt.solve(knapsack, backend="ortools", time_limit=LIMIT)
    assert res.limit == Limit.INTERRUPT and res.termination.value == "interrupted"
    assert res.decision == hpcopt.solve(knapsack, backend="greedy").decision


def test_cli_max_memory_mb_reaches_every_solve(scas, tmp_path):
    """``hpcopt solve --max-memory-mb``: a cap below the build is refused in the row (limit
    MEMORY, the greedy answer), one the build fits changes nothing."""
    import json

    from hpcopt.cli import main
    from hpcopt.instances import save_instance

    path = tmp_path / "scas400.json"
    save_instance(path, scas, "scas400")
    rows = {}
    for cap in ("1", "8000"):
        out = tmp_path / f"rows{cap}.jsonl"
        assert main(["solve", str(path), "--backend", "cpsat", "--time-limit", "2",
                     "--max-memory-mb", cap, "--out", str(out), "--no-progress"]) == 0
        rows[cap] = json.loads(out.read_text().splitlines()[0])
    assert rows["1"]["limit"] == "MEMORY" and rows["1"]["status"] == "FEASIBLE"
    assert rows["8000"]["limit"] != "MEMORY" and rows["8000"]["certified"]
    with pytest.raises(SystemExit) as exit_:
        main(["solve", str(path), "--max-memory-mb", "0"])
    assert exit_.value.code == 2


@pytest.mark.parametrize("backend", ["cpsat", "scip"])
def test_anytime_mip_answers_at_least_the_heuristic_in_the_same_limit(osdec, backend):
    """At a short limit the OSDEC MIPs answered below osdec-greedy's answer in the same time
    (an 11,888-job day at 2 s: scip 257,448, cpsat 257,448, osdec-greedy 258,030): the greedy
    start is now osdec-greedy itself, run as it would be in that limit, and the solver gets
    what it leaves; the answer is never below it, and says when it is the heuristic's."""
    limit = 3.0
    heuristic = hpcopt.solve(osdec, backend="osdec-greedy", time_limit=limit)
    res, wall = timed(osdec, backend, limit=limit)
    assert wall <= limit + OVERSHOOT_S
    assert res.objective >= heuristic.objective - 1e-6
    assert res.objective > heuristic.objective or res.extra.get("greedy_fallback") or \
        res.extra.get("refused")


def _slowed(monkeypatch, seconds: float) -> None:
    """A loaded machine, as the OSDEC heuristic sees it: each start it weighs takes
    ``seconds`` longer."""
    from hpcopt.solvers import osdec_greedy

    gains = osdec_greedy._Profile.gains

    def slow(self, i):
        time.sleep(seconds)
        return gains(self, i)

    monkeypatch.setattr(osdec_greedy._Profile, "gains", slow)


@pytest.mark.parametrize("limit", [1e-3, 0.1])
def test_the_heuristic_at_a_limit_is_the_floor_also_on_a_loaded_machine(monkeypatch, limit):
    """osdec-greedy's work in a limit is fixed by the limit, not by the clock: on a machine
    three times slower it returns the same schedule; and every MIP backend, its start run in
    the same limit on that slower machine, answers no less (a day at 2 s on a loaded 2-core
    machine: scip 511,426 and pyomo:appsi_highs 510,212 against osdec-greedy's 511,633)."""
    model = hpcopt.load_instance("osdec/quarter_day_72slots_150jobs").model
    idle = hpcopt.solve(model, backend="osdec-greedy", time_limit=limit)
    assert idle.certified and idle.objective > 0
    _slowed(monkeypatch, 2e-4)  # a pass over the 150 jobs: about 3x its time here
    loaded = hpcopt.solve(model, backend="osdec-greedy", time_limit=limit)
    assert loaded.decision == idle.decision and loaded.limit == idle.limit
    for backend in ("cpsat", "scip", "pyomo:appsi_highs"):
        res = hpcopt.solve(model, backend=backend, time_limit=limit)
        assert res.certified and res.objective >= idle.objective - 1e-9, backend


def test_the_limit_buys_whole_local_search_passes():
    """The passes a limit buys, by the estimates: none at a tiny limit (the first complete
    schedule, limit TIME), all of them (to the end of the search) without a limit."""
    from hpcopt.solvers.osdec_greedy import greedy_schedule

    model = hpcopt.load_instance("osdec/quarter_day_72slots_150jobs").model
    first, done_first, _ = greedy_schedule(model, passes=0, lp=False)
    tiny, done_tiny, _ = greedy_schedule(model, deadline=time.perf_counter() + 1e-3,
                                         limit=1e-3)
    full, done_full, _ = greedy_schedule(model)
    assert tiny == first and not done_tiny and done_first and done_full
    assert model.evaluate(full).objective >= model.evaluate(tiny).objective


@pytest.mark.slow  # two 4 s solves after the window's SCAS optimum: 14 s
def test_nsa_refused_for_time_answers_what_sa_starts_from(scas):
    """The DCAS greedy start is the better of the sequential placement and the SCAS optimum
    (what ``sa`` searches from), so ``nsa``, refused when torch cannot load in time, is not
    left with the sequential placement."""
    from hpcopt.models.dcas import DCASModel
    from hpcopt.solvers import registry

    dcas = DCASModel(scas.topology, scas.idle_nodes, scas.sizes)
    sa = hpcopt.solve(dcas, backend="sa", solver_options={"t_max": 0})
    seq = hpcopt.solve(dcas, backend="sequential")
    start, _ = registry._GREEDY["dcas"][0](dcas, None, 0)
    assert dcas.evaluate(start).objective == pytest.approx(sa.extra["start_cost"])
    assert sa.extra["start_cost"] < seq.objective
    # refused (torch loads in about 3 s, 2.5x that is over the limit) or run: never above
    # what sa starts from in the same limit
    same = hpcopt.solve(dcas, backend="sa", time_limit=4.0)
    res = hpcopt.solve(dcas, backend="nsa", time_limit=4.0)
    # on a loaded machine the greedy start may use the whole limit: then ``same`` is that start
    assert res.objective <= same.extra.get("start_cost", same.objective) + 1e-6
    if "refused" in res.extra:
        assert res.extra["greedy_fallback"]
