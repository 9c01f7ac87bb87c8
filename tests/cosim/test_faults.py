"""cosim/faults.py: the fault sweep, built from the ISA spec (the RTL runs are in make
mutants-rtl's grading and in the slow test below)."""

from __future__ import annotations

import pytest

from cosim import faults
from sim import spec
from sim.spec import DEFAULT, ErrorCode, Mem


def test_every_instruction_every_bounded_field_and_every_high_start_bit():
    jobs = faults.jobs()
    names = [job.name for job in jobs]
    assert len(set(names)) == len(names)
    for ispec in spec.INSTRUCTIONS:
        if not ispec.fields:
            continue
        for region in ispec.regions:
            if region.mem is Mem.SPAD:        # 4,096 words in a 16-bit field: bits 12..15 each, and all
                for bit in range(12, 16):
                    assert f"{ispec.name} {region.start} with bit {bit} set (SPAD range)" in names
                assert f"{ispec.name} {region.start} with bits 12-15 set (SPAD range)" in names
                assert f"{ispec.name} {region.start} ends one word past the end" in names
    assert f"MM K=0 (legal 1..{DEFAULT.K_MAX})" in names
    assert f"MM K={DEFAULT.K_MAX + 1} (legal 1..{DEFAULT.K_MAX})" in names
    assert f"SM len={DEFAULT.SM_MAX_LEN + 1} (legal 1..{DEFAULT.SM_MAX_LEN})" in names


def test_each_program_stops_at_its_fault_in_the_reference():
    """The high start bits leave an address inside the memory, so only they are at fault (the
    external memory's 65,536 words fill a 16-bit field: no such bits, no region past its end)."""
    for job in faults.jobs():
        want = job.expected()
        code = ErrorCode.BAD_FIELD if "(legal " in job.name else ErrorCode.SPAD_RANGE
        assert (want.error_code, want.error_pc) == (code, 0), job.name


@pytest.mark.rtl
@pytest.mark.slow
def test_the_sweep_passes_on_the_rtl(icarus, capsys):
    assert faults.main(icarus) == 0
    assert f"PASS: {len(faults.jobs())} fault programs" in capsys.readouterr().out
