"""Learned OSDEC policies: ``osdec`` and its ablations ``ppo-att``, ``ppo-att-auxh``,
``ppo-att-auxl``, ``ppo-mlp`` (spec osdec.md; the agent in ``hpcopt.agents.osdec_agent``).

Each is a cloud-slot ``ScorePolicy``: at every slot the loaded network scores the current
jobs (its mean ``mu``: deterministic) and ``start_by_scores`` starts them like every other
OSDEC policy.  The future set is read from the driver (``sim.upcoming``).  Checkpoint:
``checkpoint=PATH``, else the one shipped for the variant (``hpcopt/agents/checkpoints/
VARIANT-small.pt``).  torch is imported only when a simulation starts; without it, or
without a checkpoint, the error is one line.  Training (``hpcopt.trainers.osdec_train``) runs
the same class with a sampling actor that records each step.
"""

from __future__ import annotations

from pathlib import Path

from hpcopt.agents import CHECKPOINTS
from hpcopt.domain import Decision, Window
from hpcopt.errors import HpcoptError

from .base import Option, register_policy
from .osdec import ScorePolicy, start_by_scores

LEARNED = ("osdec", "ppo-att", "ppo-att-auxh", "ppo-att-auxl", "ppo-mlp")


def shipped_osdec_checkpoint(variant: str) -> Path:
    """The bundled checkpoint of ``variant`` (one-line error when none is shipped)."""
    path = CHECKPOINTS / f"{variant}-small.pt"
    if not path.is_file():
        raise HpcoptError(f"no shipped checkpoint for policy {variant!r} ({path.name} not in "
                          f"{CHECKPOINTS}); train one (hpcopt train osdec --variant {variant}"
                          " ...) and pass --checkpoint PATH")
    return path


@register_policy("osdec", variant="osdec")
@register_policy("ppo-att", variant="ppo-att")
@register_policy("ppo-att-auxh", variant="ppo-att-auxh")
@register_policy("ppo-att-auxl", variant="ppo-att-auxl")
@register_policy("ppo-mlp", variant="ppo-mlp")
class OSDECPolicy(ScorePolicy):
    """PPO agent scoring the current jobs (transformer encoder, auxiliary GRU tasks)."""

    EXTRA = "ml"  # needs torch: pip install 'hpcopt[ml]'

    OPTIONS = (Option("checkpoint", str, "learned OSDEC policies: agent checkpoint (default: "
                                         "the shipped one of the variant)"),)

    def __init__(self, variant: str = "osdec", checkpoint: str | None = None,
                 window: int | None = None) -> None:
        self.variant = variant
        self.checkpoint = checkpoint
        self.window = window
        self.actor = None
        self._sim = None

    @classmethod
    def for_actor(cls, actor) -> OSDECPolicy:
        """A policy around an actor in training (``hpcopt.trainers.osdec_train``)."""
        pol = cls(actor.agent.variant)
        pol.actor = actor
        return pol

    def load(self):
        """The actor of the checkpoint (loaded once)."""
        try:
            from hpcopt.agents.osdec_agent import Actor, OSDECAgent
        except ImportError:
            raise HpcoptError(f"policy {self.variant!r} needs torch: pip install "
                              "'hpcopt[ml]'") from None
        path = Path(self.checkpoint) if self.checkpoint else \
            shipped_osdec_checkpoint(self.variant)
        agent = OSDECAgent.load(path)
        if agent.variant != self.variant:
            raise HpcoptError(f"checkpoint {path} holds a {agent.variant} agent; use --policy "
                              f"{agent.variant}")
        self.checkpoint_path = path
        return Actor(agent)

    def attach(self, sim) -> None:
        """Load the agent (first run) and reset its per-run state; read the future set."""
        if self.actor is None:
            self.actor = self.load()
            import torch

            torch.set_num_threads(1)  # batch-1 inference gains nothing from threads
        self.actor.reset()
        self._sim = sim

    def decide(self, window: Window) -> Decision:
        if not window.jobs:
            return Decision()
        decision = start_by_scores(window, self.scores(window))
        ids = set(decision.start)
        self.actor.started([j for j in window.jobs if j.id in ids])
        return decision

    def scores(self, window: Window) -> list:
        upcoming = self._sim.upcoming.values() if self._sim is not None else ()
        return self.actor.scores(window, upcoming)

    @property
    def last_stats(self) -> dict:
        """Decisions of the last run and the agent's time per decision (encoding, aux step,
        forward pass), in ms."""
        a = self.actor
        n = a.decisions if a is not None else 0
        return {"decisions": n,
                "ms_per_decision": 1e3 * a.decision_seconds / n if n else float("nan")}
