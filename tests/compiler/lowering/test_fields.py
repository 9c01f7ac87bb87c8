"""compiler/lowering/: tiles and the fields of each instruction, by hand."""

from compiler.layout import ExtEntry
from compiler.lowering.add import needs_rescale
from compiler.lowering.argmax import amax_fields
from compiler.lowering.matmul import Tile, mm_fields, tiles
from compiler.lowering.memory import ld_fields, st_fields
from compiler.lowering.softmax import sm_fields
from compiler.ops import Op


def test_tiles_by_hand():
    assert list(tiles(5, 10, 4)) == [(0, 0, 4, 4), (0, 4, 4, 4), (0, 8, 4, 2),
                                     (4, 0, 1, 4), (4, 4, 1, 4), (4, 8, 1, 2)]
    assert list(tiles(3, 3, 8)) == [Tile(row=0, col=0, rows=3, cols=3)]


def test_mm_fields_of_an_inner_tile():
    # a (6, 14) at 100, b (14, 9) at 200, accumulator (6, 9) at 300; the corner tile at row 4,
    # col 8 is 2 rows by 1 column
    fields = mm_fields(Tile(4, 8, 2, 1), 100, 200, 300, 14, 9, False)
    assert fields == {"dst": 300 + 4 * 9 + 8, "A": 100 + 4 * 14, "B": 200 + 8, "M": 2, "K": 14, "N": 1,
                      "tb": 0, "lda": 14, "ldb": 9, "ldc": 9}


def test_mm_fields_of_a_transposed_b_step_by_whole_rows():
    # b stored (n, k) = (6, 8): the tile of output columns 4..5 starts at row 4 of b
    fields = mm_fields(Tile(0, 4, 1, 2), 0, 48, 62, 8, 6, True)
    assert (fields["B"], fields["tb"], fields["ldb"], fields["ldc"]) == (48 + 4 * 8, 1, 8, 6)


def test_row_by_row_fields():
    assert sm_fields(2, 50, 10, 6) == {"dst": 62, "src": 22, "len": 6}
    assert amax_fields(2, 50, 10, 6) == {"dst": 52, "src": 22, "len": 6}


def test_transfers_move_the_whole_external_region():
    entry = ExtEntry("x", 40, 9, (3, 3), 0, Op.INPUT)
    assert ld_fields(entry, 7) == {"dst": 7, "src": 40, "len": 9}
    assert st_fields(entry, 7) == {"src": 7, "dst": 40, "len": 9}


def test_an_operand_within_a_billionth_of_the_sum_scale_is_not_rescaled():
    assert not needs_rescale(1 + 1e-10) and needs_rescale(1 + 1e-8) and needs_rescale(0.5)
