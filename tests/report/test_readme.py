"""README's pictures are current: each PNG's digest is the one the code gives today."""

from report.readme import FIGURES, ROOT, digest, example_a, stale, stored_digest


def test_readme_pictures_are_current():
    assert stale() == [], "README's pictures are stale: run `make plots` and commit docs/img/"


def test_the_pages_name_each_picture():
    """The README shows the timeline; the guide's page on looking at a program shows both."""
    readme = (ROOT / "README.md").read_text()
    guide = (ROOT / "docs" / "guide" / "inspect.md").read_text()
    assert "](docs/img/example-a-timeline.png)" in readme
    for name in FIGURES:
        assert f"](../{name.removeprefix('docs/')})" in guide, name


def test_a_changed_program_changes_the_digest():
    program = example_a()
    name, plot = next(iter(FIGURES.items()))
    before = digest(program, plot)
    program.code.pop(0)
    assert digest(program, plot) != before == stored_digest(ROOT / name)
