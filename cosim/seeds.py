"""``make cosim SEEDS=100-111``: Capra-compiled random graphs on the RTL, against the reference.

For each seed, as the seed document's chapter 11 (section 2) does it
(:func:`compiler.workloads.seedtable.compile_seed`): the battery's random graph, 30 calibration samples
and then one test input drawn from ``random.Random(seed)``, compiled with and without buffer
reuse, for the machine the Verilog was exported for (its ``ga2_ports.json``); the reuse program
and its external-memory image (the test input and the weights, quantized) are one job, which
must end at its HALT. The jobs run on the RTL under Icarus, Verilator or both, and every
external-memory word, every scratchpad word, the counters (five; seven at OVERLAP = 1) and the
stop (error code and pc) are compared with the reference machine, and the core's
``timing_fault`` must be 0.

What it prints: per simulator ``PASS: 12 programs match the reference (memory and all five
counters), N cycles in total`` (seven counters at OVERLAP = 1) or ``FAIL`` with, per differing
program, the first differing addresses and values and the differing counters; then the table
(seed, nodes, instructions, scratchpad words with and without reuse, cycles, error against
floating point); then the build and run times. Exit status 0 when every simulator matches, 1 on
any difference, 2 when a simulator could not run.

Any number of seeds up to MAX_SEEDS (1,000,000) runs in constant memory: the seeds are compiled
and run a hundred at a time by a farm of workers (cosim/pool.py, cosim/farm: local processes or
Ray), and the table lists
the first TABLE_ROWS (100) seeds and then totals over all of them. From LONG_RUN (10,000) seeds
on, a note says how long it will take (SECONDS_PER_SEED); more than MAX_SEEDS is refused. SEEDS
is N, N-M, or a list of those separated by commas or spaces.
"""

from __future__ import annotations

import bisect
import os
import re
import sys
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

from compiler import CompileError
from compiler.workloads.seedtable import SeedRun, compile_seed
from sim.spec import Params

from . import batch, pool
from .errors import CosimError
from .jobs import Job
from .text import counted

WHAT = "memory and {counters}"
COLUMNS = (("seed", 5), ("nodes", 6), ("instr", 6), ("scratchpad words (reuse)", 25), ("(no reuse)", 11),
           ("cycles", 8), ("error vs float", 15))
"""The table's columns and their widths (the seed column widens for longer seeds)."""
MAX_SEEDS = 1_000_000
"""The most seeds one run takes (hours on Verilator, days on Icarus); more is refused."""
LONG_RUN = 10_000
"""From this many seeds on, a note says how long the run will take."""
SECONDS_PER_SEED = pool.SECONDS_PER_JOB
"""Rough cost of one seed or program on one simulator, for one worker process (compile or draw,
reference, simulation, comparison; measured on a shared 2-core machine), for that note."""
TABLE_ROWS = 100
"""Seeds the table lists one per row; beyond them it gives totals."""


def header(seed_width: int = COLUMNS[0][1]) -> str:
    """The table's header, its seed column ``seed_width`` wide."""
    widths = (seed_width, *(w for _, w in COLUMNS[1:]))
    return " ".join(f"{title:>{width}}" for (title, _), width in zip(COLUMNS, widths, strict=True))


HEADER = header()


def seed_ranges(text: str) -> list[range]:
    """``"100-111"``, ``"3,7,20-25"``, ``"1 2"`` -> ranges holding the seeds in order, each seed
    once (a seed already named earlier is left out), without listing them. Commas and spaces
    both separate parts.

    Raises:
        ValueError: empty, or a part is not N or N-M with N <= M (the message shows it).
    """
    if not text.strip():
        raise ValueError("SEEDS: empty; give N, N-M or a comma-separated list of those, e.g. 100-111 "
                         "or 3,7,20-25")
    out: list[range] = []
    taken: list[tuple[int, int]] = []   # sorted, disjoint (first, last) of the parts so far
    for part in re.split(r"\s*,\s*|\s+", text.strip()):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m or (m[2] is not None and int(m[2]) < int(m[1])):
            raise ValueError(f"SEEDS: {part!r} in {text!r} is not N or N-M (N <= M); "
                             "e.g. 100-111 or 3,7,20-25")
        lo = int(m[1])
        hi = int(m[2]) if m[2] is not None else lo
        i = bisect.bisect_left(taken, (lo,))
        if i and taken[i - 1][1] >= lo:
            i -= 1
        j, at = i, lo
        while j < len(taken) and taken[j][0] <= hi:
            if taken[j][0] > at:
                out.append(range(at, taken[j][0]))
            at = max(at, taken[j][1] + 1)
            j += 1
        if at <= hi:
            out.append(range(at, hi + 1))
        merged = (min(lo, taken[i][0]), max(hi, taken[j - 1][1])) if j > i else (lo, hi)
        taken[i:j] = [merged]
    return out


def parse_seeds(text: str) -> list[int]:
    """``"100-111"``, ``"3,7,20-25"`` -> the seeds, in order, each once (see :func:`seed_ranges`).

    Raises:
        ValueError: a part is not N or N-M with N <= M.
    """
    return list(chain.from_iterable(seed_ranges(text)))


def check_count(n: int, what: str = "seeds") -> None:
    """Refuse more than MAX_SEEDS.

    Raises:
        ValueError: with how many were asked for and what to do instead.
    """
    if n > MAX_SEEDS:
        raise ValueError(f"{n:,} {what} in one run is more than the {MAX_SEEDS:,} allowed (that many "
                         f"take about {duration(MAX_SEEDS * SECONDS_PER_SEED['icarus'] / _workers())} on "
                         "Icarus); "
                         "split it into several runs")


def duration(seconds: float) -> str:
    """``5400`` -> ``1.5 hours``, ``90`` -> ``2 minutes``."""
    if seconds >= 5400:
        return f"{seconds / 3600:.1f} hours"
    return f"{max(1, round(seconds / 60))} minutes"


def _workers(jobs: int | None = None) -> int:
    return jobs or os.cpu_count() or 1


def long_run_note(n: int, simulators: tuple[str, ...], what: str = "seeds",
                  jobs: int | None = None) -> str | None:
    """For LONG_RUN or more: how long the run will take (every simulator's share, over the
    workers: ``jobs``, default one per core)."""
    if n < LONG_RUN:
        return None
    seconds = n * sum(SECONDS_PER_SEED[s] for s in simulators) / _workers(jobs)
    return (f"note: {n:,} {what} take about {duration(seconds)} on {' and '.join(simulators)}; progress "
            f"is shown as they run (Ctrl-C stops)")


@dataclass
class Row:
    """A seed's row of the table: the compiled graph's figures and the reference's cycles."""

    seed: int
    nodes: int
    instr: int
    high: int
    high0: int
    cycles: int
    error: float
    rtl: dict[str, int] = field(default_factory=dict)
    """The RTL's cycles, per simulator."""


@dataclass
class Totals:
    """What the table says about all the seeds, beyond its rows."""

    seeds: int = 0
    instr: int = 0
    error_sum: float = 0.0
    error_max: float = 0.0
    error_max_seed: int | None = None

    def add(self, seed: int, instr: int, error: float) -> None:
        self.seeds += 1
        self.instr += instr
        self.error_sum += error
        if self.error_max_seed is None or error > self.error_max:
            self.error_max, self.error_max_seed = error, seed


def compile_seed_for(seed: int, params: Params) -> SeedRun:
    """:func:`compiler.workloads.seedtable.compile_seed` for the machine ``params`` (the Verilog's):
    the same graph, calibration samples and test input, compiled for that machine.

    Raises:
        CosimError: the seed's graph does not compile for that machine (named, with both).
    """
    try:
        return compile_seed(seed, params)
    except CompileError as e:
        raise CosimError(f"seed {seed} does not compile for the Verilog's machine ({params}): {e}") from None


def make_chunk(parts: tuple[tuple[int, int], ...], params: Params) -> pool.Made:
    """A chunk's jobs (a :class:`cosim.pool.Recipe`'s ``make``): each seed of the ``(start, stop)``
    parts compiled for ``params``, as a job that must halt; its table row as the info. The
    chunk's first program is loaded through the host's instruction-memory port (every launch
    checks that path), the others by backdoor."""
    jobs, rows = [], []
    for seed in chain.from_iterable(range(*part) for part in parts):
        run = compile_seed_for(seed, params)
        job = Job.of_program(run.program, run.test_inputs, f"seed {seed}")
        job.via_port = not jobs
        _, nodes, instr, high, high0, error = run.row
        rows.append(Row(seed, nodes, instr, high, high0, job.expected(params).counters.cycles, error))
        jobs.append(job)
    return pool.Made(jobs, rows)


def recipes(ranges: list[range], size: int = pool.CHUNK) -> list[pool.Recipe]:
    """The seeds in chunks of ``size``, each chunk a :class:`cosim.pool.Recipe` of (start, stop)
    parts (a run of a million seeds is ten thousand small recipes, not a list of seeds)."""
    out, parts, count = [], [], 0
    for r in ranges:
        start = r.start
        while start < r.stop:
            stop = min(r.stop, start + size - count)
            parts.append((start, stop))
            count += stop - start
            start = stop
            if count == size:
                out.append(pool.Recipe(make_chunk, tuple(parts), count))
                parts, count = [], 0
    if parts:
        out.append(pool.Recipe(make_chunk, tuple(parts), count))
    return out


class Table:
    """The table's rows and totals, filled from the chunks as they finish (each chunk's rows
    once, whichever simulator finishes it first; the RTL's cycles per simulator)."""

    def __init__(self) -> None:
        self.rows: dict[int, Row] = {}
        self.totals = Totals()
        self.seen: set[int] = set()

    def add(self, result: pool.ChunkResult) -> None:
        if result.number not in self.seen:
            self.seen.add(result.number)
            for k, row in enumerate(result.info):
                self.totals.add(row.seed, row.instr, row.error)
                if result.first + k < TABLE_ROWS:
                    self.rows[result.first + k] = row
        for k, cycles in enumerate(result.rtl_cycles):
            if result.first + k < TABLE_ROWS:
                self.rows[result.first + k].rtl[result.simulator] = cycles

    def lines(self, simulators: tuple[str, ...]) -> list[str]:
        return table([self.rows[k] for k in sorted(self.rows)], self.totals, simulators)


def table(rows: list[Row], totals: Totals, simulators: tuple[str, ...]) -> list[str]:
    """The seed table. Cycles are the RTL's (the first simulator that ran the seed); a value that
    differs from the reference's is followed by the reference's in parentheses. Beyond
    TABLE_ROWS seeds, a line of totals."""
    width = max([COLUMNS[0][1], *(len(str(row.seed)) for row in rows)])
    lines = [header(width)]
    for row in rows:
        rtl = next((row.rtl[s] for s in simulators if s in row.rtl), None)
        cycles = f"{row.cycles if rtl is None else rtl:8d}"
        if rtl is not None and rtl != row.cycles:
            cycles += f" (ref {row.cycles})"
        lines.append(f"{row.seed:{width}d} {row.nodes:6d} {row.instr:6d} {row.high:25d} {row.high0:11d} "
                     f"{cycles} {100 * row.error:14.2f}%")
    if totals.seeds > len(rows):
        mean, top = 100 * totals.error_sum / totals.seeds, 100 * totals.error_max
        lines.append(f"... {counted(totals.seeds - len(rows), 'more seed')} (the table lists the first "
                     f"{len(rows)}); over all {totals.seeds:,}: {totals.instr:,} instructions, error vs "
                     f"float mean {mean:.2f}%, max {top:.2f}% (seed {totals.error_max_seed})")
    return lines


def main(seed_text: str, choice: str, *, waves: bool = False, verilog: Path | None = None,
         keep: bool = False, jobs: int | None = None, engine: str = "auto") -> int:
    """The whole command; returns the exit status.

    Raises:
        ValueError: bad SEEDS, or more than MAX_SEEDS.
    """
    ranges = seed_ranges(seed_text)
    n = sum(len(r) for r in ranges)
    check_count(n)
    note = long_run_note(n, batch.simulators(choice), jobs=jobs)
    if note:
        print(note, file=sys.stderr, flush=True)
    rows = Table()
    outcomes = pool.run_stream(recipes(ranges), choice, noun="seed", verilog=verilog, waves=waves, keep=keep,
                               jobs=jobs, on_result=rows.add, engine=engine)
    lines = []
    for o in outcomes:
        lines += batch.verdict(o, WHAT)
    lines += ["", *rows.lines(batch.simulators(choice)), "", *batch.timing(outcomes),
              *batch.waves_lines(outcomes)]
    batch.emit(lines)
    if any(o.error for o in outcomes):
        return 2
    return 0 if all(o.ok for o in outcomes) else 1
