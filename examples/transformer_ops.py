#!/usr/bin/env python3
"""The transformer's two new instructions, by hand: a GPT's decode step begins with GATHER and LN.

Hand-written GA-2 assembly (issue 26, docs/GA2.md sections 3 and 4), no compiler:

1. the host writes this step's token id and position into two external words; one LD brings
   both into the scratchpad, so the program is the same for every token;
2. two GATHERs read the token's row of a packed int8 embedding table and the position's row of
   a position table (``nn.Embedding``), a VADD adds them (the residual stream x);
3. LN normalises x exactly in integers, adding beta * 65536 as its int32 bias row (gamma = 1),
   and an RQ turns the result into int8 at the scale 4/127;
4. an AMAX picks the largest of the 64 values and a GATHER reads that row of the token table:
   greedy decoding's feedback (argmax, then the next token's embedding) without the host;
5. a second program names a token id past the vocabulary: the machine stops with BAD_INDEX at
   that GATHER, after its latency, having written nothing.

The script checks the reference machine against NumPy (the gathered rows, the LayerNorm within
GA2.md's bound of float LayerNorm, the int8 result), prints each instruction's cycles (LN of 64:
97 cycles against 2N + 50 = 178) and, with ``--rtl icarus|verilator|both``, runs both programs on
the RTL and demands every memory word, every counter and the stop equal to the reference.

Usage: python examples/transformer_ops.py [--token 5] [--position 3] [--rtl none|icarus|verilator|both]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from sim import arith, spec
from sim.asm import assemble, listing
from sim.machine import Machine, MachineError

D = 64                  # d_model, the GPT's
VOCAB = 16              # rows of the token table
CONTEXT = 8             # rows of the position table
OUT_SCALE = 4 / 127     # the int8 result's scale (z within +-4 here)
TOKENS, POSITIONS, BETA, TOKEN_AT = 100, 400, 500, 0
"""External addresses: the token table (VOCAB rows of 16 packed words), the position table, the
bias row beta * 65536 (int32) and the two words the host writes (token id, position)."""


def program_text(vocab: int = VOCAB) -> str:
    """The decode step's first instructions, as a person writes them (sim.asm's text form)."""
    m, s = arith.mantissa_shift(1 / (65536 * OUT_SCALE))
    return f"""
        LD     dst=0   src={TOKEN_AT} len=2                         ; token id, position (host-written)
        GATHER dst=16  src={TOKENS} len={D} fmt=1 idx=0 rows={vocab}   ; token embedding, packed int8
        GATHER dst=80  src={POSITIONS} len={D} fmt=1 idx=1 rows={CONTEXT} ; position embedding
        VADD   dst=144 src1=16 src2=80 len={D}                    ; x = token + position (int8)
        LD     dst=208 src={BETA} len={D}                         ; beta * 65536, int32
        LN     dst=272 src=144 len={D} bias=208 eps=0            ; y = round(65536 z) + bias
        RQ     dst=336 src=272 len={D} m={m} s={s} relu=0         ; int8 at scale 4/127
        AMAX   dst=400 src=336 len={vocab}                       ; the largest of the first {vocab}
        GATHER dst=404 src={TOKENS} len={D} fmt=1 idx=400 rows={vocab} ; its row: greedy feedback
        ST     src=336 dst=1000 len={D}
        ST     src=404 dst=1100 len={D}
        HALT
    """


def tables(seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The token and position tables (int8 values) and beta (floats, multiples of 2^-16)."""
    rng = np.random.default_rng(seed)
    tok = rng.integers(-60, 61, (VOCAB, D))
    pos = rng.integers(-20, 21, (CONTEXT, D))
    beta = rng.integers(-32768, 32769, D) / 65536
    return tok, pos, beta


def packed(rows: np.ndarray) -> np.ndarray:
    """int8 rows as words of four (GA2.md section 2: element 4i+j in bits 8j+7..8j of word i)."""
    b = (rows.reshape(-1, spec.INT8_PER_WORD) & 0xFF).astype(np.int64)
    return (b << (8 * np.arange(spec.INT8_PER_WORD))).sum(axis=1)


def image(token: int, position: int, seed: int = 1) -> np.ndarray:
    tok, pos, beta = tables(seed)
    ext = np.zeros(2048, dtype=np.int64)
    ext[TOKEN_AT:TOKEN_AT + 2] = [token, position]
    ext[TOKENS:TOKENS + VOCAB * D // 4] = packed(tok)
    ext[POSITIONS:POSITIONS + CONTEXT * D // 4] = packed(pos)
    ext[BETA:BETA + D] = np.round(beta * 65536).astype(np.int64)
    return ext & 0xFFFFFFFF


def check(result, token: int, position: int, seed: int = 1) -> list[str]:
    """The reference machine's words against NumPy: the gathered rows, LayerNorm within GA2.md
    section 4's bound of float LayerNorm, the int8 result, the greedy row. Returns the lines."""
    tok, pos, beta = tables(seed)
    s8 = lambda w: ((w.astype(np.int64) & 0xFF) ^ 0x80) - 0x80         # noqa: E731
    s32 = lambda w: w.astype(np.uint32).view(np.int32).astype(np.int64)  # noqa: E731
    x = np.clip(tok[token] + pos[position], -127, 127)
    assert (s8(result.spad[16:80]) == tok[token]).all() and (s8(result.spad[80:144]) == pos[position]).all()
    assert (s8(result.spad[144:208]) == x).all()
    z = (x - x.mean()) / x.std()                                      # float LayerNorm, epsilon 0
    y = s32(result.spad[272:336]) - np.round(beta * 65536).astype(np.int64)
    err = np.abs(y / 65536 - z)
    bound = 2 ** -17 + np.abs(z) * 2 ** -21
    assert (err <= bound + 1e-12).all(), "LN outside GA2.md's bound"
    want8 = np.clip(arith.round_half_away_array((z + beta) / OUT_SCALE), -127, 127)   # float, then int8
    got8 = s8(result.spad[336:400])
    assert (np.abs(got8 - want8) <= 1).all(), "the int8 result is more than a level off float"
    pick = int(result.spad[400])
    assert pick == int(np.argmax(got8[:VOCAB])) and (s8(result.spad[404:468]) == tok[pick]).all()
    return [f"token {token} + position {position}: x in {x.min()}..{x.max()}, mean {x.mean():.3f}, "
            f"std {x.std():.3f}",
            f"LN against float LayerNorm: largest |y/65536 - z| = {err.max():.2e} "
            f"(GA2.md's bound there: {bound[err.argmax()]:.2e}), |z| up to {np.abs(z).max():.2f}",
            f"int8 result within 1 of round((z + beta) / (4/127)): True; argmax of the first {VOCAB}: "
            f"{pick}, its embedding row gathered: True"]


def cycles(program, result) -> list[str]:
    lines = []
    for placed, ins in zip(result.timeline, program, strict=False):
        extra = f"  (2N + 50 = {2 * ins.len + 50})" if ins.op == "LN" else ""
        lines.append(f"    {placed.pc:2d}  {ins.op:<6} {placed.end - placed.start:4d} cycles{extra}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="GATHER and LN by hand: a decode step's first "
                                     "instructions on the reference machine (and the RTL).")
    parser.add_argument("--token", type=int, default=5, help=f"the token id, 0..{VOCAB - 1} (default 5)")
    parser.add_argument("--position", type=int, default=3, help=f"the position, 0..{CONTEXT - 1} (default 3)")
    parser.add_argument("--rtl", choices=("none", "icarus", "verilator", "both"), default="none",
                        help="also run both programs on the RTL (default none)")
    args = parser.parse_args(argv)
    if not (0 <= args.token < VOCAB and 0 <= args.position < CONTEXT):
        parser.error(f"--token must be 0..{VOCAB - 1} and --position 0..{CONTEXT - 1}")
    program = assemble(program_text(), params=spec.DEFAULT)   # the default machine
    ext = image(args.token, args.position)
    print(listing(program))
    result = Machine(spec.DEFAULT).run(program, ext)
    print("\n".join(check(result, args.token, args.position)))
    print("cycles per instruction (reference machine):")
    print("\n".join(cycles(program, result)))
    print(f"total: {result.counters}")

    # a token id past the vocabulary: BAD_INDEX at the first GATHER, nothing written
    bad = image(VOCAB, args.position)
    try:
        Machine(spec.DEFAULT).run(program, bad)
        raise AssertionError("a token id past the vocabulary ran")
    except MachineError as stop:
        assert stop.code is spec.ErrorCode.BAD_INDEX and stop.pc == 1 and not stop.result.spad[16:80].any()
        print(f"token id {VOCAB} (vocabulary {VOCAB}): {stop}")
        print(f"    stopped after {stop.result.counters}")
    return 0 if args.rtl == "none" else on_the_rtl(program, ext, bad, args.rtl)


def on_the_rtl(program, ext, bad, which: str) -> int:
    """Both programs on the RTL: every memory word, counter and the stop as the reference's."""
    from cosim.api import compare, run_programs

    jobs = [(program, ext, "decode step: GATHER, LN, AMAX -> GATHER"),
            (program, bad, "token id past the table")]
    failed = 0
    for sim in (("icarus", "verilator") if which == "both" else (which,)):
        runs = run_programs(jobs, sim, say=lambda _line: None)
        for job, run in zip(jobs, runs, strict=True):
            diffs = compare(job, run)
            failed += bool(diffs)
            print(f"{sim:<10} {'PASS' if not diffs else 'FAIL'}: {job[2]}"
                  + ("" if not diffs else "\n    " + "\n    ".join(diffs)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
