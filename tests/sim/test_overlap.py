"""OVERLAP = 1 in the reference machine: the issue rule of GA2.md section 7 (sim.spec.Issue).

The cycle counts of the small programs are worked by hand from the latencies (LANES = 4):
LD of n words ceil(n/4) + LD_OVERHEAD (2), writing in its last ceil(n/4) cycles; MM
K + M + tb*(N-1) + MM_OVERHEAD (5), reading in its first K + M + tb*(N-1), writing in its last M;
VADD ceil(n/4) + 5, RQ ceil(n/4) + 10, SM 3*ceil(n/4) + 15 (reads in its first 3*ceil(n/4) + 1,
writes in its last ceil(n/4)). The first dispatch is in cycle 10 (FRONTEND_CYCLES + 2), the next
at least 3 cycles later; the stop adds 1. An LD's beats (from its dispatch + 2) skip every cycle
of another engine's write window, so its end moves one cycle per cycle taken. Random programs
are checked against a second, independent statement of the rule (:func:`obeys_the_rule`): every
pairwise constraint holds, every LD's beats fill the free cycles cycle by cycle, and no
instruction could have started a cycle earlier.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from sim import spec
from sim.asm import assemble
from sim.bench import random_image, random_program
from sim.machine import Machine, MachineError, predict_counters
from sim.spec import DEFAULT, ErrorCode, Params

OVERLAP = Params(OVERLAP=1)

MM_44 = "MM dst={dst} A={A} B={B} M=4 K=4 N=4 tb=0 lda=4 ldb=4 ldc=4"   # 13 cycles, reads 8, writes 4


def run(text: str, params: Params = OVERLAP):
    return Machine(params).run(assemble(text, params=params, strict=False), list(range(1, 513)))


def starts(result) -> list[int]:
    return [p.start for p in result.timeline]


def test_the_parameter_is_checked():
    assert Params().OVERLAP == 0
    with pytest.raises(ValueError, match="OVERLAP"):
        Params(OVERLAP=3)
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


def test_a_load_yields_the_write_port_to_an_earlier_window():
    r = run("VADD dst=0 src1=100 src2=200 len=64\nLD dst=300 src=0 len=64\nHALT")
    # VADD 10..31 writes in 15..30; the LD is not held back (13), its 16 beats from 15 skip
    # the window: 31..46, end 47 (18 cycles + 16 taken)
    assert starts(r) == [10, 13]
    assert [p.end for p in r.timeline] == [31, 47]
    assert r.counters.as_tuple(spec.counters(OVERLAP)) == (48, 34, 0, 21, 0, 0, 0)


def test_an_mm_row_written_inside_a_load_moves_its_end_by_one():
    mm = "MM dst=100 A=200 B=300 M=1 K=4 N=4 tb=0 lda=4 ldb=4 ldc=4"       # 10 cycles, writes its last
    r = run(f"LD dst=0 src=0 len=64\n{mm}\nHALT")
    # LD 10..28 (beats 12..27); the MM 13..23 writes its row in 22: the LD's beats from 22 on
    # move by one, end 29
    assert starts(r) == [10, 13]
    assert [p.end for p in r.timeline] == [29, 23]
    assert r.counters.as_tuple(spec.counters(OVERLAP)) == (30, 19, 10, 0, 0, 0, 0)


def test_an_mm_placed_before_the_load_takes_its_window_first():
    r = run(f"{MM_44.format(dst=100, A=200, B=300)}\nLD dst=0 src=0 len=64\nHALT")
    # MM 10..23 writes 19..22; the LD at 13: beats 15..18, then 23..34, end 35
    assert starts(r) == [10, 13]
    assert [p.end for p in r.timeline] == [23, 35]
    assert (r.counters.cycles, r.counters.dma, r.counters.port) == (36, 22, 0)


def test_an_rq_inside_a_load_and_an_instruction_waiting_on_its_real_end():
    text = ("LD dst=0 src=0 len=64\nRQ dst=300 src=400 len=16 m=1 s=1 relu=0\n"
            "SM dst=500 src=60 len=4\nLD dst=600 src=0 len=4\nHALT")
    r = run(text)
    # LD 10.., beats from 12; RQ 13..27 writes 4 beats in 23..26: the LD's 5 beats from 23 move
    # to 27..31, end 32. The SM reads word 60, which the LD writes: it waits for the real end,
    # 32 (hazard 32 - 16), and ends 50; nothing after it moves the LD. The second LD waits for
    # the DMA (32 < 35: order) and is dispatched at 35, 35..38, beat at 37 (the SM writes 49)
    assert starts(r) == [10, 13, 32, 35]
    assert [p.end for p in r.timeline] == [32, 27, 50, 38]
    assert (r.counters.hazard, r.counters.port) == (16, 0)
    assert r.counters.as_tuple(spec.COUNTERS) == (51, 22 + 3, 0, 14, 18)
    serial = run(text, Params())
    assert np.array_equal(r.spad, serial.spad) and np.array_equal(r.ext, serial.ext)
    assert predict_counters(assemble(text, params=OVERLAP, strict=False), OVERLAP) == r.counters


def test_the_other_engines_still_take_the_write_port_in_turn():
    r = run("RQ dst=0 src=100 len=64 m=1 s=1 relu=0\nMM dst=300 A=400 B=500 M=4 K=1 N=4 tb=0 "
            "lda=4 ldb=4 ldc=4\nHALT")
    # RQ 10..36 reads 10..25, writes 26..35; the MM (10 cycles, reads its first 5, writes its
    # last 4) needs d >= 26 (read port) and d + 6 >= 36 (write port): 30
    assert starts(r) == [10, 30]
    assert (r.counters.cycles, r.counters.hazard, r.counters.port) == (41, 0, 30 - 13)


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


GATHER_STEP = ("LD dst=40 src={row} len=1\nGATHER dst=50 src=100 len=4 idx=40 rows=3\n"
               "MM dst=200 A=300 B=400 M=1 K=4 N=4 tb=0 lda=4 ldb=4 ldc=4\nHALT")
"""A row number loaded, the GATHER that reads it, an MM on another engine with no region in
common (tests/hw/test_overlap_core.py runs it on the RTL)."""


def test_a_gather_is_a_fence():
    """By hand: LD d = 10 (3 cycles, its beat at 12), GATHER waits for it (reads S[40]): d = 13,
    latency ceil(4/4) + 8 = 9, ends 22; the MM, free to go at 16 (no hazard, ports free), waits
    for the GATHER's end (a fence: its row number could have stopped the machine): d = 22, ends
    22 + 4 + 1 + 5 = 32; the stop at 32, cycles 33. Neither wait is a hazard nor a port's."""
    r = run(GATHER_STEP.format(row=0))                # ext[0] = 1: row 1 of 3
    assert starts(r) == [10, 13, 22]
    assert (r.counters.cycles, r.counters.dma, r.counters.mxu) == (33, 3 + 9, 10)
    assert (r.counters.hazard, r.counters.port) == (0, 0)
    assert r.spad[50:54].tolist() == [105, 106, 107, 108]     # row 1: ext[104..107] = 105..108


def test_a_gather_out_of_its_table_stops_when_it_ends():
    """ext[5] = 6 is not below rows = 3: BAD_INDEX at pc 1 when the GATHER ends (22), nothing after
    it dispatched (the fence), nothing written: cycles 23, the DMA's 3 + 9."""
    with pytest.raises(MachineError) as info:
        run(GATHER_STEP.format(row=5))
    e = info.value
    assert (e.code, e.pc) == (ErrorCode.BAD_INDEX, 1)
    assert (e.result.counters.cycles, e.result.counters.dma, e.result.counters.mxu) == (23, 12, 0)
    assert [p.op for p in e.result.timeline] == ["LD", "GATHER"] and not e.result.spad[50:54].any()


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
        info.append((placed, spec.spad_accesses(ins.spec, ins.fields),
                     spec.reads(ins.spec, ins.fields, params), spec.writes(ins.spec, ins.fields, params)))
    # every cycle of a write window (the last ``writes`` cycles) of an instruction other than an
    # LD: no two windows share a cycle; each LD's beats, from its dispatch + 2, take the first
    # cycles outside them, its end one past the last
    taken: set[int] = set()
    for (placed, _, _, n_writes), ins in zip(info, code, strict=False):
        if ins.op != "LD" and n_writes:
            window = set(range(placed.end - n_writes, placed.end))
            assert not window & taken, f"{ins.op} at {placed.start} writes in another's window"
            taken |= window
    for (placed, _, _, n_writes), ins in zip(info, code, strict=False):
        length = spec.latency(ins.spec, ins.fields, params)
        if ins.op != "LD":
            assert placed.end - placed.start == length
            continue
        cycle, beats = placed.start + length - n_writes, 0
        while True:
            if cycle not in taken:
                beats += 1
                if beats == n_writes:
                    break
            cycle += 1
        assert placed.end == cycle + 1, f"LD at {placed.start}: its last beat is in {cycle}"

    def allowed(k: int, d: int) -> bool:
        placed, acc, n_reads, n_writes = info[k]
        if d < (spec.OVERLAP_FRONTEND_CYCLES if k == 0 else info[k - 1][0].start + spec.OVERLAP_ISSUE_CYCLES):
            return False
        for earlier, acc2, r2, w2 in info[:k]:
            if earlier.engine == placed.engine and d < earlier.end:
                return False
            if spec.BY_NAME[earlier.op].fence and d < earlier.end:    # a GATHER: nothing before its end
                return False
            if d < earlier.end and spec.conflict(acc, acc2):
                return False
            if n_reads and r2 and d < earlier.start + r2:
                return False
            if (n_writes and w2 and placed.op != "LD" and earlier.op != "LD"
                    and d + (placed.end - placed.start) - n_writes < earlier.end):
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
    for name in ("mxu", "vpu", "sfu"):
        assert getattr(r.counters, name) == getattr(serial.counters, name)
    # the DMA's counter grows by the cycles other engines' windows took from the LDs' beats
    dma = sum(p.end - p.start for p in r.timeline if p.engine == "dma")
    assert r.counters.dma == dma >= serial.counters.dma
    obeys_the_rule(r.timeline, program, OVERLAP)
    stop = max(spec.OVERLAP_FRONTEND_CYCLES if not r.timeline else r.timeline[-1].start + 3,
               *(p.end for p in r.timeline))
    assert r.counters.cycles == stop + spec.STOP_CYCLES
    assert r.counters.hazard == sum(p.hazard for p in r.timeline)
    assert r.counters.port == sum(p.port for p in r.timeline)
    assert predict_counters(program, OVERLAP) == r.counters


def test_the_serial_machine_is_unchanged():
    program = random_program(60, seed=3, params=DEFAULT)
    r = Machine(DEFAULT).run(program, random_image(seed=3, params=DEFAULT))
    first = r.timeline[0]
    assert first.start == spec.FRONTEND_CYCLES
    assert first.end - first.start == spec.latency(program[0].spec, program[0].fields, params=DEFAULT)
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


@pytest.mark.parametrize("seed", range(4))
def test_peeking_and_placing_on_a_copy_leave_the_rule_as_it_was(seed):
    """What the list scheduler (compiler/schedule.py) does to the rule many times per
    instruction: it asks a floor, peeks at a start and places on a copy. None changes the rule
    (and the floor is never after the start), and the
    rule then places the instruction where it peeked (the starts themselves are checked
    against the rule written out in test_random_programs_follow_the_rule_...)."""
    program = random_program(60, seed=seed, params=OVERLAP)
    rule = spec.Issue(OVERLAP)
    starts = []
    for pc, ins in enumerate(program[:-1]):
        before = copy.deepcopy(rule.__dict__)
        known = spec.costs(ins.spec, ins.fields, OVERLAP)
        peeked = rule.peek(ins.spec, ins.fields)
        # the floor the scheduler skips by is never after the start (else it would skip the
        # instruction that starts first)
        assert rule.floor(ins.spec.counter) <= peeked, f"instruction {pc} ({ins.op})"
        twin = rule.copy()
        twin.place(pc, ins.spec, ins.fields, known)
        assert rule.__dict__ == before, f"instruction {pc} ({ins.op}): peek or a copy changed the rule"
        assert rule.place(pc, ins.spec, ins.fields, known).start == peeked
        starts.append(peeked)
    run = Machine(OVERLAP).run(program, random_image(OVERLAP, seed=seed))
    assert starts == [p.start for p in run.timeline]
