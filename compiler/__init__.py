"""Capra: a compiler from float tensor graphs to GA-2 programs (seed chapter 11).

    from compiler import Graph, compile_graph

    g = Graph()
    x = g.input("x", (4, 16))
    h = g.relu(g.matmul(x, g.weight("w1", w1)))
    g.output(g.softmax(g.matmul(h, g.weight("w2", w2), scale=0.5)), "probs")
    program = compile_graph(g, calibration)          # a list of {"x": 4 x 16 array}
    outcome = program.run({"x": x_values})           # on the reference machine
    outcome.outputs["probs"].floats

The compiler in layers, each importing only those below it (``tests/test_layers.py``):

* what an operation is, and the IR: the table of operations, one module per operation with
  its shape rule and its meanings in floating point, in integers and as a real-number check
  (:mod:`.ops`); the graph IR (:mod:`.ir`) and its text form (:mod:`.text`);
* the passes over the graph, one module each: :mod:`.limits`, :mod:`.cse`, :mod:`.fusion`,
  :mod:`.placement`, :mod:`.lifetimes`, :mod:`.layout`, :mod:`.calibrate` (with
  :mod:`.evaluate`), :mod:`.scales`;
* the back end: each operation's lowering, registered against it (:mod:`.lowering`), the
  blocking and streaming of layers larger than the scratchpad (:mod:`.blocking`,
  :mod:`.streaming`), emission (:mod:`.emit`, with :mod:`.allocator`), the scheduling for the
  machine whose engines overlap (:mod:`.schedule`);
* the result, a :class:`Program`, and what reads it: :mod:`.interpret`, :mod:`.realcheck`,
  :mod:`.accuracy`, :mod:`.explain`;
* the pipeline, the list of passes by name with their contracts (:mod:`.pipeline`,
  :mod:`.contracts`), and the PyTorch front end (:mod:`.frontend`).

The compiler's own test tooling (random graphs, the battery, the mutation check, golden text,
benchmarks, capacity) is :mod:`.testing`; production code never imports it.
"""

from .ir import CompileError, Graph
from .ops import Op
from .pipeline import compile_graph
from .program import Program, SaturationWarning

__all__ = ["CompileError", "Graph", "Op", "Program", "SaturationWarning", "compile_graph"]
