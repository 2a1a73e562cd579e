"""Generic ``pyomo:<solver>`` backends: any pyomo solver on the model's ``to_pyomo()`` form.

``pyomo:appsi_highs`` (HiGHS through highspy) and ``pyomo:scip_direct`` (SCIP through
PySCIPOpt) run in-process with the default install; ``pyomo:cbc``, ``pyomo:glpk``,
``pyomo:gurobi`` ... work when the user has them.  The decision is read from the pyomo
model's indexed variable ``x`` (one entry per item, in item order).
"""

from __future__ import annotations

import io
import math

from hpcopt.errors import SolverUnavailableError, closest
from hpcopt.result import Limit, Status

from .registry import Outcome, SolveOptions, Solver, register

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


def _termination_map() -> dict:
    """pyomo ``TerminationCondition`` -> (status with an incumbent, limit)."""
    from pyomo.opt import TerminationCondition as TC

    return {
        TC.optimal: (Status.OPTIMAL, None),
        TC.globallyOptimal: (Status.OPTIMAL, None),
        TC.locallyOptimal: (Status.FEASIBLE, None),
        TC.feasible: (Status.FEASIBLE, None),
        TC.maxTimeLimit: (Status.FEASIBLE, Limit.TIME),
        TC.maxIterations: (Status.FEASIBLE, Limit.ITERATION),
        TC.maxEvaluations: (Status.FEASIBLE, Limit.EVALUATION),
        TC.minFunctionValue: (Status.FEASIBLE, None),
        TC.minStepLength: (Status.FEASIBLE, None),
        TC.other: (Status.FEASIBLE, None),
        TC.infeasible: (Status.INFEASIBLE, None),
        TC.invalidProblem: (Status.ERROR, None),
        TC.unbounded: (Status.UNBOUNDED, None),
        TC.infeasibleOrUnbounded: (Status.INFEASIBLE_OR_UNBOUNDED, None),
        TC.userInterrupt: (Status.FEASIBLE, Limit.INTERRUPT),
        TC.resourceInterrupt: (Status.FEASIBLE, Limit.INTERRUPT),
        TC.intermediateNonInteger: (Status.NO_SOLUTION, None),
        TC.noSolution: (Status.NO_SOLUTION, None),
        TC.unknown: (Status.NO_SOLUTION, None),
        TC.licensingProblems: (Status.ERROR, None),
        TC.solverFailure: (Status.ERROR, None),
        TC.internalSolverError: (Status.ERROR, None),
        TC.error: (Status.ERROR, None),
    }


@register("pyomo", family=True)
class Pyomo(Solver):
    """Any pyomo solver on ``model.to_pyomo()``: ``pyomo:<solver>``.

    Supported models: ``knapsack``, ``scas`` (the paper's formulation; ``solver_options``
    ``{"formulation": "compact"}`` for the compact one).  ``time_limit``, ``seed`` and a
    zero relative MIP gap go to the solver under its own option names (``OPTION_NAMES``; a
    solver not listed gets none of them, which ``Result.log`` says, and its "optimal" is then
    within its default gap);
    ``solver_options`` are set on ``opt.options`` unchecked, after those.  Native statuses are
    pyomo's ``TerminationCondition`` values, mapped by ``_termination_map()``::

        optimal/globallyOptimal -> OPTIMAL; feasible/locallyOptimal/other -> FEASIBLE;
        maxTimeLimit -> FEASIBLE + TIME; maxIterations -> FEASIBLE + ITERATION;
        maxEvaluations -> FEASIBLE + EVALUATION; infeasible -> INFEASIBLE;
        infeasibleOrUnbounded -> INFEASIBLE_OR_UNBOUNDED; unbounded -> UNBOUNDED;
        userInterrupt/resourceInterrupt -> FEASIBLE + INTERRUPT (NO_SOLUTION without one);
        noSolution/intermediateNonInteger/unknown -> NO_SOLUTION; errors -> ERROR

    FEASIBLE without a loaded solution becomes NO_SOLUTION.  The bound is
    ``results.problem.upper_bound`` (lower for minimization) when finite.
    """

    doc = "any pyomo solver on to_pyomo() (appsi_highs, scip_direct, cbc, gurobi, ...)"
    SUPPORTED_MODELS = ("knapsack", "scas")
    REQUIRED_MODULES = ("pyomo",)
    INSTALL_HINT = "pip install pyomo"
    EXACT = True
    OPTIONS = ("formulation",)
    NATIVE_OPTIONS = True  # options of the pyomo solver

    def _solver(self):
        import pyomo.environ  # noqa: F401  (registers the solver plugins)
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

    def _solve(self, model, opts: SolveOptions) -> Outcome:
        from pyomo.common.log import LoggingIntercept

        opt = self._solver()
        notes = []
        time_name, seed_name, gap_name = OPTION_NAMES.get(self.arg, (None, None, None))
        for given, option, what in ((opts.time_limit, time_name, "time_limit"),
                                    (opts.seed, seed_name, "seed"), (0.0, gap_name, "gap")):
            if given is None:
                continue
            if option is None:
                notes.append(f"{what}={given} not passed: option name for {self.arg!r} unknown")
            else:
                opt.options[option] = given
        options = dict(opts.solver_options)
        form = options.pop("formulation", None)
        for key, val in options.items():
            opt.options[key] = val
        pm = model.to_pyomo() if form is None else model.to_pyomo(form)
        results = opt.solve(pm, load_solutions=False)
        condition = results.solver.termination_condition
        status, limit = _termination_map().get(condition, (Status.ERROR, None))
        decision = None
        if status.has_solution and len(results.solution) > 0:
            with LoggingIntercept(io.StringIO()) as captured:  # "aborted status" on limits
                pm.solutions.load_from(results)
            notes.append(captured.getvalue().strip())
            decision = model.pyomo_decision(pm)
        side = results.problem.upper_bound if model.sense == "max" else results.problem.lower_bound
        bound = float(side) if side is not None and math.isfinite(float(side)) else None
        notes.append(f"termination_condition={condition}")
        return Outcome(status, decision, bound=bound, limit=limit,
                       log="\n".join(n for n in notes if n),
                       extra={"termination_condition": str(condition)})
