"""``make bench``: GA-2's cycles on the seed's programs, against the seed chip's published figures.

The seed's graphs (seeds 100-111 of the chapter-11 table, and running example A) are
compiled with Capra and run on the reference machine, whose counters the RTL matches
exactly (``make cosim`` checks that). For each program it prints the cycles, the seed
chip's figure (GA2.md section 6), the ratio, the split over the unit counters and the MXU
utilisation: useful multiply-adds (M*N*K summed over the MM instructions) divided by
T*T*cycles. The last line is the headline:
``seeds 100-111: N cycles (seed chip 17022, X.XXx fewer)``.

Usage: python -m compiler.testing.perf [--param t8]   (any machine: sim.machines)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from sim import spec
from sim.asm import Instruction
from sim.machine import Counters
from sim.machines import add_argument, describe, from_args
from sim.spec import DEFAULT, Params

from ..pipeline import compile_graph
from ..workloads.seedtable import TABLE_SEEDS, attention_step_network, compile_seed

SEED_CHIP_CYCLES = {
    100: 830, 101: 1497, 102: 1124, 103: 2659, 104: 237, 105: 2200,
    106: 2600, 107: 1503, 108: 1183, 109: 770, 110: 1080, 111: 1339,
}
"""The seed chip's cycles for the graphs of seeds 100-111 (GA2.md section 6)."""
SEED_CHIP_EXAMPLE_A = 484
"""The seed chip's cycles for running example A (GA2.md section 6)."""
TARGET_CYCLES = 5600
"""Issue 4's target for seeds 100-111: at most this many cycles, over 3x fewer than the seed chip."""


@dataclass
class Row:
    """One program's figures."""

    name: str
    instructions: int
    counters: Counters
    macs: int
    seed_chip: int

    def utilisation(self, params: Params) -> float:
        """Useful multiply-adds over T*T*cycles."""
        return self.macs / (params.T * params.T * self.counters.cycles)


def useful_macs(code: Sequence[Instruction]) -> int:
    """Multiply-adds the MM (and MMRQ) instructions of a program perform: sum of M*N*K."""
    return sum(ins.M * ins.N * ins.K for ins in code if ins.spec.counter == "mxu")


def measure(params: Params) -> tuple[list[Row], Row]:
    """Compile and run the seed table's graphs and running example A.

    Returns:
        (one row per seed 100-111, the row of example A).
    """
    rows = []
    for seed in TABLE_SEEDS:
        run = compile_seed(seed, params)
        rows.append(Row(f"seed {seed}", len(run.program.code), run.outcome.counters,
                        useful_macs(run.program.code), SEED_CHIP_CYCLES[seed]))
    graph, calibration, test = attention_step_network()
    program = compile_graph(graph, calibration, params=params)
    outcome = program.run(test)
    example = Row("example A", len(program.code), outcome.counters, useful_macs(program.code),
                  SEED_CHIP_EXAMPLE_A)
    return rows, example


def format_report(rows: list[Row], example: Row, params: Params) -> list[str]:
    """The report as lines of text, the headline last (the machine first, unless the default)."""
    waits = bool(params.OVERLAP)   # the engines side by side: the hazard and port waits too
    header = (f"{'program':<10} {'instr':>5} {'cycles':>7} {'seed chip':>9} {'fewer':>6}   "
              f"{'dma':>5} {'mxu':>5} {'vpu':>5} {'sfu':>5}   {'MXU util':>8}"
              + (f"   {'hazard':>6} {'port':>5}" if waits else ""))
    lines = [] if params == DEFAULT else [f"machine: {describe(params)}", ""]
    lines += [header, "-" * len(header)]

    def line(row: Row) -> str:
        c = row.counters
        return (f"{row.name:<10} {row.instructions:5d} {c.cycles:7d} {row.seed_chip:9d} "
                f"{row.seed_chip / c.cycles:5.2f}x   {c.dma:5d} {c.mxu:5d} {c.vpu:5d} {c.sfu:5d}   "
                f"{100 * row.utilisation(params):7.1f}%" + (f"   {c.hazard:6d} {c.port:5d}" if waits else ""))

    lines += [line(row) for row in rows]
    summed = Counters(*(sum(column) for column in zip(*(r.counters.as_tuple(spec.ALL_COUNTERS) for r in rows),
                                                      strict=True)))
    total = Row("total", sum(r.instructions for r in rows), summed, sum(r.macs for r in rows),
                sum(SEED_CHIP_CYCLES.values()))
    lines += ["-" * len(header), line(total), "", line(example), ""]
    cycles = total.counters.cycles
    verdict = "met" if cycles <= TARGET_CYCLES else f"missed by {cycles - TARGET_CYCLES} cycles"
    lines.append(f"target: <= {TARGET_CYCLES} cycles for seeds 100-111: {verdict}")
    lines.append(f"seeds 100-111: {cycles} cycles (seed chip {total.seed_chip}, "
                 f"{total.seed_chip / cycles:.2f}x fewer)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m compiler.testing.perf",
        description="GA-2's cycles on the seed's programs (reference machine = RTL counters) "
                    "against the seed chip's published figures, with MXU utilisation.")
    add_argument(parser)
    args = parser.parse_args(argv)
    params = from_args(args, parser)
    rows, example = measure(params)
    print("\n".join(format_report(rows, example, params)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
