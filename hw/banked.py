"""A word-addressed memory that reads and writes LANES consecutive words per cycle at any alignment.

Used for the scratchpad (two read ports, one write port) and for the external memory of the
simulation and board tops (one of each). GA2.md section 6: banked by word address mod LANES,
with a rotation network, so that any LANES consecutive words move in one cycle.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal, Value
from amaranth.lib import memory
from amaranth.lib.wiring import In

from sim import spec

from .component import Checked
from .ports import ReadPort, WritePort, addr_bits

NO_RW_CHECK = {"no_rw_check": 1}
"""Memory attributes telling Yosys that a read of a word in the cycle it is written may return
anything. GA-2 never uses such a read (the ISA's overlap checks and the units' schedules keep a
unit from reading a word in the cycle it is written; only lanes beyond a row's end may collide,
and their data is discarded), so Yosys need not build the read-old-data behaviour of the
simulation model around each block RAM (about 300 flip-flops and a path from the read address
through the bank's address adder per memory)."""

LATENCIES = (1, 2, 3)
"""The read latencies a BankedMemory can have, in cycles:

1. the block RAM's read alone (its address register), then the rotation network;
2. a register on the block RAM's output, before the rotation network;
3. and registers on the requests (read enables and addresses, the write port) before the
   banks' address adders and the write rotation network.

A write takes effect one cycle later with request registers, but so does every read: what a
read returns is the same at every latency (a read issued after a write sees it; a read issued
in the same cycle does not)."""


class BankedMemory(Checked):
    """LANES banks of block RAM with rotation networks on every port.

    Word w lives in bank ``w % lanes`` at row ``w // lanes``. Addresses wrap around at the
    end of the memory (a beat that runs past the end touches the first words; the ISA checks
    keep masked-off lanes from mattering, and enabled lanes always lie inside).

    Parameters:
        depth: words, a power of two and a multiple of lanes.
        n_read: number of read ports.
        lanes: words per access (LANES).
        init: optional initial contents, a sequence of at most depth 32-bit words.
        latency: read latency in cycles, one of :data:`LATENCIES` (default
            ``spec.SPAD_READ_LATENCY``; the external memories of the tops take
            ``spec.EXT_READ_LATENCY``). On the ECP5 at 100 MHz the scratchpad needs 3: a block
            RAM's clock-to-output (about 5.8 ns without its output register) leaves no room for
            the rotation and a unit's logic in the same cycle, and the units' requests, ORed
            together across the chip, leave none for the address adders and the write rotation.

    Members:
        rd: list of ``n_read`` read ports (``In(ReadPort(...))``): ``en``, ``addr`` in cycle c,
            ``data`` in cycle c + latency, lane i = word addr + i. Non-transparent: a write to
            the same word in cycle c is not seen. ``data`` is only meaningful in the cycle it
            arrives (it may change in the cycles after).
        wr: one write port (``In(WritePort(...))``): lanes with their ``mask`` bit set are
            written at the end of the cycle.

    Latency: reads ``latency`` cycles; writes 0.

    Raises:
        ValueError: depth is not a power of two or not a multiple of lanes, init is too long,
            or latency is not one of :data:`LATENCIES`.
    """

    @classmethod
    def check(cls, depth: int, n_read: int = 1, init=(), *, lanes: int,
              latency: int = spec.SPAD_READ_LATENCY) -> None:
        """The Raises above, before the memory exists."""
        if depth < lanes or depth & (depth - 1) or depth % lanes:
            raise ValueError(f"BankedMemory: depth={depth} must be a power of two "
                             f"and a multiple of lanes={lanes}")
        if n_read < 1:
            raise ValueError(f"BankedMemory: n_read={n_read} must be at least 1")
        if latency not in LATENCIES:
            raise ValueError(f"BankedMemory: latency={latency!r} must be one of {LATENCIES}")
        if len(init) > depth:
            raise ValueError(f"BankedMemory: init has {len(init)} words, more than depth={depth}")

    def __init__(self, depth: int, n_read: int = 1, init=(), *, lanes: int,
                 latency: int = spec.SPAD_READ_LATENCY):
        init = list(init)
        self.depth = depth
        self.lanes = lanes
        self.n_read = n_read
        self.latency = latency
        self.abits = addr_bits(depth)
        members = {f"rd{k}": In(ReadPort(self.abits, lanes)) for k in range(n_read)}
        members["wr"] = In(WritePort(self.abits, lanes))
        super().__init__(members)
        rows = depth // lanes
        self.banks = [
            memory.Memory(shape=32, depth=rows, init=[w & 0xFFFFFFFF for w in init[b::lanes]],
                          attrs=NO_RW_CHECK)
            for b in range(lanes)
        ]

    @property
    def rd(self) -> list:
        return [getattr(self, f"rd{k}") for k in range(self.n_read)]

    def location(self, word: int) -> tuple[int, int]:
        """(bank, row) of a word address: for test benches that load or read memory directly."""
        word %= self.depth
        return word % self.lanes, word // self.lanes

    def elaborate(self, platform):
        m = Module()
        lanes = self.lanes
        lane_bits = (lanes - 1).bit_length()
        for b, bank in enumerate(self.banks):
            m.submodules[f"bank{b}"] = bank

        # Requests, registered when latency is 3 (the write enable and the read enables reset).
        def request(value, name: str, *, reset: bool = False):
            if self.latency < 3:
                return value
            reg = Signal.like(value, name=f"{name}_q", reset_less=not reset)
            m.d.sync += reg.eq(value)
            return reg

        # Write: bank b takes the lane i with (addr + i) % lanes == b, at row (addr + i) // lanes.
        wr_en = request(self.wr.en, "wr_en", reset=True)
        wr_addr = request(self.wr.addr, "wr_addr")
        wr_mask = request(self.wr.mask, "wr_mask")
        wr_data = request(self.wr.data, "wr_data")
        wr_phase = wr_addr[:lane_bits]
        wr_row = wr_addr[lane_bits:]
        for b, bank in enumerate(self.banks):
            port = bank.write_port()
            lane = Signal(lane_bits, name=f"wr_lane{b}")
            m.d.comb += [
                lane.eq(b - wr_phase),  # (b - addr) mod lanes
                port.addr.eq(wr_row + (b < wr_phase)),
                port.data.eq(wr_data[lane]),
                port.en.eq(wr_en & wr_mask.bit_select(lane, 1)),
            ]

        # Reads: the same bank selection for the address; the rotation back to lanes after the
        # read (and the output registers, if any), with the phase delayed to match.
        for k, rd in enumerate(self.rd):
            rd_en = request(rd.en, f"rd{k}_en", reset=True)
            rd_addr = request(rd.addr, f"rd{k}_addr")
            phase = rd_addr[:lane_bits]
            for stage in range(min(self.latency, 2)):
                phase_q = Signal(lane_bits, name=f"rd{k}_phase_{stage}")
                m.d.sync += phase_q.eq(phase)
                phase = phase_q
            # Amaranth 0.5 exports a read port's register without an initial value (X in Icarus
            # until the first read): the output register loads only in the cycle after a read
            # (when the port's data is new), so it holds the same data as a plain register but
            # 0 until the first read; reset clears it too (Icarus does not evaluate Yosys's
            # `always @*` blocks at time 0, so an enable alone leaves X until an input changes).
            fresh = Signal(name=f"rd{k}_fresh")
            if self.latency >= 2:
                m.d.sync += fresh.eq(rd_en)
            outs = []
            for b, bank in enumerate(self.banks):
                port = bank.read_port(domain="sync")
                m.d.comb += [
                    port.addr.eq(rd_addr[lane_bits:] + (b < rd_addr[:lane_bits])),
                    port.en.eq(rd_en),
                ]
                out = port.data
                if self.latency >= 2:
                    # a clock enable and a reset, and nothing but wire between the RAM and this register
                    out = Signal(32, name=f"rd{k}_bank{b}_q")
                    with m.If(fresh):
                        m.d.sync += out.eq(port.data)
                outs.append(out)
            for i in range(lanes):
                with m.Switch((phase + i)[:lane_bits]):
                    for b in range(lanes):
                        with m.Case(b):
                            m.d.comb += rd.data[i].eq(outs[b])
        return m


def attach_bus(m: Module, bus, memory: BankedMemory, *, rd_en: Value | None = None,
               rd_addr: Value | None = None) -> None:
    """Put the core's external bus (an ``hw.ports.ExtPort``, as the DMA drives it) on a memory
    with one read port: reads on ``rd0`` (data back ``memory.latency`` cycles later), writes on
    ``wr``, one address for both. ``rd_en`` and ``rd_addr`` replace the bus's read request (a
    top that borrows the read port, as the board's output check does)."""
    m.d.comb += [
        memory.rd0.en.eq(bus.rd_en if rd_en is None else rd_en),
        memory.rd0.addr.eq(bus.addr if rd_addr is None else rd_addr),
        bus.rd_data.eq(memory.rd0.data),
        memory.wr.en.eq(bus.wr_en),
        memory.wr.addr.eq(bus.addr),
        memory.wr.mask.eq(bus.wr_mask),
        memory.wr.data.eq(bus.wr_data),
    ]
