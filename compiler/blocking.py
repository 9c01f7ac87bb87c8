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
* **B streams**, when it is such a source too, in **column blocks** of ``cols`` columns: one
  LD per block into a B block. Read transposed (stored n x k), a column block is a run of
  whole rows of the stored matrix. Otherwise the compiler stores B in external memory in
  column *panels* of ``cols`` columns, panel after panel, each k x width row by row
  (:func:`compiler.layout.panel_major`), so that one block is one LD and the MM reads it
  with ldb = the block's width; B must then be read by this matmul alone;
* row blocks outer, column blocks inner: with two or more column blocks a streamed B is
  loaded again for every row block (:func:`loads_b`).

A blocked step's temporaries (the accumulator, the A block, the B block) are one
allocation, its *workspace* (:func:`workspace`). Its *footprint* is the peak of the
scratchpad words the step holds: the operands it loads whole, the output's buffer when the
step places it, the workspace.

:func:`rank_blockings` enumerates the candidates (row block sizes x column block sizes x
which operands stream) and ranks them by cycles, exact: ``sim.spec.latency`` summed over the
instructions :func:`block_steps` gives for them, the same steps emission writes (the machine
is serial today, so a program's cycles are the sum of its instructions' latencies). Ties go
to the smaller footprint, then to fewer streams. Emission (:mod:`compiler.streaming`) takes
the first candidate that fits the scratchpad as it is at that step.

The steps are data (:class:`Step`: an instruction and the block it belongs to), so that a
scheduler can later reorder or overlap them (double buffering); none does yet.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

from sim.spec import BY_NAME, Params, latency

from .lowering import strided_mm_fields, tiles


@dataclass(frozen=True)
class Whole:
    """What bringing one operand whole into the scratchpad costs at a matmul's step.

    Attributes:
        words: scratchpad words it holds from then on (its buffer).
        transient: words held only while it loads (an int4 weight's packed words).
        cycles: cycles of its loading instructions (``sim.spec.latency``).
        moved: words the DMA moves for it.
    """

    words: int = 0
    transient: int = 0
    cycles: int = 0
    moved: int = 0


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
            is its only reader).
        out: words of the result's buffer that this step places (0: placed already).
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


class Workspace(NamedTuple):
    """A blocked step's temporaries in one allocation: total words, then each part's offset."""

    words: int
    acc: int
    a_block: int
    b_block: int


class Places(NamedTuple):
    """The addresses a blocked step's instructions use (scratchpad, then external memory).

    a and b are the operands when whole (ignored for a streamed one); acc, a_block, b_block
    the workspace's parts; out the result; a_ext and b_ext the streamed operands' regions.
    """

    a: int = 0
    b: int = 0
    acc: int = 0
    a_block: int = 0
    b_block: int = 0
    out: int = 0
    a_ext: int = 0
    b_ext: int = 0


class Step(NamedTuple):
    """One instruction of a blocked step: mnemonic, fields, what it does (``load A``,
    ``load B``, ``tile``, ``requantize``) and its block (row block, column block)."""

    op: str
    fields: dict[str, int]
    role: str
    block: tuple[int, int]


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
        moved: words its loads move (external memory to scratchpad).
        b_loads: LDs of B blocks (col_blocks, or row_blocks x col_blocks when B is loaded
            again for each row block; 0 when B does not stream).
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

    @property
    def whole(self) -> bool:
        """The unblocked way: both operands whole, one accumulator for the whole product."""
        return self.row_blocks == self.col_blocks == 1 and not (self.stream_a or self.stream_b)

    def describe(self) -> str:
        """``1 x 4 blocks of 16 x 16 (A whole, B streams, 4 loads)``."""
        blocks = "block" if self.row_blocks * self.col_blocks == 1 else "blocks"
        a = "A streams" if self.stream_a else "A whole"
        loads = f"{self.b_loads} load{'s' if self.b_loads != 1 else ''}"
        b = f"B streams, {loads}" if self.stream_b else "B whole"
        return f"{self.row_blocks} x {self.col_blocks} {blocks} of {self.rows} x {self.cols} ({a}, {b})"


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def block_sizes(total: int, t: int) -> list[int]:
    """Block sizes worth trying for ``total`` rows or columns on a t x t array, largest
    first: for each number of blocks, the smallest multiple of t that covers ``total`` in that
    many blocks (capped at ``total``); any other size needs as many blocks and more words."""
    count = ceil_div(total, t)
    return sorted({min(total, t * ceil_div(count, c)) for c in range(1, count + 1)}, reverse=True)


def workspace(mm: Matmul, rows: int, cols: int, stream_a: bool, stream_b: bool) -> Workspace:
    """The temporaries of a blocked step: the int32 accumulator of a row block (rows x n),
    the A block (rows x k) when A streams, the B block (k x cols) when B streams, in that
    order in one allocation."""
    acc = rows * mm.n
    a_block = rows * mm.k if stream_a else 0
    b_block = cols * mm.k if stream_b else 0
    return Workspace(acc + a_block + b_block, 0, acc, acc + a_block)


def footprint(mm: Matmul, words: int, stream_a: bool, stream_b: bool) -> int:
    """The peak of the words a step holds: operands loaded whole (A, then B, each with its
    transient words while it loads), then the result's buffer and ``words`` of workspace."""
    a = IN_PLACE if stream_a else mm.a
    b = IN_PLACE if stream_b else mm.b
    return max(a.words + a.transient, a.words + b.words + b.transient, a.words + b.words + mm.out + words)


def block_src(region: int, first: int, k: int) -> int:
    """External address of the block that starts at row ``first`` of A, or at column
    ``first`` of B: every row of A, every stored row of a transposed B and every column of a
    panel-stored B holds k words, and the blocks before it hold ``first`` of them."""
    return region + first * k


def loads_b(row_block: int, col_blocks: int) -> bool:
    """Whether a streamed B block is loaded at this row block: always for the first; for
    later ones only when there are several column blocks (one block stays in place)."""
    return row_block == 0 or col_blocks > 1


def block_steps(mm: Matmul, rows: int, cols: int, stream_a: bool, stream_b: bool, at: Places,
                requantizer: tuple[int, int, int], t: int) -> Iterator[Step]:
    """The instructions of a blocked step, in order.

    Args:
        mm: the step. rows, cols: the block sizes. stream_a, stream_b: which operands stream.
        at: the addresses. requantizer: (m, s, relu) of the RQs. t: the array's size T.
    """
    col_blocks = ceil_div(mm.n, cols)
    tb = mm.transpose_b
    for r, i0 in enumerate(range(0, mm.m, rows)):
        height = min(rows, mm.m - i0)
        if stream_a:
            src = block_src(at.a_ext, i0, mm.k)
            yield Step("LD", {"dst": at.a_block, "src": src, "len": height * mm.k}, "load A", (r, 0))
        a = at.a_block if stream_a else at.a + i0 * mm.k
        for c, j0 in enumerate(range(0, mm.n, cols)):
            width = min(cols, mm.n - j0)
            if stream_b and loads_b(r, col_blocks):
                src = block_src(at.b_ext, j0, mm.k)
                yield Step("LD", {"dst": at.b_block, "src": src, "len": width * mm.k}, "load B", (r, c))
            b = at.b_block if stream_b else at.b + (j0 * mm.k if tb else j0)
            ldb = mm.k if tb else (width if stream_b else mm.n)
            for tile in tiles(height, width, t):
                fields = strided_mm_fields(tile, a, b, at.acc + j0, mm.k, ldb, mm.n, tb)
                yield Step("MM", fields, "tile", (r, c))
        m_, s_, relu = requantizer
        yield Step("RQ", {"dst": at.out + i0 * mm.n, "src": at.acc, "len": height * mm.n, "m": m_, "s": s_,
                          "relu": relu}, "requantize", (r, 0))


def cost(mm: Matmul, rows: int, cols: int, stream_a: bool, stream_b: bool, params: Params) -> Blocking:
    """One candidate with its cycles, footprint and words moved (see :class:`Blocking`)."""
    space = workspace(mm, rows, cols, stream_a, stream_b)
    cycles = moved = b_loads = 0
    for step in block_steps(mm, rows, cols, stream_a, stream_b, Places(), (1, 1, 0), params.T):
        cycles += latency(BY_NAME[step.op], step.fields, params)
        if step.op == "LD":
            moved += step.fields["len"]
            b_loads += step.role == "load B"
    for whole, streams in ((mm.a, stream_a), (mm.b, stream_b)):
        if not streams:
            cycles += whole.cycles
            moved += whole.moved
    return Blocking(rows, cols, stream_a, stream_b, ceil_div(mm.m, rows), ceil_div(mm.n, cols), cycles,
                    footprint(mm, space.words, stream_a, stream_b), space.words, moved, b_loads)


def rank_blockings(mm: Matmul, params: Params) -> list[Blocking]:
    """Every candidate blocking of a matmul step, fewest cycles first (then the smaller
    footprint, then fewer streams). The first is the unblocked way, or as fast as it.

    Column blocks narrower than n are tried only where a block of B is one LD: B transposed,
    or B stored in panels (``mm.b_panels``).
    """
    found = []
    for stream_a in (False, True) if mm.a_streams else (False,):
        for stream_b in (False, True) if mm.b_streams else (False,):
            blockable = stream_b and (mm.transpose_b or mm.b_panels)
            widths = block_sizes(mm.n, params.T) if blockable else [mm.n]
            for rows in block_sizes(mm.m, params.T):
                for cols in widths:
                    found.append(cost(mm, rows, cols, stream_a, stream_b, params))
    found.sort(key=lambda b: (b.cycles, b.footprint, b.stream_a + b.stream_b))
    return found
