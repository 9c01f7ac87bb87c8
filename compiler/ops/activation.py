"""table: a table activation, a float function applied elementwise through a 256-entry table
(one LUT instruction: gelu, silu, tanh, ...; issue 14, :mod:`compiler.tables`). Its table is
built from the scales of its input and output and stored in external memory."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from sim.spec import LUT_TABLE_WORDS

from ..errors import CompileError
from ..tables import function, region_name, table_levels
from .semantics import level
from .spec import Constant

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..node import Node
    from .semantics import Compiled, FloatContext, IntContext
    from .shapes import Attrs, Shape


def table_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """The operand's shape; ``fn`` must name a function of compiler.tables."""
    fn = attrs.get("fn", "")
    try:
        function(fn if isinstance(fn, str) else "")
    except ValueError as e:
        raise CompileError(f"table of {operands[0].describe()}: {e}",
                           "name one of the functions compiler.tables lists") from None
    return operands[0].shape, {"fn": fn}


def _always(node: Node) -> bool:
    return True


def _table_words(node: Node) -> int:
    return LUT_TABLE_WORDS


def _entries(node: Node, nodes: Sequence[Node], scales: Mapping[int, float]) -> np.ndarray:
    return table_levels(node, scales)


ENTRIES = Constant(needed=_always, region=region_name, words=_table_words, values=_entries)
"""The node's 256 entries (:func:`compiler.tables.table_levels`), loaded before its LUT."""


def float_table(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    """The function, in float64."""
    with np.errstate(all="ignore"):
        return np.asarray(function(node.fn)(np.asarray(operands[0], dtype=np.float64)), dtype=np.float64)


def int_table(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    """The LUT: entry x + 128 of the node's table (compiler/tables.py)."""
    table = table_levels(node, context.program.scales)
    return table[np.asarray(operands[0], dtype=np.int64) + 128]


def real_table(node: Node, real: Callable[[int], np.ndarray], program: Compiled) -> np.ndarray:
    """The function of the dequantized operand at the result's scale."""
    with np.errstate(all="ignore"):
        return level(function(node.fn)(real(node.ins[0])), program.scales[node.id])
