"""DRAS agents (Fan et al., IPDPS'21): the network, DRAS-PG and DRAS-DQL.

The network (section III-B): the input ``[rows, 2]`` goes through a 1x2 convolution that
reduces each row (a job half-cell or a node) to one value, then two fully connected layers with
leaky-ReLU and an output layer: W logits for PG (softmax over the legal window slots) or one
Q value for DQL.  PG reads the environment's ``[2W + R, 2]`` observation; DQL scores each
window job separately from ``[2 + R, 2]`` (its cell plus the node rows) and picks the best.

Learning: transitions are collected and the parameters are updated every ``update_every``
scheduling instances (10), then the memory is cleared.

* PG, Eq. (3): loss ``-sum_k log pi(a_k|s_k) (G_k - b_k)`` with ``G_k`` the reward summed
  from step k to the end of the update and ``b_k`` the mean of ``G_k`` over all past updates
  (position by position); Adam, learning rate 1e-3.
* DQL, Eq. (4): squared error between ``Q(s_k, a_k)`` and ``r_k + gamma max_a Q(s_{k+1}, a)``
  (over the legal picks of the next decision; no bootstrap at the end of an episode), the same
  network giving both; epsilon-greedy with epsilon 1.0 decaying by 0.995 per update down to
  ``eps_min``.  The paper's Eq. (4) has no discount; ``gamma=1`` is that, the default 0.99
  keeps Q bounded on week-long episodes.

Configurations: ``small`` (default; quantile node rows R = 128, FC 64 and 32, about 20k
parameters, trains on 2 CPU cores in minutes) and ``theta`` (Table III: one row per node,
FC 4000 and 1000, 21.9M parameters for PG on Theta's 4,360 nodes).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import numpy as np
import torch
from torch import nn

from hpcopt.errors import HpcoptError, closest

FORMAT = "hpcopt-dras/1"
KINDS = ("pg", "dql")


@dataclass(frozen=True)
class DrasConfig:
    """Network size, state encoding and learning settings of a DRAS agent."""

    window: int = 50
    node_rows: int | None = 128  # None: one row per node (the paper's, size-dependent)
    hidden: tuple[int, int] = (64, 32)
    lr: float = 1e-3
    update_every: int = 10
    gamma: float = 0.99
    eps_start: float = 1.0
    eps_decay: float = 0.995
    eps_min: float = 0.01
    time_scale: float = 86400.0
    reward: str = "capability"
    reserve: str = "picked"

    def __post_init__(self) -> None:
        if self.window < 1 or self.update_every < 1 or min(self.hidden) < 1:
            raise HpcoptError(f"DRAS config: window, update_every and hidden sizes must be "
                              f">= 1, got {self.window}, {self.update_every}, {self.hidden}")
        if self.node_rows is not None and self.node_rows < 1:
            raise HpcoptError(f"DRAS config: node_rows must be >= 1 or None, got "
                              f"{self.node_rows}")
        if not (0 < self.lr and 0 <= self.gamma <= 1 and 0 < self.eps_decay <= 1):
            raise HpcoptError("DRAS config: need lr > 0, 0 <= gamma <= 1, 0 < eps_decay <= 1")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["hidden"] = list(self.hidden)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> DrasConfig:
        known = {f.name for f in fields(cls)}
        d = {k: v for k, v in d.items() if k in known}
        if "hidden" in d:
            d["hidden"] = tuple(d["hidden"])
        return cls(**d)


CONFIGS = {
    "small": DrasConfig(),
    "theta": DrasConfig(node_rows=None, hidden=(4000, 1000)),
}


def get_config(name: str | DrasConfig, **overrides) -> DrasConfig:
    """A named configuration (``small``, ``theta``) with optional field overrides."""
    if isinstance(name, DrasConfig):
        cfg = name
    elif name in CONFIGS:
        cfg = CONFIGS[name]
    else:
        raise HpcoptError(f"unknown DRAS config {name!r}; expected one of {sorted(CONFIGS)}."
                          + closest(str(name), CONFIGS))
    return replace(cfg, **overrides) if overrides else cfg


class DrasNet(nn.Module):
    """1x2 convolution over rows, two leaky-ReLU FC layers, ``out`` outputs."""

    def __init__(self, rows: int, hidden: tuple[int, int], out: int) -> None:
        super().__init__()
        self.rows = rows
        self.conv = nn.Conv2d(1, 1, kernel_size=(1, 2))
        self.fc1 = nn.Linear(rows, hidden[0])
        self.fc2 = nn.Linear(hidden[0], hidden[1])
        self.out = nn.Linear(hidden[1], out)
        self.act = nn.LeakyReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: ``[batch, rows, 2]`` -> ``[batch, out]``."""
        h = self.conv(x.unsqueeze(1)).flatten(1)
        h = self.act(self.fc1(h))
        h = self.act(self.fc2(h))
        return self.out(h)


def n_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


class DrasAgent:
    """A DRAS agent: ``kind`` ``"pg"`` or ``"dql"`` on a machine of ``nodes`` nodes.

    ``levels`` records whether it was trained on the two-level process (``"dras"``) or the
    one-level Decima baseline (``"decima"``).  ``act`` picks a window slot; ``observe`` stores
    one transition; ``maybe_update`` applies Eq. (3) / (4) every ``update_every`` instances.
    """

    def __init__(self, kind: str, nodes: int, config: DrasConfig | str = "small", *,
                 levels: str = "dras", seed: int | None = None) -> None:
        if kind not in KINDS:
            raise HpcoptError(f"unknown DRAS agent {kind!r}; expected one of {KINDS}."
                              + closest(str(kind), KINDS))
        self.kind = kind
        self.config = get_config(config)
        self.nodes = int(nodes)
        self.levels = levels
        self.seed = seed
        cfg = self.config
        self.node_rows = self.nodes if cfg.node_rows is None else cfg.node_rows
        rows = (2 * cfg.window if kind == "pg" else 2) + self.node_rows
        if seed is not None:
            torch.manual_seed(seed)
        self.net = DrasNet(rows, cfg.hidden, cfg.window if kind == "pg" else 1)
        self._optim = None  # built on first update: Adam's import is slow, inference skips it
        self._optim_state: dict | None = None
        self._gen = torch.Generator().manual_seed(0 if seed is None else seed)
        self._rng = np.random.default_rng(seed)
        self.epsilon = cfg.eps_start
        self.updates = 0
        self._base_sum = np.zeros(0)
        self._base_cnt = np.zeros(0)
        self._memory: list = []
        self._last_instance = 0
        self.decision_seconds = 0.0
        self.decisions = 0

    @property
    def optim(self) -> torch.optim.Optimizer:
        """Adam over the network (learning rate ``config.lr``), created when first needed."""
        if self._optim is None:
            self._optim = torch.optim.Adam(self.net.parameters(), lr=self.config.lr)
            if self._optim_state:
                self._optim.load_state_dict(self._optim_state)
            self._optim_state = None
        return self._optim

    # ------------------------------------------------------------------ acting
    def env_options(self) -> dict:
        """Keyword arguments for ``DrasEnv`` that match this agent's encoding."""
        cfg = self.config
        return dict(window=cfg.window, node_rows=cfg.node_rows, reward=cfg.reward,
                    reserve=cfg.reserve, time_scale=cfg.time_scale, levels=self.levels)

    def _job_inputs(self, obs: np.ndarray) -> np.ndarray:
        """DQL inputs ``[W, 2 + R, 2]``: each job cell stacked on the node rows."""
        w = self.config.window
        cells = obs[: 2 * w].reshape(w, 2, 2)
        nodes = np.broadcast_to(obs[2 * w:], (w, *obs[2 * w:].shape))
        return np.concatenate([cells, nodes], axis=1)

    def scores(self, obs: np.ndarray) -> torch.Tensor:
        """Logits (PG) or Q values (DQL) of the W window slots, shape ``[W]``."""
        if self.kind == "pg":
            return self.net(torch.from_numpy(obs).unsqueeze(0))[0]
        return self.net(torch.from_numpy(self._job_inputs(obs)))[:, 0]

    def act(self, obs: np.ndarray, mask: np.ndarray, *, deterministic: bool = False) -> int:
        """A legal window slot: PG samples the masked softmax (argmax when
        ``deterministic``); DQL takes the best Q value, or a random legal slot with
        probability epsilon when not ``deterministic``."""
        t0 = time.perf_counter()
        legal = np.flatnonzero(mask)
        if len(legal) == 0:
            raise HpcoptError("DRAS agent asked to act with no legal action")
        if self.kind == "dql" and not deterministic and self._rng.random() < self.epsilon:
            action = int(self._rng.choice(legal))
        elif len(legal) == 1:
            action = int(legal[0])
        else:
            with torch.no_grad():
                s = self.scores(obs)
            bad = torch.from_numpy(np.asarray(mask) == 0)
            s = s.masked_fill(bad, -torch.inf)
            if self.kind == "pg" and not deterministic:
                p = torch.softmax(s, 0)
                action = int(torch.multinomial(p, 1, generator=self._gen))
            else:
                action = int(torch.argmax(s))
        self.decision_seconds += time.perf_counter() - t0
        self.decisions += 1
        return action

    def start_episode(self, seed: int | None = None) -> None:
        """Begin an episode: forget transitions not yet learnt from and restart the update
        count; with ``seed``, reseed torch and the agent's sampling generator."""
        if seed is not None:
            torch.manual_seed(seed)
            self._gen.manual_seed(seed)
        self._last_instance = 0
        self._memory = []

    # ------------------------------------------------------------------ learning
    def observe(self, obs, mask, action, reward, next_obs, next_mask, done) -> None:
        """Store one transition for the next update."""
        self._memory.append((obs, np.asarray(mask, dtype=bool), int(action), float(reward),
                             next_obs, np.asarray(next_mask, dtype=bool), bool(done)))

    def maybe_update(self, instance: int, done: bool) -> float | None:
        """Update when ``update_every`` instances have passed since the last one (or at the
        end of the episode); returns the loss, or ``None`` when it did not update."""
        if done or instance - self._last_instance > self.config.update_every:
            self._last_instance = instance - 1 if not done else 0
            return self.update()
        return None

    def update(self) -> float | None:
        """One parameter update from the stored transitions, then clear them."""
        memory, self._memory = self._memory, []
        if not memory:
            return None
        self.net.train()
        loss = self._pg_loss(memory) if self.kind == "pg" else self._dql_loss(memory)
        self.optim.zero_grad()
        loss.backward()
        self.optim.step()
        self.updates += 1
        if self.kind == "dql":
            self.epsilon = max(self.config.eps_min, self.epsilon * self.config.eps_decay)
        return float(loss.detach())

    def _pg_loss(self, memory) -> torch.Tensor:
        obs = torch.from_numpy(np.stack([m[0] for m in memory]))
        masks = torch.from_numpy(np.stack([m[1] for m in memory]).astype(bool))
        actions = torch.tensor([m[2] for m in memory])
        rewards = np.array([m[3] for m in memory])
        returns = np.cumsum(rewards[::-1])[::-1].copy()
        k = len(returns)
        if len(self._base_sum) < k:
            pad = k - len(self._base_sum)
            self._base_sum = np.concatenate([self._base_sum, np.zeros(pad)])
            self._base_cnt = np.concatenate([self._base_cnt, np.zeros(pad)])
        cnt = self._base_cnt[:k]
        baseline = np.divide(self._base_sum[:k], cnt, out=np.zeros(k), where=cnt > 0)
        self._base_sum[:k] += returns
        self._base_cnt[:k] += 1
        logits = self.net(obs).masked_fill(~masks, -torch.inf)
        logp = torch.log_softmax(logits, 1).gather(1, actions[:, None])[:, 0]
        adv = torch.from_numpy((returns - baseline).astype(np.float32))
        return -(logp * adv).sum()

    def _dql_loss(self, memory) -> torch.Tensor:
        w = self.config.window
        cur = np.stack([self._job_inputs(m[0])[m[2]] for m in memory])
        q = self.net(torch.from_numpy(cur))[:, 0]
        with torch.no_grad():
            live = [i for i, m in enumerate(memory) if not m[6]]
            nxt = np.zeros(len(memory), dtype=np.float32)
            if live:
                batch = np.concatenate([self._job_inputs(memory[i][4]) for i in live])
                qn = self.net(torch.from_numpy(batch))[:, 0].reshape(len(live), w)
                masks = torch.from_numpy(np.stack([memory[i][5] for i in live]).astype(bool))
                best = qn.masked_fill(~masks, -torch.inf).max(1).values
                nxt[live] = best.numpy()
        target = torch.tensor([m[3] for m in memory], dtype=torch.float32) \
            + self.config.gamma * torch.from_numpy(nxt)
        return ((target - q) ** 2).sum()

    # ------------------------------------------------------------------ persistence
    def check_system(self, nodes: int, source: str = "checkpoint") -> None:
        """Refuse a machine of another size when the encoding is per node."""
        if self.config.node_rows is None and int(nodes) != self.nodes:
            raise HpcoptError(
                f"{source} was trained for {self.nodes} nodes with one input row per node; "
                f"this system has {nodes}: train one for it (hpcopt train dras --trace ...) "
                "or use a size-independent config (node_rows set, e.g. 'small')")

    def save(self, path: str | Path, **meta) -> Path:
        """Write the agent (network, optimizer, baseline, epsilon, config) to ``path``."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({
            "format": FORMAT, "kind": self.kind, "levels": self.levels, "nodes": self.nodes,
            "seed": self.seed, "config": self.config.to_dict(),
            "net": self.net.state_dict(),
            "optim": self._optim.state_dict() if self._optim is not None
            else (self._optim_state or {}),
            "base_sum": torch.from_numpy(self._base_sum.copy()),
            "base_cnt": torch.from_numpy(self._base_cnt.copy()),
            "epsilon": self.epsilon, "updates": self.updates, "meta": meta,
        }, path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> DrasAgent:
        """Read an agent written by ``save``; one-line errors for missing or foreign files."""
        from .checkpoint import read_checkpoint

        state = read_checkpoint(path, "DRAS", FORMAT)
        agent = cls(state["kind"], state["nodes"], DrasConfig.from_dict(state["config"]),
                    levels=state["levels"], seed=state["seed"])
        agent.net.load_state_dict(state["net"])
        agent._optim_state = state["optim"] or None
        agent._base_sum = state["base_sum"].numpy().copy()
        agent._base_cnt = state["base_cnt"].numpy().copy()
        agent.epsilon = float(state["epsilon"])
        agent.updates = int(state["updates"])
        agent.meta = dict(state.get("meta") or {})
        return agent
