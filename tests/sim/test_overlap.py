"""OVERLAP = 1 in the reference machine: the issue rule of GA2.md section 7 (sim.spec.Issue).

The cycle counts of the small programs are worked by hand from the latencies (LANES = 4):
LD of n words ceil(n/4) + LD_OVERHEAD (2), writing in its last ceil(n/4) cycles; MM
K + M + tb*(N-1) + MM_OVERHEAD (5), reading in its first K + M + tb*(N-1), writing in its last M;
VADD ceil(n/4) + 5, RQ ceil(n/4) + 10, SM 3*ceil(n/4) + 15 (reads in its first 3*ceil(n/4) + 1,
writes in its last ceil(n/4)). The first dispatch is in cycle 10 (FRONTEND_CYCLES + 2), the next
at least 3 cycles later; the stop adds 1. Random programs are checked against a second,
independent statement of the rule (:func:`obeys_the_rule`): every pairwise constraint holds,
and no instruction could have started a cycle earlier.
"""

from __future__ import annotations

import numpy as np
import pytest

from sim import spec
from sim.asm import assemble
from sim.bench import random_image, random_program
from sim.machine import Machine, MachineError, predict_counters
from sim.spec import ErrorCode, Params

OVERLAP = Params(OVERLAP=1)

MM_44 = "MM dst={dst} A={A} B={B} M=4 K=4 N=4 tb=0 lda=4 ldb=4 ldc=4"   # 13 cycles, reads 8, writes 4


def run(text: str, params: Params = OVERLAP):
    return Machine(params).run(assemble(text, params=params, strict=False), list(range(1, 513)))


def starts(result) -> list[int]:
    return [p.start for p in result.timeline]


def test_the_parameter_is_checked():
    assert Params().OVERLAP == 0
    with pytest.raises(ValueError, match="OVERLAP"):
        Params(OVERLAP=2)
    assert spec.counters(Params()) == spec.COUNTERS
    assert spec.counters(OVERLAP) == (*spec.COUNTERS, "hazard", "port")


def test_a_load_and_an_independent_mm_overlap():
    r = run(f"LD dst=0 src=0 len=16\n{MM_44.format(dst=100, A=32, B=48)}\nHALT")
    # LD 10..16; MM at 10 + 3 = 13 (its writes, 22..26, come after the LD's end), ends 26
    assert starts(r) == [10, 13]
    assert r.counters.as_tuple(spec.counters(OVERLAP)) == (27, 6, 13, 0, 0, 0, 0)
    serial = run(f"LD dst=0 src=0 len=16\n{MM_44.format(dst=100, A=32, B=48)}\nHALT", Params())
    assert serial.counters.cycles == 8 + 6 + 13 + 1
    assert np.array_equal(r.spad, serial.spad)


def test_read_after_write_waits_for_the_writer():
    r = run(f"LD dst=32 src=0 len=16\n{MM_44.format(dst=100, A=32, B=48)}\nHALT")
    assert starts(r) == [10, 16]                 # the MM reads A = 32..47, which the LD writes
    assert (r.counters.cycles, r.counters.hazard, r.counters.port) == (30, 16 - 13, 0)


def test_write_after_read_waits_for_the_reader():
    r = run(f"{MM_44.format(dst=100, A=32, B=48)}\nLD dst=48 src=0 len=16\nHALT")
    assert starts(r) == [10, 23]                 # the LD overwrites B = 48..63 the MM reads
    assert (r.counters.cycles, r.counters.hazard, r.counters.port) == (30, 23 - 13, 0)


def test_write_after_write_waits():
    r = run(f"{MM_44.format(dst=100, A=32, B=48)}\nLD dst=110 src=0 len=4\nHALT")
    assert starts(r) == [10, 23]                 # both write word 110..115
    assert (r.counters.cycles, r.counters.hazard) == (23 + 3 + 1, 10)


def test_mm_accumulate_reads_its_destination():
    acc = "MM dst=100 A=32 B=48 M=4 K=4 N=4 tb=0 lda=4 ldb=4 ldc=4 acc=1"   # 14 cycles
    r = run(f"{acc}\nST src=300 dst=0 len=4\nLD dst=100 src=0 len=4\nHALT")
    # the ST (reads 300..303) could start at 13: no conflict, but its read window needs the
    # read port: the MM reads in its first 4 + 4 + 2 = 10 cycles (10..19), so the ST waits until 20
    assert starts(r)[:2] == [10, 20]
    assert r.counters.port == 20 - 13
    # the LD writes what the MM reads and writes: it waits for the MM's end (24) and the ST's
    # (20 + 1 + 4 = 25, the same engine)
    assert starts(r)[2] == 25


def test_the_write_port_is_taken_in_turn():
    r = run("VADD dst=0 src1=100 src2=200 len=64\nLD dst=300 src=0 len=64\nHALT")
    # VADD 10..31 writes 15..31; the LD (18 cycles) writes in its last 16: d + 2 >= 31
    assert starts(r) == [10, 29]
    assert (r.counters.cycles, r.counters.hazard, r.counters.port) == (48, 0, 29 - 13)


def test_the_read_port_is_taken_in_turn():
    r = run("VADD dst=0 src1=100 src2=200 len=64\nSM dst=400 src=500 len=4\nHALT")
    # VADD reads 10..25; SM (18 cycles) reads from its dispatch: d >= 26
    assert starts(r) == [10, 26]
    assert (r.counters.cycles, r.counters.port, r.counters.sfu) == (45, 26 - 13, 18)


def test_halt_drains_every_engine():
    assert run("HALT").counters.cycles == 10 + 1
    r = run("LD dst=0 src=0 len=64\nHALT")
    assert r.counters.cycles == 10 + 18 + 1
    r = run("LD dst=0 src=0 len=64\nSM dst=400 src=500 len=4\nHALT")
    assert starts(r) == [10, 13] and r.counters.cycles == 13 + 18 + 1


def test_an_error_stops_after_every_engine_is_done():
    with pytest.raises(MachineError) as info:
        run("LD dst=0 src=0 len=64\nMM dst=100 A=32 B=48 M=0 K=4 N=4 tb=0 lda=4 ldb=4 ldc=4\nHALT")
    e = info.value
    assert (e.code, e.pc) == (ErrorCode.BAD_FIELD, 1)
    assert e.result.counters.cycles == 28 + 1
    assert e.result.spad[63] == 64                 # the LD's words are there, as on the serial machine


def obeys_the_rule(timeline: list[spec.Placed], code, params: Params) -> None:
    """The issue rule restated pairwise: each constraint against every earlier instruction, and
    minimality (a cycle earlier breaks one)."""
    info = []
    for placed, ins in zip(timeline, code, strict=False):
        length = placed.end - placed.start
        assert length == spec.latency(ins.spec, ins.fields, params)
        info.append((placed, spec.spad_accesses(ins.spec, ins.fields),
                     spec.reads(ins.spec, ins.fields, params), spec.writes(ins.spec, ins.fields, params)))

    def allowed(k: int, d: int) -> bool:
        placed, acc, n_reads, n_writes = info[k]
        if d < (spec.OVERLAP_FRONTEND_CYCLES if k == 0 else info[k - 1][0].start + spec.OVERLAP_ISSUE_CYCLES):
            return False
        for earlier, acc2, r2, w2 in info[:k]:
            if earlier.engine == placed.engine and d < earlier.end:
                return False
            if d < earlier.end and spec.conflict(acc, acc2):
                return False
            if n_reads and r2 and d < earlier.start + r2:
                return False
            if n_writes and w2 and d + (placed.end - placed.start) - n_writes < earlier.end:
                return False
        return True

    for k, (placed, *_rest) in enumerate(info):
        assert allowed(k, placed.start), f"instruction {k} breaks the rule at {placed.start}"
        assert not allowed(k, placed.start - 1), f"instruction {k} could start at {placed.start - 1}"


@pytest.mark.parametrize("seed", range(12))
def test_random_programs_follow_the_rule_and_mean_what_they_meant(seed):
    program = random_program(60, seed=seed, params=OVERLAP)
    image = random_image(OVERLAP, seed=seed)
    serial = Machine(Params()).run(program, image)
    r = Machine(OVERLAP).run(program, image)
    assert np.array_equal(r.spad, serial.spad) and np.array_equal(r.ext, serial.ext)
    for name in spec.COUNTERS[1:]:
        assert getattr(r.counters, name) == getattr(serial.counters, name)
    obeys_the_rule(r.timeline, program, OVERLAP)
    stop = max(spec.OVERLAP_FRONTEND_CYCLES if not r.timeline else r.timeline[-1].start + 3,
               *(p.end for p in r.timeline))
    assert r.counters.cycles == stop + spec.STOP_CYCLES
    assert r.counters.hazard == sum(p.hazard for p in r.timeline)
    assert r.counters.port == sum(p.port for p in r.timeline)
    assert predict_counters(program, OVERLAP) == r.counters


def test_the_serial_machine_is_unchanged():
    program = random_program(60, seed=3)
    r = Machine().run(program, random_image(seed=3))
    first = r.timeline[0]
    assert first.start == spec.FRONTEND_CYCLES
    assert first.end - first.start == spec.latency(program[0].spec, program[0].fields)
    assert all(a.end == b.start for a, b in zip(r.timeline, r.timeline[1:], strict=False))
    assert r.counters.cycles == r.timeline[-1].end + spec.STOP_CYCLES
    assert (r.counters.hazard, r.counters.port) == (0, 0)


def test_a_hazard_on_one_word_at_the_edge_of_two_regions():
    # the LD writes words 0..15, the VADD reads 15..18 (src1) and 40..43: only word 15 is shared.
    # LD 10..16; the VADD (1 beat: 6 cycles, writing its last 1) could start at 13 (order) but
    # reads word 15 after the LD writes it: 16
    r = run("LD dst=0 src=0 len=16\nVADD dst=100 src1=15 src2=40 len=4 relu=0\nHALT")
    assert starts(r) == [10, 16]
    assert (r.counters.cycles, r.counters.hazard, r.counters.port) == (23, 3, 0)
    apart = run("LD dst=0 src=0 len=16\nVADD dst=100 src1=16 src2=40 len=4 relu=0\nHALT")
    assert starts(apart) == [10, 13]                   # one word further: no hazard
