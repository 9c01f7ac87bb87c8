"""A layernorm: its bias row loaded into a temporary, an int32 temporary, one LN per row, one
RQ into the output (GA2.md sections 3 and 4; the operation: :mod:`compiler.ops.layernorm`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sim.spec import LN_FRAC_BITS

from ..ops.layernorm import eps_field, region_name
from ..requant import requantizer

if TYPE_CHECKING:
    from ..node import Node
    from .emitter import Emitter


def ln_fields(row: int, dst: int, src: int, cols: int, bias: int, eps: int) -> dict[str, int]:
    """The LN of row ``row`` of a (rows, cols) int8 tensor at ``src`` into int32 at ``dst``."""
    return {"dst": dst + row * cols, "src": src + row * cols, "len": cols, "bias": bias, "eps": eps}


def lower_layernorm(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    """The bias row (LD), an int32 temporary, one LN per row, one RQ with the factor
    gain / (2^16 s_out) into the output; the temporaries released."""
    rows, cols = node.shape
    out = em.address(node.id)
    eps = eps_field(node, em.scales[node.ins[0]])
    bias_what, tmp_what = f"LN bias row of node {node.id}", f"LN results of node {node.id}"
    bias = em.alloc.alloc(cols, bias_what)
    em.put("LD", dst=bias, src=em.ext[region_name(node)].addr, len=cols)
    tmp = em.alloc.alloc(rows * cols, tmp_what)
    for r in range(rows):
        em.put("LN", **ln_fields(r, tmp, operands[0], cols, bias, eps))
    factor = node.gain / ((1 << LN_FRAC_BITS) * em.scales[node.id])
    m_, s_ = requantizer(factor, f"layernorm node {node.id}", node.id, em.params)
    em.requantizers[node.id] = (m_, s_)
    em.put("RQ", dst=out, src=tmp, len=rows * cols, m=m_, s=s_, relu=0)
    em.alloc.release(tmp, rows * cols, tmp_what)
    em.alloc.release(bias, cols, bias_what)
