"""What stress programs exercise, as functional coverage (cocotb-coverage's cover points).

The cover points, each a ``cocotb_coverage.coverage.CoverPoint`` under ``stress``:

``stress.instructions``
    every instruction (HALT included) that the reference machine executed;
``stress.stops``
    how the reference machine stopped: HALT or each error code (:data:`cosim.stress.STOPS`);
``stress.cases``
    the generator's named cases (transposed MM, K = 1, rows that overlap, RQ in place, ...);
``stress.fields.<instruction>.<field>``
    every field with a legal range (``sim.spec.Field.lo``/``hi``) at its edges, in the
    instructions the machine checked (executed, or stopped on): ``lo-1`` and ``lo``, and
    ``hi`` and ``hi+1`` where the upper bound is below the field's largest value;
``stress.alignment.<instruction>.<region>``
    the start address of every memory region modulo LANES, in the instructions checked (an
    empty region, RQ's table with pc = 0, is not counted);
``stress.rules.<instruction>``
    each rule across fields (``sim.spec.FieldRule``: MM's overlapping accumulated rows, RQ's
    modes) holding in an instruction the machine checked, which stops it with BAD_FIELD;
``stress.waits`` (a machine with OVERLAP = 1 or 2 only)
    the programs whose run waited on a hazard, on a scratchpad port (:data:`WAITS`);
``stress.queues`` (OVERLAP = 2 only)
    the programs whose run filled each engine's queue, held the front end, passed a waiting
    instruction, ended a write after read's wait early (:data:`QUEUES`, :func:`queue_events`).

cocotb-coverage keeps one coverage database per process (``coverage_db``). A :class:`Model`
clears it and declares the points afresh, so that a chunk of programs, drawn in a worker of the
pool, exports its own counts (``export_to_yaml``); a run merges the chunks' files with
``merge_coverage`` (:func:`merge`) and :func:`report` prints the merged counts, with the holes
(bins never hit) named. :data:`REQUIRED` are the points a CI run of 500 programs must cover
completely (a test checks it).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from pathlib import Path

import yaml
from cocotb_coverage.coverage import CoverPoint, coverage_db, merge_coverage

from sim import spec
from sim.asm import AsmError, Instruction, decode
from sim.spec import ErrorCode, Params

from .jobs import Expected
from .text import counted

ROOT = "stress"
HALT = "HALT"
STOPS = (HALT, *(c.name for c in ErrorCode if c is not ErrorCode.NONE and c not in spec.MACHINE_FAULTS))
"""The stops a program can make, in the order of :class:`sim.spec.ErrorCode` (HALT for a normal
one; not the machine's own STALL, which no correct machine reaches)."""
INSTRUCTIONS = tuple(s.name for s in spec.INSTRUCTIONS)
FLAGS = tuple(f"{s.name} {f.name}=1" for s in spec.INSTRUCTIONS for f in s.fields if f.width == 1)
"""Every one-bit field set (``MM tb=1``, ``RQ relu=1``, ...), from the spec: a new flag is a bin."""
CASES = tuple(dict.fromkeys((
    "MM tb=1", "MM tb=1, odd strides", "MM K=1", "MM K=K_MAX", "MM output rows overlap", "SM len=1",
    "SM len=SM_MAX_LEN", "RQ in place", "VADD in place", "collide RAW", "collide WAR", "collide WAW",
    *FLAGS, "RQ pc=1, C=LANES", "RQ pc=1, C not a multiple of LANES", "RQ pc=1, len > C",
    "RQ pc=1 in place", "LN len=1", "LN len=LN_MAX_LEN", "LN in place", "GATHER first row",
    "GATHER last row")))
"""The generator's named cases (``cosim.stress.Generator`` counts them in its features)."""
WAITS = ("hazard", "port")
"""OVERLAP = 1: the bins of ``stress.waits``, a program whose run waited on a hazard, on a port
(the reference machine's ``hazard`` and ``port`` counters, docs/GA2.md section 7)."""
QUEUES = (*(f"{e} queue full" for e in spec.ENGINES), "front end held", "passed", "write after read early")
"""OVERLAP = 2: the bins of ``stress.queues`` (docs/GA2.md section 7), a program in whose run the
reference machine had STATION_SLOTS - 1 instructions waiting in an engine's queue at once; held
the front end for a free entry; dispatched an instruction before an earlier one; dispatched a
write after read before the end of the instruction whose reads it overwrites."""
REQUIRED = (f"{ROOT}.instructions", f"{ROOT}.stops", f"{ROOT}.rules.")
"""Cover points a run of 500 programs covers completely (every rule across fields among them)."""
GROUPS = (("instructions", f"{ROOT}.instructions"), ("stops", f"{ROOT}.stops"), ("cases", f"{ROOT}.cases"),
          ("field edges", f"{ROOT}.fields."), ("rules", f"{ROOT}.rules."),
          ("alignment", f"{ROOT}.alignment."), ("waits", f"{ROOT}.waits"), ("queues", f"{ROOT}.queues"))
"""The report's lines: a title and the cover points whose name is (or starts with) the key."""
_EDGE_ORDER = ("lo-1", "lo", "hi", "hi+1")


def stop_name(code: ErrorCode) -> str:
    """How the coverage names a stop: HALT for a normal one, else the error code's name."""
    return HALT if code is ErrorCode.NONE else code.name


def edges(field: spec.Field, params: Params) -> dict[int, str]:
    """A bounded field's edge values -> their bins (``lo-1``, ``lo``, ``hi``, ``hi+1``)."""
    lo, hi = field.legal_range(params)
    top = (1 << field.width) - 1
    out = {lo: "lo"}
    if lo > 0:
        out[lo - 1] = "lo-1"
    if hi < top:
        out[hi] = "hi"
        out[hi + 1] = "hi+1"
    return out


def rule_bins(ispec: spec.InstrSpec) -> list[str]:
    """The bins of ``stress.rules.<instruction>``: ``rule k (field)``, in the spec's order."""
    return [f"rule {k + 1} ({rule.blames})" for k, rule in enumerate(ispec.field_rules)]


def _bounded(ispec: spec.InstrSpec) -> list[spec.Field]:
    return [f for f in ispec.fields if f.lo is not None or f.hi is not None]


def _checked(program: Sequence[Instruction] | Sequence[int], expected: Expected) -> list[Instruction]:
    """The instructions the machine checked, up to the one it stopped on: a program given as
    words (it holds an unknown opcode) is decoded up to the first word that does not decode."""
    if len(program) and isinstance(program[0], Instruction):
        return list(program[:expected.error_pc + 1])
    out = []
    for pc in range(min(expected.error_pc + 1, len(program) // spec.INSTR_WORDS)):
        try:
            out.append(decode([int(w) for w in program[pc * spec.INSTR_WORDS:(pc + 1) * spec.INSTR_WORDS]]))
        except AsmError:
            break
    return out


def _ignore(*_args) -> None:
    """What a cover point decorates: the sampling is the point's own work."""


class Model:
    """A fresh set of the cover points (the database of this process cleared first).

    Args:
        params: the machine (field bounds, LANES).
    """

    def __init__(self, params: Params):
        coverage_db.clear()
        self.params = params
        built = spec.instructions(params)       # MMRQ's bins only on a machine with it (OVERLAP = 2)
        lacking = {s.name for s in spec.INSTRUCTIONS} - {s.name for s in built}
        self.instruction = CoverPoint(f"{ROOT}.instructions", bins=[s.name for s in built])(_ignore)
        self.stop = CoverPoint(f"{ROOT}.stops", bins=list(STOPS))(_ignore)
        self.case = CoverPoint(f"{ROOT}.cases",
                               bins=[c for c in CASES if c.split(" ")[0] not in lacking])(_ignore)
        self.wait = CoverPoint(f"{ROOT}.waits", bins=list(WAITS))(_ignore) if params.OVERLAP else None
        self.queue = CoverPoint(f"{ROOT}.queues", bins=list(QUEUES))(_ignore) if params.OVERLAP == 2 else None
        self.fields, self.regions, self.rules = {}, {}, {}
        for ispec in built:
            if ispec.field_rules:
                self.rules[ispec.name] = CoverPoint(f"{ROOT}.rules.{ispec.name}",
                                                    bins=rule_bins(ispec))(_ignore)
            for f in _bounded(ispec):
                table = edges(f, params)
                self.fields[ispec.name, f.name] = CoverPoint(
                    f"{ROOT}.fields.{ispec.name}.{f.name}", xf=lambda v, t=table: t.get(v),
                    bins=list(dict.fromkeys(sorted(table.values(), key=_EDGE_ORDER.index))))(_ignore)
            for region in ispec.regions:
                self.regions[ispec.name, region.start] = CoverPoint(
                    f"{ROOT}.alignment.{ispec.name}.{region.start}", xf=lambda v, n=params.LANES: v % n,
                    bins=list(range(params.LANES)))(_ignore)

    def sample(self, program: Sequence[Instruction] | Sequence[int], expected: Expected,
               features: Iterable[str] = ()) -> None:
        """Count one program: its stop, its named cases, and each instruction the reference
        machine checked (executed or stopped on), up to ``expected.error_pc``."""
        self.stop(stop_name(expected.error_code))
        for case in features:
            if case in CASES:
                self.case(case)
        if self.wait is not None:
            for name in WAITS:
                if getattr(expected.counters, name):
                    self.wait(name)
        checked = _checked(program, expected)
        if self.queue is not None:
            for name in queue_events(checked, expected.timeline):
                self.queue(name)
        for pc, ins in enumerate(checked):
            name, fields = ins.spec.name, ins.fields
            if not spec.built(ins.spec, self.params):    # opcode 11 where MMRQ is not: BAD_OPCODE
                continue
            if pc < expected.error_pc or expected.error_code is ErrorCode.NONE:
                self.instruction(name)
            for f in _bounded(ins.spec):
                self.fields[name, f.name](fields[f.name])
            for region in ins.spec.regions:
                if region.extent(fields):
                    self.regions[name, region.start](fields[region.start])
            for rule, label in zip(ins.spec.field_rules, rule_bins(ins.spec), strict=True):
                if rule.holds(fields, self.params):
                    self.rules[name](label)

    def export(self, path: Path) -> None:
        """Write the counts of this model (cocotb-coverage's YAML)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        coverage_db.export_to_yaml(str(path))


def queue_events(code: Sequence[Instruction], timeline: Sequence[spec.Placed]) -> list[str]:
    """The bins of :data:`QUEUES` a run of the decoupled machine hits: ``timeline`` is the
    reference's (program order, the instructions that ran), ``code`` the program's instructions
    from the first."""
    found = set()
    for engine in spec.ENGINES:
        mine = [p for p in timeline if p.engine == engine]
        if any(sum(q.entered <= p.entered < q.start for q in mine) >= spec.STATION_SLOTS - 1 for p in mine):
            found.add(f"{engine} queue full")
    for before, after in itertools.pairwise(timeline):
        if after.entered > before.entered + spec.ENTER_CYCLES:
            found.add("front end held")
    latest = -1
    for p in timeline:
        if p.start < latest:
            found.add("passed")
        latest = max(latest, p.start)
    accesses = [spec.spad_accesses(ins.spec, ins.fields) for ins in code[:len(timeline)]]
    for i, p in enumerate(timeline):
        for j in range(i):
            q = timeline[j]
            if q.engine != p.engine and p.start < q.end and spec.war_only(accesses[i], accesses[j]):
                found.add("write after read early")
    return [name for name in QUEUES if name in found]


def merge(paths: Sequence[Path], out: Path) -> dict:
    """Merge the chunks' files (cocotb-coverage's ``merge_coverage``) into ``out``; the merged
    counts: cover point -> {bin: hits}."""
    merge_coverage(lambda _message: None, str(out), *(str(p) for p in paths))
    return read(out)


def read(path: Path) -> dict[str, dict]:
    """A coverage YAML file -> cover point -> {bin: hits} (points with bins only, the bins in the
    order they are declared)."""
    data = yaml.safe_load(Path(path).read_text())
    return {name: dict(sorted(item["bins:_hits"].items(), key=_bin_order))
            for name, item in data.items() if "bins:_hits" in item}


_KNOWN = {b: k for k, b in enumerate((*INSTRUCTIONS, *STOPS, *CASES, *_EDGE_ORDER, *WAITS, *QUEUES))}


def _bin_order(item: tuple) -> tuple:
    """Bins in the order they are declared (YAML sorts them by name)."""
    name = item[0]
    return (0, name, "") if isinstance(name, int) else (1, _KNOWN.get(name, len(_KNOWN)), str(name))


def holes(data: dict[str, dict], prefix: str) -> list[str]:
    """The bins never hit among the cover points named ``prefix`` (or under it)."""
    return [f"{name.removeprefix(ROOT + '.')} {bin_}" for name, bins in sorted(data.items())
            if name == prefix or name.startswith(prefix) for bin_, hits in bins.items() if not hits]


def _line(title: str, data: dict[str, dict], prefix: str, counts: bool) -> str:
    points = {n: b for n, b in data.items() if n == prefix or n.startswith(prefix)}
    total = sum(len(b) for b in points.values())
    hit = sum(1 for b in points.values() for h in b.values() if h)
    line = f"  {title}: {hit} of {total} bins ({100 * hit / max(total, 1):.0f}%)"
    if counts and len(points) == 1:
        (bins,) = points.values()
        line += ": " + ", ".join(f"{b} {h:,}" for b, h in bins.items())
    missing = holes(data, prefix)
    if missing:
        shown = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
        line += f"; never hit: {shown}"
    return line


def report(data: dict[str, dict], where: Path | None = None) -> list[str]:
    """The coverage lines of a run: per group the bins hit of all, the counts of the small ones,
    and the holes."""
    head = "coverage (cocotb-coverage" + (f", {where})" if where else ")")
    return [head, *(_line(title, data, prefix, counts=title in ("instructions", "stops", "cases", "waits",
                                                                "queues"))
                    for title, prefix in GROUPS if any(n == prefix or n.startswith(prefix) for n in data))]


def summary_line(programs: int, instructions: int, first: int, last: int) -> str:
    seeds = f"seed {first}" if first == last else f"seeds {first}..{last}"
    return f"{counted(programs, 'program')} ({seeds}), {counted(instructions, 'instruction')}"
