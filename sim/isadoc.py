"""Write the ISA reference page, ``docs/isa.md``, from :mod:`sim.spec` alone.

Usage::

    python -m sim.isadoc            # print the page
    python -m sim.isadoc --write    # (re)write docs/isa.md
    python -m sim.isadoc --check    # exit 1 with a message when docs/isa.md is stale
    python -m sim.isadoc --param t8 # the page of another machine (values for T=8, LANES=8)

Nothing on the page is typed here: the parameters, opcodes, field layouts, legal ranges,
effects, regions, latencies, timing constants, error codes and counters all come from
:mod:`sim.spec`. The documentation strings of the constants and of the error codes are read
from the spec's source (the string literal under each assignment, as Sphinx does), the
meanings of the parameters from the ``Attributes:`` section of :class:`~sim.spec.Params`.

The region extents and the latencies are formulas that take their arithmetic as an argument
(:class:`sim.spec.Arith`); to print them, they are evaluated on symbols (:class:`Sym`, with
:data:`TEXT`) instead of numbers.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import inspect
import itertools
import re
import sys
from pathlib import Path
from typing import Any

from . import spec
from .machines import add_argument, describe, from_args
from .spec import DEFAULT, InstrSpec, Mem, Params, Region

DOC_PATH = Path(__file__).resolve().parent.parent / "docs" / "isa.md"
"""Where ``--write`` puts the page and ``--check`` looks for it."""

REGENERATE = "python -m sim.isadoc --write"


# --------------------------------------------------------------------------- reading the spec's source


def _plain(text: str) -> str:
    """Collapse whitespace and turn Sphinx roles (:class:`X`) into code spans (`X`)."""
    return re.sub(r":\w+:`~?([^`]+)`", r"`\1`", " ".join(text.split()))


def attribute_docs(source: str) -> dict[str, str]:
    """Map each name assigned in ``source`` (module level, or ``Class.NAME`` inside a class)
    to the string literal that follows its assignment, with whitespace collapsed. A name
    assigned an expression rather than a literal also gets ``(= expression)`` appended."""
    docs: dict[str, str] = {}

    def scan(body: list[ast.stmt], prefix: str) -> None:
        for stmt, nxt in itertools.pairwise(body):
            if isinstance(stmt, ast.ClassDef):
                continue
            targets = stmt.targets if isinstance(stmt, ast.Assign) else (
                [stmt.target] if isinstance(stmt, ast.AnnAssign) else [])
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if not names:
                continue
            doc = ""
            if (isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
                    and isinstance(nxt.value.value, str)):
                doc = _plain(nxt.value.value)
            value = getattr(stmt, "value", None)
            if isinstance(value, ast.BinOp):
                doc = f"{doc} (= `{ast.unparse(value)}`)".strip()
            if doc:
                for name in names:
                    docs[prefix + name] = doc
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                scan(stmt.body, f"{stmt.name}.")

    scan(ast.parse(source).body, "")
    return docs


def docstring_section(doc: str, title: str) -> dict[str, str]:
    """Entries ``name: text`` of a Google-style docstring section (``Attributes:``, ...).

    An entry may continue on more-indented lines; several names may share one entry
    (``lo, hi: ...``).
    """
    lines = inspect.cleandoc(doc).splitlines()
    try:
        start = lines.index(f"{title}:") + 1
    except ValueError:
        return {}
    entries: dict[str, str] = {}
    current: list[str] = []
    for line in lines[start:]:
        if not line.strip():
            break
        m = re.match(r"^ {4}(\w+(?:, \w+)*): (.*)$", line)
        if m:
            current = [n.strip() for n in m.group(1).split(",")]
            for name in current:
                entries[name] = m.group(2).strip()
        elif line.startswith("        ") and current:
            for name in current:
                entries[name] += " " + line.strip()
        else:
            break
    return entries


# --------------------------------------------------------------------------- formulas as text


class Sym:
    """An integer expression kept as text, for printing the spec's formulas.

    ``prec`` is the binding strength of the outermost operator (1: + -, 2: * //, 3: atom),
    so that parentheses appear only where they are needed.
    """

    def __init__(self, text: str, prec: int = 3):
        self.text = text
        self.prec = prec

    def __str__(self) -> str:
        return self.text

    @staticmethod
    def of(x: Any) -> Sym:
        return x if isinstance(x, Sym) else Sym(str(x))

    def _wrap(self, prec: int, right: bool = False) -> str:
        # a right operand of - or // needs parentheses at equal precedence too
        need = self.prec < prec or (right and self.prec == prec)
        return f"({self.text})" if need else self.text

    def _bin(self, other: Any, op: str, prec: int, swap: bool = False) -> Sym:
        a, b = (Sym.of(other), self) if swap else (self, Sym.of(other))
        right_strict = op in ("-", "//")
        sep = " " if prec == 1 else ""
        return Sym(f"{a._wrap(prec)}{sep}{op}{sep}{b._wrap(prec, right_strict)}", prec)

    def __add__(self, o: Any) -> Sym:
        return self._bin(o, "+", 1)

    def __radd__(self, o: Any) -> Sym:
        return self._bin(o, "+", 1, swap=True)

    def __sub__(self, o: Any) -> Sym:
        return self._bin(o, "-", 1)

    def __rsub__(self, o: Any) -> Sym:
        return self._bin(o, "-", 1, swap=True)

    def __mul__(self, o: Any) -> Sym:
        return self._bin(o, "*", 2)

    def __rmul__(self, o: Any) -> Sym:
        return self._bin(o, "*", 2, swap=True)

    def __floordiv__(self, o: Any) -> Sym:
        return self._bin(o, "//", 2)


class TextArith:
    """:class:`sim.spec.Arith` on :class:`Sym`: a formula evaluated on it gives its own text.

    ``select(c, x, 0)`` prints as ``c*x`` (the condition is a 1-bit field), any other select as
    ``(x if c = 1, else y)``; a timing constant prints as its name.
    """

    @staticmethod
    def max(a: Any, b: Any) -> Sym:
        return Sym(f"max({a}, {b})")

    @staticmethod
    def select(cond: Any, if_true: Any, if_false: Any) -> Sym:
        if isinstance(if_false, int) and if_false == 0:
            return Sym.of(cond) * if_true
        return Sym(f"({if_true} if {cond} = 1, else {if_false})")

    @staticmethod
    def ceil_div(a: Any, n: int) -> Sym:
        return Sym(f"ceil({a}/{n})")

    @staticmethod
    def const(name: str) -> Sym:
        return Sym(name)


TEXT = TextArith()
"""The arithmetic of formula text (:class:`TextArith`)."""


def _symbols(ispec: InstrSpec) -> dict[str, Sym]:
    return {f.name: Sym(f.name) for f in ispec.fields}


class _ParamSymbols:
    """Stands for a :class:`~sim.spec.Params` in a formula printed as text: each parameter
    is its own name (``ceil(len/LANES)``)."""

    def __getattr__(self, name: str) -> Sym:
        if name not in spec.PARAM_NAMES:
            raise AttributeError(name)
        return Sym(name)


PARAM_SYMBOLS = _ParamSymbols()


def extent_text(region: Region, ispec: InstrSpec) -> str:
    """The text of a region's extent formula, each field a symbol of its own name."""
    return str(region.formula(TEXT, _symbols(ispec)))


def latency_text(ispec: InstrSpec) -> str:
    """The text of an instruction's latency formula, parameters and timing constants by name:
    ``ceil(len/LANES) + LD_OVERHEAD``."""
    return str(Sym.of(ispec.latency_formula(TEXT, _symbols(ispec), PARAM_SYMBOLS)))


def named_values(text: str, params: Params) -> dict[str, int]:
    """The timing constants and parameters a formula's text names, with their values."""
    named = {**spec.TIMING_CONSTANTS, **{n: getattr(params, n) for n in spec.PARAM_NAMES}}
    return {n: v for n, v in named.items() if re.search(rf"\b{n}\b", text)}


def with_values(text: str, values: dict[str, int]) -> str:
    """Replace each whole-word name of ``values`` in ``text`` by its value."""
    if not values:
        return text
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, values), key=len, reverse=True)) + r")\b")
    return pattern.sub(lambda m: str(values[m.group(1)]), text)


# --------------------------------------------------------------------------- page sections


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return [*out, ""]


def _code(text: str) -> str:
    return f"`{text}`"


def _bound_text(bound: int | str | None, default: int, params: Params) -> str:
    if bound is None:
        return str(default)
    if isinstance(bound, str):
        return f"{bound} (= {getattr(params, bound)})"
    return str(bound)


def _mem_name(mem: Mem) -> str:
    return "scratchpad S" if mem is Mem.SPAD else "external E"


def _bit_span(lsb: int, width: int) -> str:
    """Where a field lies, per 32-bit word: ``w0[19:4]``, or ``w0[31:28] w1[3:0]`` across words."""
    parts = []
    pos, end = lsb, lsb + width
    while pos < end:
        word = pos // spec.WORD_BITS
        stop = min(end, (word + 1) * spec.WORD_BITS)
        lo, hi = pos - word * spec.WORD_BITS, stop - 1 - word * spec.WORD_BITS
        parts.append(f"w{word}[{hi}:{lo}]" if hi != lo else f"w{word}[{lo}]")
        pos = stop
    return " ".join(parts)


def _syntax(ispec: InstrSpec) -> str:
    if not ispec.fields:
        return ispec.name
    return f"{ispec.name:<4} " + " ".join(f"{f.name}=<{f.name}>" for f in ispec.fields)


def _section_header(params: Params) -> list[str]:
    return [
        "# GA-2 instruction set reference",
        "",
        f"<!-- Generated from sim/spec.py by `{REGENERATE}`. Do not edit by hand: "
        "a test fails when this page is stale. -->",
        "",
        "Everything on this page is derived from `sim/spec.py`, the single declaration of the ISA: "
        "the parameters, the encoding, each instruction's fields, legal ranges, effect, checked "
        "regions and latency, the timing constants, the error codes and the counters. The encoder, "
        "the reference machine and the hardware decoder are derived from the same declaration.",
        "",
        "The semantics and the arithmetic are those of `shared/design/GA2.md` sections 3 and 4; "
        "`S` is the scratchpad, `E` the external memory, `s8`/`s32` read a word as a signed "
        "8/32-bit value. Values below are for "
        + ("the default machine" if params == DEFAULT else f"the machine {describe(params)} (the other "
           "parameters as the default machine's)")
        + "; a formula names its parameters, and `=` gives its value on that machine.",
        "",
    ]


def _section_params(params: Params, docs: dict[str, str]) -> list[str]:
    meanings = docstring_section(Params.__doc__ or "", "Attributes")
    rows = [[_code(name), getattr(params, name), meanings.get(name, "")]
            for name in Params.__dataclass_fields__]
    out = ["## Parameters", "", "`sim.spec.Params`; the hardware generator and the reference machine "
           "take the same object. `Params(...)` refuses values the encoding or the hardware cannot "
           "hold, with a message naming the parameter.", ""]
    return out + _table(["name", "default", "meaning"], rows)


def _section_encoding(docs: dict[str, str]) -> list[str]:
    out = ["## Encoding", ""]
    consts = ["WORD_BITS", "INSTR_WORDS", "INSTR_BITS", "OPCODE_BITS", "ADDR_BITS", "PC_BITS",
              "ERROR_CODE_BITS", "COUNTER_BITS"]
    out += _table(["constant", "value", "meaning"],
                  [[_code(c), getattr(spec, c), docs.get(c, "")] for c in consts])
    out += [
        f"An instruction is {spec.INSTR_WORDS} words of {spec.WORD_BITS} bits ({spec.INSTR_BITS} bits), "
        f"least significant word first (`w0` .. `w{spec.INSTR_WORDS - 1}` below). The opcode is "
        f"bits {spec.OPCODE_BITS - 1}..0 of `w0`; the fields follow from bit {spec.OPCODE_BITS} "
        "upwards, packed in the order of the instruction's field table, each an unsigned integer. "
        "Bits above the last field are written as 0 and ignored when decoding. A field value that "
        "fits its width but lies outside its legal range encodes, and stops the machine with "
        "`BAD_FIELD`.",
        "",
        _plain(spec.Opcode.__doc__ or ""),
        "",
    ]
    rows = []
    for s in spec.INSTRUCTIONS:
        used = spec.OPCODE_BITS + sum(f.width for f in s.fields)
        rows.append([_code(s.name), int(s.opcode), f"0x{int(s.opcode):X}",
                     " ".join(f.name for f in s.fields) or "-", used, s.counter or "-"])
    out += ["### Opcodes", ""]
    out += _table(["instruction", "opcode", "hex", "fields (in order)", "bits used", "counter"], rows)
    return out


def _section_instruction(s: InstrSpec, params: Params) -> list[str]:
    out = [f"### {s.name}", "", f"`{_syntax(s)}`", "", f"**Effect:** {s.effect}.", ""]
    if s.extra_checks_doc:
        out += [s.extra_checks_doc, ""]
    if len(s.field_rules) == 1:
        out += [s.field_rules[0].doc, ""]
    elif s.field_rules:
        out += ["Rules across fields, checked in this order after the fields' ranges:", ""]
        out += [f"- {rule.doc}" for rule in s.field_rules] + [""]
    # fields and layout
    offsets = s.field_offsets()
    rows = [["`op`", 0, spec.OPCODE_BITS, _bit_span(0, spec.OPCODE_BITS), int(s.opcode), "opcode"]]
    for f in s.fields:
        lsb, width = offsets[f.name]
        lo = _bound_text(f.lo, 0, params)
        hi = _bound_text(f.hi, (1 << f.width) - 1, params)
        rows.append([_code(f.name), lsb, width, _bit_span(lsb, width), f"{lo} .. {hi}", f.doc])
    out += _table(["field", "lsb", "width", "bits", "legal range", "meaning"], rows)
    # regions
    if s.regions:
        rows = []
        for r in s.regions:
            extent = extent_text(r, s)
            touched = r.start if extent == "1" else f"{r.start} .. {r.start} + {extent} - 1"
            rows.append([_mem_name(r.mem), "writes" if r.writes else "reads", _code(r.start), _code(extent),
                         _code(touched)])
        out += ["Regions, checked in this order against the memory's size (`start + extent` must not "
                "exceed `SPAD_WORDS` or `EXT_WORDS`):", ""]
        out += _table(["memory", "access", "start", "extent (words)", "words touched"], rows)
        pairs = [(w, r) for w in s.regions if w.writes for r in s.regions
                 if not r.writes and r.mem is w.mem]
        if not pairs:
            out += ["Overlap check: none (the regions lie in different memories).", ""]
        else:
            items = ", ".join(f"`{w.start}` against `{r.start}`" for w, r in pairs)
            rule = ("in place is allowed: a written region that starts at the same address as the read "
                    "region may coincide with it; any other overlap is refused" if s.in_place_ok
                    else "any overlap is refused, in place included")
            strict = [r.start for w, r in pairs if s.in_place_ok and not r.in_place]
            if strict:
                rule += (" (except against " + ", ".join(f"`{name}`" for name in strict)
                         + ": any overlap is refused, in place included)")
            out += [f"Overlap check, written against read regions: {items}; {rule}.", ""]
    # latency
    text = latency_text(s)
    values = named_values(text, params)
    lat = f"`{text}`"
    if values:
        lat += f" = `{with_values(text, values)}`"
    target = f"counter `{s.counter}` (and `cycles`)" if s.counter else "`cycles` only"
    out += [f"**Latency (cycles):** {lat}, counted in {target}.", ""]
    if s.counter is not None:
        r, w = window_text(s.reads_formula, s), window_text(s.writes_formula, s)
        out += [f"**Scratchpad ports (OVERLAP >= 1):** reads in the first `{r}` cycles from the dispatch, "
                f"writes in the last `{w}` cycles of the latency (0: none).", ""]
    return out


def window_text(formula, ispec: InstrSpec) -> str:
    """The text of a read or write window formula (``InstrSpec.reads_formula``)."""
    return str(Sym.of(formula(TEXT, _symbols(ispec), PARAM_SYMBOLS)))


def _section_instructions(params: Params) -> list[str]:
    out = ["## Instructions", ""]
    rows = [[_code(s.name), _code(_syntax(s)), s.counter or "-", _code(latency_text(s))]
            for s in spec.INSTRUCTIONS]
    out += _table(["instruction", "syntax", "counter", "latency (cycles)"], rows)
    out += ["Text form (`sim.asm.disassemble` writes it, `sim.asm.assemble` reads it): the mnemonic "
            "padded to four characters, a space, then `name=value` for every field in table order, "
            "e.g. `MM   dst=240 A=8 B=72 M=3 K=10 N=4 tb=0 lda=10 ldb=9 ldc=11`; `HALT` alone.", ""]
    for s in spec.INSTRUCTIONS:
        out += _section_instruction(s, params)
    return out


def _section_timing(docs: dict[str, str], params: Params) -> list[str]:
    out = ["## Timing", "",
           "Every latency is the number of cycles from the dispatch of an instruction to the dispatch of "
           "the next; one instruction runs at a time. A run takes "
           "`cycles = FRONTEND_CYCLES + sum of the latencies of the instructions dispatched before the "
           "stop + STOP_CYCLES` (the HALT's latency, or the cycle of the instruction that stopped the "
           "machine with an error). `ceil(len/LANES)` is the number of beats to move `len` consecutive "
           f"words at LANES (= {params.LANES}) words per cycle, at any alignment.", ""]
    rows = [[_code(n), v, docs.get(n, "")] for n, v in spec.TIMING_CONSTANTS.items()]
    out += _table(["constant", "cycles", "meaning"], rows)
    out += ["### OVERLAP = 1: the engines side by side", "",
            "The engines are named by their counters: " + ", ".join(
                f"`{e}` ({', '.join(_code(s.name) for s in spec.INSTRUCTIONS if s.counter == e)})"
                for e in spec.ENGINES) + ".", ""]
    out += _docstring(spec.Issue)
    out += ["### OVERLAP = 2: the engines decoupled", ""]
    out += _docstring(spec.Decoupled)
    return out


def _docstring(cls: type) -> list[str]:
    """A class's docstring after its first line, as Markdown paragraphs and bullet lists."""
    out = []
    for para in (cls.__doc__ or "").split("\n\n")[1:]:
        listed = para.strip().startswith("*")
        bullets = re.split(r"\n\s*\* ", "\n" + para.strip()) if listed else [para]
        out += [("- " + _plain(b)) if listed else _plain(b) for b in bullets if b.strip()]
        out.append("")
    return out


def _section_errors(docs: dict[str, str]) -> list[str]:
    out = ["## Error codes", "",
           _plain(spec.ErrorCode.__doc__ or ""), "",
           "The reference machine raises `sim.machine.MachineError` with the code and the index of the "
           "offending instruction (for `NO_HALT`, the program length); the RTL raises `error` with the "
           f"code ({spec.ERROR_CODE_BITS} bits) and the pc, then halts.", ""]
    rows = [[int(c), _code(c.name), spec.ERROR_TEXT[c], docs.get(f"ErrorCode.{c.name}", "")]
            for c in spec.ErrorCode]
    out += _table(["code", "name", "text", "when"], rows)
    out += ["The checks of the instruction at pc, in the order they run (the first that fails stops "
            "the machine):", ""]
    for k, code in enumerate(spec.CHECK_CODES):
        out.append(f"{k + 1}. `{code.name}`: {CHECK_RULES[code.name]}")
    out += ["", "From the data an instruction reads, while it runs: " + "; ".join(
        f"`{code.name}`, {DATA_RULES[code.name]}" for code in spec.DATA_ERRORS) + "."]
    out += ["", "About the machine rather than the program (no check gives it): " + "; ".join(
        f"`{code.name}`, {MACHINE_RULES[code.name]}" for code in spec.MACHINE_FAULTS) + "."]
    return [*out, ""]


CHECK_RULES = {
    "BAD_OPCODE": "the opcode is not in the opcode table;",
    "BAD_FIELD": "the first field, in the instruction's field order, outside its legal range;",
    "SPAD_RANGE": "the first scratchpad region, in the order listed, that reaches past `SPAD_WORDS`;",
    "EXT_RANGE": "the first external-memory region that reaches past `EXT_WORDS`;",
    "OVERLAP": "the first written region (in order) that overlaps a read region of the same memory, "
               "in-place excepted where allowed;",
    "NO_HALT": "pc is one past the last instruction (no instruction to check: the program has no HALT).",
}
"""How ``sim.spec.check`` and the machine decide each code (the code order itself is the spec's)."""
DATA_RULES = {
    "BAD_INDEX": "not a check of the front end: a GATHER that passed every check above reads its row "
                 "number `S[idx]` (unsigned) when it runs, and a number not below `rows` stops the "
                 "machine after the GATHER's latency, nothing written (`sim.spec.DATA_ERRORS`)",
}
"""When each of ``sim.spec.DATA_ERRORS`` stops the machine."""
MACHINE_RULES = {
    "STALL": "OVERLAP = 2 only: the watchdog saw WATCHDOG_CYCLES cycles in a row with no engine busy "
             "and nothing dispatched or entered while an instruction waited; the pc is the earliest "
             "instruction not dispatched",
}
"""When the machine stops itself with each of ``sim.spec.MACHINE_FAULTS``."""


def _section_counters() -> list[str]:
    out = ["## Counters", "",
           f"{len(spec.COUNTERS)} counters of {spec.COUNTER_BITS} bits, reported in this order; all reset at "
           "start and frozen at the stop (HALT or error).", ""]
    rows = []
    for c in spec.COUNTERS:
        if c == "cycles":
            what = "every cycle from start to the stop, front end and stop included"
        else:
            users = [s for s in spec.INSTRUCTIONS if s.counter == c]
            what = "the latencies of " + ", ".join(_code(s.name) for s in users)
        rows.append([_code(c), what])
    out += _table(["counter", "counts"], rows)
    out += [f"With OVERLAP = 1 or 2 the machine reports {len(spec.OVERLAP_COUNTERS)} more, after these: "
            + OVERLAP_COUNTERS_TEXT, ""]
    return out


OVERLAP_COUNTERS_TEXT = ("`hazard`, the cycles an instruction waited for an instruction in flight on "
                         "another engine whose scratchpad regions conflict with its own (after the "
                         "order and its engine allowed it); `port`, the cycles it then waited for a "
                         "scratchpad port. Waits for an engine and the stop's wait for every engine "
                         "count in neither.")


def render(params: Params) -> str:
    """The whole page, as Markdown text."""
    docs = attribute_docs(inspect.getsource(spec))
    lines: list[str] = []
    lines += _section_header(params)
    lines += _section_params(params, docs)
    lines += _section_encoding(docs)
    lines += _section_instructions(params)
    lines += _section_timing(docs, params)
    lines += _section_errors(docs)
    lines += _section_counters()
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- command line


def stale_diff(params: Params, path: Path = DOC_PATH) -> str:
    """Empty when ``path`` holds exactly what :func:`render` writes; else a message with a diff."""
    fresh = render(params)
    if not path.exists():
        return f"{path} does not exist; run `{REGENERATE}`"
    current = path.read_text()
    if current == fresh:
        return ""
    diff = difflib.unified_diff(current.splitlines(), fresh.splitlines(), str(path), "generated", lineterm="")
    shown = list(diff)[:40]
    return f"{path} is stale (sim/spec.py changed); run `{REGENERATE}`\n" + "\n".join(shown)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sim.isadoc",
        description="Generate the GA-2 ISA reference page (docs/isa.md) from sim/spec.py. "
                    "Without an option, print it.")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="write the page to --path")
    group.add_argument("--check", action="store_true",
                       help="exit with status 1 and a diff when the page at --path is stale")
    parser.add_argument("--path", type=Path, default=None,
                        help="the page (default: docs/isa.md of this checkout, the default machine's)")
    add_argument(parser)
    args = parser.parse_args(argv)
    params = from_args(args, parser)
    if args.path is None:
        if params != DEFAULT and (args.write or args.check):
            parser.error(f"{DOC_PATH.name} documents the default machine; give --path for the page of "
                         f"{describe(params)}")
        args.path = DOC_PATH
    if args.path.is_dir():
        parser.error(f"--path {args.path} is a folder: give the page's file, "
                     f"e.g. {args.path / DOC_PATH.name}")
    if args.check:
        problem = stale_diff(params, args.path)
        if problem:
            print(problem, file=sys.stderr)
            return 1
        print(f"{args.path} is up to date")
        return 0
    text = render(params)
    if args.write:
        try:
            args.path.parent.mkdir(parents=True, exist_ok=True)
            args.path.write_text(text)
        except OSError as e:      # a read-only folder, a parent that is a file
            print(f"error: cannot write --path {args.path}: {e.strerror or e}"
                  f"{f' ({e.filename})' if e.filename else ''}", file=sys.stderr)
            return 1
        print(f"wrote {args.path}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
