"""Compiler speed: battery throughput and compile time against graph size.

Prints (``python -m compiler.bench`` / ``make bench-compiler``):

* graphs per second over the 60 battery graphs, for compile (30 calibration samples) plus
  one run on the reference machine, and for the whole battery check (a)-(e) of each graph;
* compile time for chains of about 100, 1,000 and 10,000 nodes (an input, one 4 x 4
  orthogonal weight, then matmul after matmul, so values neither grow nor vanish), and the
  time per node, which must stay about constant: every pass is linear in the graph.
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

from .battery import BATTERY_SEEDS, CALIBRATION_SAMPLES, check_graph
from .ir import Graph
from .pipeline import compile_graph
from .random_graphs import random_graph, sample_inputs

CHAIN_SIZES = (100, 1_000, 10_000)
CHAIN_WIDTH = 4


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
        compile_graph(graph, calibration).run(test)
    compile_and_run = len(cases) / (time.perf_counter() - start)
    start = time.perf_counter()
    for seed in seeds:
        check_graph(seed)
    full_check = len(seeds) / (time.perf_counter() - start)
    return compile_and_run, full_check


def chain(nodes: int, width: int = CHAIN_WIDTH, seed: int = 0) -> tuple[Graph, list[dict[str, np.ndarray]]]:
    """A chain of matmuls by one orthogonal width x width weight, about ``nodes`` nodes in
    all, and two calibration samples."""
    rng = np.random.default_rng(seed)
    orthogonal, _ = np.linalg.qr(rng.normal(size=(width, width)))
    net = Graph()
    tip = net.input("x", (width, width))
    weight = net.weight("w", orthogonal)
    for _ in range(nodes - 3):
        tip = net.matmul(tip, weight)
    net.output(tip, "y")
    calibration = [{"x": rng.normal(size=(width, width))} for _ in range(2)]
    return net, calibration


def chain_compile_seconds(nodes: int) -> float:
    net, calibration = chain(nodes)
    machine = replace(DEFAULT, IMEM_WORDS=1 << 16)
    start = time.perf_counter()
    compile_graph(net, calibration, params=machine)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Capra compile speed.")
    parser.add_argument("--sizes", type=int, nargs="*", default=list(CHAIN_SIZES),
                        help="chain lengths in nodes (default 100 1000 10000)")
    args = parser.parse_args(argv)
    compile_and_run, full_check = battery_throughput()
    print(f"battery, {len(BATTERY_SEEDS)} graphs: {compile_and_run:.0f} graphs/s compiled and run once; "
          f"{full_check:.0f} graphs/s through checks (a)-(e) (two compiles, two runs, interpreter, checks)")
    print(f"{'chain nodes':>12} {'compile s':>10} {'us per node':>12}")
    for size in args.sizes:
        seconds = chain_compile_seconds(size)
        print(f"{size:12d} {seconds:10.3f} {1e6 * seconds / size:12.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
