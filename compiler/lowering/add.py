"""An add: each operand at another scale than the sum's rescaled into a temporary (one RQ), then
one VADD (with the relu flag when a relu was fused)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..requant import requantizer, rescale_factor
from .emitter import fused_relu

if TYPE_CHECKING:
    from ..node import Node
    from .emitter import Emitter

ADD_SAME_SCALE = 1e-9
"""An add operand whose scale is within this relative distance of the sum's is not rescaled."""


def needs_rescale(ratio: float) -> bool:
    """Whether an add operand at ``ratio`` times the sum's scale must be rescaled first."""
    return abs(ratio - 1) >= ADD_SAME_SCALE


def lower_add(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    """The rescales, the output buffer, one VADD; the temporaries released."""
    size = node.words
    sources = []
    temps = []
    for k, (operand, addr) in enumerate(zip(node.ins, operands, strict=True)):
        ratio = rescale_factor(em.scales[operand], em.scales[node.id])
        if not needs_rescale(ratio):
            sources.append(addr)
            continue
        tmp = em.alloc.alloc(size, f"operand {k} of node {node.id}, rescaled")
        temps.append(tmp)
        m_, s_ = requantizer(ratio, f"add node {node.id}, operand {k}", node.id, em.params)
        em.requantizers[(node.id, k)] = (m_, s_)
        em.put("RQ", dst=tmp, src=addr, len=size, m=m_, s=s_, relu=0)
        sources.append(tmp)
    em.put("VADD", dst=em.address(node.id), src1=sources[0], src2=sources[1], len=size,
           relu=int(fused_relu(em, node)))
    for tmp in temps:
        em.alloc.release(tmp, size, f"rescaled operand of node {node.id}")
