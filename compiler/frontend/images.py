"""The PyTorch front end's rules for images (issue 25; docs/guide/conv.md): a 4-D tensor
(B, C, H, W) becomes a Capra tensor (B*H*W, C), rows = pixels, columns = channels (HWC).

Lowered: ``nn.Conv2d`` (any kernel, stride and zero padding, groups = 1 or depthwise; a
``BatchNorm2d`` of eval mode right after it folds into its weights and bias), ``nn.MaxPool2d``
(no padding), ``nn.AvgPool2d`` and ``nn.AdaptiveAvgPool2d(1)`` (a depthwise convolution whose
taps weigh every channel alike, all ones, with the factor 1 / window), and a flatten of images
into rows (``nn.Flatten``, ``torch.flatten(x, 1)``: a reshape, no copy; the next linear
layer's weight columns are permuted from PyTorch's (c, y, x) order to the HWC order (y, x,
c)). ReLU, the table activations and a residual add take images as they are (elementwise on
the same layout). Refused, naming the layer and the attribute: dilation, groups other than 1
and depthwise (a depth multiplier above 1 included), padding modes other than zeros,
ceil_mode, return_indices, a BatchNorm2d that follows no convolution or in training mode, an
adaptive pool to more than one pixel.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import fx, nn

from .refuse import Refuse


def pairs(value: Any) -> tuple[int, int]:
    """PyTorch's int or pair of ints as a pair."""
    return (int(value[0]), int(value[1])) if isinstance(value, tuple | list) else (int(value), int(value))


def conv_weight(weight: torch.Tensor) -> np.ndarray:
    """An ``nn.Conv2d`` weight (C_out, C, k_h, k_w) as Capra's (k_h*k_w*C, C_out): row
    (ky*k_w + kx)*C + c."""
    w = weight.detach().cpu().double().numpy()
    out, c, kh, kw = w.shape
    return w.transpose(2, 3, 1, 0).reshape(kh * kw * c, out)


def check_conv(layer: nn.Conv2d) -> None:
    """Refuse what the lowering does not take, naming the attribute."""
    if pairs(layer.dilation) != (1, 1):
        raise Refuse(f"has dilation={layer.dilation}; GA-2's convolution reads neighbouring pixels "
                     "(dilation 1)")
    if layer.padding_mode != "zeros":
        raise Refuse(f"has padding_mode={layer.padding_mode!r}; the padded image's border is zeros only")
    if layer.groups != 1 and not depthwise(layer):
        kind = f"groups={layer.groups}" if layer.groups != layer.in_channels else \
            f"groups={layer.groups} with out_channels={layer.out_channels} (a depth multiplier above 1)"
        raise Refuse(f"is {kind}; Capra lowers groups=1 and the depthwise convolution (groups = in_channels "
                     "= out_channels)")


def depthwise(layer: nn.Conv2d) -> bool:
    """Whether a convolution is depthwise: groups = in_channels = out_channels (one filter per
    channel; a depth multiplier of 1)."""
    return layer.groups == layer.in_channels == layer.out_channels and layer.groups > 1


def depthwise_weight(weight: torch.Tensor) -> np.ndarray:
    """A depthwise ``nn.Conv2d`` weight (C, 1, k_h, k_w) as Capra's (k_h*k_w, C): row ky*k_w + kx."""
    w = weight.detach().cpu().double().numpy()
    c, _, kh, kw = w.shape
    return w[:, 0].transpose(1, 2, 0).reshape(kh * kw, c)


def conv_padding(layer: nn.Conv2d) -> tuple[int, int]:
    """The zeros on each side: an int or a pair, or 'valid' (none) or 'same' (stride 1, odd kernel)."""
    if layer.padding == "valid":
        return (0, 0)
    if layer.padding == "same":
        kh, kw = pairs(layer.kernel_size)
        if kh % 2 == 0 or kw % 2 == 0:
            raise Refuse(f"has padding='same' with the even kernel {layer.kernel_size}, which pads one side "
                         "more than the other; give the padding as numbers")
        return (kh // 2, kw // 2)
    return pairs(layer.padding)


def batchnorm_fold(bn: nn.BatchNorm2d) -> tuple[np.ndarray, np.ndarray]:
    """(g, h) with bn(y) = g * y + h per channel (eval mode: running statistics).

    Raises:
        Refuse: training mode, or no running statistics.
    """
    if bn.training:
        raise Refuse("is in training mode, where it normalises by the batch's statistics; call model.eval() "
                     "before tracing")
    if bn.running_mean is None or bn.running_var is None:
        raise Refuse("has no running statistics (track_running_stats=False); it cannot fold into the "
                     "convolution")
    var = bn.running_var.detach().double().numpy()
    mean = bn.running_mean.detach().double().numpy()
    g = 1.0 / np.sqrt(var + bn.eps)
    h = -mean * g
    if bn.affine:
        gamma, beta = bn.weight.detach().double().numpy(), bn.bias.detach().double().numpy()
        g, h = gamma * g, gamma * h + beta
    return g, h


def folded_batchnorm(node: fx.Node, traced: fx.GraphModule) -> tuple[fx.Node, nn.BatchNorm2d] | None:
    """The BatchNorm2d layer that alone reads a convolution's result, if any."""
    if len(node.users) != 1:
        return None
    (user,) = node.users
    if user.op != "call_module":
        return None
    layer = traced.get_submodule(user.target)
    return (user, layer) if isinstance(layer, nn.BatchNorm2d) else None


def check_pool(layer: nn.Module, kind: str) -> None:
    """Refuse a pool's settings the lowering does not take, naming the attribute."""
    if getattr(layer, "ceil_mode", False):
        raise Refuse("has ceil_mode=True, which makes windows past the image's edge; GA-2 pools whole "
                     "windows")
    if kind == "max":
        if pairs(layer.dilation) != (1, 1):
            raise Refuse(f"has dilation={layer.dilation}; GA-2 pools neighbouring pixels (dilation 1)")
        if layer.return_indices:
            raise Refuse("has return_indices=True; GA-2's max pool returns the maxima only")
        if pairs(layer.padding) != (0, 0):
            raise Refuse(f"has padding={layer.padding}; GA-2's max pool takes no padding")
    if kind == "avg" and pairs(layer.padding) != (0, 0) and not layer.count_include_pad:
        raise Refuse("has padding with count_include_pad=False, which divides each window by a different "
                     "count")


def hwc_columns(array: np.ndarray, image: tuple[int, int, int]) -> np.ndarray:
    """A linear layer's weight (out, C*H*W) in PyTorch's flatten order (c, y, x), its columns put
    in the HWC order (y, x, c) of a flattened Capra image (H, W, C)."""
    h, w, c = image
    out = array.shape[0]
    return array.reshape(out, c, h, w).transpose(0, 2, 3, 1).reshape(out, h * w * c)


def to_rows(array: np.ndarray) -> np.ndarray:
    """Images (B, C, H, W) as Capra rows (B*H*W, C)."""
    b, c, h, w = array.shape
    return np.ascontiguousarray(array.transpose(0, 2, 3, 1)).reshape(b * h * w, c)


def from_rows(array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Capra rows (B*H*W, C) as images of ``shape`` (B, C, H, W)."""
    b, c, h, w = shape
    return np.asarray(array).reshape(b, h, w, c).transpose(0, 3, 1, 2)
