"""The requantizer: LANES pipelined lanes of ``sim.arith.requant``, and the RQ unit around them.

``requant(a, m, s, relu)`` (GA2.md section 4): p = a * m exactly (a signed 32-bit, m a 24-bit
mantissa, so |p| < 2**55), y = sign(p) * ((|p| + 2**(s-1)) >> s), saturated to -127..127, and
with relu clamped below at 0.

How the lanes compute it without an absolute value and without a 56-bit rounding adder. With
u = 2**(s-1) and floor division throughout:

* for p >= 0, y = floor((p + u) / 2u); for p < 0, y = -floor((-p + u) / 2u) = floor((p - 1 + u) / 2u);
* floor((x + u) / 2u) = floor((floor(x / u) + 1) / 2) for any integer x (nested floors);
* floor((p - 1) / u) = floor(p / u) - 1 when u divides p, else floor(p / u).

So with q = p >> (s-1) (arithmetic shift) and ``corr`` = (p < 0 and the low s-1 bits of p are
zero), y = (q - corr + 1) >> 1. Only the low 10 bits of q matter: when q lies outside
-512..511 the result saturates, and whether it does is read off p directly (its bits from
s+8 up all equal its sign bit) in parallel with the shift.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, Value, signed
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from sim import arith, spec
from sim.spec import Params

from .component import Checked
from .isa import fields_view
from .lanes import delay, lane_mask, last_beat
from .ports import unit_members

A_BITS = spec.WORD_BITS
"""Width of a requantizer input: a signed 32-bit accumulator."""
M_BITS = arith.MANTISSA_BITS
"""Width of the mantissa m (unsigned)."""
S_BITS = 6
"""Width of the shift s (the RQ field; legal 1..63)."""
P_BITS = A_BITS + M_BITS
"""Width of the exact product p = a * m, signed: |p| < 2**55."""
SPLIT = 17
"""a and m are cut at bit 17, so that each partial product fits an 18 x 18 signed multiplier
(a DSP block of the ECP5): a = a_hi * 2**17 + a_lo, m = m_hi * 2**17 + m_lo, with a_lo, m_lo
17-bit unsigned, a_hi 15-bit signed and m_hi 7-bit unsigned."""
Q_BITS = 10
"""Bits of the shifted product kept: -512..511 covers every result that does not saturate."""


class Requantizer(Checked):
    """LANES requantizer lanes sharing one pipeline: ``y = requant(a, m, s, relu)`` per lane.

    The factor (m, s, relu) travels down the pipeline with the data, so every cycle's inputs
    are independent of the others'.

    Parameters:
        lanes: number of lanes (the machine's LANES).

    Members:
        a In(ArrayLayout(signed(32), lanes)): the accumulators, sampled every cycle.
        m In(24), unsigned: the mantissa, sampled with a (per lane, as ``en`` says).
        s In(6), unsigned: the shift, 1..63 (0 gives an undefined result), sampled with a.
        relu In(1): clamp negative results to 0, sampled with a.
        en In(lanes), all ones unless driven: lane k samples its a and m only in cycles with
            bit k high (the RQ unit raises the bits of the beat's valid words). Each lane thus
            holds its own copy of m, with its own enable, which Yosys cannot merge: the copy sits
            beside the lane's DSP blocks instead of one register fanning out to all of them
            (that route led the critical path on the ECP5). A lane whose bit is low computes on
            stale a and m; its result is not written.
        y Out(ArrayLayout(signed(8), lanes)): the results, -127..127, LATENCY cycles after
            their inputs were presented (a registered output).

    Pipeline (each stage a register):
        1. inputs a, m, s, relu (the multiplier inputs);
        2. the four partial products a_lo*m_lo, a_lo*m_hi, a_hi*m_lo, a_hi*m_hi (18 x 18 each,
           four DSP blocks per lane); the masks of the bits below s-1 and from s+8 up;
        3. the partial products again (a register at the DSP block, one at the adders);
        4. two partial sums, x = a_lo*m (unsigned) and z = a_hi*m (signed), one adder each;
        5. p = x + z * 2**17, one adder;
        6. q = p >> (s-1) (low 10 bits, a barrel shifter), the saturation test (do p's bits
           from s+8 up all equal its sign?) and the tie correction (p < 0 with its low s-1
           bits zero), side by side;
        7. y = (q - corr + 1) >> 1, saturated to -127..127 (the saturation read off q and
           corr beside the add), relu.

    Latency: LATENCY = 7 cycles, one result per lane per cycle.

    Raises:
        ValueError: lanes is not a positive int.
    """

    LATENCY = 7
    """Cycles from a, m, s, relu presented to y valid."""
    PARTIAL_PRODUCTS = 4
    """Multipliers per lane, each at most 18 x 18 bits (a DSP block of the ECP5; see SPLIT)."""

    @classmethod
    def check(cls, lanes: int) -> None:
        """ValueError for lanes that is not a positive int."""
        if not isinstance(lanes, int) or lanes < 1:
            raise ValueError(f"Requantizer: lanes={lanes!r} must be a positive int")

    def __init__(self, lanes: int):
        self.lanes = lanes
        super().__init__({
            "a": In(data.ArrayLayout(signed(A_BITS), lanes)),
            "m": In(M_BITS),
            "s": In(S_BITS),
            "relu": In(1),
            "en": In(lanes, init=(1 << lanes) - 1),
            "y": Out(data.ArrayLayout(signed(8), lanes)),
        })

    def elaborate(self, platform):
        m = Module()
        shift_amount, relu_last, low_mask, high_mask = self._shared(m)
        for lane in range(self.lanes):
            # 1: the multiplier inputs, the lane's own copy of m among them
            a1 = Signal(signed(A_BITS), name=f"a1_{lane}")
            m1 = Signal(M_BITS, name=f"m1_{lane}")
            with m.If(self.en[lane]):
                m.d.sync += [a1.eq(self.a[lane]), m1.eq(self.m)]
            a_lo = a1[:SPLIT]                       # unsigned
            a_hi = a1[SPLIT:].as_signed()           # signed
            m_lo = m1[:SPLIT]
            m_hi = m1[SPLIT:]

            # 2: the partial products (each fits an 18 x 18 signed multiplier)
            lo_bits, a_hi_bits, m_hi_bits = SPLIT, A_BITS - SPLIT, M_BITS - SPLIT
            pp_ll = Signal(lo_bits + lo_bits, name=f"pp_ll{lane}")
            pp_lh = Signal(lo_bits + m_hi_bits, name=f"pp_lh{lane}")
            pp_hl = Signal(signed(a_hi_bits + lo_bits + 1), name=f"pp_hl{lane}")    # unsigned
            pp_hh = Signal(signed(a_hi_bits + m_hi_bits + 1), name=f"pp_hh{lane}")  # operands widen by 1
            m.d.sync += [pp_ll.eq(a_lo * m_lo), pp_lh.eq(a_lo * m_hi),
                         pp_hl.eq(a_hi * m_lo), pp_hh.eq(a_hi * m_hi)]

            # 3: the products once more, so that the DSP block's output register can sit at the
            # block and the adders anywhere (the route from a DSP tile costs up to 3 ns)
            pp_ll, pp_lh, pp_hl, pp_hh = (delay(m, pp, 1, f"{pp.name}_q")
                                          for pp in (pp_ll, pp_lh, pp_hl, pp_hh))

            # 4: x = a_lo * m, z = a_hi * m
            x = Signal(SPLIT + M_BITS, name=f"x{lane}")
            z = Signal(signed(A_BITS - SPLIT + M_BITS + 1), name=f"z{lane}")
            m.d.sync += [x.eq(pp_ll + (pp_lh << SPLIT)), z.eq(pp_hl + (pp_hh << SPLIT))]

            # 5: the exact product
            p = Signal(signed(P_BITS), name=f"p{lane}")
            m.d.sync += p.eq(x + (z << SPLIT))

            # 6: shift, saturation test, tie correction
            q = Signal(signed(Q_BITS), name=f"q{lane}")
            in_range = Signal(name=f"in_range{lane}")
            negative = Signal(name=f"negative{lane}")
            corr = Signal(name=f"corr{lane}")
            sign_bits = Mux(p[-1], (1 << P_BITS) - 1, 0)
            m.d.sync += [
                q.eq(p >> shift_amount),     # the shift amount straight from a register
                in_range.eq(((p.as_unsigned() ^ sign_bits) & high_mask) == 0),
                negative.eq(p[-1]),
                corr.eq(p[-1] & ((p.as_unsigned() & low_mask) == 0)),
            ]

            # 7: round, saturate, relu. The rounding add and the saturation tests run side by
            # side: whether (q - corr + 1) >> 1 leaves -127..127 is read off q and corr with
            # constant comparisons (LUTs), not off the sum (a carry chain after a carry chain).
            limit = arith.INT8_MAX
            rounded = Signal(signed(8), name=f"rounded{lane}")   # its low 8 bits suffice
            m.d.comb += rounded.eq((q - corr + 1) >> 1)
            above, below = _beyond_int8(q, corr)
            high = Mux(in_range, above, ~negative)     # the result is 127
            low = Mux(in_range, below, negative)       # the result is -127
            value = Mux(high, limit, Mux(low, -limit, rounded))
            is_negative = low | (~high & rounded[-1])
            y = Signal(signed(8), name=f"y{lane}")
            m.d.sync += y.eq(Mux(relu_last & is_negative, 0, value))
            m.d.comb += self.y[lane].eq(y)
        return m

    def _shared(self, m: Module):
        """What the lanes share, delayed to the stage that uses it: s - 1, relu, and the rounding
        and saturation masks. Returns them in that order."""
        # The factor's shift and relu, shared by the lanes, delayed to the stage that uses them:
        # s - 1 (computed in stage 2, so that no subtraction precedes the barrel shifter) in
        # stage 6, relu in stage 7. The mantissa is per lane (below).
        s1 = Signal(S_BITS)
        relu1 = Signal()
        m.d.sync += [s1.eq(self.s), relu1.eq(self.relu)]
        shift_amount = delay(m, (s1 - 1)[:S_BITS], 4, "s_minus_1")   # s - 1: 0..62, a register
        relu_last = delay(m, relu1, 5, "relu")

        # The masks (from s1, registered in stage 2), used in stage 6: bit k of low_mask is set for
        # k < s-1, bit k of high_mask for k >= s+8.
        low_mask2 = Signal(P_BITS)
        high_mask2 = Signal(P_BITS)
        m.d.sync += [
            low_mask2.eq(Cat(s1 > k + 1 for k in range(P_BITS))),
            high_mask2.eq(Cat(s1 + (Q_BITS - 2) <= k for k in range(P_BITS))),
        ]
        low_mask = delay(m, low_mask2, 3, "low_mask")
        high_mask = delay(m, high_mask2, 3, "high_mask")
        return shift_amount, relu_last, low_mask, high_mask


def _beyond_int8(q: Value, corr: Value) -> tuple[Value, Value]:
    """(y > 127, y < -127) for y = (q - corr + 1) >> 1, q a signed Q_BITS value, corr 0 or 1.

    y > 127 when q - corr >= 255: q >= 256, or q = 255 without the correction; y < -127 when
    q - corr <= -256: q <= -256, or q = -255 with the correction. Each test looks at q's bits
    against a constant (LUT logic, no carry chain).
    """
    top = Q_BITS - 1
    low = q[:top - 1].as_unsigned()                         # the bits below the top two
    at_least_256 = ~q[top] & q[top - 1]                     # 256 <= q <= 511
    at_most_minus_256 = q[top] & (~q[top - 1] | (low == 0))  # -512 <= q <= -256
    is_255 = ~q[top] & ~q[top - 1] & (low == (1 << (top - 1)) - 1)
    is_minus_255 = q[top] & q[top - 1] & (low == 1)
    return at_least_256 | (is_255 & ~corr), at_most_minus_256 | (is_minus_255 & corr)


class RequantUnit(Checked):
    """The RQ unit: ``S[dst+i] = requant(s32(S[src+i]), m, s, relu)`` for i < len, LANES per cycle.

    Parameters:
        params: the machine's :class:`sim.spec.Params` (LANES, SPAD_WORDS).

    Members (``hw.ports.unit_members(params, n_read=1, write=True)``):
        start In(1), opcode In(4), fields In(124), done Out(1): the execute-stage contract.
        rd0 Out(ReadPort): reads of the source, LANES words per beat.
        wr Out(WritePort): writes of the results (int8 sign-extended to 32 bits), masked
            to the words below len.
        An idle unit drives every output to 0.

    Schedule, with d the dispatch cycle and n = ceil(len / LANES) beats:
        beat b is read in cycle d + b (the first address straight from ``fields``), its data
        enters the :class:`Requantizer` SPAD_READ_LATENCY cycles later and leaves it
        Requantizer.LATENCY = 7 cycles after that; it is written in cycle d + b + RQ_OVERHEAD,
        in order. ``done`` is the cycle of the last write, d + n + RQ_OVERHEAD - 1. In place
        (dst == src) is safe: a beat is written RQ_OVERHEAD cycles after it is read, and the
        beats read later lie further on.

    Latency: n + RQ_OVERHEAD cycles, RQ_OVERHEAD = SPAD_READ_LATENCY + Requantizer.LATENCY.

    Errors: none; the execute stage dispatches only checked instructions (len >= 1,
    1 <= s <= 63, both regions inside the scratchpad, dst == src or disjoint).

    Raises:
        TypeError: params is not a :class:`sim.spec.Params`.
    """

    OPCODES = ("RQ",)
    """The instructions this unit executes."""

    def __init__(self, params: Params):
        assert spec.RQ_OVERHEAD == spec.SPAD_READ_LATENCY + Requantizer.LATENCY, \
            "sim.spec.RQ_OVERHEAD must be what hw/requant.py realises"
        self.params = params
        super().__init__(unit_members(params, n_read=1, write=True))

    def elaborate(self, platform):
        m = Module()
        lanes = self.params.LANES
        rq = fields_view("RQ", self.fields)
        m.submodules.lanes = lanes_ = Requantizer(lanes)

        # Issue: one beat read per cycle, from the dispatch cycle on.
        running = Signal()
        src_q = Signal(spec.ADDR_BITS)
        left_q = Signal(spec.ADDR_BITS)
        issue = Signal()
        src = Signal(spec.ADDR_BITS)
        left = Signal(spec.ADDR_BITS)
        last = Signal()
        m.d.comb += [
            issue.eq(self.start | running),
            src.eq(Mux(self.start, rq.src, src_q)),
            left.eq(Mux(self.start, rq.len, left_q)),
            last.eq(last_beat(left, lanes)),
            self.rd0.en.eq(issue),
            self.rd0.addr.eq(Mux(issue, src, 0)),
        ]
        with m.If(issue):
            m.d.sync += [running.eq(~last), src_q.eq(src + lanes), left_q.eq(left - lanes)]

        # A beat's valid words (its write lanes) and whether it is the last beat follow it down
        # a delay line as long as the read latency plus the pipeline. Its data enters the lanes
        # when it returns, each lane sampling only if its word is valid.
        depth = spec.SPAD_READ_LATENCY + Requantizer.LATENCY
        valid = [issue] + [Signal(name=f"valid{k}") for k in range(1, depth + 1)]
        final = [issue & last] + [Signal(name=f"last{k}") for k in range(1, depth + 1)]
        mask = [Mux(issue, lane_mask(left, lanes), 0)]
        mask += [Signal(lanes, name=f"mask{k}") for k in range(1, depth + 1)]
        for k in range(depth):
            m.d.sync += [valid[k + 1].eq(valid[k]), final[k + 1].eq(final[k]), mask[k + 1].eq(mask[k])]
        write, write_last, write_mask = valid[depth], final[depth], mask[depth]
        m.d.comb += [
            lanes_.en.eq(mask[spec.SPAD_READ_LATENCY]),
            lanes_.a.eq(self.rd0.data.as_value()),
            lanes_.m.eq(rq.m),
            lanes_.s.eq(rq.s),
            lanes_.relu.eq(rq.relu),
        ]

        # Writes in order from dst, LANES words per beat.
        dst_q = Signal(spec.ADDR_BITS)
        with m.If(self.start):
            m.d.sync += dst_q.eq(rq.dst)
        with m.Elif(write):
            m.d.sync += dst_q.eq(dst_q + lanes)
        m.d.comb += [
            self.wr.en.eq(write),
            self.wr.addr.eq(Mux(write, dst_q, 0)),
            self.wr.mask.eq(Mux(write, write_mask, 0)),
            self.done.eq(write & write_last),
        ]
        for i in range(lanes):
            m.d.comb += self.wr.data[i].eq(Mux(write, lanes_.y[i], 0))
        return m
