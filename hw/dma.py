"""The DMA: LD and ST between the scratchpad and the external-memory bus, LANES words per beat.

Both the scratchpad ports and the external bus move LANES consecutive words at any word
address (hw/README.md), so a beat needs no realignment: lane i of the word read at
``src + LANES*b + i`` is written to ``dst + LANES*b + i``. The last beat writes only the lanes
below the remaining length.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring

from sim import spec
from sim.spec import DEFAULT, Params

from .isa import fields_view, opcode
from .ports import unit_members, words


class DMA(wiring.Component):
    """The LD / ST unit.

    Parameters:
        params: the machine's :class:`sim.spec.Params` (LANES, SPAD_WORDS, EXT_WORDS).

    Members (``hw.ports.unit_members(params, n_read=1, write=True, ext=True)``):
        start In(1), opcode In(4), fields In(124), done Out(1): the execute-stage contract.
        rd0 Out(ReadPort): scratchpad reads (ST).
        wr Out(WritePort): scratchpad writes (LD).
        ext Out(ExtPort): the external-memory bus (LD reads, ST writes).
        An idle DMA drives every output to 0.

    Schedule, with d the dispatch cycle and n = ceil(len / LANES) beats:
        beat b is read in cycle d + b (external memory for LD, scratchpad rd0 for ST; the first
        address comes straight from ``fields`` in the dispatch cycle), its data returns one
        cycle later (EXT_READ_LATENCY = SPAD_READ_LATENCY = 1) and is registered, and it is
        written in cycle d + b + 2. ``done`` is the cycle of the last write, d + n + 1.

    Latency: n + LD_OVERHEAD (LD), n + ST_OVERHEAD (ST) cycles, both overheads 2: the read
    latency and the data register.

    Errors: none; the execute stage dispatches only checked instructions (len >= 1, both
    regions inside their memories).

    Raises:
        TypeError: params is not a :class:`sim.spec.Params`.
    """

    OPCODES = ("LD", "ST")
    """The instructions this unit executes."""

    def __init__(self, params: Params = DEFAULT):
        if not isinstance(params, Params):
            self._MustUse__silence = True  # no "created but never used" warning for a refused unit
            raise TypeError(f"DMA: params={params!r} must be a sim.spec.Params")
        assert spec.LD_OVERHEAD == 2 and spec.ST_OVERHEAD == 2, "hw/dma.py realises overheads of 2"
        assert spec.EXT_READ_LATENCY == 1 and spec.SPAD_READ_LATENCY == 1
        self.params = params
        super().__init__(unit_members(params, n_read=1, write=True, ext=True))

    def elaborate(self, platform):
        m = Module()
        lanes = self.params.LANES
        ld = fields_view("LD", self.fields)
        st = fields_view("ST", self.fields)
        is_ld = self.opcode == opcode("LD")
        # The scratchpad-side address, the external-side address and the length, for either kind.
        spad_field = Mux(is_ld, ld.dst, st.src)
        ext_field = Mux(is_ld, ld.src, st.dst)
        len_field = Mux(is_ld, ld.len, st.len)

        # Issue stage: one read per cycle, from the dispatch cycle until the last beat.
        running = Signal()                    # beats after the first remain to be issued
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
        m.d.comb += [
            issue.eq(self.start | running),
            issue_ld.eq(Mux(self.start, is_ld, load)),
            spad_addr.eq(Mux(self.start, spad_field, spad_q)),
            ext_addr.eq(Mux(self.start, ext_field, ext_q)),
            left.eq(Mux(self.start, len_field, left_q)),
            mask.eq(Cat(left > i for i in range(lanes))),
            last.eq(left <= lanes),
        ]
        with m.If(issue):
            m.d.sync += [
                running.eq(~last),
                load.eq(issue_ld),
                spad_q.eq(spad_addr + lanes),
                ext_q.eq(ext_addr + lanes),
                left_q.eq(left - lanes),
            ]

        # Stage 1: the read data arrives. Stage 2: the registered data is written.
        s1_valid, s1_ld, s1_last = Signal(), Signal(), Signal()
        s1_addr, s1_mask = Signal(spec.ADDR_BITS), Signal(lanes)
        s2_valid, s2_ld, s2_last = Signal(), Signal(), Signal()
        s2_addr, s2_mask = Signal(spec.ADDR_BITS), Signal(lanes)
        # the returning data is registered straight off each port (no multiplexer between the
        # block RAM's output and this register: about 6 ns of the cycle are the RAM's)
        s2_from_ext = Signal(words(lanes), reset_less=True)
        s2_from_spad = Signal(words(lanes), reset_less=True)
        m.d.sync += [
            s1_valid.eq(issue),
            s1_ld.eq(issue_ld),
            s1_last.eq(issue & last),
            s1_addr.eq(Mux(issue_ld, spad_addr, ext_addr)),   # where the beat is written
            s1_mask.eq(mask),
            s2_valid.eq(s1_valid),
            s2_ld.eq(s1_ld),
            s2_last.eq(s1_last),
            s2_addr.eq(s1_addr),
            s2_mask.eq(Mux(s1_valid, s1_mask, 0)),
            s2_from_ext.eq(self.ext.rd_data),
            s2_from_spad.eq(self.rd0.data),
        ]

        # Requests, gated to 0 when not in use.
        read_ext = issue & issue_ld
        read_spad = issue & ~issue_ld
        write_spad = s2_valid & s2_ld
        write_ext = s2_valid & ~s2_ld
        m.d.comb += [
            self.ext.rd_en.eq(read_ext),
            self.ext.wr_en.eq(write_ext),
            self.ext.addr.eq(Mux(read_ext, ext_addr, 0) | Mux(write_ext, s2_addr, 0)),
            self.ext.wr_mask.eq(Mux(write_ext, s2_mask, 0)),
            self.ext.wr_data.eq(Mux(write_ext, s2_from_spad, 0)),
            self.rd0.en.eq(read_spad),
            self.rd0.addr.eq(Mux(read_spad, spad_addr, 0)),
            self.wr.en.eq(write_spad),
            self.wr.addr.eq(Mux(write_spad, s2_addr, 0)),
            self.wr.mask.eq(Mux(write_spad, s2_mask, 0)),
            self.wr.data.eq(Mux(write_spad, s2_from_ext, 0)),
            self.done.eq(s2_valid & s2_last),
        ]
        return m
