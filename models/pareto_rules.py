"""Decision rules: pick the one selection to run from a Pareto set.

A multi-objective backend returns a Pareto set; a scheduler must start one of its selections.
A rule is ``rule(model, points) -> index`` where ``points`` is a sequence of
``(decision, objectives)``.  Rules compare utilizations (objectives divided by the system
totals, ``model.utilization``), so that nodes and gigabytes are weighed on one scale.  Ties go
to the selection whose jobs sit nearest the window front (the 0-1 vector that is largest when
read front first), to preserve the base scheduler's order.

Built in (``RULES``):

- ``bbsched``: the paper's rule (section 3.2.4).  Start from the solution of maximum node use;
  replace it by another whose summed utilization gain over the other objectives is more than
  ``factor`` times its node-utilization loss, the largest gain winning.  ``factor`` is 2 for
  the two-objective form and 4 for the four-objective form (section 5), where the gains are
  burst-buffer utilization, SSD utilization and the reduction of wasted SSD (as a share of
  the total SSD, so that all terms are fractions of a capacity).
- ``weighted``: the largest weighted sum of utilizations (equal weights unless given).
- ``lexicographic``: the best in the first objective, then the second, ... (``order`` gives
  the objective indices; default 0, 1, ...).

``choose(model, points, rule)`` accepts a rule name, a ``(name, options)`` pair, or any
callable with the rule signature.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from hpcopt.errors import ModelError, closest


def _front_key(x) -> tuple[int, ...]:
    return tuple(int(v) for v in x)


def _best(points, scores) -> int:
    """Index of the highest score; ties to the front-most selection."""
    scores = np.asarray(scores, dtype=float)
    top = np.flatnonzero(scores >= scores.max() - 1e-12 * max(1.0, abs(scores.max())))
    return max(top.tolist(), key=lambda i: _front_key(points[i][0]))


def bbsched_rule(model, points, factor: float | None = None) -> int:
    """The paper's rule: max node use, traded for > ``factor`` x more of the rest."""
    U = model.utilization([p[1] for p in points])
    if factor is None:
        factor = 2.0 if U.shape[1] == 2 else 4.0
    ref = _best(points, U[:, 0])
    loss = U[ref, 0] - U[:, 0]
    gain = (U[:, 1:] - U[ref, 1:]).sum(axis=1)
    better = (gain > factor * loss + 1e-12) & (np.arange(len(points)) != ref)
    if not better.any():
        return ref
    cand = np.flatnonzero(better)
    return int(cand[_best([points[i] for i in cand], gain[cand])])


def weighted_rule(model, points, weights: Sequence[float] | None = None) -> int:
    """Largest weighted sum of utilizations (equal weights by default)."""
    U = model.utilization([p[1] for p in points])
    w = np.ones(U.shape[1]) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (U.shape[1],):
        raise ModelError(f"weighted rule: expected {U.shape[1]} weights, got {list(w)}")
    return _best(points, U @ w)


def lexicographic_rule(model, points, order: Sequence[int] | None = None) -> int:
    """Best in objective ``order[0]``, ties broken by ``order[1]``, ..., then front-most."""
    F = np.asarray([p[1] for p in points], dtype=float)
    order = list(range(F.shape[1])) if order is None else [int(k) for k in order]
    if any(k < 0 or k >= F.shape[1] for k in order):
        raise ModelError(f"lexicographic rule: objective indices must be in 0..{F.shape[1] - 1}"
                         f", got {order}")
    keyed = sorted(range(len(points)),
                   key=lambda i: (tuple(F[i, k] for k in order), _front_key(points[i][0])))
    return keyed[-1]


RULES: dict[str, Callable] = {
    "bbsched": bbsched_rule,
    "weighted": weighted_rule,
    "lexicographic": lexicographic_rule,
}


def rule_name(rule) -> str:
    """A printable name of a rule given as a name, ``(name, options)`` or callable."""
    if isinstance(rule, str):
        return rule
    if isinstance(rule, tuple):
        return str(rule[0])
    return getattr(rule, "__name__", type(rule).__name__)


def choose(model, points, rule="bbsched") -> int:
    """Index into ``points`` (``(decision, objectives)`` pairs) of the rule's pick."""
    if not points:
        raise ModelError("decision rule: the Pareto set is empty")
    options: dict = {}
    if isinstance(rule, tuple):
        rule, options = rule
    if isinstance(rule, str):
        try:
            fn = RULES[rule]
        except KeyError:
            raise ModelError(f"unknown decision rule {rule!r}; expected one of {sorted(RULES)}"
                             " or a callable." + closest(rule, RULES)) from None
    elif callable(rule):
        fn = rule
    else:
        raise ModelError(f"decision rule must be a name or a callable, got {rule!r}")
    index = fn(model, points, **options)
    if isinstance(index, bool) or not isinstance(index, (int, np.integer)) \
            or not 0 <= index < len(points):
        raise ModelError(f"decision rule {rule_name(rule)!r} returned {index!r}; expected an "
                         f"index in 0..{len(points) - 1}")
    return int(index)
