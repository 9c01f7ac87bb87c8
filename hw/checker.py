"""The illegal-program checks of GA2.md section 3, generated from :mod:`sim.spec`.

Nothing here is retyped: the opcodes, the field positions and legal ranges
(:meth:`sim.spec.Field.legal_range`), the regions each instruction reads and writes and their
extents (:class:`sim.spec.Region`, whose extent formulas evaluate on any arithmetic), the
in-place exemption (``InstrSpec.in_place_ok``) and the order of the error codes
(:class:`sim.spec.ErrorCode`) all come from the spec, by looping over
``sim.spec.INSTRUCTIONS``. :func:`sim.spec.check` is the same algorithm on Python ints; the
unit test compares the two on random and edge instructions.

The checks are pipelined (Fmax target: 100 MHz on ECP5, hw/README.md):

* stage R: the instruction memory's output, registered (an ECP5 block RAM's clock-to-output
  is about 6 ns of the 10 ns budget; nothing else fits behind it);
* stages E (END_STAGES of them): the end (start + extent) of every region, evaluated by
  :mod:`hw.formula` with a register after every multiply (``A + (M-1)*lda + K``: subtract;
  multiply; the two adds); opcode decode and field ranges in the first, carried along;
* stage C: the scratchpad / external-memory bounds and the overlaps of every kind of
  instruction (comparators: carry chains), and the instruction's latency (its spec formula,
  evaluated beside the extents) for the kind the opcode names, which the execute stage counts
  down instead of waiting for the unit's ``done``;
* stage D, combinational on stage C's registers: the opcode's bounds and overlap flags, and the
  error-code priority (a few gates; the execute stage registers the result).

A field's legal maximum bounds the value the extent formulas see: the extents only matter
when no field is out of range (BAD_FIELD comes first), so each field enters them narrowed to
the bits of its legal maximum (M and N to the bits of T, K to those of K_MAX, ...). This keeps
the multiplier and the adders small without changing any result.
"""

from __future__ import annotations

from amaranth.hdl import Const, Module, Mux, Signal, Value
from amaranth.lib.wiring import In, Out

from sim import spec
from sim.spec import DEFAULT, ErrorCode, InstrSpec, Mem, Params, Region

from . import formula
from .component import Checked
from .isa import FIELD_BITS, fields_view, is_one_of
from .lanes import any_of
from .ports import addr_bits


def _end(region: Region) -> spec.FieldFormula:
    """The formula of one past the region's last word: its start field plus its extent."""
    return lambda a, f: f[region.start] + region.formula(a, f)


def _latency(ispec: InstrSpec, params: Params) -> spec.FieldFormula:
    """The formula of the instruction's latency (``InstrSpec.latency``) for these parameters."""
    return lambda a, f: ispec.latency_formula(a, f, params)


def unit_instructions(params: Params) -> tuple[InstrSpec, ...]:
    """The instructions a unit of the machine ``params`` executes (all it has but HALT,
    ``sim.spec.instructions``): the ones with a latency to count down."""
    return tuple(s for s in spec.instructions(params) if s.counter is not None)



def end_stages(params: Params) -> int:
    """Stages from the registered instruction to the registered ends (start + extent) of every
    region and the registered latencies of this machine (at least one: the field-range flags
    are registered too). The formulas' structure, not the parameters' values, sets it."""
    ends = (formula.depth(_end(r), list(s.field_names)) for s in spec.instructions(params) for r in s.regions)
    latencies = (formula.depth(_latency(s, params), list(s.field_names)) for s in unit_instructions(params))
    return max(1, *ends, *latencies)


END_STAGES = end_stages(DEFAULT)
"""Stages from the registered instruction to the registered ends and latencies (:func:`end_stages`);
sim.spec.FRONTEND_CYCLES counts them, so every machine must need the same number (the
checker asserts it)."""
CHECK_STAGES = 1 + END_STAGES + 1
"""Register stages from ``in_*`` to ``out_*``: R, the ends, C (D is combinational after C)."""

PRIORITY = (ErrorCode.NO_HALT, *(c for c in spec.CHECK_CODES if c is not ErrorCode.NO_HALT))
"""The order in which faults are reported. NO_HALT first: the reference machine compares the
pc with the program length before it looks at the word there; then :class:`ErrorCode` order.
The codes a unit finds from its data (``sim.spec.DATA_ERRORS``: BAD_INDEX) are not the
checker's: the execute stage takes them (hw/control.py)."""


def pc_bits(params: Params) -> int:
    """Width of the pc, the program length and the error pc: PC_BITS, or more when IMEM_WORDS
    needs it (the NO_HALT pc of a full program is IMEM_WORDS itself)."""
    return max(spec.PC_BITS, params.IMEM_WORDS.bit_length())


def _narrowed(ispec: InstrSpec, raw_fields: Value, params: Params) -> dict[str, Value]:
    """The instruction's fields, each cut to the bits of its legal maximum."""
    view = fields_view(ispec.name, raw_fields)
    out = {}
    for f in ispec.fields:
        _lo, hi = f.legal_range(params)
        out[f.name] = Value.cast(getattr(view, f.name))[:max(1, hi.bit_length())]
    return out


def _mem_words(mem: Mem, params: Params) -> int:
    return params.SPAD_WORDS if mem is Mem.SPAD else params.EXT_WORDS


class Checker(Checked):
    """Decode and check one instruction per cycle, CHECK_STAGES cycles deep.

    Parameters:
        params: the machine's :class:`sim.spec.Params`.

    Members:
        en In(1): advance; every stage register loads only when en is high (the front end's
            global stall).
        flush In(1): clear every stage (takes precedence over en).
        in_valid In(1), in_nohalt In(1), in_pc In(pc_bits), in_instr In(INSTR_BITS): the
            instruction entering stage R (the instruction memory's read data), its pc, and
            whether that pc equals the program length (then in_instr is ignored).
        out_valid Out(1), out_pc Out(pc_bits), out_opcode Out(OPCODE_BITS),
        out_fields Out(FIELD_BITS): the instruction leaving stage C.
        out_code Out(ERROR_CODE_BITS): its :class:`sim.spec.ErrorCode`, NONE when legal
            (combinational from the stage C registers).
        out_latency Out(latency_bits(params)): its ``sim.spec.latency`` in cycles, when it is
            legal and not HALT (a register of stage C).

    Latency: CHECK_STAGES (5) cycles from in_* to out_* while en is high.

    Errors: reports, never raises; out_code is the code :func:`sim.spec.check` (or, for an
    unknown opcode or the end of the program, :class:`sim.machine.Machine`) gives.

    Raises:
        TypeError: params is not a :class:`sim.spec.Params`.
    """

    def __init__(self, params: Params):
        assert end_stages(params) == END_STAGES, "this machine's formulas need another pipeline depth"
        self.params = params
        pcw = pc_bits(params)
        super().__init__({
            "en": In(1),
            "flush": In(1),
            "in_valid": In(1),
            "in_nohalt": In(1),
            "in_pc": In(pcw),
            "in_instr": In(spec.INSTR_BITS),
            "out_valid": Out(1),
            "out_pc": Out(pcw),
            "out_opcode": Out(spec.OPCODE_BITS),
            "out_fields": Out(FIELD_BITS),
            "out_code": Out(spec.ERROR_CODE_BITS),
            "out_latency": Out(latency_bits(params)),
        } | (overlap_members(params) if params.OVERLAP else {}))

    def elaborate(self, platform):
        m = Module()
        # ---- stage R: the memory's output, registered
        r = self._stage(m, "r", {"valid": self.in_valid, "nohalt": self.in_nohalt, "pc": self.in_pc,
                                 "instr": self.in_instr})
        pipe = formula.Pipeline(m, self.en, name="extent")
        carried = self._decode(pipe, r)
        b = self._ends(m, pipe, r, carried)
        c, kinds = self._bounds_and_overlaps(m, b, carried)
        op_c = c["instr"][:spec.OPCODE_BITS]
        code = self._first_fault(op_c, c, kinds)
        if self.params.OVERLAP:
            m.d.comb += [getattr(self, f"out_{name}").eq(c[f"ov_{name}"])
                         for name in overlap_info_widths(self.params)]
        m.d.comb += [
            self.out_valid.eq(c["valid"]),
            self.out_pc.eq(c["pc"]),
            self.out_opcode.eq(op_c),
            self.out_fields.eq(c["instr"][spec.OPCODE_BITS:]),
            self.out_code.eq(code),
            self.out_latency.eq(c["latency"]),
        ]
        return m

    def _stage(self, m: Module, name: str, values: dict[str, Value]) -> dict[str, Signal]:
        """Registers for one pipeline stage, loaded when en (valid cleared by flush)."""
        regs = {}
        for key, value in values.items():
            value = Value.cast(value)
            reg = Signal(value.shape(), name=f"{name}_{key}")
            regs[key] = reg
            with m.If(self.flush):
                if key == "valid":
                    m.d.sync += reg.eq(0)
            with m.Elif(self.en):
                m.d.sync += reg.eq(value)
        return regs

    def _decode(self, pipe: formula.Pipeline, r: dict[str, Signal]) -> dict[str, formula.Term]:
        """Stage 0 of the extent pipeline (on R's registers): the opcode known, the field ranges;
        returns what is carried along the pipeline (nohalt, pc, instr and those two flags)."""
        p = self.params
        instr = r["instr"]
        op = instr[:spec.OPCODE_BITS]
        known = is_one_of(op, [s.name for s in spec.instructions(p)])
        bad_field = {}
        for ispec in spec.instructions(p):
            view = fields_view(ispec.name, instr[spec.OPCODE_BITS:])
            flag = Const(0, 1)
            for f in ispec.fields:
                lo, hi = f.legal_range(p)
                value = Value.cast(getattr(view, f.name))
                if lo > 0:
                    flag = flag | (value < lo)
                if hi < (1 << f.width) - 1:
                    flag = flag | (value > hi)
            values = {f.name: Value.cast(getattr(view, f.name)) for f in ispec.fields}
            for rule in ispec.field_rules:   # conditions across fields (sim.spec.FieldRule)
                flag = flag | rule.holds(values, p)
            bad_field[ispec.name] = flag
        return {
            "nohalt": pipe.input(r["nohalt"]), "pc": pipe.input(r["pc"]), "instr": pipe.input(instr),
            "bad_opcode": formula.Term(pipe, ~known, 0, fresh=False).registered(),
            "bad_field": formula.Term(pipe, _select(op, bad_field), 0, fresh=False).registered(),
        }

    def _ends(self, m: Module, pipe: formula.Pipeline, r: dict[str, Signal],
              carried: dict[str, formula.Term]) -> dict[str, Value]:
        """The end (start + extent) of every region of every kind and every latency, END_STAGES
        after R, with the carried values and the valid bit (cleared by flush) beside them."""
        p = self.params
        instr = r["instr"]
        ends = {}
        for ispec in spec.instructions(p):
            narrowed = _narrowed(ispec, instr[spec.OPCODE_BITS:], p)
            fields = {name: pipe.input(value) for name, value in narrowed.items()}
            for k, region in enumerate(ispec.regions):
                ends[f"end_{ispec.name}_{k}"] = formula.evaluate(pipe, _end(region), fields)
            if ispec.counter is not None:
                ends[f"latency_{ispec.name}"] = formula.evaluate(pipe, _latency(ispec, p), fields)
                if p.OVERLAP:
                    for key, fn in (("reads", ispec.reads_formula), ("writes", ispec.writes_formula)):
                        ends[f"{key}_{ispec.name}"] = formula.evaluate(
                            pipe, lambda a, f, fn=fn: fn(a, f, p), fields)
        b = {key: term.at(END_STAGES).value for key, term in (carried | ends).items()}
        valid = r["valid"]
        for k in range(END_STAGES):   # the valid bits, cleared by flush
            valid = self._stage(m, f"e{k}", {"valid": valid})["valid"]
        b["valid"] = valid
        return b

    def _bounds_and_overlaps(self, m: Module, b: dict[str, Value], carried: dict[str, formula.Term]):
        """Stage C: the bounds and overlap flags of every kind, registered as they are (the
        comparisons' carry chains fill the stage), and the latency of the kind the opcode names.
        Returns the stage's registers and the flags' names by fault."""
        p = self.params
        op_b = b["instr"][:spec.OPCODE_BITS]
        out_of = {Mem.SPAD: {}, Mem.EXT: {}}
        overlap = {}
        for ispec in spec.instructions(p):
            view = fields_view(ispec.name, b["instr"][spec.OPCODE_BITS:])
            end = [b[f"end_{ispec.name}_{k}"] for k in range(len(ispec.regions))]
            for mem in (Mem.SPAD, Mem.EXT):
                out_of[mem][ispec.name] = any_of(end[k] > _mem_words(mem, p)
                                               for k, region in enumerate(ispec.regions) if region.mem is mem)
            hits = []
            for w, wr in enumerate(ispec.regions):
                for r, rd in enumerate(ispec.regions):
                    if not wr.writes or rd.writes or rd.mem is not wr.mem:
                        continue
                    w_start = Value.cast(getattr(view, wr.start))
                    r_start = Value.cast(getattr(view, rd.start))
                    hit = (w_start < end[r]) & (r_start < end[w])
                    if ispec.in_place_ok and rd.in_place:
                        hit = hit & (w_start != r_start)
                    hits.append(hit)
            overlap[ispec.name] = any_of(hits)
        # Each kind's flags are registered as they are; the opcode picks one kind's in stage D
        # (the comparisons' carry chains fill stage C).
        kinds = {"spad_range": out_of[Mem.SPAD], "ext_range": out_of[Mem.EXT], "overlap": overlap}
        per_kind = {f"{fault}_{name}": flag for fault, flags in kinds.items() for name, flag in flags.items()}
        c = self._stage(m, "c", {key: b[key] for key in ("valid", *carried)} | per_kind
                        | {"latency": _select_value(op_b, {s.name: b[f"latency_{s.name}"]
                                                           for s in unit_instructions(p)}, latency_bits(p))}
                        | (self._overlap_info(op_b, b) if p.OVERLAP else {}))
        return c, kinds

    def _overlap_info(self, op_b: Value, b: dict[str, Value]) -> dict[str, Value]:
        """OVERLAP = 1, into stage C: what the issue rule needs (GA2.md section 7), for the kind
        the opcode names: the read window (``reads``, and ``rd``: it is not 0), the first cycle
        of the write window (``wfrom`` = latency - writes, and ``wr``: writes is not 0), and
        the scratchpad regions in SPAD_SLOTS slots, each its start, its end and whether it is
        read and written (unused slots neither)."""
        p = self.params
        lbits = latency_bits(p)
        abits = addr_bits(p.SPAD_WORDS)
        units = unit_instructions(p)
        out = {
            "reads": _select_value(op_b, {s.name: b[f"reads_{s.name}"] for s in units}, lbits),
            "rd": _select(op_b, {s.name: b[f"reads_{s.name}"] != 0 for s in units}),
            "wfrom": _select_value(op_b, {s.name: (b[f"latency_{s.name}"] - b[f"writes_{s.name}"])[:lbits]
                                          for s in units}, lbits),
            "wr": _select(op_b, {s.name: b[f"writes_{s.name}"] != 0 for s in units}),
        }
        if p.OVERLAP == 2:
            return {f"ov_{name}": value for name, value in (out | self._station_slots(op_b, b)).items()}
        for k in range(SPAD_SLOTS):
            starts, ends, reads, writes = {}, {}, {}, {}
            for ispec in units:
                spad = [(i, r) for i, r in enumerate(ispec.regions) if r.mem is Mem.SPAD]
                if k >= len(spad):
                    continue
                i, region = spad[k]
                view = fields_view(ispec.name, b["instr"][spec.OPCODE_BITS:])
                starts[ispec.name] = Value.cast(getattr(view, region.start))[:abits]
                ends[ispec.name] = Value.cast(b[f"end_{ispec.name}_{i}"])[:abits + 1]
                read = Const(int(not region.writes), 1)
                if region.also_read_if is not None:
                    read = read | Value.cast(getattr(view, region.also_read_if))
                reads[ispec.name] = read
                writes[ispec.name] = Const(int(region.writes), 1)
            out[f"s{k}"] = _select_value(op_b, starts, abits)
            out[f"e{k}"] = _select_value(op_b, ends, abits + 1)
            out[f"r{k}"] = _select(op_b, reads)
            out[f"w{k}"] = _select(op_b, writes)
        return {f"ov_{name}": value for name, value in out.items()}

    def _station_slots(self, op_b: Value, b: dict[str, Value]) -> dict[str, Value]:
        """OVERLAP = 2: the scratchpad regions as the station compares them (hw/station.py): the
        written region, if any, in slot ``w`` (``ws``, ``we``: start and end; ``ww``: there is
        one; ``wa``: it is read too, MM's acc), the regions only read in slots ``r0``.. (``r{k}s``,
        ``r{k}e``, ``r{k}v``: start, end, used). An instruction writes one region at most, so a
        hazard is a pair of a written slot with any slot: 1 + 2 * READ_SLOTS pairs per pair of
        instructions, not SPAD_SLOTS squared."""
        abits = addr_bits(self.params.SPAD_WORDS)
        out = {}
        slots = [("w", lambda written, read: written),
                 *((f"r{k}", lambda written, read, k=k: read[k] if k < len(read) else None)
                   for k in range(READ_SLOTS))]
        for slot, pick in slots:
            starts, ends, used, also = {}, {}, {}, {}
            for ispec in unit_instructions(self.params):
                index = pick(*station_regions(ispec))
                if index is None:
                    continue
                view = fields_view(ispec.name, b["instr"][spec.OPCODE_BITS:])
                region = ispec.regions[index]
                starts[ispec.name] = Value.cast(getattr(view, region.start))[:abits]
                ends[ispec.name] = Value.cast(b[f"end_{ispec.name}_{index}"])[:abits + 1]
                used[ispec.name] = Const(1, 1)
                if region.also_read_if is not None:
                    also[ispec.name] = Value.cast(getattr(view, region.also_read_if))
            out[f"{slot}s"] = _select_value(op_b, starts, abits)
            out[f"{slot}e"] = _select_value(op_b, ends, abits + 1)
            out["ww" if slot == "w" else f"{slot}v"] = _select(op_b, used)
            if slot == "w":
                out["wa"] = _select(op_b, also)
        return out

    def _first_fault(self, op_c: Value, c: dict[str, Signal], kinds: dict[str, dict]) -> Value:
        """Stage D (combinational on C's registers): the opcode's flags, the first fault in
        PRIORITY order."""
        def chosen(fault: str) -> Value:
            return _select(op_c, {name: c[f"{fault}_{name}"] for name in kinds[fault]})

        faults = {
            ErrorCode.NO_HALT: c["nohalt"],
            ErrorCode.BAD_OPCODE: c["bad_opcode"],
            ErrorCode.BAD_FIELD: c["bad_field"],
            ErrorCode.SPAD_RANGE: chosen("spad_range"),
            ErrorCode.EXT_RANGE: chosen("ext_range"),
            ErrorCode.OVERLAP: chosen("overlap"),
        }
        assert set(faults) == set(PRIORITY), "every ErrorCode has its fault signal"
        code = Const(int(ErrorCode.NONE), spec.ERROR_CODE_BITS)
        for err in reversed(PRIORITY):
            code = Mux(faults[err], int(err), code)
        return code


SPAD_SLOTS = max(sum(r.mem is Mem.SPAD for r in s.regions) for s in spec.instructions(Params(OVERLAP=1)))
"""OVERLAP = 1: the most scratchpad regions of one instruction of that machine (MM, VADD, LUT: 3),
the region slots the issue rule compares."""


def station_regions(ispec: InstrSpec) -> tuple[int | None, tuple[int, ...]]:
    """OVERLAP = 2: (the index in ``ispec.regions`` of its written scratchpad region, or None;
    the indices of its scratchpad regions only read), as the station's slots hold them."""
    spad = [k for k, r in enumerate(ispec.regions) if r.mem is Mem.SPAD]
    written = [k for k in spad if ispec.regions[k].writes]
    assert len(written) <= 1, f"{ispec.name}: the station takes one written scratchpad region at most"
    return (written[0] if written else None), tuple(k for k in spad if not ispec.regions[k].writes)


READ_SLOTS = max(len(station_regions(s)[1]) for s in spec.instructions(Params(OVERLAP=2)))
"""OVERLAP = 2: the most scratchpad regions an instruction only reads (MMRQ's A, B and entries:
3; MM's A and B, VADD's two sources, LUT's source and table, RQ's source and table (empty with
pc = 0), LN's row and bias: 2)."""


def overlap_members(params: Params) -> dict:
    """OVERLAP = 1: the checker's outputs for the issue rule (:meth:`Checker._overlap_info`),
    from stage C's registers: out_reads, out_rd, out_wfrom, out_wr, and per region slot k
    out_s{k} (start), out_e{k} (end), out_r{k}, out_w{k} (read, written)."""
    return {f"out_{name}": Out(width) for name, width in overlap_info_widths(params).items()}


def overlap_info_widths(params: Params) -> dict[str, int]:
    """The bits of each value of :func:`overlap_members`, by name without the ``out_``."""
    lbits = latency_bits(params)
    abits = addr_bits(params.SPAD_WORDS)
    widths = {"reads": lbits, "rd": 1, "wfrom": lbits, "wr": 1}
    if params.OVERLAP == 2:
        widths |= {"ws": abits, "we": abits + 1, "ww": 1, "wa": 1}
        for k in range(READ_SLOTS):
            widths |= {f"r{k}s": abits, f"r{k}e": abits + 1, f"r{k}v": 1}
        return widths
    for k in range(SPAD_SLOTS):
        widths |= {f"s{k}": abits, f"e{k}": abits + 1, f"r{k}": 1, f"w{k}": 1}
    return widths


def latency_bits(params: Params) -> int:
    """Width of the latency the checker reports: enough for the longest legal instruction."""
    longest = 0
    for ispec in unit_instructions(params):
        fields = {f.name: f.legal_range(params)[1] for f in ispec.fields}
        longest = max(longest, spec.latency(ispec, fields, params))
    return longest.bit_length()


def _select_value(op: Value, values: dict[str, Value], width: int) -> Value:
    """The value of the instruction kind that ``op`` names (0 for an unknown opcode or HALT)."""
    chosen = any_of(Mux(is_one_of(op, [name]), value, 0) for name, value in values.items())
    return (Const(0, width) | chosen)[:width]


def _select(op: Value, flags: dict[str, Value]) -> Value:
    """The flag of the instruction kind that ``op`` names (0 for an unknown opcode): the OR
    over the kinds of (op is this kind's opcode) & this kind's flag."""
    return any_of(is_one_of(op, [name]) & flag for name, flag in flags.items())
