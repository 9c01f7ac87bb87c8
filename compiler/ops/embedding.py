"""embedding: the rows of a table picked by token ids, ``table[ids[t]]`` for each row t of ids
(issue 26: ``nn.Embedding``). One GATHER per token: the id is read from the scratchpad (the
ids input, loaded like any input) and the row is copied from the table, which stays in external
memory (GA2.md section 3). An id not below the table's rows stops the machine with BAD_INDEX.

The ids are an input of shape (tokens, 1) whose scale the hardware pins to 1: a token id is its
own int8 level, so the host writes the ids themselves (0..127: a table of at most 128 rows).
The result shares the table's scale: a row is copied, not rescaled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from sim.arith import INT8_MAX

from ..errors import CompileError, plural
from .names import Op
from .spec import Limit, Pin, ScaleRule

if TYPE_CHECKING:
    from sim.spec import Params

    from ..node import Node
    from .semantics import FloatContext, IntContext
    from .shapes import Attrs, Shape

ID_SCALE = 1.0
"""A token id is its own level."""
EMBEDDING_SCALES = ScaleRule(joins=(1,), pins=(Pin(0, ID_SCALE, "token ids, one level each", "ids 0..127"),))
"""The ids' group pinned to 1; the result in the table's group."""
MAX_ROWS = INT8_MAX + 1
"""Token ids are int8 levels 0..127."""


def embedding_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """ids an input (tokens, 1), table a weight (rows, d) of int8: (tokens, d)."""
    ids, table = operands
    where = f"embedding of {ids.describe()} in {table.describe()}"
    if ids.op is not Op.INPUT or ids.shape[1] != 1:
        raise CompileError(f"{where}: the ids must be an input of shape (tokens, 1), got "
                           f"{ids.describe()} {ids.shape}",
                           "declare the token ids as g.input(name, (tokens, 1))")
    if table.op is not Op.WEIGHT or getattr(table, "bits", 8) != 8:
        raise CompileError(f"{where}: the table must be an int8 weight",
                           "give the table as g.weight(name, array) with bits=8")
    return (ids.shape[0], table.shape[1]), {}


def _table_rows(node: Node, nodes: Sequence[Node]) -> int:
    return nodes[node.ins[1]].shape[0]


def _too_many_rows(node: Node, rows: int, bound: int) -> str:
    return (f"embedding node {node.id}: its table has {rows} rows, but a token id is an int8 level, "
            f"at most {bound - 1}")


def _fewer_rows(bound: int) -> str:
    return f"use a vocabulary of at most {plural(bound, 'token')}"


def _max_rows(params: Params) -> int:
    return MAX_ROWS


TABLE_ROWS_LIMIT = Limit(_table_rows, _max_rows, _too_many_rows, _fewer_rows)
"""A table of at most 128 rows (ids are int8 levels)."""


def _rows(node: Node, table: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``table[ids]``; an id out of the table is refused, naming the node."""
    bad = (ids < 0) | (ids >= table.shape[0])
    if bad.any():
        raise CompileError(f"embedding node {node.id}: token id {int(ids[bad].flat[0])} is not within "
                           f"0..{table.shape[0] - 1} (GA-2 stops with BAD_INDEX)",
                           "give ids below the table's rows")
    return table[ids]


def float_embedding(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    """The table's rows at the ids (rounded to integers), (S, tokens, d)."""
    ids, table = operands
    return _rows(node, np.asarray(table[0]), np.rint(ids[..., 0]).astype(np.int64))


def int_embedding(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    """The table's levels at the id levels."""
    ids, table = operands
    return _rows(node, table, np.asarray(ids[:, 0], dtype=np.int64))
