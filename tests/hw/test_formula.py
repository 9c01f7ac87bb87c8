"""hw/formula.py: every formula of the spec (region extents and ends, latencies), pipelined,
gives the Python value ``depth`` stages later, also when the pipeline stalls, and so it does with
its runs of adds and multiplexers cut to fit the checker's stages (``within``)."""

from __future__ import annotations

import random

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from hw import formula
from sim import spec
from sim.spec import DEFAULT

END_STAGES = 3
"""The checker's stages for the ends (hw.checker.END_STAGES, by hand: the MM extents' subtract,
multiply and adds)."""

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


@pytest.mark.parametrize("within", [None, END_STAGES], ids=["uncut", "cut"])
@pytest.mark.parametrize(("name", "ispec", "fn", "args"), FORMULAS, ids=[f[0] for f in FORMULAS])
def test_pipelined_formula(name, ispec, fn, args, within):
    m = Module()
    en = Signal(init=1)
    inputs = {f.name: Signal(f.width, name=f.name) for f in ispec.fields}
    pipe = formula.Pipeline(m, en)
    out = formula.evaluate(pipe, fn, {k: pipe.input(v) for k, v in inputs.items()}, *args, within=within)
    stages = formula.depth(fn, list(inputs), *args, within=within)
    assert (out.stage or 0) == stages
    assert within is None or stages <= within
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


def test_the_runs_of_adds_are_cut_as_finely_as_the_stages_allow():
    """LD's src end, src + select(fmt, (len + 3) // 4, len): three levels (an add, a multiplexer,
    an add; the divide is a shift) in one stage uncut, one level a stage cut to three stages. MM's
    B end has a multiply: subtract | multiply operands | product, then add K, multiplexer, add B
    in the third stage; a budget of two levels would need a fourth, so its budget is three."""
    from hw import checker

    assert checker.END_STAGES == END_STAGES
    ld, mm = spec.BY_NAME["LD"], spec.BY_NAME["MM"]
    ld_src = lambda a, f: f["src"] + ld.regions[0].formula(a, f)  # noqa: E731
    pipe = formula.Pipeline(None)
    ld_fields = {name: pipe.input(None) for name in ld.field_names}
    assert formula.depth(ld_src, list(ld.field_names)) == 1
    assert formula.fit(ld_src, ld_fields, END_STAGES) == 1
    assert formula.depth(ld_src, list(ld.field_names), within=END_STAGES) == 3
    assert formula.depth(ld_src, list(ld.field_names), within=2) == 2   # a budget of two
    assert formula.fit(ld_src, ld_fields, 2) == 2
    mm_b = lambda a, f: f["B"] + mm.regions[1].formula(a, f)  # noqa: E731
    mm_fields = {name: pipe.input(None) for name in mm.field_names}
    assert formula.fit(mm_b, mm_fields, END_STAGES) == 3
    assert formula.fit(mm_b, mm_fields, END_STAGES + 1) == 2
    with pytest.raises(ValueError, match="takes 3 stages, more than the 2"):
        formula.depth(mm_b, list(mm.field_names), within=2)


def test_a_maximum_counts_two_levels_and_a_constant_factor_its_adds():
    pipe = formula.Pipeline(None)
    x, y = pipe.input(None), pipe.input(None)
    pipe.budget = 2
    assert (formula.PIPELINED.max(x, y) + 1).stage == 1     # 2 levels, then the add is cut
    assert (x * 3).levels == 1 and (x * 7).levels == 2 and (x * 4).levels == 0
    assert ((x * 7) + y).stage == 1


def test_rejects_moving_back_and_dividing_by_a_term():
    pipe = formula.Pipeline(None)
    a = pipe.input(None, stage=2)
    with pytest.raises(ValueError, match="from stage 2 back to stage 1"):
        a.at(1)
    with pytest.raises(TypeError, match="divides by constants only"):
        a // a
    with pytest.raises(ValueError, match="powers of two only"):
        a // 3
