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
from pathlib import Path

from _cli import add_machine, machine, positive  # examples/_cli.py

from compiler import CompileError, compile_graph
from compiler.explain import run_checks
from compiler.workloads.seedtable import attention_step_graph as build_graph
from compiler.workloads.seedtable import attention_step_sample as draw_sample

PLOTS = Path(__file__).resolve().parent.parent / "build" / "examples" / "attention_step"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Compile one attention decode step with Capra, "
                                     "printing what every pass decides.")
    parser.add_argument("--dim", type=positive, default=8, help="head dimension (default 8)")
    parser.add_argument("--cache", type=positive, default=5, help="rows already in the KV cache (default 5)")
    parser.add_argument("--samples", type=positive, default=20, help="calibration samples (default 20)")
    parser.add_argument("--seed", type=int, default=3, help="random seed of the data (default 3)")
    parser.add_argument("--plots", default=str(PLOTS), metavar="DIR",
                        help=f"folder for the plots (default {PLOTS}; '' for none)")
    add_machine(parser)
    args = parser.parse_args(argv)
    args.params = machine(parser, args)
    try:
        return run(args)
    except CompileError as refused:  # the message names the node at fault and the fix
        print(f"error: {refused}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace) -> int:
    """Compile the step, print its account and check it; 0 when machine == interpreter."""
    g = build_graph(args.dim, args.cache)
    rng = random.Random(args.seed)
    calibration = [draw_sample(rng, args.dim, args.cache) for _ in range(args.samples)]
    test = draw_sample(rng, args.dim, args.cache)

    program = compile_graph(g, calibration, params=args.params)
    print(program.explain(test, samples=args.samples))
    no_reuse = compile_graph(g, calibration, reuse=False, params=args.params)
    print(f"high-water mark: {program.spad_high} words with reuse, {no_reuse.spad_high} without buffer reuse")
    if args.plots:
        from viz import save_program_plots

        for path in save_program_plots(program, args.plots):
            print(f"plot: {path}")
    return 0 if run_checks(program, test).passed else 1


if __name__ == "__main__":
    sys.exit(main())
