"""cosim/tb.py and the harness (cosim/harness.py) through cosim.api.run_programs: a batch of
programs back to back on each simulator.

The batch checks what the harness does between programs: the scratchpad is zeroed (a program
that stores the scratchpad right after one that filled it reads zeros), the rest of the
instruction memory is cleared (a short program without HALT stops with NO_HALT at its own
length), errors come back with their code and pc, a program that cannot finish within its
cycle limit is reported as such without hanging, and the next program runs normally after it.
"""

from __future__ import annotations

import numpy as np

from compiler.testing.seedtable import compile_seed
from cosim.api import compare, run_programs
from cosim.jobs import Job
from sim.asm import build
from sim.spec import DEFAULT, ErrorCode

WORDS = DEFAULT.SPAD_WORDS


def batch() -> list[Job]:
    image = np.random.default_rng(5).integers(-(1 << 31), 1 << 31, DEFAULT.EXT_WORDS, dtype=np.int64)
    fill = [build("LD", dst=0, src=7, len=WORDS), build("ST", src=100, dst=5001, len=300), build("HALT")]
    dump = [build("ST", src=0, dst=0, len=WORDS), build("HALT")]
    seed = compile_seed(104)
    compiled = (seed.program.code, seed.program.ext_image(seed.test_inputs))
    bad_opcode = [*build("LD", dst=0, src=0, len=3).encode(), 0x0000_00F9, 0, 0, 0,
                  *build("HALT").encode()]
    return [
        Job(fill, image, "fill the scratchpad"),
        Job(dump, [], "store the scratchpad"),
        Job(*compiled, "seed 104"),
        Job(bad_opcode, image, "unknown opcode"),
        Job([build("LD", dst=1, src=2, len=5)], image, "no HALT"),
        Job(*compiled, "seed 104, limit 20", limit=20),
        Job(fill, image, "fill again"),
    ]


def test_batch_back_to_back(simulator):
    jobs = batch()
    runs = run_programs(jobs, simulator)
    assert [r.name for r in runs] == [j.name for j in jobs]
    found = {job.name: compare(job, run) for job, run in zip(jobs, runs, strict=True)}
    limited = found.pop("seed 104, limit 20")
    assert found == {name: [] for name in found}, found
    cycles = jobs[2].expected().counters.cycles
    assert limited[0].startswith(f"no stop within the cycle limit of 20 cycles (the reference stops after "
                                 f"{cycles})")
    assert not runs[5].finished and runs[5].waited == 20
    by_name = dict(zip([j.name for j in jobs], runs, strict=True))
    assert not by_name["store the scratchpad"].ext.any()
    bad, no_halt = by_name["unknown opcode"], by_name["no HALT"]
    assert (bad.error_code, bad.error_pc) == (ErrorCode.BAD_OPCODE, 1)
    assert (no_halt.error_code, no_halt.error_pc) == (ErrorCode.NO_HALT, 1)
    compiled = by_name["seed 104"]
    assert compiled.counters.cycles == cycles and compiled.error_pc == jobs[2].length - 1
    assert [r.timing_fault for r in runs] == [0] * len(runs)

