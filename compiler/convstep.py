"""A convolution's step in emission: whole when it fits, else in bands of output rows, its
input and its output in the scratchpad or in external memory (:mod:`compiler.spill`), its
weights whole or streamed (issue 25).

Whole (:func:`compiler.lowering.conv.lower_conv2d`): x, w, the padded image and the accumulator
of one image in the scratchpad, as before; a graph that fits compiles as it always has.

In bands: the output rows are made ``rows`` at a time. The input rows live in a *ring* of
``slots`` padded rows (W_p x C words each; input row y, counted in the padded image, in slot
y mod slots): each band loads only the rows it needs that are not there yet, each input row
once per image (LD from a spilled input, a VADD copy from one in the scratchpad, an LD of zeros
for a padding row); the border columns are zeroed once. Every MM reads one input row (the
k_w*C taps of one kernel row of T pixels), so a ring needs no contiguity across rows. An
unpadded input in the scratchpad is read where it lies. Per band: the bias rows loaded under
the accumulator, the MMs (implicit GEMM as in :mod:`compiler.lowering.conv`; depthwise by
diagonal blocks; shared taps by the tap row), one RQ, and for a spilled output one ST of the
band (the RQ in place), or, when the convolution finishes a residual add, the add's rows
(:mod:`compiler.residual`). An output row is stored after every input row of its index was loaded
into the ring, so a stride-1 convolution may write its input's region in place.

The weights (:func:`weight_modes`): ``whole`` (loaded once), ``panel`` (a column panel of T
output channels, k_h*k_w*C x T, loaded per band; the weight is stored panel-major, T wide) or
``rows`` (one kernel row of a panel, k_w*C x T, loaded per band and kernel row); a depthwise
convolution's diagonal blocks whole or one group of T channels at a time. Of the ways that fit
the scratchpad, the one with the fewest weight words loaded (and LDs) wins, with the most
output rows per band.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from . import residual
from .allocator import ScratchpadFull
from .bias import has_bias, region_name
from .convtaps import chunk_words, load_weights, packed_ok, taps_allowed, taps_band, taps_cost, taps_steps
from .errors import plural
from .int4 import is_int4
from .lowering import conv as lowering_conv
from .lowering.conv import conv_requantizer, shared_mms
from .ops import Op
from .ops.conv2d import channel_groups, diagonal_offset, diagonal_region, taps_region, window_of, zeros_region
from .packing import aligned

if TYPE_CHECKING:
    from .emit import Emitter
    from .ir import Node
    from .layout import ExtEntry

LD_COST = 8
"""Cycles an LD costs beside its beats, for choosing among the ways (an estimate: the DMA's
overhead and the dispatch)."""


@dataclass
class Plan:
    """One way to run the step: the weights' mode, output rows per band, and the buffers.

    Attributes:
        mode: ``whole``, ``panel`` or ``rows`` (see the module docstring).
        rows: output rows per band.
        weights: scratchpad address of the weights (whole) or of the weight buffer.
        wwords: the weight buffer's words (0 when the weight is a tensor of its own, loaded whole).
        ring: the ring of input rows (None: the input is read where it lies).
        slots: rows in the ring.
        acc: the accumulator of one band.
    """

    mode: str
    rows: int
    weights: int = -1
    wwords: int = 0
    ring: int | None = None
    slots: int = 0
    acc: int = -1
    image: tuple = ()
    """(b, the input's region or None, its scratchpad address or None) of the band under way."""
    row_by_row: bool = False
    """A shared-tap convolution whose window does not fit: one input row in the ring at a time,
    loaded before the MMs of its kernel row (one output row per band)."""
    buffers: int = 1
    """``taps`` mode: weight chunk buffers, used in turn (2 on a machine whose engines overlap:
    a chunk loads while the MMs read the one before)."""
    turn: int = 0
    """``taps`` mode: the chunks loaded so far (the next goes to buffer turn mod buffers)."""
    steps: list = field(default_factory=list)
    """``taps`` mode: the image's steps under way (:func:`compiler.convtaps.taps_steps`)."""


def conv_step(em: Emitter, node: Node) -> None:
    """The step: whole if neither x nor the result is spilled and it fits, else in bands.

    Raises:
        CompileError: no way fits the scratchpad (naming the node and the words the smallest
            way needs), or what the requantizer refuses.
    """
    if node.ins[0] not in em.spills and node.id not in em.spills:
        mark = em.checkpoint()
        try:
            x = em.ensure(node.ins[0])
            em.lower(node, [x, -1 if window_of(node).depthwise else em.ensure(node.ins[1])])
            return
        except ScratchpadFull:
            if not em.stream:
                raise
            em.rollback(mark)
    banded(em, node)


def banded(em: Emitter, node: Node) -> None:
    """The step in bands (module docstring)."""
    x_entry, out_entry = em.spills.get(node.ins[0]), em.spills.get(node.id)
    x_addr = None if x_entry is not None else em.ensure(node.ins[0])
    out = None if out_entry is not None else em.address(node.id)
    rq = conv_requantizer(em, node)
    w = window_of(node)
    cout = node.shape[1]
    row_words = w.Wo * cout
    rows_of_sum = residual.reserve(em, node, row_words)
    plan = None
    try:
        plan = choose(em, node, x_addr is None)
    except ScratchpadFull:
        if rows_of_sum is None:
            raise
    if plan is None:            # not beside the sum's rows: the add runs as its own step
        residual.release(em, node, rows_of_sum, row_words, done=False)
        rows_of_sum = None
        plan = choose(em, node, x_addr is None)
    epilogue = None if rows_of_sum is None else residual.start(em, node, rows_of_sum, row_words)
    for b in range(em.nodes[node.ins[0]].shape[0] // (w.H * w.W)):
        loaded = -1
        plan.steps = list(taps_steps(w, plan.rows, plan.slots)) if plan.mode == "taps" else []
        for o0 in range(0, w.Ho, plan.rows):
            rows = min(plan.rows, w.Ho - o0)
            loaded = load_rows(em, node, plan, b, o0, rows, loaded, x_entry, x_addr)
            plan.image = (b, x_entry, x_addr)
            row_at = row_address(node, plan, b, x_addr)
            if has_bias(node):
                for r in range(rows):
                    em.put("LD", dst=plan.acc + r * row_words, src=em.ext[region_name(node)].addr,
                           len=row_words)
            band_mms(em, node, plan, row_at, o0, rows)
            step = 1 if plan.mode == "taps" and em.params.OVERLAP else rows
            for r in range(0, rows, step):
                first, at = (b * w.Ho + o0 + r) * row_words, plan.acc + r * row_words
                words = min(step, rows - r) * row_words
                em.put("RQ", dst=at if out is None else out + first, src=at, len=words, **rq)
                if epilogue is not None:
                    residual.finish_rows(em, epilogue, first, at, words)
                elif out_entry is not None:
                    em.put("ST", src=at, dst=out_entry.addr + first, len=words)
    release(em, node, plan, rq)
    if rows_of_sum is not None:
        residual.release(em, node, rows_of_sum, row_words)


def release(em: Emitter, node: Node, plan: Plan, rq: dict[str, int]) -> None:
    """The band's buffers and the requantization table back to the allocator."""
    w = window_of(node)
    em.alloc.release(plan.acc, plan.rows * w.Wo * node.shape[1], f"accumulator of node {node.id}")
    if plan.ring is not None:
        em.alloc.release(plan.ring, plan.slots * w.Wp * w.C, f"input rows of node {node.id}")
    if plan.wwords:
        em.alloc.release(plan.weights, plan.wwords, f"weights of node {node.id}")
    if rq.get("pc"):
        em.alloc.release(rq["tab"], rq["C"], f"requantization table of node {node.id}")


def weight_modes(em: Emitter, node: Node) -> list[str]:
    """The ways the weights may be held: whole always; a groups = 1 weight streams in panels
    or kernel rows when it is an int8 source not loaded yet that only this node reads (and,
    packed, whose panels start at byte 0 of a word); diagonal blocks stream by group."""
    w = window_of(node)
    if w.shared:
        return ["whole"]
    if w.depthwise:
        return ["whole", "panel"]
    weight = em.nodes[node.ins[1]]
    entry = em.ext[weight.name]
    k, cout = w.kh * w.kw * w.C, node.shape[1]
    streams = (em.unloaded_source(weight.id) and em.readers(weight.id) == [node.id] and not is_int4(weight)
               and weight.op is Op.WEIGHT)
    panels_ok = not entry.fmt or all(aligned(k * co) and aligned(w.kw * w.C * n)
                                     for co, n in channel_groups(cout, em.params.T))
    taps_ok = not entry.fmt or packed_ok(node, em.params.T, em.params.K_MAX)
    return ["whole"] + (["panel", "rows"] if streams and panels_ok else []) + (["taps"] if streams and taps_ok
                                                                                else [])


def load_cost(em: Emitter, node: Node, mode: str, rows: int, ring: bool) -> float:
    """Estimated cycles of the step's loads: the weights' (:func:`weight_cost`) and, into a
    ring, the input rows' (each once, the padding rows as zeros; the ``taps`` mode's as
    :func:`compiler.convtaps.taps_cost` counts them, its weights included)."""
    w = window_of(node)
    images = em.nodes[node.ins[0]].shape[0] // (w.H * w.W)
    if mode == "taps":
        return taps_cost(node, rows, images, em.params, LD_COST)
    lanes = em.params.LANES
    rows_in = w.H * (w.W * w.C / lanes + LD_COST) + (w.Hp - w.H) * (w.Wp * w.C / lanes + LD_COST)
    return weight_cost(em, node, mode, rows) + (images * rows_in if ring else 0)


def weight_cost(em: Emitter, node: Node, mode: str, rows: int) -> float:
    """Estimated cycles of weight loads over the step (a whole weight loads once)."""
    w = window_of(node)
    bands = em.nodes[node.ins[0]].shape[0] // (w.H * w.W) * -(-w.Ho // rows)
    groups = len(channel_groups(node.shape[1], em.params.T))
    words = w.kh * w.kw * (w.C * node.shape[1] if not w.depthwise else w.C * em.params.T)
    loads = {"whole": 0, "panel": groups, "rows": groups * w.kh}[mode]
    per_band = 0 if mode == "whole" else words / em.params.LANES + loads * LD_COST
    return bands * per_band


def choose(em: Emitter, node: Node, ring_needed: bool) -> Plan:
    """The cheapest way that fits (:func:`weight_cost`), its buffers allocated.

    Raises:
        CompileError: none fits; the message names the node and what the smallest way needs.
    """
    w = window_of(node)
    ring = ring_needed or w.padded
    found = []
    for mode in weight_modes(em, node):
        if mode == "taps" and not ring:
            continue
        for rows in range(w.Ho, 0, -1):
            allowed = mode != "taps" or taps_allowed(w, rows, in_place(em, node))
            if allowed and _fits(em, node, Plan(mode, rows), ring):
                found.append((load_cost(em, node, mode, rows, ring), -rows, mode))
                break
    if not found and w.shared and ring and _fits(em, node, Plan("whole", 1, row_by_row=True), ring):
        return allocate(em, node, Plan("whole", 1, row_by_row=True), ring, emit=True)
    if not found:
        need = (w.kh * w.Wp * w.C if ring else 0) + w.Wo * node.shape[1]
        raise ScratchpadFull(f"{node.describe()} does not fit the scratchpad even one output row at a time "
                           f"(its input rows and one row of accumulator take {plural(need, 'word')} beside "
                           f"the weights, and {plural(em.alloc.largest_free(), 'word')} are free in one "
                           "piece)",
                           "use a machine with a larger scratchpad (SPAD_WORDS), or fewer channels", node.id)
    _, rows, mode = min(found)
    if mode == "taps" and em.params.OVERLAP:
        plan = overlapped(em, node, -rows, ring)
        if plan is not None:
            return allocate(em, node, plan, ring, emit=True)
    return allocate(em, node, Plan(mode, -rows), ring, emit=True)


def overlapped(em: Emitter, node: Node, rows: int, ring: bool) -> Plan | None:
    """On a machine whose engines overlap, a ``taps`` plan whose loads can run beside the MMs:
    a spare ring slot and two weight chunk buffers if they fit, else two buffers, else the
    spare slot, each with as many output rows a band as fit, down to half of ``rows`` (more
    bands load the weights more times, but the DMA then works while the MXU does); None when
    none fits."""
    w = window_of(node)
    for spare, buffers in ((1, 2), (0, 2), (1, 1)):
        for r in range(rows, (rows - 1) // 2, -1):
            plan = Plan("taps", r, buffers=buffers, slots=r + spare)
            if taps_allowed(w, r, in_place(em, node), plan.slots) and _fits(em, node, plan, ring):
                return plan
    return None


def in_place(em: Emitter, node: Node) -> bool:
    """Whether the result's external region overlaps the input's (compiler/spill.py), or the
    region of the sum its bands write instead (:mod:`compiler.residual`)."""
    x = em.spills.get(node.ins[0])
    written = [em.spills.get(node.id), em.spills.get(residual.writes_sum(em, node))]
    return x is not None and any(out is not None and x.addr < out.end and out.addr < x.end for out in written)


def _fits(em: Emitter, node: Node, plan: Plan, ring: bool) -> bool:
    """Whether a plan's buffers can be allocated now (tried and undone)."""
    mark = em.checkpoint()
    try:
        allocate(em, node, plan, ring)
    except ScratchpadFull:
        return False
    finally:
        em.rollback(mark)
    return True


def allocate(em: Emitter, node: Node, plan: Plan, ring: bool, emit: bool = False) -> Plan:
    """Allocate a plan's buffers (weights, ring, accumulator); ``emit``: also write the loads
    that happen once (a whole weight, the ring's zero border), and mark a streamed weight
    panel-major. Raises ScratchpadFull when one does not fit."""
    w = window_of(node)
    t = em.params.T
    if plan.mode == "whole" and not w.depthwise:
        plan.weights = em.ensure(node.ins[1])
    else:
        region = em.ext[taps_region(node) if w.shared else diagonal_region(node)] if w.depthwise else None
        plan.wwords = {"whole": region.words if region else 0, "panel": (w.kh * w.kw * (w.C if not w.depthwise
                       else t) * t), "rows": w.kw * w.C * t,
                       "taps": plan.buffers * chunk_words(node, t, em.params.K_MAX)}[plan.mode]
        plan.weights = em.alloc.alloc(plan.wwords, f"weights of node {node.id}")
        if emit and plan.mode == "whole":
            em.put("LD", dst=plan.weights, src=region.addr, len=region.words)
        if emit and not w.depthwise:
            em.out.panels[em.nodes[node.ins[1]].name] = t
    if ring:
        plan.slots = 1 if plan.row_by_row else (plan.slots or plan.rows) if plan.mode == "taps" else \
            min(w.Hp, (plan.rows - 1) * w.sh + w.kh)
        plan.ring = em.alloc.alloc(plan.slots * w.Wp * w.C, f"input rows of node {node.id}")
        if emit and w.pw:
            zeros = em.ext[zeros_region(node)]
            words = plan.slots * w.Wp * w.C
            for at in range(0, words, zeros.words):
                em.put("LD", dst=plan.ring + at, src=zeros.addr, len=min(zeros.words, words - at))
    plan.acc = em.alloc.alloc(plan.rows * w.Wo * node.shape[1], f"accumulator of node {node.id}")
    return plan


def row_address(node: Node, plan: Plan, b: int, x_addr: int | None) -> Callable[[int], int]:
    """Scratchpad address of input row ``yp`` (counted in the padded image) of image b."""
    w = window_of(node)
    if plan.ring is None:
        image = x_addr + b * w.H * w.W * w.C
        return lambda yp: image + yp * w.W * w.C
    return lambda yp: plan.ring + (yp % plan.slots) * w.Wp * w.C


def load_rows(em: Emitter, node: Node, plan: Plan, b: int, o0: int, rows: int, loaded: int,
              x_entry: ExtEntry | None, x_addr: int | None) -> int:
    """Bring the band's input rows not in the ring yet; returns the last row loaded."""
    if plan.ring is None or plan.row_by_row or plan.mode == "taps":
        return loaded
    w = window_of(node)
    last = (o0 + rows - 1) * w.sh + w.kh - 1
    for yp in range(max(loaded + 1, o0 * w.sh), last + 1):
        load_row(em, node, plan.ring + (yp % plan.slots) * w.Wp * w.C, yp, b, x_entry, x_addr)
    return max(loaded, last)


def load_row(em: Emitter, node: Node, slot: int, yp: int, b: int, x_entry: ExtEntry | None,
             x_addr: int | None) -> None:
    """Row ``yp`` of image b's padded input into a slot: zeros (a padding row), an LD from the
    spilled input, or a VADD copy from the input in the scratchpad (into the slot's interior)."""
    w = window_of(node)
    line = w.W * w.C
    y = yp - w.ph
    if not 0 <= y < w.H:
        em.put("LD", dst=slot, src=em.ext[zeros_region(node)].addr, len=w.Wp * w.C)
    elif x_entry is not None:
        em.put("LD", dst=slot + lowering_conv.interior(w), src=x_entry.addr + (b * w.H + y) * line, len=line)
    else:
        src = x_addr + (b * w.H + y) * line
        em.put("VADD", dst=slot + lowering_conv.interior(w), src1=src, src2=src, len=line, relu=0, max=1)


def band_mms(em: Emitter, node: Node, plan: Plan, row_at: Callable[[int], int], o0: int, rows: int) -> None:
    """The MMs of one band, with the weight loads of a streamed mode between them."""
    w = window_of(node)
    if plan.row_by_row:
        shared_by_rows(em, node, plan, o0)
    elif w.shared:
        contiguous = w.kw == w.Wp and (plan.ring is None or plan.slots >= w.Hp)
        for r in range(rows):
            for fields in shared_mms(node, row_at, plan.weights, plan.acc + r * w.Wo * w.C, o0 + r, em.params,
                                     has_bias(node), contiguous):
                em.put("MM", **fields)
    elif w.depthwise:
        depthwise_band(em, node, plan, row_at, o0, rows)
    elif plan.mode == "taps":
        b, x_entry, x_addr = plan.image
        taps_band(em, node, plan, o0, lambda slot, yp: load_row(em, node, slot, yp, b, x_entry, x_addr))
    else:
        dense_band(em, node, plan, row_at, o0, rows)


def shared_by_rows(em: Emitter, node: Node, plan: Plan, oy: int) -> None:
    """A shared-tap convolution's output row ``oy``, one input row at a time: per kernel row ky,
    the row loaded into the ring's one slot, then per output pixel and group of channels one MM
    of its k_w taps (A the taps of row ky, B the pixels, ``ldb = C``)."""
    w, params = window_of(node), em.params
    b, x_entry, x_addr = plan.image
    for ky in range(w.kh):
        load_row(em, node, plan.ring, oy * w.sh + ky, b, x_entry, x_addr)
        for ox in range(w.Wo):
            for c0, n in channel_groups(w.C, params.T):
                pixel = plan.ring + ox * lowering_conv.pixel_stride(w) + c0
                for k0 in range(0, w.kw, params.K_MAX):
                    k = min(params.K_MAX, w.kw - k0)
                    em.put("MM", dst=plan.acc + ox * w.C + c0, A=plan.weights + ky * w.kw + k0,
                           B=pixel + k0 * w.C, M=1, K=k, N=n, tb=0, lda=k, ldb=w.C, ldc=w.C,
                           acc=int(has_bias(node) or ky > 0 or k0 > 0))


def dense_band(em: Emitter, node: Node, plan: Plan, row_at: Callable[[int], int], o0: int, rows: int) -> None:
    """groups = 1: per group of T output channels, kernel row, output row, tile of T pixels and
    piece of K_MAX taps, one MM adding into the band's accumulator."""
    w, t, k_max = window_of(node), em.params.T, em.params.K_MAX
    k, cout = w.kw * w.C, node.shape[1]
    biased = has_bias(node)
    for co, n in channel_groups(cout, t):
        if plan.mode == "panel":
            load_weights(em, node, plan.weights, w.kh * k * co, w.kh * k * n)
        for ky in range(w.kh):
            if plan.mode == "rows":
                load_weights(em, node, plan.weights, w.kh * k * co + ky * k * n, k * n)
            for r in range(rows):
                a_row = row_at((o0 + r) * w.sh + ky)
                for ox in range(0, w.Wo, t):
                    for k0 in range(0, k, k_max):
                        b, ldb = _dense_b(plan, ky, k, k0, co, n, cout)
                        em.put("MM", dst=plan.acc + (r * w.Wo + ox) * cout + co,
                               A=a_row + ox * lowering_conv.pixel_stride(w) + k0, B=b, M=min(t, w.Wo - ox),
                               K=min(k_max, k - k0),
                               N=n, tb=0, lda=lowering_conv.pixel_stride(w), ldb=ldb, ldc=cout,
                               acc=int(biased or ky > 0 or k0 > 0))


def _dense_b(plan: Plan, ky: int, k: int, k0: int, co: int, n: int, cout: int) -> tuple[int, int]:
    """MM's B and ldb for kernel row ky, taps from k0, output channels co.. in each mode."""
    if plan.mode == "whole":
        return plan.weights + (ky * k + k0) * cout + co, cout
    if plan.mode == "panel":
        return plan.weights + (ky * k + k0) * n, n
    return plan.weights + k0 * n, n


def depthwise_band(em: Emitter, node: Node, plan: Plan, row_at: Callable[[int], int], o0: int,
                   rows: int) -> None:
    """Depthwise: per group of n <= T channels (its diagonal blocks loaded when streamed), tap,
    output row and tile of T pixels, one MM by the tap's diagonal block."""
    w, params = window_of(node), em.params
    region = em.ext[diagonal_region(node)]
    for g, (c0, n) in enumerate(channel_groups(w.C, params.T)):
        base = diagonal_offset(node, g, 0, params)
        if plan.mode == "panel":
            em.put("LD", dst=plan.weights, src=region.addr + base, len=w.kh * w.kw * n * n)
        for tap in range(w.kh * w.kw):
            ky, kx = divmod(tap, w.kw)
            block = (plan.weights + tap * n * n) if plan.mode == "panel" else \
                plan.weights + diagonal_offset(node, g, tap, params)
            for r in range(rows):
                a_row = row_at((o0 + r) * w.sh + ky)
                for ox in range(0, w.Wo, params.T):
                    em.put("MM", dst=plan.acc + (r * w.Wo + ox) * w.C + c0,
                           A=a_row + kx * w.C + ox * lowering_conv.pixel_stride(w) + c0, B=block,
                           M=min(params.T, w.Wo - ox), K=n, N=n, tb=0, lda=lowering_conv.pixel_stride(w),
                           ldb=n, ldc=w.C, acc=int(has_bias(node) or tap > 0))

