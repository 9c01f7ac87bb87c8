"""A view (a slice, a concatenation, a fused relu): no instruction of its own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..node import Node
    from .emitter import Emitter


def lower_view(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    """Its buffer (if not allocated yet), no instruction: the nodes it reads write their values
    in place."""
    em.address(node.id)
