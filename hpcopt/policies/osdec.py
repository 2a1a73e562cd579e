"""The OSDEC policies (cloud slots, deferrable jobs; spec osdec.md): FIFO, Tetris, rolling MIP,
and ``ScorePolicy``, the score-to-starts mapping they and the learned ones
(``hpcopt.policies.osdec_learned``) share.

Run slot by slot through the driver (``hpcopt.osdec.simulate_osdec``: period one slot, no
backfilling, a capacity profile): each pass the window holds the current set B_cur (submitted,
``earliest <= t <= latest``, not started), ``window.running`` the history set, the driver's
``upcoming`` the future set, and ``window.resources`` the free capacity.  Every policy gives
each current job a score and ``start_by_scores`` maps scores to starts the same way for all:
highest score first, ties in submission order (``submission_order``: submission slot, then the
id by its numbers, so ``"t:44"`` comes before ``"t:213"``), the longest prefix that fits the
free capacity (``classic.prefix_fill``, the head-first rule).  SJF is the registered ``sjf``
policy: the prefix of the shortest-duration-first order, i.e. the same mapping with score
``-d_i`` (the driver's base order breaks its ties by submission and id, which
``hpcopt.osdec`` makes numeric).  Every policy here decides from what is known at the slot:
the rolling MIP's ``forecast=oracle`` is the one exception, an ablation by name.
"""

from __future__ import annotations

import math
from typing import ClassVar

from hpcopt.domain import Decision, Window, id_order
from hpcopt.errors import PolicyOptionError

from .base import Option, Policy, register_policy, window_solver
from .classic import prefix_fill


def submission_order(job) -> tuple:
    """Sort key of submission order: the submission time, then the id by its numbers."""
    return job.submit, id_order(job.id)


def start_by_scores(window: Window, scores) -> Decision:
    """Start the window jobs by ``scores`` (one per window job; ``None`` = not a candidate):
    highest first, ties in ``submission_order``, the longest prefix that fits the free
    resources."""
    jobs = window.jobs
    ranked = sorted((k for k, s in enumerate(scores) if s is not None),
                    key=lambda k: submission_order(jobs[k]))
    ranked.sort(key=lambda k: scores[k], reverse=True)  # stable: ties stay in that order
    return Decision(prefix_fill(window, [jobs[k] for k in ranked]))


def capacity_now(window: Window) -> int:
    """The usable capacity at the window's time (the machine size without a profile)."""
    return int(getattr(window.resources, "capacity", window.system.nodes))


class ScorePolicy(Policy):
    """A cloud-slot policy: ``scores(window)`` -> one score per window job."""

    order: str | None = "fcfs"
    window: int | None = None
    backfill: ClassVar[str] = "none"
    machine: ClassVar[str] = "capacity"

    def decide(self, window: Window) -> Decision:
        if not window.jobs:
            return Decision()
        return start_by_scores(window, self.scores(window))

    def scores(self, window: Window) -> list:  # pragma: no cover - abstract
        raise NotImplementedError


@register_policy("fifo")
class Fifo(ScorePolicy):
    """Deferrable jobs by submission slot, earliest first (ties: earliest start, then
    submission order)."""

    def __init__(self, window: int | None = None) -> None:
        self.window = window

    def scores(self, window: Window) -> list:
        return [(-j.submit, -(j.earliest if j.earliest is not None else j.submit))
                for j in window.jobs]


@register_policy("tetris")
class Tetris(ScorePolicy):
    """Tetris packer (DeepRM): alignment of free capacity and demand, mixed with SJF by knob."""

    OPTIONS = (Option("knob", float, "weight of the alignment score; 1 - knob goes to the "
                      "SJF score 1/duration (DeepRM's packer-SJF mix)"),)

    def __init__(self, knob: float = 1.0, window: int | None = None) -> None:
        if not 0.0 <= knob <= 1.0:
            raise PolicyOptionError(f"tetris knob must be in [0, 1], got {knob}")
        self.knob = float(knob)
        self.window = window

    def scores(self, window: Window) -> list:
        """``knob * (free/C_t)(c_i/C_t) + (1 - knob) / d_i`` over the jobs that fit now; jobs
        that do not fit score ``-inf`` (with one resource the alignment is the largest job
        that fits first).  ``C_t`` is the capacity now (the machine size without a profile),
        not the day's largest, which is not known yet."""
        free = window.resources.free_nodes
        cmax = max(1, capacity_now(window))
        knob = self.knob
        out = []
        for j in window.jobs:
            if j.nodes > free:
                out.append(-math.inf)
                continue
            align = (free / cmax) * (j.nodes / cmax)
            out.append(knob * align + (1.0 - knob) / max(j.walltime, 1.0))
        return out


@register_policy("rolling-mip")
class RollingMIP(ScorePolicy):
    """Rolling-horizon OSDEC MIP: plan the known jobs' starts over H slots, start the first.

    Each slot's model (an ``OSDECModel`` solved by ``backend``) holds the current and future
    sets; a job may start in the next H slots (else it counts as dropped).  Two things make it
    price a start as the day's objective does:

    - the delay counts from the job's own earliest slot (negative in the sub-model): what it
      has already waited is paid when it starts, so a job that waited longer than it is worth
      is dropped instead of started late;
    - a start is charged on every slot it occupies up to the instance's horizon T (the
      forecast past H), not only on the H planned slots; past T capacity is free, as in the
      offline model.  Without a known T (a plain trace) the charge stops ``lookahead`` slots
      past the plan (default 24), which bounds the model when jobs run for thousands of slots.

    Together they cut the mean gap to the offline reference on the 20 test trajectories from
    3.21% to 1.86% (benchmarks/README.md, "Two pricing errors in the rolling MIP").
    """

    OPTIONS = (
        Option("horizon", int, "H, the slots planned at each slot"),
        Option("backend", str, "OSDEC backend for each slot's MIP (scip, cpsat, highs via "
                               "pyomo:appsi_highs, osdec-greedy)"),
        Option("time_limit", float, "seconds per slot's solve"),
        Option("lookahead", int, "slots past the H planned ones on which a start is still "
                                 "charged (default: to the instance's end T when it has one, "
                                 "else 24)"),
        Option("forecast", str, "capacity forecast over the horizon: hold (the current "
                                "capacity, held constant) or oracle (the true future profile: "
                                "a clairvoyant ablation, not an online policy)",
               choices=("hold", "oracle")),
    )

    def __init__(self, horizon: int = 12, backend: str = "scip", time_limit: float = 2.0,
                 forecast: str = "hold", lookahead: int | None = None,
                 window: int | None = None) -> None:
        if horizon < 1:
            raise PolicyOptionError(f"rolling-mip horizon must be >= 1, got {horizon}")
        if lookahead is not None and lookahead < 0:
            raise PolicyOptionError(f"rolling-mip lookahead must be >= 0, got {lookahead}")
        self.horizon = int(horizon)
        self.lookahead = None if lookahead is None else int(lookahead)
        window_solver(backend, "osdec", time_limit)  # fail early on a backend or limit
        self.backend = backend
        self.time_limit = float(time_limit)
        if forecast not in ("hold", "oracle"):
            raise PolicyOptionError(f"rolling-mip forecast must be hold or oracle, got "
                                    f"{forecast!r}")
        self.forecast = forecast
        self.window = window
        self.w1, self.w2 = 2.0, 10.0
        self.end: int | None = None
        self._sim = None
        self.solves = 0

    def set_weights(self, w1: float, w2: float, end: int | None = None) -> None:
        """The instance's delay and violation weights and the slot where its objective ends
        (T: overload from there on is not priced; ``None``: never), which ``hpcopt.osdec``
        and the service set."""
        self.w1, self.w2 = float(w1), float(w2)
        self.end = None if end is None else int(end)

    def attach(self, sim) -> None:
        self._sim = sim  # to read the future set (sim.upcoming)

    def scores(self, window: Window) -> list:
        from hpcopt.models.osdec import OSDECModel
        from hpcopt.solvers import solve

        t, H = int(window.time), self.horizon
        cur = list(window.jobs)
        fut = list(self._sim.upcoming.values()) if self._sim is not None else []
        plan = []  # (job, earliest, latest) relative to t, for jobs that may start within H
        for j in sorted(cur + fut, key=submission_order):  # the sub-model's job order
            e = int(math.ceil((j.earliest if j.earliest is not None else t) - t))
            lo = int((j.latest if j.latest is not None else t + H - 1) - t)
            if max(e, 0) <= min(lo, H - 1):
                plan.append((j, e, min(lo, H - 1)))
        longest = max([int(j.walltime) for j, _, _ in plan], default=0)
        if self.lookahead is not None:
            longest = min(longest, self.lookahead)
        elif self.end is None:  # a plain trace: no day's end bounds the charge
            longest = min(longest, 24)
        span = H + longest
        if self.end is not None:  # past the instance's horizon T capacity is free
            span = max(1, min(span, self.end - t))
        cap = capacity_now(window)
        if self.forecast == "oracle":  # the true profile (ablation: what forecasting buys)
            prof = window.system.capacity
            caps = [int(prof.at(t + h)) for h in range(span)]
        else:  # the current capacity held constant
            caps = [cap] * span
        for r in window.running:  # what the history set still holds per slot
            end = min(span, int(math.ceil(r.start + r.job.walltime - t)))  # requested duration
            for h in range(end):
                caps[h] -= r.job.nodes
        model = OSDECModel(
            slots=span, capacity=[max(0, c) for c in caps], cores=[j.nodes for j, _, _ in plan],
            duration=[max(1, int(j.walltime)) for j, _, _ in plan],
            earliest=[e for _, e, _ in plan], latest=[lo for _, _, lo in plan],
            w1=self.w1, w2=self.w2)
        res = solve(model, self.backend, time_limit=self.time_limit, seed=0)
        self.solves += 1
        x = res.decision
        if x is None:  # no incumbent in time: the fast heuristic plans this slot
            x = solve(model, "osdec-greedy", time_limit=self.time_limit, seed=0).decision
        now = {id(j) for (j, _, _), s in zip(plan, x) if s == 0}
        return [float(j.nodes * j.walltime) if id(j) in now else None for j in cur]
