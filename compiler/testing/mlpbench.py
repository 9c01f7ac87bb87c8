"""``make bench``, second part: the digits MLP 64 -> 256 -> 128 -> 10 (biases, relu) at batch 1, 8, 64.

The model of ``examples/digits_mlp.py`` (issue 14), with weights and biases drawn at random: the
cycles of a GA-2 program depend on its shapes, never on the values. For each batch it compiles
for the default machine, or, when the activations do not fit its scratchpad (computed tensors
stay there; only inputs and weights stream), for the smallest larger scratchpad that holds them,
and runs it on the reference machine (whose counters the RTL matches). It prints, per image,
the cycles, the words the DMA moved, the MXU utilisation (useful multiply-adds / (T*T*cycles)),
the share of cycles spent loading weights, and the two bounds the program is measured
against: the MXU bound (one outer-product step per cycle: the sum of K over the MMs) and the
DMA bound (the words moved / LANES).

Usage: python -m compiler.testing.mlpbench [--param t8] [--batches 1 8 64]
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from sim.machines import add_argument, from_args
from sim.spec import BY_NAME, DEFAULT, Params, latency

from ..errors import CompileError
from ..ir import Graph
from ..ops import Op
from ..pipeline import compile_graph
from ..program import Program

WIDTHS = (64, 256, 128, 10)
BATCHES = (1, 8, 64)
LARGER_SCRATCHPADS = (8192, 16384, 32768, 65536)


def mlp(batch: int, seed: int = 0) -> Graph:
    """The MLP for ``batch`` images: three biased Linear layers, relu after the first two."""
    rng = np.random.default_rng(seed)
    g = Graph()
    x = g.input("x", (batch, WIDTHS[0]))
    for k, (inner, outer) in enumerate(itertools.pairwise(WIDTHS)):
        weight = g.weight(f"w{k}", rng.normal(0, 1 / np.sqrt(inner), (inner, outer)))
        x = g.matmul(x, weight, bias=rng.normal(0, 0.1, outer))
        if k < len(WIDTHS) - 2:
            x = g.relu(x)
    g.output(x, "logits")
    return g


@dataclass
class Row:
    """One batch's figures (cycles and words per run unless named per image)."""

    batch: int
    machine: Params
    cycles: int
    dma_words: int
    weight_cycles: int
    mxu_bound: int
    macs: int

    def line(self) -> str:
        b, p = self.batch, self.machine
        util = 100 * self.macs / (p.T * p.T * self.cycles)
        dma_bound = -(-self.dma_words // p.LANES)
        spad = "" if p.SPAD_WORDS == DEFAULT.SPAD_WORDS else f"  (SPAD_WORDS={p.SPAD_WORDS:,})"
        return (f"{b:5d}  {self.cycles / b:10,.1f}  {self.dma_words / b:9,.1f}  {util:5.1f}%  "
                f"{100 * self.weight_cycles / self.cycles:5.1f}%  {self.mxu_bound / b:10,.1f}  "
                f"{dma_bound / b:9,.1f}  {self.cycles / max(self.mxu_bound, dma_bound):5.2f}x{spad}")


def compile_for(batch: int, params: Params) -> Program:
    """The MLP compiled for ``params``, or for the smallest larger scratchpad it fits."""
    graph = mlp(batch)
    calibration = [{"x": np.random.default_rng(k).normal(size=(batch, WIDTHS[0]))} for k in range(4)]
    for words in (params.SPAD_WORDS, *(w for w in LARGER_SCRATCHPADS if w > params.SPAD_WORDS)):
        try:
            return compile_graph(graph, calibration, params=replace(params, SPAD_WORDS=words))
        except CompileError as refused:
            last = refused
    raise last


def measure(batch: int, params: Params) -> Row:
    program = compile_for(batch, params)
    p = program.machine
    outcome = program.run({"x": np.random.default_rng(99).normal(size=(batch, WIDTHS[0]))}, warn=False)
    weights = [e for e in program.ext.values() if e.kind == Op.WEIGHT]
    dma_words = weight_cycles = mxu_bound = 0
    for ins in program.code:
        f = ins.fields
        if ins.op in ("LD", "ST"):
            dma_words += f["len"]
        if ins.op == "LD" and any(e.addr <= f["src"] < e.end for e in weights):
            weight_cycles += latency(BY_NAME["LD"], f, p)
        if ins.spec.counter == "mxu":         # MM and MMRQ
            mxu_bound += f["K"]
    macs = batch * sum(a * b for a, b in itertools.pairwise(WIDTHS))
    return Row(batch, p, outcome.counters.cycles, dma_words, weight_cycles, mxu_bound, macs)


def report(params: Params, batches: Sequence[int] = BATCHES) -> list[str]:
    lines = [f"digits MLP {'-'.join(map(str, WIDTHS))} (biases, relu; K = 256 and 128 cut into MMs of "
             f"K_MAX = {params.K_MAX}), per image, on T = {params.T}, LANES = {params.LANES}:",
             "batch  cycles/img  DMA words  MXU util  weights  MXU bound  DMA bound  vs bound"]
    lines += [measure(b, params).line() for b in batches]
    lines.append("(weights: the share of cycles in LDs of weights; MXU bound: sum of K over the MMs; "
                 "DMA bound: words moved / LANES; vs bound: cycles over the larger bound)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compiler.testing.mlpbench",
                                     description="Cycles of the 64-256-128-10 digits MLP per batch size.")
    add_argument(parser)
    parser.add_argument("--batches", type=int, nargs="+", default=list(BATCHES), metavar="B",
                        help="batch sizes (default 1 8 64)")
    args = parser.parse_args(argv)
    params = from_args(args, parser)
    if any(b < 1 for b in args.batches):
        parser.error("--batches: every batch must be at least 1")
    print("\n".join(report(params, args.batches)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
