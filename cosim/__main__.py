"""``python -m cosim``: GA-2 programs on the RTL (Icarus, Verilator) against the reference machine.

Commands (``make cosim`` and ``make stress`` call the first two):

  seeds SEEDS     Capra-compiled random graphs of the given seeds (``100-111``, ``3,7,20-25``),
                  as the seed document's chapter 11 runs them (cosim/seeds.py)
  stress          random programs drawn from the ISA spec, every instruction and every error
                  code (cosim/stress.py)
  build           build (or check the cache of) the simulators only
  mutants         list the deliberately broken RTL variants for --mutant

Every run compares every external-memory and scratchpad word, the five cycle counters and the
stop (error code, error pc) with the reference machine, prints PASS or FAIL per simulator with
the first differences, and exits with 0 (all match), 1 (a difference) or 2 (a simulator
could not run: not installed, build failed; the message names the log).

Builds are cached in build/cosim/<sim>/ and redone only when the Verilog changes (SHA-256 of
build/ga2_simtop.v, which is exported again when hw/ or sim/ is newer). A cold build takes
about 25 s for Verilator and a few seconds for Icarus; `--waves` builds separately
(build/cosim/<sim>-waves/) and prints where the FST (Icarus) or VCD (Verilator) file went.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import batch, mutants, runner, seeds, stress


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sim", choices=batch.SIM_CHOICES, default=batch.BOTH,
                        help="simulator(s) to run (default: both, at the same time)")
    parser.add_argument("--waves", action="store_true",
                        help="record waveforms (FST under Icarus, VCD under Verilator) and print where")
    parser.add_argument("--verilog", type=Path, default=None,
                        help="the Verilog of ga2_simtop to run (default: build/ga2_simtop.v, exported "
                             "again when stale); its parameters come from ga2_ports.json beside it")
    parser.add_argument("--mutant", choices=sorted(mutants.MUTANTS), default=None,
                        help="run a deliberately broken copy of the Verilog (python -m cosim mutants); "
                             "the run must FAIL")
    parser.add_argument("--keep", action="store_true",
                        help="keep each launch's folder (jobs, results, simulator log) under "
                             "build/cosim/<sim>/runs/")


def _verilog(args: argparse.Namespace) -> tuple[Path | None, str | None]:
    """The Verilog to run, and a note when it is a mutant."""
    if args.mutant is None:
        return args.verilog, None
    source = runner.fresh_verilog(args.verilog)
    target = mutants.mutate(source, args.mutant, runner.COSIM_BUILD / "mutants" / args.mutant)
    m = mutants.MUTANTS[args.mutant]
    return target, f"mutant {m.name}: {m.unit} {m.what} ({target})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cosim", description=__doc__.split("\n\n")[0],
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="{seeds,stress,build,mutants}")

    p = sub.add_parser("seeds", help="compiled random graphs on the RTL (make cosim SEEDS=...)",
                       description=seeds.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("seeds", nargs="?", default="100-111",
                   help="seeds: N, N-M, or a comma-separated list of those (default 100-111)")
    _common(p)

    p = sub.add_parser("stress", help="random ISA programs on the RTL (make stress N=... SEED=...)",
                       description=stress.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=200, help="number of programs (default 200)")
    p.add_argument("--seed", type=int, default=1, help="seed of the first program (default 1)")
    p.add_argument("--show", action="store_true", help="print every program's listing first")
    _common(p)

    p = sub.add_parser("build", help="build the simulators (or find them in the cache) and stop")
    p.add_argument("--sim", choices=batch.SIM_CHOICES, default=batch.BOTH)
    p.add_argument("--waves", action="store_true", help="the waveform-recording builds")

    sub.add_parser("mutants", help="list the broken RTL variants --mutant accepts")

    args = parser.parse_args(argv)
    try:
        if args.command == "mutants":
            for m in mutants.MUTANTS.values():
                print(f"{m.name:10s} {m.unit}: {m.what}")
            return 0
        if args.command == "build":
            source = runner.fresh_verilog()
            for name in batch.simulators(args.sim):
                b = runner.build(name, source, waves=args.waves)
                print(f"{name:10s} {'cached' if b.cached else 'built'} in {b.seconds:.1f} s: {b.directory}")
            return 0
        verilog, note = _verilog(args)
        if note:
            print(note)
        if args.command == "seeds":
            try:
                seeds.parse_seeds(args.seeds)
            except ValueError as e:
                parser.error(str(e))
            return seeds.main(args.seeds, args.sim, waves=args.waves, verilog=verilog, keep=args.keep)
        if args.n < 1 or args.seed < 0:
            parser.error("--n must be at least 1 and --seed at least 0")
        return stress.main(args.seed, args.n, args.sim, waves=args.waves, verilog=verilog, keep=args.keep,
                           show=args.show)
    except (runner.CosimError, mutants.MutantError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
