"""A plain-Python FCFS + EASY-backfilling loop: the yardstick and oracle for hpcopt's driver.

Written independently of ``hpcopt.sim.driver`` from the semantics in its module docstring,
for a node-only machine:

- events are submissions and completions (at start + actual runtime); at each event time all
  completions are applied, then all submissions, then one scheduling pass (a job of runtime 0
  completes at the same time, so a second pass follows at that time);
- the queue is in FCFS order (submit, id); a pass starts jobs from the head while the head fits;
- then the head gets a reservation: walking running jobs by estimated end (start + requested
  walltime), releasing all that end at the same time together, the shadow time is the first
  estimated end at which the head fits, and the extra nodes are those free then minus the
  head's; the rest of the queue is scanned in order (stopping when no node is free): a job that
  fits now starts if it ends by its walltime no later than the shadow time, or else if it fits
  in the extra nodes, which then shrink by its size.

Used by ``benchmarks/simulator_speed.py`` (in-process and as a whole process) and by
``tests/test_reference_loop.py`` (identical start times).  As a script it reads a *clean*
SWF file (every job valid: runtime <= requested time, size >= 1), simulates it and writes
``id,start`` lines (and prints the job count, average and maximum wait)::

    python benchmarks/reference_easy.py TRACE.swf[.gz] --nodes N --out starts.csv
"""

from __future__ import annotations

import heapq
import sys
from bisect import bisect_left, insort


def simulate_easy(jobs, nodes):
    """Start times ``{id: start}`` of ``jobs`` = iterable of (id, submit, runtime, walltime,
    size) on ``nodes`` nodes under FCFS + EASY backfilling."""
    jobs = sorted(jobs, key=lambda j: (j[1], j[0]))
    n = len(jobs)
    start = {}
    free = nodes
    queue = []  # waiting jobs, FCFS order
    ends = []  # heap of (actual end, seq, size, estimated-end key)
    running = []  # sorted (estimated end, seq, size) of running jobs
    seq = 0
    nxt = 0  # next job of the trace to submit
    while nxt < n or ends:
        now = jobs[nxt][1] if nxt < n else ends[0][0]
        if ends and ends[0][0] < now:
            now = ends[0][0]
        while ends and ends[0][0] == now:
            _, _, size, key = heapq.heappop(ends)
            del running[bisect_left(running, key)]
            free += size
        while nxt < n and jobs[nxt][1] == now:
            queue.append(jobs[nxt])
            nxt += 1
        if not queue:
            continue
        # head first
        k = 0
        while k < len(queue) and queue[k][4] <= free:
            jid, _, run, wall, size = queue[k]
            free -= size
            start[jid] = now
            seq += 1
            key = (now + wall, seq, size)
            insort(running, key)
            heapq.heappush(ends, (now + run, seq, size, key))
            k += 1
        if k == len(queue):
            queue = []
            continue
        if k:
            queue = queue[k:]
        # reservation for the head
        need = queue[0][4]
        avail, shadow, i = free, now, 0
        while avail < need:
            shadow = running[i][0]
            while i < len(running) and running[i][0] == shadow:
                avail += running[i][2]
                i += 1
        extra = avail - need
        # backfill the rest
        keep = [queue[0]]
        for pos in range(1, len(queue)):
            job = queue[pos]
            if free == 0:
                keep.extend(queue[pos:])
                break
            jid, _, run, wall, size = job
            if size > free:
                keep.append(job)
                continue
            if now + wall > shadow:
                if size > extra:
                    keep.append(job)
                    continue
                extra -= size
            free -= size
            start[jid] = now
            seq += 1
            key = (now + wall, seq, size)
            insort(running, key)
            heapq.heappush(ends, (now + run, seq, size, key))
        queue = keep
    return start


def read_clean_swf(path):
    """(id, submit, runtime, walltime, size) of every record of a clean SWF file."""
    import gzip

    opener = gzip.open if str(path).endswith(".gz") else open
    jobs = []
    with opener(path, "rt") as fh:
        for line in fh:
            if not line.strip() or line.lstrip().startswith(";"):
                continue
            f = line.split()
            jid, submit, run, size, wall = int(f[0]), float(f[1]), float(f[3]), int(f[4]), \
                float(f[8])
            if size < 1 or run < 0 or run > wall:
                sys.exit(f"{path}: job {jid} is not clean (size {size}, runtime {run}, "
                         f"requested {wall})")
            jobs.append((jid, submit, run, wall, size))
    return jobs


def main(argv=None) -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--out", default=None, help="write id,start lines here")
    args = ap.parse_args(argv)
    jobs = read_clean_swf(args.trace)
    start = simulate_easy(jobs, args.nodes)
    waits = [start[j[0]] - j[1] for j in jobs]
    print(f"jobs {len(jobs)}  avg_wait {sum(waits) / len(waits):.1f}  max_wait {max(waits):g}")
    if args.out:
        with open(args.out, "w") as fh:
            fh.write("id,start\n")
            fh.writelines(f"{jid},{t!r}\n" for jid, t in start.items())


if __name__ == "__main__":
    main()
