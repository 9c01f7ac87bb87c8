"""cosim/jobs.py: jobs, the reference's expectations, the batch and results files."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from cosim import jobs
from cosim.jobs import Job, as_job, as_jobs, read_jobs, reference, write_jobs
from sim.asm import build, encode_program
from sim.spec import DEFAULT, ErrorCode, Params

build = partial(build, params=DEFAULT)
"""This file's programs are the default machine's (sim.asm takes the machine explicitly)."""

PROGRAM = [build("LD", dst=0, src=0, len=8), build("ST", src=0, dst=100, len=8), build("HALT")]


def test_as_job_accepts_tuples_and_names_by_index():
    job = as_job((PROGRAM, np.arange(8)), 3)
    assert job.name == "job 3" and job.length == 3
    assert as_job((PROGRAM, [1, 2], "mine")).name == "mine"
    with pytest.raises(TypeError, match=r"job 5: expected a cosim\.jobs\.Job"):
        as_job([PROGRAM], 5)


def test_words_of_instructions_and_of_raw_programs():
    job = Job(PROGRAM, [])
    assert list(job.words) == encode_program(PROGRAM)
    raw = Job([0xFFFFFFF0, 0, 0, 0], [])
    assert raw.words.dtype == np.uint32 and raw.length == 1


def test_ext_image_pads_and_refuses_oversize():
    image = Job(PROGRAM, [-1, 5]).ext_image(DEFAULT)
    assert image.dtype == np.uint32 and len(image) == DEFAULT.EXT_WORDS
    assert image[0] == 0xFFFFFFFF and image[1] == 5 and not image[2:].any()
    with pytest.raises(ValueError, match="has 65537 words, more than the 65536 that fit"):
        Job(PROGRAM, np.zeros(DEFAULT.EXT_WORDS + 1, np.int64), name="big").ext_image(DEFAULT)


def test_no_image_means_all_zeros_as_for_the_machine():
    job = as_job((PROGRAM, None))
    assert not job.ext_image(DEFAULT).any() and len(job.ext_image(DEFAULT)) == DEFAULT.EXT_WORDS
    assert job.expected(DEFAULT).error_code is ErrorCode.NONE
    assert as_job(([], None)).expected(DEFAULT).error_code is ErrorCode.NO_HALT


@pytest.mark.parametrize(("bad", "error", "message"), [
    ((PROGRAM, [1.5]), TypeError, r"job 1: the external-memory image must hold integers, got float64"),
    ((PROGRAM, [1 << 32], "big"), ValueError, r"job 1 \(big\): the external-memory image\[0\] = 4294967296 "
                                               r"does not fit 32 bits"),
    ((PROGRAM, np.zeros((2, 3), np.int64)), ValueError, "job 1: the external-memory image must be one-dim"),
    ((PROGRAM, "0123"), TypeError, "job 1: the external-memory image must be a list or 1-D array"),
    (("HALT", None), TypeError, r"job 1: the program must be .* got str \(sim\.asm\.assemble"),
    (([1, 2, 3], None), ValueError, "job 1: the program has 3 words, not a multiple of 4"),
    (([None] * 4, None), TypeError, r"job 1: the program\[0\] = None is not an integer"),
    (([*PROGRAM[:1], 15, 0, 0, 0], None), TypeError, "job 1: the program mixes Instructions and words"),
    (([build("HALT")] * 4097, None), ValueError, "job 1: the program's 4097 instructions do not fit IMEM"),
    (Job(PROGRAM, None, "lim", limit=0), ValueError, r"job 1 \(lim\): limit=0: a cycle limit is a positive"),
    ((PROGRAM, None, "a", "b"), TypeError, "job 1: expected a cosim.jobs.Job or .* got a tuple of 4"),
    (PROGRAM, TypeError, r"job 1: .* got list \(a list of jobs holds tuples"),
])
def test_bad_jobs_are_named(bad, error, message):
    with pytest.raises(error, match=message):
        as_jobs([(PROGRAM, None), bad], params=DEFAULT)


def test_jobs_must_be_a_list():
    with pytest.raises(TypeError, match="jobs must be a list of jobs"):
        as_jobs(Job(PROGRAM, None), params=DEFAULT)


def test_reference_reports_halt_pc_and_errors():
    done = reference(PROGRAM, np.arange(8), params=DEFAULT)
    assert done.error_code is ErrorCode.NONE and done.error_pc == 2
    assert list(done.ext[100:108]) == list(range(8))
    stopped = reference(PROGRAM[:2], [], params=DEFAULT)
    assert stopped.error_code is ErrorCode.NO_HALT and stopped.error_pc == 2
    assert stopped.counters.cycles > 0 and "no HALT" in stopped.detail


def test_cycle_limit_from_the_reference():
    job = Job(PROGRAM, [])
    cycles = job.expected(DEFAULT).counters.cycles
    assert job.cycle_limit(DEFAULT) == jobs.LIMIT_FACTOR * cycles + jobs.LIMIT_SLACK
    assert Job(PROGRAM, [], limit=7).cycle_limit(DEFAULT) == 7


def test_jobs_file_round_trip(tmp_path):
    small = Params(SPAD_WORDS=256, EXT_WORDS=512)
    batch = [Job(PROGRAM, [1, 2, 3], "a"), Job([0xFFFFFFF0, 0, 0, 0], [], "b")]
    write_jobs(tmp_path / "jobs.npz", batch, small)
    back = read_jobs(tmp_path / "jobs.npz")
    assert back.params == small and back.names == ["a", "b"]
    assert [list(w) for w in back.words] == [list(j.words) for j in batch]
    assert back.ext.shape == (2, 512) and list(back.ext[0][:4]) == [1, 2, 3, 0]
    assert back.limit == [j.cycle_limit(small) for j in batch]


def test_jobs_file_refuses_a_program_longer_than_imem(tmp_path):
    small = Params(SPAD_WORDS=256, EXT_WORDS=512)
    long = Job([build("HALT")] * (small.IMEM_WORDS + 1), [], "long", limit=10)
    with pytest.raises(ValueError, match="long: the program's 4097 instructions do not fit IMEM_WORDS=4096"):
        write_jobs(tmp_path / "jobs.npz", [long], small)


def test_a_program_made_for_another_machine_is_refused_naming_both():
    other = Params(SPAD_WORDS=2048, EXT_WORDS=4096)
    job = Job(PROGRAM, [], "graph", machine=other)
    job.check(other)
    with pytest.raises(ValueError, match=r"job 0 \(graph\): the program was made for the machine T=4 "
                                         r"K_MAX=64 SPAD_WORDS=2048 EXT_WORDS=4096 .*, but the Verilog was "
                                         r"generated for T=4 K_MAX=64 SPAD_WORDS=4096 EXT_WORDS=65536 "):
        as_jobs([job], DEFAULT)


def test_the_job_of_a_compiled_program_must_halt_on_its_machine():
    from compiler.workloads.seedtable import compile_seed

    run = compile_seed(104, params=DEFAULT)
    job = Job.of_program(run.program, run.test_inputs, "seed 104")
    assert job.halts and job.machine == run.program.machine == DEFAULT
    assert list(job.words) == list(Job(run.program.code, None).words)
    assert (job.ext_image(DEFAULT) == run.program.ext_image(run.test_inputs)).all()
