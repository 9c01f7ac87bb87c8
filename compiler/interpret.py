"""The integer interpreter: what a compiled program means, without instructions.

Contract: :func:`interpret` evaluates the graph node by node on integers, each node by its
operation's integer meaning in the table (:mod:`compiler.ops`, :mod:`compiler.ops.semantics`),
using only the program's planned scales and requantizer parameters and the arithmetic of
:mod:`sim.arith` (GA2.md section 4); no tiles, addresses or instructions. The reference
machine running the program must produce exactly these integers (battery check (b) and,
for every tensor, (c); seed chapter 11).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from .ops import OPS
from .ops.semantics import IntContext

if TYPE_CHECKING:
    from .program import Program


def interpret(program: Program, inputs: Mapping[str, object]) -> dict[int, np.ndarray]:
    """Every node's integers for the given inputs.

    Args:
        program: a compiled program (its graph, scales and requantizer parameters are used).
        inputs: input name -> 2-D array-like of floats.

    Returns:
        node id of ``program.graph`` -> int64 array (rows, cols): int8 levels, or row
        indices for an argmax (and for the output that stores one). (``program.node_of``
        maps the ids of the graph given to ``compile_graph``, when CSE merged nodes.)

    Raises:
        ValueError: bad inputs.
    """
    context = IntContext(program, program.quantized_inputs(inputs))
    value: dict[int, np.ndarray] = {}
    for node in program.graph.nodes:
        value[node.id] = OPS[node.op].interpret(node, [value[i] for i in node.ins], context)
    return value
