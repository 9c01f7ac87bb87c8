"""compiler/testing/mutants.py: every deliberate bug is caught; the equivalent one is not."""

from compiler.testing import mutants


def test_every_anchor_occurs_exactly_once():
    assert mutants.check_anchors(mutants.MUTANTS + mutants.EQUIVALENT) == []
    assert len(mutants.MUTANTS) == 27


def test_a_bad_anchor_is_reported():
    ghost = mutants.Mutant("ghost", "emit.py", "this text is not in the file", "")
    expected = f"ghost: the anchor {ghost.anchor!r} occurs 0 times in emit.py"
    assert mutants.check_anchors((ghost,)) == [expected]


def test_the_mutation_check_catches_27_of_27(capsys):
    assert mutants.main(["--jobs", "2"]) == 0
    out = capsys.readouterr().out
    assert "compiler: 27 of 27 broken compilers caught" in out
    assert "not caught, as expected" in out
