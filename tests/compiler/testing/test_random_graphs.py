"""compiler/testing/random_graphs.py: the graphs the battery grows beyond the seed table's."""

from compiler.fusion import fuse_relus
from compiler.testing.random_graphs import random_add_relu_graph, random_slice_graph


def test_slice_graphs_use_slices_and_int4_weights_when_asked():
    for seed in range(20):
        graph, _ = random_slice_graph(seed, wbits=4)
        assert any(n.op == "slice" for n in graph.nodes)
        assert all(n.bits == 4 for n in graph.nodes if n.op == "weight")
        assert graph.outputs()[-1].name == "cat"


def test_add_relu_graphs_put_a_relu_after_every_add_and_it_fuses_into_the_add():
    residual_blocks = sums = 0
    for seed in range(24):
        graph, _ = random_add_relu_graph(seed)
        adds = [n.id for n in graph.nodes if n.op == "add"]
        relus = {n.ins[0] for n in graph.nodes if n.op == "relu"}
        assert set(adds) <= relus
        assert set(adds) <= fuse_relus(graph, graph.consumers())
        sums += len(adds)
        residual_blocks += any(graph.nodes[graph.nodes[a].ins[1]].op == "matmul" for a in adds)
    assert sums >= 40 and residual_blocks >= 12
