"""cosim/mutants.py's breaks of the OVERLAP = 1 issue rule: the hazard flag that never holds an
instruction back, the write-port flag that is always free, the DMA that never yields the write
port to another engine's window. Each is one line of the Verilog of the execute stage
(hw/overlap.py's OverlapExecute, the control's submodule); co-simulation of the seed programs
must catch each (memories and counters differ)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cosim import mutants
from cosim.verilog import ROOT, fresh_verilog
from sim.spec import DEFAULT, Params

OVERLAP = Params(OVERLAP=1)


@pytest.mark.parametrize(("name", "line"), [("hazard-off", "haz_q <= 1'h0;"),
                                           ("write-port-off", "wr_ok_q <= 1'h1;"),
                                           ("dma-yield-off", "dma_hold <= 1'h0;")])
def test_each_overlap_mutant_changes_one_register(tmp_path, name, line):
    source = tmp_path / "ga2_simtop.v"
    source.write_bytes(fresh_verilog(params=OVERLAP, say=lambda _: None).read_bytes())
    target = mutants.mutate(source, name, tmp_path / name)
    before, after = source.read_text().splitlines(), target.read_text().splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert [b.strip() for _, b in changed] == [line]


def test_the_serial_machine_has_no_overlap_flags(tmp_path):
    source = tmp_path / "ga2_simtop.v"
    source.write_bytes(fresh_verilog(say=lambda _: None, params=DEFAULT).read_bytes())
    with pytest.raises(mutants.MutantError, match=r"its pattern in hw/overlap\.py"):
        mutants.mutate(source, "hazard-off", tmp_path / "out")


@pytest.mark.slow
@pytest.mark.rtl
@pytest.mark.parametrize("name", ["hazard-off", "write-port-off", "dma-yield-off"])
def test_cosim_catches_a_broken_issue_rule(icarus, name):
    command = [sys.executable, "-m", "cosim", "seeds", "100-103", "--sim", icarus, "--mutant", name,
               "--param", "OVERLAP=1"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL" in done.stdout and "words differ" in done.stdout
