"""DRAS training: the three-phase curriculum, validation each episode, checkpoints, curve.

``train_dras`` trains one agent on a trace: it splits the trace by months (train / validate /
test), draws the curriculum (sampled, real weeks, synthetic), and after every training
episode evaluates the agent greedily on the validation month.  It writes to ``out``:
``episode_NNN.pt`` per episode, ``best.pt`` (highest validation total reward, the paper's
Figure 5 criterion; or, with ``select="avg_wait"``, the lowest validation average wait among
the episodes whose maximum wait stays within twice FCFS+EASY's),
``curve.csv`` (one row per episode), ``train.json`` (settings, budget, references) and
``curve.png`` (validation reward per episode with the FCFS+EASY and Random references, the
paper's Figures 4 and 5).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from hpcopt.agents.dras import KINDS, DrasAgent, get_config
from hpcopt.domain import System
from hpcopt.errors import HpcoptError, closest
from hpcopt.sim.metrics import job_table, summarize
from hpcopt.traces import load_trace

from .dras_env import DrasEnv, run_episode
from .jobsets import PHASES, JobsetGenerator, rebase, split_months

SELECT = ("reward", "avg_wait")


def reference_run(env: DrasEnv, jobs, rule: str, seed: int = 0) -> tuple[float, dict]:
    """Total reward and summary metrics of a fixed rule on ``jobs``: ``fcfs`` (always the
    first window slot -- FCFS+EASY in the two-level process) or ``random`` (a uniformly random
    legal slot)."""
    obs, info = env.reset(seed=seed, options={"jobs": jobs})
    rng = np.random.default_rng(seed)
    total, done = 0.0, False
    while not done:
        legal = np.flatnonzero(info["action_mask"])
        a = int(legal[0]) if rule == "fcfs" else int(rng.choice(legal))
        obs, r, done, _, info = env.step(a)
        total += r
    return total, _metrics(env)


def _metrics(env: DrasEnv) -> dict:
    table = job_table(env.sim.records.values())
    return summarize(table, env.system.nodes)


def train_dras(trace, *, agent: str = "pg", config: str = "small", levels: str = "dras",
               out: str | Path = "dras-run", seed: int = 0, sampled: int = 9,
               real: int | None = None, synthetic: int = 20, jobs_per_set: int = 1000,
               train_months: int = 2, validate_months: int = 1, select: str = "reward",
               nodes: int | None = None, progress: bool = True, plot: bool = True,
               phases=PHASES, **config_overrides) -> dict:
    """Train a DRAS (or, with ``levels="decima"``, Decima-PG) agent on a trace.

    ``trace`` is a path or a ``Trace``; ``phases`` orders the curriculum (Figure 4 compares
    orders).  Returns the ``train.json`` document.
    """
    cfg = _checked_config(select, agent, config, phases, config_overrides)
    if isinstance(trace, (str, Path)):
        trace = load_trace(trace, nodes=nodes)
    system = trace.system if nodes is None else System(nodes)
    split = split_months(trace.jobs, train_months, validate_months)
    gen = JobsetGenerator(split.train, jobs_per_set=jobs_per_set)
    rng = np.random.default_rng(seed)
    plan = gen.curriculum(rng, sampled=sampled, real=real, synthetic=synthetic,
                          order=tuple(phases))
    val_jobs = rebase(split.validate)

    learner = DrasAgent(agent, system.nodes, cfg, levels=levels, seed=seed)
    env = DrasEnv(system=system, **learner.env_options())
    val_env = DrasEnv(system=system, **learner.env_options())
    ref_runs = {rule: reference_run(val_env, val_jobs, rule, seed) for rule in ("fcfs", "random")}
    refs = {rule: total for rule, (total, _) in ref_runs.items()}
    max_wait_cap = 2.0 * ref_runs["fcfs"][1]["max_wait"]

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows, best, best_ep = [], None, -1
    t_start = time.perf_counter()
    from tqdm.auto import tqdm

    bar = tqdm(total=len(plan), unit="episode", desc=f"train dras-{agent}",
               disable=None if progress else True)  # None: no bar off a terminal
    for ep, (phase, jobs) in enumerate(plan):
        t0 = time.perf_counter()
        tr = run_episode(env, learner, learn=True, seed=seed + ep, jobs=jobs)
        val = run_episode(val_env, learner, learn=False, seed=seed, jobs=val_jobs)
        m = _metrics(val_env)
        row = dict(episode=ep, phase=phase, jobs=len(jobs), train_reward=tr.total_reward,
                   train_steps=tr.steps, updates=learner.updates, epsilon=learner.epsilon,
                   val_reward=val.total_reward, val_avg_wait=m["avg_wait"],
                   val_max_wait=m["max_wait"], val_utilization=m["utilization"],
                   seconds=time.perf_counter() - t0)
        rows.append(row)
        score = val.total_reward if select == "reward" else _wait_score(m, max_wait_cap)
        learner.save(out / f"episode_{ep:03d}.pt", episode=ep, phase=phase,
                     val_reward=val.total_reward, val_avg_wait=m["avg_wait"])
        if best is None or score > best:
            best, best_ep = score, ep
            learner.save(out / "best.pt", episode=ep, phase=phase, val_reward=val.total_reward,
                         val_avg_wait=m["avg_wait"], trace=str(getattr(trace, "path", "")))
        bar.set_postfix(phase=phase, val_reward=f"{val.total_reward:.1f}",
                        val_wait_h=f"{m['avg_wait'] / 3600:.2f}")
        bar.update(1)
    bar.close()
    seconds = time.perf_counter() - t_start

    import pandas as pd

    curve = pd.DataFrame(rows)
    curve.to_csv(out / "curve.csv", index=False)
    doc = dict(agent=agent, levels=levels, config=config, config_values=cfg.to_dict(),
               phases=list(phases),
               trace=str(getattr(trace, "path", "")), nodes=system.nodes, seed=seed,
               episodes=len(plan), jobs_seen=int(curve["jobs"].sum()),
               train_jobs=len(split.train), validate_jobs=len(split.validate),
               test_jobs=len(split.test), train_seconds=seconds, best_episode=best_ep,
               select=select, reference_val_reward=refs,
               reference_val_avg_wait={r: m["avg_wait"] for r, (_, m) in ref_runs.items()},
               reference_val_max_wait={r: m["max_wait"] for r, (_, m) in ref_runs.items()},
               best_val_reward=float(curve["val_reward"][best_ep]),
               best_val_avg_wait=float(curve["val_avg_wait"][best_ep]))
    (out / "train.json").write_text(json.dumps(doc, indent=2) + "\n")
    if plot:
        plot_curve(curve, refs, out / "curve.png", title=f"DRAS-{agent.upper()} ({levels})")
    return doc


def _checked_config(select: str, agent: str, config: str, phases, overrides: dict):
    """``train_dras``'s choices checked and its config built (bad names fail before the
    trace is read)."""
    if select not in SELECT:
        raise HpcoptError(f"select must be one of {SELECT}, got {select!r}")
    if agent not in KINDS:
        raise HpcoptError(f"unknown DRAS agent {agent!r}; expected one of {KINDS}."
                          + closest(str(agent), KINDS))
    cfg = get_config(config, **overrides)
    if sorted(phases) != sorted(PHASES):
        raise HpcoptError(f"curriculum phases must name each of {PHASES} once, got "
                          f"{tuple(phases)}")
    return cfg


def _wait_score(m: dict, max_wait_cap: float) -> float:
    """The lowest average wait among episodes that keep max wait within 2x FCFS's."""
    return -m["avg_wait"] if m["max_wait"] <= max_wait_cap else -np.inf


def plot_curve(curve, refs: dict, path: Path, title: str = "") -> Path:
    """Validation total reward per episode, phases shaded, fixed-rule references dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    colors = {"sampled": "#dde8f5", "real": "#f5eadd", "synthetic": "#e2f5dd"}
    for phase, color in colors.items():
        eps = curve.index[curve["phase"] == phase]
        if len(eps):
            ax.axvspan(eps.min() - 0.5, eps.max() + 0.5, color=color, label=phase)
    ax.plot(curve["episode"], curve["val_reward"], "o-", color="k", ms=3, label="agent")
    for (name, value), style in zip(refs.items(), ("--", ":")):
        ax.axhline(value, ls=style, color="gray", label=f"{name} (reference)")
    ax.set_xlabel("training episode")
    ax.set_ylabel("total reward on the validation month")
    ax.set_title(title)
    ax.legend(fontsize=8, loc="best", framealpha=0.6)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
