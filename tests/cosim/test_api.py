"""cosim/api.py: compare() against the reference machine (on made-up RTL runs), and the
RTL runs themselves through run_programs (tests/cosim/test_tb.py)."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from cosim import api, harness
from cosim.api import compare, run_programs
from cosim.jobs import Job, RtlRun, as_jobs
from sim.asm import build
from sim.machine import Counters
from sim.spec import DEFAULT, ErrorCode, Params

build = partial(build, params=DEFAULT)
"""This file's programs are the default machine's (sim.asm takes the machine explicitly)."""

PROGRAM = [build("LD", dst=4, src=0, len=6), build("RQ", dst=20, src=4, len=6, m=1 << 23, s=23, relu=0),
           build("ST", src=20, dst=50, len=6), build("HALT")]
JOB = Job(PROGRAM, [3, -7, 100, 200, -300, 5], "example")


def exact_run(job: Job = JOB) -> RtlRun:
    """An RTL run that agrees with the reference in everything."""
    want = job.expected(DEFAULT)
    return RtlRun(name=job.name, simulator="made-up", params=DEFAULT, finished=True,
                  limit=job.cycle_limit(DEFAULT),
                  waited=want.counters.cycles, ext=want.ext.copy(), spad=want.spad.copy(),
                  counters=Counters(*want.counters.as_tuple()), error=int(want.error_code != 0),
                  error_code=int(want.error_code), error_pc=want.error_pc, timing_fault=0,
                  ext_x=np.zeros(DEFAULT.EXT_WORDS, bool), spad_x=np.zeros(DEFAULT.SPAD_WORDS, bool))


def test_exact_run_has_no_differences():
    assert compare(JOB, exact_run()) == []
    assert compare((PROGRAM, JOB.ext), exact_run()) == []


def test_memory_differences_name_the_first_addresses_and_values_and_their_writers():
    """By hand: ext 50..55 is the ST's (pc 2), spad 20..25 the RQ's (pc 1); nothing writes
    spad 300. A hand-written job has no compiled program: no tensor is named."""
    run = exact_run()
    run.ext[52] ^= 1
    run.spad[21] = 0xFFFFFF80
    run.spad[300] = 9
    found = compare(JOB, run)
    assert found[0] == "ext: 1 word differs; first [52] RTL 0x00000065 (101), reference 0x00000064 (100)"
    assert found[1] == "ext[52]: last written by pc 2: ST src=20 dst=50 len=6"
    assert found[2].startswith("spad: 2 words differ; first [21] RTL 0xffffff80 (-128), "
                               "reference 0xfffffff9 (-7)")
    assert "[300] RTL 0x00000009 (9), reference 0x00000000 (0)" in found[2]
    assert found[3] == "spad[21]: last written by pc 1: RQ dst=20 src=4 len=6 m=8388608 s=23 relu=0"
    assert len(found) == 4      # the earliest writer (pc 1) is named already
    run = exact_run()
    run.spad[300] = 9
    assert compare(JOB, run)[1] == ("spad[300]: no instruction before the stop at pc 3 writes it (the "
                                    "reference keeps the value it held when the program started)")


def test_the_earliest_differing_write_gets_a_line_when_no_other_names_it():
    """By hand: the LD (pc 0) writes spad 30..35, the RQ (pc 1) 20..25 from there, the ST
    (pc 2) ext 50..55. The first differing words are ext[51] and spad[21]; spad[31], written
    earlier than both, gets the last line."""
    program = [build("LD", dst=30, src=0, len=6), build("RQ", dst=20, src=30, len=6, m=1 << 23, s=23, relu=0),
               build("ST", src=20, dst=50, len=6), build("HALT")]
    job = Job(program, [3, -7, 100, 200, -300, 5], "earliest")
    run = exact_run(job)
    run.spad[31] ^= 2
    run.spad[21] ^= 2
    run.ext[51] ^= 2
    found = compare(job, run)
    assert found[1] == "ext[51]: last written by pc 2: ST src=20 dst=50 len=6"
    assert found[3] == "spad[21]: last written by pc 1: RQ dst=20 src=30 len=6 m=8388608 s=23 relu=0"
    assert found[4:] == ["earliest differing write: spad[31]: last written by pc 0: LD dst=30 src=0 len=6"]
    run.spad[31] ^= 2          # now the earliest writer is pc 1, named above: no last line
    assert len(compare(job, run)) == 4
    run = exact_run(job)
    run.ext[0] ^= 1            # the host's image, never written
    assert compare(job, run)[1] == ("ext[0]: no instruction before the stop at pc 3 writes it (the reference "
                                    "keeps the host's image's value)")


def test_words_between_the_rows_of_a_matmul_are_not_its_writes():
    """MM writes M rows of N words, ldc apart: the words between them keep their last writer
    (here the LD at pc 0), although they lie in the MM's dst span."""
    program = [build("LD", dst=0, src=0, len=40),
               build("MM", dst=10, A=0, B=4, M=2, K=2, N=2, tb=0, lda=2, ldb=2, ldc=5),
               build("HALT")]
    job = Job(program, list(range(1, 41)), "strided")
    for address, writer in ((10, 1), (11, 1), (12, 0), (14, 0), (15, 1), (16, 1), (17, 0)):
        run = exact_run(job)
        run.spad[address] ^= 1
        assert compare(job, run)[1].startswith(f"spad[{address}]: last written by pc {writer}:"), address


def test_an_illegal_program_names_writers_before_its_stop_only():
    """The ST at pc 2 reaches past the external memory: the machine stops there, so the LD at
    pc 3, which would write spad 0..1, never runs."""
    program = [build("LD", dst=0, src=0, len=4), build("LD", dst=2, src=0, len=4),
               build("ST", src=0, dst=DEFAULT.EXT_WORDS - 2, len=4), build("LD", dst=0, src=0, len=2),
               build("HALT")]
    job = Job(program, [1, 2, 3, 4], "stops at pc 2")
    assert (job.expected(DEFAULT).error_code, job.expected(DEFAULT).error_pc) == (ErrorCode.EXT_RANGE, 2)
    for address, line in ((1, "pc 0: LD dst=0 src=0 len=4"), (3, "pc 1: LD dst=2 src=0 len=4")):
        run = exact_run(job)
        run.spad[address] ^= 1
        assert compare(job, run)[1] == f"spad[{address}]: last written by {line}"


def test_unresolved_words_are_differences():
    run = exact_run()
    run.spad_x[7] = True
    assert compare(JOB, run) == ["spad: 1 word differs; first [7] RTL X, reference 0x000000c8 (200)",
                                 "spad[7]: last written by pc 0: LD dst=4 src=0 len=6"]


def test_counters_and_stop():
    run = exact_run()
    run.counters.vpu += 2
    run.error_code, run.error_pc, run.error = 5, 1, 1
    found = compare(JOB, run)
    assert found[0] == ("stop: RTL error_code 5 (destination partly overlaps a source) at pc 1, "
                        "reference 0 (no error) at pc 3")
    assert found[1] == "error output: RTL 1, reference 0"
    assert found[2] == f"counter vpu: RTL {run.counters.vpu}, reference {run.counters.vpu - 2} (+2)"


def test_a_timing_fault_is_a_difference_even_when_all_else_matches():
    run = exact_run()
    run.timing_fault = 1
    assert compare(JOB, run) == [
        "timing_fault: a unit's done and the execute stage's count disagreed (the spec latency of some "
        "instruction is not what the RTL does)"]
    run.timing_fault = -1
    assert compare(JOB, run) == ["timing_fault: RTL X, expected 0"]
    run.counters.mxu += 1      # after the stop, before the counters
    run.error = 1
    mxu = run.counters.mxu
    assert compare(JOB, run) == ["error output: RTL 1, reference 0", "timing_fault: RTL X, expected 0",
                                 f"counter mxu: RTL {mxu}, reference {mxu - 1} (+1)"]


def test_an_output_that_moved_after_the_stop_is_a_difference():
    """cosim/harness.py watches the held outputs HOLD_CYCLES cycles after reading them; bit k of
    drift is HELD[k]. A run that never stopped is not judged on it (its counters still count)."""
    run = exact_run()
    run.drift = 1 << harness.HELD.index("error_pc") | 1 << harness.HELD.index("count_mxu")
    assert compare(JOB, run) == [
        f"outputs that moved after the stop: error_pc, count_mxu (within {harness.HOLD_CYCLES} cycles after "
        "the harness read them; they hold until the next reset: hw/README.md)"]
    run.drift = -1
    assert compare(JOB, run)[0].startswith("outputs that moved after the stop: unknown (X)")
    run.finished = False
    assert not any("moved after the stop" in line for line in compare(JOB, run))


def test_a_run_that_did_not_stop_says_so_first():
    run = exact_run()
    run.finished = False
    run.counters_x = ("cycles",)
    found = compare(JOB, run)
    assert found[0].startswith(f"no stop within the cycle limit of {run.limit} cycles (the reference stops "
                               f"after {JOB.expected(DEFAULT).counters.cycles})")
    assert found[1] == f"counter cycles: RTL X, reference {JOB.expected(DEFAULT).counters.cycles}"


def test_compare_checks_its_arguments():
    with pytest.raises(TypeError, match=r"must be a cosim\.jobs\.RtlRun .* got list \(run_programs returns"):
        compare(JOB, [exact_run()])
    with pytest.raises(TypeError, match="example: the external-memory image must hold integers"):
        compare(Job(PROGRAM, [0.5], "example"), exact_run())


def test_a_bad_job_is_refused_before_the_simulator_starts(icarus):
    with pytest.raises(ValueError, match=r"job 1 \(wide\): the external-memory image\[2\] = -2147483649"):
        run_programs([(PROGRAM, None), (PROGRAM, [0, 0, -(1 << 31) - 1], "wide")], icarus)


def test_no_image_and_no_program_on_the_rtl(icarus):
    jobs = [(PROGRAM, None), ([], None, "empty"), ([build("HALT")], None)]
    runs = run_programs(jobs, icarus)
    assert [compare(job, run) for job, run in zip(jobs, runs, strict=True)] == [[], [], []]
    assert run_programs([], icarus) == []


def test_a_compiled_program_that_stops_with_an_error_is_a_difference():
    """Both machines agree that the program stops with BAD_FIELD: for a compiled graph (one that
    must halt) that is no PASS."""
    bad = [build("SM", dst=100, src=0, len=DEFAULT.SM_MAX_LEN + 1, strict=False), build("HALT")]
    job = Job(bad, None, "graph", halts=True)
    run = exact_run(job)
    assert (run.error_code, run.error_pc) == (ErrorCode.BAD_FIELD, 0)
    found = compare(job, run)
    assert found == ["the reference machine stops with error 2 (field out of its legal range) at pc 0 "
                     "(SM field len=65 is outside 1..64): a compiled program must end at its HALT"]
    assert compare(Job(bad, None, "hand-written"), exact_run(job)) == []


def test_jobs_run_on_the_verilog_of_the_machine_they_were_made_for():
    """A compiled program's job names its machine; cosim.api takes that machine's Verilog
    (build/machines/<tag>/) unless given one; hand-written jobs and mixed ones take the default
    (mixed ones are then refused by as_jobs, naming both)."""
    t8 = Params(T=8, LANES=8)
    made = Job([build("HALT")], None, "t8", machine=t8)
    assert api.machine_of([made, (PROGRAM, None)]) == t8
    assert api.machine_of([(PROGRAM, None)]) == DEFAULT
    mixed = [made, Job([build("HALT")], None, "t2", machine=Params(T=2))]
    assert api.machine_of(mixed) == DEFAULT
    with pytest.raises(ValueError, match=r"job 0 \(t8\): the program was made for the machine T=8 "):
        as_jobs(mixed, DEFAULT)
