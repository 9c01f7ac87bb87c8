"""A groups = 1 convolution in bands, kernel row by kernel row (issue 25: the ``taps`` mode of
:mod:`compiler.convstep`).

The other modes hold every input row of a band at once (a ring of ``(rows - 1) * s_h + k_h``
padded rows) and run the kernel rows inside it. Here the loop is turned round: per band, per
kernel row ky, the band's ``rows`` input rows of that kernel row ((o0 + r) * s_h + ky, r <
rows) sit in a ring of only ``rows`` slots (row yp in slot (yp // s_h) mod rows, so the rows of
one kernel row never share a slot, and a row the next kernel row or band needs again stays
where it is); then per group of T output channels and piece of K_MAX taps, one weight chunk
(K_MAX x T words, panel-major as the ``rows`` mode's) is loaded and every MM of the band that
reads it runs. The input rows are loaded up to k_h / s_h times each, but the ring is
(k_h - 1) / rows of the band smaller, so more output rows fit a band and the weights, which
dominate the deep layers (ResNet-8's 8 x 8 x 64 convolution reads 36,864 weight words and 4,096
input words), are loaded fewer times: :func:`taps_cost` counts both for :func:`compiler.convstep.choose`.

A kernel row that falls on a padding row is skipped (no load, no MM: the products are 0); the
first MM written into an output row overwrites it (acc = 0) unless a bias was loaded there.

In place (the result written into the input's external region, compiler/spill.py): output row
o overwrites input row o when its band is stored, so the mode is allowed only when no band loads
an input row that an earlier band stored (:func:`taps_steps` checks it, :func:`taps_allowed`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sim.spec import INT8_PER_WORD

from .bias import has_bias
from .blocking import ext_address, ld
from .lowering import conv as lowering_conv
from .ops.conv2d import channel_groups, window_of
from .packing import aligned

if TYPE_CHECKING:
    from sim.spec import Params

    from .convstep import Plan
    from .emit import Emitter
    from .ir import Node
    from .ops.window import Window


@dataclass(frozen=True)
class Step:
    """One kernel row of one band: the band's first output row, its rows, ky, and per output
    row r whose input row yp = (o0 + r) * s_h + ky is not padding: (r, yp, slot, whether yp must
    be loaded into the slot)."""

    o0: int
    rows: int
    ky: int
    reads: tuple[tuple[int, int, int, bool], ...]


def taps_steps(w: Window, rows: int, slots: int = 0) -> Iterator[Step]:
    """The steps of one image in order, with the ring's contents followed from the start
    (an empty ring: every image loads its own rows); ``slots`` in the ring (``rows`` by default;
    one more lets a row load while the MMs read the others, on a machine whose engines overlap)."""
    slots = slots or rows
    held: dict[int, int] = {}
    for o0 in range(0, w.Ho, rows):
        n = min(rows, w.Ho - o0)
        for ky in range(w.kh):
            reads = []
            for r in range(n):
                yp = (o0 + r) * w.sh + ky
                if w.ph <= yp < w.ph + w.H:
                    slot = (yp // w.sh) % slots
                    reads.append((r, yp, slot, held.get(slot) != yp))
                    held[slot] = yp
            yield Step(o0, n, ky, tuple(reads))


def taps_allowed(w: Window, rows: int, in_place: bool, slots: int = 0) -> bool:
    """Whether the mode may run with ``rows`` output rows a band: written in place, no band may
    load an input row (yp - p_h) below its first output row (already stored over)."""
    return not in_place or all(yp - w.ph >= s.o0 for s in taps_steps(w, rows, slots)
                               for _, yp, _, load in s.reads if load)


def chunks(node: Node, t: int, k_max: int) -> list[tuple[int, int, int, int, int]]:
    """Per kernel row, group of T output channels and piece of K_MAX taps: (ky, co, n, k0, kc)
    and the chunk's first element in the panel-major weight is ``k_h*k*co + (ky*k + k0)*n``."""
    w = window_of(node)
    k = w.kw * w.C
    return [(ky, co, n, k0, min(k_max, k - k0)) for ky in range(w.kh)
            for co, n in channel_groups(node.shape[1], t) for k0 in range(0, k, k_max)]


def chunk_start(node: Node, ky: int, co: int, n: int, k0: int) -> int:
    """Element offset of a weight chunk in the panel-major weight (the ``rows`` mode's layout)."""
    w = window_of(node)
    k = w.kw * w.C
    return w.kh * k * co + (ky * k + k0) * n


def packed_ok(node: Node, t: int, k_max: int) -> bool:
    """Whether every chunk of a packed weight starts at byte 0 of an external word."""
    return all(aligned(chunk_start(node, ky, co, n, k0)) for ky, co, n, k0, _ in chunks(node, t, k_max))


def chunk_words(node: Node, t: int, k_max: int) -> int:
    """The weight buffer: the largest chunk, K_MAX (or k_w*C) x T words."""
    return max(kc * n for _, _, n, _, kc in chunks(node, t, k_max))


def taps_cost(node: Node, rows: int, images: int, params: Params, ld_cost: int) -> float:
    """Estimated cycles of the step's loads: the weights once a band (one LD a chunk), the input
    rows as :func:`taps_steps` loads them (one LD of W*C words each)."""
    w = window_of(node)
    lanes = params.LANES
    weight_words = w.kh * w.kw * w.C * node.shape[1]
    bands = -(-w.Ho // rows)
    loads = sum(load for s in taps_steps(w, rows) for *_, load in s.reads)
    per_band = weight_words / lanes + len(chunks(node, params.T, params.K_MAX)) * ld_cost
    return images * (bands * per_band + loads * (w.W * w.C / lanes + ld_cost))


def taps_band(em: Emitter, node: Node, plan: Plan, o0: int, load_row: Callable[[int, int], None]) -> None:
    """One band's loads and MMs (module docstring), from its first output row o0;
    ``load_row(slot_address, yp)`` brings input row yp of the band's image into a slot."""
    w, t, k_max = window_of(node), em.params.T, em.params.K_MAX
    cout, line = node.shape[1], w.Wp * w.C
    biased = has_bias(node)
    size = chunk_words(node, t, k_max)
    steps = [s for s in plan.steps if s.o0 == o0]
    first = {}
    for s in steps:
        for r, *_ in s.reads:
            first.setdefault(r, s.ky)
    for s in steps:
        for _, yp, slot, load in s.reads:
            if load:
                load_row(plan.ring + slot * line, yp)
        for ky, co, n, k0, kc in chunks(node, t, k_max):
            if ky != s.ky or not s.reads:
                continue
            buf = plan.weights + plan.turn % plan.buffers * size
            plan.turn += 1
            load_weights(em, node, buf, chunk_start(node, ky, co, n, k0), kc * n)
            stride = lowering_conv.pixel_stride(w)
            for r, _, slot, _ in s.reads:
                acc = int(biased or ky > first[r] or k0 > 0)
                for ox in range(0, w.Wo, t):
                    em.put("MM", dst=plan.acc + (r * w.Wo + ox) * cout + co,
                           A=plan.ring + slot * line + ox * stride + k0, B=buf, M=min(t, w.Wo - ox),
                           K=kc, N=n, tb=0, lda=stride, ldb=n, ldc=cout, acc=acc)


def load_weights(em: Emitter, node: Node, dst: int, start: int, count: int) -> None:
    """LD ``count`` elements of the weight's panel-major region from element ``start``."""
    entry = em.ext[em.nodes[node.ins[1]].name]
    packed = bool(entry.fmt)
    assert not packed or start % INT8_PER_WORD == 0, "weight_modes keeps packed panels aligned"
    em.put("LD", **ld(dst, ext_address(entry.addr, start, packed), count, packed))
