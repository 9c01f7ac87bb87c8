"""flows/board.py: the ULX3S board logic in simulation (without the platform). Running example A
lights PASS; a wrong output word, a wrong counter and an illegal program light FAIL; FIRE1 runs
the program again. With amaranth-boards installed, the platform's build files are written."""

from __future__ import annotations

import dataclasses
import functools
import os

import numpy as np
import pytest
from amaranth.sim import Simulator

from flows import board
from flows.board import (
    LED_CODE,
    LED_DONE,
    LED_ERROR,
    LED_FAIL,
    LED_PASS,
    BoardLogic,
    BoardProgram,
    build,
    example_a,
    program_by_name,
)
from sim import machines, spec
from sim.asm import build as build_ins
from sim.asm import encode_program
from sim.machine import Machine, MachineError
from sim.spec import DEFAULT, ErrorCode
from tests.hw.test_timing_fault import LateDone

VERDICT = (1 << LED_PASS) | (1 << LED_FAIL)
MAX_CYCLES = 5_000


@functools.cache
def _example_a() -> BoardProgram:
    return example_a(DEFAULT)


def _leds_after_run(program: BoardProgram, *, presses: int = 0, late_dma: bool = False) -> list[int]:
    """The LEDs at each verdict: after the run that follows reset, then after each press of
    FIRE1 (the LEDs go dark, the program runs again). ``late_dma``: the core's DMA raises its
    ``done`` a cycle late (the same work at the same time: only ``timing_fault`` tells)."""
    dut = BoardLogic(program, boot_cycles=2, params=DEFAULT)
    if late_dma:
        dut.core.units["dma"] = LateDone(dut.core.units["dma"], 1)
    verdicts: list[int] = []

    async def bench(ctx):
        for run in range(presses + 1):
            if run:
                ctx.set(dut.again, 1)
                await ctx.tick()
                ctx.set(dut.again, 0)
                for _ in range(10):          # the verdict clears when the run starts
                    await ctx.tick()
                assert not ctx.get(dut.leds) & VERDICT, "the verdict stayed lit after FIRE1"
            for _ in range(MAX_CYCLES):
                await ctx.tick()
                if ctx.get(dut.leds) & VERDICT:
                    break
            else:
                raise AssertionError(f"no verdict within {MAX_CYCLES} cycles")
            verdicts.append(ctx.get(dut.leds))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return verdicts


def _lit(leds: int, led: int) -> bool:
    return bool(leds >> led & 1)


def test_example_a_lights_pass():
    program = _example_a()
    assert program.length > 10 and len(program.expected) > 0
    (leds,) = _leds_after_run(program)
    assert _lit(leds, LED_DONE) and _lit(leds, LED_PASS)
    assert not _lit(leds, LED_FAIL) and not _lit(leds, LED_ERROR)


def test_fire_runs_it_again():
    assert all(_lit(leds, LED_PASS) for leds in _leds_after_run(_example_a(), presses=1))


def test_a_wrong_output_word_lights_fail():
    program = _example_a()
    last = len(program.expected) - 1
    wrong = [(addr, word ^ (k == last)) for k, (addr, word) in enumerate(program.expected)]
    (leds,) = _leds_after_run(dataclasses.replace(program, expected=wrong))
    assert _lit(leds, LED_FAIL) and not _lit(leds, LED_PASS) and not _lit(leds, LED_ERROR)


@pytest.mark.parametrize("counter", [pytest.param(k, id=name, marks=[pytest.mark.slow] if k else [])
                                     for k, name in enumerate(spec.COUNTERS)])  # one counter is enough for CI
def test_a_wrong_counter_lights_fail(counter: int):
    program = _example_a()
    counters = list(program.counters)
    counters[counter] += 1
    (leds,) = _leds_after_run(dataclasses.replace(program, counters=tuple(counters)))
    assert _lit(leds, LED_FAIL) and not _lit(leds, LED_PASS)


def test_a_timing_fault_lights_fail():
    (leds,) = _leds_after_run(_example_a(), late_dma=True)
    assert _lit(leds, LED_DONE) and _lit(leds, LED_FAIL)
    assert not _lit(leds, LED_PASS) and not _lit(leds, LED_ERROR)


def test_an_illegal_program_lights_error_and_its_code():
    code = [build_ins("LD", dst=0, src=0, len=4, params=DEFAULT),
            build_ins("MM", dst=100, A=0, B=50, M=5, K=3, N=2, tb=0, lda=3, ldb=2, ldc=2, strict=False,
                      params=DEFAULT),
            build_ins("HALT", params=DEFAULT)]
    ext = np.zeros(DEFAULT.EXT_WORDS, dtype=np.uint32)
    with pytest.raises(MachineError) as info:
        Machine(DEFAULT).run(code, ext)
    assert info.value.code == ErrorCode.BAD_FIELD
    program = BoardProgram("bad MM", encode_program(code), len(code), ext, [(0, 0)],
                           info.value.result.counters.as_tuple(), DEFAULT)
    (leds,) = _leds_after_run(program)
    assert _lit(leds, LED_DONE) and _lit(leds, LED_ERROR) and _lit(leds, LED_FAIL)
    assert leds >> LED_CODE & 0b111 == ErrorCode.BAD_FIELD


def test_refuses_a_program_without_outputs():
    program = dataclasses.replace(_example_a(), expected=[])
    with pytest.raises(ValueError, match="writes no output"):
        BoardLogic(program, params=DEFAULT)


@pytest.mark.slow
def test_platform_build_files(tmp_path):
    pytest.importorskip("amaranth_boards", reason="amaranth-boards is in the synth extra (make bitstream)")
    summary = build(_example_a(), tmp_path, params=DEFAULT, run=False, quiet=True)
    lpf = (tmp_path / "ga2_ulx3s.lpf").read_text()
    assert 'FREQUENCY PORT "clk25_0__io" 25000000.0 HZ;' in lpf
    assert all(f'LOCATE COMP "led_{i}__io"' in lpf for i in range(8))
    script = (tmp_path / "ga2_ulx3s.ys").read_text()
    assert "synth_ecp5 -run begin:map_luts" in script and "abc -dress -lut 4:7" in script
    assert script.index("-run begin:map_luts") < script.index("-run map_cells:") < script.index("write_json")
    assert "ga2_ulx3s.il" in summary["files"]


def test_program_names():
    assert program_by_name("seed:7", params=DEFAULT).name == "seed 7"
    for bad in ("foo", "seed:", "seed:x", "example-b"):
        with pytest.raises(ValueError, match=r"expected example-a or seed:N"):
            program_by_name(bad, params=DEFAULT)


def test_the_environment_is_restored(monkeypatch):
    monkeypatch.delenv("OPENFPGALOADER", raising=False)
    monkeypatch.setenv("YOSYS", "mine")
    with board._environment(OPENFPGALOADER="true", YOSYS="theirs"):
        assert os.environ["OPENFPGALOADER"] == "true" and os.environ["YOSYS"] == "theirs"
    assert "OPENFPGALOADER" not in os.environ and os.environ["YOSYS"] == "mine"


def test_an_unwritable_build_folder_is_an_error_not_a_traceback(capsys, tmp_path):
    pytest.importorskip("amaranth_boards", reason="amaranth-boards is in the synth extra (make bitstream)")
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    assert board.main(["--no-build", "--out", str(blocker / "bitstream")]) == 1
    assert str(blocker) in capsys.readouterr().err


def test_a_program_compiled_for_one_machine_refuses_a_core_of_another():
    """Example A compiled for the default machine (T = 4) on a core built for T = 8: refused
    before anything is built, naming both machines (issue 24, item 11)."""
    t8 = machines.parse("t8")
    with pytest.raises(ValueError) as refused:
        BoardLogic.check(_example_a(), t8)
    assert str(refused.value).startswith("BoardLogic: running example A was compiled for the default "
                                         "machine, but the core is built for the machine T=8 LANES=8")
