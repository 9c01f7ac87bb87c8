"""Partial batches: fewer rows than the batch a model was compiled for, padded and trimmed.

A program is compiled for a fixed batch of rows (``from_torch(model, (64,), batch=16)``). When
a model works row by row, so that row i of every output depends on row i of the inputs
alone (an MLP: matmuls by weights, constants added, relu, softmax and argmax per row), the
real rows' results do not depend on the other rows: a partial batch padded with zero rows
gives, for its real rows, the very integers a full batch would. :func:`pad_batch` pads;
:meth:`compiler.frontend.TorchGraph.unpack` drops the padding rows again (the run's outcome
carries the :class:`Feed`, which knows how many rows are real).

A model that mixes rows (a product by a tensor computed from the inputs, ``x @ x.T``; a
concatenation or slice of rows) is refused padding (:func:`rows_mixed`): the zero rows would
change the real rows' results.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..ir import Graph
from ..ops import Op


class Feed(dict):
    """The inputs of a run or a calibration sample: input name -> float64 array.

    Attributes:
        rows: None for a full batch; else how many rows are real (the first ones), the rest
            zero rows that pad a partial batch.
    """

    def __init__(self, values: Mapping[str, np.ndarray], rows: int | None = None):
        super().__init__(values)
        self.rows = rows


def rows_mixed(graph: Graph) -> str | None:
    """Why row i of some tensor depends on other rows of the inputs (naming the node), or
    None when every tensor computed from the inputs is computed row by row."""
    varies: dict[int, bool] = {}   # node id -> computed from the inputs
    for node in graph.nodes:
        varies[node.id] = node.op is Op.INPUT or any(varies[i] for i in node.ins)
        if node.op is Op.MATMUL and varies[node.ins[1]]:
            return (f"{node.describe()} multiplies by a tensor computed from the inputs, so each row of its "
                    "result reads every row")
        if node.op in (Op.CONCAT, Op.SLICE) and varies[node.id]:
            return f"{node.describe()} moves rows computed from the inputs"
    return None


def pad_batch(values: Mapping[str, np.ndarray], batch: int | None, graph: Graph) -> Feed:
    """The inputs, a partial batch padded with zero rows to ``batch`` rows.

    Args:
        values: input name -> 2-D float64 array (rows, features).
        batch: the rows the model was compiled for (None: no batch, nothing is padded).
        graph: the lowered graph (it must work row by row to be padded).

    Raises:
        ValueError: an input has more rows than the batch, or none; the inputs have different
            numbers of rows; or the model mixes rows (:func:`rows_mixed`).
    """
    rows = {name: array.shape[0] for name, array in values.items() if array.ndim == 2}
    if batch is None or all(count == batch for count in rows.values()):
        return Feed(values)
    for name, count in rows.items():
        if count > batch or count == 0:
            raise ValueError(f"input '{name}' has {count} rows; the model was traced for a batch of {batch}: "
                             f"feed it in batches of 1 to {batch} rows")
    if len(set(rows.values())) > 1:
        raise ValueError(f"the inputs have different numbers of rows ({rows}); a partial batch gives every "
                         "input the same number")
    (real,) = set(rows.values())
    reason = rows_mixed(graph)
    if reason is not None:
        raise ValueError(f"cannot pad a partial batch of {real} rows to {batch}: {reason}, so zero rows "
                         f"would change the real rows' results; feed full batches of {batch}")
    padding = batch - real
    padded = {name: np.vstack([array, np.zeros((padding, array.shape[1]))]) for name, array in values.items()}
    return Feed(padded, real)
