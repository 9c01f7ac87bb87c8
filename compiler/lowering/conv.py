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

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from ..bias import bias_levels, has_bias, region_name
from ..channels import per_channel
from ..errors import CompileError
from ..ops.conv2d import (
    channel_groups,
    diagonal_offset,
    diagonal_region,
    pairs,
    table_region,
    table_words,
    taps_region,
    window_of,
    zeros_region,
)
from ..ops.window import Window
from .emitter import fused_relu

if TYPE_CHECKING:
    from sim.spec import Params

    from ..node import Node
    from .emitter import Emitter


def pixel_stride(w: Window) -> int:
    """Words between the first taps of two neighbouring output pixels in a row of the input
    (HWC): the horizontal stride times C. MM's ``lda`` for a convolution's tile of pixels."""
    return w.sw * w.C


def interior(w: Window) -> int:
    """Words from the start of a row of the padded image to its first pixel of the image: the
    left padding, p_w x C zeros."""
    return w.pw * w.C


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
                a = src + (oy * w.sh + ky) * wsrc * w.C + ox * pixel_stride(w)
                for k0 in range(0, k, k_max):
                    yield {"dst": acc + ox * cout + co, "A": a + k0, "B": weights + (ky * k + k0) * cout + co,
                           "M": min(t, w.Wo - ox), "K": min(k_max, k - k0), "N": min(t, cout - co), "tb": 0,
                           "lda": pixel_stride(w), "ldb": cout, "ldc": cout, "acc": int(not first)}
                    first = False


def lower_conv2d(em: Emitter, node: Node, operands: Sequence[int]) -> None:
    """The step with x and w in the scratchpad (see the module docstring); a depthwise
    convolution reads its diagonal blocks instead of w (:func:`lower_depthwise`)."""
    x_addr, w_addr = operands
    w = window_of(node)
    if w.depthwise:
        lower_depthwise(em, node, x_addr)
        return
    cout = node.shape[1]
    out, row, per_image = em.address(node.id), w.Wo * cout, w.Ho * w.Wo * cout
    acc = em.alloc.alloc(per_image, f"accumulator of node {node.id}")
    pad = padded_buffer(em, node)
    rq = conv_requantizer(em, node)
    biased = has_bias(node)
    for b in range(_images(em, node)):
        src, wsrc = padded_source(em, node, pad, x_addr, b)
        for oy in range(w.Ho):
            if biased:
                em.put("LD", dst=acc + oy * row, src=em.ext[region_name(node)].addr, len=row)
            for fields in conv_mms(w, src, wsrc, w_addr, acc + oy * row, cout, oy, em.params.T,
                                   em.params.K_MAX, biased):
                em.put("MM", **fields)
        em.put("RQ", dst=out + b * per_image, src=acc, len=per_image, **rq)
    _release(em, node, pad, rq, acc, per_image)


def _images(em: Emitter, node: Node) -> int:
    w = window_of(node)
    return em.nodes[node.ins[0]].shape[0] // (w.H * w.W)


def padded_buffer(em: Emitter, node: Node) -> int | None:
    """A padded convolution's buffer of the padded image, its zero border loaded (one LD of the
    zeros region, or one per padded row when the region is a row); None unpadded."""
    w = window_of(node)
    if not w.padded:
        return None
    words = w.Hp * w.Wp * w.C
    pad = em.alloc.alloc(words, f"padded image of node {node.id}")
    zeros = em.ext[zeros_region(node)]
    for at in range(0, words, zeros.words):
        em.put("LD", dst=pad + at, src=zeros.addr, len=min(zeros.words, words - at))
    return pad


def padded_source(em: Emitter, node: Node, pad: int | None, x_addr: int, b: int) -> tuple[int, int]:
    """Image b's first word and pixels per row as the MMs read it: copied into the interior of
    the padded buffer (one VADD max of each row with itself), or where it lies unpadded."""
    w = window_of(node)
    image = x_addr + b * w.H * w.W * w.C
    if pad is None:
        return image, w.W
    for y in range(w.H):
        line = image + y * w.W * w.C
        em.put("VADD", dst=pad + (y + w.ph) * w.Wp * w.C + interior(w), src1=line, src2=line, len=w.W * w.C,
               relu=0, max=1)
    return pad, w.Wp


def _release(em: Emitter, node: Node, pad: int | None, rq: dict[str, int], acc: int, per_image: int) -> None:
    w = window_of(node)
    if pad is not None:
        em.alloc.release(pad, w.Hp * w.Wp * w.C, f"padded image of node {node.id}")
    if rq.get("pc"):
        em.alloc.release(rq["tab"], rq["C"], f"requantization table of node {node.id}")
    em.alloc.release(acc, per_image, f"accumulator of node {node.id}")


def depthwise_mms(node: Node, src: int, wsrc: int, diag: int, acc: int, oy: int, params: Params,
                  biased: bool) -> Iterator[dict[str, int]]:
    """The MMs of output row ``oy`` of a depthwise convolution: per tile of at most T pixels,
    per group of n <= T channels, per tap (ky, kx), A the tile's pixels of that tap (``lda =
    s_w*C``, K = n channels) by B the tap's n x n diagonal block (N = n), adding into the
    tile's n channels (``ldc = C``). One multiply-add in n is useful."""
    w = window_of(node)
    for ox in range(0, w.Wo, params.T):
        for g, (c0, n) in enumerate(channel_groups(w.C, params.T)):
            first = not biased
            for ky in range(w.kh):
                for kx in range(w.kw):
                    a = src + ((oy * w.sh + ky) * wsrc + kx) * w.C + ox * pixel_stride(w) + c0
                    yield {"dst": acc + ox * w.C + c0, "A": a,
                           "B": diag + diagonal_offset(node, g, ky * w.kw + kx, params),
                           "M": min(params.T, w.Wo - ox), "K": n, "N": n, "tb": 0, "lda": pixel_stride(w),
                           "ldb": n, "ldc": w.C, "acc": int(not first)}
                    first = False


def shared_mms(node: Node, row_at: Callable[[int], int], taps: int, acc: int, oy: int, params: Params,
               biased: bool, contiguous: bool) -> Iterator[dict[str, int]]:
    """The MMs of output row ``oy`` of a shared-tap convolution (an average pool): per output
    pixel and group of n <= T channels, A the tap weights (M = 1) by B the window's pixels
    (``ldb = C``, N = n channels), one kernel row a run of K = k_w taps, or, ``contiguous``
    (the window spans whole rows that lie one after another), the whole window as one run of
    K = k_h*k_w, in pieces of at most K_MAX. ``row_at(y)`` is the address of row y of the
    padded image. One row of the array is used: utilisation at most 1/T."""
    w = window_of(node)
    runs = [(0, w.kh * w.kw)] if contiguous else [(ky * w.kw, w.kw) for ky in range(w.kh)]
    for ox in range(w.Wo):
        for c0, n in channel_groups(w.C, params.T):
            first = not biased
            for start, length in runs:
                ky, kx = divmod(start, w.kw)
                pixel = row_at(oy * w.sh + ky) + kx * w.C + ox * pixel_stride(w) + c0
                for k0 in range(0, length, params.K_MAX):
                    k = min(params.K_MAX, length - k0)
                    yield {"dst": acc + ox * w.C + c0, "A": taps + start + k0, "B": pixel + k0 * w.C, "M": 1,
                           "K": k, "N": n, "tb": 0, "lda": k, "ldb": w.C, "ldc": w.C, "acc": int(not first)}
                    first = False


def lower_depthwise(em: Emitter, node: Node, x_addr: int) -> None:
    """A depthwise convolution with x in the scratchpad: its diagonal blocks (or a shared-tap
    one's taps) loaded (one LD), the padded image as for groups = 1, per output row the bias
    row and :func:`depthwise_mms` (:func:`shared_mms`), one RQ per image."""
    w = window_of(node)
    out, row, per_image = em.address(node.id), w.Wo * w.C, w.Ho * w.Wo * w.C
    region = em.ext[taps_region(node) if w.shared else diagonal_region(node)]
    diag = em.alloc.alloc(region.words, f"diagonal weights of node {node.id}")
    em.put("LD", dst=diag, src=region.addr, len=region.words)
    acc = em.alloc.alloc(per_image, f"accumulator of node {node.id}")
    pad = padded_buffer(em, node)
    rq = conv_requantizer(em, node)
    biased = has_bias(node)
    for b in range(_images(em, node)):
        src, wsrc = padded_source(em, node, pad, x_addr, b)
        for oy in range(w.Ho):
            if biased:
                em.put("LD", dst=acc + oy * row, src=em.ext[region_name(node)].addr, len=row)
            if w.shared:
                found = shared_mms(node, lambda y, src=src, wsrc=wsrc: src + y * wsrc * w.C, diag,
                                   acc + oy * row, oy, em.params, biased, w.kw == wsrc)
            else:
                found = depthwise_mms(node, src, wsrc, diag, acc + oy * row, oy, em.params, biased)
            for fields in found:
                em.put("MM", **fields)
        em.put("RQ", dst=out + b * per_image, src=acc, len=per_image, **rq)
    _release(em, node, pad, rq, acc, per_image)
    em.alloc.release(diag, region.words, f"diagonal weights of node {node.id}")


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
