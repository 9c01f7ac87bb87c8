"""Capacity: the largest MLPs Capra compiles for a machine, with streaming and without.

An MLP here is a chain of matmuls by int8 weights with a relu between them and no bias,
``widths[0]`` inputs, ``widths[-1]`` outputs, on a batch of rows (the input and the output in
external memory, the weights too). :func:`fits` compiles one (one calibration sample: the
scratchpad and the external memory do not depend on the values); the searches ask how far a
shape goes before the compiler refuses it:

* :func:`widest_pair`: the two-layer MLP d-h-classes with the most weight words (d, h up
  to K_MAX);
* :func:`largest_batch`: the most rows a given MLP takes;
* :func:`deepest`: the most layers of one width;
* :func:`most_weights`: the most weight words over d-h1-h2-classes, widths in steps of 8.

``python -m compiler.testing.capacity`` prints them for the default machine and for
``Params(SPAD_WORDS=65536, EXT_WORDS=65536)``, streaming on (Capra) and off (the seed's
compiler, every weight whole), with the reason the next size up is refused.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Sequence

import numpy as np

from sim.spec import DEFAULT, Params

from ..errors import CompileError, plural
from ..ir import Graph
from ..pipeline import compile_graph

CLASSES = 10
"""Outputs of the MLPs searched (a classifier's)."""
BATCH = 16


def mlp(widths: Sequence[int], batch: int) -> Graph:
    """x (batch, widths[0]) through a matmul per layer, relu between, output "y"."""
    rng = np.random.default_rng(0)
    g = Graph()
    h = g.input("x", (batch, widths[0]))
    for i, (fan_in, fan_out) in enumerate(itertools.pairwise(widths)):
        h = g.matmul(h, g.weight(f"w{i}", rng.normal(0, 1 / np.sqrt(fan_in), (fan_in, fan_out))))
        if i < len(widths) - 2:
            h = g.relu(h)
    g.output(h, "y")
    return g


def refusal(widths: Sequence[int], batch: int, params: Params = DEFAULT, stream: bool = True) -> str | None:
    """Why the compiler refuses the MLP (the refusal's problem), or None when it compiles."""
    graph = mlp(widths, batch)
    sample = {"x": np.random.default_rng(1).normal(size=(batch, widths[0]))}
    try:
        compile_graph(graph, [sample], params=params, stream=stream)
    except CompileError as e:
        return e.problem
    return None


def fits(widths: Sequence[int], batch: int, params: Params = DEFAULT, stream: bool = True) -> bool:
    """Whether the MLP compiles for the machine."""
    return refusal(widths, batch, params, stream) is None


def widest_pair(params: Params, stream: bool, batch: int = BATCH) -> tuple[int, int] | None:
    """The two-layer MLP d-h-CLASSES with the most weight words that compiles (d, h <= K_MAX,
    steps of 8)."""
    sizes = range(8, params.K_MAX + 1, 8)
    found = [(d * h + h * CLASSES, d, h) for d in sizes for h in sizes
             if fits((d, h, CLASSES), batch, params, stream)]
    return max(found)[1:] if found else None


def largest_batch(widths: Sequence[int], params: Params, stream: bool, limit: int = 1 << 12) -> int:
    """The most rows the MLP compiles for (0 if none), by bisection up to ``limit``."""
    low, high = 0, limit + 1
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(widths, middle, params, stream) else (low, middle)
    return low


def deepest(width: int, params: Params, stream: bool, batch: int = BATCH, limit: int = 64) -> int:
    """The most hidden layers of ``width`` (width -> width) before the CLASSES-wide last layer."""
    depth = 0
    while depth < limit and fits((width,) * (depth + 2) + (CLASSES,), batch, params, stream):
        depth += 1
    return depth


def most_weights(params: Params, stream: bool, batch: int = BATCH,
                 step: int = 8) -> tuple[int, tuple[int, ...]]:
    """(weight words, widths) of the d-h1-h2-CLASSES MLP with the most weight words that
    compiles, widths from ``step`` to K_MAX in steps of ``step``."""
    sizes = range(step, params.K_MAX + 1, step)
    best = (0, ())
    for widths in itertools.product(sizes, repeat=3):
        shape = (*widths, CLASSES)
        words = sum(a * b for a, b in itertools.pairwise(shape))
        if words > best[0] and fits(shape, batch, params, stream):
            best = (words, shape)
    return best


def report(params: Params) -> list[str]:
    """The capacity lines for one machine."""
    k = params.K_MAX
    lines = [f"{params}: scratchpad {params.SPAD_WORDS:,} words, external memory {params.EXT_WORDS:,}; "
             f"batch {BATCH}"]
    for stream in (False, True):
        pair = widest_pair(params, stream)
        words, shape = most_weights(params, stream)
        depth = deepest(k, params, stream)
        deep = (k,) * (depth + 1) + (CLASSES,)
        one_more = refusal((*deep[:-1], k, CLASSES), BATCH, params, stream)
        two = "none" if pair is None else f"{pair[0]}-{pair[1]}-{CLASSES}"
        lines += [f"  {'streaming (Capra)' if stream else 'every weight whole (the seed compiler)'}:",
                  f"    most weights, two layers: {two}",
                  f"    most weights, three layers: {'-'.join(map(str, shape))} ({words:,} words)",
                  f"    deepest {k}-wide MLP: {plural(depth, 'layer')} of {k} x {k}, then {k} x {CLASSES}; "
                  f"one more is refused: {one_more}",
                  f"    largest batch of 64-64-{CLASSES}: {largest_batch((64, 64, CLASSES), params, stream)}"]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compiler.testing.capacity",
                                     description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    for params in (DEFAULT, Params(SPAD_WORDS=65536, EXT_WORDS=65536)):
        print("\n".join(report(params)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
