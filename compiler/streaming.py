"""A matmul's step in emission: whole when its operands fit the scratchpad, else blocked.

The ``step`` of a matmul's lowering (:func:`lower_matmul_step`, registered in
:mod:`compiler.lowering.table`). It first tries the step as it has always run (seed chapter
11): the operands loaded whole, one accumulator, the matmul's lowering
(:func:`compiler.lowering.matmul.lower_matmul`). When that runs out of scratchpad, the try is undone
(:meth:`compiler.emit.Emitter.rollback`), the candidates of :func:`compiler.blocking.rank_blockings`
are tried fastest first, and the first whose allocations succeed is written
(:func:`compiler.blocking.block_steps`). So a graph that fits as before compiles to the same
program, instruction for instruction; only a step that did not fit is blocked.

What may stream (:func:`streams`): a source (input or weight) not loaded yet, 8-bit (an
int4 weight is unpacked whole; an int8 weight packed four to an external word streams in
blocks that start at byte 0 of a word, LD fmt = 1, :mod:`compiler.packing`), in a buffer it
owns (a part of a concatenation is loaded into the concatenation's buffer), and not the
matmul's other operand too. A B not read transposed whose only reader is this matmul is
stored in column panels when it streams in column blocks (``Emission.panels``; the host
writes it so, :meth:`compiler.Program.ext_image`); one that others read too is gathered row by row.
Results of matmuls (and every other computed tensor) stay in the scratchpad: a step whose
result and the tensors alive across it leave no room for the smallest blocking is refused,
naming the node and the words that blocking needs.

On the machine whose engines run side by side (OVERLAP = 1) a B that streams, is stored in
panels and is larger than one piece of load (compiler/schedule.py's LOAD_PIECE) is tried first
in panels T wide, every panel in a place of its own (a ring of as many B blocks as loads:
:class:`compiler.blocking.Places`), when they all fit: each MM then reads one panel and waits
for its load only, and no load waits for an MM, so the loads run ahead beside the MMs (decode,
docs/studies.md study 2). Otherwise the step is as above (a streamed B double buffered when
the scratchpad has room).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sim.spec import BY_NAME, Params, latency

from . import blocking
from .allocator import ScratchpadFull
from .bias import has_bias, region_name
from .blocking import (
    IN_PLACE,
    Blocking,
    Matmul,
    Places,
    Ranking,
    Whole,
    block_steps,
    footprint,
    rank_blockings,
)
from .errors import CompileError, plural
from .int4 import is_int4
from .lowering.matmul import matmul_requantizer
from .lowering.memory import ld_fields
from .schedule import LOAD_PIECE

if TYPE_CHECKING:
    from sim.asm import Instruction

    from .emit import Emitter
    from .ir import Node


RANKING_SHOWN = 5
"""How many of the best candidates a :class:`~compiler.blocking.Ranking` keeps."""


def lower_matmul_step(em: Emitter, node: Node) -> None:
    """A matmul's step: whole if it fits, else (unless ``em.stream`` is False) the fastest
    blocking that fits.

    Raises:
        CompileError: no blocking fits the scratchpad at this step (naming the node, its
            operands and the words the smallest blocking needs), or what the matmul's
            lowering raises (its requantizer).
    """
    before = matmul_step(em, node, costs=False)   # the words only: cheap, for the record
    if (em.params.OVERLAP and em.stream and before.b_streams and before.b_panels
            and before.k * before.n > LOAD_PIECE):
        # the engines side by side: a B larger than one piece of load (compiler/schedule.py)
        # streams in T-wide panels, each in a place of its own when they all fit (a ring), so
        # its loads run ahead beside the MMs: an MM then waits for one piece, not for all of B
        mark = em.checkpoint()
        if lower_blocked(em, node, matmul_step(em, node), ring_only=True):
            return
        em.rollback(mark)
    mark = em.checkpoint()
    try:
        em.lower(node, [em.ensure(i) for i in node.ins])
        whole = True
    except ScratchpadFull:
        if not em.stream:
            raise
        whole = False
    if not whole:           # blocked outside the handler: its own refusal is not chained to this one
        em.rollback(mark)
        lower_blocked(em, node, matmul_step(em, node))
        return
    em.out.blockings[node.id] = measured(before, em.out.code[mark.code:], em.params)


def matmul_step(em: Emitter, node: Node, costs: bool = True) -> Matmul:
    """The step as :mod:`compiler.blocking` sees it, from where emission stands (without the
    cycles and words of loading the operands whole unless ``costs``)."""
    a_id, b_id = node.ins
    m, k = em.nodes[a_id].shape
    n = node.shape[1]
    same = a_id == b_id
    buf_id, _ = em.placement.loc[node.id]
    out = em.placement.buffers[buf_id]
    b_whole = IN_PLACE if same else whole_cost(em, b_id, costs)
    return Matmul(node.id, m, k, n, node.transpose_b, whole_cost(em, a_id, costs), b_whole,
                  a_streams=not same and streams(em, a_id), b_streams=not same and streams(em, b_id),
                  b_panels=not node.transpose_b and em.readers(b_id) == [node.id],
                  out=out.words if out.addr is None else 0, bias=has_bias(node), k_max=em.params.K_MAX,
                  a_packed=packed(em, a_id), b_packed=packed(em, b_id))


def packed(em: Emitter, nid: int) -> bool:
    """Whether a source is stored packed four int8 to an external word (:mod:`compiler.packing`)."""
    return em.unloaded_source(nid) and bool(em.ext[em.nodes[nid].name].fmt)


def whole_cost(em: Emitter, nid: int, costs: bool = True) -> Whole:
    """What loading an operand whole costs at this step (:data:`IN_PLACE` when it is there):
    the words it holds, and (with ``costs``) the cycles, words moved and count of the
    instructions :func:`compiler.lowering.memory.lower_load` writes."""
    node = em.nodes[nid]
    if not em.unloaded_source(nid):
        return IN_PLACE
    entry = em.ext[node.name]
    buf = em.placement.buffer_of(nid)
    held = buf.words if buf.addr is None else 0
    transient = entry.words if is_int4(node) else 0
    if not costs:
        return Whole(held, transient)
    load = ld_fields(entry, 0)
    cycles = latency(BY_NAME["LD"], load, em.params)
    if not is_int4(node):
        return Whole(held, 0, cycles, load["len"], 1)
    cycles += latency(BY_NAME["UNPACK"], {"dst": 0, "src": 0, "len": entry.words}, em.params)
    return Whole(held, transient, cycles, entry.words, 2)


def streams(em: Emitter, nid: int) -> bool:
    """Whether an operand may stream from external memory (see the module docstring)."""
    if not em.unloaded_source(nid) or is_int4(em.nodes[nid]):
        return False
    buf = em.placement.buffer_of(nid)
    return buf.owner == nid and buf.addr is None


def measured(mm: Matmul, code: Sequence[Instruction], params: Params) -> Blocking:
    """The whole step as it was written: its cycles and words moved from its instructions."""
    cycles = moved = 0
    for ins in code:
        fields = ins.fields
        cycles += latency(ins.spec, fields, params)
        moved += fields["len"] if ins.op == "LD" else 0
    words = blocking.workspace(mm, mm.m, mm.n, False, False).words
    peak = footprint(mm, words, False, False)
    return Blocking(mm.m, mm.n, False, False, 1, 1, cycles, peak, words, moved, 0, len(code))


def lower_blocked(em: Emitter, node: Node, mm: Matmul, ring_only: bool = False) -> bool:
    """The fastest blocking whose allocations succeed at this step, written. ``ring_only``
    (OVERLAP = 1): only a blocking whose B streams in panels T wide, all of them in places of
    their own (:class:`compiler.blocking.Places`' ring); False when none fits.

    Raises:
        CompileError: none fits (:func:`no_blocking_fits`), or every one that fits the
            scratchpad has more instructions than the instruction memory has room for.
    """
    every = rank_blockings(mm, em.params)
    free = em.alloc.free_words()
    ranked = [choice for choice in every if choice.footprint <= free]
    room = em.params.IMEM_WORDS - len(em.out.code) - 1   # HALT comes last
    if em.launches:
        room = 1 << 30    # a program in launches has no end to its instruction memory
    # with the engines side by side, the fastest blocking whose B, when it streams, fits
    # twice (double buffering) comes first; then the fastest that fits at all
    tries = [True, None] if em.params.OVERLAP else [None]
    if ring_only:
        tries = ["ring"]
        ranked = [c for c in ranked if c.stream_b and not c.stream_a and c.cols == min(em.params.T, mm.n)
                  and c.rows == mm.m and c.b_how != "gathered row by row"]
    failed = 0
    for double in tries:
        for choice in ranked:
            if choice.instructions > room or (double and not choice.stream_b):
                continue
            mark = em.checkpoint()
            try:
                at = take(em, node, mm, choice, double)
            except ScratchpadFull:
                em.rollback(mark)
                failed += double is None
                continue
            write(em, node, mm, choice, at)
            too_long = sum(c.instructions > room for c in ranked)
            em.out.rankings[node.id] = Ranking(len(every), len(every) - len(ranked), too_long, failed, free,
                                               room, tuple(every[:RANKING_SHOWN]), choice,
                                               every.index(choice) + 1, mm)
            return True
    if ring_only:
        return False
    if ranked and all(choice.instructions > room for choice in ranked):
        shortest = min(choice.instructions for choice in ranked)
        raise CompileError(f"the instruction memory is full at {node.describe()}: the blockings that fit the "
                           f"scratchpad need {plural(shortest, 'instruction')} or more, and {room} of the "
                           f"{em.params.IMEM_WORDS} are left", "compile the graph in smaller parts", node.id)
    raise no_blocking_fits(em, node, mm)


def take(em: Emitter, node: Node, mm: Matmul, choice: Blocking, double: bool | None = None) -> Places:
    """Place what a blocking needs: the operands it keeps whole, the result, the workspace
    (none when its accumulator is the output's rows and nothing streams). ``double``: True,
    a second B block is required (OVERLAP = 1); None, taken when it fits (OVERLAP = 1).

    Raises:
        ScratchpadFull: it does not fit (the caller rolls back).
    """
    a_id, b_id = node.ins
    a = 0 if choice.stream_a else em.ensure(a_id)
    b = 0 if choice.stream_b else em.ensure(b_id)
    out = em.address(node.id)
    space = workspace_of(mm, choice)
    # with the engines side by side (OVERLAP = 1), a streamed B gets a second block after the
    # workspace when the scratchpad has room (double buffering: the next block of B loads while
    # the MMs read this one); the words are the blocking's plus one B block
    b_words = space.words - space.b_block if choice.stream_b else 0
    second = -1
    base = 0
    ring = 2
    if double == "ring":
        ring = max(2, choice.b_loads)
        base = em.alloc.alloc(space.words + (ring - 1) * b_words, f"workspace of node {node.id}")
        second = base + space.words
    elif em.params.OVERLAP and b_words:
        mark = em.checkpoint()
        try:
            base = em.alloc.alloc(space.words + b_words, f"workspace of node {node.id}")
            second = base + space.words
        except ScratchpadFull:
            em.rollback(mark)
            if double:
                raise
    if second < 0 and space.words:
        base = em.alloc.alloc(space.words, f"workspace of node {node.id}")
    a_ext = em.ext[em.nodes[a_id].name].addr if choice.stream_a else 0
    b_ext = em.ext[em.nodes[b_id].name].addr if choice.stream_b else 0
    bias_ext = em.ext[region_name(node)].addr if has_bias(node) else 0
    acc = out if choice.acc_in_out else base + space.acc
    return Places(a, b, acc, base + space.a_block, base + space.b_block, out, a_ext, b_ext, bias_ext, base,
                  second, ring, b_words)


def workspace_of(mm: Matmul, choice: Blocking) -> blocking.Workspace:
    """The workspace of a chosen blocking (:func:`compiler.blocking.workspace`)."""
    return blocking.workspace(mm, choice.rows, choice.cols, choice.stream_a, choice.stream_b, choice.depth,
                              choice.acc_in_out)


def write(em: Emitter, node: Node, mm: Matmul, choice: Blocking, at: Places) -> None:
    """Write a blocking's instructions, free its workspace, record the blocking (and the
    panel layout of a B that streams in column blocks)."""
    requantizer = matmul_requantizer(em, node)
    for step in block_steps(mm, choice.rows, choice.cols, choice.stream_a, choice.stream_b, at, requantizer,
                            em.params.T, choice.depth, choice.acc_in_out):
        em.put(step.op, **step.fields)
    space = workspace_of(mm, choice)
    words = space.words + ((at.b_ring - 1) * (space.words - space.b_block) if at.b_block2 >= 0 else 0)
    if words:
        em.alloc.release(at.work, words, f"workspace of node {node.id}")
    if choice.b_how == "in panels":
        em.out.panels[em.nodes[node.ins[1]].name] = choice.cols
    em.out.blockings[node.id] = choice


def no_blocking_fits(em: Emitter, node: Node, mm: Matmul) -> CompileError:
    """The refusal: the node, its operands, the smallest blocking and the words it needs."""
    least = min(rank_blockings(mm, em.params), key=lambda b: (b.footprint, b.cycles))
    a, b = (em.nodes[i] for i in node.ins)
    free, size = em.alloc.free_words(), em.params.SPAD_WORDS
    problem = (f"scratchpad is full at {node.describe()}, the {mm.m} x {mm.k} by {mm.k} x {mm.n} product of "
               f"{a.describe()} and {b.describe()}: its smallest blocking, {least.describe()}, needs "
               f"{plural(least.footprint, 'word')}; {free} of the {size} words are free at this step "
               f"(in {plural(len(em.alloc.free_list), 'piece')})")
    fix = (f"use a smaller batch or narrower layers (its result alone takes {plural(mm.m * mm.n, 'word')}); "
           "inputs and weights stream from external memory, but computed tensors stay in the scratchpad")
    if any(is_int4(x) for x in (a, b)):
        fix += "; an int4 weight is unpacked whole: with bits=8 it could stream"
    return CompileError(problem, fix, node.id)
