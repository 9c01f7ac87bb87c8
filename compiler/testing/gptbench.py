"""``make bench``, third part: a small GPT's prefill and decode cycles, per kernel kind (issue 26).

The GPT of ``examples/char_gpt.py`` by its shapes (2 layers, d_model 64, 4 heads of 16, context
32, a vocabulary of 93), with weights drawn at random: a GA-2 program's cycles depend on its
shapes, never on the values. The steps are compiled as :mod:`compiler.frontend.decode` compiles
them (a prefill chunk of the prompt, a decode step per cache length) and run on the reference
machine, whose counters the RTL matches. Each instruction's cycles (its span on the serial
timeline, :mod:`compiler.timeline`) go to the kernel of the node whose step wrote it
(:attr:`compiler.program.Program.owners`): embedding (GATHER and the position add), LayerNorm,
attention (q, k, v, scores, softmax, P V, the cache's concatenation and stores, the output
projection), MLP (c_fc, GELU table, c_proj), residual adds, head (lm_head and argmax). It also
prints one LN row and one softmax row against 2N + 50 cycles (issue 26's bound), from the spec.

Usage: python -m compiler.testing.gptbench [--param t8] [--cached 4 16 31]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Sequence

import numpy as np

from sim.machines import add_argument, from_args
from sim.spec import BY_NAME, Params, latency

from ..allocator import ScratchpadFull
from ..frontend.decode import NAMES, Decoder, GptConfig
from ..ir import Graph
from ..ops import Op
from ..program import Program
from ..timeline import serial_timeline

CONFIG = GptConfig(vocab=93, context=32, layers=2, heads=4, width=64)
"""examples/char_gpt.py's GPT, by its shapes."""
KINDS = ("embedding", "layernorm", "attention", "mlp", "residual", "head")


def random_weights(config: GptConfig = CONFIG, seed: int = 0) -> dict[str, np.ndarray]:
    """N(0, 1/fan_in) weights and N(0, 0.1) biases of the config's shapes (LayerNorm weights 1)."""
    rng = np.random.default_rng(seed)
    c, out = config.width, {}
    fans = {"wte": (config.vocab, c), "wpe": (config.context, c), "c_attn": (3 * c, c), "attn.c_proj": (c, c),
            "c_fc": (4 * c, c), "mlp.c_proj": (c, 4 * c), "lm_head": (config.vocab, c)}
    for pattern in NAMES:
        for layer in range(config.layers):
            name = pattern.format(l=layer)
            if "ln_" in name:
                out[name] = np.ones(c) if name.endswith("weight") else np.zeros(c)
                continue
            shape = next(s for k, s in fans.items() if f"{k}." in name or name.startswith(k))
            out[name] = rng.normal(0, 0.1, shape[0]) if name.endswith("bias") else \
                rng.normal(0, 1 / np.sqrt(shape[1]), shape)
    return out


def kernel_of(graph: Graph, nid: int, memo: dict[int, str]) -> str:
    """The kernel kind of a node of a step graph (see the module docstring)."""
    if nid in memo:
        return memo[nid]
    node = graph.nodes[nid]
    ins = [graph.nodes[i] for i in node.ins]
    names = [n.name for n in ins if n.op in (Op.WEIGHT, Op.INPUT)]
    if node.op in (Op.EMBEDDING, Op.INPUT, Op.WEIGHT) or (node.op == Op.ADD and ins[0].op == Op.EMBEDDING):
        kind = "embedding" if node.op != Op.INPUT or not node.name.startswith("cache.") else "attention"
    elif node.op == Op.LAYERNORM:
        kind = "layernorm"
    elif node.op in (Op.SOFTMAX, Op.CONCAT):
        kind = "attention"
    elif node.op == Op.TABLE or any(re.search(r"(fc|mlp_proj)\.T$", n) for n in names):
        kind = "mlp"
    elif node.op == Op.ARGMAX or "head.T" in names:
        kind = "head"
    elif node.op in (Op.OUTPUT, Op.SLICE):
        kind = kernel_of(graph, node.ins[0], memo)
    elif node.op == Op.MATMUL:
        kind = "attention"
    else:   # an add: of two heads' projections (attention) or a residual
        both = all(kernel_of(graph, i, memo) == "attention" for i in node.ins)
        kind = "attention" if both else "residual"
    memo[nid] = kind
    return kind


def kernel_cycles(program: Program) -> Counter:
    """Cycles per kernel kind: each instruction's serial span, by the node that owns it."""
    spans = serial_timeline(program.code, program.machine)
    memo: dict[int, str] = {}
    cycles: Counter = Counter()
    for span, owner in zip(spans, program.owners, strict=True):
        cycles["control" if owner < 0 else kernel_of(program.graph, owner, memo)] += span.end - span.start
    return cycles


def row_costs(params: Params) -> list[dict]:
    """One LN row of d_model and one softmax row of the context: their cycles (spec latencies)
    against 2N + 50 (issue 26's bound). Each a dict: op, N, cycles, 2N + 50."""
    out = []
    for op, n in (("LN", CONFIG.width), ("SM", CONFIG.context)):
        fields = {"dst": 0, "src": n, "len": n} | ({"bias": 2 * n, "eps": 0} if op == "LN" else {})
        out.append({"op": op, "N": n, "cycles": latency(BY_NAME[op], fields, params), "2N + 50": 2 * n + 50})
    return out


def rows(params: Params, cached: Sequence[int] = (4, 16, 31), prompt: int = 8) -> list[dict]:
    """A prefill of ``prompt`` tokens (in the chunks the scratchpad takes) and a decode step after
    each of ``cached`` tokens, run on the reference machine: per step its name, tokens, cycles,
    cycles per token and each kernel kind's cycles per token (integer division by the tokens).

    Raises:
        ScratchpadFull: the machine's scratchpad cannot hold a step."""
    decoder = Decoder(random_weights(), CONFIG, np.random.default_rng(1).integers(0, CONFIG.vocab, (8, 32)),
                      params)
    steps = []
    done, cycles, kinds = 0, 0, Counter()
    while done < prompt:                                  # the chunks the scratchpad takes
        program = decoder.prefill_step(done, prompt - done)
        new = program.graph.nodes[program.graph.names["ids"]].shape[0]
        cycles += run_cycles(program, decoder, done, new)
        kinds += kernel_cycles(program)
        done += new
    steps.append((f"prefill {prompt} (chunks of {decoder.chunk})", prompt, cycles, kinds))
    for t in cached:
        program = decoder.program(t, 1)
        steps.append((f"decode after {t}", 1, run_cycles(program, decoder, t, 1), kernel_cycles(program)))
    return [{"step": name, "tokens": tokens, "cycles": total, "per token": total // tokens,
             **{k: kinds[k] // tokens for k in KINDS}} for name, tokens, total, kinds in steps]


def bench(params: Params, cached: Sequence[int], prompt: int = 8) -> str:
    """The table of :func:`rows`, then the LN and softmax rows against 2N + 50."""
    head = f"  {'step':<24} {'cycles':>8} {'per token':>9}" + "".join(f" {k:>10}" for k in KINDS)
    lines = [f"GPT {CONFIG.layers} layers, d_model {CONFIG.width}, {CONFIG.heads} heads, vocabulary "
             f"{CONFIG.vocab}, on T = {params.T}, LANES = {params.LANES}, SPAD_WORDS = {params.SPAD_WORDS} "
             "(cycles per token; kernels' cycles per token on the serial timeline)", head]
    for r in rows(params, cached, prompt):
        lines.append(f"  {r['step']:<24} {r['cycles']:8d} {r['per token']:9d}"
                     + "".join(f" {r[k]:10d}" for k in KINDS))
    lines += [f"  {r['op']} row of N = {r['N']}: {r['cycles']} cycles (2N + 50 = {r['2N + 50']})"
              for r in row_costs(params)]
    return "\n".join(lines)


def run_cycles(program: Program, decoder: Decoder, cached: int, new: int) -> int:
    """The step's cycles on the reference machine (a calibration window's tokens and cache)."""
    return program.run(decoder.sample(0, cached, new), warn=False).counters.cycles


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A small GPT's prefill and decode cycles per kernel kind.")
    parser.add_argument("--cached", type=int, nargs="+", default=[4, 16, 31],
                        help="cache lengths of the decode steps (default 4 16 31)")
    add_argument(parser)
    args = parser.parse_args(argv)
    params = from_args(args, parser)
    try:
        print(bench(params, args.cached))
    except ScratchpadFull as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
