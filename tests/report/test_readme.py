"""README's pictures are current: each PNG's digest is the one the code gives today."""

from report.readme import FIGURES, ROOT, digest, example_a, stale, stored_digest


def test_readme_pictures_are_current():
    assert stale() == [], "README's pictures are stale: run `make plots` and commit docs/img/"


def test_readme_names_each_picture():
    readme = (ROOT / "README.md").read_text()
    for name in FIGURES:
        assert f"]({name})" in readme, name


def test_a_changed_program_changes_the_digest():
    program = example_a()
    name, plot = next(iter(FIGURES.items()))
    before = digest(program, plot)
    program.code.pop(0)
    assert digest(program, plot) != before == stored_digest(ROOT / name)
