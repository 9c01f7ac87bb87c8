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

The lanes shift 2p by s, q = (2p) >> s, which is p >> (s-1) for s >= 1 and 2p for s = 0, a
table entry's shift (GA2.md section 4: no shift, no rounding term): then (2p - corr + 1) >> 1 =
p whatever corr, and the saturation test (bits from 8 up) is the same formula.

Per output channel (RQ pc = 1) every lane has its own pair (m, s): the RQ unit reads the
requantization table (GA2.md section 2) on its second read port, beside the data.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, Value, signed
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from sim import arith, spec
from sim.spec import Params

from .component import Checked
from .isa import fields_view
from .lanes import delay, lane_mask, last_beat, select
from .ports import unit_members

A_BITS = spec.WORD_BITS
"""Width of a requantizer input: a signed 32-bit accumulator."""
M_BITS = arith.MANTISSA_BITS
"""Width of the mantissa m (unsigned)."""
S_BITS = spec.RQ_ENTRY_S_BITS
"""Width of the shift s (the RQ field, and a table entry's; 0..63, 0 only from a table)."""
P_BITS = A_BITS + M_BITS
"""Width of the exact product p = a * m, signed: |p| < 2**55."""
SPLIT = 17
"""a and m are cut at bit 17, so that each partial product fits an 18 x 18 signed multiplier
(a DSP block of the ECP5): a = a_hi * 2**17 + a_lo, m = m_hi * 2**17 + m_lo, with a_lo, m_lo
17-bit unsigned, a_hi 15-bit signed and m_hi 7-bit unsigned."""
Q_BITS = 10
"""Bits of the shifted product kept: -512..511 covers every result that does not saturate."""


class Requantizer(Checked):
    """LANES requantizer lanes sharing one pipeline: ``y = requant(a, m, s, relu)`` per lane,
    each lane with its own factor (m, s) (RQ per output channel) and the relu shared.

    The factor (m, s, relu) travels down the pipeline with the data, so every cycle's inputs
    are independent of the others'.

    Parameters:
        lanes: number of lanes (the machine's LANES).

    Members:
        a In(ArrayLayout(signed(32), lanes)): the accumulators, sampled every cycle.
        m In(ArrayLayout(24, lanes)), unsigned: each lane's mantissa, sampled with a.
        s In(ArrayLayout(6, lanes)), unsigned: each lane's shift, 0..63, sampled with a (0: no
            shift and no rounding term, GA2.md section 4).
        relu In(1): clamp negative results to 0, sampled with a.
        en In(lanes), all ones unless driven: lane k samples its a, m and s only in cycles with
            bit k high (the RQ unit raises the bits of the beat's valid words). Each lane thus
            holds its own copy of the factor, with its own enable, which Yosys cannot merge: the
            copy sits beside the lane's DSP blocks instead of one register fanning out to all of
            them (that route led the critical path on the ECP5). A lane whose bit is low computes
            on stale a, m and s; its result is not written.
        y Out(ArrayLayout(signed(8), lanes)): the results, -127..127, LATENCY cycles after
            their inputs were presented (a registered output).

    Pipeline (each stage a register):
        1. inputs a, m, s, relu (the multiplier inputs);
        2. the four partial products a_lo*m_lo, a_lo*m_hi, a_hi*m_lo, a_hi*m_hi (18 x 18 each,
           four DSP blocks per lane); s carried;
        3. the partial products again (a register at the DSP block, one at the adders);
        4. two partial sums, x = a_lo*m (unsigned) and z = a_hi*m (signed), one adder each;
        5. p = x + z * 2**17, one adder; the lane's shift and, from it, the masks of the bits
           below s-1 and from s+8 up (a compare with a constant per bit, from s's register);
        6. q = (2p) >> s (low 10 bits, a barrel shifter), the saturation test (do p's bits
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
            "m": In(data.ArrayLayout(M_BITS, lanes)),
            "s": In(data.ArrayLayout(S_BITS, lanes)),
            "relu": In(1),
            "en": In(lanes, init=(1 << lanes) - 1),
            "y": Out(data.ArrayLayout(signed(8), lanes)),
        })

    def elaborate(self, platform):
        m = Module()
        relu1 = Signal()
        m.d.sync += relu1.eq(self.relu)
        relu_last = delay(m, relu1, 5, "relu")                     # relu, in stage 7
        for lane in range(self.lanes):
            # 1: the multiplier inputs, the lane's own copy of the factor among them
            a1 = Signal(signed(A_BITS), name=f"a1_{lane}")
            m1 = Signal(M_BITS, name=f"m1_{lane}")
            s1 = Signal(S_BITS, name=f"s1_{lane}")
            with m.If(self.en[lane]):
                m.d.sync += [a1.eq(self.a[lane]), m1.eq(self.m[lane]), s1.eq(self.s[lane])]
            shift_amount, low_mask, high_mask = self._shift(m, s1, lane)
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
                q.eq((p << 1) >> shift_amount),     # the shift amount straight from a register
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

    @staticmethod
    def _shift(m: Module, s1: Signal, lane: int) -> tuple[Signal, Signal, Signal]:
        """The lane's shift s (registered in stage 1) carried to stage 4, then in stage 5 the
        registers stage 6 uses: the shift amount s for (2p) >> s, and the masks (a compare of s
        with a constant per bit): bit k of low_mask set for k < s-1, bit k of high_mask for
        k >= s+8. Returns them in that order."""
        s4 = delay(m, s1, 3, f"s{lane}")
        shift_amount = Signal(S_BITS, name=f"shift{lane}")
        low_mask = Signal(P_BITS, name=f"low_mask{lane}")
        high_mask = Signal(P_BITS, name=f"high_mask{lane}")
        m.d.sync += [
            shift_amount.eq(s4),
            low_mask.eq(Cat(s4 > k + 1 for k in range(P_BITS))),
            high_mask.eq(Cat(s4 + (Q_BITS - 2) <= k for k in range(P_BITS))),
        ]
        return shift_amount, low_mask, high_mask


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
    """The RQ unit: ``S[dst+i] = requant(s32(S[src+i]), m, s, relu)`` for i < len, LANES per cycle;
    per output channel (pc = 1) element i takes the pair (m, s) of the table word
    ``S[tab + (i mod C)]`` (GA2.md sections 2 and 4).

    Parameters:
        params: the machine's :class:`sim.spec.Params` (LANES, SPAD_WORDS).

    Members (``hw.ports.unit_members(params, n_read=2, write=True)``):
        start In(1), opcode In(4), fields In(124), done Out(1): the execute-stage contract.
        rd0 Out(ReadPort): reads of the source, LANES words per beat.
        rd1 Out(ReadPort): pc = 1: reads of the table, LANES words per beat.
        wr Out(WritePort): writes of the results (int8 sign-extended to 32 bits), masked
            to the words below len.
        An idle unit drives every output to 0.

    Schedule, with d the dispatch cycle, n = ceil(len / LANES) beats and P = pc * RQ_PC_CYCLES:
        beat b of the source is read on ``rd0`` in cycle d + P + b (the first address of pc = 0
        straight from ``fields``), its data enters the :class:`Requantizer` SPAD_READ_LATENCY
        cycles later and leaves it Requantizer.LATENCY = 7 cycles after that; it is written in
        cycle d + P + b + RQ_OVERHEAD, in order. ``done`` is the cycle of the last write,
        d + n + P + RQ_OVERHEAD - 1. In place (dst == src) is safe: a beat is written
        RQ_OVERHEAD cycles after it is read, and the beats read later lie further on.

        pc = 1: beat b covers elements b*LANES + k (lane k), channels (c0 + k) mod C with
        c0 = b*LANES mod C. Its table words are read on ``rd1`` in cycle d + b, LANES words from
        tab + c0 (the first address straight from ``fields``), and registered on arrival
        (d + b + SPAD_READ_LATENCY); in the next cycle each lane k takes its own word when
        c0 + k < C, else entry c0 + k - C (< k, since C >= LANES) of the first LANES words of the
        table, held since beat 0, into its entry register, which the Requantizer samples with
        the beat's data one cycle later. The unit keeps r = C - c0, the channels left from the
        beat's first (r' = r - LANES, or r - LANES + C when the beat wraps, r <= LANES). A table
        word's bits 31..30 are not read. The table never overlaps dst (sim.spec), so every
        table read sees the table as it was.

    Latency: n + RQ_OVERHEAD + pc * RQ_PC_CYCLES cycles, RQ_OVERHEAD = SPAD_READ_LATENCY +
        Requantizer.LATENCY, RQ_PC_CYCLES = 2 (the table's arrival register and the lanes'
        entry registers).

    Errors: none; the execute stage dispatches only checked instructions (len >= 1,
    1 <= s <= 63 with pc = 0, C >= LANES with pc = 1, every region inside the scratchpad,
    dst == src or disjoint, dst and the table disjoint).

    Raises:
        TypeError: params is not a :class:`sim.spec.Params`.
    """

    OPCODES = ("RQ",)
    """The instructions this unit executes."""

    def __init__(self, params: Params):
        assert spec.RQ_OVERHEAD == spec.SPAD_READ_LATENCY + Requantizer.LATENCY, \
            "sim.spec.RQ_OVERHEAD must be what hw/requant.py realises"
        assert spec.RQ_PC_CYCLES == 2, "sim.spec.RQ_PC_CYCLES must be what hw/requant.py realises"
        self.params = params
        super().__init__(unit_members(params, n_read=2, write=True))

    def elaborate(self, platform):
        m = Module()
        lanes = self.params.LANES
        rq = fields_view("RQ", self.fields)
        m.submodules.lanes = lanes_ = Requantizer(lanes)
        entries = self._table(m, rq)

        # The data's first read: the dispatch cycle (pc = 0), RQ_PC_CYCLES later (pc = 1).
        go = Mux(rq.pc, delay(m, self.start & rq.pc, spec.RQ_PC_CYCLES, "pc_go"), self.start)
        write, write_last, write_mask = self._data(m, rq, go, lanes_)
        for k in range(lanes):
            m.d.comb += [
                lanes_.m[k].eq(Mux(rq.pc, entries[k][:M_BITS], rq.m)),
                lanes_.s[k].eq(Mux(rq.pc, entries[k][spec.RQ_ENTRY_S_LSB:spec.RQ_ENTRY_BITS], rq.s)),
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

    def _data(self, m: Module, rq, go: Value, lanes_: Requantizer) -> tuple[Value, Value, Value]:
        """The source's reads on ``rd0``, one beat per cycle from ``go`` on, into the lanes; returns
        (write, last write, write mask) of the beat leaving the lanes."""
        lanes = self.params.LANES
        running = Signal()
        src_q = Signal(spec.ADDR_BITS)
        left_q = Signal(spec.ADDR_BITS)
        issue = Signal()
        src = Signal(spec.ADDR_BITS)
        left = Signal(spec.ADDR_BITS)
        last = Signal()
        m.d.comb += [
            issue.eq(go | running),
            src.eq(Mux(go, rq.src, src_q)),
            left.eq(Mux(go, rq.len, left_q)),
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
        m.d.comb += [
            lanes_.en.eq(mask[spec.SPAD_READ_LATENCY]),
            lanes_.a.eq(self.rd0.data.as_value()),
            lanes_.relu.eq(rq.relu),
        ]
        return valid[depth], final[depth], mask[depth]

    def _table(self, m: Module, rq) -> list[Signal]:
        """pc = 1: the table's reads on ``rd1``, one beat per cycle from the dispatch on, and each
        lane's entry (m in its low bits, s above), registered, valid in the cycle the beat's
        data arrives at the lanes (see the class's schedule). Returns the lanes' entry registers."""
        lanes = self.params.LANES
        running = Signal()
        r_q = Signal(spec.ADDR_BITS, name="tab_left")       # C - c0: channels left from the beat's first
        addr_q = Signal(spec.ADDR_BITS, name="tab_addr")    # tab + c0
        left_q = Signal(spec.ADDR_BITS, name="tab_len")
        first = self.start & rq.pc
        issue = first | running
        addr = Mux(first, rq.tab, addr_q)
        # each next value computed from the fields (the first beat) and from the registers (the
        # others) side by side, the dispatch's start choosing between them at the last level:
        # through the comparison and the adders, start's route across the chip set Fmax
        channels = Value.cast(rq.C)
        whole_f = channels > lanes                          # no lane of the beat past the table's end
        whole_q = r_q > lanes
        whole = Mux(first, whole_f, whole_q)
        m.d.comb += [self.rd1.en.eq(issue), self.rd1.addr.eq(Mux(issue, addr, 0))]
        with m.If(issue):
            m.d.sync += [
                running.eq(~Mux(first, last_beat(rq.len, lanes), last_beat(left_q, lanes))),
                r_q.eq(Mux(first, Mux(whole_f, rq.C - lanes, rq.C - lanes + rq.C),
                           Mux(whole_q, r_q - lanes, r_q - lanes + rq.C))),
                addr_q.eq(Mux(first, Mux(whole_f, rq.tab + lanes, rq.tab + lanes - rq.C),
                              Mux(whole_q, addr_q + lanes, addr_q + lanes - rq.C))),
                left_q.eq(Mux(first, rq.len - lanes, left_q - lanes)),
            ]
        # lanes k < own take their own word (own = min(r, LANES), 1..LANES)
        own = Mux(whole, lanes, Mux(first, rq.C, r_q)[:(lanes.bit_length())])
        own_a = delay(m, own, spec.SPAD_READ_LATENCY + 1, "tab_own")
        first_a = delay(m, first, spec.SPAD_READ_LATENCY + 1, "tab_first")

        # On arrival, the words registered (the table's bits only); then the lanes' entries.
        words = Signal(data.ArrayLayout(spec.RQ_ENTRY_BITS, lanes), name="tab_words")
        m.d.sync += [words[k].eq(self.rd1.data[k][:spec.RQ_ENTRY_BITS]) for k in range(lanes)]
        head = Signal(data.ArrayLayout(spec.RQ_ENTRY_BITS, lanes), name="tab_head")
        with m.If(first_a):                                 # beat 0's words: entries 0..LANES-1
            m.d.sync += head.eq(words)
        entries = []
        for k in range(lanes):
            entry = Signal(spec.RQ_ENTRY_BITS, name=f"entry{k}")
            # entry c0 + k - C = k - own of the head when k >= own
            onehot = [own_a > k] + [own_a == k - j for j in range(k)]
            m.d.sync += entry.eq(select(onehot, [words[k]] + [head[j] for j in range(k)]))
            entries.append(entry)
        return entries
