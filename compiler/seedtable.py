"""The seed's table of twelve fresh random graphs (seeds 100-111, seed chapter 11, section 2
of its run script), as a reusable computation: the co-simulation runs the same programs on
the RTL.

Contract: for a seed, the graph is ``random_graph(seed)``; one ``random.Random(seed)``
then draws 30 calibration samples and, after them, the test input; the program is compiled
with and without buffer reuse and the reuse program is run on the test input.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from .accuracy import relative_error
from .ir import Graph
from .pipeline import compile_graph
from .program import Program, RunOutcome
from .random_graphs import random_graph, sample_inputs

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


def compile_seed(seed: int) -> SeedRun:
    """Build, calibrate, compile (twice) and run the graph of one seed."""
    graph, names = random_graph(seed)
    rng = random.Random(seed)
    calibration = [sample_inputs(names, rng) for _ in range(CALIBRATION_SAMPLES)]
    test = sample_inputs(names, rng)
    program = compile_graph(graph, calibration)
    program_no_reuse = compile_graph(graph, calibration, reuse=False)
    outcome = program.run(test)
    error = relative_error(program, outcome, test)
    return SeedRun(seed, graph, program, program_no_reuse, test, outcome, error)


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
    print(format_table([compile_seed(s) for s in TABLE_SEEDS]))
