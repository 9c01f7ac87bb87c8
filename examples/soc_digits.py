#!/usr/bin/env python3
"""GA-2 in a system (issue 29): a RISC-V SoC whose firmware runs the digits MLP on GA-2.

``make soc-sim`` runs this. It trains and compiles the 64-256-128-10 digits MLP of
``examples/digits_mlp.py`` (PyTorch, biases, ReLU; batches of 4), runs the first 16 held-out
images on the reference machine, and builds a LiteX SoC (flows/soc/sim.py): a VexRiscv CPU, a
UART, main RAM holding the model's weights, and GA-2 on the bus (its AXI4-Lite registers and its
AXI4 DMA master). The firmware (flows/soc/firmware, C) loads the program into GA-2, and for each
run copies the images into GA-2's external memory, starts it, waits for its interrupt and prints
each prediction over the simulated UART; it ends with ``PASS`` when every prediction (and every
run's cycles less its memory stalls) equals the reference machine's, ``FAIL`` naming the image
otherwise. This script checks the UART's lines against the reference machine too and exits 0
only when both agree.

Usage: python examples/soc_digits.py [--images 16] [--epochs 40] [--out build/soc]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np
from _cli import positive  # examples/_cli.py
from digits import batches_of, load_split, train
from digits_mlp import compile_model, make_models

from sim.spec import DEFAULT

BATCH = 4
PREDICTION = re.compile(r"^image (\d+): prediction (\d+)")


def payload(images: int, epochs: int, seed: int = 0):
    """Train and compile the MLP; the firmware's payload for the first ``images`` test images."""
    import torch

    from flows.soc.payload import make

    torch.set_num_threads(1)
    split = load_split()
    mlp, classifier = make_models(seed, "relu")
    train(mlp, split, epochs, seed)
    lowered, program = compile_model(classifier, split, BATCH)
    feeds = [lowered.feed(b) for b in batches_of(split.test_x[:images], BATCH)]
    return make(program, feeds, lowered.outputs[1], split.test_y, images)


def verdict(uart: str, expected: list[int]) -> list[str]:
    """What the UART's lines say against the reference machine's classes: the problems."""
    seen = {}
    for line in uart.splitlines():
        found = PREDICTION.match(line.strip())
        if found:
            seen[int(found.group(1))] = int(found.group(2))
    problems = [f"image {i}: UART {seen.get(i, 'nothing')}, reference {want}"
                for i, want in enumerate(expected) if seen.get(i) != want]
    if not any(line.strip() == "PASS" for line in uart.splitlines()):
        problems.append("the firmware did not print PASS")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=positive, default=16, help="test images (default 16)")
    parser.add_argument("--epochs", type=positive, default=40, help="training epochs (default 40)")
    parser.add_argument("--out", type=Path, default=Path("build/soc"),
                        help="build folder (default build/soc)")
    args = parser.parse_args(argv)

    from flows.soc import sim

    t0 = time.perf_counter()
    made = payload(args.images, args.epochs)
    print(f"== the digits MLP compiled: {len(made.program) // 4} instructions, {len(made.image):,} external "
          f"words; {len(made.inputs)} runs of {made.batch} images, {made.reference_cycles:,} cycles each "
          f"on the reference machine; its classes: {' '.join(map(str, made.expected))}")
    try:
        gateware = sim.build(made, args.out, DEFAULT)
        print(f"== running the SoC (LiteX simulator, Verilator): the UART says "
              f"({time.perf_counter() - t0:.0f} s in)")
        status, uart = sim.run(gateware, echo=lambda line: print(f"  | {line}", flush=True))
    except sim.SocError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    problems = verdict(uart, made.expected)
    seconds = time.perf_counter() - t0
    if problems or status:
        print(f"FAIL ({seconds:.0f} s): " + "; ".join(problems or [f"the simulator exited {status}"]))
        return 1
    accuracy = 100 * float(np.mean(np.array(made.expected) == np.array(made.labels)))
    print(f"PASS: {args.images} predictions over the SoC's UART equal the reference machine's "
          f"({accuracy:.0f}% of the labels), {seconds:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
