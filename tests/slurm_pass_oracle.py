"""An independent oracle for one scheduling pass of Slurm alone, written from Slurm's source.

Transcribed from Slurm 22.05.8 and 24.11.5, not from ``hpcopt.policies.slurm_backfill``:
``_attempt_backfill``, ``_add_reservation``, ``_test_resv_overlap``, ``_bf_reserve_running``
and ``_set_slot_time`` (src/plugins/sched/backfill/backfill.c) and the node selection's
will-run test (``_will_run_test`` in src/plugins/select/cons_common/job_test.c for 22.05;
``_will_run_test`` and ``_future_run_test`` in src/plugins/select/cons_tres/job_test.c for
24.11), on plain Python sets and lists: node ids, and a ``node_space`` list of records
(begin, end, available node set, next) linked as Slurm links them.

What is covered: one partition of whole nodes, Slurm's default backfill and
``bf_running_job_reserve`` (running jobs in ``node_space`` too: ``_bf_reserve_running``),
licenses as one pool (without ``bf_licenses`` a job whose licenses are taken now is not
tested; with it, which implies ``bf_running_job_reserve``, ``node_space`` holds them),
``bf_resolution``, ``bf_window``, ``bf_max_job_test``, ``bf_job_part_count_reserve``;
before it, the main scheduler's pass (jobs in priority order while they fit; a job whose
licenses are taken is passed over, or under ``bf_licenses`` ends the pass).

Simplifications of the oracle: the node choice (``choose``) is cons_tres's default
consecutive best fit (``_eval_nodes_consec`` in src/plugins/topology/common/eval_nodes.c)
on nodes of equal weight; the main scheduler's pass is the rule above, not a transcription
of ``_schedule``; a running job whose end has passed is not guessed at
(``_guess_job_end``: the start is one second from now); the jobs of ``node_space`` are
reserved in the order the window lists them; no node is completing, no job has a feature,
an advance reservation, a deadline or a preemptor, no job runs in another partition; the
will-run test's 2-s wall-time limit never fires.

A window is a dict (JSON-safe) as ``dump`` writes it: ``now`` (whole seconds), ``origin``
(Unix time of time 0), ``nodes``, ``licenses`` (the pool, 0 without), ``running``
(``[id, start, limit_s, [node ids], licenses]``) and ``queue`` in priority order
(``[id, nodes, limit_s, licenses]``); ``limit_s`` is the time limit in whole minutes, as
seconds.  ``conf``: ``version`` ("22.05" or "24.11"), ``bf_resolution``, ``bf_window``
(minutes), ``bf_max_job_test``, ``bf_job_part_count_reserve``, ``bf_running_job_reserve``,
``bf_licenses``.
"""

from __future__ import annotations

import math

DEFAULTS = {"version": "24.11", "bf_resolution": 60, "bf_window": 1440,
            "bf_max_job_test": 500, "bf_job_part_count_reserve": 0,
            "bf_running_job_reserve": False, "bf_licenses": False}


def limit_s(walltime: float) -> int:
    """A time limit as Slurm stores it: whole minutes, rounded up, at least one; seconds."""
    return max(1, math.ceil(walltime / 60 - 1e-9)) * 60


# ------------------------------------------------------------------ node selection

def choose(free: set, need: int) -> set | None:
    """cons_tres's default selection on nodes of equal weight: runs of consecutive free
    nodes; while nodes are missing, the smallest run that is sufficient (the first of equal
    ones), else the largest (the first of equal ones), taken from its lowest node."""
    if len(free) < need:
        return None
    runs: list[list[int]] = []
    for n in sorted(free):
        if runs and runs[-1][-1] == n - 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    got: set = set()
    rem = need
    while rem > 0:
        best = None
        for k, run in enumerate(runs):
            if not run:
                continue
            if best is None:
                best = k
                continue
            b = runs[best]
            suff, bsuff = len(run) >= rem, len(b) >= rem
            if (suff and not bsuff) or (suff and len(run) < len(b)) or \
                    (not suff and not bsuff and len(run) > len(b)):
                best = k
        take = runs[best][:rem]
        got |= set(take)
        rem -= len(take)
        runs[best] = []
    return got


# ------------------------------------------------------------------ node_space

class NodeSpace:
    """backfill.c's ``node_space`` table: records [begin, end, avail set, next, licenses
    remaining (None: the plan holds no licenses)], record 0 first, ``next`` 0 at the
    last."""

    def __init__(self, begin: int, end: int, nodes: set, licenses: float | None) -> None:
        self.rec = [[begin, end, set(nodes), 0, licenses]]

    def walk(self):
        """The records in time order (following ``next``)."""
        j = 0
        while True:
            yield self.rec[j]
            j = self.rec[j][3]
            if j == 0:
                return

    def add_reservation(self, start: int, end_reserve: int, job_nodes: set, res: int,
                        lic: float = 0.0) -> None:
        """``_add_reservation``: ``res_bitmap`` is the complement of the job's nodes, so
        merging it in is removing them; ``bf_licenses_deduct`` takes the job's licenses."""
        ns = self.rec
        placed = False
        one_before, one_after = 0, -1
        start = max(start, ns[0][0])
        if end_reserve < start + res:
            end_reserve = start + res
        j = 0
        while True:
            if ns[j][1] > start:
                ns.append([start, ns[j][1], set(ns[j][2]), ns[j][3], ns[j][4]])
                i = len(ns) - 1
                ns[j][1] = start
                ns[j][3] = i
                placed = True
                break
            if ns[j][1] == start:
                placed = True
                break
            one_before = j
            j = ns[j][3]
            if j == 0:
                break
        while placed:
            j = ns[j][3]
            if j == 0:
                break
            if end_reserve < ns[j][1]:
                ns.append([end_reserve, ns[j][1], set(ns[j][2]), ns[j][3], ns[j][4]])
                i = len(ns) - 1
                ns[j][1] = end_reserve
                ns[j][3] = i
            ns[j][2] -= job_nodes
            if ns[j][4] is not None:
                ns[j][4] -= lic
            if end_reserve == ns[j][1]:
                if ns[j][3]:
                    one_after = ns[j][3]
                break
        i = one_before
        while i != one_after:
            j = ns[i][3]
            if j == 0:
                break
            if ns[i][4] != ns[j][4] or ns[i][2] != ns[j][2]:
                i = j
                continue
            ns[i][1] = ns[j][1]
            ns[i][3] = ns[j][3]
            break

    def overlap(self, use: set, start: int, end_reserve: int, lic: float = 0.0) -> bool:
        """``_test_resv_overlap``: the nodes, or the licenses, meet a reservation over
        [start, end_reserve)."""
        for b, e, avail, _, left in self.walk():
            if e > start and b < end_reserve and (not use <= avail or not lic_avail(left, lic)):
                return True
        return False


def lic_avail(left: float | None, lic: float) -> bool:
    """``bf_licenses_avail``: true without licenses in the plan."""
    return left is None or lic <= left + 1e-9


# ------------------------------------------------------------------ the will-run test

def will_run(version: str, now: int, running: list, avail: set, need: int, lic: float,
             start: int, end: int, now_only: bool, origin: float, lic_total: float = 0.0):
    """The select plugin's ``_will_run_test`` for a whole-node job of ``need`` nodes and
    ``lic`` licenses on the usable nodes ``avail``; ``running``: (end_time, node set,
    licenses) of every running job; ``start``/``end``: 24.11's ``will_run_data``
    (backfill's ``start_res`` and ``later_start``); from 24.11 the test also needs the
    licenses free of the jobs still running (``license_job_test_with_list`` in
    ``_job_test``).  Returns (start_time, nodes) or None."""
    busy = set().union(*(r[1] for r in running)) if running else set()
    new = version >= "24.11"
    held = [sum(r[2] for r in running)]

    def test(taken):
        if new and lic > 0 and lic > lic_total - held[0] + 1e-9:
            return None
        return choose(avail - taken, need)

    if not (new and start > now):
        got = test(busy)
        if got is not None:
            return now, got
        if now_only:
            return None
    # 24.11 _future_run_test / 22.05's loop
    cr = []
    for r in running:
        if new and r[0] < start:
            if r[1] & avail or (r[2] > 0 and lic > 0):
                busy = busy - r[1]
                held[0] -= r[2]
        else:
            cr.append(r)
    if new:
        got = test(busy)
        if got is not None:
            return now, got
    cr.sort(key=lambda r: r[0])  # list_sort: a merge sort, stable
    time_window, end_time, it, more = 30, 0, 0, True
    while more:
        last = nxt = None
        rm_cnt = 0
        skip_test = False
        while True:
            if it >= len(cr) or (new and end and cr[it][0] > end):
                more = False
                break
            r = cr[it]
            it += 1
            if not (r[1] & avail) and not (new and r[2] > 0 and lic > 0):
                continue
            if not end_time:
                delta = int((r[0] + origin) % time_window)
                end_time = r[0] + (time_window - delta)
            last = r
            busy = busy - r[1]
            held[0] -= r[2]
            nxt = cr[it] if it < len(cr) else None
            if nxt is None:
                more = False
                break
            if nxt[0] > end_time + time_window:
                break
            rm_cnt += 1
            if rm_cnt - 1 > 200:
                skip_test = True
                break
        if skip_test:
            continue
        if last is None:
            break
        got = test(busy)
        if got is not None:
            return (last[0] if last[0] > now else now + 1), got
        time_window *= 2
        while nxt is not None and nxt[0] > end_time + time_window:
            time_window *= 2
    return None


# ------------------------------------------------------------------ one pass

def run_pass(window: dict, conf: dict | None = None) -> tuple[list, dict]:
    """The main scheduler's pass, then ``_attempt_backfill``, on a window: the ids started
    (in order) and each backfill-tested job's start (``job_ptr->start_time`` where the pass
    leaves one set)."""
    c = {**DEFAULTS, **(conf or {})}
    new = c["version"] >= "24.11"
    res = int(c["bf_resolution"])
    now = int(window["now"])
    origin = float(window["origin"])
    every = set(range(window["nodes"]))
    running = [(math.floor(start + 1e-9) + lim, set(ns), float(lic))
               for _, start, lim, ns, lic in window["running"]]
    free_lic = float(window["licenses"]) - sum(r[2] for r in running)
    busy = set().union(*(r[1] for r in running)) if running else set()
    started: list = []

    bf_licenses = bool(c["bf_licenses"])
    reserve_running = bf_licenses or bool(c["bf_running_job_reserve"])
    # the main scheduler: priority order while the jobs fit; licenses taken: passed over
    # (under bf_licenses the pass ends there)
    queue = list(window["queue"])
    for jid, need, lim, lic in queue:
        if lic > free_lic + 1e-9:
            if bf_licenses:
                break
            continue
        got = choose(every - busy, need)
        if got is None:
            break
        running.append((now + lim, got, float(lic)))
        busy |= got
        free_lic -= lic
        started.append(jid)

    # _attempt_backfill
    planned: dict = {}
    begin = now // res * res
    window_end = (now + int(c["bf_window"]) * 60) // res * res
    pool = float(window["licenses"])
    ns = NodeSpace(begin, window_end, every, pool if bf_licenses and pool > 0 else None)

    def hold_running(end: int, nodes: set, lic: float) -> None:
        """``_bf_reserve_running``: a running job (whole nodes) to its end on the grid."""
        end = (end + res - 1) // res * res if new else end // res * res
        ns.add_reservation(0, end, nodes, res, lic)

    if reserve_running:
        for end, nodes, lic in running:
            hold_running(end, nodes, lic)
    resv_count = 0
    depth_try = 0
    for jid, need, lim, lic in queue:
        if jid in started:
            continue  # not pending any more
        if depth_try >= c["bf_max_job_test"]:
            break
        no_reserve = bool(c["bf_job_part_count_reserve"]) and \
            resv_count >= c["bf_job_part_count_reserve"]
        if not bf_licenses and lic > free_lic + 1e-9:
            continue  # license_job_test: not runnable now
        counted = False
        later_start = now
        while True:  # TRY_LATER
            start_res = later_start
            later_start = 0
            if new and window_end < start_res:
                break
            end_time = lim + max(start_res, now)
            avail = set(every)
            tmp = set(avail)
            licenses_unavail = False
            for b, e, sp, nx, left in ns.walk():
                if e > start_res and nx and later_start == 0 and \
                        not (tmp & ns.rec[nx][2]) <= (avail & sp):
                    later_start = e
                if e <= start_res:
                    pass
                elif b <= end_time:
                    avail &= sp
                    if not lic_avail(left, lic):
                        licenses_unavail = True
                        later_start = e
                else:
                    if new and later_start == 0 and nx and ns.rec[nx][3]:
                        later_start = ns.rec[nx][1]
                    break
            if licenses_unavail or len(avail) < need:
                if later_start and not no_reserve:
                    continue
                break
            if not counted:
                depth_try += 1
                counted = True
            got = will_run(c["version"], now, running, avail, need, lic, start_res,
                           later_start, no_reserve, origin, pool)
            if got is None:
                if later_start and not no_reserve:
                    continue
                break
            start, nodes = got
            if start_res > start:
                start = start_res
            overlap_tested = False
            if new and start > now:
                slot = (start // res * res, (start + lim + res - 1) // res * res)
                if ns.overlap(nodes, *slot, lic):
                    later_start = start
                    continue
                overlap_tested = True
            if start <= now:  # can start now
                running.append((now + lim, nodes, float(lic)))
                busy |= nodes
                free_lic -= lic
                started.append(jid)
                planned[jid] = now
                hold_running(now + lim, nodes, lic)
                break
            if no_reserve:
                planned[jid] = start  # "StartTime set but no backfill reservation"
                break
            if later_start and start > later_start:
                continue
            if new:
                if not overlap_tested:
                    slot = (start // res * res, (start + lim + res - 1) // res * res)
            else:
                slot = (start // res * res, (start + lim) // res * res)
            if start > now + int(c["bf_window"]) * 60:
                planned[jid] = start  # no reservation beyond the window
                break
            if not overlap_tested and ns.overlap(nodes, *slot, lic):
                later_start = start
                continue
            if c["bf_job_part_count_reserve"]:
                resv_count += 1
            ns.add_reservation(slot[0], slot[1], nodes, res, lic)
            planned[jid] = start
            break
    return started, planned


# ------------------------------------------------------------------ windows of real runs

def _params(conf: dict) -> str:
    c = {**DEFAULTS, **conf}
    flags = [k for k in ("bf_running_job_reserve", "bf_licenses") if c[k]]
    return ",".join([f"{k}={c[k]}" for k in ("bf_resolution", "bf_window", "bf_max_job_test",
                                               "bf_job_part_count_reserve")] + flags)


def dump(jobs, system, conf: dict, origin: float = 0.0, every: int = 1,
         limit: int | None = None) -> list[dict]:
    """The pass inputs of a ``--policy slurm`` simulation of ``jobs`` (Slurm's defaults
    over ``conf``): the state each time the driver asks the policy for a decision with jobs
    waiting, read before the policy decides (every ``every``-th, at most ``limit``)."""
    from hpcopt.policies.slurm_backfill import SlurmScheduler
    from hpcopt.sim.driver import Simulator

    windows: list[dict] = []
    seen = [0]

    class Recorder(SlurmScheduler):
        def decide(self, window):
            held = getattr(self, "_units_of", {})
            if window.jobs and len(window.jobs) == window.queue_length and \
                    window.time == int(window.time) and \
                    all(r.job.id in held for r in window.running) and \
                    (limit is None or len(windows) < limit):
                seen[0] += 1
                if seen[0] % every == 0:
                    windows.append({
                        "now": int(window.time), "origin": origin, "nodes": system.nodes,
                        "licenses": float(system.bb),
                        "running": [[r.job.id, r.start, limit_s(r.job.walltime),
                                     [n for n in range(system.nodes)
                                      if held[r.job.id][0] >> n & 1], float(r.job.bb)]
                                    for r in window.running],
                        "queue": [[j.id, j.nodes, limit_s(j.walltime), float(j.bb)]
                                  for j in window.jobs]})
            return super().decide(window)

    policy = Recorder(scheduler_parameters=_params(conf), clock_origin=origin,
                      slurm_version=conf.get("version", DEFAULTS["version"]))
    Simulator(jobs, system, policy).run()
    return windows


def model_pass(window: dict, conf: dict) -> tuple[list, dict]:
    """The model's decision on a window, through its public interface: a ``slurm`` policy
    in a simulator at the window's state (the running jobs on the window's nodes), one
    ``schedule()``; the ids it starts (queue order) and its ``planned_starts``."""
    from hpcopt.domain import Job, System
    from hpcopt.policies.slurm_backfill import SlurmScheduler
    from hpcopt.sim.driver import Simulator

    now = window["now"]
    policy = SlurmScheduler(scheduler_parameters=_params(conf),
                            clock_origin=window["origin"],
                            slurm_version=conf.get("version", DEFAULTS["version"]))
    n = len(window["queue"])
    queue = [Job(jid, float(now - n + k), float(lim), float(lim), need, bb=lic)
             for k, (jid, need, lim, lic) in enumerate(window["queue"])]
    running = [(Job(jid, float(start), float(lim), float(lim), len(ns), bb=lic),
                float(start) + lim) for jid, start, lim, ns, lic in window["running"]]
    sim = Simulator.at(float(now), System(window["nodes"], bb=window["licenses"]), policy,
                       queue, running)
    # the running jobs hold the window's nodes (the policy's own record of what it started)
    policy._units_of = {jid: (sum(1 << x for x in ns), float(start) + lim)
                        for jid, start, lim, ns, _ in window["running"]}
    sim.schedule()
    started = [j.id for j in queue if sim.records[j.id].start == sim.records[j.id].start]
    return started, dict(policy.planned_starts)


def compare(window: dict, conf: dict) -> str | None:
    """None when the model and the oracle agree on the window (the jobs started now, every
    backfill-tested job's start), else a one-line description of the first difference."""
    got_started, got_planned = model_pass(window, conf)
    want_started, want_planned = run_pass(window, conf)
    got, want = set(got_started), set(want_started)
    if got != want:
        return (f"t={window['now']}: started model-only {sorted(got - want)} oracle-only "
                f"{sorted(want - got)}")
    for jid in list(want_planned) + [j for j in got_planned if j not in want_planned]:
        if got_planned.get(jid) != want_planned.get(jid):
            return (f"t={window['now']}: job {jid} planned model {got_planned.get(jid)} "
                    f"oracle {want_planned.get(jid)}")
    return None
