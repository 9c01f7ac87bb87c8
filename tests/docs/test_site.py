"""The documentation site's own machinery (docs/conf.py, docs/_ext): the API pages find every
module, the docstring reading keeps the project's plain text valid reStructuredText, the CLI
help is each command's own, and every page is in a table of contents. ``make docs`` (in CI)
builds the site with Sphinx's warnings as errors; these are the quick checks of its parts."""

from __future__ import annotations

import re
import sys

import pytest

from .quoted import ROOT

sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import apipages
import clihelp

SECTIONS = {"args", "parameters", "members", "returns", "raises"}


def test_the_api_pages_cover_every_package():
    pages = {p.stem for p in (ROOT / "docs" / "reference" / "api").glob("*.rst")}
    assert pages == {"sim", "compiler", "compiler-frontend", "compiler-testing", "hw", "flows", "cosim",
                     "viz", "report"}
    listed = []
    for page in sorted((ROOT / "docs" / "reference" / "api").glob("*.rst")):
        text = page.read_text()
        package = re.search(r"^\.\. api-modules:: (\S+)", text, re.M).group(1)
        exclude = re.search(r":exclude: (.+)", text)
        listed += apipages.modules_of(package, tuple(x.strip() for x in exclude.group(1).split(","))
                                      if exclude else ())
    assert len(listed) == len(set(listed)), "a module on two API pages"
    packages = ("sim", "compiler", "hw", "flows", "cosim", "viz", "report")
    every = {m for p in packages for m in apipages.modules_of(p)}
    assert set(listed) == every
    assert "compiler.ir" in every and "cosim.__main__" not in every and "flows.synth.cli" in every


def test_modules_of_leaves_out_main_modules_and_excluded_subpackages():
    modules = apipages.modules_of("compiler", ("compiler.testing",))
    assert modules[0] == "compiler" and "compiler.frontend.torch_fx" in modules
    assert not any(m.startswith("compiler.testing") for m in modules)
    assert "cosim.mutants_rtl" in apipages.modules_of("cosim")
    assert not any(m.endswith("__main__") for m in apipages.modules_of("cosim"))


@pytest.mark.parametrize(("before", "after"), [
    # a header of its own with a hanging block: a literal block, blank lines around it
    (["Members (host side, :func:`host_members`):", "    start In(1): go", "        on.", "Latency: 1."],
     ["Members (host side, :func:`host_members`)::", "", "    start In(1): go", "        on.", "",
      "Latency: 1."]),
    # napoleon's sections and what is inside them stay as they are
    (["Args:", "    params: the machine:", "        more", "Members:", "    a In(1): b"],
     ["Args:", "    params: the machine:", "        more", "Members:", "    a In(1): b"]),
    # |x| is an absolute value, not a substitution; inside a literal it stays
    (["the largest |value| and ``|x|``, a | b"], ["the largest \\|value\\| and ``|x|``, a | b"]),
    # a field, a directive, a header followed by a blank line: untouched
    ([":param x:", "    y", ".. note::", "    z", "Text:", "", "    quoted"],
     [":param x:", "    y", ".. note::", "    z", "Text:", "", "    quoted"]),
])
def test_plain_text_blocks(before, after):
    lines = list(before)
    apipages.plain_text_blocks(lines, SECTIONS)
    assert lines == after


def test_the_cli_help_is_the_commands_own():
    texts = dict(clihelp.help_texts("python -m cosim"))
    assert texts["python -m cosim"].startswith("usage: python -m cosim [-h]")
    assert "--mutant" in texts["python -m cosim seeds"] and "--resume" in texts["python -m cosim stress"]
    assert clihelp.parser_of("python examples/digits.py").prog == "digits.py"


@pytest.mark.parametrize(("command", "message"), [
    ("python -m sim.nowhere", "python -m sim.nowhere: no such module"),
    ("python examples/nowhere.py", "python examples/nowhere.py: no such script"),
    ("make cosim", "'make cosim': not a python command"),
    ("python -c 1", "neither 'python -m MODULE' nor 'python SCRIPT.py'"),
])
def test_a_command_that_is_not_one_is_named(command, message):
    with pytest.raises(clihelp.CommandError, match=re.escape(message)):
        clihelp.parser_of(command)


def test_every_page_is_in_a_table_of_contents():
    """Sphinx warns (and ``make docs`` fails) on a page outside every toctree; the same here,
    quickly, for the Markdown pages."""
    docs = ROOT / "docs"
    listed = set()
    for page in docs.rglob("*.md"):
        for block in re.findall(r"^```\{toctree\}\n(.*?)^```", page.read_text(), re.M | re.S):
            for entry in block.splitlines():
                if entry.strip() and not entry.startswith(":"):
                    listed.add(str((page.parent / entry.strip()).relative_to(docs)))
    pages = {str(p.relative_to(docs).with_suffix("")) for p in docs.rglob("*.md")} | {
        str(p.relative_to(docs).with_suffix("")) for p in docs.rglob("*.rst")}
    assert pages - listed == {"index"}
