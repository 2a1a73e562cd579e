"""Learned DRAS policies: ``dras-pg``, ``dras-dql`` and the ``decima-pg`` baseline.

They pick one job at a time through the driver's one-pick protocol (``hpcopt.sim.driver``):
select stage (ready and reserved jobs), backfill stage (learned backfilling); Decima picks
only jobs that fit now.  So ``hpcopt.Simulator(jobs, system, policy).run()``,
``hpcopt.simulate`` and ``hpcopt simulate --policy NAME`` all run them in the one loop.

Reservation: by default (``reserve="oldest"``) the oldest waiting job gets the reservation
when a pick does not fit, as in the authors' public code.  It bounds the maximum wait on data
the agents were not trained on (benchmarks/README.md, "safe defaults"); ``reserve="picked"``
is the paper's rule (the agent's non-fitting pick is reserved), which starves large jobs the
agent never picks.

Checkpoint: ``checkpoint=PATH``, else the one shipped in ``hpcopt/agents/checkpoints/`` for
the system size (``NAME-small-nNODES.pt``).  When no shipped checkpoint has the system's size,
the Theta one is used as is: the small configuration's node encoding (quantile rows) and job
sizes relative to the machine are size independent, so it transfers without fine-tuning
(a per-node checkpoint of another size is a one-line error).  torch is imported only when a
simulation starts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hpcopt.agents import CHECKPOINTS
from hpcopt.agents.dras_state import StateEncoder, make_reward, step_context
from hpcopt.domain import System
from hpcopt.errors import HpcoptError, PolicyOptionError

from .base import OnePickPolicy, Option, register_policy

RESERVE = ("oldest", "picked")


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
class DrasPolicy(OnePickPolicy):
    """Learned one-job-at-a-time picks with reservation and learned backfilling (DRAS).

    ``adapt=True`` keeps learning while it schedules (section V-D; PG then samples its
    policy, DQL keeps its trained epsilon); otherwise it is greedy and frozen.
    """

    EXTRA = "ml"  # needs torch: pip install 'hpcopt[ml]'

    OPTIONS = (
        Option("checkpoint", str, "learned policies: agent checkpoint (default: the shipped "
                                  "one for the system size)"),
        Option("adapt", bool, "learned policies: keep learning while scheduling (online "
                              "adaptation)"),
        Option("reserve", str, "dras-pg/dras-dql: reserve the oldest waiting job when a pick "
                               "does not fit (default; bounds the maximum wait) or the "
                               "agent's pick (the paper)", choices=RESERVE),
    )

    def __init__(self, kind: str = "pg", levels: str = "dras", checkpoint: str | None = None,
                 window: int | None = None, order: str | None = None, adapt: bool = False,
                 reserve: str = "oldest", seed: int | None = None) -> None:
        if reserve not in RESERVE:
            raise PolicyOptionError(f"reserve must be one of {RESERVE}, got {reserve!r}")
        super().__init__(window=window, order=order, reserve_rule=reserve,
                         fit_only=levels == "decima")
        self.kind = kind
        self.levels = levels
        self.checkpoint = checkpoint
        self.adapt = bool(adapt)
        self.reserve = reserve
        self.seed = seed
        self.backfill = "easy" if levels == "dras" else "none"
        self.agent = None
        self.last_stats: dict = {}
        self.learn = self.adapt
        self.deterministic = not self.adapt
        self.reward_fn = None
        self.encoder = None

    @classmethod
    def for_agent(cls, agent, *, learn: bool, deterministic: bool, window: int,
                  order: str, reserve: str, reward, encoder) -> DrasPolicy:
        """A policy around an agent in training (``hpcopt.trainers.dras_env.run_episode``)."""
        pol = cls(agent.kind, agent.levels, window=window, order=order, reserve=reserve)
        pol.agent, pol.learn, pol.deterministic = agent, learn, deterministic
        pol.reward_fn, pol.encoder = reward, encoder
        return pol

    def reset(self, seed: int | None = None) -> None:
        if seed is not None:
            self.seed = seed

    def load_agent(self, system: System):
        """Load (once) the checkpoint and check that it fits this policy and system."""
        try:
            from hpcopt.agents.dras import DrasAgent
        except ImportError:
            raise HpcoptError(f"policy {self.name or 'dras-' + self.kind!r} needs torch: pip "
                              "install 'hpcopt[ml]'") from None

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

    # ------------------------------------------------------------------ the driver's hooks
    def attach(self, sim) -> None:
        """Prepare for a run on ``sim``: load the agent, fix the window, listen to picks."""
        from hpcopt.sim.driver import Event

        if self.encoder is None:  # a checkpointed policy (not one built by for_agent)
            agent = self.agent if self.agent is not None and \
                self.agent.nodes == sim.system.nodes else self.load_agent(sim.system)
            w = agent.config.window
            if self.window is not None and self.window != w:
                raise PolicyOptionError(f"the checkpoint's network picks among W={w} jobs; "
                                        f"window {self.window} does not apply")
            self.window = w
            self.window_fixed = True

            opts = agent.env_options()
            self._encoder = StateEncoder(w, sim.system.nodes, node_rows=opts["node_rows"],
                                         time_scale=opts["time_scale"])
            self._reward = make_reward(opts["reward"])
            self.agent.start_episode(self.seed)
        else:
            self._encoder, self._reward = self.encoder, self.reward_fn
            self.agent.start_episode()
        self._sim = sim
        self._pending = None
        self._last_pass = -1
        self.instances = self.steps = 0
        self.total_reward = self._step_reward = 0.0
        self.losses: list = []
        self._t0 = self.agent.decision_seconds
        sim.subscribe(Event.PICK, self._on_pick)
        sim.subscribe(Event.END, self._on_end)

    def pick(self, request):
        """The agent's choice among ``request.choices`` (learning from the last one)."""
        obs, mask = self._encoder.encode(request), self._encoder.mask(request)
        if request.pass_index != self._last_pass:
            self._last_pass = request.pass_index
            self.instances += 1
        if self._pending is not None:
            self._learn(obs, mask, done=False)
        action = self.agent.act(obs, mask, deterministic=self.deterministic)
        self.steps += 1
        if self.learn:
            self._pending = (obs, mask, action)
        return request.choices[action]

    def _on_pick(self, sim, event, pick) -> None:
        self._step_reward = self._reward(step_context(sim, pick))
        self.total_reward += self._step_reward

    def _learn(self, next_obs, next_mask, done: bool) -> None:
        obs, mask, action = self._pending
        self._pending = None
        self.agent.observe(obs, mask, action, self._step_reward, next_obs, next_mask, done)
        loss = self.agent.maybe_update(self.instances, done)
        if loss is not None:
            self.losses.append(loss)

    def _on_end(self, sim, event, payload) -> None:
        if self._pending is not None:
            enc = self._encoder
            self._learn(np.zeros(enc.shape, dtype=np.float32),
                        np.zeros(enc.window, dtype=np.int8), done=True)
        seconds = self.agent.decision_seconds - self._t0
        self.last_stats = dict(decisions=self.steps, instances=self.instances,
                               decision_seconds=seconds,
                               ms_per_decision=1e3 * seconds / max(self.steps, 1),
                               total_reward=self.total_reward)
