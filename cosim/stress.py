"""``make stress N=200 SEED=1``: random programs from the ISA spec on the RTL, against the reference.

The programs are not compiled graphs: :class:`Generator` draws them from :mod:`sim.spec` (the
instructions, their fields and legal ranges, their memory regions and the checks), so they
reach what the compiler never emits:

* every instruction, with random lengths (1 word up to 512) at random alignments, in a
  scratchpad window small enough that instructions read each other's results;
* MM with tb = 0 and 1, odd and overlapping strides (rows of A or of the output that overlap,
  stride 0), K = 1 and K = K_MAX, acc = 0 and 1; LD of packed int8 (fmt = 1); LUT (in place
  too); SM rows of length 1 and SM_MAX_LEN; RQ and VADD in place;
  UNPACK; RQ shifts 1 and 63 and extreme mantissas; LN rows of 1 to LN_MAX_LEN (the window
  allowing), eps 0, 1 and 2^32 - 1, in place; GATHER of both formats, each after an LD of its
  row number (0, the last row, or between) from a word of external memory the program plants;
* programs that end in each error code: an unknown opcode, a field out of range, a scratchpad
  or external-memory region past the end (large strides included), a destination that partly
  overlaps a source, running off the end without HALT (NO_HALT), and a GATHER whose row number
  is out of its table (BAD_INDEX: rows, rows + 1, 2^16 + rows - 1, -1, 2^31). Instructions after
  the fault must never run.

Program k of a run is made from ``random.Random(k)`` alone, for k = SEED .. SEED+N-1, and
how it ends is fixed by k % 10 (three in ten HALT, one each of the seven errors: ENDINGS), so any ten
consecutive seeds hold every ending, and ``make stress SEED=k N=1`` reruns program k alone
(``python -m cosim stress --seed k --n 1 --show`` also prints its listing), from a scratchpad of
zeros; a failing run's rerun hint gives the command that reproduces a failure exactly (its
launch's programs before it too: :func:`rerun_lines`). The body between
the loads and the ending comes from one of STRATEGIES (a list: a new kind of program is one
more entry): ``random`` (instructions drawn independently) or ``collide`` (each aimed at one of
the few before it, as a read after write, a write after read or a write after write, mostly on
another engine: the hazards and port waits of the machine whose engines overlap).

The programs are drawn, run and compared a hundred at a time by a farm of workers (cosim/pool.py,
cosim/farm: local processes, or Ray on this machine or a cluster); the run prints the verdict per
simulator, the coverage of the programs (cosim/coverage.py: cocotb-coverage's cover points), the
timings and where it ran. A run is a campaign kept in
build/stress/seed<SEED>-n<N>-<sim>/ (cosim/campaign.py): --resume continues an interrupted one
without running its finished chunks again.
"""

from __future__ import annotations

import random
import shlex
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sim import spec
from sim.asm import AsmError, Instruction, build, decode, disassemble, encode_program
from sim.bench import draw_missing, row_number_for
from sim.machine import Machine
from sim.spec import DEFAULT, ErrorCode, Mem, Params

from . import batch, coverage, edges, pool, seeds
from .campaign import Campaign, default_folder, identity
from .jobs import Job
from .stressprogram import ENDINGS, HALT, KINDS, StressProgram, fits, or_bits, smallest, spare_end
from .verilog import fresh_verilog, verilog_params

BODY_MAX = 16
"""Most instructions in a body (between the loads and the ending)."""
LEN_MAX = 512
"""Longest LD/ST/RQ/VADD/AMAX."""
WINDOWS = (128, 512, 2048)
"""Sizes of the scratchpad window a program works in (or the whole scratchpad)."""
WHAT = "memory, {counters}, error code and pc"
PER_CHANNEL = 0.35
"""The share of RQs drawn per output channel (pc = 1)."""
BREAK_RULE_EVERY, BREAK_RULE_AT = 6, 2
"""The program ending in BAD_FIELD whose turn (seed // 10) is BREAK_RULE_AT modulo
BREAK_RULE_EVERY breaks a rule across fields (``sim.spec.FieldRule``: the rules of every kind in
turn) rather than a field's range: one in three of those drawn here (a turn that is 0 modulo 3 is
an edge program, cosim/edges.py), eight in a run of 500 programs, every rule met."""
PLANT_EXT_WORDS = 64
"""A GATHER's row number in range is loaded from a planted external word on a machine with at
least this many (else an AMAX writes one): a tiny external memory keeps its few words for the
row number out of its table of a BAD_INDEX ending."""


class Generator:
    """Random GA-2 programs from the ISA spec (see the module docstring).

    Args:
        seed: the program's seed.
        params: the machine (sizes, T, K_MAX, SM_MAX_LEN).
    """

    def __init__(self, seed: int, params: Params):
        self.seed = seed
        self.rng = random.Random(seed)
        self.p = params
        self.features: Counter = Counter()
        self.planted: dict[int, int] = {}
        """External words this program's loads of row numbers read (address -> value), written over
        the drawn image (:meth:`ext_image`)."""
        size = self.rng.choice((*WINDOWS, params.SPAD_WORDS))
        size = min(size, params.SPAD_WORDS)
        self.window = (self.rng.randrange(0, params.SPAD_WORDS - size + 1), size)

    def kinds(self, candidates: Sequence[str] = KINDS) -> list[str]:
        """The candidates a legal instruction of which fits the machine (:func:`fits`; all of
        them on the default machine, so the draws are the same there)."""
        return [kind for kind in candidates if fits(kind, self.p)]

    # ------------------------------------------------------------------ values

    def _length(self, hi: int) -> int:
        r = self.rng.random()
        if r < 0.3:
            return self.rng.randint(1, min(8, hi))
        if r < 0.7:
            return self.rng.randint(1, min(64, hi))
        return self.rng.randint(1, hi)

    def _channels(self, n: int) -> int:
        """RQ pc = 1: the table's length C (at least LANES): LANES, a multiple of it, one more or
        one less than a multiple (a beat wraps past the table's end inside), shorter or longer
        than the row of n elements."""
        lanes, rng = self.p.LANES, self.rng
        return rng.choice((lanes, 2 * lanes, lanes + 1, 2 * lanes - 1, 3 * lanes + 1,
                           rng.randint(lanes, max(lanes, n)), rng.randint(lanes, 300)))

    def _stride(self, packed: int) -> int:
        """A row stride for rows of ``packed`` elements: packed or nearly, odd, overlapping
        (smaller than a row, 0 included) or long."""
        r = self.rng.random()
        if r < 0.5:
            return packed + self.rng.randint(0, 3)
        if r < 0.75:
            return self.rng.randint(0, 2 * packed + 8) | 1
        if r < 0.88:
            return self.rng.randint(0, max(0, packed - 1))
        return self.rng.randrange(packed, packed + 200) | 1

    def _values(self, kind: str) -> dict[str, int]:
        """The fields of ``kind`` that are not region starts, legal: the kind's rule below, then
        every field it leaves out drawn from its legal range (``sim.bench.draw_missing``)."""
        ispec = spec.BY_NAME[kind]
        values = self._rule(kind, min(LEN_MAX, self.window[1]))
        unset = {r.start: 0 for r in ispec.regions if r.start not in values}
        drawn = draw_missing(kind, values | unset, self.rng, self.p, min(LEN_MAX, self.window[1]))
        return {name: v for name, v in drawn.items() if name not in unset}

    def _rule(self, kind: str, vector: int) -> dict[str, int]:
        """What a uniform draw would miss for ``kind`` (edge values, strides); {} for a kind
        without a rule."""
        p, rng = self.p, self.rng
        if kind in ("LD", "ST", "VADD", "AMAX"):
            return {"len": self._length(vector)}
        if kind == "MM":
            r = rng.random()
            k = 1 if r < 0.15 else p.K_MAX if r < 0.3 else rng.randint(1, p.K_MAX)
            m, n, tb = rng.randint(1, p.T), rng.randint(1, p.T), rng.randint(0, 1)
            return {"M": m, "K": k, "N": n, "tb": tb, "lda": self._stride(k),
                    "ldb": self._stride(k if tb else n), "ldc": self._stride(n),
                    "acc": int(rng.random() < 0.35)}
        if kind == "MMRQ":      # MM's fields (every stride below 2^12), per channel or per tensor
            return self._rule("MM", vector) | {"pc": rng.randint(0, 1), "relu": rng.randint(0, 1)}
        if kind == "RQ":
            n = self._length(vector)
            if rng.random() < PER_CHANNEL:
                return {"len": n, "m": 0, "s": 0, "relu": rng.randint(0, 1), "pc": 1, "C": self._channels(n)}
            r = rng.random()
            mant = (0 if r < 0.05 else (1 << 24) - 1 if r < 0.15 else rng.randint(1, 1 << 23) if r < 0.3
                    else rng.randrange(1 << 23, 1 << 24))
            r = rng.random()
            s = 1 if r < 0.1 else 63 if r < 0.2 else rng.randint(16, 40) if r < 0.7 else rng.randint(1, 63)
            return {"len": n, "m": mant, "s": s, "relu": rng.randint(0, 1), "pc": 0, "tab": 0, "C": 0}
        if kind == "SM":
            r = rng.random()
            return {"len": 1 if r < 0.2 else p.SM_MAX_LEN if r < 0.4 else rng.randint(1, p.SM_MAX_LEN)}
        if kind == "UNPACK":
            hi = max(1, min(64, self.window[1] // 9))
            return {"len": rng.randint(1, min(4, hi)) if rng.random() < 0.3 else rng.randint(1, hi)}
        if kind == "LN":
            longest = min(spec.LN_MAX_LEN, self.window[1] // 3 or 1)
            r = rng.random()
            n = 1 if r < 0.1 else longest if r < 0.2 else self._length(longest)
            r = rng.random()
            eps = (0 if r < 0.3 else (1 << 32) - 1 if r < 0.4 else rng.randint(1, 1 << 16) if r < 0.7
                   else rng.getrandbits(32))
            return {"len": n, "eps": eps}
        if kind == "GATHER":
            n, fmt = self._length(vector), rng.randint(0, 1)
            words = -(-n // spec.INT8_PER_WORD) if fmt else n
            most = max(1, min((1 << spec.ADDR_BITS) - 1, p.EXT_WORDS // words))
            r = rng.random()
            rows = 1 if r < 0.2 else rng.randint(1, min(most, 64)) if r < 0.8 else rng.randint(1, most)
            return {"len": n, "fmt": fmt, "rows": rows}
        return {}

    # ------------------------------------------------------------------ placement

    def _start(self, mem: Mem, extent: int) -> int | None:
        if mem is Mem.EXT:
            size = self.p.EXT_WORDS
            return self.rng.randrange(0, size - extent + 1) if extent <= size else None
        base, size = self.window
        if extent > size:
            base, size = 0, self.p.SPAD_WORDS
        return base + self.rng.randrange(0, size - extent + 1) if extent <= size else None

    def _place(self, kind: str, values: dict[str, int]) -> dict[str, int] | None:
        """Starts for every region of ``kind`` (destinations in place sometimes, where allowed)."""
        ispec = spec.BY_NAME[kind]
        fields = dict(values)
        for region in ispec.regions:
            fields.setdefault(region.start, 0)
        for region in ispec.regions:
            extent = region.extent(fields)
            start = self._start(region.mem, extent) if extent else 0    # an empty region (RQ's
            if start is None:                                            # table with pc = 0) at 0
                return None
            fields[region.start] = start
        if ispec.in_place_ok and self.rng.random() < 0.35:
            sources = [r.start for r in ispec.regions if not r.writes and r.in_place]
            fields["dst"] = fields[sources[0]]
            if len(sources) > 1 and self.rng.random() < 0.5:
                fields[sources[1]] = fields[sources[0]]
        return fields

    def legal(self, kind: str, *, note: bool = True) -> Instruction:
        """A random legal instruction of ``kind`` (counted in ``features`` when ``note``)."""
        for _ in range(500):
            fields = self._place(kind, self._values(kind))
            if fields is not None and spec.check(spec.BY_NAME[kind], fields, self.p)[0] is ErrorCode.NONE:
                if note:
                    self._note(kind, fields)
                return build(kind, params=self.p, **fields)
        fields = smallest(kind, self.p)       # random fields rarely fit a tiny scratchpad
        if fields is not None:
            if note:
                self._note(kind, fields)
            return build(kind, params=self.p, **fields)
        raise AssertionError(f"seed {self.seed}: no legal {kind} on this machine")

    def _note(self, kind: str, f: dict[str, int]) -> None:
        self.features[kind] += 1
        for flag in spec.BY_NAME[kind].fields:
            if flag.width == 1 and f[flag.name]:
                self.features[f"{kind} {flag.name}=1"] += 1   # coverage.FLAGS
        if kind == "MM":
            if f["tb"] and (f["lda"] % 2 or f["ldb"] % 2):
                self.features["MM tb=1, odd strides"] += 1
            if f["K"] == 1:
                self.features["MM K=1"] += 1
            if f["K"] == self.p.K_MAX:
                self.features["MM K=K_MAX"] += 1
            if f["M"] > 1 and f["ldc"] < f["N"]:
                self.features["MM output rows overlap"] += 1
            if f["acc"]:
                self.features["MM acc=1"] += 1
        elif kind == "LD" and f["fmt"]:
            self.features["LD fmt=1"] += 1
        elif kind == "LUT" and f["dst"] in (f["src"], f["table"]):
            self.features["LUT in place"] += 1
        elif kind == "SM" and f["len"] in (1, self.p.SM_MAX_LEN):
            self.features[f"SM len={'1' if f['len'] == 1 else 'SM_MAX_LEN'}"] += 1
        elif kind == "RQ":
            self._note_rq(f)
        elif kind == "VADD" and f["dst"] in (f["src1"], f["src2"]):
            self.features["VADD in place"] += 1
        elif kind == "LN":
            if f["len"] in (1, spec.LN_MAX_LEN):
                self.features[f"LN len={'1' if f['len'] == 1 else 'LN_MAX_LEN'}"] += 1
            if f["dst"] in (f["src"], f["bias"]):
                self.features["LN in place"] += 1

    def _note_rq(self, f: dict[str, int]) -> None:
        if f["dst"] == f["src"]:
            self.features["RQ in place"] += 1
        if f["pc"]:
            for case, holds in (("RQ pc=1, C=LANES", f["C"] == self.p.LANES),
                                ("RQ pc=1, C not a multiple of LANES", f["C"] % self.p.LANES),
                                ("RQ pc=1, len > C", f["len"] > f["C"]),
                                ("RQ pc=1 in place", f["dst"] == f["src"])):
                if holds:
                    self.features[case] += 1

    # ------------------------------------------------------------------ faults

    def _faulty(self, code: ErrorCode, before: Sequence = ()) -> Instruction | list[int]:
        """One instruction that stops the machine with ``code`` (encoded words for BAD_OPCODE, and
        for BAD_INDEX the LD of its row number and the GATHER; ``before``: the program so far)."""
        if code is ErrorCode.BAD_OPCODE:      # opcode 11 among them where MMRQ is not built
            unused = spec.bad_opcodes(self.p)
            words = [self.rng.getrandbits(spec.WORD_BITS) for _ in range(spec.INSTR_WORDS)]
            words[0] = (words[0] & ~((1 << spec.OPCODE_BITS) - 1)) | self.rng.choice(unused)
            return words
        if code is ErrorCode.BAD_INDEX:
            return self._bad_index(before)
        make = {ErrorCode.BAD_FIELD: self._bad_field, ErrorCode.SPAD_RANGE: self._spad_range,
                ErrorCode.EXT_RANGE: self._ext_range, ErrorCode.OVERLAP: self._overlap}[code]
        for _ in range(500):
            fields = make()
            if fields is None:
                continue
            kind, f = fields
            if spec.check(spec.BY_NAME[kind], f, self.p)[0] is code:
                return build(kind, params=self.p, strict=False, **f)
        raise AssertionError(f"seed {self.seed}: no instruction found that fails with {code.name}")

    def _legal_fields(self, kinds: Sequence[str]) -> tuple[str, dict[str, int]]:
        kind = self.rng.choice(list(kinds))
        return kind, dict(self.legal(kind, note=False).fields)

    def _bad_field(self) -> tuple[str, dict[str, int]] | None:
        turn = self.seed // len(ENDINGS)            # the how-manieth program ending in BAD_FIELD
        rules = [(kind, rule) for kind in self.kinds() for rule in spec.BY_NAME[kind].field_rules]
        if rules and turn % BREAK_RULE_EVERY == BREAK_RULE_AT:   # a rule across fields, each in turn
            kind, rule = rules[turn // BREAK_RULE_EVERY % len(rules)]
            return kind, self._legal_fields([kind])[1] | rule.breaking(self.p)
        kind, f = self._legal_fields(self.kinds())
        bounded = [fl for fl in spec.BY_NAME[kind].fields if fl.lo is not None or fl.hi is not None]
        fl = self.rng.choice(bounded)
        lo, hi = fl.legal_range(self.p)
        top = (1 << fl.width) - 1
        options = ([self.rng.randint(0, lo - 1)] if lo > 0 else []) + \
                  ([hi + 1, self.rng.randint(hi + 1, top)] if hi < top else [])
        if not options:
            return None
        f[fl.name] = self.rng.choice(options)
        return kind, f

    def _spad_range(self) -> tuple[str, dict[str, int]] | None:
        kind, f = self._legal_fields(self.kinds([k for k in KINDS if any(r.mem is Mem.SPAD
                                                                          for r in spec.BY_NAME[k].regions)]))
        if kind == "MM" and self.rng.random() < 0.4:
            # a stride so long that the region's end needs more than 16 bits
            f["M"] = max(f["M"], 2)
            top = (1 << spec.ADDR_BITS) - 1
            if top < self.p.SPAD_WORDS:        # a full 16-bit scratchpad: the longest stride
                f["lda"] = top
                return kind, f
            f["lda"] = self.rng.choice([self.p.SPAD_WORDS, top,
                                        self.rng.randrange(self.p.SPAD_WORDS, top + 1)])
            return kind, f
        region = self.rng.choice([r for r in spec.BY_NAME[kind].regions if r.mem is Mem.SPAD])
        extent = region.extent(f)
        lowest = max(0, self.p.SPAD_WORDS - extent + 1)
        if lowest >= 1 << spec.ADDR_BITS:       # a full 16-bit scratchpad: too short to reach past it
            return None
        f[region.start] = self.rng.choice([lowest, self.rng.randint(lowest, (1 << spec.ADDR_BITS) - 1)])
        return kind, f

    def _ext_range(self) -> tuple[str, dict[str, int]]:
        kind, f = self._legal_fields(self.kinds(_kinds_with(Mem.EXT)))
        region = next(r for r in spec.BY_NAME[kind].regions if r.mem is Mem.EXT)
        top = (1 << spec.ADDR_BITS) - 1
        if self.p.EXT_WORDS - region.extent(f) + 1 > top:   # a memory as large as the address range:
            f["len"] = max(f["len"], 2 * (spec.INT8_PER_WORD if f.get("fmt") else 1))   # reach past it
        lowest = max(0, self.p.EXT_WORDS - region.extent(f) + 1)
        f[region.start] = self.rng.choice([lowest, self.rng.randint(lowest, top)])
        return kind, f

    def _overlap(self) -> tuple[str, dict[str, int]] | None:
        kind, f = self._legal_fields(self.kinds(_kinds_with(Mem.SPAD, writes=True)))
        regions = spec.BY_NAME[kind].regions
        write = next(r for r in regions if r.writes)
        read = self.rng.choice([r for r in regions if not r.writes and r.mem is write.mem and r.extent(f)])
        w_ext, r_ext = write.extent(f), read.extent(f)
        start = f[read.start] + self.rng.randint(-(w_ext - 1), r_ext - 1)
        if not 0 <= start <= self.p.SPAD_WORDS - w_ext:
            return None
        f[write.start] = start
        return kind, f

    def _bad_index(self, before: Sequence) -> list[int]:
        """A GATHER whose row number, loaded just before it from a planted external word, is out
        of its table (rows, rows + 1, 2^16 + rows - 1: its low 16 bits in range, -1, 2^31):
        the LD and the GATHER as encoded words."""
        gather = self.legal("GATHER", note=False)
        rows = gather.rows
        row = self.rng.choice([rows, rows + 1, (1 << spec.ADDR_BITS) + rows - 1, (1 << 32) - 1, 1 << 31])
        load = self._row_load(gather, row, before)
        if load.op != "LD":       # every external word was stored to: a word the program leaves
            return self._stored_row(gather, before)    # nonzero, with rows = 1
        return [w for ins in (load, gather) for w in ins.encode()]

    def _stored_row(self, gather: Instruction, before: Sequence) -> list[int]:
        """For a machine whose every external word an ST of ``before`` writes (a tiny external
        memory): ``gather`` with rows = 1 after an LD of an external word the program leaves
        nonzero (the reference machine runs ``before`` to find it), or reading a nonzero
        scratchpad word itself, or, when every word is zero (a 4-word machine), after an SM of
        one value that writes 65,536 to its idx; as words."""
        run = Machine(self.p).run([*before, build("HALT", params=self.p)], self.ext_image())
        out = build("GATHER", params=self.p, **(gather.fields | {"rows": 1}))
        if np.count_nonzero(run.ext):
            src = int(self.rng.choice(np.flatnonzero(run.ext)))
            return [*build("LD", params=self.p, dst=gather.idx, src=src, len=1).encode(), *out.encode()]
        legal = [idx for idx in self.rng.sample(range(self.p.SPAD_WORDS), self.p.SPAD_WORDS)
                 if spec.check(out.spec, out.fields | {"idx": idx}, self.p)[0] is ErrorCode.NONE]
        for idx in legal:
            if run.spad[idx]:
                return build("GATHER", params=self.p, **(out.fields | {"idx": idx})).encode()
        # every word is zero: an SM of one value (any value) writes 1.0 in Q16, 65,536, to idx
        for idx in legal:
            for src in (w for w in range(self.p.SPAD_WORDS) if w != idx):
                sm = build("SM", params=self.p, strict=False, dst=idx, src=src, len=1)
                if spec.check(sm.spec, sm.fields, self.p)[0] is ErrorCode.NONE:
                    gather = build("GATHER", params=self.p, **(out.fields | {"idx": idx}))
                    return [*sm.encode(), *gather.encode()]
        raise AssertionError(f"seed {self.seed}: no nonzero word for a row number out of a table")

    # ------------------------------------------------------------------ row numbers

    def _row_load(self, gather: Instruction, row: int, before: Sequence) -> Instruction:
        """An LD of ``row`` into ``gather``'s idx word, from an external word planted for it (one
        no planted word and no ST of ``before`` touches), or, when there is none, an AMAX that
        writes a row number below rows (``sim.bench.row_number_for``)."""
        stored = [(ins.dst, ins.dst + ins.len) for ins in before
                  if isinstance(ins, Instruction) and ins.op == "ST"]
        for _ in range(20):
            a = self.rng.randrange(self.p.EXT_WORDS)
            if a not in self.planted and not any(lo <= a < hi for lo, hi in stored):
                self.planted[a] = row
                return build("LD", params=self.p, dst=gather.idx, src=a, len=1)
        return row_number_for(gather, self.rng, self.p)

    def with_rows(self, body: list) -> list:
        """``body`` with an LD of a row number in range before every legal GATHER (the first row,
        the last, or one between), so that a GATHER reads a row instead of stopping the program."""
        out: list = []
        for ins in body:
            if (isinstance(ins, Instruction) and ins.op == "GATHER"
                    and spec.check(ins.spec, ins.fields, self.p)[0] is ErrorCode.NONE):   # not a fault
                r = self.rng.random()
                row = 0 if r < 0.3 else ins.rows - 1 if r < 0.6 else self.rng.randrange(ins.rows)
                which = "first row" if row == 0 else "last row" if row == ins.rows - 1 else "row"
                self.features[f"GATHER {which}"] += 1
                # a small external memory keeps its words for a row number out of a table
                small = self.p.EXT_WORDS < PLANT_EXT_WORDS
                out.append(row_number_for(ins, self.rng, self.p) if small else self._row_load(ins, row, out))
            out.append(ins)
        return out

    # ------------------------------------------------------------------ programs

    def ext_image(self) -> np.ndarray:
        """Random external memory in chunks of 64 words: int8, int16, full 32-bit, small values
        (one chunk, cut, for an external memory of fewer than 64 words)."""
        draw = np.random.default_rng(self.seed)
        chunks = []
        for kind in draw.integers(0, 4, -(-self.p.EXT_WORDS // 64)):
            bounds = ((-128, 128), (-(1 << 15), 1 << 15), (-(1 << 31), 1 << 31), (-8, 9))[kind]
            chunks.append(draw.integers(*bounds, 64, dtype=np.int64))
        image = (np.concatenate(chunks)[:self.p.EXT_WORDS] & 0xFFFFFFFF).astype(np.uint32)
        for address, row in self.planted.items():      # the row numbers the LDs before GATHERs read
            image[address] = row & 0xFFFFFFFF
        return image

    def loads(self) -> list[Instruction]:
        """0 to 3 LDs of random external memory into the window (counted as LD)."""
        rng, (base, size) = self.rng, self.window
        out = []
        longest = min(size, LEN_MAX, self.p.EXT_WORDS)
        for _ in range(rng.choice((0, 1, 2, 3, 3))):
            n = rng.randint(max(1, longest // 4), longest)
            out.append(build("LD", params=self.p, dst=base + rng.randrange(0, size - n + 1),
                             src=rng.randrange(0, self.p.EXT_WORDS - n + 1), len=n))
            self.features["LD"] += 1
        return out

    def program(self) -> StressProgram:
        """Loads into the window, a body drawn by the seed's :class:`Strategy`, then the ending
        of ENDINGS[seed % 10]."""
        rng = self.rng
        ending = ENDINGS[self.seed % len(ENDINGS)]
        drawn = [*self.loads(), *strategy_for(self.seed, self.p).body(self)]
        body: list[Instruction | list[int]] = self.with_rows(drawn)
        if ending == HALT:
            body.append(build("HALT", params=self.p))
        elif ending != ErrorCode.NO_HALT.name:
            body.append(self._faulty(ErrorCode[ending], body))
            body += [self.legal(rng.choice(self.kinds())) for _ in range(rng.randint(0, 2))]   # never run
            body.append(build("HALT", params=self.p))
        self.features[f"ends {ending}"] += 1
        if any(isinstance(ins, list) for ins in body):
            program: list[Instruction] | list[int] = [w for ins in body for w in
                                                      (ins if isinstance(ins, list) else ins.encode())]
        else:
            program = body
        job = Job(program, self.ext_image(), name=f"seed {self.seed}", machine=self.p)
        return StressProgram(self.seed, ending, job, self.features)


@dataclass(frozen=True)
class Strategy:
    """A way of drawing a program's body, the instructions between its loads and its ending.

    Attributes:
        name: how reports name it.
        body: draws the body with the program's :class:`Generator` (its ``rng``, ``legal``,
            ``window``; it counts what it draws in ``features``).
    """

    name: str
    body: Callable[[Generator], list[Instruction | list[int]]]


def _kinds_with(mem: Mem, *, writes: bool = False) -> list[str]:
    """The kinds with a region in ``mem`` (with ``writes``: that write ``mem`` and read it too:
    the kinds whose destination can overlap a source), in the spec's order."""
    def has(kind: str, w: bool) -> bool:
        return any(r.mem is mem and r.writes == w for r in spec.BY_NAME[kind].regions)
    if writes:
        return [k for k in KINDS if has(k, True) and has(k, False)]
    return [k for k in KINDS if has(k, True) or has(k, False)]


def random_body(g: Generator) -> list[Instruction | list[int]]:
    """0 to BODY_MAX legal instructions, each of a kind drawn uniformly (all but HALT)."""
    return [g.legal(g.rng.choice(g.kinds())) for _ in range(g.rng.randint(0, BODY_MAX))]


COLLISIONS = {"RAW": (False, True), "WAR": (True, False), "WAW": (True, True)}
"""How a collide body's instruction meets an earlier one: whether its own region writes, and
whether the earlier one's does (read after write, write after read, write after write; the
hazards of docs/GA2.md section 7)."""
COLLIDE_RECENT = 3
"""A collide body's instruction meets one of the last this many instructions before it."""


def _colliding(g: Generator, kind: str, recent: Sequence[tuple[str, dict[str, int]]],
               collisions: Sequence[str] = tuple(COLLISIONS)) -> Instruction | None:
    """A legal ``kind`` one of whose scratchpad regions overlaps a region of one of ``recent``
    (kind, fields) so that the pair is a hazard of one of ``collisions`` (:data:`COLLISIONS`);
    None when 50 draws fail."""
    own = [r for r in spec.BY_NAME[kind].regions if r.mem is Mem.SPAD]
    for _ in range(50):
        fields = g._place(kind, g._values(kind))
        if fields is None or not own:
            continue
        other_kind, other = g.rng.choice(list(recent))
        name, (mine_writes, theirs_writes) = g.rng.choice([(c, COLLISIONS[c]) for c in collisions])
        mine = [r for r in own if r.writes == mine_writes and r.extent(fields)]   # not an empty one
        theirs = [r for r in spec.BY_NAME[other_kind].regions
                  if r.mem is Mem.SPAD and r.writes == theirs_writes and r.extent(other)]
        if not mine or not theirs:
            continue
        region, target = g.rng.choice(mine), g.rng.choice(theirs)
        extent, reach = region.extent(fields), target.extent(other)
        start = other[target.start] + g.rng.randint(-(extent - 1), reach - 1)
        fields[region.start] = min(max(start, 0), g.p.SPAD_WORDS - extent)
        if spec.check(spec.BY_NAME[kind], fields, g.p)[0] is not ErrorCode.NONE:
            continue
        if not spec.conflict(spec.spad_accesses(spec.BY_NAME[kind], fields),
                             spec.spad_accesses(spec.BY_NAME[other_kind], other)):
            continue        # clamped off the other's region
        g._note(kind, fields)
        g.features[f"collide {name}"] += 1
        return build(kind, params=g.p, **fields)
    return None


def collide_body(g: Generator) -> list[Instruction | list[int]]:
    """4 to BODY_MAX legal instructions, each (but the first) aimed at one of the few before it:
    a scratchpad region placed across one of theirs as a read after write, a write after read or
    a write after write, on another engine three times in four. On the machine whose engines
    overlap (OVERLAP = 1) the pairs are issued close together, so they wait on the hazard check
    and on the scratchpad's ports (what the cover point ``stress.waits`` counts); on the serial
    machine they check that each instruction sees the one before it."""
    done: list[tuple[str, dict[str, int]]] = []
    body: list[Instruction | list[int]] = []
    for _ in range(g.rng.randint(4, BODY_MAX)):
        kinds = g.kinds()
        if done and g.rng.random() < 0.75:
            last = spec.BY_NAME[done[-1][0]].counter
            kinds = [k for k in kinds if spec.BY_NAME[k].counter != last] or kinds
        kind = g.rng.choice(kinds)
        ins = _colliding(g, kind, done[-COLLIDE_RECENT:]) if done else None
        ins = ins or g.legal(kind)
        done.append((kind, dict(ins.fields)))
        body.append(ins)
    return body


LONG = 40
"""A fill body's blocker runs at least this many cycles (LD or VADD of 150 words and more, SM of
rows of 40, MM with K + M around 30)."""


def _long(g: Generator, engine: str) -> Instruction | None:
    """A legal instruction of ``engine`` of LONG cycles or more (None when 40 draws fail)."""
    kinds = [k for k in g.kinds() if spec.BY_NAME[k].counter == engine]
    for _ in range(40 if kinds else 0):
        kind = g.rng.choice(kinds)
        fields = g._place(kind, g._values(kind))
        if fields is not None and spec.check(spec.BY_NAME[kind], fields, g.p)[0] is ErrorCode.NONE \
                and spec.latency(spec.BY_NAME[kind], fields, g.p) >= LONG:
            g._note(kind, fields)
            return build(kind, params=g.p, **fields)
    return None


def fill_body(g: Generator) -> list[Instruction | list[int]]:
    """Blocks that fill the decoupled machine's queues (OVERLAP = 2, docs/GA2.md section 7): a
    long instruction on one engine, then STATION_SLOTS to STATION_SLOTS + 2 instructions of
    another, the first reading what the long one writes (so it waits, and the ones behind it
    fill its engine's queue until the front end holds the next), then one to three of any
    engine, aimed at the ones before them (hazards on queued instructions, writes after
    reads, instructions that pass the waiting ones once they enter)."""
    body: list[Instruction | list[int]] = []
    done: list[tuple[str, dict[str, int]]] = []
    while len(body) < BODY_MAX:
        blocker_engine, target = g.rng.sample(spec.ENGINES, 2)
        blocker = _long(g, blocker_engine)
        targets = [k for k in g.kinds() if spec.BY_NAME[k].counter == target]
        if blocker is None or not targets:
            continue
        block = [blocker]
        recent = [(blocker.op, dict(blocker.fields))]
        for k in range(g.rng.randint(spec.STATION_SLOTS, spec.STATION_SLOTS + 2)):
            kind = g.rng.choice(targets)
            ins = (_colliding(g, kind, recent[:1], ("RAW",)) if k == 0 else None) or g.legal(kind)
            block.append(ins)
            recent.append((ins.op, dict(ins.fields)))
        for _ in range(g.rng.randint(1, 3)):
            kind = g.rng.choice(g.kinds())
            ins = _colliding(g, kind, recent + done[-COLLIDE_RECENT:]) or g.legal(kind)
            block.append(ins)
            recent.append((ins.op, dict(ins.fields)))
        g.features["fill block"] += 1
        body += block
        done += recent
    return body


STRATEGIES: tuple[Strategy, ...] = (Strategy("random", random_body), Strategy("collide", collide_body))
"""The strategies programs are drawn with: program k uses :func:`strategy_for` (k). A new
strategy (edge-aimed programs, say) is one more entry here."""
DECOUPLED_STRATEGIES: tuple[Strategy, ...] = (*STRATEGIES, Strategy("fill", fill_body))
"""The strategies of the machine whose engines are decoupled (OVERLAP = 2): those of every
machine and ``fill``, whose programs fill its queues (the others' draws stay the same)."""


def strategy_for(seed: int, params: Params) -> Strategy:
    """The strategy of program ``seed`` on the machine ``params``: they take turns by ten seeds,
    so that every strategy meets every ending (ENDINGS)."""
    strategies = DECOUPLED_STRATEGIES if params.OVERLAP == 2 else STRATEGIES
    return strategies[(seed // len(ENDINGS)) % len(strategies)]


def long_program(seed: int, length: int, params: Params) -> Job:
    """A legal program of ``length`` instructions (loads, random legal ones, HALT) drawn from
    seed, and its external memory: for measuring simulated cycles per second."""
    g = Generator(seed, params)
    body = g.loads()
    body += [g.legal(g.rng.choice(g.kinds())) for _ in range(length - len(body) - 1)]
    body = g.with_rows(body)[:length - 1]      # an LD of its row number before every GATHER
    name = f"long program (seed {seed}, {length} instructions)"
    return Job([*body, build("HALT", params=params)], g.ext_image(), name=name, machine=params)


PORT_EVERY = 8
"""Programs whose seed is a multiple of this are loaded through the host's instruction-memory
write port (:attr:`cosim.jobs.Job.via_port`), the others by backdoor: the port's path is
checked in every chunk, at a cost of a few cycles per instruction."""


SPARE_EVERY = 2
"""Programs whose seed is odd carry random bits in every instruction's spare bits, the bits above
its last field (the ISA ignores them: ``sim.asm.decode`` reads the fields only), and run as their
words: the RTL must ignore them too. Found by an RTL mutant that a spare bit of the vector
unit's station entry could steer (m40, 2026-12-07): no program had set a spare bit."""


def _instructions(program: Sequence[Instruction] | Sequence[int],
                  ) -> Iterator[tuple[list[int], Instruction | None]]:
    """Each instruction of a program (Instructions, or words) as (its words, itself decoded, or
    None for an unknown opcode)."""
    words = [int(w) for w in program] if len(program) and not isinstance(program[0], Instruction) \
        else encode_program(program)
    for k in range(0, len(words), spec.INSTR_WORDS):
        chunk = words[k:k + spec.INSTR_WORDS]
        try:
            yield chunk, decode(chunk)
        except AsmError:
            yield chunk, None


def with_spare_bits(program: Sequence[Instruction] | Sequence[int], rng: random.Random) -> list[int]:
    """The program's words with random bits in every instruction's spare bits (:func:`spare_end`
    up); an instruction whose opcode is unknown keeps its words."""
    out = []
    for chunk, ins in _instructions(program):
        end = spec.INSTR_BITS if ins is None else spare_end(ins.spec)
        junk = rng.getrandbits(spec.INSTR_BITS - end) << end if end < spec.INSTR_BITS else 0
        out += or_bits(chunk, junk)
    return out


def generate(first: int, n: int, params: Params) -> list[StressProgram]:
    """Programs for seeds first .. first+n-1."""
    return list(programs(first, n, params))


def programs(first: int, n: int, params: Params) -> Iterator[StressProgram]:
    """Programs for seeds first .. first+n-1, each drawn when it is asked for; every
    :data:`PORT_EVERY` th is loaded through the host's instruction-memory port, every odd one
    carries random spare bits (:data:`SPARE_EVERY`)."""
    for seed in range(first, first + n):
        prog = edges.program(seed, params) or Generator(seed, params).program()  # cosim/edges.py: every 3rd
        prog.job.via_port = seed % PORT_EVERY == 0
        if seed % SPARE_EVERY == 1:
            prog.job.program = with_spare_bits(prog.job.program, random.Random(f"spare bits {seed}"))
        yield prog


def listing(program: Sequence[Instruction] | Sequence[int]) -> str:
    """A numbered listing; an unknown opcode shows as its raw words."""
    lines = []
    for pc, (chunk, ins) in enumerate(_instructions(program)):
        text = disassemble(ins) if ins is not None else \
            f"???? opcode {chunk[0] & 0xF} (words {' '.join(f'{w:08x}' for w in chunk)})"
        lines.append(f"{pc:5d}  {text}")
    return "\n".join(lines)


def make_chunk(arg: tuple[int, int, str | None], params: Params) -> pool.Made:
    """A chunk's programs (a :class:`cosim.pool.Recipe`'s ``make``): ``arg`` is (first seed,
    count, the file for the chunk's coverage or None). The info: programs, instructions, seeds,
    the coverage file."""
    first, n, coverage_file = arg
    progs = list(programs(first, n, params))
    if coverage_file is not None:
        model = coverage.Model(params)
        for prog in progs:
            model.sample(prog.job.program, prog.job.expected(params), prog.features.keys())
        model.export(Path(coverage_file))
    info = {"programs": n, "instructions": sum(prog.job.length for prog in progs), "first": first,
            "last": first + n - 1, "coverage": coverage_file}
    return pool.Made([prog.job for prog in progs], info)


def recipes(first: int, n: int, camp: Campaign | None, size: int = pool.CHUNK) -> list[pool.Recipe]:
    """Seeds first .. first+n-1 in chunks of ``size``; the campaign's coverage file per chunk."""
    out = []
    for number, start in enumerate(range(first, first + n, size)):
        count = min(size, first + n - start)
        path = None if camp is None else str(camp.coverage_file(number))
        out.append(pool.Recipe(make_chunk, (start, count, path), count))
    return out


def rerun_lines(seeds: Sequence[int], choice: str, options: Sequence[str] = (), *, first: int | None = None,
                chunk: int = pool.CHUNK) -> list[str]:
    """How to rerun each failing program exactly as it failed.

    A program starts from the scratchpad the one before it in its launch left (reset does not
    clear it: docs/GA2.md section 2; :attr:`cosim.jobs.RtlRun.spad_before`), and a fault may
    show only on those words. So the command for a program that was not its launch's first
    runs its launch's programs up to it, in one launch, the failing one last.

    Args:
        seeds: the failing programs' seeds.
        choice: the simulators of the run (``--sim``).
        options: the other command-line options that changed the run (``--mutant rq-round``,
            ``--verilog file``); make stress cannot pass them, so only the python command is
            given then.
        first: the run's first seed (its launches hold seeds first + i * chunk onwards); None:
            each program alone.
        chunk: programs per launch of the run (``--chunk``).
    """
    extra = "".join(f" {shlex.quote(o)}" for o in options)
    out = ["rerun a failing program as it failed (add --show to print the listings):"]
    for s in seeds:
        start = s if first is None else first + (s - first) // chunk * chunk
        more = f" --chunk {chunk}" if s - start + 1 > pool.CHUNK else ""
        python = f"python -m cosim stress --seed {start} --n {s - start + 1} --sim {choice}{more}{extra}"
        make = f"make stress SEED={start} N={s - start + 1} SIM={choice}"
        line = f"    {python}" if options or more else f"    {make}    # or: {python}"
        if start != s:
            line += f"    # seed {s} runs last, from the scratchpad {start}..{s - 1} leave"
        out.append(line)
    return out


def _coverage_lines(camp: Campaign, results: dict[int, pool.ChunkResult]) -> list[str]:
    """The run's summary line and its coverage (the chunks' files merged)."""
    infos = [results[k].info for k in sorted(results)]
    if not infos:
        return []
    lines = [coverage.summary_line(sum(i["programs"] for i in infos), sum(i["instructions"] for i in infos),
                                   infos[0]["first"], infos[-1]["last"])]
    files = [Path(i["coverage"]) for i in infos if i["coverage"] and Path(i["coverage"]).is_file()]
    if files:
        lines += coverage.report(coverage.merge(files, camp.merged_coverage), camp.merged_coverage)
    return lines


def campaign_line(folder: Path, first: int, n: int, choice: str, options: Sequence[str]) -> str:
    """Where the campaign is, and the command that reproduces it."""
    extra = "".join(f" {shlex.quote(o)}" for o in options)
    again = f"python -m cosim stress --seed {first} --n {n} --sim {choice}{extra}" if options \
        else f"make stress SEED={first} N={n} SIM={choice}"
    return f"campaign: {folder} ({again} reproduces it; add --resume to continue it after an interruption)"


def _show(first: int, n: int, params: Params) -> None:
    for prog in programs(first, n, params):
        batch.emit([f"{prog.job.name} (ends {prog.ending}):", listing(prog.job.program), ""])


def main(first: int, n: int, choice: str, *, waves: bool = False, verilog: Path | None = None,
         keep: bool = False, show: bool = False, options: Sequence[str] = (), resume: bool = False,
         campaign: Path | None = None, mutant: str | None = None, jobs: int | None = None,
         engine: str = "auto", chunk: int = pool.CHUNK) -> int:
    """The whole command; returns the exit status.

    ``options`` are the command-line options besides --seed, --n and --sim that change the run
    (for the rerun hint: :func:`rerun_lines`, and the campaign's identity). ``campaign`` is the
    campaign's folder (default: :func:`cosim.campaign.default_folder`). ``chunk``: programs per
    launch (a campaign resumes only with its own; the results do not depend on it).

    Raises:
        CosimError: no Verilog, or the campaign cannot be resumed.
    """
    note = seeds.long_run_note(n, batch.simulators(choice), "programs", jobs)
    if note:
        print(note, file=sys.stderr, flush=True)
    source = fresh_verilog(verilog, params=DEFAULT)   # none given: the default machine's
    params = verilog_params(source)
    if show:
        _show(first, n, params)
    folder = campaign or default_folder(first, n, choice, mutant, source)
    what = identity(first, n, choice, source, list(options))
    if chunk != pool.CHUNK:
        what["chunk"] = chunk
    with Campaign(folder, what, resume) as camp:
        done = camp.done()
        results = {r.number: r for r in done if r.simulator == batch.simulators(choice)[0]}

        def finished(result: pool.ChunkResult) -> None:
            camp.record(result)
            if result.simulator == batch.simulators(choice)[0]:
                results[result.number] = result

        outcomes = pool.run_stream(recipes(first, n, camp, chunk), choice, verilog=source, waves=waves,
                                   keep=keep, jobs=jobs, done=done, on_result=finished, engine=engine)
        lines = []
        for o in outcomes:
            lines += batch.verdict(o, WHAT)
        failing = sorted({first + f.index for o in outcomes for f in o.failures})
        if failing:
            lines += ["", *rerun_lines(failing[:10], choice, options, first=first, chunk=chunk)]
        lines += ["", *_coverage_lines(camp, results), "", *batch.timing(outcomes),
                  *batch.waves_lines(outcomes), campaign_line(folder, first, n, choice, options)]
    batch.emit(lines)
    if any(o.error for o in outcomes):
        return 2
    return 0 if all(o.ok for o in outcomes) else 1
