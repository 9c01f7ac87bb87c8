"""docs/add-an-instruction.md: its code excerpts are the source as it is (examples/add_an_instruction.py
pulls them by symbol), its recorded runs are there, and the excerpt machinery finds what it names
or says what it cannot find."""

from __future__ import annotations

import pytest

from tests.compiler.conftest import load_example

guide = load_example("add_an_instruction")
excerpts = load_example("_excerpts")
E = excerpts.Excerpt


def test_the_guides_excerpts_are_up_to_date(capsys):
    assert guide.main(["--check"]) == 0, capsys.readouterr().err


def test_every_recorded_block_holds_a_run():
    blocks = excerpts.blocks_in(guide.GUIDE.read_text())
    assert set(guide.RECORDS) <= set(blocks)
    for name in guide.RECORDS:
        assert blocks[name].strip(), f"block {name} was never recorded (--record {name})"
    assert "FAIL" in blocks["norelu-stress"] and "PASS" in blocks["norelu-seeds"]
    assert "FAIL" in blocks["bit-seeds"] and "FAIL" in blocks["bit-stress"]
    counted = blocks["steps-counted"].splitlines()
    assert [row.split(" | ")[0] for row in counted[2:8]] == [f"| {s}" for s, _ in guide.GUIDE_STEPS]
    assert counted[2].startswith("| spec | 3 |") and counted[2].endswith("| 6a53edf |")
    assert counted[5].startswith("| toolchain | 0 | 0 / 0 | none |")


@pytest.mark.parametrize("name", ["norelu-stress", "bit-stress", "stress-coverage"])
def test_the_stress_records_ran_todays_programs(name):
    """Issue 24, defect 6: the record said "FAIL: 4 of 40" after the programs had changed (8 of
    40). The digest is of exact things (random.Random and integers), so it is the same on every
    machine; a change to the stress programs makes it differ until the block is recorded again."""
    block = excerpts.blocks_in(guide.GUIDE.read_text())[name]
    assert f"(the {guide.STRESS_N} programs' digest: {guide.stress_digest()})" in block, \
        f"the stress programs changed since block {name} was recorded: " \
        f"examples/add_an_instruction.py --record {name}"


def test_readme_links_the_guide():
    readme = (excerpts.ROOT / "README.md").read_text()
    assert "(docs/add-an-instruction.md)" in readme


def test_a_stale_excerpt_is_named_and_write_repairs_it(tmp_path, capsys):
    page = tmp_path / "guide.md"
    page.write_text(guide.GUIDE.read_text().replace("def sat_add(", "def saturating_add(", 1))
    assert guide.main(["--check", "--guide", str(page)]) == 1
    assert "stale or missing blocks: reference;" in capsys.readouterr().err
    assert guide.main(["--write", "--guide", str(page)]) == 0
    assert page.read_text() == guide.GUIDE.read_text()


def test_excerpts_by_symbol_item_and_lines():
    spec_entry = E("sim/spec.py", "INSTRUCTIONS", item='"VADD"').text()
    assert spec_entry.startswith("InstrSpec(\n") and 'Field("relu", 1' in spec_entry
    assert '"AMAX"' not in spec_entry
    method = E("hw/vector.py", "VectorUnit._vadd", lines=r"relu_total =").text().splitlines()
    assert method[0].startswith("def _vadd(self") and method[1].strip() == "..."
    assert method[2].strip().startswith("relu_total = Mux(")


@pytest.mark.parametrize(("excerpt", "message"), [
    (E("sim/nowhere.py", "x"), "sim/nowhere.py: no such file"),
    (E("sim/arith.py", "sat_sub"), "sim/arith.py: no symbol 'sat_sub'"),
    (E("hw/vector.py", "VectorUnit._vsub"),
     "hw/vector.py: no symbol 'VectorUnit._vsub' (looking for '_vsub')"),
    (E("sim/spec.py", "INSTRUCTIONS", item='"VSUB"'),
     "sim/spec.py: nothing in 'INSTRUCTIONS' holds '\"VSUB\"'"),
    (E("sim/arith.py", "sat_add", lines="vsub"),
     "sim/arith.py: sat_add (lines matching `vsub`): no line matches"),
])
def test_an_excerpt_that_is_gone_is_an_error_naming_it(excerpt, message):
    with pytest.raises(excerpts.ExcerptError) as raised:
        excerpt.text()
    assert str(raised.value) == message


def test_a_record_marks_each_cut_of_its_output():
    out = ["mutant m", "icarus FAIL", "    seed 1: x", "    seed 2: y", "", "table", "", "timing"]
    assert guide.shown(out, {0, 1, 2}) == ["mutant m", "icarus FAIL", "    seed 1: x", "..."]
    assert guide.shown(out, {1, 5}) == ["...", "icarus FAIL", "...", "table", "..."]
    assert guide.shown(["a", "", "b"], {0, 2}) == ["a", "b"]        # blank lines only: no mark
