"""sim/asm.py: building, encoding, decoding, disassembling and assembling instructions."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim import spec
from sim.asm import (
    AsmError,
    Instruction,
    assemble,
    build,
    decode,
    decode_program,
    disassemble,
    encode_program,
    listing,
)
from sim.spec import DEFAULT, Params

assemble = partial(assemble, params=DEFAULT)
build = partial(build, params=DEFAULT)
"""This file's programs are the default machine's (sim.asm takes the machine explicitly)."""


def _any_width_instruction() -> st.SearchStrategy[Instruction]:
    """Any instruction with every field anywhere in its bit width (legal range or not)."""
    def fields_of(ispec: spec.InstrSpec) -> st.SearchStrategy[Instruction]:
        values = {f.name: st.integers(0, (1 << f.width) - 1) for f in ispec.fields}
        return st.fixed_dictionaries(values).map(lambda fs: build(ispec.name, strict=False, **fs))
    return st.sampled_from(spec.INSTRUCTIONS).flatmap(fields_of)


def _legal_instruction() -> st.SearchStrategy[Instruction]:
    """Any instruction with every field in its legal range for the default parameters."""
    def fields_of(ispec: spec.InstrSpec) -> st.SearchStrategy[Instruction]:
        values = {f.name: st.integers(*f.legal_range(spec.DEFAULT)) for f in ispec.fields}
        return st.fixed_dictionaries(values).map(lambda fs: build(ispec.name, **fs))
    return st.sampled_from(spec.INSTRUCTIONS).flatmap(fields_of)


# --------------------------------------------------------------------------- encoding, pinned by hand


def _words(bits: int) -> list[int]:
    return [(bits >> (32 * i)) & 0xFFFFFFFF for i in range(4)]


def test_encoding_of_ld_by_hand():
    # opcode 1 in bits 3..0, dst in 19..4, src in 35..20, len in 51..36
    ins = build("LD", dst=5, src=0x123, len=60)
    assert ins.encode() == _words(1 | 5 << 4 | 0x123 << 20 | 60 << 36)
    assert ins.encode() == [0x12300051, 0x3C0, 0, 0]


def test_encoding_of_mm_by_hand():
    # opcode 3; dst 4, A 20, B 36 (16 bits each), M 52, K 60, N 68 (8 bits), tb 76 (1 bit),
    # lda 77, ldb 93, ldc 109 (16 bits): 125 bits
    ins = build("MM", dst=240, A=8, B=72, M=3, K=10, N=4, tb=1, lda=10, ldb=9, ldc=11)
    bits = (3 | 240 << 4 | 8 << 20 | 72 << 36 | 3 << 52 | 10 << 60 | 4 << 68 | 1 << 76
            | 10 << 77 | 9 << 93 | 11 << 109)
    assert ins.encode() == _words(bits)


def test_encoding_of_rq_and_halt_by_hand():
    # RQ: opcode 4; dst 4, src 20, len 36, m 52 (24 bits), s 76 (6 bits), relu 82
    ins = build("RQ", dst=180, src=240, len=50, m=12345678, s=30, relu=1)
    assert ins.encode() == _words(4 | 180 << 4 | 240 << 20 | 50 << 36 | 12345678 << 52 | 30 << 76 | 1 << 82)
    assert build("HALT").encode() == [15, 0, 0, 0]


# --------------------------------------------------------------------------- round trips


@given(_any_width_instruction())
def test_encode_decode_round_trip(ins):
    words = ins.encode()
    assert len(words) == 4 and all(0 <= w < 1 << 32 for w in words)
    assert decode(words) == ins


@pytest.mark.parametrize("ispec", spec.INSTRUCTIONS, ids=lambda s: s.name)
def test_each_field_at_full_width_stays_in_its_place(ispec):
    # every field at its widest value alone (the others zero): it decodes back alone
    for f in ispec.fields:
        values = {g.name: 0 for g in ispec.fields}
        values[f.name] = (1 << f.width) - 1
        ins = build(ispec.name, strict=False, **values)
        assert decode(ins.encode()).fields == values
    # and all fields at their widest values together
    full = {g.name: (1 << g.width) - 1 for g in ispec.fields}
    assert decode(build(ispec.name, strict=False, **full).encode()).fields == full


@given(st.lists(_legal_instruction(), max_size=20))
def test_program_round_trips(program):
    assert decode_program(encode_program(program)) == program
    text = "\n".join(disassemble(ins) for ins in program)
    assert assemble(text) == program
    assert assemble(listing(program)) == program


@given(_any_width_instruction())
def test_assemble_of_disassemble(ins):
    assert assemble(disassemble(ins), strict=False) == [ins]


def test_decode_ignores_bits_above_the_last_field():
    words = build("LD", dst=1, src=2, len=3).encode()
    words[3] = 0xFFFFFFFF
    assert decode(words) == build("LD", dst=1, src=2, len=3)


@pytest.mark.parametrize("opcode", spec.UNKNOWN_OPCODES)
def test_decode_refuses_an_unknown_opcode(opcode):
    with pytest.raises(AsmError, match=f"unknown opcode {opcode}"):
        decode([opcode, 0, 0, 0])
    good = build("HALT").encode()
    with pytest.raises(AsmError, match=f"instruction 1: unknown opcode {opcode}"):
        decode_program([*good, opcode, 0, 0, 0])


def test_decode_refuses_a_wrong_word_count():
    with pytest.raises(AsmError, match="an instruction is 4 words, got 3"):
        decode([1, 0, 0])
    with pytest.raises(AsmError, match="multiple of 4 words, got 5"):
        decode_program([15, 0, 0, 0, 0])


# --------------------------------------------------------------------------- text form


@pytest.mark.parametrize(("ins", "text"), [
    (build("MM", dst=240, A=8, B=72, M=3, K=10, N=4, tb=0, lda=10, ldb=9, ldc=11),
     "MM   dst=240 A=8 B=72 M=3 K=10 N=4 tb=0 lda=10 ldb=9 ldc=11"),
    (build("LD", dst=0, src=0, len=60), "LD   dst=0 src=0 len=60"),
    (build("RQ", dst=180, src=240, len=50, m=12345678, s=30, relu=1),
     "RQ   dst=180 src=240 len=50 m=12345678 s=30 relu=1"),
    (build("HALT"), "HALT"),
    (build("ST", src=3, dst=4, len=5), "ST   src=3 dst=4 len=5"),
    (build("SM", dst=70, src=6, len=64), "SM   dst=70 src=6 len=64"),
    (build("VADD", dst=1, src1=2, src2=3, len=4), "VADD dst=1 src1=2 src2=3 len=4"),
    (build("AMAX", dst=9, src=0, len=8), "AMAX dst=9 src=0 len=8"),
    (build("UNPACK", dst=16, src=0, len=2), "UNPACK dst=16 src=0 len=2"),
])
def test_disassembly_text(ins, text):
    assert disassemble(ins) == text
    assert str(ins) == text
    assert assemble(text) == [ins]


def test_assemble_accepts_listings_comments_hex_and_case():
    text = """
        # a comment line
        0  ld   dst=0x10 src=010 len=4   ; 010 is decimal ten
        1  HALT                          # done
    """
    assert assemble(text) == [build("LD", dst=16, src=10, len=4), build("HALT")]
    assert listing([build("LD", dst=16, src=10, len=4), build("HALT")]) == (
        "    0  LD   dst=16 src=10 len=4\n    1  HALT")


def test_fields_read_as_attributes():
    ins = build("MM", dst=240, A=8, B=72, M=3, K=10, N=4, tb=0, lda=10, ldb=9, ldc=11)
    assert (ins.M, ins.K, ins.N, ins.ldc) == (3, 10, 4, 11)
    assert ins.fields == {"dst": 240, "A": 8, "B": 72, "M": 3, "K": 10, "N": 4, "tb": 0,
                          "lda": 10, "ldb": 9, "ldc": 11, "acc": 0}
    with pytest.raises(AttributeError, match="MM has no field 'len'"):
        _ = ins.len


# --------------------------------------------------------------------------- builder errors


def test_build_refuses_an_unknown_op():
    with pytest.raises(AsmError, match="unknown instruction 'FOO'; known: LD, ST, MM"):
        build("FOO")


def test_build_refuses_missing_and_unknown_fields():
    with pytest.raises(AsmError, match=r"LD: missing field\(s\) len \(fields: dst src len fmt\)"):
        build("LD", dst=0, src=0)
    with pytest.raises(AsmError, match=r"LD: unknown field\(s\) size"):
        build("LD", dst=0, src=0, len=1, size=3)
    with pytest.raises(AsmError, match=r"missing field\(s\) len; unknown field\(s\) n"):
        build("LD", dst=0, src=0, n=1)
    with pytest.raises(AsmError, match=r"HALT: unknown field\(s\) x \(fields: none\)"):
        build("HALT", x=1)


@pytest.mark.parametrize(("op", "fields", "message"), [
    ("LD", {"dst": 0, "src": 0, "len": 1 << 16}, r"LD field len=65536 does not fit in 16 bits \(0..65535\)"),
    ("LD", {"dst": -1, "src": 0, "len": 1}, r"LD field dst=-1 does not fit in 16 bits"),
    ("MM", {"dst": 0, "A": 0, "B": 0, "M": 256, "K": 1, "N": 1, "tb": 0, "lda": 0, "ldb": 0, "ldc": 0},
     r"MM field M=256 does not fit in 8 bits \(0..255\)"),
    ("MM", {"dst": 0, "A": 0, "B": 0, "M": 1, "K": 1, "N": 1, "tb": 2, "lda": 0, "ldb": 0, "ldc": 0},
     r"MM field tb=2 does not fit in 1 bits \(0..1\)"),
    ("RQ", {"dst": 0, "src": 0, "len": 1, "m": 1 << 24, "s": 1, "relu": 0},
     r"RQ field m=16777216 does not fit in 24 bits"),
    ("RQ", {"dst": 0, "src": 0, "len": 1, "m": 1, "s": 64, "relu": 0},
     r"RQ field s=64 does not fit in 6 bits"),
    ("RQ", {"dst": 0, "src": 0, "len": 1, "m": 0, "s": 0, "relu": 0, "pc": 2, "tab": 0, "C": 4},
     r"RQ field pc=2 does not fit in 1 bits"),
    ("RQ", {"dst": 0, "src": 0, "len": 1, "m": 0, "s": 0, "relu": 0, "pc": 1, "tab": 0, "C": 1 << 16},
     r"RQ field C=65536 does not fit in 16 bits"),
])
def test_build_refuses_a_value_too_wide(op, fields, message):
    with pytest.raises(AsmError, match=message):
        build(op, **fields)
    with pytest.raises(AsmError, match=message):
        build(op, strict=False, **fields)  # the width holds even when not strict


_MM = {"dst": 0, "A": 0, "B": 0, "M": 1, "K": 1, "N": 1, "tb": 0, "lda": 0, "ldb": 0, "ldc": 0}


@pytest.mark.parametrize(("op", "fields", "message"), [
    ("MM", {**_MM, "M": 0}, "MM field M=0 is outside its legal range 1..4"),
    ("MM", {**_MM, "M": 5}, "MM field M=5 is outside its legal range 1..4"),
    ("MM", {**_MM, "N": 5}, "MM field N=5 is outside its legal range 1..4"),
    ("MM", {**_MM, "K": 0}, "MM field K=0 is outside its legal range 1..64"),
    ("MM", {**_MM, "K": 65}, "MM field K=65 is outside its legal range 1..64"),
    ("LD", {"dst": 0, "src": 0, "len": 0}, "LD field len=0 is outside its legal range 1..65535"),
    ("SM", {"dst": 0, "src": 0, "len": 65}, "SM field len=65 is outside its legal range 1..64"),
    ("RQ", {"dst": 0, "src": 0, "len": 0, "m": 1, "s": 1, "relu": 0},
     "RQ field len=0 is outside its legal range 1..65535"),
])
def test_build_refuses_out_of_legal_range_unless_not_strict(op, fields, message):
    with pytest.raises(AsmError, match=message):
        build(op, **fields)
    ins = build(op, strict=False, **fields)
    defaults = {f.name: f.default for f in spec.BY_NAME[op].fields if f.default is not None}
    assert ins.fields == defaults | fields
    assert decode(ins.encode()) == ins


def test_legal_ranges_follow_the_params():
    big = Params(T=8, LANES=8, K_MAX=128, SM_MAX_LEN=128)
    assert build("MM", params=big, **{**_MM, "M": 8, "K": 128}).M == 8
    assert build("SM", params=big, dst=0, src=200, len=128).len == 128
    with pytest.raises(AsmError, match=r"outside its legal range 1\.\.8"):
        build("MM", params=big, **{**_MM, "N": 9})


def test_build_checks_value_types():
    assert build("LD", dst=np.int64(3), src=np.uint16(4), len=True).values == (3, 4, 1, 0)
    with pytest.raises(AsmError, match=r"LD field len: expected an int, got 3.5"):
        build("LD", dst=0, src=0, len=3.5)
    with pytest.raises(AsmError, match=r"LD field len: expected an int, got '3'"):
        build("LD", dst=0, src=0, len="3")
    with pytest.raises(AsmError, match=r"LD field len: expected an int, got None"):
        build("LD", dst=0, src=0, len=None)


# --------------------------------------------------------------------------- assembler errors


@pytest.mark.parametrize(("text", "message"), [
    ("HALT\nFOO dst=1", r"line 2: unknown instruction 'FOO'.*: 'FOO dst=1'"),
    ("LD dst=0 src=0", r"line 1: LD: missing field\(s\) len"),
    ("HALT\n\nLD dst=0 src=0 len", r"line 3: expected name=value, got 'len': 'LD dst=0 src=0 len'"),
    ("LD dst=0 src=0 len=1 len=2", r"line 1: field len given twice"),
    ("LD dst=0 src=0 len=0", r"line 1: LD field len=0 is outside its legal range 1..65535"),
    ("LD dst=0 src=0 len=-1", r"line 1: LD field len=-1 does not fit in 16 bits"),
    ("LD dst=0 src=0 len=0x10000", r"line 1: LD field len=65536 does not fit"),
    ("LD dst=0 src=0 len=1e3", r"line 1: expected name=value, got 'len=1e3'"),
])
def test_assemble_errors_name_the_line(text, message):
    with pytest.raises(AsmError, match=message):
        assemble(text)


def test_assemble_not_strict_accepts_illegal_ranges():
    assert assemble("MM dst=0 A=0 B=0 M=9 K=0 N=1 tb=0 lda=0 ldb=0 ldc=0", strict=False)[0].M == 9
    with pytest.raises(AsmError, match="line 1: MM field M=9"):
        assemble("MM dst=0 A=0 B=0 M=9 K=0 N=1 tb=0 lda=0 ldb=0 ldc=0")


@pytest.mark.parametrize("words, message", [
    ([1.9, 0, 0, 0], "instruction must hold integers"),
    (None, "instruction must be a list"),
    (5, "instruction must be a list"),
    (["a", "b", "c", "d"], "instruction must hold integers"),
    ([1 << 32, 0, 0, 0], r"instruction\[0\] = 4294967296 does not fit 32 bits"),
])
def test_decode_refuses_words_that_are_not_32_bit_integers(words, message):
    with pytest.raises(AsmError, match=message):
        decode(words)


@pytest.mark.parametrize("text", [None, b"HALT", ["HALT"]])
def test_assemble_takes_a_str(text):
    with pytest.raises(AsmError, match="assemble takes the program as one str"):
        assemble(text)


@pytest.mark.parametrize("value", [float("inf"), 1.0, "3", None])
def test_build_refuses_non_integer_fields(value):
    with pytest.raises(AsmError, match="LD field dst: expected an int"):
        build("LD", dst=value, src=0, len=1)


def test_build_accepts_numpy_integers_and_bools():
    ld = build("LD", dst=np.int64(3), src=np.uint16(4), len=1)
    assert ld.fields == {"dst": 3, "src": 4, "len": 1, "fmt": 0}
    assert build("MM", dst=0, A=16, B=32, M=1, K=1, N=1, tb=True, lda=1, ldb=1, ldc=1).tb == 1


def test_build_refuses_bad_params():
    with pytest.raises(AsmError, match=r"params must be a sim\.spec\.Params"):
        build("HALT", params="x")


def test_a_field_with_a_default_may_be_left_out_and_is_shown_only_when_set():
    """MM's acc and LD's fmt (sim.spec.Field.default): the text of programs that do not use them
    reads as before they existed; set, they show and read back."""
    mm = build("MM", dst=40, A=0, B=20, M=2, K=3, N=2, tb=0, lda=3, ldb=2, ldc=2)
    assert mm.fields["acc"] == 0 and "acc" not in disassemble(mm)
    assert disassemble(mm) == "MM   dst=40 A=0 B=20 M=2 K=3 N=2 tb=0 lda=3 ldb=2 ldc=2"
    acc = build("MM", **(mm.fields | {"acc": 1}))
    assert disassemble(acc).endswith("ldc=2 acc=1") and assemble(disassemble(acc)) == [acc]
    ld = build("LD", dst=1, src=2, len=9, fmt=1)
    assert disassemble(ld) == "LD   dst=1 src=2 len=9 fmt=1" and assemble("LD dst=1 src=2 len=9")[0].fmt == 0


# --------------------------------------------------------------------------- fields with a default

WITH_DEFAULTS = [(i, f) for i in spec.INSTRUCTIONS for f in i.fields if f.default is not None]
"""Every field a program may leave out (VADD relu today), from the spec."""


def _least_fields(ispec: spec.InstrSpec) -> dict[str, int]:
    """The smallest legal value of every field."""
    return {f.name: f.legal_range(spec.DEFAULT)[0] for f in ispec.fields}


def test_vadd_relu_by_hand():
    """relu is VADD's fifth field, bit 68 of the instruction: bit 4 of its third word."""
    plain = build("VADD", dst=1, src1=2, src2=3, len=4)
    fused = build("VADD", dst=1, src1=2, src2=3, len=4, relu=1)
    assert plain.relu == 0 and plain == build("VADD", dst=1, src1=2, src2=3, len=4, relu=0)
    assert [a ^ b for a, b in zip(fused.encode(), plain.encode(), strict=True)] == [0, 0, 1 << 4, 0]
    assert str(fused) == "VADD dst=1 src1=2 src2=3 len=4 relu=1"
    assert str(plain) == "VADD dst=1 src1=2 src2=3 len=4"       # the default is not shown
    assert assemble("VADD dst=1 src1=2 src2=3 len=4") == [plain]
    with pytest.raises(AsmError, match=r"^VADD field relu=2 does not fit in 1 bits \(0\.\.1\)$"):
        build("VADD", dst=1, src1=2, src2=3, len=4, relu=2)


@pytest.mark.parametrize(("ispec", "field"), WITH_DEFAULTS, ids=lambda x: getattr(x, "name", None))
def test_a_field_left_out_takes_its_default_and_the_listing_omits_it(ispec, field):
    given_all = _least_fields(ispec)
    left_out = {k: v for k, v in given_all.items() if k != field.name}
    ins = build(ispec.name, **left_out)
    assert ins.fields[field.name] == field.default
    assert ins == build(ispec.name, **{**left_out, field.name: field.default})
    text = disassemble(ins)
    assert f" {field.name}=" not in text and assemble(text) == [ins]
    value = (field.default + 1) % (1 << field.width)     # another value is shown
    other = build(ispec.name, **{**left_out, field.name: value})
    assert f" {field.name}={value}" in disassemble(other)
    assert decode(other.encode()) == other and decode(ins.encode()) == ins


@pytest.mark.parametrize(("ispec", "field"), WITH_DEFAULTS, ids=lambda x: getattr(x, "name", None))
def test_a_wrong_value_of_a_field_with_a_default_is_refused_naming_it(ispec, field):
    fields = {**_least_fields(ispec), field.name: 1 << field.width}
    with pytest.raises(AsmError, match=rf"^{ispec.name} field {field.name}={1 << field.width} does not fit"):
        build(ispec.name, **fields)
    with pytest.raises(AsmError, match=rf"{ispec.name} field {field.name}: expected an int"):
        build(ispec.name, **{**fields, field.name: "1"})
    line = f"{ispec.name} " + " ".join(f"{k}={v}" for k, v in fields.items())
    with pytest.raises(AsmError, match=rf"line 1: .*{field.name}"):
        assemble(line)
