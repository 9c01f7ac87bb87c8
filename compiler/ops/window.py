"""The geometry of a convolution or a pooling window over images stored rows = pixels, columns =
channels (HWC, docs/guide/conv.md): :class:`Window`, and its text form, the ``window``
attribute of a node (``"8x8x4 k3x3 s1x1 p1x1"``: image height x width x channels, kernel, stride,
zero padding; `` dw`` for a depthwise convolution, `` avg`` for a depthwise one whose taps weigh
every channel alike, an average pool).

A tensor of B images of H x W pixels and C channels is (B*H*W, C): row ``(b*H + y)*W + x``
holds pixel (y, x) of image b. The output of a window of k_h x k_w, stride (s_h, s_w) and
padding (p_h, p_w) has H_o = (H + 2 p_h - k_h) // s_h + 1 rows of W_o pixels (PyTorch's
``nn.Conv2d`` and ``nn.MaxPool2d`` formula without dilation).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import CompileError

_TEXT = re.compile(r"(\d+)x(\d+)x(\d+) k(\d+)x(\d+) s(\d+)x(\d+) p(\d+)x(\d+)( dw| avg)?")


@dataclass(frozen=True)
class Window:
    """Image (H, W) of C channels, kernel (kh, kw), stride (sh, sw), zero padding (ph, pw) on
    each side, and whether the convolution is depthwise (groups = channels)."""

    H: int
    W: int
    C: int
    kh: int
    kw: int
    sh: int = 1
    sw: int = 1
    ph: int = 0
    pw: int = 0
    depthwise: bool = False
    shared: bool = False
    """Depthwise with one weight per tap shared by every channel (an average pool: `` avg``)."""

    @property
    def Hp(self) -> int:
        """Rows of the padded image."""
        return self.H + 2 * self.ph

    @property
    def Wp(self) -> int:
        """Pixels in a row of the padded image."""
        return self.W + 2 * self.pw

    @property
    def Ho(self) -> int:
        """Output rows."""
        return (self.Hp - self.kh) // self.sh + 1

    @property
    def Wo(self) -> int:
        """Output pixels per row."""
        return (self.Wp - self.kw) // self.sw + 1

    @property
    def padded(self) -> bool:
        return bool(self.ph or self.pw)

    def text(self) -> str:
        """The ``window`` attribute: ``"8x8x4 k3x3 s1x1 p1x1"`` (`` dw`` appended when depthwise)."""
        return (f"{self.H}x{self.W}x{self.C} k{self.kh}x{self.kw} s{self.sh}x{self.sw} p{self.ph}x{self.pw}"
                + (" avg" if self.shared else " dw" if self.depthwise else ""))


def read_window(text: object, where: str) -> Window:
    """The :class:`Window` of a ``window`` attribute.

    Raises:
        CompileError: not of the form ``"HxW kKHxKW sSHxSW pPHxPW[ dw]"``, a size below 1, a
            padding of half the kernel or more (PyTorch's limit), or a kernel larger than the
            padded image.
    """
    match = _TEXT.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise CompileError(f"{where}: window {text!r} is not 'HxWxC kKHxKW sSHxSW pPHxPW' (optionally ' dw' "
                           "or ' avg')",
                           "build it with Graph.conv2d or Graph.maxpool2d, e.g. "
                           "window='8x8x4 k3x3 s1x1 p1x1'")
    H, W, C, kh, kw, sh, sw, ph, pw = (int(g) for g in match.groups()[:9])
    window = Window(H, W, C, kh, kw, sh, sw, ph, pw, bool(match[10]), match[10] == " avg")
    if min(H, W, C, kh, kw, sh, sw) < 1:
        raise CompileError(f"{where}: window {text!r}: image, kernel and stride must be at least 1",
                           "give positive sizes")
    if 2 * ph > kh or 2 * pw > kw:
        raise CompileError(f"{where}: window {text!r}: padding ({ph}, {pw}) is more than half the kernel "
                           f"({kh}, {kw})", "pad at most half the kernel on each side")
    if kh > window.Hp or kw > window.Wp:
        raise CompileError(f"{where}: window {text!r}: the kernel ({kh}, {kw}) is larger than the padded "
                           f"image ({window.Hp}, {window.Wp})", "use a smaller kernel or more padding")
    return window


def pair(value: object, name: str, where: str) -> tuple[int, int]:
    """An int or a pair of ints (PyTorch's convention for kernel, stride, padding) as a pair.

    Raises:
        CompileError: neither.
    """
    items = value if isinstance(value, tuple | list) else (value, value)
    if len(items) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        raise CompileError(f"{where}: {name}={value!r} is not an int or a pair of ints",
                           f"give {name}=1 or (1, 2)")
    return int(items[0]), int(items[1])


def images(shape: tuple[int, int], window: Window, where: str) -> int:
    """B, the images in a tensor of shape (B*H*W, C).

    Raises:
        CompileError: the rows are not a multiple of H*W, or the columns are not C.
    """
    rows, cols = shape
    if rows % (window.H * window.W) or cols != window.C:
        raise CompileError(f"{where}: a tensor {shape} is not whole images of {window.H} x {window.W} pixels "
                           f"of {window.C} channels", "store B images of H x W pixels as B*H*W rows of C "
                           "channels (HWC)")
    return rows // (window.H * window.W)
