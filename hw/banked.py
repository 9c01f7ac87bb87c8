"""A word-addressed memory that reads and writes LANES consecutive words per cycle at any alignment.

Used for the scratchpad (two read ports, one write port) and for the external memory of the
simulation and board tops (one of each). GA2.md section 6: banked by word address mod LANES,
with a rotation network, so that any LANES consecutive words move in one cycle.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In

from .ports import ReadPort, WritePort, addr_bits


class BankedMemory(wiring.Component):
    """LANES banks of block RAM with rotation networks on every port.

    Word w lives in bank ``w % lanes`` at row ``w // lanes``. Addresses wrap around at the
    end of the memory (a beat that runs past the end touches the first words; the ISA checks
    keep masked-off lanes from mattering, and enabled lanes always lie inside).

    Parameters:
        depth: words, a power of two and a multiple of lanes.
        n_read: number of read ports.
        lanes: words per access (4).
        init: optional initial contents, a sequence of at most depth 32-bit words.

    Members:
        rd: list of ``n_read`` read ports (``In(ReadPort(...))``): ``en``, ``addr`` in cycle c,
            ``data`` in cycle c + 1, lane i = word addr + i. Non-transparent: a write to the
            same word in cycle c is not seen.
        wr: one write port (``In(WritePort(...))``): lanes with their ``mask`` bit set are
            written at the end of the cycle.

    Latency: reads 1 cycle (spec.SPAD_READ_LATENCY); writes 0.

    Raises:
        ValueError: depth is not a power of two or not a multiple of lanes, or init is too long.
    """

    def __init__(self, depth: int, n_read: int = 1, lanes: int = 4, init=()):
        if depth < lanes or depth & (depth - 1) or depth % lanes:
            raise ValueError(f"BankedMemory: depth={depth} must be a power of two "
                             f"and a multiple of lanes={lanes}")
        if n_read < 1:
            raise ValueError(f"BankedMemory: n_read={n_read} must be at least 1")
        init = list(init)
        if len(init) > depth:
            raise ValueError(f"BankedMemory: init has {len(init)} words, more than depth={depth}")
        self.depth = depth
        self.lanes = lanes
        self.n_read = n_read
        self.abits = addr_bits(depth)
        members = {f"rd{k}": In(ReadPort(self.abits, lanes)) for k in range(n_read)}
        members["wr"] = In(WritePort(self.abits, lanes))
        super().__init__(members)
        rows = depth // lanes
        self.banks = [
            memory.Memory(shape=32, depth=rows, init=[w & 0xFFFFFFFF for w in init[b::lanes]])
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

        # Write: bank b takes the lane i with (addr + i) % lanes == b, at row (addr + i) // lanes.
        wr = self.wr
        wr_phase = wr.addr[:lane_bits]
        wr_row = wr.addr[lane_bits:]
        for b, bank in enumerate(self.banks):
            port = bank.write_port()
            lane = Signal(lane_bits, name=f"wr_lane{b}")
            m.d.comb += [
                lane.eq(b - wr_phase),  # (b - addr) mod lanes
                port.addr.eq(wr_row + (b < wr_phase)),
                port.data.eq(wr.data[lane]),
                port.en.eq(wr.en & wr.mask.bit_select(lane, 1)),
            ]

        # Reads: the same bank selection for the address; the rotation back to lanes after the
        # one-cycle read, with the phase delayed to match.
        for k, rd in enumerate(self.rd):
            phase = rd.addr[:lane_bits]
            phase_q = Signal(lane_bits, name=f"rd{k}_phase_q")
            m.d.sync += phase_q.eq(phase)
            outs = []
            for b, bank in enumerate(self.banks):
                port = bank.read_port(domain="sync")
                m.d.comb += [
                    port.addr.eq(rd.addr[lane_bits:] + (b < phase)),
                    port.en.eq(rd.en),
                ]
                outs.append(port.data)
            for i in range(lanes):
                with m.Switch((phase_q + i)[:lane_bits]):
                    for b in range(lanes):
                        with m.Case(b):
                            m.d.comb += rd.data[i].eq(outs[b])
        return m
