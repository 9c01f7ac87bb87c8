"""The seed's random graphs (seed chapter 11): the graphs of the seed table, seeds 100-111, that
``make cosim`` runs on the RTL, and the generator the compiler's test tooling grows its own
random graphs with (:mod:`compiler.testing.random_graphs`).

Contract: a seed gives the same graph as the seed document's generator. :func:`random_graph`
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
the input).
"""

from __future__ import annotations

import math
import random

import numpy as np

from ..evaluate import evaluate
from ..ir import Graph

InputSpec = dict[str, tuple[tuple[int, int], float]]
"""input name -> ((rows, cols), standard deviation of its sample values)."""

GRAPH_KINDS = ("matmul", "matmul", "matmul_relu", "scores", "softmax", "add", "concat")
"""The steps random_graph chooses from, uniformly (a plain matmul twice as often)."""
MAX_SELF_PRODUCT_WIDTH = 64
MAX_CONCAT_ROWS = 9
OPTIONAL_OUTPUT_CHANCE = 0.3


def sample_inputs(spec: InputSpec, rng: random.Random) -> dict[str, np.ndarray]:
    """One sample: for each input in order, rows x cols Gaussian values, row by row."""
    sample = {}
    for name, ((rows, cols), sd) in spec.items():
        sample[name] = np.array([[rng.gauss(0, sd) for _ in range(cols)] for _ in range(rows)])
    return sample


class Builder:
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
    b = Builder(seed, wbits)
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
