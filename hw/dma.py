"""The DMA: LD and ST between the scratchpad and the external-memory bus, LANES words per beat,
and GATHER (issue 26), an LD of the table row a scratchpad word names.

Both the scratchpad ports and the external bus move LANES consecutive words at any word
address (hw/README.md), so a beat needs no realignment: lane i of the word read at
``src + LANES*b + i`` is written to ``dst + LANES*b + i``. The last beat writes only the lanes
below the remaining length.

GATHER first reads its row number r = S[idx] (``rd0``, in the dispatch cycle), checks it against
``rows`` and computes the row's external address src + r * (words per row) in
GATHER_INDEX_CYCLES, then runs as an LD of that row. A row number out of the table raises
``fault`` for one cycle (the execute stage stops the machine with BAD_INDEX at the GATHER's end)
and the beats run without reading or writing anything, so the GATHER still ends after its
latency.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, Value
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from sim import spec
from sim.spec import Params

from .component import Checked
from .isa import fields_view, opcode
from .lanes import delay, lane_mask, last_beat
from .ports import unit_members, words


def _tag_layout(lanes: int) -> data.StructLayout:
    """A beat's tag, travelling beside its read."""
    return data.StructLayout({
        "valid": 1,
        "ld": 1,                  # an LD beat (scratchpad write), else ST (external write)
        "last": 1,                # the instruction's last beat
        "addr": spec.ADDR_BITS,   # where the beat is written
        "mask": lanes,            # its lanes below len
    })


class DMA(Checked):
    """The LD / ST unit.

    Parameters:
        params: the machine's :class:`sim.spec.Params` (LANES, SPAD_WORDS, EXT_WORDS).

    Members (``hw.ports.unit_members(params, n_read=1, write=True, ext=True)``):
        start In(1), opcode In(4), fields In(124), done Out(1): the execute-stage contract.
        rd0 Out(ReadPort): scratchpad reads (ST).
        wr Out(WritePort): scratchpad writes (LD).
        ext Out(ExtPort): the external-memory bus (LD reads, ST writes).
        An idle DMA drives every output to 0.
        fault Out(1): high for one cycle, d + GATHER_INDEX_CYCLES - 1, when a GATHER's row number
            is not below its ``rows`` (BAD_INDEX); that GATHER then writes nothing.
        OVERLAP = 1 only: hold In(1). ``hold`` in cycle c: the scratchpad's write port is
        another engine's in cycle c + LD_OVERHEAD (the execute stage knows its windows,
        hw/overlap.py), so an LD does not read the beat whose write would fall there: the beat
        (and every later one) waits a cycle, and the LD ends a cycle later (the execute stage
        counts the LD's beats itself and holds its countdown). ST never waits.

    Schedule, with d the dispatch cycle and n = ceil(len / LANES) beats:
        beat b is read in cycle d + b (external memory for LD, scratchpad rd0 for ST; the first
        address comes straight from ``fields`` in the dispatch cycle), its data returns
        EXT_READ_LATENCY (LD) or SPAD_READ_LATENCY (ST) cycles later and is registered
        straight off the port, and it is written in the cycle after that. ``done`` is the
        cycle of the last write.

    GATHER: S[idx] read on rd0 in d, registered on arrival (d + R + 1); the row's offset r * words
    and the check r >= rows registered (d + R + 2; ``fault`` then), src + offset registered
    (d + R + 3 = d + GATHER_INDEX_CYCLES): beat b read there + b, as an LD's (not held by
    ``hold``: a GATHER holds the write port for its window, GA2.md section 7).

    Latency: n + LD_OVERHEAD (LD), n + ST_OVERHEAD (ST), n + GATHER_OVERHEAD (GATHER) cycles:
    the read latency of the memory read, plus one for the data register (and the row number's
    GATHER_INDEX_CYCLES).

    Errors: ``fault`` (BAD_INDEX) for a GATHER's row number; otherwise none: the execute stage
    dispatches only checked instructions (len >= 1, the regions, a GATHER's whole table, inside
    their memories).

    Raises:
        TypeError: params is not a :class:`sim.spec.Params`.
    """

    OPCODES = ("LD", "ST", "GATHER")
    """The instructions this unit executes."""
    MULTIPLIERS = 1
    """Products of two variables (flows/synth/dsp.py): a GATHER's row number times its words per row."""

    def __init__(self, params: Params):
        assert spec.LD_OVERHEAD == spec.EXT_READ_LATENCY + 1, "hw/dma.py: LD = ext read, data register"
        assert spec.ST_OVERHEAD == spec.SPAD_READ_LATENCY + 1, "hw/dma.py: ST = spad read, data register"
        assert spec.GATHER_INDEX_CYCLES == spec.SPAD_READ_LATENCY + 3, \
            "hw/dma.py: the row number's arrival, offset and check, address registers"
        ld_bits, gather_bits = spec.BY_NAME["LD"].field_offsets(), spec.BY_NAME["GATHER"].field_offsets()
        assert all(ld_bits[name] == gather_bits[name] for name in ("dst", "len", "fmt")), \
            "hw/dma.py: an LD's and a GATHER's dst, len and fmt are the same bits"
        self.params = params
        members = unit_members(params, n_read=1, write=True, ext=True) | {"fault": Out(1)}
        if params.OVERLAP:
            members |= {"hold": In(1)}
        super().__init__(members)
        self.row_go = Signal()
        """For a system top that fetches an LD's region ahead (hw/axi_top.py): a GATHER's row
        beats start in this cycle (d + GATHER_INDEX_CYCLES; not for a row out of its table)."""
        self.row_src = Signal(spec.ADDR_BITS)
        """The external address of that row (src + r * words per row), with ``row_go``."""

    def elaborate(self, platform):
        m = Module()
        lanes = self.params.LANES
        go, row_addr, dropped = self._row_number(m)
        m.d.comb += [self.row_go.eq(go & ~dropped), self.row_src.eq(row_addr)]
        issue, issue_ld, spad_addr, ext_addr, mask, last = self._issue(m, go, row_addr)

        # The beat's tag travels beside the read: it is written one cycle after its data arrives,
        # EXT_READ_LATENCY (LD) or SPAD_READ_LATENCY (ST) cycles after the read.
        tag = Signal(_tag_layout(lanes))
        m.d.comb += [
            tag.valid.eq(issue),
            tag.ld.eq(issue_ld),
            tag.last.eq(issue & last),
            tag.addr.eq(Mux(issue_ld, spad_addr, ext_addr)),   # where the beat is written
            tag.mask.eq(Mux(issue, mask, 0)),
        ]
        at_ld_write = delay(m, tag, spec.EXT_READ_LATENCY + 1, "ld_tag")
        at_st_write = (at_ld_write if spec.SPAD_READ_LATENCY == spec.EXT_READ_LATENCY
                       else delay(m, tag, spec.SPAD_READ_LATENCY + 1, "st_tag"))
        # the returning data is registered straight off each port (no multiplexer between the
        # memory's output and this register); the scratchpad's only when an ST beat arrives: a
        # register of the shared read data without an enable would be one Yosys merges with the
        # other units' (one copy, far from most of its loads)
        from_ext = Signal(words(lanes), reset_less=True)
        from_spad = Signal(words(lanes), reset_less=True)
        st_arrives = delay(m, tag.valid & ~tag.ld, spec.SPAD_READ_LATENCY, "st_arrives")
        m.d.sync += from_ext.eq(self.ext.rd_data)
        with m.If(st_arrives):
            m.d.sync += from_spad.eq(self.rd0.data)

        # Requests, gated to 0 when not in use (a GATHER out of its table reads and writes nothing).
        read_ext = issue & issue_ld & ~(dropped & ~self.start)    # cleared by the next dispatch
        read_spad = issue & ~issue_ld
        ld_beat = at_ld_write.valid & at_ld_write.ld
        write_spad = ld_beat & ~dropped
        write_ext = at_st_write.valid & ~at_st_write.ld
        read_row = self.start & (self.opcode == opcode("GATHER"))     # the row number, S[idx]
        packed = fields_view("LD", self.fields).fmt      # a GATHER's fmt is the same bit
        m.d.comb += [
            self.ext.rd_en.eq(read_ext),
            self.ext.wr_en.eq(write_ext),
            self.ext.addr.eq(Mux(read_ext, ext_addr, 0) | Mux(write_ext, at_st_write.addr, 0)),
            self.ext.wr_mask.eq(Mux(write_ext, at_st_write.mask, 0)),
            self.ext.wr_data.eq(Mux(write_ext, from_spad, 0)),
            self.rd0.en.eq(read_spad | read_row),
            self.rd0.addr.eq(Mux(read_spad, spad_addr, 0)
                             | Mux(read_row, fields_view("GATHER", self.fields).idx, 0)),
            self.wr.en.eq(write_spad),
            self.wr.addr.eq(Mux(write_spad, at_ld_write.addr, 0)),
            self.wr.mask.eq(Mux(write_spad, at_ld_write.mask, 0)),
            self.wr.data.eq(Mux(write_spad, Mux(packed, self._unpacked(from_ext), from_ext), 0)),
            self.done.eq((ld_beat & at_ld_write.last) | (write_ext & at_st_write.last)),
        ]
        return m

    def _row_number(self, m: Module):
        """GATHER's first GATHER_INDEX_CYCLES: the row number S[idx] (read by ``elaborate`` on rd0 in
        the dispatch cycle) registered on arrival; its row's offset and the range check; the row's
        external address. Returns the pulse that starts the row's beats (d + GATHER_INDEX_CYCLES),
        that address, and ``dropped``: the GATHER's row number is out of its table (held until
        the next dispatch, so the beats read and write nothing)."""
        f = fields_view("GATHER", self.fields)
        is_gather = self.opcode == opcode("GATHER")
        arrives = delay(m, self.start & is_gather, spec.SPAD_READ_LATENCY, "row_arrives")
        row = Signal(spec.WORD_BITS, reset_less=True)
        with m.If(arrives):          # the shared read data, with an enable of its own
            m.d.sync += row.eq(self.rd0.data[0])
        checked = delay(m, arrives, 1, "row_checked")     # row in its register
        # words per row, registered from the held fields (a register in front of the multiplier)
        words_per_row = Signal(spec.ADDR_BITS)
        assert spec.INT8_PER_WORD == 4, "hw/dma.py: ceil(len/4) as a shift"
        packed_words = (f.len + 3) >> 2          # a shift: `//` made a divider (10.8 ns, 28 levels)
        m.d.sync += words_per_row.eq(Mux(f.fmt, packed_words, f.len))
        offset = Signal(spec.ADDR_BITS)
        bad = Signal()
        m.d.sync += [offset.eq((row[:spec.ADDR_BITS] * words_per_row)[:spec.ADDR_BITS]),
                     bad.eq(row >= f.rows)]
        placed = delay(m, checked, 1, "row_placed")       # offset and check in their registers
        row_addr = Signal(spec.ADDR_BITS)
        m.d.sync += row_addr.eq(f.src + offset)
        go = delay(m, placed, 1, "row_go")                # the address in its register
        dropped = Signal()
        with m.If(self.start):
            m.d.sync += dropped.eq(0)
        with m.Elif(placed & bad):
            m.d.sync += dropped.eq(1)
        m.d.comb += self.fault.eq(placed & bad)
        return go, row_addr, dropped

    def _unpacked(self, beat) -> Value:
        """LD fmt = 1: lane i is byte i % 4 of the beat's word i // 4, sign-extended (the
        beat's LANES/4 packed words sit in its first lanes): wiring only."""
        per = spec.INT8_PER_WORD
        lanes = []
        for i in range(self.params.LANES):
            byte = beat[i // per][8 * (i % per):8 * (i % per) + 8]
            lanes.append(Cat(byte, byte[7].replicate(spec.WORD_BITS - 8)))
        return Cat(*lanes)

    def _issue(self, m: Module, go: Value, row_addr: Value):
        """The issue stage: one read per cycle, from the first beat (the dispatch cycle; ``go``
        for a GATHER, its first external address ``row_addr``) until the last beat. Returns
        issue, whether it is an LD's (or a GATHER's), the beat's scratchpad and external
        addresses, its valid lanes and whether it is the last."""
        lanes = self.params.LANES
        ld = fields_view("LD", self.fields)
        st = fields_view("ST", self.fields)
        is_st = self.opcode == opcode("ST")
        is_ld = ~is_st                       # LD, or GATHER (an LD of the row from ``go`` on)
        first = (self.start & (self.opcode != opcode("GATHER"))) | go
        gathering = self.opcode == opcode("GATHER")     # held from the dispatch to the next one
        # The scratchpad-side address, the external-side address and the length, for each kind
        # (LD's and GATHER's dst, len and fmt are the same bits of the fields).
        spad_field = Mux(is_ld, ld.dst, st.src)
        ext_field = Mux(go, row_addr, Mux(is_ld, ld.src, st.dst))
        len_field = Mux(is_ld, ld.len, st.len)

        running = Signal()                    # beats after the first (or a held first) remain
        load = Signal()                       # the running instruction is an LD
        spad_q = Signal(spec.ADDR_BITS)       # addresses and words left of the next beat
        ext_q = Signal(spec.ADDR_BITS)
        left_q = Signal(spec.ADDR_BITS)

        issue = Signal()
        issue_ld = Signal()
        spad_addr = Signal(spec.ADDR_BITS)
        ext_addr = Signal(spec.ADDR_BITS)
        left = Signal(spec.ADDR_BITS)
        mask = Signal(lanes)
        last = Signal()
        if self.params.OVERLAP:
            # an LD's beat is not read in a cycle whose write slot (LD_OVERHEAD later) is
            # another engine's: it and the beats after it wait (hw/overlap.py, GA2.md section 7);
            # a GATHER's never does (it holds the write port for its window)
            want = Signal()
            m.d.comb += [
                want.eq(first | running),
                issue.eq(want & ~(issue_ld & ~gathering & self.hold)),
            ]
        else:
            m.d.comb += issue.eq(first | running)
        m.d.comb += [
            issue_ld.eq(Mux(first, is_ld, load)),
            spad_addr.eq(Mux(first, spad_field, spad_q)),
            ext_addr.eq(Mux(first, ext_field, ext_q)),
            left.eq(Mux(first, len_field, left_q)),
            mask.eq(lane_mask(left, lanes)),
            last.eq(last_beat(left, lanes)),
        ]

        def ext_step(ld_now: Value) -> Value:     # a packed LD reads LANES / 4 external words a beat
            return Mux(ld_now & ld.fmt, lanes // spec.INT8_PER_WORD, lanes)

        if self.params.OVERLAP:
            # a held beat (want without issue) is read again next cycle: the addresses and the
            # count stay. Each register's next value is one of four, every sum formed from
            # registers and the held fields alone (the first beat's from the fields, a later
            # beat's from the register), so ``first`` and ``issue`` (the dispatch, and the hold
            # from the control across the chip) only pick among them after the carry chains
            def pick(field, held, field_next, held_next):
                return Mux(first, Mux(issue, field_next, field), Mux(issue, held_next, held))

            with m.If(want):
                m.d.sync += [
                    running.eq(~issue | ~last),
                    load.eq(issue_ld),
                    spad_q.eq(pick(spad_field, spad_q, spad_field + lanes, spad_q + lanes)),
                    ext_q.eq(pick(ext_field, ext_q, ext_field + ext_step(is_ld), ext_q + ext_step(load))),
                    left_q.eq(pick(len_field, left_q, len_field - lanes, left_q - lanes)),
                ]
        else:
            with m.If(issue):
                m.d.sync += [
                    running.eq(~last),
                    load.eq(issue_ld),
                    spad_q.eq(spad_addr + lanes),
                    ext_q.eq(ext_addr + ext_step(issue_ld)),
                    left_q.eq(left - lanes),
                ]
        return issue, issue_ld, spad_addr, ext_addr, mask, last
