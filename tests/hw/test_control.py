"""hw/control.py with stub units (hw/stub.py): dispatch timing, every error code with its pc,
all five counters, against the reference machine. Many programs run in one simulation, each
started by the host as on the real chip."""

from __future__ import annotations

import random

import pytest
from amaranth.hdl import Elaboratable, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import Out
from amaranth.sim import Simulator

from hw.control import Control, dispatch_registers, host_members, imem_addr_bits
from hw.lanes import delay
from hw.ports import unit_members
from hw.stub import LatencyStub
from sim import spec
from sim.asm import build
from sim.spec import ErrorCode, Mem, Params

from .corebench import Case, case, compare, reference, run_case

SMALL = Params(SPAD_WORDS=1024, EXT_WORDS=512)

BASE = {
    "LD": dict(dst=0, src=0, len=4),
    "ST": dict(src=0, dst=0, len=4),
    "MM": dict(dst=100, A=0, B=40, M=2, K=3, N=2, tb=0, lda=3, ldb=2, ldc=2),
    "RQ": dict(dst=50, src=0, len=5, m=1000, s=10, relu=0, tab=0, C=0),
    "SM": dict(dst=60, src=0, len=5),
    "VADD": dict(dst=70, src1=0, src2=10, len=5),
    "AMAX": dict(dst=80, src=0, len=5),
    "UNPACK": dict(dst=90, src=0, len=2),
    "LUT": dict(dst=110, src=0, len=5, table=300),
    "HALT": {},
}
"""A legal instance of each kind, in SMALL, chosen by hand; :func:`base` derives one from the
spec for a kind not listed here. The cases below change one thing at a time."""


def base(op: str) -> dict[str, int]:
    """A legal instance of ``op`` in SMALL: BASE's, over every field at its lowest legal value
    (len 5), the scratchpad regions 32 words apart from word 128, external ones at 0."""
    ispec = spec.BY_NAME[op]
    fields = {f.name: 5 if f.name == "len" else f.legal_range(SMALL)[0] for f in ispec.fields}
    spad = [r.start for r in ispec.regions if r.mem is Mem.SPAD]
    fields |= {start: 128 + 32 * k for k, start in enumerate(spad)}
    fields |= BASE.get(op, {})
    assert spec.check(ispec, fields, SMALL)[0] is ErrorCode.NONE, f"no legal {op} derived: {fields}"
    return fields


def ins(op: str, **changes: int):
    return build(op, params=SMALL, strict=False, **(base(op) | changes))


HALT = ins("HALT")
PREFIX = [ins("LD", len=9), ins("MM", tb=1, ldb=5)]
"""Legal instructions before the faulty one, so that the counters have something in them."""


class ControlBench(Elaboratable):
    def __init__(self, params: Params):
        self.control = Control(params)
        self.stub = LatencyStub(params)

    def elaborate(self, platform):
        m = Module()
        m.submodules.control = c = self.control
        m.submodules.stub = s = self.stub
        dispatch_registers(m, c, s, [op.name for op in spec.INSTRUCTIONS if op.counter is not None], "stub")
        return m


def run_all(cases: list[Case], params: Params = SMALL, via_port: bool = False) -> None:
    bench = ControlBench(params)
    ctl = bench.control

    async def testbench(ctx):
        for c in cases:
            got = await run_case(ctx, ctl, ctl.imem, c, issue=ctl.issue, issue_opcode=ctl.issue_opcode,
                                 via_port=via_port, last=(ctl.ex_last, [bench.stub.done]))
            compare(c, got, reference(c, params))

    sim = Simulator(bench)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()


def field_cases() -> list[Case]:
    """BAD_FIELD: every field with a range narrower than its width, one past each end."""
    out = []
    for ispec in spec.INSTRUCTIONS:
        for f in ispec.fields:
            lo, hi = f.legal_range(SMALL)
            for value in (lo - 1, hi + 1):
                if 0 <= value < 1 << f.width:
                    out.append(case(f"{ispec.name}.{f.name}={value}",
                                    [*PREFIX, ins(ispec.name, **{f.name: value}), HALT]))
    return out


def bound_cases() -> list[Case]:
    """SPAD_RANGE / EXT_RANGE: every region ending one word past its memory, and exactly at its end."""
    out = []
    for ispec in spec.INSTRUCTIONS:
        for region in ispec.regions:
            size = SMALL.SPAD_WORDS if region.mem is Mem.SPAD else SMALL.EXT_WORDS
            extent = region.extent(base(ispec.name))
            for past in (1, 0):
                start = size - extent + past
                out.append(case(f"{ispec.name}.{region.start}={start}",
                                [*PREFIX, ins(ispec.name, **{region.start: start}), HALT]))
    out.append(case("LD src at 65535", [ins("LD", src=65535, len=1), HALT]))
    return out


def overlap_cases() -> list[Case]:
    """OVERLAP: each destination one word into each source of the same memory; in place."""
    out = []
    for ispec in spec.INSTRUCTIONS:
        for w in ispec.regions:
            for r in ispec.regions:
                if not w.writes or r.writes or w.mem is not r.mem:
                    continue
                legal = base(ispec.name)
                src, w_ext, r_ext = legal[r.start], w.extent(legal), r.extent(legal)
                # touching from below, overlapping by one word from below, in place, overlapping
                # by one word from above, touching from above
                for dst in (src - w_ext, src - w_ext + 1, src, src + r_ext - 1, src + r_ext):
                    if dst >= 0:
                        out.append(case(f"{ispec.name}.{w.start}={dst} vs {r.start}",
                                        [*PREFIX, ins(ispec.name, **{w.start: dst}), HALT]))
    # MM with tb = 1: B's span is (N-1)*ldb + K, not (K-1)*ldb + N
    for tb in (0, 1):
        out.append(case(f"MM tb={tb} B span", [
            *PREFIX, ins("MM", dst=60, A=0, B=40, M=1, K=1, N=4, tb=tb, ldb=10), HALT]))
        out.append(case(f"MM tb={tb} A span", [
            *PREFIX, ins("MM", dst=12, A=0, B=40, M=3, K=2, N=4, tb=tb, lda=6, ldb=4), HALT]))
    out.append(case("VADD src2 in place is an overlap", [ins("VADD", dst=10, src1=0, src2=10), HALT]))
    out.append(case("VADD dst == src1 == src2", [ins("VADD", dst=0, src1=0, src2=0), HALT]))
    return out


PER_CHANNEL = dict(m=0, s=0, pc=1, tab=300, C=6)
"""RQ's base made per output channel: a table of 6 words at 300 (sim.spec: C >= LANES)."""


def rule_cases() -> list[Case]:
    """BAD_FIELD by a rule across fields (sim.spec.FieldRule): each rule broken from the base
    (RQ's per-channel ones from its per-channel form); RQ per channel's table at the end of the
    scratchpad and one past it, the destination touching the table, overlapping it by one word
    and on it (refused, unlike dst == src); one legal per-channel RQ in place."""
    out = []
    for ispec in spec.instructions(SMALL):
        for k, rule in enumerate(ispec.field_rules):
            out.append(case(f"{ispec.name} rule {k} ({rule.blames})",
                            [*PREFIX, ins(ispec.name, **rule.breaking(SMALL)), HALT]))
    c = PER_CHANNEL["C"]
    for tab in (SMALL.SPAD_WORDS - c, SMALL.SPAD_WORDS - c + 1):
        out.append(case(f"RQ pc=1 tab={tab}", [*PREFIX, ins("RQ", **(PER_CHANNEL | {"tab": tab})), HALT]))
    for dst in (300 - 5, 300 - 4, 300, 300 + c - 1, 300 + c):
        out.append(case(f"RQ pc=1 dst={dst} vs tab",
                        [*PREFIX, ins("RQ", **(PER_CHANNEL | {"dst": dst})), HALT]))
    out.append(case("RQ pc=1 in place", [*PREFIX, ins("RQ", **(PER_CHANNEL | {"dst": 0})), HALT]))
    return out


def test_rules_across_fields():
    cases = rule_cases()
    assert {reference(c, SMALL).code for c in cases} == {int(ErrorCode.NONE), int(ErrorCode.BAD_FIELD),
                                                        int(ErrorCode.SPAD_RANGE), int(ErrorCode.OVERLAP)}
    run_all(cases)


def opcode_cases() -> list[Case]:
    # opcode 11 among them: MMRQ, which this machine (OVERLAP = 0) does not have
    return [case(f"opcode {op}", [PREFIX[0], [op | 0xABC0, 1, 2, 3], HALT]) for op in spec.bad_opcodes(SMALL)]


def stop_cases() -> list[Case]:
    every = [ins(s.name) for s in spec.instructions(SMALL) if s.name != "HALT"]
    return [
        case("every kind", [*every, HALT]),
        case("HALT only", [HALT]),
        case("prog_len 0", [HALT], prog_len=0),
        case("no HALT", every),
        case("HALT beyond prog_len", [*every, HALT], prog_len=len(every)),
        case("fault at pc 0", [ins("SM", len=0), HALT]),
        case("words after HALT are not run", [HALT, [0, 0, 0, 0], ins("LD", len=0)]),
        case("fault after HALT is not reported", [ins("LD"), HALT, ins("LD", len=0)]),
    ]


def random_legal_cases(n: int, seed: int) -> list[Case]:
    rng = random.Random(seed)
    out = []
    for k in range(n):
        program = []
        for _ in range(rng.randint(1, 12)):
            op = rng.choice([s.name for s in spec.INSTRUCTIONS if s.name != "HALT"])
            changes = {"len": rng.randint(1, 20)} if "len" in base(op) else {}
            if op == "MM":
                changes = dict(M=rng.randint(1, 4), K=rng.randint(1, 12), N=rng.randint(1, 4),
                               tb=rng.randint(0, 1), lda=12, ldb=12, ldc=4)
            if op == "RQ" and rng.random() < 0.5:
                changes |= PER_CHANNEL | {"C": rng.randint(SMALL.LANES, 12)}
            program.append(ins(op, **changes))
        out.append(case(f"random {k}", [*program, HALT]))
    return out


def test_every_kind_and_stop():
    run_all(stop_cases())


def test_bad_field():
    cases = field_cases()
    # every kind whose fields have a range narrower than their width
    assert {c.name.split(".")[0] for c in cases} == {
        s.name for s in spec.INSTRUCTIONS
        if any(f.legal_range(SMALL) != (0, (1 << f.width) - 1) for f in s.fields)}
    run_all(cases)


def test_bounds():
    run_all(bound_cases())


def test_overlaps():
    run_all(overlap_cases())


def test_bad_opcode():
    run_all(opcode_cases())


def test_random_legal_programs():
    run_all(random_legal_cases(12, seed=1))


def test_expected_codes_are_provoked():
    """The cases above do reach every error code the front end finds (as the reference machine
    judges them); the data's (BAD_INDEX) are test_a_data_fault_stops_when_the_instruction_ends's."""
    cases = field_cases() + bound_cases() + overlap_cases() + opcode_cases() + stop_cases() + rule_cases()
    codes = {reference(c, SMALL).code for c in cases}
    assert codes == {int(ErrorCode.NONE), *(int(c) for c in spec.CHECK_CODES)}


class FaultStub(LatencyStub):
    """A stub DMA that finds every GATHER's row number out of its table: ``fault`` for one cycle
    GATHER_INDEX_CYCLES - 1 after the dispatch, as hw/dma.py raises it."""

    def __init__(self, params: Params):
        self.params = params
        wiring.Component.__init__(self, unit_members(params, n_read=0, write=False) | {"fault": Out(1)})

    def elaborate(self, platform):
        m = super().elaborate(platform)
        gather = self.start & (self.opcode == int(spec.Opcode.GATHER))
        m.d.comb += self.fault.eq(delay(m, gather, spec.GATHER_INDEX_CYCLES - 1, "fault_at"))
        return m


def test_a_data_fault_stops_when_the_instruction_ends():
    """A unit's fault (BAD_INDEX) during a GATHER: the execute stage issues nothing more and
    stops when the GATHER ends, with its pc and counters as the reference machine's (which finds
    S[idx] = 5 >= rows = 1); a GATHER in range (S[idx] = 0) runs on. Serial and overlapping."""
    gather = ins("GATHER", idx=700, rows=1)
    bad = case("out of the table", [*PREFIX, ins("LD", dst=700, src=40, len=1), gather, ins("VADD"), HALT],
               ext=[0] * 40 + [5])
    good = case("in the table", [*PREFIX, gather, ins("VADD"), HALT])
    for params in (SMALL, Params(SPAD_WORDS=1024, EXT_WORDS=512, OVERLAP=1)):
        want = reference(bad, params)
        assert (want.code, want.pc) == (ErrorCode.BAD_INDEX, 3)
        for c, faulty in ((bad, True), (good, False)):
            control = Control(params)
            stub = FaultStub(params) if faulty else LatencyStub(params)
            m = Module()
            m.submodules.control = control
            m.submodules.stub = stub
            dispatch_registers(m, control, stub, [op.name for op in spec.INSTRUCTIONS if op.counter], "stub")
            if faulty:
                m.d.comb += control.unit_fault.eq(stub.fault)
            got = {}

            async def testbench(ctx, c=c, control=control, got=got):
                got["outcome"] = await run_case(ctx, control, control.imem, c, issue=control.issue,
                                                issue_opcode=control.issue_opcode)

            sim = Simulator(m)
            sim.add_clock(1e-8)
            sim.add_testbench(testbench)
            sim.run()
            compare(c, got["outcome"], reference(c, params))


def test_load_through_host_port():
    run_all([case("via port", [*PREFIX, ins("VADD", dst=0), HALT]), case("again", [HALT])], via_port=True)


def test_default_params():
    run_all([case("every kind", [ins(s.name) for s in spec.INSTRUCTIONS])], params=spec.DEFAULT)


def test_start_while_busy_is_ignored():
    bench = ControlBench(SMALL)
    ctl = bench.control
    c = case("long", [ins("SM", len=60), ins("SM", len=60), HALT])

    async def testbench(ctx):
        from .corebench import load_imem
        load_imem(ctx, ctl.imem, c.words)
        ctx.set(ctl.prog_len, c.length)
        ctx.set(ctl.start, 1)
        await ctx.tick()
        for _ in range(50):   # start held high while busy
            await ctx.tick()
        ctx.set(ctl.start, 0)
        await ctx.tick().until(ctl.done)
        want = reference(c, SMALL)
        assert ctx.get(ctl.count_cycles) == want.counters[0]
        assert ctx.get(ctl.count_sfu) == want.counters[4]

    sim = Simulator(bench)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()


def test_host_members():
    members = host_members(SMALL)
    assert members["imem_waddr"].shape == imem_addr_bits(SMALL) == 14
    assert [n for n in members if n.startswith("count_")] == [f"count_{n}" for n in spec.COUNTERS]


def test_rejects_bad_params():
    with pytest.raises(TypeError, match="Control: params=None"):
        Control(None)
