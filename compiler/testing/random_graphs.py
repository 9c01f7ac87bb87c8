"""Random graphs for testing the compiler (seed chapter 11; slices from chapter 16).

Contract: a seed gives the same graph as the seed document's generator. Each function
draws from one ``random.Random(seed)`` in exactly the seed's sequence (every ``randrange``,
``choice``, ``random`` and ``gauss`` in the same order, with the same arguments), so the
order of the statements below is part of the contract: reordering two draws changes every
graph after them.

:func:`random_graph` grows a chain from one input: plain and relu matmuls, at most one
self-product ``x x^T`` (squaring again and again spreads values over orders of magnitude,
beyond what one static scale per tensor can serve), softmax heads, residual adds, row
concatenations; sometimes an argmax output and an output of an intermediate tensor. A new
input that joins a tensor in an add or a concatenation is drawn at that tensor's typical
magnitude (its root mean square on ``sample_inputs(spec, Random(0))``, evaluating the graph
built so far), as a real cache and its new row have matching magnitudes.

Names: inputs ``in0, in1, ...``; weights ``w<id>``, where id is the weight's node id;
outputs ``out`` (the last tensor), ``tok`` (its argmax), ``mid`` (the first tensor after
the input), and in slice graphs ``o0, o1, ...`` and ``cat``.

:func:`random_stream_graph` (not the seed's) grows MLP-like chains with layers up to 64
wide, for the blocked steps of :mod:`compiler.streaming`: dense layers, transposed
weights, a weight read by two layers, residual adds, a self-attention-like score against
the input, narrow layers after wide ones, softmax and argmax heads.
"""

from __future__ import annotations

import itertools
import math
import random

import numpy as np

from ..evaluate import evaluate
from ..ir import Graph

InputSpec = dict[str, tuple[tuple[int, int], float]]
"""input name -> ((rows, cols), standard deviation of its sample values)."""

GRAPH_KINDS = ("matmul", "matmul", "matmul_relu", "scores", "softmax", "add", "concat")
"""The steps random_graph chooses from, uniformly (a plain matmul twice as often)."""
SLICE_KINDS = ("matmul", "softmax", "scores", "argmax")
"""What a slice feeds in random_slice_graph."""
STREAM_KINDS = ("dense", "dense", "dense_relu", "narrow", "transposed", "shared", "residual", "scores")
"""The layers random_stream_graph chooses from, uniformly (a plain dense layer twice as often)."""
MAX_SELF_PRODUCT_WIDTH = 64
MAX_CONCAT_ROWS = 9
OPTIONAL_OUTPUT_CHANCE = 0.3
NESTED_SLICE_CHANCE = 0.3


def sample_inputs(spec: InputSpec, rng: random.Random) -> dict[str, np.ndarray]:
    """One sample: for each input in order, rows x cols Gaussian values, row by row."""
    sample = {}
    for name, ((rows, cols), sd) in spec.items():
        sample[name] = np.array([[rng.gauss(0, sd) for _ in range(cols)] for _ in range(rows)])
    return sample


class _Builder:
    """A graph under construction, the random stream it draws from, and its inputs."""

    def __init__(self, seed: int, wbits: int):
        self.rng = random.Random(seed)
        self.net = Graph()
        self.spec: InputSpec = {}
        self.wbits = wbits

    def shape(self, nid: int) -> tuple[int, int]:
        return self.net.nodes[nid].shape

    def fresh_input(self, shape: tuple[int, int], sd: float = 1.0) -> int:
        label = f"in{len(self.spec)}"
        self.spec[label] = (shape, sd)
        return self.net.input(label, shape)

    def gaussian_weight(self, fan_in: int, fan_out: int, stored: tuple[int, int] | None = None) -> int:
        """A weight with N(0, 1/fan_in) entries, fan_in x fan_out (or of the ``stored``
        shape: (fan_out, fan_in) for one read transposed), named after its node id."""
        spread = 1 / math.sqrt(fan_in)
        rows, cols = stored or (fan_in, fan_out)
        table = [[self.rng.gauss(0, spread) for _ in range(cols)] for _ in range(rows)]
        return self.net.weight(f"w{len(self.net.nodes)}", table, bits=self.wbits)

    def magnitude(self, nid: int) -> float:
        """Root mean square of a tensor on a fixed sample (never below 0.001)."""
        values = evaluate(self.net, sample_inputs(self.spec, random.Random(0)))[nid].ravel().tolist()
        mean_square = sum(v * v for v in values) / len(values)
        return max(1e-3, math.sqrt(mean_square))


def random_graph(seed: int, wbits: int = 8) -> tuple[Graph, InputSpec]:
    """The seed's random graph number ``seed``; weights with ``wbits`` bits (8 or 4).

    Returns:
        (graph, input specification for :func:`sample_inputs`).
    """
    b = _Builder(seed, wbits)
    draw = b.rng
    height = draw.randrange(1, 7)
    width = draw.randrange(2, 20)
    tip = b.fresh_input((height, width))
    history = [tip]
    concatenated: set[int] = set()
    squared = False
    steps = draw.randrange(3, 8)
    for _ in range(steps):
        tip_shape = b.shape(tip)
        step = draw.choice(GRAPH_KINDS)
        if step in ("matmul", "matmul_relu"):
            fan_out = draw.randrange(1, 11)
            tip = b.net.matmul(tip, b.gaussian_weight(tip_shape[1], fan_out))
            if step == "matmul_relu":
                tip = b.net.relu(tip)
        elif step == "scores":
            if tip_shape[1] <= MAX_SELF_PRODUCT_WIDTH and not squared:
                squared = True
                tip = b.net.matmul(tip, tip, transpose_b=True, scale=1 / math.sqrt(tip_shape[1]))
        elif step == "softmax":
            fan_out = draw.randrange(2, 9)
            tip = b.net.softmax(b.net.matmul(tip, b.gaussian_weight(tip_shape[1], fan_out), scale=0.5))
        elif step == "add":
            partners = [p for p in history if p != tip and b.shape(p) == tip_shape]
            # a partner of the same shape from the chain, else a new input of matching magnitude
            partner = draw.choice(partners) if partners else b.fresh_input(tip_shape, b.magnitude(tip))
            tip = b.net.add(tip, partner)
        elif step == "concat" and tip_shape[0] <= MAX_CONCAT_ROWS and tip not in concatenated:
            more_rows = draw.randrange(1, 4)
            lower = b.fresh_input((more_rows, tip_shape[1]), b.magnitude(tip))
            concatenated.update((tip, lower))
            tip = b.net.concat_rows(tip, lower)
        history.append(tip)
    if draw.random() < OPTIONAL_OUTPUT_CHANCE:
        b.net.output(b.net.argmax(tip), "tok")
    b.net.output(tip, "out")
    if len(history) > 2 and draw.random() < OPTIONAL_OUTPUT_CHANCE and history[1] not in concatenated:
        b.net.output(history[1], "mid")
    return b.net, b.spec


def random_slice_graph(seed: int, wbits: int = 8) -> tuple[Graph, InputSpec]:
    """The seed's slice graph number ``seed`` (chapter 16): slices of a product, of a
    concatenation, of an input, of a weight and of a slice, feeding matmuls, softmax heads,
    self-products against the whole source, and argmax. Every input has unit variance."""
    b = _Builder(seed, wbits)
    draw = b.rng
    height = draw.randrange(4, 10)
    width = draw.randrange(3, 14)
    x = b.fresh_input((height, width))
    product = b.net.matmul(x, b.gaussian_weight(width, draw.randrange(3, 9)))
    tail = b.fresh_input((draw.randrange(1, 4), b.shape(product)[1]))
    joined = b.net.concat_rows(product, tail)
    table_rows = draw.randrange(3, 8)
    table = b.gaussian_weight(table_rows, draw.randrange(2, 6))
    sources = [(joined, b.shape(joined)[0]), (product, height), (x, height), (table, table_rows)]
    for k in range(draw.randrange(2, 5)):
        source, source_rows = draw.choice(sources)
        first = draw.randrange(0, source_rows)
        taken = draw.randrange(1, source_rows - first + 1)
        piece = b.net.slice_rows(source, first, taken)
        if draw.random() < NESTED_SLICE_CHANCE and taken > 1:
            piece = b.net.slice_rows(piece, 0, draw.randrange(1, taken + 1))
        piece_cols = b.shape(piece)[1]
        use = draw.choice(SLICE_KINDS)
        if use == "scores":
            whole = b.net.slice_rows(source, 0, source_rows)
            result = b.net.matmul(piece, whole, transpose_b=True, scale=1 / math.sqrt(piece_cols))
        else:
            factor = 0.5 if use == "softmax" else 1.0
            logits = b.net.matmul(piece, b.gaussian_weight(piece_cols, draw.randrange(2, 7)), scale=factor)
            if use == "softmax":
                result = b.net.softmax(logits)
            elif use == "argmax":
                result = b.net.argmax(logits)
            else:
                result = logits
        b.net.output(result, f"o{k}")
    b.net.output(joined, "cat")
    return b.net, b.spec


def random_stream_graph(seed: int) -> tuple[Graph, InputSpec]:
    """A chain of 2 to 4 layers up to 64 wide on a batch of 1 to 16 rows (int8 weights),
    for the blocked steps of :mod:`compiler.streaming` (see the module docstring)."""
    b = _Builder(seed, 8)
    draw = b.rng
    x = b.fresh_input((draw.randrange(1, 17), draw.randrange(8, 65)))
    tip = x
    for _ in range(draw.randrange(2, 5)):
        k = b.shape(tip)[1]
        kind = draw.choice(STREAM_KINDS)
        if kind == "scores" and k == b.shape(x)[1]:
            scores = b.net.matmul(tip, x, transpose_b=True, scale=1 / math.sqrt(k))
            tip = b.net.softmax(scores)
        elif kind == "transposed":
            n = draw.randrange(4, 65)
            tip = b.net.matmul(tip, b.gaussian_weight(k, n, stored=(n, k)), transpose_b=True)
        elif kind in ("shared", "residual"):
            w = b.gaussian_weight(k, k)
            product = b.net.matmul(tip, w)
            tip = b.net.matmul(b.net.relu(product), w) if kind == "shared" else b.net.add(product, tip)
        else:
            n = draw.randrange(2, 9) if kind == "narrow" else draw.randrange(4, 65)
            tip = b.net.matmul(tip, b.gaussian_weight(k, n))
            if kind == "dense_relu":
                tip = b.net.relu(tip)
    if draw.random() < OPTIONAL_OUTPUT_CHANCE:
        b.net.output(b.net.argmax(tip), "tok")
    b.net.output(tip, "out")
    return b.net, b.spec


WIDE_WIDTHS = (3, 17, 64, 65, 100, 130)
"""Layer widths of :func:`random_wide_graph`: below, at and above K_MAX (64), up to 130."""


def random_wide_graph(seed: int, wbits: int = 8) -> tuple[Graph, InputSpec]:
    """A random MLP of 1 to 3 layers (issue 14): widths from WIDE_WIDTHS (inner dimensions above
    K_MAX, cut along K), every layer with a bias half the time, a relu after it half the time
    (fused into the requantizer: the bias sits in the accumulator before it). ``wbits`` is
    ignored (8-bit weights: they may stream). From ``random.Random(seed)`` alone."""
    rng = random.Random(seed * 13 + 5)
    rows = rng.choice((1, 3, 4))
    widths = [rng.choice(WIDE_WIDTHS) for _ in range(rng.randint(2, 4))]
    g = Graph()
    x = g.input("x", (rows, widths[0]))
    for k, (inner, outer) in enumerate(itertools.pairwise(widths)):
        sd = 1.0 / math.sqrt(inner)
        weight = g.weight(f"w{k}", [[rng.gauss(0, sd) for _ in range(outer)] for _ in range(inner)])
        bias = [rng.gauss(0, 0.5) for _ in range(outer)] if rng.random() < 0.5 else None
        x = g.matmul(x, weight, bias=bias)
        if rng.random() < 0.5:
            x = g.relu(x)
    g.output(x, "y")
    return g, {"x": ((rows, widths[0]), 1.0)}
