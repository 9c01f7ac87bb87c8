"""A convolution, a max pool and a reshape over images stored rows = pixels, columns = channels
(HWC; docs/guide/conv.md).

conv2d, image by image: a padded convolution first copies the image into the interior of a
padded buffer whose zero border was loaded once (``zeros of node N``; one VADD max of a row with
itself per image row copies it); then per output row an LD of the bias row (W_o x C_out int32)
into the accumulator, and per tile of at most T output pixels x T output channels, per kernel
row ky, the MMs of an implicit GEMM: A starts at the tile's first tap in the padded image with
``lda = s_w * C`` (the k_w pixels of a kernel row are k_w*C consecutive words), K = k_w*C in
pieces of at most K_MAX, B the kernel row's weights ((k_w*C) x C_out, ``ldb = C_out``), all
adding into the tile (MM acc = 1). Then one RQ per image.

maxpool, image by image and output row by output row: VADD max of the window's k_h input rows
into a row of W*C words, then per output pixel VADD max of its k_w pixels of that row.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from ..bias import bias_levels, has_bias, region_name
from ..channels import per_channel
from ..errors import CompileError
from ..ops.conv2d import pairs, table_region, table_words, window_of, zeros_region
from ..ops.window import Window
from .emitter import fused_relu

if TYPE_CHECKING:
    from ..node import Node
    from .emitter import Emitter


def conv_mms(w: Window, src: int, wsrc: int, weights: int, acc: int, cout: int, oy: int, t: int,
             k_max: int, biased: bool) -> Iterator[dict[str, int]]:
    """The MMs of output row ``oy`` (groups = 1) of an image at ``src`` (rows of ``wsrc`` pixels,
    padded or not) into the accumulator row at ``acc``; every MM adds onto the bias when
    ``biased``, else the first segment of a tile overwrites it."""
    k = w.kw * w.C
    for ox in range(0, w.Wo, t):
        for co in range(0, cout, t):
            first = not biased
            for ky in range(w.kh):
                a = src + ((oy * w.sh + ky) * wsrc + ox * w.sw) * w.C
                for k0 in range(0, k, k_max):
                    yield {"dst": acc + ox * cout + co, "A": a + k0, "B": weights + (ky * k + k0) * cout + co,
                           "M": min(t, w.Wo - ox), "K": min(k_max, k - k0), "N": min(t, cout - co), "tb": 0,
                           "lda": w.sw * w.C, "ldb": cout, "ldc": cout, "acc": int(not first)}
                    first = False


def lower_conv2d(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    """The step with x and w in the scratchpad (see the module docstring)."""
    x_addr, w_addr = operands
    w = window_of(node)
    cout = node.shape[1]
    images = em.nodes[node.ins[0]].shape[0] // (w.H * w.W)
    out, row, per_image = em.address(node.id), w.Wo * cout, w.Ho * w.Wo * cout
    acc = em.alloc.alloc(per_image, f"accumulator of node {node.id}")
    pad = em.alloc.alloc(w.Hp * w.Wp * w.C, f"padded image of node {node.id}") if w.padded else None
    if pad is not None:
        em.put("LD", dst=pad, src=em.ext[zeros_region(node)].addr, len=w.Hp * w.Wp * w.C)
    rq = conv_requantizer(em, node)
    biased = has_bias(node)
    for b in range(images):
        image = x_addr + b * w.H * w.W * w.C
        src, wsrc = (pad, w.Wp) if pad is not None else (image, w.W)
        if pad is not None:
            for y in range(w.H):
                interior = pad + ((y + w.ph) * w.Wp + w.pw) * w.C
                line = image + y * w.W * w.C
                em.put("VADD", dst=interior, src1=line, src2=line, len=w.W * w.C, relu=0, max=1)
        for oy in range(w.Ho):
            if biased:
                em.put("LD", dst=acc + oy * row, src=em.ext[region_name(node)].addr, len=row)
            for fields in conv_mms(w, src, wsrc, w_addr, acc + oy * row, cout, oy, em.params.T,
                                   em.params.K_MAX, biased):
                em.put("MM", **fields)
        em.put("RQ", dst=out + b * per_image, src=acc, len=per_image, **rq)
    if pad is not None:
        em.alloc.release(pad, w.Hp * w.Wp * w.C, f"padded image of node {node.id}")
    if rq.get("pc"):
        em.alloc.release(rq["tab"], rq["C"], f"requantization table of node {node.id}")
    em.alloc.release(acc, per_image, f"accumulator of node {node.id}")


def conv_requantizer(em: Emitter, node: Node) -> dict[str, int]:
    """RQ's fields: one pair (recorded in ``em.requantizers``), or per output channel the table
    loaded into the scratchpad (``pc = 1``; the caller releases it).

    Raises:
        CompileError: the bias does not fit the accumulator, a factor's shift is out of range, or
            a per-channel weight that another node also reads (its levels are per column).
    """
    relu = int(fused_relu(em, node))
    if has_bias(node):
        bias_levels(node, em.nodes, em.scales)   # refused here when it does not fit the accumulator
    m_, s_ = pairs(em.nodes, em.scales, node, em.params)
    if not per_channel(node):
        em.requantizers[node.id] = (m_, s_)
        return {"m": m_, "s": s_, "relu": relu}
    w_id = node.ins[1]
    if any(w_id in other.ins for other in em.nodes if other.id != node.id):
        raise CompileError(f"{node.describe()} quantizes {em.nodes[w_id].describe()} per output channel, "
                           "and another node reads it too",
                           "give each per-channel convolution a weight of its own", node.id)
    words = table_words(node)
    tab = em.alloc.alloc(words, f"requantization table of node {node.id}")
    em.put("LD", dst=tab, src=em.ext[table_region(node)].addr, len=words)
    return {"m": 0, "s": 0, "relu": relu, "pc": 1, "tab": tab, "C": words}


def lower_maxpool(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    """VADD max over the window's rows, then over each output pixel's columns."""
    (x_addr,) = operands
    w = window_of(node)
    line = w.W * w.C
    images = em.nodes[node.ins[0]].shape[0] // (w.H * w.W)
    out = em.address(node.id)
    tmp = em.alloc.alloc(line, f"row maxima of node {node.id}") if w.kh > 1 else None
    for b in range(images):
        image = x_addr + b * w.H * w.W * w.C
        for oy in range(w.Ho):
            first = image + oy * w.sh * line
            rows = first
            if tmp is not None:
                rows = tmp
                em.put("VADD", dst=tmp, src1=first, src2=first + line, len=line, relu=0, max=1)
                for ky in range(2, w.kh):
                    em.put("VADD", dst=tmp, src1=tmp, src2=first + ky * line, len=line, relu=0, max=1)
            for ox in range(w.Wo):
                dst = out + ((b * w.Ho + oy) * w.Wo + ox) * w.C
                pixel = rows + ox * w.sw * w.C
                em.put("VADD", dst=dst, src1=pixel, src2=pixel + (w.C if w.kw > 1 else 0), len=w.C, relu=0,
                       max=1)
                for kx in range(2, w.kw):
                    em.put("VADD", dst=dst, src1=dst, src2=pixel + kx * w.C, len=w.C, relu=0, max=1)
    if tmp is not None:
        em.alloc.release(tmp, line, f"row maxima of node {node.id}")


def lower_reshape(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    """No instruction: the view's first word is its operand's.

    Raises:
        CompileError: the operand sits inside a buffer at a row that is no whole row of the new
            shape (a reshape of a slice or of a concatenation's part).
    """
    if em.address(node.id) != operands[0]:
        raise CompileError(f"{node.describe()} reshapes {em.nodes[node.ins[0]].describe()}, which starts "
                           "inside another tensor's buffer", "reshape a tensor that has a buffer of its own",
                           node.id)
