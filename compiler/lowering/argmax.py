"""An argmax: one AMAX per row."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..node import Node
    from .emitter import Emitter


def amax_fields(row: int, dst: int, src: int, cols: int) -> dict[str, int]:
    """The AMAX of one row of a (rows, cols) tensor at ``src``; its index goes to word ``dst + row``."""
    return {"dst": dst + row, "src": src + row * cols, "len": cols}


def lower_argmax(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    """The output buffer, one AMAX per row of the operand."""
    out = em.address(node.id)
    rows, cols = em.nodes[node.ins[0]].shape
    for r in range(rows):
        em.put("AMAX", **amax_fields(r, out, operands[0], cols))
