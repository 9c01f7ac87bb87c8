"""Naming a machine: the one parser of ``PARAMS`` / ``--param``, the presets, the build tag.

Every command that builds, compiles for or measures a machine (``make verilog``, ``cosim``,
``stress``, ``bench``, ``synth``, ``bitstream``, ``digits``, ``sweep``, the examples) takes the
machine the same way: a list of items, each either ``NAME=VALUE`` (a field of
:class:`sim.spec.Params`) or the name of a preset (:data:`PRESETS`), applied left to right. A
preset sets the whole machine; ``NAME=VALUE`` changes one field of what came before::

    make cosim PARAMS="T=8 LANES=8"                # the same as PARAMS=t8
    make synth PARAMS="t8 SPAD_WORDS=16384"        # a preset, then one field changed
    python -m compiler.testing.perf --param t8 --param SPAD_WORDS=16384

The values are checked by :class:`sim.spec.Params` itself (the message names the parameter,
its value and the legal range) before anything is built or written. :func:`machine_tag`
names a machine for the build folders, so that the outputs of two machines live side by side
and one machine's files are never taken for another's.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from .spec import DEFAULT, PARAM_NAMES, Params

PRESETS: Mapping[str, Params] = {
    "t2": Params(T=2),
    "t4": DEFAULT,
    "t8": Params(T=8, LANES=8),
    "t16": Params(T=16, LANES=16),
    "default": DEFAULT,
}
"""The common machines by name: the array size T with the narrowest LANES it needs (at least
4); ``t4`` and ``default`` are the default machine (GA2.md section 1)."""

_ITEM = re.compile(r"([A-Za-z_]\w*)=(-?\d+)")


class MachineError(ValueError):
    """A machine description that cannot be read or built; the message names the item or the
    parameter at fault, its value and what is allowed."""


def items(text: str | Iterable[str]) -> list[str]:
    """The items of a description: ``"t8 SPAD_WORDS=16384"``, ``"T=8,LANES=8"`` or a list of
    such strings (one ``--param`` each) -> ``["t8", "SPAD_WORDS=16384"]``."""
    parts = [text] if isinstance(text, str) else list(text)
    return [item for part in parts for item in re.split(r"[\s,]+", part.strip()) if item]


def check_items(text: str) -> str:
    """Items checked for form: each a preset's name or NAME=INT with NAME a parameter. The
    values' ranges are :class:`Params`' to check, all together.

    Raises:
        MachineError: an item of neither form; the message lists the presets and the parameters.
    """
    for item in items(text):
        match = _ITEM.fullmatch(item)
        if item not in PRESETS and (match is None or match[1] not in PARAM_NAMES):
            raise MachineError(f"machine item {item!r} is neither NAME=VALUE with NAME one of "
                               f"{', '.join(PARAM_NAMES)} nor a preset ({', '.join(PRESETS)})")
    return text


def parse(text: str | Iterable[str], base: Params = DEFAULT) -> Params:
    """The machine a description names (what ``PARAMS=`` and ``--param`` take), starting from
    ``base``: by default the default machine, as the command lines start from it.

    Raises:
        MachineError: an item that is not a preset or NAME=INT, or values :class:`Params`
            refuses (its message: the parameter, the value, the legal range).
    """
    fields = dataclasses.asdict(base)
    for item in items(text):
        check_items(item)
        if item in PRESETS:
            fields = dataclasses.asdict(PRESETS[item])
        else:
            name, _, value = item.partition("=")
            fields[name] = int(value)
    try:
        return Params(**fields)
    except ValueError as e:
        raise MachineError(f"{e} (machine: {' '.join(items(text)) or 'default'})") from None


def changed(params: Params) -> dict[str, int]:
    """The parameters that differ from the default machine's, in declaration order."""
    return {name: getattr(params, name) for name in PARAM_NAMES
            if getattr(params, name) != getattr(DEFAULT, name)}


def describe(params: Params) -> str:
    """A machine in words for messages and reports: ``"T=8 LANES=8"``, or ``"default"``."""
    diff = changed(params)
    return " ".join(f"{name}={value}" for name, value in diff.items()) or "default"


def preset_of(params: Params) -> str | None:
    """The preset's name for this machine (``t4`` for the default), or None."""
    return next((name for name, p in PRESETS.items() if p == params and name != "default"), None)


def machine_tag(params: Params) -> str:
    """A folder name for this machine's build outputs, unique per machine: ``default`` for
    the default machine, else the changed parameters (``T8-LANES8``, ``SPAD_WORDS16384``)."""
    diff = changed(params)
    return "-".join(f"{name}{value}" for name, value in diff.items()) or "default"


def machine_dir(root: Path | str, params: Params) -> Path:
    """Where a machine's build outputs go under ``root``: ``root`` itself for the default
    machine (``build/ga2.v``, ``build/synth``), ``root/machines/<tag>`` for any other
    (``build/machines/T8-LANES8/ga2.v``), so that two machines never share a file."""
    root = Path(root)
    return root if params == DEFAULT else root / "machines" / machine_tag(params)


def argument(text: str) -> str:
    """:func:`check_items` as an argparse ``type`` (argparse shows its message, naming the flag).

    Raises:
        argparse.ArgumentTypeError: as :func:`check_items`.
    """
    try:
        return check_items(text)
    except MachineError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_argument(parser: argparse.ArgumentParser) -> None:
    """``--param ITEM`` (repeatable) on a command line: the one way every command names its
    machine. Read it back with :func:`from_args`."""
    parser.add_argument(
        "--param", dest="param", action="append", default=[], metavar="NAME=VALUE|PRESET",
        type=argument,
        help=f"the machine: NAME=VALUE for a sim.spec.Params field ({', '.join(PARAM_NAMES)}) or a "
             f"preset ({', '.join(PRESETS)}); repeatable, or several in one separated by spaces or "
             "commas, applied left to right (default: the default machine)")


def from_args(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> Params:
    """The machine of a command line that has :func:`add_argument`'s ``--param``. With
    ``parser``, a refused machine ends the program through ``parser.error`` (usage, the message,
    exit status 2).

    Raises:
        MachineError: as :func:`parse` (without ``parser``).
    """
    try:
        return parse(args.param)
    except MachineError as e:
        if parser is None:
            raise
        parser.error(str(e))


def main(argv: list[str] | None = None) -> int:
    """``python -m sim.machines [ITEM ...]``: the machine the items name, its folder, or why not."""
    parser = argparse.ArgumentParser(
        prog="python -m sim.machines",
        description="Show the machine that NAME=VALUE items and presets name (as PARAMS= and --param take "
                    "them), with its build folder; exit 1 with the reason when it is refused.")
    parser.add_argument("items", nargs="*", help=f"NAME=VALUE ({', '.join(PARAM_NAMES)}) or a preset "
                        f"({', '.join(PRESETS)}); none: the default machine")
    parser.add_argument("--dir", action="store_true", help="print only the build folder (for the Makefile)")
    args = parser.parse_args(argv)
    try:
        params = parse(args.items)
    except MachineError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.dir:
        print(machine_dir("build", params))
        return 0
    print(f"machine: {describe(params)}" + (f" (preset {preset_of(params)})" if preset_of(params) else ""))
    for name in PARAM_NAMES:
        print(f"  {name:<11} {getattr(params, name)}")
    print(f"build folder: {machine_dir('build', params)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
