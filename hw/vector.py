"""The vector unit: VADD, AMAX and UNPACK (GA2.md section 3), LANES elements per cycle.

* VADD dst src1 src2 len relu max: S[dst+i] = clamp(s8(S[src1+i]) + s8(S[src2+i]), -127, 127)
  (max = 0) or max(s8(S[src1+i]), s8(S[src2+i])) (max = 1: a compare beside the add, the field
  selecting), and with relu a negative result is written as 0 (its sign bit selects 0, same
  cycle). Beat k of src1 on ``rd0`` and of src2 on ``rd1`` in the same cycle. In place (dst ==
  src1 or src2) is safe: beat k is written three cycles after its read, while beat k+3 is read.
* AMAX dst src len: S[dst] = the index of the first maximum of s8(S[src+i]). The first maximum
  of each half of the beat's lanes (a tree of compares, the earlier lane winning a tie; one
  level at LANES = 4), then the running (maximum, index), the earlier winning a tie again; one
  write at the end.
* UNPACK dst src len: packed word i (element 8i+j, a signed int4, in bits 4j+3..4j) becomes
  eight int8 words at dst+8i, LANES per cycle, its sign extension being wiring only. LANES = 4:
  the word is read every other cycle and written as two beats (nibbles 0..3, then 4..7);
  LANES = 8: one word a cycle, one beat; LANES = 16: two words a cycle (one read), one beat.

Every beat's data is taken into a register untouched on arrival (the block RAM and the rotation
network use up that cycle), so a beat read in cycle d' is worked on in cycle d'+R+1, R =
SPAD_READ_LATENCY (3).
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, signed
from amaranth.lib import data

from sim import arith, spec

from .component import Checked
from .isa import fields_view, opcode
from .lanes import any_of, delay, first_maximum, lane_mask, last_beat, pairwise_above
from .ports import SPAD_READ_LATENCY, unit_members

INT4_SHIFT = (spec.INT4_PER_WORD - 1).bit_length()
"""log2 of the int4 values in a packed word: UNPACK's lanes per word left, as a shift."""
assert 1 << INT4_SHIFT == spec.INT4_PER_WORD

# dst, and src of AMAX and UNPACK, sit where VADD's dst and src1 do: one address path for all
_OFFSETS = {name: spec.BY_NAME[name].field_offsets() for name in ("VADD", "AMAX", "UNPACK")}
assert _OFFSETS["AMAX"]["src"] == _OFFSETS["UNPACK"]["src"] == _OFFSETS["VADD"]["src1"]
assert _OFFSETS["AMAX"]["dst"] == _OFFSETS["UNPACK"]["dst"] == _OFFSETS["VADD"]["dst"]


def _tag_layout(lanes: int) -> data.StructLayout:
    # a beat's tag travels with it: the tail of one instruction is still in the pipeline when
    # the next is dispatched, so each stage reads the operation from the tag, not the opcode
    return data.StructLayout({
        "vadd": 1,
        "relu": 1,       # VADD: negative sums become 0
        "max": 1,        # VADD max = 1: the larger operand instead of the sum
        "amax": 1,
        "unpack": 1,
        "mask": lanes,   # the lanes that hold elements (VADD, AMAX)
        "last": 1,       # the last beat (VADD, AMAX) or packed word (UNPACK)
    })


class VectorUnit(Checked):
    """VADD, AMAX and UNPACK, LANES elements per cycle.

    Parameters:
        params: the machine's parameters (``sim.spec.Params``): LANES and SPAD_WORDS.

    Members (``hw.ports.unit_members(params, n_read=2, write=True)``):
        start In(1), opcode In(4), fields In(124): the instruction, dispatched as hw/README.md
            says (the opcode selects the operation; fields viewed as VADD: dst, src1, src2,
            len, or AMAX / UNPACK: dst, src, len).
        done Out(1): high in cycle d + L - 1, the cycle of the last write.
        rd0 Out(ReadPort): src1 (VADD), src (AMAX, UNPACK); rd1 Out(ReadPort): src2 (VADD).
        wr Out(WritePort): results as 32-bit words (int8 sign-extended; the AMAX index
            zero-extended).
        Every output is 0 when the unit is idle.

    Latency, with n = ceil(len / LANES), dispatch in cycle d:
        VADD: beat k read at d+k, added and saturated at d+k+R+1, written at d+k+R+2:
            L = n + VADD_OVERHEAD, VADD_OVERHEAD = R + 2.
        AMAX: beat k read at d+k; pair maxima at d+k+R+1, running maximum at d+k+R+2; the
            index written at d+n+R+2: L = n + AMAX_OVERHEAD, AMAX_OVERHEAD = R + 3.
        UNPACK: n' = ceil(8*len / LANES) beats, beat b written at d+b+R+1 (LANES = 4: word i
            read at d+2i, written at d+2i+R+1 and d+2i+R+2; LANES >= 8: the LANES/8 words of
            beat b read at d+b): L = n' + UNPACK_OVERHEAD, UNPACK_OVERHEAD = R + 1.
        (R = SPAD_READ_LATENCY.)

    The ISA checks guarantee len >= 1, the rows inside the scratchpad and no partial overlap
    of dst with a source; the unit relies on them.

    Raises:
        TypeError: params is not a ``sim.spec.Params``.
    """

    OPCODES = ("VADD", "AMAX", "UNPACK")

    def __init__(self, params: spec.Params):
        self.params = params
        lanes = params.LANES
        self.unpack_beats = max(1, spec.INT4_PER_WORD // lanes)
        """UNPACK: write beats per packed word (2 at LANES = 4, else 1)."""
        self.unpack_words = max(1, lanes // spec.INT4_PER_WORD)
        """UNPACK: packed words per read (2 at LANES = 16, else 1)."""
        assert self.unpack_beats <= 2, "UNPACK writes a packed word in at most two beats (LANES >= 4)"
        super().__init__(unit_members(params, n_read=2, write=True))
        # the schedules below realise these; the spec's constants are the contract
        assert SPAD_READ_LATENCY + 2 == spec.VADD_OVERHEAD
        assert SPAD_READ_LATENCY + 3 == spec.AMAX_OVERHEAD
        assert SPAD_READ_LATENCY + 1 == spec.UNPACK_OVERHEAD

    def elaborate(self, platform):
        m = Module()
        op = self._decode()
        rd_tag = self._read_sequencer(m, op)
        tag_x, tag_y, a, a8, b8, above = self._data_registers(m, rd_tag)
        self._write_port(m, op, tag_x, tag_y, a, a8, b8, above)
        return m

    def _decode(self) -> SimpleNamespace:
        """The operation (is_vadd, is_amax, is_unpack), the fields (VADD's view: dst, src1 and
        src2 sit where AMAX's and UNPACK's dst and src do) and the row's length."""
        vadd_f = fields_view("VADD", self.fields)
        amax_f = fields_view("AMAX", self.fields)
        unpack_f = fields_view("UNPACK", self.fields)
        is_vadd = self.opcode == opcode("VADD")
        is_amax = self.opcode == opcode("AMAX")
        is_unpack = self.opcode == opcode("UNPACK")
        length = Mux(is_vadd, vadd_f.len, Mux(is_amax, amax_f.len, unpack_f.len))
        return SimpleNamespace(f=vadd_f, is_vadd=is_vadd, is_amax=is_amax, is_unpack=is_unpack, length=length)

    def _read_sequencer(self, m: Module, op: SimpleNamespace) -> Signal:
        """Beat k (VADD, AMAX: LANES elements; UNPACK: unpack_words packed words) read at d+k
        (UNPACK at LANES = 4: d+2k), the first address straight from the fields. Returns the
        read's tag (the operation, the valid lanes, the last beat), which travels beside the data."""
        lanes = self.params.LANES
        vadd_f, is_vadd, is_amax, is_unpack, length = op.f, op.is_vadd, op.is_amax, op.is_unpack, op.length
        start = self.start  # the top raises it only for this unit's instructions
        reading = Signal()                    # more reads follow (after the first)
        pause = Signal()                      # UNPACK at LANES = 4: the cycle between two reads
        left = Signal(len(vadd_f.len))        # elements (packed words) left, counting this read
        relu = Signal()                       # VADD's relu field, held for the later beats
        vmax = Signal()                       # VADD's max field, held likewise
        addr0 = Signal(len(self.rd0.addr))
        addr1 = Signal(len(self.rd1.addr))
        step = Mux(is_unpack, self.unpack_words, lanes)

        issue = Signal()
        cur_left = Signal.like(left)
        cur_addr0 = Signal.like(addr0)
        cur_addr1 = Signal.like(addr1)
        cur_relu = Mux(start, vadd_f.relu, relu)
        cur_max = Mux(start, vadd_f.max, vmax)
        m.d.comb += [
            issue.eq(start | (reading & ~pause)),
            cur_left.eq(Mux(start, length, left)),
            cur_addr0.eq(Mux(start, vadd_f.src1, addr0)),
            cur_addr1.eq(Mux(start, vadd_f.src2, addr1)),  # any value while rd1.en is low
            self.rd0.en.eq(issue),
            self.rd0.addr.eq(cur_addr0),      # addr0, addr1 are 0 when the unit is idle
            self.rd1.en.eq(issue & is_vadd),
            self.rd1.addr.eq(cur_addr1),
        ]
        rd_tag = Signal(_tag_layout(lanes))
        mask = lane_mask(cur_left, lanes)
        if self.unpack_words > 1:   # UNPACK's lanes: 8 per packed word left (every lane below LANES = 16)
            mask = Mux(is_unpack, lane_mask(cur_left << INT4_SHIFT, lanes), mask)
        m.d.comb += [
            rd_tag.vadd.eq(issue & is_vadd),
            rd_tag.relu.eq(issue & is_vadd & cur_relu),
            rd_tag.max.eq(issue & is_vadd & cur_max),
            rd_tag.amax.eq(issue & is_amax),
            rd_tag.unpack.eq(issue & is_unpack),
            rd_tag.mask.eq(mask),
            rd_tag.last.eq(Mux(is_unpack, last_beat(cur_left, self.unpack_words),
                               last_beat(cur_left, lanes))),
        ]
        with m.If(issue):
            with m.If(rd_tag.last):
                m.d.sync += [reading.eq(0), left.eq(0), addr0.eq(0), addr1.eq(0), relu.eq(0), vmax.eq(0)]
            with m.Else():
                m.d.sync += [
                    reading.eq(1),
                    pause.eq(is_unpack if self.unpack_beats > 1 else 0),
                    left.eq(cur_left - step),
                    addr0.eq(cur_addr0 + step),
                    addr1.eq(Mux(is_vadd, cur_addr1 + step, 0)),
                    relu.eq(is_vadd & cur_relu),
                    vmax.eq(is_vadd & cur_max),
                ]
        with m.Else():
            m.d.sync += pause.eq(0)
        return rd_tag

    def _data_registers(self, m: Module, rd_tag: Signal):
        """Every beat's data into registers untouched on arrival; the tag delayed beside it.
        Returns the tags of the beat in its data registers (x) and one stage later (y), the
        words of rd0, rd0's and rd1's low bytes as int8, and AMAX's registered compares per
        half (:meth:`_amax_compares`)."""
        lanes = self.params.LANES
        tag_arrive = delay(m, rd_tag, SPAD_READ_LATENCY, "tag_read")  # the data's cycle
        tag_x = delay(m, tag_arrive, 1, "tag_x")    # the beat in its data registers
        tag_y = delay(m, tag_x, 1, "tag_y")         # one stage later
        a = [Signal(spec.WORD_BITS, name=f"a{i}") for i in range(lanes)]
        b = [Signal(8, name=f"b{i}") for i in range(lanes)]
        with m.If(tag_arrive.vadd | tag_arrive.amax | tag_arrive.unpack):  # UNPACK: held 2 cycles
            for i in range(lanes):
                m.d.sync += [a[i].eq(self.rd0.data[i]), b[i].eq(self.rd1.data[i][:8])]
        a8 = [ai[:8].as_signed() for ai in a]
        b8 = [bi.as_signed() for bi in b]
        return tag_x, tag_y, a, a8, b8, self._amax_compares(m, tag_arrive)

    def _amax_compares(self, m: Module, tag_arrive) -> list[dict | None]:
        """AMAX with more than two lanes a half (LANES >= 8): each half's compares of every pair
        of lanes (:func:`hw.lanes.pairwise_above`), made on the read data as it arrives and
        registered beside the data registers, so that the cycle of the half maxima is the
        winner's AND-OR multiplexer only (the compares and the multiplexer in one cycle were
        the T = 8 machine's critical path, 12.1 ns). With two lanes a half the compare stays
        in that cycle (one comparator and a multiplexer). Per half, the registered compares or
        None."""
        half = self.params.LANES // 2
        if half <= 2:
            return [None, None]
        out = []
        for k in range(2):
            data = [self.rd0.data[i][:8].as_signed() for i in range(k * half, (k + 1) * half)]
            regs = {}
            for (i, j), value in pairwise_above(data).items():
                regs[i, j] = Signal(name=f"amax_above{k}_{i}_{j}")
                with m.If(tag_arrive.amax):
                    m.d.sync += regs[i, j].eq(value)
            out.append(regs)
        return out

    def _write_port(self, m: Module, op: SimpleNamespace, tag_x, tag_y, a, a8, b8, above) -> None:
        """Each operation offers (valid, lane mask, lane words); at most one is valid at a time:
        VADD's sums, UNPACK's nibbles, AMAX's index, gated and ORed onto ``wr``; ``done`` with
        the last write."""
        lanes = self.params.LANES
        start = self.start
        writes: list[tuple] = []
        wr_addr = Signal.like(self.wr.addr)
        with m.If(start):
            m.d.sync += wr_addr.eq(op.f.dst)
        all_lanes = Const((1 << lanes) - 1, lanes)
        vadd_write = self._vadd(m, writes, tag_x, tag_y, a8, b8)
        unpack_last = self._unpack(m, writes, tag_x, tag_y, a, all_lanes)
        amax_write = self._amax(m, writes, op, tag_x, tag_y, a8, above)
        # one write at a time: each operation's words gated by its own valid, then ORed
        m.d.comb += [
            self.wr.en.eq(any_of(valid for valid, _, _ in writes)),
            self.wr.addr.eq(wr_addr),
            self.wr.mask.eq(any_of(Mux(valid, bits, 0) for valid, bits, _ in writes)),
        ]
        for i in range(lanes):
            m.d.comb += self.wr.data[i].eq(any_of(_word(values[i]) & valid.replicate(spec.WORD_BITS)
                                               for valid, _, values in writes))
        any_write = self.wr.en

        last_write = (vadd_write & tag_y.last) | unpack_last | amax_write
        with m.If(last_write):
            m.d.sync += wr_addr.eq(0)
        with m.Elif(any_write):
            m.d.sync += wr_addr.eq(wr_addr + lanes)
        m.d.comb += self.done.eq(last_write)

    def _vadd(self, m: Module, writes: list, tag_x, tag_y, a8, b8) -> Value:
        """VADD: add and saturate, or (max = 1) take the larger operand, and (relu) zero a negative
        result in the cycle the data sits in its registers, write the next."""
        lanes = self.params.LANES
        sums = [Signal(signed(8), name=f"sum{i}") for i in range(lanes)]
        for i in range(lanes):
            total = Mux(tag_x.max, Mux(b8[i] > a8[i], b8[i], a8[i]), _saturate(a8[i] + b8[i]))
            relu_total = Mux(tag_x.relu & total[-1], 0, total)   # relu: a negative sum becomes 0
            m.d.sync += sums[i].eq(Mux(tag_x.vadd, relu_total, 0))  # 0 when idle
        vadd_write = tag_y.vadd
        writes.append((vadd_write, tag_y.mask, sums))
        return vadd_write

    def _unpack(self, m: Module, writes: list, tag_x, tag_y, a, all_lanes) -> Value:
        """UNPACK: lane j of a beat is nibble j of the packed data registers (a[0], then a[1] at
        LANES = 16); at LANES = 4 nibbles 0..3 in the data's first cycle, 4..7 in the next
        (tag_y). Returns the valid of the word's last beat."""
        lanes = self.params.LANES
        bits = spec.WORD_BITS // spec.INT4_PER_WORD
        packed = Cat(a[:self.unpack_words])
        if self.unpack_beats == 1:
            nibbles = [packed[bits * j:bits * (j + 1)] for j in range(lanes)]
            mask = tag_x.mask if self.unpack_words > 1 else all_lanes
            writes.append((tag_x.unpack, mask, [n.as_signed() for n in nibbles]))
            return tag_x.unpack & tag_x.last
        unpack_low = tag_x.unpack
        unpack_high = tag_y.unpack
        nibbles = [Mux(unpack_high, packed[bits * (j + lanes):bits * (j + lanes + 1)],
                       packed[bits * j:bits * (j + 1)])
                   for j in range(lanes)]
        writes.append((unpack_low | unpack_high, all_lanes, [n.as_signed() for n in nibbles]))
        return unpack_high & tag_y.last

    def _amax(self, m: Module, writes: list, op: SimpleNamespace, tag_x, tag_y, a8, above) -> Value:
        """AMAX: the first maximum (value, lane) of each half of the lanes (from the compares
        registered on arrival, ``above``, when there are), then the running first maximum."""
        lanes = self.params.LANES
        start, vadd_f = self.start, op.f
        beat = Signal(len(vadd_f.len))  # beats through the data registers so far
        with m.If(start):
            m.d.sync += beat.eq(0)
        with m.Elif(tag_x.amax):
            m.d.sync += beat.eq(beat + 1)
        int8_min = arith.INT8_MIN - 1   # -128: no element is smaller
        index_bits = len(vadd_f.len)
        lane_bits = (lanes - 1).bit_length()
        pairs = []
        half = lanes // 2
        for k in range(2):
            value_, lane_ = first_maximum(a8[k * half:(k + 1) * half], tag_x.mask[k * half:(k + 1) * half],
                                          k * half, lane_bits, above[k])
            value = Signal(signed(8), name=f"half{k}_max")
            index = Signal(index_bits, name=f"half{k}_index")
            valid = Signal(name=f"half{k}_valid")
            m.d.sync += [
                value.eq(value_),
                index.eq(Cat(lane_, beat)),  # LANES * beat + lane
                valid.eq(tag_x.mask[k * half]),
            ]
            pairs.append((value, index, valid))
        best = Signal(signed(8), init=int8_min)
        best_index = Signal(index_bits)
        with m.If(start):
            m.d.sync += [best.eq(int8_min), best_index.eq(0)]
        with m.Elif(tag_y.amax):
            (v0, i0, _), (v1, i1, ok1) = pairs
            # the running best is the earliest, then pair 0, then pair 1: ties go to the earlier
            keep = (best >= v0) & (~ok1 | (best >= v1))
            later = ok1 & (v1 > v0)
            m.d.sync += [
                best.eq(Mux(keep, best, Mux(later, v1, v0))),
                best_index.eq(Mux(keep, best_index, Mux(later, i1, i0))),
            ]
        amax_write = Signal()
        m.d.sync += amax_write.eq(tag_y.amax & tag_y.last)
        writes.append((amax_write, Const(1, lanes), [best_index] + [Const(0, 1)] * (lanes - 1)))
        return amax_write


def _word(v):
    """v as a 32-bit word: sign-extended when signed (int8 results), zero-extended otherwise."""
    if v.shape().signed:
        return Cat(v, v[-1].replicate(spec.WORD_BITS - len(v)))
    return v


def _saturate(total):
    """clamp(total, -127, 127) for the 9-bit sum of two int8 values (GA2.md section 4), from the
    sum's top bits rather than with comparators: above 127 when bits 8..7 are 01, below -127
    when they are 10, or 11 with the rest zero (-128)."""
    sign, top, low = total[8], total[7], total[:7]
    over = ~sign & top
    under = sign & (~top | (low == 0))
    return Mux(over, arith.INT8_MAX, Mux(under, arith.INT8_MIN, total[:8].as_signed())).as_signed()
