"""Neural simulated annealing (NSA): the learned repair operator for DCAS (runtime part).

Lan et al., CLUSTER'23, sections V-A/V-B and VI-A..VI-C.  NSA is the SA of
``hpcopt.solvers.dcas_sa`` with the repair step done by a policy network: after the destroy
step removed 1..n_D jobs, the removed jobs are re-inserted largest first, and for each one the
network picks its first position in the current idle sequence Q (DCAS: Q shrinks after every
insertion).

The repair MDP (section V-B)
----------------------------
* State, ``q x 4`` (q = 100): row i describes the i-th entry of the current Q -- its leaf
  switch id / (leaves - 1), its pod id / (pods - 1), the current job's size / n_max and the
  mean size of the other jobs still to insert / n_max (the paper's
  ``sum_{j' in J' \\ {j}} n_j' / ((|J'| - 1) n_max)``, 0 for the last job); rows beyond |Q|
  are zeros.  n_max = 40, the largest job of the paper's workload.
* Action: a first position 0..q-1; positions >= |Q| are illegal and their logits are set to
  the smallest float before the softmax, so their probability is exactly 0.
* Reward: 0 for every job but the last; after the last, ``-(sum of the CH costs of the
  repaired jobs) / (c * h_other * n_max)`` -- the paper's negative cost, scaled so that one
  job of n_max nodes spread over pods (the worst case) scores about -1 (c = 1000,
  h_other = 6, n_max = 40 on ``paper-1000``: scale 240,000).

Networks (Table II): ``fcn1..fcn3`` and ``cnn1..cnn3`` as printed (Tanh between the listed
layers only; the CNNs' two final Linear layers have no activation between them, as in the
table).  The critic is the same body with a 1-output head.  The parameter totals printed in
Table II do not follow from its layer lists: the FCN totals (42,724 / 46,884 / 60,804) are
exactly those of the same layers on a 500-wide input (q x 5), and the CNN totals match no
reading of the listed layers; ``n_parameters`` gives the counts of the layers as listed
(FCN 36,324 / 40,484 / 51,204; CNN 71,260 / 71,504 / 117,372).

This module is what the ``nsa`` backend (``hpcopt.solvers.dcas_nsa``) loads: the repair MDP's
state and mask, the Table II networks, and ``LearnedRepair`` (inference and checkpoints).  It
imports nothing of the solvers, the driver or the training; PPO training, its episodes and
window pools, learning curves and plots are in ``hpcopt.trainers.nsa_train``.

Shipped operator: ``hpcopt/agents/checkpoints/nsa_cnn3_paper1000.pt`` (CNN-3, q = 100, n_max =
40, n_D = 2, ``paper-1000``; 844 kB with the critic), made by ``hpcopt train nsa --arch cnn3
--imitation 2000 --episodes 128 --seed 0``: 2,000 imitation updates of 128 episodes towards the
softmin teacher (temperature 2,000 cost units), then one PPO update -- 256,128 episodes in 180 s
on the shared 2-core CPU, validation reward -0.452 at the end (best -0.442; greedy actions, 512
episodes from windows of seed 999).  This warm start is ours, not the paper's recipe (PPO from
scratch).  The first operator, PPO from scratch for 1,800 s (430,208 episodes, 3,361 updates,
critic baseline, lr 3e-4, seed 0), learned little: in ``benchmarks/tjap_solvers.py --epochs 10
--windows 100`` (the paper's 1,000 windows, sequential start) its NSA-500 was 2.8% worse than
SA-1000; with the shipped operator NSA-500 is on par (-0.12%,
``--big 0 --methods seq,sa-1000,sa-3500,nsa-500,scas-exact --tag _nsa``;
benchmarks/README.md).  The state only shows the first q = 100 positions of Q, and early windows
hold hundreds of idle nodes, so the cheapest blocks are often out of the network's reach.
NSA-500 takes ~0.28 s per window (one network call per inserted job), SA-1000 ~0.08 s (the
paper: NSA-500 1.34% better than SA-1000 at equal time). """

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from torch import nn

from hpcopt.errors import HpcoptError, closest
from hpcopt.topology import FatTree, take_block

FORMAT = "hpcopt-nsa/1"
FEATURES = 4
DEFAULT_Q = 100
DEFAULT_N_MAX = 40
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "checkpoints" / "nsa_cnn3_paper1000.pt"

# Table II as printed: (conv1 channels, conv2 channels) for CNNs, hidden widths for FCNs.
ARCHS = {
    "fcn1": ("fcn", (64, 64)),
    "fcn2": ("fcn", (64, 64, 64)),
    "fcn3": ("fcn", (96, 64)),
    "cnn1": ("cnn", (4, 4)),
    "cnn2": ("cnn", (8, 4)),
    "cnn3": ("cnn", (16, 8)),
}
# The totals printed in Table II (see the module docstring for why they differ).
TABLE_II_PARAMS = {"fcn1": 42724, "fcn2": 46884, "fcn3": 60804,
                   "cnn1": 37248, "cnn2": 42097, "cnn3": 54641}


class NSAError(HpcoptError):
    """A checkpoint or option the NSA operator cannot use."""


# --------------------------------------------------------------------------- networks
def build_body(arch: str, q: int = DEFAULT_Q, out: int | None = None,
               features: int = FEATURES) -> nn.Sequential:
    """The Table II network ``arch`` on a ``q x features`` state with ``out`` outputs
    (default q: the actor; 1: the critic)."""
    if arch not in ARCHS:
        raise NSAError(f"unknown NSA architecture {arch!r}{closest(arch, ARCHS)}; "
                       f"expected one of {sorted(ARCHS)}")
    out = q if out is None else out
    kind, widths = ARCHS[arch]
    if kind == "fcn":
        layers: list[nn.Module] = [nn.Flatten()]
        width = q * features
        for w in widths:
            layers += [nn.Linear(width, w), nn.Tanh()]
            width = w
        layers.append(nn.Linear(width, out))
        return nn.Sequential(*layers)
    c1, c2 = widths
    length = (q - 10 + 1 - 5) // 2 + 1  # Conv1d(k=10, s=1) then Conv1d(k=5, s=2)
    if length < 1:
        raise NSAError(f"CNN architectures need q >= 14, got q={q}")
    return nn.Sequential(
        _ChannelsFirst(),
        nn.Conv1d(features, c1, 10, 1, 0), nn.Tanh(),
        nn.Conv1d(c1, c2, 5, 2, 0), nn.Flatten(),
        nn.Linear(c2 * length, 256), nn.Linear(256, out))


class _ChannelsFirst(nn.Module):
    """``(batch, q, features)`` -> ``(batch, features, q)`` for Conv1d."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.transpose(1, 2)


def n_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


class ActorCritic(nn.Module):
    """Actor (q logits) and critic (one value) with the same Table II body, no sharing."""

    def __init__(self, arch: str, q: int = DEFAULT_Q) -> None:
        super().__init__()
        self.arch, self.q = arch, q
        self.actor = build_body(arch, q)
        self.critic = build_body(arch, q, out=1)

    def logits(self, states: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
        """Actor logits with illegal positions set to the smallest float."""
        raw = self.actor(states)
        return raw.masked_fill(~masks, torch.finfo(raw.dtype).min)

    def value(self, states: torch.Tensor) -> torch.Tensor:
        return self.critic(states).squeeze(-1)


# --------------------------------------------------------------------------- the MDP
def encode_state(topology: FatTree, seq: np.ndarray, size: int, others, q: int = DEFAULT_Q,
                 n_max: int = DEFAULT_N_MAX) -> np.ndarray:
    """The ``q x 4`` state of inserting a job of ``size`` nodes into the idle sequence
    ``seq`` with the jobs ``others`` still to insert after it (module docstring)."""
    state = np.zeros((q, FEATURES), dtype=np.float32)
    head = np.asarray(seq[:q], dtype=np.int64)
    m = head.size
    if m == 0:
        return state
    state[:m, 0] = topology.leaf[head] / max(topology.n_leaves - 1, 1)
    state[:m, 1] = topology.pod[head] / max(topology.n_pods - 1, 1)
    state[:m, 2] = size / n_max
    others = list(others)
    state[:m, 3] = sum(others) / (len(others) * n_max) if others else 0.0
    return state


def action_mask(seq_len: int, q: int = DEFAULT_Q) -> np.ndarray:
    """Legal first positions: 0..min(|Q|, q) - 1."""
    mask = np.zeros(q, dtype=bool)
    mask[:min(seq_len, q)] = True
    return mask


def reward_scale(topology: FatTree, n_max: int = DEFAULT_N_MAX) -> float:
    """``c * h_other * n_max``: the terminal reward is ``-repair cost / reward_scale``."""
    cm = topology.cost_model
    return float(cm.c * cm.h_other * n_max)


def _signature(topology: FatTree) -> list:
    cm = topology.cost_model
    return [int(topology.n_nodes), int(topology.nodes_per_leaf), int(topology.leaves_per_pod),
            cm.h_leaf, cm.h_pod, cm.h_other, cm.c, bool(cm.ordered), bool(cm.integer)]


def _sample(probs: np.ndarray, legal: int, rng: np.random.Generator) -> int:
    """Inverse-CDF draw from ``probs`` restricted to the first ``legal`` entries."""
    cdf = np.cumsum(probs[:legal], dtype=np.float64)
    return min(int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right")), legal - 1)


# --------------------------------------------------------------------------- the operator
class LearnedRepair:
    """The NSA repair operator: ``repair(model, seq, sizes, rng) -> positions`` (the protocol
    of ``hpcopt.solvers.dcas_sa``), one policy decision per job.

    ``mode="sample"`` (default) draws each position from the policy with ``rng``, so runs are
    reproducible from the SA seed and the search keeps exploring; ``"greedy"`` takes the
    argmax.
    """

    name = "learned"
    MODES = ("sample", "greedy")

    def __init__(self, policy: ActorCritic, *, topology: FatTree, n_max: int = DEFAULT_N_MAX,
                 mode: str = "sample", meta: dict | None = None) -> None:
        if mode not in self.MODES:
            raise NSAError(f"nsa mode must be one of {list(self.MODES)}, got {mode!r}")
        self.policy = policy.eval()
        self.q, self.arch = policy.q, policy.arch
        self.topology = topology
        self.n_max = int(n_max)
        self.mode = mode
        self.meta = dict(meta or {})
        self.source = ""
        self.has_critic = True

    def check(self, topology: FatTree, q: int | None = None) -> None:
        """Raise ``NSAError`` unless this operator was trained for ``topology`` (and ``q``)."""
        if _signature(topology) != _signature(self.topology):
            raise NSAError(
                f"nsa checkpoint {self.source or '(in memory)'} was trained for {self.topology!r},"
                f" the model's topology is {topology!r}; train one with 'hpcopt train nsa "
                f"--topology ...'")
        if q is not None and int(q) != self.q:
            raise NSAError(f"nsa checkpoint {self.source or '(in memory)'} was trained with "
                           f"q={self.q}, got q={q}; train one with 'hpcopt train nsa --q {q}'")

    @torch.inference_mode()
    def __call__(self, model, seq, sizes, rng) -> list[int]:
        out = []
        seq = np.asarray(seq, dtype=np.int64)
        sizes = [int(n) for n in sizes]
        for i, n in enumerate(sizes):
            state = encode_state(model.topology, seq, n, sizes[i + 1:], self.q, self.n_max)
            legal = min(seq.size, self.q)
            logits = self.policy.actor(torch.from_numpy(state)[None])[0, :legal].numpy()
            if self.mode == "greedy":
                p = int(np.argmax(logits))
            else:
                p = _sample(np.exp(logits - logits.max()), legal, rng)
            out.append(p)
            seq = take_block(seq, p, n)[1]
        return out

    # ---------------------------------------------------------------- persistence
    def save(self, path: str | Path, *, critic: bool = True, **meta) -> Path:
        """Write a checkpoint: weights, architecture, q, n_max, topology, metadata."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = {"format": FORMAT, "arch": self.arch, "q": self.q, "n_max": self.n_max,
               "topology": self.topology.to_dict(), "signature": _signature(self.topology),
               "actor": self.policy.actor.state_dict(),
               "meta": json.dumps({**self.meta, **meta})}
        if critic:
            doc["critic"] = self.policy.critic.state_dict()
        torch.save(doc, path)
        return path

    @classmethod
    def load(cls, path: str | Path, *, mode: str = "sample") -> LearnedRepair:
        """Read a checkpoint written by ``save``; one-line ``NSAError`` when it cannot."""
        from .checkpoint import read_checkpoint

        doc = read_checkpoint(path, "NSA", FORMAT, error=NSAError,
                              hint="; train one with 'hpcopt train nsa --out DIR' and pass "
                                   "solver_options={'checkpoint': PATH}")
        topology = FatTree.from_dict(doc["topology"])
        if _signature(topology) != list(doc["signature"]):
            raise NSAError(f"nsa checkpoint {path}: its topology {doc['topology']} no longer "
                           f"matches the one it was trained on")
        policy = ActorCritic(doc["arch"], int(doc["q"]))
        policy.actor.load_state_dict(doc["actor"])
        if "critic" in doc:
            policy.critic.load_state_dict(doc["critic"])
        op = cls(policy, topology=topology, n_max=int(doc["n_max"]), mode=mode,
                 meta=json.loads(doc["meta"]))
        op.has_critic = "critic" in doc
        op.source = str(path)
        return op

