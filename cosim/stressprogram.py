"""What a stress program is, for the two that draw them (:mod:`cosim.stress`'s random programs
and :mod:`cosim.edges`'s programs aimed at the edges): how program k ends (:data:`ENDINGS`), the
instructions a body draws from (:data:`KINDS`), the smallest legal instruction of a kind on a
machine (:func:`smallest`), and the program with what it exercises (:class:`StressProgram`).
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from sim import spec
from sim.spec import ErrorCode, Mem, Params

from .jobs import Job

HALT = "HALT"
ROUND = 10
"""Programs per round of endings: every ending once, the rest HALT."""
_ERRORS = (*(c.name for c in spec.DATA_ERRORS), *(c.name for c in spec.CHECK_CODES))
ENDINGS: tuple[str, ...] = ((HALT,) * (ROUND - len(_ERRORS))) + _ERRORS
"""How program k ends: ENDINGS[k % len(ENDINGS)]: HALT three times, BAD_INDEX (issue 26, in the
fourth slot, which was a HALT: every other error keeps the seeds it had), then each error code
the front end checks (STALL, ``sim.spec.MACHINE_FAULTS``, is none: no program asks for it)."""
KINDS = tuple(s.name for s in spec.INSTRUCTIONS if s.counter is not None)
"""The instructions a body draws from (all but HALT)."""


RULE_REPAIRS = 64
"""How many times :func:`smallest` raises a field a rule blames (``sim.spec.FieldRule``) by one."""


@functools.cache
def smallest(kind: str, params: Params, **fixed: int) -> dict[str, int] | None:
    """The smallest legal ``kind`` on the machine: every field at the low end of its legal
    range (the ``fixed`` ones at their values), each field a rule across fields blames raised
    one by one while the rule holds (RQ's s to 1; with pc = 1, C to LANES), its regions side by
    side from word 0 (an empty one at 0); None when even that fails the spec's checks (a small
    machine has no room for some: UNPACK needs 9 scratchpad words)."""
    ispec = spec.BY_NAME[kind]
    fields = {f.name: f.legal_range(params)[0] for f in ispec.fields} | fixed
    fields.update({r.start: 0 for r in ispec.regions})
    for _ in range(RULE_REPAIRS):
        broken = [rule for rule in ispec.field_rules if rule.holds(fields, params)]
        if not broken or broken[0].blames in fixed:
            break
        fields[broken[0].blames] += 1
    used = {Mem.SPAD: 0, Mem.EXT: 0}
    for region in ispec.regions:
        extent = region.extent(fields)
        fields[region.start] = used[region.mem] if extent else 0
        used[region.mem] += extent
    return fields if spec.check(ispec, fields, params)[0] is ErrorCode.NONE else None


def fits(kind: str, params: Params) -> bool:
    """Whether the machine has ``kind`` (``sim.spec.built``: MMRQ only at OVERLAP = 2) and some
    legal ``kind`` exists on it (:func:`smallest`)."""
    return spec.built(spec.BY_NAME[kind], params) and smallest(kind, params) is not None


def spare_end(kind: spec.InstrSpec) -> int:
    """The first spare bit of an instruction of this kind: the bit above its last field (the
    ISA ignores the bits from there to the top: ``sim.asm.decode`` reads the fields only)."""
    return max((lsb + width for lsb, width in kind.field_offsets().values()), default=spec.OPCODE_BITS)


def or_bits(words: Sequence[int], bits: int) -> list[int]:
    """An instruction's words (INSTR_WORDS, the first holding bits 0..31) with ``bits`` (an
    INSTR_BITS-bit integer) ORed in."""
    whole = sum(int(w) << (spec.WORD_BITS * i) for i, w in enumerate(words)) | bits
    return [(whole >> (spec.WORD_BITS * i)) & ((1 << spec.WORD_BITS) - 1) for i in range(spec.INSTR_WORDS)]


@dataclass
class StressProgram:
    """One generated program.

    Attributes:
        seed: it is made from random.Random(seed) alone.
        ending: HALT or the ErrorCode name it was made to end in.
        job: the program and its external-memory image.
        features: what it exercises (for the coverage summary).
    """

    seed: int
    ending: str
    job: Job
    features: Counter = field(default_factory=Counter)
