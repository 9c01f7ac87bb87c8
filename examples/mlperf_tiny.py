#!/usr/bin/env python3
"""MLPerf Tiny's ResNet-8 and DS-CNN, written in PyTorch, compiled unchanged by Capra and run on
GA-2 (issue 25; docs/guide/conv.md).

For each model (compiler/workloads/mlperf_tiny.py: seeded weights, BatchNorm statistics drawn
to look trained): ``from_torch(model, (C, H, W), batch=1, per_channel=True)``, compiled for the
machine (``--param``; the default machine, or ``t8``: T = 8, LANES = 8, the default sizes:
a 4,096-word scratchpad, 65,536 external words, 4,096 instructions); activations that do not
fit the scratchpad live in external memory, and a program longer than the instruction memory
runs as several launches. One random image on the reference machine: the logits equal the
integer interpreter's and lie within 10% of PyTorch's (relative L2). Then the per-layer table:
multiply-adds, instructions, cycles, MXU utilisation (useful multiply-adds over T x T x
cycles), and the time per image at the machine's Fmax (docs/sweep.json) beside the Cortex-M4's
222 ms for ResNet-8 (MLPerf Tiny v1.1).

``--rtl verilator`` (or icarus, both) runs the image's launches on the RTL, one after another
from the scratchpad the previous one left (cosim): every memory word, the counters and the stop
equal the reference machine's.

Usage: python examples/mlperf_tiny.py [--model resnet8|ds_cnn|both] [--param t8] [--rtl none]
"""

from __future__ import annotations

import argparse
import sys

from _cli import add_machine, machine  # examples/_cli.py


def report(m) -> list[str]:
    """The model's lines: checks, totals, the per-layer table."""
    from compiler.testing.cnnbench import fmax_mhz
    from compiler.workloads.mlperf_tiny import CORTEX_M4_RESNET8_MS

    p = m.params
    fmax = fmax_mhz(p)
    at = f"{m.cycles / fmax / 1e3:.2f} ms at {fmax:.1f} MHz" if fmax else "Fmax not measured"
    m4 = f" (Cortex-M4 at 120 MHz: {CORTEX_M4_RESNET8_MS:.0f} ms)" if m.model == "resnet8" else ""
    lines = [f"{m.model} on T={p.T} LANES={p.LANES} SPAD_WORDS={p.SPAD_WORDS} EXT_WORDS={p.EXT_WORDS} "
             f"IMEM_WORDS={p.IMEM_WORDS}: {len(m.program.code):,} instructions in {m.launches} launches, "
             f"{m.program.ext_words:,} external words",
             f"  equal to the integer interpreter: {m.equal}; relative L2 from PyTorch: {m.error:.4f}",
             f"  {m.cycles:,} cycles per image, {m.macs:,} multiply-adds, MXU utilisation "
             f"{100 * m.utilisation:.1f}%; {at}{m4}",
             f"  {'node':>4}  {'layer':40s} {'MACs':>10} {'instr':>6} {'cycles':>9} {'MXU util':>8}"]
    for r in m.rows:
        lines.append(f"  {r.node:4d}  {r.name:40s} {r.macs:10,} {r.instructions:6,} {r.cycles:9,} "
                     f"{100 * r.utilisation:7.1f}%")
    return lines


def run_rtl(m, which: tuple[str, ...]) -> tuple[list[str], bool]:
    """The image's launches on the RTL, in order (cosim.jobs.Job.of_launches: each job's
    external image what the reference machine left after the launch before; the scratchpad
    comes from the RTL's previous run)."""
    from cosim.jobs import Job
    from report.rtl import run_rtl as run_on_rtl

    results = run_on_rtl(Job.of_launches(m.program, m.lowered.feed(m.image), m.model), which)
    ok = all(not r.failure and not r.differences and r.failed == 0 for r in results)
    return [f"  {r.simulator:9s}: {r.failure or r.summary()}" for r in results], ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="MLPerf Tiny ResNet-8 and DS-CNN from PyTorch on GA-2")
    parser.add_argument("--model", choices=("resnet8", "ds_cnn", "both"), default="both")
    parser.add_argument("--rtl", choices=("none", "icarus", "verilator", "both"), default="none",
                        help="run the launches of one image on the RTL (cosim) under these simulators")
    parser.add_argument("--seed", type=int, default=0, help="the weights' and the images' seed")
    add_machine(parser)
    args = parser.parse_args(argv)
    params = machine(parser, args)
    from compiler.workloads.mlperf_tiny import measure
    from report.rtl import simulators

    ok = True
    for name in ("resnet8", "ds_cnn") if args.model == "both" else (args.model,):
        m = measure(name, params, args.seed)
        print("\n".join(report(m)), flush=True)
        ok = ok and m.equal and m.error < 0.1
        if simulators(args.rtl):
            lines, same = run_rtl(m, simulators(args.rtl))
            print(f"  RTL, {m.launches} launches of one image:")
            print("\n".join(lines))
            ok = ok and same
    print("mlperf_tiny:", "PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
