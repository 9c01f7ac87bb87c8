"""Accuracy of a compiled program against floating point.

Contract: :func:`relative_error` is, for each output that does not store an argmax, the
Frobenius norm of (dequantized machine result - float result) divided by that of the float
result (or by 1 when the float result is all zero); it returns the worst over the outputs
(seed chapter 11, check (e) and the "error vs float" column).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from .evaluate import evaluate
from .ops import OPS, Role

if TYPE_CHECKING:
    from .program import Program, RunOutcome


def relative_error(program: Program, outcome: RunOutcome, inputs: Mapping[str, object]) -> float:
    """Worst relative error of the outputs of one run (0.0 when only argmax is output). The
    float reference is the meaning of the graph as given (``Program.source``), outputs matched
    by name."""
    graph = program.source or program.graph
    reference = evaluate(graph, inputs)
    worst = 0.0
    for entry in program.ext.values():
        if OPS[entry.kind].role is not Role.SINK:
            continue
        node = graph.nodes[graph.names[entry.name]]
        if not OPS[graph.nodes[node.ins[0]].op].scaled:   # row indices
            continue
        want = reference[node.id]
        got = outcome.outputs[entry.name].floats
        denominator = float(np.sqrt(np.sum(want * want))) or 1.0
        worst = max(worst, float(np.sqrt(np.sum((got - want) ** 2))) / denominator)
    return worst
