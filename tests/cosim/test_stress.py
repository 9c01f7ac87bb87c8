"""cosim/stress.py: the programs it draws from the ISA spec, and a short run on each simulator."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from functools import partial

import pytest

from cosim import coverage, stress
from cosim.jobs import Job
from cosim.verilog import ROOT
from sim import spec
from sim.asm import Instruction, build
from sim.spec import DEFAULT, ErrorCode

build = partial(build, params=DEFAULT)
"""This file's programs are the default machine's (sim.asm takes the machine explicitly)."""


@pytest.fixture(scope="module")
def programs() -> list[stress.StressProgram]:
    return stress.generate(1, 60, DEFAULT)


def test_a_program_depends_on_its_seed_only():
    one, again = stress.Generator(37, DEFAULT).program(), stress.Generator(37, DEFAULT).program()
    assert list(one.job.words) == list(again.job.words)
    assert (one.job.ext_image(DEFAULT) == again.job.ext_image(DEFAULT)).all()
    assert one.job.name == "seed 37"


def test_every_ending_happens_where_intended(programs):
    for prog in programs:
        want = "NONE" if prog.ending == stress.HALT else prog.ending
        assert prog.ending == stress.ENDINGS[prog.seed % len(stress.ENDINGS)]
        stop = prog.job.expected(DEFAULT)
        assert stop.error_code.name == want, (prog.seed, stop.detail)
    codes = {p.job.expected(DEFAULT).error_code for p in programs}
    assert codes == {ErrorCode.NONE, *spec.DATA_ERRORS, *spec.CHECK_CODES}


def test_the_body_before_the_ending_is_legal(programs):
    for prog in programs:
        stop = prog.job.expected(DEFAULT)
        assert stop.error_pc >= 0
        if isinstance(prog.job.program[0], Instruction):
            for ins in prog.job.program[:stop.error_pc]:
                assert spec.check(ins.spec, ins.fields, DEFAULT)[0] is ErrorCode.NONE


SIZES = [{"EXT_WORDS": 4}, {"EXT_WORDS": 16}, {"EXT_WORDS": 64}, {"EXT_WORDS": 256}, {"SPAD_WORDS": 4},
         {"SPAD_WORDS": 65536}, {"SPAD_WORDS": 4, "EXT_WORDS": 4}, {"SPAD_WORDS": 65536, "EXT_WORDS": 65536}]


@pytest.mark.parametrize("sizes", SIZES, ids=str)
def test_every_legal_machine_size_gets_its_programs(sizes):
    """Memories of 4 to 65536 words (they crashed the generator: no chunk of 64 external words,
    an LD longer than the external memory, a region start past 16 bits, no room for UNPACK's 9
    words, the edge strategies' whole-scratchpad loads): 60 programs each, every one ending as
    intended on the reference machine, its body legal there; the port loads every 8th."""
    params = spec.Params(**sizes)
    progs = list(stress.programs(1, 60, params))
    assert [p.seed for p in progs] == list(range(1, 61))
    for prog in progs:
        stop = prog.job.expected(params)
        assert stop.error_code.name == ("NONE" if prog.ending == stress.HALT else prog.ending), prog.seed
        assert len(prog.job.ext_image(params)) == params.EXT_WORDS
        if isinstance(prog.job.program[0], Instruction):
            for ins in prog.job.program[:stop.error_pc]:
                assert spec.check(ins.spec, ins.fields, params)[0] is ErrorCode.NONE, (prog.seed, ins)
        assert prog.job.via_port == (prog.seed % stress.PORT_EVERY == 0)
    assert not stress.fits("UNPACK", params) or any("UNPACK" in p.features for p in progs)


def _coverage(first: int, n: int, folder) -> dict:
    made = stress.make_chunk((first, n, str(folder / "chunk.yml")), DEFAULT)
    assert made.info["programs"] == n and made.info["coverage"] == str(folder / "chunk.yml")
    return coverage.merge([folder / "chunk.yml"], folder / "merged.yml")


def test_coverage_of_sixty_programs(tmp_path):
    data = _coverage(1, 60, tmp_path)
    assert data["stress.stops"] == {"HALT": 18, "BAD_OPCODE": 6, "BAD_FIELD": 6, "SPAD_RANGE": 6,
                                    "EXT_RANGE": 6, "OVERLAP": 6, "NO_HALT": 6, "BAD_INDEX": 6}
    assert all(data["stress.cases"].values()), data["stress.cases"]
    assert coverage.holes(data, "stress.instructions") == []
    lines = coverage.report(data)
    assert lines[2] == ("  stops: 8 of 8 bins (100%): HALT 18, BAD_OPCODE 6, BAD_FIELD 6, SPAD_RANGE 6, "
                        "EXT_RANGE 6, OVERLAP 6, NO_HALT 6, BAD_INDEX 6")
    n = len(spec.instructions(DEFAULT))            # MMRQ only at OVERLAP = 2
    assert lines[1].startswith(f"  instructions: {n} of {n} bins (100%): LD ")


def test_what_ci_runs_covers_every_instruction_and_every_stop(tmp_path):
    """make stress N=500 SEED=1 (.ci/run): every instruction executed and every error code met."""
    data = _coverage(1, 500, tmp_path)
    for point in coverage.REQUIRED:
        assert coverage.holes(data, point) == [], point
    every = {"HALT", *(c.name for c in (*spec.DATA_ERRORS, *spec.CHECK_CODES))}
    assert set(data["stress.stops"]) == set(coverage.STOPS) == every


def test_cover_points_count_what_the_machine_checked(tmp_path):
    """The instructions after a fault never ran: they count for nothing; the faulty one's fields
    and addresses count, an instruction that ran counts as executed."""
    bad_mm = build("MM", M=4, K=65, N=1, tb=0, A=0, B=0, dst=8, lda=1, ldb=1, ldc=1, strict=False)
    program = [build("LD", dst=3, src=0, len=1), bad_mm, build("SM", dst=0, src=0, len=1)]
    job = Job(program, None)
    model = coverage.Model(DEFAULT)
    model.sample(program, job.expected(DEFAULT), ["SM len=1"])
    model.export(tmp_path / "one.yml")
    data = coverage.read(tmp_path / "one.yml")
    assert data["stress.instructions"]["LD"] == 1 and data["stress.instructions"]["MM"] == 0
    assert data["stress.stops"]["BAD_FIELD"] == 1
    assert data["stress.fields.MM.K"] == {"lo-1": 0, "lo": 0, "hi": 0, "hi+1": 1}
    assert data["stress.fields.MM.M"]["hi"] == 1
    assert data["stress.fields.LD.len"] == {"lo-1": 0, "lo": 1}
    assert data["stress.alignment.LD.dst"] == {0: 0, 1: 0, 2: 0, 3: 1}
    assert data["stress.fields.SM.len"]["lo"] == 0 and data["stress.cases"]["SM len=1"] == 1


def test_strategies_take_turns_and_the_first_is_the_random_body():
    assert stress.STRATEGIES[0].name == "random"
    assert {stress.strategy_for(s, DEFAULT).name for s in range(40)} == {s.name for s in stress.STRATEGIES}


OVERLAPPING = spec.Params(OVERLAP=1)


def test_a_collide_body_aims_each_instruction_at_one_before_it():
    """Each instruction of a collide body after the first (but those the generator fell back to
    a plain draw for) has a scratchpad region across a region of one of the three before it, a
    hazard by the spec's conflict rule; the features count them by kind."""
    collide = [s for s in range(10, 20) if stress.strategy_for(s, DEFAULT).name == "collide"]
    assert collide and all(stress.strategy_for(s, DEFAULT).name == "collide" for s in collide)
    for seed in collide:
        g = stress.Generator(seed, DEFAULT)
        body = stress.collide_body(g)
        aimed = sum(g.features[f"collide {name}"] for name in stress.COLLISIONS)
        assert 4 <= len(body) <= stress.BODY_MAX and aimed >= len(body) - 2, (seed, aimed, len(body))
        met = 0
        for k, ins in enumerate(body[1:], start=1):
            mine = spec.spad_accesses(ins.spec, ins.fields)
            met += any(spec.conflict(mine, spec.spad_accesses(o.spec, o.fields))
                       for o in body[max(0, k - stress.COLLIDE_RECENT):k])
        assert met >= aimed, seed


def test_collide_programs_wait_on_hazards_more_than_random_ones():
    """On the machine whose engines overlap, the reference machine's hazard counter: every
    collide program of seeds 1..200 that ends in HALT waited on a hazard, and they waited more
    cycles per program than the random ones."""
    waited: dict[str, list[int]] = {"random": [], "collide": []}
    for prog in stress.programs(1, 200, OVERLAPPING):
        if "edge" in prog.job.name or prog.ending != stress.HALT:
            continue
        name = stress.strategy_for(prog.seed, OVERLAPPING).name
        waited[name].append(prog.job.expected(OVERLAPPING).counters.hazard)
    assert all(waited["collide"]) and len(waited["collide"]) >= 20
    mean = {name: sum(v) / len(v) for name, v in waited.items()}
    assert mean["collide"] > 1.5 * mean["random"], mean


def test_the_waits_cover_point_counts_the_reference_machines_waits(tmp_path):
    """An LD then an RQ of what it loaded (a read after write: the RQ waits for the LD) and an
    SM reading beside the RQ (it waits for the read port); only a machine with OVERLAP = 1 has
    the point."""
    program = [build("LD", dst=0, src=0, len=16), build("RQ", dst=16, src=0, len=16, m=1 << 23, s=23, relu=0),
               build("SM", dst=40, src=48, len=8), build("HALT")]
    expected = Job(program, None).expected(OVERLAPPING)
    assert expected.counters.hazard > 0 and expected.counters.port > 0
    model = coverage.Model(OVERLAPPING)
    model.sample(program, expected)
    model.export(tmp_path / "one.yml")
    assert coverage.read(tmp_path / "one.yml")["stress.waits"] == {"hazard": 1, "port": 1}
    coverage.Model(DEFAULT).export(tmp_path / "serial.yml")
    data = coverage.read(tmp_path / "serial.yml")
    assert "stress.waits" not in data and not any("waits" in line for line in coverage.report(data))


def test_a_long_program_is_legal_and_long():
    job = stress.long_program(1, 300, params=DEFAULT)
    assert job.length == 300 and job.expected(DEFAULT).error_code is ErrorCode.NONE


def test_listing_shows_an_unknown_opcode():
    prog = next(p for p in stress.generate(4, 1, DEFAULT))
    assert prog.ending == "BAD_OPCODE"
    text = stress.listing(prog.job.program)
    assert "???? opcode" in text and text.splitlines()[-1].endswith("HALT")


@pytest.mark.slow  # CI runs make stress on both simulators; this checks its summary lines
def test_short_stress_run(simulator, tmp_path):
    command = [sys.executable, "-m", "cosim", "stress", "--n", "20", "--seed", "1", "--sim", simulator,
               "--campaign", str(tmp_path / "campaign")]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{simulator:<10} PASS: 20 programs match the reference (memory, all five "
                               "counters, error code and pc), ")
    assert lines[2].startswith("20 programs (seeds 1..20), ")
    assert ("  stops: 8 of 8 bins (100%): HALT 6, BAD_OPCODE 2, BAD_FIELD 2, SPAD_RANGE 2, EXT_RANGE 2, "
            "OVERLAP 2, NO_HALT 2, BAD_INDEX 2") in lines
    assert lines[-1].startswith(f"campaign: {tmp_path / 'campaign'} (make stress SEED=1 N=20 SIM={simulator} "
                                "reproduces it")


def test_rerun_lines_carry_every_option_that_changes_the_run():
    assert stress.rerun_lines([5], "icarus") == [
        "rerun a failing program as it failed (add --show to print the listings):",
        "    make stress SEED=5 N=1 SIM=icarus    # or: python -m cosim stress --seed 5 --n 1 --sim icarus"]
    assert stress.rerun_lines([5, 10], "both", ["--mutant", "rq-round", "--verilog", "my dir/x.v"])[1:] == [
        "    python -m cosim stress --seed 5 --n 1 --sim both --mutant rq-round --verilog 'my dir/x.v'",
        "    python -m cosim stress --seed 10 --n 1 --sim both --mutant rq-round --verilog 'my dir/x.v'"]


def test_a_rerun_replays_the_launch_up_to_the_failing_program():
    """Seeds 5..304 in launches of 100 (5..104, 105..204, ...): 7 runs after 5 and 6, from the
    scratchpad they leave; 105 is its launch's first; 250 after 205..249; in launches of 150,
    program 154 needs 150 programs in one launch, so the command says --chunk 150."""
    assert stress.rerun_lines([7, 105, 250], "icarus", first=5)[1:] == [
        "    make stress SEED=5 N=3 SIM=icarus    # or: python -m cosim stress --seed 5 --n 3 --sim icarus"
        "    # seed 7 runs last, from the scratchpad 5..6 leave",
        "    make stress SEED=105 N=1 SIM=icarus    # or: "
        "python -m cosim stress --seed 105 --n 1 --sim icarus",
        "    make stress SEED=205 N=46 SIM=icarus    # or: "
        "python -m cosim stress --seed 205 --n 46 --sim icarus"
        "    # seed 250 runs last, from the scratchpad 205..249 leave"]
    assert stress.rerun_lines([154], "verilator", first=5, chunk=150)[1:] == [
        "    python -m cosim stress --seed 5 --n 150 --sim verilator --chunk 150"
        "    # seed 154 runs last, from the scratchpad 5..153 leave"]


@pytest.mark.rtl
@pytest.mark.slow
def test_the_rerun_command_of_a_mutant_fails_again(icarus):
    command = [sys.executable, "-m", "cosim", "stress", "--n", "6", "--seed", "5", "--sim", icarus,
               "--mutant", "rq-round"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert done.returncode == 1, done.stdout + done.stderr
    hint = done.stdout.splitlines().index(
        "rerun a failing program as it failed (add --show to print the listings):")
    rerun = done.stdout.splitlines()[hint + 1].split("#")[0].split()
    assert rerun[:3] == ["python", "-m", "cosim"] and rerun[-2:] == ["--mutant", "rq-round"]
    again = subprocess.run([sys.executable, *rerun[1:]], capture_output=True, text=True, cwd=ROOT,
                           timeout=900)
    assert again.returncode == 1, again.stdout + again.stderr
    n = int(rerun[rerun.index("--n") + 1])          # the failing program and those before it
    assert again.stdout.splitlines()[1] == \
        f"{icarus:<10} FAIL: 1 of {n} program{'s' if n > 1 else ''} differs from the reference"


DECOUPLED = spec.Params(OVERLAP=2)


def test_the_decoupled_machine_adds_the_fill_strategy_and_the_others_draw_as_before():
    assert [s.name for s in stress.DECOUPLED_STRATEGIES] == ["random", "collide", "fill"]
    assert {stress.strategy_for(s, DECOUPLED).name for s in range(60)} == {"random", "collide", "fill"}
    assert [stress.strategy_for(s, DEFAULT).name for s in range(60)] == \
        [stress.strategy_for(s, OVERLAPPING).name for s in range(60)]
    for seed in range(10):     # random on every machine: the same programs (OVERLAP = 0 and 1)
        assert stress.strategy_for(seed, DECOUPLED).name == "random"
        assert stress.strategy_for(seed, DEFAULT).name == "random"
        program = stress.Generator(seed, OVERLAPPING).program().job.program
        assert program == stress.Generator(seed, DEFAULT).program().job.program
    # the decoupled machine draws MMRQ too (sim.spec.built), so its programs are its own
    drawn = [w for seed in range(10) for w in stress.Generator(seed, DECOUPLED).program().job.words]
    assert int(spec.Opcode.MMRQ) in {w & 0xF for w in drawn[::spec.INSTR_WORDS]}


def test_fill_programs_fill_every_queue():
    """Seeds 20..29 are fill programs on the decoupled machine (the strategy's turn): in their
    runs (the reference machine's), every engine's queue is full at some time, the front end is
    held for a free entry, and instructions pass earlier ones."""
    hits: Counter = Counter()
    for prog in stress.programs(20, 10, DECOUPLED):
        if "edge" in prog.job.name:
            continue
        assert stress.strategy_for(prog.seed, DECOUPLED).name == "fill"
        assert prog.features["fill block"] >= 1
        expected = prog.job.expected(DECOUPLED)
        hits.update(coverage.queue_events(coverage._checked(prog.job.program, expected), expected.timeline))
    assert set(hits) == set(coverage.QUEUES), hits


def test_queue_events_worked_by_hand():
    """Five long LDs (the DMA's queue holds three waiting, the fifth waits for room), a VADD
    that passes them, an MM that overwrites what the VADD reads, once the VADD has read."""
    text = [build("LD", dst=64 * k, src=0, len=64) for k in range(5)]
    vadd = build("VADD", dst=1000, src1=1100, src2=1200, len=8)
    mm = build("MM", dst=1100, A=2000, B=2100, M=1, K=4, N=4, tb=0, lda=4, ldb=4, ldc=4)
    program = [*text, vadd, mm, build("HALT")]
    expected = Job(program, None).expected(DECOUPLED)
    events = coverage.queue_events(program, expected.timeline)
    assert events == ["dma queue full", "front end held", "passed", "write after read early"]


def test_odd_programs_carry_spare_bits_the_isa_ignores():
    """Every odd seed's words hold random bits above each instruction's last field (hand-worked:
    RQ's fields end at bit 115, HALT has none above its opcode): they decode to the instructions
    the seed draws without them, and an unknown opcode's words stay as they were."""
    import random

    from sim.asm import decode

    rq = spec.BY_NAME["RQ"]
    assert stress.spare_end(rq) == 116 and stress.spare_end(spec.BY_NAME["HALT"]) == spec.OPCODE_BITS
    program = [build("RQ", params=DEFAULT, dst=1, src=2, len=3, m=5, s=7, relu=1),
               build("HALT", params=DEFAULT)]
    unknown = [10, 0, 0, 0]                # opcode 10: no instruction
    words = stress.with_spare_bits([w for ins in program for w in ins.encode()] + unknown, random.Random(3))
    assert [decode(words[k:k + 4]) for k in (0, 4)] == program
    assert words[8:] == unknown
    spare = [sum(w << (32 * i) for i, w in enumerate(words[k:k + 4])) >> end for k, end in ((0, 116), (4, 4))]
    assert all(bits != 0 for bits in spare)
    odd, even = (next(stress.programs(seed, 1, DEFAULT)).job.program for seed in (1, 4))
    drawn = [stress.Generator(seed, DEFAULT).program().job.program for seed in (1, 4)]
    assert odd != [w for ins in drawn[0] for w in ins.encode()]
    assert [decode(odd[k:k + 4]) for k in range(0, len(odd), 4)] == drawn[0]
    assert even == drawn[1]
