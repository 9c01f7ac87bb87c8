"""Stress programs aimed at the edges where hardware breaks (one strategy per edge).

Random fields rarely land on an exact rounding tie, a saturation boundary or a field one past
its limit. Every third stress program (seed % EDGE_EVERY == EDGE_REMAINDER) is made here
instead of by :class:`cosim.stress.Generator`; it ends as the stress seed says (HALT, or
each error code, ENDINGS[seed % 10]), so the stress run keeps its mix of endings, and it is
named ``seed N (edge: <strategy>)``. The body comes from one strategy, by turns, shifted
against the endings every TURN_SHIFT_EVERY programs so that each strategy meets every ending:

``rq_ties``
    RQ on int32 accumulators ``a`` and pairs (m, s) such that ``a * m`` is an exact tie at the
    shift, ``(2z + 1) * 2**(s-1)``, of both signs (rounding half away from zero), including
    results of exactly +-127.5 (which round to +-128 and saturate to +-127) and +-126.5, the
    neighbours ``a +- 1`` of every tie, 0 and the int32 extremes; with and without relu.
``rq_every_shift``
    one RQ for every shift s = 1 .. 63 on the products that decide the lanes' masks (m a
    power of two, so that p = a * m has exactly the bits asked for): +-2**(s-2) (below the
    rounding bit: -0.25 rounds to 0), +-2**(s-1) (the tie, -0.5 to -1), +-2**s, and +-2**(s+6),
    +-2**(s+7), +-2**(s+8) (64, 128, 256: the saturation boundary), each also with the tie
    added, in place (1,172 words: it fits a scratchpad of 2,048); a comparator of one shift's
    mask that is off by one fails here and nowhere else.
``rq_per_channel``
    RQ per output channel (pc = 1, issue 25): a table of C = 65 entries (odd, so that every
    channel meets every lane over LANES rows) with the shifts 0..63 and the products of
    ``rq_every_shift`` for each (s = 0 on +-127, +-128: no shift, no rounding); tables of C =
    LANES, LANES + 1, 2*LANES - 1 and 3*LANES + 1 words (a beat wrapping past the table's end at
    every lane) over rows shorter than C, of C and longer, with entries at their extremes (m = 0
    and 2**24 - 1, s = 0, 1 and 63, bits 31..30 set), ties of both signs per channel, in place.
``softmax_rows``
    SM rows that are all negative (-128 included), widely spread (max - min = 255, the last
    entry of the exp table, and differences where the table is 0), all equal, of length 4k+1
    (a lone element in the last beat), of length 1 and SM_MAX_LEN, the maximum first, last
    or twice, at every alignment of source and destination; and for every stage of the
    dividers that compares with 3z and every lane, a row of LANES + 2 whose element in that
    lane meets 3z within a few units there (``divider_grazes``), and for every lane a row
    whose element there is one unit of the dividers' numerator below a rounding step
    (``divider_steps``) and one whose element there is certain, p = 1.0 (``divider_certain``).
``mm_extremes``
    MM with K = K_MAX of -128 * -128 (sums of 2**20), -128 * 127, M = N = T, strides of 0,
    tb = 0 and 1, int8 words whose upper 24 bits are not a sign extension; MM acc = 1 onto int32
    words next to INT32_MAX and INT32_MIN, wrapping both ways.
``vector_edges``
    VADD sums of exactly +-127, +-128 (saturating) and 127 + -128, and on the same pairs the
    maximum (max = 1: -128 with -128 passes through, equal pairs, both ends), with relu; AMAX
    with ties inside a beat, across beats and in the last lane of a 4k+1 row, an all -128 row; UNPACK nibbles
    -8, 7, -1, 0; in place; every alignment; LUT on the inputs -128 and 127 (the table's ends),
    in place and onto its own table.
``touching_regions``
    every instruction with a long source and its destination right before or right after it;
    then, two rounds per engine, each after a GATHER (a fence: every engine idle), a long
    instruction of that engine and, entering while it runs, one short instruction of each other
    engine reading over its destination's first or last word or right beside it, or writing over
    or beside its source (``running_neighbours``: the bounds of a running instruction's regions in
    the decoupled machine's station, off by a few words, show here); then for MM and MMRQ, each
    strided region (A, B with tb = 0 and 1, the output) with its stride all ones, a one-word DMA
    neighbour over its last word and one on the word after it (``strided_neighbours``: a region
    end whose product stride * rows is wrong by a bit).
``layernorm_rows``
    LN (issue 26) on constant rows with eps = 0 (D = 0, r = 0) and 1, the row of one 127 among
    -128s (the largest |z|, sqrt(N - 1)) at LN_MAX_LEN where the scratchpad allows, rows of the
    two extremes (the largest variance), a row of zeros and one 1 (the smallest), length 1 and
    4k + 1, eps 2^32 - 1, bias words next to INT32_MAX and INT32_MIN (the sum wraps), in place
    over the row and over the bias; the row (0, 1) with eps setting D's width to each of 9..33,
    so that k, the count of D's leading zero pairs, takes every value from 17 to 5
    (``layernorm_every_k``).
``gather_rows``
    GATHER (issue 26) of the first and the last row of tables of 1 to 9 rows, both formats, rows
    of 1 to 5 elements and 4k + 1 (a packed word partly used), a table ending on the last
    external word, a row number written by AMAX (the greedy decoding loop), the destination
    touching the row number's word.
``field_limits``
    every bounded field at its limit (M = N = T, K = 1 and K_MAX, s = 1 and 63, m = 0 and
    2**24 - 1, SM len = SM_MAX_LEN, len = 1) and regions that end exactly at the last word of
    the scratchpad or of the external memory, or touch each other without overlapping; long
    regions (the whole scratchpad in one LD, an MM whose strided operands span most of it);
    LD fmt = 1 of 1 to 5 values (a packed word partly used) and one ending on the last external
    word.

The endings are edges too: a field one past its limit (BAD_FIELD), a region one word past
the end of its memory, short or long (SPAD_RANGE, EXT_RANGE), a destination overlapping a source by one word
(OVERLAP), a GATHER's row number just out of its table (BAD_INDEX: rows, rows + 1, 2^16 + rows -
1 whose low 16 bits are in range, -1, 2^31), and for half of them two faults in one instruction,
so that the error priority
shows (BAD_FIELD with a region out of range or an overlap; SPAD_RANGE with EXT_RANGE; an
unknown opcode over fields that are also out of range).

The host's instruction-memory port is covered by how programs are loaded, not by their
contents: every cosim.stress.PORT_EVERY th stress program (edge programs included) and the first
program of every seeds chunk are written through it (cosim/harness.py), the rest by backdoor.
"""

from __future__ import annotations

import functools
import itertools
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from sim import arith, spec
from sim.asm import AsmError, Instruction, build
from sim.spec import DEFAULT, ErrorCode, Mem, Params

from . import stressprogram
from .jobs import Job

EDGE_EVERY = 3
EDGE_REMAINDER = 2
"""Stress seed k is an edge program when k % EDGE_EVERY == EDGE_REMAINDER."""
TURN_SHIFT_EVERY = 50
"""Edge program q (seed q * EDGE_EVERY + EDGE_REMAINDER) takes strategy (q + q //
TURN_SHIFT_EVERY) % len(STRATEGIES), and ends as ENDINGS[seed % len(ENDINGS)]. Without the shift
(q % 10 alone, ten strategies and ten endings) the two have the same period, and each strategy
met one ending only (touching_regions always EXT_RANGE); shifted by one every 50 programs, each
meets every ending within 500 edge programs (1,500 seeds: 3 is prime to 10). The first 50 (seeds
below 150, what the RTL mutants are graded on) keep the order they had (:func:`strategy_of`)."""
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
TIE_ODD_PARTS = (1, 3, 5, 15, 17, 51, 85, 255)
"""Odd parts of the mantissa in rq_ties: the divisors of 255, so that 127.5 = 255/2 is a tie."""


class TooSmall(ValueError):
    """The machine's memories have no room for an edge program's regions (a small SPAD_WORDS
    or EXT_WORDS): the stress seed gets a random program instead."""


def is_edge(seed: int) -> bool:
    """Whether stress seed ``seed`` is an edge program."""
    return seed % EDGE_EVERY == EDGE_REMAINDER


# --------------------------------------------------------------------------- building blocks


@dataclass
class Builder:
    """A program under construction: the external-memory image, the body, and free space.

    Data goes to the external memory and is loaded (LD) into the scratchpad; the scratchpad
    is handed out upwards from a random start with small random gaps (so every alignment
    happens), never twice: regions of one program never overlap unless a strategy says so.
    """

    rng: random.Random
    params: Params
    body: list[Instruction] = field(default_factory=list)
    features: Counter = field(default_factory=Counter)
    spare_ones: set[int] = field(default_factory=set)
    """Indices into ``body`` of instructions whose words carry every spare bit set (the bits
    above their last field, which the ISA ignores: cosim.stressprogram.spare_end)."""

    def __post_init__(self):
        draw = np.random.default_rng(self.rng.getrandbits(32))
        self.ext = draw.integers(0, 1 << 32, self.params.EXT_WORDS, dtype=np.int64).astype(np.uint32)
        self.spad_next = self.rng.randrange(0, 8)
        self.ext_next = self.rng.randrange(0, 8)

    def spad(self, n: int) -> int:
        """A fresh scratchpad region of n words."""
        start = self.spad_next + self.rng.randrange(0, 4)
        if start + n > self.params.SPAD_WORDS:
            raise TooSmall(f"the edge program needs more than {self.params.SPAD_WORDS} scratchpad words")
        self.spad_next = start + n
        return start

    def load(self, values, int8: bool = False) -> int:
        """Put values in the external memory, LD them into a fresh scratchpad region; its start.

        int8 values get random upper 24 bits in half the words (only the low byte is read).
        """
        n = len(values)
        src = self.ext_next + self.rng.randrange(0, 4)
        if src + n > self.params.EXT_WORDS:
            raise TooSmall(f"the edge program needs more than {self.params.EXT_WORDS} external words")
        self.ext_next = src + n
        words = np.asarray(values, dtype=np.int64) & 0xFFFFFFFF
        if int8:
            noise = np.array([self.rng.getrandbits(24) if self.rng.random() < 0.5 else 0 for _ in range(n)],
                             dtype=np.int64)
            words = (words & 0xFF) | (noise << 8)
        self.ext[src:src + n] = words.astype(np.uint32)
        dst = self.spad(n)
        self.add("LD", dst=dst, src=src, len=n)
        return dst

    def add(self, op: str, **fields: int) -> Instruction:
        ins = build(op, params=self.params, **fields)
        self.body.append(ins)
        return ins


def int8s(rng: random.Random, n: int, lo: int = -128, hi: int = 127) -> list[int]:
    return [rng.randint(lo, hi) for _ in range(n)]


# --------------------------------------------------------------------------- rq_ties


def tie_pair(rng: random.Random, s: int, q: int) -> tuple[int, int] | None:
    """A mantissa m = q * 2**j and a step u = 2**(s-1-j) for shift s: then a = k * u with k odd
    gives a * m = k * q * 2**(s-1), an exact tie at the shift (value k*q/2). None when no j
    fits (m < 2**24, and 255 * u within int32: from s = 47 on a * m < 2**55 cannot reach
    2**(s-1) * 255, and results are small or 0)."""
    low = max(0, s - 1 - 22)                 # 255 * 2**(s-1-j) < 2**31
    high = min(s - 1, arith.MANTISSA_BITS - q.bit_length())
    if low > high:
        return None
    j = rng.randint(low, high)
    return q << j, 1 << (s - 1 - j)


def tie_accumulators(rng: random.Random, q: int, u: int) -> list[int]:
    """int32 accumulators for mantissa odd part q and step u: ties of both signs (255/q odd
    multiples: +-127.5; 253: +-126.5 when q divides it; small and random odd ones), each
    tie's neighbours, zero and the int32 extremes."""
    odd = {255 // q, 1, 3, rng.randrange(1, 2 * max(1, 255 // q), 2)}
    if 253 % q == 0:
        odd.add(253 // q)
    out = []
    for k in sorted(odd):
        a = k * u
        if a <= INT32_MAX:
            out += [a, -a]
            if u > 1:
                out += [a + 1, -a - 1, a - 1, -(a - 1)]
    return [*out, 0, INT32_MIN, INT32_MAX]


def rq_ties(b: Builder) -> None:
    shifts = [1, 2, 8, 16, 24, 31, 32, 40, 44, 46, b.rng.randint(1, 46)]
    for s in b.rng.sample(shifts, 5):
        q = b.rng.choice([q for q in TIE_ODD_PARTS if tie_pair(random.Random(0), s, q) is not None])
        m, u = tie_pair(b.rng, s, q)
        values = tie_accumulators(b.rng, q, u)
        b.rng.shuffle(values)
        src = b.load(values)
        relu = b.rng.randint(0, 1)
        in_place = b.rng.random() < 0.3
        b.add("RQ", dst=src if in_place else b.spad(len(values)), src=src, len=len(values), m=m, s=s,
              relu=relu)
        b.features["edge: RQ ties"] += 1


def shift_products(s: int) -> tuple[int, list[int]]:
    """(m, accumulators) for shift s: m = 2**t with t as small as lets a stay within int32, and
    the a with a * m = +-2**j and +-(2**j + 2**(s-1)) for j in s-2 .. s+8 where they fit."""
    t = min(arith.MANTISSA_BITS - 1, max(0, s - 21))
    values = []
    for j in (s - 2, s - 1, s, s + 6, s + 7, s + 8):
        if j < t or j - t > 29:
            continue
        for p in (1 << j, (1 << j) + (1 << (s - 1)) if s - 1 >= t else None):
            if p is not None:
                values += [p >> t, -(p >> t)]
    return 1 << t, values


def rq_every_shift(b: Builder) -> None:
    table = [(s, *shift_products(s)) for s in range(1, 64)]
    src = b.load([a for _, _, values in table for a in values])
    for s, m, values in table:
        if values:
            b.add("RQ", dst=src, src=src, len=len(values), m=m, s=s, relu=0)    # in place; relu would hide -1
        src += len(values)
    b.features["edge: RQ every shift"] += 1
    if spec.built(spec.BY_NAME["MMRQ"], b.params):
        mmrq_every_shift(b)


def mmrq_every_shift(b: Builder) -> None:
    """OVERLAP = 2: rq_every_shift's products through the requantizer chained on the matrix unit.
    Each MMRQ has acc = 1 and A = 0, so its sums are exactly the int32 words already at dst, and
    the chained requantizer (a Requantizer of its own, inside hw/mxu.py) sees the values that
    decide each shift's rounding masks, as the vector unit's does (a draw of mutants found its
    masks at large shifts unchecked: docs/guide/verification.md). Tiles of T rows of T words."""
    t = b.params.T
    zeros = b.load([0] * t)                 # A (M x 1, lda 1) and B (1 x T): every product 0
    shifts = [(s, *shift_products(s)) for s in range(1, 64)]
    table = b.load([arith.pack_rq_pair(m, s) for s, m, _ in shifts])
    for s, _m, values in shifts:
        if not values:
            continue
        rows = -(-len(values) // t)
        dst = b.load([*values, *[0] * (rows * t - len(values))])
        for r in range(0, rows, t):
            b.add("MMRQ", dst=dst + r * t, A=zeros, B=zeros, M=min(t, rows - r), K=1, N=t, tb=0,
                  lda=1, ldb=1, ldc=t, acc=1, tab=table + s - 1, pc=0, relu=0)
    b.features["edge: MMRQ every shift"] += 1


# --------------------------------------------------------------------------- rq_per_channel


def _entry_extremes(rng: random.Random) -> int:
    """A table word with its pair at an extreme and bits 31..30 random (the machine ignores them)."""
    m = rng.choice((0, 1, (1 << arith.MANTISSA_BITS) - 1, rng.randrange(1 << 23, 1 << 24)))
    s = rng.choice((0, 1, 63, rng.randint(20, 45), rng.randint(0, 63)))
    return arith.pack_rq_pair(m, s) | rng.randrange(4) << 30


EVERY_SHIFT_CHANNELS = 65
"""rq_per_channel's first RQ: a channel for every shift 0..63 and one more (shift 0 again)."""


def rq_per_channel(b: Builder) -> None:
    table_rewritten_behind(b)
    rng, lanes = b.rng, b.params.LANES
    # every shift 0..63 on the products that decide its masks, each channel in every lane
    channels = EVERY_SHIFT_CHANNELS
    pairs = [shift_products(c % 64) if c % 64 else (1, [127, -127, 128, -128, 1, -1, 64, 256])
             for c in range(channels)]
    table = b.load([arith.pack_rq_pair(m, c % 64) for c, (m, _) in enumerate(pairs)])
    extremes = [INT32_MIN, INT32_MAX, 0, -1]      # shifts from 53 up: |a * m| < 2**55 rounds to 0
    rows = [[(values or extremes)[(r + c) % len(values or extremes)] for c, (_, values) in enumerate(pairs)]
            for r in range(lanes)]
    src = b.load([a for row in rows for a in row])
    b.add("RQ", dst=src, src=src, len=channels * lanes, m=0, s=0, relu=0, pc=1, tab=table, C=channels)
    b.features["edge: RQ per channel, every shift in every lane"] += 1
    # tables that wrap inside a beat, rows shorter and longer than the table, extreme entries
    for c in (lanes, lanes + 1, 2 * lanes - 1, 3 * lanes + 1):
        if b.spad_next + 14 * c + 40 > b.params.SPAD_WORDS:
            break                   # a wide machine's small scratchpad: as many as fit
        table = b.load([_entry_extremes(rng) for _ in range(c)])
        for n in (1, c - 1, c, c + 1, 3 * c + 2):
            src = b.load([rng.choice((INT32_MIN, INT32_MAX, 0, rng.randint(-(1 << 20), 1 << 20)))
                          for _ in range(n)])
            dst = src if rng.random() < 0.3 else b.spad(n)
            b.add("RQ", dst=dst, src=src, len=n, m=0, s=0, relu=rng.randint(0, 1), pc=1, tab=table, C=c)
        b.features["edge: RQ per channel, C around LANES"] += 1
    rq_per_channel_ties(b)


def table_rewritten_behind(b: Builder) -> None:
    """A per-channel RQ waiting second in the vector unit's queue (at OVERLAP = 2: behind a long
    VADD running and a short one waiting) while an LD rewrites its table: the LD must wait for
    the RQ's reads (a write after read on the table, docs/GA2.md section 7), else the RQ takes
    the new pairs. The table starts at an address with bit 5 clear, and the RQ's words carry
    every spare bit set, which the ISA ignores: mutant m40 of the RTL mutants' draw at OVERLAP = 2
    of 2026-12-07 inverted bit 5 of that queue entry's table start while its instruction's bit
    119 was 1, so the region began 32 words later, past its end, and the LD's write missed it.
    First in its program, so that the vector unit is idle and the long VADD, whose operands
    nothing in the program writes (what the run before left there), starts at once."""
    p, rng, lanes = b.params, b.rng, b.params.LANES
    long = 32 * lanes                   # 32 beats: it runs while the three behind it enter
    after = EVERY_SHIFT_CHANNELS * (lanes + 1) + 16     # what rq_per_channel's first RQ takes after it
    # external words: the RQ's values (b.load leaves a gap of up to 3 before them) and two tables
    if b.spad_next + 2 * long + 6 * lanes + 80 + after > p.SPAD_WORDS \
            or b.ext_next + 4 * lanes + 4 > p.EXT_WORDS:
        return                          # a machine too small for both
    a, c = b.spad(long), b.spad(long)
    values = b.load([rng.randint(-(1 << 20), 1 << 20) for _ in range(2 * lanes)])
    table = b.spad_next
    while table & 32:                   # bit 5 of the table's start clear
        table += 1
    pairs = [[arith.pack_rq_pair(rng.randrange(1 << 23, 1 << 24), rng.randint(8, 24)) for _ in range(lanes)]
             for _ in range(2)]
    srcs = []
    for entries in pairs:
        srcs.append(b.ext_next)
        b.ext[b.ext_next:b.ext_next + lanes] = entries
        b.ext_next += lanes
    b.spad_next = table + lanes
    b.add("LD", dst=table, src=srcs[0], len=lanes)
    b.add("VADD", dst=b.spad(long), src1=a, src2=c, len=long)
    b.add("VADD", dst=b.spad(lanes), src1=a, src2=c, len=lanes)
    b.add("RQ", dst=b.spad(2 * lanes), src=values, len=2 * lanes, m=0, s=0, relu=0, pc=1, tab=table, C=lanes)
    b.spare_ones.add(len(b.body) - 1)
    b.add("LD", dst=table, src=srcs[1], len=lanes)
    b.features["edge: RQ's table rewritten behind it"] += 1


def rq_per_channel_ties(b: Builder) -> None:
    """Ties of both signs per channel: channel c's pair from tie_pair at its own shift, its
    accumulators the ties of that pair (each row a different tie of every channel)."""
    rng, lanes = b.rng, b.params.LANES
    channels = lanes + rng.randint(1, lanes)
    found = []
    for _ in range(channels):
        s = rng.choice([1, 2, 8, 16, 24, 31, 32, 40, 46])
        q = rng.choice([q for q in TIE_ODD_PARTS if tie_pair(random.Random(0), s, q) is not None])
        m, u = tie_pair(rng, s, q)
        found.append((arith.pack_rq_pair(m, s), tie_accumulators(rng, q, u)))
    table = b.load([word for word, _ in found])
    rows = min(8, max(len(values) for _, values in found))
    if b.spad_next + 2 * rows * channels + channels + 12 > b.params.SPAD_WORDS:
        return
    src = b.load([values[r % len(values)] for r in range(rows) for _, values in found])
    b.add("RQ", dst=b.spad(rows * channels), src=src, len=rows * channels, m=0, s=0, relu=rng.randint(0, 1),
          pc=1, tab=table, C=channels)
    b.features["edge: RQ per channel ties"] += 1


# --------------------------------------------------------------------------- softmax_rows


def softmax_row_values(rng: random.Random, kind: str, n: int) -> list[int]:
    """One row of ``kind``: negative, spread, equal, tail (max in the last place), twin (two
    maxima) or random."""
    if kind == "negative":
        row = int8s(rng, n, -128, -1)
        row[rng.randrange(n)] = -128
    elif kind == "spread":
        row = [rng.choice((-128, 127, rng.randint(-128, -60), rng.randint(60, 127))) for _ in range(n)]
        row[rng.randrange(n)] = 127
        row[rng.randrange(n)] = -128
    elif kind == "equal":
        row = [rng.randint(-128, 127)] * n
    else:
        row = int8s(rng, n)
        top = max(row)
        if kind == "tail":
            row[-1] = min(127, top + 1)
        elif kind == "twin" and n > 1:
            i, j = rng.sample(range(n), 2)
            row[i] = row[j] = min(127, top + 1)
    return row


def softmax_rows(b: Builder) -> None:
    p = b.params
    odd = [4 * k + 1 for k in b.rng.sample(range(1, (p.SM_MAX_LEN - 1) // 4 + 1), 5)]
    lengths = [1, p.SM_MAX_LEN, p.SM_MAX_LEN, *odd, b.rng.randint(2, p.SM_MAX_LEN)]
    for n in lengths:
        kind = b.rng.choice(("negative", "spread", "equal", "tail", "twin", "negative", "spread"))
        if n == 1 or n == p.SM_MAX_LEN:
            kind = b.rng.choice(("negative", "spread", "equal"))
        src = b.load(softmax_row_values(b.rng, kind, n), int8=True)
        b.add("SM", dst=b.spad(n), src=src, len=n)
        b.features[f"edge: SM {kind}"] += 1
    divider_grazes(b)
    divider_steps(b)
    divider_certain(b)


def certain_row(lane: int, n: int) -> list[int]:
    """A softmax row of ``n`` values: 127 at ``lane``, -128 elsewhere. Every other e is
    EXP_LUT[255] = 0, so z = e and p = 65536 there: the dividers' raw quotient floor(2N / z)
    is 2**17 exactly, the top stage's largest digit (2) with a remainder of 0."""
    row = [-128] * n
    row[lane] = 127
    return row


def divider_certain(b: Builder) -> None:
    """For every lane, one SM row (:func:`certain_row`) whose element in that lane is certain
    (p = 1.0): the only rows whose top divider stage picks its digit 2, so a wrong bit of that
    digit's remainder (mutant m11 of the RTL mutants' draw at OVERLAP = 2 on the station-take
    netlist of 2026-12-07: bit 18 of lane 2's ``s0_diff2`` inverted, which seeds 100-111 and stress
    1..140 did not show) shows only on such rows."""
    p = b.params
    n = min(max(2, p.LANES), p.SM_MAX_LEN)
    _row_per_lane(b, range(min(p.LANES, n)), lambda lane: certain_row(lane, n),
                  "edge: SM certain in one lane")


def _row_per_lane(b: Builder, lanes: range, row_of: Callable[[int], list[int]], feature: str) -> None:
    """One SM over ``row_of(lane)`` for each lane, each counted as ``feature``; stops quietly on a
    machine whose long rows filled the scratchpad."""
    for lane in lanes:
        try:
            row = row_of(lane)
            src = b.load(row, int8=True)
            b.add("SM", dst=b.spad(len(row)), src=src, len=len(row))
        except TooSmall:
            return
        b.features[feature] += 1


STEP_LOW = -61
"""Beside two elements of 127, an element of -61 has e = EXP_LUT[188] = 1 (the table's last
nonzero entry; -128 adds 0), so z = 2 * 65536 + 1 and p = round(65536 / 131073) = 0, one unit
of the dividers' numerator (e << 17 = 2 ** 17) below the rounding step: 2 ** 17 + z = 2z - 1."""


def step_row(lane: int, n: int) -> list[int]:
    """A softmax row of ``n`` >= 3 values: STEP_LOW at ``lane``, 127 in the first two other
    places, -128 elsewhere."""
    row = [-128] * n
    row[lane] = STEP_LOW
    for i in [i for i in range(n) if i != lane][:2]:
        row[i] = 127
    return row


def divider_steps(b: Builder) -> None:
    """For every lane, one SM row (:func:`step_row`) whose element in that lane sits one unit of
    the numerator below a rounding step: a numerator bit the dividers' ``rest`` registers hold
    wrongly set (they are all 0: the dividend is e << 16, hw/softmax.py) moves it from 0 to 1
    (mutant m11 of the RTL mutants' draw at OVERLAP = 2 of 2026-12-07: bit 3 of stage 1's
    ``rest`` inverted while bit 8 is 0, that is always; random rows show such a bit about once
    in 2,500)."""
    p = b.params
    n = max(3, p.LANES)
    if n <= p.SM_MAX_LEN:
        _row_per_lane(b, range(p.LANES), lambda lane: step_row(lane, n),
                      "edge: SM one unit below a rounding step")


GRAZE_TRIES = 4
"""Random rows tried for each (stage, lane) of :func:`divider_grazes` before it gives that one up."""


@functools.cache
def _divider(params: Params) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """The softmax dividers' shape (hw/divider.py): raw quotient bits, bits and largest digit of
    each stage."""
    from hw.softmax import SoftmaxUnit

    div = SoftmaxUnit(params).dividers[0]
    return div.raw_bits, tuple(div.stage_bits), tuple(div.stage_digits)


def _divider_stages(params: Params) -> list[tuple[int, int]]:
    """Each stage of the softmax's dividers that compares with the odd multiple 3z (a register
    of its own, carried from stage to stage: hw/divider.py): (bits of the numerator not yet
    shifted in before it, bits it retires)."""
    raw_bits, stage_bits, stage_digits = _divider(params)
    out, rest = [], raw_bits
    for w, digits in zip(stage_bits, stage_digits, strict=True):
        if digits >= 3:
            out.append((rest, w))
        rest -= w
    return out


def divider_quotient(e: int, z: int, params: Params, flip_rest: int | None = None) -> int:
    """round(e * 65536 / z) as the dividers form it, digit by digit (hw/divider.py: numerator
    e << 17, each digit the largest j with j * z <= the partial remainder, (raw + 1) >> 1); with
    bit 2 of 3z inverted in the stage that starts with ``flip_rest`` numerator bits left."""
    raw_bits, stage_bits, stage_digits = _divider(params)
    numer, rest, raw = e << arith.Q16_ONE.bit_length(), raw_bits, 0
    rem = numer >> rest
    for w, digits in zip(stage_bits, stage_digits, strict=True):
        mults = [j * z for j in range(digits + 1)]
        if rest == flip_rest and digits >= 3:
            mults[3] ^= 4
        rest -= w
        shifted = (rem << w) | ((numer >> rest) & ((1 << w) - 1))
        digit = max(j for j, mult in enumerate(mults) if shifted >= mult)
        rem, raw = shifted - mults[digit], (raw << w) | digit
    return (raw + 1) >> 1


def near_a_graze(e, z, rest: int):
    """The cheap test of :func:`grazes`, on ints or element by element on numpy int64 arrays: bits
    0 and 1 of 3z are 1, the stage's digit is 3, so the partial remainder it leaves is off by 4,
    which moves the rounded quotient only when e * 2**17 + z lies within 4 * 2**(rest - 2) of a
    multiple of 2z."""
    numer, x3 = e << arith.Q16_ONE.bit_length(), 3 * z
    near = (numer + z) % (2 * z)
    reach = 4 << max(rest - 2, 0)
    digit_3 = ((x3 & 3) == 3) & (((numer >> rest) % z) << 2 >= x3 + 4)
    return digit_3 & ((near < reach) | (near >= 2 * z - reach))


def grazes(e: int, z: int, rest: int, params: Params) -> bool:
    """Whether inverting bit 2 of 3z in the stage that starts with ``rest`` numerator bits left
    changes the quotient round(e * 65536 / z), while bits 0 and 1 of 3z are 1 (so a flip gated
    by either shows too): :func:`near_a_graze` first, then :func:`divider_quotient` decides."""
    if not near_a_graze(e, z, rest):
        return False
    return divider_quotient(e, z, params, rest) != divider_quotient(e, z, params)


def graze_row(rng: random.Random, params: Params, lane: int, rest: int, n: int) -> list[int] | None:
    """A softmax row of ``n`` int8 values (n >= 3, maximum 127) whose element ``lane`` meets 3z
    at the stage that starts with ``rest`` numerator bits left as :func:`grazes` says: random
    rows, each with element ``lane`` (its values in a random order) and one other (its values
    upwards) swept over their values, the first pair that grazes taken; None when GRAZE_TRIES
    rows find none. The cheap test runs on all 65,536 pairs of a row at once (numpy), the exact
    one on those it passes, in the sweep's order."""
    lut = arith.EXP_LUT
    exp_of = np.array([lut[127 - x] for x in range(-128, 128)], dtype=np.int64)   # by x + 128
    for _ in range(GRAZE_TRIES):
        row = int8s(rng, n)
        top, swept = rng.sample([i for i in range(n) if i != lane], 2)
        row[top] = 127
        base = sum(lut[127 - x] for i, x in enumerate(row) if i not in (lane, swept))
        order = rng.sample(range(-128, 128), 256)
        e = exp_of[np.array(order) + 128][:, None]          # lane's value a, in the sweep's order
        z = base + e + exp_of[None, :]                      # swept's value v = -128 .. 127
        for i, j in zip(*np.nonzero(near_a_graze(e, z, rest)), strict=True):   # row by row
            if grazes(int(e[i, 0]), int(z[i, j]), rest, params):
                row[lane], row[swept] = order[i], int(j) - 128
                return row
    return None


def divider_grazes(b: Builder) -> None:
    """For every stage of the dividers that uses 3z and every lane, one short SM row whose
    element in that lane meets 3z within a few units there: a low bit of the odd multiple's
    register wrong (mutant m12 of the RTL mutants' draw of 2026-12-06: bit 2 of stage 2's 3z
    inverted when bit 1 is 1) changes that element's quotient by one, which random rows show once
    in about 500."""
    p = b.params
    n = p.LANES + 2
    for rest, _ in _divider_stages(p):
        for lane in range(p.LANES):
            row = graze_row(b.rng, p, lane, rest, n)
            if row is None:
                continue
            try:
                src = b.load(row, int8=True)
                b.add("SM", dst=b.spad(n), src=src, len=n)
            except TooSmall:            # a machine whose long rows filled the scratchpad: as many as fit
                return
            b.features["edge: SM grazing 3z"] += 1


# --------------------------------------------------------------------------- mm_extremes


def mm_extremes(b: Builder) -> None:
    p = b.params
    for k, (fill_a, fill_b) in enumerate(((-128, -128), (-128, 127), (127, 127), (None, -128))):
        K = p.K_MAX if k < 3 else b.rng.choice((1, p.K_MAX))
        M, N, tb = p.T, p.T, b.rng.randint(0, 1)
        lda = b.rng.choice((K, 0, K + 1))
        ldb = b.rng.choice((K if tb else N, 0))
        a_len = (M - 1) * lda + K
        b_len = (N - 1) * ldb + K if tb else (K - 1) * ldb + N
        if b.spad_next + a_len + b_len + M * N + 3 * 3 > p.SPAD_WORDS:
            break       # a large array's cases fill the scratchpad (T = 8: three of four fit)
        a_values = [fill_a if fill_a is not None else b.rng.randint(-128, 127) for _ in range(a_len)]
        A = b.load(a_values, int8=True)
        B = b.load([fill_b] * b_len, int8=True)
        b.add("MM", dst=b.spad(M * N), A=A, B=B, M=M, K=K, N=N, tb=tb, lda=lda, ldb=ldb, ldc=N)
        b.features["edge: MM extremes"] += 1
    if not b.features["edge: MM extremes"]:     # none fits (a large T, a small scratchpad): K = 1 at least
        A, B = b.load([-128] * p.T, int8=True), b.load([-128] * p.T, int8=True)
        b.add("MM", dst=b.spad(p.T * p.T), A=A, B=B, M=p.T, K=1, N=p.T, tb=1, lda=1, ldb=1, ldc=p.T)
        b.features["edge: MM extremes"] += 1
    mm_acc_wraps(b)


def mm_acc_wraps(b: Builder) -> None:
    """MM acc = 1 (issue 14) onto int32 words next to INT32_MAX and INT32_MIN, with a product
    of K_MAX * (-128)^2 = 2^20 (or its negative), so that the sum wraps modulo 2^32 both ways."""
    p = b.params
    M, N, K = p.T, p.T, p.K_MAX
    if b.spad_next + M * N + 2 * M * K + 3 * 3 > p.SPAD_WORDS:
        return
    near = [INT32_MAX - b.rng.randrange(1 << 20) if i % 2 else INT32_MIN + b.rng.randrange(1 << 20)
            for i in range(M * N)]
    acc = b.load(near)
    fill = b.rng.choice((-128, 127))
    A = b.load([-128] * (M * K), int8=True)
    B = b.load([fill] * (K * N), int8=True)
    b.add("MM", dst=acc, A=A, B=B, M=M, K=K, N=N, tb=0, lda=K, ldb=N, ldc=N, acc=1)
    b.features["edge: MM acc=1 wraps"] += 1


# --------------------------------------------------------------------------- vector_edges


def vector_edges(b: Builder) -> None:
    rng = b.rng
    n = 4 * rng.randint(1, 12) + 1
    pairs = [(127, 127), (-128, -128), (127, -128), (-127, -1), (-127, -2), (63, 64), (-64, -63), (0, -128)]
    firsts = [pairs[i % len(pairs)][0] for i in range(n)]
    seconds = [pairs[i % len(pairs)][1] for i in range(n)]
    s1, s2 = b.load(firsts, int8=True), b.load(seconds, int8=True)
    dst = s1 if rng.random() < 0.3 else b.spad(n)
    b.add("VADD", dst=b.spad(n), src1=s1, src2=s2, len=n, max=1)      # before the sums overwrite s1
    b.add("VADD", dst=b.spad(n), src1=s2, src2=s1, len=n, max=1, relu=1)
    b.add("VADD", dst=dst, src1=s1, src2=s2, len=n)
    b.features["edge: VADD max"] += 1
    for kind in ("tail", "twin", "all -128", "first"):
        m = 4 * rng.randint(0, 15) + 1
        row = [-128] * m if kind == "all -128" else int8s(rng, m, -128, 100)
        if kind == "tail":
            row[-1] = 127
        elif kind == "twin" and m > 1:
            i = rng.randrange(m - 1)
            row[i] = row[rng.randrange(i + 1, m)] = 127
        elif kind == "first":
            row[0] = row[-1] = 127
        b.add("AMAX", dst=b.spad(1), src=b.load(row, int8=True), len=m)
        b.features[f"edge: AMAX {kind}"] += 1
    packed = [int("".join(rng.choice("8f70") for _ in range(8)), 16) for _ in range(rng.randint(1, 6))]
    b.add("UNPACK", dst=b.spad(8 * len(packed)), src=b.load(packed), len=len(packed))
    b.features["edge: VADD saturation"] += 1
    lut_edges(b)


def lut_edges(b: Builder) -> None:
    """LUT (issue 14) on the inputs -128 and 127 (the table's first and last entries), -1, 0
    and 1, table entries whose upper 24 bits are not a sign extension, a row of 4k+1; then in
    place (dst == src) and onto its own table (dst == table)."""
    rng = b.rng
    table = b.load(int8s(rng, spec.LUT_TABLE_WORDS), int8=True)
    n = 4 * rng.randint(1, 8) + 1
    inputs = [(-128, 127, -1, 0, 1)[i] if i < 5 else rng.randint(-128, 127) for i in range(n)]
    src = b.load(inputs, int8=True)
    b.add("LUT", dst=b.spad(n), src=src, len=n, table=table)
    b.add("LUT", dst=src, src=src, len=n, table=table)
    b.add("LUT", dst=table, src=src, len=n, table=table)
    b.features["edge: LUT -128, 127, in place, onto its table"] += 1


# --------------------------------------------------------------------------- field_limits


def load_whole(b: Builder) -> int:
    """One LD of as much of the scratchpad as one instruction and the external memory allow
    (the whole scratchpad on the default machine; a len field holds 16 bits); its length."""
    p, rng = b.params, b.rng
    whole = min(p.SPAD_WORDS, p.EXT_WORDS, (1 << spec.ADDR_BITS) - 1)
    if whole < 2:
        raise TooSmall(f"no long regions in memories of {p.SPAD_WORDS} and {p.EXT_WORDS} words")
    b.add("LD", dst=0, src=rng.randrange(0, p.EXT_WORDS - whole + 1), len=whole)
    return whole


def long_regions(b: Builder) -> None:
    """The whole scratchpad loaded at once; a long ST to the end of the external memory; an MM
    whose strided A and B span most of the scratchpad (extents with their upper bits set, which
    the checker computes and compares); a LUT over all of it but its table."""
    p, rng = b.params, b.rng
    whole = load_whole(b)
    n = rng.randrange(whole // 4 + 1, whole)
    b.add("ST", src=rng.randrange(0, p.SPAD_WORDS - n + 1), dst=p.EXT_WORDS - n, len=n)
    K, out = rng.randint(1, p.K_MAX), p.SPAD_WORDS - p.T * p.T
    strides = max(p.T - 1, 1)                           # the row strides between T rows (T = 1: none)
    if (out - K) // strides < p.SPAD_WORDS // (4 * strides) or out - (p.T - 1) * K - K < 0:
        raise TooSmall(f"no room for a long strided MM in {p.SPAD_WORDS} scratchpad words")
    lda = rng.randint(p.SPAD_WORDS // (4 * strides), (out - K) // strides)
    ldb = rng.randint(K, (out - K) // strides)
    b.add("MM", dst=out, A=0, B=rng.randrange(0, out - (p.T - 1) * ldb - K + 1), M=p.T, K=K, N=p.T, tb=1,
          lda=lda, ldb=ldb, ldc=p.T)
    # a LUT in place over the rest of the scratchpad, its table the first 256 words: 960 beats
    # on the default machine (a draw of mutants found bit 9 of the unit's beat counter unchecked)
    table = spec.LUT_TABLE_WORDS
    if whole > 2 * table:
        b.add("LUT", dst=table, src=table, len=whole - table, table=0)
    b.features["edge: long regions"] += 1


def field_limits(b: Builder) -> None:
    p, rng = b.params, b.rng
    long_regions(b)
    src = b.load(int8s(rng, 64))
    b.add("MM", dst=b.spad(p.T * p.T), A=src, B=src + 1, M=p.T, K=1, N=p.T, tb=0, lda=1, ldb=0, ldc=p.T)
    acc = b.load([rng.randint(INT32_MIN, INT32_MAX) for _ in range(8)])
    for m, s in ((0, 1), ((1 << 24) - 1, 1), ((1 << 24) - 1, 63), (rng.randrange(1 << 24), 63)):
        b.add("RQ", dst=b.spad(8), src=acc, len=8, m=m, s=s, relu=rng.randint(0, 1))
    row = b.load(int8s(rng, p.SM_MAX_LEN), int8=True)
    b.add("SM", dst=b.spad(p.SM_MAX_LEN), src=row, len=p.SM_MAX_LEN)
    b.add("AMAX", dst=b.spad(1), src=row, len=1)
    # regions that end on the last word of each memory, and regions that touch
    last = p.SPAD_WORDS - p.SM_MAX_LEN
    b.add("SM", dst=last, src=row, len=p.SM_MAX_LEN)
    b.add("ST", src=last, dst=p.EXT_WORDS - p.SM_MAX_LEN, len=p.SM_MAX_LEN)
    b.add("LD", dst=p.SPAD_WORDS - 1, src=p.EXT_WORDS - 1, len=1)
    touch = b.spad(16)
    b.add("VADD", dst=touch, src1=touch + 8, src2=touch + 8, len=8)
    b.add("UNPACK", dst=p.SPAD_WORDS - 8 * 4, src=touch + 4, len=4)
    b.add("MM", dst=b.spad(p.T * p.T), A=touch, B=touch, M=p.T, K=4, N=p.T, tb=1, lda=0, ldb=0, ldc=p.T)
    b.features["edge: fields at their limits"] += 1
    packed_loads(b)


def packed_loads(b: Builder) -> None:
    """LD fmt = 1 (issue 14) of 1, 2, 3, 4 and 5 int8 values (a last word partly used), bytes
    -128, 127, -1 and 0, at random alignments, and one whose ceil(len/4) packed words end on the
    last word of the external memory."""
    p, rng = b.params, b.rng
    extremes = (0x80, 0x7F, 0xFF, 0x00)
    for n in (1, 2, 3, 4, 5, rng.randint(6, 64)):
        words = -(-n // spec.INT8_PER_WORD)
        src = p.EXT_WORDS - words if n > 5 else b.ext_next + rng.randrange(0, 4)
        if src + words > p.EXT_WORDS or b.spad_next + n + 4 > p.SPAD_WORDS:
            return
        b.ext_next = max(b.ext_next, src + words)
        for w in range(words):
            b.ext[src + w] = sum(rng.choice(extremes) << (8 * j) for j in range(spec.INT8_PER_WORD))
        b.add("LD", dst=b.spad(n), src=src, len=n, fmt=1)
    b.features["edge: LD fmt=1 lengths 1-5, to the last external word"] += 1


def touching_regions(b: Builder) -> None:
    """Every instruction with a long source (hundreds to thousands of words) and its destination
    touching it, just before or just after, without overlapping: the checker's region ends and
    overlap comparisons at their tightest, where a region end one too large makes a false
    OVERLAP."""
    rng = b.rng
    load_whole(b)
    for kind in ("RQ", "VADD", "AMAX", "UNPACK", "SM", "MM", "LN"):
        f = lengthened(b, kind, _legal_fields(b, kind))
        regions = spec.BY_NAME[kind].regions
        write = next(r for r in regions if r.writes)
        reads = [r for r in regions if not r.writes and r.mem is Mem.SPAD and r.extent(f)]
        if not reads:               # lengthened to nothing: a scratchpad of a few words
            raise TooSmall(f"no long {kind} in {b.params.SPAD_WORDS} scratchpad words")
        low = min(f[r.start] for r in reads)
        if rng.random() < 0.5 and low >= write.extent(f):
            f[write.start] = low - write.extent(f)          # ends where the sources begin
        b.add(kind, **f)
        b.features["edge: regions touching"] += 1
    running_neighbours(b)
    strided_neighbours(b)


NEIGHBOUR_PRODUCERS = {"dma": "LD", "mxu": "MM", "vpu": "VADD", "sfu": "SM"}
"""The long instruction of each engine that running_neighbours puts neighbours beside."""
NEIGHBOURS = ("LD", "ST", "MM", "RQ", "SM", "VADD", "AMAX", "UNPACK", "LN")
"""The kinds of the short neighbours (not GATHER, whose row numbers a random word would put out
of its table)."""
PLACEMENTS = ("first", "last", "before", "after")
"""Where a neighbour's region sits against the running instruction's: over its first words, over
its last word, ending where it starts, starting where it ends."""
NEIGHBOUR_MARGIN = 112
"""Free words on each side of the running instruction's regions in its round's window (more
than a neighbour's region: _legal_fields draws at most 24 elements, an MM's A at most T - 1 rows
of a stride of 27 and 24 more)."""
NEIGHBOUR_SLOT = 40
"""Words of the window for each neighbour's own destination."""
SPACERS = 2
"""At most this many short instructions of the long one's own engine come before its neighbours."""


def _long_fields(b: Builder, kind: str) -> dict[str, int]:
    """Fields of ``kind`` that keep its engine busy for dozens of cycles (48 to 96 words, K of 24
    to 40 for MM, rows of SM_MAX_LEN); the caller places its regions."""
    p, rng = b.params, b.rng
    f = _legal_fields(b, kind)
    if kind == "MM":
        f.update(K=rng.randint(min(24, p.K_MAX), min(40, p.K_MAX)), M=p.T, N=p.T)
        f.update(lda=f["K"], ldb=p.T if f["tb"] else f["K"])
    else:
        f["len"] = p.SM_MAX_LEN if kind == "SM" else rng.randint(48, 96)
    return f


def _outside(b: Builder, size: int, window: tuple[int, int]) -> int:
    """A start for a region of ``size`` words below or above ``window`` (0 when none fits)."""
    spots = [*range(0, window[0] - size + 1), *range(window[1], b.params.SPAD_WORDS - size + 1)]
    return b.rng.choice(spots) if spots else 0


def _neighbour(b: Builder, kinds: list[str], target: tuple[int, int], placement: str, writes: bool,
               slot: int, window: tuple[int, int]) -> tuple[str, dict] | None:
    """A short instruction of one of ``kinds`` whose scratchpad region that ``writes`` (or reads)
    sits at ``placement`` against ``target`` (start, end); its other regions: a destination at
    ``slot`` (in the round's window), sources outside the window. (kind, fields), or None when 40
    draws fail."""
    p, rng = b.params, b.rng
    start, end = target
    for _ in range(40):
        kind = rng.choice(kinds)
        ispec = spec.BY_NAME[kind]
        mine = [r for r in ispec.regions if r.mem is Mem.SPAD and r.writes == writes]
        if not mine:
            continue
        f = _legal_fields(b, kind)
        region = rng.choice(mine)
        e = region.extent(f)
        at = {"first": start, "last": end - 1, "before": start - e, "after": end}[placement]
        if e == 0 or not 0 <= at <= p.SPAD_WORDS - e:
            continue
        for other in ispec.regions:
            if other is region or other.mem is not Mem.SPAD:
                continue
            f[other.start] = slot if other.writes else _outside(b, other.extent(f), window)
        f[region.start] = at
        if spec.check(ispec, f, p)[0] is ErrorCode.NONE:
            return kind, f
    return None


def _spacer(b: Builder, kind: str, slot: int, window: tuple[int, int]) -> dict | None:
    """Legal short fields of ``kind`` writing at ``slot``, reading outside ``window`` (None when
    40 draws fail): an instruction that touches nothing of the round's."""
    p = b.params
    ispec = spec.BY_NAME[kind]
    for _ in range(40):
        f = _legal_fields(b, kind)
        for r in (r for r in ispec.regions if r.mem is Mem.SPAD):
            f[r.start] = slot if r.writes else _outside(b, r.extent(f), window)
        if spec.check(ispec, f, p)[0] is ErrorCode.NONE and all(
                r.extent(f) <= NEIGHBOUR_SLOT for r in ispec.regions if r.writes and r.mem is Mem.SPAD):
            return f
    return None


def _fence(b: Builder, dst: int, n: int, idx: int) -> None:
    """A GATHER (a fence: nothing after it enters the decoupled machine's station before it ends)
    of one table row of n words onto dst .. dst + n - 1: it waits for every earlier instruction
    that writes or reads there, so once it ends, what came before in that range has ended."""
    src = _table(b, 1, n, 0)
    b.add("GATHER", dst=dst, src=src, idx=idx, len=n, rows=1, fmt=0)


ROUND_PLACEMENTS = (("first", "after"), ("last", "before"))
"""The two rounds of an engine: the reads of each at these placements, each the first of its
engine's queue (one that waits for the long instruction would hold the one behind it)."""


def running_neighbours(b: Builder) -> None:
    """Two rounds for each engine (:data:`ROUND_PLACEMENTS`), in an order of their own: a fence
    (every engine idle after it), a long instruction of that engine (:data:`NEIGHBOUR_PRODUCERS`:
    dispatched at once, so it is the running one), one or two short ones of its own engine (so
    that the others enter a few cycles into its run, when the station compares them with it as
    the running entry), then short ones of the other engines, each the only one of its engine in
    the round, which enter while it runs: reads over its destination's
    first or last word, or right beside it, and a write over or beside its source. The station
    compares each entering instruction with every entry, the running one's regions included
    (docs/GA2.md section 7): a bound of those off by a few words lets one start before the
    words it reads are written (its engine is free), or holds one that touches nothing."""
    p, rng = b.params, b.rng
    if not stressprogram.fits("GATHER", p):
        raise TooSmall("no GATHER to fence the rounds with")
    idx = p.SPAD_WORDS - 1                                  # row 0 of every fence's one-row table
    src = b.ext_next + rng.randrange(0, 4)
    if src >= p.EXT_WORDS:
        raise TooSmall(f"no external word left for the fences' row number in {p.EXT_WORDS}")
    b.ext_next = src + 1
    b.ext[src] = 0
    b.add("LD", dst=idx, src=src, len=1)
    _fence(b, 0, idx, idx)                                  # all of touching_regions has ended
    rounds = [(e, at) for e in NEIGHBOUR_PRODUCERS for at in ROUND_PLACEMENTS]
    for engine, placements in rng.sample(rounds, len(rounds)):
        kind = NEIGHBOUR_PRODUCERS[engine]
        ispec = spec.BY_NAME[kind]
        f = _long_fields(b, kind)
        spad = [r for r in ispec.regions if r.mem is Mem.SPAD]
        slots = len(spec.ENGINES) - 1 + SPACERS             # one neighbour per other engine, the spacers
        size = sum(r.extent(f) + NEIGHBOUR_MARGIN for r in spad) + NEIGHBOUR_MARGIN + slots * NEIGHBOUR_SLOT
        if size >= idx:
            raise TooSmall(f"no room for a round of {size} words in {p.SPAD_WORDS} scratchpad words")
        w0 = rng.randrange(0, idx - size)
        at = w0 + NEIGHBOUR_MARGIN
        for r in spad:
            f[r.start] = at
            at += r.extent(f) + NEIGHBOUR_MARGIN
        for r in (r for r in ispec.regions if r.mem is Mem.EXT):
            f[r.start] = rng.randrange(0, p.EXT_WORDS - r.extent(f) + 1)
        window = (w0, w0 + size)
        b.add(kind, **f)
        for k in range(rng.randint(1, SPACERS)):     # the neighbours enter a few cycles into its run
            g = _spacer(b, kind, at + (len(spec.ENGINES) - 1 + k) * NEIGHBOUR_SLOT, window)
            if g is not None:
                b.add(kind, **g)
        write = next(r for r in spad if r.writes)
        reads = [r for r in spad if not r.writes]
        pairs = [(where, write, False) for where in placements]
        if reads:
            pairs.append((rng.choice(PLACEMENTS), rng.choice(reads), True))
        engines = rng.sample([e for e in spec.ENGINES if e != engine], len(spec.ENGINES) - 1)
        for k, ((where, region, writes), other) in enumerate(zip(pairs, engines, strict=False)):
            kinds = [n for n in NEIGHBOURS if spec.BY_NAME[n].counter == other and stressprogram.fits(n, p)]
            target = (f[region.start], f[region.start] + region.extent(f))
            slot = at + k * NEIGHBOUR_SLOT
            found = _neighbour(b, kinds, target, where, writes, slot, window) if kinds else None
            if found is not None:
                b.add(found[0], **found[1])
                hazard = "WAR" if writes else "RAW"
                b.features[f"edge: {hazard} neighbour {where} of a running {engine}"] += 1
        _fence(b, w0, size, idx)


STRIDED_ROUNDS = (("A", 0), ("B", 0), ("B", 1), ("dst", 0))
"""strided_neighbours's regions of MM and MMRQ (with tb): A, B both ways, the output."""
STRIDED_GAP = 8
"""Words between the regions of a strided round (a neighbour's word beside one touches no other)."""
STRIDED_ROOM = 640
"""Scratchpad words a strided round's regions take at most: strides of up to 2**7 - 1 at K = 4,
2**8 - 1 at K = 2 (each round's fence copies its words from the external memory: 32 rounds take
about 20K of them)."""


def _strided_fields(b: Builder, kind: str, region: str, tb: int, room: int) -> dict[str, int]:
    """Fields of ``kind`` (MM or MMRQ) with M = N = min(T, 4), K of 2 to 4, acc = 0 (MMRQ: pc and
    relu drawn), and the stride of ``region`` all ones, 2**w - 1 with w as large as its regions
    fit in ``room`` words (the others' strides 2**2 - 1 to 2**5 - 1), its regions placed from 0
    (the caller shifts them)."""
    p, rng = b.params, b.rng
    ispec = spec.BY_NAME[kind]
    drawn = {"pc": rng.randint(0, 1), "relu": rng.randint(0, 1)}     # MMRQ's; MM has neither
    f = {fl.name: drawn.get(fl.name, 0) for fl in ispec.fields}
    rows = min(p.T, 4)
    f.update(M=rows, N=rows, K=rng.randint(min(2, p.K_MAX), min(4, p.K_MAX)), tb=tb)
    stride = {"A": "lda", "B": "ldb", "dst": "ldc"}[region]
    for name in ("lda", "ldb", "ldc"):
        f[name] = (1 << rng.randint(2, 5)) - 1
    top = next(fl for fl in ispec.fields if fl.name == stride).legal_range(p)[1]
    spad = [r for r in ispec.regions if r.mem is Mem.SPAD]
    for w in range(top.bit_length(), 0, -1):
        f[stride] = min((1 << w) - 1, top)
        if sum(r.extent(f) + STRIDED_GAP for r in spad) <= room:
            break
    at = 0
    for r in spad:
        f[r.start] = at
        at += r.extent(f) + STRIDED_GAP
    return f


def _blocker(b: Builder, at: int) -> dict[str, int]:
    """An MM that keeps the matrix unit busy for dozens of cycles (M = N = T, K of 24 to 32),
    its regions from scratchpad word ``at`` on, STRIDED_GAP apart."""
    p = b.params
    k = b.rng.randint(min(24, p.K_MAX), min(32, p.K_MAX))
    a, bb = at, at + p.T * k + STRIDED_GAP
    return {"dst": bb + k * p.T + STRIDED_GAP, "A": a, "B": bb, "M": p.T, "K": k, "N": p.T, "tb": 0,
            "lda": k, "ldb": p.T, "ldc": p.T, "acc": 0}


def _blocker_words(p: Params) -> int:
    """The scratchpad words :func:`_blocker`'s regions take at most, the gaps included."""
    k = min(32, p.K_MAX)
    return 2 * p.T * k + p.T * p.T + 3 * STRIDED_GAP


def strided_neighbours(b: Builder) -> None:
    """For MM and MMRQ (where built), each of :data:`STRIDED_ROUNDS`, both placements and both
    states, one round after a fence: the instruction with that region's stride all ones and as
    wide as STRIDED_ROOM allows (:func:`_strided_fields`), then a VADD of one word: over the
    region's last word (writing over a source: it must wait for the reads; reading the output:
    it must wait for the write), or on the word right after it (it must not wait). In
    one state the instruction runs when the VADD enters, and the station compares it with the
    bounds the matrix unit forms at dispatch; in the other it waits behind a long MM
    (:func:`_blocker`), and the station compares it with the checker's region ends. Both ends of
    a strided operand are a product (stride * rows): a bit of the stride or of the product wrong
    moves the end by a multiple of K - 1 or M - 1 rows, which shows as a hazard missed or a false
    one in the hazard counter. The neighbour is the vector unit's, not the DMA's: a DMA
    neighbour's wait would pass to the fence behind it in the DMA's queue, and the fence
    overwrites the results (mutant m20 of the RTL mutants' draw at OVERLAP = 2
    on the station-take netlist of 2026-12-07 flipped bit 0 of the checker's MMRQ ldb in (K - 1)
    * ldb where bit 6 is 1: only a waiting MMRQ shows it; running_neighbours's long MM has
    strides of K and T only)."""
    p, rng = b.params, b.rng
    idx = p.SPAD_WORDS - 1                      # row 0 of the fences' table (running_neighbours)
    room = min(STRIDED_ROOM, idx - 2 * STRIDED_GAP - _blocker_words(p))
    for kind in ("MM", "MMRQ"):
        if not spec.built(spec.BY_NAME[kind], p) or not stressprogram.fits(kind, p):
            continue
        ispec = spec.BY_NAME[kind]
        spad = [r for r in ispec.regions if r.mem is Mem.SPAD]
        rounds = itertools.product(STRIDED_ROUNDS, ("last", "after"), ("running", "waiting"))
        for (region, tb), placement, state in rounds:
            f = _strided_fields(b, kind, region, tb, room)
            size = sum(r.extent(f) + STRIDED_GAP for r in spad)
            if size > room:
                raise TooSmall(f"no strided {kind} in {p.SPAD_WORDS} scratchpad words")
            spare = size                        # a word of the window the instruction leaves alone
            size += 1 + STRIDED_GAP + (_blocker_words(p) if state == "waiting" else 0)
            w0 = rng.randrange(0, idx - size - STRIDED_GAP + 1)
            for r in spad:
                f[r.start] += w0
            if state == "waiting":
                b.add("MM", **_blocker(b, w0 + size - _blocker_words(p)))
            if spec.check(ispec, f, p)[0] is not ErrorCode.NONE:
                raise AssertionError(f"strided_neighbours: {kind} {f} is not legal")
            b.add(kind, **f)
            target = next(r for r in spad if r.start == region)
            end = f[region] + target.extent(f)
            word = end - 1 if placement == "last" else end
            if target.writes:                   # reads the output's word
                b.add("VADD", dst=w0 + spare, src1=word, src2=word, len=1)
            else:                               # writes over the source's word
                b.add("VADD", dst=word, src1=w0 + spare, src2=w0 + spare, len=1)
            hazard = "RAW" if target.writes else "WAR"
            b.features[f"edge: {hazard} word {placement} of a {state} strided {kind} {region}"] += 1
            _fence(b, w0, size, idx)


# --------------------------------------------------------------------------- layernorm_rows, gather_rows


def layernorm_rows(b: Builder) -> None:
    p, rng = b.params, b.rng
    room = (p.SPAD_WORDS - b.spad_next - 64) // 3               # a row, its bias and its result
    longest = max(1, min(spec.LN_MAX_LEN, room))
    odd = 4 * rng.randint(1, 8) + 1
    rows = [
        ("one 127 among -128s, the largest |z|", [127] + [-128] * (longest - 1), 0),
        ("constant, eps = 0: D = 0", [rng.randint(-128, 127)] * odd, 0),
        ("constant, eps = 1", [rng.randint(-128, 127)] * odd, 1),
        ("the two extremes", [rng.choice((-128, 127)) for _ in range(odd)], (1 << 32) - 1),
        ("zeros and one 1", [0] * (odd - 1) + [1], rng.randint(0, 3)),
        ("length 1", [rng.randint(-128, 127)], rng.choice((0, 1, (1 << 32) - 1))),
    ]
    for name, row, eps in rows:
        n = len(row)
        if b.spad_next + 3 * n + 12 > p.SPAD_WORDS:
            continue
        src = b.load(row, int8=True)
        near = [INT32_MAX - rng.randrange(1 << 22) if i % 2 else INT32_MIN + rng.randrange(1 << 22)
                for i in range(n)]
        bias = b.load(near if rng.random() < 0.5 else [rng.randint(-(1 << 20), 1 << 20) for _ in range(n)])
        b.add("LN", dst=b.spad(n), src=src, len=n, bias=bias, eps=eps)
        b.features[f"edge: LN {name}"] += 1
        if n in (1, spec.LN_MAX_LEN):                       # cosim.coverage.CASES
            b.features[f"LN len={'1' if n == 1 else 'LN_MAX_LEN'}"] += 1
    # in place over the row, then over the bias
    n = 4 * rng.randint(0, 6) + rng.randint(1, 4)
    if b.spad_next + 2 * n + 8 <= p.SPAD_WORDS:
        src, bias = b.load(int8s(rng, n), int8=True), b.load([rng.randint(-999, 999) for _ in range(n)])
        b.add("LN", dst=src, src=src, len=n, bias=bias, eps=rng.getrandbits(12))
        b.add("LN", dst=bias, src=src, len=n, bias=bias, eps=0)
        b.features["edge: LN in place over the row and the bias"] += 1
        b.features["LN in place"] += 1
    layernorm_every_k(b)


LN_PAIR_WIDTHS = range(9, 34)
"""The widths of D = 256 * (N*S2 - S1^2) + eps that the row (0, 1) reaches (N*S2 - S1^2 = 1, eps
below 2^32): k = (LN_RECIP_BITS - width) // 2 from 17 down to 5, each of both parities."""


def layernorm_every_k(b: Builder) -> None:
    """LN on the row (0, 1) with eps chosen so that D has each width of :data:`LN_PAIR_WIDTHS`:
    every count of D's leading zero pairs from 17 to 5 (sim/arith.ln_solve's k), where random rows,
    whose D is near 2^31 or above, seldom go. A bit of the count lost at a level of the tree that
    only small D reach (hw/layernorm.leading_zero_pairs) changes the root, the reciprocal and the
    shift, and y = +-d_i * R / 2^shift with d_i = -1, +1."""
    p, rng = b.params, b.rng
    for width in LN_PAIR_WIDTHS:
        if b.spad_next + 6 + 4 > p.SPAD_WORDS:
            return
        low = 1 << (width - 1)
        pair = 1 << spec.LN_EPS_FRAC                            # D of the row (0, 1) with eps = 0
        eps = low - pair + rng.randrange(min(low, (1 << 32) - low + pair))   # 2^(width-1) <= D < 2^width
        src = b.load([0, 1], int8=True)
        bias = b.load([rng.randint(-999, 999) for _ in range(2)])
        b.add("LN", dst=b.spad(2), src=src, len=2, bias=bias, eps=eps)
        b.features[f"edge: LN k={(spec.LN_RECIP_BITS - width) // 2}"] += 1


def _table(b: Builder, rows: int, n: int, fmt: int, at_end: bool = False) -> int:
    """An embedding table of ``rows`` rows of ``n`` elements in the external memory (fresh, or
    ending on its last word), bytes -128, 127, -1 and 0 in a packed one; its address."""
    p, rng = b.params, b.rng
    words = rows * (-(-n // spec.INT8_PER_WORD) if fmt else n)
    src = p.EXT_WORDS - words if at_end else b.ext_next + rng.randrange(0, 4)
    if src < 0 or src + words > p.EXT_WORDS:
        raise TooSmall(f"an embedding table of {words} words does not fit {p.EXT_WORDS} external words")
    if not at_end:
        b.ext_next = src + words
    if fmt:
        for w in range(src, src + words):
            b.ext[w] = sum(rng.choice((0x80, 0x7F, 0xFF, 0x00, rng.randrange(256))) << (8 * j)
                           for j in range(spec.INT8_PER_WORD))
    return src


def gather_rows(b: Builder) -> None:
    rng = b.rng
    for k, n in enumerate((1, 2, 3, 4, 5, 4 * rng.randint(2, 16) + 1, rng.randint(6, 64))):
        fmt, rows = k % 2, rng.choice((1, 2, rng.randint(3, 9)))
        src = _table(b, rows, n, fmt, at_end=k == 6)
        for row in sorted({0, rows - 1}):
            idx = b.load([row])
            b.add("GATHER", dst=b.spad(n), src=src, idx=idx, len=n, rows=rows, fmt=fmt)
            b.features[f"edge: GATHER {'first' if row == 0 else 'last'} row"] += 1
            b.features[f"GATHER {'first' if row == 0 else 'last'} row"] += 1     # cosim.coverage.CASES
    # a row of more than 2,048 words, the second of two: the row's address is its number times
    # words per row, whose bit 11 is then set (a draw of mutants found those bits unchecked)
    n = 2048 + rng.randrange(512)
    if b.spad_next + n + 8 <= b.params.SPAD_WORDS and b.ext_next + 2 * n + 8 <= b.params.EXT_WORDS:
        src, idx = _table(b, 2, n, 0), b.load([1])
        b.add("GATHER", dst=b.spad(n), src=src, idx=idx, len=n, rows=2, fmt=0)
        b.features["edge: GATHER of a row over 2,048 words"] += 1
    # the row number written by AMAX (greedy decoding feeds the argmax back), the destination
    # right after the row number's word
    rows, n = rng.randint(2, 9), rng.randint(1, 9)
    src = _table(b, rows, n, 1)
    scores = b.load(int8s(rng, rows), int8=True)
    idx = b.spad(1 + n)
    b.add("AMAX", dst=idx, src=scores, len=rows)
    b.add("GATHER", dst=idx + 1, src=src, idx=idx, len=n, rows=rows, fmt=1)
    b.features["edge: GATHER of an AMAX's index"] += 1


STRATEGIES: dict[str, Callable[[Builder], None]] = {
    "rq_ties": rq_ties, "softmax_rows": softmax_rows, "mm_extremes": mm_extremes,
    "vector_edges": vector_edges, "field_limits": field_limits, "touching_regions": touching_regions,
    "rq_every_shift": rq_every_shift, "rq_per_channel": rq_per_channel,
    "layernorm_rows": layernorm_rows, "gather_rows": gather_rows,
}
"""The legal bodies, by turns over the edge seeds."""


# --------------------------------------------------------------------------- faults


def _legal_fields(b: Builder, kind: str) -> dict[str, int]:
    """Legal fields of ``kind``: short regions anywhere in their memories (so that their ends
    take every bit pattern, not only the low addresses of the body's data), none overlapping."""
    p, rng = b.params, b.rng
    ispec = spec.BY_NAME[kind]
    if not stressprogram.fits(kind, p):
        raise TooSmall(f"no legal {kind} fits in {p.SPAD_WORDS} scratchpad words")
    for _ in range(1000):
        n = rng.randint(1, 24)
        f = {"LD": {"len": n}, "ST": {"len": n},
             "RQ": _rq_fields(rng, n, p), "SM": {"len": n},
             "VADD": {"len": n}, "AMAX": {"len": n}, "UNPACK": {"len": 1 + n % 4},
             "MM": {"M": rng.randint(1, p.T), "K": n, "N": rng.randint(1, p.T), "tb": rng.randint(0, 1),
                    "lda": n + rng.randint(0, 3), "ldb": p.T + n, "ldc": p.T},
             "LN": {"len": n, "eps": rng.getrandbits(32)},
             "GATHER": {"len": n, "rows": rng.randint(1, 9), "fmt": rng.randint(0, 1)}}[kind]
        for region in ispec.regions:
            f.setdefault(region.start, 0)
        sizes = [p.EXT_WORDS if region.mem is Mem.EXT else p.SPAD_WORDS for region in ispec.regions]
        if any(region.extent(f) > size for region, size in zip(ispec.regions, sizes, strict=True)):
            continue
        for region, size in zip(ispec.regions, sizes, strict=True):
            extent = region.extent(f)
            f[region.start] = rng.randrange(0, size - extent + 1) if extent else 0   # empty: at 0
        if spec.check(ispec, f, p)[0] is ErrorCode.NONE:
            return f
    raise AssertionError(f"no legal {kind} found")


def _rq_fields(rng: random.Random, n: int, p: Params) -> dict[str, int]:
    """RQ's fields but the region starts: per tensor, or (half the time) per output channel with
    a table of LANES to 24 words."""
    if rng.random() < 0.5:
        return {"len": n, "m": 0, "s": 0, "relu": 0, "pc": 1, "C": rng.randint(p.LANES, max(p.LANES, 24))}
    return {"len": n, "m": rng.randrange(1 << 24), "s": 20, "relu": 0, "pc": 0, "tab": 0, "C": 0}


def one_past(b: Builder, kind: str, rules: bool = True) -> tuple[dict[str, int], dict[str, int]]:
    """A bounded field of ``kind`` set one past its limit (hi + 1, or lo - 1), or (for a kind with
    rules across fields, when ``rules``, half the time) one of its rules broken
    (``sim.spec.FieldRule.breaking``).

    Returns:
        (the fields that make it bad, the same fields at the limit the checker's repair
        (:func:`nearest_legal`) gives back; for a broken rule, which no repair mends, the
        breaking fields themselves).
    """
    field_rules = spec.BY_NAME[kind].field_rules
    if rules and field_rules and b.rng.random() < 0.5:
        broken = b.rng.choice(field_rules).breaking(b.params)
        return broken, broken
    past = {fl.name: _past(fl, b.params) for fl in spec.BY_NAME[kind].fields}
    name = b.rng.choice([name for name, options in past.items() if options])
    value, limit = b.rng.choice(past[name])
    return {name: value}, {name: limit}


def _past(fl: spec.Field, params: Params) -> list[tuple[int, int]]:
    """(value, limit) pairs: the values one past the field's legal range that fit its width (none
    for most fields), each with the limit it is one past."""
    lo, hi = fl.legal_range(params)
    return ([(lo - 1, lo)] if lo > 0 else []) + ([(hi + 1, hi)] if hi < (1 << fl.width) - 1 else [])


def past_end(b: Builder, kind: str, f: dict[str, int], mem: Mem) -> dict[str, int]:
    """One region of ``mem`` made to end one word past the end of that memory: moved there, or
    (half the time) grown there from low in the memory, by its length or by MM's row stride,
    so that the checker sees long extents as well as short ones."""
    size = b.params.SPAD_WORDS if mem is Mem.SPAD else b.params.EXT_WORDS
    region = b.rng.choice([r for r in spec.BY_NAME[kind].regions if r.mem is mem and r.extent(f)])
    grow = {"A": "lda", "B": "ldb", "dst": "ldc"}.get(region.start) if kind == "MM" else \
        "C" if region.start == "tab" else "len"
    if b.rng.random() < 0.5 and grow in f:
        g = dict(f)
        for _ in range(50):
            g[grow] = b.rng.randrange(1, size)
            start = size - region.extent(g) + 1
            if 0 <= start < size // 2:
                return {**g, region.start: start}
    start = size - region.extent(f) + 1
    # too long to move, or (a memory of 2^16 words) a start past the 16-bit field: faulty() draws again
    return {**f, region.start: start} if 0 <= start < 1 << spec.ADDR_BITS else f


def overlap_by_one(b: Builder, kind: str, f: dict[str, int]) -> dict[str, int]:
    """The destination moved to overlap a source by exactly one word (at its first or last word)."""
    regions = spec.BY_NAME[kind].regions
    write = next(r for r in regions if r.writes)
    read = b.rng.choice([r for r in regions if not r.writes and r.mem is Mem.SPAD and r.extent(f)])
    w, r = write.extent(f), read.extent(f)
    start = f[read.start] + r - 1 if b.rng.random() < 0.5 else f[read.start] - w + 1
    if start < 0 or (start == f[read.start] and spec.BY_NAME[kind].in_place_ok and read.in_place):
        start = f[read.start] + r - 1
    return {**f, write.start: start}


def lengthened(b: Builder, kind: str, f: dict[str, int]) -> dict[str, int]:
    """f with long regions (hundreds to thousands of words: by its length, or MM's A by its row
    stride), every source at one random place, the destination after them: for an overlap of
    one word at the end of a long source (the checker's region ends with their upper bits set)."""
    p, g = b.params, dict(f)
    if kind == "MM":
        most = p.SPAD_WORDS // (2 * max(p.T - 1, 1))       # T rows of A in half the scratchpad
        g["lda"] = b.rng.randint(min(p.SPAD_WORDS // 16, most), most)
    elif "len" in g and kind != "SM":
        g["len"] = b.rng.randint(p.SPAD_WORDS // 32, p.SPAD_WORDS // (3 if kind != "UNPACK" else 10))
        if kind == "LN":
            g["len"] = min(g["len"], spec.LN_MAX_LEN)
    regions = spec.BY_NAME[kind].regions
    reads = [r for r in regions if not r.writes and r.mem is Mem.SPAD]
    span = max(r.extent(g) for r in reads)
    if "C" in g and g["C"] > span:      # RQ per channel: the table within the span of the source
        g["C"] = max(b.params.LANES, span)
    room = p.SPAD_WORDS - span - next(r for r in regions if r.writes).extent(g)
    start = b.rng.randrange(0, room + 1) if room > 0 else 0
    for r in regions:
        if r.mem is Mem.SPAD and r.extent(g):            # an empty region (RQ's table, pc = 0) stays at 0
            g[r.start] = start if not r.writes else start + span
    return g


def nearest_legal(ispec: spec.InstrSpec, f: dict[str, int], params: Params) -> dict[str, int]:
    """f with every field outside its legal range moved to the nearest legal value (a field left
    out, such as VADD's relu, at its default)."""
    out = ispec.defaults | dict(f)
    for fl in ispec.fields:
        lo, hi = fl.legal_range(params)
        out[fl.name] = min(max(out[fl.name], lo), hi)
    return out


def faulty(b: Builder, code: ErrorCode, turn: int = 0) -> tuple[list[int], str]:
    """An instruction (encoded) that stops the machine with ``code``, at an edge. ``turn`` (the
    how-manieth program with this ending) picks the instruction, so that consecutive programs
    take every kind in turn, and whether (every other turn) the fault comes with a second one of
    lower priority in the same instruction (BAD_FIELD and SPAD_RANGE; checked: with the first
    fault repaired, the second one stops it) or (OVERLAP) the source is long. An unknown opcode
    always sits over fields with two faults. Returns (words, what it is).

    Raises:
        AssertionError: no such instruction found in FAULT_DRAWS draws (a bug here).
    """
    if code is ErrorCode.BAD_INDEX:
        return bad_row(b, turn)
    double = turn % 2 == 1 and code in (ErrorCode.BAD_FIELD, ErrorCode.SPAD_RANGE)
    for _ in range(FAULT_DRAWS):
        kind, f, what = _draw_fault(b, code, turn)
        ispec = spec.BY_NAME[kind]
        words = build(kind, params=b.params, strict=False, **f).encode()
        if code is ErrorCode.BAD_OPCODE:
            unused = spec.bad_opcodes(b.params)     # opcode 11 among them where MMRQ is not built
            words[0] = (words[0] & ~((1 << spec.OPCODE_BITS) - 1)) | b.rng.choice(unused)
            return words, f"unknown opcode over {kind} fields also at fault"
        if spec.check(ispec, f, b.params)[0] is not code or not _at_the_edge(ispec, f, code, b.params):
            continue
        if not double:
            return words, f"{kind}: {what}"
        if code is ErrorCode.BAD_FIELD and spec.check(ispec, nearest_legal(ispec, f, b.params), b.params)[0] \
                in (ErrorCode.SPAD_RANGE, ErrorCode.OVERLAP):
            return words, f"{kind}: {what}"
        if code is ErrorCode.SPAD_RANGE and f["src"] + f["len"] > b.params.EXT_WORDS:
            return words, f"{kind}: {what}"
    raise AssertionError(f"no instruction found that stops with {code.name}")


BAD_ROWS = ("rows", "rows + 1", "2^16 + rows - 1", "-1", "2^31")
"""BAD_INDEX's row numbers, by turn: just past the table, one more, one whose low 16 bits are
in range (a checker that compares 16 bits misses it), -1 and 2^31 (unsigned: the largest)."""


def bad_row(b: Builder, turn: int) -> tuple[list[int], str]:
    """An LD of a row number out of the table (BAD_ROWS[turn]) into a fresh word, then a GATHER
    of that table (both formats by turn, its destination after the word): the two as words."""
    p, rng = b.params, b.rng
    rows, n, fmt = rng.randint(1, 9), rng.randint(1, 12), (turn // len(BAD_ROWS)) % 2
    words_per_row = -(-n // spec.INT8_PER_WORD) if fmt else n
    if rows * words_per_row + 1 > p.EXT_WORDS:
        raise TooSmall(f"no table of {rows} rows in {p.EXT_WORDS} external words")
    src = rng.randrange(0, p.EXT_WORDS - rows * words_per_row + 1)   # never read: the row is out
    name = BAD_ROWS[turn % len(BAD_ROWS)]
    row = {"rows": rows, "rows + 1": rows + 1, "2^16 + rows - 1": (1 << 16) + rows - 1,
           "-1": (1 << 32) - 1, "2^31": 1 << 31}[name]
    stored = [(ins.dst, ins.dst + ins.len) for ins in b.body if ins.op == "ST"]
    free = [w for w in rng.sample(range(p.EXT_WORDS), min(p.EXT_WORDS, 64))
            if not any(lo <= w < hi for lo, hi in stored)]      # no ST before it overwrites the word
    if not free:
        raise TooSmall("no external word left for a row number")
    word = free[0]
    b.ext[word] = row
    idx = b.spad(1 + n)
    words = build("LD", params=p, dst=idx, src=word, len=1).encode()
    words += build("GATHER", params=p, dst=idx + 1, src=src, idx=idx, len=n, rows=rows, fmt=fmt).encode()
    return words, f"GATHER: row number {name} (fmt = {fmt})"


def _at_the_edge(ispec: spec.InstrSpec, f: dict[str, int], code: ErrorCode, params: Params) -> bool:
    """For a range fault: a region of that memory ends exactly one word past its end."""
    if code not in (ErrorCode.SPAD_RANGE, ErrorCode.EXT_RANGE):
        return True
    mem, size = (Mem.SPAD, params.SPAD_WORDS) if code is ErrorCode.SPAD_RANGE else (Mem.EXT, params.EXT_WORDS)
    return any(f[r.start] + r.extent(f) == size + 1 for r in ispec.regions if r.mem is mem)


FAULT_DRAWS = 500
"""Draws :func:`faulty` makes. A double fault of VADD, whose only bounded field is len, comes
only from a source of one word (len = 1, one draw in 24), so 100 draws missed it now and then."""
SPAD_KINDS = ("MM", "RQ", "SM", "VADD", "AMAX", "UNPACK", "LN")
"""The instructions that read and write the scratchpad, in the order the faults take them."""


def _draw_fault(b: Builder, code: ErrorCode, turn: int) -> tuple[str, dict[str, int], str]:
    """(kind, fields, what) of a fault of ``code`` (see :func:`faulty` for ``turn``)."""
    n = len(SPAD_KINDS)
    kind = SPAD_KINDS[(turn // 2) % n]     # every kind in turn, each both ways (even, odd) over 2n turns
    double = turn % 2 == 1
    if code in (ErrorCode.BAD_OPCODE, ErrorCode.BAD_FIELD):
        # the second fault is made with the bad field at its limit, the value the checker's
        # repair (nearest_legal) gives back, so the repaired instruction keeps it whatever
        # the field (a len of 0 repaired to 1 would otherwise shrink the region it moved)
        # (a broken rule only alone: no repair mends it, the second fault would stay hidden)
        bad, limit = one_past(b, kind, rules=not double)
        f = _legal_fields(b, kind)
        if double or code is ErrorCode.BAD_OPCODE:
            f = {**f, **limit}
            f = past_end(b, kind, f, Mem.SPAD) if b.rng.random() < 0.5 else overlap_by_one(b, kind, f)
        what = "field one past its limit" + (", and a second fault" if double else "")
        return kind, {**f, **bad}, what
    if code is ErrorCode.SPAD_RANGE:
        kind = "LD" if double or turn % 4 == 2 else kind
        f = _legal_fields(b, kind)
        if double:
            f = past_end(b, kind, f, Mem.EXT)
        return kind, past_end(b, kind, f, Mem.SPAD), \
            "region one word past the scratchpad" + (", and the external memory" if double else "")
    if code is ErrorCode.EXT_RANGE:
        kind = ("LD", "ST", "GATHER")[turn % 3]
        f = past_end(b, kind, _legal_fields(b, kind), Mem.EXT)
        return kind, f, "region one word past the external memory"
    f = _legal_fields(b, kind)
    if double:
        return kind, overlap_by_one(b, kind, lengthened(b, kind, f)), \
            "destination overlapping a long source by one word"
    return kind, overlap_by_one(b, kind, f), "destination overlapping a source by one word"


# --------------------------------------------------------------------------- programs


def program(seed: int, params: Params) -> stressprogram.StressProgram | None:
    """The edge program of stress seed ``seed``, or None when the seed is not an edge seed or
    the machine has no room for it: the strategies are drawn for memories like the default
    machine's, and on another one a strategy or a fault that cannot be built there (no room:
    :class:`TooSmall`; a field that does not fit its bits: AsmError; no such fault there) gives
    the seed a random program instead. On the default machine every one must build."""
    if not is_edge(seed):
        return None
    try:
        return _program(seed, params)
    except (TooSmall, AsmError, AssertionError):
        if params == DEFAULT:
            raise
        return None


def strategy_of(seed: int) -> str:
    """The strategy of edge seed ``seed`` (:data:`TURN_SHIFT_EVERY`)."""
    q = seed // EDGE_EVERY
    return list(STRATEGIES)[(q + q // TURN_SHIFT_EVERY) % len(STRATEGIES)]


def _program(seed: int, params: Params) -> stressprogram.StressProgram:
    name = strategy_of(seed)
    rng = random.Random(f"edge {seed}")
    b = Builder(rng, params)
    STRATEGIES[name](b)
    ending = stressprogram.ENDINGS[seed % len(stressprogram.ENDINGS)]
    words = []
    for k, ins in enumerate(b.body):
        end = stressprogram.spare_end(ins.spec)
        ones = ((1 << spec.INSTR_BITS) - (1 << end)) if k in b.spare_ones else 0
        words += stressprogram.or_bits(ins.encode(), ones)
    if ending == stressprogram.HALT:
        words += build("HALT", params=params).encode()
    elif ending != ErrorCode.NO_HALT.name:
        fault, what = faulty(b, ErrorCode[ending], seed // (EDGE_EVERY * len(stressprogram.ENDINGS)))
        b.features[f"edge: {what}"] += 1
        words += fault
        for _ in range(rng.randint(0, 2)):     # never run: the fault stops the machine
            words += build("LD", params=params, dst=0, src=0, len=rng.randint(1, 8)).encode()
        words += build("HALT", params=params).encode()
    b.features[f"ends {ending}"] += 1
    for ins in b.body:
        b.features[ins.op] += 1
    job = Job(words, b.ext, name=f"seed {seed} (edge: {name})")
    return stressprogram.StressProgram(seed, ending, job, b.features)
