"""The lowering of each operation to GA-2 instructions: the ``lower`` hooks of the table.

Contract: a hook takes the emitter (:class:`Emitter`: it allocates, gives addresses and
collects instructions and requantizer pairs), the node and its operands' scratchpad
addresses, and writes the node's instructions. The order below is the seed's (chapter 11)
and fixes every address:

* input, weight (:func:`lower_load`): run by the emitter just before the first step that
  reads them: the buffer, then LD; an int4 weight is loaded packed into a temporary and
  expanded by UNPACK;
* slice, concat, fused relu (:func:`lower_view`, :func:`lower_relu`): the buffer, no
  instruction (an unfused relu: one identity RQ with relu = 1, in place);
* matmul: the output buffer, then an int32 accumulator (a bias loaded into each of its rows
  first, :mod:`compiler.bias`); one MM per T x T output tile (tile rows outer, tile columns
  inner; edge tiles smaller), cut into pieces of at most K_MAX along K that add into the
  tile (MM acc = 1), then one RQ into the output (with the relu flag when a relu was
  fused), then the accumulator is released. When its
  operands do not fit the scratchpad whole, :mod:`compiler.streaming` blocks the step;
* softmax: the output buffer, a Q16 temporary, one SM per row, one RQ to the 1/127 scale;
* add: for each operand whose scale differs from the sum's, a temporary and an RQ that
  rescales it (int8 to int8); then the output buffer and one VADD (with the relu flag when a
  relu was fused); the temporaries go;
* argmax: the output buffer, one AMAX per row;
* output: one ST to the output's external region.

The fields of each instruction come from a small function of their own (:func:`mm_fields`,
:func:`sm_fields`, ...), and the requantizer factors from :mod:`compiler.requant`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

from sim.spec import BY_NAME, LUT_TABLE_WORDS, Params

from .bias import bias_levels, has_bias, region_name
from .int4 import is_int4
from .requant import matmul_factor, requantizer, rescale_factor, softmax_factor
from .tables import region_name as table_region
from .tables import table_levels

if TYPE_CHECKING:
    from .allocator import Allocator
    from .ir import Node
    from .layout import ExtEntry

ADD_SAME_SCALE = 1e-9
"""An add operand whose scale is within this relative distance of the sum's is not rescaled."""

RequantKey = int | tuple[int, int]
"""A requantizer is keyed by its node id, or by (add node id, operand index) for a rescale."""


class Emitter(Protocol):
    """What a lowering hook uses of the emitter (:class:`compiler.emit.Emitter`)."""

    nodes: Sequence[Node]
    scales: Mapping[int, float]
    fused: set[int]
    ext: Mapping[str, ExtEntry]
    params: Params
    alloc: Allocator
    requantizers: dict[RequantKey, tuple[int, int]]

    def put(self, op: str, **fields: int) -> None: ...

    def address(self, nid: int) -> int: ...


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


# --------------------------------------------------------------------------- instruction fields


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


def sm_fields(row: int, dst: int, src: int, cols: int) -> dict[str, int]:
    """The SM of one row of a (rows, cols) tensor at ``src`` into Q16 values at ``dst``."""
    return {"dst": dst + row * cols, "src": src + row * cols, "len": cols}


def amax_fields(row: int, dst: int, src: int, cols: int) -> dict[str, int]:
    """The AMAX of one row of a (rows, cols) tensor at ``src``; its index goes to word ``dst + row``."""
    return {"dst": dst + row, "src": src + row * cols, "len": cols}


def ld_fields(entry: ExtEntry, dst: int) -> dict[str, int]:
    """The LD of an external region (all its words; all its elements when packed, LD fmt = 1,
    :mod:`compiler.packing`) to scratchpad address ``dst``."""
    if entry.fmt:
        return {"dst": dst, "src": entry.addr, "len": entry.elements, "fmt": entry.fmt}
    return {"dst": dst, "src": entry.addr, "len": entry.words}


def st_fields(entry: ExtEntry, src: int) -> dict[str, int]:
    """The ST of a tensor at scratchpad address ``src`` to its external region (all its words)."""
    return {"src": src, "dst": entry.addr, "len": entry.words}


def fused_relu(em: Emitter, node: Node) -> bool:
    """Whether a matmul's RQ or an add's VADD applies the relu fused into it (:mod:`compiler.fusion`)."""
    return node.id in em.fused


def needs_rescale(ratio: float) -> bool:
    """Whether an add operand at ``ratio`` times the sum's scale must be rescaled first."""
    return abs(ratio - 1) >= ADD_SAME_SCALE


# --------------------------------------------------------------------------- the hooks


def lower_load(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    """An input or weight: LD into its buffer (int4: LD packed words into a temporary, UNPACK)."""
    dst = em.address(node.id)
    entry = em.ext[node.name]
    if not is_int4(node):
        em.put("LD", **ld_fields(entry, dst))
        return
    what = f"packed int4 words of node {node.id}"
    tmp = em.alloc.alloc(entry.words, what)
    em.put("LD", **ld_fields(entry, tmp))
    em.put("UNPACK", dst=dst, src=tmp, len=entry.words)
    em.alloc.release(tmp, entry.words, what)


def lower_view(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    """A slice, concatenation or fused relu: its buffer (if not allocated yet), no instruction:
    the nodes it reads write their values in place."""
    em.address(node.id)


IDENTITY_SHIFT = next(f.width for f in BY_NAME["RQ"].fields if f.name == "m") - 1
"""An RQ with m = 2**s and this s (23: the widest power of two the 24-bit m field holds) passes an
int8 level through unchanged: |x| * 2**s plus the rounding term 2**(s-1), shifted right by s, is
|x| (GA2.md section 4)."""


def lower_relu(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    """A relu: fused (the usual case), the relu flag of the instruction that writes its
    operand, and no instruction of its own (:func:`lower_view`); unfused
    (``compile_graph(fuse=False)``), one identity RQ with relu = 1 over its buffer, in place
    (RQ may write its source: sim/spec.py), the second pass that fusion saves."""
    addr = em.address(node.id)
    if node.ins[0] not in em.fused:
        em.put("RQ", dst=addr, src=addr, len=node.words, m=1 << IDENTITY_SHIFT, s=IDENTITY_SHIFT, relu=1)


def lower_matmul(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    a_addr, b_addr = operands
    m, k = em.nodes[node.ins[0]].shape
    n = node.shape[1]
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


def lower_softmax(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    rows, cols = node.shape
    out = em.address(node.id)
    tmp = em.alloc.alloc(rows * cols, f"Q16 probabilities of node {node.id}")
    for r in range(rows):
        em.put("SM", **sm_fields(r, tmp, operands[0], cols))
    m_, s_ = requantizer(softmax_factor(em.scales[node.id]), f"softmax node {node.id}", node.id, em.params)
    em.requantizers[node.id] = (m_, s_)
    em.put("RQ", dst=out, src=tmp, len=rows * cols, m=m_, s=s_, relu=0)
    em.alloc.release(tmp, rows * cols, f"Q16 probabilities of node {node.id}")


def lower_add(em: Emitter, node: Node, operands: Sequence[int]) -> None:
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


def lower_table(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    """A table activation: its table (built from the scales, compiler/tables.py) loaded into a
    temporary, one LUT, the temporary released."""
    table_levels(node, em.scales)   # refused here when the function is not finite on the input
    what = f"table of node {node.id}"
    tmp = em.alloc.alloc(LUT_TABLE_WORDS, what)
    em.put("LD", dst=tmp, src=em.ext[table_region(node)].addr, len=LUT_TABLE_WORDS)
    em.put("LUT", dst=em.address(node.id), src=operands[0], len=node.words, table=tmp)
    em.alloc.release(tmp, LUT_TABLE_WORDS, what)


def lower_argmax(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    out = em.address(node.id)
    rows, cols = em.nodes[node.ins[0]].shape
    for r in range(rows):
        em.put("AMAX", **amax_fields(r, out, operands[0], cols))


def lower_output(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    em.put("ST", **st_fields(em.ext[node.name], operands[0]))
