"""The T x T output-stationary array of the matrix unit (hw/mxu.py feeds it).

Processing element (i, j) holds the accumulator of output (i, j) and adds one product
A[i][t] * B[t][j] per step t. The steps enter at row 0 and move down one row per cycle, so that
row i performs step t one cycle after row i - 1: a row of B (and the step's control bits)
travels down the rows through registers, and row i takes its A operand from its own chunk
register, which holds LANES consecutive elements A[i][t..t+LANES-1] and shifts one element
on at every step of that row.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from .component import Checked

OPERAND_BITS = 8
"""int8 operands (the low byte of a scratchpad word, read as signed)."""
PRODUCT_NAME = "mul"
"""The multiplier output of PE (i, j) is the signal ``mul{i}_{j}`` of the array."""


def accumulator_bits(k_max: int) -> int:
    """Signed width that holds any sum of k_max products of two int8 (-128..127) values.

    The largest magnitude is k_max * 128 * 128 (every operand -128); for K_MAX = 64 that is
    2**20, so 22 bits.
    """
    return (k_max * (1 << 2 * (OPERAND_BITS - 1))).bit_length() + 1


class SystolicArray(Checked):
    """T x T int8 multiply-accumulate array, output-stationary, skewed by row.

    Parameters:
        t: rows and columns (T).
        k_max: longest sum (K_MAX); sets the accumulator width.
        lanes: elements per A chunk (LANES, one scratchpad read).

    Members:
        a_load In(t): bit i loads row i's chunk register from ``a_chunk`` at the end of the cycle
            (a load wins over that row's shift).
        a_chunk In(ArrayLayout(signed(8), lanes)): A[i][t0 .. t0+lanes-1], element 0 first.
        b In(ArrayLayout(signed(8), t)): B[t][0 .. T-1], the row of B for the step entering.
        step In(1): a step enters row 0 (with ``b``) this cycle.
        first In(1): it is step 0 (the accumulators restart from its product).
        last In(1): it is step K - 1.
        rows In(range(t + 1)): the rows in use (M); the step travels down with it, so that only rows
            i < rows signal ``row_done``, even after the next instruction's step has entered.
        acc Out(ArrayLayout(ArrayLayout(signed(acc_bits), t), t)): acc[i][j], the accumulators
            (registers), acc_bits = accumulator_bits(k_max).
        row_done Out(t): bit i is high in the one cycle in which row i's accumulators first hold
            the finished sums (they hold them until the next instruction's first step reaches
            that row).

    Timing: a step entering in cycle x is multiplied in row i in cycle x + 1 + i (the B row
    and row i's A operand are registers, the multiplier inputs), the product is registered,
    and added in cycle x + 2 + i. Row i's chunk register must hold the step's element at its
    head in cycle x + 1 + i. If the last step enters in cycle x, ``row_done[i]`` is high in
    cycle x + 3 + i: LATENCY = 3 cycles for row 0.

    Resources: t * t multipliers of 8 x 8 bits (one DSP block each on the ECP5).

    Raises:
        ValueError: t, k_max or lanes is not a positive int.
    """

    LATENCY = 3
    """Cycles from the last step entering to row 0's sums being final."""

    @classmethod
    def check(cls, t: int, k_max: int, lanes: int) -> None:
        """ValueError for t, k_max or lanes that is not a positive int."""
        for name, value in (("t", t), ("k_max", k_max), ("lanes", lanes)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"SystolicArray: {name}={value!r} must be a positive int")

    def __init__(self, t: int, k_max: int, lanes: int):
        self.t = t
        self.k_max = k_max
        self.lanes = lanes
        self.acc_bits = accumulator_bits(k_max)
        operand = signed(OPERAND_BITS)
        super().__init__({
            "a_load": In(t),
            "a_chunk": In(data.ArrayLayout(operand, lanes)),
            "b": In(data.ArrayLayout(operand, t)),
            "step": In(1),
            "first": In(1),
            "last": In(1),
            "rows": In(range(t + 1)),
            "acc": Out(data.ArrayLayout(data.ArrayLayout(signed(self.acc_bits), t), t)),
            "row_done": Out(t),
        })

    def elaborate(self, platform):
        m = Module()
        t = self.t
        operand = signed(OPERAND_BITS)
        product = signed(2 * OPERAND_BITS)

        b_in, step_in, first_in, last_in, rows_in = self.b, self.step, self.first, self.last, self.rows
        for i in range(t):
            # The step as row i sees it: the B row and the control bits, one register per row.
            b_row = Signal(data.ArrayLayout(operand, t), name=f"b_row{i}")
            step, first, last = Signal(name=f"step{i}"), Signal(name=f"first{i}"), Signal(name=f"last{i}")
            rows = Signal(range(t + 1), name=f"rows{i}")
            m.d.sync += [b_row.eq(b_in), step.eq(step_in), first.eq(first_in), last.eq(last_in),
                         rows.eq(rows_in)]
            b_in, step_in, first_in, last_in, rows_in = b_row, step, first, last, rows

            # Row i's A chunk: element 0 is this step's operand.
            chunk = Signal(data.ArrayLayout(operand, self.lanes), name=f"a_chunk{i}")
            with m.If(self.a_load[i]):
                m.d.sync += chunk.eq(self.a_chunk)
            with m.Elif(step):
                m.d.sync += chunk.eq(chunk.as_value() >> OPERAND_BITS)

            # Multiply (registered), then accumulate.
            p_step, p_first, p_last = (Signal(name=f"p_{n}{i}") for n in ("step", "first", "last"))
            m.d.sync += [p_step.eq(step), p_first.eq(first), p_last.eq(step & last & (rows > i))]
            for j in range(t):
                # the multiplier's output has a name of its own (flows/synth finds the products
                # of a row by it, to build them in LUTs when the FPGA has too few DSP blocks)
                mul = Signal(product, name=f"{PRODUCT_NAME}{i}_{j}")
                prod = Signal(product, name=f"prod{i}_{j}")
                m.d.comb += mul.eq(chunk[0] * b_row[j])
                m.d.sync += prod.eq(mul)
                acc = self.acc[i][j]
                with m.If(p_step):
                    m.d.sync += acc.eq(Mux(p_first, prod, acc + prod))
            done = Signal(name=f"row_done{i}")
            m.d.sync += done.eq(p_step & p_last)
            m.d.comb += self.row_done[i].eq(done)
        return m
