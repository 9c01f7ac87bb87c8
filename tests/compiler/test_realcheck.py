"""compiler/realcheck.py: the real-number check passes good programs and flags a wrong
requantizer that the interpreter cannot see."""

import random

import numpy as np

from compiler.interpret import interpret
from compiler.pipeline import compile_graph
from compiler.realcheck import stagewise_problems
from compiler.workloads.random_graph import random_graph, sample_inputs


def compiled(seed: int):
    graph, names = random_graph(seed)
    rng = random.Random(seed)
    program = compile_graph(graph, [sample_inputs(names, rng) for _ in range(10)], reuse=False)
    return program, sample_inputs(names, rng)


def test_a_correct_program_has_no_problems():
    program, test = compiled(5)
    assert stagewise_problems(program, interpret(program, test)) == []


def test_a_requantizer_one_shift_off_is_flagged_at_its_node():
    program, test = compiled(5)
    victim = next(k for k in program.requantizers if isinstance(k, int)
                  and program.graph.nodes[k].op == "matmul")
    m, s = program.requantizers[victim]
    program.requantizers[victim] = (m, s + 1)      # every value halved
    problems = stagewise_problems(program, interpret(program, test))
    assert problems and problems[0].startswith(f"node {victim} (matmul): ")


def test_one_level_off_is_tolerated_and_two_are_not():
    program, test = compiled(5)
    ints = interpret(program, test)
    node = next(n.id for n in program.graph.nodes if n.op == "matmul")
    nudged = dict(ints)
    nudged[node] = np.clip(ints[node] + 1, -127, 127)
    assert not any(p.startswith(f"node {node} ") for p in stagewise_problems(program, nudged))
    nudged[node] = np.clip(ints[node] + 3, -127, 127)
    assert any(p.startswith(f"node {node} ") for p in stagewise_problems(program, nudged))
