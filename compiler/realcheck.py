"""The stage-wise real-number check.

Contract: :func:`stagewise_problems` takes the integers of every tensor (from the
interpreter or read back from the machine) and checks each matmul, softmax and add against
the real-number meaning of its operation applied to the dequantized operands, rounded to
the result's scale: the integers must lie within one level (two for an add, whose operands
may each be rescaled by half a level before the sum is rounded). Only the scales enter
here, never the (m, s) pairs: the interpreter takes those from the compiler and so cannot
notice when they are wrong, but this check does (seed chapter 11, check (d)).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from sim.arith import INT8_MAX, INT8_MIN, round_half_away_array

from .evaluate import softmax_rows
from .ir import plural
from .program import Program


def _level(real: np.ndarray, scale: float) -> np.ndarray:
    return np.clip(round_half_away_array(real / scale), INT8_MIN, INT8_MAX)


def stagewise_problems(program: Program, ints: Mapping[int, np.ndarray]) -> list[str]:
    """One sentence per tensor that strays from its operation's real meaning.

    Args:
        program: the compiled program (graph, scales, fused relus).
        ints: node id -> int64 array of the tensor's integers.

    Returns:
        Problems, e.g. ``node 4 (matmul): 3 values more than 1 level from the
        real-number result``; empty when every tensor passes.
    """
    scales = program.scales
    problems = []

    def real(nid: int) -> np.ndarray:
        return ints[nid] * scales[nid]

    for node in program.graph.nodes:
        if node.op == "matmul":
            a, b = real(node.ins[0]), real(node.ins[1])
            product = node.factor * (a @ (b.T if node.transpose_b else b))
            want = _level(product, scales[node.id])
            if node.id in program.relu_fused:
                want = np.maximum(want, 0)
        elif node.op == "softmax":
            want = _level(softmax_rows(real(node.ins[0])), scales[node.id])
        elif node.op == "add":
            want = _level(real(node.ins[0]) + real(node.ins[1]), scales[node.id])
        else:
            continue
        tolerance = 2 if node.op == "add" else 1
        bad = int(np.count_nonzero(np.abs(ints[node.id] - want) > tolerance))
        if bad:
            problems.append(f"{node.describe()}: {plural(bad, 'value')} more than "
                            f"{plural(tolerance, 'level')} from the real-number result")
    return problems
