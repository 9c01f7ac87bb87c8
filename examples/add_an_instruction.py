#!/usr/bin/env python3
"""The generated parts of the guide docs/add-an-instruction.md (VADD's relu field, end to end).

The guide's blocks (between ``<!-- generated: NAME -->`` and ``<!-- end: NAME -->``) are of two
kinds:

* **excerpts** (:data:`EXCERPTS`): the code of each step, pulled from the source by symbol
  (examples/_excerpts.py). ``--write`` rewrites them, ``--check`` exits 1 naming the stale ones
  (tests/test_add_an_instruction.py runs it in the default suite: it only parses source, well
  under a second);
* **records** (:data:`RECORDS`): what heavy runs print (the residual block compiled from
  PyTorch, the broken RTL run by cosim and stress on Icarus, the files and lines each marked
  commit changed). ``--record NAME ...`` (or ``--record all``) runs them again and rewrites
  them; the default suite does not, except the residual listings, which
  tests/compiler/testing/test_residual.py compares with its own compilation.

``--rtl [--mutant NAME] [--sim icarus|verilator]`` runs the residual block on the RTL (or on a
broken copy of it, cosim/mutants.py) and prints PASS or FAIL with the first differences.

Usage: .venv/bin/python examples/add_an_instruction.py [--write | --check | --record NAME ... | --rtl]
  (no option: print the excerpt blocks)
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from _excerpts import ROOT, Excerpt, blocks_in, code_block, replace_blocks, stale_blocks

from sim.spec import DEFAULT

GUIDE = ROOT / "docs" / "add-an-instruction.md"
MARKER = "add-an-instruction"
"""Commits of the worked example carry ``[add-an-instruction: STEP]`` in their message."""
STEPS = ("machine", "compiler", "tests")
PREPARATION = ("33cfbd1", "0b0a293", "ad0fee2")
"""The commits that made the tests, the random programs and the coverage derive the instruction
list from the spec: done once, so that the next instruction needs none of it."""
STRESS_N, STRESS_SEED = 40, 1
STRESS = ("stress", "--n", str(STRESS_N), "--seed", str(STRESS_SEED), "--sim", "icarus")
SEEDS = ("seeds", "100-111", "--sim", "icarus")

E = Excerpt
EXCERPTS: dict[str, tuple[Excerpt, ...]] = {
    "spec": (E("sim/spec.py", "INSTRUCTIONS", item='"VADD"'),
             E("sim/spec.py", "InstrSpec.defaults")),
    "ga2": (E("docs/GA2.md", None, lines=r"sat_add"),),
    "reference": (E("sim/arith.py", "sat_add"), E("sim/arith.py", "sat_add_array"),
                  E("sim/machine.py", "_vadd")),
    "hardware": (E("hw/vector.py", "_tag_layout", lines=r"relu"),
                 E("hw/vector.py", "VectorUnit._read_sequencer", lines=r"relu"),
                 E("hw/vector.py", "VectorUnit._vadd")),
    "assembler": (E("sim/asm.py", "build", lines=r"defaults"),
                  E("sim/asm.py", "disassemble", lines=r"shown = ")),
    "stress": (E("cosim/stress.py", "Generator._values"),
               E("cosim/coverage.py", "FLAGS")),
    "compiler": (E("compiler/ops/table.py", "_table", item="Op.RELU, arity"),
                 E("compiler/lowering/add.py", "lower_add", lines=r"VADD|fused_relu"),
                 E("compiler/ops/add.py", "int_add", lines=r"return|def"),
                 E("compiler/ops/add.py", "real_add")),
    "tests-residual": (E("compiler/testing/residual.py", "residual_block",
                         lines=r"def |total|return torch"),),
    "tests-battery": (E("compiler/testing/random_graphs.py", "random_add_relu_graph",
                        lines=r"def |kind ==|tip = b.net.relu"),
                      E("compiler/testing/mutants.py", "ADD_RELU_MUTANTS")),
    "tests-unit": (E("tests/hw/test_vector.py", "RELU_CASES"),),
    "rtl-mutants": (E("cosim/mutants.py", "_vadd_relu_dropped", lines=r"def |re\.subn|1'h0"),
                    E("cosim/mutants.py", "_vadd_relu_wrong_bit", lines=r"def |right, wrong|fields\[")),
}
"""Excerpt blocks: name -> the excerpts it shows, in order."""


def excerpt_makers() -> dict[str, Callable[[], str]]:
    return {name: (lambda parts=parts: code_block(parts)) for name, parts in EXCERPTS.items()}


# --------------------------------------------------------------------------- records (heavy runs)


def residual_listings(fused=None, carried=None) -> str:
    """The residual block's listing and cycles with the relu on the VADD and, before the field,
    through an identity Linear (compiler/testing/residual.py); programs compiled here when not
    given."""
    from compiler.testing.residual import compile_residual
    from sim.machine import predict_counters

    fused = fused or compile_residual(params=DEFAULT)
    carried = carried or compile_residual(carry=True, params=DEFAULT)
    out = []
    for title, c in (("before: the sum through an identity nn.Linear whose RQ applies the ReLU", carried),
                     ("after: the ReLU on the VADD (relu=1)", fused)):
        cycles = predict_counters(c.program.code, params=DEFAULT).cycles
        out.append(f"{title}: {len(c.program.code)} instructions, {cycles} cycles\n\n```\n"
                   f"{c.program.listing()}\n```\n")
    return "\n".join(out)


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def _numstat(commit: str) -> list[tuple[int, int, str]]:
    rows = []
    for line in _git("show", "--numstat", "--format=", commit).splitlines():
        added, removed, path = line.split("\t")
        rows.append((int(added), int(removed), path))
    return rows


GUIDE_STEPS = (
    ("spec", ("sim/spec.py", "docs/GA2.md", "docs/isa.md")),
    ("reference", ("sim/arith.py", "sim/machine.py")),
    ("hardware", ("hw/",)),
    ("toolchain", ("sim/asm.py", "cosim/stress.py", "cosim/coverage.py")),
    ("compiler", ("compiler/frontend/", "compiler/fusion.py", "compiler/ir.py", "compiler/lowering.py",
                  "compiler/ops.py", "compiler/semantics.py", "compiler/lowering/", "compiler/ops/",
                  "examples/")),
    ("tests and test tooling", ("tests/", "compiler/testing/", "cosim/mutants.py", "Makefile", "README.md")),
)
"""The guide's steps and the paths (prefixes) whose changes count for each."""
GENERATED = ("docs/isa.md",)


def _step_of(path: str) -> str:
    for step, prefixes in GUIDE_STEPS:
        if any(path.startswith(p) for p in prefixes):
            return step
    raise ValueError(f"{path}: no step of the guide claims it (GUIDE_STEPS)")


def steps_counted() -> str:
    """Files and lines per step of the guide, from the commits marked ``[add-an-instruction: ...]``
    (``git show --numstat``), then the preparation's commits."""
    marked = []
    for step in STEPS:
        marked += _git("log", "--reverse", "--format=%h", "--fixed-strings",
                       f"--grep=[{MARKER}: {step}]", "HEAD").split()
    per_step: dict[str, list[tuple[int, int, str, str]]] = {step: [] for step, _ in GUIDE_STEPS}
    for commit in marked:
        for added, removed, path in _numstat(commit):
            per_step[_step_of(path)].append((added, removed, path, commit))
    lines = ["| step | files | lines added / removed | files (lines +/-) | commits |",
             "|---|---|---|---|---|"]
    for step, rows in per_step.items():
        files: dict[str, list[int]] = {}
        for added, removed, path, _ in rows:
            files.setdefault(path, [0, 0])
            files[path][0] += added
            files[path][1] += removed
        listed = ", ".join(f"`{p}`{' (generated)' if p in GENERATED else ''} {a}/{r}"
                            for p, (a, r) in files.items())
        commits = " ".join(dict.fromkeys(c for *_, c in rows))
        added, removed = sum(a for a, _, _, _ in rows), sum(r for _, r, _, _ in rows)
        lines.append(f"| {step} | {len(files)} | {added} / {removed} | {listed or 'none'} | {commits} |")
    for commit in PREPARATION:
        rows = _numstat(commit)
        added, removed = sum(a for a, _, _ in rows), sum(r for _, r, _ in rows)
        lines.append(f"| (once) tests from the spec | {len(rows)} | {added} / {removed} | "
                     f"{', '.join(f'`{p}`' for _, _, p in rows)} | {commit} |")
    return "\n".join(lines) + "\n"


PYTHON = ".venv/bin/python"
"""How the guide's commands start Python: the worktree's own environment (``make setup``)."""
CUT = "..."
"""The line that stands for output lines a record leaves out."""


def shown(out: list[str], kept: set[int]) -> list[str]:
    """The lines of ``out`` whose indices are ``kept``, with :data:`CUT` for each run of left-out
    lines (a run of blank lines only is left out unmarked)."""
    lines, cut = [], False
    for k, line in enumerate(out):
        if k in kept:
            if cut:
                lines.append(CUT)
            lines.append(line)
            cut = False
        elif line.strip():
            cut = True
    return [*lines, CUT] if cut else lines


def _cosim(*args: str, keep: Callable[[list[str]], set[int]]) -> str:
    """Run ``python -m cosim ARGS`` and show the command and the lines ``keep`` picks (their
    indices), a cut marked; a stress run's block ends with the digest of its programs
    (:func:`stress_digest`), so that the test suite sees when the programs it ran have changed."""
    done = subprocess.run([sys.executable, "-m", "cosim", *args], cwd=ROOT, capture_output=True, text=True)
    out = [re.sub(r" \(/\S+/build/", " (build/", line) for line in done.stdout.splitlines()]
    body = "\n".join(shown(out, keep(out)))
    ran = f"\n(the {STRESS_N} programs' digest: {stress_digest()})" if args[0] == "stress" else ""
    return f"```\n$ {PYTHON} -m cosim {' '.join(args)}\n{body}\n(exit status {done.returncode}){ran}\n```\n"


def stress_digest() -> str:
    """The first 16 hex digits of the SHA-256 of the stress programs :data:`STRESS` runs (their
    code and external-memory images on the default machine). Exact: the programs come from
    ``random.Random(seed)`` and integer arithmetic alone, the same on every machine."""
    import hashlib

    from cosim import stress
    from sim.spec import DEFAULT

    digest = hashlib.sha256()
    for prog in stress.programs(STRESS_SEED, STRESS_N, DEFAULT):
        digest.update(repr(prog.job.words).encode())
        digest.update(repr([int(w) for w in prog.job.ext_image(DEFAULT)]).encode())
    return digest.hexdigest()[:16]


def _verdicts(out: list[str]) -> set[int]:
    """The mutant line, each simulator's verdict and its first failing program's lines."""
    kept, failing, last = set(), 0, ""
    for k, line in enumerate(out):
        if line.startswith("mutant ") or re.match(r"(icarus|verilator) +(PASS|FAIL)", line):
            kept.add(k)
            failing, last = 0, line
        elif line.startswith("    seed ") and failing == 0 and "FAIL" in last:
            failing = 1
            kept.add(k)
        elif failing == 1 and line.startswith("     ") and not line.startswith("    seed "):
            kept.add(k)
        elif line.startswith("    seed "):
            failing = 2
    return kept


def _coverage(out: list[str]) -> set[int]:
    return {k for k, line in enumerate(out) if line.lstrip().startswith("cases:")}


def rtl_run(mutant: str | None, sim: str = "icarus") -> tuple[int, list[str]]:
    """The residual block on the RTL (a broken copy when ``mutant``): (0 PASS / 1 FAIL, lines)."""
    from compiler.testing.residual import compile_residual
    from cosim import mutants
    from cosim.api import compare, run_programs
    from cosim.jobs import Job
    from cosim.verilog import COSIM_BUILD, fresh_verilog

    compiled = compile_residual(params=DEFAULT)
    verilog = None
    lines = []
    if mutant is not None:
        verilog = mutants.mutate(fresh_verilog(params=DEFAULT), mutant, COSIM_BUILD / "mutants" / mutant)
        m = mutants.MUTANTS[mutant]
        lines.append(f"mutant {m.name}: {m.unit} {m.what}")
    job = Job.of_program(compiled.program, compiled.feed, "residual block")
    (run,) = run_programs([job], sim, verilog=verilog)
    problems = compare(job, run)
    verdict = "FAIL: the residual block differs from the reference" if problems else \
        "PASS: the residual block matches the reference (memory and all five counters)"
    return (1 if problems else 0), [*lines, f"{sim:<10} {verdict}", *(f"    {p}" for p in problems)]


def _rtl_record(mutant: str) -> str:
    _, lines = rtl_run(mutant)
    body = "\n".join(shown(lines, set(range(4))))
    return f"```\n$ {PYTHON} examples/add_an_instruction.py --rtl --mutant {mutant}\n{body}\n```\n"


def compiler_mutant() -> str:
    """``python -m compiler.testing.mutants --only N`` for the add-relu mutant: its verdict line."""
    from compiler.testing.mutants import ADD_RELU_MUTANTS, MUTANTS

    number = MUTANTS.index(ADD_RELU_MUTANTS[0]) + 1
    command = [sys.executable, "-m", "compiler.testing.mutants", "--only", str(number)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    out = [re.sub(r" \(\d+\.\d s\)", "", line) for line in done.stdout.splitlines()]
    kept = {k for k, line in enumerate(out) if "caught" in line and "unbroken" not in line}
    body = "\n".join(shown(out, kept))
    return f"```\n$ {PYTHON} -m compiler.testing.mutants --only {number}\n{body}\n```\n"


RECORDS: dict[str, Callable[[], str]] = {
    "compiler-mutant": compiler_mutant,
    "residual-listings": residual_listings,
    "steps-counted": steps_counted,
    "norelu-seeds": lambda: _cosim(*SEEDS, "--mutant", "vadd-norelu", keep=_verdicts),
    "norelu-stress": lambda: _cosim(*STRESS, "--mutant", "vadd-norelu", keep=_verdicts),
    "norelu-residual": lambda: _rtl_record("vadd-norelu"),
    "bit-seeds": lambda: _cosim(*SEEDS, "--mutant", "vadd-relu-bit", keep=_verdicts),
    "bit-stress": lambda: _cosim(*STRESS, "--mutant", "vadd-relu-bit", keep=_verdicts),
    "bit-residual": lambda: _rtl_record("vadd-relu-bit"),
    "stress-coverage": lambda: _cosim(*STRESS, keep=lambda out: _verdicts(out) | _coverage(out)),
}
"""Recorded blocks: name -> the run that makes it (minutes on Icarus; ``--record``)."""


# --------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"{PYTHON} examples/add_an_instruction.py",
                                     description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="rewrite the excerpt blocks of the guide")
    group.add_argument("--check", action="store_true", help="exit 1 naming the stale excerpt blocks")
    group.add_argument("--record", nargs="+", metavar="NAME", choices=[*RECORDS, "all"],
                       help=f"run again and rewrite recorded blocks: {', '.join(RECORDS)} or all")
    group.add_argument("--rtl", action="store_true", help="run the residual block on the RTL")
    parser.add_argument("--mutant", default=None, help="with --rtl: a broken RTL (python -m cosim mutants)")
    parser.add_argument("--sim", default="icarus", choices=("icarus", "verilator"), help="with --rtl")
    parser.add_argument("--guide", type=Path, default=GUIDE, help="the guide (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.rtl:
        status, lines = rtl_run(args.mutant, args.sim)
        print("\n".join(lines))
        return status
    makers = excerpt_makers()
    if not (args.write or args.check or args.record):
        for name, make in makers.items():
            print(f"<!-- {name} -->\n{make()}")
        return 0
    if args.check:
        text = args.guide.read_text() if args.guide.is_file() else ""
        stale = stale_blocks(text, makers)
        if stale:
            print(f"{args.guide}: stale or missing blocks: {', '.join(stale)}; run "
                  f"`{PYTHON} examples/add_an_instruction.py --write`", file=sys.stderr)
            return 1
        print(f"{args.guide}: the {len(makers)} excerpt blocks are up to date")
        return 0
    if args.record:
        names = list(RECORDS) if "all" in args.record else args.record
        bodies = {}
        for name in names:
            print(f"recording {name} ...", flush=True)
            bodies[name] = RECORDS[name]()
    else:
        bodies = {name: make() for name, make in makers.items()}
    text = args.guide.read_text() if args.guide.is_file() else ""   # after the runs: edits meanwhile stay
    missing = [name for name in bodies if name not in blocks_in(text)]
    if missing:
        print(f"{args.guide} has no block {', '.join(missing)}", file=sys.stderr)
        return 1
    args.guide.write_text(replace_blocks(text, bodies))
    print(f"wrote {len(bodies)} blocks of {args.guide}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
