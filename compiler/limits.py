"""Checks that every operation fits the machine's units, before any work is done.

Contract: :func:`check_limits` refuses a matmul whose inner dimension exceeds K_MAX (the
matrix unit has no instruction to accumulate across passes, seed chapter 11) and a softmax
whose rows are longer than SM_MAX_LEN (GA2.md section 1). Both limits come from the
machine's :class:`sim.spec.Params`.
"""

from __future__ import annotations

from sim.spec import DEFAULT, Params

from .ir import CompileError, Graph, plural


def check_limits(graph: Graph, params: Params = DEFAULT) -> None:
    """Raise CompileError, naming the node, if an operation exceeds a unit's limit."""
    for node in graph.nodes:
        if node.op == "matmul":
            k = graph.nodes[node.ins[0]].shape[1]
            if k > params.K_MAX:
                raise CompileError(f"matmul node {node.id}: its inner dimension is {k}, more than the "
                                   f"K_MAX = {params.K_MAX} one MM instruction takes",
                                   f"cut the inner dimension into pieces of at most {params.K_MAX} (an input "
                                   "and a weight per piece) and add the partial products, or make the "
                                   "layer narrower", node.id)
        if node.op == "softmax" and node.shape[1] > params.SM_MAX_LEN:
            raise CompileError(f"softmax node {node.id}: rows of {node.shape[1]} values exceed the softmax "
                               f"unit's limit of {params.SM_MAX_LEN}",
                               f"use rows of at most {plural(params.SM_MAX_LEN, 'value')}", node.id)
