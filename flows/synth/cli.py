"""``python -m flows.synth``: the command line of the synthesis flow (make synth)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sim import machines

from .run import MAPPERS, ROUTERS, SynthError, synthesise

YOSYS_CACHE = Path("build") / "yosys-cache"
"""Yosys's results by a hash of the Verilog, the script and Yosys (flows.synth.run.run_yosys): a
rerun of unchanged sources skips Yosys, and ``examples/sweep.py --synth-reports`` can tell that
a machine's report is of the current sources."""


def _seed(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def _mhz(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"expected a frequency in MHz between 1 and 1000, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m flows.synth",
        description="Synthesise GA-2 out of context for the ECP5-85F (speed 6, CABGA381) with Yosys and "
                    "nextpnr-ecp5 from PyPI; write report.md and report.json (utilisation, Fmax, "
                    "critical path, tool versions, run time).")
    parser.add_argument("--out", type=Path, default=None,
                        help="output folder (default: build/synth for the default machine, "
                             "build/machines/<tag>/synth for another)")
    parser.add_argument("--freq", type=_mhz, default=100.0,
                        help="nextpnr's timing target in MHz (default: 100)")
    parser.add_argument("--seed", type=_seed, default=1,
                        help="nextpnr's placement seed, 1 or more (default: 1)")
    parser.add_argument("--mapper", choices=MAPPERS, default="abc",
                        help="LUT mapping: abc (the classic ABC, the default) or abc9 (synth_ecp5's own; "
                             "the PyPI Yosys fails in it on GA-2, then abc runs: see flows/synth)")
    machines.add_argument(parser)
    parser.add_argument("--yosys-only", action="store_true", help="stop after Yosys (no place and route)")
    parser.add_argument("--dsp-registers", action="store_true",
                        help="move each multiplier's product register into its DSP block before place "
                             "and route (flows/synth/dsp_regs.py; docs/guide/fpga.md gives what it "
                             "bought on each machine); by default Yosys's netlist is placed as it is")
    parser.add_argument("--router", choices=ROUTERS, default="router1",
                        help="nextpnr's router (default: router1, nextpnr-ecp5's own default); router2 "
                             "routes a part nearly full, where router1 crawls (T = 8 at OVERLAP = 2)")
    parser.add_argument("--keep-carries", action="store_true",
                        help="place the carry chains as Yosys mapped them; by default each chain whose "
                             "carry-in is a constant takes it, and gives its carry-out, in halves of its "
                             "own, so nextpnr adds no feed-in or feed-out cells (flows/synth/carries.py)")
    args = parser.parse_args(argv)
    command = " ".join(["python -m flows.synth", *(sys.argv[1:] if argv is None else argv)])
    try:
        params = machines.from_args(args)
        args.out = args.out or machines.machine_dir("build", params) / "synth"
        synthesise(params, args.out, freq=args.freq, seed=args.seed, mapper=args.mapper,
                   pnr=not args.yosys_only, command=command, yosys_cache=YOSYS_CACHE,
                   dsp_registers=args.dsp_registers, carries=not args.keep_carries,
                   router=args.router)
    except (SynthError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print()
    print((args.out / "report.md").read_text())
    print(f"wrote {args.out / 'report.md'} and {args.out / 'report.json'}")
    return 0
