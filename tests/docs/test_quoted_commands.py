"""Every command the README and the documentation site quote still works as quoted.

Covered: each ``make`` command's targets are targets of the Makefile and its ``NAME=value``
variables are variables the Makefile reads; each ``python -m MODULE`` module can be imported
and each ``python SCRIPT.py`` exists; a command of the CLI reference (docs/reference/cli.md)
is parsed by its own argparse parser, taken from the command as it runs
(docs/_ext/clihelp.py): its sub-command must exist, every ``--flag`` must be one of its
options, and a command without a placeholder (``...``, ``<dump>``, ``NAME``) must parse as a
whole (choices, types, counts of values). Not covered: whether the command then succeeds
(running them is the other tests' and CI's job), the values of ``make`` variables, and the
arguments of modules that are not the project's (``python -m pytest``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import sys
from functools import cache

import pytest

from .quoted import ROOT, Command, commands, is_placeholder, make_parts

sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import clihelp

MAKEFILE = (ROOT / "Makefile").read_text()
PROJECT = ("sim", "compiler", "hw", "flows", "cosim", "viz", "report")
CLI_PAGE = ROOT / "docs" / "reference" / "cli.md"


def makefile_targets() -> set[str]:
    return set(re.findall(r"^([a-z][a-z0-9-]*):", MAKEFILE, re.M))


def makefile_reads(name: str) -> bool:
    return re.search(rf"\$\({name}\)|\$\((?:or|if|filter-out|strip) [^)]*\b{name}\b|^{name}\s*\??=",
                     MAKEFILE, re.M) is not None


def cli_reference() -> list[str]:
    """The commands of the CLI reference, in its order."""
    return re.findall(r"^```\{cli-help\} (.+)$", CLI_PAGE.read_text(), re.M)


@cache
def parser_of(command: str):
    return clihelp.parser_of(command)


def _target(command: Command) -> str:
    words = command.words
    return f"python -m {words[1]}" if words[0] == "-m" else f"python {words[0]}"


MAKE = commands("make")
PYTHON = commands("python")
PAGES = sorted({c.page for c in MAKE + PYTHON})


def test_the_pages_quote_commands():
    """The scan finds what it is meant to: the README's two commands among them."""
    assert {"make cosim SEEDS=100-111", "make test"} <= {c.text for c in MAKE if c.page == "README.md"}
    assert len(PYTHON) > 30 and any(c.text.startswith(".venv/bin/python examples/") for c in PYTHON)


def make_problem(command: Command) -> str | None:
    """What is wrong with a quoted make command: a target or a variable the Makefile lacks."""
    targets, variables = make_parts(command)
    missing = [t for t in targets if t not in makefile_targets()]
    if missing:
        return f"{command}: no such make target: {', '.join(missing)}"
    unread = [v for v in variables if not makefile_reads(v)]
    if unread:
        return f"{command}: the Makefile reads no variable {', '.join(unread)}"
    return None


def python_problem(command: Command) -> str | None:
    """What is wrong with a quoted python command: no such module or script, no such
    sub-command or option, or (without placeholders) arguments its parser refuses."""
    target = _target(command)
    kind, name = clihelp.target_of(target)
    if kind == "script" and not (ROOT / name).is_file():
        return f"{command}: no such script {name}"
    if kind == "module" and importlib.util.find_spec(name) is None:
        return f"{command}: no module {name}"
    args = list(command.words[2:] if kind == "module" else command.words[1:])
    if target not in cli_reference():
        if name.split(".")[0] in PROJECT and args:
            return f"{command}: {target} is not in docs/reference/cli.md, so its arguments cannot be checked"
        return None
    parser = parser_of(target)
    subs = clihelp.subcommands(parser)
    known = clihelp.options(parser).union(*map(clihelp.options, subs.values()))  # `cosim ... --mutant`
    if subs and args and not args[0].startswith("-") and not is_placeholder(args[0]):
        if args[0] not in subs:
            return f"{command}: {target} has no sub-command {args[0]} ({', '.join(subs)})"
        known = clihelp.options(parser) | clihelp.options(subs[args[0]])
    unknown = {word.split("=")[0] for word in args if word.startswith("--")} - known
    if unknown:
        return f"{command}: {target} has no option {', '.join(sorted(unknown))}"
    if not args or any(is_placeholder(word) for word in args):
        return None                    # the command named, or a form with blanks to fill in
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            parser.parse_args(args)
        except SystemExit as e:
            if e.code:
                return f"{command}: {err.getvalue().strip().splitlines()[-1]}"
    return None


@pytest.mark.parametrize("page", PAGES)
def test_every_quoted_command_exists_and_parses(page):
    problems = [make_problem(c) for c in MAKE if c.page == page]
    problems += [python_problem(c) for c in PYTHON if c.page == page]
    assert [p for p in problems if p] == []


def _argparse_commands() -> set[str]:
    """The project's commands that parse their arguments with argparse: each module with a
    ``__main__`` guard whose text uses argparse, each ``__main__.py`` whose package does."""
    found = set()
    for folder in (*PROJECT, "examples"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text()
            if path.name == "__main__.py":
                uses = any("ArgumentParser" in p.read_text() for p in path.parent.glob("*.py"))
                module = ".".join(path.parent.relative_to(ROOT).parts)
            else:
                uses = "ArgumentParser" in text and '__name__ == "__main__"' in text
                module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            if uses:
                script = folder == "examples"
                found.add(f"python {path.relative_to(ROOT)}" if script else f"python -m {module}")
    return found


def test_the_cli_reference_lists_every_command():
    listed = cli_reference()
    assert len(listed) == len(set(listed)), "a command listed twice in docs/reference/cli.md"
    actual = _argparse_commands()
    missing, extra = sorted(actual - set(listed)), sorted(set(listed) - actual)
    assert not missing and not extra, f"docs/reference/cli.md lacks {missing}, lists {extra} besides"


def test_the_make_reference_lists_every_target():
    """Every target that ``make help`` shows has a row in docs/reference/make.md."""
    helped = set(re.findall(r"^([a-z][a-z0-9-]*):.*## ", MAKEFILE, re.M))
    page = (ROOT / "docs" / "reference" / "make.md").read_text()
    rows = set(re.findall(r"`make ([a-z][a-z0-9-]*)", "\n".join(
        line.split("|")[1] for line in page.splitlines() if line.startswith("| `make"))))
    assert helped - rows == set(), f"targets without a row in docs/reference/make.md: {sorted(helped - rows)}"


def test_a_wrong_flag_is_named():
    bad = Command("page.md", "python -m cosim seeds 100-111 --simulator icarus",
                  ("-m", "cosim", "seeds", "100-111", "--simulator", "icarus"))
    assert python_problem(bad) == ("page.md: `python -m cosim seeds 100-111 --simulator icarus`: "
                                   "python -m cosim has no option --simulator")
    bad = Command("page.md", "python -m cosim seeds 100-111 --mutant rq-rounds",
                  ("-m", "cosim", "seeds", "100-111", "--mutant", "rq-rounds"))
    assert "argument --mutant: invalid choice: 'rq-rounds'" in python_problem(bad)
    bad = Command("page.md", "python -m cosim seed 100", ("-m", "cosim", "seed", "100"))
    assert "python -m cosim has no sub-command seed (seeds, stress," in python_problem(bad)
    bad = Command("page.md", "python examples/nowhere.py", ("examples/nowhere.py",))
    assert python_problem(bad) == "page.md: `python examples/nowhere.py`: no such script examples/nowhere.py"


def test_a_missing_target_or_variable_is_named():
    bad = Command("page.md", "make cosmis SEEDS=1", ("cosmis", "SEEDS=1"))
    assert make_problem(bad) == "page.md: `make cosmis SEEDS=1`: no such make target: cosmis"
    bad = Command("page.md", "make cosim SEEEDS=1", ("cosim", "SEEEDS=1"))
    assert make_problem(bad) == "page.md: `make cosim SEEEDS=1`: the Makefile reads no variable SEEEDS"
