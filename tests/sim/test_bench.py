"""sim/bench.py: its programs are legal and long, and the report runs."""

from __future__ import annotations

import itertools

import pytest

from sim import bench, spec
from sim.machine import Machine
from sim.spec import DEFAULT


@pytest.mark.parametrize("kind", bench.KINDS)
def test_random_programs_of_one_kind_are_legal(kind):
    params = DEFAULT if spec.built(spec.BY_NAME[kind], DEFAULT) else spec.Params(OVERLAP=2)
    program = bench.random_program(200, [kind], seed=5, params=params)
    assert program[-1].op == "HALT"
    assert sum(ins.op == kind for ins in program) == 200
    # a GATHER's row number is written by an AMAX before it (but for a first instruction)
    helpers = [ins for ins in program[:-1] if ins.op != kind]
    assert len(program) == 201 + len(helpers)
    if kind == "GATHER":
        assert {ins.op for ins in helpers} == {"AMAX"}
        pairs = [(a, g) for a, g in itertools.pairwise(program) if a.op == "AMAX"]
        assert pairs and all(a.dst == g.idx and a.len <= g.rows for a, g in pairs)
    else:
        assert helpers == []
    for ins in program:
        assert spec.check(ins.spec, ins.fields, params)[0] is spec.ErrorCode.NONE
    assert Machine(params).run(program, bench.random_image(params)).steps == len(program)


def test_mix_holds_every_kind_and_is_reproducible():
    program = bench.random_program(400, seed=9, params=DEFAULT)
    assert {ins.op for ins in program} == {*bench.KINDS, "HALT"} - {"MMRQ"}   # MMRQ: OVERLAP = 2 only
    decoupled = spec.Params(OVERLAP=2)
    assert {ins.op for ins in bench.random_program(400, seed=9, params=decoupled)} == {*bench.KINDS, "HALT"}
    assert program == bench.random_program(400, seed=9, params=DEFAULT)
    with pytest.raises(ValueError, match="unknown instruction kind 'NOP'"):
        bench.random_program(1, ["NOP"], params=DEFAULT)


def test_bench_reports(capsys):
    figures = bench.bench(DEFAULT, n=20, reps=1)
    assert [f.name for f in figures] == [*bench.machine_kinds(DEFAULT), "mix", "mix, words"]
    # 20 instructions and HALT (and an AMAX before every GATHER but a first)
    assert all(f.instructions >= 21 and f.cycles > 0 and f.seconds > 0 for f in figures)
    assert all(f.instructions == 21 for f in figures if f.name not in ("GATHER", "mix", "mix, words"))
    assert bench.main(["--n", "10", "--reps", "1"]) == 0
    out = capsys.readouterr().out
    assert "instr/s" in out and "sim cycles/s" in out and "UNPACK" in out
    with pytest.raises(SystemExit):
        bench.main(["--n", "5000"])


@pytest.mark.parametrize(("args", "refused"), [
    (["--reps", "0"], "--reps must be at least 1 (the best of that many runs counts), got 0"),
    (["--reps", "-2"], "--reps must be at least 1 (the best of that many runs counts), got -2"),
    (["--seed", "-3"], "--seed must be 0 or more (numpy's generators take no negative seed), got -3"),
    (["--n", "0"], "--n must be 1..4095"),
])
def test_bad_flags_are_refused_before_running(args, refused, capsys):
    with pytest.raises(SystemExit) as stop:
        bench.main(args)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m sim.bench") and f"error: {refused}" in err
