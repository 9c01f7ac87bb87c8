"""Calibration: check the sample data, then measure every tensor's range.

Contract: :func:`check_sample` accepts a dict that gives every input of the graph a finite
float array of the declared shape, and nothing else; otherwise it raises (naming the input
and the sample). :func:`calibration_ranges` checks every sample and returns, per node, the
largest absolute value the node takes over all samples (seed chapter 11, "calibration":
the range of a tensor is the largest |value| seen).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .errors import CompileError, first_non_finite, float_array, plural
from .evaluate import evaluate_batch
from .ir import Graph


def check_sample(graph: Graph, sample: object, where: str,
                 error: type[Exception] = CompileError) -> dict[str, np.ndarray]:
    """Check one set of input values and return it as float64 arrays.

    Args:
        graph: the graph whose inputs are to be given.
        sample: input name -> 2-D array-like of floats.
        where: how the messages call this sample (``calibration sample 3``, ``the run's inputs``).
        error: the exception class to raise (CompileError for calibration data).

    Raises:
        error: the sample is not a mapping, lacks an input, names something that is not an
            input, has a value of the wrong shape, not numeric, or with NaN or infinity.
    """
    if not isinstance(sample, Mapping):
        raise error(f"{where} is a {type(sample).__name__}, not a dict from input name to values",
                    "pass {input name: 2-D array} for each sample")
    checked = {}
    inputs = graph.inputs()
    for node in inputs:
        if node.name not in sample:
            raise error(f"{where} has no value for input '{node.name}' ({node.describe()})",
                        f"give '{node.name}' a {node.shape[0]} x {node.shape[1]} array", node.id)
        values, why = float_array(sample[node.name])
        if values is None:
            raise error(f"{where}: the value of input '{node.name}' is not a numeric array ({why})",
                        f"give '{node.name}' a {node.shape[0]} x {node.shape[1]} array of numbers",
                        node.id)
        if values.shape != node.shape:
            raise error(f"{where}: input '{node.name}' has shape {values.shape}, the graph declares "
                        f"{node.shape}", f"give '{node.name}' exactly {plural(node.shape[0], 'row')} of "
                        f"{plural(node.shape[1], 'value')}", node.id)
        if not np.isfinite(values).all():
            raise error(f"{where}: input '{node.name}' contains NaN or infinity ({first_non_finite(values)})",
                        "replace the non-finite values (they have no int8 level)", node.id)
        checked[node.name] = values
    known = {node.name for node in inputs}
    for name in sample:
        if name not in known:
            raise error(f"{where} gives a value for '{name}', which is not an input of the graph "
                        f"(inputs: {', '.join(sorted(known)) or 'none'})", "remove it or fix the name")
    return checked


def check_calibration(graph: Graph, calibration: Sequence[Mapping[str, object]]) -> dict[str, np.ndarray]:
    """Check every calibration sample; return input name -> (S, rows, cols) stacked values.

    Raises:
        CompileError: the set is empty or not a list, or a sample is bad (see :func:`check_sample`).
    """
    if isinstance(calibration, Mapping) or not isinstance(calibration, Sequence):
        raise CompileError("the calibration data must be a list of samples (dicts from input name "
                           f"to values), got a {type(calibration).__name__}",
                           "wrap a single sample in a list: [sample]")
    if len(calibration) == 0:
        raise CompileError("the calibration set is empty: no tensor range can be measured",
                           "give at least one sample of every input (more samples give safer ranges)")
    checked = [check_sample(graph, s, f"calibration sample {k}") for k, s in enumerate(calibration)]
    return {node.name: np.stack([c[node.name] for c in checked]) for node in graph.inputs()}


def calibration_ranges(graph: Graph, calibration: Sequence[Mapping[str, object]]) -> dict[int, float]:
    """Per node, the largest |value| over all calibration samples.

    Args:
        calibration: a list of dicts, input name -> 2-D array-like (rows, cols).

    Returns:
        node id -> range (a float >= 0), for every node (argmax included: its range is the
        largest index, which the output of an argmax keeps as a nominal scale).

    Raises:
        CompileError: bad calibration data (see :func:`check_calibration`), or a tensor
            whose values overflow float64 on a sample (the message names the first such
            node, the sample, and what its operands reach there).
    """
    return ranges_of(graph, calibration_values(graph, calibration))


def calibration_values(graph: Graph, calibration: Sequence[Mapping[str, object]]) -> dict[int, np.ndarray]:
    """Per node, its float64 values on every calibration sample, stacked (samples, rows, cols).

    Raises:
        CompileError: as :func:`calibration_ranges`.
    """
    stacked = check_calibration(graph, calibration)
    with np.errstate(over="ignore", invalid="ignore"):   # an overflow is reported below, by node
        return evaluate_batch(graph, stacked)


def ranges_of(graph: Graph, values: Mapping[int, np.ndarray]) -> dict[int, float]:
    """Per node, the largest |value| of :func:`calibration_values`.

    Raises:
        CompileError: a tensor overflows float64 on a sample (see :func:`calibration_ranges`).
    """
    ranges = {}
    for nid, v in values.items():
        per_sample = np.abs(v).max(axis=(-2, -1))
        if not np.isfinite(per_sample).all():
            _overflow(graph, values, nid, int(np.argmin(np.isfinite(per_sample))))
        ranges[nid] = calibrated_range(per_sample)
    return ranges


def calibrated_range(per_sample: np.ndarray) -> float:
    """A tensor's range from its largest |value| on each sample: the largest of them."""
    return float(per_sample.max())


def _overflow(graph: Graph, values: Mapping[int, np.ndarray], nid: int, sample: int) -> None:
    node = graph.nodes[nid]
    reach = ", ".join(f"{graph.nodes[i].describe()} reaches {float(np.abs(values[i][sample]).max()):.3g}"
                      for i in node.ins)
    raise CompileError(f"calibration sample {sample}: {node.describe()} overflows: its values go beyond the "
                       f"largest float ({np.finfo(np.float64).max:.3g}) or become NaN ({reach})",
                       "scale the calibration data and the inputs down (or the weights): every tensor's "
                       "values must stay finite", nid)
