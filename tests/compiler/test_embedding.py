"""compiler/ops/embedding.py and its lowering (issue 26): token rows by GATHER, the table left in
external memory, against hand-worked numbers, the interpreter and the reference machine."""

import numpy as np
import pytest

from compiler import CompileError, Graph, compile_graph
from compiler.interpret import interpret
from sim.machine import Machine, MachineError
from sim.spec import ErrorCode


def embed_graph(table: np.ndarray, tokens: int, positions: np.ndarray | None = None) -> Graph:
    g = Graph()
    rows = g.embedding(g.input("ids", (tokens, 1)), g.weight("wte", table))
    if positions is not None:
        rows = g.add(rows, g.weight("wpe", positions))
    g.output(rows, "x")
    return g


def test_the_rows_are_the_tables_levels_at_the_ids():
    """A table with 127 as its largest value: its levels are its values, so the rows are too."""
    table = np.arange(-60.0, 68.0).reshape(16, 8)       # -60..67, max |.| 67: scale 67/127
    g = embed_graph(table, 3)
    program = compile_graph(g, [{"ids": [[0], [7], [15]]}])
    assert [i.op for i in program.code] == ["LD", "GATHER", "GATHER", "GATHER", "ST", "HALT"]
    assert program.scales[1] == program.scales[2] == 67 / 127
    got = program.run({"ids": [[15], [0], [3]]}).outputs["x"].ints
    levels = np.round(table * 127 / 67)
    assert got.tolist() == levels[[15, 0, 3]].tolist()
    assert interpret(program, {"ids": [[15], [0], [3]]})[2].tolist() == got.tolist()


def test_the_table_is_never_loaded_and_is_read_packed_when_packed():
    rng = np.random.default_rng(3)
    g = embed_graph(rng.normal(0, 1, (100, 16)), 4)
    for pack in (False, True):
        program = compile_graph(g, [{"ids": [[1], [2], [3], [99]]}], pack=pack)
        gathers = [i for i in program.code if i.op == "GATHER"]
        assert [i.fmt for i in gathers] == [int(pack)] * 4 and all(i.rows == 100 for i in gathers)
        assert not any(i.op == "LD" and i.len >= 100 * 16 // (4 if pack else 1) for i in program.code)
        test = {"ids": [[99], [0], [42], [42]]}
        assert np.array_equal(program.run(test).outputs["x"].ints, interpret(program, test)[2])


def test_a_position_embedding_added_equals_the_machine():
    rng = np.random.default_rng(4)
    g = embed_graph(rng.normal(0, 1, (13, 32)), 6, rng.normal(0, 0.3, (6, 32)))
    program = compile_graph(g, [{"ids": rng.integers(0, 13, (6, 1))} for _ in range(8)], reuse=False)
    test = {"ids": rng.integers(0, 13, (6, 1))}
    ints = interpret(program, test)
    outcome = program.run(test)
    for node in g.nodes:
        if node.op not in ("output",) and node.name != "wte":
            assert np.array_equal(program.read_tensor(outcome, node.id), ints[node.id]), node.describe()


def test_an_id_out_of_the_table_is_refused_by_the_interpreter_and_stops_the_machine():
    g = embed_graph(np.ones((5, 4)), 2)
    program = compile_graph(g, [{"ids": [[0], [4]]}])
    with pytest.raises(CompileError, match=r"embedding node 2: token id 5 is not within 0\.\.4"):
        interpret(program, {"ids": [[1], [5]]})
    with pytest.raises(MachineError) as stop:
        Machine(program.machine).run(program.code, program.ext_image({"ids": [[1], [5]]}))
    assert stop.value.code is ErrorCode.BAD_INDEX and program.code[stop.value.pc].op == "GATHER"
    assert program.code[stop.value.pc].idx == program.code[stop.value.pc - 1].idx + 1   # the second token


def test_refusals_name_the_node():
    g = Graph()
    x = g.input("x", (2, 3))
    with pytest.raises(CompileError, match="the ids must be an input of shape"):
        g.embedding(x, g.weight("t", np.ones((4, 4))))
    big = embed_graph(np.ones((129, 4)), 2)
    with pytest.raises(CompileError, match="embedding node 2: its table has 129 rows"):
        compile_graph(big, [{"ids": [[0], [1]]}])
