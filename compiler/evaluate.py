"""Floating-point meaning of a graph (the reference the int8 program is judged against).

Contract: :func:`evaluate_batch` takes every input as a float64 array of shape
(S, rows, cols), S samples stacked, and returns every node's value as (S, rows, cols);
:func:`evaluate` does the same for one sample with 2-D arrays. Nothing is quantized here.

Summation order is part of the contract. Calibration ranges become scales, and scales
become the 24-bit requantizer mantissas the seed prints, so the sums are formed exactly as
the seed's reference does (seed chapter 11, ``evaluate``): a matmul entry is the running sum
``((a0*b0 + a1*b1) + a2*b2) + ...`` in index order, multiplied by the factor afterwards; a
softmax row uses ``math.exp`` (numpy's exp differs from it in the last bit for a few
percent of arguments) and a running sum in index order. The loops run over the inner index
only, so every step is still one numpy operation over all samples, rows and columns.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from .ir import Graph, Node

_math_exp = np.frompyfunc(math.exp, 1, 1)


def running_sum(terms: np.ndarray, axis: int) -> np.ndarray:
    """Sum along ``axis`` strictly left to right (not numpy's pairwise order)."""
    terms = np.moveaxis(terms, axis, 0)
    total = terms[0].copy()
    for term in terms[1:]:
        total += term
    return total


def matmul_in_order(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b over the last two axes, each entry summed in index order.

    Args:
        a: (..., m, k) float64. b: (..., k, n) float64.

    Returns:
        (..., m, n) float64.
    """
    k = a.shape[-1]
    total = a[..., :, 0:1] * b[..., 0:1, :]
    for t in range(1, k):
        total = total + a[..., :, t:t + 1] * b[..., t:t + 1, :]
    return total


def softmax_rows(x: np.ndarray) -> np.ndarray:
    """exp(x - max) / sum, per row (last axis), with math.exp and an in-order sum."""
    shifted = x - x.max(axis=-1, keepdims=True)
    e = _math_exp(shifted).astype(np.float64)
    return e / running_sum(e, axis=-1)[..., None]


def _evaluate_node(node: Node, value: dict[int, np.ndarray], samples: int) -> np.ndarray:
    op = node.op
    operands = [value[i] for i in node.ins]
    if op == "weight":
        return np.broadcast_to(node.array, (samples, *node.shape))
    if op == "matmul":
        a, b = operands
        if node.transpose_b:
            b = np.swapaxes(b, -1, -2)
        return node.factor * matmul_in_order(a, b)
    if op == "softmax":
        return softmax_rows(operands[0])
    if op == "add":
        return operands[0] + operands[1]
    if op == "relu":
        return np.maximum(operands[0], 0.0)
    if op == "concat":
        return np.concatenate(operands, axis=-2)
    if op == "slice":
        return operands[0][..., node.start:node.start + node.count, :]
    if op == "argmax":
        return np.argmax(operands[0], axis=-1)[..., None].astype(np.float64)
    if op == "output":
        return operands[0]
    raise AssertionError(f"evaluate: unknown op {op!r} at {node.describe()}")


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
    value: dict[int, np.ndarray] = {}
    for node in graph.nodes:
        if node.op == "input":
            value[node.id] = np.asarray(inputs[node.name], dtype=np.float64)
        else:
            value[node.id] = _evaluate_node(node, value, samples)
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
