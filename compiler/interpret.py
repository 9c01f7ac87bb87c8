"""The integer interpreter: what a compiled program means, without instructions.

Contract: :func:`interpret` evaluates the graph node by node on integers, using only the
program's planned scales and requantizer parameters and the arithmetic of
:mod:`sim.arith` (GA2.md section 4); no tiles, addresses or instructions. The reference
machine running the program must produce exactly these integers (battery check (b) and,
for every tensor, (c); seed chapter 11).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from sim.arith import requant_array, sat_add_array, softmax_fixed_array

from .program import Program


def interpret(program: Program, inputs: Mapping[str, object]) -> dict[int, np.ndarray]:
    """Every node's integers for the given inputs.

    Args:
        program: a compiled program (its graph, scales and requantizer parameters are used).
        inputs: input name -> 2-D array-like of floats.

    Returns:
        node id -> int64 array (rows, cols): int8 levels, or row indices for an argmax
        (and for the output that stores one).

    Raises:
        ValueError: bad inputs.
    """
    levels = program.quantized_inputs(inputs)
    value: dict[int, np.ndarray] = {}
    for node in program.graph.nodes:
        operands = [value[i] for i in node.ins]
        op = node.op
        if op == "input":
            value[node.id] = levels[node.id]
        elif op == "weight":
            value[node.id] = program.quantized_weight(node.id)
        elif op == "matmul":
            a, b = operands
            accumulator = a @ (b.T if node.transpose_b else b)
            m, s = program.params[node.id]
            value[node.id] = requant_array(accumulator, m, s, node.id in program.relu_fused)
        elif op == "softmax":
            m, s = program.params[node.id]
            value[node.id] = requant_array(softmax_fixed_array(operands[0]), m, s)
        elif op == "add":
            rescaled = []
            for k, x in enumerate(operands):
                pair = program.params.get((node.id, k))
                rescaled.append(x if pair is None else requant_array(x, *pair))
            value[node.id] = sat_add_array(*rescaled)
        elif op in ("relu", "output"):
            value[node.id] = operands[0]
        elif op == "concat":
            value[node.id] = np.concatenate(operands, axis=0)
        elif op == "slice":
            value[node.id] = operands[0][node.start:node.start + node.count]
        elif op == "argmax":
            value[node.id] = np.argmax(operands[0], axis=1)[:, None].astype(np.int64)
        else:
            raise AssertionError(f"interpret: unknown op {op!r}")
    return value
