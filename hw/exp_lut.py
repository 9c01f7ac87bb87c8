"""The softmax unit's exponential table, generated from :data:`sim.arith.EXP_LUT` at elaboration.

GA2.md section 4: ``LUT[d] = floor(65536 * exp(-d/16) + 1/2)`` for d = 0..255, the exp of a
Q4.4 difference in Q16. The values are never retyped here: the table is whatever
``sim.arith`` computes, so the hardware and the reference machine cannot drift apart.
"""

from __future__ import annotations

from amaranth.hdl import Const, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from sim import arith

INDEX_BITS = (arith.EXP_LUT_SIZE - 1).bit_length()
"""Width of a difference mx - x of two int8 values (0..255): 8 bits."""
VALUE_BITS = max(arith.EXP_LUT).bit_length()
"""Width of a table entry (the largest is LUT[0] = 65536): 17 bits."""


class ExpLUT(wiring.Component):
    """exp(-d/16) in Q16: a combinational read-only table of :data:`sim.arith.EXP_LUT`.

    Parameters: none; the contents come from ``sim.arith``.

    Members:
        index In(INDEX_BITS = 8), unsigned: the difference d = mx - x, 0..255.
        value Out(VALUE_BITS = 17), unsigned: ``sim.arith.EXP_LUT[index]``.

    Latency: 0 cycles (logic, no register). The synthesiser builds it from LUTs; the
    softmax unit registers the value right after it.
    """

    def __init__(self):
        super().__init__({"index": In(INDEX_BITS), "value": Out(VALUE_BITS)})
        self.table = tuple(arith.EXP_LUT)

    def elaborate(self, platform):
        m = Module()
        # Each output bit selects from a 256-bit constant (bit d = that bit of LUT[d]) with a
        # shift, not a case statement: the synthesiser would turn a case statement into a
        # block-RAM ROM, whose slow output cannot feed logic in the same cycle. This way the
        # table stays LUT logic, an 8-input function per output bit.
        for b in range(VALUE_BITS):
            column = sum(((v >> b) & 1) << d for d, v in enumerate(self.table))
            m.d.comb += self.value[b].eq(Const(column, len(self.table)).bit_select(self.index, 1))
        return m
