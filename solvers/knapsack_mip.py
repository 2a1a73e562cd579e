"""Knapsack on the generic MIP backends: one solve loop that makes the answer exact and
canonical, on any backend's ``Session`` (SCIP, CP-SAT, pyomo).

A knapsack's algebraic form (``hpcopt.models.knapsack.knapsack_form``, on the reduced data) is
one solve; the knapsack promises more, so the MIP backends run this loop instead (registered in
``hpcopt.solvers.mip``'s procedure table for each family):

* exact capacities: SCIP and HiGHS check rows with a relative tolerance, so an answer that
  overruns a capacity by a few units (``model.evaluate`` checks exactly) gets a cover cut
  ``sum_{i in S} x_i <= |S|-1`` (valid: the set S does not fit) and the solver runs again;
  CP-SAT solves the integer-scaled data (``KnapsackModel.reduced``) and never needs one;
* the canonical optimum (``hpcopt.models.knapsack``): by ``canonical_tie_break`` (the dp on
  integer data, checked against the solver's optimal value: ``solver_options={"tie_break":
  "dp"}``, the default), otherwise, or with ``"tie_break": "resolve"``, by re-solves: the
  optimal value is kept (``>= z - 1/2`` for integer values, at the solver's tightest
  tolerance; an answer below ``z`` is cut off) and the 0-1 vector maximized
  lexicographically, ``LEX_CHUNK`` items per solve (weights ``2**(c-1-j)``: integer
  objectives below ``2**24``, which a solver with tolerances still compares exactly), each
  chunk then fixed.  A solver of exact integers (CP-SAT) takes the tie-break terms on the
  values instead (``ReducedKnapsack.solve_canonical``, as ``ortools`` does, on the session):
  one solve for a window of tens of jobs,
  where keeping the value and re-solving took 1.9x as long (median, ``benchmarks/
  knapsack_backends.py --tie-break resolve``).

The time limit covers every solve.  Their cost is measured by
``benchmarks/knapsack_backends.py`` (benchmarks/README, "Knapsack backends").
"""

from __future__ import annotations

import time

import numpy as np

from hpcopt.result import Termination

from .knapsack_dp import canonical_tie_break, tie_break_option
from .mip import MIP_OPTIONS, Answer, procedure
from .registry import Outcome, SolveOptions

LEX_CHUNK = 24  # items per canonical tie-break solve: objectives below 2**24, exact in SCIP


def knapsack(backend, model, opts: SolveOptions) -> Outcome:
    """The knapsack ``model``'s canonical optimum on MIP ``backend`` (module doc), or the
    best answer its limits allow."""
    integer = backend.INTEGER_DATA
    red = model.reduced(integer_weights=integer, integer_values=integer,
                        backend=backend.full_name)
    if red.size == 0:
        return Outcome(Termination.OPTIMAL, red.lift([]))
    mode = tie_break_option(opts.solver_options, backend.full_name)
    native = {k: v for k, v in opts.solver_options.items()
              if k not in backend.OPTIONS and k not in MIP_OPTIONS}
    start = backend._start(model, opts)
    form = red.form()
    session = backend.session(model, form, opts, native,
                              None if start is None else form.encode(
                                  [start[i] for i in red.items.tolist()]))
    values = red.values.astype(float)
    logs: list[str] = []

    def run(floor: float | None = None) -> tuple[Answer, np.ndarray | None]:
        """Solve until ``model.evaluate`` accepts the answer (worth ``floor`` at least):
        the last answer and its 0-1 vector over the reduced items (None without one)."""
        while True:
            answer = session.solve(opts)
            logs.append(answer.log)
            if answer.values is None:
                return answer, None
            chosen = np.asarray(answer.values) > 0.5
            fits = model.evaluate(red.lift(chosen)).feasible
            if fits and (floor is None or values[chosen].sum() >= floor):
                return answer, chosen
            if opts.deadline is not None and time.perf_counter() > opts.deadline:
                return Answer(Termination.TIME_LIMIT), None
            taken = np.flatnonzero(chosen).tolist()
            if fits:  # below the optimum (tolerance): exclude exactly this vector
                session.add_row(range(red.size), np.where(chosen, 1.0, -1.0), "<=",
                                len(taken) - 1)
            else:  # over a capacity: no superset of this item set fits either
                session.add_row(taken, [1.0] * len(taken), "<=", len(taken) - 1)

    def outcome(termination, decision, **kw) -> Outcome:
        return Outcome(termination, decision, log="\n".join(line for line in logs if line), **kw)

    def stopped(answer, chosen, bound) -> Outcome:
        """The outcome of a solve that proved nothing more (a limit, or no answer)."""
        termination = answer.termination
        if termination == Termination.OPTIMAL:  # proven for one solve, not the whole answer
            termination = Termination.UNKNOWN if chosen is None else Termination.FINISHED
        return outcome(termination, None if chosen is None else red.lift(chosen),
                       bound=None if chosen is None or bound is None else red.objective(bound),
                       extra={"native_status": answer.native, **answer.extra})

    if not (integer and mode == "resolve"):
        answer, chosen = run()
        if answer.termination != Termination.OPTIMAL or chosen is None:
            return stopped(answer, chosen, answer.bound)
        if mode == "dp":
            canonical = canonical_tie_break(model, red.lift(chosen), opts.deadline)
            if canonical is not None:
                return outcome(Termination.OPTIMAL, canonical, extra={
                    "native_status": answer.native, **answer.extra, "tie_break": "dp"})
    if integer:  # exact integers: the tie-break terms ride on the values, a few solves
        last: dict = {"fixed": 0, "found": None, "answer": None, "any": False}

        def solve(tied, _weights, _caps):
            """One of ``solve_canonical``'s solves on the session: the items before
            ``first`` are fixed at the values the previous solve chose for them."""
            first = red.size - len(tied)
            for j in range(last["fixed"], first):
                session.fix(j, float(last["found"][j]))
            last["fixed"] = first
            session.set_objective(range(first, red.size), tied)
            answer, found = run()
            last.update(answer=answer, found=found, any=last["any"] or found is not None)
            if found is None:
                return [False] * len(tied), False, None
            return found[first:], answer.termination == Termination.OPTIMAL, answer.bound

        chosen, proven, bound = red.solve_canonical(solve)
        answer = last["answer"]
        if not proven:
            return stopped(answer, chosen if last["any"] else None, bound)
        return outcome(Termination.OPTIMAL, red.lift(chosen), extra={
            "native_status": answer.native, **answer.extra, "tie_break": "resolve"})
    extra = {"native_status": answer.native, **answer.extra}
    best = float(values[chosen].sum())
    integral = bool((values == np.round(values)).all())
    session.tighten()
    session.add_row(range(red.size), values, ">=",
                    best - (0.5 if integral else 1e-9 * max(1.0, abs(best))))
    for first in range(0, red.size, LEX_CHUNK):
        chunk = list(range(first, min(first + LEX_CHUNK, red.size)))
        session.set_objective(chunk, [float(1 << (len(chunk) - 1 - j))
                                      for j in range(len(chunk))])
        answer, found = run(best if integral else None)  # float values: up to round-off
        if answer.termination != Termination.OPTIMAL or found is None:  # optimal, not yet
            return outcome(answer.termination if answer.termination.limit  # canonical
                           else Termination.TIME_LIMIT, red.lift(chosen),
                           bound=red.objective(best), extra=extra)
        chosen = found
        for j in chunk:
            session.fix(j, float(chosen[j]))
    return outcome(Termination.OPTIMAL, red.lift(chosen),
                   extra={**extra, "tie_break": "resolve"})


procedure("knapsack", "scip")(knapsack)
procedure("knapsack", "pyomo")(knapsack)
procedure("knapsack", "cpsat", sized=False)(knapsack)
