"""cosim/writers.py: the last writer of every word, against an oracle that runs the reference
machine's semantics (sim.machine.apply) instruction by instruction on two random fills of
the memories and sees which words each instruction changes."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from compiler.workloads.seedtable import compile_seed
from cosim import stress
from cosim.jobs import Job
from cosim.writers import NOT_WRITTEN, Writers, instructions, text
from sim import spec
from sim.asm import build
from sim.machine import apply
from sim.spec import DEFAULT

build = partial(build, params=DEFAULT)
"""This file's programs are the default machine's (sim.asm takes the machine explicitly)."""


class _Stores(np.ndarray):
    """A memory that records the addresses the reference's semantics store to (``stored``)."""

    def __setitem__(self, key, value) -> None:
        self.stored.update(np.arange(len(self))[key].ravel().tolist())
        super().__setitem__(key, value)


def _watched(memory: np.ndarray) -> _Stores:
    watched = memory.view(_Stores)
    watched.stored = set()
    return watched


def oracle(program, stop: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(spad, ext) last writers: an instruction writes a word if applying it changes the word
    on either of two random fills, or if its semantics store to the word (a store of the value
    already there: an LN of one value whose bias is its destination writes the bias back)."""
    rng = np.random.default_rng(seed)
    spad = np.full(DEFAULT.SPAD_WORDS, NOT_WRITTEN, np.int32)
    ext = np.full(DEFAULT.EXT_WORDS, NOT_WRITTEN, np.int32)
    for pc, ins in enumerate(instructions(program)[:stop]):
        if ins is None:
            continue
        for _ in range(2):
            s0 = rng.integers(0, 1 << 32, DEFAULT.SPAD_WORDS, dtype=np.uint32)
            e0 = rng.integers(0, 1 << 32, DEFAULT.EXT_WORDS, dtype=np.uint32)
            if ins.op == "GATHER":   # a row number in its table (a random one stops it: BAD_INDEX)
                s0[ins.idx] = rng.integers(0, ins.rows)
            s1, e1 = _watched(s0.copy()), _watched(e0.copy())
            apply(ins, s1, e1)
            spad[(s1 != s0) | np.isin(np.arange(len(s0)), list(s1.stored))] = pc
            ext[(e1 != e0) | np.isin(np.arange(len(e0)), list(e1.stored))] = pc
    return spad, ext


def check_against_oracle(job) -> None:
    stop = job.expected(DEFAULT).error_pc
    writers = Writers.replay(job.program, stop, DEFAULT)
    spad, ext = oracle(job.program, stop)
    assert np.array_equal(writers.spad, spad), np.flatnonzero(writers.spad != spad)[:10]
    assert np.array_equal(writers.ext, ext), np.flatnonzero(writers.ext != ext)[:10]


@pytest.mark.parametrize("seed", [100, 103, 107])
def test_compiled_programs_match_the_oracle(seed):
    run = compile_seed(seed, params=DEFAULT)
    check_against_oracle(Job.of_program(run.program, run.test_inputs, f"seed {seed}"))


def test_stress_programs_match_the_oracle():
    """Strided and overlapping matmuls, every instruction, illegal stops, undecodable words."""
    mms = 0
    for sp in stress.programs(0, 40, DEFAULT):
        check_against_oracle(sp.job)
        mms += sum(ins is not None and ins.op == "MM" for ins in instructions(sp.job.program))
    assert mms > 20


def test_text_is_the_disassembly_on_single_spaces():
    assert text(build("ST", src=93, dst=147, len=42)) == "ST src=93 dst=147 len=42"
    assert text(build("HALT")) == "HALT"
    writers = Writers.replay([build("LD", dst=0, src=0, len=2), build("HALT")], 1, DEFAULT)
    assert writers.instruction(0) == "pc 0: LD dst=0 src=0 len=2"
    assert writers.of("spad", 1) == 0
    assert writers.of("spad", 2) == writers.of("ext", 0) == NOT_WRITTEN


def test_words_that_do_not_decode_write_nothing():
    words = [*build("LD", dst=0, src=0, len=2).encode(), spec.UNKNOWN_OPCODES[-1], 0, 0, 0]
    writers = Writers.replay(words, 2, DEFAULT)
    assert writers.program[1] is None and writers.instruction(1) == "pc 1: (does not decode)"
    assert writers.of("spad", 0) == 0
