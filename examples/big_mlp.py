#!/usr/bin/env python3
"""An MLP whose weights do not fit the scratchpad: Capra streams them from external memory.

The model is 64 -> 48 -> 64 -> 10 (relu and dropout between the layers, a bias on the last),
trained for a few seconds on scikit-learn's digits (the split of ``examples/digits.py``). Its
weights take 6,784 words; GA-2's scratchpad holds 4,096, so the seed's compiler, which loads
every weight whole, refuses it. Capra blocks each matmul that does not fit (see
``compiler/blocking.py``): a weight streams in blocks of columns, one LD per block, stored in
external memory panel by panel so that a block is contiguous; the blocking is chosen per
layer, the fastest that fits, in cycles counted exactly from ``sim.spec``.

The script traces the model in eval mode (the dropouts vanish: they are the identity at
inference), compiles it for a batch of 16 images and prints, per layer, the blocking chosen,
its cycles, the words it loads and its scratchpad footprint; then, for one batch, the
machine's cycles against two lower bounds, the matrix unit's (one step per cycle: K summed
over the MMs) and the DMA's (words moved / LANES per cycle); then it classifies the test
split (the class is the largest logit; the last, partial batch padded by ``lowered.feed``)
and compares GA-2 with PyTorch, and the machine with the integer interpreter. Last, what the
seed's compiler says, and what streaming costs: the same batch on a machine whose scratchpad
holds every weight whole.

Options make another model or machine: ``--widths 64 64 64 64 10 --spad 65536 --ext 65536``.

Usage: python examples/big_mlp.py [--widths 64 48 64 10] [--batch 16] [--spad 4096]
       [--ext 8192] [--epochs 20] [--quick] [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
from itertools import pairwise

import numpy as np
from _cli import positive  # examples/_cli.py
from digits import load_split, train  # examples/digits.py: the data and the training loop

from compiler import CompileError, compile_graph
from compiler.interpret import interpret
from sim.spec import Params

CLASSES = 10


def make_model(widths: list[int], seed: int):
    """An nn.Sequential: Linear layers between the widths; relu and dropout after each but the
    last; only the last has a bias (a relu rides on its matmul's requantizer, so a hidden bias
    would come after it). torch is imported here, so that --help and a bad flag answer fast."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    layers: list = []
    for k, (fan_in, fan_out) in enumerate(pairwise(widths)):
        last = k == len(widths) - 2
        layers.append(nn.Linear(fan_in, fan_out, bias=last))
        if not last:
            layers += [nn.ReLU(), nn.Dropout(0.1)]
    return nn.Sequential(*layers)


def layer_table(lowered, program) -> list[str]:
    """Two lines per matmul: its layer (module path), its shape and the blocking chosen; the
    blocking's cycles, the words it loads and its scratchpad footprint."""
    fx_nodes = {n.name: n for n in lowered.traced.graph.nodes}
    lines = []
    for nid, b in program.blockings.items():
        node = lowered.graph.nodes[nid]
        m, k = lowered.graph.nodes[node.ins[0]].shape
        layer = f"'{fx_nodes[lowered.origin[nid]].target}'"
        lines.append(f"  layer {layer:7s} {m} x {k} by {k} x {node.shape[1]}: {b.describe()}")
        lines.append(f"{'':16s}{b.cycles:,} cycles, {b.moved:,} words loaded, footprint "
                     f"{b.footprint:,} words")
    return lines


def bounds(program, outcome) -> list[str]:
    """The run's cycles against the matrix unit's and the DMA's lower bounds."""
    lanes = program.machine.LANES
    steps = sum(ins.K for ins in program.code if ins.op == "MM")
    moved = sum(ins.len for ins in program.code if ins.op in ("LD", "ST"))
    macs = sum(ins.M * ins.N * ins.K for ins in program.code if ins.op == "MM")
    cycles, counters = outcome.counters.cycles, outcome.counters
    t = program.machine.T
    mms = sum(ins.op == "MM" for ins in program.code)
    dma_bound = -(-moved // lanes)
    return [f"  cycles {cycles:,} on the reference machine (counters: dma {counters.dma:,}, "
            f"mxu {counters.mxu:,}, vpu {counters.vpu:,})",
            f"  DMA: {moved:,} words moved, a bound of {dma_bound:,} cycles at {lanes} words a cycle",
            f"  MXU: {steps:,} steps (K summed over {mms} MMs), a bound of {steps:,} cycles; utilisation "
            f"{100 * macs / (t * t * cycles):.1f}% of {t} x {t} x cycles",
            f"  one instruction at a time: cycles >= the two bounds added, {steps + dma_bound:,}"]


def classify(lowered, program, model, images: np.ndarray,
             batch: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """GA-2's and PyTorch's classes (the largest logit) for the images, in batches (the last
    padded by feed), and whether the machine equals the interpreter on every batch."""
    from compiler.frontend import run_torch

    ga2, torch_classes = [], []
    exact = True
    for start in range(0, len(images), batch):
        chunk = images[start:start + batch]
        feed = lowered.feed(chunk)
        outcome = program.run(feed, warn=False)
        (logits,) = lowered.unpack(outcome)
        ga2.append(logits.argmax(axis=1))
        torch_classes.append(run_torch(model, chunk)[0].argmax(axis=1))
        name = lowered.outputs[0]
        ints = interpret(program, feed)[program.ext[name].node]
        exact &= bool(np.array_equal(outcome.outputs[name].ints, ints))
    return np.concatenate(ga2), np.concatenate(torch_classes), exact


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Compile and run an MLP whose weights exceed GA-2's "
                                     "scratchpad: the blocking of each layer, cycles, DMA words, accuracy.")
    parser.add_argument("--widths", type=positive, nargs="+", default=[64, 48, 64, CLASSES],
                        help="layer widths, input (64 pixels) first, classes (10) last (default 64 48 64 10)")
    parser.add_argument("--batch", type=positive, default=16, help="images per run (default 16)")
    parser.add_argument("--spad", type=positive, default=4096,
                        help="SPAD_WORDS of the machine (default 4096)")
    parser.add_argument("--ext", type=positive, default=8192, help="EXT_WORDS of the machine (default 8192)")
    parser.add_argument("--epochs", type=positive, default=None,
                        help="training epochs (default 20, 3 with --quick)")
    parser.add_argument("--quick", action="store_true", help="a quick check: 3 epochs")
    parser.add_argument("--seed", type=positive, default=1,
                        help="seed of the weights and the order (default 1)")
    args = parser.parse_args(argv)
    if args.widths[0] != 64 or args.widths[-1] != CLASSES or len(args.widths) < 2:
        parser.error(f"--widths: the first is 64 (pixels), the last {CLASSES} (classes)")
    if args.epochs is None:
        args.epochs = 3 if args.quick else 20
    try:
        machine = Params(SPAD_WORDS=args.spad, EXT_WORDS=args.ext)
    except ValueError as e:
        parser.error(str(e))
    return run(args, machine)


def run(args: argparse.Namespace, machine: Params) -> int:
    import torch

    from compiler.frontend import UnsupportedModel, from_torch

    torch.set_num_threads(1)  # the same float results on every machine; the model is small
    model = make_model(args.widths, args.seed)
    try:  # the structure is checked before any training: a model GA-2 refuses fails at once
        from_torch(model.eval(), (64,), batch=args.batch, params=machine)
    except (UnsupportedModel, CompileError) as refused:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    split = load_split()
    seconds = train(model, split, args.epochs, args.seed)
    model.eval()
    weights = sum(p.numel() for p in model.parameters())
    print(f"== model {' -> '.join(map(str, args.widths))}, trained {args.epochs} epochs ({seconds:.1f} s); "
          f"{weights:,} weight words, scratchpad {machine.SPAD_WORDS:,} words")
    try:
        lowered = from_torch(model, (64,), batch=args.batch, params=machine)
        calibration = [lowered.feed(split.train_x[i:i + args.batch])
                       for i in range(0, 30 * args.batch, args.batch)]
        program = lowered.compile(calibration)
    except (UnsupportedModel, CompileError) as refused:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    print(f"\n== blocking per layer (batch {args.batch}; {len(program.code)} instructions, scratchpad "
          f"high-water mark {program.spad_high:,} words)")
    print("\n".join(layer_table(lowered, program)))
    panels = {name: e.panel for name, e in program.ext.items() if e.panel}
    print(f"  stored in column panels in external memory: {panels or 'none'}")

    print(f"\n== one batch of {args.batch} images")
    outcome = program.run(lowered.feed(split.test_x[:args.batch]), warn=False)
    print("\n".join(bounds(program, outcome)))

    ga2, floating, exact = classify(lowered, program, model, split.test_x, args.batch)
    last = len(split.test_x) % args.batch or args.batch
    print(f"\n== the test split, {len(split.test_x)} images (the last batch: {last} images, padded)")
    print(f"  machine == integer interpreter on every batch: {exact}")
    accuracy = [100 * np.mean(classes == split.test_y) for classes in (floating, ga2)]
    print(f"  float {accuracy[0]:.1f}%, GA-2 {accuracy[1]:.1f}%, agree {100 * np.mean(ga2 == floating):.1f}%")

    try:
        compile_graph(lowered.graph, calibration, params=machine, stream=False)
        print("\n== the seed's compiler (every weight whole) compiles it too: it fits the scratchpad")
        return 0
    except CompileError as e:
        print(f"\n== the seed's compiler (every weight whole) refuses it:\n  {e.problem}")
    print(streaming_cost(lowered, calibration, machine, outcome.counters.cycles, split.test_x[:args.batch]))
    return 0


def streaming_cost(lowered, calibration, machine: Params, cycles: int, images: np.ndarray) -> str:
    """What streaming costs: the same batch on a machine whose scratchpad holds every weight."""
    roomy = Params(SPAD_WORDS=max(machine.SPAD_WORDS * 4, 1 << 14), EXT_WORDS=machine.EXT_WORDS)
    whole = compile_graph(lowered.graph, calibration, params=roomy, stream=False)
    reference = whole.run(lowered.feed(images), warn=False).counters.cycles
    extra = cycles - reference
    return (f"  on a machine whose scratchpad holds it whole (SPAD_WORDS={roomy.SPAD_WORDS:,}): "
            f"{reference:,} cycles; streaming costs {extra:,} cycles ({100 * extra / reference:.2f}%)")


if __name__ == "__main__":
    sys.exit(main())
