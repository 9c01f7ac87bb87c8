"""Compiler speed: battery throughput and compile time against graph size.

Prints (``python -m compiler.testing.bench`` / ``make bench-compiler``):

* graphs per second over the 60 battery graphs, for compile (30 calibration samples) plus
  one run on the reference machine, and for the whole battery check (a)-(e) of each graph;
* compile time for chains of 100, 1,000 and 10,000 nodes (see :func:`chain`: matmuls by
  4 x 4 weights alternating with adds), and the time per node, which must stay about
  constant: every pass is linear in the graph.
  The longest chain needs more instructions than the default instruction memory holds,
  so the chains are compiled for a machine with IMEM_WORDS = 65536.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import replace

import numpy as np

from sim.spec import DEFAULT

from ..errors import CompileError
from ..ir import Graph
from ..pipeline import compile_graph
from ..workloads.random_graph import random_graph, sample_inputs
from .battery import BATTERY_SEEDS, CALIBRATION_SAMPLES, check_graph

CHAIN_SIZES = (100, 1_000, 10_000)
CHAIN_WIDTH = 4
CHAIN_IMEM_WORDS = 1 << 16
"""The instruction memory the chains are compiled for (the largest sim.spec.Params allows)."""
CHAIN_MIN = 11
"""The shortest chain :func:`chain` makes of exactly that many nodes: the input, eight weights,
one operation and the output."""


def battery_throughput(seeds: range = BATTERY_SEEDS) -> tuple[float, float]:
    """(graphs/s for compile + one run, graphs/s for the full check (a)-(e))."""
    cases = []
    for seed in seeds:
        graph, names = random_graph(seed)
        rng = random.Random(seed * 7 + 1)
        calibration = [sample_inputs(names, rng) for _ in range(CALIBRATION_SAMPLES)]
        cases.append((graph, calibration, sample_inputs(names, rng)))
    start = time.perf_counter()
    for graph, calibration, test in cases:
        compile_graph(graph, calibration).run(test, warn=False)
    compile_and_run = len(cases) / (time.perf_counter() - start)
    start = time.perf_counter()
    for seed in seeds:
        check_graph(seed, params=DEFAULT)
    full_check = len(seeds) / (time.perf_counter() - start)
    return compile_and_run, full_check


def chain(nodes: int, width: int = CHAIN_WIDTH, seed: int = 0) -> tuple[Graph, list[dict[str, np.ndarray]]]:
    """A graph of ``nodes`` nodes: an input x, eight orthogonal width x width weights, then
    alternately t = 0.5 * (t W_k) and t = t + x, and an output. The map is a contraction,
    so values neither grow nor vanish however long the chain. Two calibration samples."""
    rng = np.random.default_rng(seed)
    net = Graph()
    x = net.input("x", (width, width))
    weights = [net.weight(f"w{k}", np.linalg.qr(rng.normal(size=(width, width)))[0]) for k in range(8)]
    tip = x
    while len(net.nodes) < nodes - 1:
        if net.nodes[tip].op == "matmul":
            tip = net.add(tip, x)
        else:
            tip = net.matmul(tip, weights[len(net.nodes) % len(weights)], scale=0.5)
    net.output(tip, "y")
    calibration = [{"x": rng.normal(size=(width, width))} for _ in range(2)]
    return net, calibration


def chain_compile_seconds(nodes: int, repeats: int = 3) -> float:
    """Best of ``repeats`` compile times of a chain (the best is the least disturbed by
    other work on the machine)."""
    net, calibration = chain(nodes)
    machine = replace(DEFAULT, IMEM_WORDS=CHAIN_IMEM_WORDS)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        compile_graph(net, calibration, params=machine)
        times.append(time.perf_counter() - start)
    return min(times)


def chain_size(text: str) -> int:
    """argparse type of --sizes: a whole number of at least :data:`CHAIN_MIN`."""
    try:
        size = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if size < CHAIN_MIN:
        raise argparse.ArgumentTypeError(f"{size} is too small: a chain has at least {CHAIN_MIN} nodes "
                                         "(the input, eight weights, one operation, the output)")
    return size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compiler.testing.bench",
                                     description="Capra compile speed.")
    parser.add_argument("--sizes", type=chain_size, nargs="*", default=list(CHAIN_SIZES),
                        help=f"chain lengths in nodes, each at least {CHAIN_MIN} (default 100 1000 10000; "
                             "about 27,000 fill the 65,536 instructions the chains are compiled for)")
    args = parser.parse_args(argv)
    compile_and_run, full_check = battery_throughput()
    print(f"battery, {len(BATTERY_SEEDS)} graphs: {compile_and_run:.0f} graphs/s compiled and run once; "
          f"{full_check:.0f} graphs/s through checks (a)-(e) (two compiles, two runs, interpreter, checks)")
    print(f"{'chain nodes':>12} {'compile s':>10} {'us per node':>12}   (best of 3)")
    for size in args.sizes:
        try:
            seconds = chain_compile_seconds(size)
        except CompileError as e:
            print(f"error: a chain of {size:,} nodes: {e}", file=sys.stderr)
            return 1
        print(f"{size:12d} {seconds:10.3f} {1e6 * seconds / size:12.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
