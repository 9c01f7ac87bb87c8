"""cosim/tb.py and the harness (cosim/harness.py) through cosim.api.run_programs: a batch of
programs back to back on each simulator.

The batch checks what the harness does between programs: the scratchpad keeps its words
through reset (docs/GA2.md section 2: a program that stores the scratchpad right after one that
filled it reads those words, and the reference machine, started from the scratchpad the RTL
started from, agrees), the rest of the instruction memory does not matter (a short program
without HALT stops with NO_HALT at its own length, after a longer one, loaded by backdoor or
through the host's port), programs loaded through the host's instruction-memory port run as
those loaded by backdoor, errors come back with their code and pc, a program that cannot finish
within its cycle limit is reported as such without hanging, and the next program runs normally
after it.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from compiler.workloads.seedtable import compile_seed
from cosim.api import compare, run_programs
from cosim.jobs import Job
from sim import spec
from sim.asm import build
from sim.spec import DEFAULT, ErrorCode

build = partial(build, params=DEFAULT)
"""This file's programs are the default machine's (sim.asm takes the machine explicitly)."""

WORDS = DEFAULT.SPAD_WORDS


def batch() -> list[Job]:
    image = np.random.default_rng(5).integers(-(1 << 31), 1 << 31, DEFAULT.EXT_WORDS, dtype=np.int64)
    fill = [build("LD", dst=0, src=7, len=WORDS), build("ST", src=100, dst=5001, len=300), build("HALT")]
    dump = [build("ST", src=0, dst=0, len=WORDS), build("HALT")]
    seed = compile_seed(104, params=DEFAULT)
    compiled = (seed.program.code, seed.program.ext_image(seed.test_inputs))
    unknown = max(spec.UNKNOWN_OPCODES)                 # not an instruction (sim.spec)
    bad_opcode = [*build("LD", dst=0, src=0, len=3).encode(), 0x0000_00F0 | unknown, 0, 0, 0,
                  *build("HALT").encode()]
    no_halt = [build("LD", dst=1, src=2, len=5)]
    return [
        Job(fill, image, "fill the scratchpad"),
        Job(dump, [], "store the scratchpad"),
        Job(*compiled, "seed 104"),
        Job(bad_opcode, image, "unknown opcode"),
        Job(no_halt, image, "no HALT"),
        Job(*compiled, "seed 104, limit 20", limit=20),
        Job(fill, image, "fill again", via_port=True),
        Job(dump, [], "store the scratchpad again"),
        Job(*compiled, "seed 104 through the port", via_port=True),
        Job(bad_opcode, image, "unknown opcode through the port", via_port=True),
        Job(no_halt, image, "no HALT through the port", via_port=True),
    ]


def test_batch_back_to_back(simulator):
    jobs = batch()
    runs = run_programs(jobs, simulator)
    assert [r.name for r in runs] == [j.name for j in jobs]
    found = {job.name: compare(job, run) for job, run in zip(jobs, runs, strict=True)}
    limited = found.pop("seed 104, limit 20")
    assert found == {name: [] for name in found}, found
    cycles = jobs[2].expected(DEFAULT).counters.cycles
    assert limited[0].startswith(f"no stop within the cycle limit of 20 cycles (the reference stops after "
                                 f"{cycles})")
    assert not runs[5].finished and runs[5].waited == 20
    by_name = dict(zip([j.name for j in jobs], runs, strict=True))
    filled = jobs[0].ext_image(DEFAULT)[7:7 + WORDS]
    for name in ("store the scratchpad", "store the scratchpad again"):     # what "fill" loaded
        assert np.array_equal(by_name[name].ext[:WORDS], filled), name
        assert np.array_equal(by_name[name].spad_before, filled), name
    for suffix in ("", " through the port"):
        bad, no_halt = by_name["unknown opcode" + suffix], by_name["no HALT" + suffix]
        assert (bad.error_code, bad.error_pc) == (ErrorCode.BAD_OPCODE, 1)
        assert (no_halt.error_code, no_halt.error_pc) == (ErrorCode.NO_HALT, 1)
        compiled = by_name["seed 104" + suffix]
        assert compiled.counters.cycles == cycles and compiled.error_pc == jobs[2].length - 1
        assert np.array_equal(compiled.ext, by_name["seed 104"].ext)
    assert [r.timing_fault for r in runs] == [0] * len(runs)



def test_the_reference_starts_from_the_scratchpad_the_rtl_started_from(icarus):
    """A program that reads words it did not write, run after one that wrote them: the RTL reads
    the earlier program's words (reset does not clear the scratchpad); the reference machine,
    given the scratchpad the RTL started from, agrees; from a zero scratchpad it would not (the
    comparison is not vacuous). By hand: "write" leaves spad[40..43] = 5, -3, 120, 7; "read"
    adds spad[40..43] to itself and stores it: 10, -6, 127 (saturated), 14."""
    write = [build("LD", dst=40, src=0, len=4), build("HALT")]
    read = [build("VADD", dst=60, src1=40, src2=40, len=4), build("ST", src=60, dst=100, len=4),
            build("HALT")]
    jobs = [Job(write, [5, -3, 120, 7], "write"), Job(read, [], "read", via_port=True)]
    runs = run_programs(jobs, icarus)
    assert [int(v) for v in runs[1].ext[100:104].astype(np.int32)] == [10, -6, 127, 14]
    assert compare(jobs[1], runs[1]) == []
    runs[1].spad_before = None
    assert compare(jobs[1], runs[1])[0].startswith("ext: 4 words differ; first [100] RTL 0x0000000a (10), "
                                                   "reference 0x00000000 (0)")
