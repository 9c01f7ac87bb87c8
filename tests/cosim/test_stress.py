"""cosim/stress.py: the programs it draws from the ISA spec, and a short run on each simulator."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest

from cosim import runner, stress
from sim import spec
from sim.asm import Instruction
from sim.spec import DEFAULT, ErrorCode


@pytest.fixture(scope="module")
def programs() -> list[stress.StressProgram]:
    return stress.generate(1, 60)


def test_a_program_depends_on_its_seed_only():
    one, again = stress.Generator(37).program(), stress.Generator(37).program()
    assert list(one.job.words) == list(again.job.words)
    assert (one.job.ext_image() == again.job.ext_image()).all()
    assert one.job.name == "seed 37"


def test_every_ending_happens_where_intended(programs):
    for prog in programs:
        want = "NONE" if prog.ending == stress.HALT else prog.ending
        assert prog.ending == stress.ENDINGS[prog.seed % len(stress.ENDINGS)]
        assert prog.job.expected().error_code.name == want, (prog.seed, prog.job.expected().detail)
    assert {p.job.expected().error_code for p in programs} == set(ErrorCode)


def test_the_body_before_the_ending_is_legal(programs):
    for prog in programs:
        stop = prog.job.expected()
        assert stop.error_pc >= 0
        if isinstance(prog.job.program[0], Instruction):
            for ins in prog.job.program[:stop.error_pc]:
                assert spec.check(ins.spec, ins.fields, DEFAULT)[0] is ErrorCode.NONE


def test_coverage_of_sixty_programs(programs):
    total = Counter()
    for prog in programs:
        total.update(prog.features)
    cases = ("MM tb=1", "MM tb=1, odd strides", "MM K=1", "MM K=K_MAX", "MM output rows overlap", "SM len=1",
             "SM len=SM_MAX_LEN", "RQ in place", "VADD in place")
    for feature in (*stress.KINDS, *cases):
        assert total[feature] > 0, feature
    lines = stress.coverage(programs, DEFAULT)
    assert lines[0].startswith("60 programs (seeds 1..60), ")
    assert lines[3] == ("stops (reference): HALT 24, BAD_OPCODE 6, BAD_FIELD 6, SPAD_RANGE 6, EXT_RANGE 6, "
                        "OVERLAP 6, NO_HALT 6")
    assert stress.coverage(programs[:1], DEFAULT)[0].startswith("1 program (seed 1), ")


def test_listing_shows_an_unknown_opcode():
    prog = next(p for p in stress.generate(4, 1))
    assert prog.ending == "BAD_OPCODE"
    text = stress.listing(prog.job.program)
    assert "???? opcode" in text and text.splitlines()[-1].endswith("HALT")


def test_short_stress_run(simulator):
    command = [sys.executable, "-m", "cosim", "stress", "--n", "20", "--seed", "1", "--sim", simulator]
    done = subprocess.run(command, capture_output=True, text=True, cwd=runner.ROOT, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{simulator:<10} PASS: 20 programs match the reference (memory, all five "
                               "counters, error code and pc), ")
    assert "stops (reference): HALT 8, BAD_OPCODE 2, BAD_FIELD 2" in done.stdout


def test_rerun_lines_carry_every_option_that_changes_the_run():
    assert stress.rerun_lines([5], "icarus") == [
        "rerun a failing program alone (add --show to print its listing):",
        "    make stress SEED=5 N=1 SIM=icarus    # or: python -m cosim stress --seed 5 --n 1 --sim icarus"]
    assert stress.rerun_lines([5, 10], "both", ["--mutant", "rq-round", "--verilog", "my dir/x.v"])[1:] == [
        "    python -m cosim stress --seed 5 --n 1 --sim both --mutant rq-round --verilog 'my dir/x.v'",
        "    python -m cosim stress --seed 10 --n 1 --sim both --mutant rq-round --verilog 'my dir/x.v'"]


@pytest.mark.rtl
def test_the_rerun_command_of_a_mutant_fails_again(icarus):
    command = [sys.executable, "-m", "cosim", "stress", "--n", "6", "--seed", "5", "--sim", icarus,
               "--mutant", "rq-round"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=runner.ROOT, timeout=900)
    assert done.returncode == 1, done.stdout + done.stderr
    hint = done.stdout.splitlines().index("rerun a failing program alone (add --show to print its listing):")
    rerun = done.stdout.splitlines()[hint + 1].split()
    assert rerun[:3] == ["python", "-m", "cosim"] and rerun[-2:] == ["--mutant", "rq-round"]
    again = subprocess.run([sys.executable, *rerun[1:]], capture_output=True, text=True, cwd=runner.ROOT,
                           timeout=900)
    assert again.returncode == 1, again.stdout + again.stderr
    assert again.stdout.splitlines()[1] == f"{icarus:<10} FAIL: 1 of 1 program differs from the reference"
