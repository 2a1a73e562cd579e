"""Cloud-slot policies for deferrable jobs (OSDEC, spec osdec.md): FIFO, Tetris, rolling MIP.

Run slot by slot through the driver (``hpcopt.cloud.simulate_osdec``: period one slot, no
backfilling, a capacity profile): each pass the window holds the current set B_cur (submitted,
``earliest <= t <= latest``, not started), ``window.running`` the history set, the driver's
``upcoming`` the future set, and ``window.resources`` the free capacity.  Every policy gives
each current job a score and ``start_by_scores`` maps scores to starts the same way for all:
highest score first (ties keep the base order), the longest prefix that fits the free capacity
(``classic.prefix_fill``, the head-first rule).  SJF is the registered ``sjf`` policy: the
prefix of the shortest-duration-first order, i.e. the same mapping with score ``-d_i``.
"""

from __future__ import annotations

import math
from typing import ClassVar

from hpcopt.domain import Decision, Window
from hpcopt.errors import SimulationError

from .base import Option, Policy, register_policy
from .classic import prefix_fill


def start_by_scores(window: Window, scores) -> Decision:
    """Start the window jobs by ``scores`` (one per window job; ``None`` = not a candidate):
    highest first, stable on ties, the longest prefix that fits the free resources."""
    ranked = sorted((k for k, s in enumerate(scores) if s is not None),
                    key=lambda k: scores[k], reverse=True)  # reverse sort keeps ties stable
    return Decision(prefix_fill(window, [window.jobs[k] for k in ranked]))


def capacity_now(window: Window) -> int:
    """The usable capacity at the window's time (the machine size without a profile)."""
    return int(getattr(window.resources, "capacity", window.system.nodes))


class ScorePolicy(Policy):
    """A cloud-slot policy: ``scores(window)`` -> one score per window job."""

    order: str | None = "fcfs"
    window: int | None = None
    backfill: ClassVar[str] = "none"

    def decide(self, window: Window) -> Decision:
        if not window.jobs:
            return Decision()
        return start_by_scores(window, self.scores(window))

    def scores(self, window: Window) -> list:  # pragma: no cover - abstract
        raise NotImplementedError


@register_policy("fifo")
class Fifo(ScorePolicy):
    """Deferrable jobs by submission slot, earliest first (ties: earliest start, id)."""

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
            raise SimulationError(f"tetris knob must be in [0, 1], got {knob}")
        self.knob = float(knob)
        self.window = window

    def scores(self, window: Window) -> list:
        """``knob * (free/C_max)(c_i/C_max) + (1 - knob) / d_i`` over the jobs that fit now;
        jobs that do not fit score ``-inf`` (with one resource the alignment is the largest
        job that fits first)."""
        free = window.resources.free_nodes
        cmax = max(1, window.system.nodes)
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
    """Rolling-horizon OSDEC MIP: plan the known jobs over H slots, start the first slot."""

    OPTIONS = (
        Option("horizon", int, "H, the slots planned at each slot"),
        Option("backend", str, "OSDEC backend for each slot's MIP (scip, cpsat, highs via "
                               "pyomo:appsi_highs, osdec-greedy)"),
        Option("time_limit", float, "seconds per slot's solve"),
        Option("forecast", str, "capacity forecast over the horizon: hold (the current "
                                "capacity, held constant) or oracle (the true future profile: "
                                "a clairvoyant ablation, not an online policy)",
               choices=("hold", "oracle")),
    )

    def __init__(self, horizon: int = 12, backend: str = "scip", time_limit: float = 2.0,
                 forecast: str = "hold", window: int | None = None) -> None:
        if horizon < 1:
            raise SimulationError(f"rolling-mip horizon must be >= 1, got {horizon}")
        self.horizon = int(horizon)
        self.backend = backend
        self.time_limit = float(time_limit)
        if forecast not in ("hold", "oracle"):
            raise SimulationError(f"rolling-mip forecast must be hold or oracle, got "
                                  f"{forecast!r}")
        self.forecast = forecast
        self.window = window
        self.w1, self.w2 = 2.0, 10.0
        self._sim = None
        self.solves = 0

    def set_weights(self, w1: float, w2: float) -> None:
        """The instance's delay and violation weights (``hpcopt.cloud`` sets them)."""
        self.w1, self.w2 = float(w1), float(w2)

    def attach(self, sim) -> None:
        self._sim = sim  # to read the future set (sim.upcoming)

    def scores(self, window: Window) -> list:
        from hpcopt.models.osdec import OSDECModel
        from hpcopt.solvers import solve

        t, H = window.time, self.horizon
        cur = list(window.jobs)
        fut = list(self._sim.upcoming.values()) if self._sim is not None else []
        known = cur + fut
        cap = capacity_now(window)
        if self.forecast == "oracle":  # the true profile (ablation: what forecasting buys)
            prof = window.system.capacity
            caps = [int(prof.at(t + h)) for h in range(H)]
        else:  # the current capacity held constant
            caps = [cap] * H
        load = [0] * H
        for r in window.running:  # what the history set still holds per slot
            end = r.start + r.job.walltime  # planning uses the requested duration
            for h in range(H):
                if t + h < end:
                    load[h] += r.job.nodes
        earliest = [max(0, int(math.ceil((j.earliest if j.earliest is not None else t) - t)))
                    for j in known]
        latest = [max(e, int((j.latest if j.latest is not None else t + H) - t))
                  for e, j in zip(earliest, known)]
        model = OSDECModel(
            slots=H, capacity=[max(0, c - x) for c, x in zip(caps, load)],
            cores=[j.nodes for j in known], duration=[max(1, int(j.walltime)) for j in known],
            earliest=earliest, latest=latest, submit=[0] * len(known), w1=self.w1, w2=self.w2)
        res = solve(model, self.backend, time_limit=self.time_limit, seed=0)
        self.solves += 1
        x = res.decision
        if x is None:  # no incumbent in time: the fast heuristic plans this slot
            x = solve(model, "osdec-greedy", time_limit=self.time_limit, seed=0).decision
        return [float(j.nodes * j.walltime) if x[k] == 0 else None
                for k, j in enumerate(cur)]
