"""Common-subexpression elimination: a pure subgraph that a graph computes twice, computed once.

Two nodes compute the same tensor when they are the same pure operation (a COMPUTE or VIEW
entry of the table, :mod:`compiler.ops`) with the same attributes on the same operands, where
"the same operand" is decided first (nodes are in topological order, so one pass merges whole
subgraphs: two identical matmul-then-relu chains become one). Sources (inputs, weights) are
never merged (each is its own region of external memory, by name), nor are outputs (each is a
store under its own name); two nodes with different tags are kept apart (``ranges=`` names
each). The readers of a merged node read the one that stays.

Merging can give a tensor readers that need it in two places at once: a relu is fused into the
matmul it reads only when nothing else reads that matmul, and a tensor can be a part of one
concatenation only (:mod:`compiler.fusion`, :mod:`compiler.placement`). So the merged graph
is checked by the structural passes; when they refuse a node that a merge made, that merge is
undone and the graph rebuilt, until it passes. A graph that is refused without any merge is
returned unchanged, so the refusal names the user's own node ids.

Seed 004 (CSE on a transformer block's graph); the classic value numbering of a basic block
(Aho, Lam, Sethi and Ullman, *Compilers*, 2nd ed., section 8.5.1).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable
from dataclasses import dataclass

import numpy as np

from .errors import CompileError
from .ir import Graph, Node
from .ops import OPS, Role

PURE = frozenset({Role.COMPUTE, Role.VIEW})
"""The roles whose nodes are a function of their operands and attributes alone."""

_OWN = frozenset({"id", "ins"})
"""Node fields that are not attributes: a merge compares the operands after renaming."""


@dataclass
class Merged:
    """What :func:`eliminate` did.

    Attributes:
        graph: the graph with each repeated subgraph once (the same object as the input
            when nothing was merged).
        node_of: input node id -> the id of the node that computes it in ``graph``.
        merges: how many nodes were dropped (a node whose tensor another node computes).
    """

    graph: Graph
    node_of: dict[int, int]
    merges: int


def _key(node: Node, ins: tuple[int, ...]) -> Hashable:
    """The value number of a pure node: its operation, renamed operands and every attribute
    (an array by shape, dtype and bytes)."""
    parts: list[Hashable] = [node.op, ins]
    for f in dataclasses.fields(node):
        if f.name in _OWN:
            continue
        value = getattr(node, f.name)
        if isinstance(value, np.ndarray):
            value = (value.shape, value.dtype.str, value.tobytes())
        parts.append(value)
    return tuple(parts)


def _merge(graph: Graph, kept_apart: set[int]) -> Merged:
    """One value-numbering pass over ``graph``; nodes in ``kept_apart`` are never merged."""
    out = Graph()
    node_of: dict[int, int] = {}
    seen: dict[Hashable, int] = {}
    for node in graph.nodes:
        ins = tuple(node_of[i] for i in node.ins)
        pure = OPS[node.op].role in PURE and node.id not in kept_apart
        key = _key(node, ins) if pure else None
        if key is not None and key in seen:
            node_of[node.id] = seen[key]
            continue
        copy = dataclasses.replace(node, id=len(out.nodes), ins=ins)
        out.nodes.append(copy)
        if copy.name:
            out.names[copy.name] = copy.id
        node_of[node.id] = copy.id
        if key is not None:
            seen[key] = copy.id
    return Merged(out, node_of, len(graph.nodes) - len(out.nodes))


def eliminate(graph: Graph, check: Callable[[Graph], None]) -> Merged:
    """Merge the nodes of ``graph`` that compute the same tensor (see the module docstring).

    Args:
        graph: the graph (not changed).
        check: the structural passes on a graph (``compiler.pipeline.check_structure`` with
            the machine's parameters); raises :class:`CompileError` for a graph they refuse.

    Returns:
        The merged graph and the map from the input's node ids to its ids.
    """
    kept_apart: set[int] = set()
    while True:
        merged = _merge(graph, kept_apart)
        if merged.merges == 0:
            return Merged(graph, {n.id: n.id for n in graph.nodes}, 0)
        try:
            check(merged.graph)
        except CompileError as error:
            undo = _culprits(graph, merged, error.node) - kept_apart
            if not undo:
                return Merged(graph, {n.id: n.id for n in graph.nodes}, 0)
            kept_apart |= undo
            continue
        return merged


def _culprits(graph: Graph, merged: Merged, node: int | None) -> set[int]:
    """The input nodes merged into the refused node, its operands or its readers: the merges
    that may have made the refusal (a second reader of a fused matmul, a second concatenation
    of one part)."""
    if node is None:
        return set()
    near = {node, *merged.graph.nodes[node].ins}
    near |= {r.id for r in merged.graph.nodes if node in r.ins}
    members: dict[int, list[int]] = {}
    for old, new in merged.node_of.items():
        members.setdefault(new, []).append(old)
    return {old for new in near for old in members.get(new, ()) if len(members[new]) > 1}
