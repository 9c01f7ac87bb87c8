"""compiler/testing/mutants.py: every deliberate bug is caught; the equivalent one is not."""

import dataclasses

import pytest

from compiler import pipeline
from compiler.lowering import matmul
from compiler.ops import OPS, Op
from compiler.testing import mutants
from compiler.testing.battery import check_add_relu
from compiler.testing.mutants import Entry, Function, Mutant, PassSeam


def _groups() -> list[tuple]:
    """The module's groups of broken compilers (``*_MUTANTS`` but MUTANTS itself), by name."""
    return [getattr(mutants, name) for name in sorted(vars(mutants))
            if name.endswith("_MUTANTS") and name != "MUTANTS"]


def test_every_seam_exists_and_every_group_of_broken_compilers_is_run():
    """MUTANTS holds every group once (so a new mutant is one entry in a group, and a new group
    is caught here until it joins MUTANTS); the counts are not quoted, so neither goes stale."""
    assert mutants.missing_seams() == []
    assert len(mutants.EQUIVALENT) == 1
    assert sorted(map(id, mutants.MUTANTS)) == sorted(id(m) for group in _groups() for m in group)
    assert len(set(map(id, mutants.MUTANTS))) == len(mutants.MUTANTS) > 0


def test_a_missing_seam_is_reported_by_mutant_and_seam():
    ghosts = (Mutant("ghost function", Function("compiler.lowering.matmul.no_such_helper"), lambda f: f),
              Mutant("ghost module", Function("compiler.nowhere.helper"), lambda f: f),
              Mutant("ghost field", Entry(Op.MATMUL, "no_such_field"), lambda f: f),
              Mutant("ghost pass", PassSeam("no_such_pass"), lambda p: p))
    assert mutants.missing_seams(ghosts) == [
        "ghost function: compiler.lowering.matmul.no_such_helper does not exist",
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
    tile = matmul.Tile(4, 0, 1, 4)
    broken = next(m for m in mutants.MUTANTS if m.label.startswith("tiling: MM never gets tb=1"))
    with mutants.applied(broken):
        assert matmul.mm_fields(tile, 100, 200, 300, 8, 6, True)["tb"] == 0
    assert matmul.mm_fields(tile, 100, 200, 300, 8, 6, True)["tb"] == 1


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
    assert len(lines) == 1 + len(mutants.MUTANTS) + len(mutants.EQUIVALENT)
    assert lines[1].split()[:2] == ["1", "lowering.matmul.tiles"]
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
def test_the_mutation_check_catches_every_broken_compiler(capsys):
    assert mutants.main(["--jobs", "2"]) == 0
    out = capsys.readouterr().out
    n = len(mutants.MUTANTS)
    assert f"compiler: {n} of {n} broken compilers caught" in out
    assert "not caught, as expected" in out


@pytest.mark.slow
def test_the_packed_graphs_catch_each_packing_and_blocking_mutant():
    """The battery's packed graphs (two streamed, two wide and the shared 64 x 30 weight) pass
    with the compiler as it is and report a problem (or crash) under each mutant of packing
    and of the blocking of issue 14's larger layers."""
    from compiler.testing.battery import check_packed

    assert check_packed(range(2))[0] == []
    for mutant in mutants.PACKED_MUTANTS + mutants.BLOCKING_MUTANTS:
        with mutants.applied(mutant):
            try:
                problems = check_packed(range(2))[0]
            except Exception as crash:   # the mutation check counts a crash as caught
                problems = [repr(crash)]
        assert problems, mutant.label


def test_the_convolutional_graphs_catch_each_convolution_mutant():
    """The battery's convolutional graphs (issue 25) pass with the compiler as it is and report a
    problem (or crash) under each mutant of padding, stride, per-channel scales, depthwise
    blocks and activations in external memory."""
    from compiler.testing.battery import check_conv

    assert check_conv(range(6))[0] == []
    for mutant in mutants.CONV_MUTANTS:
        with mutants.applied(mutant):
            try:
                problems = check_conv(range(6), stop_early=True)[0]
            except Exception as crash:   # the mutation check counts a crash as caught
                problems = [repr(crash)]
        assert problems, mutant.label


def test_the_gpt_steps_catch_each_transformer_mutant():
    """The battery's tiny GPT steps (embeddings, LayerNorms, heads over a cache, causal softmaxes)
    pass with the compiler as it is and report a problem (or crash) under each mutant of
    LayerNorm, the embedding's GATHER and causal masking (issue 26)."""
    from compiler.testing.battery import check_transformer

    assert check_transformer() == []
    for mutant in mutants.TRANSFORMER_MUTANTS:
        with mutants.applied(mutant):
            try:
                problems = check_transformer()
            except Exception as crash:   # the mutation check counts a crash as caught
                problems = [repr(crash)]
        assert problems, mutant.label


def test_the_decoupled_graphs_catch_each_decoupled_mutant():
    """The battery's checks of the decoupled machine (OVERLAP = 2, issue 27) pass with the compiler
    as it is and report a problem (or crash) under each broken scheduler or blocking ranking for
    that machine's rule."""
    from compiler.testing.battery import check_decoupled

    assert check_decoupled(range(2)) == []
    for mutant in mutants.DECOUPLED_MUTANTS:
        with mutants.applied(mutant):
            try:
                problems = check_decoupled(range(2), stop_early=True)
            except Exception as crash:   # the mutation check counts a crash as caught
                problems = [repr(crash)]
        assert problems, mutant.label


def test_each_broken_function_takes_the_arguments_of_the_one_it_replaces():
    """A mutant whose replacement (or the lambda a _field wrapper calls) no longer accepts the
    arguments of the function it stands for crashes with a TypeError, which the mutation check
    counts as caught without having tested the bug it names (three did, after the functions
    gained an argument). Each must accept every positional argument of today's function."""
    import inspect

    stale = []
    for mutant in mutants.MUTANTS:
        if not isinstance(mutant.seam, mutants.Function) or not inspect.isfunction(mutant.seam.value()):
            continue
        original = mutant.seam.value()
        replacement = mutant.broken(original)
        positional = [p for p in inspect.signature(original).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        cells = [c.cell_contents for c in getattr(replacement, "__closure__", None) or ()]
        called = [replacement, *(c for c in cells if inspect.isfunction(c) and c.__name__ == "<lambda>")]
        for f in (f for f in called if inspect.isfunction(f)):
            try:
                inspect.signature(f).bind(*[None] * len(positional))
            except TypeError as e:
                stale.append(f"{mutant.label}: {e}")
    assert stale == []
