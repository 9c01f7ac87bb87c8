"""``python -m report``: the report page (or the pass-by-pass account) of a compiled program.

    python -m report seed 100 [--sim both] [--out build/report/seed-100.html]
    python -m report example-a [--text]
    python -m report graph FILE.py:FUNCTION [--samples 30]
    python -m report torch FILE.py:FUNCTION --shape 64 --batch 8
    python -m report seed 100 --plots build/plots/seed-100    # also each plot as a PNG

Exit status: 0 when the page is written (and every co-simulation run matched), 1 when a
simulator found a difference, 2 for a refused graph or a bad argument.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from compiler import CompileError
from viz import save_program_plots

from . import sources
from .page import Subject, write_report
from .rtl import run_rtl, simulators


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m report",
        description="Write the report page of a compiled "
        "program: one HTML file with the graph, every pass's decisions, the plots, the "
        "listing with cycles and, with --sim, the RTL's PASS or FAIL.",
    )
    p.add_argument(
        "source",
        choices=("seed", "example-a", "graph", "torch"),
        help="seed N: the battery's random graph; example-a: running example A; graph FILE.py:FUNC: "
        "your function returning (graph, calibration[, test inputs]) or (graph, {input: shape}); "
        "torch FILE.py:FUNC: your function returning an nn.Module of one input",
    )
    p.add_argument("what", nargs="?", default=None, help="the seed number, or FILE.py:FUNCTION")
    p.add_argument("--out", type=Path, default=None, help="the HTML file (default build/report/<name>.html)")
    p.add_argument(
        "--sim",
        default="none",
        choices=("none", "icarus", "verilator", "both"),
        help="run the program on the RTL under these simulators (default none)",
    )
    p.add_argument(
        "--text", action="store_true", help="print the pass-by-pass account instead of writing a page"
    )
    p.add_argument(
        "--plots", type=Path, default=None, metavar="DIR", help="also save each plot as a PNG in DIR"
    )
    p.add_argument(
        "--shape", type=int, nargs="+", default=None, help="torch: the input's shape (one row with --batch)"
    )
    p.add_argument("--batch", type=int, default=None, help="torch: rows of the input")
    p.add_argument(
        "--samples",
        type=int,
        default=sources.TORCH_SAMPLES,
        help="graph (given shapes) and torch: calibration samples drawn (default 30)",
    )
    p.add_argument("--seed", type=int, default=0, help="graph and torch: seed of the drawn data (default 0)")
    return p


def subject_of(args: argparse.Namespace, fail) -> Subject:
    if args.source == "seed":
        if args.what is None or not args.what.isdigit():
            fail(f"seed needs a number: python -m report seed 100 (got {args.what!r})")
        return sources.seed_subject(int(args.what))
    if args.source == "example-a":
        return sources.example_a_subject()
    if args.what is None:
        fail(f"{args.source} needs FILE.py:FUNCTION")
    if args.source == "graph":
        return sources.user_subject(args.what, args.samples, args.seed)
    if not args.shape:
        fail("torch needs --shape (and --batch for a shape of one row)")
    return sources.torch_subject(args.what, tuple(args.shape), args.batch, args.samples, args.seed)


def slug(title: str) -> str:
    """A file name from a title: ``seed 100`` -> ``seed-100``."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or "report"


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:
        subject = subject_of(args, p.error)
    except (CompileError, ValueError) as refused:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    if args.text:
        print(subject.program.explain(subject.inputs, samples=subject.samples), end="")
        return 0
    rtl = None
    if args.sim != "none":
        if subject.inputs is None:
            print("error: --sim needs test inputs, and this source gives none", file=sys.stderr)
            return 2
        from cosim.jobs import Job  # the compiled program goes with it: a FAIL names the tensors

        rtl = run_rtl([Job.of_program(subject.program, subject.inputs, subject.title)], simulators(args.sim))
        for result in rtl:
            print(f"{result.verdict} {result.simulator}: {result.summary()}")
    out = (
        args.out
        or Path("build/report") / f"{slug(subject.title if args.source != 'example-a' else 'example-a')}.html"
    )
    written = write_report(out, subject, rtl)
    print(f"wrote {written}")
    if args.plots:
        for path in save_program_plots(subject.program, args.plots):
            print(f"wrote {path}")
    return 1 if rtl and not all(r.passed for r in rtl) else 0


if __name__ == "__main__":
    sys.exit(main())
