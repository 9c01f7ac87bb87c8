"""compiler/testing/mutants.py: every deliberate bug is caught; the equivalent one is not."""

import dataclasses

import pytest

from compiler import lowering, pipeline
from compiler.ops import OPS, Op
from compiler.testing import mutants
from compiler.testing.battery import check_add_relu
from compiler.testing.mutants import Entry, Function, Mutant, PassSeam


def test_every_seam_exists_and_there_are_36_broken_compilers():
    assert mutants.missing_seams() == []
    assert len(mutants.MUTANTS) == 36 and len(mutants.EQUIVALENT) == 1
    assert len(mutants.SEED_MUTANTS) == 26 and len(mutants.STREAMING_MUTANTS) == 5   # K-limit one gone
    assert len(mutants.WIDE_MUTANTS) == 4 and len(mutants.ADD_RELU_MUTANTS) == 1
    assert mutants.MUTANTS == (mutants.SEED_MUTANTS + mutants.STREAMING_MUTANTS + mutants.WIDE_MUTANTS
                               + mutants.ADD_RELU_MUTANTS)


def test_a_missing_seam_is_reported_by_mutant_and_seam():
    ghosts = (Mutant("ghost function", Function("compiler.lowering.no_such_helper"), lambda f: f),
              Mutant("ghost module", Function("compiler.nowhere.helper"), lambda f: f),
              Mutant("ghost field", Entry(Op.MATMUL, "no_such_field"), lambda f: f),
              Mutant("ghost pass", PassSeam("no_such_pass"), lambda p: p))
    assert mutants.missing_seams(ghosts) == [
        "ghost function: compiler.lowering.no_such_helper does not exist",
        "ghost module: compiler.nowhere.helper does not exist",
        "ghost field: OPS[matmul] has no field 'no_such_field'",
        "ghost pass: no pass 'no_such_pass'"]


def test_each_substitution_changes_its_seam_and_is_undone():
    table, passes = dict(OPS), pipeline.PASSES
    for mutant in mutants.ALL:
        original = mutant.seam.value()
        with mutants.applied(mutant):
            assert mutant.seam.value() is not original, mutant.label
        assert mutant.seam.value() is original, mutant.label
        assert dict(OPS) == table and pipeline.PASSES is passes
    tile = lowering.Tile(4, 0, 1, 4)
    broken = next(m for m in mutants.MUTANTS if m.label.startswith("tiling: MM never gets tb=1"))
    with mutants.applied(broken):
        assert lowering.mm_fields(tile, 100, 200, 300, 8, 6, True)["tb"] == 0
    assert lowering.mm_fields(tile, 100, 200, 300, 8, 6, True)["tb"] == 1


def test_an_entry_substitution_replaces_the_table_entry_only_while_applied():
    mutant = next(m for m in mutants.MUTANTS if m.seam == Entry(Op.SOFTMAX, "scale"))
    original = OPS[Op.SOFTMAX]
    with mutants.applied(mutant):
        assert OPS[Op.SOFTMAX].scale.pins[0].scale == 1 / 8
        assert dataclasses.replace(OPS[Op.SOFTMAX], scale=original.scale) == original
    assert OPS[Op.SOFTMAX] is original


def test_the_list_names_every_mutant_and_its_seam(capsys):
    assert mutants.main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + len(mutants.ALL) == 1 + 37
    assert lines[1].split()[:2] == ["1", "lowering.tiles"]
    assert "pass lifetimes" in lines[23] and lines[-1].endswith("(equivalent)")


def test_only_takes_numbers_from_the_list():
    with pytest.raises(SystemExit):
        mutants.main(["--only", str(len(mutants.ALL) + 1)])


@pytest.mark.parametrize("jobs", ["0", "-1"])
def test_jobs_below_one_are_refused_before_any_work(jobs, capsys, monkeypatch):
    monkeypatch.setattr(mutants, "_run", lambda *a: pytest.fail("ran before refusing"))
    with pytest.raises(SystemExit) as stop:
        mutants.main(["--jobs", jobs])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m compiler.testing.mutants")
    assert f"error: --jobs must be at least 1 (mutants run in parallel), got {jobs}" in err


def test_the_add_relu_mutant_drops_only_the_vadds_relu_and_the_battery_catches_it():
    """The VADD of relu(add(a, b)) gets relu=0 (the RQ of relu(matmul) keeps its flag); the
    add-relu graphs see the unclipped sum against the interpreter's relu of it."""
    (mutant,) = mutants.ADD_RELU_MUTANTS
    assert check_add_relu(range(4))[0] == []
    with mutants.applied(mutant):
        problems, _ = check_add_relu(range(4))
    assert problems and all(p.startswith("add-relu seed ") for p in problems)
    assert any("(b) output out differs from the interpreter" in p for p in problems)


@pytest.mark.slow
def test_the_mutation_check_catches_36_of_36(capsys):
    assert mutants.main(["--jobs", "2"]) == 0
    out = capsys.readouterr().out
    assert "compiler: 36 of 36 broken compilers caught" in out
    assert "not caught, as expected" in out
