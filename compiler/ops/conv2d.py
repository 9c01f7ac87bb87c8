"""conv2d: factor * (x convolved with w), plus a bias per output channel, over images stored
rows = pixels, columns = channels (HWC; the geometry is the node's ``window``,
:mod:`.window`). It is a matmul of the im2col rows of x (each output pixel's k_h*k_w*C taps,
in the order (ky, kx, c), zeros where the window reaches into the padding) by w as a
(k_h*k_w*C) x C_out matrix; a depthwise convolution (groups = C) weighs tap t of channel c by
w[t, c], w being (k_h*k_w) x C. The bias enters the int32 accumulator as a matmul's does
(:mod:`compiler.bias`). Source: PyTorch's ``nn.Conv2d`` (zeros padding, no dilation);
docs/guide/conv.md for the layout and the lowering."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from sim.arith import pack_rq_pair, requant_array
from sim.spec import LANES_BUILT, Params

from ..bias import bias_levels, has_bias, region_name
from ..channels import channel_scales, per_channel
from ..errors import CompileError
from ..requant import matmul_factor, requantizer
from .matmul import _bias, matmul_factor_attr
from .semantics import level, matmul_in_order, running_sum
from .spec import Constant
from .window import Window, images, read_window

if TYPE_CHECKING:
    from ..node import Node
    from .semantics import Compiled, FloatContext, IntContext
    from .shapes import Attrs, Shape


def conv2d_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """x (B*H*W, C) by w (k_h*k_w*C, C_out), or depthwise by w (k_h*k_w, C): (B*H_o*W_o, C_out)."""
    nx, nw = operands
    where = f"conv2d of {nx.describe()} by {nw.describe()}"
    window = read_window(attrs.get("window"), where)
    b = images(nx.shape, window, where)
    if window.depthwise:
        raise CompileError(f"{where}: a depthwise convolution (groups = channels) is not lowered by Capra "
                           "yet",
                           "examples/conv_by_hand.py shows its program (diagonal blocks); use groups = 1")
    c = nx.shape[1]
    taps = window.kh * window.kw
    want = (taps, c) if window.depthwise else (taps * c, nw.shape[1])
    if nw.shape != want:
        kind = "depthwise weights (k_h*k_w, C)" if window.depthwise else "weights (k_h*k_w*C, C_out)"
        raise CompileError(f"{where}: {kind} should be {want} for a {window.kh} x {window.kw} kernel on {c} "
                           f"channels, not {nw.shape}",
                           "store w[(ky*k_w + kx)*C + c, o] (depthwise: w[ky*k_w + kx, c])")
    cout = nw.shape[1]
    out = {"window": window.text(), "factor": matmul_factor_attr(attrs.get("factor", 1.0), where),
           "per_channel": bool(attrs.get("per_channel", False))}
    if attrs.get("bias") is not None:
        out["bias"] = _bias(attrs["bias"], cout, where)
    return (b * window.Ho * window.Wo, cout), out


def window_of(node: Node) -> Window:
    """The node's :class:`Window` (its attribute was checked when the node was built)."""
    return read_window(node.window, node.describe())


def patches(x: np.ndarray, window: Window) -> np.ndarray:
    """The taps of every output pixel: x (..., B*H*W, C) -> (..., B*H_o*W_o, k_h*k_w, C), taps
    in the order (ky, kx), zeros in the padding."""
    lead, c = x.shape[:-2], x.shape[-1]
    b = x.shape[-2] // (window.H * window.W)
    img = x.reshape(*lead, b, window.H, window.W, c)
    pad = [(0, 0)] * (len(lead) + 1) + [(window.ph, window.ph), (window.pw, window.pw), (0, 0)]
    img = np.pad(img, pad)
    taps = []
    for ky in range(window.kh):
        for kx in range(window.kw):
            rows = img[..., ky:ky + window.sh * (window.Ho - 1) + 1:window.sh,
                       kx:kx + window.sw * (window.Wo - 1) + 1:window.sw, :]
            taps.append(rows.reshape(*lead, b * window.Ho * window.Wo, c))
    return np.stack(taps, axis=-2)


def convolve(x: np.ndarray, w: np.ndarray, window: Window) -> np.ndarray:
    """The sums of x convolved with w, each in tap order (ky, kx, c): (..., B*H_o*W_o, C_out)."""
    cols = patches(x, window)
    if window.depthwise:
        return running_sum(cols * w, axis=-2)
    return matmul_in_order(cols.reshape(*cols.shape[:-2], -1), w)


def float_conv2d(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    """factor times the convolution, plus the bias."""
    product = node.factor * convolve(operands[0], operands[1], window_of(node))
    return product if node.bias is None else product + node.bias


def int_conv2d(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    """The int32 accumulator (exact int64 sums, plus the bias), requantized with the node's pair
    (and its fused relu)."""
    accumulator = convolve(operands[0].astype(np.int64), operands[1].astype(np.int64), window_of(node))
    if node.bias is not None:
        accumulator = accumulator + bias_levels(node, context.program.graph.nodes, context.program.scales)
    program = context.program
    m, s = pairs(program.graph.nodes, program.scales, node, program.machine) if per_channel(node) \
        else program.requantizers[node.id]
    return requant_array(accumulator, m, s, node.id in context.program.relu_fused)


def real_conv2d(node: Node, real: Callable[[int], np.ndarray], program: Compiled) -> np.ndarray:
    """The convolution of the dequantized operands (plus the bias) at the result's scale, its
    fused relu applied."""
    w = real(node.ins[1])
    if per_channel(node):   # the weight's levels at the scales of their columns
        weight = program.graph.nodes[node.ins[1]]
        w = w / program.scales[weight.id] * channel_scales(weight, program.scales[weight.id])
    product = node.factor * convolve(real(node.ins[0]), w, window_of(node))
    if node.bias is not None:
        product = product + node.bias
    want = level(product, program.scales[node.id])
    return np.maximum(want, 0) if node.id in program.relu_fused else want


def _bias_row_words(node: Node) -> int:
    return window_of(node).Wo * node.shape[1]


def _bias_row(node: Node, nodes: Sequence[Node], scales) -> np.ndarray:
    """The bias in units of the accumulator, repeated for the W_o pixels of an output row (one LD
    per output row puts it under the row's sums)."""
    return np.tile(bias_levels(node, nodes, scales), window_of(node).Wo)


CONV_BIAS = Constant(needed=has_bias, region=region_name, words=_bias_row_words, values=_bias_row)
"""A biased convolution's bias for one output row: W_o x C_out int32 words."""


def zeros_region(node: Node) -> str:
    """The external region of zeros a padded convolution loads under its padded image."""
    return f"zeros of node {node.id}"


def _padded_words(node: Node) -> int:
    w = window_of(node)
    return w.Hp * w.Wp * w.C


def _zeros(node: Node, nodes: Sequence[Node], scales) -> np.ndarray:
    return np.zeros(_padded_words(node), dtype=np.int64)


PADDING_ZEROS = Constant(needed=lambda node: window_of(node).padded, region=zeros_region, words=_padded_words,
                 values=_zeros)
"""A padded convolution's zero border: H_p x W_p x C words of zeros, loaded once into the
padded image's buffer (the interior is copied in per image; the border stays zero)."""


def pairs(nodes: Sequence[Node], scales, node: Node, params: Params) -> tuple[Any, Any]:
    """The node's requantizer: one (m, s), or per output channel (:mod:`compiler.channels`) the
    arrays (m_j), (s_j) of the factors ``factor * s_x * s_w_j / s_out``.

    Raises:
        CompileError: a factor whose shift falls outside RQ's range (names the node).
    """
    x_id, w_id = node.ins
    what = f"conv2d node {node.id}"
    if not per_channel(node):
        return requantizer(matmul_factor(node.factor, scales[x_id], scales[w_id], scales[node.id]), what,
                           node.id, params)
    columns = channel_scales(nodes[w_id], scales[w_id])
    found = [requantizer(matmul_factor(node.factor, scales[x_id], float(s_w), scales[node.id]),
                         f"{what}, channel {j}", node.id, params) for j, s_w in enumerate(columns)]
    return np.array([m for m, _ in found]), np.array([s for _, s in found])


def table_region(node: Node) -> str:
    """The external region of a per-channel convolution's requantization table."""
    return f"requantization table of node {node.id}"


def table_words(node: Node) -> int:
    """C_out entries, repeated up to the widest LANES the generator builds when fewer (RQ takes
    a table of at least LANES entries; element i takes entry i mod C, the channel i mod C_out)."""
    cout = node.shape[1]
    return cout * -(-max(LANES_BUILT) // cout)


def _table(node: Node, nodes: Sequence[Node], scales, params: Params) -> np.ndarray:
    m, s = pairs(nodes, scales, node, params)
    words = np.array([pack_rq_pair(int(a), int(b)) for a, b in zip(m, s, strict=True)], dtype=np.int64)
    return np.tile(words, table_words(node) // len(words))


CHANNEL_TABLE = Constant(needed=per_channel, region=table_region, words=table_words, values=_table,
                         machine=True)
"""A per-channel convolution's requantization table: one word (m_j, s_j) per output channel
(GA2.md section 2), loaded into the scratchpad for RQ ``pc = 1``."""
