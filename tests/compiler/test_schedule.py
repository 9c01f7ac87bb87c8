"""compiler/schedule.py: on the machine whose engines overlap (OVERLAP = 1), independent work
moves ahead, nothing moves past what it depends on, the memories are those of the order given,
and the cycles are the reference machine's and never more."""

import dataclasses
import itertools
import random
from functools import partial

import numpy as np
import pytest

from compiler import compile_graph
from compiler.schedule import cycles_of, dependencies, schedule, split_loads
from compiler.testing.random_graphs import random_stream_graph
from compiler.workloads.random_graph import random_graph, sample_inputs
from compiler.workloads.seedtable import TABLE_SEEDS, compile_seed
from sim.asm import assemble, build
from sim.machine import Machine, predict_counters
from sim.spec import DEFAULT, Params

assemble = partial(assemble, params=DEFAULT)
"""This file's programs are the default machine's (sim.asm takes the machine explicitly)."""

OVERLAP = Params(OVERLAP=1)


def _program(params: Params = OVERLAP):
    """LD A; LD B; MM A x B; LD D (independent of the MM: another region); ST of D; HALT."""
    ins = [build("LD", dst=0, src=0, len=64, params=params),          # A: 4 x 16
           build("LD", dst=64, src=64, len=64, params=params),        # B: 16 x 4
           build("MM", dst=200, A=0, B=64, M=4, K=16, N=4, tb=0, lda=16, ldb=4, ldc=4, params=params),
           build("LD", dst=1000, src=128, len=256, params=params),    # D
           build("ST", dst=600, src=200, len=16, params=params),      # the product out
           build("HALT", params=params)]
    return ins


def _ext() -> np.ndarray:
    return np.random.default_rng(0).integers(-100, 100, size=512)


def _independent_order(code, order) -> bool:
    """No instruction ends up ahead of one it conflicts with (checked by word sets, not by the
    scheduler's own test)."""
    def words(ins, writes):
        out = set()
        for r in ins.spec.regions:
            if r.writes == writes:
                f = ins.spec.complete(ins.fields)
                out |= {(r.mem, w) for w in range(f[r.start], f[r.start] + r.extent(f))}
            if not writes and r.writes and r.also_read_if and ins.fields.get(r.also_read_if):
                f = ins.spec.complete(ins.fields)
                out |= {(r.mem, w) for w in range(f[r.start], f[r.start] + r.extent(f))}
        return out
    for a, i in enumerate(order):
        for j in order[a + 1:]:
            if j < i:      # j was before i and now is after it
                wi, ri = words(code[i], True), words(code[i], False)
                wj, rj = words(code[j], True), words(code[j], False)
                if wi & (rj | wj) or ri & wj:
                    return False
    return True


def test_an_independent_load_moves_ahead_of_the_multiply_and_saves_cycles():
    code = _program()
    result = schedule(code, OVERLAP)
    assert result.order == [0, 1, 3, 2, 4, 5]      # D's load runs while the MM waits for B
    assert result.cycles < result.cycles_before == cycles_of(code, OVERLAP)
    machine = Machine(OVERLAP)
    before, after = machine.run(code, _ext()), machine.run(result.code, _ext())
    assert np.array_equal(before.ext, after.ext) and np.array_equal(before.spad, after.spad)
    assert after.counters.cycles == result.cycles and before.counters.cycles == result.cycles_before
    assert (after.counters.dma, after.counters.mxu) == (before.counters.dma, before.counters.mxu)


def test_the_serial_machine_keeps_the_order():
    code = _program(DEFAULT)
    result = schedule(code, DEFAULT)
    assert result.code == code and result.cycles == result.cycles_before


@pytest.mark.parametrize("build_graph", [random_graph, random_stream_graph], ids=["random", "streamed"])
def test_compiled_programs_keep_their_meaning_and_never_slow_down(build_graph):
    params = dataclasses.replace(OVERLAP, EXT_WORDS=65536)
    saved = 0
    for seed in range(12):
        graph, names = build_graph(seed)
        rng = random.Random(seed)
        calibration = [sample_inputs(names, rng) for _ in range(4)]
        test = sample_inputs(names, rng)
        ordered = compile_graph(graph, calibration, params=params)
        plain = compile_graph(graph, calibration, params=params, reorder=False)
        pieces = split_loads(plain.code[:-1],
                             params=DEFAULT)[0] + plain.code[-1:]     # long loads are cut first
        order = [pieces.index(i) for i in ordered.code] if ordered.code != plain.code else None
        a, b = ordered.run(test, warn=False), plain.run(test, warn=False)
        assert np.array_equal(a.state.ext, b.state.ext), seed
        assert a.counters.cycles <= b.counters.cycles
        assert len(ordered.owners) == len(ordered.code)
        if order is not None and len(set(order)) == len(order):
            assert _independent_order(pieces, order), seed
        saved += b.counters.cycles - a.counters.cycles
    assert saved > 0


def test_a_program_without_its_halt_at_the_end_is_refused():
    code = _program()
    with pytest.raises(ValueError, match="must end in its only HALT"):
        schedule(code[:-1], OVERLAP)
    with pytest.raises(ValueError, match="window = 0"):
        schedule(code, OVERLAP, window=0)


def test_the_serial_machine_keeps_its_order():
    code = compile_seed(100, params=DEFAULT).program.code
    assert schedule(code, DEFAULT).code == list(code)


def test_an_independent_load_goes_ahead():
    code = assemble("LD dst=0 src=0 len=16\n"
                    "MM dst=100 A=0 B=16 M=4 K=4 N=4 tb=0 lda=4 ldb=4 ldc=4\n"   # reads the LD's words
                    "RQ dst=200 src=100 len=16 m=8388608 s=24 relu=0\n"          # reads the MM's
                    "LD dst=300 src=64 len=64\n"                                  # independent
                    "HALT")
    assert dependencies(code[:4]) == [set(), {0}, {1}, set()]
    new = schedule(code, OVERLAP).code
    assert [ins.op for ins in new] == ["LD", "MM", "LD", "RQ", "HALT"]
    # by hand: LD 10..16; the MM waits for it: 16..29, writing 25..28. The second LD could start
    # at 19, the RQ at 29 (the MM's end): the LD goes, its 16 beats from 21 skip the MM's window
    # (21..24, 29..); the RQ at 29 writes 39..42 (its last 4 of 14 cycles), which the LD's
    # beats skip too: 29..38, 43, 44, so the LD ends at 45 (18 cycles + 8 yielded); HALT 46
    run = Machine(OVERLAP).run(new)
    assert [p.start for p in run.timeline] == [10, 16, 19, 29]
    assert [p.end for p in run.timeline] == [16, 29, 45, 43]
    assert predict_counters(new, OVERLAP).cycles == 46
    # in the emitted order: RQ 29..43 (writes 39..42), the LD at 32, beats 34..38, 43..53; HALT 55
    assert predict_counters(code, OVERLAP).cycles == 55


def test_a_conflict_on_external_memory_is_kept():
    code = assemble("ST src=0 dst=10 len=4\nLD dst=100 src=8 len=4\nHALT")
    assert dependencies(code[:2]) == [set(), {0}]


@pytest.mark.parametrize("seed", TABLE_SEEDS[:4])
def test_a_scheduled_seed_computes_what_it_did(seed):
    run = compile_seed(seed, OVERLAP)
    program = run.program
    emitted = compile_seed(seed, params=DEFAULT).program
    # the same MMs (the RQs of a matmul taller than T come one per block of T rows)
    assert sorted(str(i) for i in program.code if i.op != "RQ") == sorted(str(i) for i in emitted.code
                                                                          if i.op != "RQ")
    image = program.ext_image(run.test_inputs)
    a = Machine(OVERLAP).run(program.code, image)
    b = Machine(DEFAULT).run(emitted.code, image)
    assert np.array_equal(a.ext, b.ext)
    assert a.counters.cycles <= predict_counters(emitted.code, OVERLAP).cycles


def test_a_streamed_weight_is_double_buffered():
    from compiler.testing.mlpbench import compile_for

    program = compile_for(1, OVERLAP)
    serial = compile_for(1, DEFAULT)
    x = {"x": np.random.default_rng(5).normal(size=(1, 64))}
    got, want = program.run(x, warn=False), serial.run(x, warn=False)
    assert all(np.array_equal(got.outputs[k].ints, want.outputs[k].ints) for k in want.outputs)
    # the first layer streams its weight (64 x 256) in column blocks of 28 (1,792 words, loaded
    # in 7 pieces of 256: compiler.schedule.split_loads): the blocks' loads go to two B blocks in
    # turn, so the next one loads while the MMs read this one
    assert program.blockings[2].stream_b and program.blockings[2].cols == 28
    weight = program.ext["w0"]
    block = 28 * 64
    pieces = [ins for ins in program.code if ins.op == "LD" and weight.addr <= ins.src < weight.end]
    assert len(pieces) == -(-64 * 256 // 256)            # every word of the weight once, 256 a piece
    first = min(ins.dst for ins in pieces)
    for ins in pieces:   # the c-th column block's pieces land in B block c mod 2
        assert (ins.dst - first) // block == (ins.src - weight.addr) // block % 2
    assert got.counters.cycles < want.counters.cycles


def test_a_weight_larger_than_a_piece_streams_in_panels_each_in_its_own_place():
    from compiler import Graph

    rng = np.random.default_rng(3)
    g = Graph()
    x = g.input("x", (1, 32))
    g.output(g.matmul(x, g.weight("w", rng.normal(0, 0.2, (32, 64)))), "y")   # 2,048 words of B
    calibration = [{"x": rng.normal(size=(1, 32))} for _ in range(8)]
    program = compile_graph(g, calibration, params=OVERLAP)
    serial = compile_graph(g, calibration, params=DEFAULT)
    test = {"x": rng.normal(size=(1, 32))}
    got, want = program.run(test, warn=False), serial.run(test, warn=False)
    assert np.array_equal(got.outputs["y"].ints, want.outputs["y"].ints)
    # B streams in 16 panels of T = 4 columns (32 x 4 = 128 words, one LD each), every one to a
    # place of its own (a ring of 16 B blocks): no load waits for an MM, and each MM reads one
    # panel (ldb = 4), so it waits for that panel's load only
    choice = program.blockings[max(program.blockings)]
    assert (choice.stream_b, choice.cols, choice.b_loads, choice.b_how) == (True, 4, 16, "in panels")
    weight = program.ext["w"]
    loads = [ins for ins in program.code if ins.op == "LD" and weight.addr <= ins.src < weight.end]
    assert sorted(ins.src - weight.addr for ins in loads) == list(range(0, 2048, 128))
    places = sorted(ins.dst for ins in loads)
    assert all(b - a >= 128 for a, b in itertools.pairwise(places))     # 16 places, none shared
    assert all(ins.ldb == 4 for ins in program.code if ins.op == "MM")
    # whole (the serial machine's program on this machine): every MM waits for all of B
    assert got.counters.cycles < predict_counters(serial.code, OVERLAP).cycles
    assert serial.blockings[max(serial.blockings)].stream_b is False


def test_long_loads_are_cut_into_pieces():
    from compiler.schedule import LOAD_PIECE, split_loads

    code = assemble(f"LD dst=10 src=100 len={2 * LOAD_PIECE + 3}\nLD dst=0 src=8 len={LOAD_PIECE + 8} fmt=1\n"
                    "LD dst=5 src=0 len=7\nHALT")
    pieces, parent = split_loads(code, params=DEFAULT)
    assert parent == [0, 0, 0, 1, 1, 2, 3]
    assert [(i.dst, i.src, i.len, i.fmt) for i in pieces[:-1]] == [
        (10, 100, LOAD_PIECE, 0), (10 + LOAD_PIECE, 100 + LOAD_PIECE, LOAD_PIECE, 0),
        (10 + 2 * LOAD_PIECE, 100 + 2 * LOAD_PIECE, 3, 0),
        (0, 8, LOAD_PIECE, 1), (LOAD_PIECE, 8 + LOAD_PIECE // 4, 8, 1),
        (5, 0, 7, 0)]
    image = list(range(1, 4000))
    assert np.array_equal(Machine(DEFAULT).run(pieces, image).spad, Machine(DEFAULT).run(code, image).spad)


def test_explain_lists_the_overlapped_spans():
    from compiler.explain import listing_section
    from compiler.workloads.seedtable import attention_step_network

    graph, calibration, test = attention_step_network()
    program = compile_graph(graph, calibration, params=OVERLAP)
    section = listing_section(program)
    rows = section.table.rows
    assert rows[-1][2] == program.run(test).counters.cycles          # HALT's end: the cycles counter
    assert any(b[1] < a[2] for a, b in itertools.pairwise(rows))   # one starts before the last ends
    assert "engines side by side" in section.lead



def test_at_overlap_2_each_emission_is_scheduled_once(monkeypatch):
    """Ranking the chained emission (MMRQ) against the plain one (MM and RQ) schedules each once,
    and the scheduling pass reuses the winner's schedule instead of working it out a third time;
    a program without an MMRQ to rank is scheduled once. The programs are those of a schedule
    worked out afresh (the pass without what the ranking kept)."""
    from compiler import pipeline
    from compiler import schedule as schedule_module

    decoupled = Params(OVERLAP=2)
    calls = []
    real = schedule_module._scheduled
    monkeypatch.setattr(schedule_module, "_scheduled", lambda code, p: calls.append(1) or real(code, p))
    counts, programs = {}, {}
    for seed in (100, 101, 102, 103):
        graph, names = random_graph(seed)
        rng = random.Random(seed)
        calibration = [sample_inputs(names, rng) for _ in range(8)]
        calls.clear()
        program = compile_graph(graph, calibration, params=decoupled)
        counts[seed] = len(calls)
        programs[seed] = (graph, calibration, program.code)
    assert set(counts.values()) <= {1, 2}
    assert 2 in counts.values()                           # one of them ranked two emissions
    fresh = schedule_module.reorder_emission
    monkeypatch.setattr(pipeline, "reorder_emission", lambda emission, params, events, first, known=None:
                        fresh(emission, params, events, first))   # not the schedule the ranking kept
    for graph, calibration, code in programs.values():
        assert compile_graph(graph, calibration, params=decoupled).code == code
