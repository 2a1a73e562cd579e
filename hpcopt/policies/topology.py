"""The window-period allocation policy of the topology paper (Lan et al., CLUSTER'23, III-C).

Every tau seconds the queued jobs are ordered by their number of waiting periods (NWP,
descending; ties: fewer nodes first, then submission), selected greedily while they fit the
idle nodes (a job that does not fit is skipped, the scan goes on), and placed by an
allocation model -- SCAS or DCAS on the sorted idle-node sequence -- solved by any of its
backends.  Unselected jobs' NWP grows by one.  Jobs keep their nodes to completion; there is
no reservation and no backfilling.  Run it on a system with a topology
(``hpcopt.tjap.tjap_system``); the driver ticks every ``tau`` seconds.
"""

from __future__ import annotations

from pathlib import Path

from hpcopt.domain import Decision, Window
from hpcopt.errors import SimulationError

from .base import Policy, register_policy

MODELS = ("scas", "dcas")


@register_policy("tjap-window")
class WindowAllocation(Policy):
    """Every tau s: NWP order, greedy selection, SCAS/DCAS placement by a backend."""

    backfill = "none"

    def __init__(self, tau: float = 60.0, model: str = "scas", backend: str | None = None,
                 time_limit: float | None = None, seed: int | None = None,
                 solver_options: dict | None = None, dump_windows: str | None = None,
                 record: list | None = None) -> None:
        if model not in MODELS:
            raise SimulationError(f"tjap-window model must be one of {MODELS}, got {model!r}")
        if not tau > 0:
            raise SimulationError(f"tjap-window tau must be > 0 seconds, got {tau!r}")
        from hpcopt.models import model_class
        from hpcopt.solvers import get_solver

        self.period = float(tau)
        self.window = None
        self.order = "fcfs"
        self.model_cls = model_class(model)
        self.backend = backend or self.model_cls.default_backend
        self._solver = get_solver(self.backend)  # fail early on an unknown backend
        self.time_limit = time_limit
        self.seed = seed
        self.solver_options = dict(solver_options or {})
        self.dump_windows = None if dump_windows is None else Path(dump_windows)
        self.record = record  # if a list, every solved window model is appended to it
        self.solved = 0  # windows solved in this run (seeds and dump names follow it)
        self._nwp: dict[int, int] = {}

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.seed = seed
        self._nwp = {}
        self.solved = 0

    def select(self, window: Window) -> list:
        """Jobs to start: NWP descending, then fewer nodes, greedily while they fit."""
        nwp = self._nwp
        ranked = sorted(window.jobs, key=lambda j: (-nwp.get(j.id, 0), j.nodes, j.submit, j.id))
        free, chosen = window.free_nodes, []
        for job in ranked:
            if job.nodes <= free:
                chosen.append(job)
                free -= job.nodes
        return chosen

    def decide(self, window: Window) -> Decision:
        if window.system.topology is None:
            raise SimulationError("tjap-window needs a system with a topology "
                                  "(hpcopt.tjap.tjap_system)")
        chosen = self.select(window)
        picked = {j.id for j in chosen}
        for job in window.jobs:
            if job.id in picked:
                self._nwp.pop(job.id, None)
            else:
                self._nwp[job.id] = self._nwp.get(job.id, 0) + 1
        if not chosen:
            return Decision()
        model = self.model_cls(window.system.topology, window.resources.idle_nodes(),
                               [j.nodes for j in chosen], ids=[j.id for j in chosen])
        seed = (0 if self.seed is None else self.seed) + self.solved  # one seed per window
        res = self._solver.solve(model, time_limit=self.time_limit, seed=seed,
                                 solver_options=self.solver_options)
        res.require_solution()
        self.solved += 1
        if self.record is not None:
            self.record.append(model)
        if self.dump_windows is not None:
            from hpcopt.instances import save_instance

            self.dump_windows.mkdir(parents=True, exist_ok=True)
            name = f"window_{self.solved:05d}_t{int(window.time)}"
            save_instance(self.dump_windows / f"{name}.json", model, name,
                          description=f"window at t={window.time:g} s of a tjap-window run",
                          meta={"time": window.time, "backend": self.backend})
        return Decision(start=tuple(j.id for j in chosen),
                        allocations=model.allocation(res.decision))
