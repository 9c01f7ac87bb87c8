"""What a stress program is, for the two that draw them (:mod:`cosim.stress`'s random programs
and :mod:`cosim.edges`'s programs aimed at the edges): how program k ends (:data:`ENDINGS`), the
instructions a body draws from (:data:`KINDS`), the smallest legal instruction of a kind on a
machine (:func:`smallest`), and the program with what it exercises (:class:`StressProgram`).
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field

from sim import spec
from sim.spec import ErrorCode, Mem, Params

from .jobs import Job

HALT = "HALT"
ENDINGS: tuple[str, ...] = (HALT, HALT, HALT, HALT, *(c.name for c in spec.CHECK_CODES))
"""How program k ends: ENDINGS[k % len(ENDINGS)]."""
KINDS = tuple(s.name for s in spec.INSTRUCTIONS if s.counter is not None)
"""The instructions a body draws from (all but HALT)."""


@functools.cache
def smallest(kind: str, params: Params) -> dict[str, int] | None:
    """The smallest legal ``kind`` on the machine: every field at the low end of its legal
    range, its regions side by side from word 0; None when even that fails the spec's checks
    (a small machine has no room for some: UNPACK needs 9 scratchpad words)."""
    ispec = spec.BY_NAME[kind]
    fields = {f.name: f.legal_range(params)[0] for f in ispec.fields}
    fields.update({r.start: 0 for r in ispec.regions})
    used = {Mem.SPAD: 0, Mem.EXT: 0}
    for region in ispec.regions:
        fields[region.start] = used[region.mem]
        used[region.mem] += region.extent(fields)
    return fields if spec.check(ispec, fields, params)[0] is ErrorCode.NONE else None


def fits(kind: str, params: Params) -> bool:
    """Whether some legal ``kind`` exists on the machine (:func:`smallest`)."""
    return smallest(kind, params) is not None


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
