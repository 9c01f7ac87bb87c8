"""cosim/faults.py: the fault sweep, built from the ISA spec (the RTL runs are in make
mutants-rtl's grading and in the slow test below)."""

from __future__ import annotations

import pytest

from cosim import faults
from sim import spec
from sim.spec import DEFAULT, ErrorCode, Mem


def test_every_instruction_every_bounded_field_and_every_high_start_bit():
    jobs = faults.jobs(DEFAULT)
    names = [job.name for job in jobs]
    assert len(set(names)) == len(names)
    for ispec in spec.instructions(DEFAULT):
        if not ispec.fields:
            continue
        for region in ispec.regions:
            # a region empty in the smallest form (RQ's table) from the form with pc = 1
            note = " (pc=1)" if region.start == "tab" else ""
            if region.mem is Mem.SPAD:        # 4,096 words in a 16-bit field: bits 12..15 each, and all
                for bit in range(12, 16):
                    assert f"{ispec.name} {region.start} with bit {bit} set (SPAD range){note}" in names
                assert f"{ispec.name} {region.start} with bits 12-15 set (SPAD range){note}" in names
                assert f"{ispec.name} {region.start} ends one word past the end{note}" in names
        for k, rule in enumerate(ispec.field_rules):
            assert f"{ispec.name} rule {k + 1} broken ({rule.blames})" in names
    assert "RQ rule 6 broken (C)" in names and "MM rule 1 broken (ldc)" in names
    assert f"MM K=0 (legal 1..{DEFAULT.K_MAX})" in names
    assert f"MM K={DEFAULT.K_MAX + 1} (legal 1..{DEFAULT.K_MAX})" in names
    assert f"SM len={DEFAULT.SM_MAX_LEN + 1} (legal 1..{DEFAULT.SM_MAX_LEN})" in names
    # MMRQ is OVERLAP = 2's: one program on this machine, which stops at it with BAD_OPCODE
    assert [n for n in names if n.startswith("MMRQ")] == ["MMRQ where it is not built (OVERLAP = 0)"]
    decoupled = [job.name for job in faults.jobs(spec.Params(OVERLAP=2))]
    assert "MMRQ tab with bit 12 set (SPAD range)" in decoupled and "MMRQ rule 1 broken (ldc)" in decoupled


def test_each_program_stops_at_its_fault_in_the_reference():
    """The high start bits leave an address inside the memory, so only they are at fault (the
    external memory's 65,536 words fill a 16-bit field: no such bits, no region past its end)."""
    for job in faults.jobs(DEFAULT)[:-1]:
        want = job.expected(DEFAULT)
        field = "(legal " in job.name or " broken (" in job.name
        code = ErrorCode.BAD_FIELD if field else ErrorCode.SPAD_RANGE
        if "where it is not built" in job.name:      # MMRQ on a machine without it
            code = ErrorCode.BAD_OPCODE
        assert (want.error_code, want.error_pc) == (code, 0), job.name


def test_the_late_fault_sets_every_pc_bit_and_the_counters_upper_bits():
    """The last program stops with BAD_OPCODE at pc 4,095 (bits 0-11 set: a flipped upper bit of
    the fetch pc shows in error_pc), after 4,095 legal instructions that keep every unit busy
    past 2**12 cycles (a counter bit 11 or 12 tied to 0 shows in the counters)."""
    job = faults.jobs(DEFAULT)[-1]
    assert job.name.startswith(faults.LATE_NAME) and DEFAULT.IMEM_WORDS == 4096
    want = job.expected(DEFAULT)
    assert (want.error_code, want.error_pc) == (ErrorCode.BAD_OPCODE, 4095)
    c = want.counters
    assert (c.cycles, c.dma, c.mxu, c.vpu, c.sfu) == (34124, 5464, 4781, 11594, 12276)
    assert min(c.dma, c.mxu, c.vpu, c.sfu) > 1 << 12
    assert len(job.program) == spec.INSTR_WORDS * DEFAULT.IMEM_WORDS


@pytest.mark.rtl
@pytest.mark.slow
def test_the_sweep_passes_on_the_rtl(icarus, capsys):
    assert faults.main(icarus, params=DEFAULT) == 0
    assert f"PASS: {len(faults.jobs(DEFAULT))} fault programs" in capsys.readouterr().out
