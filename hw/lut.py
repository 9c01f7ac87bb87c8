"""The table unit: LUT (GA2.md section 3), an int8 -> int8 map through a 256-entry table.

``LUT dst src len table``: S[dst+i] = s8(S[table + s8(S[src+i]) + 128]) for i < len.

The scratchpad moves LANES consecutive words per access, but a look-up needs LANES words at
unrelated addresses per beat, so the unit first copies the table into a memory of its own:
ceil(256/LANES) beats of LANES entries (the low byte of each word), each kept as one wide word
of LANES bytes. Every output lane then reads that memory through its own read port (Yosys gives
each port its own copy of the 256 bytes) and picks its byte with the index's low bits.

Schedule, d the dispatch cycle, TB = ceil(256/LANES) table beats, n = ceil(len/LANES), R =
SPAD_READ_LATENCY:

* table beat b (words table + LANES*b ..) read on ``rd0`` at d + b, registered on arrival
  (d + b + R) and written into the table memory at d + b + R + 1;
* source beat k read on ``rd0`` at d + TB + k, registered on arrival; at d + TB + k + R + 1 each
  lane's index (x + 128: the sign bit inverted) addresses the table memory (a synchronous
  read); at + R + 2 the table word is registered as it leaves the memory (nothing between a
  block RAM's clock-to-out and a register: on the ECP5 that path limited Fmax to 99 MHz); at
  + R + 3 the lane's byte is selected and registered, sign-extended; written at
  d + TB + k + R + 4. The last table write (d + TB + R) comes before the first look-up.

Latency: L = TB + n + LUT_OVERHEAD, LUT_OVERHEAD = R + 4. In place (dst == src, or dst ==
table) is safe: the table is copied before the first write and beat k is written after it is
read.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.memory import Memory

from sim import spec

from .component import Checked
from .isa import fields_view
from .lanes import delay, lane_mask, last_beat, write_beats
from .ports import SPAD_READ_LATENCY, unit_members

BYTE = 8


def _tag_layout(lanes: int) -> data.StructLayout:
    return data.StructLayout({
        "table": 1,      # a table beat
        "source": 1,     # a source beat
        "mask": lanes,   # the source beat's lanes that hold elements
        "last": 1,       # the last source beat
    })


SHARED_TABLE_PORTS = 8
"""Up to this many lanes read one table memory through a port each (Yosys copies it per port);
beyond, each lane gets a memory of its own: Yosys's memory_libmap ran out of memory (4 GiB in
the PyPI build, 24 GB natively) on the 16-port memory of LANES = 16."""


class TableUnit(Checked):
    """LUT, LANES elements per cycle after the table's copy.

    Parameters:
        params: the machine's ``sim.spec.Params`` (LANES, SPAD_WORDS).

    Members (``hw.ports.unit_members(params, n_read=1, write=True)``):
        start In(1), opcode In(4), fields In(124) (LUT's view: dst, src, len, table), done
            Out(1): the execute-stage contract; done in the cycle of the last write.
        rd0 Out(ReadPort): the table's beats, then the source's.
        wr Out(WritePort): the results, int8 sign-extended to 32 bits.
        Every output is 0 when the unit is idle.

    Latency: ceil(256/LANES) + ceil(len/LANES) + LUT_OVERHEAD cycles (the module docstring).
    Resources: a table memory of 256 bytes per lane (LANES read ports; past SHARED_TABLE_PORTS
    lanes, LANES memories of one read port).

    Errors: none; the execute stage dispatches only checked instructions (len >= 1, the regions
    inside the scratchpad, dst not partly overlapping src or table).

    Raises:
        TypeError: params is not a ``sim.spec.Params``.
    """

    OPCODES = ("LUT",)

    def __init__(self, params: spec.Params):
        assert spec.LUT_OVERHEAD == SPAD_READ_LATENCY + 4, "hw/lut.py: arrival, look-up, word, byte registers"
        self.params = params
        self.table_beats = -(-spec.LUT_TABLE_WORDS // params.LANES)
        assert self.table_beats >= 2 and spec.LUT_TABLE_WORDS % params.LANES == 0
        super().__init__(unit_members(params, n_read=1, write=True))

    def elaborate(self, platform):
        m = Module()
        lanes = self.params.LANES
        f = fields_view("LUT", self.fields)
        tag, addr = self._reads(m, f)
        m.d.comb += [self.rd0.en.eq(tag.table | tag.source), self.rd0.addr.eq(addr)]

        # one memory with a read port per lane, or (past SHARED_TABLE_PORTS lanes) one memory per
        # lane, each written with the same beats: the same values either way
        copies = 1 if lanes <= SHARED_TABLE_PORTS else lanes
        tables = [Memory(shape=BYTE * lanes, depth=self.table_beats, init=[]) for _ in range(copies)]
        for c, table in enumerate(tables):
            m.submodules[f"table{c}" if copies > 1 else "table"] = table
        back = delay(m, tag, SPAD_READ_LATENCY, "lut_back")       # the read's data arrives
        # the table: register the beat on arrival, write it the next cycle
        tbl_data = Signal(BYTE * lanes)
        tbl_index = Signal(range(self.table_beats))
        tbl_write = Signal()
        index_now = delay(m, self._table_index, SPAD_READ_LATENCY, "lut_tbl_index")
        m.d.sync += tbl_write.eq(back.table)
        with m.If(back.table):
            m.d.sync += [tbl_data.eq(Cat(self.rd0.data[k][:BYTE] for k in range(lanes))),
                         tbl_index.eq(index_now)]
        for table in tables:
            wp = table.write_port()
            m.d.comb += [wp.en.eq(tbl_write), wp.addr.eq(tbl_index), wp.data.eq(tbl_data)]

        # the source: register on arrival, look up, select the byte, write
        x = [Signal(BYTE, name=f"lut_x{k}") for k in range(lanes)]
        with m.If(back.source):
            m.d.sync += [x[k].eq(self.rd0.data[k][:BYTE]) for k in range(lanes)]
        at_lookup = delay(m, back, 1, "lut_lookup")
        lane_bits = (lanes - 1).bit_length()
        picked = []
        for k in range(lanes):
            entry = x[k] ^ 0x80                      # s8(x) + 128
            rp = tables[k % copies].read_port()
            m.d.comb += rp.addr.eq(entry[lane_bits:])
            # the table word is registered straight out of the memory (the block RAM's own
            # output register on the ECP5): no logic behind a block RAM's clock-to-out
            word = Signal(BYTE * lanes, name=f"lut_word{k}")
            m.d.sync += word.eq(rp.data)
            if lane_bits:
                sel = delay(m, entry[:lane_bits], 2, f"lut_sel{k}")
                picked.append(word.word_select(sel, BYTE))
            else:
                picked.append(word)
        at_pick = delay(m, at_lookup, 2, "lut_pick")
        out = [Signal(spec.WORD_BITS, name=f"lut_out{k}") for k in range(lanes)]
        m.d.sync += [out[k].eq(picked[k].as_signed()) for k in range(lanes)]
        at_write = delay(m, at_pick, 1, "lut_write")

        write_beats(m, self, f.dst, at_write.source, at_write.mask, at_write.last, out)
        return m

    def _reads(self, m: Module, f):
        """The read sequencer: table beats from the dispatch cycle (the first address straight
        from the fields), then the source's beats. Returns the read's tag and its address."""
        lanes = self.params.LANES
        abits = len(self.rd0.addr)
        in_table = Signal()                                 # table beats after the first remain
        tbl_addr = Signal(abits)
        tbl_count = Signal(range(self.table_beats))
        in_source = Signal()
        src_addr = Signal(abits)
        left = Signal(len(f.len))
        self._table_index = Signal(range(self.table_beats))

        tag = Signal(_tag_layout(lanes))
        addr = Signal(abits)
        table_now = self.start | in_table
        m.d.comb += [
            tag.table.eq(table_now),
            tag.source.eq(in_source),
            tag.mask.eq(Mux(in_source, lane_mask(left, lanes), 0)),
            tag.last.eq(in_source & last_beat(left, lanes)),
            addr.eq(Mux(self.start, f.table, 0) | Mux(in_table, tbl_addr, 0) | Mux(in_source, src_addr, 0)),
            self._table_index.eq(Mux(self.start, 0, tbl_count)),
        ]
        with m.If(self.start):
            m.d.sync += [in_table.eq(1), tbl_addr.eq(f.table + lanes), tbl_count.eq(1)]
        with m.Elif(in_table):
            m.d.sync += [tbl_addr.eq(tbl_addr + lanes), tbl_count.eq(tbl_count + 1)]
            with m.If(tbl_count == self.table_beats - 1):
                m.d.sync += [in_table.eq(0), in_source.eq(1), src_addr.eq(f.src), left.eq(f.len)]
        with m.Elif(in_source):
            m.d.sync += [src_addr.eq(src_addr + lanes), left.eq(left - lanes)]
            with m.If(last_beat(left, lanes)):
                m.d.sync += [in_source.eq(0), src_addr.eq(0), tbl_addr.eq(0)]
        return tag, addr
