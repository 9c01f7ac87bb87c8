"""How fast the reference machine runs: ``python -m sim.bench`` (``make bench-sim``).

Builds long legal programs with :func:`sim.asm.build` (one of every instruction kind in turn,
a mix of all kinds, and the mix again as encoded words, which adds decoding), runs each on the
reference machine and prints instructions per second and simulated cycles per second, the
best of a few repetitions.

The programs are random but legal: every field within its legal range, every region inside
its memory, no destination overlapping a source (in place where the ISA allows it). They are
made by :func:`random_program`, which the tests reuse.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from . import spec
from .asm import Instruction, build, encode_program
from .machine import Machine, RunResult
from .spec import DEFAULT, ErrorCode, Params

KINDS: tuple[str, ...] = tuple(s.name for s in spec.INSTRUCTIONS if s.name != "HALT")
"""Every instruction kind a program body can hold (HALT ends each program), on some machine."""


def machine_kinds(params: Params) -> tuple[str, ...]:
    """The kinds of :data:`KINDS` the machine ``params`` has (``sim.spec.built``: MMRQ only at
    OVERLAP = 2), in that order."""
    return tuple(k for k in KINDS if spec.built(spec.BY_NAME[k], params))

VECTOR_LEN_MAX = 256
"""Longest LD/ST/RQ/VADD/AMAX in the generated programs, in words (a typical tile row)."""
UNPACK_LEN_MAX = 32
"""Longest UNPACK in the generated programs, in packed words (256 int8 results)."""


def draw_missing(kind: str, fields: dict[str, int], rng: random.Random, p: Params,
                 len_max: int = VECTOR_LEN_MAX) -> dict[str, int]:
    """``fields`` with every field it leaves out drawn from the spec: ``len`` from 1..len_max,
    any other field from its legal range, then each region's start anywhere its extent fits
    (SPAD_WORDS or EXT_WORDS; 0 when it does not fit, for the caller's check to refuse).

    So a new instruction, or a new field of one, gets random legal-ranged values before anyone
    writes a rule for it; the rules of :func:`_fields_for` (and of ``cosim.stress``) say only
    what a uniform draw would miss. Draws nothing for a field already given.
    """
    ispec = spec.BY_NAME[kind]
    starts = {r.start for r in ispec.regions}
    out = dict(fields)
    for f in ispec.fields:
        if f.name not in out and f.name not in starts:
            out[f.name] = rng.randint(1, len_max) if f.name == "len" else rng.randint(*f.legal_range(p))
    for r in ispec.regions:
        if r.start not in out:
            size = p.SPAD_WORDS if r.mem is spec.Mem.SPAD else p.EXT_WORDS
            extent = r.extent({**out, **{s: 0 for s in starts if s not in out}})
            out[r.start] = rng.randrange(0, size - extent + 1) if 0 < extent <= size else 0
    return out


def _fields_for(kind: str, rng: random.Random, p: Params) -> dict[str, int]:
    """Random field values for one instruction of ``kind``; addresses anywhere they fit."""
    return draw_missing(kind, _rule(kind, rng, p), rng, p)


def _rule(kind: str, rng: random.Random, p: Params) -> dict[str, int]:
    """The fields a uniform draw would get wrong for ``kind`` (strides, in-place operands); {}
    for a kind without a rule (:func:`draw_missing` draws all of its fields)."""

    def addr(size: int, extent: int) -> int:
        return rng.randrange(0, size - extent + 1)

    spad, ext = p.SPAD_WORDS, p.EXT_WORDS
    if kind in ("LD", "ST"):
        n = rng.randint(1, VECTOR_LEN_MAX)
        s_addr, e_addr = addr(spad, n), addr(ext, n)
        return ({"dst": s_addr, "src": e_addr, "len": n, "fmt": int(rng.random() < 0.3)} if kind == "LD"
                else {"src": s_addr, "dst": e_addr, "len": n})
    if kind == "MM":
        m, k, n, tb = rng.randint(1, p.T), rng.randint(1, p.K_MAX), rng.randint(1, p.T), rng.randint(0, 1)
        lda = k + rng.randint(0, 8)
        ldb = (k if tb else n) + rng.randint(0, 8)
        ldc = n + rng.randint(0, 8)
        b_extent = (n - 1) * ldb + k if tb else (k - 1) * ldb + n
        return {"dst": addr(spad, (m - 1) * ldc + n), "A": addr(spad, (m - 1) * lda + k),
                "B": addr(spad, b_extent), "M": m, "K": k, "N": n, "tb": tb,
                "lda": lda, "ldb": ldb, "ldc": ldc, "acc": rng.randint(0, 1)}
    if kind == "MMRQ":       # an MM's fields (strides below 2^12), then the entries: one, or N
        out = _rule("MM", rng, p)
        n_entries = out["N"] if (pc := rng.randint(0, 1)) else 1
        return out | {"tab": addr(spad, n_entries), "pc": pc, "relu": rng.randint(0, 1)}
    if kind == "RQ":
        n = rng.randint(1, VECTOR_LEN_MAX)
        src = addr(spad, n)
        dst = src if rng.random() < 0.3 else addr(spad, n)
        out = {"dst": dst, "src": src, "len": n, "m": rng.randrange(1 << 23, 1 << 24),
               "s": rng.randint(20, 40), "relu": rng.randint(0, 1), "pc": 0, "tab": 0, "C": 0}
        if rng.random() < 0.3:      # per output channel: a table of C >= LANES words
            c = rng.randint(p.LANES, 3 * p.LANES + 1)
            out |= {"m": 0, "s": 0, "pc": 1, "C": c, "tab": addr(spad, c)}
        return out
    if kind == "SM":
        n = rng.randint(1, p.SM_MAX_LEN)
        return {"dst": addr(spad, n), "src": addr(spad, n), "len": n}
    if kind == "VADD":
        n = rng.randint(1, VECTOR_LEN_MAX)
        src1, src2 = addr(spad, n), addr(spad, n)
        dst = src1 if rng.random() < 0.3 else addr(spad, n)
        return {"dst": dst, "src1": src1, "src2": src2, "len": n}
    if kind == "AMAX":
        n = rng.randint(1, VECTOR_LEN_MAX)
        return {"dst": addr(spad, 1), "src": addr(spad, n), "len": n}
    if kind == "UNPACK":
        n = rng.randint(1, UNPACK_LEN_MAX)
        return {"dst": addr(spad, 8 * n), "src": addr(spad, n), "len": n}
    if kind == "LN":
        n = rng.randint(1, VECTOR_LEN_MAX)
        src = addr(spad, n)
        dst = src if rng.random() < 0.3 else addr(spad, n)
        return {"dst": dst, "src": src, "len": n, "bias": addr(spad, n),
                "eps": rng.choice((0, 1, rng.randrange(1 << 32)))}
    if kind == "GATHER":
        n, fmt = rng.randint(1, VECTOR_LEN_MAX), int(rng.random() < 0.3)
        rows = rng.randint(1, ext // (-(-n // spec.INT8_PER_WORD) if fmt else n))
        return {"dst": addr(spad, n), "len": n, "fmt": fmt, "rows": min(rows, (1 << spec.ADDR_BITS) - 1)}
    if kind == "LUT":
        n = rng.randint(1, VECTOR_LEN_MAX)
        src = addr(spad, n)
        return {"dst": src if rng.random() < 0.3 else addr(spad, n), "src": src, "len": n,
                "table": addr(spad, spec.LUT_TABLE_WORDS)}
    return {}


def random_instruction(kind: str, rng: random.Random, params: Params) -> Instruction:
    """One random legal instruction of ``kind`` (drawn again until no region overlaps)."""
    if kind not in KINDS:
        raise ValueError(f"unknown instruction kind {kind!r}; known: {', '.join(KINDS)}")
    ispec = spec.BY_NAME[kind]
    while True:
        fields = _fields_for(kind, rng, params)
        if spec.check(ispec, fields, params)[0] is ErrorCode.NONE:
            return build(kind, params=params, **fields)


def random_program(n: int, kinds: Sequence[str] | None = None, *, seed: int = 1,
                   params: Params) -> list[Instruction]:
    """``n`` random legal instructions, kinds drawn uniformly from ``kinds`` (default: every kind
    the machine has, :func:`machine_kinds`), then HALT.

    A GATHER's row number is data (S[idx]): every GATHER but a first instruction (whose idx
    word is 0 in a scratchpad that starts at zero: row 0) comes after an AMAX that writes it,
    an index below the AMAX's len <= rows (:func:`row_number_for`), so that no program stops
    with BAD_INDEX. The program then holds more than ``n`` instructions.
    """
    rng = random.Random(seed)
    body: list[Instruction] = []
    kinds = list(machine_kinds(params) if kinds is None else kinds)
    for _ in range(n):
        ins = random_instruction(rng.choice(kinds), rng, params)
        if ins.op == "GATHER" and body:
            body.append(row_number_for(ins, rng, params))
        body.append(ins)
    return [*body, build("HALT", params=params)]


def row_number_for(gather: Instruction, rng: random.Random, params: Params) -> Instruction:
    """An AMAX that writes a row number below ``gather``'s rows into its idx word: the index of
    the first maximum of a random row of at most ``rows`` (and VECTOR_LEN_MAX) words that does
    not hold the idx word itself."""
    idx, size = gather.idx, params.SPAD_WORDS
    n = rng.randint(1, min(gather.rows, VECTOR_LEN_MAX, max(idx, size - 1 - idx)))
    below = idx >= n and (idx + 1 + n > size or rng.random() < 0.5)
    src = rng.randrange(0, idx - n + 1) if below else rng.randrange(idx + 1, size - n + 1)
    return build("AMAX", params=params, dst=idx, src=src, len=n)


def random_image(params: Params, seed: int = 1) -> np.ndarray:
    """A full external-memory image of random 32-bit words (signed values)."""
    return np.random.default_rng(seed).integers(-(1 << 31), 1 << 31, params.EXT_WORDS, dtype=np.int64)


@dataclass
class Figure:
    """One benchmark line: what ran, how many instructions, how many simulated cycles, best time."""

    name: str
    instructions: int
    cycles: int
    seconds: float

    @property
    def instr_per_s(self) -> float:
        return self.instructions / self.seconds

    @property
    def cycles_per_s(self) -> float:
        return self.cycles / self.seconds

    @property
    def us_per_instr(self) -> float:
        return 1e6 * self.seconds / self.instructions


def measure(name: str, run: Callable[[], RunResult], reps: int) -> Figure:
    """Best wall-clock time of ``reps`` calls of ``run``."""
    best, result = float("inf"), None
    for _ in range(reps):
        t0 = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - t0)
    assert result is not None
    return Figure(name, result.steps, result.counters.cycles, best)


def bench(params: Params, n: int = 4000, reps: int = 3, seed: int = 1) -> list[Figure]:
    """Run every benchmark program; one :class:`Figure` per line of the report."""
    machine = Machine(params)
    image = random_image(params, seed)
    figures = []
    for kind in machine_kinds(params):
        program = random_program(n, [kind], seed=seed, params=params)
        figures.append(measure(kind, lambda program=program: machine.run(program, image), reps))
    mix = random_program(n, seed=seed, params=params)
    figures.append(measure("mix", lambda: machine.run(mix, image), reps))
    words = encode_program(mix)
    figures.append(measure("mix, words", lambda: machine.run(words, image), reps))
    return figures


def report(figures: Sequence[Figure]) -> None:
    """Print the figures as a table (with rich when it is installed)."""
    header = ["program", "instrs", "sim cycles", "seconds", "instr/s", "sim cycles/s", "us/instr"]
    rows = [[f.name, f"{f.instructions:,}", f"{f.cycles:,}", f"{f.seconds:.3f}", f"{f.instr_per_s:,.0f}",
             f"{f.cycles_per_s:,.0f}", f"{f.us_per_instr:.1f}"] for f in figures]
    title = "GA-2 reference machine (sim.machine): best of the repetitions"
    try:
        from rich import box
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
        print(title)
        for line in [header, *rows]:
            print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths,
                                                                                                  strict=True))))
        return
    table = Table(title=title, box=box.SIMPLE_HEAD)
    for i, h in enumerate(header):
        table.add_column(h, justify="left" if i == 0 else "right", no_wrap=True)
    for r in rows:
        table.add_row(*r)
    console = Console()
    if console.width < 100:  # a pipe or a narrow terminal: keep every column whole
        console = Console(width=100)
    console.print(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sim.bench",
        description="Speed of the GA-2 reference machine: instructions per second and simulated "
                    "cycles per second, per instruction kind and for a mix of all kinds.")
    parser.add_argument("--n", type=int, default=4000, help="instructions per program (default 4000)")
    parser.add_argument("--reps", type=int, default=3,
                        help="runs of each program; the best counts (default 3)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the random programs (default 1)")
    args = parser.parse_args(argv)
    if not 1 <= args.n < DEFAULT.IMEM_WORDS:
        parser.error(f"--n must be 1..{DEFAULT.IMEM_WORDS - 1} (the program and its HALT fit IMEM_WORDS)")
    if args.reps < 1:
        parser.error(f"--reps must be at least 1 (the best of that many runs counts), got {args.reps}")
    if args.seed < 0:
        parser.error(f"--seed must be 0 or more (numpy's generators take no negative seed), got {args.seed}")
    report(bench(DEFAULT, args.n, args.reps, args.seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
