"""When each instruction of a program runs: its start and end cycle on the serial machine.

GA-2 today dispatches one instruction at a time: after FRONTEND_CYCLES of fetch and decode
before the first dispatch, each instruction holds the execute stage for its latency
(``sim.spec.latency``, GA2.md section 6) and the next one is dispatched right after it. So
an instruction's start is FRONTEND_CYCLES plus the latencies of the instructions before it,
and the program's ``cycles`` counter is the end of its HALT; each unit counter (``dma``,
``mxu``, ``vpu``, ``sfu``) is the sum of its instructions' spans. This is the model
:func:`sim.machine.predict_counters` sums; :func:`serial_timeline` keeps every span.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sim import spec
from sim.asm import Instruction
from sim.spec import Params

UNIT_NAMES = {"dma": "DMA", "mxu": "MXU", "vpu": "vector", "sfu": "softmax"}
"""Counter name -> the unit's name in tables and plots (HALT, with no counter, is the control)."""


@dataclass(frozen=True)
class Span:
    """One instruction on the timeline.

    Attributes:
        pc: its index in the program.
        op: its mnemonic (``MM``).
        unit: the counter its cycles go to (``dma``, ``mxu``, ``vpu``, ``sfu``), None for HALT.
        start: the cycle it is dispatched in (cycles from reset).
        end: the cycle its unit is done with it (start + its latency; on the serial machine the
            next instruction's dispatch).
        hazard, port: the cycles it waited on a hazard and on a scratchpad port before its
            dispatch (OVERLAP = 1, GA2.md section 7; 0 on the serial machine).
    """

    pc: int
    op: str
    unit: str | None
    start: int
    end: int
    hazard: int = 0
    port: int = 0

    @property
    def cycles(self) -> int:
        return self.end - self.start


def serial_timeline(code: Sequence[Instruction], params: Params) -> list[Span]:
    """Each instruction's span on the serial machine, up to and including the first HALT.

    This follows the spec's latencies under today's issue rule (one instruction at a time);
    it will be replaced by the reference machine's own timeline when instructions of
    different units overlap (the overlap issue), which will also mark hazard waits.

    Args:
        code: the program (legal, ending in HALT: what ``compile_graph`` emits).
        params: the machine (the latencies depend on LANES).

    Returns:
        one :class:`Span` per instruction, in program order; the last one's ``end`` is the
        ``cycles`` counter a run reaches.

    Raises:
        ValueError: an instruction before the first HALT is illegal (named by its pc), or
            there is no HALT.
    """
    spans = []
    now = spec.FRONTEND_CYCLES
    for pc, ins in enumerate(code):
        code_, detail = spec.check(ins.spec, ins.fields, params)
        if code_ is not spec.ErrorCode.NONE:
            raise ValueError(f"instruction {pc} ({ins.op}) is illegal ({spec.ERROR_TEXT[code_]}): {detail}")
        cycles = spec.latency(ins.spec, ins.fields, params)
        spans.append(Span(pc, ins.op, ins.spec.counter, now, now + cycles))
        now += cycles
        if ins.spec.counter is None:
            return spans
    raise ValueError(f"the program has no HALT (its {len(code)} instructions end without one)")


def timeline(code: Sequence[Instruction], params: Params) -> list[Span]:
    """Each instruction's span by the machine's issue rule (``sim.spec.Issue``): the serial
    machine's (:func:`serial_timeline`, worked out here on its own) or, with OVERLAP = 1 or 2
    (``sim.spec.issue_rule``), the engines side by side, with each instruction's hazard and port
    waits. The last span is the
    stop's (HALT): it starts when it is taken and its ``end`` is the ``cycles`` counter.

    Raises:
        ValueError: as :func:`serial_timeline`.
    """
    issue = spec.issue_rule(params, record=True)
    for pc, ins in enumerate(code):
        code_, detail = spec.check(ins.spec, ins.fields, params)
        if code_ is not spec.ErrorCode.NONE:
            raise ValueError(f"instruction {pc} ({ins.op}) is illegal ({spec.ERROR_TEXT[code_]}): {detail}")
        if ins.spec.counter is None:
            # the timeline is read at the stop: an LD's end grows while later writers are placed
            # (and at OVERLAP = 2 every cycle is known only then)
            stop = issue.stop()
            spans = [Span(p.pc, p.op, p.engine, p.start, p.end, p.hazard, p.port) for p in issue.timeline]
            spans.append(Span(pc, ins.op, None, stop, stop + spec.STOP_CYCLES))
            return spans
        issue.place(pc, ins.spec, ins.fields)
    raise ValueError(f"the program has no HALT (its {len(code)} instructions end without one)")


def unit_totals(spans: Sequence[Span]) -> dict[str, int]:
    """Counter name -> the cycles of its instructions, and ``cycles`` -> the end of the last span
    (the five counters of a run, GA2.md section 5)."""
    totals = {name: 0 for name in spec.COUNTERS}
    for span in spans:
        if span.unit is not None:
            totals[span.unit] += span.cycles
    totals["cycles"] = spans[-1].end if spans else spec.FRONTEND_CYCLES
    return totals
