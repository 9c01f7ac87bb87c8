#!/usr/bin/env python3
"""Convolution on GA-2 by hand: the layers of ResNet-8 and DS-CNN as hand-written programs,
measured on the reference machine (issue 25; docs/guide/conv.md quotes its tables).

The layout (docs/guide/conv.md says why): activations are stored rows = pixels, columns = channels
(HWC), one int8 per word, in a buffer padded with a zero border. A k_h x k_w convolution of
stride s is then an implicit GEMM that MM addresses without any copy: for kernel row ky, the A
operand of output pixels (oy, ox .. ox+M-1) starts at padded pixel (oy*s + ky, ox*s) with
lda = s*C and K = k_w*C (the k_w pixels of a kernel row are contiguous in HWC), B = W[ky] as
(k_w*C) x C_out (ldb = C_out), summed over ky with acc = 1 onto the bias (one LD per output row),
K > K_MAX in pieces; one RQ per output row, per output channel (pc = 1, the table of the
requantizer). Depthwise (groups = channels) uses diagonal B blocks: one MM per tap of M pixels
x N channels, K = N. A first layer of few channels can instead gather its im2col rows from
the external image with one LD per (pixel, kernel row), K = k_h*k_w*C.

Every program is checked against numpy (the int8 output of every layer, exactly) and its
cycles are the reference machine's (exact: the RTL reaches the same counters). The tables give,
per layer: the instructions, the cycles and the MXU utilisation (useful multiply-adds over
T x T x cycles), and the totals per image.

With ``--rtl``, small layers of each kind (:data:`RTL_LAYERS`: 3 x 3 with padding, strided,
K past K_MAX, depthwise, im2col, 1 x 1 strided) and a max pool run on the RTL under Icarus and
Verilator (the machine of ``--param``, its scratchpad as given): every memory word, the
counters and the stop equal the reference machine's.

The plot (``--plots DIR``, default build/examples/conv_by_hand; ``--plots ''`` saves none):
layers.png, each layer's cycles and MXU utilisation.

Usage: python examples/conv_by_hand.py [--model resnet8|dscnn|both] [--param t8] [--quick] [--rtl]
       [--plots DIR]
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from _cli import add_machine, machine  # examples/_cli.py

from sim import arith
from sim.asm import Instruction, build
from sim.machine import Machine, s8
from sim.spec import DEFAULT, Params


@dataclass(frozen=True)
class Conv:
    """One convolution layer: input H x W x C (HWC), C_out filters of k_h x k_w, stride s, zero
    padding p above and below and pw (default p) left and right; ``depthwise``: groups = C
    (C_out = C); ``im2col``: the rows of k_h*k_w*C taps gathered from the external image (a
    first layer)."""

    name: str
    H: int
    W: int
    C: int
    Cout: int
    kh: int
    kw: int
    s: int = 1
    p: int = 0
    depthwise: bool = False
    im2col: bool = False
    pw: int | None = None
    variant_of: str | None = None
    """Another way to compute the layer of this name (the totals take the faster)."""

    @property
    def Hp(self) -> int:
        """Rows of the padded input."""
        return self.H + 2 * self.p

    @property
    def Wp(self) -> int:
        """Pixels in a row of the padded input."""
        return self.W + 2 * (self.p if self.pw is None else self.pw)

    @property
    def Ho(self) -> int:
        return (self.Hp - self.kh) // self.s + 1

    @property
    def Wo(self) -> int:
        return (self.Wp - self.kw) // self.s + 1

    @property
    def macs(self) -> int:
        taps = self.kh * self.kw * (1 if self.depthwise else self.C)
        return self.Ho * self.Wo * self.Cout * taps


RESNET8 = (
    Conv("conv 3x3, 3->16", 32, 32, 3, 16, 3, 3, 1, 1),
    Conv("conv 3x3, 3->16, im2col", 32, 32, 3, 16, 3, 3, 1, 1, im2col=True, variant_of="conv 3x3, 3->16"),
    Conv("stack 1 conv 3x3, 16->16 (x2)", 32, 32, 16, 16, 3, 3, 1, 1),
    Conv("stack 2 conv 3x3 /2, 16->32", 32, 32, 16, 32, 3, 3, 2, 1),
    Conv("stack 2 conv 3x3, 32->32", 16, 16, 32, 32, 3, 3, 1, 1),
    Conv("stack 2 shortcut 1x1 /2, 16->32", 32, 32, 16, 32, 1, 1, 2, 0),
    Conv("stack 3 conv 3x3 /2, 32->64", 16, 16, 32, 64, 3, 3, 2, 1),
    Conv("stack 3 conv 3x3, 64->64", 8, 8, 64, 64, 3, 3, 1, 1),
    Conv("stack 3 shortcut 1x1 /2, 32->64", 16, 16, 32, 64, 1, 1, 2, 0),
)
"""MLPerf Tiny's ResNet-8 on 32 x 32 x 3 (the stack-1 conv counts twice; the first layer in two
ways, of which the model takes one)."""
DSCNN = (
    Conv("conv 10x4 /2, 1->64", 49, 10, 1, 64, 10, 4, 2, 5, pw=1),
    Conv("conv 10x4 /2, 1->64, im2col", 49, 10, 1, 64, 10, 4, 2, 5, im2col=True, pw=1,
         variant_of="conv 10x4 /2, 1->64"),
    Conv("depthwise 3x3, 64 (x4)", 25, 5, 64, 64, 3, 3, 1, 1, depthwise=True),
    Conv("pointwise 1x1, 64->64 (x4)", 25, 5, 64, 64, 1, 1, 1, 0),
    Conv("pointwise as one row of 125 pixels", 1, 125, 64, 64, 1, 1, 1, 0,
         variant_of="pointwise 1x1, 64->64 (x4)"),
)
"""MLPerf Tiny's DS-CNN on 49 x 10 x 1 (each depthwise-separable block counts four times); the
first layer's 'same' padding gives 25 x 5 (here 5 rows above and below, 1 pixel either side)."""
RTL_LAYERS = (
    Conv("conv 3x3, 4->8 on 8 x 8", 8, 8, 4, 8, 3, 3, 1, 1),
    Conv("conv 3x3 /2, 8->16 on 8 x 8", 8, 8, 8, 16, 3, 3, 2, 1),
    Conv("conv 3x3, 32->8 on 4 x 4 (K > K_MAX)", 4, 4, 32, 8, 3, 3, 1, 1),
    Conv("depthwise 3x3, 8 on 8 x 8", 8, 8, 8, 8, 3, 3, 1, 1, depthwise=True),
    Conv("conv 3x3, 1->8, im2col on 8 x 8", 8, 8, 1, 8, 3, 3, 1, 1, im2col=True),
    Conv("shortcut 1x1 /2, 8->16 on 8 x 8", 8, 8, 8, 16, 1, 1, 2, 0),
)
"""Layers small enough for the default machine's memories, one of each way of addressing (the
channels at least 8, so that the table holds LANES entries on the T = 8 machine too)."""
PLOTS = Path(__file__).resolve().parent.parent / "build" / "examples" / "conv_by_hand"
REPEATS = {"stack 1 conv 3x3, 16->16 (x2)": 2, "depthwise 3x3, 64 (x4)": 4, "pointwise 1x1, 64->64 (x4)": 4}
"""The layers a model has more than once (by name; a variant counts as its layer)."""


# --------------------------------------------------------------------------- the programs


@dataclass
class Layout:
    """Where a layer's operands sit: scratchpad words (X the padded input, W the weights, T the
    requantization table, ACC one output row of int32, Y the output, COL the im2col rows of one
    output row) and external words (the image, the weights, the table, the bias row)."""

    X: int
    W: int
    T: int
    ACC: int
    Y: int
    COL: int
    end: int


def _layout(layer: Conv, params: Params) -> Layout:
    x_words = 0 if layer.im2col else layer.Hp * layer.Wp * layer.C
    row = layer.Wo * layer.Cout
    col = layer.Wo * layer.kh * layer.kw * layer.C if layer.im2col else 0
    sizes = (x_words, _weight_words(layer, params), layer.Cout, row, layer.Ho * row, col)
    starts = [int(v) for v in np.cumsum((0, *sizes))]
    return Layout(*starts[:6], end=starts[6])


def _weight_words(layer: Conv, params: Params) -> int:
    if layer.depthwise:      # a T x T diagonal block per tap and channel group
        return layer.kh * layer.kw * math.ceil(layer.C / params.T) * params.T * params.T
    return layer.kh * layer.kw * layer.C * layer.Cout


def _diagonal_blocks(w: np.ndarray, T: int) -> np.ndarray:
    """Depthwise weights (kh, kw, C) as T x T diagonal blocks: block (tap, group) holds
    w[tap, group*T + j] at (j, j)."""
    kh, kw, c = w.shape
    groups = math.ceil(c / T)
    out = np.zeros((kh * kw, groups, T, T), dtype=np.int64)
    flat = w.reshape(kh * kw, c)
    for g in range(groups):
        for j in range(min(T, c - g * T)):
            out[:, g, j, j] = flat[:, g * T + j]
    return out.ravel()


def _mm_row(layer: Conv, L: Layout, params: Params, oy: int) -> list[Instruction]:
    """The MMs of output row oy (accumulating onto the bias in ACC)."""
    T, out = params.T, []
    wp = layer.Wp
    for ox in range(0, layer.Wo, T):
        m = min(T, layer.Wo - ox)
        for co in range(0, layer.Cout, T):
            n = min(T, layer.Cout - co)
            dst = L.ACC + ox * layer.Cout + co
            if layer.depthwise:
                for tap in range(layer.kh * layer.kw):
                    ky, kx = divmod(tap, layer.kw)
                    a = L.X + ((oy * layer.s + ky) * wp + ox * layer.s + kx) * layer.C + co
                    b = L.W + (tap * math.ceil(layer.C / T) + co // T) * T * T
                    out.append(build("MM", params=params, dst=dst, A=a, B=b, M=m, K=n, N=n, tb=0,
                                     lda=layer.s * layer.C, ldb=T, ldc=layer.Cout, acc=1))
                continue
            taps = layer.kh * layer.kw * layer.C
            rows = [(L.COL + ox * taps, taps, taps, L.W)] if layer.im2col else \
                [(L.X + ((oy * layer.s + ky) * wp + ox * layer.s) * layer.C, layer.kw * layer.C,
                  layer.s * layer.C, L.W + ky * layer.kw * layer.C * layer.Cout) for ky in range(layer.kh)]
            for a, k, lda, b in rows:
                for k0 in range(0, k, params.K_MAX):
                    out.append(build("MM", params=params, dst=dst, A=a + k0, B=b + k0 * layer.Cout + co,
                                     M=m, K=min(params.K_MAX, k - k0), N=n, tb=0, lda=lda, ldb=layer.Cout,
                                     ldc=layer.Cout, acc=1))
    return out


def program(layer: Conv, params: Params, seed: int = 1) -> tuple[list[Instruction], np.ndarray, np.ndarray,
                                                                 int]:
    """The layer's program, its external-memory image, the expected int8 output (Ho x Wo x C_out)
    and where it sits in the scratchpad.

    The external memory holds the padded input image (HWC; zero border), the weights, the table
    of (m, s) pairs per output channel and one output row of bias (int32, repeated per pixel).
    The program loads them, then per output row: LD the bias row into ACC (or, im2col: the
    row's taps, one LD per (pixel, kernel row)), the MMs, one RQ per channel into Y.
    """
    rng = np.random.default_rng(seed)
    x = rng.integers(-127, 128, (layer.H, layer.W, layer.C))
    shape = (layer.kh, layer.kw, layer.C) if layer.depthwise else (layer.kh, layer.kw, layer.C, layer.Cout)
    w = rng.integers(-127, 128, shape)
    bias = rng.integers(-(1 << 12), 1 << 12, layer.Cout)
    taps = layer.kh * layer.kw * (1 if layer.depthwise else layer.C)
    spread = 40 / (127 * 127 / 3 * math.sqrt(taps))        # results of about +-40 on random operands
    pairs = [arith.mantissa_shift(float(f)) for f in spread * rng.uniform(0.5, 2.0, layer.Cout)]
    table = np.array([arith.pack_rq_pair(m, s) for m, s in pairs], dtype=np.int64)
    pw = (layer.Wp - layer.W) // 2
    xp = np.pad(x, ((layer.p, layer.p), (pw, pw), (0, 0)))
    weights = _diagonal_blocks(w, params.T) if layer.depthwise else w.ravel()
    L = _layout(layer, params)
    ext_parts = [xp.ravel(), weights, table, np.tile(bias, layer.Wo)]
    e = np.cumsum([0] + [len(part) for part in ext_parts])
    ext = np.concatenate(ext_parts)
    prog = [] if layer.im2col else [build("LD", params=params, dst=L.X, src=int(e[0]), len=int(xp.size))]
    prog += [build("LD", params=params, dst=L.W, src=int(e[1]), len=len(weights)),
             build("LD", params=params, dst=L.T, src=int(e[2]), len=layer.Cout)]
    row = layer.Wo * layer.Cout
    wp = layer.Wp
    taps = layer.kw * layer.C
    for oy in range(layer.Ho):
        if layer.im2col:
            for ox in range(layer.Wo):
                for ky in range(layer.kh):
                    src = int(e[0]) + ((oy * layer.s + ky) * wp + ox * layer.s) * layer.C
                    prog.append(build("LD", params=params, dst=L.COL + (ox * layer.kh + ky) * taps, src=src,
                                      len=taps))
        prog.append(build("LD", params=params, dst=L.ACC, src=int(e[3]), len=row))
        prog += _mm_row(layer, L, params, oy)
        prog.append(build("RQ", params=params, dst=L.Y + oy * row, src=L.ACC, len=row, m=0, s=0, relu=0,
                          pc=1, tab=L.T, C=layer.Cout))
    prog.append(build("HALT", params=params))
    return prog, ext, _expected(layer, xp, w, bias, pairs), L.Y


def _expected(layer: Conv, xp: np.ndarray, w: np.ndarray, bias: np.ndarray, pairs) -> np.ndarray:
    """The layer in numpy, exact: int64 sums, then the requantizer per channel."""
    acc = np.zeros((layer.Ho, layer.Wo, layer.Cout), dtype=np.int64) + bias
    for ky in range(layer.kh):
        for kx in range(layer.kw):
            rows, cols = ky + layer.s * (layer.Ho - 1) + 1, kx + layer.s * (layer.Wo - 1) + 1
            window = xp[ky:rows:layer.s, kx:cols:layer.s]
            acc += window * w[ky, kx] if layer.depthwise else window @ w[ky, kx]
    m = np.array([p[0] for p in pairs])
    s = np.array([p[1] for p in pairs])
    return arith.requant_array(acc, m, s)


def maxpool_program(H: int, W: int, C: int, params: Params, seed: int = 1):
    """A 2 x 2 max pool of stride 2 on H x W x C (HWC, H and W even) with VADD max = 1: per output
    row, one VADD of the two input rows (W*C elements), then one per output pixel of its two
    pixels' channels (C elements), compacting the output as it goes. Returns the program, the
    external image, the expected output and where it sits in the scratchpad."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (H, W, C))
    row, out = W * C, H * W * C
    prog = [build("LD", params=params, dst=0, src=0, len=x.size)]
    for oy in range(H // 2):
        prog.append(build("VADD", params=params, dst=out, src1=2 * oy * row, src2=(2 * oy + 1) * row,
                          len=row, max=1))
        for ox in range(W // 2):
            prog.append(build("VADD", params=params, dst=out + row + (oy * W // 2 + ox) * C,
                              src1=out + 2 * ox * C, src2=out + (2 * ox + 1) * C, len=C, max=1))
    prog.append(build("HALT", params=params))
    want = x.reshape(H // 2, 2, W // 2, 2, C).max(axis=(1, 3))
    return prog, x.ravel(), want, out + row


# --------------------------------------------------------------------------- measuring


@dataclass
class Measured:
    """One layer's program on one machine: instructions (MM, all), cycles (total, mxu) and the
    MXU utilisation (useful multiply-adds over T*T*cycles, and over T*T*mxu cycles); and what
    the program would take if one MM summed the segments that now are consecutive MMs onto the
    same output tile (kernel rows, pieces of K, taps): ``merged`` cycles and instructions (an
    estimate from the spec's MM latency, K + M + MM_OVERHEAD + MM_ACC_CYCLES per MM, with K
    the sum of the segments' K)."""

    layer: Conv
    mms: int
    instructions: int
    cycles: int
    mxu: int
    utilisation: float
    array_busy: float
    merged_cycles: int
    merged_instructions: int


def merged(prog: list[Instruction], cycles: int, params: Params) -> tuple[int, int]:
    """(cycles, instructions) with each run of consecutive MMs onto the same tile (dst, M, N) as
    one: every MM after the first of a run saves its M + tb*(N-1) + MM_OVERHEAD + MM_ACC_CYCLES."""
    saved = fewer = 0
    previous = None
    for ins in prog:
        tile = (ins.dst, ins.M, ins.N) if ins.op == "MM" else None
        if tile is not None and tile == previous:
            saved += ins.spec.latency(ins.fields, params) - ins.K
            fewer += 1
        previous = tile
    return cycles - saved, len(prog) - fewer


def measure(layer: Conv, params: Params) -> Measured:
    """Run the layer's program on the reference machine and check its output.

    Raises:
        AssertionError: the machine's output differs from numpy's.
    """
    prog, ext, want, y = program(layer, params)
    need = max(len(ext), _layout(layer, params).end)
    size = 1 << max(12, (need - 1).bit_length())
    p = replace(params, SPAD_WORDS=size, EXT_WORDS=max(size, params.EXT_WORDS),
                IMEM_WORDS=max(params.IMEM_WORDS, 1 << (len(prog) - 1).bit_length()))
    r = Machine(p).run(prog, ext)
    got = s8(r.spad[y:y + want.size]).reshape(want.shape)
    assert (got == want).all(), f"{layer.name}: the machine's output differs from numpy's"
    t2 = p.T * p.T
    return Measured(layer, sum(ins.op == "MM" for ins in prog), len(prog), r.counters.cycles, r.counters.mxu,
                    layer.macs / (t2 * r.counters.cycles), layer.macs / (t2 * r.counters.mxu),
                    *merged(prog, r.counters.cycles, p))


def measure_maxpool(H: int, W: int, C: int, params: Params) -> str:
    """The max pool's line: instructions and cycles (its output checked against numpy)."""
    prog, ext, want, y = maxpool_program(H, W, C, params)
    p = replace(params, SPAD_WORDS=1 << max(12, (y + want.size - 1).bit_length()))
    r = Machine(p).run(prog, ext)
    assert (s8(r.spad[y:y + want.size]).reshape(want.shape) == want).all(), "max pool differs from numpy"
    return (f"max pool 2x2 /2 on {H} x {W} x {C} (VADD max = 1): {len(prog):,} instructions, "
            f"{r.counters.cycles:,} cycles (vpu {r.counters.vpu:,})")


def rtl_jobs(params: Params) -> list:
    """:data:`RTL_LAYERS` and an 8 x 8 x 16 max pool as co-simulation jobs (cosim.jobs.Job) for
    the machine ``params`` unchanged, each checked on the reference machine first.

    Raises:
        ValueError: a layer does not fit that machine's memories (named).
        AssertionError: the reference machine's output differs from numpy's.
    """
    from cosim.jobs import Job

    made = [(layer.name, *program(layer, params), _layout(layer, params).end) for layer in RTL_LAYERS]
    pool = maxpool_program(8, 8, 16, params)
    made.append(("max pool 2x2 /2 on 8 x 8 x 16", *pool, pool[3] + pool[2].size))
    jobs = []
    for name, prog, ext, want, y, end in made:
        if end > params.SPAD_WORDS or len(ext) > params.EXT_WORDS or len(prog) > params.IMEM_WORDS:
            raise ValueError(f"{name}: needs {end} scratchpad words, {len(ext)} external words, "
                             f"{len(prog)} instructions; the machine has {params.SPAD_WORDS}, "
                             f"{params.EXT_WORDS}, {params.IMEM_WORDS}")
        r = Machine(params).run(prog, ext)
        assert (s8(r.spad[y:y + want.size]).reshape(want.shape) == want).all(), f"{name}: differs from numpy"
        jobs.append(Job(prog, ext, name, machine=None if params == DEFAULT else params, halts=True))
    return jobs


def run_rtl(params: Params) -> tuple[list[str], bool]:
    """Run :func:`rtl_jobs` on Icarus and Verilator (report.rtl.run_rtl) and compare every memory
    word, the counters and the stop with the reference machine. Returns (the lines to print,
    every run bit-exact on both)."""
    from report.rtl import SIMULATORS
    from report.rtl import run_rtl as run_on_rtl

    jobs = rtl_jobs(params)
    results = run_on_rtl(jobs, SIMULATORS)
    lines = [f"RTL, {len(jobs)} programs ({', '.join(job.name for job in jobs)}):"]
    lines += [f"  {r.simulator:9s} {r.verdict}: {r.summary()}" for r in results]
    return lines, all(r.passed for r in results)


def plot(measured: dict[str, list[Measured]], params: Params, path: Path) -> None:
    """layers.png: per model, each layer's cycles (bars) and MXU utilisation (labels)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 2.2 + 2.2 * len(measured)))
    for k, (model, rows) in enumerate(measured.items()):
        ax = fig.add_subplot(len(measured), 1, k + 1)
        names = [m.layer.name for m in rows]
        bars = ax.barh(names, [m.cycles for m in rows], color="tab:blue")
        ax.bar_label(bars, [f"{100 * m.utilisation:.0f}%" for m in rows], padding=3, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("cycles (reference machine)")
        ax.set_title(f"{model} on T = {params.T}: cycles per layer, MXU utilisation", fontsize=10)
        ax.tick_params(axis="y", labelsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)


def table(model: str, layers: tuple[Conv, ...], params: Params,
          measured: dict[str, list[Measured]] | None = None) -> list[str]:
    """The per-layer lines and the total per image (a layer counted as often as the model has it;
    of a layer's variants, the faster); the layers' measurements go to ``measured[model]``."""
    rows = [measure(layer, params) for layer in layers]
    if measured is not None:
        measured[model] = rows
    out = [f"{model} on T = {params.T}, LANES = {params.LANES} (reference machine, cycles exact; the last "
           "two columns: one MM per output tile summing its segments, estimated):",
           f"  {'layer':38s} {'MACs':>9s} {'MMs':>6s} {'instr':>6s} {'cycles':>9s} {'MXU util':>8s} "
           f"{'array busy':>10s} {'merged':>9s} {'util':>6s}"]
    for m in rows:
        util = m.layer.macs / (params.T * params.T * m.merged_cycles)
        out.append(f"  {m.layer.name:38s} {m.layer.macs:9,d} {m.mms:6,d} {m.instructions:6,d} {m.cycles:9,d} "
                   f"{100 * m.utilisation:7.1f}% {100 * m.array_busy:9.1f}% {m.merged_cycles:9,d} "
                   f"{100 * util:5.1f}%")
    best: dict[str, Measured] = {}
    for m in rows:
        key = m.layer.variant_of or m.layer.name
        if key not in best or m.cycles < best[key].cycles:
            best[key] = m
    counted = list(best.values())
    times = [REPEATS.get(m.layer.variant_of or m.layer.name, 1) for m in counted]
    macs = sum(t * m.layer.macs for t, m in zip(times, counted, strict=True))
    cycles = sum(t * m.cycles for t, m in zip(times, counted, strict=True))
    instructions = sum(t * m.instructions for t, m in zip(times, counted, strict=True))
    fastest_merged: dict[str, Measured] = {}   # with merged MMs another variant may win
    for m in rows:
        key = m.layer.variant_of or m.layer.name
        if key not in fastest_merged or m.merged_cycles < fastest_merged[key].merged_cycles:
            fastest_merged[key] = m
    repeats = [(REPEATS.get(key, 1), m) for key, m in fastest_merged.items()]
    merged_cycles = sum(times_ * m.merged_cycles for times_, m in repeats)
    merged_instructions = sum(times_ * m.merged_instructions for times_, m in repeats)
    t2 = params.T * params.T
    chosen = ", ".join(m.layer.name for m in counted if m.layer.variant_of)
    out.append(f"  convolutions per image{f' (with {chosen})' if chosen else ''}: "
               f"{macs:,} MACs, {instructions:,} instructions, {cycles:,} cycles, "
               f"MXU utilisation {100 * macs / (t2 * cycles):.1f}%; merged: {merged_instructions:,} "
               f"instructions, {merged_cycles:,} cycles, {100 * macs / (t2 * merged_cycles):.1f}%")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("resnet8", "dscnn", "both"), default="both")
    parser.add_argument("--quick", action="store_true", help="the first layers only")
    parser.add_argument("--rtl", action="store_true",
                        help="also run small layers and a max pool on Icarus and Verilator")
    parser.add_argument("--plots", type=Path, default=PLOTS, help="folder for layers.png ('': none)")
    add_machine(parser)
    args = parser.parse_args(argv)
    params = machine(parser, args)
    models = {"resnet8": ("ResNet-8", RESNET8), "dscnn": ("DS-CNN", DSCNN)}
    chosen = list(models) if args.model == "both" else [args.model]
    measured: dict[str, list[Measured]] = {}
    for key in chosen:
        name, layers = models[key]
        print("\n".join(table(name, layers[:2] if args.quick else layers, params, measured)))
    if str(args.plots) not in ("", "."):
        plot(measured, params, args.plots / "layers.png")
    print(measure_maxpool(8, 8, 16, params) if args.quick else measure_maxpool(32, 32, 16, params))
    if args.rtl:
        lines, passed = run_rtl(params)
        print("\n".join(lines))
        return 0 if passed else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
