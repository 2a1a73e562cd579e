"""``hpcopt train``: train a learned scheduling agent (DRAS, the NSA repair operator, OSDEC).

Needs torch (``pip install 'hpcopt[ml]'``)."""

from __future__ import annotations

from pathlib import Path

from ..cliargs import out_path, positive_int
from ..errors import HpcoptError


def register(sub) -> None:
    t = sub.add_parser("train", help="train a learned scheduling agent")
    tsub = t.add_subparsers(dest="learner", required=True)
    _run_flags(_dras_parser(tsub), "dras-run")
    _run_flags(_nsa_parser(tsub), "nsa-run")
    _run_flags(_osdec_parser(tsub), "osdec-run")
    t.set_defaults(run=run)


def _run_flags(p, out: str) -> None:
    """The flags every trainer has: its seed, output folder, plot and progress bar."""
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=out_path, default=out,
                   help="directory for checkpoints and curve")
    p.add_argument("--no-plot", action="store_true", help="skip curve.png")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def _dras_parser(tsub):
    td = tsub.add_parser("dras", help="DRAS three-phase training (sampled, real, synthetic)")
    td.add_argument("--trace", required=True, help="SWF or CSV/JSON trace to learn from")
    td.add_argument("--agent", default="pg", help="pg or dql")
    td.add_argument("--config", default="small", help="small (2-core CPU) or theta (Table III)")
    td.add_argument("--levels", choices=["dras", "decima"], default="dras",
                    help="dras (two levels) or decima (the Decima-PG baseline)")
    td.add_argument("--reward", default=None, help="capability (Eq. 1, default) or capacity "
                                                   "(Eq. 2)")
    td.add_argument("--nodes", type=positive_int, default=None, help="system size in nodes")
    td.add_argument("--sampled", type=int, default=9, help="sampled jobsets (phase 1)")
    td.add_argument("--real", type=int, default=None,
                    help="real one-week jobsets (phase 2; default all training weeks)")
    td.add_argument("--synthetic", type=int, default=82, help="synthetic jobsets (phase 3)")
    td.add_argument("--phases", default="sampled,real,synthetic",
                    help="curriculum order (the paper's Figure 4 compares orders)")
    td.add_argument("--jobs-per-set", type=positive_int, default=2000,
                    help="jobs per sampled jobset")
    td.add_argument("--train-months", type=positive_int, default=2)
    td.add_argument("--validate-months", type=positive_int, default=1)
    td.add_argument("--select", choices=["reward", "avg_wait"], default="reward",
                    help="best checkpoint by validation reward (paper) or by average wait "
                         "with max wait within 2x FCFS+EASY")
    return td


def _nsa_parser(tsub):
    tn = tsub.add_parser("nsa", help="NSA repair operator (PPO on generated DCAS windows)")
    tn.add_argument("--arch", default="cnn3", help="fcn1..fcn3 or cnn1..cnn3 (Table II)")
    tn.add_argument("--episodes", type=positive_int, default=20000, help="repair episodes")
    tn.add_argument("--topology", default="paper-1000", help="topology preset")
    tn.add_argument("--q", type=positive_int, default=100, help="state rows (first Q entries)")
    tn.add_argument("--n-remove", type=positive_int, default=2, help="n_D: jobs destroyed")
    tn.add_argument("--windows", type=positive_int, default=500, help="windows per pool")
    tn.add_argument("--batch", type=positive_int, default=128, help="episodes per PPO update")
    tn.add_argument("--lr", type=float, default=3e-4)
    tn.add_argument("--baseline", choices=["critic", "group"], default="critic",
                    help="advantage baseline: the critic (paper) or the mean of --group "
                         "repairs of the same destroyed solution")
    tn.add_argument("--group", type=positive_int, default=1, help="repairs per destroyed "
                                                                   "solution (--baseline group)")
    tn.add_argument("--val-episodes", type=int, default=512,
                    help="fixed validation episodes (greedy policy, every 50 updates)")
    tn.add_argument("--time-limit", type=float, default=None, help="stop after S seconds")
    tn.add_argument("--device", default=None, help="cpu or cuda (default: cuda if present)")
    tn.add_argument("--resume", default=None, metavar="PATH",
                    help="start from this checkpoint's weights")
    tn.add_argument("--imitation", type=int, default=0, metavar="N",
                    help="warm start: N updates imitating a softmin-of-block-cost teacher "
                         "before PPO (not in the paper)")
    tn.add_argument("--temperature", type=float, default=2000.0,
                    help="the imitation teacher's temperature, in CH cost units")
    return tn


def _osdec_parser(tsub):
    to = tsub.add_parser("osdec", help="OSDEC agent (PPO, attention encoder, auxiliary "
                                       "tasks) on deferrable cloud trajectories")
    to.add_argument("--variant", default="osdec", choices=["osdec", "ppo-att", "ppo-att-auxh",
                                                           "ppo-att-auxl", "ppo-mlp"])
    to.add_argument("--config", default="small", choices=["paper", "small"],
                    help="paper (Table 3) or small (a 2-core CPU in about 30 minutes)")
    to.add_argument("--workload", nargs="+", default=None, metavar="FILE",
                    help="osdec instance files (default: deferrable_suite train split)")
    to.add_argument("--iterations", type=positive_int, default=None,
                    help="PPO iterations (default: the config's)")
    to.add_argument("--train-trajectories", type=positive_int, default=None, metavar="N",
                    help="training days from deferrable_suite('train') (default: the config's)")
    to.add_argument("--val-trajectories", type=positive_int, default=None, metavar="N",
                    help="held-out validation days after them (default: the config's)")
    to.add_argument("--eval-every", type=positive_int, default=None, metavar="N",
                    help="validate every N iterations (default: the config's)")
    to.add_argument("--minutes", type=float, default=None,
                    help="stop after M minutes (the learning rates still decay over "
                    "--iterations, so the run is the same as without a budget, cut short)")
    return to


def run(args) -> int:
    try:
        import torch
    except ImportError:
        raise HpcoptError("training needs torch: pip install 'hpcopt[ml]'") from None
    if args.learner == "nsa":
        return _train_nsa(args, torch)
    if args.learner == "osdec":
        return _train_osdec(args, torch)
    from ..trainers.dras_train import train_dras

    # the small network gains nothing from threads (they only contend on a shared machine)
    torch.set_num_threads(1 if args.config == "small" else max(1, min(torch.get_num_threads(),
                                                                      2)))
    overrides = {"reward": args.reward} if args.reward else {}
    doc = train_dras(args.trace, agent=args.agent, config=args.config, levels=args.levels,
                     out=args.out, seed=args.seed, sampled=args.sampled, real=args.real,
                     synthetic=args.synthetic, jobs_per_set=args.jobs_per_set,
                     train_months=args.train_months, validate_months=args.validate_months,
                     select=args.select, nodes=args.nodes, progress=not args.no_progress,
                     plot=not args.no_plot,
                     phases=[p.strip() for p in args.phases.split(",") if p.strip()],
                     **overrides)
    print(f"trained {doc['episodes']} episodes ({doc['jobs_seen']:,} jobs) in "
          f"{doc['train_seconds']:.0f} s; best episode {doc['best_episode']}: validation "
          f"reward {doc['best_val_reward']:.1f}, average wait {doc['best_val_avg_wait']:.0f} s "
          f"(FCFS+EASY {doc['reference_val_avg_wait']['fcfs']:.0f} s)")
    print(f"wrote {Path(args.out) / 'best.pt'}, curve.csv, train.json"
          + ("" if args.no_plot else ", curve.png"))
    return 0


def _train_nsa(args, torch) -> int:
    from ..trainers.nsa_train import PPOConfig, train

    torch.set_num_threads(max(1, min(torch.get_num_threads(), 2)))
    from dataclasses import replace  # (as the other imports of a subcommand's code)

    ppo = replace(PPOConfig(), batch=args.batch, lr=args.lr, baseline=args.baseline,
                  group=args.group, minibatch=min(PPOConfig.minibatch, args.batch))
    doc = train(arch=args.arch, episodes=args.episodes, seed=args.seed, out=args.out,
                topology=args.topology, q=args.q, n_remove=args.n_remove,
                n_windows=args.windows, ppo=ppo, time_limit=args.time_limit,
                device=args.device, progress=not args.no_progress, plot=not args.no_plot,
                resume=args.resume, val_episodes=args.val_episodes,
                imitation=args.imitation, temperature=args.temperature)
    print(f"trained {doc['episodes']} episodes in {doc['train_seconds']:.0f} s; mean reward "
          f"{doc['first_mean_reward']:.4f} (first 20 updates) -> {doc['final_mean_reward']:.4f}"
          f" (last 20); best validation reward {doc['best_val_reward']}")
    print(f"wrote {doc['checkpoint']}, best.pt, curve.csv, train.json"
          + ("" if args.no_plot else ", curve.png"))
    return 0


def _train_osdec(args, torch) -> int:
    from ..trainers.osdec_train import train

    torch.set_num_threads(1 if args.config == "small" else max(1, min(torch.get_num_threads(),
                                                                      2)))
    doc = train(variant=args.variant, config=args.config, workloads=args.workload,
                iterations=args.iterations, train_trajectories=args.train_trajectories,
                val_trajectories=args.val_trajectories, eval_every=args.eval_every,
                minutes=args.minutes, seed=args.seed,
                out=args.out, progress=not args.no_progress, plot=not args.no_plot)
    print(f"trained {doc['variant']} {doc['iterations']} iterations ({doc['steps']:,} steps, "
          f"{doc['episodes']} episodes) in {doc['train_seconds']:.0f} s; best validation "
          f"total reward {doc['best_val_reward']} (iteration {doc['best_iteration']})"
          + (" [interrupted]" if doc["interrupted"] else ""))
    print(f"wrote {Path(args.out) / 'best.pt'}, last.pt, curve.csv, train.json"
          + ("" if args.no_plot else ", curve.png"))
    return 0
