"""Which instruction last wrote each memory word, in the reference machine's order.

The machine has no branches: it runs instructions 0, 1, ... up to the one that stops it (a
HALT, or an illegal instruction, which writes nothing), so the last writer of a word is the
highest pc below the stop whose written regions hold it. The regions are the spec's
(:class:`sim.spec.Region`, the ones the checker bounds), replayed in program order; one
refinement: a region's extent is the span from its first to one past its last word, and MM's
output rows are ``ldc`` words apart with ``N`` written in each (GA2.md section 3, MM's effect),
so words between the rows of its span are not its writes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sim.asm import AsmError, Instruction, decode, disassemble
from sim.spec import INSTR_WORDS, Mem, Params

NOT_WRITTEN = -1
"""The writer of a word no instruction before the stop wrote."""


def instructions(program: Sequence[Instruction] | Sequence[int]) -> list[Instruction | None]:
    """A program as Instructions; None where words do not decode (an unknown opcode)."""
    if len(program) and all(isinstance(ins, Instruction) for ins in program):
        return list(program)
    words = [int(w) for w in program]
    out: list[Instruction | None] = []
    for k in range(0, len(words) - len(words) % INSTR_WORDS, INSTR_WORDS):
        try:
            out.append(decode(words[k:k + INSTR_WORDS]))
        except AsmError:
            out.append(None)
    return out


def written_spans(ins: Instruction) -> list[tuple[Mem, int, int]]:
    """The (memory, first word, words) an instruction writes, from its spec's write regions."""
    spans = []
    for region in ins.spec.regions:
        if not region.writes:
            continue
        fields = ins.fields
        start = fields[region.start]
        if ins.op in ("MM", "MMRQ") and region.start == "dst" and fields["ldc"] > fields["N"]:
            spans += [(region.mem, start + i * fields["ldc"], fields["N"]) for i in range(fields["M"])]
        else:
            spans.append((region.mem, start, region.extent(fields)))
    return spans


def text(ins: Instruction) -> str:
    """The disassembly on one line with single spaces: ``ST src=93 dst=147 len=42``."""
    return re.sub(r"\s+", " ", disassemble(ins))


@dataclass
class Writers:
    """The last writer of every word of both memories.

    Attributes:
        program: the program as Instructions (None for a word that does not decode).
        stop: the pc of the instruction that stopped the reference machine.
        spad, ext: int32 arrays, the pc of each word's last writer, or :data:`NOT_WRITTEN`.
    """

    program: list[Instruction | None]
    stop: int
    spad: np.ndarray
    ext: np.ndarray

    @classmethod
    def replay(cls, program: Sequence[Instruction] | Sequence[int], stop: int, params: Params) -> Writers:
        """Replay the write regions of instructions 0 .. stop - 1 (clipped to the memories)."""
        decoded = instructions(program)
        memories = {Mem.SPAD: np.full(params.SPAD_WORDS, NOT_WRITTEN, np.int32),
                    Mem.EXT: np.full(params.EXT_WORDS, NOT_WRITTEN, np.int32)}
        for pc, ins in enumerate(decoded[:stop]):
            if ins is None:
                continue
            for mem, start, words in written_spans(ins):
                memories[mem][start:start + words] = pc
        return cls(decoded, stop, memories[Mem.SPAD], memories[Mem.EXT])

    def of(self, memory: str, address: int) -> int:
        """The pc that last wrote ``memory[address]`` (``"ext"`` or ``"spad"``), or NOT_WRITTEN."""
        return int(getattr(self, memory)[address])

    def instruction(self, pc: int) -> str:
        """``pc 17: ST src=93 dst=147 len=42``."""
        ins = self.program[pc]
        return f"pc {pc}: {'(does not decode)' if ins is None else text(ins)}"
