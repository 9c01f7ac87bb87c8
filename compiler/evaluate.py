"""Floating-point meaning of a graph (the reference the int8 program is judged against).

Contract: :func:`evaluate_batch` takes every input as a float64 array of shape
(S, rows, cols), S samples stacked, and returns every node's value as (S, rows, cols);
:func:`evaluate` does the same for one sample with 2-D arrays. Nothing is quantized here.
Each node's value is its operation's float meaning from the table (:mod:`compiler.ops`),
whose summation order is part of the contract (see :mod:`compiler.ops.semantics`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .ir import Graph
from .ops import OPS
from .ops.semantics import FloatContext, matmul_in_order, running_sum, softmax_rows

__all__ = ["evaluate", "evaluate_batch", "matmul_in_order", "running_sum", "softmax_rows"]


def evaluate_batch(graph: Graph, inputs: Mapping[str, np.ndarray]) -> dict[int, np.ndarray]:
    """Evaluate every node on S stacked samples.

    Args:
        graph: the graph.
        inputs: input name -> float64 array (S, rows, cols), the same S for all; the caller
            has checked names and shapes (see :mod:`compiler.calibrate`).

    Returns:
        node id -> float64 array (S, rows, cols). An argmax gives the index as a float.
    """
    samples = next(iter(inputs.values())).shape[0] if inputs else 1
    context = FloatContext(inputs, samples)
    value: dict[int, np.ndarray] = {}
    for node in graph.nodes:
        value[node.id] = OPS[node.op].evaluate(node, [value[i] for i in node.ins], context)
    return value


def evaluate(graph: Graph, inputs: Mapping[str, object]) -> dict[int, np.ndarray]:
    """Evaluate every node on one sample.

    Args:
        inputs: input name -> 2-D array-like of floats with the declared shape.

    Returns:
        node id -> float64 array (rows, cols).
    """
    stacked = {name: np.asarray(v, dtype=np.float64)[None] for name, v in inputs.items()}
    return {nid: v[0] for nid, v in evaluate_batch(graph, stacked).items()}
