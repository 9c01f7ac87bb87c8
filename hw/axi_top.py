"""``GA2Axi(params)``: GA-2 as a system component, an AXI4-Lite slave and an AXI4 master.

The core (:class:`hw.top.GA2`, unchanged) runs under a clock enable: in a cycle where the memory
bus cannot serve the DMA (an LD's data has not come back, or the write queues are full) the
whole core stands still, every register and memory of it, and so do its counters. The
reference machine's timing therefore holds in the core's own cycles: every counter it keeps is
the reference machine's, and the top counts the cycles it stood still (``mem_stall``) and the
cycles from START to DONE (``cycles``, stalls included). docs/GA2.md section 8 states the rule:
``cycles - mem_stall`` and every other counter equal the reference machine's.

Around the core:

* :class:`~hw.axi_regs.AxiLiteRegs`: the register map of :mod:`sim.regmap` (control, status,
  error, the counters, the instruction window, the interrupt);
* :class:`~hw.axi_read.AxiReader` and :class:`~hw.axi_write.AxiWriter`: the DMA's external bus
  as AXI4 bursts, each told of an LD or ST by the DMA's own dispatch (its ``start``, opcode and
  fields, read from the core's DMA unit) and each saying one cycle ahead when the core must
  stand still; the top registers the OR of the two (``stall``), the core's clock enable.

DONE rises when the core has stopped and every write has been answered (B); reads wait for
outstanding writes, since AXI does not order a read after a write to the same address.
"""

from __future__ import annotations

from amaranth.hdl import EnableInserter, Module, Mux, Signal
from amaranth.lib.wiring import Out

from sim import regmap, spec
from sim.spec import DEFAULT, Params

from . import axi
from .axi import ADDR_BITS
from .axi_read import AxiReader
from .axi_regs import AxiLiteRegs
from .axi_write import AxiWriter
from .component import Checked, check_params
from .isa import fields_view, opcode
from .top import GA2

# STATUS's and CTRL's fields sit at the same bits on every machine (sim/regmap.py)
STATUS = {f.name: f for f in regmap.by_name(DEFAULT)["STATUS"].fields}
START = regmap.by_name(DEFAULT)["CTRL"].field("START").lsb


class GA2Axi(Checked):
    """GA-2 with an AXI4-Lite register slave and an AXI4 master for its external memory.

    Parameters:
        params: the machine's :class:`sim.spec.Params`.
        burst_bytes: the master's bursts end at multiples of it (a power of two up to 4 KiB,
            :class:`~hw.axi_read.AxiReader`; an SoC whose bus converts GA-2's beats to narrower
            ones asks for bursts that stay within 256 of those).

    Members:
        s_axil_*: the register slave (:data:`hw.axi.AXI4_LITE`, ``sim.regmap.address_bits``
            address bits: the slave's offset within its window).
        m_axi_*: the DMA's master (:data:`hw.axi.AXI4`, 32-bit addresses, LANES * 32 data bits):
            external word w is at byte ``EXT_BASE + 4 * w``.
        irq Out(1): IRQ_STATUS & IRQ_ENABLE (level, active high).
        timing_fault Out(1): the core's self-check (:class:`hw.top.GA2`).
        bridge_fault Out(1): the read side's self-check, sticky from reset: the core advanced in
            a cycle whose data was not there (:attr:`hw.axi_read.AxiReader.late`).

    Attributes: core (the :class:`~hw.top.GA2`), regs, reader, writer.

    Latency: the core's cycles, plus the cycles it stands still for the bus; DONE and the
    interrupt after the last write is answered.

    Raises:
        TypeError: params is not a :class:`sim.spec.Params`.
        ValueError: burst_bytes is not a power of two from one beat to 4 KiB.
    """

    @classmethod
    def check(cls, params: Params, burst_bytes: int = axi.BOUNDARY) -> None:
        check_params(cls.__name__, params)
        GA2.check(params)
        axi.check_burst_bytes(burst_bytes, params.LANES)

    def __init__(self, params: Params, burst_bytes: int = axi.BOUNDARY):
        self.params = params
        self.burst_bytes = burst_bytes
        data_bits = params.LANES * spec.WORD_BITS
        super().__init__({
            **axi.members(axi.AXI4_LITE, "s_axil", master=False, addr_bits=regmap.address_bits(params)),
            **axi.members(axi.AXI4, "m_axi", master=True, addr_bits=ADDR_BITS, data_bits=data_bits),
            "irq": Out(1), "timing_fault": Out(1), "bridge_fault": Out(1),
        })
        self.core = GA2(params)
        self.regs = AxiLiteRegs(params)
        self.reader = AxiReader(params, burst_bytes)
        self.writer = AxiWriter(params, burst_bytes)

    def elaborate(self, platform):
        m = Module()
        core, regs, reader, writer = self.core, self.regs, self.reader, self.writer
        stall = Signal()                      # the core stands still this cycle
        en = ~stall
        m.submodules.core = EnableInserter({"sync": en})(core)
        m.submodules.regs, m.submodules.reader, m.submodules.writer = regs, reader, writer
        axi.connect(m, axi.AXI4_LITE, "s_axil", self, regs)
        axi.connect(m, axi.AXI4, "m_axi", reader, self, channels=("ar", "r"))
        axi.connect(m, axi.AXI4, "m_axi", writer, self, channels=("aw", "w", "b"))

        # the DMA's dispatch tells the bus sides of an LD or an ST; a GATHER's row, once the DMA
        # has its address (GATHER_INDEX_CYCLES later), is read as an LD of that row (its len and
        # fmt are an LD's bits); a row out of its table reads nothing
        dma = core.units["dma"]
        ld, st = fields_view("LD", dma.fields), fields_view("ST", dma.fields)
        is_ld, is_st = dma.opcode == opcode("LD"), dma.opcode == opcode("ST")
        m.d.comb += [
            reader.start.eq(((dma.start & is_ld) | dma.row_go) & en),
            reader.src.eq(Mux(dma.row_go, dma.row_src, ld.src)), reader.length.eq(ld.len),
            reader.fmt.eq(ld.fmt), reader.rd_en.eq(core.ext.rd_en), reader.en.eq(en),
            reader.base.eq(regs.ext_base), reader.hold.eq(~writer.idle),
            core.ext.rd_data.eq(reader.rd_data),
            writer.start.eq(dma.start & en & is_st), writer.dst.eq(st.dst), writer.length.eq(st.len),
            writer.wr_en.eq(core.ext.wr_en), writer.wr_mask.eq(core.ext.wr_mask),
            writer.wr_data.eq(core.ext.wr_data), writer.en.eq(en), writer.base.eq(regs.ext_base),
        ]
        m.d.sync += stall.eq(reader.stall_next | writer.stall_next)
        self._host(m, stall)
        return m

    def _host(self, m: Module, stall: Signal) -> None:
        """START, STATUS, the error registers, the counters and the interrupt."""
        core, regs = self.core, self.regs
        running = Signal()                    # from START until DONE
        done = Signal()
        start = Signal()
        m.d.comb += [
            done.eq(core.done & self.writer.idle),
            start.eq(regs.ctrl_write & regs.write_data[START] & ~running),
            core.start.eq(start),
            core.prog_len.eq(regs.prog_len),
            core.imem_we.eq(regs.imem_we), core.imem_waddr.eq(regs.imem_waddr),
            core.imem_wdata.eq(regs.imem_wdata),
            regs.busy.eq(running),
        ]
        ends = running & done
        wall = Signal(spec.COUNTER_BITS)
        stalled = Signal(spec.COUNTER_BITS)
        bus_error = Signal()
        with m.If(start):
            m.d.sync += [running.eq(1), wall.eq(1), stalled.eq(0), bus_error.eq(0)]
        with m.Elif(running):
            with m.If(ends):
                m.d.sync += running.eq(0)
            with m.Else():
                m.d.sync += [wall.eq(wall + 1), stalled.eq(stalled + (stall | core.done))]
            with m.If(self.reader.bus_error | self.writer.bus_error):
                m.d.sync += bus_error.eq(1)

        irq_done = Signal()
        with m.If(ends):
            m.d.sync += irq_done.eq(1)
        with m.Elif(regs.irq_status_write & regs.write_data[0]):
            m.d.sync += irq_done.eq(0)
        status = {"BUSY": running, "DONE": done & ~running, "ERROR": core.error & done & ~running,
                  "BUS_ERROR": bus_error}
        m.d.comb += [
            regs.status.eq(sum(Mux(v, 1 << STATUS[k].lsb, 0) for k, v in status.items())),
            regs.error_code.eq(core.error_code),
            regs.error_pc.eq(core.error_pc),
            regs.irq_status.eq(irq_done),
            self.irq.eq(irq_done & regs.irq_enable[0]),
            self.timing_fault.eq(core.timing_fault),
        ]
        for name in regmap.counter_names():
            source = (wall if name == "cycles" else stalled if name == "mem_stall"
                      else getattr(core, f"count_{name}", 0))
            m.d.comb += getattr(regs, name).eq(source)
        late = Signal()
        with m.If(self.reader.late):
            m.d.sync += late.eq(1)
        m.d.comb += self.bridge_fault.eq(late)
