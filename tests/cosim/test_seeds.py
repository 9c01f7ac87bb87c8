"""cosim/seeds.py: the SEEDS syntax, and make cosim's output on each simulator."""

from __future__ import annotations

import subprocess
import sys

import pytest

from compiler.seedtable import compile_seed
from cosim import runner, seeds
from cosim.seeds import parse_seeds


def test_parse_seeds():
    assert parse_seeds("100-111") == list(range(100, 112))
    assert parse_seeds("3,7,20-25") == [3, 7, 20, 21, 22, 23, 24, 25]
    assert parse_seeds("5, 5,4-6") == [5, 4, 6]
    for bad in ("", "1-", "9-3", "a", "1,,2"):
        with pytest.raises(ValueError, match="is not N or N-M"):
            parse_seeds(bad)


def test_cosim_prints_pass_and_the_table(simulator):
    rows = [compile_seed(s) for s in (100, 101)]
    done = subprocess.run([sys.executable, "-m", "cosim", "seeds", "100-101", "--sim", simulator],
                          capture_output=True, text=True, cwd=runner.ROOT, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    cycles = [row.outcome.counters.cycles for row in rows]
    assert lines[0] == (f"{simulator:<10} PASS: 2 programs match the reference (memory and all five "
                        f"counters), {sum(cycles)} cycles in total")
    assert lines[2] == seeds.HEADER
    for line, row, count in zip(lines[3:5], rows, cycles, strict=True):
        seed, nodes, instr, high, high0, error = row.row
        want = [str(v) for v in (seed, nodes, instr, high, high0, count)] + [f"{100 * error:.2f}%"]
        assert line.split() == want
    assert lines[6].startswith(f"{simulator:<10} build ") and "cycles/s simulated" in lines[6]
