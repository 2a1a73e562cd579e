"""A site's own rules under hpcopt, measured: Slurm's multifactor priority (fairshare, age,
job size) and an association limit, on a real Slurm with slurmdbd, and the same in the
simulator.

Part ``run`` (root: it makes unprivileged users with useradd): a KTH slice scaled to the
8-node testbed as ``slurm_validation.py`` scales it (sizes 1..8 nodes, sleeps of
``--run-min``..``--run-max`` s, whole-minute limits, arrivals at an offered load of
``--load``), its users mapped to six unprivileged users in four accounts with different
fairshare shares (``ACCOUNTS``); ``chem`` is capped at ``GrpTRES=node=4`` (its jobs over 4
nodes cut to 4: larger ones would never start).  Each run is a
fresh testbed with accounting (``--accounting``) and the site's ``slurm.conf`` lines
(``SITE_CONF``: ``priority/multifactor``, classic fairshare, fairshare + age + size
weights, a ten-minute decay half-life, ``AccountingStorageEnforce=associations,limits``).
Before the replay the accounts get usage of their own (``PRIOR``: ``phys`` and ``bio`` run
150 s on 6 and 2 nodes; then one calculation period passes so sshare shows it); then the
slice is submitted at its scaled times, each job by its user under its account, and
scheduled by

- Slurm alone (``sched/backfill``, ``bf_interval=1``; ``slurm-pcr1``: with
  ``bf_job_part_count_reserve=1`` too), or
- ``hpcopt slurm run --policy fcfs`` / ``knapsack`` (the site's priority is the default
  order on a multifactor cluster; the adapter reads the limits from slurmdbd;
  ``fcfs-wake`` / ``knapsack-wake``: with its wake-up, ``--wake-port``, and
  ``batch_sched_delay=0``), each side in its default and its best simple setting (``KINDS``).

Each run writes ``OUT/<kind>-<rep>.json``: Slurm's times of every job (jobcomp log), its
user and account, the slurm.conf, the ``sacct`` dump of the run (``Account`` included) and
the adapter's cycles.

Part ``analyze``: per run, mean wait, mean bounded slowdown (tau 10 s), max wait, makespan
and utilization, overall and per account, and each account's share of the node-seconds
delivered while the slice arrived (first to last submission) against its fairshare target
(its shares over all); then each run replayed in hpcopt's simulator (``--policy slurm``
for Slurm alone, the hpcopt policy with ``--order priority`` otherwise) with the run's
slurm.conf, the accounts, shares and limit, the prior usage as the jobs that made it, and
the start latency measured on the OTHER runs of the same scheduler (of all other runs where
there is none; out of sample: nothing is fitted on the run compared): deviation of the mean
wait and Kendall tau of the start order.  Writes ``OUT/site_rules.json`` and prints
markdown tables.

    python benchmarks/site_rules.py run --reps 1 2 --out benchmarks/results/site_rules
    python benchmarks/site_rules.py analyze benchmarks/results/site_rules
"""

from __future__ import annotations

import argparse
import json
import pwd
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import slurm_validation as sv  # noqa: E402  (its scaling, jobcomp reading and latencies)

ACCOUNTS = {"chem": 40, "phys": 30, "bio": 20, "math": 10}
"""Each account's fairshare shares (sacctmgr ``fairshare=``)."""
USERS = {"hpcsr1": "chem", "hpcsr2": "chem", "hpcsr3": "phys", "hpcsr4": "phys",
         "hpcsr5": "bio", "hpcsr6": "math"}
"""The unprivileged users and their accounts (the slice's users by job count, in turn)."""
NODE_CAP = {"chem": 4}
"""The limit: each account's ``GrpTRES=node=N``."""
PRIOR = (("hpcsr3", 6, 150), ("hpcsr5", 2, 150))
"""The usage before the replay: (user, nodes, seconds) jobs run together."""
CALC_S = 60  # PriorityCalcPeriod
SITE_CONF = ("PriorityType=priority/multifactor", "PriorityFlags=NO_FAIR_TREE",
             "PriorityWeightFairshare=10000", "PriorityWeightAge=1000",
             "PriorityWeightJobSize=1000", "PriorityMaxAge=0:10:00",
             "PriorityDecayHalfLife=0:10:00", f"PriorityCalcPeriod={CALC_S // 60}",
             "AccountingStorageEnforce=associations,limits")
SACCT_FORMAT = ("JobID,JobName,Submit,Start,End,Elapsed,Timelimit,NNodes,NCPUS,State,"
                "Partition,User,Account")
TAU = 10.0  # bounded slowdown threshold, seconds
KINDS = ("slurm", "fcfs", "knapsack", "slurm-pcr1", "fcfs-wake", "knapsack-wake")
"""The runs: Slurm alone and the hpcopt policies in their defaults, and each in its best
documented simple setting: ``-pcr1`` Slurm with ``bf_job_part_count_reserve=1``, ``-wake``
the adapter with its wake-up (``--wake-port``, the testbed's submit script and
``EpilogSlurmctld`` sending the datagrams, and ``batch_sched_delay=0`` as docs/slurm.md asks
of a site that runs it)."""
PCR1 = "bf_job_part_count_reserve=1"
CYCLE_KEYS = ("time", "ok", "read_s", "decide_s", "pending", "free_nodes", "released")
"""What a run keeps of each adapter cycle (its log has the rest)."""


def site_slice(args) -> list[dict]:
    """The scaled slice, each job with its user and account (the slice's users ranked by
    job count, then first appearance, dealt to ``USERS`` in turn); the jobs of a capped
    account no larger than its cap."""
    from hpcopt import load_trace

    jobs = sv.scaled_slice(args)
    by_id = {j.id: j for j in load_trace(args.trace).jobs}
    owners = [by_id[j["trace_id"]].user for j in jobs]
    counts: dict = {}
    for i, u in enumerate(owners):
        counts.setdefault(u, [0, i])[0] += 1
    ranked = sorted(counts, key=lambda u: (-counts[u][0], counts[u][1]))
    names = list(USERS)
    unix = {u: names[r % len(names)] for r, u in enumerate(ranked)}
    for job, owner in zip(jobs, owners):
        job["user"] = unix[owner]
        job["account"] = USERS[job["user"]]
        # a job over its account's cap would never start (it waits AssocGrpNodeLimit)
        job["nodes"] = min(job["nodes"], NODE_CAP.get(job["account"], job["nodes"]))
    return jobs


def unix_users() -> list[str]:
    """Make the missing ``USERS`` (useradd -M); returns those made."""
    made = []
    for user in USERS:
        try:
            pwd.getpwnam(user)
        except KeyError:
            subprocess.run(["useradd", "-M", "-s", "/bin/sh", user], check=True,
                           capture_output=True)
            made.append(user)
    return made


def sbatch_as(user: str, env: dict, name: str, nodes: int, limit: int, sleep: int) -> None:
    """Submit one job as ``user`` under its account."""
    keep = [f"{k}={env[k]}" for k in ("SLURM_CONF", "PATH")]
    p = subprocess.run(["runuser", "-u", user, "--", "env", *keep, "sbatch", "--parsable",
                        "-D", "/tmp", "-o", "/dev/null", "-J", name, "-A", USERS[user],
                        "-N", str(nodes), "-t", str(limit), "--wrap", f"sleep {sleep}"],
                       capture_output=True, text=True, timeout=60, cwd="/tmp")
    if p.returncode:
        raise SystemExit(f"sbatch as {user} ({name}): {p.stderr.strip()}")


def site_accounts(env: dict) -> None:
    """The accounts (shares, the node cap) and their users in slurmdbd."""
    for account, shares in ACCOUNTS.items():
        cap = [f"GrpTRES=node={NODE_CAP[account]}"] if account in NODE_CAP else []
        subprocess.run(["sacctmgr", "-i", "add", "account", account, f"fairshare={shares}",
                        *cap], env=env, check=True, capture_output=True, timeout=60)
    for user, account in USERS.items():
        subprocess.run(["sacctmgr", "-i", "add", "user", user, f"account={account}"],
                       env=env, check=True, capture_output=True, timeout=60)


def prior_usage(d: Path, env: dict) -> None:
    """``PRIOR``'s jobs run (released by hand where the submit script holds them), then one
    calculation period so that sshare shows their usage."""
    for i, (user, nodes, seconds) in enumerate(PRIOR):
        sbatch_as(user, env, f"p{i}", nodes, seconds // 60 + 2, seconds)
    held = subprocess.run(["squeue", "-h", "-o", "%i"], env=env, capture_output=True,
                          text=True, timeout=60).stdout.split()
    if held:
        subprocess.run(["scontrol", "release", *held], env=env, capture_output=True,
                       timeout=60)
    t0 = time.time()
    while len([n for n in sv.completed_jobs(d) if n.startswith("p")]) < len(PRIOR):
        if time.time() - t0 > 600:
            raise SystemExit(f"{d}: the prior jobs did not end")
        time.sleep(1)
    time.sleep(CALC_S + 15)


DECAY_MARK = "_read_last_decay_ran"
"""The slurmctld.log line the priority plugin's decay thread writes as it starts: its
first calculation (it then runs every ``PriorityCalcPeriod``)."""


def decay_start(d: Path) -> float | None:
    """When the testbed ``d``'s decay thread started (epoch seconds, from its slurmctld.log;
    ``None`` if the log does not say): the phase of Slurm's priority recalculations."""
    from hpcopt.traces.tables import iso_seconds

    log = d / "log" / "slurmctld.log"
    for line in log.read_text().splitlines() if log.exists() else ():
        if DECAY_MARK in line and line.startswith("["):
            stamp = line[1:line.index("]")]
            return iso_seconds(stamp, str(log), "a timestamp")
    return None


def one_run(jobs: list[dict], kind: str, rep: int, args, work: Path) -> dict:
    """One run on a fresh testbed with accounting (module docstring)."""
    from hpcopt import testbed

    d = work / f"{kind}-{rep}"
    policy, _, setting = kind.partition("-")
    port = sv.free_udp_port() if setting == "wake" else None
    with sv._STARTING:  # one testbed starts at a time: each takes the next free ports
        conf = testbed.start(d, args.nodes, scheduler="backfill" if policy == "slurm"
                             else "builtin", hold=policy != "slurm", accounting=True,
                             slurm=args.slurm, conf_extra=SITE_CONF, wake_port=port,
                             batch_sched_delay=0 if port else None,
                             scheduler_parameters=PCR1 if setting == "pcr1" else None)
    env = testbed.env(d)
    log = d / "adapter.jsonl"
    proc = None
    try:
        site_accounts(env)
        prior_usage(d, env)
        if policy != "slurm":
            proc = subprocess.Popen(["nice", "-n", "5", sv.HPCOPT, "slurm", "run", "--policy",
                                     policy, "--interval", str(args.interval), "--log",
                                     str(log), *(["--wake-port", str(port)] if port else [])],
                                    env=env, stdout=subprocess.DEVNULL)
            until = time.time() + 60
            while not (log.exists() and log.read_text()):
                if time.time() > until:
                    raise SystemExit(f"{kind}: the adapter did not start")
                time.sleep(0.2)
        t0 = time.monotonic()
        for job in jobs:
            delay = job["at"] - (time.monotonic() - t0)
            if delay > 0:
                time.sleep(delay)
            sbatch_as(job["user"], env, job["name"], job["nodes"], job["limit"], job["sleep"])
        while len(sv.completed_jobs(d)) < len(jobs) + len(PRIOR):
            if time.monotonic() - t0 > args.max_minutes * 60:
                raise SystemExit(f"{kind}: not done in {args.max_minutes} minutes")
            time.sleep(1)
        sacct = subprocess.run(
            ["sacct", "--allusers", "--parsable2", "--starttime", "now-1days",
             "--endtime", "now+1days", "--state", "BF,CA,CD,DL,F,NF,OOM,PD,PR,R,RQ,RS,RV,S,TO",
             "--format", SACCT_FORMAT], env={**env, "TZ": "UTC"}, capture_output=True,
            text=True, timeout=60, check=True).stdout
    finally:
        sv.stop_run(proc, d)
    done = sv.completed_jobs(d)
    bad = [n for n, j in done.items() if j["state"] != "COMPLETED"]
    if bad:
        raise SystemExit(f"{kind}: jobs not COMPLETED: {bad[:5]}")
    cycles = [{k: c.as_json()[k] for k in CYCLE_KEYS}
              for c in sv.read_log(log)[0]] if log.exists() else []
    record = dict(kind=kind, rep=rep, slurm=args.slurm, slurm_conf=conf.read_text(),
                  real={n: (j["submit"], j["start"], j["end"]) for n, j in done.items()},
                  sacct=sacct, cycles=cycles, decay_start=decay_start(d))
    (Path(args.out) / f"{kind}-{rep}.json").write_text(json.dumps(record))
    print(f"{kind}-{rep}: done", flush=True)
    return record


def cmd_run(args) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = site_slice(args)
    (out / "jobs.json").write_text(json.dumps(jobs, indent=0))
    work = Path(tempfile.mkdtemp(prefix="hpcopt-site-"))  # kept: each testbed's logs
    print(f"{len(jobs)} jobs; testbeds in {work}", flush=True)
    made = unix_users()
    todo = [(kind, rep) for rep in args.reps for kind in args.runs]
    try:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(args.parallel) as pool:
            futures = {pool.submit(one_run, jobs, kind, rep, args, work): (kind, rep)
                       for kind, rep in todo}
            failed = [f"{kind}-{rep}: {f.exception()}" for f, (kind, rep) in futures.items()
                      if f.exception() is not None]
    finally:
        for user in made:
            subprocess.run(["userdel", user], capture_output=True)
    if failed:
        raise SystemExit("\n".join(failed))


# ---------------------------------------------------------------------------- analysis

def run_metrics(jobs: list[dict], real: dict, nodes: int) -> dict:
    """The slice's metrics under ``real`` (name -> (submit, start, end)): overall and per
    account, and each account's share of the node-seconds delivered while the slice
    arrived, against its target."""
    names = [j["name"] for j in jobs]
    size = {j["name"]: j["nodes"] for j in jobs}
    account = {j["name"]: j["account"] for j in jobs}
    sub = np.array([real[n][0] for n in names])
    start = np.array([real[n][1] for n in names])
    end = np.array([real[n][2] for n in names])
    wait = start - sub
    run = end - start
    bsld = np.maximum(1.0, (wait + run) / np.maximum(run, TAU))
    span = float(end.max() - sub.min())
    work = float((run * np.array([size[n] for n in names])).sum())
    lo, hi = float(sub.min()), float(sub.max())
    delivered = {a: 0.0 for a in ACCOUNTS}
    for n, s, e in zip(names, start, end):
        delivered[account[n]] += size[n] * max(0.0, min(e, hi) - max(s, lo))
    total = sum(delivered.values()) or 1.0
    shares = sum(ACCOUNTS.values())
    per = {}
    for a in ACCOUNTS:
        mask = np.array([account[n] == a for n in names])
        if not mask.any():
            continue
        share = delivered[a] / total
        per[a] = dict(jobs=int(mask.sum()), wait=float(wait[mask].mean()),
                      bsld=float(bsld[mask].mean()), max_wait=float(wait[mask].max()),
                      share=share, target=ACCOUNTS[a] / shares,
                      share_off=share - ACCOUNTS[a] / shares)
    return dict(jobs=len(names), wait=float(wait.mean()), bsld=float(bsld.mean()),
                max_wait=float(wait.max()), makespan=span, utilization=work / (nodes * span),
                share_off=0.5 * sum(abs(p["share_off"]) for p in per.values()),
                accounts=per)


def simulate_run(jobs: list[dict], record: dict, delay: float, period: float | None,
                 nodes: int, rules: bool = True) -> dict[str, float]:
    """The run replayed in hpcopt's simulator: the prior jobs and the slice at Slurm's
    submit times with their real run times, the run's slurm.conf (weights; Slurm's own
    scheduler for Slurm alone), the accounts' shares and users, the node cap; each start
    ``delay`` s after its decision, passes every ``period`` s (the adapter's cycle).
    ``rules=False``: without the site's fairshare and limit (submit order; Slurm's own
    age and size factors for Slurm alone), to show what they change.  Start time by
    name."""
    from hpcopt.domain import Job, System
    from hpcopt.policies import make_policy
    from hpcopt.sim.driver import Simulator
    from hpcopt.sim.limits import Limit, SiteLimits, Who
    from hpcopt.sim.priority import SitePriority

    real = record["real"]
    conf = Path(tempfile.mkdtemp(prefix="hpcopt-site-")) / "slurm.conf"
    conf.write_text(record["slurm_conf"])
    spec = {j["name"]: (j["user"], j["nodes"], j["limit"] * 60.0) for j in jobs}
    spec.update({f"p{i}": (u, n, (s // 60 + 2) * 60.0) for i, (u, n, s) in enumerate(PRIOR)})
    t0 = min(real[n][0] for n in spec)
    names = sorted(spec, key=lambda n: (real[n][0], n[0] != "p", int(n[1:])))
    users = list(USERS)
    sim_jobs, who, accounts = [], {}, {}
    for i, name in enumerate(names):
        user, size, limit = spec[name]
        sub, start, end = real[name]
        sim_jobs.append(Job(i, sub - t0, min(max(end - start, 0.0), limit), limit, size,
                            user=users.index(user)))
        accounts[i] = USERS[user]
        who[i] = Who(USERS[user], str(users.index(user)))
    # the testbed's root user holds one share beside the accounts (sshare's NormShares);
    # Slurm recomputed the priorities every PriorityCalcPeriod from its decay thread's start
    order = SitePriority.from_conf(conf, accounts, shares={**ACCOUNTS, "root": 1},
                                   associations=[(a, str(users.index(u)))
                                                 for u, a in USERS.items()],
                                   decay_start=(record.get("decay_start") or t0) - t0)
    limits = SiteLimits(accounts={a: Limit(nodes=n) for a, n in NODE_CAP.items()}, who=who)
    kind = record["kind"].partition("-")[0]  # the run's slurm.conf holds its setting
    if not rules:
        order, limits = None, None
    if kind == "slurm":
        policy = make_policy("slurm", slurm_conf=str(conf), launch_latency=delay,
                             slurm_version=record.get("slurm", "22.05"))  # the run's release
        sim = Simulator(sim_jobs, System(nodes), policy, order=order, limits=limits)
    else:
        sim = Simulator(sim_jobs, System(nodes), make_policy(kind), order=order, limits=limits,
                        launch_delay=delay, period=period)
    sim.run()
    return {name: sim.records[i].start + t0 for i, name in enumerate(names)}


def cmd_analyze(args) -> None:
    if args.sim_without_cap:  # the simulations only: what the one limit check costs there
        NODE_CAP.clear()
    folder = Path(args.folder)
    jobs = json.loads((folder / "jobs.json").read_text())
    records = [json.loads(p.read_text()) for p in sorted(folder.glob("*-*.json"))]
    rows = []
    for rec in records:
        real = {k: tuple(v) for k, v in rec["real"].items()}
        slice_real = {j["name"]: real[j["name"]] for j in jobs}
        metrics = run_metrics(jobs, slice_real, args.nodes)
        same = [r for r in records if r is not rec and r["kind"] == rec["kind"]]
        others = [g for r in same or [r for r in records if r is not rec]
                  for g in sv.latency_kept({j["name"]: tuple(r["real"][j["name"]])
                                            for j in jobs})]
        delay = round(float(np.mean(others)), 2) if others else 0.0
        cycle = sv.cycle_length(rec) if rec["cycles"] else None
        sim_delay = delay if cycle is None else round(max(0.0, delay - cycle / 2), 2)
        if args.sim_latency is not None:  # every side as fast as given, passes at events
            delay = sim_delay = args.sim_latency
            cycle = None
        t = time.perf_counter()
        sim = simulate_run(jobs, rec, sim_delay, cycle, args.nodes)
        sim_s = time.perf_counter() - t
        sim_real = {n: (slice_real[n][0], sim[n], sim[n] + slice_real[n][2] - slice_real[n][1])
                    for n in slice_real}
        sim_metrics = run_metrics(jobs, sim_real, args.nodes)
        cmp = sv.compare(slice_real, {n: sim[n] for n in slice_real})
        bare = sv.compare(slice_real, simulate_run(jobs, rec, sim_delay, cycle, args.nodes,
                                                   rules=False))
        row = dict(run=f"{rec['kind']}-{rec['rep']}", kind=rec["kind"], slurm=rec["slurm"],
                   latency=delay, cycle=cycle, sim_s=round(sim_s, 3), real=metrics,
                   sim=sim_metrics, tau=cmp["tau"], wait_dev_pct=cmp["wait_dev_pct"],
                   bsld_dev_pct=cmp["bsld_dev_pct"], bare_wait=bare["wait_sim"],
                   bare_wait_dev_pct=bare["wait_dev_pct"], bare_tau=bare["tau"])
        rows.append(row)
    if not args.sim_without_cap and args.sim_latency is None:
        (folder / "site_rules.json").write_text(json.dumps(rows, indent=1))
    print_tables(rows)


def print_tables(rows: list[dict]) -> None:
    label = {"slurm": "Slurm alone", "fcfs": "hpcopt fcfs", "knapsack": "hpcopt knapsack",
             "slurm-pcr1": f"Slurm alone, {PCR1}", "fcfs-wake": "hpcopt fcfs, wake-up",
             "knapsack-wake": "hpcopt knapsack, wake-up"}
    print("| run | mean wait (s) | mean bsld | max wait (s) | makespan (s) | utilization | "
          "node-share off target | " + " | ".join(f"{a} wait (s) / bsld / share (target)"
                                                  for a in ACCOUNTS) + " |")
    print("|---" * (7 + len(ACCOUNTS)) + "|")
    for r in rows:
        m = r["real"]
        cells = [f"{label[r['kind']]} ({r['run'].rsplit('-', 1)[1]})", f"{m['wait']:.1f}",
                 f"{m['bsld']:.2f}", f"{m['max_wait']:.0f}", f"{m['makespan']:.0f}",
                 f"{m['utilization']:.3f}", f"{m['share_off']:.3f}"]
        for a in ACCOUNTS:
            p = m["accounts"].get(a)
            cells.append("-" if p is None else f"{p['wait']:.1f} / {p['bsld']:.2f} / "
                         f"{p['share']:.2f} ({p['target']:.2f})")
        print("| " + " | ".join(cells) + " |")
    print()
    print("| run | latency from other runs (s) | adapter cycle (s) | wait real (s) | "
          "wait simulated (s) | deviation | bsld deviation | Kendall tau | "
          "node-share off target real / simulated | simulation (s) | "
          "without the site's rules: wait (deviation), tau |")
    print("|---" * 11 + "|")
    for r in rows:
        print(f"| {label[r['kind']]} ({r['run'].rsplit('-', 1)[1]}) | {r['latency']:g} | "
              f"{r['cycle'] if r['cycle'] is not None else '-'} | {r['real']['wait']:.1f} | "
              f"{r['sim']['wait']:.1f} | {r['wait_dev_pct']:+.1f}% | "
              f"{r['bsld_dev_pct']:+.1f}% | {r['tau']:.3f} | "
              f"{r['real']['share_off']:.3f} / {r['sim']['share_off']:.3f} | "
              f"{r['sim_s']:.2f} | {r['bare_wait']:.1f} ({r['bare_wait_dev_pct']:+.1f}%), "
              f"{r['bare_tau']:.3f} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="part", required=True)
    r = sub.add_parser("run")
    sv.slice_arguments(r, first=3000, jobs=100, nodes=8, run_min=5, run_max=30,
                       limit_max=3, load=1.1)
    r.add_argument("--interval", type=float, default=0.5, help="adapter cycle, seconds")
    r.add_argument("--runs", nargs="+", default=list(KINDS), choices=KINDS)
    r.add_argument("--reps", nargs="+", type=int, default=[1], help="run numbers")
    r.add_argument("--parallel", type=int, default=3, help="testbeds at once")
    r.add_argument("--max-minutes", type=float, default=40)
    r.add_argument("--slurm", default="22.05", choices=["22.05", "24.11"])
    r.add_argument("--out", required=True)
    a = sub.add_parser("analyze")
    a.add_argument("folder")
    a.add_argument("--nodes", type=int, default=8)
    a.add_argument("--sim-without-cap", action="store_true",
                   help="simulate without the node cap (the runs had it)")
    a.add_argument("--sim-latency", type=float, default=None, metavar="S",
                   help="simulate every run with this start latency and passes at events "
                        "(not the one measured)")
    args = p.parse_args()
    {"run": cmd_run, "analyze": cmd_analyze}[args.part](args)


if __name__ == "__main__":
    main()
