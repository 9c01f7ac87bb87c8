#!/usr/bin/env python3
"""A digits classifier: a PyTorch MLP, compiled by Capra through torch.fx, run on GA-2.

The data is scikit-learn's bundled digits set (1797 images of 8 x 8 pixels with values
0..16, ten classes; no download). The script

1. splits it into training and test images (``train_test_split``, a quarter for testing,
   stratified, ``random_state=0``) and scales the pixels to 0..1;
2. trains an MLP 64 -> 32 -> 10 with a relu (Adam, fixed seeds, on the CPU, seconds). The
   hidden layer has no bias (the seed's model; a bias would go into the accumulator before
   the relu: ``examples/digits_mlp.py`` has biases everywhere); the output layer has one;
3. wraps the MLP so that it returns the logits and the class (``argmax(dim=-1)``), traces
   it with torch.fx and lowers it to a Capra graph for a batch of 8 images
   (:func:`compiler.frontend.from_torch`);
4. compiles it, calibrating on the training images in batches of 8;
5. runs the whole test split on the reference machine, 8 images per run (the last batch is
   padded with blank images, whose results are ignored), and checks the first batch
   against the integer interpreter;
6. shows what the front end says about a variant it refuses (a softmax over the batch);
7. runs the first ``--rtl N`` test images (rounded up to whole batches) on the RTL under
   Icarus and Verilator (the cosim package) and compares memories and counters with the
   reference machine.

It prints float accuracy, GA-2 accuracy, how often the two classify alike, cycles per
image and the MXU utilisation: the model's multiply-adds over what a T x T array could do
in the same cycles, multiply-adds / (T * T * cycles), T the machine's (``--param``; default
T = 4). The last
line is ``digits: float A%, GA-2 B%, agree C%, RTL bit-exact on N images``; percentages
have one decimal; N is 0 with ``--rtl 0``. When the RTL differs from the reference the last
line says so instead and the exit status is 1.

With ``--report [HTML]`` it also writes the program's report page (default
build/report/digits.html; see ``python -m report``).

Usage: python examples/digits.py [--rtl 16] [--epochs 60] [--quick] [--seed 0] [--report [HTML]] [--param t8]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _cli import add_machine, machine, non_negative, positive  # examples/_cli.py

BATCH = 8
"""Images per run: the batch the program is compiled for."""
HIDDEN = 32
CLASSES = 10
PIXELS = 64
PIXEL_MAX = 16.0
"""The digits images hold integers 0..16; they are divided by this."""
SIMULATORS = ("icarus", "verilator")
REPORT = Path(__file__).resolve().parent.parent / "build" / "report" / "digits.html"


@dataclass
class Split:
    """Images (float32, n x 64, values 0..1) and labels (int64, n)."""

    train_x: np.ndarray
    train_y: np.ndarray
    test_x: np.ndarray
    test_y: np.ndarray


def load_split() -> Split:
    """scikit-learn's digits, a stratified quarter held out for testing (random_state=0)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = (digits.data / PIXEL_MAX).astype(np.float32)
    train_x, test_x, train_y, test_y = train_test_split(x, digits.target, test_size=0.25, random_state=0,
                                                        stratify=digits.target)
    return Split(train_x, train_y.astype(np.int64), test_x, test_y.astype(np.int64))


def make_models(seed: int):
    """The MLP (logits) and the classifier that wraps it (logits, class), on fresh weights."""
    import torch
    from torch import nn

    class DigitsMLP(nn.Module):
        """64 pixels -> 32 hidden units (relu, no bias) -> 10 logits (with bias)."""

        def __init__(self) -> None:
            super().__init__()
            self.hidden = nn.Linear(PIXELS, HIDDEN, bias=False)
            self.out = nn.Linear(HIDDEN, CLASSES)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.out(torch.relu(self.hidden(x)))

    class Classifier(nn.Module):
        """The MLP's logits and, per image, the index of the largest."""

        def __init__(self, mlp: nn.Module) -> None:
            super().__init__()
            self.mlp = mlp

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            logits = self.mlp(x)
            return logits, logits.argmax(dim=-1)

    torch.manual_seed(seed)
    mlp = DigitsMLP()
    return mlp, Classifier(mlp)


def show_refusals() -> None:
    """A variant of the MLP that GA-2 cannot run as written, and what the front end says."""
    import torch
    from torch import nn

    from compiler.frontend import UnsupportedModel, from_torch

    class Sigmoid(nn.Module):
        """A sigmoid hidden layer and a softmax over the batch instead of over the classes."""

        def __init__(self) -> None:
            super().__init__()
            self.hidden = nn.Linear(PIXELS, HIDDEN, bias=False)
            self.out = nn.Linear(HIDDEN, CLASSES)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.softmax(self.out(torch.sigmoid(self.hidden(x))), dim=0)

    for model in (Sigmoid(),):
        try:
            from_torch(model, (PIXELS,), batch=BATCH)
        except UnsupportedModel as refused:
            print("  " + str(refused).replace("\n", "\n    "))


def train(mlp, split: Split, epochs: int, seed: int, cosine: bool = False) -> float:
    """Adam (learning rate 0.01), cross-entropy, minibatches of 32 in a seeded order; with
    ``cosine`` the learning rate falls from 0.01 to 0 along a half cosine over the run
    (``CosineAnnealingLR``, one step a minibatch). Returns the seconds it took.

    Training is this CPU's floating point: another CPU may train another net from the same seed.
    A constant rate of 0.01 leaves the digits CNN (examples/digits_cnn.py) now and then in a poor
    minimum (86% of the training set, seed 0, one thread, on one CPU; 100% with two threads); the
    falling rate brought every one of twelve runs (seeds 0-5, one and two threads) to 100% of the
    training set and 98.4-99.1% of the test set."""
    import torch

    torch.manual_seed(seed)
    order = torch.Generator().manual_seed(seed)
    x = torch.from_numpy(split.train_x)
    y = torch.from_numpy(split.train_y)
    optimiser = torch.optim.Adam(mlp.parameters(), lr=0.01)
    steps = epochs * -(-len(x) // 32)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, steps) if cosine else None
    loss_fn = torch.nn.CrossEntropyLoss()
    start = time.perf_counter()
    mlp.train()
    for _ in range(epochs):
        for batch in torch.randperm(len(x), generator=order).split(32):
            optimiser.zero_grad()
            loss_fn(mlp(x[batch]), y[batch]).backward()
            optimiser.step()
            if schedule is not None:
                schedule.step()
    mlp.eval()
    return time.perf_counter() - start


def batches(images: np.ndarray) -> list[np.ndarray]:
    """Batches of BATCH images; the last is padded with blank (zero) images."""
    return batches_of(images, BATCH)


def batches_of(images: np.ndarray, size: int) -> list[np.ndarray]:
    """Batches of ``size`` images; the last is padded with blank (zero) images."""
    padded = -len(images) % size
    full = np.concatenate([images, np.zeros((padded, images.shape[1]), dtype=images.dtype)])
    return [full[i:i + size] for i in range(0, len(full), size)]


def useful_macs(graph) -> int:
    """Multiply-adds the model asks for: rows x inner x cols of every matmul."""
    total = 0
    for node in graph.nodes:
        if node.op == "matmul":
            rows, inner = graph.nodes[node.ins[0]].shape
            total += rows * inner * node.shape[1]
    return total


def run_rtl(program, feeds: list[dict]) -> tuple[list[str], int, list]:
    """Run the batches on the RTL under both simulators and compare with the reference machine
    (every memory word, the five counters and the stop: :func:`report.rtl.run_rtl`).

    Returns:
        (the lines to print, the number of runs that differ, the results per simulator).

    Raises:
        ImportError: the cosim package is not there.
        RuntimeError: a simulator is missing, or its build or run failed.
    """
    try:
        import cosim.api  # noqa: F401  (the message below names what is missing)
        from report.rtl import run_rtl as run_on_rtl
    except ImportError as missing:
        raise ImportError("RTL run needs the cosim package: cosim.api.run_programs and cosim.api.compare "
                          f"({missing}); run with --rtl 0 to skip it") from missing
    from cosim.jobs import Job

    # made for the program's machine: run on that machine's Verilog (build/machines/<tag>/ with --param)
    jobs = [Job.of_program(program, feed, f"digits batch {k}") for k, feed in enumerate(feeds)]
    results = run_on_rtl(jobs, SIMULATORS)
    failed = [r for r in results if r.failure]
    if failed:
        raise RuntimeError(f"{failed[0].simulator}: {failed[0].failure}")
    lines = [f"  {r.simulator:9s}: {r.summary()}" for r in results]
    return lines, sum(len(r.differences) for r in results), results


@dataclass
class Measured:
    """What the reference machine gave on the test split."""

    accuracy: float
    agree: float
    exact: bool
    feeds: list[dict]


def run_reference(lowered, program, split: Split, float_logits: np.ndarray,
                  float_classes: np.ndarray) -> Measured:
    """Every test image on the reference machine, BATCH per run; prints the figures."""
    from compiler.interpret import interpret

    feeds = [lowered.feed(b) for b in batches(split.test_x)]
    outcomes = [program.run(feed) for feed in feeds]
    n = len(split.test_x)
    logits = np.concatenate([lowered.unpack(o)[0] for o in outcomes])[:n]
    classes = np.concatenate([lowered.unpack(o)[1] for o in outcomes])[:n]
    accuracy = 100 * float(np.mean(classes == split.test_y))
    agree = 100 * float(np.mean(classes == float_classes))
    error = float(np.linalg.norm(logits - float_logits) / np.linalg.norm(float_logits))
    interpreted = interpret(program, feeds[0])
    exact = all(np.array_equal(outcomes[0].outputs[name].ints, interpreted[program.ext[name].node])
                for name in lowered.outputs)
    print(f"\n== the {n} test images on the reference machine, {len(feeds)} runs of {BATCH}")
    print(f"  GA-2 accuracy {accuracy:.1f}%; the classes agree with float on {agree:.1f}% of the images; "
          f"logits relative error {100 * error:.2f}%")
    print(f"  machine == integer interpreter on the first batch, both outputs: {exact}")

    counters = outcomes[0].counters
    macs = useful_macs(lowered.graph)
    t = program.machine.T
    print(f"  cycles per run of {BATCH}: {counters.cycles} ({counters}); "
          f"per image {counters.cycles / BATCH:.1f}")
    print(f"  MXU utilisation: {macs} multiply-adds / ({t} x {t} x {counters.cycles} cycles) = "
          f"{100 * macs / (t * t * counters.cycles):.1f}%; over the {counters.mxu} cycles the MXU is "
          f"busy {100 * macs / (t * t * counters.mxu):.1f}%")
    return Measured(accuracy, agree, exact, feeds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Train a digits MLP in PyTorch, compile it with Capra "
                                     "through torch.fx and run it on GA-2 (reference machine and RTL).")
    parser.add_argument("--rtl", type=non_negative, default=None, metavar="N",
                        help="test images to run on the RTL under Icarus and Verilator, rounded up to "
                        "whole batches of 8 (default 16, 0 with --quick; 0 skips the RTL)")
    parser.add_argument("--epochs", type=positive, default=None,
                        help="training epochs (default 60, 8 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="a quick check: fewer epochs, the first 64 test images, no RTL unless --rtl")
    parser.add_argument("--seed", type=int, default=0, help="seed of the weights and the training order")
    add_machine(parser)
    parser.add_argument("--report", nargs="?", const=REPORT, default=None, type=Path, metavar="HTML",
                        help=f"write the program's report page (default {REPORT}): graph, passes, plots, "
                        "listing with cycles, the first batch's checks and, with --rtl, the RTL's PASS/FAIL")
    args = parser.parse_args(argv)
    params = machine(parser, args)
    epochs = args.epochs if args.epochs is not None else (8 if args.quick else 60)
    rtl_images = args.rtl if args.rtl is not None else (0 if args.quick else 16)

    import torch

    from compiler import CompileError, compile_graph
    from compiler.frontend import from_torch, run_torch

    torch.set_num_threads(1)  # the same float results on every machine; the model is tiny
    split = load_split()
    if args.quick:
        split.test_x, split.test_y = split.test_x[:64], split.test_y[:64]
    print(f"== data: {len(split.train_x)} training and {len(split.test_x)} test images of {PIXELS} "
          "pixels, scaled to 0..1")

    mlp, classifier = make_models(args.seed)
    seconds = train(mlp, split, epochs, args.seed)
    float_logits, float_classes = run_torch(classifier, split.test_x)
    float_accuracy = 100 * float(np.mean(float_classes == split.test_y))
    print(f"== trained {PIXELS}-{HIDDEN}-{CLASSES} for {epochs} epochs in {seconds:.1f} s: "
          f"float test accuracy {float_accuracy:.1f}%")

    lowered = from_torch(classifier, (PIXELS,), batch=BATCH)
    print("\n== traced by torch.fx")
    print(str(lowered.traced.graph).strip())
    print("\n== lowered to Capra")
    for node in lowered.graph.nodes:
        operands = ", ".join(f"%{i}" for i in node.ins)
        print(f"  %{node.id:<2d} = {node.op:7s} {operands:9s} -> {node.shape!s:8s} {node.name}"
              f"   (from {lowered.origin[node.id]})")

    print("\n== a variant GA-2 cannot run as written (nothing is compiled for it)")
    show_refusals()

    calibration = [lowered.feed(b) for b in batches(split.train_x)[:len(split.train_x) // BATCH]]
    try:
        program = compile_graph(lowered.graph, calibration, params=params)
    except CompileError as refused:           # e.g. a scratchpad too small for the model
        print(f"error: {refused}", file=sys.stderr)
        return 2
    print(f"\n== compiled with {len(calibration)} calibration batches of {BATCH} training images: "
          f"{len(program.code)} instructions, scratchpad high-water mark {program.spad_high} words")
    for note in program.notes:
        print(f"  note: {note}")

    measured = run_reference(lowered, program, split, float_logits, float_classes)

    verdict = "RTL bit-exact on 0 images"
    rtl = None
    if rtl_images > 0:
        runs = min(-(-rtl_images // BATCH), len(measured.feeds))
        images = min(runs * BATCH, len(split.test_x))
        print(f"\n== the first {images} test images on the RTL ({runs} runs per simulator)")
        try:
            lines, bad, rtl = run_rtl(program, measured.feeds[:runs])
        except ImportError as missing:
            print(f"error: {missing}", file=sys.stderr)
            return 2
        except RuntimeError as failed:  # cosim.api.CosimError: no simulator, a failed build or run
            print(f"error: the RTL could not run: {failed}", file=sys.stderr)
            return 2
        print("\n".join(lines))
        verdict = (f"RTL bit-exact on {images} images" if bad == 0
                   else f"RTL differs from the reference in {bad} of {len(SIMULATORS) * runs} runs")
    if args.report:
        from report import Subject, write_report

        title = f"digits MLP {PIXELS}-{HIDDEN}-{CLASSES}, batch {BATCH}"
        origin = "examples/digits.py (trained in PyTorch, lowered through torch.fx)"
        subject = Subject(title, program, measured.feeds[0], len(calibration), origin)
        print(f"\n== report: {write_report(args.report, subject, rtl)}")
    print(f"\ndigits: float {float_accuracy:.1f}%, GA-2 {measured.accuracy:.1f}%, "
          f"agree {measured.agree:.1f}%, {verdict}")
    return 0 if measured.exact and "differs" not in verdict else 1


if __name__ == "__main__":
    sys.exit(main())
