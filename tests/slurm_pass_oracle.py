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

Shared cores: a partition of N nodes x C cores that shares nodes core by core
(``OverSubscribe=NO``, ``select/cons_tres`` with ``CR_Core``), each job ``sbatch -n K``:
K tasks of one core (``min_nodes`` 1, ``max_nodes`` unset, so ``req_nodes`` 1:
``get_node_cnts``; ``choose_nodes`` caps ``max_nodes`` at K).  The main scheduler and the
will-run test select cores with ``select_cores`` (``_eval_nodes`` of 22.05's
src/plugins/select/cons_tres/job_test.c, ``_eval_nodes_consec`` of 24.11's
src/plugins/topology/common/eval_nodes.c) on the free cores of the usable nodes (``_job_test``'s
step 1: every running job's cores taken; ``job_node_req`` is ``NODE_CR_ONE_ROW``, so that
is the only step); the will-run test frees a job's cores (``job_res_rm_job``) where it
frees a whole-node job's nodes; backfill's usable nodes need be one (``min_nodes``), not
K; a reservation holds the whole nodes of the cores planned for the job
(``_add_reservation`` with the job's node bitmap) and ``_test_resv_overlap`` tests those
nodes; ``_bf_reserve_running`` does not hold a job on shared cores (its ``job_resrcs`` is
not ``WHOLE_NODE_REQUIRED``) unless it has licenses, and then holds only them.

Simplifications of the oracle: the node choice (``choose``) is cons_tres's default
consecutive best fit (``_eval_nodes_consec`` in src/plugins/topology/common/eval_nodes.c)
on nodes of equal weight; the main scheduler's pass is the rule above, not a transcription
of ``_schedule``; a running job whose end has passed is not guessed at
(``_guess_job_end``: the start is one second from now); the jobs of ``node_space`` are
reserved in the order the window lists them; no node is completing, no job has a feature,
an advance reservation, a deadline or a preemptor, no job runs in another partition; the
will-run test's 2-s wall-time limit never fires.  On shared cores also: a node's cores are
counted, not named (which cores a job gets, ``dist_tasks`` and the socket layout, is left
out: with one thread per core and no ``--ntasks-per-*``, ``--cpus-per-task`` or GRES the
counts decide every choice); no memory is configured as consumable (``CR_Core``, not
``CR_Core_Memory``); no ``pack_serial_at_end``, ``bf_busy_nodes`` (``prefer_alloc_nodes``)
or ``LLN``; the nodes have equal ``Weight`` and none is powered down or rebooting (24.11's
``_set_sched_weight``); a started job's cores per node are the counts ``select_cores``
gives (their sum is K, so ``dist_tasks`` places one task per core given).

A window is a dict (JSON-safe) as ``dump`` writes it: ``now`` (whole seconds), ``origin``
(Unix time of time 0), ``nodes``, ``licenses`` (the pool, 0 without), ``running``
(``[id, start, limit_s, [node ids], licenses]``) and ``queue`` in priority order
(``[id, nodes, limit_s, licenses]``); ``limit_s`` is the time limit in whole minutes, as
seconds.  On shared cores ``cores`` (per node) too, a running job's nodes are
``[[node, cores], ...]`` and a queued job's size is its cores.  ``conf``: ``version``
("22.05" or "24.11"), ``bf_resolution``, ``bf_window`` (minutes), ``bf_max_job_test``,
``bf_job_part_count_reserve``, ``bf_running_job_reserve``, ``bf_licenses``.
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


def select_cores(free: dict, tasks: int) -> dict | None:
    """cons_tres's selection (``_eval_nodes`` of 22.05's src/plugins/select/cons_tres/
    job_test.c, ``_eval_nodes_consec`` of 24.11's src/plugins/topology/common/eval_nodes.c)
    for ``sbatch -n tasks`` (one core per task; ``min_nodes`` = ``req_nodes`` = 1,
    ``max_nodes`` = ``tasks``: ``choose_nodes``) on nodes of equal weight; ``free``: the
    usable nodes' free cores.  Sets of consecutive nodes with free cores; while cores are
    missing, the set with the fewest cores that has enough (the first of equal ones), else
    the one with the most (the first of equal ones); in it, while one more node is enough
    (``rem_nodes <= 1``: always, the job asks one node), the node with the fewest free cores
    that has enough (the first of equal ones) alone, else its nodes in order, each giving
    its free cores (``_cpus_to_use``: the last only what is missing).  Returns
    {node: cores} or None."""
    if sum(free.values()) < tasks:
        return None
    sets: list[list[int]] = []
    for n in sorted(k for k, c in free.items() if c > 0):
        if sets and sets[-1][-1] == n - 1:
            sets[-1].append(n)
        else:
            sets.append([n])
    cpus = [sum(free[n] for n in nodes) for nodes in sets]
    avail = dict(free)
    got: dict = {}
    rem, rem_nodes, max_nodes = tasks, 1, tasks
    while sets and max_nodes > 0:
        best, best_suff = None, False
        for k, nodes in enumerate(sets):
            if not nodes:
                continue
            suff = cpus[k] >= rem and len(nodes) >= rem_nodes
            if best is None or (suff and not best_suff) or (suff and cpus[k] < cpus[best]) \
                    or (not suff and cpus[k] > cpus[best]):
                best, best_suff = k, suff
        if best is None:
            break
        nodes = sets[best]
        if rem_nodes <= 1:  # try best fit single node
            fit = None
            for n in nodes:
                if avail[n] >= rem and (fit is None or avail[n] < avail[fit]):
                    fit = n
                    if avail[n] == rem:
                        break
            if fit is not None:
                for n in nodes:
                    if n != fit:
                        avail[n] = 0
        for n in nodes:
            if max_nodes == 0 or (rem_nodes <= 0 and rem <= 0):
                break
            if avail[n] <= 0 or (max_nodes == 1 and avail[n] < rem):
                continue
            take = avail[n]
            rem_max = rem - max(rem_nodes - 1, 0)  # _cpus_to_use
            if take > rem_max:
                take = max(rem_max, 1)
            got[n] = take
            rem -= take
            rem_nodes -= 1
            max_nodes -= 1
        if rem_nodes <= 0 and rem <= 0:
            return got
        sets[best] = []
    return None


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
        merging it in is removing them; ``bf_licenses_deduct`` takes the job's licenses (none
        left on an underflow)."""
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
                ns[j][4] = max(0.0, ns[j][4] - lic)  # an underflow leaves none
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
    """``bf_licenses_avail``: true without licenses in the plan or for a job that asks
    none."""
    return left is None or lic <= 0 or lic <= left + 1e-9


# ------------------------------------------------------------------ the will-run test

def will_run(version: str, now: int, running: list, avail: set, need: int, lic: float,
             start: int, end: int, now_only: bool, origin: float, lic_total: float = 0.0,
             cores: int = 0):
    """The select plugin's ``_will_run_test`` for a job of ``need`` whole nodes (or, with
    ``cores`` per node, ``need`` single-core tasks: ``select_cores``) and ``lic`` licenses
    on the usable nodes ``avail``; ``running``: (end_time, node set, licenses, {node:
    cores}) of every running job; ``start``/``end``: 24.11's ``will_run_data`` (backfill's
    ``start_res`` and ``later_start``); from 24.11 the test also needs the licenses free of
    the jobs still running (``license_job_test_with_list`` in ``_job_test``).  Returns
    (start_time, nodes) or None; on shared cores the nodes are {node: cores}."""
    busy = set().union(*(r[1] for r in running)) if running else set()
    used: dict = {}
    for r in running:
        for n, c in r[3].items():
            used[n] = used.get(n, 0) + c
    new = version >= "24.11"
    held = [sum(r[2] for r in running)]

    def release(r) -> None:
        """``job_res_rm_job``: the job's nodes (cores) and licenses are free for the test."""
        nonlocal busy
        busy = busy - r[1]
        for n, c in r[3].items():
            used[n] -= c
        held[0] -= r[2]

    def test(taken):
        if new and lic > 0 and lic > lic_total - held[0] + 1e-9:
            return None
        if cores:
            return select_cores({n: cores - used.get(n, 0) for n in avail}, need)
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
                release(r)
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
            release(r)
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

def running_job(start: float, lim: int, ns: list, lic: float, cores: int) -> tuple:
    """A window's running job as the pass reads it: (end_time, node set, licenses,
    {node: cores} on shared cores, else {}); ``end_time`` is the whole second it started
    plus its limit."""
    alloc = {int(n): int(k) for n, k in ns} if cores else {}
    return (math.floor(start + 1e-9) + lim, set(alloc) if cores else set(ns), float(lic),
            alloc)


def run_pass(window: dict, conf: dict | None = None,
             where: dict | None = None) -> tuple[list, dict]:
    """The main scheduler's pass, then ``_attempt_backfill``, on a window: the ids started
    (in order) and each backfill-tested job's start (``job_ptr->start_time`` where the pass
    leaves one set); ``where``, if given, gets each started job's nodes ({node: cores} on
    shared cores, {node: 1} on whole nodes)."""
    c = {**DEFAULTS, **(conf or {})}
    new = c["version"] >= "24.11"
    res = int(c["bf_resolution"])
    now = int(window["now"])
    origin = float(window["origin"])
    every = set(range(window["nodes"]))
    cores = int(window.get("cores", 0))  # cores per node of a shared-core partition
    running = [running_job(start, lim, ns, lic, cores)
               for _, start, lim, ns, lic in window["running"]]
    free_lic = float(window["licenses"]) - sum(r[2] for r in running)
    busy = set().union(*(r[1] for r in running)) if running else set()
    started: list = []
    where = {} if where is None else where

    def fit_now(need: int):
        """The nodes the job gets now ({node: cores} on shared cores), or None."""
        if not cores:
            got = choose(every - busy, need)
            return None if got is None else dict.fromkeys(got, 1)
        free = dict.fromkeys(every, cores)
        for r in running:
            for n, k in r[3].items():
                free[n] -= k
        return select_cores(free, need)

    def start_now(jid, lim: int, alloc: dict, lic: float) -> None:
        nonlocal busy, free_lic
        nodes = set(alloc)
        running.append((now + lim, nodes, float(lic), alloc if cores else {}))
        busy |= nodes
        free_lic -= lic
        started.append(jid)
        where[jid] = alloc

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
        got = fit_now(need)
        if got is None:
            break
        start_now(jid, lim, got, lic)

    # _attempt_backfill
    planned: dict = {}
    begin = now // res * res
    window_end = (now + int(c["bf_window"]) * 60) // res * res
    pool = float(window["licenses"])
    ns = NodeSpace(begin, window_end, every, pool if bf_licenses and pool > 0 else None)

    def hold_running(end: int, nodes: set, lic: float) -> None:
        """``_bf_reserve_running``: a running job to its end on the grid, its nodes if it
        holds them whole (``WHOLE_NODE_REQUIRED``: not on shared cores), its licenses if it
        has any (a job with neither is not held)."""
        if cores:
            if not lic:
                return
            nodes = set()
        end = (end + res - 1) // res * res if new else end // res * res
        ns.add_reservation(0, end, nodes, res, lic)

    if reserve_running:
        for end, nodes, lic, _ in running:
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
            # min_nodes: the job's nodes, or one for tasks on shared cores
            if licenses_unavail or len(avail) < (1 if cores else need):
                if later_start and not no_reserve:
                    continue
                break
            if not counted:
                depth_try += 1
                counted = True
            got = will_run(c["version"], now, running, avail, need, lic, start_res,
                           later_start, no_reserve, origin, pool, cores)
            if got is None:
                if later_start and not no_reserve:
                    continue
                break
            start, alloc = got
            if not cores:
                alloc = dict.fromkeys(alloc, 1)
            nodes = set(alloc)
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
                start_now(jid, lim, alloc, lic)
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


def _policy(conf: dict, origin: float, cores: int = 0, nodes: int = 0, base=None, cls=None):
    """A ``slurm`` policy (``cls``: a subclass) with ``conf``'s pass options over ``base``
    (a ``SlurmConf``; default Slurm's defaults), on ``nodes`` x ``cores`` shared cores when
    ``cores``."""
    from dataclasses import replace

    from hpcopt.policies.slurm_backfill import SlurmScheduler
    from hpcopt.sim.slurmconf import SlurmConf

    base = base or SlurmConf()
    if cores:
        base = replace(base, nodes=nodes, cpus_per_node=cores, shared_cores=True)
    return (cls or SlurmScheduler)(conf=base, scheduler_parameters=_params(conf),
                                   clock_origin=origin,
                                   slurm_version=conf.get("version", DEFAULTS["version"]))


def dump(jobs, system, conf: dict, origin: float = 0.0, every: int = 1,
         limit: int | None = None, cores: int = 0, base=None) -> list[dict]:
    """The pass inputs of a ``--policy slurm`` simulation of ``jobs`` (Slurm's defaults, or
    ``base``, a ``SlurmConf``, over ``conf``): the state each time the driver asks the
    policy for a decision with jobs waiting, read before the policy decides (every
    ``every``-th, at most ``limit``).  With ``cores`` the partition shares its nodes core
    by core: ``system`` counts cores (nodes x ``cores``), jobs ask cores, and a window
    gives each running job's cores per node (``[[node, cores], ...]``)."""
    from hpcopt.policies.slurm_backfill import SlurmScheduler
    from hpcopt.sim.driver import Simulator

    windows: list[dict] = []
    seen = [0]
    per = cores or 1
    n_nodes = system.nodes // per

    def placed(mask: int) -> list:
        """A running job's units (a bit mask of nodes, or of cores): its nodes, or
        [node, cores] pairs on shared cores."""
        if not cores:
            return [n for n in range(n_nodes) if mask >> n & 1]
        node = (1 << per) - 1
        return [[n, k] for n in range(n_nodes) if (k := ((mask >> (n * per)) & node).bit_count())]

    def record(policy, window) -> None:
        held = getattr(policy, "_units_of", {})
        if window.jobs and len(window.jobs) == window.queue_length and \
                window.time == int(window.time) and \
                all(r.job.id in held for r in window.running) and \
                (limit is None or len(windows) < limit):
            seen[0] += 1
            if seen[0] % every == 0:
                windows.append({
                    "now": int(window.time), "origin": origin, "nodes": n_nodes,
                    **({"cores": cores} if cores else {}),
                    "licenses": float(system.bb),
                    "running": [[r.job.id, r.start, limit_s(r.job.walltime),
                                 placed(held[r.job.id][0]), float(r.job.bb)]
                                for r in window.running],
                    "queue": [[j.id, j.nodes, limit_s(j.walltime), float(j.bb)]
                              for j in window.jobs]})

    class Recorder(SlurmScheduler):
        def decide(self, window):
            record(self, window)
            return super().decide(window)

    Simulator(jobs, system, _policy(conf, origin, cores, n_nodes, base, Recorder)).run()
    return windows


def model_pass(window: dict, conf: dict, where: dict | None = None) -> tuple[list, dict]:
    """The model's decision on a window, through its public interface: a ``slurm`` policy
    in a simulator at the window's state (the running jobs on the window's nodes, or
    cores), one ``schedule()``; the ids it starts (queue order) and its
    ``planned_starts``; ``where``, if given, gets each started job's {node: cores} (read
    from the policy's record of what it holds, as the running jobs are written into it)."""
    from hpcopt.domain import Job, System
    from hpcopt.sim.driver import Simulator

    now = window["now"]
    cores = int(window.get("cores", 0))
    per = cores or 1
    policy = _policy(conf, window["origin"], cores, window["nodes"])
    n = len(window["queue"])
    queue = [Job(jid, float(now - n + k), float(lim), float(lim), need, bb=lic)
             for k, (jid, need, lim, lic) in enumerate(window["queue"])]
    units: dict = {}
    taken = [0] * window["nodes"]  # cores of each node given out so far
    for jid, start, lim, ns, _ in window["running"]:
        mask = 0
        for n_k in ns:
            node, k = (n_k if cores else (n_k, 1))
            mask |= ((1 << k) - 1) << (node * per + taken[node])
            taken[node] += k
        units[jid] = (mask, float(start) + lim)
    running = [(Job(jid, float(start), float(lim), float(lim), units[jid][0].bit_count(),
                    bb=lic), float(start) + lim)
               for jid, start, lim, ns, lic in window["running"]]
    sim = Simulator.at(float(now), System(window["nodes"] * per, bb=window["licenses"]),
                       policy, queue, running)
    # the running jobs hold the window's nodes (the policy's own record of what it started)
    policy._units_of = dict(units)
    sim.schedule()
    started = [j.id for j in queue if sim.records[j.id].start == sim.records[j.id].start]
    if where is not None:
        node = (1 << per) - 1
        for jid in started:
            mask = policy._units_of[jid][0]
            where[jid] = {x: k for x in range(window["nodes"])
                          if (k := ((mask >> (x * per)) & node).bit_count())}
    return started, dict(policy.planned_starts)


def compare(window: dict, conf: dict) -> str | None:
    """None when the model and the oracle agree on the window (the jobs started now, every
    backfill-tested job's start and, on shared cores, each started job's cores per node),
    else a one-line description of the first difference."""
    got_where: dict = {}
    want_where: dict = {}
    shared = bool(window.get("cores"))
    got_started, got_planned = model_pass(window, conf, got_where if shared else None)
    want_started, want_planned = run_pass(window, conf, want_where)
    got, want = set(got_started), set(want_started)
    if got != want:
        return (f"t={window['now']}: started model-only {sorted(got - want)} oracle-only "
                f"{sorted(want - got)}")
    for jid in list(want_planned) + [j for j in got_planned if j not in want_planned]:
        if got_planned.get(jid) != want_planned.get(jid):
            return (f"t={window['now']}: job {jid} planned model {got_planned.get(jid)} "
                    f"oracle {want_planned.get(jid)}")
    if shared:
        for jid in want_started:
            if got_where[jid] != want_where[jid]:
                return (f"t={window['now']}: job {jid} placed model {got_where[jid]} "
                        f"oracle {want_where[jid]}")
    return None
