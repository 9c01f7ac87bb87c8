"""Residual adds finished in a convolution's epilogue (issue 27: ResNet-8's matrix unit idle).

A residual block ends in ``add(y, skip)`` where y is a convolution's result and nothing else
reads y. When both y and the sum live in external memory (:mod:`compiler.spill`), the add as a
step of its own loads y back, loads the skip, adds and stores the sum (:mod:`compiler.addstep`),
and the matrix unit waits: on ResNet-8 at T = 8 (OVERLAP = 2) the three adds were 22,428 cycles of
its 301,794 with no multiply-add. Here the add is done by the convolution's bands instead, a row at
a time as each output row is requantized (:func:`compiler.convstep.banded`): the skip's row
loaded (or read where it lies), each operand rescaled where the add's own step rescales it, one
VADD and one ST of the sum. y itself is never stored. The instructions and their arithmetic are
the add's own, so the program computes what the graph means bit for bit; only where and when
they run changes, and the vector unit and the DMA do them beside the matrix unit's next band.

Contract: :func:`residual_adds` names the pairs. The sum is written at the convolution's step,
not the add's, and that is safe where :func:`compiler.spill.spill_regions` puts it: an add
always writes in place, into the region of an operand whose last reader it is, and the
convolution's own region (only the add reads it) qualifies, so the sum takes the convolution's
region (clear of every region live at its step; the convolution itself no longer writes it) or
the other operand's (read row by row before each row of the sum is written). When that region
is the convolution's own input, the bands finish the add only when the convolution could write
over its input itself (:func:`compiler.spill.writes_over_input`: stride 1, the same size, one
row of padding at most), and they are planned as such a convolution's
(:func:`compiler.convstep.in_place`: no band reloads a row the sum wrote over).
:func:`reserve` takes the row buffers before the convolution plans its bands, or returns None
when they do not fit (the add then runs as its own step, as it always did); :func:`start` sets
the add up; :func:`finish_rows` writes a band's rows.

Measured (2026-12-08, ResNet-8 from PyTorch, one image): T = 8 at OVERLAP = 2 301,794 -> 293,599
cycles (64.7% -> 66.6% of the array), OVERLAP = 1 301,954 -> 293,817, the serial T = 8 360,661
-> 354,667 and T = 4 1,148,675 -> 1,135,513 (the rows neither stored nor loaded back).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .addstep import rescales
from .allocator import ScratchpadFull
from .lowering.emitter import fused_relu
from .ops import OPS, Op, Role
from .spill import writes_over_input

if TYPE_CHECKING:
    from .emit import Emitter
    from .ir import Graph
    from .node import Node


def residual_adds(graph: Graph, spilled: Collection[int]) -> dict[int, int]:
    """Convolution id -> the id of the add its epilogue finishes: an add whose result is spilled
    (``spilled``: node ids living in external memory), of two different operands, the later of
    which is a spilled convolution that nothing else reads, emitted just before the add (only
    sources, which emit nothing at their own step, between them). The other operand comes
    earlier, so it is computed by then."""
    readers = graph.consumers()
    found = {}
    for add in graph.nodes:
        if add.op is not Op.ADD or add.id not in spilled or len(set(add.ins)) != 2:
            continue
        conv = graph.nodes[max(add.ins)]
        between = range(conv.id + 1, add.id)
        if (conv.op is Op.CONV2D and conv.id in spilled and readers[conv.id] == [add.id]
                and all(OPS[graph.nodes[i].op].role is Role.SOURCE for i in between)):
            found[conv.id] = add.id
    return found


@dataclass
class Epilogue:
    """An add being finished by a convolution's bands.

    Attributes:
        add: the add node. own: the convolution's index among the add's operands.
        other: the other operand's scratchpad address, None when it is spilled.
        pairs: each operand's rescale (multiplier, shift), None when it needs none.
        buffers: row buffers (one row of the sum each, ``row_words`` words), taken in turn.
        turn: rows written so far.
    """

    add: Node
    own: int
    other: int | None
    pairs: list[tuple[int, int] | None]
    buffers: list[int]
    row_words: int
    turn: int = field(default=0)


ROW_BUFFERS = 1
"""Row buffers of the sum, taken in turn. One: a second lets the next row's operand load while
the last sum is stored, but its words cost the convolution's bands more than that buys
(ResNet-8, 2026-12-08: T = 8 at OVERLAP = 2 293,599 cycles with one, 295,001 with two; the
serial T = 4 1,135,513 and 1,140,361)."""


def reserve(em: Emitter, conv: Node, row_words: int) -> list[int] | None:
    """When ``conv`` finishes an add (:func:`residual_adds`), its row buffers, taken before the
    convolution plans its bands so that they fit beside them; None when it finishes none or
    they do not fit."""
    add_id = em.residual.get(conv.id)
    if add_id is None:
        return None
    x, out = em.spills.get(conv.ins[0]), em.spills[add_id]
    if x is not None and x.addr < out.end and out.addr < x.end and not writes_over_input(conv):
        return None     # the sum would go over rows of the input that later bands still read
    mark = em.alloc.save()
    try:
        buffers = [em.alloc.alloc(row_words, f"a row of the sum of node {add_id}")
                   for _ in range(ROW_BUFFERS)]
    except ScratchpadFull:
        em.alloc.restore(mark)
        return None
    em.finished.add(add_id)     # so the bands are planned as writing the sum's region
    return buffers


def start(em: Emitter, conv: Node, buffers: list[int], row_words: int) -> Epilogue:
    """The epilogue of ``conv``'s bands, in the row buffers :func:`reserve` took.

    Raises:
        CompileError: a rescale's requantizer is out of range (naming the add).
    """
    add = em.nodes[em.residual[conv.id]]
    own = add.ins.index(conv.id)
    other = add.ins[1 - own]
    return Epilogue(add, own, None if other in em.spills else em.ensure(other), rescales(em, add), buffers,
                    row_words)


def finish_rows(em: Emitter, ep: Epilogue, first: int, at: int, words: int) -> None:
    """The sum's rows from word ``first`` of the tensor, ``words`` words: the convolution's
    requantized rows are at scratchpad address ``at``. Its instructions are the add's (owned by
    its node)."""
    step, em.step = em.step, ep.add.id
    other = ep.add.ins[1 - ep.own]
    for off in range(0, words, ep.row_words):
        size = min(ep.row_words, words - off)
        buf = ep.buffers[ep.turn % len(ep.buffers)]
        ep.turn += 1
        sources = [0, 0]
        own_pair, other_pair = ep.pairs[ep.own], ep.pairs[1 - ep.own]
        if own_pair is not None:
            em.put("RQ", dst=at + off, src=at + off, len=size, m=own_pair[0], s=own_pair[1], relu=0)
        sources[ep.own] = at + off
        where = ep.other + first + off if ep.other is not None else buf
        if ep.other is None:
            em.put("LD", dst=buf, src=em.spills[other].addr + first + off, len=size)
        if other_pair is not None:
            em.put("RQ", dst=buf, src=where, len=size, m=other_pair[0], s=other_pair[1], relu=0)
            where = buf
        sources[1 - ep.own] = where
        em.put("VADD", dst=buf, src1=sources[0], src2=sources[1], len=size, relu=int(fused_relu(em, ep.add)))
        em.put("ST", src=buf, dst=em.spills[ep.add.id].addr + first + off, len=size)
    em.step = step


def release(em: Emitter, conv: Node, buffers: list[int], row_words: int, *, done: bool = True) -> None:
    """The row buffers back to the allocator; ``done`` False: the bands did not finish the add
    (no plan fitted beside the buffers), so it runs as its own step."""
    add_id = em.residual[conv.id]
    for buf in buffers:
        em.alloc.release(buf, row_words, f"a row of the sum of node {add_id}")
    if not done:
        em.finished.discard(add_id)


def writes_sum(em: Emitter, conv: Node) -> int | None:
    """The add whose sum ``conv``'s bands write (reserved for, or being finished), if any."""
    add_id = em.residual.get(conv.id)
    return add_id if add_id in em.finished else None
