"""An add's step in emission: as it always ran (:func:`compiler.lowering.add.lower_add`) when
neither operand nor the result lives in external memory; else in chunks (issue 25,
:mod:`compiler.spill`): per chunk of at most ``chunk`` words, each spilled operand loaded (LD)
into a buffer and rescaled there in place when its scale is not the sum's (RQ), an operand in
the scratchpad read where it lies (rescaled into a buffer when needed), one VADD (the fused
relu's flag), and for a spilled result one ST of the chunk. A chunk is read before it is
written, so the sum may take an operand's region in place. The chunk is the largest, halving
from the whole tensor, whose buffers fit the scratchpad.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .allocator import ScratchpadFull
from .errors import plural
from .lowering.add import needs_rescale
from .lowering.emitter import fused_relu
from .requant import requantizer, rescale_factor

if TYPE_CHECKING:
    from .emit import Emitter
    from .ir import Node


def add_step(em: Emitter, node: Node) -> None:
    """The step (module docstring).

    Raises:
        CompileError: not even a chunk of one row fits the scratchpad (naming the node), or a
            rescale's requantizer is out of range.
    """
    if node.id in em.finished:
        return          # a convolution's bands did it (compiler.residual)
    if not any(i in em.spills for i in (*node.ins, node.id)):
        em.lower(node, [em.ensure(i) for i in node.ins])
        return
    where = [None if i in em.spills else em.ensure(i) for i in node.ins]
    out = None if node.id in em.spills else em.address(node.id)
    pairs = rescales(em, node)
    needs = [where[k] is None or pairs[k] is not None for k in range(2)]
    if not any(needs) and out is None:
        needs[0] = True   # a buffer for the sum before its ST
    sets = 2 if em.params.OVERLAP else 1
    chunk, buffers = _buffers(em, node, needs * sets)
    for i, at in enumerate(range(0, node.words, chunk)):
        size = min(chunk, node.words - at)
        mine = buffers[2 * (i % sets):2 * (i % sets) + 2]
        sources = [_source(em, node, k, at, size, where[k], mine[k], pairs[k]) for k in range(2)]
        dst = out + at if out is not None else next(b for b in mine if b is not None)
        em.put("VADD", dst=dst, src1=sources[0], src2=sources[1], len=size, relu=int(fused_relu(em, node)))
        if out is None:
            em.put("ST", src=dst, dst=em.spills[node.id].addr + at, len=size)
    for buf in buffers:
        if buf is not None:
            em.alloc.release(buf, chunk, f"a chunk of an operand of node {node.id}")


def rescales(em: Emitter, node: Node) -> list[tuple[int, int] | None]:
    """Each operand's rescale to the sum's scale, (multiplier, shift), or None when its scale is
    the sum's (:func:`compiler.lowering.add.needs_rescale`); each recorded as the add's
    requantizer (add id, operand index).

    Raises:
        CompileError: a requantizer is out of range (naming the add and the operand).
    """
    pairs = []
    for k, operand in enumerate(node.ins):
        ratio = rescale_factor(em.scales[operand], em.scales[node.id])
        pair = requantizer(ratio, f"add node {node.id}, operand {k}", node.id, em.params) \
            if needs_rescale(ratio) else None
        if pair is not None:
            em.requantizers[(node.id, k)] = pair
        pairs.append(pair)
    return pairs


def _buffers(em: Emitter, node: Node, needs: list[bool]) -> tuple[int, list[int | None]]:
    """The largest chunk (the whole, halved down to one row) whose buffers fit, and the buffers."""
    chunk = node.words
    while True:
        mark = em.alloc.save()
        try:
            return chunk, [em.alloc.alloc(chunk, f"a chunk of an operand of node {node.id}") if need else None
                           for need in needs]
        except ScratchpadFull:
            em.alloc.restore(mark)
            if chunk <= node.shape[1]:
                raise ScratchpadFull(f"{node.describe()} does not fit the scratchpad even one row at a time "
                                   f"({plural(sum(needs) * chunk, 'word')} of buffers)",
                                   "use a machine with a larger scratchpad (SPAD_WORDS)", node.id) from None
            chunk = max(node.shape[1], -(-chunk // 2 // node.shape[1]) * node.shape[1])


def _source(em: Emitter, node: Node, k: int, at: int, size: int, addr: int | None, buf: int | None,
            pair: tuple[int, int] | None) -> int:
    """Where the VADD reads operand k's chunk: loaded and rescaled into its buffer as needed."""
    if addr is None:
        em.put("LD", dst=buf, src=em.spills[node.ins[k]].addr + at, len=size)
        addr, at = buf, 0
    if pair is None:
        return addr + at
    em.put("RQ", dst=buf, src=addr + at, len=size, m=pair[0], s=pair[1], relu=0)
    return buf
