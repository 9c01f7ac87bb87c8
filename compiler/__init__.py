"""Capra: a compiler from float tensor graphs to GA-2 programs (seed chapter 11).

    from compiler import Graph, compile_graph

    g = Graph()
    x = g.input("x", (4, 16))
    h = g.relu(g.matmul(x, g.weight("w1", w1)))
    g.output(g.softmax(g.matmul(h, g.weight("w2", w2), scale=0.5)), "probs")
    program = compile_graph(g, calibration)          # a list of {"x": 4 x 16 array}
    outcome = program.run({"x": x_values})           # on the reference machine
    outcome.outputs["probs"].floats

The operations are declared once, in the table of :mod:`.ops` (shape rules in :mod:`.shapes`,
meanings in :mod:`.semantics`, lowerings in :mod:`.lowering`); the graph IR is :mod:`.ir`,
with a text form (:mod:`.text`). The pipeline is the list of passes in :mod:`.pipeline`, one
module each: :mod:`.limits`, :mod:`.fusion`, :mod:`.placement`, :mod:`.lifetimes`,
:mod:`.layout`, :mod:`.calibrate` (with :mod:`.evaluate`), :mod:`.scales` (with
:mod:`.requant`), :mod:`.emit` (with :mod:`.allocator`, and :mod:`.blocking` and
:mod:`.streaming` for layers larger than the scratchpad), their contracts in
:mod:`.contracts`; the result is a :class:`Program`. To check it: :mod:`.interpret`,
:mod:`.realcheck`, :mod:`.accuracy`. PyTorch: :mod:`.frontend`. The compiler's own test
tooling (random graphs, the battery, the mutation check, golden text, the seed table,
benchmarks, capacity) is :mod:`.testing`.
"""

from .ir import CompileError, Graph
from .ops import Op
from .pipeline import compile_graph
from .program import Program, SaturationWarning

__all__ = ["CompileError", "Graph", "Op", "Program", "SaturationWarning", "compile_graph"]
