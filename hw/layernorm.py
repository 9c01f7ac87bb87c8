"""The LayerNorm unit: LN dst src len bias eps, GA2.md sections 3 and 4, exactly, in integers.

For the int8 row x (the low byte of each word, signed) of N = len elements, ``sim.arith``'s
``layernorm_fixed``: S1 = sum x_i, S2 = sum x_i^2, V = N*S2 - S1^2, D = 256*V + eps, the even
shift 2k that brings D to 44 bits, r = isqrt(D * 4^k), R = floor(2^44 / r), and
y_i = round((N*x_i - S1) * R / 2^(24-k)) (half away from zero); it writes y_i + bias_i (int32,
modulo 2^32).

Two passes over the row, LANES words a beat, each beat's data taken into a register untouched on
arrival:

* pass 1 (``rd0``, beat k in cycle d + k): each lane's x and x^2 registered (tail lanes 0), then
  the running sums S1 and S2 (carry-save trees over the lanes, one adder each);
* the solver, once per row, from the cycle t0 = d + n + R + 2 in which the sums are final:
  N, S1 and S2 copied beside the DSP blocks, the partial products of N*S2 and S1^2 registered
  there, V from them, D, k (a tree that counts the leading zero pairs of D), then D * 4^k
  loaded into the square root (LN_VARIANCE_CYCLES = 6);
  the square root digit by digit, one bit of r a cycle (LN_SQRT_CYCLES = 22: the restoring
  algorithm, a 25-bit subtract a cycle); the reciprocal, a restoring division of 2^44 by r, one
  bit of R a cycle (LN_RECIP_CYCLES = 24); A = N*R and C = S1*R (partial products, then sums,
  LN_SCALE_CYCLES = 2). N*x_i*R - S1*R is d_i * R exactly;
* pass 2 (``rd0``, beat k in cycle d + n + LN_GAP_CYCLES + k, when its data reaches its register
  just as A and C are final): per lane x*A (partial products at the DSP blocks, then summed),
  v = x*A - C,
  t = v + 2^(s-1) (v >= 0) or v + 2^(s-1) - 1 (v < 0), y = t >> s (arithmetic: the floor, so
  that y is v / 2^s rounded half away from zero), y + bias; the bias's beat read on ``rd1``
  LN_BIAS_LAG_CYCLES after the row's beat, so that it arrives for the add; written the cycle
  after (LN_LANE_STAGES = 6 stages after the data register).

Latency: L = 2*n + LN_OVERHEAD, n = ceil(len/LANES), LN_OVERHEAD = LN_GAP_CYCLES + R + 1 +
LN_LANE_STAGES = 65. The whole row is read (pass 1) before the first write and pass 2 reads a
beat of src and of bias before it writes it, so dst may coincide with src or bias.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib import data

from sim import spec

from .component import Checked
from .isa import fields_view
from .lanes import carry_save_tree, delay, lane_mask, last_beat, write_beats
from .ports import SPAD_READ_LATENCY, unit_members

BYTE = 8
SUM_BITS = (spec.LN_MAX_LEN * 128 - 1).bit_length() + 1
"""S1, signed: -128 N <= S1 <= 127 N, within -2^17 .. 2^17 - 1 for N <= 1024: 18 bits with the
sign (one 18 x 18 DSP operand)."""
SQUARES_BITS = (spec.LN_MAX_LEN * 128 * 128).bit_length()
"""S2 <= 1024 * 2^14 = 2^24 (25 bits)."""
LEN_BITS = spec.LN_MAX_LEN.bit_length()
"""N <= 1024 (11 bits)."""
D_BITS = spec.LN_RECIP_BITS
"""D < 2^44: 256 * V < 2^42 (V = N^2 var, var < 2^14, N <= 2^10) plus eps < 2^32."""
ROOT_BITS = spec.LN_ROOT_BITS
RECIP_BITS = spec.LN_QUOTIENT_BITS
A_BITS = LEN_BITS + RECIP_BITS - 1
"""A = N * R <= 2^10 * 2^23 = 2^33 (34 bits): R = 0 for r = 0, so R <= 2^23."""
SHIFT_BITS = spec.LN_SHIFT.bit_length()


def _tag_layout(lanes: int) -> data.StructLayout:
    return data.StructLayout({
        "valid": 1,
        "second": 1,     # a beat of pass 2 (normalise and write); else pass 1 (sums)
        "mask": lanes,   # the lanes that hold row elements
        "last": 1,       # the last beat of its pass
    })


CHUNK = 17
"""Widest unsigned piece of a multiplier operand: a 17-bit unsigned or 18-bit signed piece times
another is one 18 x 18 signed multiply (an ECP5 DSP block)."""


def piece_count(width: int, signed: bool) -> int:
    """How many pieces :func:`_pieces` cuts an operand of ``width`` bits into."""
    return 1 if width <= CHUNK + signed else -(-(width - signed) // CHUNK)


def _pieces(v: Value) -> list[tuple[Value, int]]:
    """``v`` as pieces of at most CHUNK bits, low first, each (value, its bit position); the top
    piece of a signed ``v`` is signed (and may have CHUNK + 1 bits), the others unsigned."""
    v = Value.cast(v)
    signed = v.shape().signed
    count = piece_count(len(v), signed)
    out = []
    for k in range(count):
        lo, hi = k * CHUNK, len(v) if k == count - 1 else (k + 1) * CHUNK
        piece = v[lo:hi]
        out.append((piece.as_signed() if signed and k == count - 1 else piece, lo))
    return out


def partial_products(m: Module, a: Value, b: Value, name: str) -> list[Value]:
    """The products of ``a``'s and ``b``'s pieces (:func:`_pieces`), each registered straight off
    its multiplier (so that no adder sits behind a DSP block), shifted into place: their sum is
    a * b, one cycle later."""
    out = []
    for pa, sa in _pieces(a):
        for pb, sb in _pieces(b):
            product = pa * pb
            reg = Signal(product.shape(), name=f"{name}_pp{sa}_{sb}")
            m.d.sync += reg.eq(product)
            out.append(reg << (sa + sb) if sa + sb else reg)
    return out


def add_up(values: list[Value]) -> Value:
    """The sum of the values: a carry-save tree and one adder (or the value itself)."""
    if len(values) == 1:
        return values[0]
    s, c = carry_save_tree(values)
    return s + c


def leading_zero_pairs(value: Value) -> Value:
    """The number of leading 2-bit groups of ``value`` (an even width) that are 0: 0 .. width/2,
    the whole width/2 for 0. The classic tree over a power of two of groups (the value padded
    with zero groups below): each level one multiplexer and a zero flag, no adder (the count of
    a half whose upper half is all zero is 1 then the lower half's count)."""
    groups = len(value) // 2
    width = max(2, 1 << (groups - 1).bit_length())
    nonzero = [Const(0, 1)] * (width - groups) + [value[2 * j:2 * j + 2].any() for j in range(groups)]

    def count(nz: list[Value]) -> tuple[Value, Value]:
        """(leading zero groups among ``nz`` (highest last, a power of two of them), all zero)."""
        if len(nz) == 2:   # one bit: the upper group is zero (no zero-width count below it)
            return ~nz[1], ~nz[1] & ~nz[0]
        half = len(nz) // 2
        lo_count, lo_zero = count(nz[:half])
        hi_count, hi_zero = count(nz[half:])
        return Cat(Mux(hi_zero, lo_count, hi_count), hi_zero), hi_zero & lo_zero

    total, zero = count(nonzero)
    return Mux(zero, groups, total)


class LayerNormUnit(Checked):
    """LN: the int8 row at src becomes its integer LayerNorm plus the bias row at dst (int32).

    Parameters:
        params: the machine's ``sim.spec.Params``: LANES, SPAD_WORDS (address widths).

    Members (``hw.ports.unit_members(params, n_read=2, write=True)``):
        start In(1), opcode In(4), fields In(124): the instruction (fields viewed as ``LN``: dst,
            src, len, bias, eps), dispatched as hw/README.md says.
        done Out(1): high in cycle d + L - 1, the cycle of the last write.
        rd0 Out(ReadPort): the row, LANES words a beat, twice. rd1 Out(ReadPort): the bias row.
        wr Out(WritePort): the results, int32, LANES a beat.
        Every output is 0 when the unit is idle.

    Latency: L = 2 * ceil(len / LANES) + LN_OVERHEAD (65) cycles (the module docstring gives the
    schedule); N = 64 at LANES = 4: 97 cycles.

    Resources: per lane a square (8 x 8) and x * A (8 x 35: two DSP blocks on the ECP5) with
    their adders; for the row, N * S2, S1^2, N * R and S1 * R, the digit-by-digit square root and
    the restoring division (a 25-bit and a 23-bit subtract).

    The ISA checks guarantee 1 <= len <= LN_MAX_LEN, the three rows inside the scratchpad and
    dst not partly overlapping src or bias; the unit relies on them.

    Raises:
        TypeError: params is not a ``sim.spec.Params``.
    """

    OPCODES = ("LN",)

    @staticmethod
    def multipliers(params: spec.Params) -> int:
        """The unit's products of two variables, each one 18 x 18 DSP multiply (flows/synth/dsp.py):
        per lane x^2 and x * A's pieces; for the row N * S2, S1^2, N * R and S1 * R, by pieces."""
        x_a = piece_count(BYTE, True) * piece_count(A_BITS, False)
        row = (piece_count(LEN_BITS, False) * piece_count(SQUARES_BITS, False)
               + piece_count(SUM_BITS, True) ** 2
               + piece_count(LEN_BITS, False) * piece_count(RECIP_BITS, False)
               + piece_count(SUM_BITS, True) * piece_count(RECIP_BITS, False))
        return params.LANES * (1 + x_a) + row

    def __init__(self, params: spec.Params):
        assert spec.LN_GAP_CYCLES == 1 + spec.LN_VARIANCE_CYCLES + spec.LN_SQRT_CYCLES + \
            spec.LN_RECIP_CYCLES + spec.LN_SCALE_CYCLES, "hw/layernorm.py: pass 2 meets A and C"
        assert (spec.LN_VARIANCE_CYCLES, spec.LN_SCALE_CYCLES, spec.LN_LANE_STAGES) == (6, 2, 6), \
            "hw/layernorm.py: the stages of the solver and of pass 2"
        assert spec.LN_OVERHEAD == spec.LN_GAP_CYCLES + SPAD_READ_LATENCY + 1 + spec.LN_LANE_STAGES
        assert spec.LN_RECIP_BITS == 2 * spec.LN_ROOT_BITS and spec.LN_SHIFT >= 1
        self.params = params
        super().__init__(unit_members(params, n_read=2, write=True))

    def elaborate(self, platform):
        m = Module()
        f = fields_view("LN", self.fields)
        # the named steps, in the order their logic is built
        rd_tag = self._reads(m, f)
        tag_x, xs = self._data_register(m, rd_tag)
        s1, s2, sums_done = self._sums(m, tag_x, xs)
        k, d_low = self._variance(m, f, s1, s2)
        root, recip_go = self._square_root(m, sums_done, k, d_low)
        recip = self._reciprocal(m, recip_go, root)
        shift, half = self._shift(m, sums_done, k)
        a, c = self._scale(m, f, s1, sums_done, recip, tag_x)
        out = self._normalise(m, tag_x, xs, a, c, shift, half)
        self._write(m, f, tag_x, out)
        return m

    # ------------------------------------------------------------------ reads

    def _reads(self, m: Module, f) -> Signal:
        """Pass 1 from the dispatch cycle (the first address straight from the fields), then
        LN_GAP_CYCLES idle cycles, then pass 2; the bias's beats on rd1 LN_BIAS_LAG_CYCLES behind
        pass 2's. Returns the row read's tag."""
        lanes = self.params.LANES
        reading = Signal()                          # a read follows this cycle's (after the first)
        gap = Signal(range(spec.LN_GAP_CYCLES + 1))  # idle read cycles left before pass 2
        second = Signal()
        left = Signal(len(f.len))                   # elements of the pass left, counting this beat
        addr = Signal(len(self.rd0.addr))
        cur_left = Signal.like(left)
        cur_second = Signal()
        cur_addr = Signal.like(addr)
        issue = Signal()
        m.d.comb += [
            issue.eq(self.start | (reading & (gap == 0))),
            cur_left.eq(Mux(self.start, f.len, left)),
            cur_second.eq(~self.start & second),
            cur_addr.eq(Mux(self.start, f.src, addr)),
            self.rd0.en.eq(issue),
            self.rd0.addr.eq(Mux(issue, cur_addr, 0)),
        ]
        tag = Signal(_tag_layout(lanes))
        m.d.comb += [
            tag.valid.eq(issue),
            tag.second.eq(issue & cur_second),
            tag.mask.eq(Mux(issue, lane_mask(cur_left, lanes), 0)),
            tag.last.eq(issue & last_beat(cur_left, lanes)),
        ]
        with m.If(issue):
            with m.If(~tag.last):
                m.d.sync += [reading.eq(1), second.eq(cur_second), left.eq(cur_left - lanes),
                             addr.eq(cur_addr + lanes)]
            with m.Elif(~cur_second):                # pass 1 over: pass 2 after the gap
                m.d.sync += [reading.eq(1), second.eq(1), left.eq(f.len), addr.eq(f.src),
                             gap.eq(spec.LN_GAP_CYCLES)]
            with m.Else():
                m.d.sync += [reading.eq(0), second.eq(0), left.eq(0), addr.eq(0)]
        with m.Elif(gap != 0):
            m.d.sync += gap.eq(gap - 1)

        # the bias, on rd1, LN_BIAS_LAG_CYCLES behind pass 2's beats
        bias_read = delay(m, tag.valid & tag.second, spec.LN_BIAS_LAG_CYCLES, "ln_bias_read")
        bias_addr = Signal(len(self.rd1.addr))
        with m.If(self.start):
            m.d.sync += bias_addr.eq(f.bias)
        with m.Elif(bias_read):
            m.d.sync += bias_addr.eq(bias_addr + lanes)
        m.d.comb += [self.rd1.en.eq(bias_read), self.rd1.addr.eq(Mux(bias_read, bias_addr, 0))]
        self._bias_read = bias_read
        return tag

    def _data_register(self, m: Module, rd_tag: Signal):
        """The row's data into a register untouched on arrival (with an enable of its own: an
        unconditional register of the shared read data is one Yosys merges with other units').
        Returns the tag beside it and the int8 values."""
        lanes = self.params.LANES
        arrive = delay(m, rd_tag, SPAD_READ_LATENCY, "ln_tag_read")
        x = [Signal(BYTE, name=f"ln_x{i}") for i in range(lanes)]
        with m.If(arrive.valid):
            m.d.sync += [x[i].eq(self.rd0.data[i][:BYTE]) for i in range(lanes)]
        tag_x = delay(m, arrive, 1, "ln_tag_x")
        return tag_x, [xi.as_signed() for xi in x]

    # ------------------------------------------------------------------ pass 1 and the solver

    def _sums(self, m: Module, tag_x, xs):
        """Pass 1: the lanes' x and x^2 (0 in tail lanes) registered, then S1 and S2. Returns S1,
        S2 and ``sums_done``, high in the cycle t0 they are final."""
        lanes = self.params.LANES
        first = tag_x.valid & ~tag_x.second
        xm = [Signal(signed(BYTE), name=f"ln_xm{i}") for i in range(lanes)]
        sq = [Signal(2 * BYTE - 1, name=f"ln_sq{i}") for i in range(lanes)]
        for i in range(lanes):
            keep = first & tag_x.mask[i]
            m.d.sync += [xm[i].eq(Mux(keep, xs[i], 0)), sq[i].eq(Mux(keep, xs[i] * xs[i], 0))]
        tag_sq = delay(m, tag_x, 1, "ln_tag_sq")
        s1 = Signal(signed(SUM_BITS))
        s2 = Signal(SQUARES_BITS)
        with m.If(self.start):
            m.d.sync += [s1.eq(0), s2.eq(0)]
        with m.Elif(tag_sq.valid & ~tag_sq.second):
            a, b = carry_save_tree([s1, *xm])
            c, e = carry_save_tree([s2, *sq])
            m.d.sync += [s1.eq(a + b), s2.eq(c + e)]
        sums_done = delay(m, tag_sq.valid & ~tag_sq.second & tag_sq.last, 1, "ln_sums_done")
        return s1, s2, sums_done

    def _variance(self, m: Module, f, s1, s2):
        """From the sums (final in t0): N, S1 and S2 copied into registers of their own (the
        DSP blocks sit in columns of their own, and S1's register also feeds its adder tree and
        S1 * R, so a copy lets the placer put each multiplier's operands beside it), the partial
        products of N*S2 and S1^2 (registered at the DSP blocks), V = N*S2 - S1^2 from them,
        D = 256*V + eps, k (the leading zero pairs of D) with D beside it, each a register that
        runs every cycle: k and D are this row's in t0 + 5 and stay so until the next row's
        sums. Returns k and D."""
        n = Signal(LEN_BITS, name="ln_n_op")
        s1_op = Signal.like(s1, name="ln_s1_op")
        s2_op = Signal.like(s2, name="ln_s2_op")
        m.d.sync += [n.eq(Value.cast(f.len)[:LEN_BITS]), s1_op.eq(s1), s2_op.eq(s2)]
        n_s2 = add_up(partial_products(m, n, s2_op, "ln_ns2"))
        s1_s1 = add_up(partial_products(m, s1_op, s1_op, "ln_s1s1"))
        v = Signal(D_BITS - spec.LN_EPS_FRAC)
        m.d.sync += v.eq(n_s2 - s1_s1)                                      # >= 0: N^2 var
        d = Signal(D_BITS)
        m.d.sync += d.eq((v << spec.LN_EPS_FRAC) + f.eps)
        k = Signal(range(D_BITS // 2 + 1))
        d_k = Signal(D_BITS)
        m.d.sync += [k.eq(leading_zero_pairs(d)), d_k.eq(d)]
        return k, d_k

    def _square_root(self, m: Module, sums_done, k, d_k):
        """r = isqrt(D * 4^k), digit by digit: D * 4^k loaded in t0 + 5, then one bit of r a cycle
        (t0 + 6 .. t0 + 27: the remainder shifted by two bits of D, the trial 4r + 1 subtracted
        when it fits). Returns r (final from t0 + 28) and the pulse, in t0 + 27, that starts the
        reciprocal."""
        go = delay(m, sums_done, spec.LN_VARIANCE_CYCLES - 1, "ln_sqrt_go")
        bits = Signal(D_BITS)                   # D * 4^k, two bits leave at the top a cycle
        rem = Signal(ROOT_BITS + 1)
        root = Signal(ROOT_BITS)
        left = Signal(range(spec.LN_SQRT_CYCLES + 1))
        wide = Signal(ROOT_BITS + 3)
        trial = Signal(ROOT_BITS + 2)
        diff = Signal(ROOT_BITS + 4)
        m.d.comb += [
            wide.eq(Cat(bits[-2:], rem)),       # 4 * rem + the next two bits
            trial.eq(Cat(Const(1, 2), root)),   # 4 * root + 1
            diff.eq(wide - trial),
        ]
        with m.If(go):
            m.d.sync += [bits.eq(d_k << (2 * k)), rem.eq(0), root.eq(0), left.eq(spec.LN_SQRT_CYCLES)]
        with m.Elif(left != 0):
            fits = ~diff[-1]
            m.d.sync += [
                bits.eq(bits << 2),
                rem.eq(Mux(fits, diff, wide)),
                root.eq(Cat(fits, root)),
                left.eq(left - 1),
            ]
        recip_go = Signal()
        m.d.comb += recip_go.eq(left == 1)
        return root, recip_go

    def _reciprocal(self, m: Module, go, root) -> Signal:
        """R = floor(2^44 / r), a restoring division: in t0 + 27 (the root's last step) the
        remainder starts at 2^20 (2^44's bits above the quotient's 24), then one quotient bit a
        cycle (t0 + 28 .. t0 + 51: the remainder doubled, r subtracted when it fits). Final from
        t0 + 52. R = 0 for r = 0 (D = 0: every d_i is 0 then), which keeps N*R below 2^34."""
        rem = Signal(ROOT_BITS + 1)
        quot = Signal(RECIP_BITS)
        left = Signal(range(spec.LN_RECIP_CYCLES + 1))
        doubled = Signal(ROOT_BITS + 2)
        diff = Signal(ROOT_BITS + 3)
        m.d.comb += [doubled.eq(rem << 1), diff.eq(doubled - root)]
        self._recip_done = Signal()          # t0 + 52: R final, its partial products next
        m.d.sync += self._recip_done.eq(left == 1)
        with m.If(go):
            m.d.sync += [rem.eq(1 << (spec.LN_RECIP_BITS - RECIP_BITS)), quot.eq(0),
                         left.eq(spec.LN_RECIP_CYCLES)]
        with m.Elif(left != 0):
            fits = ~diff[-1]
            m.d.sync += [rem.eq(Mux(fits, diff, doubled)), quot.eq(Cat(fits & root.any(), quot)),
                         left.eq(left - 1)]
        return quot

    def _shift(self, m: Module, sums_done, k):
        """The row's rounding shift s = LN_SHIFT - k and its rounding terms 2^(s-1) and 2^(s-1) - 1,
        registered in t0 + 5 with the square root's start (k is the row's then) and held for
        pass 2 (no adder in front of the rounding stage's)."""
        go = delay(m, sums_done, spec.LN_VARIANCE_CYCLES - 1, "ln_shift_go")
        shift = Signal(SHIFT_BITS)
        half = Signal(spec.LN_SHIFT)
        half_less = Signal(spec.LN_SHIFT)                                # 2^(s-1) - 1, for v < 0
        with m.If(go):
            top = Const(1 << (spec.LN_SHIFT - 1), spec.LN_SHIFT)      # 2^(s-1) = 2^(LN_SHIFT-1) >> k
            m.d.sync += [shift.eq(spec.LN_SHIFT - k), half.eq(top >> k), half_less.eq((top >> k) - 1)]
        return shift, (half, half_less)

    def _scale(self, m: Module, f, s1, sums_done, recip, tag_x):
        """A = N*R and C = S1*R: the partial products registered at the DSP blocks, then their
        sums; final from t0 + 54 until the next row's reciprocal. N and S1 are copied for these
        multipliers in t0 (``sums_done``: an enable that no other copy has, so that Yosys keeps
        the copies apart and the placer can put each beside its DSP block). Each lane sums its
        own copy of A (A feeds two DSP blocks per lane), loaded in t0 + 53 and on its pass 2
        beats: an enable of its own, so that Yosys cannot merge the copies into one register
        that fans out to every lane (hw/README.md, the requantizer's mantissa)."""
        n = Signal(LEN_BITS, name="ln_n_scale")
        s1_op = Signal.like(s1, name="ln_s1_scale")
        with m.If(sums_done):
            m.d.sync += [n.eq(Value.cast(f.len)[:LEN_BITS]), s1_op.eq(s1)]
        a_parts = partial_products(m, n, recip, "ln_nr")
        c = Signal(signed(SUM_BITS + RECIP_BITS))
        m.d.sync += c.eq(add_up(partial_products(m, s1_op, recip, "ln_s1r")))
        sums_at = delay(m, self._recip_done, 1, "ln_scale_sum")
        a = []
        for i in range(self.params.LANES):
            ai = Signal(A_BITS, name=f"ln_a{i}")
            with m.If(sums_at | (tag_x.second & tag_x.mask[i])):
                m.d.sync += ai.eq(add_up(a_parts))
            a.append(ai)
        return a, c

    # ------------------------------------------------------------------ pass 2

    def _normalise(self, m: Module, tag_x, xs, a, c, shift, half) -> list[Signal]:
        """Pass 2, per lane: x*A (partial products at the DSP blocks, then summed), v = x*A - C,
        t = v + 2^(s-1)
        (- 1 when v < 0), y = t >> s (the floor: v / 2^s rounded half away from zero), y + bias
        (the bias's beat arrives for this stage). Returns the lanes' results."""
        lanes = self.params.LANES
        bias_arrive = delay(m, self._bias_read, SPAD_READ_LATENCY, "ln_bias_arrive")
        bias = [Signal(spec.WORD_BITS, name=f"ln_bias{i}") for i in range(lanes)]
        with m.If(bias_arrive):
            m.d.sync += [bias[i].eq(self.rd1.data[i]) for i in range(lanes)]
        out = []
        wide = A_BITS + BYTE + 1
        for i in range(lanes):
            prod = Signal(signed(wide), name=f"ln_prod{i}")
            v = Signal(signed(wide + 1), name=f"ln_v{i}")
            t = Signal(signed(wide + 2), name=f"ln_t{i}")
            y = Signal(signed(spec.WORD_BITS), name=f"ln_y{i}")
            o = Signal(spec.WORD_BITS, name=f"ln_out{i}")
            m.d.sync += [
                prod.eq(add_up(partial_products(m, xs[i], a[i], f"ln_xa{i}"))),
                v.eq(prod - c),
                t.eq(v + Mux(v[-1], half[1], half[0])),
                y.eq(t >> shift),
                o.eq(y + bias[i]),
            ]
            out.append(o)
        return out

    def _write(self, m: Module, f, tag_x, out: list[Signal]) -> None:
        """Pass 2's results onto ``wr``, LN_LANE_STAGES after the data register; ``done`` with the
        last beat."""
        tag_w = delay(m, tag_x, spec.LN_LANE_STAGES, "ln_tag_w")
        write_beats(m, self, f.dst, tag_w.valid & tag_w.second, tag_w.mask, tag_w.last, out)
