"""Capra: a compiler from float tensor graphs to GA-2 programs (seed chapter 11).

    from compiler import Graph, compile_graph

    g = Graph()
    x = g.input("x", (4, 16))
    h = g.relu(g.matmul(x, g.weight("w1", w1)))
    g.output(g.softmax(g.matmul(h, g.weight("w2", w2), scale=0.5)), "probs")
    program = compile_graph(g, calibration)          # a list of {"x": 4 x 16 array}
    outcome = program.run({"x": x_values})           # on the reference machine
    outcome.outputs["probs"].floats

The passes, one module each: :mod:`.ir`, :mod:`.limits`, :mod:`.fusion`,
:mod:`.placement`, :mod:`.lifetimes`, :mod:`.layout`, :mod:`.calibrate` (with
:mod:`.evaluate`), :mod:`.scales`, :mod:`.requant`, :mod:`.allocator`, :mod:`.emit`; the
result is a :class:`Program`. For testing: :mod:`.interpret`, :mod:`.realcheck`,
:mod:`.random_graphs`, :mod:`.battery`.
"""

from .ir import CompileError, Graph
from .pipeline import compile_graph
from .program import Program, SaturationWarning

__all__ = ["CompileError", "Graph", "Program", "SaturationWarning", "compile_graph"]
