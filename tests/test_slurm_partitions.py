"""One adapter, several partitions (slow tier, both Slurm versions).

The testbed is split (``split=4``): the managed partitions ``batch`` (n1-n4) and ``batch2``
(n5-n8), and ``debug`` on all eight nodes, not managed.  One ``hpcopt slurm run --partition
batch,batch2`` reads Slurm once per cycle and decides each partition on its own: each job
starts on its partition's nodes, one log record per partition, a status block each.  The
locks are per partition (a second adapter for either one is refused), or one for the set
with ``--lock``; partitions that share nodes are refused before any decision.
"""

from __future__ import annotations

import json

import pytest

from hpcopt.slurm.topology import expand_hostlist

from .slurm_fixtures import VERSIONS, started_testbed

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def split(request):
    with started_testbed(request.param, "parts", split=4) as c:
        yield c


def _finish(p, timeout: float = 60) -> tuple[int, str, str]:
    out, err = p.communicate(timeout=timeout)
    return p.returncode, out, err


def test_each_partition_decided_on_its_own_nodes(split):
    c = split
    a = c.submit("-p", "batch", "-N", "4", "-t", "1", sleep=1)
    b = c.submit("-p", "batch", "-N", "1", "-t", "1", sleep=1)
    d = c.submit("-p", "batch2", "-N", "3", "-t", "1", sleep=1)
    e = c.submit("-p", "batch,batch2", "-N", "1", "-t", "1", sleep=1)  # narrowed to batch
    assert c.jobs()[e]["partition"] == "batch"
    log = c.dir / "parts.jsonl"
    code, out, err = _finish(c.cli("run", "--policy", "fcfs", "--once", "--partition",
                                   "batch,batch2", "--log", str(log),
                                   "--lock", str(c.dir / "parts.lock")))
    assert code == 0, err
    assert out.splitlines() == [f"partition batch: cycle 1: released {a}; reserved {b} at +60 s",
                                f"partition batch2: cycle 1: released {d}"], out
    recs = [json.loads(line) for line in log.read_text().splitlines()]
    recs = [r for r in recs if "event" not in r]
    assert [(r["partition"], r["released"], r["pending"]) for r in recs] == \
        [("batch", [a], 3), ("batch2", [d], 1)]
    c.wait(lambda: all(c.state(i) == "COMPLETED" for i in (a, d)), 30)
    jobs = c.jobs()
    assert set(expand_hostlist(jobs[a]["nodes"])) == {"n1", "n2", "n3", "n4"}
    assert set(expand_hostlist(jobs[d]["nodes"])) <= {"n5", "n6", "n7", "n8"}
    code, out, err = _finish(c.cli("status", "--log", str(log)))
    assert code == 0 and out.count("partition batch: cycle 1") == 1 \
        and out.count("partition batch2: cycle 1") == 1, out
    c.cancel([b, e])


def test_the_locks_and_overlapping_partitions(split):
    c = split
    log = c.dir / "locks.jsonl"
    first = c.cli("run", "--policy", "fcfs", "--interval", "30", "--partition", "batch",
                  "--partition", "batch2", "--log", str(log))
    try:  # its first cycle logged: it holds both locks
        c.wait(lambda: first.poll() is None and log.exists() and
               log.read_text().count("\n") >= 2, 20)
        code, _, err = _finish(c.cli("run", "--policy", "fcfs", "--once", "--partition",
                                     "batch2"))
        assert code == 75 and "partition 'batch2' is scheduled by another adapter" in err, err
    finally:
        first.terminate()
        _finish(first)
    code, _, err = _finish(c.cli("run", "--policy", "fcfs", "--once", "--partition", "batch",
                                 "--partition", "debug", "--lock", str(c.dir / "o.lock")))
    assert code == 2 and err.count("\n") == 1, err
    assert "partitions batch and debug share node n1: one adapter schedules several " \
           "partitions only when their nodes are disjoint" in err

