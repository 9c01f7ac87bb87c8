"""cosim/batch.py: choosing simulators and the PASS/FAIL lines."""

from __future__ import annotations

import pytest

from cosim.batch import Outcome, simulators, verdict
from cosim.jobs import Job
from sim.asm import build

JOBS = [Job([build("HALT")], [], f"seed {s}") for s in (3, 4, 5)]


def test_simulators():
    assert simulators("both") == ("icarus", "verilator")
    assert simulators("icarus") == ("icarus",)
    with pytest.raises(ValueError, match="simulator 'vcs': expected one of icarus, verilator, both"):
        simulators("vcs")


def test_fail_lines_name_the_programs_and_their_first_differences():
    o = Outcome("icarus", differences=[
        [], ["ext: 2 words differ; first ...", "counter mxu: RTL 5, reference 4 (+1)"],
        ["spad: 1 word differ; first ..."]])
    assert verdict(o, JOBS, "memory") == [
        "icarus     FAIL: 2 of 3 programs differ from the reference",
        "    seed 4: ext: 2 words differ; first ...",
        "            counter mxu: RTL 5, reference 4 (+1)",
        "    seed 5: spad: 1 word differ; first ...",
    ]


def test_pass_line_and_singular():
    o = Outcome("icarus", differences=[[]])
    want = "icarus     PASS: 1 program matches the reference (memory), 0 cycles in total"
    assert verdict(o, JOBS[:1], "memory") == [want]
    o.differences = [["spad: ..."]]
    assert verdict(o, JOBS[:1], "memory")[0] == "icarus     FAIL: 1 of 1 program differs from the reference"


def test_error_line():
    assert verdict(Outcome("verilator", error="verilator: building x failed"), JOBS, "memory") == [
        "verilator  ERROR: verilator: building x failed"]
