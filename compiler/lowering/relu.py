"""A relu: fused (the usual case), the relu flag of the instruction that writes its operand and
no instruction of its own; unfused (``compile_graph(disable={"fusion"})``), one identity RQ."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sim.spec import BY_NAME

if TYPE_CHECKING:
    from ..node import Node
    from .emitter import Emitter

IDENTITY_SHIFT = next(f.width for f in BY_NAME["RQ"].fields if f.name == "m") - 1
"""An RQ with m = 2**s and this s (23: the widest power of two the 24-bit m field holds) passes an
int8 level through unchanged: |x| * 2**s plus the rounding term 2**(s-1), shifted right by s, is
|x| (GA2.md section 4)."""


def lower_relu(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    """A relu: fused, its buffer (its operand's) and nothing more; unfused, one identity RQ with
    relu = 1 over its buffer, in place (RQ may write its source: sim/spec.py), the second pass
    that fusion saves."""
    addr = em.address(node.id)
    if node.ins[0] not in em.fused:
        em.put("RQ", dst=addr, src=addr, len=node.words, m=1 << IDENTITY_SHIFT, s=IDENTITY_SHIFT, relu=1)
