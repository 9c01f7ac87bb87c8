"""Relu fusion: a relu is not an instruction but the relu flag of the instruction that writes
its operand: a matmul's requantizer (RQ) or an add's VADD.

Contract: :func:`fuse_relus` returns the ids of the nodes whose last instruction applies a
fused operation: for every node whose operation declares ``fuses_into`` in the table (a relu:
a matmul or an add), its operand. It refuses a relu whose input is none of those, or an input
that anything besides the relu reads (that reader would need the values before the relu,
which are never stored). Seed chapter 11, "relu fusion"; GA2.md section 3 (the relu fields of
RQ and VADD).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .errors import CompileError
from .ir import Graph, Node
from .ops import OPS


def _either(hosts: Sequence[str]) -> str:
    """``matmul``, ``matmul or add``, ``matmul, add or conv2d``."""
    return hosts[0] if len(hosts) == 1 else f"{', '.join(hosts[:-1])} or {hosts[-1]}"


def _fix(hosts: Sequence[str]) -> str:
    return (f"put the relu directly after a {_either(hosts)} that nothing else reads (it becomes the "
            "relu flag of that node's last instruction)")


def other_readers(source: Node, node: Node, consumers: Mapping[int, Sequence[int]]) -> list[int]:
    """The readers of ``source`` besides ``node``, in node order."""
    return [c for c in consumers[source.id] if c != node.id]


def fuse_relus(graph: Graph, consumers: Mapping[int, Sequence[int]]) -> set[int]:
    """Ids of the nodes (matmuls, adds) that carry a fused relu.

    Args:
        graph: the graph.
        consumers: node id -> the ids of its readers (``Graph.consumers()``).

    Raises:
        CompileError: a relu that cannot be fused; the message names the relu and its input.
    """
    fused = set()
    for node in graph.nodes:
        hosts = OPS[node.op].fuses_into
        if not hosts:
            continue
        source = graph.nodes[node.ins[0]]
        if source.op not in hosts:
            raise CompileError(f"{node.op} node {node.id} reads {source.describe()}, which is not a "
                               f"{_either(hosts)}, so no instruction that writes it can carry it",
                               _fix(hosts),
                               node.id)
        others = other_readers(source, node, consumers)
        if others:
            raise CompileError(f"{node.op} node {node.id} reads {source.describe()}, which node {others[0]} "
                               f"also reads, so it cannot be fused into the {source.op}", _fix(hosts),
                               node.id)
        fused.add(source.id)
    return fused
