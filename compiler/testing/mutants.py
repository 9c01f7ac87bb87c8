"""Testing the tests: break the compiler on purpose and see whether the battery notices.

Each of the first 26 mutants mirrors one of the seed's 27 broken compilers (chapter 11,
"Testing the tests"; the 27th checked K against 10 x K_MAX, and a K above K_MAX compiles
now); 5 more break the streaming of layers larger than the scratchpad
(:mod:`compiler.blocking`, :mod:`compiler.streaming`), which the battery's streamed graphs
must catch; 4 more break biases and the cutting of K (issue 14), for its wide graphs; 1 drops
the relu fused into an add's VADD, which the battery's add-relu graphs must catch; 2 break the
blocking of issue 14's larger layers (pieces of depth, sums in the output's rows) and 4 the
packing of int8 weights (LD fmt = 1), which its packed graphs must catch; 3 break
common-subexpression elimination, which its repeats graph must catch; 6 break the scheduling
for the machine whose engines overlap, which its overlap graphs must catch; 3 break the scheduling
and the blocking ranking of the decoupled machine (OVERLAP = 2, issue 27), which its decoupled
graphs must catch; 4 break the blocking
cost model; 4 break LayerNorm, the embedding's GATHER and causal masking (issue 26), which its
GPT steps must catch; 6 break convolutions (padding, stride, per-channel scales, depthwise
blocks, activations in external memory, the ring of the bands run kernel row by kernel row),
which its convolutional graphs must catch. Each is a substitution, never an edit of source
text: it replaces one seam of the compiler with a
broken version built from the original (:class:`Function`: a small named function, or a
property, patched where the code that calls it looks it up; :class:`Entry`: a field of an
operation's entry in the table of :mod:`compiler.ops`; :class:`PassSeam`: a pass of
:data:`compiler.pipeline.PASSES`). Renaming or reformatting code leaves the mutants intact;
renaming a seam makes the check refuse to run, naming the mutant and the seam.

For each mutant a subprocess imports the compiler, applies the substitution and runs the
battery (the five refusals, the cancellation case, the overlap and decoupled graphs, the add-relu
graphs, the 60 random graphs,
then the streamed graphs, stopping at the first problem). A mutant is caught when the battery reports a
problem, crashes, or runs out of time. One substitution is equivalent in effect (the
allocator skipping a hole of exactly the right size) and should survive. The unbroken
compiler runs first and must pass. The battery compiles for the default machine (the
streamed graphs for smaller scratchpads, with the same T), so a mutant may use its
parameters (``DEFAULT.T``).

Usage: ``python -m compiler.testing.mutants [--jobs N] [--list] [--only N ...]``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import importlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sim import spec
from sim.spec import DEFAULT

from ..ops import OPS, Op

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_SECONDS = 600
PROBLEM_EXIT = 2  # compiler.testing.battery.MUTATION_EXIT (not imported: the parent stays light)
SEAM_EXIT = 3
"""Exit status of the subprocess when a mutant's seam is missing (never counted as caught)."""

Undo = Callable[[], None]


# --------------------------------------------------------------------------- seams


@dataclass(frozen=True)
class Function:
    """A module attribute (``compiler.lowering.matmul.mm_fields``) or a class attribute
    (``compiler.layout.ExtEntry.end``), given by its dotted path."""

    path: str

    def _owner(self) -> tuple[Any, str]:
        parts = self.path.split(".")
        for split in range(len(parts) - 1, 0, -1):
            try:
                owner: Any = importlib.import_module(".".join(parts[:split]))
            except ModuleNotFoundError:
                continue
            for part in parts[split:-1]:
                owner = getattr(owner, part)
            return owner, parts[-1]
        raise AttributeError(f"no module in {self.path!r}")

    def missing(self) -> str | None:
        try:
            owner, name = self._owner()
        except AttributeError:
            return f"{self.path} does not exist"
        return None if name in vars(owner) else f"{self.path} does not exist"

    def value(self) -> Any:
        owner, name = self._owner()
        return vars(owner)[name]

    def substitute(self, make: Callable[[Any], Any]) -> Undo:
        owner, name = self._owner()
        original = vars(owner)[name]
        setattr(owner, name, make(original))
        return lambda: setattr(owner, name, original)

    def __str__(self) -> str:
        return self.path.removeprefix("compiler.")


@dataclass(frozen=True)
class Entry:
    """A field of an operation's entry in the table (``OPS[softmax].scale``)."""

    op: Op
    field: str

    def missing(self) -> str | None:
        if self.op not in OPS:
            return f"the table has no entry {self.op}"
        names = {f.name for f in dataclasses.fields(OPS[self.op])}
        return None if self.field in names else f"OPS[{self.op}] has no field {self.field!r}"

    def value(self) -> Any:
        return getattr(OPS[self.op], self.field)

    def substitute(self, make: Callable[[Any], Any]) -> Undo:
        original = OPS[self.op]
        OPS[self.op] = dataclasses.replace(original, **{self.field: make(getattr(original, self.field))})
        return lambda: OPS.__setitem__(self.op, original)

    def __str__(self) -> str:
        return f"OPS[{self.op}].{self.field}"


@dataclass(frozen=True)
class PassSeam:
    """A pass of the pipeline, by name (``pass lifetimes``)."""

    name: str

    def missing(self) -> str | None:
        from .. import pipeline
        return None if any(p.name == self.name for p in pipeline.PASSES) else f"no pass {self.name!r}"

    def value(self) -> Any:
        from .. import pipeline
        return next(p for p in pipeline.PASSES if p.name == self.name)

    def substitute(self, make: Callable[[Any], Any]) -> Undo:
        from .. import pipeline
        original = pipeline.PASSES
        pipeline.PASSES = tuple(make(p) if p.name == self.name else p for p in original)
        return lambda: setattr(pipeline, "PASSES", original)

    def __str__(self) -> str:
        return f"pass {self.name}"


Seam = Function | Entry | PassSeam
"""Each has ``missing()`` (why it cannot be found, or None), ``value()`` (what is there now)
and ``substitute(make)`` (put ``make(value)`` there; returns the undo)."""


@dataclass(frozen=True)
class Mutant:
    """One deliberate bug: ``seam`` becomes ``broken(original)``."""

    label: str
    seam: Seam
    broken: Callable[[Any], Any]


@contextmanager
def applied(mutant: Mutant) -> Iterator[None]:
    """The mutant applied in this process, undone on leaving (for tests)."""
    undo = mutant.seam.substitute(mutant.broken)
    try:
        yield
    finally:
        undo()


# --------------------------------------------------------------------------- the broken versions


def _field(name: str, value: Callable[..., int]) -> Callable[[Callable], Callable]:
    """A fields function whose ``name`` field is ``value(*arguments)`` instead."""
    def make(original: Callable) -> Callable:
        def fields(*args: Any) -> dict[str, int]:
            return {**original(*args), name: value(*args)}
        return fields
    return make


def _full_size_tiles(original: Callable) -> Callable:
    def tiles(rows: int, cols: int, t: int) -> Iterator[Any]:
        for tile in original(rows, cols, t):
            yield tile._replace(rows=t, cols=t)
    return tiles


def _arguments(change: Callable[..., tuple]) -> Callable[[Callable], Callable]:
    """A function called with its arguments changed first."""
    def make(original: Callable) -> Callable:
        return lambda *args: original(*change(*args))
    return make


def _returns(value: Any) -> Callable[[Callable], Callable]:
    return lambda original: lambda *args: value


def _pins_softmax_input_to_one_eighth(rule: Any) -> Any:
    first, *rest = rule.pins
    return dataclasses.replace(rule, pins=(dataclasses.replace(first, scale=1 / 8), *rest))


def _freed_a_step_early(original: Any) -> Any:
    def run(state: Any) -> None:
        original.run(state)
        schedule = state.schedule
        steps = sorted(set(schedule) | {step - 1 for step in schedule})
        state.schedule = {s: schedule.get(s, []) + schedule.get(s + 1, []) for s in steps}
    return dataclasses.replace(original, run=run)


def _one_accumulator_row_short(original: Callable) -> Callable:
    def workspace(mm: Any, rows: int, cols: int, stream_a: bool, stream_b: bool, depth: int = 0,
                  acc_in_out: bool = False) -> Any:
        space = original(mm, rows, cols, stream_a, stream_b, depth, acc_in_out)
        short = mm.n
        return space._replace(words=space.words - short, a_block=space.a_block - short,
                              b_block=space.b_block - short)
    return workspace


def _bytes_reversed(original: Callable) -> Callable:
    def pack_int8(levels: Any) -> Any:
        words = original(levels)
        return sum(((words >> (8 * j)) & 0xFF) << (8 * (3 - j)) for j in range(4))
    return pack_int8


def _rows_of_one_word(original: Callable) -> Callable:
    return lambda region, first, k, packed=False, skip=0: original(region, first, 1, packed, skip)


def _later_pieces_overwrite(original: Callable) -> Callable:
    def mm_pieces(fields: dict, k_max: int, onto: bool = False) -> list:
        pieces = original(fields, k_max, onto)
        return pieces[:1] + [p | {"acc": 0} for p in pieces[1:]]
    return mm_pieces


def _first_piece_overwrites(original: Callable) -> Callable:
    def mm_pieces(fields: dict, k_max: int, onto: bool = False) -> list:
        pieces = original(fields, k_max, onto)
        return [pieces[0] | {"acc": 0}, *pieces[1:]]
    return mm_pieces


SEED_MUTANTS = (
    Mutant("tiling: partial tiles at the edges are issued full size",
           Function("compiler.lowering.matmul.tiles"), _full_size_tiles),
    Mutant("tiling: moving down one tile of A skips T words instead of T rows",
           Function("compiler.lowering.matmul.mm_fields"), _field("A", lambda tile, a, *_: a + tile.row)),
    Mutant("tiling: the next tile of a transposed B starts T words on, not T rows",
           Function("compiler.lowering.matmul.mm_fields"), _field("B", lambda tile, a, b, *_: b + tile.col)),
    Mutant("tiling: a transposed B is read with the output row length as its stride",
           Function("compiler.lowering.matmul.mm_fields"), _field("ldb", lambda tile, a, b, acc, k, n, t: n)),
    Mutant("tiling: MM never gets tb=1",
           Function("compiler.lowering.matmul.mm_fields"), _field("tb", lambda *_: 0)),
    Mutant("tiling: accumulator rows are written T words apart",
           Function("compiler.lowering.matmul.mm_fields"), _field("ldc", lambda *_: DEFAULT.T)),
    Mutant("requantizers: a matmul's scale= factor is left out",
           Function("compiler.lowering.matmul.matmul_factor"),
           _arguments(lambda factor, a, b, out: (1.0, a, b, out))),
    Mutant("requantizers: the A operand's scale is used for B as well",
           Function("compiler.lowering.matmul.matmul_factor"),
           _arguments(lambda factor, a, b, out: (factor, a, a, out))),
    Mutant("requantizers: a fused relu never sets the RQ relu flag",
           Function("compiler.lowering.matmul.fused_relu"), _returns(False)),
    Mutant("requantizers: Q16 probabilities are brought to int8 with 1/65536 instead of 127/65536",
           Function("compiler.lowering.softmax.softmax_factor"), _arguments(lambda scale: (1.0,))),
    Mutant("scales: the softmax input is pinned to 1/8 (Q3.5 would be needed) instead of 1/16",
           Entry(Op.SOFTMAX, "scale"), _pins_softmax_input_to_one_eighth),
    Mutant("scales: a tensor's range is its smallest per-sample maximum",
           Function("compiler.calibrate.calibrated_range"),
           lambda original: lambda per_sample: float(per_sample.min())),
    Mutant("scales: the second part of a concatenation keeps a scale of its own", Entry(Op.CONCAT, "scale"),
           lambda rule: dataclasses.replace(rule, joins=rule.joins[:1])),
    Mutant("scales: an add's scale is chosen from the sum only", Entry(Op.ADD, "scale"),
           lambda rule: dataclasses.replace(rule, covers=())),
    Mutant("emission: every SM reads row 0", Function("compiler.lowering.softmax.sm_fields"),
           _field("src", lambda row, dst, src, cols, valid=None: src)),
    Mutant("emission: every AMAX writes its index to the same word",
           Function("compiler.lowering.argmax.amax_fields"), _field("dst", lambda row, dst, src, cols: dst)),
    Mutant("emission: an add operand is rescaled by sum/operand instead of operand/sum",
           Function("compiler.lowering.add.rescale_factor"),
           _arguments(lambda operand, total: (total, operand))),
    Mutant("emission: add operands are never rescaled", Function("compiler.lowering.add.needs_rescale"),
           _returns(False)),
    Mutant("placement: both parts of a concatenation start at its first row",
           Function("compiler.placement.stack_offsets"), lambda original: lambda heights: [0] * len(heights)),
    Mutant("emission: LD brings in one row of a tensor", Function("compiler.lowering.memory.ld_fields"),
           _field("len", lambda entry, dst: entry.shape[1])),
    Mutant("emission: ST leaves out the last row of an output",
           Function("compiler.lowering.memory.st_fields"),
           _field("len", lambda entry, src: max(1, entry.words - entry.shape[1]))),
    Mutant("layout: external regions advance by rows, not words, so they overlap",
           Function("compiler.layout.ExtEntry.end"),
           lambda original: property(lambda entry: entry.addr + entry.shape[0])),
    Mutant("lifetimes: a buffer is freed at the step before its last reader", PassSeam("lifetimes"),
           _freed_a_step_early),
    Mutant("allocator: freed pieces merge with a neighbour even across a gap",
           Function("compiler.allocator.adjacent"),
           lambda original: lambda piece, start: piece[0] + piece[1] <= start),
    Mutant("fusion: a relu is fused although its matmul has other readers",
           Function("compiler.fusion.other_readers"), _returns([])),
    Mutant("placement: a tensor may be a view in two concatenations",
           Function("compiler.placement.check_free"), _returns(None)),
)
"""The seed's broken compilers (chapter 11)."""

WIDE_MUTANTS = (
    Mutant("split K: every piece after the first overwrites the accumulator (acc = 0)",
           Function("compiler.lowering.matmul.mm_pieces"), _later_pieces_overwrite),
    Mutant("bias: the first piece overwrites the bias loaded into the accumulator (acc = 0)",
           Function("compiler.lowering.matmul.mm_pieces"), _first_piece_overwrites),
    Mutant("bias: the bias is loaded into the accumulator's first row only",
           Function("compiler.lowering.matmul.bias_rows"),
           lambda original: lambda acc, rows, cols, entry: original(acc, 1, cols, entry)),
    Mutant("bias: the bias enters the accumulator in units of the output's scale, not the accumulator's",
           Function("compiler.bias.accumulator_unit"),
           lambda original: lambda node, scales, nodes=None: scales[node.id]),
)
"""Broken compilers for issue 14 (biases in the accumulator, K cut into pieces), which the
battery's wide graphs (:func:`compiler.testing.battery.check_wide`) must catch. (The seed's
27th, K checked against 10 x K_MAX, went with the limit: a K above K_MAX compiles now.)"""

STREAMING_MUTANTS = (
    Mutant("streaming: a block of A or B starts 'first' words into the region, not 'first' rows of k words",
           Function("compiler.blocking.block_src"), _rows_of_one_word),
    Mutant("streaming: a block of B is not loaded again for the next row block, though others took its place",
           Function("compiler.blocking.loads_b"),
           lambda original: lambda row_block, col_blocks, depth_count=1: row_block == 0),
    Mutant("streaming: the workspace (footprint) counts one accumulator row too few",
           Function("compiler.blocking.workspace"), _one_accumulator_row_short),
    Mutant("streaming: a block of a B stored row by row is loaded as one run, not gathered row by row",
           Function("compiler.blocking.gathered"), _returns(False)),
    Mutant("layout: the host writes a panel-stored weight row by row",
           Function("compiler.program.panel_major"), lambda original: lambda values, width: values.ravel()),
)
"""Broken streaming: a wrong block offset, a block not loaded again, an under-counted
footprint, a gather skipped, the host's panel order lost."""

BLOCKING_MUTANTS = (
    Mutant("blocking: every piece of depth of a streamed B is loaded from its first row",
           Function("compiler.blocking.depth_blocks"),
           lambda original: lambda mm, depth: [(0, rows) for _, rows in original(mm, depth)]),
    Mutant("blocking: with the sums in the output's rows, every row block adds into the first block's rows",
           Function("compiler.blocking.block_acc"),
           lambda original: lambda mm, at, blk, acc_in_out: at.acc),
)
"""Broken blocking of issue 14's larger layers: the pieces of depth of B (K longer than a
block of B) and the accumulator in the output's rows; the wide and streamed graphs must catch
them."""

PACKED_MUTANTS = (
    Mutant("packing: a block of a packed weight starts at its element offset, not a quarter of it",
           Function("compiler.blocking.ext_address"),
           lambda original: lambda region, offset, packed: region + offset),
    Mutant("packing: a packed weight loaded whole is read without fmt=1 (one value a word)",
           Function("compiler.lowering.memory.ld_fields"),
           lambda original: lambda entry, dst: {k: v for k, v in original(entry, dst).items() if k != "fmt"}),
    Mutant("packing: the host puts element 4i+j in byte 3-j of word i",
           Function("compiler.program.pack_int8"), _bytes_reversed),
    Mutant("packing: a streamed block of a packed weight may start in the middle of a word",
           Function("compiler.blocking.packed_aligned"), _returns(True)),
)
"""Broken packing of int8 weights (LD fmt = 1, :mod:`compiler.packing`): the battery's packed
graphs (:func:`compiler.testing.battery.check_packed`) must catch them."""

ADD_RELU_MUTANTS = (
    Mutant("fusion: a relu after an add never sets the VADD relu flag (the sum is stored unclipped)",
           Function("compiler.lowering.add.fused_relu"), _returns(False)),
)
"""The relu fused into an add's VADD (docs/add-an-instruction.md): the battery's add-relu graphs
must catch it."""

CSE_MUTANTS = (
    Mutant("cse: nodes are merged by operation and operands alone (a matmul's scale=, a slice's start "
           "ignored)", Function("compiler.cse._key"), lambda original: lambda node, ins: (node.op, ins)),
    Mutant("cse: a node's arrays are compared by shape alone (two products with different biases merge)",
           Function("compiler.cse._key"),
           lambda original: lambda node, ins: original(
               node if node.bias is None else dataclasses.replace(node, bias=np.zeros_like(node.bias)), ins)),
    Mutant("cse: operands are compared by their old ids, so only the first node of a repeated chain "
           "merges", Function("compiler.cse._key"),
           lambda original: lambda node, ins: original(node, node.ins)),
)
"""Broken common-subexpression elimination (:mod:`compiler.cse`): the battery's repeats graph
(:func:`compiler.testing.battery.check_cse`) must catch them."""

def _only(read_after_write: bool, write_after_read: bool, write_after_write: bool, ext: bool = True):
    """A broken dependence test of compiler/schedule.py that sees only the kinds of conflict asked for."""
    def conflict(a, b) -> bool:
        for s1, e1, r1, w1 in a:
            for s2, e2, r2, w2 in b:
                kinds = ((read_after_write and w1 and r2) or (write_after_read and r1 and w2)
                         or (write_after_write and w1 and w2))
                if s1 < e2 and s2 < e1 and kinds:
                    return True
        return False

    return lambda original: lambda later, earlier: (conflict(earlier[0], later[0])
                                                    or (ext and conflict(earlier[1], later[1])))


SCHEDULE_MUTANTS = (
    Mutant("schedule: a read may move ahead of the write it reads (read after write ignored)",
           Function("compiler.schedule.depends"), _only(False, True, True)),
    Mutant("schedule: a write may move ahead of a read of the old value (write after read ignored)",
           Function("compiler.schedule.depends"), _only(True, False, True)),
    Mutant("schedule: two writes of one word may swap (write after write ignored)",
           Function("compiler.schedule.depends"), _only(True, True, False)),
    Mutant("schedule: no instruction depends on another", Function("compiler.schedule.depends"),
           _returns(False)),
    Mutant("schedule: of two candidates that start together, the earlier in the program goes first (no "
           "look past the tie)", Function("compiler.schedule.HORIZON"), lambda original: 0),
    Mutant("schedule: the emitted order is always kept", Function("compiler.schedule.better"),
           _returns(False)),
)
"""Broken scheduling for the machine whose engines overlap (:mod:`compiler.schedule`): the
battery's overlap graphs (:func:`compiler.testing.battery.check_overlap`) must catch them."""

def _judged_at_overlap_1(original):
    """cycles_of at OVERLAP = 2 by the rule of OVERLAP = 1 (the scheduler keeps an order the
    decoupled machine runs slower)."""
    return lambda code, params: original(code, dataclasses.replace(params, OVERLAP=min(params.OVERLAP, 1)))


def _timed_at_overlap_1(original):
    """The blocking's issue rule at OVERLAP = 2 that of OVERLAP = 1."""
    return lambda params: original(dataclasses.replace(params, OVERLAP=min(params.OVERLAP, 1)))


def _ranked_by_latencies(original):
    """The decoupled ranking's candidates run, then sorted by their serial cycles again."""
    from ..blocking import serial_key
    return lambda found, mm, params, mxu: sorted(original(found, mm, params, mxu), key=serial_key)


DECOUPLED_MUTANTS = (
    Mutant("schedule at OVERLAP = 2: an order is kept when the rule of OVERLAP = 1 says it saves cycles "
           "(the decoupled machine's not asked)", Function("compiler.schedule.cycles_of"),
           _judged_at_overlap_1),
    Mutant("blocking at OVERLAP = 2: the candidates are ranked by their serial cycles (their run on the "
           "decoupled machine ignored)", Function("compiler.blocking.by_run_cycles"), _ranked_by_latencies),
    Mutant("blocking at OVERLAP = 2: each candidate is timed by the rule of OVERLAP = 1",
           Function("compiler.blocking.issue_rule"), _timed_at_overlap_1),
)
"""Broken scheduling for the decoupled machine (OVERLAP = 2, issue 27): the battery's decoupled
graphs (:func:`compiler.testing.battery.check_decoupled`) must catch them."""


def _without(op: str):
    """A broken latency of a load or requantization in the blocking cost model: 0 for ``op``."""
    return lambda original: lambda what, words, params: 0 if what == op else original(what, words, params)


def _mm_overhead_left_out(original):
    def tile_cycles(mm, params):
        cycles, count = original(mm, params)
        return cycles - count * spec.MM_OVERHEAD, count
    return tile_cycles


def _slowest_first(original):
    return lambda *args, **kwargs: original(*args, **kwargs)[::-1]


COST_MUTANTS = (
    Mutant("cost model: a blocking's loads cost nothing (the LDs are left out of its cycles)",
           Function("compiler.blocking._moving"), _without("LD")),
    Mutant("cost model: a row block's requantization costs nothing (its RQ is left out)",
           Function("compiler.blocking._moving"), _without("RQ")),
    Mutant("cost model: an MM's fixed overhead (MM_OVERHEAD) is left out of the tiles' cycles",
           Function("compiler.blocking.tile_cycles"), _mm_overhead_left_out),
    Mutant("cost model: the blockings are ranked slowest first",
           Function("compiler.streaming.rank_blockings"), _slowest_first),
)
"""Broken blocking cost models (issue 15, item 6: the ranking by exact cycles): the battery's
streamed, wide and packed graphs (:func:`compiler.testing.battery.check_rankings`) must catch them."""

def _relu_dropped(original: Callable) -> Callable:
    return lambda piece, entry, relu: {**original(piece, entry, relu), "relu": 0}


CHAIN_MUTANTS = (
    Mutant("chained: an MMRQ never applies the relu fused into its matmul (relu = 0)",
           Function("compiler.lowering.matmul.chained_fields"), _relu_dropped),
)
"""Broken chaining (issue 27 item 2: MMRQ at OVERLAP = 2): the battery's chained graphs
(:func:`compiler.testing.battery.check_chained`) must catch it."""


def _one_more_than_valid(original: Callable) -> Callable:
    def fields(row: int, dst: int, src: int, cols: int, valid: int | None = None) -> dict[str, int]:
        leaks = valid is not None and valid < cols
        return original(row, dst, src, cols, valid + 1 if leaks else valid)
    return fields


TRANSFORMER_MUTANTS = (
    Mutant("layernorm: every row's LN reads the first row",
           Function("compiler.lowering.layernorm.ln_fields"),
           _field("src", lambda row, dst, src, cols, bias, eps: src)),
    Mutant("layernorm: each LN normalises one value fewer than the row (len = cols - 1)",
           Function("compiler.lowering.layernorm.ln_fields"),
           _field("len", lambda row, dst, src, cols, bias, eps: cols - 1)),
    Mutant("embedding: every token's GATHER reads the first token's id",
           Function("compiler.lowering.embedding.gather_fields"),
           _field("idx", lambda token, dst, table, cols, fmt, ids, rows: ids)),
    Mutant("causal mask: a masked row's SM takes one score more than its valid length (the first "
           "masked key leaks into the normalisation)",
           Function("compiler.lowering.softmax.sm_fields"), _one_more_than_valid),
)
"""Broken LayerNorm, embedding and causal masking (issue 26): the battery's GPT steps
(:func:`compiler.testing.battery.check_transformer`) must catch them."""

def _held_blindly(original: Callable) -> Callable:
    """taps_steps whose loads stop once a slot has been loaded (compiler/convtaps.py)."""
    def steps(w: Any, rows: int, slots: int = 0) -> Iterator[Any]:
        seen: set[int] = set()
        for step in original(w, rows, slots):
            reads = tuple((r, yp, slot, load and slot not in seen) for r, yp, slot, load in step.reads)
            seen |= {slot for _, _, slot, _ in step.reads}
            yield dataclasses.replace(step, reads=reads)
    return steps


def _other_not_rescaled(original: Callable) -> Callable:
    """finish_rows that adds the residual's other operand at its own scale (compiler/residual.py)."""
    def finish_rows(em: Any, ep: Any, first: int, at: int, words: int) -> None:
        ep.pairs[1 - ep.own] = None
        return original(em, ep, first, at, words)
    return finish_rows


CONV_MUTANTS = (
    Mutant("conv padding: an image row is copied to the start of its padded row, not after the left "
           "padding", Function("compiler.lowering.conv.interior"), lambda original: lambda w: 0),
    Mutant("conv stride: neighbouring output pixels read taps C words apart whatever the stride (lda = C)",
           Function("compiler.lowering.conv.pixel_stride"), lambda original: lambda w: w.C),
    Mutant("per-channel scales: each channel's requantizer takes the tensor's weight scale, not its column's",
           Function("compiler.ops.conv2d.channel_scales"),
           lambda original: lambda weight, scale: np.full(weight.shape[1], float(scale))),
    Mutant("depthwise: the host writes every channel group's diagonal blocks over the first group's",
           Function("compiler.ops.conv2d.diagonal_offset"),
           lambda original: lambda node, group, tap, params: original(node, 0, tap, params)),
    Mutant("spill: every region of activations starts right after the layout (live regions overlap)",
           Function("compiler.spill._first_fit"), lambda original: lambda live, words, top: top),
    Mutant("conv taps: a ring slot loaded once counts as holding every row read from it later (the "
           "ring's rows not followed)", Function("compiler.convstep.taps_steps"), _held_blindly),
    Mutant("residual add in a convolution's bands: the other operand's row added at its own scale (its "
           "rescale left out)", Function("compiler.residual.finish_rows"), _other_not_rescaled),
)
"""Broken convolutions (issue 25): padding, stride, per-channel scales, depthwise blocks,
activations in external memory, the ``taps`` mode's ring and a residual add done by a
convolution's bands (issue 27); the battery's convolutional graphs
(:func:`compiler.testing.battery.check_conv`) must catch them."""

MUTANTS = (SEED_MUTANTS + STREAMING_MUTANTS + WIDE_MUTANTS + ADD_RELU_MUTANTS + BLOCKING_MUTANTS
           + PACKED_MUTANTS + CSE_MUTANTS + SCHEDULE_MUTANTS + DECOUPLED_MUTANTS + COST_MUTANTS
           + TRANSFORMER_MUTANTS + CONV_MUTANTS + CHAIN_MUTANTS)

EQUIVALENT = (
    Mutant("allocator: a free piece of exactly the requested size is passed over (a later, larger "
           "piece serves; it matters only when the scratchpad is all but full)",
           Function("compiler.allocator.fits"), lambda original: lambda piece, words: piece > words),
)

ALL = MUTANTS + EQUIVALENT


# --------------------------------------------------------------------------- running


@dataclass
class Verdict:
    mutant: Mutant | None
    caught: bool
    how: str
    seconds: float


def missing_seams(mutants: tuple[Mutant, ...] = ALL) -> list[str]:
    """Mutants whose seam does not exist (empty: all good)."""
    return [f"{m.label}: {problem}" for m in mutants if (problem := m.seam.missing()) is not None]


def run_in_child(index: int | None) -> int:
    """In the subprocess: apply mutant ``index`` of :data:`ALL` (None: none), run the battery."""
    from .battery import main
    if index is not None:
        mutant = ALL[index]
        problem = mutant.seam.missing()
        if problem is not None:
            print(f"seam missing: {problem}")
            return SEAM_EXIT
        mutant.seam.substitute(mutant.broken)
    return main(["--mutation"])


def run_one(index: int | None) -> Verdict:
    """Run the battery in a subprocess with mutant ``index`` of :data:`ALL` (None: unbroken)."""
    start = time.monotonic()
    mutant = None if index is None else ALL[index]
    path = [str(ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path), PYTHONDONTWRITEBYTECODE="1")
    script = ("import sys; from compiler.testing.mutants import run_in_child; "
              f"sys.exit(run_in_child({index!r}))")
    try:
        done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        return Verdict(mutant, True, f"timed out after {TIMEOUT_SECONDS} s", time.monotonic() - start)
    seconds = time.monotonic() - start
    lines = (done.stdout + done.stderr).strip().splitlines()
    last = lines[-1] if lines else ""
    if done.returncode == SEAM_EXIT:
        raise RuntimeError(f"the subprocess could not apply the mutant: {last}")
    if done.returncode == 0:
        return Verdict(mutant, False, "the battery passed", seconds)
    if done.returncode == PROBLEM_EXIT:
        return Verdict(mutant, True, last, seconds)
    return Verdict(mutant, True, f"crashed: {last}", seconds)


def _listing() -> str:
    lines = [f"{k + 1:3d}  {m.seam!s:32s} {m.label}" for k, m in enumerate(MUTANTS)]
    lines += [f"{len(MUTANTS) + k + 1:3d}  {m.seam!s:32s} {m.label} (equivalent)"
              for k, m in enumerate(EQUIVALENT)]
    return "\n".join(["  #  seam                             what is broken", *lines])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compiler.testing.mutants",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="mutants run in parallel (default 2)")
    parser.add_argument("--list", action="store_true", help="list the mutants and their seams, run nothing")
    parser.add_argument("--only", type=int, nargs="+", metavar="N",
                        help=f"run only these mutants (1..{len(ALL)}, as --list numbers them)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1 (mutants run in parallel), got {args.jobs}")
    if args.list:
        print(_listing())
        return 0
    bad = missing_seams()
    if bad:
        print("\n".join(bad), file=sys.stderr)
        return 2
    chosen = list(range(len(ALL))) if not args.only else [n - 1 for n in args.only]
    if any(not 0 <= k < len(ALL) for k in chosen):
        parser.error(f"--only takes numbers from 1 to {len(ALL)}")
    return _run(chosen, args.jobs)


def _run(chosen: list[int], jobs: int) -> int:
    start = time.monotonic()
    print("This breaks the compiler on purpose, one substitution at a time; 'caught' is what we want to see.")
    baseline = run_one(None)
    if baseline.caught:
        print(f"the UNBROKEN compiler fails the battery: {baseline.how}", file=sys.stderr)
        return 2
    print(f"unbroken compiler: the battery passes ({baseline.seconds:.1f} s)")
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        verdicts = []
        for k, future in zip(chosen, [pool.submit(run_one, k) for k in chosen], strict=True):
            v = future.result()
            verdicts.append((k, v))
            state = "caught" if v.caught else "NOT CAUGHT"
            print(f"  {v.mutant.label} [{v.mutant.seam}]: {state} ({v.seconds:.1f} s) -- {v.how}", flush=True)
    broken = [v for k, v in verdicts if k < len(MUTANTS)]
    equivalent = [v for k, v in verdicts if k >= len(MUTANTS)]
    caught = sum(v.caught for v in broken)
    print(f"\ncompiler: {caught} of {len(broken)} broken compilers caught")
    for v in equivalent:
        verdict = "not caught, as expected" if not v.caught else f"CAUGHT (unexpected: {v.how})"
        print(f"equivalent in effect: {v.mutant.label}: {verdict}")
    print(f"wall time {time.monotonic() - start:.1f} s with {jobs} jobs")
    return 0 if caught == len(broken) and not any(v.caught for v in equivalent) else 1


if __name__ == "__main__":
    sys.exit(main())
