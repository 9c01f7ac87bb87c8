"""hw/formula.py: every formula of the spec (region extents and ends, latencies), pipelined,
gives the Python value ``depth`` stages later, also when the pipeline stalls."""

from __future__ import annotations

import random

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from hw import formula
from sim import spec
from sim.spec import DEFAULT

FORMULAS = [(f"{s.name} {r.start} extent", s, r.formula, ())
            for s in spec.INSTRUCTIONS for r in s.regions]
FORMULAS += [(f"{s.name} {r.start} end", s, (lambda a, f, r=r: f[r.start] + r.formula(a, f)), ())
             for s in spec.INSTRUCTIONS for r in s.regions]
FORMULAS += [(f"{s.name} latency", s, s.latency_formula, (DEFAULT,)) for s in spec.INSTRUCTIONS]


def _legal(rng: random.Random, ispec: spec.InstrSpec) -> dict[str, int]:
    out = {}
    for f in ispec.fields:
        lo, hi = f.legal_range(DEFAULT)
        out[f.name] = rng.choice([lo, hi, rng.randint(lo, hi)])
    return out


@pytest.mark.parametrize(("name", "ispec", "fn", "args"), FORMULAS, ids=[f[0] for f in FORMULAS])
def test_pipelined_formula(name, ispec, fn, args):
    m = Module()
    en = Signal(init=1)
    inputs = {f.name: Signal(f.width, name=f.name) for f in ispec.fields}
    pipe = formula.Pipeline(m, en)
    out = formula.evaluate(pipe, fn, {k: pipe.input(v) for k, v in inputs.items()}, *args)
    stages = formula.depth(fn, list(inputs), *args)
    assert (out.stage or 0) == stages
    result = Signal(32)
    ticks = Signal(8)
    m.d.comb += result.eq(out.value)
    m.d.sync += ticks.eq(ticks + 1)   # a sync domain even for a formula without registers
    rng = random.Random(name)
    vectors = [_legal(rng, ispec) for _ in range(40)]

    async def bench(ctx):
        # one vector per advancing cycle; en low one cycle in three (a stall holds everything)
        sent, seen, cycle = 0, 0, 0
        while seen < len(vectors):
            stall = cycle % 3 == 2
            ctx.set(en, not stall)
            if sent < len(vectors):
                for k, v in vectors[sent].items():
                    ctx.set(inputs[k], v)
            if not stall:
                if sent - seen == stages:
                    want = fn(spec.INT, vectors[seen], *args)
                    assert ctx.get(result) == want, f"{name} of {vectors[seen]}"
                    seen += 1
                sent += 1
            cycle += 1
            await ctx.tick()

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_depths():
    """The multiply-free formulas take one register at most; MM's extents: subtract, multiply, add."""
    mm = spec.BY_NAME["MM"]
    assert [formula.depth(r.formula, list(mm.field_names)) for r in mm.regions] == [3, 3, 3]
    ld = spec.BY_NAME["LD"]
    # fmt selects the words read: len, or ceil(len / 4) packed words (one register)
    assert formula.depth(ld.regions[0].formula, list(ld.field_names)) == 1
    assert formula.depth(lambda a, f: 1, ["len"]) == 0


def test_rejects_moving_back_and_dividing_by_a_term():
    pipe = formula.Pipeline(None)
    a = pipe.input(None, stage=2)
    with pytest.raises(ValueError, match="from stage 2 back to stage 1"):
        a.at(1)
    with pytest.raises(TypeError, match="divides by constants only"):
        a // a
