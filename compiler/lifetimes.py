"""Lifetimes: after which step each buffer can be released.

Contract: a step is a node, in node order. Sources (inputs and weights, role SOURCE in the
table of :mod:`compiler.ops`) are not steps of their own (they are loaded at their first
reader's step). A buffer is touched at every step
whose node lives in it or reads a node that lives in it; :func:`release_schedule` maps each
step to the buffers whose last touch it is, in the order in which the buffers were first
touched (which fixes the order of the allocator's release events, seed chapter 11).

One pass over the nodes and their operands: linear in the size of the graph.
"""

from __future__ import annotations

from .ir import Graph
from .ops import OPS, Role
from .placement import Placement


def release_schedule(graph: Graph, placement: Placement) -> dict[int, list[int]]:
    """step (node id) -> ids of the buffers last touched at that step, in first-touch order."""
    last_touch: dict[int, int] = {}  # buffer id -> step; insertion order = first touch

    def touch(nid: int, step: int) -> None:
        if nid in placement.loc:
            last_touch[placement.loc[nid][0]] = step

    for node in graph.nodes:
        if OPS[node.op].role is Role.SOURCE:
            continue
        touch(node.id, node.id)
        for operand in node.ins:
            touch(operand, node.id)

    schedule: dict[int, list[int]] = {}
    for buf, step in last_touch.items():
        schedule.setdefault(step, []).append(buf)
    return schedule
