#!/usr/bin/env python3
"""An attention block written in PyTorch, compiled by Capra through torch.fx, run on GA-2.

The block is one head of self-attention over a short sequence, as a model would write it:

    q, k, v = self.query(x), self.key(x), self.value(x)          # nn.Linear, no bias
    scores = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
    mixed = F.softmax(scores, dim=-1) @ v
    return self.proj(mixed) + x                                   # nn.Linear with bias

The front end reads ``k.transpose(-2, -1)`` as the matmul's transposed second operand,
folds the scale (shape arithmetic, evaluated at trace time) into that matmul's factor,
and repeats the projection's bias over the rows at compile time. The script calibrates on
random sequences, then runs fresh ones on the reference machine and checks each run two
ways: against PyTorch's float output (relative error, ||got - want|| / ||want|| over the
whole output) and against the integer interpreter (the same integers, exactly).

Usage: python examples/attention_block.py [--seq 8] [--dim 16] [--samples 32] [--tests 16] [--seed 0]

Sizes the machine cannot take (``--seq 65``: softmax rows longer than SM_MAX_LEN; ``--dim 65``:
an inner dimension beyond K_MAX; or more than the memories hold) are refused: the script
prints the refusal, which names the node at fault and the fix, and exits with status 2.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
from _cli import add_machine, machine, non_negative, positive  # examples/_cli.py


def make_block(dim: int, seed: int):
    """The attention block with weights drawn by torch.manual_seed(seed)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class AttentionBlock(nn.Module):
        """Single-head self-attention with an output projection and a residual connection.

        Input and output: (sequence, dim) float tensors.
        """

        def __init__(self) -> None:
            super().__init__()
            self.query = nn.Linear(dim, dim, bias=False)
            self.key = nn.Linear(dim, dim, bias=False)
            self.value = nn.Linear(dim, dim, bias=False)
            self.proj = nn.Linear(dim, dim)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            q, k, v = self.query(x), self.key(x), self.value(x)
            scores = q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5
            mixed = F.softmax(scores, dim=-1) @ v
            return self.proj(mixed) + x

    torch.manual_seed(seed)
    return AttentionBlock().eval()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Compile a PyTorch attention block with Capra and "
                                     "check it against PyTorch and the integer interpreter.")
    parser.add_argument("--seq", type=positive, default=8, help="sequence length, rows of x (default 8)")
    parser.add_argument("--dim", type=positive, default=16, help="model width, columns of x (default 16)")
    parser.add_argument("--samples", type=positive, default=32, help="calibration sequences (default 32)")
    parser.add_argument("--tests", type=positive, default=16, help="test sequences (default 16)")
    parser.add_argument("--seed", type=non_negative, default=0,
                        help="seed of the weights and the data (default 0)")
    add_machine(parser)
    args = parser.parse_args(argv)
    args.params = machine(parser, args)

    from compiler import CompileError

    try:
        return run(args)
    except CompileError as refused:  # the message names the node at fault and the fix
        print(f"error: {refused}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace) -> int:
    """Lower, compile, run and check the block; 0 when the machine matches the interpreter."""
    from compiler import compile_graph
    from compiler.frontend import from_torch, run_torch
    from compiler.interpret import interpret

    block = make_block(args.dim, args.seed)
    lowered = from_torch(block, (args.seq, args.dim))
    print("== traced by torch.fx")
    print(str(lowered.traced.graph).strip())
    print("\n== lowered to Capra")
    for node in lowered.graph.nodes:
        operands = ", ".join(f"%{i}" for i in node.ins)
        extra = " ^T" if node.transpose_b else ""
        extra += f" x{node.factor:.4f}" if node.op == "matmul" and node.factor != 1 else ""
        print(f"  %{node.id:<2d} = {node.op:7s} {operands:9s} -> {node.shape!s:8s} {node.name}{extra}"
              f"   (from {lowered.origin[node.id]})")

    rng = np.random.default_rng(args.seed)
    shape = (args.seq, args.dim)
    calibration = [lowered.feed(rng.normal(size=shape)) for _ in range(args.samples)]
    program = compile_graph(lowered.graph, calibration, params=args.params)
    print(f"\n== compiled: {len(program.code)} instructions, scratchpad high-water mark "
          f"{program.spad_high} words")
    for note in program.notes:
        print(f"  note: {note}")

    errors, exact = [], True
    (name,) = lowered.outputs
    out_node = program.ext[name].node
    for _ in range(args.tests):
        x = rng.normal(size=shape)
        feed = lowered.feed(x)
        outcome = program.run(feed)
        (got,) = lowered.unpack(outcome)
        (want,) = run_torch(block, x)
        errors.append(float(np.linalg.norm(got - want) / np.linalg.norm(want)))
        exact &= bool(np.array_equal(outcome.outputs[name].ints, interpret(program, feed)[out_node]))
    print(f"\n== {args.tests} fresh sequences on the reference machine")
    print(f"  cycles per run: {outcome.counters.cycles} ({outcome.counters})")
    print(f"  relative error against PyTorch: mean {100 * np.mean(errors):.2f}%, "
          f"largest {100 * max(errors):.2f}%")
    print(f"  machine == integer interpreter, every output value of every run: {exact}")
    print(f"\nattention block: error against PyTorch {100 * max(errors):.2f}% at most over {args.tests} "
          f"sequences, machine == interpreter: {exact}")
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
