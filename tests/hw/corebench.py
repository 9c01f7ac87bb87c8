"""Running whole programs on hw/control.py (with stub units) or on the GA-2 core, and on the
reference machine, for tests/hw/test_control.py and tests/hw/test_core.py.

One simulation runs many programs in turn, the way a host would: load the instruction memory
(and the memories) by backdoor, pulse ``start``, wait for ``done``, read back. Everything the
host sees is compared with :class:`sim.machine.Machine`: the stop (error code and pc), all five
counters, and for the core every scratchpad and external-memory word and its ``timing_fault``
self-check (which must stay 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from hw.top import TIMING_CHECK_DELAY
from sim import spec
from sim.asm import Instruction, decode
from sim.machine import Machine, MachineError
from sim.spec import ErrorCode, Params

MAX_CYCLES = 20_000


@dataclass
class Case:
    """One program to run: encoded words (INSTR_WORDS per instruction), the program length the
    host gives (default: all the words), and the external-memory image."""

    name: str
    words: list[int]
    prog_len: int | None = None
    ext: np.ndarray | None = None

    @property
    def length(self) -> int:
        return len(self.words) // spec.INSTR_WORDS if self.prog_len is None else self.prog_len


def case(name: str, program: Sequence[Instruction | Sequence[int]], **kw) -> Case:
    """A Case from instructions, or raw 4-word chunks for words that do not decode."""
    words: list[int] = []
    for ins in program:
        words += ins.encode() if isinstance(ins, Instruction) else [int(w) for w in ins]
    return Case(name, words, **kw)


@dataclass
class Outcome:
    """What the host sees when the machine has stopped."""

    code: int
    pc: int
    counters: tuple[int, ...]
    dispatches: list[tuple[int, int]] = field(default_factory=list)   # (cycle after start, opcode)
    spad: np.ndarray | None = None
    ext: np.ndarray | None = None
    timing_fault: int | None = None   # the core's self-check (None: not read, or the reference)


def reference(case: Case, params: Params) -> Outcome:
    """The reference machine's outcome, with the dispatch cycle of every unit instruction."""
    words = case.words[:case.length * spec.INSTR_WORDS]
    try:
        result = Machine(params).run(words, case.ext)
        code, pc = ErrorCode.NONE, result.steps - 1
    except MachineError as e:
        result, code, pc = e.result, e.code, e.pc
    # every instruction before the stop was legal and executed (and the one that stopped it, for
    # a fault of its data: a GATHER out of its table); the serial machine's dispatches are worked
    # out here from the latencies, the overlapped machine's are the reference's
    dispatches = []
    cycle = spec.FRONTEND_CYCLES
    for k in range(pc + (code in spec.DATA_ERRORS)):
        chunk = words[k * spec.INSTR_WORDS:(k + 1) * spec.INSTR_WORDS]
        ins = decode(chunk)
        dispatches.append((cycle if not params.OVERLAP else result.timeline[k].start, int(ins.spec.opcode)))
        cycle += spec.latency(ins.spec, ins.fields, params)
    return Outcome(int(code), pc, result.counters.as_tuple(spec.counters(params)), dispatches, result.spad,
                   result.ext)


def load_imem(ctx, imem: Sequence, words: Sequence[int]) -> None:
    """Backdoor: program word w goes to bank w % INSTR_WORDS, row w // INSTR_WORDS."""
    for w, value in enumerate(words):
        ctx.set(imem[w % spec.INSTR_WORDS].data[w // spec.INSTR_WORDS], int(value) & 0xFFFFFFFF)


async def run_case(ctx, host, imem: Sequence, case: Case, *, issue=None, issue_opcode=None,
                   via_port: bool = False, last: tuple | None = None, timing_fault=None) -> Outcome:
    """Load, start, wait for done; return what the host sees.

    Args:
        host: the component with the host members (hw.control.host_members).
        imem: the instruction-memory banks.
        issue, issue_opcode: if given, dispatches are recorded (cycle after start, opcode): an
            instruction issued in one cycle is dispatched in the next.
        via_port: load the program through the host write port instead of the backdoor.
        last: (the control's ``ex_last``, the units' ``done`` signals): asserted equal, the
            one against the OR of the others, in every cycle (the execute stage counts each
            latency down itself; the units must finish in that very cycle).
        timing_fault: the core's ``timing_fault`` output: if given, read TIMING_CHECK_DELAY
            cycles after ``done`` rose (so that it has judged every cycle up to that one) into
            the outcome's ``timing_fault``, which :func:`compare` requires to be 0.

    Raises:
        AssertionError: no done within MAX_CYCLES, not busy before done, ``ex_last`` and the
            units' ``done`` disagree (with ``last``), ``count_cycles`` is not the cycles waited,
            or ``error`` disagrees with ``error_code``.
    """
    if via_port:
        for w, value in enumerate(case.words):
            ctx.set(host.imem_we, 1)
            ctx.set(host.imem_waddr, w)
            ctx.set(host.imem_wdata, int(value))
            await ctx.tick()
        ctx.set(host.imem_we, 0)
    else:
        load_imem(ctx, imem, case.words)
    ctx.set(host.prog_len, case.length)
    ctx.set(host.start, 1)
    dispatches = []
    cycles = 0
    while True:
        await ctx.tick()
        ctx.set(host.start, 0)
        cycles += 1
        assert cycles <= MAX_CYCLES, f"{case.name}: no done after {cycles} cycles"
        if issue is not None and ctx.get(issue):
            dispatches.append((cycles + 1, ctx.get(issue_opcode)))
        if last is not None:
            ex_last, dones = last
            unit_done = any(ctx.get(done) for done in dones)
            assert ctx.get(ex_last) == unit_done, (
                f"{case.name}: cycle {cycles}: the execute stage's last cycle is {ctx.get(ex_last)}, "
                f"a unit's done is {int(unit_done)}")
        if ctx.get(host.done):
            break
        assert ctx.get(host.busy), f"{case.name}: not busy and not done, cycle {cycles}"
    names = spec.COUNTERS + tuple(n for n in spec.OVERLAP_COUNTERS if hasattr(host, f"count_{n}"))
    counters = tuple(ctx.get(getattr(host, f"count_{n}")) for n in names)
    assert counters[0] == cycles, f"{case.name}: count_cycles={counters[0]} but done came after {cycles}"
    assert ctx.get(host.error) == (ctx.get(host.error_code) != 0)
    fault = None
    if timing_fault is not None:
        await ctx.tick().repeat(TIMING_CHECK_DELAY)
        fault = ctx.get(timing_fault)
    return Outcome(ctx.get(host.error_code), ctx.get(host.error_pc), counters, dispatches,
                   timing_fault=fault)


def compare(case: Case, got: Outcome, want: Outcome, *, memories: bool = False) -> None:
    """Assert that the run matches the reference: the stop, the counters, the dispatches (when
    recorded), the memories (with ``memories``), and a ``timing_fault`` of 0 when it was read.

    Raises:
        AssertionError: the first of those that differs, named.
    """
    name = case.name
    assert (got.code, got.pc) == (want.code, want.pc), (
        f"{name}: stopped with code {got.code} at pc {got.pc}, reference {want.code} at {want.pc}")
    assert got.counters == want.counters, f"{name}: counters {got.counters} != reference {want.counters}"
    if got.dispatches:
        assert got.dispatches == want.dispatches, f"{name}: dispatches {got.dispatches} != {want.dispatches}"
    assert got.timing_fault in (None, 0), (
        f"{name}: timing_fault is {got.timing_fault}: a unit's done and the execute stage's count "
        "disagreed in some cycle")
    if memories:
        for what, g, w in (("scratchpad", got.spad, want.spad), ("external memory", got.ext, want.ext)):
            diff = np.flatnonzero(g != w)
            assert not len(diff), (f"{name}: {what} differs at {len(diff)} words; first at {diff[0]}: "
                                   f"RTL {g[diff[0]]:#010x}, reference {w[diff[0]]:#010x}")
