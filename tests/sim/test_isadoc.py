"""sim/isadoc.py: docs/isa.md is the page the spec generates, and the generator's pieces."""

from __future__ import annotations

import sys

import pytest

from sim import isadoc, spec
from sim.isadoc import DOC_PATH, TEXT, Sym, attribute_docs, docstring_section, latency_text, main, render
from sim.spec import DEFAULT, Params
from tests.readonly import read_only, run_unprivileged


def test_docs_isa_md_is_up_to_date():
    problem = isadoc.stale_diff(DEFAULT, DOC_PATH)
    assert not problem, f"{problem}\n(docs/isa.md is generated: run `make docs`)"


def test_check_and_write_through_the_command_line(tmp_path, capsys):
    page = tmp_path / "isa.md"
    assert main(["--check", "--path", str(page)]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert main(["--write", "--path", str(page)]) == 0
    assert page.read_text() == render(DEFAULT)
    assert main(["--check", "--path", str(page)]) == 0
    page.write_text(render(DEFAULT).replace("| `T` | 4 |", "| `T` | 5 |"))
    assert main(["--check", "--path", str(page)]) == 1
    err = capsys.readouterr().err
    assert "is stale" in err and "python -m sim.isadoc --write" in err
    assert "-| `T` | 5 |" in err and "+| `T` | 4 |" in err


def test_a_path_it_cannot_write_is_one_line(tmp_path, capsys):
    """--path a folder, under a file, or in a read-only folder: one line naming it, no traceback."""
    with pytest.raises(SystemExit) as stop:
        main(["--write", "--path", str(tmp_path)])
    assert stop.value.code == 2
    assert f"error: --path {tmp_path} is a folder: give the page's file, e.g. {tmp_path / 'isa.md'}" \
        in capsys.readouterr().err
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    page = a_file / "isa.md"
    assert main(["--write", "--path", str(page)]) == 1
    assert capsys.readouterr().err == f"error: cannot write --path {page}: File exists ({a_file})\n"
    page = tmp_path / "locked" / "isa.md"
    page.parent.mkdir()
    with read_only(page.parent):
        done = run_unprivileged([sys.executable, "-m", "sim.isadoc", "--write", "--path", str(page)],
                                cwd=DOC_PATH.parents[1])
    assert done.returncode == 1
    assert done.stderr == f"error: cannot write --path {page}: Permission denied ({page})\n"
    assert not page.exists()


def test_help_and_printing(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    assert "--check" in capsys.readouterr().out
    assert main([]) == 0
    assert capsys.readouterr().out == render(DEFAULT)
    with pytest.raises(SystemExit):
        main(["--write", "--check"])


def test_page_covers_the_spec():
    page = render(DEFAULT)
    for s in spec.INSTRUCTIONS:
        assert f"### {s.name}\n" in page
        assert latency_text(s) in page and s.effect in page
        for f in s.fields:
            assert f.doc in page
    for name, value in spec.TIMING_CONSTANTS.items():
        assert f"| `{name}` | {value} |" in page
    for code in spec.ErrorCode:
        assert f"| {int(code)} | `{code.name}` | {spec.ERROR_TEXT[code]} |" in page
    for counter in spec.COUNTERS:
        assert f"| `{counter}` |" in page
    for name in ("T", "K_MAX", "SPAD_WORDS", "EXT_WORDS", "IMEM_WORDS", "SM_MAX_LEN"):
        assert f"| `{name}` | {getattr(spec.DEFAULT, name)} |" in page


def test_page_layout_rows_by_hand():
    page = render(DEFAULT)
    # MM: K is 8 bits from bit 60, so bits 31..28 of word 1 and 3..0 of word 2
    assert "| `K` | 60 | 8 | w1[31:28] w2[3:0] | 1 .. K_MAX (= 64) | inner dimension |" in page
    assert "| `tb` | 76 | 1 | w2[12] | 0 .. 1 |" in page
    assert "| `len` | 36 | 16 | w1[19:4] | 1 .. SM_MAX_LEN (= 64) | row length |" in page
    # the tb-dependent span of B, and the strided A span
    assert "`((N - 1)*ldb + K if tb = 1, else (K - 1)*ldb + N)`" in page
    assert "| scratchpad S | reads | `A` | `(M - 1)*lda + K` | `A .. A + (M - 1)*lda + K - 1` |" in page
    assert "| scratchpad S | writes | `dst` | `8*len` |" in page
    assert f"`ceil(len/LANES) + LD_OVERHEAD` = `ceil(len/4) + {spec.LD_OVERHEAD}`" in page
    assert "`ceil(8*len/LANES) + UNPACK_OVERHEAD` = `ceil(8*len/4) + 4`" in page


def test_page_of_another_machine_gives_its_values():
    page = render(Params(T=8, LANES=8))
    assert "Values below are for the machine T=8 LANES=8" in page
    assert "`ceil(len/LANES) + LD_OVERHEAD` = `ceil(len/8) + 2`" in page
    assert "| `N` | 68 | 8 | w2[11:4] | 1 .. T (= 8) |" in page
    assert render(Params(T=8, LANES=8)) != render(DEFAULT)


def test_sym_parenthesises_only_where_needed():
    a, b, c = Sym("a"), Sym("b"), Sym("c")
    assert str((a - 1) * b + c) == "(a - 1)*b + c"
    assert str(a - (b - c)) == "a - (b - c)"
    assert str(a - b + c) == "a - b + c"
    assert str(2 * (a + b)) == "2*(a + b)"
    assert str((a * b) // (c * 2)) == "a*b//(c*2)"
    assert str(1 + a) == "1 + a"


def test_attribute_docs_and_docstring_sections():
    source = '''
X = 1
"""The x."""
Y = X * 2
class C:
    A = 3
    """The a,
    on two lines."""
'''
    assert attribute_docs(source) == {"X": "The x.", "Y": "(= `X * 2`)", "C.A": "The a, on two lines."}
    doc = """Thing.

    Attributes:
        a: first,
            continued.
        lo, hi: the range.

    Raises:
        ValueError: no.
    """
    assert docstring_section(doc, "Attributes") == {"a": "first, continued.", "lo": "the range.",
                                                    "hi": "the range."}
    assert docstring_section(doc, "Returns") == {}


def test_check_rules_cover_every_error_code():
    assert set(isadoc.CHECK_RULES) == {c.name for c in spec.CHECK_CODES}
    assert set(isadoc.DATA_RULES) == {c.name for c in spec.DATA_ERRORS}
    assert set(isadoc.MACHINE_RULES) == {c.name for c in spec.MACHINE_FAULTS}


def test_text_arithmetic_by_hand():
    t, a, b = TEXT, Sym("a"), Sym("b")
    assert str(t.max(a, b + 1)) == "max(a, b + 1)"
    assert str(t.select(Sym("tb"), a - 1, 0)) == "tb*(a - 1)"      # a 1-bit condition times the value
    assert str(t.select(Sym("tb"), a, b)) == "(a if tb = 1, else b)"
    assert str(3 * t.ceil_div(a, 4) + t.const("SM_OVERHEAD")) == "3*ceil(a/4) + SM_OVERHEAD"
    assert latency_text(spec.BY_NAME["MM"]) == "K + M + tb*(N - 1) + MM_OVERHEAD + acc*MM_ACC_CYCLES"
    assert latency_text(spec.BY_NAME["LD"]) == "ceil(len/LANES) + LD_OVERHEAD"
    assert latency_text(spec.BY_NAME["UNPACK"]) == "ceil(8*len/LANES) + UNPACK_OVERHEAD"
    assert latency_text(spec.BY_NAME["HALT"]) == "STOP_CYCLES"
