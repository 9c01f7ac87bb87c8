"""Relu fusion: a relu is not an instruction but the relu flag of a matmul's requantizer.

Contract: :func:`fuse_relus` returns the ids of the matmuls whose requantizer applies the
relu. It refuses a relu whose input is not a matmul, or a matmul that anything besides the
relu reads (that reader would need the values before the relu, which are never stored).
Seed chapter 11, "relu fusion"; GA2.md section 3 (the RQ instruction's relu field).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .ir import CompileError, Graph

_FIX = ("put the relu directly after a matmul that nothing else reads (it becomes that matmul's "
        "requantizer flag)")


def fuse_relus(graph: Graph, consumers: Mapping[int, Sequence[int]]) -> set[int]:
    """Ids of the matmuls that carry a fused relu.

    Args:
        graph: the graph.
        consumers: node id -> the ids of its readers (``Graph.consumers()``).

    Raises:
        CompileError: a relu that cannot be fused; the message names the relu and its input.
    """
    fused = set()
    for node in graph.nodes:
        if node.op != "relu":
            continue
        source = graph.nodes[node.ins[0]]
        if source.op != "matmul":
            raise CompileError(f"relu node {node.id} reads {source.describe()}, which is not a matmul, so "
                               "it cannot be fused into a requantizer", _FIX, node.id)
        others = [c for c in consumers[source.id] if c != node.id]
        if others:
            raise CompileError(f"relu node {node.id} reads {source.describe()}, which node {others[0]} also "
                               "reads, so it cannot be fused into the matmul's requantizer", _FIX, node.id)
        fused.add(source.id)
    return fused
