"""The illegal-program checks of GA2.md section 3, generated from :mod:`sim.spec`.

Nothing here is retyped: the opcodes, the field positions and legal ranges
(:meth:`sim.spec.Field.legal_range`), the regions each instruction reads and writes and their
extents (:class:`sim.spec.Region`, whose extent formulas evaluate on Amaranth values), the
in-place exemption (``InstrSpec.in_place_ok``) and the order of the error codes
(:class:`sim.spec.ErrorCode`) all come from the spec, by looping over
``sim.spec.INSTRUCTIONS``. :func:`sim.spec.check` is the same algorithm on Python ints; the
unit test compares the two on random and edge instructions.

The checks are pipelined (Fmax target: 100 MHz on ECP5, hw/README.md):

* stage A, on the instruction memory's output: opcode decode, field ranges;
* stage B: region extents (the one multiply, ``(M-1)*lda``, lives here);
* stage C: region ends (start + extent) and the scratchpad / external-memory bounds;
* stage D, combinational on stage C's registers: overlaps and the error-code priority.

A field's legal maximum bounds the value the extent formulas see: the extents only matter
when no field is out of range (BAD_FIELD comes first), so each field enters them narrowed to
the bits of its legal maximum (M and N to the bits of T, K to those of K_MAX, ...). This keeps
the multiplier and the adders small without changing any result.
"""

from __future__ import annotations

from amaranth.hdl import Const, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from sim import spec
from sim.spec import DEFAULT, ErrorCode, InstrSpec, Mem, Params

from .isa import FIELD_BITS, fields_view

CHECK_STAGES = 3
"""Register stages from ``in_*`` to ``out_*`` (A, B, C; D is combinational after C)."""

PRIORITY = (ErrorCode.NO_HALT, *(c for c in ErrorCode if c not in (ErrorCode.NONE, ErrorCode.NO_HALT)))
"""The order in which faults are reported. NO_HALT first: the reference machine compares the
pc with the program length before it looks at the word there; then :class:`ErrorCode` order."""


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


class Checker(wiring.Component):
    """Decode and check one instruction per cycle, CHECK_STAGES cycles deep.

    Parameters:
        params: the machine's :class:`sim.spec.Params`.

    Members:
        en In(1): advance; every stage register loads only when en is high (the front end's
            global stall).
        flush In(1): clear every stage (takes precedence over en).
        in_valid In(1), in_nohalt In(1), in_pc In(pc_bits), in_instr In(INSTR_BITS): the
            instruction entering stage A (the instruction memory's read data), its pc, and
            whether that pc equals the program length (then in_instr is ignored).
        out_valid Out(1), out_pc Out(pc_bits), out_opcode Out(OPCODE_BITS),
        out_fields Out(FIELD_BITS): the instruction leaving stage C.
        out_code Out(ERROR_CODE_BITS): its :class:`sim.spec.ErrorCode`, NONE when legal
            (combinational from the stage C registers).

    Latency: CHECK_STAGES (3) cycles from in_* to out_* while en is high.

    Errors: reports, never raises; out_code is the code :func:`sim.spec.check` (or, for an
    unknown opcode or the end of the program, :class:`sim.machine.Machine`) gives.

    Raises:
        TypeError: params is not a :class:`sim.spec.Params`.
    """

    def __init__(self, params: Params = DEFAULT):
        if not isinstance(params, Params):
            self._MustUse__silence = True
            raise TypeError(f"Checker: params={params!r} must be a sim.spec.Params")
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
        })

    def elaborate(self, platform):
        m = Module()
        p = self.params

        def stage(name: str, values: dict[str, Value]) -> dict[str, Signal]:
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

        # ---- stage A: opcode, field ranges
        instr = self.in_instr
        op = instr[:spec.OPCODE_BITS]
        known = Const(0, 1)
        bad_field = {}
        for ispec in spec.INSTRUCTIONS:
            known = known | (op == int(ispec.opcode))
            view = fields_view(ispec.name, instr[spec.OPCODE_BITS:])
            flag = Const(0, 1)
            for f in ispec.fields:
                lo, hi = f.legal_range(p)
                value = Value.cast(getattr(view, f.name))
                if lo > 0:
                    flag = flag | (value < lo)
                if hi < (1 << f.width) - 1:
                    flag = flag | (value > hi)
            bad_field[ispec.name] = flag
        a = stage("a", {
            "valid": self.in_valid, "nohalt": self.in_nohalt, "pc": self.in_pc, "instr": instr,
            "bad_opcode": ~known, "bad_field": _select(op, bad_field),
        })

        # ---- stage B: extents of every region of every kind
        extents = {}
        for ispec in spec.INSTRUCTIONS:
            fields = _narrowed(ispec, a["instr"][spec.OPCODE_BITS:], p)
            for k, region in enumerate(ispec.regions):
                extents[f"ext_{ispec.name}_{k}"] = Value.cast(region.extent(fields))
        carried = ("valid", "nohalt", "pc", "instr", "bad_opcode", "bad_field")
        b = stage("b", {key: a[key] for key in carried} | extents)

        # ---- stage C: ends (start + extent), bounds
        op_b = b["instr"][:spec.OPCODE_BITS]
        ends = {}
        out_of = {Mem.SPAD: {}, Mem.EXT: {}}
        for ispec in spec.INSTRUCTIONS:
            view = fields_view(ispec.name, b["instr"][spec.OPCODE_BITS:])
            flags = {Mem.SPAD: Const(0, 1), Mem.EXT: Const(0, 1)}
            for k, region in enumerate(ispec.regions):
                end = Value.cast(getattr(view, region.start)) + b[f"ext_{ispec.name}_{k}"]
                ends[f"end_{ispec.name}_{k}"] = end
                flags[region.mem] = flags[region.mem] | (end > _mem_words(region.mem, p))
            for mem in (Mem.SPAD, Mem.EXT):
                out_of[mem][ispec.name] = flags[mem]
        c = stage("c", {key: b[key] for key in carried}
                  | {"spad_range": _select(op_b, out_of[Mem.SPAD]),
                     "ext_range": _select(op_b, out_of[Mem.EXT])}
                  | ends)

        # ---- stage D (combinational): overlaps, then the first fault in PRIORITY order
        op_c = c["instr"][:spec.OPCODE_BITS]
        overlap = {}
        for ispec in spec.INSTRUCTIONS:
            view = fields_view(ispec.name, c["instr"][spec.OPCODE_BITS:])
            flag = Const(0, 1)
            for w, wr in enumerate(ispec.regions):
                if not wr.writes:
                    continue
                for r, rd in enumerate(ispec.regions):
                    if rd.writes or rd.mem is not wr.mem:
                        continue
                    w_start = Value.cast(getattr(view, wr.start))
                    r_start = Value.cast(getattr(view, rd.start))
                    hit = (w_start < c[f"end_{ispec.name}_{r}"]) & (r_start < c[f"end_{ispec.name}_{w}"])
                    if ispec.in_place_ok:
                        hit = hit & (w_start != r_start)
                    flag = flag | hit
            overlap[ispec.name] = flag
        faults = {
            ErrorCode.NO_HALT: c["nohalt"],
            ErrorCode.BAD_OPCODE: c["bad_opcode"],
            ErrorCode.BAD_FIELD: c["bad_field"],
            ErrorCode.SPAD_RANGE: c["spad_range"],
            ErrorCode.EXT_RANGE: c["ext_range"],
            ErrorCode.OVERLAP: _select(op_c, overlap),
        }
        assert set(faults) == set(PRIORITY), "every ErrorCode has its fault signal"
        code = Const(int(ErrorCode.NONE), spec.ERROR_CODE_BITS)
        for err in reversed(PRIORITY):
            code = Mux(faults[err], int(err), code)

        m.d.comb += [
            self.out_valid.eq(c["valid"]),
            self.out_pc.eq(c["pc"]),
            self.out_opcode.eq(op_c),
            self.out_fields.eq(c["instr"][spec.OPCODE_BITS:]),
            self.out_code.eq(code),
        ]
        return m


def _select(op: Value, flags: dict[str, Value]) -> Value:
    """The flag of the instruction kind that ``op`` names (0 for an unknown opcode): the OR
    over the kinds of (op is this kind's opcode) & this kind's flag."""
    out = Const(0, 1)
    for name, flag in flags.items():
        out = out | ((op == int(spec.BY_NAME[name].opcode)) & flag)
    return out
