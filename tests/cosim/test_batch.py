"""cosim/batch.py: choosing simulators, the PASS/FAIL lines, the timings, chunks adding up."""

from __future__ import annotations

from pathlib import Path

import pytest

from cosim import batch, runner
from cosim.batch import Failure, Outcome, simulators, verdict
from cosim.pool import ChunkResult


def test_simulators():
    assert simulators("both") == ("icarus", "verilator")
    assert simulators("icarus") == ("icarus",)
    with pytest.raises(ValueError, match="simulator 'vcs': expected one of icarus, verilator, both"):
        simulators("vcs")


def test_fail_lines_name_the_programs_and_their_first_differences():
    o = Outcome("icarus", count=3, failed=2, failures=[
        Failure(1, "seed 4", ["ext: 2 words differ; first ...", "counter mxu: RTL 5, reference 4 (+1)"]),
        Failure(2, "seed 5", ["spad: 1 word differs; first ..."])])
    assert verdict(o, "memory") == [
        "icarus     FAIL: 2 of 3 programs differ from the reference",
        "    seed 4: ext: 2 words differ; first ...",
        "            counter mxu: RTL 5, reference 4 (+1)",
        "    seed 5: spad: 1 word differs; first ...",
    ]
    o.failed = 13
    assert verdict(o, "memory")[-1] == "    ... and 11 more programs"
    o.failed = 3
    assert verdict(o, "memory")[-1] == "    ... and 1 more program"


def test_pass_line_and_singular():
    o = Outcome("icarus", count=1)
    assert verdict(o, "memory") == [
        "icarus     PASS: 1 program matches the reference (memory), 0 cycles in total"]
    o.count, o.cycles = 2_000, 1_234_567
    assert verdict(o, "memory") == ["icarus     PASS: 2,000 programs match the reference (memory), "
                                    "1,234,567 cycles in total"]
    o.count, o.failed, o.failures = 1, 1, [Failure(0, "seed 3", ["spad: ..."])]
    assert verdict(o, "memory")[0] == "icarus     FAIL: 1 of 1 program differs from the reference"


def test_error_line():
    assert verdict(Outcome("verilator", error="verilator: building x failed"), "memory") == [
        "verilator  ERROR: verilator: building x failed"]


def test_timing_says_built_or_cached_once():
    b = runner.Build("icarus", Path("x"), "d", False, False, 0.3)
    o = Outcome("icarus", build=b, count=1, cycles=100, waited=100, seconds=2.0, sim_seconds=0.5, launches=1)
    line = batch.timing([o])[0]
    assert line.startswith("icarus     built in 0.3 s; run 2.0 s for 1 program: 200 cycles/s simulated")
    b.cached, o.launches, o.count = True, 3, 250
    line = batch.timing([o])[0]
    assert line.startswith("icarus     build cached; run 2.0 s for 250 programs in 3 launches: ")


def test_chunks_add_up_keeping_the_first_failures_in_order():
    o = Outcome("icarus")
    late = ChunkResult("icarus", 1, 100, count=100, failed=12, cycles=500, waited=510, seconds=2.0,
                       sim_seconds=1.5, waves="b/2.fst",
                       failures=[Failure(100 + k, f"seed {100 + k}", ["x"]) for k in range(10)])
    early = ChunkResult("icarus", 0, 0, count=100, failed=1, cycles=400, waited=400, seconds=1.0,
                        sim_seconds=0.5, failures=[Failure(42, "seed 42", ["y"])], waves="a/1.fst")
    o.add_chunk(late)
    o.add_chunk(early)
    assert (o.count, o.failed, o.cycles, o.waited, o.launches) == (200, 13, 900, 910, 2)
    assert (o.seconds, o.sim_seconds) == (3.0, 2.0)
    assert [f.index for f in o.failures] == [42, *range(100, 109)]
    assert o.waves == [Path("a/1.fst"), Path("b/2.fst")]


def test_the_pass_line_counts_the_counters_of_the_machine():
    from sim import spec
    from sim.spec import Params

    serial = Outcome("icarus", count=2, cycles=720, counters=spec.counters(Params()))
    overlap = Outcome("icarus", count=2, cycles=613, counters=spec.counters(Params(OVERLAP=1)))
    assert verdict(serial, "memory and {counters}") == [
        "icarus     PASS: 2 programs match the reference (memory and all five counters), 720 cycles in total"]
    assert verdict(overlap, "memory and {counters}") == [
        "icarus     PASS: 2 programs match the reference (memory and all seven counters), "
        "613 cycles in total"]


def test_the_waveform_lines_say_how_to_get_a_viewer(monkeypatch, tmp_path):
    """Issue 24, defect 6: WAVES=1 named GTKWave without saying how to get it."""
    from cosim import batch

    dump = tmp_path / "runs" / "1" / "ga2_cosim.fst"
    o = Outcome("icarus", count=1, waves=[dump])
    monkeypatch.setattr(batch.shutil, "which", lambda name: None)
    lines = batch.waves_lines([o])
    assert lines[0] == f"icarus     waveform: {dump}"
    assert lines[1].endswith(f"open it: gtkwave {dump.with_suffix('.gtkw')}  (program markers, key signals)")
    assert "sudo apt-get install gtkwave" in lines[2] and "Surfer" in lines[2]
    monkeypatch.setattr(batch.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert len(batch.waves_lines([o])) == 2
    assert batch.waves_lines([Outcome("icarus", count=1)]) == []
