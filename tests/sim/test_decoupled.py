"""OVERLAP = 2 in the reference machine: the decoupled rule of GA2.md section 7 (sim.spec.Decoupled).

The small programs' cycles are worked by hand from the latencies (LANES = 4): LD of n words
ceil(n/4) + 2, writing in its last ceil(n/4) cycles; MM K + M + tb*(N-1) + 5, reading in its
first K + M + tb*(N-1), writing in its last M; VADD ceil(n/4) + 5 (reads its first ceil(n/4),
writes its last ceil(n/4)); SM 3*ceil(n/4) + 15 (reads its first 3*ceil(n/4) + 1, writes its last
ceil(n/4)); ST ceil(n/4) + 4 (reads its first ceil(n/4)). The first instruction enters the station
in cycle 10 and the next ones 3 cycles apart; an instruction is dispatched 2 cycles after it
entered at the earliest, and 2 cycles after the last dispatch; STATION_SLOTS = 4 per engine.

Random programs are checked against a second statement of the rule (:func:`stepped`): the
machine taken cycle by cycle, each cycle's decisions made from what has happened before it
(the LDs' beats written one by one), rather than by events in the order of their cycles.
"""

from __future__ import annotations

import numpy as np
import pytest

from sim import spec
from sim.asm import assemble
from sim.bench import random_image, random_program
from sim.machine import Machine, MachineError, apply, predict_counters
from sim.spec import ErrorCode, Params

DECOUPLED = Params(OVERLAP=2)

MM_44 = "MM dst={dst} A={A} B={B} M=4 K=4 N=4 tb=0 lda=4 ldb=4 ldc=4"   # 13 cycles, reads 8, writes 4


def run(text: str, params: Params = DECOUPLED):
    return Machine(params).run(assemble(text, params=params, strict=False), list(range(1, 513)))


def spans(result) -> list[tuple[int, int]]:
    return [(p.start, p.end) for p in result.timeline]


def test_the_constants_the_cycles_below_use():
    assert (spec.OVERLAP_FRONTEND_CYCLES, spec.ENTER_CYCLES, spec.ENTER_DISPATCH_CYCLES,
            spec.DISPATCH_CYCLES, spec.STATION_SLOTS) == (10, 3, 2, 2, 4)
    assert spec.counters(DECOUPLED) == (*spec.COUNTERS, "hazard", "port")


def test_an_instruction_passes_one_that_waits():
    r = run(f"LD dst=32 src=0 len=64\n{MM_44.format(dst=100, A=32, B=48)}\n"
            "VADD dst=300 src1=400 src2=500 len=8\nHALT")
    # LD enters 10, runs 12..30; the MM enters 13 and waits for it (hazard from 15); the VADD
    # enters 16 and goes at 18 (7 cycles, writing 23..24): the LD's beats (14..29) skip those
    # two, so it ends at 32, and the MM starts then
    assert spans(r) == [(12, 32), (32, 45), (18, 25)]
    assert [(p.hazard, p.port) for p in r.timeline] == [(0, 0), (32 - 15, 0), (0, 0)]
    assert r.counters.as_tuple(spec.counters(DECOUPLED)) == (46, 20, 13, 7, 0, 17, 0)
    on_one = run(f"LD dst=32 src=0 len=64\n{MM_44.format(dst=100, A=32, B=48)}\n"
                 "VADD dst=300 src1=400 src2=500 len=8\nHALT", Params(OVERLAP=1))
    assert spans(on_one)[2][0] > spans(on_one)[1][0]     # OVERLAP = 1 issues in order


def test_a_write_after_read_waits_only_for_the_reads():
    r = run(f"{MM_44.format(dst=100, A=32, B=48)}\nLD dst=48 src=0 len=16\nHALT")
    # MM 12..25 reads B in 12..19; the LD only overwrites B: it goes at 20, its beats from 22
    # skip the MM's row writes 21..24: 25..28, end 29
    assert spans(r) == [(12, 25), (20, 29)]
    assert (r.counters.hazard, r.counters.dma) == (20 - 15, 9)


def test_a_write_after_write_waits_for_the_end():
    r = run(f"{MM_44.format(dst=100, A=32, B=48)}\nLD dst=110 src=0 len=4\nHALT")
    assert spans(r) == [(12, 25), (25, 28)]


def test_a_hazard_on_a_queued_instruction_waits_for_its_end():
    r = run("LD dst=0 src=0 len=64\nLD dst=500 src=0 len=4\nVADD dst=100 src1=500 src2=40 len=4\nHALT")
    # the second LD waits in the DMA's queue until 30; the VADD reads what it writes
    assert spans(r) == [(12, 30), (30, 33), (33, 39)]
    assert r.counters.hazard == 33 - 18


def test_the_oldest_ready_instruction_is_dispatched_first():
    r = run("LD dst=0 src=0 len=16\nVADD dst=100 src1=0 src2=40 len=4\nST src=200 dst=0 len=4\nHALT")
    # at 18 the LD has ended: the VADD (its hazard) and the ST (its engine) are both ready; the
    # VADD is earlier and goes; the ST reads too: after the VADD's read (18) and 2 cycles after it
    assert spans(r) == [(12, 18), (18, 24), (20, 25)]
    assert [(p.hazard, p.port) for p in r.timeline] == [(0, 0), (3, 0), (0, 2)]
    swapped = run("LD dst=0 src=0 len=16\nST src=200 dst=0 len=4\nVADD dst=100 src1=0 src2=40 len=4\nHALT")
    assert spans(swapped) == [(12, 18), (18, 23), (20, 26)]


def test_a_later_reader_can_take_the_read_port_first():
    r = run(f"LD dst=0 src=0 len=64\n{MM_44.format(dst=100, A=0, B=48)}\nSM dst=600 src=500 len=64\nHALT")
    # the SM goes at 18 and reads until 67; the MM, ready at 30, waits for the read port and
    # for its row writes to follow the SM's (65..80): 72 + 13 - 4 = 81
    assert spans(r) == [(12, 30), (72, 85), (18, 81)]
    assert (r.counters.hazard, r.counters.port) == (30 - 15, 72 - 30)


def test_a_full_queue_holds_the_front_end():
    text = "\n".join(f"LD dst={64 * k} src=0 len=64" for k in range(5))
    r = run(text + "\nVADD dst=1000 src1=1100 src2=1200 len=8\nHALT")
    # LDs enter at 10, 13, 16, 19 (three wait behind the first); the fifth needs the second's
    # entry: it is dispatched at 30, so 31; the VADD enters 3 later, 34, and goes at 36 (its
    # writes 41..42 move the second LD by 2)
    assert spans(r)[5] == (36, 43)
    assert [s for s, _ in spans(r)[:5]] == [12, 30, 50, 68, 86]
    assert r.counters.cycles == 104 + 1


def test_a_stop_waits_for_every_queue():
    assert run("HALT").counters.cycles == 10 + 1
    r = run("LD dst=0 src=0 len=64\nLD dst=100 src=0 len=4\nHALT")
    assert r.counters.cycles == 33 + 1
    with pytest.raises(MachineError) as info:
        run("LD dst=0 src=0 len=64\nMM dst=100 A=32 B=48 M=0 K=4 N=4 tb=0 lda=4 ldb=4 ldc=4\nHALT")
    assert (info.value.code, info.value.pc, info.value.result.counters.cycles) == (ErrorCode.BAD_FIELD, 1, 31)


def test_a_rule_that_never_dispatches_is_stopped_by_the_watchdog(monkeypatch):
    dispatch_time = spec._Station._dispatch_time

    def never_pc_1(self, i):
        t = dispatch_time(self, i)
        return (spec.NEVER, *t[1:]) if i == 1 else t
    monkeypatch.setattr(spec._Station, "_dispatch_time", never_pc_1)
    with pytest.raises(MachineError) as info:
        run("LD dst=0 src=0 len=16\nVADD dst=100 src1=200 src2=300 len=4\nLD dst=20 src=0 len=4\nHALT")
    e = info.value
    assert (e.code, e.pc) == (ErrorCode.STALL, 1)
    # the LDs run 12..18 and 18..21; then nothing happens for WATCHDOG_CYCLES
    assert e.result.counters.cycles == 21 + spec.WATCHDOG_CYCLES + 1
    assert [p.op for p in e.result.timeline] == ["LD", "LD"]
    # the VADD (entered 13) waits from 15 to the machine's last cycle, 86 (a port wait: its
    # hazards are met, the broken rule says never anyway)
    assert (e.result.counters.hazard, e.result.counters.port) == (0, 86 - 15 + 1)


def stepped(code, params: Params) -> tuple[list[tuple[int, int]], int]:
    """The decoupled rule, cycle by cycle: (each instruction's (dispatch, end), the stop's cycle)."""
    n = len(code)
    eng = [i.spec.counter for i in code]
    lat = [spec.latency(i.spec, i.fields, params) for i in code]
    rd = [spec.reads(i.spec, i.fields, params) for i in code]
    wr = [spec.writes(i.spec, i.fields, params) for i in code]
    acc = [spec.spad_accesses(i.spec, i.fields) for i in code]
    shares = [e == "dma" and w > 0 and not i.spec.fence for e, w, i in zip(eng, wr, code, strict=True)]
    entered, start, end = [None] * n, [None] * n, [None] * n
    windows: list[range] = []
    beats_left: dict[int, int] = {}
    nxt, last_enter, last_disp = 0, None, None
    for t in range(10 ** 6):
        for j, left in list(beats_left.items()):      # an LD's beat in cycle t - 1
            if t - 1 >= start[j] + spec.LD_OVERHEAD and not any(t - 1 in w for w in windows):
                beats_left[j] = left - 1
                if left == 1:
                    end[j] = t
                    del beats_left[j]
        ended = [e is not None and e <= t for e in end]
        ready = []
        for i in range(n):
            if start[i] is not None or entered[i] is None or entered[i] + spec.ENTER_DISPATCH_CYCLES > t:
                continue
            if any(start[k] is None or not ended[k] for k in range(i) if eng[k] == eng[i]):
                continue
            deps = [k for k in range(i) if eng[k] != eng[i] and spec.conflict(acc[i], acc[k])]
            if any(not (start[k] is not None and start[k] + rd[k] <= t) if spec.war_only(acc[i], acc[k])
                   else not ended[k] for k in deps):
                continue
            if rd[i] and any(start[k] is not None and start[k] + rd[k] > t for k in range(n)):
                continue
            window = t + lat[i] - wr[i]           # its first write
            if wr[i] and not shares[i] and any(
                    start[k] is not None and wr[k] and not shares[k] and start[k] + lat[k] > window
                    for k in range(n)):
                continue
            if last_disp is not None and t < last_disp + spec.DISPATCH_CYCLES:
                continue
            ready.append(i)
        if ready:
            i = ready[0]
            start[i], last_disp = t, t
            if shares[i]:
                beats_left[i] = wr[i]
            else:
                end[i] = t + lat[i]
                if wr[i]:
                    windows.append(range(end[i] - wr[i], end[i]))
        first = spec.OVERLAP_FRONTEND_CYCLES if last_enter is None else last_enter + spec.ENTER_CYCLES
        if nxt == n:
            if t >= first and all(ended):
                return list(zip(start, end, strict=True)), t
        elif t >= first and all(ended[k] for k in range(nxt) if code[k].spec.fence):
            same = [k for k in range(nxt) if eng[k] == eng[nxt]]
            waiting = [k for k in same if start[k] is None or start[k] >= t]   # not dispatched before t
            if len(waiting) < spec.STATION_SLOTS - 1:
                entered[nxt], last_enter = t, t
                nxt += 1
    raise AssertionError("stepped: no stop")


@pytest.mark.parametrize("seed", range(12))
def test_random_programs_follow_the_rule_cycle_by_cycle(seed):
    program = random_program(60, seed=seed, params=DECOUPLED)     # MMRQ among them
    image = random_image(DECOUPLED, seed=seed)
    r = Machine(DECOUPLED).run(program, image)
    # the meaning of the order: each instruction applied in turn (the serial machine has no MMRQ)
    spad, ext = np.zeros(DECOUPLED.SPAD_WORDS, np.uint32), np.asarray(image, np.int64).astype(np.uint32)
    for ins in program:
        apply(ins, spad, ext)
    assert np.array_equal(r.spad, spad) and np.array_equal(r.ext, ext)
    for name in ("mxu", "vpu", "sfu"):
        assert getattr(r.counters, name) == sum(spec.latency(ins.spec, ins.fields, DECOUPLED)
                                                for ins in program if ins.spec.counter == name)
    units = [ins for ins in program if ins.op != "HALT"]
    units = units[:len(r.timeline)]
    want, stop = stepped(units, DECOUPLED)
    assert spans(r) == want
    assert r.counters.cycles == stop + spec.STOP_CYCLES
    assert r.counters.dma == sum(e - s for (s, e), ins in zip(want, units, strict=True)
                                 if ins.spec.counter == "dma")
    assert r.counters.hazard == sum(p.hazard for p in r.timeline)
    assert r.counters.port == sum(p.port for p in r.timeline)
    assert predict_counters(program, DECOUPLED) == r.counters


# GATHER (LANES = 4): ceil(n/4) + GATHER_OVERHEAD = ceil(n/4) + 8 cycles, reading its row number
# in its first cycle, writing in its last ceil(n/4); a fence (InstrSpec.fence)


def test_nothing_enters_after_a_gather_before_it_ends():
    r = run("GATHER dst=100 src=0 len=8 idx=50 rows=4\nVADD dst=300 src1=400 src2=500 len=8\nHALT")
    # the GATHER enters 10, runs 12..22; the VADD, independent, enters at its end, 22, goes at 24
    assert spans(r) == [(12, 22), (24, 31)]
    assert [p.entered for p in r.timeline] == [10, 22]
    assert r.counters.as_tuple(spec.counters(DECOUPLED)) == (32, 10, 0, 7, 0, 0, 0)


def test_a_gather_holds_the_write_port_an_ld_shares():
    mm = MM_44.format(dst=100, A=32, B=48)      # 12..25, reads 12..20, writes 21..25
    gather = run(f"{mm}\nGATHER dst=200 src=0 len=16 idx=50 rows=4\nHALT")
    # the read port frees at 20; its window (its last 4 of 12 cycles) after the MM's: d >= 17
    assert spans(gather) == [(12, 25), (20, 32)]
    assert [(p.hazard, p.port) for p in gather.timeline] == [(0, 0), (0, 20 - 15)]
    ld = run(f"{mm}\nLD dst=200 src=0 len=16\nHALT")
    assert spans(ld) == [(12, 25), (15, 21)]


def test_a_gather_out_of_its_table_lets_the_earlier_instructions_run():
    """The GATHER passes a VADD that waits on the MM, and its row number (S[700] = 41, from the
    first LD) is out of its table: the VADD still runs, the LD after the GATHER never enters,
    and the memories are the serial machine's."""
    text = (f"LD dst=700 src=40 len=1\n{MM_44.format(dst=100, A=32, B=48)}\n"
            "VADD dst=300 src1=100 src2=500 len=4\nGATHER dst=200 src=0 len=4 idx=700 rows=4\n"
            "LD dst=400 src=0 len=4\nHALT")
    stops = {}
    for params in (DECOUPLED, Params()):
        with pytest.raises(MachineError) as e:
            run(text, params)
        stops[params.OVERLAP] = e.value
    got, serial = stops[2], stops[0]
    assert (got.code, got.pc) == (serial.code, serial.pc) == (ErrorCode.BAD_INDEX, 3)
    assert np.array_equal(got.result.spad, serial.result.spad)
    # LD 12..15; MM 15..28; the VADD waits for the MM (hazard 18..28); the GATHER (entered 19)
    # waits for the read port (the MM reads until 23) and goes at 23, 9 cycles; the stop at 34
    assert spans(got.result) == [(12, 15), (15, 28), (28, 34), (23, 32)]
    assert got.result.counters.as_tuple(spec.counters(DECOUPLED)) == (35, 3 + 9, 13, 6, 0, 10, 2)
