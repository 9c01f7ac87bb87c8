"""Blocking: how a matmul step runs when its operands and result do not all fit the scratchpad.

GA-2 computes one output tile of at most T x T per MM instruction, K <= K_MAX, reading both
operands from the scratchpad (GA2.md section 3). Normally (seed chapter 11) a matmul's
operands are there whole: an input or weight is loaded whole just before the first step
that reads it and stays until its last reader, and one int32 accumulator holds the whole
product before one RQ. When that does not fit, the step is *blocked*, as the loop nests of
tiled accelerators are (Gemmini, VTA):

* the output is made in **row blocks** of ``rows`` rows: an accumulator of rows x n int32
  words, the MMs of the block's tiles, then one RQ into those rows of the output (rows of a
  row-major tensor are contiguous, so one instruction);
* **A streams** when it is a source (an input or 8-bit weight, in external memory, in a
  buffer of its own, not loaded yet): each row block's rows of A are one LD (rows x k
  contiguous words) into an A block;
* **B streams**, when it is such a source too, in **column blocks** of ``cols`` columns into
  a B block (:func:`load_b`). Read transposed (stored n x k), a column block is a run of
  whole rows of the stored matrix: one LD. Otherwise, when this matmul is B's only reader,
  the compiler stores B in external memory in column *panels* of ``cols`` columns, panel
  after panel, each k x width row by row (:func:`compiler.layout.panel_major`), so that a
  block is one LD too, which the MM reads with ldb = the block's width. A B that others
  read as well stays row by row, and a block is gathered with one LD per row of B (k LDs:
  slower, the last resort);
* row blocks outer, column blocks inner: with two or more column blocks a streamed B is
  loaded again for every row block (:func:`loads_b`).

A blocked step's temporaries (the accumulator, the A block, the B block) are one
allocation, its *workspace* (:func:`workspace`). Its *footprint* is the peak of the
scratchpad words the step holds: the operands it loads whole, the output's buffer when the
step places it, the workspace.

:func:`rank_blockings` enumerates the candidates (row block sizes x column block sizes x
which operands stream) and ranks them by their cycles on the machine they run on, exact. On
the serial machine that is ``sim.spec.latency`` summed over the instructions
:func:`block_steps` gives for them, the same steps emission writes; at OVERLAP = 1 the ranking
is by those serial cycles still (the list scheduler, compiler/schedule.py, reorders the
program afterwards). On the decoupled machine (OVERLAP = 2) each candidate's instructions run
through the machine's issue rule on their own (:func:`run_cycles`: the station lets a block's
loads run beside the MMs of the one before, so a blocking with more, smaller loads can beat one
with fewer latencies in all); ties go to the fewer serial cycles. Then to a separate
accumulator, the smaller footprint, fewer streams. Emission (:mod:`compiler.streaming`) takes
the first candidate that fits the scratchpad as it is at that step.

The steps are data (:class:`Step`: an instruction, the block it belongs to, and the spans
of memory it reads and writes), so that a scheduler can reorder or overlap them.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import NamedTuple

from sim.spec import (
    BY_NAME,
    ENTER_DISPATCH_CYCLES,
    INT8_PER_WORD,
    OVERLAP_FRONTEND_CYCLES,
    STOP_CYCLES,
    Mem,
    Params,
    issue_rule,
    latency,
)

from .lowering.matmul import mm_pieces, strided_mm_fields, tiles
from .packing import aligned


@dataclass(frozen=True)
class Whole:
    """What bringing one operand whole into the scratchpad costs at a matmul's step.

    Attributes:
        words: scratchpad words it holds from then on (its buffer).
        transient: words held only while it loads (an int4 weight's packed words).
        cycles: cycles of its loading instructions (``sim.spec.latency``).
        moved: words the DMA moves for it.
        instructions: how many loading instructions.
    """

    words: int = 0
    transient: int = 0
    cycles: int = 0
    moved: int = 0
    instructions: int = 0


IN_PLACE = Whole()
"""An operand already in the scratchpad: bringing it costs nothing."""


@dataclass(frozen=True)
class Matmul:
    """A matmul step as the blocking sees it.

    Attributes:
        node: the matmul's node id.
        m, k, n: A is m x k, B is k x n (stored n x k when ``transpose_b``), the result m x n.
        transpose_b: B is read transposed (MM's tb).
        a, b: what bringing A and B whole costs at this step (:data:`IN_PLACE` when there).
        a_streams, b_streams: the operand may stream from external memory instead.
        b_panels: B may be stored in column panels (it is not transposed, and this matmul
            is its only reader); else a block of a non-transposed B is gathered row by row.
        out: words of the result's buffer that this step places (0: placed already).
        bias: a bias is loaded into each row of the accumulator first (compiler/bias.py).
        k_max: the machine's K_MAX (the MMs are cut along K into pieces of at most k_max).
        a_packed, b_packed: the operand is stored packed four int8 to an external word
            (:mod:`compiler.packing`): its streamed blocks load with LD fmt = 1 and must start
            at an element offset that is a multiple of four (:func:`packed_aligned`).
    """

    node: int
    m: int
    k: int
    n: int
    transpose_b: bool = False
    a: Whole = IN_PLACE
    b: Whole = IN_PLACE
    a_streams: bool = False
    b_streams: bool = False
    b_panels: bool = False
    out: int = 0
    bias: bool = False
    k_max: int = 1 << 16
    a_packed: bool = False
    b_packed: bool = False


class Workspace(NamedTuple):
    """A blocked step's temporaries in one allocation: total words, then each part's offset."""

    words: int
    acc: int
    a_block: int
    b_block: int


class Places(NamedTuple):
    """The addresses a blocked step's instructions use (scratchpad, then external memory).

    a and b are the operands when whole (ignored for a streamed one); acc, a_block, b_block
    the workspace's parts (acc is the output when the sums go there); out the result; a_ext
    and b_ext the streamed operands' regions, bias_ext the bias's; work the workspace's first
    word; b_block2, when not -1, a second B block (double buffering, on a machine whose engines
    run side by side: compiler/streaming.py): the loads of B alternate between the two, so the
    next block's load can run beside the MMs of this one; with ``b_ring`` > 2, the loads go
    round b_block, b_block2, b_block2 + b_step, ... (b_ring blocks: every block of B in a
    place of its own when b_ring is the number of B loads, so no load waits for an MM).
    """

    a: int = 0
    b: int = 0
    acc: int = 0
    a_block: int = 0
    b_block: int = 0
    out: int = 0
    a_ext: int = 0
    b_ext: int = 0
    bias_ext: int = 0
    work: int = 0
    b_block2: int = -1
    b_ring: int = 2
    b_step: int = 0


class Span(NamedTuple):
    """A run of words an instruction reads or writes: memory, first word, words, written."""

    mem: Mem
    start: int
    words: int
    writes: bool


class Step(NamedTuple):
    """One instruction of a blocked step: mnemonic, fields, what it does (``load A``,
    ``load B``, ``tile``, ``requantize``) and its block (row block, column block)."""

    op: str
    fields: dict[str, int]
    role: str
    block: tuple[int, int]

    def spans(self) -> list[Span]:
        """What it reads and writes, from its instruction's regions in ``sim.spec``: what a
        scheduler needs to tell which steps may be reordered or overlapped."""
        spec = BY_NAME[self.op]
        return [Span(r.mem, self.fields[r.start], int(r.extent(self.fields)), r.writes) for r in spec.regions]


@dataclass(frozen=True)
class Blocking:
    """One way to run a matmul step, and what it costs.

    Attributes:
        rows: output rows per row block (a multiple of T, or m).
        cols: columns per column block (a multiple of T, or n); n when B does not stream.
        stream_a, stream_b: the operands that stream from external memory.
        row_blocks, col_blocks: how many blocks of each.
        cycles: the step's cycles, exact: ``sim.spec.latency`` summed over its instructions,
            the whole loads of its operands included.
        footprint: scratchpad words it needs at its peak.
        workspace: words of its temporaries (accumulator, A block, B block).
        moved: words its loads write to the scratchpad (what their cycles count; a packed
            load, LD fmt = 1, reads a quarter as many external words).
        b_loads: LDs of B (one per block, or k per block when gathered; again for each row
            block when there are several column blocks; 0 when B does not stream).
        instructions: how many instructions it writes (whole loads of operands included).
        b_how: how a streamed B's blocks are laid out when narrower than B: ``in panels``,
            ``gathered row by row``, or '' (transposed, or one block: contiguous anyway).
        depth: rows of a streamed B per block (a multiple of K_MAX, or k; 0 means k): a
            column block of B is loaded in pieces of ``depth`` rows, the MMs of each piece
            adding into the accumulator before the next piece is loaded (:func:`depth_blocks`).
        acc_in_out: the accumulator of each row block is the output's own rows (rows x n
            words, as many as the int32 sums need: one word per element either way), and its
            RQ requantizes them in place (GA2.md section 3 allows RQ's dst == src); else a
            separate accumulator in the workspace.
        run_cycles: on the decoupled machine (OVERLAP = 2), the ``cycles`` counter of the step's
            instructions alone, whole loads first, through its issue rule (:func:`run_cycles`:
            the engines overlap, so the sum of latencies is not what it costs there); 0 on the
            other machines, where the ranking is by ``cycles`` (at OVERLAP = 1 too: issue 27),
            and for a candidate the budget did not run (:func:`by_run_cycles`).
    """

    rows: int
    cols: int
    stream_a: bool
    stream_b: bool
    row_blocks: int
    col_blocks: int
    cycles: int
    footprint: int
    workspace: int
    moved: int
    b_loads: int
    instructions: int
    b_how: str = ""
    depth: int = 0
    acc_in_out: bool = False
    run_cycles: int = 0

    @property
    def whole(self) -> bool:
        """The unblocked way: both operands whole, one accumulator for the whole product."""
        return self.row_blocks == self.col_blocks == 1 and not (self.stream_a or self.stream_b)

    def describe(self) -> str:
        """``1 x 4 blocks of 16 x 16 (A whole, B streams in panels, 4 loads)``."""
        blocks = "block" if self.row_blocks * self.col_blocks == 1 else "blocks"
        a = "A streams" if self.stream_a else "A whole"
        loads = f"{self.b_loads} load{'s' if self.b_loads != 1 else ''}"
        how = f" {self.b_how}" if self.b_how else ""
        deep = f" in pieces of {self.depth} rows" if self.depth else ""
        b = f"B streams{how}{deep}, {loads}" if self.stream_b else "B whole"
        acc = ", sums in the output's rows" if self.acc_in_out else ""
        return f"{self.row_blocks} x {self.col_blocks} {blocks} of {self.rows} x {self.cols} ({a}, {b}{acc})"


@dataclass(frozen=True)
class Ranking:
    """How emission chose a matmul's blocking (``Program.rankings``, ``Program.explain()``).

    Attributes:
        considered: the candidates :func:`rank_blockings` enumerated (every legal blocking).
        too_big: of them, those whose footprint is more than the free scratchpad words.
        too_long: of those that fit, the ones with more instructions than the instruction
            memory had room for.
        failed: of the rest, the ones whose allocations failed (the free words are in pieces).
        free: the free scratchpad words at the step; room: the free instruction words.
        best: the first few candidates by rank (cycles, then the tie-breaks), fitting or not.
        chosen: the blocking written, and its place in the ranking (1 = the fastest of all).
        step: the matmul step as the ranking saw it (what :func:`run_cycles` times again).
    """

    considered: int
    too_big: int
    too_long: int
    failed: int
    free: int
    room: int
    best: tuple[Blocking, ...]
    chosen: Blocking
    chosen_rank: int
    step: Matmul | None = None


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def block_sizes(total: int, t: int) -> list[int]:
    """Block sizes worth trying for ``total`` rows or columns on a t x t array, largest
    first: for each number of blocks, the smallest multiple of t that covers ``total`` in that
    many blocks (capped at ``total``); any other size needs as many blocks and more words."""
    count = ceil_div(total, t)
    return sorted({min(total, t * ceil_div(count, c)) for c in range(1, count + 1)}, reverse=True)


def workspace(mm: Matmul, rows: int, cols: int, stream_a: bool, stream_b: bool,
              depth: int = 0, acc_in_out: bool = False) -> Workspace:
    """The temporaries of a blocked step: the int32 accumulator of a row block (rows x n;
    none when it is the output's rows, ``acc_in_out``), the A block (rows x k) when A
    streams, the B block (depth x cols; depth 0 is k) when B streams, in that order in one
    allocation."""
    acc = 0 if acc_in_out else rows * mm.n
    a_block = rows * mm.k if stream_a else 0
    b_block = cols * (depth or mm.k) if stream_b else 0
    return Workspace(acc + a_block + b_block, 0, acc, acc + a_block)


def footprint(mm: Matmul, words: int, stream_a: bool, stream_b: bool) -> int:
    """The peak of the words a step holds: operands loaded whole (A, then B, each with its
    transient words while it loads), then the result's buffer and ``words`` of workspace."""
    a = IN_PLACE if stream_a else mm.a
    b = IN_PLACE if stream_b else mm.b
    return max(a.words + a.transient, a.words + b.words + b.transient, a.words + b.words + mm.out + words)


def block_src(region: int, first: int, k: int, packed: bool = False, skip: int = 0) -> int:
    """External address of the block that starts at row ``first`` of A, or at column
    ``first`` of B: every row of A, every stored row of a transposed B and every column of a
    panel-stored B holds k elements, and the blocks before it hold ``first`` of them; ``skip``
    more elements into the block (a piece of depth of a panel). Four to a word when ``packed``:
    the offset is then a multiple of four (:func:`packed_aligned`)."""
    return ext_address(region, first * k + skip, packed)


def ext_address(region: int, offset: int, packed: bool) -> int:
    """External address of the element ``offset`` elements into a region (packed: the word
    that holds it, whose byte 0 it must be)."""
    return region + offset // INT8_PER_WORD if packed else region + offset


def ld(dst: int, src: int, words: int, packed: bool) -> dict[str, int]:
    """An LD's fields: ``words`` scratchpad words from ``src`` (LD fmt = 1 when ``packed``)."""
    fields = {"dst": dst, "src": src, "len": words}
    return fields | {"fmt": 1} if packed else fields


def packed_aligned(mm: Matmul, rows: int, cols: int, stream_a: bool, stream_b: bool, depth: int = 0) -> bool:
    """Whether every streamed block of a packed operand starts at byte 0 of an external word
    (:func:`compiler.packing.aligned`): A's row blocks at multiples of rows * k elements; B's
    blocks at j0 * k + k0 * width (column block j0, piece of depth k0, :func:`load_b`), or,
    gathered row by row, at t * n + j0 for every row t of B. An operand loaded whole always is."""
    if stream_a and mm.a_packed and rows < mm.m and not aligned(rows * mm.k):
        return False
    if not (stream_b and mm.b_packed):
        return True
    if cols < mm.n and gathered(mm, cols):
        return aligned(cols) and (mm.k == 1 or aligned(mm.n))
    return all(aligned(j0 * mm.k + k0 * min(cols, mm.n - j0))
               for j0 in range(0, mm.n, cols) for k0, _ in depth_blocks(mm, depth))


def loads_b(row_block: int, col_blocks: int, depth_count: int = 1) -> bool:
    """Whether a streamed B block is loaded at this row block: always for the first; for
    later ones only when there are several column blocks or pieces of depth (one block of
    the whole of B stays in place)."""
    return row_block == 0 or col_blocks > 1 or depth_count > 1


def depth_blocks(mm: Matmul, depth: int) -> list[tuple[int, int]]:
    """(first row, rows) of each piece of depth of a streamed B: ``depth`` rows each (0: one
    piece of all k rows), the last one shorter."""
    step = depth or mm.k
    return [(k0, min(step, mm.k - k0)) for k0 in range(0, mm.k, step)]


def gathered(mm: Matmul, width: int) -> bool:
    """Whether a column block of B ``width`` wide is gathered row by row (k LDs): B is not
    transposed, not stored in panels, and the block is not the whole of B."""
    return not (mm.transpose_b or mm.b_panels or width == mm.n)


class Block(NamedTuple):
    """One block of a blocked step: its row and column block indices, first row and column,
    height and width, and what happens around it: A's rows are loaded (the first block of
    a row block, when A streams), B's block is loaded, the row block's RQ follows (its last
    block)."""

    r: int
    c: int
    i0: int
    j0: int
    height: int
    width: int
    load_a: bool
    load_b: bool
    last: bool


def blocks(mm: Matmul, rows: int, cols: int, stream_a: bool, stream_b: bool,
           depth: int = 0) -> Iterator[Block]:
    """The blocks of a step in order: row blocks outer, column blocks inner (pieces of depth
    innermost, :func:`depth_blocks`)."""
    col_blocks = ceil_div(mm.n, cols)
    pieces = len(depth_blocks(mm, depth))
    for r, i0 in enumerate(range(0, mm.m, rows)):
        for c, j0 in enumerate(range(0, mm.n, cols)):
            yield Block(r, c, i0, j0, min(rows, mm.m - i0), min(cols, mm.n - j0), stream_a and c == 0,
                        stream_b and loads_b(r, col_blocks, pieces), c == col_blocks - 1)


def load_b(mm: Matmul, at: Places, blk: Block, k0: int = 0, rows: int = 0) -> Iterator[Step]:
    """The LDs of a block of B, rows k0..k0+rows-1 of it (rows 0: all k): one when it is
    contiguous in external memory (B transposed, stored in panels, or the whole of B: a
    panel's rows follow each other, ``blk.width`` elements each), else one per row of B
    (:func:`gathered`)."""
    where = (blk.r, blk.c)
    packed = mm.b_packed
    rows = rows or mm.k
    if not gathered(mm, blk.width):
        src = block_src(at.b_ext, blk.j0, mm.k, packed, k0 * blk.width)
        yield Step("LD", ld(at.b_block, src, blk.width * rows, packed), "load B", where)
        return
    for t in range(k0, k0 + rows):
        src = ext_address(at.b_ext, t * mm.n + blk.j0, packed)
        yield Step("LD", ld(at.b_block + (t - k0) * blk.width, src, blk.width, packed), "load B", where)


def block_steps(mm: Matmul, rows: int, cols: int, stream_a: bool, stream_b: bool, at: Places,
                requantizer: tuple[int, int, int], t: int, depth: int = 0,
                acc_in_out: bool = False) -> Iterator[Step]:
    """The instructions of a blocked step, in order.

    Args:
        mm: the step. rows, cols: the block sizes. stream_a, stream_b: which operands stream.
        at: the addresses. requantizer: (m, s, relu) of the RQs. t: the array's size T.
        depth: rows of a streamed B per piece (0: all k; :func:`depth_blocks`).
        acc_in_out: each row block's sums go to its rows of the output (``at.acc`` is the
            output's address), requantized there in place.
    """
    m_, s_, relu = requantizer
    ring = [at.b_block] + [at.b_block2 + i * at.b_step for i in range(at.b_ring - 1)]
    turn = -1                # the B block the last load of B went to (the first load: b_block)
    b_now = at.b_block
    for blk in blocks(mm, rows, cols, stream_a, stream_b, depth):
        acc = block_acc(mm, at, blk, acc_in_out)
        blk_at = at._replace(acc=acc, b_block=b_now)
        if mm.bias and blk.c == 0:
            for r in range(blk.height):
                yield Step("LD", {"dst": acc + r * mm.n, "src": at.bias_ext, "len": mm.n}, "load bias",
                           (blk.r, 0))
        if blk.load_a:
            src = block_src(at.a_ext, blk.i0, mm.k, mm.a_packed)
            yield Step("LD", ld(at.a_block, src, blk.height * mm.k, mm.a_packed), "load A", (blk.r, 0))
        for k0, count in depth_blocks(mm, depth if stream_b else 0):
            if blk.load_b:
                if at.b_block2 >= 0:
                    turn = (turn + 1) % at.b_ring
                    b_now = ring[turn]
                    blk_at = blk_at._replace(b_block=b_now)
                yield from load_b(mm, blk_at, blk, k0, count)
            yield from block_tiles(mm, blk, blk_at, stream_a, stream_b, t, k0, count)
        if blk.last:
            fields = {"dst": at.out + blk.i0 * mm.n, "src": acc, "len": blk.height * mm.n,
                      "m": m_, "s": s_, "relu": relu}
            yield Step("RQ", fields, "requantize", (blk.r, 0))


def block_acc(mm: Matmul, at: Places, blk: Block, acc_in_out: bool) -> int:
    """The accumulator of a row block: the workspace's (``at.acc``, every row block in turn),
    or, with ``acc_in_out``, the block's own rows of the output (``at.acc`` is the output)."""
    return at.acc + blk.i0 * mm.n if acc_in_out else at.acc


def block_tiles(mm: Matmul, blk: Block, at: Places, stream_a: bool, stream_b: bool, t: int, k0: int,
                count: int) -> Iterator[Step]:
    """The MMs of a block's tiles whose pieces along K (:func:`compiler.lowering.mm_pieces`)
    start in rows k0..k0+count-1 of B: all of them when B is whole or streams whole in depth;
    else those of the piece of B in the B block, whose row k0 is the block's first."""
    tb = mm.transpose_b
    a = at.a_block if stream_a else at.a + blk.i0 * mm.k
    b = at.b_block if stream_b else at.b + (blk.j0 * mm.k if tb else blk.j0)
    ldb = mm.k if tb else (blk.width if stream_b else mm.n)
    shift = k0 * ldb if stream_b and not tb else 0
    for tile in tiles(blk.height, blk.width, t):
        fields = strided_mm_fields(tile, a, b, at.acc + blk.j0, mm.k, ldb, mm.n, tb)
        for piece in mm_pieces(fields, mm.k_max, mm.bias):
            if k0 <= piece["A"] - fields["A"] < k0 + count:
                yield Step("MM", piece | {"B": piece["B"] - shift}, "tile", (blk.r, blk.c))


def tile_cycles(mm: Matmul, params: Params) -> tuple[int, int]:
    """(cycles, count) of the step's MMs: the same for every blocking, because block sizes are
    multiples of T (or the whole), so a blocking's tiles are the whole product's T x T tiles,
    and an MM's latency depends on its M, N, K and tb only."""
    fields = [piece for tile in tiles(mm.m, mm.n, params.T)
              for piece in mm_pieces(strided_mm_fields(tile, 0, 0, 0, mm.k, mm.k, mm.n, mm.transpose_b),
                                     params.K_MAX, mm.bias)]
    return sum(latency(BY_NAME["MM"], f, params) for f in fields), len(fields)


def _moving(op: str, words: int, params: Params) -> int:
    """The latency of an LD, or of an RQ, of ``words`` words (it depends on len only)."""
    fields = {"dst": 0, "src": 0, "len": words}
    if op == "RQ":
        fields |= {"m": 1, "s": 1, "relu": 0}
    return latency(BY_NAME[op], fields, params)


def cost(mm: Matmul, rows: int, cols: int, stream_a: bool, stream_b: bool, params: Params,
         mms: tuple[int, int] | None = None, depth: int = 0, acc_in_out: bool = False) -> Blocking:
    """One candidate with its cycles, footprint and words moved (see :class:`Blocking`).

    The cycles are those of the instructions :func:`block_steps` writes, block by block
    (:func:`blocks`), without writing them: each LD's and RQ's latency depends on its
    length only, and the MMs are :func:`tile_cycles` (``mms``, when the caller has it).
    ``tests/compiler/test_blocking.py`` checks the sum against the instructions.
    """
    space = workspace(mm, rows, cols, stream_a, stream_b, depth, acc_in_out)
    cycles, count = mms or tile_cycles(mm, params)
    moved = b_loads = 0
    pieces = depth_blocks(mm, depth)
    for blk in blocks(mm, rows, cols, stream_a, stream_b, depth):
        loads = []
        if mm.bias and blk.c == 0:
            loads.append((blk.height, mm.n))
        if blk.load_a:
            loads.append((1, blk.height * mm.k))
        for _, height in pieces if blk.load_b else ():
            lds = height if gathered(mm, blk.width) else 1
            loads.append((lds, blk.width * height // lds))
            b_loads += lds
        for lds, words in loads:
            cycles += lds * _moving("LD", words, params)
            moved += lds * words
            count += lds
        if blk.last:
            cycles += _moving("RQ", blk.height * mm.n, params)
            count += 1
    for whole, streams in ((mm.a, stream_a), (mm.b, stream_b)):
        if not streams:
            cycles += whole.cycles
            moved += whole.moved
            count += whole.instructions
    how = ""
    if stream_b and cols < mm.n and not mm.transpose_b:
        how = "in panels" if mm.b_panels else "gathered row by row"
    return Blocking(rows, cols, stream_a, stream_b, ceil_div(mm.m, rows), ceil_div(mm.n, cols), cycles,
                    footprint(mm, space.words, stream_a, stream_b), space.words, moved, b_loads, count, how,
                    depth, acc_in_out)


def depths(mm: Matmul, stream_b: bool) -> list[int]:
    """The depths worth trying for a streamed B (0: all k rows at once, then multiples of
    k_max, largest first, :func:`block_sizes`); only 0 when B is whole, or read transposed
    (its stored rows hold all of k), or k fits one MM."""
    if not stream_b or mm.transpose_b or mm.k <= mm.k_max:
        return [0]
    return [0] + [d for d in block_sizes(mm.k, mm.k_max) if d < mm.k]


def streams_all(mm: Matmul, stream_a: bool, stream_b: bool) -> bool:
    """Whether every operand that may stream does (and one does): only then may the sums go to
    the output's rows. Emission takes the fastest blocking that fits *now*, and an operand
    loaded whole stays until its last reader; the words the output's rows save must not buy
    a whole operand that starves the steps after this one."""
    return (stream_a or stream_b) and stream_a == mm.a_streams and stream_b == mm.b_streams


def rank_blockings(mm: Matmul, params: Params, within: int | None = None) -> list[Blocking]:
    """Every candidate blocking of a matmul step, fewest cycles first (then a separate
    accumulator before the output's rows, so that a step that fits as it always did is written
    as it always was; then the smaller footprint, then fewer streams). The first is the
    unblocked way, or as fast as it. The cycles are those of the machine ``params``: on the
    decoupled machine (OVERLAP = 2) each candidate's ``run_cycles`` (:func:`by_run_cycles`),
    elsewhere the sum of its latencies (at OVERLAP = 1 too: the list scheduler reorders later).

    Args:
        within: if given, only the candidates whose footprint is at most this many words.
    """
    found = []
    mms = tile_cycles(mm, params)
    for stream_a in (False, True) if mm.a_streams else (False,):
        for stream_b in (False, True) if mm.b_streams else (False,):
            widths = block_sizes(mm.n, params.T) if stream_b else [mm.n]
            sums = (False, True) if streams_all(mm, stream_a, stream_b) else (False,)
            for rows, cols, depth, in_out in itertools.product(block_sizes(mm.m, params.T), widths,
                                                               depths(mm, stream_b), sums):
                words = workspace(mm, rows, cols, stream_a, stream_b, depth, in_out).words
                if not packed_aligned(mm, rows, cols, stream_a, stream_b, depth):
                    continue
                if within is None or footprint(mm, words, stream_a, stream_b) <= within:
                    found.append(cost(mm, rows, cols, stream_a, stream_b, params, mms, depth, in_out))
    found.sort(key=serial_key)
    return by_run_cycles(found, mm, params, mms[0]) if params.OVERLAP == 2 else found


def serial_key(b: Blocking) -> tuple[int, bool, int, int]:
    """The serial ranking: fewest cycles, a separate accumulator first, smaller footprint, fewer streams."""
    return b.cycles, b.acc_in_out, b.footprint, b.stream_a + b.stream_b


RUN_BUDGET = 20_000
"""OVERLAP = 2: at most this many instructions (of the candidates, in all) run through the
decoupled rule per step, about a second and a half (a 64 x 64 by 64 x 256 product has 329
candidates of 364,523 instructions: 20 s); the first candidate runs whatever its size."""


def run_floor(mm: Matmul, b: Blocking, params: Params, mxu: int) -> int:
    """A lower bound of a candidate's :func:`run_cycles` on the decoupled machine: its first
    instruction is dispatched OVERLAP_FRONTEND_CYCLES + ENTER_DISPATCH_CYCLES after start at the
    earliest, and each engine runs its own one at a time: the MXU its tiles (``mxu``), the vector
    unit its RQs, the DMA its streaming loads (the serial cycles less those and the whole loads);
    then the stop."""
    rq = sum(_moving("RQ", min(b.rows, mm.m - i0) * mm.n, params) for i0 in range(0, mm.m, b.rows))
    whole = sum(w.cycles for w, streams in ((mm.a, b.stream_a), (mm.b, b.stream_b)) if not streams)
    first = OVERLAP_FRONTEND_CYCLES + ENTER_DISPATCH_CYCLES
    return first + max(mxu, rq, b.cycles - mxu - rq - whole) + STOP_CYCLES


def by_run_cycles(found: list[Blocking], mm: Matmul, params: Params, mxu: int) -> list[Blocking]:
    """The candidates ``found`` ranked on the decoupled machine (OVERLAP = 2): in the order of
    :func:`run_floor` (then :func:`serial_key`), each is run (:func:`run_cycles`, its
    ``run_cycles`` set) until RUN_BUDGET instructions have run; those ranked by their run cycles
    (then the serial key), the others after them in the floor's order (``run_cycles`` 0: a
    product that large has its best found among the ones the budget ran)."""
    floors = {id(b): run_floor(mm, b, params, mxu) for b in found}
    pending = sorted(found, key=lambda b: (floors[id(b)], *serial_key(b)))
    timed, spent = [], 0
    while pending and (not timed or spent + pending[0].instructions <= RUN_BUDGET):
        b = pending.pop(0)
        spent += b.instructions
        timed.append(replace(b, run_cycles=run_cycles(mm, b, params)))
    return sorted(timed, key=lambda b: (b.run_cycles, *serial_key(b))) + pending


def step_places(mm: Matmul, choice: Blocking, double: bool) -> Places:
    """A layout of a step's own, for timing it (:func:`run_cycles`): in the scratchpad A, B, the
    result and the workspace one after the other (a second B block after it when ``double``),
    in external memory A, B and the bias likewise; as emission places them, apart, so that only
    the step's own dependences order its instructions."""
    a, b = 0, mm.m * mm.k
    out = b + mm.k * mm.n
    space = workspace(mm, choice.rows, choice.cols, choice.stream_a, choice.stream_b, choice.depth,
                      choice.acc_in_out)
    work = out + mm.m * mm.n
    acc = out if choice.acc_in_out else work + space.acc
    second = work + space.words if double else -1
    return Places(a, b, acc, work + space.a_block, work + space.b_block, out, 0, mm.m * mm.k,
                  mm.m * mm.k + mm.k * mm.n, work, second, 2, space.words - space.b_block)


def whole_loads(mm: Matmul, choice: Blocking, at: Places) -> Iterator[tuple[str, dict[str, int]]]:
    """The instructions that bring the operands the step keeps whole (:class:`Whole`): an LD of
    its words, or an int4 weight's LD of its packed words then its UNPACK."""
    spare = at.work + 2 * choice.workspace + mm.a.transient + mm.b.transient
    for whole, streams, dst in ((mm.a, choice.stream_a, at.a), (mm.b, choice.stream_b, at.b)):
        if streams or not whole.instructions:
            continue
        if whole.instructions == 1:
            yield "LD", {"dst": dst, "src": 0, "len": whole.moved}
        else:
            yield "LD", {"dst": spare, "src": 0, "len": whole.moved}
            yield "UNPACK", {"dst": dst, "src": spare, "len": whole.moved}


def step_code(mm: Matmul, choice: Blocking, params: Params) -> list[tuple[str, dict[str, int]]]:
    """A candidate's instructions (mnemonic, fields) as :func:`run_cycles` times them: the whole
    loads (:func:`whole_loads`), then :func:`block_steps` at :func:`step_places` (a streamed B
    double buffered, as emission first tries on a machine whose engines overlap); the
    requantizer (1, 1, no relu), whose fields change no latency."""
    at = step_places(mm, choice, choice.stream_b)
    steps = block_steps(mm, choice.rows, choice.cols, choice.stream_a, choice.stream_b, at, (1, 1, 0),
                        params.T, choice.depth, choice.acc_in_out)
    return [*whole_loads(mm, choice, at), *((s.op, s.fields) for s in steps)]


def run_cycles(mm: Matmul, choice: Blocking, params: Params) -> int:
    """The ``cycles`` counter of a candidate's instructions alone (:func:`step_code`, then the
    stop) by the issue rule of the machine ``params`` (``sim.spec.issue_rule``: at OVERLAP = 2 the
    decoupled machine's). ``tests/compiler/test_blocking_decoupled.py`` checks it against the
    reference machine."""
    rule = issue_rule(params)
    for pc, (op, fields) in enumerate(step_code(mm, choice, params)):
        rule.place(pc, BY_NAME[op], fields)
    return rule.stop() + STOP_CYCLES
