"""Learned DRAS policies: ``dras-pg``, ``dras-dql`` and the ``decima-pg`` baseline.

They make one pick at a time through ``hpcopt.sim.env.DrasEnv`` (level 1: ready and reserved
jobs; level 2: learned backfilling; Decima: fit-now picks only), so they drive the simulation
themselves instead of answering one ``Decision`` per pass; ``hpcopt.simulate`` and
``hpcopt simulate --policy NAME`` run them like any other policy.

Checkpoint: ``checkpoint=PATH``, else the one shipped in ``hpcopt/learn/checkpoints/`` for
the system size (``NAME-small-nNODES.pt``).  When no shipped checkpoint has the system's size,
the Theta one is used as is: the small configuration's node encoding (quantile rows) and job
sizes relative to the machine are size independent, so it transfers without fine-tuning
(a per-node checkpoint of another size is a one-line error).  torch is imported only when a
simulation starts.
"""

from __future__ import annotations

from pathlib import Path

from hpcopt.domain import Decision, System, Window
from hpcopt.errors import HpcoptError, SimulationError

from .base import Policy, register_policy

CHECKPOINTS = Path(__file__).resolve().parents[1] / "learn" / "checkpoints"


def shipped_checkpoint(name: str, nodes: int) -> Path:
    """The bundled checkpoint of policy ``name`` for ``nodes`` nodes, else its Theta one."""
    exact = CHECKPOINTS / f"{name}-small-n{nodes}.pt"
    if exact.is_file():
        return exact
    found = sorted(CHECKPOINTS.glob(f"{name}-small-n*.pt"))
    if not found:
        raise HpcoptError(f"no shipped checkpoint for policy {name!r} in {CHECKPOINTS}; "
                          "train one (hpcopt train dras ...) and pass --checkpoint PATH")
    return found[0]


@register_policy("dras-pg", kind="pg", levels="dras")
@register_policy("dras-dql", kind="dql", levels="dras")
@register_policy("decima-pg", kind="pg", levels="decima")
class DrasPolicy(Policy):
    """Learned one-job-at-a-time picks with reservation and learned backfilling (DRAS).

    ``adapt=True`` keeps learning while it schedules (section V-D; PG then samples its
    policy, DQL keeps its trained epsilon); otherwise it is greedy and frozen.  ``reserve``
    overrides the checkpoint's reservation rule: ``"oldest"`` reserves the oldest waiting job
    (the authors' code; bounds the maximum wait), ``"picked"`` the agent's non-fitting pick.
    """

    drives_simulation = True

    def __init__(self, kind: str = "pg", levels: str = "dras", checkpoint: str | None = None,
                 window: int | None = None, order: str | None = None, adapt: bool = False,
                 reserve: str | None = None, seed: int | None = None) -> None:
        # ``reserve`` is checked by DrasEnv when the run starts (keeps gymnasium unimported)
        self.kind = kind
        self.levels = levels
        self.checkpoint = checkpoint
        self.window = window
        self.order = order
        self.adapt = bool(adapt)
        self.reserve = reserve
        self.seed = seed
        self.agent = None
        self.last_stats: dict = {}

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.seed = seed

    def decide(self, window: Window) -> Decision:
        raise SimulationError(f"policy {self.name!r} drives the simulation itself (one pick at "
                              "a time); run it with hpcopt.simulate or 'hpcopt simulate'")

    def load_agent(self, system: System):
        """Load (once) the checkpoint and check that it fits this policy and system."""
        from hpcopt.learn.dras import DrasAgent

        path = Path(self.checkpoint) if self.checkpoint else \
            shipped_checkpoint(self.name or f"dras-{self.kind}", system.nodes)
        agent = DrasAgent.load(path)
        made = "decima-pg" if agent.levels == "decima" else f"dras-{agent.kind}"
        if (agent.kind, agent.levels) != (self.kind, self.levels):
            raise HpcoptError(f"checkpoint {path} holds a {made} agent; use --policy {made}")
        agent.check_system(system.nodes, f"checkpoint {path}")
        self.agent = agent
        self.checkpoint_path = path
        return agent

    def run(self, jobs, system: System, *, order: str | None = None, window: int | None = None,
            backfill=None, starvation_bound: int | None = None, period: float | None = None,
            progress: bool = False):
        """Simulate ``jobs`` on ``system``; returns the finished ``Simulator``."""
        from hpcopt.learn.dras import run_episode
        from hpcopt.sim.env import DrasEnv

        if period is not None or starvation_bound is not None:
            raise SimulationError(f"policy {self.name!r} schedules at every event and "
                                  "reserves by itself: periodic passes and a starvation bound "
                                  "do not apply")
        if backfill not in (None, "easy", True):
            raise SimulationError(f"policy {self.name!r} backfills by itself; backfill "
                                  f"{backfill!r} does not apply")
        agent = self.agent if self.agent is not None and self.agent.nodes == system.nodes \
            else self.load_agent(system)
        w = window if window is not None else self.window
        if w is not None and w != agent.config.window:
            raise SimulationError(f"the checkpoint's network picks among W="
                                  f"{agent.config.window} jobs; window {w} does not apply")
        if self.seed is not None:
            import torch

            torch.manual_seed(self.seed)
            agent._gen.manual_seed(self.seed)
        options = agent.env_options()
        if self.reserve is not None:
            options["reserve"] = self.reserve
        env = DrasEnv(jobs, system, order=order or self.order or "fcfs", **options)
        stats = run_episode(env, agent, learn=self.adapt, deterministic=not self.adapt,
                            seed=self.seed)
        self.last_stats = dict(decisions=stats.steps, instances=stats.instances,
                               decision_seconds=stats.decision_seconds,
                               ms_per_decision=1e3 * stats.decision_seconds / max(stats.steps, 1),
                               total_reward=stats.total_reward)
        sim = env.sim
        sim.backfilling = self.levels == "dras"  # reported in the settings of the run
        return sim
