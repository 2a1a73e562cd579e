"""Online OSDEC policies vs the offline optimum of the same one-day workloads (issue #13).

For each seed: a one-day deferrable workload from the Azure v1 dev split (tight:
``--on-demand-share 0.05 --machine-quantile 0.5``), the offline MIP (SCIP with a time limit;
its dual bound is the reference when it stops at the limit), then every online policy run
slot by slot through the driver (``hpcopt.osdec.simulate_osdec``).  Reports total reward,
its three terms, started/dropped, utilization, gap to the offline reference and wall time.

    python benchmarks/osdec_online.py --seeds 1 2 3 --out benchmarks/results/osdec_online

Writes ``rows_<r>_<p>.csv`` and ``table_<r>_<p>.md`` under ``--out``; ``--on-demand-share 1
--machine-quantile 0.9`` gives the whole region as one machine (a loose day).  Jobs run up to
the whole day (``--max-duration``, default the horizon), unlike the generator's default cap.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

from hpcopt.osdec import load_osdec, offline_reference, simulate_osdec
from hpcopt.workloads.osdec import azure_path, deferrable_workload, save_workload

HERE = Path(__file__).resolve().parent
AZURE = azure_path("v1.dev.txt.gz", "benchmarks/osdec_online.py")

POLICIES = [
    ("fifo", {}),
    ("sjf", {}),
    ("tetris", {}),
    ("tetris", {"knob": 0.5}),
    ("rolling-mip", {"horizon": 12, "backend": "scip", "time_limit": 2.0}),
    ("rolling-mip", {"horizon": 12, "backend": "scip", "time_limit": 2.0,
                     "forecast": "oracle"}),
]


def label(name: str, opts: dict) -> str:
    shown = {k: v for k, v in opts.items() if k not in ("backend", "time_limit")}
    return name + ("" if not shown else " (" + ", ".join(f"{k}={v}" for k, v in
                                                         shown.items()) + ")")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--azure", default=str(AZURE))
    ap.add_argument("--on-demand-share", type=float, default=0.05)
    ap.add_argument("--machine-quantile", type=float, default=0.5)
    ap.add_argument("--max-duration", type=int, default=None,
                    help="cap on job durations in slots (default: the horizon)")
    ap.add_argument("--offline-backend", default="scip")
    ap.add_argument("--offline-time-limit", type=float, default=60.0)
    ap.add_argument("--out", default=str(HERE / "results" / "osdec_online"))
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for seed in args.seeds:
        path = out / f"day_s{seed}_r{args.on_demand_share:g}_p{args.machine_quantile:g}.json"
        if not path.exists():
            save_workload(deferrable_workload(args.azure, seed=seed,
                                              on_demand_share=args.on_demand_share,
                                              machine_quantile=args.machine_quantile,
                                              max_duration=args.max_duration), path)
        model = load_osdec(path)
        off = offline_reference(model, args.offline_backend, args.offline_time_limit)
        ref = off["reference"]
        rows.append(dict(seed=seed, jobs=model.n_jobs, policy=f"offline {off['backend']}",
                         total_reward=off["objective"], revenue="", delay_penalty="",
                         violation_penalty="", started="", dropped="", utilization="",
                         gap_to_offline=(ref - off["objective"]) / abs(ref),
                         wall_s=round(off["wall_time"], 1),
                         note=f"{off['status']}, bound {off['bound']}"))
        print(rows[-1], flush=True)
        for name, opts in POLICIES:
            t0 = time.perf_counter()
            res = simulate_osdec(path, name, offline_bound=ref, **opts)
            s = res.summary
            rows.append(dict(seed=seed, jobs=model.n_jobs, policy=label(name, opts),
                             total_reward=s["total_reward"], revenue=s["revenue"],
                             delay_penalty=s["delay_penalty"],
                             violation_penalty=s["violation_penalty"], started=s["started"],
                             dropped=s["dropped"], utilization=round(s["utilization"], 4),
                             gap_to_offline=s["gap_to_offline"],
                             wall_s=round(time.perf_counter() - t0, 1), note=""))
            print(rows[-1], flush=True)
    tag = f"r{args.on_demand_share:g}_p{args.machine_quantile:g}"
    with open(out / f"rows_{tag}.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lines = ["| seed | policy | total reward | revenue | delay | violation | started | "
             "dropped | utilization | gap to offline | wall s |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        def f(v, fmt="{:,.0f}"):
            return "" if v == "" or v is None else fmt.format(v)
        lines.append(f"| {r['seed']} | {r['policy']} | {f(r['total_reward'])} | "
                     f"{f(r['revenue'])} | {f(r['delay_penalty'])} | "
                     f"{f(r['violation_penalty'])} | {r['started']} | {r['dropped']} | "
                     f"{f(r['utilization'], '{:.3f}')} | "
                     f"{f(r['gap_to_offline'], '{:.1%}')} | {r['wall_s']} |")
    (out / f"table_{tag}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
