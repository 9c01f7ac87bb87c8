"""A softmax: one SM per row into Q16 probabilities, one RQ to the 1/127 scale (on the decoupled
machine, OVERLAP = 2, one RQ per block of T rows)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..ops.softmax import valid_lengths, zeros_region
from ..requant import requantizer, softmax_factor

if TYPE_CHECKING:
    from ..node import Node
    from .emitter import Emitter


def sm_fields(row: int, dst: int, src: int, cols: int, valid: int | None = None) -> dict[str, int]:
    """The SM of one row of a (rows, cols) tensor at ``src`` into Q16 values at ``dst``, over
    its first ``valid`` values (all by default)."""
    return {"dst": dst + row * cols, "src": src + row * cols, "len": cols if valid is None else valid}


def lower_softmax(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    """The output buffer, a Q16 temporary, one SM per row, one RQ into the output (at OVERLAP = 2
    one per block of T rows, after its SMs: seeds 100-111 4,400 -> 4,330 cycles there, 2026-12-06;
    per 1 and 2 rows 4,347 and 4,328), the temporary released. A causal softmax's row i: an SM
    of its valid length, then an LD of zeros over the rest of its Q16 row (the region
    :data:`compiler.ops.softmax.ZEROS`)."""
    rows, cols = node.shape
    out = em.address(node.id)
    tmp = em.alloc.alloc(rows * cols, f"Q16 probabilities of node {node.id}")
    m_, s_ = requantizer(softmax_factor(em.scales[node.id]), f"softmax node {node.id}", node.id, em.params)
    em.requantizers[node.id] = (m_, s_)
    # on the decoupled machine (OVERLAP = 2) each block of T rows is requantized as soon as its SMs
    # are done: its RQ runs beside the next rows' SMs, and what reads those rows can start
    block = em.params.T if em.params.OVERLAP == 2 else rows
    first = 0
    for r, valid in enumerate(valid_lengths(node)):
        em.put("SM", **sm_fields(r, tmp, operands[0], cols, valid))
        if valid < cols:
            em.put("LD", dst=tmp + r * cols + valid, src=em.ext[zeros_region(node)].addr, len=cols - valid)
        if r + 1 - first == block or r + 1 == rows:
            done = (r + 1 - first) * cols
            em.put("RQ", dst=out + first * cols, src=tmp + first * cols, len=done, m=m_, s=s_, relu=0)
            first = r + 1
    em.alloc.release(tmp, rows * cols, f"Q16 probabilities of node {node.id}")
