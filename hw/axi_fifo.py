"""A small first-in first-out queue of registers that takes up to two entries per cycle.

The AXI write side (hw/axi_write.py) turns one DMA beat into one bus word, and the last beat of
an unaligned ST into two (the word it completes and the rest it carries): the queue between it
and the W channel (and the one of burst addresses before AW) must take two in one cycle.
"""

from __future__ import annotations

from amaranth.hdl import Array, Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from .component import Checked


class PairFifo(Checked):
    """``depth`` entries of ``width`` bits; pushes of 0, 1 or 2 entries and a pop per cycle.

    Parameters:
        width: bits per entry; depth: entries, a power of two (at least 2).

    Members:
        push0 In(1), data0 In(width): an entry in; push1 In(1), data1 In(width): a second one
            after it (only with push0). The caller keeps two entries free for them (``level``).
        valid Out(1), data Out(width): the oldest entry; ready In(1): it leaves (with valid).
        level Out(range(depth + 1)): the entries held; level_next: what it will be next cycle.

    Latency: an entry pushed in cycle c is ``data`` from cycle c + 1.

    Raises:
        ValueError: depth is not a power of two of at least 2, or width is not positive.
    """

    @classmethod
    def check(cls, width: int, depth: int = 4) -> None:
        if depth < 2 or depth & (depth - 1):
            raise ValueError(f"PairFifo: depth={depth} must be a power of two, at least 2")
        if width < 1:
            raise ValueError(f"PairFifo: width={width} must be positive")

    def __init__(self, width: int, depth: int = 4):
        self.width, self.depth = width, depth
        super().__init__({
            "push0": In(1), "data0": In(width), "push1": In(1), "data1": In(width),
            "valid": Out(1), "data": Out(width), "ready": In(1),
            "level": Out(range(depth + 1)), "level_next": Out(range(depth + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        bits = (self.depth - 1).bit_length()
        slots = Array(Signal(self.width, name=f"slot{k}", reset_less=True) for k in range(self.depth))
        head = Signal(bits)
        tail = Signal(bits)
        pop = self.valid & self.ready
        m.d.comb += [
            self.valid.eq(self.level != 0),
            self.data.eq(slots[head]),
            self.level_next.eq(self.level + self.push0 + (self.push0 & self.push1) - pop),
        ]
        with m.If(self.push0):
            m.d.sync += slots[tail].eq(self.data0)
        with m.If(self.push0 & self.push1):
            m.d.sync += slots[(tail + 1)[:bits]].eq(self.data1)
        m.d.sync += [
            tail.eq(tail + Mux(self.push0, Mux(self.push1, 2, 1), 0)),
            head.eq(head + pop),
            self.level.eq(self.level_next),
        ]
        return m
