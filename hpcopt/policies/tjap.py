"""TJAP (topology-aware job allocation): the window-period allocation policy of the topology
paper (Lan et al., CLUSTER'23, III-C).

Every tau seconds the queued jobs are ordered by their number of waiting periods (NWP,
descending; ties: fewer nodes first, then submission), selected greedily while they fit the
idle nodes (a job that does not fit is skipped, the scan goes on), and placed by an
allocation model -- SCAS or DCAS on the sorted idle-node sequence -- solved by any of its
backends.  Unselected jobs' NWP grows by one.  Jobs keep their nodes to completion; there is
no reservation and no backfilling.  Run it on a system with a topology
(``hpcopt.workloads.tjap.tjap_system``); the driver ticks every ``tau`` seconds.

``generate_windows`` runs this policy in the driver on a generated workload and returns the
allocation windows it solved: the instances of the paper's Tables III and IV (also the
training windows of the NSA repair operator, ``hpcopt.trainers.nsa_train``).
"""

from __future__ import annotations

from pathlib import Path

from hpcopt.domain import Decision, Window
from hpcopt.errors import PolicyOptionError, SimulationError
from hpcopt.instances import save_instance
from hpcopt.sim.settings import DriverOptions

from .base import Option, Policy, register_policy, window_solver

MODELS = ("scas", "dcas")


@register_policy("tjap-window")
class WindowAllocation(Policy):
    """Every tau s: NWP order, greedy selection, SCAS/DCAS placement by a backend."""

    backfill = "none"
    machine = "topology"
    OPTIONS = (
        Option("tau", float, "period in seconds between allocation windows"),
        Option("model", str, "allocation model", choices=MODELS),
        Option("backend", str, "solver backend of the window model (see 'hpcopt backends')"),
        Option("time_limit", float, "seconds per window solve"),
        Option("dump_windows", str, "write every solved window as an instance file to DIR"),
    )

    def __init__(self, tau: float = 60.0, model: str = "scas", backend: str | None = None,
                 time_limit: float | None = None, seed: int | None = None,
                 solver_options: dict | None = None, dump_windows: str | None = None,
                 record: list | None = None) -> None:
        if model not in MODELS:
            raise PolicyOptionError(f"tjap-window model must be one of {MODELS}, got {model!r}")
        if not tau > 0:
            raise PolicyOptionError(f"tjap-window tau must be > 0 seconds, got {tau!r}")
        from hpcopt.models import model_class

        self.period = float(tau)
        self.window = None
        self.order = "fcfs"
        self.model_cls = model_class(model)
        self.backend = backend or self.model_cls.default_backend
        self._solver = window_solver(self.backend, model, time_limit)  # fail early
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
                                  "(hpcopt.workloads.tjap.tjap_system)")
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
            self.dump_windows.mkdir(parents=True, exist_ok=True)
            name = f"window_{self.solved:05d}_t{int(window.time)}"
            save_instance(self.dump_windows / f"{name}.json", model, name,
                          description=f"window at t={window.time:g} s of a tjap-window run",
                          meta={"time": window.time, "backend": self.backend})
        return Decision(start=tuple(j.id for j in chosen),
                        allocations=model.allocation(res.decision))


def generate_windows(n_windows: int, *, seed: int = 0, topology="paper-1000",
                     tau: float = 60.0, model: str = "dcas", backend: str = "scas-exact",
                     jobs: list | None = None, min_jobs: int = 1) -> list:
    """The first ``n_windows`` windows (with at least ``min_jobs`` selected jobs) that the
    window-period driver solves on a fresh, idle machine -- one "epoch" of the paper.

    The driver places each window with ``backend`` (the SCAS optimum by default, so every
    epoch evolves the same way whichever method is later compared on its windows).  Returns
    allocation models of kind ``model`` (``"dcas"`` or ``"scas"``) on the same data.
    """
    from hpcopt.models import model_class
    from hpcopt.sim.driver import Simulator
    from hpcopt.workloads.tjap import generate_tjap_jobs, tjap_system

    system = tjap_system(topology)
    if jobs is None:  # about 3.4 arrivals per minute: generate well past n_windows periods
        jobs = generate_tjap_jobs(max(50, int(n_windows * tau / 17.5 * 2) + 50), seed=seed)
    seen: list = []
    policy = WindowAllocation(tau=tau, model="scas", backend=backend, seed=seed, record=seen)
    Simulator(jobs, system, policy, DriverOptions()).run()
    cls = model_class(model)
    out = [m if type(m) is cls else cls(m.topology, m.idle_nodes, m.sizes, ids=m.ids)
           for m in seen if m.n_jobs >= min_jobs]
    if len(out) < n_windows:
        raise SimulationError(f"the workload gave only {len(out)} windows with >= {min_jobs} "
                              "jobs; pass more jobs")
    return out[:n_windows]
