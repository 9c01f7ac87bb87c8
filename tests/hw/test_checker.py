"""hw/checker.py against sim.spec.check: random and edge instructions of every kind."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from amaranth.sim import Simulator

from hw.checker import CHECK_STAGES, Checker, pc_bits
from sim import spec
from sim.asm import build, decode
from sim.spec import DEFAULT, ErrorCode, Params

SMALL = Params(SPAD_WORDS=1024, EXT_WORDS=512)


def _field_value(rng: random.Random, f: spec.Field, base: int, params: Params) -> int:
    """Edge-biased: the ends of the legal range and one past them, addresses near a common
    base (overlaps) or near the end of memory (bounds), anything in the width."""
    lo, hi = f.legal_range(params)
    top = (1 << f.width) - 1
    choice = rng.random()
    if f.name == "table" and choice < 0.5:   # LUT's 256 words, beside the other regions or on dst
        return max(0, min(top, base + rng.choice([-300, -280, 40, 60, 0])))
    if f.width == spec.ADDR_BITS and f.name != "len" and choice < 0.7:
        if choice < 0.4:
            return max(0, min(top, base + rng.randint(-12, 12)))
        end = rng.choice([params.SPAD_WORDS, params.EXT_WORDS])
        return max(0, min(top, end - rng.randint(-3, 40)))
    if f.name in ("lda", "ldb", "ldc"):
        return rng.choice([0, 1, 2, 3, 4, 5, 8, 17, rng.randint(0, 300), rng.randint(0, top)])
    edges = [lo, hi, lo + 1, hi - 1, lo - 1, hi + 1]
    edges = [v for v in edges if 0 <= v <= top]
    if choice < 0.85:
        return rng.randint(lo, min(hi, lo + 40))
    if choice < 0.95:
        return rng.choice(edges)
    return rng.randint(0, top)


def _random_instruction(rng: random.Random, params: Params) -> tuple[int, ErrorCode]:
    """(the encoded 128-bit instruction, the code the reference machine gives)."""
    if rng.random() < 0.04:
        op = rng.choice(spec.bad_opcodes(params))
        return op | rng.getrandbits(spec.INSTR_BITS) & ~((1 << spec.OPCODE_BITS) - 1), ErrorCode.BAD_OPCODE
    ispec = rng.choice(spec.INSTRUCTIONS)
    base = rng.randint(0, params.SPAD_WORDS)
    fields = {f.name: _field_value(rng, f, base, params) for f in ispec.fields}
    if ispec.name == "RQ" and rng.random() < 0.7:
        fields |= _rq_mode(rng, fields, base, params)
    if ispec.name == "GATHER" and rng.random() < 0.5:
        fields |= _gather_table(rng, fields, params)
    ins = build(ispec.name, params=params, strict=False, **fields)
    bits = sum(w << (32 * i) for i, w in enumerate(ins.encode()))
    bits |= rng.getrandbits(spec.INSTR_BITS) & ~((1 << _used_bits(ispec)) - 1)  # junk in reserved bits
    if not spec.built(ispec, params):     # MMRQ but at OVERLAP = 2: an opcode the machine lacks
        return bits, ErrorCode.BAD_OPCODE
    return bits, spec.check(ispec, fields, params)[0]


def _rq_mode(rng: random.Random, fields: dict[str, int], base: int, params: Params) -> dict[str, int]:
    """RQ's fields made to agree with its mode (sim.spec's rules across fields), which independent
    draws almost never do: pc = 0 with tab = C = 0; pc = 1 with m = s = 0 and a table of C >= LANES
    words near the other regions or the end of the scratchpad (C = LANES - 1 sometimes: the rule)."""
    if not fields["pc"]:
        return {"tab": 0, "C": 0}
    c = rng.choice([params.LANES, params.LANES + 1, params.LANES - 1, rng.randint(params.LANES, 100)])
    tab = rng.choice([base + rng.randint(-12, 12), params.SPAD_WORDS - c + rng.randint(-3, 3)])
    return {"m": 0, "s": 0, "C": c, "tab": max(0, min((1 << spec.ADDR_BITS) - 1, tab))}


def _gather_table(rng: random.Random, fields: dict[str, int], params: Params) -> dict[str, int]:
    """A GATHER's table of a few rows that fits the external memory, so that the checks after its
    range (the overlap of idx and dst) are reached: independent draws of rows and len give a
    table of thousands of words, past a small machine's external memory nearly always."""
    rows, words = rng.randint(1, 4), min(fields["len"], params.EXT_WORDS // 8) or 1
    length = words * spec.INT8_PER_WORD if fields["fmt"] else words
    return {"rows": rows, "len": length, "src": rng.randint(0, params.EXT_WORDS - rows * words)}


def _used_bits(ispec: spec.InstrSpec) -> int:
    return spec.OPCODE_BITS + sum(f.width for f in ispec.fields)


def _run(params: Params, stream: list[tuple[int, int, bool]], stalls: bool) -> list[tuple[int, ...]]:
    """Feed (instr, pc, nohalt) one per cycle (with random stalls); collect (pc, opcode, code,
    latency) out."""
    dut = Checker(params)
    out = []

    async def bench(ctx):
        rng = random.Random(5)
        k = 0
        while len(out) < len(stream):
            en = not (stalls and rng.random() < 0.3)
            ctx.set(dut.en, en)
            if k < len(stream):
                instr, pc, nohalt = stream[k]
                ctx.set(dut.in_valid, 1)
                ctx.set(dut.in_instr, instr)
                ctx.set(dut.in_pc, pc)
                ctx.set(dut.in_nohalt, nohalt)
            else:
                ctx.set(dut.in_valid, 0)
            if en and ctx.get(dut.out_valid):
                out.append((ctx.get(dut.out_pc), ctx.get(dut.out_opcode), ctx.get(dut.out_code),
                            ctx.get(dut.out_latency)))
            if en:
                k += 1
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return out


@pytest.mark.parametrize("params", [DEFAULT, SMALL, Params(OVERLAP=2)], ids=["default", "small", "decoupled"])
def test_matches_spec_check(params: Params):
    rng = random.Random(params.SPAD_WORDS)
    stream, want = [], []
    for pc in range(4000):
        bits, code = _random_instruction(rng, params)
        nohalt = rng.random() < 0.02
        stream.append((bits, pc, nohalt))
        want.append((pc, bits & 0xF, int(ErrorCode.NO_HALT if nohalt else code)))
    got = _run(params, stream, stalls=params is SMALL)
    assert len(got) == len(want)
    for g, w, (bits, _, _) in zip(got, want, stream, strict=True):
        assert g[:3] == w, f"pc {w[0]}: RTL code {g[2]}, reference {w[2]} for {bits:#034x}"
        ispec = spec.BY_OPCODE.get(bits & 0xF)
        if w[2] == ErrorCode.NONE and ispec.counter is not None:   # the execute stage counts it down
            words = [(bits >> (spec.WORD_BITS * i)) & 0xFFFFFFFF for i in range(spec.INSTR_WORDS)]
            want_latency = spec.latency(ispec, decode(words).fields, params)
            assert g[3] == want_latency, f"pc {w[0]}: latency {g[3]}, spec {want_latency} for {bits:#034x}"
    # the stream must have provoked every code, for every kind that can raise it
    seen = Counter((w[1], w[2]) for w in want)
    for ispec in spec.INSTRUCTIONS:
        op = int(ispec.opcode)
        if not spec.built(ispec, params):
            assert seen[(op, ErrorCode.BAD_OPCODE)] >= 5, ispec.name
            continue
        assert seen[(op, ErrorCode.NONE)] >= 5, ispec.name
        if any(f.legal_range(params) != (0, (1 << f.width) - 1) for f in ispec.fields):
            assert seen[(op, ErrorCode.BAD_FIELD)], ispec.name
        for mem, code in ((spec.Mem.SPAD, ErrorCode.SPAD_RANGE), (spec.Mem.EXT, ErrorCode.EXT_RANGE)):
            if any(r.mem is mem for r in ispec.regions):
                assert seen[(op, code)], (ispec.name, code)
        if any(w.writes and not r.writes and w.mem is r.mem for w in ispec.regions for r in ispec.regions):
            assert seen[(op, ErrorCode.OVERLAP)], ispec.name


def test_latency_and_flush():
    dut = Checker(SMALL)
    halt = int(spec.Opcode.HALT)

    async def bench(ctx):
        ctx.set(dut.en, 1)
        ctx.set(dut.in_valid, 1)
        ctx.set(dut.in_instr, halt)
        ctx.set(dut.in_pc, 9)
        await ctx.tick()
        ctx.set(dut.in_valid, 0)
        for _ in range(CHECK_STAGES - 1):
            assert not ctx.get(dut.out_valid)
            await ctx.tick()
        assert ctx.get(dut.out_valid) and ctx.get(dut.out_pc) == 9 and ctx.get(dut.out_opcode) == halt
        ctx.set(dut.in_valid, 1)
        await ctx.tick()
        ctx.set(dut.flush, 1)
        await ctx.tick()
        ctx.set(dut.flush, 0)
        ctx.set(dut.in_valid, 0)
        for _ in range(CHECK_STAGES + 1):
            assert not ctx.get(dut.out_valid)
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_pc_bits():
    assert pc_bits(DEFAULT) == spec.PC_BITS
    assert pc_bits(Params(IMEM_WORDS=1 << 16)) == 17


def test_rejects_bad_params():
    with pytest.raises(TypeError, match="Checker: params='x'"):
        Checker("x")
