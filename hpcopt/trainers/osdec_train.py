"""PPO training of the OSDEC agent (spec osdec.md, "PPO"; paper section 4.3, Table 3).

Rollouts run through the one driver loop: the agent is the ``hpcopt.policies.osdec_learned`` policy
inside ``hpcopt.osdec.simulate_osdec`` with a sampling actor that records each slot it is
asked (input tokens, mask, sampled scores, log-probability, value).  The reward of eq. 6,
``R_t = sum_{i started at t} (c_i d_i - w1 (t - e_i)) - w2 v_t`` with ``v_t`` over all running
jobs, is computed per slot from the finished episode (``slot_rewards``); a step's reward is
the sum over its slot and the slots up to the next step (slots where the driver asks nothing
-- an empty queue -- still count their violation), so the rewards of an episode sum exactly to
``OSDECModel.evaluate(decision).objective``.

Update: GAE (gamma 0.99, lambda 0.95; an episode ends at its last slot with value 0), the
clipped surrogate (eps 0.2) on the sum of the current tokens' Gaussian log-probabilities, the
value loss ``(V - (A + V_old))^2``, 10 epochs of mini-batches of 64, Adam with linear decay:
the policy (encoder and heads) and the value head in two parameter groups (Table 3: 1e-4 ->
1e-5 and 2e-4 -> 2e-5).  The aux module has its own Adam (1e-2 -> 1e-3), MSE on the next-step
targets of the rollout's episodes.  A rollout is whole episodes (one-day trajectories) until
at least ``rollout`` steps.  Rewards are divided by ``reward_scale * C_max`` for learning.

Configurations: ``paper`` (Table 3; its 16 parallel workers are not simulated -- rollouts
run sequentially, the same data per update with a longer wall time; 100 training and 100
validation trajectories) and ``small`` (trains on a shared 2-core machine in about 30
minutes: 2-episode rollouts, 12 training trajectories, 3 held-out validation ones, learning
rates 3x Table 3's).  The validation trajectories come from the TRAIN split, held out of
training.  Evaluation every ``eval_every`` iterations: mean total reward over the validation
trajectories with ``mu`` (no noise); ``best.pt`` keeps the best.  Writes ``curve.csv``,
``curve.png`` (Figure 4), ``train.json``, ``best.pt`` and ``last.pt``; Ctrl-C stops and
keeps what was written.  Seeded, no global state: the same seed gives the same weights.
"""

from __future__ import annotations

import csv
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch

from hpcopt.agents.osdec_agent import Actor, AgentConfig, OSDECAgent, aux_targets, check_variant
from hpcopt.errors import HpcoptError
from hpcopt.instances import instance_from_dict
from hpcopt.osdec import load_osdec, simulate_osdec
from hpcopt.policies.osdec_learned import OSDECPolicy
from hpcopt.workloads.osdec import deferrable_suite


@dataclass(frozen=True)
class TrainConfig:
    """PPO and schedule settings (``CONFIGS``)."""

    iterations: int = 300
    rollout: int = 2048
    minibatch: int = 64
    epochs: int = 10
    gamma: float = 0.99
    lam: float = 0.95
    clip: float = 0.2
    lr_policy: tuple[float, float] = (1e-4, 1e-5)
    lr_value: tuple[float, float] = (2e-4, 2e-5)
    lr_aux: tuple[float, float] = (1e-2, 1e-3)
    aux_epochs: int = 4
    value_coef: float = 0.5
    entropy_coef: float = 0.0
    max_grad_norm: float = 0.5
    reward_scale: float = 10.0
    train_trajectories: int = 100
    val_trajectories: int = 100
    eval_every: int = 1
    workers: int = 16  # Table 3; recorded, rollouts run sequentially

    def __post_init__(self) -> None:
        if min(self.iterations, self.rollout, self.minibatch, self.epochs,
               self.train_trajectories, self.val_trajectories, self.eval_every) < 1:
            raise HpcoptError("OSDEC training config: counts must be >= 1")


CONFIGS = {
    "paper": TrainConfig(),
    "small": TrainConfig(iterations=150, rollout=576, lr_policy=(3e-4, 3e-5),
                         lr_value=(6e-4, 6e-5), train_trajectories=12, val_trajectories=3,
                         eval_every=2, workers=1),
}
CURVE_COLUMNS = ("iteration", "steps", "episodes", "mean_reward", "val_reward",
                 "policy_loss", "value_loss", "aux_loss", "entropy", "seconds")


# ------------------------------------------------------------------------------ rewards
def slot_rewards(model, decision) -> np.ndarray:
    """Eq. 6 per slot t < T: started jobs' ``c d - w1 (t - e)`` minus ``w2 v_t``."""
    ev = model.evaluate(decision)
    T = int(model.slots)
    r = -model.w2 * np.asarray(ev.overload, dtype=np.float64)
    s = np.asarray(decision, dtype=np.int64)
    on = s >= 0
    gain = model.revenue[on] - model.w1 * (s[on] - model.earliest[on])
    np.add.at(r, np.clip(s[on], 0, T - 1), gain.astype(np.float64))
    return r


def step_rewards(model, decision, slots) -> np.ndarray:
    """A reward per recorded step (at ``slots``, increasing): its slot and every slot up to
    the next step; the first step also takes the slots before it.  Sums to the objective."""
    r = slot_rewards(model, decision)
    if not len(slots):
        return np.zeros(0)
    cuts = np.asarray(slots, dtype=np.int64).copy()
    cuts[0] = 0
    return np.add.reduceat(r, np.clip(cuts, 0, len(r) - 1)) if len(r) else np.zeros(len(cuts))


def run_episode(agent: OSDECAgent, model, generator: torch.Generator | None = None,
                record: bool = True):
    """One trajectory through ``simulate_osdec`` with the agent as the policy; returns
    ``(actor, step rewards, summary)`` (sampling when ``generator`` is given)."""
    actor = Actor(agent, generator=generator, record=record)
    res = simulate_osdec(model, OSDECPolicy.for_actor(actor))
    rewards = step_rewards(model, res.decision, [s.slot for s in actor.steps]) \
        if record else None
    return actor, rewards, res.summary


def gae(rewards: np.ndarray, values: np.ndarray, gamma: float, lam: float):
    """Advantages and returns of one finished episode (terminal value 0)."""
    adv = np.zeros(len(rewards))
    last = 0.0
    for k in range(len(rewards) - 1, -1, -1):
        nxt = values[k + 1] if k + 1 < len(values) else 0.0
        delta = rewards[k] + gamma * nxt - values[k]
        last = delta + gamma * lam * last
        adv[k] = last
    return adv, adv + values


# ------------------------------------------------------------------------------ updates
def _decay(pair, frac: float) -> float:
    return pair[0] + (pair[1] - pair[0]) * min(1.0, max(0.0, frac))


class Trainer:
    """The agent, its optimizers and one PPO iteration at a time."""

    def __init__(self, agent: OSDECAgent, cfg: TrainConfig, seed: int) -> None:
        self.agent, self.cfg = agent, cfg
        net = agent.net
        value = list(net.value.parameters())
        ids = {id(p) for p in value}
        policy = [p for p in net.parameters() if id(p) not in ids]
        self.opt = torch.optim.Adam([{"params": policy, "lr": cfg.lr_policy[0]},
                                     {"params": value, "lr": cfg.lr_value[0]}])
        self.aux_opt = torch.optim.Adam(agent.aux.parameters(), lr=cfg.lr_aux[0]) \
            if agent.aux is not None else None
        self.rng = np.random.default_rng([int(seed), 0x0DEC])
        self.gen = torch.Generator().manual_seed(int(seed))

    def set_progress(self, frac: float) -> None:
        """Linear learning-rate decay by the share of the planned iterations done."""
        cfg = self.cfg
        self.opt.param_groups[0]["lr"] = _decay(cfg.lr_policy, frac)
        self.opt.param_groups[1]["lr"] = _decay(cfg.lr_value, frac)
        if self.aux_opt is not None:
            self.aux_opt.param_groups[0]["lr"] = _decay(cfg.lr_aux, frac)

    def rollout(self, models) -> tuple[dict, list]:
        """Whole sampled episodes on trajectories drawn from ``models`` until ``rollout``
        steps: the PPO batch and the episodes' totals."""
        cfg = self.cfg
        self.agent.net.eval()
        parts, totals, seqs = [], [], []
        n = 0
        while n < cfg.rollout:
            model = models[int(self.rng.integers(len(models)))]
            actor, rewards, summary = run_episode(self.agent, model, self.gen)
            totals.append(summary["total_reward"])
            steps = actor.steps
            if not steps:
                continue
            cmax = float(max(1, max(int(c) for c in model.capacity),
                             int(model.cores.max()) if model.n_jobs else 1))
            values = np.array([s.value for s in steps])
            adv, ret = gae(rewards / (cfg.reward_scale * cmax), values, cfg.gamma, cfg.lam)
            parts.append({"x": np.stack([s.x for s in steps]),
                          "mask": np.stack([s.mask for s in steps]),
                          "cur": np.stack([s.cur for s in steps]),
                          "action": np.stack([s.action for s in steps]),
                          "logp": np.array([s.logp for s in steps]), "adv": adv, "ret": ret})
            aux_x = np.stack([s.aux_x for s in steps])
            seqs.append((aux_x, aux_targets(aux_x, model.w2)))
            n += len(steps)
        batch = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]} if parts else {}
        return batch, totals, seqs

    def update(self, batch: dict) -> dict:
        """10 epochs of clipped-surrogate mini-batch steps."""
        cfg, net = self.cfg, self.agent.net
        if not batch:
            return {"policy_loss": 0.0, "value_loss": 0.0, "entropy": 0.0}
        net.train()
        t = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in batch.items()}
        t["x"], t["action"] = t["x"].float(), t["action"].float()
        for k in ("logp", "adv", "ret"):
            t[k] = t[k].float()
        adv = t["adv"]
        t["adv"] = (adv - adv.mean()) / (adv.std() + 1e-8) if len(adv) > 1 else adv
        N = len(adv)
        stats = {"policy_loss": [], "value_loss": [], "entropy": []}
        for _ in range(cfg.epochs):
            perm = self.rng.permutation(N)
            for s in range(0, N, cfg.minibatch):
                idx = torch.from_numpy(perm[s:s + cfg.minibatch])
                mu, std, value = net(t["x"][idx], t["mask"][idx])
                cur = t["cur"][idx].float()
                dist = torch.distributions.Normal(mu, std)
                logp = (dist.log_prob(t["action"][idx]) * cur).sum(1)
                ratio = torch.exp(logp - t["logp"][idx])
                a = t["adv"][idx]
                surr = torch.min(ratio * a, ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * a)
                policy_loss = -surr.mean()
                value_loss = ((value - t["ret"][idx]) ** 2).mean()
                entropy = ((dist.entropy() * cur).sum(1)).mean()
                loss = policy_loss + cfg.value_coef * value_loss - cfg.entropy_coef * entropy
                self.opt.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(net.parameters(), cfg.max_grad_norm)
                self.opt.step()
                stats["policy_loss"].append(policy_loss.item())
                stats["value_loss"].append(value_loss.item())
                stats["entropy"].append(entropy.item())
        net.eval()
        return {k: float(np.mean(v)) for k, v in stats.items()}

    def update_aux(self, seqs) -> float:
        """MSE of the aux module's next-step predictions over the rollout's episodes."""
        aux = self.agent.aux
        if aux is None or not seqs:
            return float("nan")
        losses = []
        aux.train()
        for _ in range(self.cfg.aux_epochs):
            for k in self.rng.permutation(len(seqs)):
                x, y = seqs[k]
                if len(x) < 2:
                    continue
                _, _, pred, _ = aux(torch.from_numpy(x).unsqueeze(0))
                loss = ((pred[0, :-1] - torch.from_numpy(y[:-1])) ** 2).mean()
                self.aux_opt.zero_grad()
                loss.backward()
                self.aux_opt.step()
                losses.append(loss.item())
        aux.eval()
        return float(np.mean(losses)) if losses else float("nan")


def evaluate(agent: OSDECAgent, models) -> float:
    """Mean total reward over ``models`` with ``mu`` (no noise)."""
    return float(np.mean([run_episode(agent, m, None, record=False)[2]["total_reward"]
                          for m in models]))


# ------------------------------------------------------------------------------ training
def load_pool(workloads=None, *, n_train: int, n_val: int, seed: int, progress: bool = False):
    """``(train models, validation models, description)``: the given instance files (the
    last ``max(1, n // 5)`` validate, or the only one does both), else ``n_train + n_val``
    trajectories of ``deferrable_suite("train")`` (the last ``n_val`` held out)."""
    if workloads:
        models = [load_osdec(p) for p in workloads]
        k = max(1, len(models) // 5)
        train, val = (models, models) if len(models) == 1 else (models[:-k], models[-k:])
        return train, val, {"workloads": [str(p) for p in workloads]}

    if progress:  # reading the Azure split once per trajectory takes a while: say so first
        print(f"building the training pool: {n_train + n_val} one-day trajectories of "
              "deferrable_suite('train')", file=sys.stderr, flush=True)
    docs = deferrable_suite("train", n_train + n_val, seed=seed, progress=progress)
    models = [instance_from_dict(d).model for d in docs]
    return models[:n_train], models[n_train:], {
        "suite": "deferrable_suite('train')", "seed": seed, "train": n_train, "validate": n_val}


def train(*, variant: str = "osdec", config: str | TrainConfig = "small", workloads=None,
          models=None, val_models=None, iterations: int | None = None,
          train_trajectories: int | None = None, val_trajectories: int | None = None,
          eval_every: int | None = None, minutes: float | None = None, seed: int = 0,
          out="osdec-run",
          agent_config: AgentConfig | None = None, progress: bool = True,
          plot: bool = True) -> dict:
    """Train ``variant`` and write ``out`` (module docstring); returns the train.json dict.
    ``models``/``val_models`` (OSDEC models) replace the workload pool when given;
    ``iterations``, ``train_trajectories``, ``val_trajectories`` and ``eval_every`` override
    the config's."""
    check_variant(variant)
    name, cfg = _config(config, iterations=iterations, train_trajectories=train_trajectories,
                        val_trajectories=val_trajectories, eval_every=eval_every)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    if models is None:
        models, val, source = load_pool(workloads, n_train=cfg.train_trajectories,
                                        n_val=cfg.val_trajectories, seed=seed,
                                        progress=progress)
    else:
        val, source = (val_models or models), {"models": len(models)}
    trainer = Trainer(agent := OSDECAgent(variant, agent_config, seed=seed), cfg, seed)
    from tqdm.auto import tqdm

    bar = tqdm(total=cfg.iterations, unit="it", desc=f"train {variant}",
               disable=None if progress else True)  # None: no bar off a terminal
    curve: list[dict] = []
    best, steps, episodes, interrupted = -math.inf, 0, 0, False
    t0 = time.perf_counter()
    budget = None if minutes is None else 60.0 * float(minutes)

    def meta() -> dict:
        return {"variant": variant, "config": name, "train_config": _plain(asdict(cfg)),
                "seed": seed, "iterations": len(curve), "steps": steps,
                "episodes": episodes, "train_seconds": round(time.perf_counter() - t0, 1),
                "best_val_reward": best if best > -math.inf else None,
                "pool": source, "torch": str(torch.__version__)}

    try:
        for it in range(1, cfg.iterations + 1):
            if budget is not None and it > 1 and time.perf_counter() - t0 > budget:
                break
            # the schedule follows the iteration count only: a time budget just stops the run,
            # so its iterations are bit-identical to the same run without one
            trainer.set_progress((it - 1) / cfg.iterations)
            batch, totals, seqs = trainer.rollout(models)
            stats = trainer.update(batch)
            aux_loss = trainer.update_aux(seqs)
            steps += len(batch.get("adv", ()))
            episodes += len(totals)
            row = {"iteration": it, "steps": steps, "episodes": episodes,
                   "mean_reward": float(np.mean(totals)), "val_reward": "", **stats,
                   "aux_loss": aux_loss, "seconds": 0.0}
            if it % cfg.eval_every == 0 or it == 1 or it == cfg.iterations:
                row["val_reward"] = evaluate(agent, val)
                if row["val_reward"] > best:
                    best = row["val_reward"]
                    agent.save(out / "best.pt", **{**meta(), "iteration": it,
                                                   "val_reward": best})
            row["seconds"] = round(time.perf_counter() - t0, 2)
            curve.append(row)
            _write_curve(curve, out / "curve.csv")
            bar.update(1)
            bar.set_postfix(reward=f"{row['mean_reward']:.0f}",
                            val=f"{best:.0f}" if best > -math.inf else "-")
    except KeyboardInterrupt:
        interrupted = True
    bar.close()
    if curve:
        agent.save(out / "last.pt", **meta())
        _write_curve(curve, out / "curve.csv")
        if plot:
            plot_curve(curve, out / "curve.png", title=f"OSDEC {variant} (seed {seed}, "
                                                       f"{name})")
    doc = {**meta(), **_run_figures(curve, best, interrupted, t_start),
           "agent_config": asdict(agent.config), "checkpoint": str(out / "best.pt")}
    (out / "train.json").write_text(json.dumps(doc, indent=2))
    return doc


def _run_figures(curve: list[dict], best: float, interrupted: bool, t_start: float) -> dict:
    """What train.json says of the run besides its settings."""
    return {"interrupted": interrupted,
            "wall_seconds_with_startup": round(time.perf_counter() - t_start, 1),
            "best_iteration": next((r["iteration"] for r in curve if r["val_reward"] == best),
                                   None),
            "first_mean_reward": curve[0]["mean_reward"] if curve else None,
            "last_mean_reward": curve[-1]["mean_reward"] if curve else None}


def _config(config: str | TrainConfig, **given) -> tuple[str, TrainConfig]:
    """The training config's name and settings: a named one (``CONFIGS``) or the one given,
    with the ``given`` settings that are not None over it."""
    if isinstance(config, str):
        if config not in CONFIGS:
            raise HpcoptError(f"unknown OSDEC training config {config!r}; one of "
                              f"{sorted(CONFIGS)}")
        name, cfg = config, CONFIGS[config]
    else:
        name, cfg = "custom", config
    return name, replace(cfg, **{k: int(v) for k, v in given.items() if v is not None})


def _plain(d: dict) -> dict:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


def _write_curve(curve: list[dict], path: Path) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, CURVE_COLUMNS)
        w.writeheader()
        w.writerows(curve)


def plot_curve(curve: list[dict], path, title: str = "") -> Path:
    """Figure 4: the training episodes' total reward (sampled; its moving average) and the
    validation reward (mu, no noise) per environment step, in two panels (the training
    trajectories differ in scale, which would flatten the validation curve)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = np.array([r["steps"] for r in curve])
    y = np.array([r["mean_reward"] for r in curve])
    k = max(1, min(10, len(y) // 5))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.5))
    left.plot(x, y, alpha=0.3, label="per iteration")
    left.plot(x[k - 1:], np.convolve(y, np.ones(k) / k, mode="valid"),
              label=f"moving average ({k})")
    left.set_title("training (sampled scores)")
    val = [(r["steps"], r["val_reward"]) for r in curve if r["val_reward"] != ""]
    if val:
        right.plot(*zip(*val), "o-", ms=3, color="C1")
    right.set_title("validation (mu, no noise)")
    for ax in (left, right):
        ax.set_xlabel("environment steps (slots)")
        ax.set_ylabel("total reward per trajectory")
    left.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return Path(path)


__all__ = ["CONFIGS", "TrainConfig", "Trainer", "evaluate", "gae", "load_pool", "plot_curve",
           "run_episode", "slot_rewards", "step_rewards", "train"]
