#!/usr/bin/env python3
"""A pre-norm transformer block as PyTorch people write it, compiled unchanged (issue 26).

``x = x + attn(ln_1(x)); x = x + mlp(ln_2(x))`` on one sequence x of shape (T, C): the
attention is nanoGPT's (one fused ``c_attn`` Linear, ``split`` into q, k, v, ``view`` and
``transpose`` into heads, ``F.scaled_dot_product_attention(is_causal=True)`` or, with
``--explicit``, ``q @ k.transpose(-2, -1) * scale``, ``masked_fill`` of a causal mask buffer,
``softmax``, ``@ v``; heads merged back by ``transpose``, ``contiguous``, ``view`` and projected
by ``c_proj``); the MLP ``c_fc``, GELU, ``c_proj``. What Capra makes of it:

* each LayerNorm is one LN per row, exactly in integers (GA2.md section 4); its weight and bias
  are folded into the Linear layers that read it;
* the fused ``c_attn`` is built per head and per part (q, k, v of head h: a matmul of their
  columns of the weight), never whole;
* the causal mask is each score row's valid length (SM over i + 1 keys, the rest exactly 0);
* the merged heads' projection is the sum over heads of y_h W_h^T.

It prints the graph's operations, the machine against the integer interpreter, the float
difference to PyTorch, the cycles, and with ``--rtl icarus|verilator|both`` runs the program on
the RTL. The last line is ``transformer_block: ... bit-exact``.

Usage: python examples/transformer_block.py [--explicit] [--tokens 8] [--rtl none|icarus|verilator|both]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from compiler.frontend import from_torch
from compiler.interpret import interpret

C, HEADS, CONTEXT = 32, 4, 16


class CausalSelfAttention(nn.Module):
    """nanoGPT's attention, for one sequence (T, C)."""

    def __init__(self, explicit: bool):
        super().__init__()
        self.explicit, self.n_head, self.n_embd = explicit, HEADS, C
        self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.register_buffer("bias", torch.tril(torch.ones(CONTEXT, CONTEXT)).view(1, CONTEXT, CONTEXT))

    def forward(self, x):
        T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=1)
        k = k.view(T, self.n_head, C // self.n_head).transpose(0, 1)
        q = q.view(T, self.n_head, C // self.n_head).transpose(0, 1)
        v = v.view(T, self.n_head, C // self.n_head).transpose(0, 1)
        if self.explicit:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v
        else:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(0, 1).contiguous().view(T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_fc, self.gelu, self.c_proj = nn.Linear(C, 4 * C), nn.GELU(), nn.Linear(4 * C, C)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, explicit: bool = False):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(C), CausalSelfAttention(explicit)
        self.ln_2, self.mlp = nn.LayerNorm(C), MLP()

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


def block(explicit: bool, seed: int = 0) -> Block:
    """The block with seeded weights and LayerNorm weights and biases away from 1 and 0."""
    torch.manual_seed(seed)
    model = Block(explicit).eval()
    with torch.no_grad():
        for norm in (model.ln_1, model.ln_2):
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.normal_(0, 0.2)
    return model


def compiled(explicit: bool, tokens: int):
    """(model, lowered graph, program, a test input) for a sequence of ``tokens``."""
    if tokens > CONTEXT:
        raise ValueError(f"the causal mask buffer holds {CONTEXT} positions")
    model = block(explicit)
    lowered = from_torch(model, (tokens, C))
    rng = np.random.default_rng(0)
    program = lowered.compile([lowered.feed(rng.normal(size=(tokens, C))) for _ in range(16)])
    return model, lowered, program, rng.normal(size=(tokens, C))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A pre-norm transformer block from PyTorch, compiled "
                                     "unchanged.")
    parser.add_argument("--explicit", action="store_true", help="attention written out (masked_fill, "
                        "softmax) instead of scaled_dot_product_attention")
    parser.add_argument("--tokens", type=int, default=8, help=f"sequence length, 1..{CONTEXT} (default 8)")
    parser.add_argument("--rtl", choices=("none", "icarus", "verilator", "both"), default="none",
                        help="also run the program on the RTL (default none)")
    args = parser.parse_args(argv)
    if not 1 <= args.tokens <= CONTEXT:
        parser.error(f"--tokens must be 1..{CONTEXT}")
    model, lowered, program, x = compiled(args.explicit, args.tokens)
    feed = lowered.feed(x)
    ops = Counter(str(n.op) for n in lowered.graph.nodes)
    print("graph:", ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))
    codes = Counter(i.op for i in program.code)
    print("instructions:", ", ".join(f"{k} {v}" for k, v in sorted(codes.items())))
    outcome = program.run(feed, warn=False)
    ints = interpret(program, feed)
    same = all(np.array_equal(v.ints, ints[program.ext[k].node]) for k, v in outcome.outputs.items())
    want = model(torch.tensor(x, dtype=torch.float32)).detach().numpy()
    (got,) = lowered.unpack(outcome)
    print(f"reference machine = integer interpreter: {same}")
    print(f"largest difference to PyTorch: {np.abs(got - want).max():.4f} "
          f"(largest |value| {np.abs(want).max():.3f})")
    print(f"cycles: {outcome.counters}")
    failed = 0 if same else 1
    if args.rtl != "none":
        from cosim.api import compare, run_programs

        job = (program.code, program.ext_image(feed), "transformer block")
        for sim in (("icarus", "verilator") if args.rtl == "both" else (args.rtl,)):
            (run,) = run_programs([job], sim, say=lambda _line: None)
            diffs = compare(job, run)
            failed += bool(diffs)
            print(f"{sim:<10} {'PASS' if not diffs else 'FAIL'}" + "".join(f"\n    {d}" for d in diffs))
    form = "explicit attention" if args.explicit else "scaled_dot_product_attention"
    print(f"transformer_block: {form}, T = {args.tokens}, {outcome.counters.cycles} cycles, "
          f"{'bit-exact' if not failed else 'FAILED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
