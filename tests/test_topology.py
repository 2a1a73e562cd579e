"""Fat-tree topologies and the communication-hop cost."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hpcopt.errors import ModelError
from hpcopt.topology import FatTree, block

PRESETS = ["paper-1000", "hpcschedule-1000"]


def test_paper_default_shape():
    t = FatTree.preset("paper-1000")
    assert (t.n_nodes, t.nodes_per_leaf, t.nodes_per_pod, t.n_pods, t.radix) == (
        1000, 10, 100, 10, 20)
    assert t.leaf[0] == 0 and t.leaf[9] == 0 and t.leaf[10] == 1
    assert t.pod[99] == 0 and t.pod[100] == 1 and t.pod[999] == 9


def test_kary_graph_is_a_fat_tree():
    g = FatTree.kary(4).graph()  # 16 nodes, 8 leaf + 8 aggregation + 4 core switches
    levels = [d["level"] for _, d in g.nodes(data=True)]
    assert levels.count("node") == 16 and levels.count(0) == 8
    assert levels.count(1) == 8 and levels.count(2) == 4
    assert nx.is_connected(g)
    assert all(g.degree(n) == 4 for n, d in g.nodes(data=True) if d["level"] in (0, 1))
    pruned = FatTree.kary(4, pods=2)
    assert pruned.n_nodes == 8 and nx.is_connected(pruned.graph())


def test_hop_counts_of_the_paper():
    t = FatTree.preset("paper-1000")
    assert t.cost([0, 1]) == 1000 * 2 * 2 / 2  # same leaf: 2 hops each way
    assert t.cost([0, 10]) == 1000 * 4 * 2 / 2  # same pod
    assert t.cost([0, 100]) == 1000 * 6 * 2 / 2  # different pods
    assert t.cost([5]) == 0


def test_hpcschedule_convention():
    t = FatTree.preset("hpcschedule-1000")
    assert t.cost([0, 1]) == 1000 // 2 * 1  # unordered pair, 1 hop, floor(1000 / 2)
    assert t.cost([0, 39]) == 1500  # same rack of 40
    assert t.cost([0, 40, 80]) == (3 * 5 * 1000) // 3
    assert t.cost([7]) == 1  # max(floor(0), 1)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(PRESETS), st.lists(st.integers(0, 999), min_size=1, max_size=60,
                                           unique=True))
def test_counting_cost_equals_pairwise_definition(preset, nodes):
    t = FatTree.preset(preset)
    assert t.cost(nodes) == pytest.approx(t.pairwise_cost(nodes), rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(PRESETS), st.integers(1, 80), st.integers(0, 2**32 - 1))
def test_interval_costs_equal_block_costs(preset, m, seed):
    """The vectorised table (wrap-around included) equals the cost of every block."""
    t = FatTree.preset(preset)
    rng = np.random.default_rng(seed)
    lo = int(rng.integers(0, 900))
    seq = np.sort(rng.choice(np.arange(lo, lo + 100), min(m, 100), replace=False))
    table = t.interval_costs(seq, 40)
    for i in range(seq.size):
        for r in range(1, min(40, seq.size) + 1):
            assert table[i, r - 1] == pytest.approx(t.cost(block(seq, i, r)), rel=1e-12)


def test_dict_round_trip_and_errors():
    for data in ({"preset": "paper-1000"}, {"kary": 8, "pods": 3, "cost": "paper"},
                 {"nodes": 64, "nodes_per_leaf": 4, "leaves_per_pod": 4, "cost": "hpcschedule"}):
        t = FatTree.from_dict(data)
        assert FatTree.from_dict(t.to_dict()).to_dict() == t.to_dict()
    with pytest.raises(ModelError, match="preset"):
        FatTree.from_dict({"preset": "nope"})
    with pytest.raises(ModelError, match="even"):
        FatTree.kary(5)
    with pytest.raises(ModelError, match="missing"):
        FatTree.from_dict({"nodes": 10})
