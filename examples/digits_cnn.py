#!/usr/bin/env python3
"""A convolutional network on scikit-learn's digits (8 x 8), trained in PyTorch, compiled unchanged
by Capra and run on GA-2 (issue 25; docs/guide/conv.md).

1. trains conv 3x3 (1 -> 8, padding 1) + BatchNorm + ReLU, max pool 2x2, conv 3x3 (8 -> 16,
   padding 1) + BatchNorm + ReLU, max pool 2x2, flatten, linear 64 -> 10 (Adam, its learning
   rate falling from 0.01 to 0 along a half cosine, cross-entropy, the digits split of
   examples/digits.py);
2. lowers it with ``from_torch(model, (1, 8, 8), batch=4, per_channel=True)`` (the BatchNorms
   folded into the convolutions, images stored rows = pixels, columns = channels; a weight scale
   and a requantizer pair per output channel of each convolution) and compiles it;
3. runs the test images on the reference machine, 4 a run, and checks the first run against the
   integer interpreter (every output value); then the same with per-tensor scales
   (``--per-tensor`` makes that the program the RTL runs);
4. runs the first ``--rtl N`` images on the RTL under Icarus and Verilator (report.rtl.run_rtl):
   every memory word, the counters and the stop equal the reference machine's.

The last line: ``digits_cnn: float F%, GA-2 Q%, agree A%, RTL bit-exact on N images``.

Usage: python examples/digits_cnn.py [--epochs 40] [--quick] [--rtl 16] [--seed 0] [--per-tensor]
"""

from __future__ import annotations

import argparse
import re
import sys

import numpy as np
from _cli import non_negative, positive  # examples/_cli.py
from digits import SIMULATORS, batches_of, load_split, run_rtl, train

BATCH = 4
"""Images per run (the first convolution's 8 x 8 x 8 output of 4 images fills half the scratchpad)."""
SIDE = 8


def make_models(seed: int):
    """The CNN (logits) and the classifier around it (logits, class), on fresh weights."""
    import torch
    from torch import nn

    torch.manual_seed(seed)
    cnn = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 2 * 2, 10))

    class Classifier(nn.Module):
        def __init__(self, net: nn.Module) -> None:
            super().__init__()
            self.net = net

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            logits = self.net(x)
            return logits, logits.argmax(dim=-1)

    return cnn, Classifier(cnn)


def images(rows: np.ndarray) -> np.ndarray:
    """Digits rows (n, 64) as images (n, 1, 8, 8)."""
    return rows.reshape(-1, 1, SIDE, SIDE)


def compile_model(classifier, train_x: np.ndarray, params, per_channel: bool):
    """Lower for BATCH images and compile, calibrating on 256 training images. Returns
    (lowered, program)."""
    from compiler.frontend import from_torch

    lowered = from_torch(classifier, (1, SIDE, SIDE), batch=BATCH, params=params, per_channel=per_channel)
    calibration = [lowered.feed(images(b)) for b in batches_of(train_x, BATCH)[:256 // BATCH]]
    return lowered, lowered.compile(calibration)


def run_all(lowered, program, test_x: np.ndarray):
    """The test images on the reference machine, BATCH a run. Returns (classes, feeds, outcomes,
    the first run equal to the integer interpreter on both outputs)."""
    from compiler.interpret import interpret

    feeds = [lowered.feed(images(b)) for b in batches_of(test_x, BATCH)]
    outcomes = [program.run(feed, warn=False) for feed in feeds]
    classes = np.concatenate([lowered.unpack(o)[1] for o in outcomes])[:len(test_x)]
    interpreted = interpret(program, feeds[0])
    exact = all(np.array_equal(outcomes[0].outputs[name].ints, interpreted[program.ext[name].node])
                for name in lowered.outputs)
    return classes, feeds, outcomes, exact


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=positive, default=None, help="training epochs (default 40, 8 with "
                        "--quick)")
    parser.add_argument("--rtl", type=non_negative, default=None, metavar="N",
                        help="test images to run on the RTL under Icarus and Verilator (default 16, 0 with "
                        "--quick)")
    parser.add_argument("--quick", action="store_true", help="fewer epochs, the first 64 test images, no RTL")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the training order")
    parser.add_argument("--per-tensor", action="store_true",
                        help="the RTL runs the per-tensor program (default: per output channel)")
    args = parser.parse_args(argv)
    epochs = args.epochs if args.epochs is not None else (8 if args.quick else 40)
    rtl_images = args.rtl if args.rtl is not None else (0 if args.quick else 16)

    import torch

    from compiler.frontend import run_torch
    from sim.spec import DEFAULT

    torch.set_num_threads(1)
    split = load_split()
    if args.quick:
        split.test_x, split.test_y = split.test_x[:64], split.test_y[:64]
    split.train_x = images(split.train_x)
    cnn, classifier = make_models(args.seed)
    seconds = train(cnn, split, epochs, args.seed, cosine=True)
    _, float_classes = run_torch(classifier, images(split.test_x))
    float_accuracy = 100 * float(np.mean(float_classes == split.test_y))
    print(f"== trained for {epochs} epochs in {seconds:.1f} s: float test accuracy {float_accuracy:.1f}%")

    train_rows = split.train_x.reshape(len(split.train_x), -1)
    per_channel = not args.per_tensor
    lowered, program = compile_model(classifier, train_rows, DEFAULT, per_channel)
    kind = "per-channel" if per_channel else "per-tensor"
    print(f"== compiled ({kind} weight scales) for batches of {BATCH}: {len(program.code)} instructions, "
          f"{sum(p.numel() for p in cnn.parameters()):,} parameters, scratchpad high-water mark "
          f"{program.spad_high} words of {program.machine.SPAD_WORDS:,}")
    print("  " + "\n  ".join(re.sub(r" bias=\[[^]]*\]", " bias=[...]", line)
                              for line in lowered.graph.text().splitlines()))
    classes, feeds, outcomes, exact = run_all(lowered, program, split.test_x)
    n = len(split.test_x)
    accuracy = 100 * float(np.mean(classes == split.test_y))
    agree = 100 * float(np.mean(classes == float_classes))
    print(f"== the {n} test images on the reference machine, {len(feeds)} runs of {BATCH}")
    print(f"  GA-2 accuracy {accuracy:.1f}% ({kind}; float {float_accuracy:.1f}%); classes agree on "
          f"{agree:.1f}%")
    print(f"  machine == integer interpreter on the first batch, both outputs: {exact}")
    print(f"  cycles per run: {outcomes[0].counters.cycles:,} ({outcomes[0].counters})")
    other_lowered, other = compile_model(classifier, train_rows, DEFAULT, not per_channel)
    other_classes, _, _, other_exact = run_all(other_lowered, other, split.test_x)
    other_accuracy = 100 * float(np.mean(other_classes == split.test_y))
    print(f"  {'per-tensor' if per_channel else 'per-channel'} weight scales instead: GA-2 accuracy "
          f"{other_accuracy:.1f}%, machine == integer interpreter on the first batch: {other_exact}")

    verdict = "RTL bit-exact on 0 images"
    if rtl_images > 0:
        runs = min(-(-rtl_images // BATCH), len(feeds))
        print(f"== the first {runs * BATCH} test images on the RTL ({runs} runs per simulator)")
        try:
            lines, bad, _ = run_rtl(program, feeds[:runs])
        except (ImportError, RuntimeError) as failed:
            print(f"error: the RTL could not run: {failed}", file=sys.stderr)
            return 2
        print("\n".join(lines))
        verdict = (f"RTL bit-exact on {runs * BATCH} images" if bad == 0
                   else f"RTL differs from the reference in {bad} of {len(SIMULATORS) * runs} runs")
    print(f"\ndigits_cnn: float {float_accuracy:.1f}%, GA-2 {accuracy:.1f}%, agree {agree:.1f}%, {verdict}")
    return 0 if exact and other_exact and "differs" not in verdict else 1


if __name__ == "__main__":
    sys.exit(main())
