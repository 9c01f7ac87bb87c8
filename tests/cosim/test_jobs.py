"""cosim/jobs.py: jobs, the reference's expectations, the batch and results files."""

from __future__ import annotations

import numpy as np
import pytest

from cosim import jobs
from cosim.jobs import Job, as_job, read_jobs, reference, write_jobs
from sim.asm import build, encode_program
from sim.spec import DEFAULT, ErrorCode, Params

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
    image = Job(PROGRAM, [-1, 5]).ext_image()
    assert image.dtype == np.uint32 and len(image) == DEFAULT.EXT_WORDS
    assert image[0] == 0xFFFFFFFF and image[1] == 5 and not image[2:].any()
    with pytest.raises(ValueError, match="does not fit EXT_WORDS=8192"):
        Job(PROGRAM, np.zeros(DEFAULT.EXT_WORDS + 1), name="big").ext_image()


def test_reference_reports_halt_pc_and_errors():
    done = reference(PROGRAM, np.arange(8))
    assert done.error_code is ErrorCode.NONE and done.error_pc == 2
    assert list(done.ext[100:108]) == list(range(8))
    stopped = reference(PROGRAM[:2], [])
    assert stopped.error_code is ErrorCode.NO_HALT and stopped.error_pc == 2
    assert stopped.counters.cycles > 0 and "no HALT" in stopped.detail


def test_cycle_limit_from_the_reference():
    job = Job(PROGRAM, [])
    cycles = job.expected().counters.cycles
    assert job.cycle_limit() == jobs.LIMIT_FACTOR * cycles + jobs.LIMIT_SLACK
    assert Job(PROGRAM, [], limit=7).cycle_limit() == 7


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
    with pytest.raises(ValueError, match="long: 4097 instructions do not fit IMEM_WORDS=4096"):
        write_jobs(tmp_path / "jobs.npz", [long], small)
