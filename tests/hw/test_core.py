"""The GA-2 core (hw/top.py, inside hw/simtop.py with its external memory) against the reference
machine: every scratchpad and external-memory word, the stop, all five counters, and the
core's ``timing_fault`` self-check, 0 after every program (tests/hw/test_timing_fault.py makes
it fire).

Programs run one after the other in one simulation, as a host would run them: load the
external memory and the program by backdoor, clear the scratchpad, pulse start, wait for done.
"""

from __future__ import annotations

import random
from functools import partial

import numpy as np
import pytest
from amaranth.sim import Simulator

from compiler import compile_graph
from compiler.workloads.seedtable import attention_step_graph, attention_step_sample, compile_seed
from hw.simtop import SimTop
from hw.top import UNIT_MODULES
from sim import spec
from sim.asm import build
from sim.bench import random_instruction, row_number_for
from sim.machines import describe
from sim.spec import DEFAULT, Params

from .corebench import Case, case, compare, reference, run_case

build = partial(build, params=DEFAULT)
"""This file's programs are the default machine's (sim.asm takes the machine explicitly)."""

SMALL = Params(SPAD_WORDS=256, EXT_WORDS=512)
MODULES = UNIT_MODULES


def _set_banked(ctx, mem, values: np.ndarray) -> None:
    for b, bank in enumerate(mem.banks):
        for row, value in enumerate(values[b::mem.lanes]):
            ctx.set(bank.data[row], int(value))


def _get_banked(ctx, mem) -> np.ndarray:
    out = np.zeros(mem.depth, dtype=np.uint32)
    for b, bank in enumerate(mem.banks):
        out[b::mem.lanes] = [ctx.get(bank.data[row]) for row in range(mem.depth // mem.lanes)]
    return out


def run_core(cases: list[Case], params: Params = SMALL) -> None:
    """Run every case on the core; compare with the reference machine, memories included, and
    require ``timing_fault`` to be 0 after each.

    Raises:
        AssertionError: a difference (see :func:`corebench.compare`).
    """
    dut = SimTop(params)
    core = dut.core

    async def testbench(ctx):
        for c in cases:
            ext0 = np.zeros(params.EXT_WORDS, dtype=np.uint32)
            if c.ext is not None:
                ext0[:len(c.ext)] = np.asarray(c.ext, dtype=np.int64) & 0xFFFFFFFF
            _set_banked(ctx, dut.ext, ext0)
            _set_banked(ctx, core.spad, np.zeros(params.SPAD_WORDS, dtype=np.uint32))
            got = await run_case(ctx, dut, core.control.imem, c,
                                 last=(core.control.ex_last, [u.done for u in core.units.values()]),
                                 timing_fault=dut.timing_fault)
            got.spad = _get_banked(ctx, core.spad)
            got.ext = _get_banked(ctx, dut.ext)
            compare(c, got, reference(c, params), memories=True)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()


def _ops(c: Case) -> set[str]:
    ops = set()
    for k in range(c.length):
        spec_ = spec.BY_OPCODE.get(c.words[k * spec.INSTR_WORDS] & 0xF)
        if spec_ is not None and spec_.counter is not None:
            ops.add(spec_.name)
    return ops


def b(op: str, params: Params = SMALL, **fields):
    return build(op, params=params, **fields)


HALT = build("HALT")


def _image(seed: int, n: int, kind: str = "int8") -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "int8":
        return rng.integers(-128, 128, n)
    return rng.integers(-(1 << 31), 1 << 31, n)


# --------------------------------------------------------------------------- LD / ST


def test_dma_programs():
    rng = np.random.default_rng(11)
    cases = []
    for k in range(6):
        program = []
        for _ in range(8):
            n = int(rng.integers(1, 41))
            a = int(rng.integers(0, SMALL.SPAD_WORDS - n + 1))
            e = int(rng.integers(0, SMALL.EXT_WORDS - n + 1))
            program.append(b("LD", dst=a, src=e, len=n) if rng.integers(2) else b("ST", src=a, dst=e, len=n))
        cases.append(case(f"dma {k}", [*program, HALT], ext=_image(k, SMALL.EXT_WORDS, "int32")))
    run_core(cases)


# --------------------------------------------------------------------------- every kind, with data


def _kind_cases() -> dict[str, list[Case]]:
    ext = _image(1, 512)
    ext32 = _image(2, 512, "int32")
    load = b("LD", dst=0, src=0, len=128)
    out = {
        "MM": [
            case("MM tb=0", [load, b("MM", dst=140, A=0, B=40, M=4, K=9, N=4, tb=0, lda=9, ldb=5, ldc=6),
                             b("MM", dst=170, A=3, B=7, M=3, K=1, N=2, tb=0, lda=1, ldb=3, ldc=2),
                             b("ST", src=140, dst=300, len=40), HALT], ext=ext),
            case("MM tb=1", [load, b("MM", dst=140, A=1, B=50, M=2, K=13, N=4, tb=1, lda=17, ldb=13, ldc=4),
                             b("MM", dst=160, A=2, B=9, M=4, K=5, N=3, tb=1, lda=7, ldb=11, ldc=5),
                             b("ST", src=140, dst=300, len=40), HALT], ext=ext),
            case("MM K_MAX", [b("LD", dst=0, src=0, len=200),
                              b("MM", dst=210, A=0, B=64, M=2, K=SMALL.K_MAX, N=4, tb=1, lda=1, ldb=33,
                                ldc=4),
                              HALT], ext=ext),
        ],
        "RQ": [case("RQ", [b("LD", dst=0, src=0, len=40),
                           b("RQ", dst=50, src=0, len=37, m=12345678, s=40, relu=0),
                           b("RQ", dst=3, src=3, len=30, m=8388608, s=30, relu=1),   # in place
                           b("ST", src=0, dst=200, len=100), HALT], ext=ext32)],
        "VADD": [case("VADD", [load, b("VADD", dst=130, src1=0, src2=61, len=50),
                               b("VADD", dst=5, src1=5, src2=70, len=23),             # in place
                               b("ST", src=0, dst=200, len=200), HALT], ext=ext)],
        "AMAX": [case("AMAX", [load, b("AMAX", dst=130, src=3, len=1), b("AMAX", dst=131, src=0, len=128),
                               b("AMAX", dst=132, src=10, len=17), HALT],
                      ext=np.concatenate([[5, 7, 7, -3], _image(3, 124)]))],
        "UNPACK": [case("UNPACK", [b("LD", dst=0, src=0, len=8), b("UNPACK", dst=8, src=0, len=5),
                                   b("UNPACK", dst=61, src=5, len=3), b("ST", src=0, dst=100, len=100), HALT],
                        ext=_image(4, 16, "int32"))],
        "SM": [case("SM", [load, b("SM", dst=130, src=0, len=SMALL.SM_MAX_LEN),
                           b("SM", dst=200, src=7, len=5), b("SM", dst=210, src=90, len=1), HALT], ext=ext)],
    }
    return out


def _drawn_case(kind: str) -> list[Case]:
    """A kind without cases of its own above: three random legal instances (``sim.bench``) on
    loaded data, then the scratchpad stored."""
    rng = random.Random(kind)
    drawn = [random_instruction(kind, rng, SMALL) for _ in range(3)]
    return [case(f"{kind} drawn", [b("LD", dst=0, src=0, len=SMALL.SPAD_WORDS), *drawn,
                                   b("ST", src=0, dst=0, len=SMALL.SPAD_WORDS), HALT], ext=_image(3, 512))]


KINDS = [s.name for s in spec.instructions(SMALL) if s.counter not in (None, "dma")]
"""Every kind of this machine but LD and ST (the DMA's tests above) and HALT (MMRQ, OVERLAP = 2's,
runs on the core in tests/hw/test_station_core.py)."""


@pytest.mark.parametrize("kind", KINDS)
def test_kind(kind: str):
    run_core(_kind_cases().get(kind) or _drawn_case(kind))


def test_every_kind_in_one_program():
    ext = _image(5, 512)
    program = [b("LD", dst=0, src=0, len=100),
               b("MM", dst=100, A=0, B=20, M=4, K=8, N=4, tb=0, lda=8, ldb=4, ldc=4),
               b("RQ", dst=100, src=100, len=16, m=9000000, s=31, relu=1),
               b("VADD", dst=120, src1=100, src2=40, len=16),
               b("SM", dst=140, src=120, len=16),
               b("AMAX", dst=160, src=120, len=16),
               b("UNPACK", dst=170, src=60, len=2),
               b("ST", src=100, dst=300, len=90), HALT]
    run_core([case("every kind", program, ext=ext)])


def _random_instruction(rng: random.Random, op: str, params: Params):
    """A legal instruction of kind op with random fields (lengths kept short)."""
    ispec = spec.BY_NAME[op]
    while True:
        fields = {}
        for f in ispec.fields:
            lo, hi = f.legal_range(params)
            if f.name == "len":
                hi = min(hi, 8 if op == "UNPACK" else 40)
            elif f.name in ("lda", "ldb", "ldc"):
                hi = 12
            elif f.name == "K":
                hi = min(hi, 20)
            elif f.width == spec.ADDR_BITS:
                external = (op, f.name) in (("LD", "src"), ("ST", "dst"), ("GATHER", "src"))
                hi = (params.EXT_WORDS if external else params.SPAD_WORDS) - 1
            fields[f.name] = rng.randint(lo, hi)
        if spec.check(ispec, fields, params)[0] is spec.ErrorCode.NONE:
            return build(op, params=params, **fields)


def _random_cases(seed: int, count: int, params: Params) -> list[Case]:
    rng = random.Random(seed)
    kinds = [s.name for s in spec.INSTRUCTIONS if s.counter]
    cases = []
    for k in range(count):
        program = [b("LD", params, dst=0, src=0, len=params.SPAD_WORDS)]
        for _ in range(14):
            ins = _random_instruction(rng, rng.choice(kinds), params)
            if ins.op == "GATHER":      # its row number, below rows, written by an AMAX
                program.append(row_number_for(ins, rng, params))
            program.append(ins)
        program += [b("ST", params, src=0, dst=0, len=params.SPAD_WORDS), HALT]
        cases.append(case(f"random {k}", program, ext=_image(seed + k, params.EXT_WORDS, "int32")))
    return cases


def test_random_programs():
    """Random legal programs over every kind whose unit exists: units back to back, sharing ports."""
    run_core(_random_cases(2024, 3, SMALL))


# slow: CI's stress runs the T = 8 machine's Verilog (PARAMS=t8); make test-all runs these too
@pytest.mark.slow
@pytest.mark.parametrize("params", [Params(T=2, SPAD_WORDS=256, EXT_WORDS=512),
                                    Params(T=8, LANES=8, SPAD_WORDS=256, EXT_WORDS=512),
                                    pytest.param(Params(T=16, LANES=16, SPAD_WORDS=256, EXT_WORDS=512),
                                                 marks=pytest.mark.slow)], ids=describe)
def test_random_programs_on_other_machines(params):
    """The whole core of another size (T, LANES), random programs: memories, counters, stop and
    timing_fault as the reference machine of that size."""
    run_core(_random_cases(params.T * 10 + params.LANES, 2, params))


@pytest.mark.slow
def test_compiled_graph_at_t8():
    """Running example A compiled for T = 8, LANES = 8 (8 x 8 tiles) on that core."""
    t8 = Params(T=8, LANES=8)
    rng = random.Random(3)
    calibration = [attention_step_sample(rng) for _ in range(20)]
    program = compile_graph(attention_step_graph(), calibration, params=t8)
    assert max(ins.N for ins in program.code if ins.op == "MM") == 8   # a tile the 4 x 4 array has not
    run_core([case("example A at T=8", program.code, ext=program.ext_image(attention_step_sample(rng)))],
             params=t8)


# --------------------------------------------------------------------------- stops


def test_errors_keep_earlier_effects():
    ext = _image(6, 512, "int32")
    row_two = ext.copy()
    row_two[3] = 2
    cases = [
        case("error after LD", [b("LD", dst=0, src=0, len=30),
                                build("LD", dst=250, src=0, len=7, strict=False), HALT], ext=ext),
        case("no HALT", [b("LD", dst=0, src=5, len=20), b("ST", src=3, dst=400, len=9)], ext=ext),
        case("prog_len 0", [b("LD", dst=0, src=5, len=20), HALT], prog_len=0, ext=ext),
        case("unknown opcode", [b("LD", dst=0, src=0, len=4), [9, 0, 0, 0], HALT], ext=ext),
        # a GATHER's row number (S[3] = 2, loaded) against rows: in (rows = 3), then out (rows = 2:
        # BAD_INDEX after the GATHER's latency, nothing written, the VADD after it never runs)
        case("GATHER in its table", [b("LD", dst=0, src=0, len=30),
                                     b("GATHER", dst=40, src=100, idx=3, len=9, rows=3),
                                     b("VADD", dst=60, src1=0, src2=9, len=9), HALT], ext=row_two),
        case("GATHER out of its table", [b("LD", dst=0, src=0, len=30),
                                         b("GATHER", dst=40, src=100, idx=3, len=9, rows=2, fmt=1),
                                         b("VADD", dst=60, src1=0, src2=9, len=9), HALT], ext=row_two),
    ]
    run_core(cases)


def test_default_params():
    """The real sizes: addresses near the ends of the 4096-word scratchpad and 65536-word external memory."""
    ext = _image(7, DEFAULT.EXT_WORDS, "int32")
    program = [b("LD", DEFAULT, dst=4090, src=8180, len=6), b("ST", DEFAULT, src=4089, dst=8187, len=5), HALT]
    run_core([case("default", program, ext=ext)], params=DEFAULT)


# --------------------------------------------------------------------------- compiled graphs

def _example_a() -> Case:
    """Running example A, compiled as examples/attention_step.py does (its graph and samples
    are compiler.workloads.seedtable's)."""
    rng = random.Random(3)
    calibration = [attention_step_sample(rng) for _ in range(20)]
    program = compile_graph(attention_step_graph(), calibration)
    return case("example A", program.code, ext=program.ext_image(attention_step_sample(rng)))


def _seed(seed: int) -> Case:
    run = compile_seed(seed, params=DEFAULT)
    return case(f"seed {seed}", run.program.code, ext=run.program.ext_image(run.test_inputs))


# example A and seed 100 here; all twelve seeds run on the Verilog in CI's make cosim
@pytest.mark.parametrize("which", ["A", 100, *(pytest.param(seed, marks=pytest.mark.slow)
                                               for seed in range(101, 112))])
def test_compiled_graph(which):
    run_core([_example_a() if which == "A" else _seed(which)], params=DEFAULT)
