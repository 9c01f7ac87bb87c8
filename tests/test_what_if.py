"""examples/what_if.py: the decoupled rule with hazards released at the first written row, or
with engines that overlap their own instructions, on hand-worked programs; unchanged, it is the
reference machine's rule."""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import what_if

from compiler.schedule import cycles_of
from sim import spec
from sim.asm import build
from sim.bench import random_program
from sim.spec import Params

DECOUPLED = Params(OVERLAP=2)
build = partial(build, params=DECOUPLED)


def test_the_constants_the_figures_below_use():
    """Instruction i enters at 10 + 3 i, may go 2 later; an LD has 2 cycles of overhead before
    its beats; RQ of 16 words: 14 cycles, 4 of reads, its writes the last 4."""
    assert (spec.OVERLAP_FRONTEND_CYCLES, spec.ENTER_CYCLES, spec.ENTER_DISPATCH_CYCLES,
            spec.LD_OVERHEAD, spec.STOP_CYCLES) == (10, 3, 2, 2, 1)


def test_rows_release_a_read_after_write_at_the_first_written_row():
    """LD of 16 words at 12 (6 cycles: its 4 beats written from 14); the RQ of them waits for
    its end on the machine: 18 + 14 + 1 = 33. Released at the first row (14), the RQ goes at its
    own earliest, 15: 15 + 14 + 1 = 30. Different engines: overlapping engines change nothing."""
    code = [build("LD", dst=0, src=0, len=16), build("RQ", dst=16, src=0, len=16, m=1, s=1, relu=0),
            build("HALT")]
    assert {v: what_if.cycles(code, v) for v in what_if.VARIANTS} == {
        "machine": 33, "rows": 30, "engines": 33, "both": 30}
    assert what_if.cycles(code, "rows", after=4) == 18 + 14 + 1     # released at its end again
    assert what_if.cycles(code, "rows", after=10**6) == 33           # and never later
    in_place = [code[0], build("RQ", dst=0, src=0, len=16, m=1, s=1, relu=0), code[2]]
    assert what_if.cycles(in_place, "rows") == 33        # a write after write too: not released early


def test_the_dma_takes_its_next_instruction_after_its_last_beat():
    """Three LDs of 64 words (16 beats, 18 cycles each): one after another, 12 + 3 x 18 + 1 =
    67; overlapped, each goes when the one before has moved its last beat (its end less 2): the
    second at 28, the third at 44, ending 62: 63."""
    code = [build("LD", dst=64 * k, src=64 * k, len=64) for k in range(3)] + [build("HALT")]
    assert [what_if.cycles(code, v) for v in what_if.VARIANTS] == [67, 67, 63, 63]


def test_an_engine_takes_its_next_instruction_as_the_last_one_writes():
    """Two RQs of 16 words reading the same words: the second goes at 12 + 14 = 26 on the
    machine (41 with the stop); overlapped, when the first starts its write window, 12 + 10 =
    22 (its reads are over at 16, and its window [32, 36) follows the first's [22, 26)): 37."""
    code = [build("RQ", dst=64 + 16 * k, src=0, len=16, m=1, s=1, relu=0) for k in range(2)] + [build("HALT")]
    assert [what_if.cycles(code, v) for v in what_if.VARIANTS] == [41, 41, 37, 37]


@pytest.mark.parametrize("seed", range(6))
def test_unchanged_it_is_the_reference_rule(seed):
    code = random_program(30, seed=seed, params=DECOUPLED)
    assert what_if.cycles(code, "machine") == cycles_of(code, DECOUPLED)


@pytest.mark.parametrize("seed", range(3))
def test_unchanged_it_is_the_reference_rule_of_the_machine_given(seed):
    """On ResNet-8's machine (T = 8, LANES = 8), as on the default one."""
    code = random_program(30, seed=seed, params=what_if.RESNET8)
    assert what_if.cycles(code, "machine", params=what_if.RESNET8) == cycles_of(code, what_if.RESNET8)
    assert what_if.RESNET8.T == 8 and what_if.RESNET8.OVERLAP == 2


def test_an_unknown_variant_is_refused():
    with pytest.raises(ValueError, match="'pipelined' is not one of"):
        what_if.cycles([build("HALT")], "pipelined")


def test_the_cli_prints_the_table(capsys):
    assert what_if.main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| program | machine | rows | engines | both |")
    assert "| seeds 100-111 | 4,291 |" in out           # the studies' cycles (docs/studies.md section 4)
    with pytest.raises(SystemExit):
        what_if.main(["--after", "-1"])


@pytest.mark.slow
def test_the_resnet8_row_performance_md_quotes():
    """ResNet-8 at T = 8 under each variant (python examples/what_if.py --resnet8): the cycles
    docs/guide/performance.md quotes. Slow: compiling ResNet-8 takes about 8 s (make test-all)."""
    pytest.importorskip("torch")
    rows = dict(what_if.table(resnet8=True))
    got = tuple(rows["ResNet-8 T8"][v] for v in what_if.VARIANTS)
    text = (Path(__file__).resolve().parents[1] / "docs" / "guide" / "performance.md").read_text()
    assert f"{got[0]:,}, {got[1]:,}, {got[2]:,} and {got[3]:,} cycles" in text, got
