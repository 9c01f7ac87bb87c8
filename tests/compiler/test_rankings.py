"""Program.rankings and the blocking section of Program.explain(): how a product too large for
the scratchpad whole chose its blocking (issue 15, item 6: the ranking printed)."""

import random
import sys
from pathlib import Path

from compiler import compile_graph
from sim.spec import Params

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import own_graph  # examples/ is not a package


def _example_b(width: int, spad: int):
    graph, shapes = own_graph.build(hidden=width)
    rng = random.Random(width)
    calibration = [own_graph.draw_inputs(shapes, rng) for _ in range(10)]
    return compile_graph(graph, calibration, params=Params(SPAD_WORDS=spad))


def test_the_written_blocking_is_the_best_ranked_one_that_could_be_placed():
    program = _example_b(64, 2048)
    assert set(program.rankings) == {nid for nid, b in program.blockings.items() if not b.whole} == {5}
    r = program.rankings[5]
    assert r.chosen == program.blockings[5] and r.chosen.footprint <= r.free
    assert r.best[0].cycles <= r.chosen.cycles and r.best[0].footprint > r.free   # the fastest does not fit
    assert r.chosen_rank - 1 <= r.too_big + r.too_long + r.failed
    assert [b.cycles for b in r.best] == sorted(b.cycles for b in r.best)
    assert r.considered >= len(r.best) and r.too_big >= 1


def test_explain_prints_the_ranking_only_where_a_product_was_blocked():
    text = _example_b(64, 2048).explain()
    assert "== pass 4, continued: the blockings of the products that do not fit whole" in text
    assert "%5: " in text and " candidates; " in text and "(written)" in text
    assert "the blockings of the products" not in _example_b(16, 4096).explain()
