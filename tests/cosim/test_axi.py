"""cosim/axi.py: GA-2 through AXI against the reference machine, and the rule's comparison.

The RTL test runs the seed table's graphs and stress programs through cocotbext-axi on Icarus,
every channel paused at random (pause 0.3), and demands docs/GA2.md section 8's rule: every
external word and stop as the reference's, every counter too but ``cycles``, which is the
reference's plus MEM_STALL, and MEM_STALL > 0 (the bus is slower than the fixed-latency memory).
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from cosim import axi, axi_probes
from cosim.jobs import Job
from sim import machines, regmap, spec
from sim.asm import build
from sim.spec import DEFAULT


def program():
    """LD 8 words at ext 3, ST them at ext 21 (both unaligned), HALT."""
    code = [build("LD", params=DEFAULT, dst=0, src=3, len=8),
            build("ST", params=DEFAULT, src=0, dst=21, len=8), build("HALT", params=DEFAULT)]
    ext = np.arange(100, dtype=np.uint32)
    return Job(code, ext, "ld-st")


def faithful(job: Job, stall: int) -> axi.AxiRun:
    """The run that keeps the rule exactly, with ``stall`` cycles of memory stall."""
    want = job.expected(DEFAULT)
    counters = list(want.counters.as_tuple(spec.ALL_COUNTERS))
    registers = {"counters": counters, "wall": counters[0] + stall, "mem_stall": stall,
                 "error_code": int(want.error_code), "error_pc": want.error_pc, "bus_error": False}
    names = ("axi_fault", "axi_code", "axil_fault", "axil_code", "timing_fault", "bridge_fault")
    faults = dict.fromkeys(names, 0)
    return axi.AxiRun(job.name, True, want.ext.copy(), registers, faults)


def test_a_faithful_run_has_no_differences():
    job = program()
    assert axi.compare(job, faithful(job, 9), DEFAULT) == []


def test_each_broken_part_of_the_rule_is_named():
    job = program()
    run = faithful(job, 9)
    run.registers["counters"][1] += 1
    run.ext[22] ^= 4                         # ext[22] = ext[3 + 1] = 4 after the ST
    run.faults.update(axi_fault=1, axi_code=14)
    lines = axi.compare(job, run, DEFAULT)
    assert lines[0] == "AXI protocol checker (master): rule 14: AR burst crosses a 4 KiB boundary"
    assert "counter dma: bus 1" in lines[1] and "(+1)" in lines[1]
    assert lines[2].startswith("ext: 1 words differ; first [22] bus 0x00000000, reference 0x00000004")
    run = faithful(job, 0)
    run.registers["counters"][0] += 3        # cycles less mem_stall off the reference
    assert axi.compare(job, run, DEFAULT) == [
        f"counter cycles - mem_stall: bus {run.registers['counters'][0]}, reference "
        f"{run.registers['counters'][0] - 3} (+3)"]


def test_a_run_that_did_not_finish_says_so():
    job = program()
    run = faithful(job, 0)
    run.finished, run.registers = False, None
    assert axi.compare(job, run, DEFAULT)[-1].startswith("no DONE within the cycle limit")


def test_an_interrupt_without_done_and_a_stopped_bench_are_differences(tmp_path):
    job = program()
    run = faithful(job, 0)
    run.finished, run.registers, run.faults["irq_without_done"] = False, None, 1
    lines = axi.compare(job, run, DEFAULT)
    assert lines[0] == "the interrupt rose but STATUS.DONE did not follow within 10 polls"
    xml = tmp_path / "results.xml"          # cocotb's, when cocotbext-axi's AxiRam asserted on a burst
    xml.write_text('<testsuites><testsuite><testcase name="run_jobs">'
                   '<failure message="" type="AssertionError">'
                   'Traceback (most recent call last):\n  File "axi_slave.py", line 304, in _process_read\n'
                   '    assert 0x1000-(aligned_addr &amp; 0xfff) &gt;= transfer_size\nAssertionError\n'
                   '</failure></testcase></testsuite></testsuites>')
    stopped = axi.bench_failure(xml)
    assert stopped == 'AssertionError (File "axi_slave.py", line 304, in _process_read)'
    run = axi.AxiRun(job.name, False, np.zeros(4, np.uint32), None, {"bench_stopped": stopped})
    assert axi.compare(job, run, DEFAULT) == [f"the bench stopped in this program: {stopped}"]
    assert axi.bench_failure(tmp_path / "none.xml") == ""


@pytest.mark.rtl
@pytest.mark.slow      # 2.5 minutes; CI's `make axi SIM=icarus` runs seeds 100-111 and 40 stress programs
def test_seeds_and_stress_through_axi_with_back_pressure(icarus):
    jobs = axi.seed_jobs("100-103", DEFAULT) + axi.stress_jobs(1, 12, DEFAULT) + [program()]
    problems, rows = axi.check(jobs, icarus, DEFAULT, pause=0.3, seed=2, say=lambda _: None)
    assert problems == []
    assert len(rows) == len(jobs)
    assert all(stall > 0 for _, _, _, stall in rows)
    assert all(wall == ref + stall for _, ref, wall, stall in rows)


@pytest.mark.rtl
def test_a_program_at_the_high_base_has_the_low_bases_cycles(icarus):
    """Stress and the long transfer run at EXT_BASE_HIGH: the same bursts as at EXT_BASE (the same
    offset in a 4 KiB page), so the same cycles, with every address bit above the window 1."""
    jobs = axi.stress_jobs(1, 3, DEFAULT)
    low = axi.check(jobs, icarus, DEFAULT, pause=0.3, seed=2, say=lambda _: None)
    high = axi.check(jobs, icarus, DEFAULT, pause=0.3, seed=2, say=lambda _: None, ext_base=axi.EXT_BASE_HIGH)
    assert low[0] == high[0] == [] and low[1] == high[1]
    window = DEFAULT.EXT_WORDS * regmap.REG_BYTES
    assert axi.EXT_BASE % 4096 == axi.EXT_BASE_HIGH % 4096 and axi.EXT_BASE_HIGH + window <= 1 << 32
    above = ((1 << 32) - 1) ^ (2 * window - 1)          # bit 19 and up (the window: 2**18 bytes)
    assert axi.EXT_BASE & above == 0 and axi.EXT_BASE_HIGH & above == above
    assert axi.EXT_BASES == {"seeds": axi.EXT_BASE, "stress": axi.EXT_BASE_HIGH, "long": axi.EXT_BASE_HIGH}


def _broken(tmp_path, line: str, instead: str):
    """The system top's simulation Verilog with one line replaced (it must be there once)."""
    text = axi.verilog(DEFAULT, say=lambda _: None).read_text()
    assert text.count(line) == 1, line
    path = tmp_path / "ga2_axi_simtop.v"
    path.write_text(text.replace(line, instead))
    return path


@pytest.mark.rtl
def test_the_counter_probe_sees_a_read_out_bit_no_program_sets(icarus, tmp_path):
    """After the last program the bench puts values in the counters' registers and reads them
    through the slave: bit 17 of the MXU count held at 0 on its way to the slave (bus mutant b01
    of the third draw) changes no program's counts (all below 2**17) but the probe's second round
    (the complement of the first: bit 17 set) reads it."""
    broken = _broken(tmp_path, "    .mxu(mxu),\n", "    .mxu(mxu & 32'hfffdffff),\n")
    problems, _ = axi.check(axi.seed_jobs("100", DEFAULT), icarus, DEFAULT, pause=0.3, seed=2,
                            source=broken, say=lambda _: None)
    assert len(problems) == 1 and problems[0].startswith("seed 100: counter read-out: MXU reads 0x")
    put, got = (int(w, 16) for w in re.findall(r"0x([0-9a-f]{8})", problems[0])[::-1])
    assert put ^ got == 1 << 17


@pytest.mark.rtl
def test_a_slave_that_fails_the_hosts_check_or_never_answers_is_a_difference(icarus, tmp_path, monkeypatch):
    """Not a tool error: RDATA's bit 16 stuck at 1 (the host reads a wrong PARAMS), and BVALID held
    low (the host's first write is never answered: the bench's time limit stops it)."""
    monkeypatch.delenv("PYTEST_CURRENT_TEST")   # else cocotb's runner exits on a failed bench itself
    jobs = axi.seed_jobs("100-101", DEFAULT)
    for line, instead, why in (
            ("    s_axil_rdata <= \\$46 ;\n", "    s_axil_rdata <= \\$46  | 32'h00010000;\n", "HostError"),
            ("    s_axil_bvalid <= \\$43 ;\n", "    s_axil_bvalid <= 1'h0;\n", "SimTimeoutError")):
        problems, rows = axi.check(jobs, icarus, DEFAULT, pause=0.3, seed=2, say=lambda _: None,
                                   source=_broken(tmp_path, line, instead))
        assert rows == [] and problems[0].startswith(f"seed 100: the bench stopped in this program: {why}")
        assert problems[1] == "seed 101 and after: not run (a program before them did not stop)"


def test_the_decode_probes_are_the_unlisted_neighbours_of_each_register():
    probes = axi_probes.decode_probes(DEFAULT)
    listed = {r.offset for r in regmap.registers(DEFAULT)}
    reads = {off: want for kind, off, want in probes if kind == "r"}
    writes = {off: want for kind, off, want in probes if kind == "w"}
    assert reads.keys() == writes.keys() and not reads.keys() & listed
    # DMA at 0x44: 0x40 (bit 2) is CYCLES, listed; 0xc4 (bit 7) and 0x10044 (bit 16: the window) are not
    assert 0x40 not in reads and {0xC4, 0x10044, 0x0044 ^ 0x8000} <= reads.keys()
    assert set(reads.values()) == {axi_probes.SLVERR}
    base = regmap.imem_base(DEFAULT)
    assert {off for off, want in writes.items() if want == axi_probes.OKAY} == {
        off for off in writes if base <= off < base + regmap.imem_bytes(DEFAULT)}
    assert writes[0x10044] == axi_probes.OKAY and writes[0xC4] == axi_probes.SLVERR
    assert len(reads) == 212


def test_a_wrong_answer_or_a_changed_register_is_named():
    probes = [("r", 0x30, axi_probes.SLVERR), ("w", 0x34, axi_probes.SLVERR), ("w", 0x10000, axi_probes.OKAY)]
    rw = axi_probes.rw_registers(DEFAULT)
    assert axi_probes.decode_differences(probes, [2, 2, 0], [5] * len(rw), [5] * len(rw), DEFAULT) == []
    lines = axi_probes.decode_differences(probes, [0, 2, 2], [1, 2, 3], [1, 7, 3], DEFAULT)
    assert lines == [
        "register slave: read of offset 0x00030 answered OKAY, the register map says SLVERR",
        "register slave: write to offset 0x10000 answered SLVERR, the register map says OKAY",
        "register slave: EXT_BASE reads 0x00000007 after the refused writes, 0x00000002 before them"]
    job = program()
    run = faithful(job, 3)
    run.faults["decode"] = lines[:1]
    assert axi.compare(job, run, DEFAULT) == lines[:1]


def test_the_long_transfer_passes_bit_14_of_the_dma_counter():
    """Eight LD/ST pairs of the 4,096-word scratchpad: each 4,096 / LANES = 1,024 cycles (one beat of
    four words a cycle) plus 3 of latency (the reference machine's count); the ST's 1,024 beats set
    bit 10 of the write side's beat count."""
    job = axi_probes.long_job(DEFAULT)
    want = job.expected(DEFAULT)
    assert want.counters.dma == 16 * (4096 // DEFAULT.LANES + 3) == 16_432
    assert want.counters.dma >> 14 & 1 and int(want.error_code) == 0
    st = [i for i in job.program if i.op == "ST"]
    assert len(st) == 8 and all(i.fields["len"] == DEFAULT.SPAD_WORDS for i in st)
    first_pair = next(k for k, i in enumerate(job.program) if i.op == "LD")
    assert first_pair == DEFAULT.IMEM_WORDS // 2 and len(job.program) <= DEFAULT.IMEM_WORDS
    ext = np.asarray(job.ext)
    assert np.array_equal(want.ext[4096:8192], ext[0:4096])
    assert np.array_equal(want.ext[65536 - 4096:], ext[65536 - 8192:65536 - 4096])
    with pytest.raises(ValueError, match="EXT_WORDS = 4096"):
        axi_probes.long_job(dataclasses.replace(DEFAULT, EXT_WORDS=4096))
    wide = machines.PRESETS["t8"]                 # 512 cycles a transfer: 16 pairs, round the memory once
    assert axi_probes.long_job(wide).expected(wide).counters.dma >> 14 == 1


@pytest.mark.rtl
@pytest.mark.slow
def test_the_long_transfer_through_axi(icarus):
    job = axi_probes.long_job(DEFAULT)
    problems, rows = axi.check([job], icarus, DEFAULT, pause=0.3, seed=3, say=lambda _: None)
    assert problems == []
    [(_, ref, wall, stall)] = rows
    assert ref == 16_441 + 2048 * 6 and stall > 0 and wall == ref + stall     # the pairs, 2,048 VADDs of 6
