"""The matrix unit: MM on the T x T output-stationary array (hw/systolic.py).

``S[dst + i*ldc + j] = sum_t s8(S[A + i*lda + t]) * s8(Bv(t, j))`` for i < M, j < N, t < K, with
Bv(t, j) = S[B + t*ldb + j] (tb = 0) or S[B + j*ldb + t] (tb = 1); rows written in increasing i.

Schedule, in cycles after the dispatch cycle d (tau = 0 is d itself; every first address comes
straight from ``fields`` in the dispatch cycle), with D = tb * (N - 1) and R = SPAD_READ_LATENCY
(the cycles from a read to its data):

* A, on ``rd0``: the K steps are cut in chunks of LANES words. Chunk c of row i (words
  A + i*lda + LANES*c ..) is read at tau = D + LANES*c + i, so each row gets its next chunk
  exactly as it shifts out the last element of the previous one (M <= T <= LANES reads per
  LANES steps: why Params asks T <= LANES); the chunk register loads the data as it returns,
  R cycles after the read.
* B, on ``rd1``: with tb = 0, row t of B (N words at B + t*ldb) is read at tau = t and enters
  the array as it returns. With tb = 1, chunk c of row j of B^T (words B + j*ldb + LANES*c ..)
  is read at tau = LANES*c + j into a double-buffered chunk register per column; step
  t = LANES*c + k enters the
  array at tau = D + R + t, built from the N columns' chunk registers (column N - 1's chunk c is
  taken straight from the read data in the cycle it returns). Chunk c + 1 arrives while chunk
  c is still being used, hence two buffers.
* Step t enters row 0 at tau = D + R + t and row i one cycle later per row; row i's sums are
  final at tau = D + K + R + 2 + i (SystolicArray.LATENCY = 3 after its last step), and are
  written then: row i, N lanes, at dst + i*ldc. The rows finish one per cycle, so the writes
  drain as fast as the write port takes them.

Latency: the last write, row M - 1, is at tau = D + K + M + R + 1, so
L = K + M + tb*(N - 1) + MM_OVERHEAD, MM_OVERHEAD = R + 2 (the read latency, the multiplier
input registers, the product register; the accumulate lands in the cycle of the write).

Timing: every read enable and address leaves a register (the decisions for cycle tau are made in
cycle tau - 1 by comparing a cycle counter with per-instruction bounds), except in the dispatch
cycle, where the first addresses come from ``fields`` through one multiplexer. Read data passes
one multiplexer (or none, for A) before a register; the multipliers sit between registers.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux, Signal, Value
from amaranth.lib import data

from sim import spec
from sim.spec import Params

from .component import Checked
from .isa import fields_layout, fields_view, opcode
from .lanes import delay
from .ports import addr_bits, unit_members
from .requant import M_BITS, S_BITS, Requantizer
from .systolic import OPERAND_BITS, SystolicArray


class MatrixUnit(Checked):
    """The MM unit: one T x T tile of int8 x int8 -> int32 products per instruction.

    Parameters:
        params: the machine's :class:`sim.spec.Params` (T, LANES >= T, K_MAX, SPAD_WORDS).

    Members (``hw.ports.unit_members(params, n_read=2, write=True)``):
        start In(1), opcode In(4), fields In(124), done Out(1): the execute-stage contract.
        rd0 Out(ReadPort): A, one row chunk (LANES words) per cycle.
        rd1 Out(ReadPort): B, one row per cycle (tb = 0) or one B^T row chunk per cycle (tb = 1).
        wr Out(WritePort): the results, one output row per cycle, lanes j < N, int32 (the
            accumulator, accumulator_bits(K_MAX) wide, sign-extended).
        An idle unit (from the cycle after ``done`` to the next ``start``) drives every output
        to 0; while it executes, an address whose enable is low is don't-care.

    Latency: K + M + tb*(N - 1) + MM_OVERHEAD cycles, MM_OVERHEAD = SPAD_READ_LATENCY + 2 (see
    the module docstring for the schedule). Resources: T*T 8 x 8 multipliers (16 DSP blocks for T = 4).

    Errors: none; the execute stage dispatches only checked instructions (M, N in 1..T, K in
    1..K_MAX, every region inside the scratchpad, dst disjoint from A and B).

    Raises:
        TypeError: params is not a :class:`sim.spec.Params` (a Params with T > LANES does not
            exist: its constructor refuses it, since a row of B or of the output would need
            more than one access and M reads per chunk more than LANES cycles).
    """

    OPCODES = ("MM", "MMRQ")
    """The instructions this unit executes (MMRQ on a machine that has it: OVERLAP = 2)."""
    OVERHEAD = spec.SPAD_READ_LATENCY + 2
    """Cycles of the schedule beyond K + M + tb*(N-1): sim.spec.MM_OVERHEAD must equal it."""

    def __init__(self, params: Params):
        assert spec.MM_OVERHEAD == self.OVERHEAD, "sim.spec.MM_OVERHEAD must be what hw/mxu.py realises"
        assert spec.CHAIN_CYCLES == Requantizer.LATENCY, \
            "sim.spec.CHAIN_CYCLES: the chained requantizer's stages"
        self.params = params
        self.chain = spec.built(spec.BY_NAME["MMRQ"], params)
        super().__init__(unit_members(params, n_read=2, write=True))

    def elaborate(self, platform):
        m = Module()
        p = self.params
        # MMRQ (OVERLAP = 2): the unit's own logic ends with the array's last row (``finish``);
        # the unit's done comes CHAIN_CYCLES later, with the last requantized row
        self._finish = Signal(name="mm_finish") if self.chain else self.done
        f = self._mm_fields(m) if self.chain else fields_view("MM", self.fields)
        m.submodules.array = array = SystolicArray(p.T, p.K_MAX, p.LANES)
        # the named steps, in the order their logic is built
        cycle, active, now = self._timeline(m, f)
        self._read_a(m, f, array, now)
        b_reads = self._read_b(m, f, cycle, active, now)
        self._feed_array(m, f, array, now, *b_reads[:5])
        self._write_results(m, f, array, now)
        reading, addr = self._old_read
        if self.chain:
            tab_read, tab = self._chain_read
            m.d.comb += [self.rd1.en.eq(b_reads[-1] | reading | tab_read),
                         self.rd1.addr.eq(Mux(reading, addr, Mux(tab_read, tab, b_reads[-2])))]
        else:
            m.d.comb += [self.rd1.en.eq(b_reads[-1] | reading),
                         self.rd1.addr.eq(Mux(reading, addr, b_reads[-2]))]
        return m

    def _mm_fields(self, m: Module) -> data.View:
        """OVERLAP = 2: MM's fields, or MMRQ's where the instruction is an MMRQ (its M, N and
        strides are narrower and sit elsewhere: sim.spec.CHAIN_DIM_BITS, CHAIN_STRIDE_BITS), as
        one view of MM's layout, so that the MM schedule reads either by name."""
        chained = self.opcode == opcode("MMRQ")
        mm, mmrq = fields_view("MM", self.fields), fields_view("MMRQ", self.fields)
        f = Signal(fields_layout("MM"), name="mm_fields")
        for field in spec.BY_NAME["MM"].fields:
            name = field.name
            m.d.comb += getattr(f, name).eq(Mux(chained, getattr(mmrq, name), getattr(mm, name)))
        return f

    def _sizes(self) -> tuple[int, int, int]:
        p = self.params
        return p.T, p.LANES, (p.LANES - 1).bit_length()

    def _timeline(self, m: Module, f) -> tuple[Signal, Signal, dict[str, Signal]]:
        """The cycle counter and the per-cycle decisions. tau counts cycles from the dispatch
        (tau = 0 in the dispatch cycle itself). Every decision of cycle tau is computed in cycle
        tau - 1 and registered, so that the memory requests leave registers (or, in the dispatch
        cycle, come straight from ``fields``). Returns the cycle counter, active (the dispatch
        cycle or busy) and the decisions of the current cycle (``now``)."""
        p = self.params
        t_size, lanes, lane_bits = self._sizes()
        busy = Signal()
        cycle = Signal(range(p.K_MAX + 3 * t_size + 8))
        active = Signal()
        m.d.comb += active.eq(self.start | busy)
        with m.If(self.start):
            m.d.sync += [busy.eq(1), cycle.eq(1)]
        with m.Elif(self._finish):
            m.d.sync += [busy.eq(0), cycle.eq(0)]
        with m.Elif(busy):
            m.d.sync += cycle.eq(cycle + 1)

        # Per-instruction bounds, from the fields in the dispatch cycle, so that the decisions
        # below compare the cycle counter with registers (one carry chain each), never with sums.
        skew = Signal(range(t_size))                  # D = tb * (N - 1)
        m.d.comb += skew.eq(Mux(f.tb, f.N - 1, 0))
        width = len(cycle) + 1

        def bounds_of(v, suffix: str, d: Signal | None = None) -> dict[str, Value]:
            """The bounds of the instruction whose fields are ``v`` (a view of MM's or MMRQ's
            layout); ``d``: its skew D when already formed."""
            if d is None:
                d = Signal(range(t_size), name=f"skew{suffix}")
                m.d.comb += d.eq(Mux(v.tb, v.N - 1, 0))
            chunks = Signal(range(p.K_MAX // lanes + 2), name=f"chunks{suffix}")   # ceil(K / LANES)
            m.d.comb += chunks.eq((v.K + lanes - 1) >> lane_bits)
            return {
                "skew": d,                                        # step t decided for tau = D + 1 + t
                "a_begin": Mux(d == 0, 0, d - 1),                 # A reads from tau = D ...
                "a_end": chunks * lanes + d - 1,                  # ... to tau < D + LANES * chunks
                "b_end": Mux(v.tb, chunks * lanes - 1, v.K - 1),  # B reads to tau < LANES*chunks or K
                "s_end": d + v.K,
                "s_last": d + v.K - 1,
            }

        if self.chain:
            # OVERLAP = 2: each layout's bounds from its own fields, and the opcode picks one
            # after the sums (not the fields before them: that was the longest path at 125 MHz)
            chained = self.opcode == opcode("MMRQ")
            mm = bounds_of(fields_view("MM", self.fields), "_mm")
            mmrq = bounds_of(fields_view("MMRQ", self.fields), "_mmrq")
            bounds = {name: Mux(chained, mmrq[name], mm[name]) for name in mm}
        else:
            bounds = bounds_of(f, "", skew)
        bound = {}
        for name, value in bounds.items():
            bound[name] = Signal(width, name=f"{name}_q")
            with m.If(self.start):
                m.d.sync += bound[name].eq(value)

        def decisions_next(c):
            """What the unit does in cycle tau + 1, from the counter c = tau >= 1 and the bounds."""
            a_row = (c + 1 - bound["skew"])[:lane_bits]
            s_tau = (c - bound["skew"])[:lane_bits + 1]
            return {
                "a_on": c >= bound["a_begin"],
                "a_row": a_row,
                "a_go": (c >= bound["a_begin"]) & (a_row < f.M) & (c < bound["a_end"]),
                "b_go": (c < bound["b_end"]) & (~f.tb | ((c + 1)[:lane_bits] < f.N)),
                "step": (c >= bound["skew"]) & (c < bound["s_end"]),
                "first": c == bound["skew"],
                "last": c == bound["s_last"],
                "s_k": s_tau[:lane_bits],
                "s_slot": s_tau[lane_bits],
            }

        # The same for the dispatch cycle (tau = 0) and the one after it (tau = 1), from the fields.
        first_step_at_1 = skew == 0
        at_0 = {"a_on": skew == 0, "a_row": 0, "a_go": skew == 0, "b_go": 1,
                "step": 0, "first": 0, "last": 0, "s_k": 0, "s_slot": 0}
        a_row_1 = (1 - skew)[:lane_bits]
        at_1 = {"a_on": skew <= 1, "a_row": a_row_1, "a_go": (skew <= 1) & (a_row_1 < f.M),
                "b_go": Mux(f.tb, f.N > 1, f.K > 1), "step": first_step_at_1, "first": first_step_at_1,
                "last": first_step_at_1 & (f.K == 1), "s_k": 0, "s_slot": 0}
        now = {}
        for name, value in decisions_next(cycle).items():
            reg = Signal(Value.cast(value).shape(), name=f"{name}_q")
            with m.If(self.start):
                m.d.sync += reg.eq(at_1[name])
            with m.Elif(busy & ~self._finish):
                m.d.sync += reg.eq(value)
            with m.Else():
                m.d.sync += reg.eq(0)
            now[name] = Signal(reg.shape(), name=name)
            m.d.comb += now[name].eq(Mux(self.start, at_0[name], reg))
        return cycle, active, now

    def _read_a(self, m: Module, f, array: SystolicArray, now: dict[str, Signal]) -> None:
        """A on ``rd0``: the read pointer walks the rows of a chunk by lda and jumps to the next
        chunk's row 0 (base + LANES) after LANES phases; the chunk registers load as the data returns."""
        t_size, lanes, _lane_bits = self._sizes()
        a_addr = self._walker(m, "a", f.A, f.lda, advance=now["a_on"], wrap=now["a_row"] == lanes - 1,
                              chunked=1)
        m.d.comb += [self.rd0.en.eq(now["a_go"]), self.rd0.addr.eq(a_addr)]

        # the read returns SPAD_READ_LATENCY cycles later
        a_back = delay(m, now["a_go"], spec.SPAD_READ_LATENCY, "a_back")
        a_back_row = delay(m, now["a_row"], spec.SPAD_READ_LATENCY, "a_back_row")
        m.d.comb += [
            array.a_load.eq(Cat(a_back & (a_back_row == i) for i in range(t_size))),
            array.a_chunk.eq(Cat(self.rd0.data[k][:OPERAND_BITS] for k in range(lanes))),
        ]

    def _read_b(self, m: Module, f, cycle: Signal, active: Signal, now: dict[str, Signal]):
        """B on ``rd1``: tb = 0, row t at tau = t; tb = 1, column j of chunk c at tau = LANES*c + j,
        into double-buffered chunk registers. Returns what the array's feed needs: the returning
        read's flag, column and slot, the read data and the chunk registers."""
        t_size, lanes, lane_bits = self._sizes()
        tau = Mux(self.start, 0, cycle)
        b_col = tau[:lane_bits]
        b_addr = self._walker(m, "b", f.B, f.ldb, advance=active, wrap=b_col == lanes - 1, chunked=f.tb)

        b_back = delay(m, now["b_go"] & f.tb, spec.SPAD_READ_LATENCY, "b_back")
        b_back_col = delay(m, b_col, spec.SPAD_READ_LATENCY, "b_back_col")
        b_back_slot = delay(m, tau[lane_bits], spec.SPAD_READ_LATENCY, "b_back_slot")
        b_data = [self.rd1.data[k][:OPERAND_BITS] for k in range(lanes)]
        operand_chunk = data.ArrayLayout(OPERAND_BITS, lanes)
        b_chunks = [[Signal(operand_chunk, name=f"bt_chunk{j}_{slot}") for slot in range(2)]
                    for j in range(t_size)]
        for j in range(t_size):
            for slot in range(2):
                with m.If(b_back & (b_back_col == j) & (b_back_slot == slot)):
                    m.d.sync += b_chunks[j][slot].eq(Cat(b_data))
        return b_back, b_back_col, b_back_slot, b_data, b_chunks, b_addr, now["b_go"]

    def _feed_array(self, m: Module, f, array: SystolicArray, now: dict[str, Signal], b_back, b_back_col,
                    b_back_slot, b_data, b_chunks) -> None:
        """Steps into the array: step t = LANES*c + k enters at tau = D + SPAD_READ_LATENCY + t."""
        t_size, _lanes, _lane_bits = self._sizes()
        # the decisions place step t at D + 1 + t; registers hold them back by the rest of the
        # read latency
        late = {name: delay(m, now[name], spec.SPAD_READ_LATENCY - 1, f"{name}_late")
                for name in ("step", "first", "last", "s_k", "s_slot")}
        s_k, s_slot = late["s_k"], late["s_slot"]
        m.d.comb += [
            array.step.eq(late["step"]),
            array.first.eq(late["first"]),
            array.last.eq(late["last"]),
            array.rows.eq(f.M),
        ]
        # The read data (late: block RAM and rotation) passes one multiplexer before the array's
        # input register: lane j (tb = 0), lane 0 (tb = 1, a chunk used as it arrives, which happens
        # only for its element 0), or a value selected from registers only.
        for j in range(t_size):
            arriving = b_back & (b_back_col == j) & (b_back_slot == s_slot)
            buffered = Mux(s_slot, b_chunks[j][1].as_value(), b_chunks[j][0].as_value())
            from_buffer = buffered.word_select(s_k, OPERAND_BITS)
            with m.If(~f.tb):
                m.d.comb += array.b[j].eq(b_data[j])
            with m.Elif(arriving):
                m.d.comb += array.b[j].eq(b_data[0])
            with m.Else():
                m.d.comb += array.b[j].eq(from_buffer)

    def _write_results(self, m: Module, f, array: SystolicArray, now: dict[str, Signal]) -> None:
        """Results on ``wr``: row i is written in the cycle its sums become final; rows finish
        one per cycle. The fields they need are registered at the dispatch (the execute stage's
        registers are across the chip): which row is the last (one-hot), the columns, the row
        stride. With acc = 1 (:meth:`_read_old_rows`) the row and its old value are registered
        side by side and their sum is written one cycle later (MM_ACC_CYCLES)."""
        t_size, lanes, _lane_bits = self._sizes()
        abits = addr_bits(self.params.SPAD_WORDS)
        rows = [array.row_done[i] for i in range(t_size)]   # only rows i < M signal
        last_of = Signal(t_size)
        columns = Signal(lanes)
        ldc = Signal.like(f.ldc)
        acc = Signal()
        with m.If(self.start):
            m.d.sync += [last_of.eq(Cat(i + 1 == f.M for i in range(t_size))),
                         columns.eq(Cat(j < f.N for j in range(lanes))), ldc.eq(f.ldc), acc.eq(f.acc)]
        old = self._read_old_rows(m, f, now, ldc)
        row_done = Signal()
        row_last = Signal()
        m.d.comb += [row_done.eq(Cat(rows).any()), row_last.eq((Cat(rows) & last_of).any())]
        summed = Signal()          # acc = 1: the row and its old value sit in registers
        summed_last = Signal()
        m.d.sync += [summed.eq(row_done & acc), summed_last.eq(row_last & acc)]
        write = Signal()
        m.d.comb += [write.eq(Mux(acc, summed, row_done)), self._finish.eq(Mux(acc, summed_last, row_last))]
        dst = Signal(abits)
        with m.If(self.start):
            m.d.sync += dst.eq(f.dst)
        with m.Elif(write):
            m.d.sync += dst.eq(dst + ldc)
        results = []
        for j in range(t_size):
            word = 0
            for i in range(t_size):
                word = word | Mux(rows[i], array.acc[i][j], 0)
            row_q = Signal(spec.WORD_BITS, name=f"acc_row{j}")
            with m.If(row_done & acc):
                m.d.sync += row_q.eq(word)
            results.append(Mux(summed, (row_q + old[j])[:spec.WORD_BITS], word))
        if self.chain:
            self._chained_writes(m, f, now, write, dst, ldc, columns, results)
            return
        m.d.comb += [
            self.wr.en.eq(write),
            self.wr.addr.eq(Mux(write, dst, 0)),
            self.wr.mask.eq(Mux(write, columns, 0)),
        ]
        for j in range(t_size):
            m.d.comb += self.wr.data[j].eq(results[j])

    def _chained_writes(self, m: Module, f, now: dict[str, Signal], write: Value, dst: Signal, ldc: Signal,
                        columns: Signal, results: list[Value]) -> None:
        """OVERLAP = 2: the writes of MM, or MMRQ's through the chained requantizer. MMRQ reads
        its entries on ``rd1`` at tau = D + K + 1 (the B stream is over, acc's old rows start a
        cycle later): N words at tab (pc = 1) or one (pc = 0, every column takes lane 0's),
        registered as they return at D + K + 4, a cycle before row 0's sums are final. Each row
        enters the requantizer (T lanes, hw/requant.Requantizer) in the cycle MM would write it,
        and its int8 results, sign-extended, are written CHAIN_CYCLES later at the row's address
        (a pointer of their own, dst + i*ldc); ``done`` comes with the last of them."""
        t_size = self.params.T
        abits = addr_bits(self.params.SPAD_WORDS)
        mmrq = fields_view("MMRQ", self.fields)
        chained, pc, relu = Signal(name="chained"), Signal(name="chain_pc"), Signal(name="chain_relu")
        tab = Signal(abits, name="chain_tab")
        with m.If(self.start):
            m.d.sync += [chained.eq(self.opcode == opcode("MMRQ")), pc.eq(mmrq.pc), relu.eq(mmrq.relu),
                         tab.eq(mmrq.tab)]
        tab_read = Signal(name="chain_tab_read")            # tau = D + K + 1
        m.d.comb += tab_read.eq(chained & delay(m, now["last"], 1, "chain_first"))
        self._chain_read = (tab_read, tab)
        back = delay(m, tab_read, spec.SPAD_READ_LATENCY, "chain_tab_back")
        entries = [Signal(spec.WORD_BITS, name=f"chain_entry{j}") for j in range(t_size)]
        with m.If(back):
            m.d.sync += [entries[j].eq(Mux(pc, self.rd1.data[j], self.rd1.data[0])) for j in range(t_size)]
        m.submodules.chain_rq = rq = Requantizer(t_size)
        m.d.comb += rq.relu.eq(relu)
        for j in range(t_size):
            m.d.comb += [rq.a[j].eq(results[j]), rq.m[j].eq(entries[j][:M_BITS]),
                         rq.s[j].eq(entries[j][spec.RQ_ENTRY_S_LSB:spec.RQ_ENTRY_S_LSB + S_BITS])]
        late = delay(m, write & chained, spec.CHAIN_CYCLES, "chain_write")
        late_last = delay(m, self._finish & chained, spec.CHAIN_CYCLES, "chain_last")
        late_dst = Signal(abits, name="chain_dst")
        with m.If(self.start):
            m.d.sync += late_dst.eq(f.dst)
        with m.Elif(late):
            m.d.sync += late_dst.eq(late_dst + ldc)
        direct = write & ~chained
        m.d.comb += [
            self.done.eq(Mux(chained, late_last, self._finish)),
            self.wr.en.eq(direct | late),
            self.wr.addr.eq(Mux(direct, dst, 0) | Mux(late, late_dst, 0)),
            self.wr.mask.eq(Mux(direct | late, columns, 0)),
        ]
        for j in range(t_size):
            y = rq.y[j]
            m.d.comb += self.wr.data[j].eq(Mux(late, Cat(y, y[-1].replicate(spec.WORD_BITS - 8)),
                                               Mux(chained, 0, results[j])))

    def _read_old_rows(self, m: Module, f, now: dict[str, Signal], ldc: Signal) -> list[Signal]:
        """acc = 1: row i's old words, read on ``rd1`` at tau = D + K + 2 + i (the B stream ended
        at tau < D + K; the row's sums are final SPAD_READ_LATENCY cycles later), registered as
        they return. The decision for the first read is the last step's (tau = D + K) delayed by
        one; address and enable leave registers. Returns the registered old words, one per lane."""
        t_size, _lanes, _lane_bits = self._sizes()
        abits = addr_bits(self.params.SPAD_WORDS)
        first = delay(m, now["last"], 1, "old_first")      # tau = D + K + 1
        reading = Signal(name="old_reading")
        left = Signal(range(t_size), name="old_left")
        addr = Signal(abits, name="old_addr")
        with m.If(first & f.acc):
            m.d.sync += [reading.eq(1), left.eq(f.M - 1), addr.eq(f.dst)]
        with m.Elif(reading):
            with m.If(left == 0):
                m.d.sync += [reading.eq(0), addr.eq(0)]
            with m.Else():
                m.d.sync += [left.eq(left - 1), addr.eq(addr + ldc)]
        self._old_read = (reading, addr)
        back = delay(m, reading, spec.SPAD_READ_LATENCY, "old_back")
        old = [Signal(spec.WORD_BITS, name=f"acc_old{j}") for j in range(t_size)]
        with m.If(back):
            m.d.sync += [old[j].eq(self.rd1.data[j]) for j in range(t_size)]
        return old

    def _walker(self, m: Module, name: str, start_addr, stride, *, advance, wrap, chunked):
        """The address of a strided walk: start_addr, + stride each cycle; when ``chunked``, it
        walks the rows of a chunk and at ``wrap`` goes to the next chunk's first row (+ LANES).

        The first address comes straight from ``fields`` in the dispatch cycle; then a register
        holds the address of the current cycle. It takes the next one whenever ``advance`` is
        high and holds otherwise, and it returns to 0 with ``done`` (an idle unit drives 0).
        """
        abits = addr_bits(self.params.SPAD_WORDS)
        ptr_q = Signal(abits, name=f"{name}_ptr")
        base_q = Signal(abits, name=f"{name}_base")
        ptr = Signal(abits, name=f"{name}_addr")
        base = Signal(abits, name=f"{name}_chunk")
        m.d.comb += [ptr.eq(Mux(self.start, start_addr, ptr_q)), base.eq(Mux(self.start, start_addr, base_q))]
        next_chunk = base + self.params.LANES
        with m.If(self._finish):
            m.d.sync += [ptr_q.eq(0), base_q.eq(0)]
        with m.Elif(advance):
            with m.If(chunked & wrap):
                m.d.sync += [ptr_q.eq(next_chunk), base_q.eq(next_chunk)]
            with m.Else():
                m.d.sync += [ptr_q.eq(ptr + stride), base_q.eq(base)]
        with m.Else():
            m.d.sync += [ptr_q.eq(ptr), base_q.eq(base)]
        return ptr
