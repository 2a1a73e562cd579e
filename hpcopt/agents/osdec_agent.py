"""The learned OSDEC agent (spec osdec.md, "Network"): state tokens, networks, aux module.

**Tokens** (one per job, ``JOB_FEATURES`` columns): one-hot {his, cur, fut}, ``c_i/C_max``,
``d_i/D_max``, the remaining duration of a running (his) job, ``t-e_i`` and ``l_i-t`` of a
current job, ``e_i-t`` and ``l_i-e_i`` of a future job (slot differences divided by ``D_max``,
the config's longest duration, 24).  For a job's cores ``C_max`` is the largest flavor
(``core_scale``, 16), not the machine size: over a machine of ~600 cores ``c_i/C_max`` is
~1e-3, too small for a linear embedding to tell a 1-core job from an 8-core one.  A global
vector ``[C_t/C_max, used/C_max, aux_low(5), aux_high(5)]`` (the aux parts only in the
variants that feed them, multiplied by ``aux_coef`` = 10) is concatenated to every token.
``C_max`` is the capacity known at slot t: the largest ``C_s`` of the slots the agent has been
asked so far, this one included (the actor keeps it).  Not the machine size: on an OSDEC day
that is the largest ``C_t`` of the whole day, so a capacity rise late in the day would change
every earlier input; not ``C_t`` itself either, which would make ``C_t/C_max`` constant and
divide by zero when the on-demand load takes everything.

At most ``K_max`` tokens: all current jobs first in the window's (FIFO) order, then the
running jobs in the driver's order (estimated end), then the future jobs by earliest start;
what does not fit is left out (a current job left out gets the lowest score: it still starts
when capacity is left after every scored job).  Padding is masked.

**Networks** (``OSDECNet``): ``att`` — a linear embedding, a Transformer encoder
(``nn.TransformerEncoder``: 1 head, 2 layers, d_model 64, FFN 128, post-norm as in the paper)
shared by the policy (per-token ``mu = tanh``, ``sigma = softplus`` as the std) and the value
(per-token linear, masked mean); ``mlp`` — the ``ppo-mlp`` ablation, an MLP over the padded
flat input (tokens and mask) with K_max outputs for mu and sigma and one value.  Only current
tokens are scored.

**Aux module** (``AuxNet``, Fig. 3): a GRU over past decision steps (``AUX_INPUT``: capacity,
load, violation, the jobs' counts, the last action's starts, mean cores and duration) ->
shared layer (low-level information, dim 5) -> task layer (high-level information, dim 5) ->
4 next-step predictions (``AUX_TARGET``: C_{t+1}, mean cores and mean duration of the
available jobs, the violation penalty), trained by MSE with its own Adam.  The GRU is stepped
online, so the information fed at step t has seen only steps before t.

Variants (``VARIANTS``): ``osdec`` = att + high + low, ``ppo-att-auxh`` (high only),
``ppo-att-auxl`` (low only), ``ppo-att`` (no aux), ``ppo-mlp``.  torch is imported here only;
``hpcopt.policies.osdec_learned`` imports this module when a simulation starts.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import torch
from torch import nn

from hpcopt.errors import HpcoptError

FORMAT = "hpcopt-osdec/1"
# variant -> (encoder, feed low-level aux info, feed high-level aux info)
VARIANTS = {"osdec": ("att", True, True), "ppo-att-auxh": ("att", False, True),
            "ppo-att-auxl": ("att", True, False), "ppo-att": ("att", False, False),
            "ppo-mlp": ("mlp", False, False)}
JOB_FEATURES = ("his", "cur", "fut", "cores", "duration", "remaining", "since_earliest",
                "to_latest", "to_earliest", "window")
AUX_INPUT = ("capacity", "used", "violation", "n_cur", "n_his", "n_fut", "started",
             "started_cores", "mean_cores", "mean_duration")
AUX_TARGET = ("capacity", "mean_cores", "mean_duration", "violation_penalty")
HIS, CUR, FUT = 0, 1, 2


@dataclass(frozen=True)
class AgentConfig:
    """Sizes of the networks and the state scales (spec osdec.md: ours where not given)."""

    k_max: int = 64
    d_model: int = 64
    heads: int = 1
    layers: int = 2
    ffn: int = 128
    mlp_hidden: int = 128
    aux_hidden: int = 32
    aux_low: int = 5
    aux_high: int = 5
    aux_coef: float = 10.0
    d_max: float = 24.0  # durations and slot differences are divided by this
    core_scale: float = 16.0  # job cores / this (the largest flavor): tokens, aux

    def __post_init__(self) -> None:
        if min(self.k_max, self.d_model, self.heads, self.layers, self.ffn, self.mlp_hidden,
               self.aux_hidden, self.aux_low, self.aux_high) < 1 or self.d_max <= 0:
            raise HpcoptError("OSDEC agent config: sizes must be >= 1 and d_max > 0")

    @classmethod
    def from_dict(cls, d: dict) -> AgentConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


def check_variant(variant: str) -> tuple[str, bool, bool]:
    if variant not in VARIANTS:
        raise HpcoptError(f"unknown OSDEC variant {variant!r}; one of {sorted(VARIANTS)}")
    return VARIANTS[variant]


# ------------------------------------------------------------------------------- the state
@dataclass
class SlotState:
    """What the agent sees at one slot: ``tokens`` ``[K_max, F_job]`` (job features, no
    global part), ``mask`` (real tokens), ``cur`` (current-job tokens), ``index`` (window
    position of each current token), the global base ``[C_t/C_max, used/C_max]`` and the
    aux module's input for this step."""

    tokens: np.ndarray
    mask: np.ndarray
    cur: np.ndarray
    index: list
    base: np.ndarray
    aux_x: np.ndarray
    n_cur: int


def capacity_at(window) -> int:
    """The capacity ``C_t`` of the window's slot (the machine size without a profile)."""
    return int(getattr(window.resources, "capacity", window.system.nodes))


def encode_slot(window, upcoming, cfg: AgentConfig, last_started=(0, 0),
                cap_seen: float = 0) -> SlotState:
    """Tokens of the window's slot (module docstring).  ``upcoming`` is the future set
    (``Simulator.upcoming`` values); ``last_started`` is (jobs, cores) the previous step
    started (the aux module's action input); ``cap_seen`` the largest capacity of the earlier
    slots (``C_max`` is it or ``C_t``, whichever is larger, at least 1)."""
    t = float(window.time)
    cap = float(capacity_at(window))
    cmax = float(max(1.0, cap_seen, cap))
    dmax = cfg.d_max
    K = cfg.k_max
    running = window.running
    used = float(sum(r.job.nodes for r in running))
    cur_jobs = list(window.jobs)
    fut_jobs = sorted(upcoming, key=lambda j: (j.earliest, j.submit, j.id))
    rows = []  # (kind, cores, dur, remaining, since_e, to_l, to_e, window)
    index = []
    for k, j in enumerate(cur_jobs[:K]):
        e = j.earliest if j.earliest is not None else j.submit
        latest = j.latest if j.latest is not None else t
        rows.append((CUR, j.nodes, j.walltime, 0.0, t - e, latest - t, 0.0, 0.0))
        index.append(k)
    room = K - len(rows)
    for r in running[:max(0, room)]:
        rows.append((HIS, r.job.nodes, r.job.walltime, r.start + r.job.walltime - t,
                     0.0, 0.0, 0.0, 0.0))
    room = K - len(rows)
    for j in fut_jobs[:max(0, room)]:
        latest = j.latest if j.latest is not None else j.earliest
        rows.append((FUT, j.nodes, j.walltime, 0.0, 0.0, 0.0, j.earliest - t,
                     latest - j.earliest))
    tokens = np.zeros((K, len(JOB_FEATURES)), dtype=np.float32)
    mask = np.zeros(K, dtype=bool)
    cur = np.zeros(K, dtype=bool)
    if rows:
        a = np.asarray(rows, dtype=np.float64)
        n = len(rows)
        kind = a[:, 0].astype(np.int64)
        tokens[np.arange(n), kind] = 1.0
        tokens[:n, 3] = a[:, 1] / cfg.core_scale
        tokens[:n, 4] = a[:, 2] / dmax
        tokens[:n, 5:] = a[:, 3:] / dmax
        mask[:n] = True
        cur[:n] = kind == CUR
    n_cur = len(cur_jobs)
    mean_c = float(np.mean([j.nodes for j in cur_jobs])) if cur_jobs else 0.0
    mean_d = float(np.mean([j.walltime for j in cur_jobs])) if cur_jobs else 0.0
    viol = max(0.0, used - cap)
    aux_x = np.array([cap / cmax, used / cmax, viol / cmax, n_cur / K, len(running) / K,
                      len(fut_jobs) / K, last_started[0] / K, last_started[1] / cmax,
                      mean_c / cfg.core_scale, mean_d / dmax], dtype=np.float32)
    base = np.array([cap / cmax, used / cmax], dtype=np.float32)
    return SlotState(tokens, mask, cur, index, base, aux_x, n_cur)


def aux_targets(aux_x: np.ndarray, w2: float) -> np.ndarray:
    """The 4 aux targets (``AUX_TARGET``) of steps ``[T, A]`` of aux inputs: row k holds
    what step k+1 shows (C, mean cores, mean duration, violation penalty); the last row
    has no next step (zeros; masked in the loss)."""
    y = np.zeros((len(aux_x), len(AUX_TARGET)), dtype=np.float32)
    if len(aux_x) > 1:
        nxt = aux_x[1:]
        y[:-1] = np.stack([nxt[:, 0], nxt[:, 8], nxt[:, 9], w2 * nxt[:, 2]], axis=1)
    return y


# ----------------------------------------------------------------------------- the networks
class OSDECNet(nn.Module):
    """Policy and value over padded tokens ``[B, K, F]`` (module docstring)."""

    def __init__(self, cfg: AgentConfig, encoder: str, in_dim: int) -> None:
        super().__init__()
        self.encoder_kind = encoder
        self.k_max = cfg.k_max
        if encoder == "att":
            d = cfg.d_model
            self.embed = nn.Linear(in_dim, d)
            layer = nn.TransformerEncoderLayer(d, cfg.heads, cfg.ffn, dropout=0.0,
                                               batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, cfg.layers, enable_nested_tensor=False)
            self.mu = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 1))
            self.sigma = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 1))
            self.value = nn.Linear(d, 1)
        else:
            h, K = cfg.mlp_hidden, cfg.k_max
            self.trunk = nn.Sequential(nn.Linear(K * in_dim + K, h), nn.ReLU(),
                                       nn.Linear(h, h), nn.ReLU())
            self.mu = nn.Linear(h, K)
            self.sigma = nn.Linear(h, K)
            self.value = nn.Linear(h, 1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor):
        """``(mu, std, value)``: ``mu``/``std`` ``[B, K]`` for every token (the caller
        scores only current ones), ``value`` ``[B]``.  An all-padding row is handled."""
        m = mask.to(x.dtype)
        if self.encoder_kind == "att":
            pad = ~mask
            pad[:, 0] &= mask.any(dim=1)  # an empty set attends to its (zero) first token
            h = self.encoder(self.embed(x), src_key_padding_mask=pad)
            mu = torch.tanh(self.mu(h).squeeze(-1))
            std = nn.functional.softplus(self.sigma(h).squeeze(-1)) + 1e-3
            v = self.value(h).squeeze(-1)
            value = (v * m).sum(1) / m.sum(1).clamp(min=1.0)
            return mu, std, value
        flat = torch.cat([(x * m.unsqueeze(-1)).flatten(1), m], dim=1)
        h = self.trunk(flat)
        return (torch.tanh(self.mu(h)), nn.functional.softplus(self.sigma(h)) + 1e-3,
                self.value(h).squeeze(-1))


class AuxNet(nn.Module):
    """GRU -> shared layer (low info) -> task layer (high info) -> 4 predictions."""

    def __init__(self, cfg: AgentConfig) -> None:
        super().__init__()
        self.gru = nn.GRU(len(AUX_INPUT), cfg.aux_hidden, batch_first=True)
        self.shared = nn.Sequential(nn.Linear(cfg.aux_hidden, cfg.aux_low), nn.Tanh())
        self.task = nn.Sequential(nn.Linear(cfg.aux_low, cfg.aux_high), nn.Tanh())
        self.out = nn.Linear(cfg.aux_high, len(AUX_TARGET))

    def forward(self, x: torch.Tensor, h0: torch.Tensor | None = None):
        """``x`` ``[B, T, A]`` -> ``(low, high, prediction, h_T)`` per step."""
        y, h = self.gru(x, h0)
        low = self.shared(y)
        high = self.task(low)
        return low, high, self.out(high), h


# ------------------------------------------------------------------------------- the agent
class OSDECAgent:
    """A variant's networks plus its config and training meta; ``save``/``load``."""

    def __init__(self, variant: str = "osdec", config: AgentConfig | None = None,
                 seed: int = 0) -> None:
        self.encoder, self.feed_low, self.feed_high = check_variant(variant)
        self.variant = variant
        self.config = config or AgentConfig()
        self.seed = int(seed)
        cfg = self.config
        self.in_dim = len(JOB_FEATURES) + 2 + (cfg.aux_low if self.feed_low else 0) \
            + (cfg.aux_high if self.feed_high else 0)
        with torch.random.fork_rng(devices=[]):  # seeded init, the global RNG left alone
            torch.manual_seed(self.seed)
            self.net = OSDECNet(cfg, self.encoder, self.in_dim)
            self.aux = AuxNet(cfg) if (self.feed_low or self.feed_high) else None
        self.meta: dict = {}

    @property
    def uses_aux(self) -> bool:
        return self.aux is not None

    def global_vector(self, base: np.ndarray, low, high) -> np.ndarray:
        """``[C_t/C_max, used/C_max]`` plus the fed aux information (times ``aux_coef``)."""
        parts = [base]
        c = self.config.aux_coef
        if self.feed_low:
            parts.append(c * np.asarray(low, dtype=np.float32))
        if self.feed_high:
            parts.append(c * np.asarray(high, dtype=np.float32))
        return np.concatenate(parts).astype(np.float32)

    def inputs(self, state: SlotState, glob: np.ndarray) -> np.ndarray:
        """Network input ``[K, in_dim]``: tokens with the global vector (zero on padding)."""
        x = np.concatenate([state.tokens, np.broadcast_to(glob, (len(state.tokens),
                                                                 len(glob)))], axis=1)
        x[~state.mask] = 0.0
        return x

    def save(self, path, **meta) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"format": FORMAT, "variant": self.variant, "seed": self.seed,
                    "config": asdict(self.config), "net": self.net.state_dict(),
                    "aux": self.aux.state_dict() if self.aux is not None else None,
                    "meta": {**self.meta, **meta}}, path)
        return path

    @classmethod
    def load(cls, path) -> OSDECAgent:
        """Read an agent written by ``save``; one-line errors for missing or foreign files."""
        from .checkpoint import read_checkpoint

        state = read_checkpoint(path, "OSDEC", FORMAT)
        agent = cls(state["variant"], AgentConfig.from_dict(state["config"]), state["seed"])
        agent.net.load_state_dict(state["net"])
        if agent.aux is not None:
            agent.aux.load_state_dict(state["aux"])
        agent.meta = dict(state.get("meta") or {})
        agent.net.eval()
        return agent


# ------------------------------------------------------------------------------- acting
@dataclass
class Step:
    """One recorded decision step (for PPO and the aux module)."""

    slot: int
    x: np.ndarray  # network input [K, in_dim]
    mask: np.ndarray
    cur: np.ndarray
    action: np.ndarray  # sampled scores [K] (0 off the current tokens)
    logp: float
    value: float
    aux_x: np.ndarray


class Actor:
    """Runs an agent slot by slot inside the driver (``hpcopt.policies.osdec_learned``): encodes the
    slot, steps the aux GRU, scores the current jobs (``mu``, or a sample when ``generator``
    is given) and, with ``record``, keeps a ``Step`` per slot."""

    def __init__(self, agent: OSDECAgent, *, generator: torch.Generator | None = None,
                 record: bool = False) -> None:
        self.agent = agent
        self.generator = generator
        self.record = record
        self.reset()

    def reset(self) -> None:
        self.steps: list[Step] = []
        self._h = None
        self._low = np.zeros(self.agent.config.aux_low, dtype=np.float32)
        self._high = np.zeros(self.agent.config.aux_high, dtype=np.float32)
        self._last_started = (0, 0)
        self._cap_seen = 0  # the largest capacity of the slots asked so far (C_max)
        self.decision_seconds = 0.0
        self.decisions = 0

    def _aux_step(self, aux_x: np.ndarray) -> None:
        """Feed this step's aux input: the information used at the *next* step."""
        with torch.no_grad():
            low, high, _, self._h = self.agent.aux(
                torch.from_numpy(aux_x).view(1, 1, -1), self._h)
        self._low, self._high = low[0, 0].numpy(), high[0, 0].numpy()

    def scores(self, window, upcoming) -> list:
        """One score per window job (lowest for the jobs not tokenised)."""

        t0 = time.perf_counter()
        agent = self.agent
        self._cap_seen = max(self._cap_seen, capacity_at(window))
        state = encode_slot(window, upcoming, agent.config, self._last_started, self._cap_seen)
        glob = agent.global_vector(state.base, self._low, self._high)
        x = agent.inputs(state, glob)
        with torch.no_grad():
            xt = torch.from_numpy(x).unsqueeze(0)
            mt = torch.from_numpy(state.mask).unsqueeze(0)
            mu, std, value = agent.net(xt, mt)
            mu, std = mu[0], std[0]
            cur = torch.from_numpy(state.cur)
            if self.generator is None:
                act = mu
                logp = 0.0
            else:
                act = mu + std * torch.randn(mu.shape, generator=self.generator)
                lp = torch.distributions.Normal(mu, std).log_prob(act)
                logp = float(lp[cur].sum())
            act = torch.where(cur, act, torch.zeros_like(act))
        a = act.numpy()
        out = [-np.inf] * len(window.jobs)
        for tok, k in enumerate(state.index):
            out[k] = float(a[tok])
        if self.record:
            self.steps.append(Step(int(round(window.time)), x, state.mask, state.cur,
                                   a.astype(np.float32), logp, float(value[0]), state.aux_x))
        if agent.aux is not None:
            self._aux_step(state.aux_x)
        self.decision_seconds += time.perf_counter() - t0
        self.decisions += 1
        return out

    def started(self, jobs) -> None:
        """The jobs the last scores started (the aux module's action input)."""
        self._last_started = (len(jobs), sum(j.nodes for j in jobs))


__all__ = ["AUX_INPUT", "AUX_TARGET", "Actor", "AgentConfig", "AuxNet", "FORMAT",
           "JOB_FEATURES", "OSDECAgent", "OSDECNet", "SlotState", "Step", "VARIANTS",
           "aux_targets", "capacity_at", "check_variant", "encode_slot"]
