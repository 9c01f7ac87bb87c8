"""A test bench for one GA-2 unit: the unit wired to a real scratchpad (and external memory).

The bench dispatches instructions to the unit the way the execute stage does (hw/README.md):
``start`` for one cycle with ``opcode`` and ``fields`` held until ``done``, the next
instruction dispatched in the cycle after ``done``. It measures each instruction's latency
and compares the memories with the reference machine's semantics (``sim.machine.apply``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

import numpy as np
from amaranth.hdl import Elaboratable, Module, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import Out
from amaranth.sim import Simulator

from hw.banked import BankedMemory, attach_bus
from sim import spec
from sim.asm import Instruction
from sim.machine import DataFault, apply
from sim.spec import DEFAULT, Params

MAX_CYCLES_PER_INSTRUCTION = 2000


class UnitBench(Elaboratable):
    """The unit, a scratchpad with two read ports and, if the unit has an ``ext`` port, an
    external memory. Ports the unit lacks stay unconnected."""

    def __init__(self, unit: wiring.Component, params: Params = DEFAULT):
        self.unit = unit
        self.params = params
        self.spad = BankedMemory(params.SPAD_WORDS, n_read=2, lanes=params.LANES,
                                 latency=spec.SPAD_READ_LATENCY)
        members = unit.signature.members
        self.ext = None
        if "ext" in members:
            self.ext = BankedMemory(params.EXT_WORDS, n_read=1, lanes=params.LANES,
                                    latency=spec.EXT_READ_LATENCY)

    def elaborate(self, platform):
        m = Module()
        m.submodules.unit = unit = self.unit
        m.submodules.spad = self.spad
        members = unit.signature.members
        for port in ("rd0", "rd1", "wr"):
            if port in members:
                wiring.connect(m, getattr(unit, port), getattr(self.spad, port))
        if self.ext is not None:
            m.submodules.ext = ext = self.ext
            attach_bus(m, unit.ext, ext)
        return m


def present(ctx, unit: wiring.Component, ins: Instruction) -> None:
    """Drive a unit's ``opcode`` and ``fields`` with the instruction's encoding (the opcode is
    the low OPCODE_BITS of the encoded words, the fields the bits above), as the dispatch
    registers do; ``start`` is the caller's."""
    encoded = sum(word << (spec.WORD_BITS * i) for i, word in enumerate(ins.encode()))
    ctx.set(unit.opcode, encoded & ((1 << spec.OPCODE_BITS) - 1))
    ctx.set(unit.fields, encoded >> spec.OPCODE_BITS)


def _set_memory(ctx, mem: BankedMemory, values: np.ndarray) -> None:
    for w, v in enumerate(values):
        if v:
            bank, row = mem.location(w)
            ctx.set(mem.banks[bank].data[row], int(v))


def _get_memory(ctx, mem: BankedMemory) -> np.ndarray:
    out = np.zeros(mem.depth, dtype=np.uint32)
    for bank_index, bank in enumerate(mem.banks):
        for row in range(mem.depth // mem.lanes):
            out[row * mem.lanes + bank_index] = ctx.get(bank.data[row])
    return out


def run_unit(make_unit: Callable[[], wiring.Component], program: Sequence[Instruction],
             spad: Sequence[int] | np.ndarray | None = None, ext: Sequence[int] | np.ndarray | None = None,
             params: Params = DEFAULT, vcd: str | None = None) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Run instructions back to back on a unit.

    Args:
        make_unit: builds the unit under test.
        program: legal instructions the unit executes (no HALT).
        spad, ext: initial memory contents (32-bit words; the rest zero).
        vcd: write a waveform file here.

    Returns:
        (scratchpad after, external memory after, latency of each instruction in cycles).

    Raises:
        AssertionError: an instruction is illegal, or ``done`` did not come within
            MAX_CYCLES_PER_INSTRUCTION cycles.
    """
    bench = UnitBench(make_unit(), params)
    spad0 = _image(spad, params.SPAD_WORDS)
    ext0 = _image(ext, params.EXT_WORDS)
    result: dict = {}
    unit = bench.unit

    async def testbench(ctx):
        _set_memory(ctx, bench.spad, spad0)
        if bench.ext is not None:
            _set_memory(ctx, bench.ext, ext0)
        latencies = []
        for pc, ins in enumerate(program):
            code, detail = spec.check(ins.spec, ins.fields, params)
            assert code is spec.ErrorCode.NONE, f"instruction {pc} {ins} is illegal: {detail}"
            present(ctx, unit, ins)
            ctx.set(unit.start, 1)
            cycles = 1
            while not ctx.get(unit.done):
                await ctx.tick()
                ctx.set(unit.start, 0)
                cycles += 1
                assert cycles <= MAX_CYCLES_PER_INSTRUCTION, (
                    f"instruction {pc} {ins}: no done after {cycles} cycles")
            await ctx.tick()
            ctx.set(unit.start, 0)
            latencies.append(cycles)
        await ctx.tick()   # a write issued in the last done cycle passes the memory's request register
        result["latencies"] = latencies
        result["spad"] = _get_memory(ctx, bench.spad)
        result["ext"] = _get_memory(ctx, bench.ext) if bench.ext is not None else ext0

    sim = Simulator(bench)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    if vcd:
        with sim.write_vcd(vcd):
            sim.run()
    else:
        sim.run()
    return result["spad"], result["ext"], result["latencies"]


def expected(program: Sequence[Instruction], spad=None, ext=None,
             params: Params = DEFAULT) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """What the reference machine's semantics and the spec's latencies say run_unit must return."""
    s = _image(spad, params.SPAD_WORDS)
    e = _image(ext, params.EXT_WORDS)
    for ins in program:
        with contextlib.suppress(DataFault):    # a GATHER out of its table writes nothing (``fault``)
            apply(ins, s, e)
    return s, e, [spec.latency(ins.spec, ins.fields, params) for ins in program]


def check_unit(make_unit: Callable[[], wiring.Component], program: Sequence[Instruction],
               spad=None, ext=None, params: Params = DEFAULT) -> None:
    """Assert that the unit leaves the memories as the reference does, every word, and takes
    exactly the spec's latency for every instruction."""
    got_spad, got_ext, got_lat = run_unit(make_unit, program, spad, ext, params)
    want_spad, want_ext, want_lat = expected(program, spad, ext, params)
    assert got_lat == want_lat, f"latencies {got_lat} != spec {want_lat}"
    for name, got, want in (("scratchpad", got_spad, want_spad), ("external memory", got_ext, want_ext)):
        diff = np.flatnonzero(got != want)
        assert not len(diff), (f"{name} differs at {len(diff)} words; first at {diff[0]}: "
                               f"RTL {got[diff[0]]:#010x}, reference {want[diff[0]]:#010x}")


def check_idle_outputs(make_unit: Callable[[], wiring.Component], program: Sequence[Instruction],
                       spad=None, params: Params = DEFAULT, idle_cycles: int = 40) -> None:
    """Assert that every output of the unit is 0 while it is idle (hw/README.md: the top ORs
    the units' requests): for a few cycles before the program and for ``idle_cycles`` cycles
    after its last instruction, when the unit's pipelines may still be draining."""
    bench = UnitBench(make_unit(), params)
    unit = bench.unit
    outputs = [Value.cast(v) for _, member, v in unit.signature.flatten(unit) if member.flow == Out]
    spad0 = _image(spad, params.SPAD_WORDS)

    def assert_idle(ctx, when: str) -> None:
        busy = [f"{v.name}={ctx.get(v):#x}" for v in outputs if ctx.get(v)]
        assert not busy, f"{when}: outputs not 0 while idle: {', '.join(busy)}"

    async def testbench(ctx):
        _set_memory(ctx, bench.spad, spad0)
        for cycle in range(3):
            assert_idle(ctx, f"{cycle} cycles after reset")
            await ctx.tick()
        for ins in program:
            present(ctx, unit, ins)
            ctx.set(unit.start, 1)
            await ctx.tick()
            ctx.set(unit.start, 0)
            await ctx.tick().repeat(spec.latency(ins.spec, ins.fields, params) - 1)
        for cycle in range(idle_cycles):
            assert_idle(ctx, f"{cycle} cycles after the last instruction")
            await ctx.tick()

    sim = Simulator(bench)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()


def _image(values, depth: int) -> np.ndarray:
    out = np.zeros(depth, dtype=np.uint32)
    if values is not None:
        arr = np.asarray(values, dtype=np.int64)
        out[:len(arr)] = (arr & 0xFFFFFFFF).astype(np.uint32)
    return out
