"""The networks of the seed's chapter-11 run script, as reusable computations (the fidelity
tests pin their results; the co-simulation runs the same programs on the RTL).

* section 1: a two-layer network with a residual add and a softmax head
  (:func:`section1_network`);
* section 2: twelve fresh random graphs, seeds 100-111 (:func:`compile_seed`): for a seed,
  the graph is ``random_graph(seed)``; one ``random.Random(seed)`` then draws 30
  calibration samples and, after them, the test input; the program is compiled with and
  without buffer reuse and the reuse program is run on the test input;
* section 3: six 32 x 32 relu layers that fit only with buffer reuse (:func:`six_layer_network`);
* running example A: one decode step of an attention head (:func:`attention_step_network`).
"""

from __future__ import annotations

import math
import random
import warnings
from dataclasses import dataclass

import numpy as np

from sim.spec import DEFAULT, Params

from ..accuracy import relative_error
from ..ir import Graph
from ..pipeline import compile_graph
from ..program import Program, RunOutcome
from ..scales import ZeroRangeWarning
from .random_graph import random_graph, sample_inputs

TABLE_SEEDS = range(100, 112)
"""The seeds of the seed document's table (not used by the battery)."""
CALIBRATION_SAMPLES = 30


@dataclass
class SeedRun:
    """One row of the table, with everything needed to run it again elsewhere.

    Attributes:
        seed: the seed.
        graph: the random graph.
        program: compiled with buffer reuse.
        program_no_reuse: compiled keeping every buffer.
        test_inputs: the held-out input (name -> float array).
        outcome: the reuse program's run on the reference machine.
        error: relative error of the outputs against floating point.
    """

    seed: int
    graph: Graph
    program: Program
    program_no_reuse: Program
    test_inputs: dict[str, np.ndarray]
    outcome: RunOutcome
    error: float

    @property
    def row(self) -> tuple[int, int, int, int, int, float]:
        """(seed, nodes, instructions, spad words with reuse, without reuse, error)."""
        return (self.seed, len(self.graph.nodes), len(self.program.code), self.program.spad_high,
                self.program_no_reuse.spad_high, self.error)


def compile_seed(seed: int, params: Params) -> SeedRun:
    """Build, calibrate, compile (twice, for the machine ``params``) and run the graph of one seed."""
    graph, names = random_graph(seed)
    rng = random.Random(seed)
    calibration = [sample_inputs(names, rng) for _ in range(CALIBRATION_SAMPLES)]
    test = sample_inputs(names, rng)
    with warnings.catch_warnings():     # seed 104 has tensors calibration sees only at 0, as in the seed:
        warnings.simplefilter("ignore", ZeroRangeWarning)         # its notes stay in Program.notes
        program = compile_graph(graph, calibration, params=params)
        program_no_reuse = compile_graph(graph, calibration, reuse=False, params=params)
    outcome = program.run(test, warn=False)   # the seed's held-out sample may clip, as in the seed
    error = relative_error(program, outcome, test)
    return SeedRun(seed, graph, program, program_no_reuse, test, outcome, error)


Sample = dict[str, list[list[float]]]


def _table(draw: random.Random, rows: int, cols: int, sd: float) -> list[list[float]]:
    return [[draw.gauss(0, sd) for _ in range(cols)] for _ in range(rows)]


def section1_network() -> tuple[Graph, list[Sample], Sample]:
    """Section 1's network, its 30 calibration samples and its test input.

    x (5 x 12) -> matmul w1 (12 x 10) -> relu = h; matmul w2 (10 x 10) + h = y;
    softmax(0.5 * y w3 (10 x 3)) -> "probs"; its argmax -> "class". One Random(11) draws
    w1, w2, w3 (N(0, 0.3)), then the samples (N(0, 1)).
    """
    draw = random.Random(11)
    net = Graph()
    x = net.input("x", (5, 12))
    hidden = net.relu(net.matmul(x, net.weight("w1", _table(draw, 12, 10, 0.3))))
    w2 = net.weight("w2", _table(draw, 10, 10, 0.3))
    residual = net.add(net.matmul(hidden, w2), hidden)
    w3 = net.weight("w3", _table(draw, 10, 3, 0.3))
    probs = net.softmax(net.matmul(residual, w3, scale=0.5))
    net.output(probs, "probs")
    net.output(net.argmax(probs), "class")
    calibration = [{"x": _table(draw, 5, 12, 1.0)} for _ in range(30)]
    return net, calibration, {"x": _table(draw, 5, 12, 1.0)}


def six_layer_network() -> tuple[Graph, list[Sample]]:
    """Section 3's network and its 10 calibration samples: x (8 x 32), then six layers
    relu(x W_k) with W_k 32 x 32, N(0, 1/32); one Random(5) draws the weights, then the
    samples. Its weights alone (6 x 1,024 words) exceed the scratchpad."""
    draw = random.Random(5)
    net = Graph()
    tip = net.input("x", (8, 32))
    for k in range(6):
        layer = net.weight(f"w{k}", _table(draw, 32, 32, 1 / math.sqrt(32)))
        tip = net.relu(net.matmul(tip, layer))
    net.output(tip, "y")
    return net, [{"x": _table(draw, 8, 32, 1.0)} for _ in range(10)]


def attention_step_graph(dim: int = 8, cache: int = 5) -> Graph:
    """Running example A's graph: softmax(q [kc; kn]^T / sqrt(dim)) [vc; vn].

    q is (1, dim); the key and value caches kc, vc are (cache, dim) and this step's kn, vn
    (1, dim) are concatenated below them; the output "out" is (1, dim).
    """
    net = Graph()
    q = net.input("q", (1, dim))
    keys = net.concat_rows(net.input("kc", (cache, dim)), net.input("kn", (1, dim)))
    scores = net.matmul(q, keys, transpose_b=True, scale=1 / math.sqrt(dim))
    weights = net.softmax(scores)
    values = net.concat_rows(net.input("vc", (cache, dim)), net.input("vn", (1, dim)))
    net.output(net.matmul(weights, values), "out")
    return net


def attention_step_sample(draw: random.Random, dim: int = 8, cache: int = 5) -> Sample:
    """One set of unit-Gaussian inputs for :func:`attention_step_graph`, drawn q, kc, kn, vc, vn."""
    rows = {"q": 1, "kc": cache, "kn": 1, "vc": cache, "vn": 1}
    return {name: _table(draw, count, dim, 1.0) for name, count in rows.items()}


def attention_step_network(seed: int = 3, samples: int = 20) -> tuple[Graph, list[Sample], Sample]:
    """Running example A as the seed runs it: the graph, 20 calibration samples and the test
    input, all drawn from one Random(3)."""
    draw = random.Random(seed)
    calibration = [attention_step_sample(draw) for _ in range(samples)]
    return attention_step_graph(), calibration, attention_step_sample(draw)


def format_table(runs: list[SeedRun]) -> str:
    """The table as text: one line per seed."""
    lines = [f"{'seed':>5} {'nodes':>6} {'instr':>6} {'spad (reuse)':>13} {'(no reuse)':>11} "
             f"{'cycles':>7} {'error':>7}"]
    for run in runs:
        seed, nodes, instr, high, high0, error = run.row
        lines.append(f"{seed:5d} {nodes:6d} {instr:6d} {high:13d} {high0:11d} "
                     f"{run.outcome.counters.cycles:7d} {100 * error:6.2f}%")
    return "\n".join(lines)


if __name__ == "__main__":
    print(format_table([compile_seed(s, DEFAULT) for s in TABLE_SEEDS]))
