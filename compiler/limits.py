"""Checks that every operation fits the machine's units, before any work is done.

Contract: :func:`check_limits` refuses a node that breaks a limit its operation declares in
the table (:attr:`compiler.ops.OpSpec.limits`): a matmul whose inner dimension exceeds K_MAX
(the matrix unit has no instruction to accumulate across passes, seed chapter 11) and a
softmax whose rows are longer than SM_MAX_LEN (GA2.md section 1). The bounds come from the
machine's :class:`sim.spec.Params`.
"""

from __future__ import annotations

from sim.spec import Params

from .errors import CompileError
from .ir import Graph
from .ops import OPS


def check_limits(graph: Graph, params: Params) -> None:
    """Raise CompileError, naming the node, if an operation exceeds a unit's limit."""
    for node in graph.nodes:
        for limit in OPS[node.op].limits:
            size, bound = limit.size(node, graph.nodes), limit.bound(params)
            if size > bound:
                raise CompileError(limit.problem(node, size, bound), limit.fix(bound), node.id)
