"""A matmul: an int32 accumulator (a bias loaded into each of its rows first), one MM per T x T
output tile cut into pieces of at most K_MAX along K, then one RQ into the output (with the relu
flag when a relu was fused); at OVERLAP = 1 one RQ per block of T output rows. This is the step
when its operands fit the scratchpad whole; :mod:`compiler.streaming` decides whether they do and
blocks the step when they do not (:mod:`compiler.blocking`, which writes its MMs with the fields
below)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple

from sim.spec import CHAIN_STRIDE_BITS, Params

from ..bias import bias_levels, has_bias, region_name
from ..ops.matmul import chains, entry_region
from ..requant import matmul_factor, requantizer
from .emitter import fused_relu

if TYPE_CHECKING:
    from ..layout import ExtEntry
    from ..node import Node
    from .emitter import Emitter


class Tile(NamedTuple):
    """One output tile of a product: first row and column, rows and columns."""

    row: int
    col: int
    rows: int
    cols: int


def tiles(rows: int, cols: int, t: int) -> Iterator[Tile]:
    """The output tiles of a rows x cols product on a t x t array, tile rows outer."""
    for i0 in range(0, rows, t):
        for j0 in range(0, cols, t):
            yield Tile(i0, j0, min(t, rows - i0), min(t, cols - j0))


def mm_fields(tile: Tile, a: int, b: int, acc: int, k: int, n: int, transpose: bool) -> dict[str, int]:
    """The MM of one output tile of a (m, k) times b (k, n) (b stored (n, k) when
    ``transpose``) into the int32 accumulator ``acc`` (m, n); all matrices row by row."""
    return strided_mm_fields(tile, a, b, acc, k, k if transpose else n, n, transpose)


def strided_mm_fields(tile: Tile, a: int, b: int, acc: int, k: int, ldb: int, ldc: int,
                      transpose: bool) -> dict[str, int]:
    """The MM of one output tile when B and the accumulator have row strides of their own:
    a (m, k) row by row; b (k, .) with rows ``ldb`` words apart (stored (., k) with rows
    ``ldb`` apart when ``transpose``); the accumulator's rows ``ldc`` words apart. The tile's
    row and column are counted from a, b and acc (a blocked matmul passes a block's corner)."""
    return {"dst": acc + tile.row * ldc + tile.col, "A": a + tile.row * k,
            "B": b + (tile.col * ldb if transpose else tile.col), "M": tile.rows, "K": k, "N": tile.cols,
            "tb": int(transpose), "lda": k, "ldb": ldb, "ldc": ldc}


def mm_pieces(fields: dict[str, int], k_max: int, onto: bool = False) -> list[dict[str, int]]:
    """One tile's MM cut along K into pieces of at most ``k_max`` (GA2.md section 3: MM acc):
    the first overwrites the accumulator tile (acc = 0) unless ``onto`` (a bias is there
    already), every later one adds into it (acc = 1), so the sum is the unsplit product
    exactly, in int32. A piece starts k0 columns into A's rows and k0 rows into B (k0 columns
    into B^T's rows)."""
    k = fields["K"]
    pieces = []
    for k0 in range(0, k, k_max):
        piece = dict(fields)
        piece["K"] = min(k_max, k - k0)
        piece["A"] = fields["A"] + k0
        piece["B"] = fields["B"] + (k0 if fields["tb"] else k0 * fields["ldb"])
        piece["acc"] = int(bool(k0) or onto)
        pieces.append(piece)
    return pieces


def bias_rows(acc: int, rows: int, cols: int, entry: ExtEntry) -> Iterator[dict[str, int]]:
    """The LDs that put a bias (``entry``: cols int32 words) into each of ``rows`` rows of an
    accumulator at ``acc`` (rows ``cols`` words apart)."""
    for r in range(rows):
        yield {"dst": acc + r * cols, "src": entry.addr, "len": cols}


def lower_matmul(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    """The step with both operands in the scratchpad at ``operands`` (see the module docstring)."""
    a_addr, b_addr = operands
    m, k = em.nodes[node.ins[0]].shape
    n = node.shape[1]
    if em.chain and chainable(em.params, k, n):
        lower_chained(em, node, a_addr, b_addr)
        return
    out = em.address(node.id)
    acc = em.alloc.alloc(m * n, f"accumulator of node {node.id}")
    biased = has_bias(node)
    if biased:
        for fields in bias_rows(acc, m, n, em.ext[region_name(node)]):
            em.put("LD", **fields)
    m_, s_, relu = matmul_requantizer(em, node)
    # with the engines side by side (OVERLAP = 1) each block of T output rows is requantized as
    # soon as its tiles are done, so that its RQ runs beside the next block's MMs (and a next
    # matmul's MMs of those rows can start); the serial machine requantizes once, at the end
    row_rq = bool(em.params.OVERLAP) and m > em.params.T
    for tile in tiles(m, n, em.params.T):
        for piece in mm_pieces(mm_fields(tile, a_addr, b_addr, acc, k, n, node.transpose_b), em.params.K_MAX,
                               biased):
            em.put("MM", **piece)
        if row_rq and tile.col + tile.cols == n:
            em.put("RQ", dst=out + tile.row * n, src=acc + tile.row * n, len=tile.rows * n, m=m_, s=s_,
                   relu=relu)
    if not row_rq:
        em.put("RQ", dst=out, src=acc, len=m * n, m=m_, s=s_, relu=relu)
    em.alloc.release(acc, m * n, f"accumulator of node {node.id}")


def matmul_requantizer(em: Emitter, node: Node) -> tuple[int, int, int]:
    """A matmul's requantizer (m, s) and relu flag; (m, s) is recorded in ``em.requantizers``."""
    a_id, b_id = node.ins
    if has_bias(node):
        bias_levels(node, em.nodes, em.scales)   # refused here when it does not fit the accumulator
    factor = matmul_factor(node.factor, em.scales[a_id], em.scales[b_id], em.scales[node.id])
    m_, s_ = requantizer(factor, f"matmul node {node.id}", node.id, em.params)
    em.requantizers[node.id] = (m_, s_)
    return m_, s_, int(fused_relu(em, node))


def chainable(params: Params, k: int, n: int) -> bool:
    """Whether a matmul of inner dimension k and n columns, its operands and result row by row,
    lowers to MMRQs: the machine has them (OVERLAP = 2) and every stride (k, n) fits the 12 bits
    of MMRQ's stride fields (``sim.spec.CHAIN_STRIDE_BITS``)."""
    return chains(None, params) and max(k, n) < 1 << CHAIN_STRIDE_BITS


def chained_fields(piece: dict[str, int], entry: int, relu: int) -> dict[str, int]:
    """The MMRQ of a tile's last piece along K (:func:`mm_pieces`: acc = 1 when a bias or an
    earlier piece is in the output words), requantized per tensor by the one entry at ``entry``."""
    return {**piece, "tab": entry, "pc": 0, "relu": relu}


def lower_chained(em: Emitter, node: Node, a_addr: int, b_addr: int) -> None:
    """The step on a machine with MMRQ (OVERLAP = 2, GA2.md section 7): no int32 accumulator and
    no RQ. The bias is loaded into each row of the output itself (one int32 word each); each
    tile's MM pieces along K (:func:`mm_pieces`) add into it, and the last piece is an MMRQ that
    adds, requantizes with the matmul's (m, s) (one table word, loaded from its external entry,
    ``compiler.ops.matmul.REQUANT_ENTRY``) and writes the tile's int8 results in place, the relu
    flag set when a relu was fused. So a layer's tile is one instruction, not an MM and an RQ
    that waits for it; the results equal MM + RQ's exactly (the same int32 sum, the same pair)."""
    m, k = em.nodes[node.ins[0]].shape
    n = node.shape[1]
    out = em.address(node.id)
    entry = em.alloc.alloc(1, f"requantizer entry of node {node.id}")
    em.put("LD", dst=entry, src=em.ext[entry_region(node)].addr, len=1)
    biased = has_bias(node)
    if biased:
        for fields in bias_rows(out, m, n, em.ext[region_name(node)]):
            em.put("LD", **fields)
    relu = matmul_requantizer(em, node)[2]
    for tile in tiles(m, n, em.params.T):
        pieces = mm_pieces(mm_fields(tile, a_addr, b_addr, out, k, n, node.transpose_b), em.params.K_MAX,
                           biased)
        for piece in pieces[:-1]:
            em.put("MM", **piece)
        em.put("MMRQ", **chained_fields(pieces[-1], entry, relu))
    em.alloc.release(entry, 1, f"requantizer entry of node {node.id}")
