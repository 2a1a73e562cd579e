"""The burst buffer as a ``burst_buffer/lua`` pool, local SSD as a gres or as node features,
and a fat tree of several pods, read from Slurm.

Fast: ``scontrol show burst`` (the text Slurm 22.05 and 24.11 print alike), a job's ``#BB_LUA``
request, gres counts and constraints parsed; a pool's released job holding its share before
it runs is counted once; a job whose request cannot be read stays held; the decision core
counts nodes per SSD class, read from gres or features alike.  Slow (both Slurm versions,
real testbeds): the adapter reads the pool and releases jobs that fit it, none waits on the
burst buffer in Slurm; SSD-constrained jobs (gres or feature) run on nodes whose SSD fits,
where the adapter pinned them; a job placed across pods runs on the nodes ``tjap-window``
chose, with SCAS and with DCAS.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest

from hpcopt.domain import Job, System
from hpcopt.errors import HpcoptError
from hpcopt.policies import make_policy
from hpcopt.sim.decide import ClusterState, decide
from hpcopt.slurm.adapter import Settings, cycle_state
from hpcopt.slurm.state import (
    Pool,
    SlurmJob,
    SlurmNode,
    Snapshot,
    bb_size,
    constraint_terms,
    feature_size,
    gres_count,
    job_bb_request,
    parse_burst,
)
from hpcopt.slurm.topology import expand_hostlist, read_topology
from hpcopt.testbed import TestbedError as BedError
from hpcopt.testbed import (
    burst_buffer_files,
    parse_bb_pool,
    parse_ssd,
    slurm_conf,
    start,
    topology_conf,
)

from .slurm_fixtures import (
    ENDED,
    VERSIONS,
    Cluster,
    check_released_fit_bb,
    cycle_until_placed,
    started_testbed,
    unix_user,
)

#: ``scontrol show burst`` as Slurm 22.05.8 printed it on the testbed (24.11.5 adds a
#: ``PollInterval=15`` line), one job staged in
BURST = """\
Name=lua DefaultPool=(null) Granularity=1 TotalSpace=0 FreeSpace=0 UsedSpace=0
  PoolName[0]=bb Granularity=1 TotalSpace=100 FreeSpace=40 UsedSpace=60
  Flags=DisablePersistent
  StageInTimeout=30 StageOutTimeout=30 ValidateTimeout=5 OtherTimeout=30
  GetSysState=(null)
  GetSysStatus=(null)
  Allocated Buffers:
    JobID=2 CreateTime=2026-11-26T16:40:58 Pool=bb Size=60 State=allocated UserID=u(1005)
  Per User Buffer Use:
    UserID=u(1005) Used=60
"""
NOW = 1_000_000.0


def test_burst_pools_and_requests_parse():
    assert parse_burst(BURST) == {"bb": Pool(100.0, 60.0, {2: 60.0})}
    assert job_bb_request("#BB_LUA pool=bb capacity=60") == {"bb": 60.0}
    assert job_bb_request("") == {}
    assert job_bb_request("#BB_LUA pool=bb capacity=6x") is None
    assert job_bb_request("#BB_LUA capacity=6") is None  # a size of no pool
    assert bb_size("2K") == 2048 and bb_size("1KB") == 1000 and bb_size("x") is None
    for text, n in (("gres:ssd:200", 200), ("gres/ssd:200", 200), ("ssd:128(S:0)", 128),
                    ("(null)", 0), ("", 0), ("gpu:2,ssd:big:256", 256)):
        assert gres_count(text, "ssd") == n, text
    assert gres_count("gres:ssd:lots", "ssd") is None


def test_constraints_and_ssd_features_parse():
    assert feature_size("ssd256", "ssd") == 256 and feature_size("ssdx", "ssd") is None
    assert feature_size("nvme800", "ssd") is None and feature_size("a.b1", "a.b") == 1
    for text, terms in (("", ("", [])), ("(null)", ("", [])), ("ssd256", ("", ["ssd256"])),
                        ("ssd128|ssd256", ("|", ["ssd128", "ssd256"])),
                        ("intel&ssd128", ("&", ["intel", "ssd128"]))):
        assert constraint_terms(text) == terms, text
    for bad in ("[ssd128|ssd256]", "ssd128*2", "ssd128|intel&x", "!ssd128", "(a|b)", "a||b"):
        assert constraint_terms(bad) is None, bad


def test_testbed_options_write_the_pool_the_gres_and_the_pods(tmp_path):
    assert parse_bb_pool("bb:100") == ("bb", 100)
    assert parse_ssd("128:2,256:2", 4) == [(128, 2), (256, 2)]
    for bad in ("bb", "bb:0", "1b:5"):
        with pytest.raises(BedError, match="bb_pool: expected NAME:SIZE"):
            parse_bb_pool(bad)
    with pytest.raises(BedError, match="adding up to the 4 nodes"):
        parse_ssd("128:2,256:1", 4)
    conf = slurm_conf(tmp_path, 4, 2, 7000, "builtin", True, bb_pool=True,
                      ssd=[(128, 2), (256, 2)])
    assert "BurstBufferType=burst_buffer/lua" in conf and "GresTypes=ssd" in conf
    assert "NodeName=n[1-2] NodeHostname=localhost Port=[7001-7002] CPUs=2 RealMemory=1000 " \
           "Gres=ssd:128 State=UNKNOWN" in conf
    assert "NodeName=n[3-4] NodeHostname=localhost Port=[7003-7004]" in conf
    lua = burst_buffer_files("bb", 100)["burst_buffer.lua"]
    for fn in ("slurm_bb_pools", "slurm_bb_job_process", "slurm_bb_setup", "slurm_bb_data_in",
               "slurm_bb_job_teardown", "slurm_bb_get_status"):
        assert f"function {fn}(" in lua
    assert '\\"quantity\\": 100' in lua
    (tmp_path / "topology.conf").write_text(topology_conf(16, 2, 2))
    tree = read_topology(tmp_path / "topology.conf").tree
    assert (tree.n_nodes, tree.nodes_per_leaf, tree.nodes_per_pod) == (16, 2, 4)
    with pytest.raises(BedError, match="pod_size"):
        topology_conf(12, 2, 4)


def _job(jid, *, held=True, nodes=1, bb="", gres="", state="PENDING", reason="JobHeldUser",
         node_names=(), required="", features=""):
    return SlurmJob(jid, state, reason, 0 if held else 100, "batch", NOW - 10,
                    NOW - 5 if state == "RUNNING" else 0.0, 600.0, nodes, tuple(node_names),
                    mark="hpcopt:held" if held else "hpcopt:released:0", burst_buffer=bb,
                    gres=gres, required_nodes=required, features=features)


NODES = tuple(SlurmNode(f"n{i}", "idle", frozenset(), ("batch",)) for i in range(1, 5))


def test_a_pools_released_job_is_counted_once_and_unreadable_requests_stay_held():
    jobs = (_job(1, held=False, state="PENDING", reason="BurstBufferStageIn",
                 bb="#BB_LUA pool=bb capacity=60"),
            _job(3, bb="#BB_LUA pool=bb capacity=30"),
            _job(4, bb="#BB_LUA pool=bb capacity=lots"),
            _job(5, bb="#BB_LUA pool=other capacity=5"))
    pools = {"bb": Pool(100.0, 60.0, {1: 60.0})}
    s = cycle_state(Snapshot(NOW, jobs, NODES, 0.01, pools=pools), Settings(bb_pool="bb"))
    c = s.cluster
    assert c.system.bb == 100 and c.unavailable_bb == 0
    assert [(str(j.id), j.bb) for j in c.starting] == [("1", 60.0)]  # held already: not twice
    assert [(str(j.id), j.bb) for j in c.queue] == [("3", 30.0)]
    assert any("job 4 asks a burst buffer that cannot be read" in n for n in s.notes)
    assert any("job 5 asks burst-buffer pool other, which hpcopt does not schedule" in n
               for n in s.notes)
    d = decide(c, make_policy("bbsched"))
    assert [str(j.id) for j, _ in d.started] == ["3"]


def test_ssd_classes_are_read_per_node_and_decided_per_class():
    gres = {"n1": "ssd:128", "n2": "ssd:128", "n3": "ssd:256", "n4": "ssd:256"}
    nodes = (*NODES[:3], SlurmNode("n4", "allocated", frozenset(), ("batch",)))
    jobs = (_job(1, held=False, state="RUNNING", reason="None", node_names=("n4",)),
            _job(2, gres="gres:ssd:200"), _job(3, gres="gres/ssd:200"),
            _job(4, nodes=2, gres="gres:ssd:100"), _job(5, gres="gres:ssd:x"))
    s = cycle_state(Snapshot(NOW, jobs, nodes, 0.01, node_gres=gres), Settings(ssd_gres="ssd"))
    c = s.cluster
    assert c.system.ssd_classes == {128.0: 2, 256.0: 2} and c.placed["1"] == (0, 1)
    assert [(str(j.id), j.ssd) for j in c.queue] == [("2", 200.0), ("3", 200.0), ("4", 100.0)]
    assert any("job 5 asks gres 'gres:ssd:x', which cannot be read" in n for n in s.notes)
    d = decide(c, make_policy("fcfs"))
    assert [str(j.id) for j, _ in d.started] == ["2", "4"] and str(d.reserved.id) == "3"
    assert {str(k): v for k, v in d.placements.items()} == {"2": (0, 1), "4": (2, 0)}
    nodes = NODES[:2] + (SlurmNode("n3", "idle", frozenset(), ("debug",)),)
    with pytest.raises(HpcoptError, match=r"node n2: gres 'ssd:x' cannot be read"):
        gres = {"n1": "ssd:1", "n2": "ssd:x"}
        cycle_state(Snapshot(NOW, (), nodes, 0.01, node_gres=gres), Settings(ssd_gres="ssd"))
    state = ClusterState(NOW, System(4, ssd_classes={128: 2, 256: 2}),
                         (Job(9, NOW, 9.0, 9.0, 2, ssd=200),), completing={256: 1},
                         unavailable={128: 1})
    d = decide(state, make_policy("fcfs"))
    assert not d.started and d.reserved.id == 9  # one 256 GB node completes: not yet


def test_ssd_features_are_classes_and_constraints_requests():
    """Node features ``ssd128``/``ssd256`` read as the gres's classes (a node's largest; none:
    0 GB), each job's constraint as its need per node; a constraint hpcopt cannot read or a
    feature it does not schedule leaves the job held; a job placed on nodes of larger SSD
    than its constraint names is released with the constraint widened to them."""
    features = {"n1": "ssd128", "n2": "ssd128,intel", "n3": "ssd256",
                "n4": "ssd128,ssd256", "n5": "(null)"}
    nodes = NODES + (SlurmNode("n5", "idle", frozenset(), ("batch",)),)
    jobs = (_job(2, nodes=2, features="ssd256"), _job(3, nodes=2, features="ssd128"),
            _job(4, features="ssd128|ssd256"), _job(5, features="intel"),
            _job(6, features="[ssd128|ssd256]"), _job(7, features="ssd128&ssd256"),
            _job(8, nodes=1))
    s = cycle_state(Snapshot(NOW, jobs, nodes, 0.01, node_features=features),
                    Settings(ssd_feature="ssd"))
    c = s.cluster
    assert c.system.ssd_classes == {0.0: 1, 128.0: 2, 256.0: 2}
    assert [(str(j.id), j.ssd) for j in c.queue] == [("2", 256.0), ("3", 128.0),
                                                     ("4", 128.0), ("8", 0.0)]
    for jid, why in ((5, "asks features intel, which hpcopt does not schedule"),
                     (6, "asks features '[ssd128|ssd256]', which cannot be read"),
                     (7, "asks features 'ssd128&ssd256', which cannot be read")):
        assert any(f"job {jid} {why}" in n for n in s.notes), (jid, s.notes)
    d = decide(c, make_policy("fcfs"))
    assert [str(j.id) for j, _ in d.started] == ["2", "3", "8"]
    ssd = s.machine
    assert ssd.constraint(jobs[0], ["n3", "n4"]) is None  # its feature: as asked
    assert ssd.constraint(jobs[1], ["n1", "n2"]) is None
    assert ssd.constraint(jobs[1], ["n1", "n3"]) == "ssd128|ssd256"
    assert ssd.constraint(jobs[6], ["n5"]) is None  # no constraint: none needed
    plain = cycle_state(Snapshot(NOW, jobs[3:4], nodes, 0.01), "batch")
    assert not plain.cluster.queue and any(
        "asks features intel, which hpcopt does not schedule (--ssd-feature names the "
        "SSD's)" in n for n in plain.notes)
    with pytest.raises(HpcoptError, match="one SSD"):
        Settings(ssd_gres="ssd", ssd_feature="ssd")
    conf = slurm_conf(Path("/x"), 4, 2, 7000, "builtin", True, ssd=[(128, 2), (256, 2)],
                      ssd_feature="ssd")
    assert "Gres=ssd:256 Feature=ssd256 State=UNKNOWN" in conf
    for ssd, prefix in ((None, "ssd"), ("128:4", "a b")):  # refused before anything starts
        with pytest.raises(BedError, match="ssd_feature: expected a feature prefix"):
            start(Path("/nonexistent/bed"), 4, ssd=ssd, ssd_feature=prefix)


# ------------------------------------------------------------------ the real testbed

USER = "hpcopt-bb-user"


@pytest.fixture(scope="module")
def user():
    """An unprivileged user (Slurm's burst_buffer plugin refuses root's requests)."""
    with unix_user(USER) as name:
        yield name


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def pooled(request):
    """8 nodes, ``burst_buffer/lua`` with the pool ``bb`` of 100, n1-n4 128 GB and n5-n8
    256 GB of SSD (gres ``ssd``, and features ``ssd128``/``ssd256``)."""
    with started_testbed(request.param, "pooled", bb_pool="bb:100",
                         ssd="128:4,256:4", ssd_feature="ssd") as c:
        yield c


def submit(c: Cluster, *args: str, bb: int = 0, sleep: int = 3) -> int:
    """A job of ``USER`` (its script on stdin, ``#BB_LUA`` asking ``bb`` of the pool)."""
    env = [f"{k}={c.env[k]}" for k in ("SLURM_CONF", "PATH")]
    script = "#!/bin/sh\n" + (f"#BB_LUA pool=bb capacity={bb}\n" if bb else "") + \
        f"sleep {sleep}\n"
    p = subprocess.run(["runuser", "-u", USER, "--", "env", *env, "sbatch", "--parsable",
                        "-D", "/tmp", "-o", "/dev/null", "-t", "1", *args], input=script,
                       capture_output=True, text=True, timeout=30, cwd="/tmp")
    assert p.returncode == 0, p.stderr
    return int(p.stdout.strip().split(";")[0])


SSD = {f"n{i}": 128 if i <= 4 else 256 for i in range(1, 9)}  # ``pooled``'s nodes, GB


def ran_where_placed(c: Cluster, records: list[dict], needs: dict) -> dict:
    """Check that each job of ``needs`` ({id: SSD GB per node it asked}) ran on the nodes a
    cycle of ``records`` placed it on, each with that much SSD; every job, as Slurm shows
    it."""
    placed = {k: v for r in records for k, v in r["placed"].items()}
    jobs = c.jobs()
    for jid, need in needs.items():
        ran = expand_hostlist(jobs[jid]["nodes"])
        assert sorted(ran) == sorted(placed[str(jid)].split(",")), (jid, ran, placed)
        assert all(SSD[n] >= need for n in ran), (jid, ran)
    return jobs


def drive(c: Cluster, adapter, until, timeout: float = 60) -> list[dict]:
    records = []
    end = time.monotonic() + timeout
    while not until():
        records.append(adapter.cycle())
        assert records[-1]["ok"], records[-1].get("error")
        assert time.monotonic() < end, f"not reached in {timeout} s: {records[-1]}"
        time.sleep(0.5)
    return records


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["bbsched", "fcfs"])
def test_released_jobs_fit_the_pool(pooled, user, policy):
    """Five held 2-node jobs asking 80/70/30/20/10 of the pool of 100: the adapter reads the
    pool from ``scontrol show burst``, no cycle releases more than is free, no released job
    waits on the burst buffer in Slurm (BurstBufferResources), all five run."""
    c = pooled
    ids = [submit(c, "-N", "2", bb=bb) for bb in (80, 70, 30, 20, 10)]
    adapter = c.adapter(policy, bb_pool="bb")
    try:
        records = check_released_fit_bb(c, ids, "BurstBufferResources",
                                        lambda until: drive(c, adapter, until))
        assert records[0]["free_bb"] == 100
    finally:
        c.cancel(ids)


@pytest.mark.slow
def test_ssd_jobs_run_on_nodes_whose_ssd_fits(pooled, user):
    """Held jobs asking 200 GB (3 nodes, then 2) and 100 GB (2 nodes) per node of SSD, on
    four 128 GB and four 256 GB nodes: bbsched starts the 3-node 200 GB job and the 100 GB
    job on 128 GB nodes, the second 200 GB job waits for 256 GB nodes; every job runs on the
    nodes the adapter pinned it to, each with the SSD it asked."""
    c = pooled
    big = submit(c, "-N", "3", "--gres=ssd:200", sleep=4)
    small = submit(c, "-N", "2", "--gres=ssd:100", sleep=2)
    late = submit(c, "-N", "2", "--gres=ssd:200", sleep=2)
    ids = [big, small, late]
    adapter = c.adapter("bbsched", ssd_gres="ssd")
    try:
        records = drive(c, adapter, lambda: all(c.state(i) in ENDED for i in ids))
        first = next(r for r in records if r["released"])
        assert sorted(first["released"]) == [big, small], first
        jobs = ran_where_placed(c, records, {big: 200, small: 100, late: 200})
        assert all(SSD[n] == 128 for n in expand_hostlist(jobs[small]["nodes"]))
        assert jobs[late]["start_time"] >= jobs[big]["end_time"]
    finally:
        c.cancel(ids)


@pytest.mark.slow
def test_feature_constrained_jobs_run_where_pinned(pooled):
    """SSD as node features: held jobs asking ``ssd256`` (3 nodes), then ``ssd128`` (2 and 3
    nodes), on four ``ssd128`` and four ``ssd256`` nodes.  One cycle starts all three: the
    last one on the two 128 GB nodes left and a 256 GB one, released with its constraint
    widened to ``ssd128|ssd256``; every job runs on the nodes the adapter pinned it to."""
    c = pooled
    big = c.submit("-N", "3", "--constraint=ssd256", "-t", "1", sleep=2)
    small = c.submit("-N", "2", "--constraint=ssd128", "-t", "1", sleep=2)
    spill = c.submit("-N", "3", "--constraint=ssd128", "-t", "1", sleep=2)
    ids = [big, small, spill]
    adapter = c.adapter("fcfs", ssd_feature="ssd")
    try:
        records = drive(c, adapter, lambda: all(c.state(i) in ENDED for i in ids))
        first = next(r for r in records if r["released"])
        assert first["released"] == ids, first
        assert any(f"job {spill} placed on larger SSD" in n for n in first["notes"]), first
        jobs = ran_where_placed(c, records[:1 + records.index(first)],
                                {big: 256, small: 128, spill: 128})
        assert jobs[spill]["features"] == "ssd128|ssd256" and jobs[big]["features"] == "ssd256"
        assert all(jobs[i]["job_state"] == "COMPLETED" for i in ids), jobs
        assert sorted(SSD[n] for n in expand_hostlist(jobs[spill]["nodes"])) == [128, 128, 256]
    finally:
        c.cancel(ids)


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def pods(request):
    """8 nodes under a three-level fat tree: leaves of 2 nodes, pods of 2 leaves."""
    with started_testbed(request.param, "pods", switch_size=2, pod_size=2) as c:
        yield c


@pytest.mark.slow
@pytest.mark.parametrize("model", ["scas", "dcas"])
def test_a_job_placed_across_pods_runs_where_chosen(pods, model):
    """With n1 busy, a 6-node job cannot fit one pod of 4: tjap-window (SCAS's exact backend,
    DCAS's simulated annealing) places it on two pods (the paper's 6-hop level), and a 1-node
    job on the node left; both run on exactly those nodes."""
    c = pods
    topo = read_topology(c.dir / "topology.conf")
    busy = c.submit("-N", "1", "-w", "n1", "-t", "1", sleep=300)
    c.run("scontrol", "release", str(busy))
    c.wait(lambda: c.state(busy) == "RUNNING", 10)
    wide, single = (c.submit("-N", str(n), "-t", "1", sleep=2) for n in (6, 1))
    adapter = c.adapter(make_policy("tjap-window", model=model), topology=topo)
    try:
        placed = cycle_until_placed(adapter, 2)
        c.wait(lambda: all(c.state(i) in ("RUNNING",) + ENDED for i in (wide, single)), 15)
        jobs = c.jobs()
        for i in (wide, single):
            ran = expand_hostlist(jobs[i]["nodes"])
            assert sorted(ran) == sorted(placed[str(i)].split(",")), (i, ran, placed)
            assert "n1" not in ran
        ids = topo.ids(expand_hostlist(jobs[wide]["nodes"]))
        assert len({int(topo.tree.pod[i]) for i in ids}) == 2
    finally:
        c.cancel([busy, wide, single])


@pytest.mark.slow
def test_the_text_read_is_the_json_read(pooled, user):
    """On real Slurm, every job of odd shape (a pending array with a throttle, a node range
    with more tasks, tasks with no node count, an unmet dependency, a burst-buffer request
    over two lines, an SSD gres and constraint, a running job, an array task split out of its
    array and held) reads from ``squeue -O``'s
    text as from ``squeue --json`` (where Slurm's squeue has no ``--array-unique``, 24.11,
    the adapter reads the JSON: the same); the maximum node count gives the same size (``_sized``;
    where the text cannot tell it from the minimum, the job is pinned to that size); the
    picked jobs alone are read again by id."""
    from hpcopt.slurm.adapter import _sized
    from hpcopt.slurm.state import FINISHED, Slurm, parse_squeue

    c = pooled
    ids = [submit(c, "--array=1-9:2%2"), submit(c, "-N", "1-3", "-n", "4"),
           submit(c, "-n", "3"), submit(c, "--gres=ssd:100", "--constraint=ssd128|ssd256"),
           submit(c, "-N", "2", bb=30)]
    ids.append(submit(c, f"--dependency=afterok:{ids[1]}"))
    c.run("scontrol", "update", f"JobId={ids[0]}_3", "AdminComment=hpcopt:held")  # split out
    run = submit(c, "-N", "2", sleep=60)
    c.run("scontrol", "release", str(run))
    c.wait(lambda: c.state(run) == "RUNNING", 20)
    slurm = Slurm(env=c.env, timeout=10)
    text = {j.id: j for j in slurm.jobs()}
    json = {j.id: j for j in parse_squeue(slurm.json_doc("squeue", "--json"))
            if j.state not in FINISHED}  # 22.05's JSON lists finished jobs too
    split = [j.id for j in text.values() if j.array_id == ids[0] and j.array_task == 3]
    assert len(split) == 1 and set(ids + [run]) <= set(text) and set(text) == set(json)
    for jid in ids + [run] + split:
        a, b = text[jid], json[jid]
        assert _sized(a, "batch")[0] == _sized(b, "batch")[0], (a, b)
        if a.state == "PENDING":  # a pending job's start is Slurm's estimate in the JSON
            a, b = replace(a, start=0.0), replace(b, start=0.0)
        assert replace(a, max_nodes=0) == replace(b, max_nodes=0), (a, b)
    assert "\n" in text[ids[4]].burst_buffer or text[ids[4]].burst_buffer.startswith("#")
    again = slurm.jobs([ids[0], run])  # an array's id: its tasks too
    assert sorted(j.id for j in again) == sorted([ids[0], run, *split])
    assert slurm.jobs([10**7]) == ()
    c.cancel(ids + [run])
