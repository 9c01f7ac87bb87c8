"""Control: instruction memory, front end (fetch, decode, checks), execute stage, counters, host.

Cycle by cycle (hw/README.md, "The front end and the counters"):

* ``start`` (host, while idle) in cycle s resets the counters and the pc, and reads
  instruction 0 from the instruction memory in that same cycle.
* The front end is a pipeline with one global stall: fetch (the instruction memory's read
  register), then the :class:`~hw.checker.Checker`'s CHECK_STAGES stages, then a queue of
  QUEUE_SLOTS checked instructions. It advances while a slot of the queue is free (a
  register's decision), so it fetches one instruction per cycle until the queue is full,
  then holds. There are no branches, so it never guesses.
* The execute stage takes the queue's head in the cycle it becomes free (idle, or the last
  cycle of the running instruction) and issues it: ``issue`` with ``issue_opcode`` and
  ``issue_fields`` in that cycle, d - 1; the dispatch registers at the unit
  (:func:`dispatch_registers`) raise its ``start`` in the next cycle, d.
* It knows the last cycle, d + L - 1, without listening to the unit: the checker computes
  each instruction's latency L from the spec's formula, and a countdown register says one
  cycle ahead that the stage will be free (the unit's ``done``, far away on the chip and at
  the end of its own logic, would otherwise start the longest path of the core). The unit
  raises its ``done`` in that same cycle; :func:`hw.top.timing_check` compares the two in
  hardware (GA2's sticky ``timing_fault``), and the core tests and cosim demand that it stays 0.
  The queue holds the next instruction by then, so it is issued in d + L - 1
  whatever the latency of the running one: fetch, decode and checks are hidden.
* The first dispatch is in cycle s + FRONTEND_CYCLES = s + 1 (fetch) + CHECK_STAGES + 1 (a
  slot of the queue between the checker and the execute stage) + 1 (the dispatch registers).
* An instruction that fails a check, HALT, and the pc reaching ``prog_len`` (NO_HALT) are
  taken like any instruction but dispatch nothing: the machine stops STOP_CYCLES later.
* A unit that finds its data wrong (the DMA: a GATHER's row number out of its table) pulses
  ``unit_fault`` while the instruction runs; the execute stage then takes, in the instruction's
  last cycle, a stop with BAD_INDEX and the instruction's pc instead of the queue's head, as
  if a HALT followed it (``sim.spec.DATA_ERRORS``).
  ``busy`` falls, ``done`` rises (and ``error`` with ``error_code`` and ``error_pc`` for a
  fault), and the counters freeze.
"""

from __future__ import annotations

from types import SimpleNamespace

from amaranth.hdl import Cat, Module, Mux, Signal, Value
from amaranth.lib import data, memory, wiring
from amaranth.lib.wiring import In, Out

from sim import spec
from sim.spec import ErrorCode, Params

from .banked import NO_RW_CHECK
from .checker import CHECK_STAGES, Checker, overlap_info_widths, pc_bits
from .component import Checked
from .isa import FIELD_BITS, is_one_of
from .overlap import OverlapExecute
from .queue import QUEUE_SLOTS, queue_entry
from .station import issue_loads, station_execute

UNIT_COUNTERS = spec.COUNTERS[1:]
"""The per-class counters, after ``cycles``: an instruction's ``InstrSpec.counter`` is one."""



def imem_addr_bits(params: Params) -> int:
    """Width of the host's instruction-memory write address, in 32-bit words."""
    return max(1, (params.IMEM_WORDS * spec.INSTR_WORDS - 1).bit_length())


def host_members(params: Params) -> dict:
    """The host interface, as GA-2's core exposes it (see :class:`Control`)."""
    pcw = pc_bits(params)
    members = {
        "start": In(1),
        "prog_len": In(pcw),
        "busy": Out(1),
        "done": Out(1),
        "error": Out(1),
        "error_code": Out(spec.ERROR_CODE_BITS),
        "error_pc": Out(pcw),
        "imem_we": In(1),
        "imem_waddr": In(imem_addr_bits(params)),
        "imem_wdata": In(spec.WORD_BITS),
    }
    for name in spec.counters(params):
        members[f"count_{name}"] = Out(spec.COUNTER_BITS)
    return members


class Control(Checked):
    """Instruction memory, front end, execute stage, the counters and the host interface.

    Parameters:
        params: the machine's :class:`sim.spec.Params` (IMEM_WORDS; the checks use all).

    Members (host side, :func:`host_members`):
        start In(1): a one-cycle pulse while idle starts the program at pc 0 (ignored while busy).
        prog_len In(pc_bits): the program's length in instructions, sampled with start; the
            pc reaching it is the NO_HALT error. Must not exceed IMEM_WORDS.
        busy Out(1): high from the cycle after start until the machine stops.
        done Out(1): the machine has stopped (HALT or error); held until the next start.
        error Out(1): it stopped on an error; error_code Out(4) is the
            :class:`sim.spec.ErrorCode` (NONE after a HALT) and error_pc Out(pc_bits) the pc
            of the instruction that stopped it (the HALT's pc; prog_len for NO_HALT).
        imem_we In(1), imem_waddr In(imem_addr_bits), imem_wdata In(32): host write of one
            32-bit word of the encoded program (word w is word w % 4 of instruction w // 4).
            Only while idle.
        count_cycles, count_dma, count_mxu, count_vpu, count_sfu Out(32): the counters of
            GA2.md section 5 (``sim.spec.counters``), and at OVERLAP = 1 count_hazard and
            count_port (section 7: cycles the queue's head waits on a hazard, on a port); reset
            by start and frozen when the machine stops.
    Members (execute side):
        issue Out(1): high for one cycle, the cycle before an instruction's dispatch d;
        issue_opcode Out(4), issue_fields Out(FIELD_BITS): that instruction, valid with issue
            (combinational: :func:`dispatch_registers` registers them at each unit, which sees
            start in cycle d and the instruction held from d until its next dispatch);
        ex_last Out(1): high in the last cycle d + L - 1 of the executing instruction, when
            its unit raises ``done``.
        unit_fault In(1): a unit's data fault (the DMA's ``fault``: BAD_INDEX), a pulse while its
            instruction runs, at least two cycles before its last; the machine stops when that
            instruction ends (with OVERLAP = 1, when every engine is free).
        OVERLAP = 1 only: eng_last Out(4), ex_last per engine; dma_hold Out(1), to the DMA's
        ``hold`` (a register: another engine writes the scratchpad LD_OVERHEAD cycles later, so
        an LD beat read now would find the port taken; the execute stage counts the LD's beats
        itself and holds the DMA's countdown for the cycle). hw/overlap.py.
        OVERLAP = 2 only: issue_eng Out(4), ``issue`` per engine; eng_opcode, eng_fields
        (ArrayLayout per engine): the head of each engine's queue, which ``issue_eng`` issues
        (each unit's dispatch registers take their engine's, with no multiplexer). hw/station.py.

    Instruction memory: ``imem[k]`` (k < INSTR_WORDS) is a ``amaranth.lib.memory.Memory`` of
    IMEM_WORDS 32-bit words holding word k of every instruction (instruction i at row i), so a
    test bench or a simulator backdoor writes program word w at ``imem[w % 4]`` row ``w // 4``.

    Latency: FRONTEND_CYCLES from start to the first dispatch; each instruction its unit's
    latency; STOP_CYCLES for the stop. ``count_cycles`` = FRONTEND_CYCLES + sum of latencies
    + STOP_CYCLES = the cycles from start (inclusive) to the first cycle done is high.

    Errors: ErrorCode in error_code, as :class:`sim.machine.Machine` reports them.

    Raises:
        TypeError: params is not a :class:`sim.spec.Params`.
    """

    def __init__(self, params: Params):
        assert spec.FRONTEND_CYCLES == 1 + CHECK_STAGES + 1 + 1, \
            "sim.spec.FRONTEND_CYCLES: fetch, the checker's stages, a queue slot, the dispatch register"
        assert spec.STOP_CYCLES >= 1, "sim.spec.STOP_CYCLES: a stop takes at least its own cycle"
        shortest = min(spec.latency(s, {f.name: f.legal_range(params)[0] for f in s.fields}, params)
                       for s in spec.instructions(params) if s.counter is not None)
        assert shortest >= 2, "the execute stage's countdown takes every latency to be at least 2"
        self.params = params
        assert spec.DATA_ERRORS == (ErrorCode.BAD_INDEX,), "unit_fault is one bit: one data error"
        members = host_members(params) | {
            "issue": Out(1),
            "issue_opcode": Out(spec.OPCODE_BITS),
            "issue_fields": Out(FIELD_BITS),
            "ex_last": Out(1),
            "unit_fault": In(1),
        } | ({"eng_last": Out(len(spec.ENGINES)), "dma_hold": Out(1)} if params.OVERLAP else {}) | (
            station_members() if params.OVERLAP == 2 else {})
        super().__init__(members)
        # the host writes only while the machine is idle: no read sees a write (NO_RW_CHECK)
        self.imem = [memory.Memory(shape=spec.WORD_BITS, depth=params.IMEM_WORDS, init=[], attrs=NO_RW_CHECK)
                     for _ in range(spec.INSTR_WORDS)]
        self.checker = Checker(params)

    def elaborate(self, platform):
        m = Module()
        m.submodules.checks = self.checker   # not `checker`: a SystemVerilog keyword
        for k, bank in enumerate(self.imem):
            m.submodules[f"imem{k}"] = bank

        busy = Signal()
        start = Signal()          # an accepted start
        stop = Signal()           # the last cycle of a stop
        m.d.comb += [start.eq(self.start & ~busy), self.busy.eq(busy)]
        # the named steps, in the order their logic is built (each takes what the earlier made)
        q = self._queue(m, start, stop)
        fault = data_fault(m, self.unit_fault, start, stop)
        if self.params.OVERLAP:
            if self.params.OVERLAP == 2:     # the station drives the issue and counters itself
                ex = station_execute(m, self, busy, start, stop, q, fault)
            else:
                ex = self._overlap_execute(m, busy, start, stop, q, fault)
            self._front_end(m, busy, start, stop, ex.stopping, q.advance)
            self._host_status(m, start, stop, busy, ex.stop_code, ex.stop_pc)
            return m
        ex = self._countdown(m, busy, start, q, fault)
        self._front_end(m, busy, start, stop, ex.stopping, q.advance)
        ex_class, stop_code, stop_pc = self._issue_and_stop(m, busy, start, stop, q, ex)
        self._host_status(m, start, stop, busy, stop_code, stop_pc)
        self._counters(m, start, busy, ex.active, ex_class)
        return m

    def _queue(self, m: Module, start: Value, stop: Value) -> SimpleNamespace:
        """The queue: QUEUE_SLOTS slots of checked instructions between the checker and the
        execute stage. The front end advances whenever a slot is free, a register's decision:
        the stall never waits on the execute stage's choice of the cycle (which would put the
        queue's logic and ~1,000 enables of the fetch and checker registers behind it).
        Returns advance, consume (driven by :meth:`_countdown`), count and head."""
        chk = self.checker
        entry = queue_entry(self.params)
        slots = [Signal(entry, name=f"slot{k}") for k in range(QUEUE_SLOTS)]
        count = Signal(range(QUEUE_SLOTS + 1))       # instructions in the queue
        rd_slot = Signal()
        wr_slot = Signal()
        advance = Signal()
        push = Signal()
        consume = Signal()
        m.d.comb += [advance.eq(count != QUEUE_SLOTS), push.eq(advance & chk.out_valid)]
        checked = Signal(entry)
        is_stop = (chk.out_code != ErrorCode.NONE) | (chk.out_opcode == spec.Opcode.HALT)
        m.d.comb += [
            checked.opcode.eq(chk.out_opcode),
            checked.fields.eq(chk.out_fields),
            checked.pc.eq(chk.out_pc),
            checked.code.eq(chk.out_code),
            checked.stop.eq(is_stop),
            checked.cls.eq(Mux(is_stop, 0, Cat(
                is_one_of(chk.out_opcode,
                          [s.name for s in spec.instructions(self.params) if s.counter == name])
                for name in UNIT_COUNTERS))),
            checked.latency.eq(chk.out_latency),
        ]
        if self.params.OVERLAP:
            m.d.comb += [getattr(checked, name).eq(getattr(chk, f"out_{name}"))
                         for name in overlap_info_widths(self.params)]
        if self.params.OVERLAP == 2:
            loads = issue_loads(chk.out_latency, chk.out_reads, chk.out_rd, chk.out_wfrom)
            m.d.comb += [getattr(checked, name).eq(value) for name, value in loads.items()]
        for k, slot in enumerate(slots):
            with m.If(push & (wr_slot == k)):
                m.d.sync += slot.eq(checked)
        head = Signal(entry)
        m.d.comb += head.eq(Mux(rd_slot, slots[1].as_value(), slots[0].as_value()))
        with m.If(start | stop):
            m.d.sync += [count.eq(0), rd_slot.eq(0), wr_slot.eq(0)]
        with m.Else():
            m.d.sync += count.eq(count + push - consume)
            with m.If(push):
                m.d.sync += wr_slot.eq(~wr_slot)
            with m.If(consume):
                m.d.sync += rd_slot.eq(~rd_slot)
        return SimpleNamespace(advance=advance, consume=consume, count=count, head=head, slots=slots,
                               rd_slot=rd_slot)

    def _overlap_execute(self, m: Module, busy: Value, start: Value, stop: Value,
                         q: SimpleNamespace, fault: Value) -> OverlapExecute:
        """OVERLAP = 1: the execute stage is a component of its own (:class:`hw.overlap.OverlapExecute`),
        wired to the queue, the data fault's register, the issue, the stop, the last cycles,
        ``dma_hold`` and the counters."""
        m.submodules.execute = ex = OverlapExecute(self.params)
        m.d.comb += [ex.start.eq(start), ex.busy.eq(busy), ex.fault.eq(fault), ex.count.eq(q.count),
                     ex.rd_slot.eq(q.rd_slot)]
        m.d.comb += [ex.slots[k].eq(slot) for k, slot in enumerate(q.slots)]
        m.d.comb += [q.consume.eq(ex.consume), stop.eq(ex.stop)]
        outputs = ["issue", "issue_opcode", "issue_fields", "eng_last", "ex_last", "dma_hold"]
        outputs += [f"count_{name}" for name in spec.counters(self.params)]
        m.d.comb += [getattr(self, name).eq(getattr(ex, name)) for name in outputs]
        return ex

    def _countdown(self, m: Module, busy: Value, start: Value, q: SimpleNamespace,
                   fault: Value) -> SimpleNamespace:
        """The execute stage takes the queue's head when free. Taken in cycle c with latency L,
        the instruction is dispatched in c + 1 and its last cycle is c + L, in which the stage
        takes the next one. ``free`` is a register: high in the last cycle of an instruction, and
        while none runs. A data fault of the running instruction (``unit_fault``) takes a stop
        in its last cycle instead (``fault_stop``). Returns active (a unit is executing),
        stopping, free and fault_stop."""
        active = Signal(name="ex_active")      # a unit is executing an instruction
        stopping = Signal()
        remain = Signal(len(self.checker.out_latency))   # cycles left after this one
        free = Signal(init=1)
        head = q.head
        fault_stop = Signal()
        m.d.comb += [q.consume.eq(busy & ~stopping & (q.count != 0) & free & ~fault),
                     fault_stop.eq(busy & ~stopping & free & fault)]
        with m.If(start):
            m.d.sync += [remain.eq(0), free.eq(1)]
        with m.Elif(q.consume & ~head.stop):
            m.d.sync += [remain.eq(head.latency - 1), free.eq(0)]   # every L >= 2
        with m.Elif(remain != 0):
            m.d.sync += [remain.eq(remain - 1), free.eq(remain == 1)]
        with m.Else():
            m.d.sync += free.eq(1)
        return SimpleNamespace(active=active, stopping=stopping, free=free, fault_stop=fault_stop)

    def _front_end(self, m: Module, busy: Value, start: Value, stop: Value, stopping: Value,
                   advance: Value) -> None:
        """Fetch with a global stall (``advance``: a slot of the queue is free): the pc, the
        instruction memory's read and write ports, and the checker's inputs."""
        chk = self.checker
        pcw = pc_bits(self.params)
        fetch_pc = Signal(pcw)
        fetching = Signal()       # the pc has not yet reached prog_len
        prog_len = Signal(pcw)
        pc_now = Signal(pcw)
        len_now = Signal(pcw)
        issue = Signal()
        m.d.comb += [
            pc_now.eq(Mux(start, 0, fetch_pc)),
            len_now.eq(Mux(start, self.prog_len, prog_len)),
            issue.eq(start | (busy & fetching & ~stopping & advance)),
        ]
        f_valid, f_nohalt, f_pc = Signal(), Signal(), Signal(pcw)
        with m.If(start):
            m.d.sync += [prog_len.eq(self.prog_len)]
        with m.If(issue):
            m.d.sync += [
                fetch_pc.eq(pc_now + 1),
                fetching.eq(pc_now != len_now),
                f_valid.eq(1),
                f_nohalt.eq(pc_now == len_now),
                f_pc.eq(pc_now),
            ]
        with m.Elif(stop):
            m.d.sync += [fetching.eq(0), f_valid.eq(0)]
        with m.Elif(advance):
            m.d.sync += f_valid.eq(0)

        row_bits = max(1, (self.params.IMEM_WORDS - 1).bit_length())
        bank_bits = (spec.INSTR_WORDS - 1).bit_length()   # the host writes word w to bank w % INSTR_WORDS
        instr = []
        for k, bank in enumerate(self.imem):
            rd = bank.read_port(domain="sync")
            wr = bank.write_port()
            m.d.comb += [
                rd.addr.eq(pc_now[:row_bits]),
                rd.en.eq(issue),   # held while the front end stalls
                wr.addr.eq(self.imem_waddr[bank_bits:]),
                wr.data.eq(self.imem_wdata),
                wr.en.eq(self.imem_we & (self.imem_waddr[:bank_bits] == k)),
            ]
            instr.append(rd.data)
        m.d.comb += [
            chk.en.eq(advance),
            chk.flush.eq(start | stop),
            chk.in_valid.eq(f_valid),
            chk.in_nohalt.eq(f_nohalt),
            chk.in_pc.eq(f_pc),
            chk.in_instr.eq(Cat(*instr)),
        ]

    def _issue_and_stop(self, m: Module, busy: Value, start: Value, stop: Value, q: SimpleNamespace,
                        ex: SimpleNamespace) -> tuple[Signal, Signal, Signal]:
        """The issue (the dispatch registers sit at the units), the stop and ``ex_last``.
        Returns the executing instruction's class, and the stop's code and pc."""
        head = q.head
        ex_class = Signal(len(UNIT_COUNTERS))
        stop_left = Signal(range(spec.STOP_CYCLES + 1))
        stop_code = Signal(spec.ERROR_CODE_BITS)
        stop_pc = Signal(pc_bits(self.params))
        m.d.comb += [
            self.issue.eq(q.consume & ~head.stop),
            self.issue_opcode.eq(head.opcode),
            self.issue_fields.eq(head.fields),
        ]
        with m.If(start):
            m.d.sync += [ex.active.eq(0), ex.stopping.eq(0)]
        with m.Elif(q.consume):
            m.d.sync += [
                ex_class.eq(head.cls),
                ex.active.eq(~head.stop),
                ex.stopping.eq(head.stop),
                stop_left.eq(spec.STOP_CYCLES - 1),
                stop_code.eq(head.code),
                stop_pc.eq(head.pc),
            ]
        with m.Elif(ex.fault_stop):      # stop_pc holds the running instruction's pc
            m.d.sync += [
                ex.active.eq(0),
                ex.stopping.eq(1),
                stop_left.eq(spec.STOP_CYCLES - 1),
                stop_code.eq(ErrorCode.BAD_INDEX),
            ]
        with m.Elif(stop):
            m.d.sync += ex.stopping.eq(0)
        with m.Elif(ex.free):
            m.d.sync += ex.active.eq(0)
        with m.If(ex.stopping & (stop_left != 0)):
            m.d.sync += stop_left.eq(stop_left - 1)
        m.d.comb += stop.eq(busy & ex.stopping & (stop_left == 0))
        m.d.comb += self.ex_last.eq(ex.active & ex.free)
        return ex_class, stop_code, stop_pc

    def _host_status(self, m: Module, start: Value, stop: Value, busy: Signal, stop_code: Value,
                     stop_pc: Value) -> None:
        """busy, done, error, error_code and error_pc: set by start, by the stop."""
        with m.If(start):
            m.d.sync += [busy.eq(1), self.done.eq(0), self.error.eq(0),
                         self.error_code.eq(0), self.error_pc.eq(0)]
        with m.Elif(stop):
            m.d.sync += [
                busy.eq(0),
                self.done.eq(1),
                self.error.eq(stop_code != ErrorCode.NONE),
                self.error_code.eq(stop_code),
                self.error_pc.eq(stop_pc),
            ]

    def _counters(self, m: Module, start: Value, busy: Value, active: Value, ex_class: Value) -> None:
        """The counters: cycles from start (inclusive) to the first done cycle; per class the
        cycles an instruction of that class occupies the execute stage."""
        counters = {name: getattr(self, f"count_{name}") for name in spec.COUNTERS}
        with m.If(start):
            m.d.sync += [counters["cycles"].eq(1)] + [counters[n].eq(0) for n in UNIT_COUNTERS]
        with m.Elif(busy):
            m.d.sync += counters["cycles"].eq(counters["cycles"] + 1)
            for k, name in enumerate(UNIT_COUNTERS):
                with m.If(active & ex_class[k]):
                    m.d.sync += counters[name].eq(counters[name] + 1)


def station_members() -> dict:
    """OVERLAP = 2: the issue per engine and each engine's queue head (hw/station.py)."""
    n = len(spec.ENGINES)
    return {"issue_eng": Out(n), "eng_opcode": Out(data.ArrayLayout(spec.OPCODE_BITS, n)),
            "eng_fields": Out(data.ArrayLayout(FIELD_BITS, n))}


def data_fault(m: Module, unit_fault: Value, start: Value, stop: Value) -> Signal:
    """A register set by a unit's ``unit_fault`` pulse (BAD_INDEX) and cleared by an accepted
    start and by the stop: the execute stage stops the machine when the faulting instruction has
    ended, and issues nothing in the meantime."""
    fault = Signal(name="data_fault")
    with m.If(start | stop):
        m.d.sync += fault.eq(0)
    with m.Elif(unit_fault):
        m.d.sync += fault.eq(1)
    return fault


def dispatch_registers(m: Module, control: Control, unit: wiring.Component, opcodes, name: str) -> None:
    """The dispatch registers of one unit: its ``start`` rises in the cycle after the control
    issues one of ``opcodes``, and its ``opcode`` and ``fields`` hold that instruction from then
    until the unit's next instruction is issued.

    They belong to the unit, not to the control: the control's issue logic (a handful of
    registers and two LUT levels) is the only thing before the route across the chip, and each
    unit's first cycle of work starts from registers beside it.
    """
    issue, issue_opcode, issue_fields = control.issue, control.issue_opcode, control.issue_fields
    if control.params.OVERLAP == 2:    # the head of the unit's engine's queue (hw/station.py)
        k = spec.ENGINES.index(spec.BY_NAME[opcodes[0]].counter)
        issue, issue_opcode, issue_fields = (control.issue_eng[k], control.eng_opcode[k],
                                             control.eng_fields[k])
    mine = is_one_of(issue_opcode, opcodes)
    take = Signal(name=f"{name}_take")
    start = Signal(name=f"{name}_start")
    opcode = Signal(spec.OPCODE_BITS, name=f"{name}_opcode")
    fields = Signal(FIELD_BITS, name=f"{name}_fields")
    m.d.comb += take.eq(issue & mine)
    m.d.sync += start.eq(take)
    with m.If(take):
        m.d.sync += [opcode.eq(issue_opcode), fields.eq(issue_fields)]
    m.d.comb += [unit.start.eq(start), unit.opcode.eq(opcode), unit.fields.eq(fields)]
