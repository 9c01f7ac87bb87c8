"""The softmax unit: SM dst src len, GA2.md sections 3 and 4, exactly.

For the int8 Q4.4 row x (the low byte of each word, signed): mx = max x_i,
e_i = EXP_LUT[mx - x_i] (a stored -128 gives a difference up to 255), z = sum e_i, and
p_i = floor((e_i * 65536 + floor(z / 2)) / z), written as unsigned Q16 words.

The unit streams the row from the scratchpad three times, LANES words per beat, each beat's
data taken into a register untouched on arrival (the block RAM and the rotation network use up
that cycle):

* pass 0, max: the maxima of each half of the lanes (tail lanes excluded; one comparator level
  and a multiplexer at LANES = 4, a tree of them beyond), then mx <- max(mx, both), two
  register stages;
* pass 1, exp and sum: e_i = EXP_LUT[mx - x_i] (LUT logic), then z <- z + the LANES e_i
  (a tree of carry-save adders, three levels at LANES = 4, and one adder);
* pass 2, divide: the same e_i go to LANES pipelined dividers (hw/divider.py, radix 4), one per
  lane, each with z as its divisor; the beat's LANES quotients are written together.

One idle read cycle (SM_PASS_OVERHEAD) separates passes 0 and 1, so that pass 1's first beat
reaches the exp stage just as mx becomes final; pass 2 follows pass 1 with no gap, its first
beat reaching the dividers just as z becomes final. Re-reading the row costs no latency and
saves holding up to SM_MAX_LEN elements in registers.

The rounding: floor((e * 65536 + floor(z / 2)) / z) = floor(e * 65536 / z + 1/2) for every
z >= 1 (with e * 65536 = a*z + r, both sides are a + [r >= z/2]), which the divider computes
as (floor(2 * e * 65536 / z) + 1) >> 1 without an adder in front of it.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data

from sim import arith, spec

from .component import Checked
from .divider import Divider
from .exp_lut import INDEX_BITS, VALUE_BITS, ExpLUT
from .isa import fields_view
from .lanes import carry_save_tree, delay, first_maximum, lane_mask, last_beat, pairwise_above
from .ports import SPAD_READ_LATENCY, unit_members

Q16_BITS = (arith.Q16_ONE - 1).bit_length()
"""e * 65536: the exp value shifted into the dividend's upper bits (16)."""
DIVIDER_DIGIT_BITS = 2
"""Quotient bits per divider stage (radix 4): 9 stages, about 140 MHz alone on the ECP5-85F."""

PASSES = 3


def _tag_layout(lanes: int) -> data.StructLayout:
    return data.StructLayout({
        "valid": 1,
        "pass_": 2,      # 0 max, 1 exp and sum, 2 divide
        "mask": lanes,   # the lanes that hold row elements
        "last": 1,       # the last beat of its pass
    })


class SoftmaxUnit(Checked):
    """SM: the row at src (int8 Q4.4) becomes its fixed-point softmax at dst (unsigned Q16).

    Parameters:
        params: the machine's parameters (``sim.spec.Params``): LANES, SPAD_WORDS (address
            width) and SM_MAX_LEN (width of the sum z, at most SM_MAX_LEN * 65536).

    Members (``hw.ports.unit_members(params, n_read=1, write=True)``):
        start In(1), opcode In(4), fields In(124): the instruction, dispatched as hw/README.md
            says (fields viewed as ``SM``: dst, src, len).
        done Out(1): high in cycle d + L - 1, the cycle of the last write.
        rd0 Out(ReadPort): the row, LANES words per beat; data registered on arrival.
        wr Out(WritePort): the probabilities, LANES per beat, unsigned Q16 in the low 17 bits.
        Every output is 0 when the unit is idle.

    Latency: L = 3 * ceil(len / LANES) + SM_OVERHEAD cycles, SM_OVERHEAD = SPAD_READ_LATENCY (3)
    + data register (1) + exp register (1) + SM_PASS_OVERHEAD (1) + SM_DIV_LATENCY (9) = 15.
    With n = ceil(len / LANES), beat k of pass 0 is read in cycle d + k, of pass p > 0 in cycle
    d + p*n + 1 + k; pass 2's beat k is written SM_OVERHEAD - 1 cycles after its read; done
    rises with the last write.

    Timing: about 113 MHz on the ECP5-85F (speed 6) at LANES = 4 with the scratchpad's read
    path taken out (nextpnr, the unit with a scratchpad and four ORed request sources); about
    8,000 LUTs, most of them the four dividers (LANES dividers: about 2,000 LUTs each).

    The ISA checks guarantee 1 <= len <= SM_MAX_LEN, both rows inside the scratchpad and no
    overlap between src and dst; the unit relies on them.

    Raises:
        TypeError: params is not a ``sim.spec.Params``.
    """

    OPCODES = ("SM",)

    def __init__(self, params: spec.Params):
        self.params = params
        super().__init__(unit_members(params, n_read=1, write=True))
        self.sum_bits = (params.SM_MAX_LEN * arith.Q16_ONE).bit_length()
        self.dividers = [
            Divider(divisor_bits=self.sum_bits, max_quotient=arith.Q16_ONE,
                    digit_bits=DIVIDER_DIGIT_BITS, rounded=True)
            for _ in range(params.LANES)
        ]
        div = self.dividers[0]
        # the schedule below assumes these; the spec's constants are the contract
        assert div.latency == spec.SM_DIV_LATENCY, (div.latency, spec.SM_DIV_LATENCY)
        assert spec.SM_PASS_OVERHEAD == 1, "the maximum is final two stages after pass 0's last data"
        assert SPAD_READ_LATENCY + 2 + spec.SM_PASS_OVERHEAD + div.latency == spec.SM_OVERHEAD

    def elaborate(self, platform):
        m = Module()
        # the named steps, in the order their logic is built
        rd_tag = self._read_sequencer(m)
        tag_x, xs, tag_e, above = self._data_register(m, rd_tag)
        mx = self._maximum(m, tag_x, tag_e, xs, above)
        e = self._exp(m, tag_x, mx, xs)
        z = self._sum(m, tag_e, e)
        tag_w = self._divide(m, tag_e, e, z)
        self._write(m, tag_w)
        return m

    def _read_sequencer(self, m: Module) -> Signal:
        """Three passes of reads over the row, the first read in the dispatch cycle straight
        from the fields, SM_PASS_OVERHEAD idle cycles after pass 0. Returns the read's tag (the
        pass, the valid lanes, the last beat).

        ``start`` is the unit's most widely used net and its register sits where the placer
        finds room, so it selects between the fields' and the registers' values at the last
        logic level: whether a beat is its pass's last is kept in a register (``rd_last``,
        set with ``rd_left``) rather than found again from the count each cycle."""
        lanes = self.params.LANES
        f = fields_view("SM", self.fields)
        start = self.start  # the top raises it only for SM
        reading = Signal()                 # a read follows this cycle's (after the first)
        gap = Signal(range(spec.SM_PASS_OVERHEAD + 1))  # idle read cycles left before pass 1
        rd_pass = Signal(2)
        rd_left = Signal(len(f.len))       # elements of the pass left, counting this beat
        rd_last = Signal()                 # last_beat(rd_left), kept beside it
        rd_addr = Signal(len(self.rd0.addr))

        cur_left = Signal.like(rd_left)
        cur_pass = Signal.like(rd_pass)
        cur_addr = Signal.like(rd_addr)
        cur_last = Signal()
        next_last = Signal()               # the beat after this one is its pass's last
        issue = Signal()
        m.d.comb += [
            issue.eq(start | (reading & (gap == 0))),
            cur_left.eq(Mux(start, f.len, rd_left)),
            cur_pass.eq(Mux(start, 0, rd_pass)),
            cur_addr.eq(Mux(start, f.src, rd_addr)),
            cur_last.eq(Mux(start, last_beat(f.len, lanes), rd_last)),
            next_last.eq(Mux(start, last_beat(f.len, 2 * lanes), last_beat(rd_left, 2 * lanes))),
            self.rd0.en.eq(issue),
            self.rd0.addr.eq(cur_addr),  # rd_addr is 0 when the unit is idle
        ]
        rd_tag = Signal(_tag_layout(lanes))
        m.d.comb += [
            rd_tag.valid.eq(issue),
            rd_tag.pass_.eq(cur_pass),
            rd_tag.mask.eq(lane_mask(cur_left, lanes)),
            rd_tag.last.eq(cur_last),
        ]
        with m.If(issue):
            with m.If(~cur_last):
                m.d.sync += [
                    reading.eq(1),
                    rd_pass.eq(cur_pass),
                    rd_left.eq(cur_left - lanes),
                    rd_last.eq(next_last),
                    rd_addr.eq(cur_addr + lanes),
                ]
            with m.Elif(cur_pass != PASSES - 1):
                m.d.sync += [
                    reading.eq(1),
                    rd_pass.eq(cur_pass + 1),
                    rd_left.eq(f.len),
                    rd_last.eq(last_beat(f.len, lanes)),
                    rd_addr.eq(f.src),
                    gap.eq(Mux(cur_pass == 0, spec.SM_PASS_OVERHEAD, 0)),
                ]
            with m.Else():
                m.d.sync += [reading.eq(0), rd_pass.eq(0), rd_left.eq(0), rd_last.eq(0), rd_addr.eq(0)]
        with m.Elif(gap != 0):
            m.d.sync += gap.eq(gap - 1)
        return rd_tag

    def _data_register(self, m: Module, rd_tag: Signal):
        """The scratchpad's data comes late in its cycle (block RAM, then the rotation): take it
        into a register untouched, with its tag delayed by the read latency plus one. Returns
        that tag (x), the int8 values, the tag one stage later (e: the exp values, the running
        maximum), and, with more than two lanes a half (LANES >= 8), each half's compares of every
        pair of lanes made on the data as it arrives and registered beside it (as AMAX's,
        :meth:`hw.vector.VectorUnit._amax_compares`; else None)."""
        lanes = self.params.LANES
        tag_arrive = delay(m, rd_tag, SPAD_READ_LATENCY, "tag_read")  # the data's cycle
        tag_x = delay(m, tag_arrive, 1, "tag_x")                        # in its registers
        x = [Signal(8, name=f"x{i}") for i in range(lanes)]
        with m.If(tag_arrive.valid):   # an enable of its own: Yosys would merge an unconditional
            for i in range(lanes):     # register of the shared read data with other units'
                m.d.sync += x[i].eq(self.rd0.data[i][:8])
        xs = [xi.as_signed() for xi in x]
        tag_e = delay(m, tag_x, 1, "tag_e")  # one stage later: the exp values, the running maximum
        half = lanes // 2
        above = [None, None]
        if half > 2:
            for k in range(2):
                data = [self.rd0.data[i][:8].as_signed() for i in range(k * half, (k + 1) * half)]
                above[k] = {}
                for (i, j), value in pairwise_above(data).items():
                    above[k][i, j] = Signal(name=f"max_above{k}_{i}_{j}")
                    with m.If(tag_arrive.valid):
                        m.d.sync += above[k][i, j].eq(value)
        return tag_x, xs, tag_e, above

    def _maximum(self, m: Module, tag_x, tag_e, xs, above) -> Signal:
        """Pass 0, the row's maximum mx: two register stages: the maxima of the two halves of
        the lanes (tail lanes excluded; :func:`hw.lanes.first_maximum`, its compares registered
        on arrival past two lanes a half), then the running maximum of those and mx."""
        start = self.start
        lanes = self.params.LANES
        int8_min = -(1 << 7)
        half = lanes // 2
        pair = [Signal(signed(8), name=f"max_half{k}") for k in range(2)]
        for k, pk in enumerate(pair):
            value, _lane = first_maximum(xs[k * half:(k + 1) * half], tag_x.mask[k * half:(k + 1) * half],
                                         above=above[k])
            m.d.sync += pk.eq(Mux(tag_x.mask[k * half], value, int8_min))
        mx = Signal(signed(8), init=int8_min)
        with m.If(start):
            m.d.sync += mx.eq(int8_min)
        with m.Elif(tag_e.valid & (tag_e.pass_ == 0)):
            # max(mx, p0, p1): three comparators side by side, then two multiplexer levels
            p0, p1 = pair
            m.d.sync += mx.eq(Mux((mx >= p0) & (mx >= p1), mx, Mux(p1 > p0, p1, p0)))
        return mx

    def _exp(self, m: Module, tag_x, mx: Signal, xs) -> list[Signal]:
        """e_i = EXP_LUT[mx - x_i] (the difference is 0..255, so 8-bit wrap-around is exact)."""
        lanes = self.params.LANES
        e = [Signal(VALUE_BITS, name=f"e{i}") for i in range(lanes)]
        for i in range(lanes):
            lut = ExpLUT()
            m.submodules[f"exp{i}"] = lut
            m.d.comb += lut.index.eq((mx - xs[i])[:INDEX_BITS])
            m.d.sync += e[i].eq(Mux(tag_x.mask[i], lut.value, 0))
        return e

    def _sum(self, m: Module, tag_e, e: list[Signal]) -> Signal:
        """Pass 1, z = the sum of the e_i of the row: a carry-save tree over the lanes, one register."""
        start = self.start
        z = Signal(self.sum_bits)
        with m.If(start):
            m.d.sync += z.eq(0)
        with m.Elif(tag_e.valid & (tag_e.pass_ == 1)):
            s, c = carry_save_tree([z, *e])
            m.d.sync += z.eq(s + c)
        return z

    def _divide(self, m: Module, tag_e, e: list[Signal], z: Signal):
        """Pass 2: the dividers form e_i * 65536 / z; returns the tag beside the quotients."""
        for i, div in enumerate(self.dividers):
            m.submodules[f"div{i}"] = div
            m.d.comb += [
                div.divisor.eq(z),
                div.dividend.eq(e[i] << Q16_BITS),
            ]
        tag_w = delay(m, tag_e, self.dividers[0].latency, "tag_div")  # beside the quotients
        return tag_w

    def _write(self, m: Module, tag_w) -> None:
        """Pass 2's quotients onto ``wr``; ``done`` with the last beat."""
        lanes = self.params.LANES
        start = self.start
        f = fields_view("SM", self.fields)
        writing = tag_w.valid & (tag_w.pass_ == 2)
        wr_addr = Signal.like(self.wr.addr)
        with m.If(start):
            m.d.sync += wr_addr.eq(f.dst)
        with m.Elif(writing):
            m.d.sync += wr_addr.eq(Mux(tag_w.last, 0, wr_addr + lanes))
        m.d.comb += [
            self.wr.en.eq(writing),
            self.wr.addr.eq(wr_addr),
            self.wr.mask.eq(Mux(writing, tag_w.mask, 0)),
            self.done.eq(writing & tag_w.last),
        ]
        for i, div in enumerate(self.dividers):
            m.d.comb += self.wr.data[i].eq(Mux(writing, div.quotient, 0))

