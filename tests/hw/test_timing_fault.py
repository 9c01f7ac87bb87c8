"""GA-2's ``timing_fault`` self-check (hw/top.py): a unit whose ``done`` comes a cycle later or
earlier than the execute stage's countdown (the spec's latency) sets it, it stays set until the
next start, and that start clears it.

The broken cores are the real one with a wrapper that delays the DMA's ``done`` by a cycle
(memories and counters still match the reference machine: only ``timing_fault`` tells), and an
all-stub core whose stub finishes one opcode a cycle early or late. The same benches with no
skew must leave ``timing_fault`` at 0, so each test can fail both ways.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from amaranth.hdl import Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.sim import Simulator

from flows import export
from hw import top
from hw.component import Checked
from hw.isa import is_one_of
from hw.simtop import SimTop
from hw.stub import LatencyStub
from hw.top import TIMING_CHECK_DELAY
from sim import spec
from sim.asm import build
from sim.spec import DEFAULT, Params

from .corebench import MAX_CYCLES, Case, Outcome, case, compare, load_imem, reference

build = partial(build, params=DEFAULT)
"""This file's programs are the default machine's (sim.asm takes the machine explicitly)."""

SMALL = Params(SPAD_WORDS=256, EXT_WORDS=512)
IDLE = 6
"""Cycles the bench waits between programs, to see the fault held."""


class LateDone(Checked):
    """A unit with its ``done`` delayed by ``delay`` cycles (0: the unit as it is); every other
    port passes straight through, so the unit does the same work at the same time.

    Raises:
        ValueError: delay is negative (a wrapper cannot make a unit finish earlier).
    """

    @classmethod
    def check(cls, unit: wiring.Component, delay: int) -> None:
        if delay < 0:
            raise ValueError(f"LateDone: delay={delay} must be 0 or more")

    def __init__(self, unit: wiring.Component, delay: int):
        self.unit = unit
        self.delay = delay
        super().__init__(dict(unit.signature.members))

    def elaborate(self, platform):
        m = Module()
        m.submodules.unit = unit = self.unit
        theirs = {path: value for path, _member, value in unit.signature.flatten(unit)}
        for path, member, ours in self.signature.flatten(self):
            if path == ("done",):
                continue
            if member.flow == wiring.In:
                m.d.comb += theirs[path].eq(ours)
            else:
                m.d.comb += ours.eq(theirs[path])
        done = unit.done
        for k in range(self.delay):
            late = Signal(name=f"done_late{k}")
            m.d.sync += late.eq(done)
            done = late
        m.d.comb += self.done.eq(done)
        return m


class SkewedStub(LatencyStub):
    """:class:`hw.stub.LatencyStub` with ``done`` ``skew`` cycles off the spec's latency for the
    instructions named in ``opcodes`` (exact for the others).

    Raises:
        ValueError: a skew that would put ``done`` before the dispatch cycle for the shortest
            latency (skew < -1: every latency is at least 2).
    """

    @classmethod
    def check(cls, params: Params, skew: int, opcodes: set[str]) -> None:
        super().check(params)
        if skew < -1:
            raise ValueError(f"SkewedStub: skew={skew} must be at least -1")

    def __init__(self, params: Params, skew: int, opcodes: set[str]):
        self.skew = skew
        self.skewed = sorted(opcodes)
        super().__init__(params)

    def latency(self) -> Value:
        exact = super().latency()
        return Mux(is_one_of(self.opcode, self.skewed), exact + self.skew, exact)


def _image(seed: int, n: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(-(1 << 31), 1 << 31, n)


def _set_banked(ctx, mem, values) -> None:
    for b, bank in enumerate(mem.banks):
        for row, value in enumerate(values[b::mem.lanes]):
            ctx.set(bank.data[row], int(value) & 0xFFFFFFFF)


def _get_banked(ctx, mem) -> np.ndarray:
    out = np.zeros(mem.depth, dtype=np.uint32)
    for b, bank in enumerate(mem.banks):
        out[b::mem.lanes] = [ctx.get(bank.data[row]) for row in range(mem.depth // mem.lanes)]
    return out


def run(dut: SimTop, cases: list[Case], *, restart_at_done: bool = False) -> list[dict]:
    """Run the cases in turn on ``dut`` and record ``timing_fault``.

    Each run: load, pulse start, wait for done, then TIMING_CHECK_DELAY + IDLE idle cycles (or,
    with ``restart_at_done``, start the next case in the very cycle done is first high, the
    earliest the control takes a start). Returns per case: ``trace``, timing_fault in every
    cycle from the one after start to the end of the idle cycles; ``at_done``, its value
    TIMING_CHECK_DELAY cycles after done rose (None with ``restart_at_done``); ``outcome``, the
    stop, the counters and the memories, for :func:`corebench.compare`.
    """
    core = dut.core
    params = dut.params
    out: list[dict] = []

    async def testbench(ctx):
        for k, c in enumerate(cases):
            ext = np.zeros(params.EXT_WORDS, dtype=np.int64)
            if c.ext is not None:
                ext[:len(c.ext)] = c.ext
            _set_banked(ctx, dut.ext, ext)
            _set_banked(ctx, core.spad, np.zeros(params.SPAD_WORDS, dtype=np.int64))
            load_imem(ctx, core.control.imem, c.words)
            ctx.set(dut.prog_len, c.length)
            ctx.set(dut.start, 1)
            trace = []
            for _ in range(MAX_CYCLES):
                await ctx.tick()
                ctx.set(dut.start, 0)
                trace.append(ctx.get(dut.timing_fault))
                if ctx.get(dut.done):
                    break
            else:
                raise AssertionError(f"{c.name}: no done after {MAX_CYCLES} cycles")
            counters = tuple(ctx.get(getattr(dut, f"count_{n}")) for n in spec.COUNTERS)
            outcome = Outcome(ctx.get(dut.error_code), ctx.get(dut.error_pc), counters)
            at_done = None
            if not (restart_at_done and k + 1 < len(cases)):
                for _ in range(TIMING_CHECK_DELAY + IDLE):
                    await ctx.tick()
                    trace.append(ctx.get(dut.timing_fault))
                at_done = trace[-IDLE - 1]
            outcome.spad, outcome.ext = _get_banked(ctx, core.spad), _get_banked(ctx, dut.ext)
            out.append({"trace": trace, "at_done": at_done, "outcome": outcome})

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    return out


def _dma_cases() -> list[Case]:
    ld, st, halt = build("LD", dst=0, src=3, len=37), build("ST", src=5, dst=300, len=29), build("HALT")
    return [case("LD, ST", [ld, st, halt], ext=_image(1, SMALL.EXT_WORDS)),
            case("HALT only", [halt], ext=_image(2, 16))]


@pytest.mark.parametrize("delay", [0, 1])
def test_a_late_dma_done_is_caught_where_nothing_else_differs(delay):
    """The real core with the DMA's done a cycle late: memories, counters and the stop still
    match the reference (the execute stage counts the spec's latency), timing_fault does not."""
    dut = SimTop(SMALL)
    dut.core.units["dma"] = LateDone(dut.core.units["dma"], delay)
    for component in (dut, dut.core):   # a port of both exported tops (build/ga2.v, ga2_simtop.v)
        assert {"name": "timing_fault", "dir": "output", "width": 1} in export.ports(component)
    cases = _dma_cases()
    first, second = run(dut, cases)
    compare(cases[0], first["outcome"], reference(cases[0], SMALL), memories=True)
    compare(cases[1], second["outcome"], reference(cases[1], SMALL), memories=True)
    if delay == 0:
        assert first["trace"] == [0] * len(first["trace"])
    else:
        assert first["at_done"] == 1, first["trace"]
        rise = first["trace"].index(1)
        assert first["trace"][rise:] == [1] * (len(first["trace"]) - rise), "timing_fault not held"
        assert rise < len(first["trace"]) - TIMING_CHECK_DELAY - IDLE, "it rose only after done"
    # the next start clears it, and a program that does not use the DMA leaves it clear
    assert second["trace"] == [0] * len(second["trace"])


@pytest.mark.parametrize("skew", [-1, 0, 1])
def test_a_unit_early_or_late_by_one_cycle_sets_it_until_the_next_start(skew, monkeypatch):
    monkeypatch.setattr(top, "LatencyStub", lambda params: SkewedStub(params, skew, {"VADD"}))
    dut = SimTop(SMALL, stub_missing=True, modules=())
    vadd = [build("LD", dst=0, src=0, len=8), build("VADD", dst=20, src1=0, src2=4, len=4), build("HALT")]
    others = [build("LD", dst=0, src=0, len=8), build("RQ", dst=20, src=0, len=8, m=1 << 20, s=20, relu=0),
              build("HALT")]
    cases = [case("VADD", vadd), case("no VADD", others), case("VADD again", vadd)]
    runs = run(dut, cases)
    faults = [r["at_done"] for r in runs]
    assert faults == ([0, 0, 0] if skew == 0 else [1, 0, 1])
    if skew:
        assert runs[0]["trace"][-IDLE:] == [1] * IDLE, "timing_fault not held while idle"
        assert runs[1]["trace"][0] == 0, "the start did not clear timing_fault"
    for c, r in zip(cases, runs, strict=True):   # the stub has no effect on memory
        got, want = r["outcome"], reference(c, SMALL)
        assert (got.code, got.pc, got.counters) == (want.code, want.pc, want.counters)


def test_no_stale_pulse_after_a_start_at_the_earliest_cycle(monkeypatch):
    """A last instruction whose done comes a cycle late, the next program started in the first
    cycle done is high: that late done reaches the check in the start cycle itself, which the
    start clears, so the next (correct) program sees timing_fault 0 throughout."""
    monkeypatch.setattr(top, "LatencyStub", lambda params: LateDone(LatencyStub(params), 1))
    dut = SimTop(SMALL, stub_missing=True, modules=())
    late = case("LD last", [build("LD", dst=0, src=0, len=8), build("HALT")])
    halt = case("HALT only", [build("HALT")])
    first, second = run(dut, [late, halt], restart_at_done=True)
    assert first["trace"][-1] == 1   # the missing done at ex_last already set it
    assert second["trace"] == [0] * len(second["trace"]), second["trace"]
