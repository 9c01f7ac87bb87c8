"""cosim/where.py through compare(): a differing word of a compiled program named by its tensor
(node, operation, name, row, column) and the instruction that last wrote it; a random
program's by the instruction only. The expected names are worked out here from the program's
layout, placement and listing, with each instruction's written words taken from GA2.md's
effects (not from sim.spec's regions, which cosim/writers.py replays)."""

from __future__ import annotations

from compiler.workloads.seedtable import compile_seed
from cosim import stress
from cosim.api import compare
from cosim.jobs import Job
from cosim.writers import text
from sim.asm import Instruction
from sim.spec import DEFAULT
from tests.cosim.test_api import exact_run


def words_written(ins) -> set[tuple[str, int]]:
    """GA2.md section 3, instruction by instruction."""
    f = ins.fields
    if ins.op == "ST":
        return {("ext", f["dst"] + i) for i in range(f["len"])}
    if ins.op in ("LD", "RQ", "SM", "VADD"):
        return {("spad", f["dst"] + i) for i in range(f["len"])}
    if ins.op == "MM":
        return {("spad", f["dst"] + i * f["ldc"] + j) for i in range(f["M"]) for j in range(f["N"])}
    if ins.op == "AMAX":
        return {("spad", f["dst"])}
    if ins.op == "UNPACK":
        return {("spad", f["dst"] + i) for i in range(8 * f["len"])}
    return set()


def last_writer(code, memory: str, address: int) -> int:
    """The last pc before the HALT that writes the word."""
    halt = next(pc for pc, ins in enumerate(code) if ins.op == "HALT")
    return max(pc for pc in range(halt) if (memory, address) in words_written(code[pc]))


def seed_job(seed: int) -> tuple[Job, object]:
    run = compile_seed(seed, params=DEFAULT)
    return Job.of_program(run.program, run.test_inputs, f"seed {seed}"), run.program


def test_an_output_word_names_the_output_its_node_and_the_store():
    job, program = seed_job(100)
    entry = program.ext["out"]
    address = entry.addr + 1 * entry.shape[1] + 2
    stored = program.graph.nodes[program.graph.nodes[entry.node].ins[0]]
    pc = last_writer(program.code, "ext", address)
    assert program.code[pc].op == "ST"
    run = exact_run(job)
    run.ext[address] ^= 1
    found = compare(job, run)
    assert found[1] == (f"ext[{address}] (output 'out' row 1 col 2, from {stored.describe()}): last "
                        f"written by pc {pc}: {text(program.code[pc])}")


def test_a_scratchpad_word_names_the_tensor_in_place_when_it_was_written():
    """Node 9, seed 100's matmul: its buffer's address from the placement, its element's
    writer from the listing (its requantization, the RQ at pc 15)."""
    job, program = seed_job(100)
    node = program.graph.nodes[9]
    assert node.op == "matmul"
    buffer_id, first_row = program.placement.loc[9]
    address = program.placement.buffers[buffer_id].home + (first_row + 1) * node.shape[1] + 2
    pc = last_writer(program.code, "spad", address)
    assert program.code[pc].op == "RQ"
    run = exact_run(job)
    run.spad[address] ^= 4
    found = compare(job, run)
    assert found[0].startswith(f"spad: 1 word differs; first [{address}] RTL ")
    assert found[1].startswith(f"spad[{address}] ({node.describe()} row 1 col 2, also ")
    assert found[1].endswith(f"): last written by pc {pc}: {text(program.code[pc])}")


def test_a_random_programs_word_names_the_instruction_only():
    sp = next(sp for sp in stress.programs(0, 30, DEFAULT) if sp.ending == "HALT" and len(sp.job.program) > 6
              and all(isinstance(ins, Instruction) for ins in sp.job.program))
    code = sp.job.program
    want = sp.job.expected(DEFAULT)
    written = sorted(a for pc in range(want.error_pc) for m, a in words_written(code[pc]) if m == "spad")
    address = written[len(written) // 2]
    pc = last_writer(code, "spad", address)
    run = exact_run(sp.job)
    run.spad[address] ^= 1
    assert compare(sp.job, run)[1] == f"spad[{address}]: last written by pc {pc}: {text(code[pc])}"
