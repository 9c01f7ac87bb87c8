"""``python -m cosim faults``: every fault the checker must see, one short program each.

A program stops at its first fault, so random programs (cosim/stress.py, cosim/edges.py) try
one fault each and reach a given field, region and bit only now and then. This sweep is built
from the ISA spec (:mod:`sim.spec`) instead, systematically: for every instruction, starting
from its smallest legal form (:func:`cosim.stress.smallest`),

* each bounded field one past its legal range, below and above (BAD_FIELD);
* each rule across fields broken (``sim.spec.FieldRule.breaking``: MM's overlapping accumulated
  rows, RQ's modes; BAD_FIELD);
* each region whose start field has bits above its memory's address bits (a scratchpad of
  4,096 words in a 16-bit field: bits 12 to 15), with each of those bits alone and all of them
  set over an address inside the memory: only the high bits are at fault (SPAD_RANGE or
  EXT_RANGE), so a checker that drops one of them lets the instruction run at the wrapped
  address;
* each region ending exactly one word past the end of its memory;
* a region empty in the smallest form (RQ's table, pc = 0) is taken from the smallest form with
  the one-bit field that opens it set (RQ pc = 1: a table of LANES words), for the two above;
* one fault at the last pc (IMEM_WORDS - 1: every bit of the pc set), after IMEM_WORDS - 1 legal
  instructions that keep every unit busy past 2**12 cycles (:func:`late_fault`): the upper
  bits of the fetch pc, the stop's pc and the five cycle counters, which the short programs
  never set.

Each program but the last is the faulty instruction and a HALT, with an empty external memory:
a hundred programs that run in a few seconds in one launch (the late one adds about four
seconds on Icarus: 34,124 cycles; on a machine of IMEM_WORDS = 65,536, 546,124 cycles). The
reference machine says how each one stops; the run compares the stop, the counters and both
memories as ``stress`` does, in chunks on the campaign's farm (cosim/pool.py, cosim/farm).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from sim import spec
from sim.asm import build
from sim.spec import Mem, Params

from .jobs import Job
from .pool import CHUNK, Made, Recipe, run_stream
from .stress import smallest
from .verilog import fresh_verilog, verilog_params


def _size(mem: Mem, params: Params) -> int:
    return params.SPAD_WORDS if mem is Mem.SPAD else params.EXT_WORDS


def _job(kind: str, fields: dict[str, int], what: str, params: Params) -> Job:
    words = build(kind, params=params, strict=False, **fields).encode()
    words += build("HALT", params=params).encode()
    return Job(words, None, f"{kind} {what}")


def bad_fields(kind: str, base: dict[str, int], params: Params) -> list[Job]:
    """Each bounded field of ``kind`` one below and one above its legal range."""
    out = []
    for f in spec.BY_NAME[kind].fields:
        lo, hi = f.legal_range(params)
        past = ([lo - 1] if lo > 0 else []) + ([hi + 1] if hi < (1 << f.width) - 1 else [])
        out += [_job(kind, {**base, f.name: value}, f"{f.name}={value} (legal {lo}..{hi})", params)
                for value in past]
    return out


def broken_rules(kind: str, base: dict[str, int], params: Params) -> list[Job]:
    """Each rule across fields of ``kind`` broken from ``base``."""
    return [_job(kind, {**base, **rule.breaking(params)}, f"rule {k + 1} broken ({rule.blames})", params)
            for k, rule in enumerate(spec.BY_NAME[kind].field_rules)]


def opened(kind: str, base: dict[str, int], params: Params) -> list[tuple[str, dict[str, int], list[str]]]:
    """For the regions empty in ``base``: (the one-bit field, the smallest legal form with it set,
    the regions it makes non-empty), for each one-bit field that opens one."""
    ispec = spec.BY_NAME[kind]
    empty = {r.start for r in ispec.regions if not r.extent(base)}
    out = []
    for f in ispec.fields:
        alt = smallest(kind, params, **{f.name: 1}) if f.width == 1 and empty else None
        if alt is not None:
            regions = [r.start for r in ispec.regions if r.start in empty and r.extent(alt)]
            if regions:
                out.append((f.name, alt, regions))
    return out


def high_starts(kind: str, base: dict[str, int], params: Params, only: tuple[str, ...] | None = None,
                note: str = "") -> list[Job]:
    """Each region's start with each bit above its memory's addresses alone, and all of them
    (the regions named in ``only``, else every one that is not empty; ``note`` ends each name)."""
    out = []
    for region in spec.BY_NAME[kind].regions:
        if (only is not None and region.start not in only) or not region.extent(base):
            continue
        size = _size(region.mem, params)
        high = [b for b in range(spec.ADDR_BITS) if 1 << b >= size]
        patterns = [(1 << b, f"bit {b}") for b in high]
        if len(high) > 1:
            patterns.append((sum(1 << b for b in high), f"bits {high[0]}-{high[-1]}"))
        for mask, what in patterns:
            out.append(_job(kind, {**base, region.start: base[region.start] | mask},
                            f"{region.start} with {what} set ({region.mem.name} range){note}", params))
    return out


def one_past(kind: str, base: dict[str, int], params: Params, only: tuple[str, ...] | None = None,
             note: str = "") -> list[Job]:
    """Each region (those named in ``only``, else every one that is not empty) moved to end one
    word past the end of its memory (``note`` ends each name)."""
    out = []
    ispec = spec.BY_NAME[kind]
    for region in ispec.regions:
        if (only is not None and region.start not in only) or not region.extent(base):
            continue
        start = _size(region.mem, params) - region.extent(base) + 1
        if 0 <= start < 1 << spec.ADDR_BITS:
            out.append(_job(kind, {**base, region.start: start},
                            f"{region.start} ends one word past the end{note}", params))
    return out


LATE_FILLER = ("LD", "ST", "MM", "RQ", "SM", "VADD")
"""The legal instructions (each in its smallest form) taken in turn before the late fault: on
the default machine the counters end at dma 5,464, mxu 4,781, vpu 11,594 and sfu 12,276 of
34,124 cycles, every one past 2**12 (bits 11 and 12 set at some point)."""
LATE_NAME = "unknown opcode at the last pc"


def late_fault(params: Params) -> Job:
    """An unknown opcode at pc IMEM_WORDS - 1 (every pc bit set), the program's last
    instruction, after IMEM_WORDS - 1 legal ones (LATE_FILLER in turn, those that fit the
    machine): the stop's pc and the counters' upper bits, which short programs never reach."""
    kinds = [k for k in LATE_FILLER if smallest(k, params) is not None]
    forms = {k: build(k, params=params, **smallest(k, params)).encode() for k in kinds}
    words = [w for i in range(params.IMEM_WORDS - 1) for w in forms[kinds[i % len(kinds)]]]
    bad = build("HALT", params=params).encode()
    unused = min(op for op in range(1 << spec.OPCODE_BITS) if op not in spec.BY_OPCODE)
    bad[0] = (bad[0] & ~((1 << spec.OPCODE_BITS) - 1)) | unused
    last = params.IMEM_WORDS - 1
    return Job(words + bad, None, f"{LATE_NAME}, {last}, after {last} legal instructions")


def unbuilt(params: Params) -> list[Job]:
    """For each instruction the machine lacks (MMRQ where OVERLAP < 2, ``sim.spec.built``), its
    smallest legal form on a machine that has it: the machine stops there with BAD_OPCODE."""
    out = []
    for ispec in spec.INSTRUCTIONS:
        if spec.built(ispec, params):
            continue
        fields = smallest(ispec.name, replace(params, OVERLAP=ispec.overlap_min))
        if fields is not None:
            what = f"where it is not built (OVERLAP = {params.OVERLAP})"
            out.append(_job(ispec.name, fields, what, params))
    return out


def jobs(params: Params) -> list[Job]:
    """The sweep (see the module docstring) for the machine, instruction by instruction, the
    instructions it lacks (:func:`unbuilt`), and the late fault last."""
    out = []
    for ispec in spec.instructions(params):
        base = smallest(ispec.name, params)
        if base is None or not ispec.fields:
            continue
        out += bad_fields(ispec.name, base, params) + broken_rules(ispec.name, base, params) + \
            high_starts(ispec.name, base, params) + one_past(ispec.name, base, params)
        for flag, alt, regions in opened(ispec.name, base, params):
            note = f" ({flag}=1)"
            out += high_starts(ispec.name, alt, params, tuple(regions), note) + \
                one_past(ispec.name, alt, params, tuple(regions), note)
    return [*out, *unbuilt(params), late_fault(params)]


def make_chunk(arg: tuple[int, int], params: Params) -> Made:
    """Programs ``start .. start+count-1`` of the sweep (a :class:`cosim.pool.Recipe`'s ``make``)."""
    start, count = arg
    return Made(jobs(params)[start:start + count])


def main(choice: str, verilog: Path | None = None, *, params: Params, waves: bool = False,
         keep: bool = False, engine: str = "auto", workers: int | None = None) -> int:
    """Run the sweep on each simulator of ``choice`` (chunks of cosim.pool.CHUNK programs on the
    campaign's farm); print PASS or FAIL (with the first differing programs); 0 when every
    program matches, 1 when one differs, 2 when a simulator could not run."""
    source = fresh_verilog(verilog, params=params)
    params = verilog_params(source)
    n = len(jobs(params))
    recipes = [Recipe(make_chunk, (start, min(CHUNK, n - start)), min(CHUNK, n - start))
               for start in range(0, n, CHUNK)]
    outcomes = run_stream(recipes, choice, noun="fault program", verilog=source, waves=waves, keep=keep,
                          engine=engine, jobs=workers)
    status = 0
    for o in outcomes:
        if o.error:
            print(f"{o.simulator:10s} ERROR: {o.error}")
            status = 2
            continue
        if not o.failed:
            print(f"{o.simulator:10s} PASS: {n} fault programs stop as the reference machine does")
        for path in o.waves:
            print(f"{o.simulator:10s} waveform: {path}")
        if not o.failed:
            continue
        status = max(status, 1)
        print(f"{o.simulator:10s} FAIL: {o.failed} of {n} fault programs differ from the reference")
        for failure in o.failures[:5]:
            print(f"  {failure.name}:")
            print("\n".join(f"    {line}" for line in failure.lines[:3]))
    sys.stdout.flush()
    return status
