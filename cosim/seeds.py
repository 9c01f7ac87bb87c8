"""``make cosim SEEDS=100-111``: Capra-compiled random graphs on the RTL, against the reference.

For each seed, as the seed document's chapter 11 (section 2) does it
(:func:`compiler.seedtable.compile_seed`): the battery's random graph, 30 calibration samples
and then one test input drawn from ``random.Random(seed)``, compiled with and without buffer
reuse; the reuse program and its external-memory image (the test input and the weights,
quantized) are one job. The jobs run on the RTL under Icarus, Verilator or both, and every
external-memory word, every scratchpad word, the five counters and the stop (error code and
pc) are compared with the reference machine.

What it prints: per simulator ``PASS: 12 programs match the reference (memory and all five
counters), N cycles in total`` or ``FAIL`` with, per differing program, the first differing
addresses and values and the differing counters; then the table (seed, nodes, instructions,
scratchpad words with and without reuse, cycles, error against floating point); then the
build and run times. Exit status 0 when every simulator matches, 1 on any difference, 2 when
a simulator could not run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from compiler.seedtable import SeedRun, compile_seed

from . import batch
from .jobs import Job

WHAT = "memory and all five counters"
COLUMNS = (("seed", 5), ("nodes", 6), ("instr", 6), ("scratchpad words (reuse)", 25), ("(no reuse)", 11),
           ("cycles", 8), ("error vs float", 15))
"""The table's columns and their widths."""
HEADER = " ".join(f"{title:>{width}}" for title, width in COLUMNS)


def parse_seeds(text: str) -> list[int]:
    """``"100-111"``, ``"3,7,20-25"`` -> the seeds, in order, each once.

    Raises:
        ValueError: a part is not N or N-M with N <= M (the message shows it).
    """
    seeds: list[int] = []
    for part in text.replace(" ", "").split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m or (m[2] is not None and int(m[2]) < int(m[1])):
            raise ValueError(f"SEEDS: {part!r} in {text!r} is not N or N-M (N <= M); "
                             "e.g. 100-111 or 3,7,20-25")
        lo = int(m[1])
        hi = int(m[2]) if m[2] is not None else lo
        seeds += [s for s in range(lo, hi + 1) if s not in seeds]
    return seeds


@dataclass
class SeedCase:
    """A seed's compiled graph (the table's row) and its job."""

    run: SeedRun
    job: Job


def prepare(seeds: list[int]) -> list[SeedCase]:
    """Compile every seed (compiler.seedtable.compile_seed) and make its job."""
    cases = []
    for seed in seeds:
        run = compile_seed(seed)
        image = run.program.ext_image(run.test_inputs)
        cases.append(SeedCase(run, Job(run.program.code, image, name=f"seed {seed}")))
    return cases


def table(cases: list[SeedCase], outcomes: list[batch.Outcome]) -> list[str]:
    """The seed table. Cycles are the RTL's (the first simulator that ran); a value that
    differs from the reference's is followed by the reference's in parentheses."""
    rtl = next((o.simulation.runs for o in outcomes if o.simulation is not None), None)
    lines = [HEADER]
    for k, case in enumerate(cases):
        seed, nodes, instr, high, high0, error = case.run.row
        want = case.job.expected().counters.cycles
        cycles = f"{want:8d}" if rtl is None else f"{rtl[k].counters.cycles:8d}"
        if rtl is not None and rtl[k].counters.cycles != want:
            cycles += f" (ref {want})"
        lines.append(f"{seed:5d} {nodes:6d} {instr:6d} {high:25d} {high0:11d} {cycles} {100 * error:14.2f}%")
    return lines


def main(seed_text: str, choice: str, *, waves: bool = False, verilog: Path | None = None,
         keep: bool = False) -> int:
    """The whole command; returns the exit status."""
    seeds = parse_seeds(seed_text)
    cases = prepare(seeds)
    jobs = [case.job for case in cases]
    outcomes = batch.run_batch(jobs, choice, verilog=verilog, waves=waves, keep=keep)
    lines = []
    for o in outcomes:
        lines += batch.verdict(o, jobs, WHAT)
    lines += ["", *table(cases, outcomes), "", *batch.timing(outcomes), *batch.waves_lines(outcomes)]
    batch.emit(lines)
    if any(o.error for o in outcomes):
        return 2
    return 0 if all(o.ok for o in outcomes) else 1
