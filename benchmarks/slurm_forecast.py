"""Live start-time forecasts on the testbed: hpcopt's against Slurm's own ``squeue --start``.

A KTH-SP2 slice scaled to the 8-node testbed as ``slurm_validation.py replay`` scales it
(sizes 1..8 nodes, sleeps of 10-60 s, limits of 1..4 minutes, offered load 1.1) is submitted
at its scaled times to two fresh testbeds at once:

- ``hpcopt``: the jobs held by the submit script, ``hpcopt slurm run --policy fcfs`` (EASY)
  releasing them and writing every pending job's forecast after each cycle
  (``--forecast-file``); no accounting, so the adapter learns runtimes from the jobs it sees
  end;
- ``slurm``: Slurm alone (``sched/backfill``, no hold).

Every ``--every`` seconds a sampler reads the forecasts of every pending job: the adapter's
file in the first, ``squeue --start`` (``SLURM_TIME_FORMAT=%s``) in the second. Each sample
is compared with the start the job really had (Slurm's jobcomp log): MAE, median absolute
error, within 1 minute, within 10% of the job's wait, 10%-90% band coverage (hpcopt), and
the share of pending samples with no forecast at all. Root only (the testbed).

    python benchmarks/slurm_forecast.py --jobs 100 --out benchmarks/results/slurm_forecast
    python benchmarks/slurm_forecast.py --jobs 100 --slurm 24.11 \
        --out benchmarks/results/slurm_forecast_24.11

Writes ``OUT/samples_<run>.csv`` (one row per sample: time, job, forecast, band, real start)
and ``OUT/summary.json``, and prints the table; ``--rescore`` scores the samples saved in
``OUT`` again, without running anything.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))

from slurm_validation import (  # noqa: E402
    DEFAULT_TRACE,
    HPCOPT,
    completed_jobs,
    scaled_slice,
    squeue_starts,
    stop_run,
    submit_all,
)

from hpcopt import testbed  # noqa: E402

_STARTING = threading.Lock()


def sample_file(path: Path) -> list[tuple]:
    """(time, job, start, p10, p90, bands) of every pending job in the adapter's forecast
    file; ``bands`` is "calibrated" or "raw" (the file's)."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return [(doc["time"], r["id"], r["start"], r["p10"], r["p90"], doc["bands"])
            for r in doc["jobs"]]


def sample_squeue(env: dict) -> list[tuple]:
    """(time, job, start, start, start, "-") of every pending job as ``squeue --start``
    shows it (``squeue_starts``: ``None`` where it shows none; no rows if squeue failed)."""
    got = squeue_starts(env)
    if got is None:
        return []
    now, rows = got
    return [(now, jid, t, t, t, "-") for jid, _, t, _ in rows]


def run(kind: str, jobs: list[dict], args, workdir: Path) -> tuple[list, dict]:
    """One run on a fresh testbed: the samples and the real starts by job id."""
    d = workdir / kind
    with _STARTING:  # one testbed starts at a time: each takes the next free ports
        conf = testbed.start(d, 8, scheduler="backfill" if kind == "slurm" else "builtin",
                             hold=kind != "slurm", slurm=args.slurm)
    env = testbed.env(conf.parent)  # SLURM_CONF, and the version's client commands first
    forecasts = d / "forecasts.json"
    proc = None
    samples: list = []
    try:
        if kind == "hpcopt":
            proc = subprocess.Popen([HPCOPT, "slurm", "run", "--policy", "fcfs", "--interval",
                                     "0.5", "--forecast-file", str(forecasts)], env=env,
                                    stdout=subprocess.DEVNULL)
        done, failed = threading.Event(), []

        def submit() -> None:
            try:
                submit_all(jobs, env)
            except Exception as exc:  # noqa: BLE001 - reported by the loop below
                failed.append(exc)
            done.set()

        submitter = threading.Thread(target=submit)
        submitter.start()
        t0 = time.time()
        while not done.is_set() or len(completed_jobs(d)) < len(jobs):
            if failed:
                raise SystemExit(f"{kind}: a submission failed: {failed[0]}")
            if time.time() - t0 > args.max_minutes * 60:
                raise SystemExit(f"{kind}: not done in {args.max_minutes} minutes")
            samples.extend(sample_file(forecasts) if kind == "hpcopt" else sample_squeue(env))
            time.sleep(args.every)
        submitter.join()
    finally:
        stop_run(proc, d)
    real = dict(completed_jobs(d, by="JobId"))
    return samples, real


def scores(rows: list[dict]) -> dict:
    with_start = [r for r in rows if r["start"] is not None]
    out = {"samples": len(rows), "no_forecast": 1 - len(with_start) / max(1, len(rows))}
    if with_start:
        errs = [abs(r["start"] - r["actual"]) for r in with_start]
        waits = [r["actual"] - r["submit"] for r in with_start]
        out.update(mae_s=statistics.fmean(errs), median_ae_s=statistics.median(errs),
                   within_1min=sum(e <= 60 for e in errs) / len(errs),
                   within_10pct=sum(e <= 0.1 * w for e, w in zip(errs, waits)) / len(errs),
                   late=sum(r["start"] > r["actual"] for r in with_start) / len(with_start))
        out["before_band"], out["band"], out["after_band"] = band_shares(with_start)
        calibrated = [r for r in with_start if r["bands"] == "calibrated"]
        raw = [r for r in with_start if r["bands"] == "raw"]
        if calibrated:
            out.update(calibrated=len(calibrated) / len(with_start),
                       band_calibrated=band_shares(calibrated)[1],
                       band_raw=band_shares(raw)[1])
    return out


def band_shares(rows: list[dict]) -> tuple[float, float, float]:
    """The shares of ``rows`` whose real start came before their band, inside it and after
    it, to a second (a 10%-90% band claims 10%, 80% and 10%); NaN without rows."""
    if not rows:
        return math.nan, math.nan, math.nan
    before = sum(r["actual"] < r["p10"] - 1 for r in rows) / len(rows)
    after = sum(r["actual"] > r["p90"] + 1 for r in rows) / len(rows)
    return before, 1.0 - before - after, after


FIELDS = ["time", "job", "submit", "start", "p10", "p90", "bands", "actual"]


def read_samples(path: Path) -> list[dict]:
    """The rows of a saved ``samples_<run>.csv``, numbers as numbers (no forecast: None)."""
    with open(path, newline="") as f:
        return [{k: (v if k == "bands" else float(v) if v != "" else None)
                 for k, v in row.items()} for row in csv.DictReader(f)]


def summarize(out: Path) -> None:
    """Score the samples saved in ``out``: ``summary.json`` and the printed table."""
    summary = {kind: scores(read_samples(out / f"samples_{kind}.csv"))
               for kind in ("hpcopt", "slurm")}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"{'run':7} {'samples':>7} {'none':>5} {'MAE s':>6} {'med s':>6} {'<=1min':>6} "
          f"{'<=10%':>6} {'band':>5} {'late':>5}")
    for kind, s in summary.items():
        print(f"{kind:7} {s['samples']:7d} {s['no_forecast']:5.2f} {s.get('mae_s', 0):6.1f} "
              f"{s.get('median_ae_s', 0):6.1f} {s.get('within_1min', 0):6.3f} "
              f"{s.get('within_10pct', 0):6.3f} {s.get('band', 0):5.2f} {s.get('late', 0):5.2f}")
        if "calibrated" in s:
            print(f"{'':7} real starts before the band {s['before_band']:.3f}, after it "
                  f"{s['after_band']:.3f}; bands calibrated in {s['calibrated']:.2f} of the "
                  f"samples: there the band held {s['band_calibrated']:.2f}, raw "
                  f"{s['band_raw']:.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", default=str(DEFAULT_TRACE))
    ap.add_argument("--first", type=int, default=5000)
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--every", type=float, default=2.0, help="seconds between samples")
    ap.add_argument("--max-minutes", type=float, default=30)
    ap.add_argument("--slurm", choices=["22.05", "24.11"], default="22.05",
                    help="the testbeds' Slurm version")
    ap.add_argument("--out", default="benchmarks/results/slurm_forecast")
    ap.add_argument("--rescore", action="store_true",
                    help="score the samples saved in --out again; run nothing")
    args = ap.parse_args()
    out = Path(args.out)
    if args.rescore:
        summarize(out)
        return 0
    scale = SimpleNamespace(trace=args.trace, first=args.first, jobs=args.jobs, nodes=8,
                            run_min=10, run_max=60, limit_max=4, load=1.1)
    jobs = scaled_slice(scale)
    out.mkdir(parents=True, exist_ok=True)
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="hpcopt-forecast-") as work:
        threads = [threading.Thread(target=lambda k=k: results.__setitem__(
            k, run(k, jobs, args, Path(work)))) for k in ("hpcopt", "slurm")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if len(results) < 2:
        raise SystemExit("a run failed (see above): no comparison")
    for kind, (samples, real) in results.items():
        rows = []
        for t, jid, start, p10, p90, bands in samples:
            rec = real.get(str(jid))
            if rec is None or rec["start"] <= t - 1:  # started before the sample was read
                continue
            rows.append({"time": t, "job": jid, "submit": rec["submit"], "start": start,
                         "p10": p10, "p90": p90, "bands": bands, "actual": rec["start"]})
        with open(out / f"samples_{kind}.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=FIELDS)
            w.writeheader()
            w.writerows(rows)
    summarize(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
