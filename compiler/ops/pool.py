"""maxpool: the largest value of each window of a tensor of images (HWC, the node's ``window``,
:mod:`.window`; no padding), channel by channel; the result has its operand's scale (the
maximum of levels is the level of the maximum). Source: PyTorch's ``nn.MaxPool2d`` (padding 0,
dilation 1); the lowering is VADD with ``max = 1`` (GA2.md section 3)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..errors import CompileError
from .conv2d import patches, window_of
from .window import images, read_window

if TYPE_CHECKING:
    from ..node import Node
    from .semantics import FloatContext, IntContext
    from .shapes import Attrs, Shape


def maxpool_shape(operands: Sequence[Node], attrs: Attrs) -> tuple[Shape, Attrs]:
    """x (B*H*W, C): (B*H_o*W_o, C)."""
    (nx,) = operands
    where = f"maxpool2d of {nx.describe()}"
    window = read_window(attrs.get("window"), where)
    if window.padded or window.depthwise:
        raise CompileError(f"{where}: window {window.text()!r}: a max pool takes no padding and is not "
                           "depthwise", "pool without padding (pad with a convolution before it)")
    b = images(nx.shape, window, where)
    return (b * window.Ho * window.Wo, nx.shape[1]), {"window": window.text()}


def float_maxpool(node: Node, operands: Sequence[np.ndarray], context: FloatContext) -> np.ndarray:
    """The largest value of each window, per channel."""
    return patches(operands[0], window_of(node)).max(axis=-2)


def int_maxpool(node: Node, operands: Sequence[np.ndarray], context: IntContext) -> np.ndarray:
    """The largest level of each window, per channel (VADD max: nothing saturates)."""
    return patches(operands[0], window_of(node)).max(axis=-2)
