"""The command-line reference, from each command's own argparse parser.

``parser_of("python -m cosim")`` runs the command's module as ``__main__`` (``runpy``, in this
process) with :meth:`argparse.ArgumentParser.parse_args` replaced by a stop that hands back the
parser it was called on, so nothing past the parsing runs: the parser is the one the command
builds, help texts, choices and defaults included. The ``cli-help`` directive renders that
parser's ``--help`` (and each sub-command's) into the page at build time, so the reference
cannot drift from the code; ``tests/docs/test_quoted_commands.py`` uses the same parsers to
check every command the README and the site quote.

Only commands that parse their arguments with argparse may be given: a module that never calls
``parse_args`` would run to its end.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import runpy
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
HELP_COLUMNS = 100
"""Width of the rendered help, in characters (argparse reads it from ``COLUMNS``)."""


class CommandError(ValueError):
    """A command that is not one of the project's argparse commands, with the reason."""


class _Parsed(Exception):
    def __init__(self, parser: argparse.ArgumentParser):
        super().__init__(parser.prog)
        self.parser = parser


def target_of(command: str) -> tuple[str, str]:
    """``("module", "cosim")`` for ``python -m cosim ...``, ``("script", "examples/digits.py")``
    for ``python examples/digits.py ...`` (``.venv/bin/python`` and ``python3`` alike).

    Raises:
        CommandError: the words do not start with a Python command of one of those forms.
    """
    words = command.split()
    if not words or Path(words[0]).name not in ("python", "python3"):
        raise CommandError(f"{command!r}: not a python command")
    if len(words) >= 3 and words[1] == "-m":
        return "module", words[2]
    if len(words) >= 2 and words[1].endswith(".py"):
        return "script", words[1]
    raise CommandError(f"{command!r}: neither 'python -m MODULE' nor 'python SCRIPT.py'")


@contextlib.contextmanager
def _columns(width: int) -> Iterator[None]:
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def parser_of(command: str) -> argparse.ArgumentParser:
    """The argparse parser that ``command`` (``python -m M`` or ``python SCRIPT.py``) builds.

    Raises:
        CommandError: no such module or script, or it ran to its end without parsing arguments.
    """
    kind, target = target_of(command)

    def stop(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        raise _Parsed(self)

    argv = sys.argv[:]
    try:
        with warnings.catch_warnings(), mock.patch.object(argparse.ArgumentParser, "parse_args", stop), \
                mock.patch.object(argparse.ArgumentParser, "parse_known_args", stop):
            # runpy warns when the module was imported before (by the docs or a test): harmless,
            # since it runs in a namespace of its own
            warnings.simplefilter("ignore", RuntimeWarning)
            if kind == "module":
                _run_module(target)
            else:
                _run_script(ROOT / target)
    except _Parsed as parsed:
        return parsed.parser
    except SystemExit as e:
        raise CommandError(f"{command}: exited ({e.code}) before parsing its arguments") from None
    finally:
        sys.argv[:] = argv
    raise CommandError(f"{command}: ran to its end without parsing arguments (not an argparse command)")


def _run_module(module: str) -> None:
    import importlib.util

    try:
        found = importlib.util.find_spec(module)
    except ImportError:
        found = None
    if found is None:
        raise CommandError(f"python -m {module}: no such module")
    runpy.run_module(module, run_name="__main__", alter_sys=True)


def _run_script(path: Path) -> None:
    if not path.is_file():
        raise CommandError(f"python {path.relative_to(ROOT)}: no such script")
    sys.path.insert(0, str(path.parent))     # as Python does for a script: its own folder first
    try:
        runpy.run_path(str(path), run_name="__main__")
    finally:
        sys.path.remove(str(path.parent))


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The sub-commands of a parser (``python -m cosim seeds``, ...) by name; empty if none."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found.update(action.choices)
    return found


def options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string the parser accepts (``--sim``, ``-h``, ...)."""
    return {flag for action in parser._actions for flag in action.option_strings}


def help_texts(command: str) -> list[tuple[str, str]]:
    """``[(title, --help text)]``: the command's, then each sub-command's, at HELP_COLUMNS."""
    parser = parser_of(command)
    with _columns(HELP_COLUMNS):
        texts = [(command, parser.format_help())]
        texts += [(f"{command} {name}", sub.format_help()) for name, sub in subcommands(parser).items()]
    return texts


def setup(app):  # Sphinx's entry point
    from docutils import nodes
    from sphinx.util.docutils import SphinxDirective

    class CliHelp(SphinxDirective):
        """``cli-help COMMAND``: the command's ``--help``, then each sub-command's under its name."""

        required_arguments = 1
        final_argument_whitespace = True

        def run(self) -> list[nodes.Node]:
            try:
                texts = help_texts(self.arguments[0])
            except CommandError as e:
                raise self.error(str(e)) from None
            out: list[nodes.Node] = []
            for i, (title, text) in enumerate(texts):
                if i:
                    out.append(nodes.rubric(text=title))
                out.append(nodes.literal_block(text, text, language="none"))
            return out

    app.add_directive("cli-help", CliHelp)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
