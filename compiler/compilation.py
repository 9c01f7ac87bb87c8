"""What the passes of the pipeline share: :class:`Compilation`, the arguments of
:func:`compiler.pipeline.compile_graph` and what each pass adds (the passes and their contracts
read it: :mod:`compiler.pipeline`, :mod:`compiler.contracts`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sim.spec import Params

if TYPE_CHECKING:
    from .allocator import AllocEvent
    from .emit import Emission
    from .ir import Graph
    from .layout import ExtEntry
    from .placement import Placement
    from .scales import ScalePlan
    from .schedule import Reordering


@dataclass(kw_only=True)
class Compilation:
    """What the passes share: the arguments of :func:`compile_graph`, then what each pass adds.
    Built by keyword only (``Compilation(graph=g, params=p)``).

    Attributes (arguments): graph, params (the machine), calibration (samples), fixed_ranges
    (``ranges=``), reuse, events (the allocator's trace, or None), stream (block matmuls
    whose operands do not fit the scratchpad whole), pack (int8 weights four to an external
    word: True, False, or None for only when needed; :mod:`compiler.packing`), disabled (the
    names of the passes switched off: each then runs its ``off`` instead, e.g. ``cse``, no
    merge; ``fusion``, each relu an RQ of its own; ``scheduling``, the emitted order kept).
    Attributes (results, None until their pass ran): source (the argument graph: the cse pass
    replaces ``graph`` by the merged graph), node_of (source's node id -> the id of the node
    computing it in ``graph``), consumers (node id -> readers), fused
    (matmuls carrying a relu), placement, schedule (step -> buffers released there), ext and
    ext_words (the external layout), ranges (calibrated, node id -> largest |value|),
    table_inputs (the id of a node whose operation clips its input, a table activation -> its
    input's calibration values), plan
    (the scale plan), emission (code, requantizers, high-water mark), reordering (the emission's
    schedule when ranking emissions worked it out: the scheduling pass reuses it).
    """

    graph: Graph
    params: Params
    calibration: Sequence[Mapping[str, object]] | None = None
    fixed_ranges: Mapping[str, float] | None = None
    reuse: bool = True
    events: list[AllocEvent] | None = None
    stream: bool = True
    launches: bool = False
    pack: bool | None = None
    disabled: frozenset[str] = frozenset()
    first_event: int = 0
    source: Graph | None = field(default=None, repr=False)
    node_of: dict[int, int] | None = None
    consumers: dict[int, list[int]] | None = None
    fused: set[int] | None = None
    placement: Placement | None = None
    schedule: dict[int, list[int]] | None = None
    ext: dict[str, ExtEntry] | None = field(default=None, repr=False)
    ext_words: int | None = None
    ranges: dict[int, float] | None = None
    table_inputs: dict[int, np.ndarray] | None = field(default=None, repr=False)
    plan: ScalePlan | None = None
    emission: Emission | None = None
    reordering: Reordering | None = field(default=None, repr=False)
