"""Slurm's topology.conf as hpcopt's fat tree, and placement on it: node names both ways
(bracketed host lists), the tree's shape checked, the decision core placing jobs on the
nodes a topology tells apart; on the real testbed (slow tier, both Slurm versions) every job
``tjap-window`` places runs on exactly the nodes it chose, and a job whose nodes were taken
between the decision and its release goes back to the next cycle."""

from __future__ import annotations

import subprocess

import pytest

from hpcopt.domain import Job, System
from hpcopt.policies import make_policy
from hpcopt.sim.decide import ClusterState, decide
from hpcopt.slurm.state import Slurm
from hpcopt.slurm.topology import TopologyConfError, expand_hostlist, read_topology
from hpcopt.topology import FatTree

from .slurm_fixtures import VERSIONS, cycle_until_placed, started_testbed


def test_host_lists_expand():
    assert expand_hostlist("n[1-3,7],m05") == ["n1", "n2", "n3", "n7", "m05"]
    assert expand_hostlist("n[08-10]") == ["n08", "n09", "n10"]
    assert expand_hostlist("r[1-2]-n[1-2]") == ["r1-n1", "r1-n2", "r2-n1", "r2-n2"]
    for bad in ("n[1-", "n[3-1]", "n[a]", "n]"):
        with pytest.raises(TopologyConfError, match="host list"):
            expand_hostlist(bad)


def test_topology_conf_two_and_three_levels(tmp_path):
    f = tmp_path / "topology.conf"
    f.write_text("# two leaves\nSwitchName=s1 Nodes=n[1-4]\nSwitchName=s2 Nodes=n[5-8]\n"
                 "SwitchName=s0 Switches=s[1-2]\n")
    t = read_topology(f)
    assert (t.tree.n_nodes, t.tree.nodes_per_leaf, t.tree.n_pods) == (8, 4, 1)
    assert t.ids("n[5-6],n1") == [4, 5, 0] and t.nodes([7, 0]) == ["n8", "n1"]
    f.write_text("SwitchName=l1 Nodes=a[1-2]\nSwitchName=l2 Nodes=a[3-4]\n"
                 "SwitchName=l3 Nodes=b[1-2]\nSwitchName=l4 Nodes=b[3-4]\n"
                 "SwitchName=p1 Switches=l[1-2]\nSwitchName=p2 Switches=l[3-4]\n"
                 "SwitchName=root Switches=p[1-2]\n")
    t = read_topology(f)
    assert (t.tree.nodes_per_leaf, t.tree.leaves_per_pod, t.tree.n_pods) == (2, 2, 2)
    assert t.names == ("a1", "a2", "a3", "a4", "b1", "b2", "b3", "b4")
    f.write_text("SwitchName=s1 Nodes=n[1-4]\nSwitchName=s2 Nodes=n[5-7]\n"
                 "SwitchName=s0 Switches=s[1-2]\n")
    with pytest.raises(TopologyConfError, match="same number of nodes under every leaf"):
        read_topology(f)
    f.write_text("SwitchName=s1 Nodes=n[1-4]\nSwitchName s2\n")
    with pytest.raises(TopologyConfError, match=r"topology.conf:2: expected Key=Value"):
        read_topology(f)
    with pytest.raises(TopologyConfError, match="No such file"):
        read_topology(tmp_path / "none.conf")


@pytest.mark.parametrize("model", ["scas", "dcas"])
def test_the_core_places_jobs_on_the_nodes_a_topology_tells_apart(model):
    """Node 1 busy, node 7 down: each leaf switch has three nodes left; a 3-node and a 2-node
    job each go under one leaf (SCAS's exact optimum, DCAS's simulated annealing alike), and
    nothing lands on a busy or down node."""
    tree = FatTree(8, 4, 2)
    state = ClusterState(0.0, System(8, topology=tree),
                         (Job(10, 0.0, 9.0, 9.0, 3), Job(11, 0.0, 9.0, 9.0, 2)),
                         ((Job(1, 0.0, 0.0, 0.0, 1), 50.0),), placed={1: (1,)},
                         unavailable=(7,))
    out = decide(state, make_policy("tjap-window", model=model))
    assert sorted(job.id for job, _ in out.started) == [10, 11]
    used = [n for ids in out.placements.values() for n in ids]
    assert len(used) == len(set(used)) == 5 and not {1, 7} & set(used)
    for ids in out.placements.values():  # each job under one leaf switch: the cheapest
        assert len({n // 4 for n in ids}) == 1, out.placements
    with pytest.raises(Exception, match="give unavailable and completing nodes as node ids"):
        decide(ClusterState(0.0, System(8, topology=tree), unavailable=1),
               make_policy("tjap-window"))
    with pytest.raises(Exception, match="running job 1: its node ids are needed"):
        decide(ClusterState(0.0, System(8, topology=tree), state.queue, state.running),
               make_policy("tjap-window"))


def test_reads_a_moment_apart_never_claim_a_node_twice():
    """A released job pinned to nodes 1-2 that the node read already shows busy (completing:
    it started between the reads), and one whose nodes are unknown: the stand-in for the
    busy nodes and the first-fit placement share no node, and the pass decides."""
    tree = FatTree(8, 4, 2)
    state = ClusterState(0.0, System(8, topology=tree), (Job(10, 0.0, 9.0, 9.0, 2),),
                         ((Job(1, 0.0, 0.0, 0.0, 1), 50.0),),
                         (Job(2, 0.0, 0.0, 60.0, 2), Job(3, 0.0, 0.0, 60.0, 1)),
                         completing=(1, 2), placed={1: (0,), 2: (1, 2)})
    out = decide(state, make_policy("tjap-window"))
    assert [job.id for job, _ in out.started] == [10]
    assert not {0, 1, 2} & set(out.placements[10])


# ------------------------------------------------------------------ the real testbed


@pytest.fixture(scope="module", params=VERSIONS, ids=[f"slurm{v}" for v in VERSIONS])
def tree(request):
    """A testbed of 8 nodes under two leaf switches of 4 (topology/tree)."""
    with started_testbed(request.param, "tree", switch_size=4) as c:
        yield c


ENDED = ("COMPLETED", "CANCELLED", "TIMEOUT", "FAILED")


@pytest.mark.slow
def test_placed_jobs_run_on_the_nodes_chosen(tree):
    c = tree
    topo = read_topology(c.dir / "topology.conf")
    busy = c.submit("-N", "1", "-w", "n2", "-t", "1", sleep=300)
    c.run("scontrol", "release", str(busy))
    c.wait(lambda: c.state(busy) == "RUNNING", 10)
    ids = [c.submit("-N", str(n), "-t", "1", sleep=2) for n in (3, 2, 2)]
    adapter = c.adapter("tjap-window", topology=topo)
    try:
        placed = cycle_until_placed(adapter, 3)
        c.wait(lambda: all(c.state(i) in ("RUNNING",) + ENDED for i in ids), 15)
        jobs = c.jobs()
        for i in ids:
            ran = expand_hostlist(jobs[i]["nodes"])
            assert sorted(ran) == sorted(placed[str(i)].split(",")), (i, ran, placed)
            assert "n2" not in ran
        assert set(expand_hostlist(jobs[ids[0]]["nodes"])) <= {"n1", "n3", "n4"}  # one leaf
    finally:
        c.cancel([busy, *ids])


@pytest.mark.slow
def test_a_placed_job_whose_nodes_were_taken_goes_back(tree):
    """Between the decision and the release a job of another partition takes a chosen node:
    the job is not released onto other nodes; the next cycle places it anew."""
    c = tree
    topo = read_topology(c.dir / "topology.conf")
    jid = c.submit("-N", "2", "-t", "1", sleep=2)
    other = []

    class TakeANode(Slurm):
        def nodes_and_version(self):
            if self.reads == 1:  # the re-read: the decision chose n1,n2 (first-fit leaf)
                other.append(int(subprocess.run(
                    ["sbatch", "--parsable", "-p", "debug", "-N", "1", "-w", "n1", "-t", "1",
                     "-o", "/dev/null", "--wrap", "sleep 300"], env=c.env, capture_output=True,
                    text=True, check=True).stdout.split(";")[0]))
                c.wait(lambda: c.state(other[0]) == "RUNNING", 10)
            self.reads += 1
            return super().nodes_and_version()

    slurm = TakeANode(env=c.env, timeout=5)
    slurm.reads = 0
    try:
        rec = c.adapter("tjap-window", slurm=slurm, topology=topo).cycle()
        assert rec["released"] == [] and rec["changed"] == [jid], rec
        assert c.jobs()[jid]["priority"] == 0
        rec = c.adapter("tjap-window", topology=topo).cycle()
        assert rec["released"] == [jid] and "n1" not in rec["placed"][str(jid)]
        c.wait(lambda: c.state(jid) in ("RUNNING",) + ENDED, 15)
        assert "n1" not in expand_hostlist(c.jobs()[jid]["nodes"])
    finally:
        c.cancel([jid, *other])
