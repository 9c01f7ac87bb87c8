"""A table activation: its table loaded into a temporary, one LUT."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sim.spec import LUT_TABLE_WORDS

from ..tables import region_name, table_levels

if TYPE_CHECKING:
    from ..node import Node
    from .emitter import Emitter


def lower_table(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    """Its table (built from the scales, compiler/tables.py) loaded into a temporary, one LUT,
    the temporary released."""
    table_levels(node, em.scales)   # refused here when the function is not finite on the input
    what = f"table of node {node.id}"
    tmp = em.alloc.alloc(LUT_TABLE_WORDS, what)
    em.put("LD", dst=tmp, src=em.ext[region_name(node)].addr, len=LUT_TABLE_WORDS)
    em.put("LUT", dst=em.address(node.id), src=operands[0], len=node.words, table=tmp)
    em.alloc.release(tmp, LUT_TABLE_WORDS, what)
