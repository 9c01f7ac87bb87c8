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

from sim.arith import pack_rq_pair, quantize_array, requant_array
from sim.spec import LANES_BUILT, Params

from ..bias import bias_levels, has_bias, region_name
from ..channels import channel_scales, per_channel, quantize_columns
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
    """x (B*H*W, C) by w (k_h*k_w*C, C_out), depthwise by w (k_h*k_w, C), with shared taps by w
    (k_h*k_w, 1): (B*H_o*W_o, C_out)."""
    nx, nw = operands
    where = f"conv2d of {nx.describe()} by {nw.describe()}"
    window = read_window(attrs.get("window"), where)
    b = images(nx.shape, window, where)
    c = nx.shape[1]
    taps = window.kh * window.kw
    want = (taps, 1) if window.shared else (taps, c) if window.depthwise else (taps * c, nw.shape[1])
    if nw.shape != want:
        kind = "shared tap weights (k_h*k_w, 1)" if window.shared else "depthwise weights (k_h*k_w, C)" \
            if window.depthwise else "weights (k_h*k_w*C, C_out)"
        raise CompileError(f"{where}: {kind} should be {want} for a {window.kh} x {window.kw} kernel on {c} "
                           f"channels, not {nw.shape}",
                           "store w[(ky*k_w + kx)*C + c, o] (depthwise: w[ky*k_w + kx, c])")
    if window.shared and attrs.get("per_channel"):
        raise CompileError(f"{where}: window {window.text()!r} shares each tap's weight among the channels, "
                           "so its scale is one (per tensor)", "leave per_channel out")
    cout = c if window.shared else nw.shape[1]
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
        return running_sum(cols * np.expand_dims(w, -3), axis=-2)
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


ZEROS_WHOLE_MAX = 2048
"""A padded image of at most this many words has a zeros region of its size (loaded by one LD);
a larger one has a region of one padded row (W_p x C words), loaded row by row: a large image
is streamed in bands (:mod:`compiler.convstep`), and its zeros would otherwise fill the
external memory."""


def padded_words(node: Node) -> int:
    """The words of the node's padded image, H_p x W_p x C."""
    w = window_of(node)
    return w.Hp * w.Wp * w.C


def _padded_words(node: Node) -> int:
    w = window_of(node)
    return padded_words(node) if padded_words(node) <= ZEROS_WHOLE_MAX else w.Wp * w.C


def _zeros(node: Node, nodes: Sequence[Node], scales) -> np.ndarray:
    return np.zeros(_padded_words(node), dtype=np.int64)


PADDING_ZEROS = Constant(needed=lambda node: window_of(node).padded, region=zeros_region, words=_padded_words,
                 values=_zeros)
"""A padded convolution's zero border: H_p x W_p x C words of zeros, loaded once into the
padded image's buffer (the interior is copied in per image; the border stays zero); one padded
row when the image is larger than ZEROS_WHOLE_MAX words."""


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


def diagonal_region(node: Node) -> str:
    """The external region of a depthwise convolution's weights as diagonal blocks."""
    return f"diagonal weights of node {node.id}"


def channel_groups(channels: int, t: int) -> list[tuple[int, int]]:
    """The groups of at most T channels a depthwise convolution runs in: (first channel, count)."""
    return [(c0, min(t, channels - c0)) for c0 in range(0, channels, t)]


def diagonal_words(node: Node, params: Params) -> int:
    """k_h*k_w diagonal blocks n x n per group of n <= T channels (:func:`channel_groups`)."""
    w = window_of(node)
    return w.kh * w.kw * sum(n * n for _, n in channel_groups(w.C, params.T))


def diagonal_offset(node: Node, group: int, tap: int, params: Params) -> int:
    """Where the block of tap ``tap`` (ky*k_w + kx) of channel group ``group`` starts in the region:
    group by group, tap by tap, each block n x n row-major (diagonal)."""
    w = window_of(node)
    c0, n = channel_groups(w.C, params.T)[group]
    return w.kh * w.kw * c0 * params.T + tap * n * n


def _diagonal(node: Node, nodes: Sequence[Node], scales, params: Params) -> np.ndarray:
    """The levels of the depthwise weight (per column when per channel) on the blocks' diagonals."""
    weight = nodes[node.ins[1]]
    levels = quantize_columns(weight, scales[weight.id]) if per_channel(node) else \
        quantize_array(weight.array, scales[weight.id])
    words = np.zeros(diagonal_words(node, params), dtype=np.int64)
    for g, (c0, n) in enumerate(channel_groups(window_of(node).C, params.T)):
        for tap in range(levels.shape[0]):
            at = diagonal_offset(node, g, tap, params)
            words[at:at + n * n:n + 1] = levels[tap, c0:c0 + n]
    return words


def _diagonals_needed(node: Node) -> bool:
    return window_of(node).depthwise and not window_of(node).shared


DEPTHWISE_DIAGONALS = Constant(needed=_diagonals_needed, region=diagonal_region,
                               words=diagonal_words, values=_diagonal, machine=True, machine_words=True)
"""A depthwise convolution's weights for the MXU: per group of n <= T channels and per tap, the
n x n diagonal matrix of the tap's n weights (MM's B; K = N = n), so that one MM weighs each
channel of T pixels by its own weight (docs/guide/conv.md)."""


def taps_region(node: Node) -> str:
    """The external region of a shared-tap (average pool) convolution's k_h*k_w tap weights."""
    return f"tap weights of node {node.id}"


def _taps_words(node: Node) -> int:
    w = window_of(node)
    return w.kh * w.kw


def _taps(node: Node, nodes: Sequence[Node], scales) -> np.ndarray:
    weight = nodes[node.ins[1]]
    return quantize_array(weight.array[:, 0], scales[weight.id]).astype(np.int64)


SHARED_TAPS = Constant(needed=lambda node: window_of(node).shared, region=taps_region, words=_taps_words,
                       values=_taps)
"""A shared-tap convolution's weights (an average pool): one level per tap, the A row of its MMs."""
