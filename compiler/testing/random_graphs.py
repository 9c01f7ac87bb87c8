"""Random graphs for testing the compiler, beyond the seed table's (slices from seed chapter
16). They grow with the seed's generator (:class:`compiler.workloads.random_graph.Builder`;
the seed table's own graphs are :func:`compiler.workloads.random_graph.random_graph`).

Contract: a seed gives the same graph as the seed document's generator. Each function
draws from one ``random.Random(seed)`` in exactly the seed's sequence (every ``randrange``,
``choice``, ``random`` and ``gauss`` in the same order, with the same arguments), so the
order of the statements below is part of the contract: reordering two draws changes every
graph after them.

:func:`random_slice_graph` is the seed's slice graph (chapter 16); its outputs are named
``o0, o1, ...`` and ``cat``, its inputs and weights as the seed table's.

:func:`random_stream_graph` (not the seed's) grows MLP-like chains with layers up to 64
wide, for the blocked steps of :mod:`compiler.streaming`: dense layers, transposed
weights, a weight read by two layers, residual adds, a self-attention-like score against
the input, narrow layers after wide ones, softmax and argmax heads.

:func:`random_add_relu_graph` (not the seed's) grows chains where a relu follows an add, which
Capra fuses into the add's VADD (its relu field, GA2.md section 3): ResNet-style residual
blocks ``relu(x + lin2(relu(lin1(x))))``, sums with an earlier tensor or a new input, and plain
matmuls between them.
"""

from __future__ import annotations

import itertools
import math
import random

from ..ir import Graph
from ..workloads.random_graph import OPTIONAL_OUTPUT_CHANCE, Builder, InputSpec

SLICE_KINDS = ("matmul", "softmax", "scores", "argmax")
"""What a slice feeds in random_slice_graph."""
STREAM_KINDS = ("dense", "dense", "dense_relu", "narrow", "transposed", "shared", "residual", "scores")
"""The layers random_stream_graph chooses from, uniformly (a plain dense layer twice as often)."""
ADD_RELU_KINDS = ("residual", "residual", "sum", "matmul")
"""The steps random_add_relu_graph chooses from, uniformly (a residual block twice as often)."""
NESTED_SLICE_CHANCE = 0.3


def random_slice_graph(seed: int, wbits: int = 8) -> tuple[Graph, InputSpec]:
    """The seed's slice graph number ``seed`` (chapter 16): slices of a product, of a
    concatenation, of an input, of a weight and of a slice, feeding matmuls, softmax heads,
    self-products against the whole source, and argmax. Every input has unit variance."""
    b = Builder(seed, wbits)
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
    b = Builder(seed, 8)
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


def random_add_relu_graph(seed: int, wbits: int = 8) -> tuple[Graph, InputSpec]:
    """A chain of 2 to 4 steps on a (1..6, 2..19) input where each add is followed by a relu:
    a residual block ``relu(tip + lin2(relu(lin1(tip))))`` (hidden width 1..10), a sum
    ``relu(tip + partner)`` (a tensor of the chain of the same shape, else a new input of
    matching magnitude), or a plain matmul (width 1..10). Outputs as :func:`random_graph`'s:
    ``out``, sometimes ``tok`` and ``mid``.
    """
    b = Builder(seed, wbits)
    draw = b.rng
    tip = b.fresh_input((draw.randrange(1, 7), draw.randrange(2, 20)))
    history = [tip]
    for _ in range(draw.randrange(2, 5)):
        shape = b.shape(tip)
        kind = draw.choice(ADD_RELU_KINDS)
        if kind == "residual":
            hidden = b.net.relu(b.net.matmul(tip, b.gaussian_weight(shape[1], draw.randrange(1, 11))))
            branch = b.net.matmul(hidden, b.gaussian_weight(b.shape(hidden)[1], shape[1]))
            tip = b.net.relu(b.net.add(tip, branch))
        elif kind == "sum":
            partners = [p for p in history if p != tip and b.shape(p) == shape]
            partner = draw.choice(partners) if partners else b.fresh_input(shape, b.magnitude(tip))
            tip = b.net.relu(b.net.add(tip, partner))
        else:
            tip = b.net.matmul(tip, b.gaussian_weight(shape[1], draw.randrange(1, 11)))
        history.append(tip)
    if draw.random() < OPTIONAL_OUTPUT_CHANCE:
        b.net.output(b.net.argmax(tip), "tok")
    b.net.output(tip, "out")
    if len(history) > 2 and draw.random() < OPTIONAL_OUTPUT_CHANCE:
        b.net.output(history[1], "mid")
    return b.net, b.spec


CONV_KINDS = ("conv", "conv", "depthwise", "residual", "maxpool")
"""The steps random_conv_graph chooses from, uniformly (a convolution twice as often)."""


def _conv_weight(b: Builder, rows: int, cols: int, fan_in: int) -> int:
    """A convolution's weight with N(0, 1/fan_in) entries, column j multiplied by 0.2 .. 2 (so
    that per-channel scales differ from the tensor's)."""
    spread = 1 / math.sqrt(fan_in)
    sizes = [0.2 + 1.8 * j / max(1, cols - 1) for j in range(cols)]
    table = [[b.rng.gauss(0, spread) * sizes[j] for j in range(cols)] for _ in range(rows)]
    return b.net.weight(f"w{len(b.net.nodes)}", table, bits=b.wbits)


def random_conv_graph(seed: int, wbits: int = 8) -> tuple[Graph, InputSpec]:
    """A small convolutional network (issue 25; not the seed's): B images of H x W x C (HWC), two
    to four steps of a convolution (kernel 1 to 3, stride 1 or 2, zero padding up to half the
    kernel, a bias or none, per-channel scales or not, a relu or not), a depthwise 3 x 3 (+ relu),
    a residual pair relu(x + conv(relu(conv(x)))), or a 2 x 2 max pool; then a global average
    pool (shared taps) and a linear layer to the output."""
    b = Builder(seed, wbits)
    draw, g = b.rng, b.net
    batch, h, w, c = draw.randrange(1, 3), draw.randrange(4, 9), draw.randrange(4, 9), draw.randrange(1, 5)
    cur = b.fresh_input((batch * h * w, c))

    def conv(x: int, cin: int, cout: int, k: int, s: int, p: int, hh: int, ww: int) -> int:
        weight = _conv_weight(b, k * k * cin, cout, k * k * cin)
        bias = [draw.gauss(0, 0.2) for _ in range(cout)] if draw.random() < 0.5 else None
        return g.conv2d(x, weight, (hh, ww), k, s, p, bias=bias, per_channel=draw.random() < 0.5)

    for _ in range(draw.randrange(2, 5)):
        kind = draw.choice(CONV_KINDS)
        if kind == "conv":
            k = draw.randrange(1, 4)
            s = draw.randrange(1, 3) if min(h, w) >= 4 else 1
            p = draw.randrange(0, k // 2 + 1)
            cout = draw.randrange(1, 9)
            cur = conv(cur, c, cout, k, s, p, h, w)
            if draw.random() < 0.6:
                cur = g.relu(cur)
            h, w, c = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1, cout
        elif kind == "depthwise":
            weight = _conv_weight(b, 9, c, 9)
            pc = draw.random() < 0.5
            bias = [draw.gauss(0, 0.2) for _ in range(c)]
            cur = g.relu(g.conv2d(cur, weight, (h, w), 3, 1, 1, depthwise=True, per_channel=pc, bias=bias))
        elif kind == "residual":
            inner = g.relu(conv(cur, c, c, 3, 1, 1, h, w))
            cur = g.relu(g.add(cur, conv(inner, c, c, 3, 1, 1, h, w)))
        elif min(h, w) >= 2:
            cur = g.maxpool2d(cur, (h, w), 2)
            h, w = h // 2, w // 2
    ones = g.weight(f"w{len(g.nodes)}", [[1.0]] * (h * w))
    pooled = g.conv2d(cur, ones, (h, w), (h, w), shared=True, scale=1 / (h * w))
    g.output(g.matmul(g.reshape(pooled, batch), b.gaussian_weight(c, draw.randrange(2, 6))), "out")
    return g, b.spec
