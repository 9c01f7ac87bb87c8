"""cosim/mutants.py: a broken requantizer in a copy of the Verilog, and the co-simulation
catching it (make cosim prints FAIL with the first differing words, named by tensor and
instruction); a DMA whose done comes a cycle late, caught by the core's timing_fault alone."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from compiler.workloads.seedtable import compile_seed
from cosim import mutants
from cosim.verilog import ROOT, fresh_verilog
from cosim.writers import text
from flows.memmap import PORTS_JSON
from sim.spec import DEFAULT
from tests.cosim.test_where import last_writer


def test_rq_round_changes_every_lane(tmp_path):
    source = tmp_path / "ga2_simtop.v"     # a copy: the export may be redone meanwhile
    source.write_bytes(fresh_verilog(params=DEFAULT).read_bytes())
    (tmp_path / PORTS_JSON).write_text("{}")
    target = mutants.mutate(source, "rq-round", tmp_path / "mutant")
    before, after = source.read_text().splitlines(), target.read_text().splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert len(changed) == 4  # one per lane
    assert all("requant.py" in a and "2'h1" in a and "2'h0" in b for a, b in changed)
    assert (tmp_path / "mutant" / PORTS_JSON).is_file()


def test_dma_late_registers_the_dmas_done(tmp_path):
    source = tmp_path / "ga2_simtop.v"
    source.write_bytes(fresh_verilog(params=DEFAULT).read_bytes())
    target = mutants.mutate(source, "dma-late", tmp_path / "mutant")
    before, after = source.read_text().splitlines(), target.read_text().splitlines()
    assert len(after) == len(before) + 2
    before_set, after_set = set(before), set(after)   # 48,000 lines: `in` on a list is quadratic
    removed = [line for line in before if line not in after_set]
    added = [line for line in after if line not in before_set]
    assert len(removed) == 1 and removed[0].strip().startswith("assign done = ") and "dma.py" in removed[0]
    expression = removed[0].strip().removeprefix("assign done = ")
    assert [line.strip() for line in added] == ["reg done_late = 1'h0;",
                                                f"always @(posedge clk) done_late <= {expression}",
                                                "assign done = done_late;"]


def test_a_mutant_that_no_longer_applies_is_an_error(tmp_path):
    (tmp_path / "in.v").write_text("module \\x.requant.lanes (a);\nendmodule\n")
    with pytest.raises(mutants.MutantError, match=r"its pattern in hw/requant\.py .* is not in"):
        mutants.mutate(tmp_path / "in.v", "rq-round", tmp_path / "out")
    (tmp_path / "dma.v").write_text("module \\x.core.dma (done);\n  output done;\nendmodule\n")
    with pytest.raises(mutants.MutantError, match=r"its pattern in hw/dma\.py .* is not in"):
        mutants.mutate(tmp_path / "dma.v", "dma-late", tmp_path / "out")
    with pytest.raises(mutants.MutantError, match="known mutants are rq-round"):
        mutants.mutate(tmp_path / "in.v", "nope", tmp_path / "out")


@pytest.mark.rtl
def test_broken_requantizer_fails_the_seed_run(icarus):
    command = [sys.executable, "-m", "cosim", "seeds", "100", "--sim", icarus, "--mutant", "rq-round"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("mutant rq-round: hw/requant.py (Requantizer, stage 7) truncates")
    assert lines[1] == "icarus     FAIL: 1 of 1 program differs from the reference"
    word = r"0x[0-9a-f]{8} \(-?\d+\)"
    first = rf"    seed 100: ext: \d+ words? differs?; first \[(\d+)\] RTL {word}, reference {word}"
    m = re.match(first, lines[2])
    assert m, lines[2]
    # the first differing word in the program's terms, worked out from its layout and listing
    program = compile_seed(100, params=DEFAULT).program
    address = int(m[1])
    entry = next(e for e in program.ext.values() if e.addr <= address < e.addr + e.words)
    assert entry.kind == "output" and entry.panel == 0
    row, col = divmod(address - entry.addr, entry.shape[1])
    stored = program.graph.nodes[program.graph.nodes[entry.node].ins[0]]
    pc = last_writer(program.code, "ext", address)
    assert lines[3] == (f"              ext[{address}] (output '{entry.name}' row {row} col {col}, from "
                        f"{stored.describe()}): last written by pc {pc}: {text(program.code[pc])}")
    m = re.match(rf"              spad: \d+ words differ; first \[(\d+)\] RTL {word}", lines[4])
    assert m, lines[4]
    address = int(m[1])
    pc = last_writer(program.code, "spad", address)
    assert re.fullmatch(rf"              spad\[{address}\] \(.*node \d+ \(\w+.*\): last written by "
                        rf"pc {pc}: {re.escape(text(program.code[pc]))}", lines[5]), lines[5]


@pytest.mark.rtl
def test_a_late_dma_done_fails_on_timing_fault_alone(icarus):
    """Memories and counters match (the execute stage counts the spec's latency): without the
    core's timing_fault this mutant would PASS."""
    command = [sys.executable, "-m", "cosim", "seeds", "100", "--sim", icarus, "--mutant", "dma-late"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("mutant dma-late: hw/dma.py (DMA, its done output) raises done one cycle")
    assert lines[1:4] == [
        "icarus     FAIL: 1 of 1 program differs from the reference",
        "    seed 100: timing_fault: a unit's done and the execute stage's count disagreed (the spec latency "
        "of some instruction is not what the RTL does)",
        ""]


@pytest.mark.rtl
def test_a_counter_reset_to_128_fails_on_the_check_after_reset_alone(icarus):
    """Every start sets count_cycles to 1, so memories and counters match; only the harness's
    read of the outputs right after reset (cosim.harness.CLEARED) sees the 128 (the RTL mutants'
    m03 of the default machine's draw of 2026-12-07 inverted bit 7 of that reset value)."""
    command = [sys.executable, "-m", "cosim", "seeds", "100", "--sim", icarus, "--mutant", "counter-reset"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[1:4] == [
        "icarus     FAIL: 1 of 1 program differs from the reference",
        "    seed 100: outputs not 0 right after reset: count_cycles (reset clears the registers and the "
        "counters: docs/GA2.md section 2)",
        ""]


def _changed_lines(tmp_path, name):
    source = tmp_path / "ga2_simtop.v"
    source.write_bytes(fresh_verilog(params=DEFAULT).read_bytes())
    target = mutants.mutate(source, name, tmp_path / name)
    before, after = source.read_text().splitlines(), target.read_text().splitlines()
    return [(a, b) for a, b in zip(before, after, strict=True) if a != b]


def test_counter_reset_changes_count_cycles_s_reset_value_alone(tmp_path):
    (a, b), = _changed_lines(tmp_path, "counter-reset")
    assert a.strip().endswith("= 32'd0;") and b == a.replace("= 32'd0;", "= 32'd128;")


def test_vadd_norelu_clears_the_relu_select_of_every_lane(tmp_path):
    changed = _changed_lines(tmp_path, "vadd-norelu")
    assert len(changed) == DEFAULT.LANES
    for a, b in changed:
        assert "vector.py" in a and a.strip().endswith("[7];")   # the sum's sign bit
        assert re.sub(r"= tag_x_0\[\d+\] &", "= 1'h0 &", a) == b


def test_vadd_relu_bit_reads_the_lowest_bit_of_len(tmp_path):
    """relu is bit 68 of the instruction, len bits 52-67 (docs/isa.md); the units' fields port
    starts after the 4-bit opcode."""
    changed = _changed_lines(tmp_path, "vadd-relu-bit")
    assert changed and all("vector.py" in a and "fields[64] : relu;" in a for a, _ in changed)
    assert all(b == a.replace("fields[64]", "fields[48]") for a, b in changed)
    what = mutants.MUTANTS["vadd-relu-bit"].what
    assert "from bit 48 of the fields (len's lowest bit) instead of bit 64" in what


def test_the_vadd_mutants_refuse_a_vector_unit_without_their_pattern(tmp_path):
    (tmp_path / "v.v").write_text("module \\x.core.vector (a);\nendmodule\n")
    for name in ("vadd-norelu", "vadd-relu-bit"):
        with pytest.raises(mutants.MutantError, match=rf"mutant '{name}': its pattern in hw/vector\.py"):
            mutants.mutate(tmp_path / "v.v", name, tmp_path / "out")


def first_stress_seed_showing(monkeypatch, op: str, broken, first: int = 1, n: int = 60) -> int:
    """The first stress program whose memories change when the reference machine executes
    ``op`` as ``broken`` does (what a mutant does to the RTL), worked out on the reference alone."""
    from cosim.jobs import reference
    from cosim.stress import programs
    from sim import machine

    for generated in programs(first, n, DEFAULT):
        job = generated.job
        want = job.expected(DEFAULT)
        with monkeypatch.context() as patch:
            patch.setitem(machine._EXECUTE, op, broken)
            got = reference(job.program, job.ext_image(DEFAULT), params=DEFAULT)
        if not (np.array_equal(want.spad, got.spad) and np.array_equal(want.ext, got.ext)):
            return generated.seed
    raise AssertionError(f"no stress program of seeds {first}..{first + n - 1} shows a broken {op}")


def first_stress_seed_the_dropped_relu_shows(monkeypatch) -> int:
    """... for a VADD that ignores relu (vadd-norelu)."""
    from sim import machine

    plain = machine._EXECUTE["VADD"]
    return first_stress_seed_showing(monkeypatch, "VADD",
                                     lambda spad, ext, f: plain(spad, ext, {**f, "relu": 0}))


@pytest.mark.rtl
@pytest.mark.slow
def test_stress_catches_the_dropped_relu(icarus, monkeypatch):
    """The first stress program (from the spec's random draws) where, by the reference machine,
    a VADD relu=1 meets a negative sum: the mutant's RTL fails it."""
    seed = first_stress_seed_the_dropped_relu_shows(monkeypatch)
    command = [sys.executable, "-m", "cosim", "stress", "--seed", str(seed), "--n", "1", "--sim", icarus,
               "--mutant", "vadd-norelu"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == "icarus     FAIL: 1 of 1 program differs from the reference"
    # the words the reference predicted (the first may be downstream of the unclipped sum)
    first = rf"    seed {seed}: (spad|ext): \d+ words? differs?; first \[\d+\] RTL "
    assert re.match(first, lines[2]), lines[2]


def test_ln_truncate_drops_the_rounding_term_of_every_lane(tmp_path):
    changed = _changed_lines(tmp_path, "ln-truncate")
    assert len(changed) == DEFAULT.LANES
    for a, b in changed:
        assert "layernorm.py" in a and a.strip().endswith("half_less : half;")
        assert b.strip().endswith("= 24'h000000;")


def test_gather_nocheck_never_finds_a_row_out_of_its_table(tmp_path):
    (a, b), = _changed_lines(tmp_path, "gather-nocheck")
    assert a.strip().startswith("bad <= ") and b.strip() == "bad <= 1'h0;"


def _truncating_ln(spad, ext, f):
    """The reference's LN with the rounding term dropped (what ln-truncate does to the RTL)."""
    from sim import arith
    from sim.machine import s8, s32, to_words

    x = s8(spad[f["src"]:f["src"] + f["len"]])
    sol = arith.ln_solve([int(v) for v in x], f["eps"])
    y = ((sol.n * x - sol.s1) * sol.recip) >> sol.shift
    spad[f["dst"]:f["dst"] + f["len"]] = to_words(y + s32(spad[f["bias"]:f["bias"] + f["len"]]))


@pytest.mark.rtl
@pytest.mark.slow
def test_stress_catches_the_new_units_mutants(icarus, monkeypatch):
    """Issue 26: the first stress program where a truncating LN changes a word (by the reference
    machine), and the first that ends in BAD_INDEX (ENDINGS: seed 3), fail on the mutants' RTL:
    ln-truncate's LN words, gather-nocheck's stop (no error, and a row read past its table)."""
    from cosim import stress

    ln_seed = first_stress_seed_showing(monkeypatch, "LN", _truncating_ln)
    index_seed = next(s for s in range(1, 20) if stress.ENDINGS[s % len(stress.ENDINGS)] == "BAD_INDEX")
    cases = (("ln-truncate", ln_seed, rf"    seed {ln_seed}: (spad|ext): \d+ words? differs?"),
             ("gather-nocheck", index_seed,
              rf"    seed {index_seed}: stop: RTL error_code 0 \(no error\) at pc \d+, reference 7"))
    for name, seed, first in cases:
        command = [sys.executable, "-m", "cosim", "stress", "--seed", str(seed), "--n", "1", "--sim", icarus,
                   "--mutant", name]
        done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
        assert done.returncode == 1, done.stdout + done.stderr
        lines = done.stdout.splitlines()
        assert lines[1] == "icarus     FAIL: 1 of 1 program differs from the reference", name
        assert re.match(first, lines[2]), lines[2]
