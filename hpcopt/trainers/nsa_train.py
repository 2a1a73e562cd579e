"""Training of the NSA repair operator (``hpcopt.agents.nsa``) with PPO.

Lan et al., CLUSTER'23, sections V-B and VI-A..VI-C.  The MDP, the networks and the operator
that the ``nsa`` backend loads are in ``hpcopt.agents.nsa`` (see its docstring for the state,
the reward and the shipped checkpoint); this module trains them: rollouts, PPO and imitation
updates, the training and validation window pools, checkpoints during training, the learning
curve and its plot.  ``hpcopt train nsa`` calls ``train``.

PPO (``ppo_update``): clipped surrogate (epsilon 0.2), actor and critic, Monte-Carlo returns
with gamma = 1 (an episode has at most n_D steps and one terminal reward, so every step's
return is the final reward; GAE would add nothing), advantage = return - V(s) normalised per
batch, value loss weight 0.5, entropy bonus 0.01, Adam, gradient-norm clip 0.5.  Option
``PPOConfig(baseline="group", group=K)``: K repairs of each destroyed solution per batch and
the group's mean return as the baseline (no critic error in the advantage).  In our CPU runs
it drove the entropy to ~0 within ~8k episodes at lr 3e-4; at lr 1e-4 with entropy bonus
0.02 (464k episodes, 720 s) it reached validation reward -0.504 (critic run: -0.511) but with
entropy ~0.1 the sampled repair hardly varies, and NSA-500 from the sequential start on 20
validation windows cost 356,151 against 339,848 with the critic operator (SA-500: 333,908).

Training episodes (``train``) are cut from windows of the paper's workload: a start solution
of the window (sequential placement, the SCAS optimum, or the SCAS optimum improved by 100
steps of random-repair SA, one per window) loses 1..n_D random jobs; the agent repairs them.
Windows come from ``hpcopt.policies.tjap.generate_windows`` (the windows the
window-period driver meets on a generated workload) unless given; ``random_windows`` (a
fragmented cluster: random blocks taken until a random utilisation) makes small stand-ins.
"""

from __future__ import annotations

import csv
import json
import math
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch
from torch import nn

from hpcopt.agents.nsa import (
    ARCHS,
    DEFAULT_N_MAX,
    DEFAULT_Q,
    ActorCritic,
    LearnedRepair,
    NSAError,
    _sample,
    action_mask,
    encode_state,
    reward_scale,
)
from hpcopt.errors import closest
from hpcopt.models.dcas import DCASModel
from hpcopt.policies.tjap import generate_windows
from hpcopt.solvers.dcas_sa import (
    RandomRepair,
    anneal,
    initial_decision,
    sequential_decision,
)
from hpcopt.topology import FatTree, take_block


# --------------------------------------------------------------------------- windows
def random_windows(n_windows: int, *, seed: int = 0, topology="paper-1000",
                   max_jobs: int = 10, n_max: int = DEFAULT_N_MAX) -> list:
    """Stand-in DCAS windows: running jobs of U[1, n_max] nodes take random contiguous blocks
    of the idle sequence until a utilisation drawn from U[0.2, 0.95] is reached (so the idle
    nodes are fragmented as on a busy cluster), then a window of U[1, max_jobs] jobs of
    U[1, n_max] nodes that fits the idle nodes."""

    topo = topology if isinstance(topology, FatTree) else FatTree.preset(topology)
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n_windows:
        seq = np.arange(topo.n_nodes, dtype=np.int64)
        target = topo.n_nodes * (1 - rng.uniform(0.2, 0.95))
        while seq.size > target:
            n = min(int(rng.integers(1, n_max + 1)), seq.size)
            seq = take_block(seq, int(rng.integers(seq.size)), n)[1]
        sizes, free = [], seq.size
        for _ in range(int(rng.integers(1, max_jobs + 1))):
            n = int(rng.integers(1, n_max + 1))
            if n <= free:
                sizes.append(n)
                free -= n
        if sizes:
            out.append(DCASModel(topo, seq, sizes))
    return out


def training_windows(n_windows: int, *, seed: int, topology="paper-1000") -> tuple[list, str]:
    """Windows of the paper's workload from the window-period driver
    (``hpcopt.policies.tjap.generate_windows``), and the name of their source."""

    return generate_windows(n_windows, seed=seed, topology=topology), "generate_windows"


@dataclass
class _Start:
    """A window with a complete start solution (placement order and first node ids)."""

    model: object
    order: list
    firsts: list


def _start_solution(model, how: str, rng: np.random.Generator) -> _Start:
    if how == "sequential":
        x = sequential_decision(model)
    else:
        x, _ = initial_decision(model, None, "scas-exact", "nsa")
        if how == "sa":
            x = anneal(model, x, RandomRepair(), t_max=100, rng=rng).decision
    order = [int(j) for j in x[:model.n_jobs]]
    sets = model.node_sets(x)
    return _Start(model, order, [int(sets[j][0]) for j in order])


@dataclass
class _Episode:
    """One repair episode: the idle sequence after the kept jobs and the jobs to insert."""

    model: object
    seq: np.ndarray
    sizes: list
    step: int = 0
    cost: float = 0.0


def _cut_episode(start: _Start, n_remove: int, rng: np.random.Generator) -> _Episode:
    model = start.model
    k = min(int(rng.integers(1, n_remove + 1)), model.n_jobs)
    removed = {int(j) for j in rng.choice(model.n_jobs, k, replace=False)}
    keep = [(j, f) for j, f in zip(start.order, start.firsts) if j not in removed]
    seq = model.place([j for j, _ in keep], [f for _, f in keep])[2]
    sizes = sorted((int(model.sizes[j]) for j in removed), reverse=True)
    return _Episode(model, seq, sizes)


# --------------------------------------------------------------------------- PPO
@dataclass(frozen=True)
class PPOConfig:
    """PPO settings (module docstring); ``batch`` is episodes per update.

    ``baseline``: ``"critic"`` (advantage = return - V(s), the paper's actor-critic) or
    ``"group"`` (each destroyed solution is repaired ``group`` times in the batch and the
    advantage is the return minus its group's mean return -- a lower-variance baseline for
    this one-reward MDP; the critic is still trained).
    """

    lr: float = 3e-4
    batch: int = 128
    epochs: int = 4
    minibatch: int = 64
    clip: float = 0.2
    value_coef: float = 0.5
    entropy_coef: float = 0.01
    max_grad_norm: float = 0.5
    baseline: str = "critic"
    group: int = 1

    def __post_init__(self) -> None:
        if not self.lr > 0 or min(self.batch, self.epochs, self.minibatch) < 1:
            raise NSAError(f"PPO needs lr > 0 and batch, epochs, minibatch >= 1; got lr="
                           f"{self.lr}, batch={self.batch}, epochs={self.epochs}, "
                           f"minibatch={self.minibatch}")
        if self.baseline not in ("critic", "group"):
            raise NSAError(f"PPO baseline must be 'critic' or 'group', got {self.baseline!r}")
        if self.group < 1 or self.batch % self.group:
            raise NSAError(f"PPO group must be >= 1 and divide batch={self.batch}, "
                           f"got {self.group}")
        if self.baseline == "group" and self.group < 2:
            raise NSAError("PPO baseline 'group' needs group >= 2")


def rollout(policy: ActorCritic, episodes: list[_Episode], *, n_max: int,
            rng: np.random.Generator, device="cpu", greedy: bool = False) -> dict:
    """Run the episodes to their end with the current policy (sampling, or the argmax with
    ``greedy``; batched across episodes); returns the transitions and per-episode rewards for
    ``ppo_update``."""
    q = policy.q
    topo = episodes[0].model.topology
    scale = reward_scale(topo, n_max)
    states, masks, actions, logps, owner = [], [], [], [], []
    active = list(range(len(episodes)))
    while active:
        st = np.stack([encode_state(topo, episodes[i].seq, episodes[i].sizes[episodes[i].step],
                                    episodes[i].sizes[episodes[i].step + 1:], q, n_max)
                       for i in active])
        mk = np.stack([action_mask(episodes[i].seq.size, q) for i in active])
        with torch.no_grad():
            logits = policy.logits(torch.from_numpy(st).to(device),
                                   torch.from_numpy(mk).to(device))
            logp_all = torch.log_softmax(logits, -1).cpu().numpy()
        nxt = []
        for row, i in enumerate(active):
            ep = episodes[i]
            legal = int(mk[row].sum())
            a = (int(np.argmax(logp_all[row, :legal])) if greedy
                 else _sample(np.exp(logp_all[row]), legal, rng))
            n = ep.sizes[ep.step]
            nodes, ep.seq = take_block(ep.seq, a, n)
            ep.cost += topo.cost(nodes)
            ep.step += 1
            states.append(st[row])
            masks.append(mk[row])
            actions.append(a)
            logps.append(logp_all[row, a])
            owner.append(i)
            if ep.step < len(ep.sizes):
                nxt.append(i)
        active = nxt
    rewards = np.array([-ep.cost / scale for ep in episodes], dtype=np.float32)
    return {"states": np.stack(states), "masks": np.stack(masks),
            "actions": np.array(actions, dtype=np.int64),
            "logp": np.array(logps, dtype=np.float32),
            "returns": rewards[np.array(owner)], "owner": np.array(owner, dtype=np.int64),
            "episode_rewards": rewards}


def ppo_update(policy: ActorCritic, optimizer, batch: dict, cfg: PPOConfig,
               rng: np.random.Generator, device="cpu") -> dict:
    """``cfg.epochs`` passes of clipped-PPO minibatch steps over one batch of transitions."""
    def t(x):
        return torch.from_numpy(x).to(device)

    states, masks, actions = t(batch["states"]), t(batch["masks"]), t(batch["actions"])
    old_logp, returns = t(batch["logp"]), t(batch["returns"])
    with torch.no_grad():
        if cfg.baseline == "group":
            means = batch["episode_rewards"].reshape(-1, cfg.group).mean(1)
            adv = returns - t(means[batch["owner"] // cfg.group].astype(np.float32))
        else:
            adv = returns - policy.value(states)
    adv = (adv - adv.mean()) / (adv.std(unbiased=False) + 1e-8)
    n = actions.shape[0]
    stats = {"policy_loss": 0.0, "value_loss": 0.0, "entropy": 0.0}
    steps = 0
    for _ in range(cfg.epochs):
        perm = torch.from_numpy(rng.permutation(n)).to(device)
        for lo in range(0, n, cfg.minibatch):
            idx = perm[lo:lo + cfg.minibatch]
            dist = torch.distributions.Categorical(logits=policy.logits(states[idx],
                                                                        masks[idx]))
            ratio = torch.exp(dist.log_prob(actions[idx]) - old_logp[idx])
            a = adv[idx]
            p_loss = -torch.min(ratio * a, ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * a).mean()
            v_loss = (policy.value(states[idx]) - returns[idx]).pow(2).mean()
            ent = dist.entropy().mean()
            loss = p_loss + cfg.value_coef * v_loss - cfg.entropy_coef * ent
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(policy.parameters(), cfg.max_grad_norm)
            optimizer.step()
            stats["policy_loss"] += p_loss.item()
            stats["value_loss"] += v_loss.item()
            stats["entropy"] += ent.item()
            steps += 1
    return {k: v / max(steps, 1) for k, v in stats.items()}


def teacher_probs(topology: FatTree, seq: np.ndarray, size: int, q: int,
                  temperature: float) -> np.ndarray:
    """The imitation target: a softmin over the CH costs of the blocks at the legal first
    positions, ``p ~ exp(-(cost - min cost) / temperature)`` (temperature in cost units)."""
    legal = min(q, seq.size)
    costs = topology.interval_costs(seq, size)[:legal, size - 1]
    p = np.zeros(q)
    p[:legal] = np.exp(-(costs - costs.min()) / temperature)
    return p / p.sum()


def imitation_update(policy: ActorCritic, optimizer, episodes: list[_Episode], *, n_max: int,
                     temperature: float, cfg: PPOConfig, rng: np.random.Generator,
                     device="cpu") -> dict:
    """One warm-start step: walk ``episodes`` with actions drawn from the teacher
    (``teacher_probs``) and take an Adam step on the cross-entropy from the teacher to the
    policy plus the critic's squared error on the episodes' rewards."""
    q = policy.q
    topo = episodes[0].model.topology
    scale = reward_scale(topo, n_max)
    states, masks, targets, owner = [], [], [], []
    for i, ep in enumerate(episodes):
        while ep.step < len(ep.sizes):
            n = ep.sizes[ep.step]
            states.append(encode_state(topo, ep.seq, n, ep.sizes[ep.step + 1:], q, n_max))
            masks.append(action_mask(ep.seq.size, q))
            p = teacher_probs(topo, ep.seq, n, q, temperature)
            targets.append(p)
            owner.append(i)
            a = int(rng.choice(q, p=p))
            nodes, ep.seq = take_block(ep.seq, a, n)
            ep.cost += topo.cost(nodes)
            ep.step += 1
    rewards = np.array([-ep.cost / scale for ep in episodes], dtype=np.float32)
    st = torch.from_numpy(np.stack(states)).to(device)
    mk = torch.from_numpy(np.stack(masks)).to(device)
    tg = torch.from_numpy(np.stack(targets).astype(np.float32)).to(device)
    ret = torch.from_numpy(rewards[np.array(owner)]).to(device)
    logp = torch.log_softmax(policy.logits(st, mk), -1)
    ce = -(tg * logp).sum(-1).mean()
    v_loss = (policy.value(st) - ret).pow(2).mean()
    optimizer.zero_grad()
    (ce + cfg.value_coef * v_loss).backward()
    nn.utils.clip_grad_norm_(policy.parameters(), cfg.max_grad_norm)
    optimizer.step()
    return {"policy_loss": ce.item(), "value_loss": v_loss.item(),
            "entropy": float(-(logp.exp() * logp).sum(-1).mean().item()),
            "episode_rewards": rewards}


# --------------------------------------------------------------------------- training
CURVE_COLUMNS = ["update", "episodes", "mean_reward", "mean_repair_cost", "policy_loss",
                 "value_loss", "entropy", "val_reward", "seconds"]


def train(*, arch: str = "cnn3", episodes: int = 20000, seed: int = 0,
          out: str | Path = "nsa-run", topology="paper-1000", q: int = DEFAULT_Q,
          n_max: int = DEFAULT_N_MAX, n_remove: int = 2, n_windows: int = 500,
          refresh_every: int = 1000, time_limit: float | None = None, ppo: PPOConfig | None = None,
          checkpoint_every: int = 20, device: str | None = None, progress: bool = True,
          plot: bool = True, windows: list | None = None,
          resume: str | Path | None = None, val_episodes: int = 512,
          validate_every: int = 50, imitation: int = 0,
          temperature: float = 2000.0) -> dict:
    """Train a repair operator with PPO on ``episodes`` episodes (the last update takes what is
    left of them, rounded up to whole ``group``s); writes
    ``DIR/nsa_<arch>.pt`` (final), ``DIR/last.pt`` (every ``checkpoint_every`` updates),
    ``best.pt`` (best validation reward), ``curve.csv``, ``curve.png`` and ``train.json``;
    returns the training summary.

    Validation: every ``validate_every`` updates the greedy policy repairs ``val_episodes``
    fixed episodes cut from min(40, ``n_windows``) windows of their own seed (the given
    ``windows`` when passed), so the curve's ``val_reward`` is free of the training pool's
    refreshes.

    Episodes are cut from a pool of ``n_windows`` windows (``training_windows``, or the
    ``windows`` given), each with one start solution; ``refresh_every`` updates replace the
    pool by fresh windows (new seed).  ``resume`` starts from the weights of a checkpoint
    of the same architecture, q and topology (a fresh optimizer; the summary counts the
    earlier runs in ``total_episodes`` / ``total_train_seconds``).  ``time_limit`` (seconds)
    stops training early after the update that crosses it.  ``device``: ``"cuda"`` when
    available, else CPU.

    ``imitation`` > 0 warm-starts the policy (not the paper's recipe, which trains from
    scratch): that many updates of ``imitation_update`` towards the softmin-of-block-cost
    teacher at ``temperature`` come before the PPO updates (which ``episodes`` counts).
    """
    _check_args(arch, episodes, n_remove, imitation, temperature)
    cfg = ppo or PPOConfig()
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    topo = topology if isinstance(topology, FatTree) else FatTree.preset(topology)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    policy = ActorCritic(arch, q)
    earlier = _resume(policy, resume, topo, q, arch)
    policy = policy.to(device)
    optimizer = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
    starts, source = _start_pool(windows, n_windows, seed * 1000, topo, rng)
    recipe = {"imitation_updates": int(imitation),
              "teacher_temperature": float(temperature) if imitation else None}
    run = _Run(policy, LearnedRepair(policy, topology=topo, n_max=n_max), out, device,
               *_validation_episodes(windows, n_windows, seed, topo, n_remove, val_episodes),
               meta=(arch, seed, n_remove, source, cfg, earlier, recipe))
    n_updates = math.ceil(episodes / cfg.batch) + int(imitation)
    bar = _progress_bar(progress, int(episodes) + int(imitation) * cfg.batch, arch)
    seen, t0 = 0, time.perf_counter()
    ppo_left = int(episodes)  # the last PPO update takes only what is left of ``episodes``
    for update in range(1, n_updates + 1):
        if time_limit is not None and update > 1 and time.perf_counter() - t0 > time_limit:
            break
        if windows is None and refresh_every and update % refresh_every == 0:
            starts, _ = _start_pool(None, n_windows, seed * 1000 + update // refresh_every,
                                    topo, rng)
        size = cfg.batch if update <= imitation else min(cfg.batch, ppo_left)
        eps = [replace(ep) for ep in
               (_cut_episode(starts[int(rng.integers(len(starts)))], n_remove, rng)
                for _ in range(max(1, size // cfg.group))) for _ in range(cfg.group)]
        batch, stats = _one_update(policy, optimizer, eps, imitation=update <= imitation,
                                   n_max=n_max, temperature=temperature, cfg=cfg, rng=rng,
                                   device=device)
        ppo_left -= 0 if update <= imitation else len(eps)
        seen += len(eps)
        run.add({"update": update, "episodes": seen,
                 "mean_reward": float(batch["episode_rewards"].mean()),
                 "mean_repair_cost": float(np.mean([e.cost for e in eps])),
                 **stats, "val_reward": "", "seconds": time.perf_counter() - t0},
                validate=bool(val_episodes) and (update % validate_every == 0 or update == 1),
                checkpoint=update % checkpoint_every == 0)
        bar.update(len(eps))
        bar.set_postfix(reward=f"{_tail_mean(run.curve):.4f}")
    bar.close()
    return run.finish(validate=bool(val_episodes), plot=plot, q=q, n_max=n_max, topo=topo)


class _Run:
    """One training run's record: the curve, the best validation reward, the checkpoints
    (``best.pt``, ``last.pt``, the final ``nsa_<arch>.pt``), ``curve.csv`` and the summary."""

    def __init__(self, policy, op, out: Path, device, val_eps, val_rng, *, meta: tuple):
        self.policy, self.op, self.out, self.device = policy, op, out, device
        self.val_eps, self.val_rng, self.meta_args = val_eps, val_rng, meta
        self.curve: list[dict] = []
        self.best_val = -math.inf

    def validate(self) -> float:
        """The greedy policy's mean reward on the fixed validation episodes."""
        self.policy.eval()
        done = rollout(self.policy, [replace(e) for e in self.val_eps],
                       n_max=self.op.n_max, rng=self.val_rng, device=self.device, greedy=True)
        return float(done["episode_rewards"].mean())

    def meta(self, rows: list[dict]) -> dict:
        return _meta(rows, *self.meta_args)

    def _best(self, row: dict, rows: list[dict]) -> None:
        row["val_reward"] = self.validate()
        if row["val_reward"] > self.best_val:
            self.best_val = row["val_reward"]
            self.op.save(self.out / "best.pt", **self.meta(rows), val_reward=self.best_val)

    def add(self, row: dict, *, validate: bool, checkpoint: bool) -> None:
        """One update's row of the curve: validated (a new best is saved) and checkpointed
        when asked."""
        if validate:
            self._best(row, self.curve + [row])
        self.curve.append(row)
        if checkpoint:
            self.policy.eval()
            self.op.save(self.out / "last.pt", **self.meta(self.curve))
            _write_curve(self.curve, self.out / "curve.csv")

    def finish(self, *, validate: bool, plot: bool, q: int, n_max: int, topo) -> dict:
        """The last validation (when the last row has none), the final checkpoint, the curve
        (and its plot) and ``train.json``; returns the summary."""
        if validate and self.curve[-1]["val_reward"] == "":
            self._best(self.curve[-1], self.curve)
        self.policy.eval().cpu()
        meta = self.meta(self.curve)
        arch, seed = self.meta_args[:2]
        final = self.op.save(self.out / f"nsa_{arch}.pt", **meta)
        _write_curve(self.curve, self.out / "curve.csv")
        if plot:
            plot_curve(self.curve, self.out / "curve.png", title=f"NSA {arch} (seed {seed})")
        summary = {**meta, "checkpoint": str(final), "q": q, "n_max": n_max,
                   "topology": topo.to_dict()}
        (self.out / "train.json").write_text(json.dumps(summary, indent=2))
        return summary


def _check_args(arch: str, episodes, n_remove, imitation, temperature) -> None:
    """``train``'s arguments checked before anything is written."""
    if arch not in ARCHS:
        raise NSAError(f"unknown NSA architecture {arch!r}{closest(arch, ARCHS)}; "
                       f"expected one of {sorted(ARCHS)}")
    if int(episodes) != episodes or episodes < 1:
        raise NSAError(f"episodes must be a positive integer, got {episodes!r}")
    if int(n_remove) != n_remove or n_remove < 1:
        raise NSAError(f"n_remove must be an integer >= 1, got {n_remove!r}")
    if imitation and not temperature > 0:
        raise NSAError(f"imitation temperature must be > 0, got {temperature!r}")


def _resume(policy, resume, topo: FatTree, q: int, arch: str) -> dict:
    """The weights of the checkpoint ``resume`` (same architecture, q, topology, with a
    critic) loaded into ``policy``; what the summary counts of the earlier runs."""
    if resume is None:
        return {"earlier_episodes": 0, "earlier_train_seconds": 0.0}
    prev = LearnedRepair.load(resume)
    prev.check(topo, q)
    if prev.arch != arch or not prev.has_critic:
        raise NSAError(f"cannot resume {arch} training from {resume}: it holds "
                       f"{prev.arch}" + ("" if prev.has_critic else " without a critic"))
    policy.load_state_dict(prev.policy.state_dict())
    return {"resumed_from": str(resume),
            "earlier_episodes": int(prev.meta.get("total_episodes",
                                                  prev.meta.get("episodes", 0))),
            "earlier_train_seconds": float(prev.meta.get(
                "total_train_seconds", prev.meta.get("train_seconds", 0.0)))}


def _start_pool(windows, n_windows: int, seed: int, topo: FatTree, rng):
    """The episodes' pool: windows (the given ones, or ``n_windows`` generated with ``seed``),
    each with one start solution of a method drawn by ``rng``; and the windows' source."""
    if windows is not None:
        models, source = windows, "given"
    else:
        models, source = training_windows(n_windows, seed=seed, topology=topo)
    hows = ("sequential", "scas-exact", "sa")
    return [_start_solution(m, hows[int(rng.integers(3))], rng) for m in models], source


def _validation_episodes(windows, n_windows: int, seed: int, topo: FatTree, n_remove: int,
                         val_episodes: int):
    """The fixed validation episodes (windows of their own seed, or the given ones) and the
    generator validation rolls out with."""
    val_rng = np.random.default_rng([seed, 1])
    if windows is None:
        val_models, _ = training_windows(min(40, n_windows), seed=seed * 1000 + 999,
                                         topology=topo)
    else:
        val_models = windows
    val_starts = [_start_solution(m, "scas-exact", val_rng) for m in val_models]
    return [_cut_episode(val_starts[int(val_rng.integers(len(val_starts)))], n_remove,
                         val_rng) for _ in range(val_episodes)], val_rng


def _progress_bar(progress: bool, total: int, arch: str):
    from tqdm.auto import tqdm

    # disable=None: no bar where the output is not a terminal
    return tqdm(total=total, unit="episode", desc=f"train nsa-{arch}",
                disable=None if progress else True)


def _one_update(policy, optimizer, eps, *, imitation: bool, n_max: int, temperature: float,
                cfg: PPOConfig, rng, device) -> tuple[dict, dict]:
    """One update on the episodes ``eps``: towards the teacher (``imitation``) or PPO on a
    rollout of the policy; ``(the batch, its loss figures)``."""
    policy.train()
    if imitation:
        batch = imitation_update(policy, optimizer, eps, n_max=n_max, temperature=temperature,
                                 cfg=cfg, rng=rng, device=device)
        return batch, {k: batch[k] for k in ("policy_loss", "value_loss", "entropy")}
    policy.eval()
    batch = rollout(policy, eps, n_max=n_max, rng=rng, device=device)
    policy.train()
    return batch, ppo_update(policy, optimizer, batch, cfg, rng, device)


def _tail_mean(curve: list[dict], key: str = "mean_reward", k: int = 20) -> float:
    tail = curve[-k:]
    return float(np.mean([r[key] for r in tail])) if tail else float("nan")


def _meta(curve, arch, seed, n_remove, source, cfg, earlier, recipe) -> dict:
    return {"arch": arch, "seed": seed, "episodes": curve[-1]["episodes"],
            **earlier, **recipe,
            "total_episodes": earlier["earlier_episodes"] + curve[-1]["episodes"],
            "total_train_seconds": round(earlier["earlier_train_seconds"]
                                         + curve[-1]["seconds"], 1),
            "updates": len(curve), "train_seconds": round(curve[-1]["seconds"], 1),
            "final_mean_reward": _tail_mean(curve),
            "first_mean_reward": float(np.mean([r["mean_reward"] for r in curve[:20]])),
            "n_remove": n_remove, "windows": source, "ppo": asdict(cfg),
            "final_val_reward": next((r["val_reward"] for r in reversed(curve)
                                      if r["val_reward"] != ""), None),
            "best_val_reward": max((r["val_reward"] for r in curve if r["val_reward"] != ""),
                                   default=None),
            "torch": torch.__version__}


def _write_curve(curve: list[dict], path: Path) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, CURVE_COLUMNS)
        w.writeheader()
        w.writerows(curve)


def plot_curve(curve: list[dict], path: Path, title: str = "") -> Path:
    """Mean episode reward per update and its moving average."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [r["episodes"] for r in curve]
    y = np.array([r["mean_reward"] for r in curve])
    k = max(1, min(20, len(y) // 5))
    smooth = np.convolve(y, np.ones(k) / k, mode="valid")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(x, y, alpha=0.3, label="per update")
    ax.plot(x[k - 1:], smooth, label=f"moving average ({k})")
    val = [(r["episodes"], r["val_reward"]) for r in curve if r.get("val_reward", "") != ""]
    if val:
        ax.plot(*zip(*val), "o-", ms=3, label="validation (greedy, fixed episodes)")
    ax.set_xlabel("episodes")
    ax.set_ylabel("mean reward (-repair cost / scale)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return Path(path)
