#!/usr/bin/env python3
"""Running example B: compile a network of your own.

``build`` below is the part to edit: it describes a small residual network with a softmax
head. The script compiles it with Capra, runs it on the reference machine and compares it
with floating point; sweeps the hidden width to show how footprint, program length, cycles
and accuracy move (and where a weight no longer fits the scratchpad whole and streams in
blocks); and shows the graphs Capra refuses, each with its message and the fix it suggests.
``--no-stream`` compiles as the seed's compiler did, every weight whole (the sweep then
runs out of scratchpad at width 64, as the seed's does). The plots (the network's scales,
tiling, memory map, engine timeline and roofline, and the sweep's footprint, cycles and
error against the width) go to ``--plots`` as PNG files (default build/examples/own_graph;
``--plots ''`` saves none).

Usage: python examples/own_graph.py [--widths 8 16 32 48 64] [--no-refusals] [--no-stream] [--param t8]
                                    [--plots DIR]
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from _cli import add_machine, machine, positive  # examples/_cli.py

from compiler import CompileError, Graph, compile_graph
from compiler.accuracy import relative_error
from compiler.evaluate import evaluate
from sim.spec import DEFAULT, Params

Shapes = dict[str, tuple[int, int]]
PLOTS = Path(__file__).resolve().parent.parent / "build" / "examples" / "own_graph"


def build(batch: int = 4, d_in: int = 16, hidden: int = 32, d_out: int = 8,
          seed: int = 1) -> tuple[Graph, Shapes]:
    """THE PART TO EDIT: your network. Returns the graph and the shapes of its inputs.

    Here: h = relu(x W1); r = h W2 + h; probs = softmax(0.5 * r W3); class = argmax(probs).
    Weights are N(0, 1/fan_in), drawn from Random(seed) in the order W1, W2, W3.
    """
    rng = random.Random(seed)

    def layer(fan_in: int, fan_out: int) -> list[list[float]]:
        return [[rng.gauss(0, 1 / math.sqrt(fan_in)) for _ in range(fan_out)] for _ in range(fan_in)]

    net = Graph()
    features = net.input("x", (batch, d_in))
    w1 = net.weight("w1", layer(d_in, hidden))
    first = net.relu(net.matmul(features, w1))
    w2 = net.weight("w2", layer(hidden, hidden))
    second = net.add(net.matmul(first, w2), first)
    w3 = net.weight("w3", layer(hidden, d_out))
    probs = net.softmax(net.matmul(second, w3, scale=0.5))
    net.output(probs, "probs")
    net.output(net.argmax(probs), "class")
    return net, {"x": (batch, d_in)}


def draw_inputs(shapes: Shapes, rng: random.Random) -> dict[str, list[list[float]]]:
    """Unit-Gaussian values for every input, row by row."""
    return {name: [[rng.gauss(0, 1) for _ in range(cols)] for _ in range(rows)]
            for name, (rows, cols) in shapes.items()}


@dataclass
class Row:
    """One width of the sweep; the numbers are None when the network does not compile."""

    hidden: int
    instructions: int | None = None
    spad: int | None = None
    spad_no_reuse: int | None = None
    cycles: int | None = None
    error: float | None = None
    classes: tuple[list[int], list[int]] | None = None
    refusal: str = ""
    note: str = ""
    blocked: list[str] = field(default_factory=list)


def compile_width(hidden: int, stream: bool = True, params: Params = DEFAULT) -> Row:
    """Build with this hidden width, calibrate on 30 samples from Random(hidden), test on the
    next; ``stream=False`` loads every weight whole (the seed's compiler); compiled for the
    machine ``params``. A width whose hidden x hidden weight alone is more than the external
    memory is refused before that weight is drawn (10^10 values for 100,000). (A width above
    K_MAX compiles: its products are cut along K into MMs that add into one accumulator.)"""
    row = Row(hidden)
    if hidden * hidden > params.EXT_WORDS:
        row.refusal = (f"hidden width {hidden}: its {hidden} x {hidden} weight alone is more than the "
                       f"{params.EXT_WORDS} words of external memory (refused before building it)")
        return row
    g, shapes = build(hidden=hidden)
    rng = random.Random(hidden)
    calibration = [draw_inputs(shapes, rng) for _ in range(30)]
    test = draw_inputs(shapes, rng)
    try:
        program = compile_graph(g, calibration, stream=stream, params=params)
    except CompileError as e:
        row.refusal = e.problem
        return row
    try:
        row.spad_no_reuse = compile_graph(g, calibration, reuse=False, stream=stream, params=params).spad_high
    except CompileError:
        row.spad_no_reuse = None
    row.blocked = [f"matmul node {nid}: {b.describe()}" for nid, b in program.blockings.items()
                   if not b.whole]
    outcome = program.run(test)
    reference = evaluate(g, test)
    class_node = g.names["class"]        # the float reference is of g (program.graph may be merged)
    compiled = [int(v) for v in outcome.outputs["class"].ints[:, 0]]
    floating = [int(v) for v in reference[class_node][:, 0]]
    row.instructions, row.spad = len(program.code), program.spad_high
    row.cycles, row.error = outcome.counters.cycles, relative_error(program, outcome, test)
    row.classes = (compiled, floating)
    differ = [i for i in range(len(compiled)) if compiled[i] != floating[i]]
    if differ:
        i = differ[0]
        top = sorted(reference[g.names["probs"]][i], reverse=True)[:2]
        row.note = (f"width {hidden}: sample {i} is classed {compiled[i]} instead of {floating[i]}; its two "
                    f"largest float probabilities are {top[0]:.3f} and {top[1]:.3f} "
                    f"(apart by {top[0] - top[1]:.3f})")
    return row


def sweep(widths: list[int], stream: bool = True, params: Params = DEFAULT) -> list[Row]:
    return [compile_width(w, stream, params) for w in widths]


def refusals() -> list[tuple[str, CompileError]]:
    """Graphs Capra refuses, each with the error it raises."""
    cases = []

    def attempt(title: str, action: callable) -> None:
        try:
            action()
        except CompileError as e:
            cases.append((title, e))
        else:
            raise AssertionError(f"{title}: compiled, but should have been refused")

    def one_product(rows: int, inner: int, cols: int, weight_value: float) -> None:
        net = Graph()
        weight = net.weight("w", np.full((inner, cols), weight_value))
        product = net.matmul(net.input("x", (rows, inner)), weight)
        net.output(product, "y")
        compile_graph(net, [{"x": np.full((rows, inner), 0.5)}])

    def huge_bias() -> None:
        net = Graph()
        weight = net.weight("w", np.full((4, 4), 0.01))
        product = net.matmul(net.input("x", (2, 4)), weight, bias=np.full(4, 1e9))
        net.output(product, "y")
        compile_graph(net, [{"x": np.full((2, 4), 0.5)}])

    def relu_of_input() -> None:
        net = Graph()
        features = net.input("features", (3, 5))
        net.output(net.relu(features), "rectified")
        compile_graph(net, [{"features": np.full((3, 5), 0.5)}])

    def mismatched() -> None:
        g = Graph()
        g.matmul(g.input("a", (2, 3)), g.weight("b", np.full((4, 4), 0.1)))

    def too_big() -> None:
        one_product(64, 16, 64, 0.01)

    def two_concats() -> None:
        g = Graph()
        a, b = g.input("a", (1, 3)), g.input("b", (1, 3))
        g.output(g.add(g.concat_rows(a, b), g.concat_rows(b, a)), "y")
        compile_graph(g, [{"a": np.ones((1, 3)), "b": np.ones((1, 3))}])

    def nan_calibration() -> None:
        g, shapes = build()
        sample = draw_inputs(shapes, random.Random(0))
        sample["x"][1][2] = float("nan")
        compile_graph(g, [sample])

    attempt("a bias too large for the int32 accumulator beside the product", huge_bias)
    attempt("a relu that follows neither a matmul nor an add", relu_of_input)
    attempt("shapes that do not match", mismatched)
    attempt("a result too big for the scratchpad (64 x 64 words fill all of it: inputs and weights "
            "stream from external memory, results stay)", too_big)
    attempt("one tensor in two concatenations", two_concats)
    attempt("calibration data with a NaN", nan_calibration)
    return cases


def save_plots(program, rows: list[Row], folder: Path) -> None:
    """The network's plots and the sweep's, as PNG files in ``folder``."""
    from viz import SweepPoint, plot_sweep, save, save_program_plots

    points = [SweepPoint(r.hidden, r.spad, r.spad_no_reuse, r.cycles, r.error, r.refusal) for r in rows]
    written = save_program_plots(program, folder)
    written.append(save(plot_sweep(points, program.machine.SPAD_WORDS), folder / "sweep.png"))
    print(f"\n== plots: {', '.join(p.name for p in written)} in {folder}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Compile your own network with Capra: run it, sweep its "
                                     "hidden width, and see what the compiler refuses.")
    parser.add_argument("--widths", type=positive, nargs="+", default=[8, 16, 32, 48, 64],
                        help="hidden widths to sweep (default 8 16 32 48 64)")
    parser.add_argument("--no-refusals", action="store_true", help="skip the refused graphs")
    parser.add_argument("--no-stream", action="store_true",
                        help="load every weight whole, as the seed's compiler (no blocking)")
    parser.add_argument("--plots", default=str(PLOTS), metavar="DIR",
                        help=f"folder for the plots (default {PLOTS}; '' for none)")
    add_machine(parser)
    args = parser.parse_args(argv)
    params = machine(parser, args)

    print("== 1. the network of build() (batch 4, 16 inputs, 32 hidden, 8 classes)")
    g, shapes = build()
    rng = random.Random(9)
    calibration = [draw_inputs(shapes, rng) for _ in range(30)]
    test = draw_inputs(shapes, rng)
    program = compile_graph(g, calibration, params=params)
    outcome = program.run(test)
    floating = [int(v) for v in evaluate(g, test)[g.names["class"]][:, 0]]
    print(f"  {len(program.code)} instructions, scratchpad high-water mark {program.spad_high} words, "
          f"{outcome.counters.cycles} cycles on the reference machine")
    print(f"  class (compiled): {[int(v) for v in outcome.outputs['class'].ints[:, 0]]}   "
          f"class (floating point): {floating}")
    print(f"  probabilities: relative error {100 * relative_error(program, outcome, test):.2f}%")

    limits = "the scratchpad and the external memory set" if args.no_stream else "the external memory sets"
    print(f"\n== 2. hidden width sweep ({limits} the limits)")
    print("  width  instr  spad words reuse / no reuse  cycles  error vs float  classes")
    rows = sweep(args.widths, stream=not args.no_stream, params=params)
    for row in rows:
        if row.refusal:
            print(f"  {row.hidden:5d}  refused: {row.refusal}")
            continue
        no_reuse = "full" if row.spad_no_reuse is None else str(row.spad_no_reuse)
        agree = "agree" if row.classes[0] == row.classes[1] else "DIFFER (see below)"
        print(f"  {row.hidden:5d}  {row.instructions:5d}  {row.spad:12d} / {no_reuse:>8}  {row.cycles:6d}"
              f"  {100 * row.error:12.2f}%  {agree}")
    for row in rows:
        for blocked in row.blocked:
            print(f"  width {row.hidden}: too big for the scratchpad whole, {blocked}")
    for row in rows:
        if row.note:
            print(f"  note: {row.note}; a near tie flips under a 2% error in the probabilities, which is why "
                  "accuracy is judged on probabilities, not on classes")

    if args.plots:
        save_plots(program, rows, Path(args.plots))

    if not args.no_refusals:
        print("\n== 3. what Capra refuses: the message and the suggested fix")
        for title, error in refusals():
            print(f"  {title}\n      message: {error.problem}\n      fix: {error.fix}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
