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

from amaranth.hdl import Cat, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from sim import arith, spec
from sim.spec import DEFAULT, Params

from .isa import fields_view
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


class Requantizer(wiring.Component):
    """LANES requantizer lanes sharing one pipeline: ``y = requant(a, m, s, relu)`` per lane.

    The factor (m, s, relu) travels down the pipeline with the data, so every cycle's inputs
    are independent of the others'.

    Parameters:
        lanes: number of lanes (LANES = 4 in GA-2).

    Members:
        a In(ArrayLayout(signed(32), lanes)): the accumulators, sampled every cycle.
        m In(24), unsigned: the mantissa, sampled with a.
        s In(6), unsigned: the shift, 1..63 (0 gives an undefined result), sampled with a.
        relu In(1): clamp negative results to 0, sampled with a.
        y Out(ArrayLayout(signed(8), lanes)): the results, -127..127, LATENCY cycles after
            their inputs were presented (a registered output).

    Pipeline (each stage a register):
        1. inputs a, m, s, relu (the multiplier inputs);
        2. the four partial products a_lo*m_lo, a_lo*m_hi, a_hi*m_lo, a_hi*m_hi (18 x 18 each,
           four DSP blocks per lane); the masks of the bits below s-1 and from s+8 up;
        3. two partial sums, x = a_lo*m (unsigned) and z = a_hi*m (signed), one adder each;
        4. p = x + z * 2**17, one adder;
        5. q = p >> (s-1) (low 10 bits, a barrel shifter), the saturation test (do p's bits
           from s+8 up all equal its sign?) and the tie correction (p < 0 with its low s-1
           bits zero), side by side;
        6. y = (q - corr + 1) >> 1 on 11 bits, saturated to -127..127, relu.

    Latency: LATENCY = 6 cycles, one result per lane per cycle.

    Raises:
        ValueError: lanes is not a positive int.
    """

    LATENCY = 6
    """Cycles from a, m, s, relu presented to y valid."""

    def __init__(self, lanes: int = DEFAULT.LANES):
        if not isinstance(lanes, int) or lanes < 1:
            self._MustUse__silence = True
            raise ValueError(f"Requantizer: lanes={lanes!r} must be a positive int")
        self.lanes = lanes
        super().__init__({
            "a": In(data.ArrayLayout(signed(A_BITS), lanes)),
            "m": In(M_BITS),
            "s": In(S_BITS),
            "relu": In(1),
            "y": Out(data.ArrayLayout(signed(8), lanes)),
        })

    def elaborate(self, platform):
        m = Module()

        # The factor, one copy per stage (shared by the lanes).
        s1, s2, s3, s4 = (Signal(S_BITS, name=f"s{k}") for k in range(1, 5))
        relu1, relu2, relu3, relu4, relu5 = (Signal(name=f"relu{k}") for k in range(1, 6))
        m1 = Signal(M_BITS)
        m.d.sync += [s1.eq(self.s), s2.eq(s1), s3.eq(s2), s4.eq(s3),
                     relu1.eq(self.relu), relu2.eq(relu1), relu3.eq(relu2), relu4.eq(relu3),
                     relu5.eq(relu4), m1.eq(self.m)]

        # Stage 2 masks (from s1), used in stage 5: bit k of low_mask is set for k < s-1, bit k
        # of high_mask for k >= s+8. Stage 3 and 4 registers carry them along.
        low_mask2, low_mask3, low_mask4 = (Signal(P_BITS, name=f"low_mask{k}") for k in (2, 3, 4))
        high_mask2, high_mask3, high_mask4 = (Signal(P_BITS, name=f"high_mask{k}") for k in (2, 3, 4))
        m.d.sync += [
            low_mask2.eq(Cat(s1 > k + 1 for k in range(P_BITS))),
            high_mask2.eq(Cat(s1 + (Q_BITS - 2) <= k for k in range(P_BITS))),
            low_mask3.eq(low_mask2), low_mask4.eq(low_mask3),
            high_mask3.eq(high_mask2), high_mask4.eq(high_mask3),
        ]
        m_lo = m1[:SPLIT]
        m_hi = m1[SPLIT:]

        for lane in range(self.lanes):
            # 1: the multiplier inputs
            a1 = Signal(signed(A_BITS), name=f"a1_{lane}")
            m.d.sync += a1.eq(self.a[lane])
            a_lo = a1[:SPLIT]                       # unsigned
            a_hi = a1[SPLIT:].as_signed()           # signed

            # 2: the partial products (each fits an 18 x 18 signed multiplier)
            lo_bits, a_hi_bits, m_hi_bits = SPLIT, A_BITS - SPLIT, M_BITS - SPLIT
            pp_ll = Signal(lo_bits + lo_bits, name=f"pp_ll{lane}")
            pp_lh = Signal(lo_bits + m_hi_bits, name=f"pp_lh{lane}")
            pp_hl = Signal(signed(a_hi_bits + lo_bits + 1), name=f"pp_hl{lane}")    # unsigned
            pp_hh = Signal(signed(a_hi_bits + m_hi_bits + 1), name=f"pp_hh{lane}")  # operands widen by 1
            m.d.sync += [pp_ll.eq(a_lo * m_lo), pp_lh.eq(a_lo * m_hi),
                         pp_hl.eq(a_hi * m_lo), pp_hh.eq(a_hi * m_hi)]

            # 3: x = a_lo * m, z = a_hi * m
            x = Signal(SPLIT + M_BITS, name=f"x{lane}")
            z = Signal(signed(A_BITS - SPLIT + M_BITS + 1), name=f"z{lane}")
            m.d.sync += [x.eq(pp_ll + (pp_lh << SPLIT)), z.eq(pp_hl + (pp_hh << SPLIT))]

            # 4: the exact product
            p = Signal(signed(P_BITS), name=f"p{lane}")
            m.d.sync += p.eq(x + (z << SPLIT))

            # 5: shift, saturation test, tie correction
            q = Signal(signed(Q_BITS), name=f"q{lane}")
            in_range = Signal(name=f"in_range{lane}")
            negative = Signal(name=f"negative{lane}")
            corr = Signal(name=f"corr{lane}")
            shift = Signal(S_BITS, name=f"shift{lane}")
            sign_bits = Mux(p[-1], (1 << P_BITS) - 1, 0)
            m.d.comb += shift.eq(s4 - 1)
            m.d.sync += [
                q.eq(p >> shift),
                in_range.eq(((p.as_unsigned() ^ sign_bits) & high_mask4) == 0),
                negative.eq(p[-1]),
                corr.eq(p[-1] & ((p.as_unsigned() & low_mask4) == 0)),
            ]

            # 6: round, saturate, relu
            rounded = Signal(signed(Q_BITS + 1), name=f"rounded{lane}")
            m.d.comb += rounded.eq((q - corr + 1) >> 1)
            limit = arith.INT8_MAX
            saturated = Mux(rounded > limit, limit, Mux(rounded < -limit, -limit, rounded))
            clamped = Mux(in_range, saturated, Mux(negative, -limit, limit))
            y = Signal(signed(8), name=f"y{lane}")
            m.d.sync += y.eq(Mux(relu5 & (clamped < 0), 0, clamped))
            m.d.comb += self.y[lane].eq(y)
        return m


class RequantUnit(wiring.Component):
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
        enters the :class:`Requantizer` one cycle later (SPAD_READ_LATENCY) and leaves it
        Requantizer.LATENCY = 6 cycles after that; it is written in cycle d + b + 7, in
        order. ``done`` is the cycle of the last write, d + n + 6. In place (dst == src) is
        safe: a beat is written 7 cycles after it is read, and the beats read later lie
        further on.

    Latency: n + RQ_OVERHEAD cycles, RQ_OVERHEAD = SPAD_READ_LATENCY + Requantizer.LATENCY = 7.

    Errors: none; the execute stage dispatches only checked instructions (len >= 1,
    1 <= s <= 63, both regions inside the scratchpad, dst == src or disjoint).

    Raises:
        TypeError: params is not a :class:`sim.spec.Params`.
    """

    OPCODES = ("RQ",)
    """The instructions this unit executes."""

    def __init__(self, params: Params = DEFAULT):
        if not isinstance(params, Params):
            self._MustUse__silence = True
            raise TypeError(f"RequantUnit: params={params!r} must be a sim.spec.Params")
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
            last.eq(left <= lanes),
            self.rd0.en.eq(issue),
            self.rd0.addr.eq(Mux(issue, src, 0)),
        ]
        with m.If(issue):
            m.d.sync += [running.eq(~last), src_q.eq(src + lanes), left_q.eq(left - lanes)]

        # The beat's data enters the lanes when it returns; its write lanes and whether it is the
        # last beat follow it down a delay line as long as the read latency plus the pipeline.
        m.d.comb += [
            lanes_.a.eq(self.rd0.data.as_value()),
            lanes_.m.eq(rq.m),
            lanes_.s.eq(rq.s),
            lanes_.relu.eq(rq.relu),
        ]
        depth = spec.SPAD_READ_LATENCY + Requantizer.LATENCY
        valid = [issue] + [Signal(name=f"valid{k}") for k in range(1, depth + 1)]
        final = [issue & last] + [Signal(name=f"last{k}") for k in range(1, depth + 1)]
        mask = [Mux(issue, Cat(left > i for i in range(lanes)), 0)]
        mask += [Signal(lanes, name=f"mask{k}") for k in range(1, depth + 1)]
        for k in range(depth):
            m.d.sync += [valid[k + 1].eq(valid[k]), final[k + 1].eq(final[k]), mask[k + 1].eq(mask[k])]
        write, write_last, write_mask = valid[depth], final[depth], mask[depth]

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
