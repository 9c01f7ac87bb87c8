"""What the AXI bench checks beyond the programs: the register slave's decode, and a long transfer.

The decode (:func:`decode_probes`): the register map (sim/regmap.py) answers SLVERR to a read of
an offset it does not name, of the instruction window or nothing readable, and to a write of an
offset it does not name or a read-only register; the window takes writes (OKAY) while the
machine is idle. The offsets probed are every single-bit neighbour of a listed register (its
word address, bits 2 .. address_bits - 1, one bit flipped) that the table does not list: a
decode that ignores or mistakes one address bit answers one of them as the register. After the
probes, the read-write registers must read what they read before them (a refused write changes
nothing).

The long transfer (:func:`long_job`): LD and ST of the whole scratchpad, from one slice of the
external memory to the next (round the memory again when it is used up), until the DMA counter
passes 2**14 cycles: one ST is SPAD_WORDS words
(1,024 beats of four words on the default machine), and the counters' high bits are read after
more DMA cycles than the seed programs ever take. Before the pairs, IMEM_WORDS / 2 VADDs of one
word make it the only program loaded past the middle of the instruction memory (a register slave
that drops the window index's top bit overwrites its start).
"""

from __future__ import annotations

import numpy as np

from sim import regmap, spec
from sim.asm import build
from sim.spec import Params

from .jobs import Job

OKAY, SLVERR = 0, 2
"""AXI xRESP codes."""
DMA_BIT = 14
"""The long job's DMA counter passes 2**DMA_BIT cycles."""
WRITE_VALUE = 0xFFFF_FFFF
"""What the probes write (every bit, so that a write taken by mistake shows)."""


def decode_probes(params: Params) -> list[tuple[str, int, int]]:
    """The accesses of the decode check: (``r`` or ``w``, byte offset, the xRESP expected),
    sorted by offset, reads before writes."""
    table = {r.offset: r for r in regmap.registers(params)}
    base, top = regmap.imem_base(params), regmap.imem_base(params) + regmap.imem_bytes(params)
    neighbours = sorted({off ^ (1 << bit) for off in table for bit in range(2, regmap.address_bits(params))}
                        - set(table))
    out = []
    for kind in ("r", "w"):
        for off in neighbours:
            window = base <= off < top
            ok = window if kind == "w" else False
            out.append((kind, off, OKAY if ok else SLVERR))
    return out


def rw_registers(params: Params) -> list[int]:
    """Offsets of the read-write registers."""
    return [r.offset for r in regmap.registers(params) if r.access == "rw"]


def decode_differences(probes: list[tuple[str, int, int]], answers: list[int], before: list[int],
                       after: list[int], params: Params) -> list[str]:
    """How the slave's answers differ from the register map: one line per wrong response, and
    per read-write register (:func:`rw_registers`, ``before`` and ``after`` the probes) that a
    refused write changed."""
    names = {0: "OKAY", 1: "EXOKAY", 2: "SLVERR", 3: "DECERR"}
    out = []
    for (kind, off, want), got in zip(probes, answers, strict=True):
        if got != want:
            what = "read of" if kind == "r" else "write to"
            out.append(f"register slave: {what} offset 0x{off:05x} answered {names.get(got, got)}, "
                       f"the register map says {names[want]}")
    by_offset = {r.offset: r.name for r in regmap.registers(params)}
    for off, old, new in zip(rw_registers(params), before, after, strict=True):
        if old != new:
            out.append(f"register slave: {by_offset[off]} reads 0x{new:08x} after the refused writes, "
                       f"0x{old:08x} before them")
    return out


def long_job(params: Params) -> Job:
    """LD then ST of SPAD_WORDS words, pair k from slice 2k of the external memory to slice 2k + 1
    (slices of SPAD_WORDS words, counted modulo their number), until the DMA's latencies sum past
    2**DMA_BIT; random external words (seed 29). The pairs come after IMEM_WORDS / 2 VADDs of one
    word (S[1] = S[0] + S[0]), so that the program reaches past the middle of the instruction
    memory: the host writes the top bit of the instruction window's word index.

    Raises:
        ValueError: the external memory holds fewer than two slices.
    """
    words = params.SPAD_WORDS
    ld = build("LD", params=params, dst=0, src=0, len=words)
    per_pair = spec.latency(spec.BY_NAME["LD"], ld.fields, params) + spec.latency(
        spec.BY_NAME["ST"], build("ST", params=params, src=0, dst=0, len=words).fields, params)
    pairs = -(-(1 << DMA_BIT) // per_pair)
    slices = params.EXT_WORDS // words
    if slices < 2:
        raise ValueError(f"the long transfer needs 2 x SPAD_WORDS = {2 * words} external words; "
                         f"EXT_WORDS = {params.EXT_WORDS}")
    code = [build("VADD", params=params, dst=1, src1=0, src2=0, len=1)] * (params.IMEM_WORDS // 2)
    for k in range(pairs):
        code += [build("LD", params=params, dst=0, src=2 * k % slices * words, len=words),
                 build("ST", params=params, src=0, dst=(2 * k + 1) % slices * words, len=words)]
    ext = np.random.default_rng(29).integers(0, 1 << 32, params.EXT_WORDS, dtype=np.uint64).astype(np.uint32)
    return Job([*code, build("HALT", params=params)], ext,
               f"long: {params.IMEM_WORDS // 2} VADDs, {pairs} LD/ST pairs of {words} words")
