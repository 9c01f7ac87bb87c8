"""compiler/blocking.py: block sizes, the workspace and footprint, each instruction of a blocked
step worked by hand, and the cycles of the ranking against the instructions' latencies."""

import random

import pytest

from compiler.blocking import (
    IN_PLACE,
    Matmul,
    Places,
    Whole,
    block_sizes,
    block_steps,
    cost,
    footprint,
    loads_b,
    rank_blockings,
    workspace,
)
from sim.spec import BY_NAME, DEFAULT, Mem, Params, latency

AT = Places(a=1000, b=2000, acc=3000, a_block=3500, b_block=3600, out=4000, a_ext=100, b_ext=500)
RQ = (7, 20, 1)


def steps(mm, rows, cols, stream_a, stream_b):
    return list(block_steps(mm, rows, cols, stream_a, stream_b, AT, RQ, DEFAULT.T))


def test_block_sizes_are_the_fewest_multiples_of_t_for_each_count_of_blocks():
    assert block_sizes(16, 4) == [16, 8, 4]
    assert block_sizes(64, 4) == [64, 32, 24, 16, 12, 8, 4]    # 1, 2, 3, 4, 6, 8, 16 blocks
    assert block_sizes(10, 4) == [10, 8, 4]                    # 10 whole, else 8 + 2 or 4 + 4 + 2
    assert block_sizes(3, 4) == [3]


def test_the_workspace_is_accumulator_then_a_block_then_b_block():
    mm = Matmul(0, m=16, k=24, n=40)
    assert workspace(mm, 8, 12, False, False) == (320, 0, 320, 320)            # 8 x 40 int32
    assert workspace(mm, 8, 12, True, True) == (320 + 192 + 288, 0, 320, 512)  # + 8 x 24, 24 x 12


def test_the_footprint_is_the_peak_with_an_int4_weights_packed_words():
    mm = Matmul(0, m=4, k=16, n=8, a=Whole(words=64), b=Whole(words=128, transient=16), out=32)
    assert footprint(mm, 32, False, False) == max(64, 64 + 128 + 16, 64 + 128 + 32 + 32)
    big_transient = Matmul(0, 4, 16, 8, a=Whole(words=64), b=Whole(words=128, transient=200), out=32)
    assert footprint(big_transient, 32, False, False) == 64 + 128 + 200
    assert footprint(mm, 32, False, True) == 64 + 32 + 32                       # B streams: not held


def test_b_is_loaded_again_per_row_block_only_when_there_are_several_column_blocks():
    assert [loads_b(r, 1) for r in range(3)] == [True, False, False]
    assert [loads_b(r, 2) for r in range(3)] == [True, True, True]


def test_b_in_panels_with_two_row_blocks_by_hand():
    """A 8 x 16 whole, B 16 x 8 in panels of 4 columns, accumulator of 4 rows: B's two blocks
    are loaded for each row block, each MM reads its panel with ldb = 4."""
    mm = Matmul(0, m=8, k=16, n=8, b_streams=True, b_panels=True)
    got = [(s.op, s.role, s.block, s.fields) for s in steps(mm, 4, 4, False, True)]
    ld = [(f["dst"], f["src"], f["len"]) for op, _, _, f in got if op == "LD"]
    assert ld == [(3600, 500, 64), (3600, 564, 64)] * 2                # panel 1 starts 4 x 16 words on
    mms = [(f["dst"], f["A"], f["B"], f["M"], f["N"], f["K"], f["ldb"], f["ldc"], f["lda"])
           for op, _, _, f in got if op == "MM"]
    assert mms == [(3000, 1000, 3600, 4, 4, 16, 4, 8, 16), (3004, 1000, 3600, 4, 4, 16, 4, 8, 16),
                   (3000, 1064, 3600, 4, 4, 16, 4, 8, 16), (3004, 1064, 3600, 4, 4, 16, 4, 8, 16)]
    rqs = [(f["dst"], f["src"], f["len"], f["m"], f["s"], f["relu"]) for op, _, _, f in got if op == "RQ"]
    assert rqs == [(4000, 3000, 32, 7, 20, 1), (4032, 3000, 32, 7, 20, 1)]   # rows 4-7 go 4 x 8 words on
    assert [op for op, *_ in got] == ["LD", "MM", "LD", "MM", "RQ"] * 2
    assert [s.block for s in steps(mm, 4, 4, False, True)][:5] == [(0, 0), (0, 0), (0, 1), (0, 1), (0, 0)]


def test_cycles_of_b_in_panels_by_hand():
    """LD of 64 words: 16 + 2; MM with K = 16, M = 4: 16 + 4 + 5; RQ of 32 words: 8 + 10."""
    mm = Matmul(0, m=8, k=16, n=8, b_streams=True, b_panels=True)
    two_rows = cost(mm, 4, 4, False, True, DEFAULT)
    assert two_rows.cycles == 4 * 18 + 4 * 25 + 2 * 18
    assert (two_rows.moved, two_rows.b_loads, two_rows.instructions) == (256, 4, 10)
    one_row = cost(mm, 8, 4, False, True, DEFAULT)             # tiles of 8 rows: two MMs of M = 4 each
    assert one_row.cycles == 2 * 18 + 4 * 25 + (16 + 10)
    assert (one_row.moved, one_row.b_loads, one_row.workspace) == (128, 2, 64 + 64)
    assert one_row.describe() == "1 x 2 blocks of 8 x 4 (A whole, B streams in panels, 2 loads)"


def test_a_streams_in_row_blocks_and_a_transposed_b_in_runs_of_rows():
    mm = Matmul(0, m=8, k=8, n=6, transpose_b=True, a_streams=True, b_streams=True)
    got = steps(mm, 4, 4, True, True)
    assert [(s.op, s.role) for s in got[:3]] == [("LD", "load A"), ("LD", "load B"), ("MM", "tile")]
    assert got[0].fields == {"dst": 3500, "src": 100, "len": 32}
    b_loads = [(s.fields["src"], s.fields["len"]) for s in got if s.role == "load B"]
    assert b_loads == [(500, 32), (532, 16)] * 2             # rows 0-3, then 4-5, of the stored 6 x 8
    second_a = [s.fields for s in got if s.role == "load A"][1]
    assert second_a == {"dst": 3500, "src": 132, "len": 32}   # rows 4-7 of A: 4 x 8 words on
    tiles = [s.fields for s in got if s.op == "MM"]
    assert {(f["A"], f["B"], f["tb"], f["ldb"], f["lda"]) for f in tiles} == {(3500, 3600, 1, 8, 8)}
    assert [(f["dst"], f["N"]) for f in tiles] == [(3000, 4), (3004, 2)] * 2


def test_a_b_that_others_read_is_gathered_row_by_row():
    mm = Matmul(0, m=4, k=3, n=10, b_streams=True)
    got = [s.fields for s in steps(mm, 4, 8, False, True) if s.role == "load B"]
    assert [(f["dst"], f["src"], f["len"]) for f in got] == [
        (3600, 500, 8), (3608, 510, 8), (3616, 520, 8),      # block 0: columns 0-7 of rows 0, 1, 2
        (3600, 508, 2), (3602, 518, 2), (3604, 528, 2)]      # block 1: columns 8-9, 2 words a row
    whole = [s.fields for s in steps(mm, 4, 10, False, True) if s.role == "load B"]
    assert whole == [{"dst": 3600, "src": 500, "len": 30}]    # one block: B as it is stored
    described = cost(mm, 4, 8, False, True, DEFAULT).describe()
    assert described == "1 x 2 blocks of 4 x 8 (A whole, B streams gathered row by row, 6 loads)"


def test_whole_operands_add_their_loads_to_cycles_words_and_instructions():
    a = Whole(words=96, cycles=26, moved=96, instructions=1)
    mm = Matmul(0, m=4, k=24, n=4, a=a, b=IN_PLACE, a_streams=True)
    whole, streamed = cost(mm, 4, 4, False, False, DEFAULT), cost(mm, 4, 4, True, False, DEFAULT)
    mm_cycles = 24 + 4 + 5
    assert whole.cycles == 26 + mm_cycles + (4 + 10) and whole.instructions == 3
    assert streamed.cycles == (24 + 2) + mm_cycles + (4 + 10) and streamed.moved == 96
    assert whole.footprint == 96 + 16 and streamed.footprint == 16 + 96


def test_the_ranking_puts_the_whole_step_first_and_is_by_cycles():
    mm = Matmul(0, m=16, k=32, n=24, a=Whole(words=512, cycles=130, moved=512, instructions=1),
                b=Whole(words=768, cycles=194, moved=768, instructions=1), a_streams=True, b_streams=True,
                b_panels=True, out=384)
    ranked = rank_blockings(mm, DEFAULT)
    assert ranked[0].whole
    assert [b.cycles for b in ranked] == sorted(b.cycles for b in ranked)
    # A whole or not x (B whole x 3 row sizes + B streams x 3 x 4), and when both stream the sums
    # in the output's rows too (3 x 4)
    assert len(ranked) == 2 * (3 + 3 * 4) + 3 * 4
    small = rank_blockings(mm, DEFAULT, within=1000)
    assert small and all(b.footprint <= 1000 for b in small)
    assert small == [b for b in ranked if b.footprint <= 1000]


def random_matmuls(count: int, seed: int = 1):
    draw = random.Random(seed)
    for node in range(count):
        m, k, n = draw.randrange(1, 20), draw.randrange(1, 65), draw.randrange(1, 30)
        yield Matmul(node, m, k, n, transpose_b=draw.random() < 0.3,
                     a=Whole(m * k, 0, 7, m * k, 1), b=Whole(k * n, 0, 9, k * n, 1), a_streams=True,
                     b_streams=True, b_panels=draw.random() < 0.5, out=m * n)


@pytest.mark.parametrize("t", [4, 8])
def test_the_cycles_of_every_candidate_are_the_latencies_of_its_instructions(t):
    """cost() adds latencies block by block; block_steps() writes each instruction: they agree
    exactly, whole loads included, on 40 random steps x every candidate."""
    params = Params(T=t, LANES=max(t, 4))
    checked = 0
    for mm in random_matmuls(40):
        for b in rank_blockings(mm, params):
            written = list(block_steps(mm, b.rows, b.cols, b.stream_a, b.stream_b, AT, RQ, t))
            whole = sum(w.cycles for w, s in ((mm.a, b.stream_a), (mm.b, b.stream_b)) if not s)
            assert b.cycles == whole + sum(latency(BY_NAME[s.op], s.fields, params) for s in written)
            loads = [s for s in written if s.op == "LD"]
            assert b.b_loads == sum(s.role == "load B" for s in loads)
            assert b.instructions == len(written) + sum(not s for s in (b.stream_a, b.stream_b))
            checked += 1
    assert checked > 400


def test_every_candidate_computes_each_output_element_once_with_whole_k():
    for mm in random_matmuls(25, seed=2):
        for b in rank_blockings(mm, DEFAULT):
            covered = []
            for s in block_steps(mm, b.rows, b.cols, b.stream_a, b.stream_b, Places(), RQ, 4):
                if s.op != "MM":
                    continue
                f = s.fields
                assert f["K"] == mm.k and f["ldc"] == mm.n
                first_row, first_col = s.block[0] * b.rows + f["dst"] // mm.n, f["dst"] % mm.n
                covered += [(first_row + i, first_col + j) for i in range(f["M"]) for j in range(f["N"])]
            assert sorted(covered) == [(i, j) for i in range(mm.m) for j in range(mm.n)]


def test_each_step_knows_the_words_it_reads_and_writes():
    mm = Matmul(0, m=8, k=16, n=8, b_streams=True, b_panels=True)
    load, tile = steps(mm, 4, 4, False, True)[:2]
    assert load.spans() == [(Mem.EXT, 500, 64, False), (Mem.SPAD, 3600, 64, True)]
    assert tile.spans() == [(Mem.SPAD, 1000, 3 * 16 + 16, False), (Mem.SPAD, 3600, 15 * 4 + 4, False),
                            (Mem.SPAD, 3000, 3 * 8 + 4, True)]   # A rows 0-3, the B block, 4 accumulator rows
