"""compiler/schedule.py: on the machine whose engines overlap (OVERLAP = 1), independent work
moves ahead, nothing moves past what it depends on, the memories are those of the order given,
and the cycles are the reference machine's and never more."""

import dataclasses
import random

import numpy as np
import pytest

from compiler import compile_graph
from compiler.schedule import cycles_of, schedule
from compiler.testing.random_graphs import random_graph, random_stream_graph, sample_inputs
from sim.asm import build
from sim.machine import Machine
from sim.spec import DEFAULT, Params

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
        order = [plain.code.index(i) for i in ordered.code] if ordered.code != plain.code else None
        a, b = ordered.run(test, warn=False), plain.run(test, warn=False)
        assert np.array_equal(a.state.ext, b.state.ext), seed
        assert a.counters.cycles <= b.counters.cycles
        assert len(ordered.owners) == len(ordered.code)
        if order is not None and len(set(order)) == len(order):
            assert _independent_order(plain.code, order), seed
        saved += b.counters.cycles - a.counters.cycles
    assert saved > 0


def test_a_program_without_its_halt_at_the_end_is_refused():
    code = _program()
    with pytest.raises(ValueError, match="must end in its only HALT"):
        schedule(code[:-1], OVERLAP)
    with pytest.raises(ValueError, match="window = 0"):
        schedule(code, OVERLAP, window=0)
