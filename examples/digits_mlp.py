#!/usr/bin/env python3
"""A model as people write it: an MLP 64 -> 256 -> 128 -> 10 with biases, on GA-2 (issue 14).

scikit-learn's digits (the split, the scaling and the training loop of ``examples/digits.py``),
an ``nn.Sequential`` of three ``nn.Linear`` layers with their default biases and a ReLU (or,
with ``--act gelu`` / ``--act silu``, that activation) after the first two, compiled from
PyTorch with no change to the model:

* each bias goes into the int32 accumulator before requantization (the LDs of its int32
  levels into the accumulator's rows, then MMs with acc = 1 onto it), so ``relu(x W^T + b)``
  is one RQ with its relu flag (``compiler/bias.py``);
* the inner dimensions 256 and 128 are more than K_MAX = 64: every output tile's product is cut
  into MMs of at most 64 that add into the accumulator (acc = 1), exact in int32;
* the 50,432 weights are more than the 4,096-word scratchpad: they stream from external
  memory in blocks (``compiler/streaming.py``), as the blocking printed below says.

It prints float and GA-2 accuracy on the held-out images (every one of them, on the reference
machine), the machine against the integer interpreter, cycles per image, and runs the first
``--rtl N`` images on the RTL under Icarus and Verilator. The last line is ``digits_mlp relu:
float A%, GA-2 B%, agree C%, RTL bit-exact on N images``.

``--widths 64 512 320 128 10`` makes a model of 239,818 parameters: one int8 weight a word
it would not fit the 65,536-word external memory, so Capra packs the weights four to a word
and loads them with ``LD fmt=1`` (``compiler/packing.py``), in the same cycles.

Usage: python examples/digits_mlp.py [--act relu|gelu|silu] [--widths 64 256 128 10] [--batch 4]
[--rtl 16] [--epochs 40] [--quick] [--seed 0]
"""

from __future__ import annotations

import argparse
import itertools
import sys

import numpy as np
from _cli import non_negative, positive  # examples/_cli.py
from digits import SIMULATORS, Split, batches_of, load_split, run_rtl, train, useful_macs

WIDTHS = (64, 256, 128, 10)
ACTIVATIONS = ("relu", "gelu", "silu")


def make_models(seed: int, act: str, widths: tuple[int, ...] = WIDTHS):
    """The MLP (logits; a Linear with its bias between each pair of widths, the activation
    after each but the last) and the classifier (logits, class) around it, on fresh weights."""
    import torch
    from torch import nn

    layer = {"relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU}[act]
    torch.manual_seed(seed)
    layers: list = []
    for fan_in, fan_out in itertools.pairwise(widths):
        layers += [nn.Linear(fan_in, fan_out), layer()]
    mlp = nn.Sequential(*layers[:-1])

    class Classifier(nn.Module):
        def __init__(self, net: nn.Module) -> None:
            super().__init__()
            self.net = net

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            logits = self.net(x)
            return logits, logits.argmax(dim=-1)

    return mlp, Classifier(mlp)


def compile_model(classifier, split: Split, batch: int, params=None):
    """Lower through torch.fx for ``batch`` images and compile, calibrating on the training
    images in batches. Returns (lowered, program)."""
    from compiler import compile_graph
    from compiler.frontend import from_torch
    from sim.spec import DEFAULT

    lowered = from_torch(classifier, (WIDTHS[0],), batch=batch, params=params or DEFAULT)
    calibration = [lowered.feed(b) for b in batches_of(split.train_x, batch)[:max(1, 1024 // batch)]]
    return lowered, compile_graph(lowered.graph, calibration, params=params or DEFAULT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Train a 64-256-128-10 digits MLP with biases in PyTorch, "
                                     "compile it unchanged with Capra and run it on GA-2.")
    parser.add_argument("--act", choices=ACTIVATIONS, default="relu",
                        help="the hidden activation (default relu)")
    parser.add_argument("--widths", type=positive, nargs="+", default=list(WIDTHS), metavar="W",
                        help="layer widths, 64 (pixels) first and 10 (classes) last (default 64 256 128 10; "
                        "64 512 320 128 10 is a 239,818-parameter model, its int8 weights packed four "
                        "to an external word)")
    parser.add_argument("--batch", type=positive, default=4, help="images per run (default 4; 8 fits "
                        "the 4,096-word scratchpad too, 16 does not: the activations stay there)")
    parser.add_argument("--rtl", type=non_negative, default=None, metavar="N",
                        help="test images to run on the RTL under Icarus and Verilator, whole batches "
                        "(default 16, 0 with --quick)")
    parser.add_argument("--epochs", type=positive, default=None,
                        help="training epochs (default 40, 6 with --quick)")
    parser.add_argument("--quick", action="store_true", help="fewer epochs, the first 64 test images, no RTL")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the training order")
    args = parser.parse_args(argv)
    if args.widths[0] != WIDTHS[0] or args.widths[-1] != WIDTHS[-1] or len(args.widths) < 2:
        parser.error(f"--widths: the first is {WIDTHS[0]} (pixels), the last {WIDTHS[-1]} (classes)")
    widths = tuple(args.widths)
    epochs = args.epochs if args.epochs is not None else (6 if args.quick else 40)
    rtl_images = args.rtl if args.rtl is not None else (0 if args.quick else 16)

    import torch

    from compiler.frontend import run_torch
    from compiler.interpret import interpret

    torch.set_num_threads(1)
    split = load_split()
    if args.quick:
        split.test_x, split.test_y = split.test_x[:64], split.test_y[:64]
    mlp, classifier = make_models(args.seed, args.act, widths)
    seconds = train(mlp, split, epochs, args.seed)
    _float_logits, float_classes = run_torch(classifier, split.test_x)
    float_accuracy = 100 * float(np.mean(float_classes == split.test_y))
    shape = "-".join(map(str, widths))
    print(f"== trained {shape} ({args.act}, biases) for {epochs} epochs in {seconds:.1f} s: "
          f"float test accuracy {float_accuracy:.1f}%")

    lowered, program = compile_model(classifier, split, args.batch)
    weights = sum(p.numel() for p in mlp.parameters())
    spad = program.machine.SPAD_WORDS
    packed = [name for name, entry in program.ext.items() if entry.fmt]
    print(f"== compiled for batches of {args.batch}: {len(program.code)} instructions, {weights:,} "
          f"parameters, scratchpad high-water mark {program.spad_high} words of {spad:,}")
    print(f"  external memory: {program.ext_words:,} words of {program.machine.EXT_WORDS:,}; "
          + (f"weights packed four int8 to a word (LD fmt=1): {', '.join(packed)}" if packed
             else "one value a word"))
    for nid, blocking in program.blockings.items():
        print(f"  node {nid}: {blocking.describe()}")
    for note in program.notes:
        print(f"  note: {note}")

    feeds = [lowered.feed(b) for b in batches_of(split.test_x, args.batch)]
    outcomes = [program.run(feed, warn=False) for feed in feeds]
    n = len(split.test_x)
    classes = np.concatenate([lowered.unpack(o)[1] for o in outcomes])[:n]
    accuracy = 100 * float(np.mean(classes == split.test_y))
    agree = 100 * float(np.mean(classes == float_classes))
    interpreted = interpret(program, feeds[0])
    exact = all(np.array_equal(outcomes[0].outputs[name].ints, interpreted[program.ext[name].node])
                for name in lowered.outputs)
    counters = outcomes[0].counters
    macs = useful_macs(lowered.graph)
    t = program.machine.T
    print(f"== the {n} test images on the reference machine, {len(feeds)} runs of {args.batch}")
    print(f"  GA-2 accuracy {accuracy:.1f}% (float {float_accuracy:.1f}%); classes agree on {agree:.1f}%")
    print(f"  machine == integer interpreter on the first batch, both outputs: {exact}")
    utilisation = 100 * macs / (t * t * counters.cycles)
    print(f"  cycles per run: {counters.cycles:,} ({counters}); per image "
          f"{counters.cycles / args.batch:,.1f}; MXU utilisation {utilisation:.1f}%")

    verdict = "RTL bit-exact on 0 images"
    if rtl_images > 0:
        runs = min(-(-rtl_images // args.batch), len(feeds))
        print(f"== the first {runs * args.batch} test images on the RTL ({runs} runs per simulator)")
        try:
            lines, bad, _ = run_rtl(program, feeds[:runs])
        except (ImportError, RuntimeError) as failed:
            print(f"error: the RTL could not run: {failed}", file=sys.stderr)
            return 2
        print("\n".join(lines))
        verdict = (f"RTL bit-exact on {runs * args.batch} images" if bad == 0
                   else f"RTL differs from the reference in {bad} of {len(SIMULATORS) * runs} runs")
    print(f"\ndigits_mlp {args.act}: float {float_accuracy:.1f}%, GA-2 {accuracy:.1f}%, agree {agree:.1f}%, "
          f"{verdict}")
    return 0 if exact and "differs" not in verdict else 1


if __name__ == "__main__":
    sys.exit(main())
