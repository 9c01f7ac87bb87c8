"""cosim/seeds.py: the SEEDS syntax, the chunks, compiling for the Verilog's machine, and make
cosim's output on each simulator."""

from __future__ import annotations

import subprocess
import sys

import pytest

from compiler.workloads.seedtable import compile_seed
from cosim import runner, seeds
from cosim.errors import CosimError
from cosim.seeds import Row, Totals, parse_seeds, seed_ranges
from cosim.verilog import ROOT
from sim import machines
from sim.spec import DEFAULT, Params


def test_parse_seeds():
    assert parse_seeds("100-111") == list(range(100, 112))
    assert parse_seeds("3,7,20-25") == [3, 7, 20, 21, 22, 23, 24, 25]
    assert parse_seeds("5, 5,4-6") == [5, 4, 6]
    assert parse_seeds("10-20,5-12,15,19-25,1-30") == [*range(10, 21), *range(5, 10), *range(21, 26),
                                                       *range(1, 5), *range(26, 31)]
    for bad in ("1-", "9-3", "a", "1,,2", "-1"):
        with pytest.raises(ValueError, match="is not N or N-M"):
            parse_seeds(bad)
    for empty in ("", " "):
        with pytest.raises(ValueError, match="SEEDS: empty; give N, N-M or a comma-separated list"):
            parse_seeds(empty)


def test_spaces_separate_seeds_as_commas_do():
    assert parse_seeds("1 2") == [1, 2]
    assert parse_seeds(" 3,  7 20-22 ") == [3, 7, 20, 21, 22]
    with pytest.raises(ValueError, match="is not N or N-M"):
        parse_seeds("1 - 3")


def test_chunks_of_seeds_stay_small_however_many_seeds():
    recipes = seeds.recipes(seed_ranges("1-250,1000-1004"), size=100)
    assert [r.size for r in recipes] == [100, 100, 55]
    assert recipes[2].arg == ((201, 251), (1000, 1005))
    assert len(seeds.recipes(seed_ranges("1-1000000"))) == 10_000


def test_a_huge_range_is_counted_without_listing_it():
    assert seed_ranges("1-100000000000,5") == [range(1, 100000000001)]
    with pytest.raises(ValueError, match=r"100,000,000,000 seeds in one run is more than the 1,000,000 "):
        seeds.check_count(sum(len(r) for r in seed_ranges("1-100000000000")))
    seeds.check_count(seeds.MAX_SEEDS)
    assert seeds.long_run_note(seeds.LONG_RUN - 1, ("icarus",)) is None
    note = seeds.long_run_note(100_000, ("icarus", "verilator"), jobs=2)
    hours = 100_000 * (seeds.SECONDS_PER_SEED["icarus"] + seeds.SECONDS_PER_SEED["verilator"]) / 2 / 3600
    assert note.startswith(f"note: 100,000 seeds take about {hours:.1f} hours on icarus and verilator")
    assert seeds.long_run_note(10_000, ("verilator",), "programs", jobs=2).startswith(
        "note: 10,000 programs take about 7 minutes on verilator")


def test_the_table_widens_for_long_seeds_and_totals_beyond_its_rows():
    big = 12345678901234567890
    rows = [Row(7, 10, 20, 30, 40, 500, 0.0123, {"verilator": 501}), Row(big, 1, 2, 3, 4, 5, 0.5)]
    totals = Totals()
    for seed, instr, error in ((7, 20, 0.0123), (big, 2, 0.5), (9, 8, 0.01)):
        totals.add(seed, instr, error)
    lines = seeds.table(rows, totals, ("icarus", "verilator"))
    assert lines[0] == seeds.header(20) and lines[0].endswith(seeds.HEADER[5:])
    assert len(lines[0]) == len(lines[2]) and lines[2].startswith(f"{big} ")
    assert lines[1].split() == ["7", "10", "20", "30", "40", "501", "(ref", "500)", "1.23%"]
    mean = 100 * (0.0123 + 0.5 + 0.01) / 3
    assert lines[3] == ("... 1 more seed (the table lists the first 2); over all 3: 30 instructions, "
                        f"error vs float mean {mean:.2f}%, max 50.00% (seed {big})")


def test_graphs_are_compiled_for_the_verilogs_machine():
    other = Params(SPAD_WORDS=2048, EXT_WORDS=4096)
    run = seeds.compile_seed_for(104, other)
    assert run.program.machine == other and run.row == compile_seed(104, params=DEFAULT).row
    made = seeds.make_chunk(((104, 105),), other)
    assert made.jobs[0].machine == other and made.jobs[0].halts
    assert seeds.compile_seed_for(104, DEFAULT).program.machine == DEFAULT
    with pytest.raises(CosimError, match=r"seed 103 does not compile for the Verilog's machine \(Params\(.*"
                                         r"SPAD_WORDS=128"):
        seeds.compile_seed_for(103, Params(SPAD_WORDS=128, EXT_WORDS=4096))


@pytest.mark.rtl
@pytest.mark.slow
def test_cosim_runs_the_machine_it_is_given(icarus):
    """make cosim PARAMS=t2: the Verilog exported for T=2 (build/machines/T2/, kept fresh by
    content) and the graphs compiled for that machine (a graph compiled for the default one
    would be refused, or stop with BAD_FIELD: never a PASS)."""
    t2 = machines.parse("t2")
    command = ["-m", "cosim", "seeds", "100 101", "--sim", icarus, "--param", "t2"]
    done = subprocess.run([sys.executable, *command], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    runs = [seeds.compile_seed_for(s, t2) for s in (100, 101)]
    assert all(run.program.machine == t2 for run in runs)
    cycles = sum(run.outcome.counters.cycles for run in runs)
    assert cycles != sum(compile_seed(s, params=DEFAULT).outcome.counters.cycles for s in (100, 101))
    lines = [line for line in done.stdout.splitlines() if not line.startswith("exporting the Verilog")]
    assert lines[0] == (f"{icarus:<10} PASS: 2 programs match the reference (memory and "
                                           f"all five counters), {cycles:,} cycles in total")
    assert (runner.BUILD / "machines" / "T2" / "cosim" / icarus / "stamp.sha256").is_file()


def test_cosim_prints_pass_and_the_table(simulator):
    rows = [compile_seed(s, params=DEFAULT) for s in (100, 101)]
    done = subprocess.run([sys.executable, "-m", "cosim", "seeds", "100-101", "--sim", simulator],
                          capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    cycles = [row.outcome.counters.cycles for row in rows]
    assert lines[0] == (f"{simulator:<10} PASS: 2 programs match the reference (memory and all five "
                        f"counters), {sum(cycles):,} cycles in total")
    assert lines[2] == seeds.HEADER
    for line, row, count in zip(lines[3:5], rows, cycles, strict=True):
        seed, nodes, instr, high, high0, error = row.row
        want = [str(v) for v in (seed, nodes, instr, high, high0, count)] + [f"{100 * error:.2f}%"]
        assert line.split() == want
    assert lines[6].startswith((f"{simulator:<10} build cached; run ", f"{simulator:<10} built in "))
    assert "s for 2 programs: " in lines[6] and "cycles/s simulated" in lines[6]
