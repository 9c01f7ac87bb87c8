"""The stage-wise real-number check.

Contract: :func:`stagewise_problems` takes the integers of every tensor (from the
interpreter or read back from the machine) and checks each node whose operation computes
(matmul, softmax, add: the table's ``real`` meaning in :mod:`compiler.ops.semantics`) against
the real-number meaning of its operation applied to the dequantized operands, rounded to
the result's scale: the integers must lie within the table's ``tolerance``, one level (two
for an add, whose operands may each be rescaled by half a level before the sum is rounded).
Only the scales enter here, never the (m, s) pairs: the interpreter takes those from the
compiler and so cannot notice when they are wrong, but this check does (seed chapter 11,
check (d)).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from .errors import plural
from .ops import OPS

if TYPE_CHECKING:
    from .program import Program


def stagewise_problems(program: Program, ints: Mapping[int, np.ndarray]) -> list[str]:
    """One sentence per tensor that strays from its operation's real meaning.

    Args:
        program: the compiled program (graph, scales, fused relus).
        ints: node id -> int64 array of the tensor's integers.

    Returns:
        Problems, one a line, empty when every tensor passes; e.g.
        ``node 4 (matmul): 3 values more than 1 level from the real-number result``.
    """
    problems = []

    def real(nid: int) -> np.ndarray:
        return ints[nid] * program.scales[nid]

    for node in program.graph.nodes:
        spec = OPS[node.op]
        want = spec.real(node, real, program)
        if want is None:
            continue
        bad = int(np.count_nonzero(np.abs(ints[node.id] - want) > spec.tolerance))
        if bad:
            problems.append(f"{node.describe()}: {plural(bad, 'value')} more than "
                            f"{plural(spec.tolerance, 'level')} from the real-number result")
    return problems
