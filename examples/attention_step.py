#!/usr/bin/env python3
"""Running example A: one decode step of an attention head, compiled pass by pass.

The graph: a query row q is scored against a key cache kc plus this step's key kn (the
cache and the new row are concatenated), the scores go through a softmax, and the
probabilities weight a value cache vc plus the new value vn. The script prints what every
stage of Capra decides (graph, calibrated ranges, scales and which are pinned, requantizer
pairs, tiles, the allocator's events as they happen, the program) and then checks the
program against the integer interpreter, the real-number meaning and floating point.

Usage: python examples/attention_step.py [--dim 8] [--cache 5] [--samples 20] [--seed 3]

A size Capra refuses (``--dim 100``: beyond K_MAX; ``--cache 100``: softmax rows beyond
SM_MAX_LEN) stops the script after the graph: it prints the refusal, which names the node
at fault and the fix, and exits with status 2.
"""

from __future__ import annotations

import argparse
import random
import sys

import numpy as np
from _cli import add_machine, machine, positive  # examples/_cli.py

from compiler import CompileError, Graph, compile_graph
from compiler.allocator import AllocEvent
from compiler.evaluate import evaluate
from compiler.interpret import interpret
from compiler.lowering import tiles
from compiler.realcheck import stagewise_problems
from compiler.testing.seedtable import attention_step_graph as build_graph
from compiler.testing.seedtable import attention_step_sample as draw_sample


def describe(g: Graph) -> list[str]:
    """One line per node: id, op, operands, shape, name, transpose and factor."""
    lines = []
    for n in g.nodes:
        operands = ", ".join(f"%{i}" for i in n.ins)
        extra = n.name
        if n.transpose_b:
            extra += " ^T"
        if n.op == "matmul" and n.factor != 1:
            extra += f" x{n.factor:.4f}"
        lines.append(f"  %{n.id:<2d} = {n.op:8s} {operands:8s} -> {n.shape}  {extra}")
    return lines


def allocator_lines(events: list[AllocEvent]) -> list[str]:
    lines = []
    for k, e in enumerate(events):
        if e.kind == "alloc":
            last = e.addr + e.words - 1
            lines.append(f"   {k:2d}: alloc {e.words:4d} words at {e.addr:4d} .. {last:4d}  {e.what}")
        else:
            lines.append(f"   {k:2d}: free  {e.words:4d} words at {e.addr:4d}            {e.what}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Compile one attention decode step with Capra, "
                                     "printing what every pass decides.")
    parser.add_argument("--dim", type=positive, default=8, help="head dimension (default 8)")
    parser.add_argument("--cache", type=positive, default=5, help="rows already in the KV cache (default 5)")
    parser.add_argument("--samples", type=positive, default=20, help="calibration samples (default 20)")
    parser.add_argument("--seed", type=int, default=3, help="random seed of the data (default 3)")
    add_machine(parser)
    args = parser.parse_args(argv)
    args.params = machine(parser, args)
    try:
        return run(args)
    except CompileError as refused:  # the message names the node at fault and the fix
        print(f"error: {refused}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace) -> int:
    """Compile the step pass by pass, printing each, and check it; 0 when machine == interpreter."""
    g = build_graph(args.dim, args.cache)
    rng = random.Random(args.seed)
    calibration = [draw_sample(rng, args.dim, args.cache) for _ in range(args.samples)]
    test = draw_sample(rng, args.dim, args.cache)

    print("== pass 0: the graph, as written")
    print("\n".join(describe(g)))

    events: list[AllocEvent] = []
    program = compile_graph(g, calibration, events=events, params=args.params)
    plan = program.plan

    print(f"\n== pass 1: calibration on {args.samples} samples: a tensor's range is its largest |value|")
    for node in g.nodes:
        print(f"  %{node.id:<2d} {node.op:8s} range {plan.ranges[node.id]:8.4f}")

    print("\n== pass 2: scales (range / 127 of the tensor's group; pinned where the hardware says so)")
    for n in g.nodes:
        if n.id not in program.scales:
            continue
        own = plan.ranges[n.id] / 127
        if n.id in plan.pins:
            why = f"pinned: {plan.pins[n.id]}"
        elif n.op == "input" and plan.group[n.id] != n.id:
            why = f"shares the buffer, hence the scale, of %{plan.group[n.id]}"
        else:
            why = ""
        scale = program.scales[n.id]
        print(f"  %{n.id:<2d} {n.op:8s} scale {scale:.6f}  (own range / 127 = {own:.6f})  {why}")

    print("\n== pass 3: requantizer pairs (m, s): the real factor is m / 2^s")
    for key, (m, s) in program.requantizers.items():
        print(f"  node {key}: ({m}, {s})  = {m / 2 ** s:.8f}")

    print(f"\n== pass 4: tiling: each matmul becomes {program.machine.T} x {program.machine.T} output tiles")
    for product in (node for node in g.nodes if node.op == "matmul"):
        rows, inner = g.nodes[product.ins[0]].shape
        cols = product.shape[1]
        found = [f"rows {i}-{i + r - 1} cols {j}-{j + c - 1}"
                 for i, j, r, c in tiles(rows, cols, program.machine.T)]
        print(f"  %{product.id}: ({rows} x {inner}) x ({inner} x {cols}): {len(found)} tile(s): "
              + "; ".join(found))

    no_reuse = compile_graph(g, calibration, reuse=False, params=args.params)
    print("\n== pass 5: allocation: the allocator's events in order (first fit; freed after the last reader)")
    print("\n".join(allocator_lines(events)))
    print(f"  high-water mark: {program.spad_high} words with reuse, {no_reuse.spad_high} without "
          f"(of {program.machine.SPAD_WORDS})")
    print("  kc and kn are views of one buffer (their concatenation), as are vc and vn: no copy instruction.")

    print("\n== pass 6: the program")
    print(program.listing())
    outcome = program.run(test)
    print(f"  {len(program.code)} instructions; counters on the reference machine: {outcome.counters}")

    print("\n== checks")
    ints = interpret(program, test)
    out_node = program.ext["out"].node
    got = outcome.outputs["out"].floats
    want = evaluate(g, test)[out_node]
    same = bool(np.array_equal(outcome.outputs["out"].ints, ints[out_node]))
    error = float(np.linalg.norm(got - want) / np.linalg.norm(want))
    print(f"  machine == integer interpreter, every output value: {same}")
    print(f"  error of the output against float, relative: {100 * error:.2f}%")
    print(f"  real-number check, node by node: {stagewise_problems(program, ints) or 'no problems'}")
    print("  output (float):", [round(float(v), 3) for v in got[0]])
    print("  reference     :", [round(float(v), 3) for v in want[0]])
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
