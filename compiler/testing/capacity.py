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
* :func:`most_weights`: the most weight words over d-h1-h2-classes, widths in steps of 8;
* :func:`largest_model`: the most parameters (weights and biases) of 64-h-h-h-classes at batch
  1, h unbounded (K is split into MMs of K_MAX), int8 weights one to a word or packed four to a
  word (``compile_graph(..., pack=True)``, :mod:`compiler.packing`).

``python -m compiler.testing.capacity`` prints them for the default machine and for
``Params(SPAD_WORDS=65536, EXT_WORDS=65536)``, streaming on (Capra) and off (the seed's
compiler, every weight whole, one a word; Capra packs the int8 weights only when they do not fit
otherwise), with the reason the next size up is refused.
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


def mlp(widths: Sequence[int], batch: int, bias: bool = False) -> Graph:
    """x (batch, widths[0]) through a matmul per layer (with a bias when ``bias``), relu
    between, output "y"."""
    rng = np.random.default_rng(0)
    g = Graph()
    h = g.input("x", (batch, widths[0]))
    for i, (fan_in, fan_out) in enumerate(itertools.pairwise(widths)):
        weight = g.weight(f"w{i}", rng.normal(0, 1 / np.sqrt(fan_in), (fan_in, fan_out)))
        h = g.matmul(h, weight, bias=rng.normal(0, 0.1, fan_out) if bias else None)
        if i < len(widths) - 2:
            h = g.relu(h)
    g.output(h, "y")
    return g


def refusal(widths: Sequence[int], batch: int, params: Params, stream: bool = True,
            pack: bool | None = None, bias: bool = False) -> str | None:
    """Why the compiler refuses the MLP (the refusal's problem), or None when it compiles
    (``stream`` and ``pack`` as ``compile_graph`` takes them)."""
    graph = mlp(widths, batch, bias)
    sample = {"x": np.random.default_rng(1).normal(size=(batch, widths[0]))}
    try:
        compile_graph(graph, [sample], params=params, stream=stream, pack=pack)
    except CompileError as e:
        return e.problem
    return None


def fits(widths: Sequence[int], batch: int, params: Params, stream: bool = True,
         pack: bool | None = None, bias: bool = False) -> bool:
    """Whether the MLP compiles for the machine."""
    return refusal(widths, batch, params, stream, pack, bias) is None


def widest_pair(params: Params, stream: bool, batch: int = BATCH,
                pack: bool | None = None) -> tuple[int, int] | None:
    """The two-layer MLP d-h-CLASSES with the most weight words that compiles (d, h <= K_MAX,
    steps of 8)."""
    sizes = range(8, params.K_MAX + 1, 8)
    found = [(d * h + h * CLASSES, d, h) for d in sizes for h in sizes
             if fits((d, h, CLASSES), batch, params, stream, pack)]
    return max(found)[1:] if found else None


def largest_batch(widths: Sequence[int], params: Params, stream: bool, limit: int = 1 << 12,
                  pack: bool | None = None) -> int:
    """The most rows the MLP compiles for (0 if none), by bisection up to ``limit``."""
    low, high = 0, limit + 1
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(widths, middle, params, stream, pack) else (low, middle)
    return low


def deepest(width: int, params: Params, stream: bool, batch: int = BATCH, limit: int = 64,
            pack: bool | None = None) -> int:
    """The most hidden layers of ``width`` (width -> width) before the CLASSES-wide last layer."""
    depth = 0
    while depth < limit and fits((width,) * (depth + 2) + (CLASSES,), batch, params, stream, pack):
        depth += 1
    return depth


def most_weights(params: Params, stream: bool, batch: int = BATCH, step: int = 8,
                 pack: bool | None = None) -> tuple[int, tuple[int, ...]]:
    """(weight words, widths) of the d-h1-h2-CLASSES MLP with the most weight words that
    compiles, widths from ``step`` to K_MAX in steps of ``step``."""
    sizes = range(step, params.K_MAX + 1, step)
    best = (0, ())
    for widths in itertools.product(sizes, repeat=3):
        shape = (*widths, CLASSES)
        words = sum(a * b for a, b in itertools.pairwise(shape))
        if words > best[0] and fits(shape, batch, params, stream, pack):
            best = (words, shape)
    return best


def parameters(widths: Sequence[int]) -> int:
    """Weights and biases of the biased MLP of these widths."""
    return sum(a * b + b for a, b in itertools.pairwise(widths))


def largest_model(params: Params, pack: bool | None = None, hidden: int = 3, batch: int = 1,
                  step: int = 16, first: int = 64) -> tuple[int, tuple[int, ...]]:
    """(parameters, widths) of the largest biased MLP first-h-...-h-CLASSES (``hidden`` layers
    of width h, a multiple of ``step``) that compiles at ``batch``, by bisection on h (0, ()
    when none does)."""
    low, high = 0, (1 << 12) // step
    while high - low > 1:
        middle = (low + high) // 2
        shape = (first, *(middle * step,) * hidden, CLASSES)
        low, high = (middle, high) if fits(shape, batch, params, True, pack, bias=True) else (low, middle)
    if low == 0:
        return 0, ()
    shape = (first, *(low * step,) * hidden, CLASSES)
    return parameters(shape), shape


def report(params: Params) -> list[str]:
    """The capacity lines for one machine."""
    k = params.K_MAX
    lines = [f"{params}: scratchpad {params.SPAD_WORDS:,} words, external memory {params.EXT_WORDS:,}; "
             f"batch {BATCH}"]
    for stream in (False, True):
        pack = None if stream else False
        pair = widest_pair(params, stream, pack=pack)
        words, shape = most_weights(params, stream, pack=pack)
        depth = deepest(k, params, stream, pack=pack)
        deep = (k,) * (depth + 1) + (CLASSES,)
        one_more = refusal((*deep[:-1], k, CLASSES), BATCH, params, stream, pack)
        two = "none" if pair is None else f"{pair[0]}-{pair[1]}-{CLASSES}"
        lines += [f"  {'streaming (Capra)' if stream else 'every weight whole (the seed compiler)'}:",
                  f"    most weights, two layers: {two}",
                  f"    most weights, three layers: {'-'.join(map(str, shape))} ({words:,} words)",
                  f"    deepest {k}-wide MLP: {plural(depth, 'layer')} of {k} x {k}, then {k} x {CLASSES}; "
                  f"one more is refused: {one_more}",
                  f"    largest batch of 64-64-{CLASSES}: "
                  f"{largest_batch((64, 64, CLASSES), params, stream, pack=pack)}"]
    lines += largest_model_lines(params)
    return lines


def largest_model_lines(params: Params, step: int = 16) -> list[str]:
    """The largest biased 64-h-h-h-CLASSES MLP at batch 1, int8 weights one to a word and
    packed four to a word (``pack=True``), with the refusal of the next width."""
    lines = [f"  the largest biased MLP 64-h-h-h-{CLASSES} at batch 1 (h a multiple of {step}), streaming:"]
    for pack, how in ((False, "one int8 weight a word"), (True, "packed, four a word (LD fmt=1)")):
        count, shape = largest_model(params, pack, step=step)
        h = (shape[1] if shape else 0) + step
        wider = (64, h, h, h, CLASSES)
        why = refusal(wider, 1, params, True, pack, bias=True)
        lines.append(f"    {how}: {'-'.join(map(str, shape)) or 'none'} ({count:,} parameters); "
                     f"{'-'.join(map(str, wider))} is refused: {why}")
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
