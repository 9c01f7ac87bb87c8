"""``python -m cosim``: GA-2 programs on the RTL (Icarus, Verilator) against the reference machine.

Commands (``make cosim``, ``make stress`` and ``make bench-cosim`` call three of them):

  seeds SEEDS     Capra-compiled random graphs of the given seeds (100-111, 3,7,20-25 or
                  "1 2"), as the seed document's chapter 11 runs them, compiled for the machine
                  of the Verilog (cosim/seeds.py)
  stress          random programs drawn from the ISA spec, every instruction and every error
                  code, with their coverage; a campaign that --resume continues (cosim/stress.py)
  bench           how fast co-simulation runs: launch overhead, simulated cycles/s, the seed
                  table (cosim/bench.py)
  faults          every fault the checker must see, one short program each: each bounded field
                  one past its range, each start field with a bit above its memory, each
                  region one word past the end (cosim/faults.py)
  build           build (or check the cache of) the simulators only
  mutants         list the deliberately broken RTL variants for --mutant

--param NAME=VALUE|PRESET (make's PARAMS=, e.g. t8 or "T=8 LANES=8") runs another machine: its
Verilog (build/machines/<tag>/ga2_simtop.v, exported again when stale) and the seeds' graphs
compiled for it; a program compiled for other parameters is refused before anything runs.

Every run compares every external-memory and scratchpad word, the cycle counters (five; seven
at OVERLAP = 1) and the stop (error code, error pc) with the reference machine, and requires
the core's timing_fault self-check to stay 0 (hw/top.py: a unit finished in another cycle than
the spec's latency); it prints PASS or FAIL per simulator with the first differences, and
exits with 0 (all match), 1 (a difference) or 2 (a simulator could not run: not installed,
build failed; the message names the log).

The simulator runs a test harness around ga2_simtop (cosim/harness.py: the clock, the loads
and dumps of the memories as $readmemh/$writememh files), so Python wakes once per program,
never per clock cycle. Builds are cached in build/cosim/<sim>/ and redone only when the Verilog,
the harness or the build recipe changes (SHA-256); build/ga2_simtop.v is exported again when
the content of the sources in hw/, sim/ or flows/ changes. A cold build takes about a minute
for Verilator (more on a loaded machine) and a few seconds for Icarus; --waves builds
separately (build/cosim/<sim>-waves/) and prints where the FST (Icarus) or VCD (Verilator)
file went.

Programs run a hundred per simulator launch on a farm of workers (cosim/farm): a local pool of
processes for a small run (--jobs, default one per core), Ray for a large one, on this machine or,
with RAY_ADDRESS=host:port, on that cluster (--engine; docs/cluster.md); any number runs in
constant memory, and the output says where it ran; progress goes to stderr (a bar on a
terminal, else a plain line every 10 s). One run takes at most 1,000,000 seeds or programs;
from 10,000 on it first says how long it will take.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path

from flows.memmap import PORTS_JSON
from sim import machines
from sim.spec import DEFAULT, Params

from . import batch, bench, farm, faults, mutants, pool, runner, seeds, stress
from .errors import CosimError
from .text import plain
from .verilog import BUILD, COSIM_BUILD, fresh_verilog

SWITCH = {**dict.fromkeys(("1", "yes", "true", "on"), True),
          **dict.fromkeys(("0", "no", "false", "off"), False)}
"""The values --waves (and make's WAVES) takes, in any case."""


def switch(text: str) -> bool:
    """``--waves=yes`` and friends (:data:`SWITCH`); anything else is refused."""
    try:
        return SWITCH[text.strip().lower()]
    except KeyError:
        raise argparse.ArgumentTypeError(f"expected 1, yes, true or on (or 0, no, false, off), "
                                         f"got {text!r}") from None


def _whole(text: str, least: int, what: str) -> int:
    wrong = f"expected a whole number of at least {least}, got {text!r}"
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(wrong) from None
    if value < least:
        raise argparse.ArgumentTypeError(wrong)
    if what and value > seeds.MAX_SEEDS:
        raise argparse.ArgumentTypeError(f"{value:,} {what} in one run is more than the {seeds.MAX_SEEDS:,} "
                                         "allowed; split it into several runs")
    return value


def program_count(text: str) -> int:
    """--n: 1 .. MAX_SEEDS programs."""
    return _whole(text, 1, "programs")


def worker_count(text: str) -> int:
    """--jobs: 1 or more."""
    return _whole(text, 1, "")


def first_seed(text: str) -> int:
    """--seed: 0 or more."""
    return _whole(text, 0, "")


def seed_text(text: str) -> str:
    """SEEDS: valid (:func:`cosim.seeds.seed_ranges`) and at most MAX_SEEDS of them."""
    try:
        seeds.check_count(sum(len(r) for r in seeds.seed_ranges(text)))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("SEEDS: ")) from None
    return text


def _waves(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--waves", type=switch, nargs="?", const=True, default=False, metavar="on|off",
                        help=f"{what}; --waves alone is --waves=on (also 1, yes, true; 0, no, false, off)")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sim", choices=batch.SIM_CHOICES, default=batch.BOTH,
                        help="simulator(s) to run (default: both, at the same time)")
    _waves(parser, "record waveforms (FST under Icarus, VCD under Verilator, one file per launch of "
                   "100 programs) and print where")
    parser.add_argument("--verilog", type=Path, default=None,
                        help="the Verilog of ga2_simtop to run (default: the machine's, exported again when "
                             "stale: build/ga2_simtop.v, or build/machines/<tag>/ga2_simtop.v with --param); "
                             "its parameters come from ga2_ports.json beside it")
    machines.add_argument(parser)
    parser.add_argument("--mutant", choices=sorted(mutants.MUTANTS), default=None,
                        help="run a deliberately broken copy of the Verilog (python -m cosim mutants); "
                             "the run must FAIL")
    parser.add_argument("--keep", action="store_true",
                        help="keep each launch's folder (jobs, results, simulator log) under "
                             "build/cosim/<sim>/runs/")
    parser.add_argument("--jobs", type=worker_count, default=None, metavar="N",
                        help="worker processes on this machine, each running a chunk of 100 programs on one "
                             "simulator at a time (default: one per core; a Ray cluster has its own)")
    parser.add_argument("--engine", choices=farm.ENGINES, default="auto",
                        help="where the chunks run: ray (a local Ray instance, or the cluster at "
                             "RAY_ADDRESS), local (a pool of processes on this machine), auto (default: "
                             f"Ray with RAY_ADDRESS or for {farm.RAY_FROM:.0f} s of work or more, "
                             "else local)")


def _bare_waves(argv: list[str]) -> list[str]:
    """``--waves`` not followed by a value of :data:`SWITCH` is ``--waves=on`` (so that
    ``seeds --waves 100-111`` does not read 100-111 as the switch's value)."""
    out = []
    for k, arg in enumerate(argv):
        bare = arg == "--waves" and (k + 1 == len(argv) or argv[k + 1].strip().lower() not in SWITCH)
        out.append("--waves=on" if bare else arg)
    return out


def _options(args: argparse.Namespace) -> list[str]:
    """The options besides --seed, --n, --sim that change what runs (for a rerun command)."""
    out = []
    if args.param:
        out += ["--param", " ".join(machines.items(args.param))]
    if args.verilog is not None:
        out += ["--verilog", str(args.verilog)]
    if args.mutant is not None:
        out += ["--mutant", args.mutant]
    return out


def _machine(args: argparse.Namespace) -> Params:
    """The machine of --param (the default without it).

    Raises:
        CosimError: --param with --verilog (a Verilog carries its own machine), or a machine the
            generator does not build (sim.machines' message).
    """
    try:
        params = machines.from_args(args)
    except machines.MachineError as e:
        raise CosimError(str(e)) from None
    if args.param and getattr(args, "verilog", None) is not None:
        raise CosimError(f"--param {' '.join(machines.items(args.param))} with --verilog: a Verilog file "
                         f"runs the machine of its {PORTS_JSON}; give one of the two")
    return params


def _verilog(args: argparse.Namespace) -> tuple[Path | None, str | None]:
    """The Verilog to run (the machine's, with --param), and a note when it is a mutant."""
    params = _machine(args)
    verilog = args.verilog if params == DEFAULT else fresh_verilog(params=params)
    if args.mutant is None:
        return verilog, None
    source = fresh_verilog(verilog, params=DEFAULT)   # none given: the default machine's
    folder = COSIM_BUILD if params == DEFAULT else machines.machine_dir(BUILD, params) / "cosim"
    target = mutants.mutate(source, args.mutant, folder / "mutants" / args.mutant)
    m = mutants.MUTANTS[args.mutant]
    return target, f"mutant {m.name}: {m.unit} {m.what} ({target})"


def main(argv: list[str] | None = None) -> int:
    doc = plain(__doc__)
    parser = argparse.ArgumentParser(prog="python -m cosim", description=doc.split("\n\n")[0],
                                     epilog="\n\n".join(doc.split("\n\n")[1:]),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True,
                                metavar="{seeds,stress,faults,build,mutants,bench}")

    p = sub.add_parser("seeds", help="compiled random graphs on the RTL (make cosim SEEDS=...)",
                       description=plain(seeds.__doc__),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("seeds", nargs="?", default="100-111", type=seed_text, metavar="SEEDS",
                   help="seeds: N, N-M, or a comma-separated list of those (default 100-111); at most "
                        f"{seeds.MAX_SEEDS:,}")
    _common(p)

    p = sub.add_parser("stress", help="random ISA programs on the RTL (make stress N=... SEED=...)",
                       description=plain(stress.__doc__),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=program_count, default=200,
                   help=f"number of programs, 1 to {seeds.MAX_SEEDS:,} (default 200)")
    p.add_argument("--seed", type=first_seed, default=1,
                   help="seed of the first program, 0 or more (default 1)")
    p.add_argument("--show", action="store_true", help="print every program's listing first")
    p.add_argument("--resume", action="store_true",
                   help="continue the campaign of the same command (its finished chunks are not run again)")
    p.add_argument("--chunk", type=worker_count, default=pool.CHUNK, metavar="N",
                   help=f"programs per simulator launch, the unit of work of a worker (default {pool.CHUNK}; "
                        "the results do not depend on it)")
    p.add_argument("--campaign", type=Path, default=None, metavar="DIR",
                   help="the campaign's folder (default: build/stress/seed<SEED>-n<N>-<sim>[-<mutant>])")
    _common(p)

    p = sub.add_parser("faults", help="every fault the checker must see, one short program each",
                       description=plain(faults.__doc__),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    _common(p)

    p = sub.add_parser("build", help="build the simulators (or find them in the cache) and stop")
    p.add_argument("--sim", choices=batch.SIM_CHOICES, default=batch.BOTH)
    _waves(p, "the waveform-recording builds")
    machines.add_argument(p)

    sub.add_parser("mutants", help="list the broken RTL variants --mutant accepts")

    p = sub.add_parser("bench", help="the speed of co-simulation: simulated cycles/s, launch overhead, "
                                     "the seed table (make bench-cosim)",
                       description=plain(bench.__doc__), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sim", choices=batch.SIM_CHOICES, default=batch.BOTH)
    p.add_argument("--length", type=program_count, default=bench.LONG_LENGTH,
                   help=f"instructions of the long program (default {bench.LONG_LENGTH:,})")

    args = parser.parse_args(_bare_waves(list(sys.argv[1:] if argv is None else argv)))
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminated) if main_thread else None
    try:
        return _command(args)
    except (CosimError, mutants.MutantError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: the tasks, their workers and their simulators are stopped (make stress ... "
              "RESUME=1, or --resume, continues a stress campaign from its finished chunks)", file=sys.stderr)
        return 130
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


def _terminated(signum, frame) -> None:
    """SIGTERM (a CI time-out, kill) stops a run as Ctrl-C does: the workers with it."""
    raise KeyboardInterrupt


def _command(args: argparse.Namespace) -> int:
    if args.command == "mutants":
        width = max(map(len, mutants.MUTANTS))
        for m in mutants.MUTANTS.values():
            print(f"{m.name:{width}s} {m.unit}: {m.what}")
        return 0
    if args.command == "build":
        source = fresh_verilog(params=_machine(args))
        for name in batch.simulators(args.sim):
            b = runner.build(name, source, waves=args.waves)
            done = "build cached" if b.cached else f"built in {b.seconds:.1f} s"
            print(f"{name:10s} {done}: {b.directory}")
        return 0
    if args.command == "bench":
        return bench.main(batch.simulators(args.sim), args.length)
    verilog, note = _verilog(args)
    if note:
        print(note)
    if args.command == "faults":
        return faults.main(args.sim, verilog, params=_machine(args), waves=args.waves, keep=args.keep,
                           engine=args.engine, workers=args.jobs)
    if args.command == "seeds":
        return seeds.main(args.seeds, args.sim, waves=args.waves, verilog=verilog, keep=args.keep,
                          jobs=args.jobs, engine=args.engine)
    return stress.main(args.seed, args.n, args.sim, waves=args.waves, verilog=verilog, keep=args.keep,
                       show=args.show, options=_options(args), resume=args.resume, campaign=args.campaign,
                       mutant=args.mutant, jobs=args.jobs, engine=args.engine, chunk=args.chunk)


if __name__ == "__main__":
    sys.exit(main())
