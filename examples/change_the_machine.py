#!/usr/bin/env python3
"""The figures of the guide docs/change-the-machine.md, computed again: what changes when T does.

The guide's generated blocks (between ``<!-- generated: NAME -->`` and ``<!-- end: NAME -->``)
come from here, so that a test fails when one of them is stale (tests/test_change_the_machine.py):

* ``listing-t4`` and ``listing-t8``: running example B (examples/own_graph.py, hidden width 16,
  its 30 calibration samples) compiled for the default machine (T = 4) and for the preset t8
  (T = 8, LANES = 8): the listing, its length and its cycles on the reference machine;
* ``cosim-t8``: the verdict lines ``make cosim SEEDS=100-111 PARAMS=t8`` prints when the RTL
  matches the reference, whose cycles they quote (the seeds compiled for T = 8);
* ``mismatch``: cosim's refusal of a program compiled for T = 8 by the default machine's Verilog;
* ``sweep``: the cycle and synthesis tables of docs/sweep.json, the last ``make sweep SYNTH=1``
  (examples/sweep.py --synth --write);
* ``refusals``: two machines the generator does not build, refused with sim.machines' message.

Usage: python examples/change_the_machine.py [--write | --check] [--guide PATH]
  (no option: print the blocks; --write: rewrite them in the guide; --check: exit 1 when the
  guide differs, naming the stale blocks)
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path

import own_graph
import sweep

from compiler import compile_graph
from compiler.workloads.seedtable import TABLE_SEEDS, compile_seed
from sim import machines

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "change-the-machine.md"
WIDTH = 16
"""Example B's hidden width in the listings (every matmul fits the scratchpad whole)."""
BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end: (?P=name) -->)", re.S)


def listing(preset: str) -> str:
    """Example B at width 16 compiled for the machine ``preset``: a fenced listing and a line
    with its length and cycles on the reference machine."""
    params = machines.parse(preset)
    graph, shapes = own_graph.build(hidden=WIDTH)
    rng = random.Random(WIDTH)               # as own_graph.compile_width draws them
    calibration = [own_graph.draw_inputs(shapes, rng) for _ in range(30)]
    test = own_graph.draw_inputs(shapes, rng)
    program = compile_graph(graph, calibration, params=params)
    cycles = program.run(test).counters.cycles
    matmuls = sum(1 for ins in program.code if ins.op == "MM")
    return (f"```\n{program.listing()}\n```\n\n{len(program.code)} instructions ({matmuls} MM), "
            f"{cycles:,} cycles on the reference machine "
            f"(`python examples/own_graph.py --widths {WIDTH} --param {preset}`).\n")


@functools.cache
def seed_cycles(preset: str) -> int:
    """Seeds 100-111 compiled for the machine ``preset``: their cycles on the reference machine."""
    params = machines.parse(preset)
    return sum(compile_seed(seed, params).outcome.counters.cycles for seed in TABLE_SEEDS)


def cosim_verdict(preset: str = "t8") -> str:
    """The lines ``make cosim SEEDS=100-111 PARAMS=<preset>`` prints when both simulators match
    the reference (cosim/batch.py's verdict), with the reference's total cycles."""
    cycles = seed_cycles(preset)
    return "```\n" + "".join(
        f"{simulator:<10} PASS: {len(TABLE_SEEDS)} programs match the reference (memory and all five "
        f"counters), {cycles:,} cycles in total\n" for simulator in ("icarus", "verilator")) + "```\n"


def sweep_tables(record: Path = sweep.RECORD) -> str:
    """docs/sweep.json's two tables, as docs/sweep.md shows them."""
    data = json.loads(record.read_text())
    figures = [sweep.Figures(**f) for f in data["figures"]]
    return "\n".join([*sweep.cycle_table(figures), "",
                      f"Synthesis on the ECP5-85F ({data['date']}, out of context, nextpnr's "
                      "`--freq` in the target column):", "",
                      *sweep.synth_table(figures)]) + "\n"


def mismatch() -> str:
    """What cosim says of a program compiled for T = 8 given to the default machine's Verilog."""
    from cosim.jobs import Job, as_jobs

    run = compile_seed(100, machines.parse("t8"))
    try:
        as_jobs([Job.of_program(run.program, run.test_inputs, "seed 100")], machines.parse("t4"))
    except ValueError as refused:
        return f"```\n{refused}\n```\n"
    raise AssertionError("a program compiled for T = 8 was accepted by the default machine")


def refusals() -> str:
    """Two machines the generator does not build, as make refuses them (sim.machines' message)."""
    lines = []
    for command, machine in (("make verilog", "T=8"), ("make cosim", "SPAD_WORDS=3000")):
        try:
            machines.parse(machine)
        except machines.MachineError as refused:
            lines += [f'$ {command} PARAMS="{machine}"', f"error: {refused}"]
    return "```\n" + "\n".join(lines) + "\n```\n"


BLOCKS: dict[str, Callable[[], str]] = {
    "listing-t4": lambda: listing("t4"),
    "listing-t8": lambda: listing("t8"),
    "cosim-t8": cosim_verdict,
    "mismatch": mismatch,
    "sweep": sweep_tables,
    "refusals": refusals,
}


def refreshed(text: str) -> tuple[str, list[str]]:
    """The guide's text with every generated block computed again, and the names of the blocks
    that changed.

    Raises:
        ValueError: a block the guide names is not one of BLOCKS, or one of BLOCKS is missing.
    """
    found = [m["name"] for m in BLOCK.finditer(text)]
    unknown = sorted(set(found) - set(BLOCKS))
    missing = sorted(set(BLOCKS) - set(found))
    if unknown or missing:
        raise ValueError(f"the guide's generated blocks: unknown {unknown or 'none'}, missing "
                         f"{missing or 'none'} (known: {', '.join(BLOCKS)})")
    stale = []

    def fill(match: re.Match) -> str:
        body = BLOCKS[match["name"]]()
        if body != match["body"]:
            stale.append(match["name"])
        return match[1] + body + match[4]

    return BLOCK.sub(fill, text), stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The generated parts of docs/change-the-machine.md.")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="rewrite the guide's generated blocks")
    group.add_argument("--check", action="store_true", help="exit 1 when a generated block is stale")
    parser.add_argument("--guide", type=Path, default=GUIDE,
                        help=f"the guide (default {GUIDE.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    if not (args.write or args.check):
        for name, make in BLOCKS.items():
            print(f"== {name}\n{make()}")
        return 0
    try:
        text, stale = refreshed(args.guide.read_text())
    except (OSError, ValueError) as e:
        print(f"error: {args.guide}: {e}", file=sys.stderr)
        return 1
    if args.check:
        if stale:
            print(f"{args.guide}: stale blocks {', '.join(stale)} "
                  "(python examples/change_the_machine.py --write)", file=sys.stderr)
            return 1
        print(f"{args.guide}: up to date")
        return 0
    args.guide.write_text(text)
    print(f"{args.guide}: {'rewrote ' + ', '.join(stale) if stale else 'up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
