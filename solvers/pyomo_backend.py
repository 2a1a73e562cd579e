"""Generic ``pyomo:<solver>`` backends: any pyomo solver on the model's ``to_pyomo()`` form.

``pyomo:appsi_highs`` (HiGHS through highspy) and ``pyomo:scip_direct`` (SCIP through
PySCIPOpt) run in-process with the default install; ``pyomo:cbc``, ``pyomo:glpk``,
``pyomo:gurobi`` ... work when the user has them.  The decision is read from the pyomo
model's indexed variable ``x`` (one entry per item, in item order).
"""

from __future__ import annotations

import io
import math
import sys
import time
from functools import cached_property
from typing import NamedTuple

from hpcopt.errors import SolverUnavailableError, closest
from hpcopt.models.algebraic import pyomo_values, to_pyomo
from hpcopt.result import Termination

from .mip import Answer, MipBackend, Session, as_held
from .registry import Footprint, SolveOptions, register
from .scip_output import stdout_silenced

# Build estimates, fitted to ``benchmarks/pyomo_build.py`` (SCAS windows in both formulations,
# OSDEC days of 96 and 288 slots, a knapsack; benchmarks/README "Limits"): 1.7 to 3.4 times
# the builds measured on an idle machine.  The pyomo model (``to_pyomo``), any solver: seconds per
# nonzero and per row.  Importing pyomo the first time in a process: ~0.7 s.
PYOMO_BUILD_S = (4e-6, 6e-6)
PYOMO_IMPORT_SECONDS = 1.5


class LoadCosts(NamedTuple):
    """A solver's load of a built pyomo model, and how late it stops, per unit of size."""

    s_per_nz: float
    s_per_row: float
    s: float  # once: creating the solver's model
    mb_per_nz: float  # the megabytes cover the pyomo model too
    mb_per_row: float
    mb: float  # once: the solver's library
    stop_s_per_nz: float  # how far past its own time limit the solver may run
    read_s_per_var: float  # reading its answer back into the pyomo model


# By solver and model kind ("*": any kind).  appsi's HiGHS pays per row; PySCIPOpt
# (``scip_direct``) adds a row's terms one by one, so a long row costs more per term: 3.6e-5 s
# a term in the OSDEC day's capacity rows (~2,800 terms each), 6.1e-6 s in SCAS's compact
# rows (~640).
# The solvers check their clocks between phases that can be seconds apart on these models
# (``pyomo_build.py --late``): HiGHS stopped up to 6.8 s late on the OSDEC day (880k
# nonzeros) and 4.3 s on the 700-node SCAS window; SCIP up to 11.6 s on the OSDEC day (its
# presolve of the unreduced model) and within 0.06 s on the SCAS window.  A solver not
# listed gets the costliest coefficient of the listed ones.
PYOMO_LOAD = {
    "appsi_highs": {"*": LoadCosts(6e-6, 5e-5, 0.05, 3.5e-4, 1.0e-3, 10.0, 1e-5, 5e-6)},
    "scip_direct": {"osdec": LoadCosts(6e-5, 1.5e-5, 0.1, 6e-4, 1.5e-3, 30.0, 1.5e-5, 5e-6),
                    "*": LoadCosts(1e-5, 1.5e-5, 0.1, 5e-4, 1.5e-3, 30.0, 5e-7, 5e-6)},
}


class BuildEstimate(NamedTuple):
    """A pyomo solve's estimated seconds: model build, solver load, and the time kept off the
    solver's limit for its late stop and the answer's readback; and the build's megabytes."""

    build_s: float
    load_s: float
    stop_s: float
    megabytes: float


def loads_first(opt) -> bool:
    """Whether the pyomo solver takes the model before its solve (appsi's ``set_instance``),
    so that its clock starts after the load; other interfaces load inside ``solve``."""
    return hasattr(opt, "set_instance") and hasattr(opt, "update_config")


def load_costs(solver: str, kind: str) -> LoadCosts:
    """``PYOMO_LOAD``'s coefficients for ``solver`` on a ``kind`` model."""
    if solver in PYOMO_LOAD:
        table = PYOMO_LOAD[solver]
        return table.get(kind, table["*"])
    known = [t.get(kind, t["*"]) for t in PYOMO_LOAD.values()]
    return LoadCosts(*(max(costs) for costs in zip(*known)))


_HIGHS = ("time_limit", "random_seed", "mip_rel_gap")
_SCIP = ("limits/time", "randomization/randomseedshift", "limits/gap")
_CBC = ("sec", "randomCbcSeed", "ratioGap")
_GUROBI = ("TimeLimit", "Seed", "MIPGap")
# solver name -> (time-limit, seed, relative-gap option) in the solver's own vocabulary; the
# gap is set to 0 so that "optimal" means proven (HiGHS stops at a 1e-4 gap by default)
OPTION_NAMES: dict[str, tuple[str | None, str | None, str | None]] = {
    "appsi_highs": _HIGHS, "highs": _HIGHS,
    "scip_direct": _SCIP, "scip_persistent": _SCIP, "scip": _SCIP,
    "cbc": _CBC, "appsi_cbc": _CBC,
    "glpk": ("tmlim", None, "mipgap"),
    "gurobi": _GUROBI, "gurobi_direct": _GUROBI, "gurobi_persistent": _GUROBI,
    "appsi_gurobi": _GUROBI,
}
# solver name -> options that keep its log short.  pyomo's ``scip_direct`` (6.10 and later)
# captures SCIP's log through a pipe that a thread drains while PySCIPOpt's ``optimize`` holds
# the GIL: a log longer than the pipe's buffer (a 96-slot OSDEC day's presolve) blocks SCIP on
# its write for ever.  At verbosity 0 SCIP writes only errors.  A user's own value wins.
QUIET: dict[str, dict] = {name: {"display/verblevel": 0}
                          for name in ("scip_direct", "scip_persistent", "scip")}


def termination_map() -> dict:
    """pyomo ``TerminationCondition`` -> ``Termination``."""
    from pyomo.opt import TerminationCondition as TC  # lazy: pyomo takes ~0.7 s to import

    return {
        TC.optimal: Termination.OPTIMAL,
        TC.globallyOptimal: Termination.OPTIMAL,
        TC.locallyOptimal: Termination.FINISHED,
        TC.feasible: Termination.FINISHED,
        TC.maxTimeLimit: Termination.TIME_LIMIT,
        TC.maxIterations: Termination.ITERATION_LIMIT,
        TC.maxEvaluations: Termination.EVALUATION_LIMIT,
        TC.minFunctionValue: Termination.FINISHED,
        TC.minStepLength: Termination.FINISHED,
        TC.other: Termination.FINISHED,
        TC.infeasible: Termination.INFEASIBLE,
        TC.invalidProblem: Termination.ERROR,
        TC.unbounded: Termination.UNBOUNDED,
        TC.infeasibleOrUnbounded: Termination.INFEASIBLE_OR_UNBOUNDED,
        TC.userInterrupt: Termination.INTERRUPTED,
        TC.resourceInterrupt: Termination.INTERRUPTED,
        TC.intermediateNonInteger: Termination.UNKNOWN,
        TC.noSolution: Termination.UNKNOWN,
        TC.unknown: Termination.UNKNOWN,
        TC.licensingProblems: Termination.ERROR,
        TC.solverFailure: Termination.ERROR,
        TC.internalSolverError: Termination.ERROR,
        TC.error: Termination.ERROR,
    }


@register("pyomo", family=True)
class Pyomo(MipBackend):
    """Any pyomo solver on a model's algebraic form (``to_pyomo``): ``pyomo:<solver>``.

    Supported models: those with an algebraic form (``hpcopt.models.algebraic``: ``scas``,
    the paper's formulation unless ``solver_options`` say ``{"formulation": "compact"}``;
    ``osdec``) or a pyomo procedure (``knapsack``, ``hpcopt.solvers.knapsack_mip``); the
    greedy start is not handed to the solver.  ``time_limit``, ``seed`` and a
    zero relative MIP gap go to the solver under its own option names (``OPTION_NAMES``; a
    solver not listed gets none of them, which ``Result.log`` says, and its "optimal" is then
    within its default gap);
    ``solver_options`` other than the form's options are set on ``opt.options`` unchecked,
    after those.  Native statuses are pyomo's ``TerminationCondition`` values, mapped by
    ``termination_map()``::

        optimal/globallyOptimal -> optimal; feasible/locallyOptimal/other -> finished;
        maxTimeLimit -> time_limit; maxIterations -> iteration_limit;
        maxEvaluations -> evaluation_limit; infeasible -> infeasible;
        infeasibleOrUnbounded -> infeasible_or_unbounded; unbounded -> unbounded;
        userInterrupt/resourceInterrupt -> interrupted;
        noSolution/intermediateNonInteger/unknown -> unknown; errors -> error

    The loaded solution is the answer's decision; optimal or finished without one is
    ``unknown``.  The bound is
    ``results.problem.upper_bound`` (lower for minimization) when finite.

    Pyomo's model build and the solver's load of it cannot be stopped, so ``footprint``
    estimates them from the model's size (``PYOMO_BUILD_S``, ``PYOMO_LOAD``): a build that
    cannot fit the time left or ``max_memory_mb`` is not started, and the model's greedy
    decision is returned.  The solver's own time limit is what the build and load leave
    (appsi solvers load before it starts; other interfaces load inside ``solve``, and their
    estimated load is taken off), less the time the solver may run past it.
    """

    doc = "any pyomo solver on to_pyomo() (appsi_highs, scip_direct, cbc, gurobi, ...)"
    FAMILY = "pyomo"
    REQUIRED_MODULES = ("pyomo",)
    INSTALL_HINT = "pip install pyomo"
    OPTIONS = ("formulation", "reduce", "tie_break")

    def check_ready(self) -> None:
        super().check_ready()
        self._solver()

    def build_estimate(self, model, solver_options: dict | None = None) -> BuildEstimate:
        """Seconds of the pyomo build and of the solver's load, and their megabytes, from
        the nonzeros and rows of the form ``solver_options`` choose (``PYOMO_BUILD_S``,
        ``PYOMO_LOAD``)."""
        vars_, rows, nz = self.algebraic_size(model, solver_options or {})
        c = load_costs(self.arg, model.kind)
        return BuildEstimate(nz * PYOMO_BUILD_S[0] + rows * PYOMO_BUILD_S[1],
                             c.s + nz * c.s_per_nz + rows * c.s_per_row,
                             nz * c.stop_s_per_nz + vars_ * c.read_s_per_var,
                             c.mb + nz * c.mb_per_nz + rows * c.mb_per_row)

    def footprint(self, model, opts: SolveOptions) -> Footprint | None:
        """Import, model build and solver load, by the formulation's nonzeros and rows."""
        est = self.build_estimate(model, opts.solver_options)
        seconds = est.build_s + est.load_s
        if "pyomo.environ" not in sys.modules:
            seconds += PYOMO_IMPORT_SECONDS
        return Footprint(seconds, est.megabytes)

    def _give_time(self, opt, opts: SolveOptions, held: float) -> bool:
        """Set the solver's own time limit to what is left of the solve's, less ``held``
        seconds (a load still to come, the solver's late stop); False when nothing is
        left.  Without a time limit, nothing is set."""
        left = opts.left()
        if left is None:
            return True
        if left - held <= 0:
            return False
        time_name = OPTION_NAMES.get(self.arg, (None,))[0]
        if time_name is not None:
            opt.options[time_name] = left - held
        return True

    @staticmethod
    def _load(opt, pm, est: BuildEstimate, build_s: float) -> float:
        """Hand ``pm`` to the solver now where its interface can (appsi's ``set_instance``),
        so that its time limit starts after the load; otherwise the load happens inside
        ``solve``, before the solver's clock starts: its estimate, scaled up by how much
        longer than estimated the build took (a busy machine), is returned, to be taken off
        the solver's time limit."""
        if loads_first(opt):
            opt.set_instance(pm)
            for check in opt.update_config:  # nothing changes before the solve: no rescan
                setattr(opt.update_config, check, False)
            return 0.0
        return est.load_s * max(1.0, build_s / max(est.build_s, 1e-9))

    def _run(self, opt, pm):
        """``opt.solve``, with SCIP's C-level output (its Ctrl-C line) kept off stdout."""
        if self.arg.startswith("scip"):
            with stdout_silenced():
                return opt.solve(pm, load_solutions=False)
        return opt.solve(pm, load_solutions=False)

    def _solver(self):
        import pyomo.environ  # noqa: F401  (lazy, see termination_map; registers the plugins)
        from pyomo.opt import SolverFactory

        name = self.arg
        if name not in SolverFactory:
            raise SolverUnavailableError(
                f"backend {self.full_name!r}: pyomo has no solver named {name!r}."
                + closest(name, [s for s in SolverFactory if not s.startswith("_")])
            )
        opt = SolverFactory(name)
        if not opt.available(exception_flag=False):
            raise SolverUnavailableError(
                f"backend {self.full_name!r}: pyomo solver {name!r} is not installed or not "
                "licensed here; try 'pyomo:appsi_highs' or 'pyomo:scip_direct'"
            )
        return opt

    def _common_options(self, opt, opts: SolveOptions) -> list[str]:
        """Time limit, seed and a zero gap under the solver's own names (``OPTION_NAMES``),
        and a short log (``QUIET``; the caller's native options come after); returns notes
        for the log on what could not be passed."""
        notes = []
        opt.options.update(QUIET.get(self.arg, {}))
        time_name, seed_name, gap_name = OPTION_NAMES.get(self.arg, (None, None, None))
        for given, option, what in ((opts.time_limit, time_name, "time_limit"),
                                    (opts.seed, seed_name, "seed"), (0.0, gap_name, "gap")):
            if given is None:
                continue
            if option is None:
                notes.append(f"{what}={given} not passed: option name for {self.arg!r} unknown")
            else:
                opt.options[option] = given
        return notes

    def session(self, model, form, opts: SolveOptions, native: dict, start) -> PyomoSession:
        return PyomoSession(self, model, form, opts, native)


class PyomoSession(Session):
    """A form as a pyomo model (``to_pyomo``) and the solver it is handed to.  Each solve
    gets what the solve's time limit leaves less the solver's late stop and, for interfaces
    that load inside ``solve`` (again at every solve), the estimated load; changes are
    pyomo components (a ``cuts`` list, an objective ``lex``, fixed variables) that an appsi
    solver picks up on its next solve."""

    def __init__(self, backend: Pyomo, model, form, opts: SolveOptions, native: dict) -> None:
        import pyomo.environ as pyo  # lazy: see termination_map

        self.backend, self.form, self.pyo = backend, form, pyo
        self.opt = opt = backend._solver()
        self.notes = backend._common_options(opt, opts)
        for key, val in native.items():
            opt.options[key] = val
        est = backend.build_estimate(model, opts.solver_options)
        t0 = time.perf_counter()
        self.pm = to_pyomo(form)
        update = getattr(opt, "update_config", None)
        self.checks = {} if update is None else {k: getattr(update, k) for k in update}
        self.load_s = backend._load(opt, self.pm, est, time.perf_counter() - t0)
        self.stop_s = est.stop_s

    @cached_property
    def flat(self) -> list:
        """The pyomo variables in form order (built at the first change: a single solve of
        an 81k-variable OSDEC day would pay 36 ms for it)."""
        return [self.pm.component(b.name)[k] for b in self.form.variables for k in b.keys]

    def solve(self, opts: SolveOptions) -> Answer:
        from pyomo.common.log import LoggingIntercept  # lazy: see termination_map

        backend, opt, pm = self.backend, self.opt, self.pm
        if not backend._give_time(opt, opts, self.load_s + self.stop_s):
            return Answer(Termination.TIME_LIMIT,
                          log="no time left to solve after the build")
        results = backend._run(opt, pm)
        condition = results.solver.termination_condition
        termination = termination_map().get(condition, Termination.ERROR)
        values = None
        if (not termination.rules_out_solution and termination != Termination.UNKNOWN
                and len(results.solution) > 0):
            with LoggingIntercept(io.StringIO()) as captured:  # "aborted status" on limits
                pm.solutions.load_from(results)
            self.notes.append(captured.getvalue().strip())
            values = pyomo_values(self.form, pm)
        side = results.problem.upper_bound if self.form.sense == "max" \
            else results.problem.lower_bound
        bound = float(side) if side is not None and math.isfinite(float(side)) else None
        self.notes.append(f"termination_condition={condition}")
        log, self.notes = "\n".join(n for n in self.notes if n), []  # this solve's notes
        return Answer(as_held(termination, values), values, bound, str(condition), log=log,
                      extra={"termination_condition": str(condition)})

    def _change(self) -> None:
        """appsi solvers were told nothing would change (``Pyomo._load``): their checks for
        changes are back on."""
        for check, value in self.checks.items():
            setattr(self.opt.update_config, check, value)

    def add_row(self, index, coefs, sense, rhs) -> None:
        self._change()
        if not hasattr(self.pm, "cuts"):
            self.pm.cuts = self.pyo.ConstraintList()
        body = sum(c * self.flat[i] for i, c in zip(index, coefs))
        self.pm.cuts.add(body <= rhs if sense == "<=" else body >= rhs)

    def set_objective(self, index, coefs) -> None:
        self._change()
        pyo, pm = self.pyo, self.pm
        pm.obj.deactivate()
        if hasattr(pm, "lex"):
            pm.del_component(pm.lex)
        pm.lex = pyo.Objective(expr=sum(c * self.flat[i] for i, c in zip(index, coefs)),
                               sense=pyo.maximize if self.form.sense == "max" else pyo.minimize)

    def fix(self, index, value) -> None:
        self._change()
        self.flat[index].fix(value)
