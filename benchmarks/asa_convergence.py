"""ASA estimator convergence: Figure 5 of paper 002 (section 4.4) and the Theorem 1 check.

Figure 5's setting: 1,000 iterations (one proactive submission each: ``sample`` then
``observe`` with the true wait), the true wait changing at iterations 0, 200, 400, 600 and
800, for the three sampling policies (``default`` = Algorithm 1, ``greedy``, ``tuned`` with
R = 50), over several seeds.  The paper varies the wait "randomly"; here each seed draws the
five waits log-uniformly in [20 s, 50,000 s] (seed 0 is the fixed sequence 3000, 200, 8000,
50, 20000 s, which has two drops).  The ``+est`` rows give every sample a start-time estimate
(``ASAEstimator(prior=--prior)``, ``sample``/``observe(..., estimate_s=E)``), standing in
for the EASY shadow time / ``squeue --start``: E = the true wait times a log-normal error,
sigma of ln = 0 (``exact``: the best a start-time estimate can do), ``--prior-noise`` (0.05)
and ``--prior-noise-bad`` (1.0, poor).

Per policy and segment: the mean |estimate - true wait| (s), the exact ratio (the sample is
the candidate nearest the true wait, loss 0), the paper's hit ratio (estimate <= true wait:
no resubmission, Table 2's definition) and the iterations to converge after the change (the
first of ``--run`` consecutive exact samples; the segment length when it never happens).
Also the cost of one ``sample`` + ``observe`` (microseconds), and Theorem 1 (eq. (4),
delta = 0.01) checked on stationary waits for the 53-value grid and a 10-value grid.

Written to ``benchmarks/results/``: ``asa_convergence.csv`` (policy x seed x segment),
``asa_convergence_trace.csv`` (every iteration), ``asa_convergence.png`` (seed 0's estimates
against the true wait, as Figure 5, and the exact ratio over iterations across seeds).

    python benchmarks/asa_convergence.py [--seeds 10] [--iterations 1000] [--segments 5]
        [--repeats 50] [--prior 0.5] [--prior-noise 0.05] [--prior-noise-bad 1.0] [--run 10]
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from hpcopt.agents.asa import ASAEstimator

HERE = Path(__file__).resolve().parent
OUT = HERE / "results"
SEED0_WAITS = (3000.0, 200.0, 8000.0, 50.0, 20000.0)
VARIANTS = {  # name: (policy, start-time estimate: None, "good" or "bad")
    "default": ("default", None),
    "greedy": ("greedy", None),
    "tuned": ("tuned", None),
    "default+est(exact)": ("default", "exact"),
    "tuned+est(exact)": ("tuned", "exact"),
    "default+est(5%)": ("default", "good"),
    "tuned+est(5%)": ("tuned", "good"),
    "default+est(poor)": ("default", "bad"),
    "tuned+est(poor)": ("tuned", "bad"),
}


def markdown(df: pd.DataFrame, index: bool = True) -> str:
    """A pipe table (pandas' to_markdown needs tabulate, which is not a dependency)."""
    d = df.reset_index() if index else df
    cols = [str(c) for c in d.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join(["---"] + ["---:"] * (len(cols) - 1))
             + "|"]
    for row in d.itertuples(index=False):
        lines.append("| " + " | ".join(f"{v:g}" if isinstance(v, float) else str(v)
                                       for v in row) + " |")
    return "\n".join(lines)


def segment_waits(seed: int, segments: int) -> list[float]:
    if seed == 0 and segments == len(SEED0_WAITS):
        return list(SEED0_WAITS)
    rng = np.random.default_rng(10_000 + seed)
    return [float(round(math.exp(rng.uniform(math.log(20), math.log(50_000))))) for _ in
            range(segments)]


def run_one(variant: str, seed: int, waits, seg_len: int, repeats: int, prior: float,
            noise: dict):
    policy, quality = VARIANTS[variant]
    est = ASAEstimator(policy=policy, repeats=repeats, seed=seed,
                       prior=prior if quality else 0.0)
    prng = np.random.default_rng(20_000 + seed)
    rows = []
    t0 = time.perf_counter()
    for s, w in enumerate(waits):
        for j in range(seg_len):
            e = None if quality is None else w * math.exp(prng.normal(0, noise[quality]))
            i, a = est.sample("geometry", estimate_s=e)
            est.observe("geometry", i, w, estimate_s=e)
            rows.append((s * seg_len + j, s, w, i, a, est.nearest(a), est.nearest(w)))
    elapsed = time.perf_counter() - t0
    df = pd.DataFrame(rows, columns=["iteration", "segment", "true_wait", "action", "estimate",
                                     "index", "best_index"])
    df["variant"], df["seed"] = variant, seed
    return df, elapsed / len(rows) * 1e6, est.state("geometry")["rounds"]


def converged_after(exact: np.ndarray, run: int) -> int:
    for i in range(len(exact) - run + 1):
        if exact[i:i + run].all():
            return i
    return len(exact)


def theorem1(m_grid, seeds: int, t: int, delta: float = 0.01) -> dict:
    """Share of runs (fixed true wait 1234 s) that violate eq. (4) of Appendix A."""
    violated, ratios = 0, []
    for seed in range(seeds):
        est = ASAEstimator(candidates=m_grid, seed=seed)
        w = 1234.0 if m_grid is None else float(m_grid[len(m_grid) // 3]) + 1
        loss = sum(est.observe(0, est.sample(0)[0], w) for _ in range(t))
        s = est.state(0)
        bound = 4 * s["eta"] + math.log(est.m) + math.sqrt(2 * t * math.log(est.m / delta))
        violated += loss > bound  # the best fixed candidate has loss 0
        ratios.append(loss / bound)
    return {"m": ASAEstimator(candidates=m_grid).m, "t": t, "seeds": seeds,
            "violated": violated, "max regret/bound": max(ratios)}


def plot(trace: pd.DataFrame, path: Path, seg_len: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 7), sharex=True)
    s0 = trace[trace.seed == 0]
    styles = {"default": ("black", "-", 0.7, 0.45), "greedy": ("tab:red", ":", 2.0, 1.0),
              "tuned": ("deeppink", "-", 1.2, 1.0)}
    first = s0[s0.variant == "default"]
    ax1.step(first.iteration, first.true_wait, where="post", color="navy", ls="--", lw=2,
             label="true wait")
    for v, (c, ls, lw, alpha) in styles.items():
        d = s0[s0.variant == v]
        ax1.plot(d.iteration, d.estimate, color=c, ls=ls, lw=lw, alpha=alpha, label=v)
    ax1.set_yscale("log")
    ax1.set_ylabel("wait (s)")
    ax1.set_title("ASA estimate vs true wait (seed 0; Figure 5 setting)")
    ax1.legend(loc="lower right", fontsize=8)
    nseeds = trace.seed.nunique()
    for v in VARIANTS:
        d = trace[trace.variant == v]
        exact = (d["index"] == d["best_index"]).groupby(d.iteration).mean()
        ax2.plot(exact.index, exact.rolling(10, min_periods=1).mean(), label=v)
    for x in range(0, int(trace.iteration.max()) + 1, seg_len):
        ax2.axvline(x, color="grey", lw=0.5)
    ax2.set_ylabel(f"exact-estimate ratio\n(mean of {nseeds} seeds, 10-it. window)")
    ax2.set_xlabel("iteration")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--segments", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=50)
    ap.add_argument("--prior", type=float, default=0.5,
                    help="initial probability of the estimate action in the +est rows")
    ap.add_argument("--prior-noise", type=float, default=0.05)
    ap.add_argument("--prior-noise-bad", type=float, default=1.0)
    ap.add_argument("--run", type=int, default=10, help="consecutive exact samples = converged")
    ap.add_argument("--tag", default="")
    args = ap.parse_args(argv)
    seg_len = args.iterations // args.segments
    OUT.mkdir(parents=True, exist_ok=True)

    traces, rows, timing = [], [], {}
    for v in VARIANTS:
        for seed in range(args.seeds):
            waits = segment_waits(seed, args.segments)
            df, us, rounds = run_one(v, seed, waits, seg_len, args.repeats, args.prior,
                                     {"exact": 0.0, "good": args.prior_noise,
                                      "bad": args.prior_noise_bad})
            timing.setdefault(v, []).append(us)
            traces.append(df)
            for s, d in df.groupby("segment"):
                exact = (d["index"] == d["best_index"]).to_numpy()
                rows.append({
                    "variant": v, "seed": seed, "segment": s, "true_wait": waits[s],
                    "change": "start" if s == 0 else
                    ("drop" if waits[s] < waits[s - 1] else "rise"),
                    "mean_abs_error_s": float((d.estimate - d.true_wait).abs().mean()),
                    "exact": float(exact.mean()),
                    "hit": float((d.estimate <= d.true_wait).mean()),
                    "converge_it": converged_after(exact, args.run),
                    "us_per_sample_observe": us, "rounds": rounds,
                })
    trace = pd.concat(traces, ignore_index=True)
    res = pd.DataFrame(rows)
    res.to_csv(OUT / f"asa_convergence{args.tag}.csv", index=False)
    trace.to_csv(OUT / f"asa_convergence_trace{args.tag}.csv", index=False)
    plot(trace, OUT / f"asa_convergence{args.tag}.png", seg_len)

    print(f"Figure 5 setting: {args.iterations} iterations, wait changes every {seg_len}, "
          f"{args.seeds} seeds, R = {args.repeats}; +est: prior = {args.prior}, estimate "
          f"noise sigma 0 (exact) / {args.prior_noise} / {args.prior_noise_bad} (poor)\n")
    print("Mean |estimate - true| (s) per segment, mean over seeds:")
    tab = res.pivot_table(index="variant", columns="segment", values="mean_abs_error_s",
                          sort=False).round(0)
    tab["all"] = res.groupby("variant", sort=False).mean_abs_error_s.mean().round(0)
    print(markdown(tab) + "\n")
    print(f"Iterations to converge after each change ({args.run} consecutive exact samples; "
          f"{seg_len} = never), mean over seeds:")
    tab = res.pivot_table(index="variant", columns="segment", values="converge_it",
                          sort=False).round(1)
    tab["all"] = res.groupby("variant", sort=False).converge_it.mean().round(1)
    print(markdown(tab) + "\n")
    summ = res.groupby("variant", sort=False).agg(
        exact=("exact", "mean"), hit=("hit", "mean"),
        converged=("converge_it", lambda c: float((c < seg_len).mean())))
    drops = res[res.change == "drop"].groupby("variant", sort=False).exact.mean()
    rises = res[res.change == "rise"].groupby("variant", sort=False).exact.mean()
    summ["exact after drops"], summ["exact after rises"] = drops, rises
    summ["us per sample+observe"] = pd.Series({v: float(np.mean(t)) for v, t in timing.items()})
    print("Over all segments: exact ratio, hit ratio (estimate <= true), share of segments "
          "converged, exact ratio in segments after a drop / a rise, cost:")
    print(markdown(summ.round(3)) + "\n")
    th = pd.DataFrame([theorem1(None, 20, args.iterations),
                       theorem1([100.0 * k for k in range(1, 11)], 20, args.iterations)])
    print("Theorem 1, eq. (4), delta = 0.01, fixed true wait (best candidate loss 0): runs "
          "violating it:")
    print(markdown(th.round(3), index=False))
    print(f"\nwrote {OUT / f'asa_convergence{args.tag}.csv'}, "
          f"{OUT / f'asa_convergence_trace{args.tag}.csv'}, "
          f"{OUT / f'asa_convergence{args.tag}.png'}")


if __name__ == "__main__":
    main()
