"""Command-line argument types shared by the examples (argparse names the flag when one refuses).

The examples run as scripts (``python examples/digits.py``), so this module is imported by its
plain name from the examples folder; the tests put that folder on ``sys.path`` to load them.
"""

from __future__ import annotations

import argparse

from sim import machines
from sim.spec import Params


def _at_least(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"{value} is too small: give a whole number of at least {low}")
    return value


def positive(text: str) -> int:
    """argparse type: a whole number of at least 1.

    Raises:
        argparse.ArgumentTypeError: not a whole number, or below 1.
    """
    return _at_least(text, 1)


def non_negative(text: str) -> int:
    """argparse type: a whole number of at least 0.

    Raises:
        argparse.ArgumentTypeError: not a whole number, or below 0.
    """
    return _at_least(text, 0)


def add_machine(parser: argparse.ArgumentParser) -> None:
    """``--param NAME=VALUE|PRESET``: the machine to compile for (sim.machines; default: the
    default machine), as every command of the project takes it."""
    machines.add_argument(parser)


def machine(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Params:
    """The machine of the command line; a bad one ends the program with argparse's usage error,
    naming the parameter, its value and the legal range."""
    return machines.from_args(args, parser)
