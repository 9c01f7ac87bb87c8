"""sim/spec.py: parameters, encoding layout, legal ranges, timing constants, checks, latencies."""

from __future__ import annotations

import math
import random
import re
from pathlib import Path

import pytest

from sim import spec
from sim.isadoc import latency_text
from sim.spec import DEFAULT, ErrorCode, Params, check, latency

NONE, BAD_FIELD, SPAD_RANGE, EXT_RANGE, OVERLAP = (
    ErrorCode.NONE, ErrorCode.BAD_FIELD, ErrorCode.SPAD_RANGE, ErrorCode.EXT_RANGE, ErrorCode.OVERLAP)


def code_of(op: str, params: Params = DEFAULT, **fields: int) -> ErrorCode:
    return check(spec.BY_NAME[op], fields, params)[0]


# --------------------------------------------------------------------------- parameters


def test_defaults_follow_ga2_section_1():
    p = Params()
    assert (p.T, p.K_MAX, p.SPAD_WORDS, p.EXT_WORDS) == (4, 64, 4096, 65536)
    assert p.IMEM_WORDS >= 4096 and p.SM_MAX_LEN >= 64 and p.LANES == 4
    assert p == DEFAULT


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"T": 0}, "Params.T = 0: must be a positive int"),
    ({"T": "4"}, "Params.T = '4': must be a positive int"),
    ({"T": True}, "Params.T = True: must be a positive int"),
    ({"K_MAX": -1}, "Params.K_MAX = -1: must be a positive int"),
    ({"T": 17, "LANES": 16}, "Params.T = 17: must be 1..16"),
    ({"T": 8}, "Params.LANES = 4: must be at least T = 8 (the MXU moves a row of B and of the output in "
               "one access): LANES in 8, 16"),
    ({"T": 16, "LANES": 8}, "Params.LANES = 8: must be at least T = 16"),
    ({"LANES": 2}, "Params.LANES = 2: must be one of 4, 8, 16"),
    ({"LANES": 12}, "Params.LANES = 12: must be one of 4, 8, 16"),
    ({"K_MAX": 256}, "Params.K_MAX = 256: must be 1..255 (the K field is 8 bits)"),
    ({"SPAD_WORDS": 3000}, "Params.SPAD_WORDS = 3000: must be a power of two from LANES = 4 to 65536"),
    ({"SPAD_WORDS": 2}, "Params.SPAD_WORDS = 2: must be a power of two from LANES = 4 to 65536"),
    ({"SPAD_WORDS": 4, "LANES": 8}, "Params.SPAD_WORDS = 4: must be a power of two from LANES = 8 to 65536"),
    ({"SPAD_WORDS": 1 << 17}, "Params.SPAD_WORDS = 131072: must be a power of two from LANES = 4 to 65536 "
                              "(address fields are 16 bits)"),
    ({"EXT_WORDS": 5000}, "Params.EXT_WORDS = 5000: must be a power of two"),
    ({"IMEM_WORDS": 100}, "Params.IMEM_WORDS = 100: must be 4096..65536"),
    ({"IMEM_WORDS": 1 << 17}, "Params.IMEM_WORDS = 131072: must be 4096..65536"),
    ({"SM_MAX_LEN": 32}, "Params.SM_MAX_LEN = 32: must be 64..1024"),
    ({"SM_MAX_LEN": 2048}, "Params.SM_MAX_LEN = 2048: must be 64..1024"),
])
def test_params_validation_messages(kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Params(**kwargs)


def test_params_accept_the_limits():
    p = Params(T=16, LANES=16, K_MAX=255, SPAD_WORDS=1 << 16, EXT_WORDS=16, IMEM_WORDS=1 << 16,
               SM_MAX_LEN=1024)
    assert p.SPAD_WORDS == 65536
    for t in range(1, spec.T_MAX + 1):
        for lanes in spec.LANES_BUILT:
            if t <= lanes:
                assert t == Params(T=t, LANES=lanes).T


# --------------------------------------------------------------------------- opcodes and layout

GA2_MD = Path(__file__).resolve().parents[2] / "docs" / "GA2.md"


def ga2_section(number: int) -> str:
    """The text of section ``number`` of docs/GA2.md (the machine's contract)."""
    text = GA2_MD.read_text()
    start = text.index(f"\n## {number}. ")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else None]


def ga2_field_order() -> dict[str, str]:
    """GA2.md section 3's table: mnemonic -> its fields in order (``| `VADD dst src1 src2 len` |``)."""
    rows = re.findall(r"^\| `([A-Z]+)((?: \w+)*)` \|", ga2_section(3), re.M)
    return {name: fields.strip() for name, fields in rows}


def ga2_counters() -> dict[str, str]:
    """GA2.md section 5: instruction -> the counter its cycles go to (``dma`` (LD, ST), ...)."""
    out = {}
    for counter, names in re.findall(r"`(\w+)` \(([A-Z][A-Z, ]*)\)", ga2_section(5)):
        out |= {name.strip(): counter for name in names.split(",")}
    return out


def test_instructions_and_field_order_follow_ga2():
    order = ga2_field_order()
    assert "HALT" in order and "MM" in order and order["MM"].startswith("dst A B M K N tb lda ldb ldc")
    assert {s.name: " ".join(s.field_names) for s in spec.INSTRUCTIONS} == order


def test_opcodes_are_unique_nonzero_and_fit():
    opcodes = [int(s.opcode) for s in spec.INSTRUCTIONS]
    assert len(set(opcodes)) == len(opcodes)
    assert 0 not in opcodes
    assert all(0 < op < 1 << spec.OPCODE_BITS for op in opcodes)
    assert {int(s.opcode): s for s in spec.INSTRUCTIONS} == spec.BY_OPCODE
    assert {s.name: s for s in spec.INSTRUCTIONS} == spec.BY_NAME


@pytest.mark.parametrize("ispec", spec.INSTRUCTIONS, ids=lambda s: s.name)
def test_field_offsets_do_not_overlap_and_fit_128_bits(ispec):
    assert spec.INSTR_WORDS * spec.WORD_BITS == 128
    used = set(range(spec.OPCODE_BITS))              # the opcode, bits 3..0
    for name, (lsb, width) in ispec.field_offsets().items():
        bits = set(range(lsb, lsb + width))
        assert not bits & used, f"{ispec.name}.{name} overlaps another field"
        assert max(bits) < 128
        used |= bits
    assert len(set(ispec.field_names)) == len(ispec.fields)
    assert all(f.width >= 1 for f in ispec.fields)


def test_legal_ranges_follow_ga2():
    mm = {f.name: f.legal_range(DEFAULT) for f in spec.BY_NAME["MM"].fields}
    assert mm["M"] == (1, 4) and mm["N"] == (1, 4) and mm["K"] == (1, 64) and mm["tb"] == (0, 1)
    for s in spec.INSTRUCTIONS:
        for f in s.fields:
            if f.name == "len":
                assert f.legal_range(DEFAULT)[0] == 1, s.name          # len = 0 is illegal
    assert {f.name: f.legal_range(DEFAULT) for f in spec.BY_NAME["SM"].fields}["len"] == (1, 64)
    lo, hi = {f.name: f.legal_range(DEFAULT) for f in spec.BY_NAME["RQ"].fields}["s"]
    assert lo <= 1 and hi >= 63                                          # the shifter covers 1..63
    big = Params(T=8, LANES=8, SM_MAX_LEN=100)
    assert {f.name: f.legal_range(big) for f in spec.BY_NAME["MM"].fields}["N"] == (1, 8)


def test_counters_follow_ga2_section_5():
    assert spec.COUNTERS == ("cycles", "dma", "mxu", "vpu", "sfu")
    counters = ga2_counters()
    assert counters["LD"] == "dma" and counters["SM"] == "sfu"
    assert {s.name: s.counter for s in spec.INSTRUCTIONS} == counters | {"HALT": None}


def test_every_timing_constant_is_a_positive_int():
    expected = {"FRONTEND_CYCLES", "STOP_CYCLES", "LD_OVERHEAD", "ST_OVERHEAD", "MM_OVERHEAD",
                "RQ_OVERHEAD", "VADD_OVERHEAD", "AMAX_OVERHEAD", "UNPACK_OVERHEAD", "SM_OVERHEAD"}
    assert expected <= set(spec.TIMING_CONSTANTS)
    for name, value in spec.TIMING_CONSTANTS.items():
        assert isinstance(value, int) and value > 0, name
        assert getattr(spec, name) == value


def test_error_codes_are_distinct_and_fit():
    codes = [int(c) for c in ErrorCode]
    assert codes == sorted(set(codes)) and codes[0] == 0
    assert max(codes) < 1 << spec.ERROR_CODE_BITS
    assert set(spec.ERROR_TEXT) == set(ErrorCode)


# --------------------------------------------------------------------------- latencies


def test_latencies_by_hand():
    c = spec

    def lat(name: str, fields: dict) -> int:
        return latency(c.BY_NAME[name], fields, DEFAULT)

    assert lat("LD", {"dst": 0, "src": 0, "len": 60}) == 15 + c.LD_OVERHEAD      # ceil(60/4)
    assert lat("LD", {"dst": 0, "src": 0, "len": 61}) == 16 + c.LD_OVERHEAD
    assert lat("ST", {"src": 0, "dst": 0, "len": 1}) == 1 + c.ST_OVERHEAD
    mm = {"dst": 0, "A": 0, "B": 0, "M": 4, "K": 12, "N": 4, "tb": 0, "lda": 0, "ldb": 0, "ldc": 0}
    assert lat("MM", mm) == 12 + 4 + c.MM_OVERHEAD                              # K + M
    assert lat("MM", {**mm, "M": 2, "K": 3, "tb": 1}) == 3 + 2 + 3 + c.MM_OVERHEAD  # + N - 1
    assert lat("MM", {**mm, "M": 3, "N": 1, "K": 3, "tb": 1}) == 3 + 3 + 0 + c.MM_OVERHEAD
    rq = {"dst": 0, "src": 0, "len": 50, "m": 1, "s": 1, "relu": 0}
    assert lat("RQ", rq) == 13 + c.RQ_OVERHEAD
    assert lat("SM", {"dst": 0, "src": 0, "len": 10}) == 3 * 3 + c.SM_OVERHEAD
    assert c.SM_OVERHEAD == c.SPAD_READ_LATENCY + 2 + c.SM_PASS_OVERHEAD + c.SM_DIV_LATENCY
    assert lat("VADD", {"dst": 0, "src1": 0, "src2": 0, "len": 4}) == 1 + c.VADD_OVERHEAD
    assert lat("AMAX", {"dst": 0, "src": 0, "len": 5}) == 2 + c.AMAX_OVERHEAD
    assert lat("UNPACK", {"dst": 0, "src": 0, "len": 3}) == 6 + c.UNPACK_OVERHEAD
    assert lat("HALT", {}) == c.STOP_CYCLES
    # the constants themselves, by hand (hw/README.md derives each from the pipelines; R = 3)
    assert (c.SPAD_READ_LATENCY, c.EXT_READ_LATENCY, c.FRONTEND_CYCLES, c.STOP_CYCLES) == (3, 1, 8, 1)
    assert (c.LD_OVERHEAD, c.ST_OVERHEAD, c.MM_OVERHEAD, c.RQ_OVERHEAD) == (2, 4, 5, 10)
    assert (c.VADD_OVERHEAD, c.AMAX_OVERHEAD, c.UNPACK_OVERHEAD, c.SM_OVERHEAD) == (5, 6, 4, 15)


def test_latencies_on_wider_machines_by_hand():
    c = spec
    wide, widest = Params(T=8, LANES=8), Params(T=16, LANES=16)
    ld = {"dst": 0, "src": 0, "len": 17}
    assert latency(c.BY_NAME["LD"], ld, wide) == 3 + c.LD_OVERHEAD           # 8 + 8 + 1
    assert latency(c.BY_NAME["LD"], ld, widest) == 2 + c.LD_OVERHEAD         # 16 + 1
    sm = {"dst": 0, "src": 0, "len": 10}
    assert latency(c.BY_NAME["SM"], sm, wide) == 3 * 2 + c.SM_OVERHEAD
    # UNPACK: 8 int4 values a word, LANES a beat: two beats a word at 4, one at 8, half at 16
    unpack = {"dst": 0, "src": 0, "len": 3}
    assert [latency(c.BY_NAME["UNPACK"], unpack, p) for p in (DEFAULT, wide, widest)] == [
        6 + c.UNPACK_OVERHEAD, 3 + c.UNPACK_OVERHEAD, 2 + c.UNPACK_OVERHEAD]
    # MM does not depend on LANES: one step a cycle, whatever the width
    mm = {"dst": 0, "A": 0, "B": 0, "M": 8, "K": 20, "N": 8, "tb": 1, "lda": 0, "ldb": 0, "ldc": 0}
    assert latency(c.BY_NAME["MM"], mm, wide) == 20 + 8 + 7 + c.MM_OVERHEAD


def _eval_latency_text(doc: str, fields: dict[str, int], params: Params = DEFAULT) -> int:
    """The printed formula (docs/isa.md's) evaluated by Python, with exact integer ceil."""
    text = re.sub(r"ceil\(([\w*]+)/(\w+)\)", r"(-(-\1 // \2))", doc)
    names = {**spec.TIMING_CONSTANTS, **{n: getattr(params, n) for n in spec.PARAM_NAMES}}
    return eval(text, {"__builtins__": {}, "max": max, **names}, dict(fields))


@pytest.mark.parametrize("params", [DEFAULT, Params(T=8, LANES=8), Params(T=2, LANES=16)], ids=str)
@pytest.mark.parametrize("ispec", spec.INSTRUCTIONS, ids=lambda s: s.name)
def test_latency_text_matches_the_formula(ispec, params):
    rng = random.Random(7)
    for _ in range(300):
        fields = {f.name: rng.randint(*f.legal_range(params)) for f in ispec.fields}
        if "len" in fields:
            fields["len"] = rng.randint(1, 300) if ispec.name != "SM" else rng.randint(1, 64)
        printed = _eval_latency_text(latency_text(ispec), fields, params)
        assert printed == latency(ispec, fields, params), fields


def test_latency_is_positive_and_grows_with_len():
    for s in spec.INSTRUCTIONS:
        if "len" not in s.field_names:
            continue
        name = s.name
        base = {f.name: f.legal_range(DEFAULT)[0] for f in s.fields}
        lat = [latency(s, {**base, "len": n}, params=DEFAULT) for n in range(1, 65)]
        assert lat[0] > 0 and lat == sorted(lat), name
        assert lat[63] - lat[0] >= math.ceil(64 / 4) - 1


# --------------------------------------------------------------------------- check(): fields and bounds


def test_legal_instructions_pass():
    assert code_of("LD", dst=0, src=0, len=60) is NONE
    assert code_of("HALT") is NONE
    assert check(spec.BY_NAME["LD"], {"dst": 0, "src": 0, "len": 60}, DEFAULT) == (NONE, "")


def test_bad_field_names_the_field():
    code, detail = check(spec.BY_NAME["LD"], {"dst": 0, "src": 0, "len": 0}, DEFAULT)
    assert code is BAD_FIELD and detail == "LD field len=0 is outside 1..65535"
    assert code_of("SM", dst=0, src=100, len=65) is BAD_FIELD
    assert code_of("SM", dst=0, src=100, len=64) is NONE
    assert code_of("RQ", dst=0, src=0, len=1, m=0, s=0, relu=0) is BAD_FIELD


def test_bad_field_comes_before_range_and_the_first_field_is_named():
    mm = {"dst": 0, "A": 4095, "B": 0, "M": 5, "K": 0, "N": 1, "tb": 0, "lda": 100, "ldb": 0, "ldc": 0}
    code, detail = check(spec.BY_NAME["MM"], mm, DEFAULT)
    assert code is BAD_FIELD and "field M=5" in detail


@pytest.mark.parametrize(("fields", "expected"), [
    ({"dst": 4086, "src": 0, "len": 10}, NONE),          # words 4086..4095: the last word
    ({"dst": 4087, "src": 0, "len": 10}, SPAD_RANGE),    # reaches 4096
    ({"dst": 0, "src": 65526, "len": 10}, NONE),          # external words 65526..65535
    ({"dst": 0, "src": 65527, "len": 10}, EXT_RANGE),
    ({"dst": 0, "src": 65533, "len": 12, "fmt": 1}, NONE),       # packed: 3 words, 65533..65535
    ({"dst": 0, "src": 65534, "len": 9, "fmt": 1}, EXT_RANGE),   # packed: 3 words from 65534
    ({"dst": 4095, "src": 65535, "len": 2}, SPAD_RANGE),  # both out: the scratchpad is checked first
    ({"dst": 65535, "src": 0, "len": 65535}, SPAD_RANGE),
])
def test_ld_bounds(fields, expected):
    assert code_of("LD", **fields) is expected


def test_st_bounds_and_message():
    assert code_of("ST", src=4095, dst=8191, len=1) is NONE
    code, detail = check(spec.BY_NAME["ST"], {"src": 0, "dst": 65534, "len": 3}, DEFAULT)
    assert code is EXT_RANGE
    assert detail == "ST dst=65534: words 65534..65536 reach past the 65536-word external memory"


def test_bounds_follow_the_params():
    small = Params(SPAD_WORDS=1024)
    assert code_of("LD", small, dst=1020, len=4, src=0) is NONE
    assert code_of("LD", small, dst=1020, len=8, src=0) is SPAD_RANGE


_MM = {"dst": 2000, "A": 0, "B": 1000, "M": 4, "K": 12, "N": 4, "tb": 0, "lda": 13, "ldb": 10, "ldc": 10}


@pytest.mark.parametrize(("change", "expected"), [
    # A spans (M-1)*lda + K = 3*13 + 12 = 51 words
    ({"A": 4096 - 51}, NONE), ({"A": 4096 - 50}, SPAD_RANGE),
    # tb = 0: B spans (K-1)*ldb + N = 11*10 + 4 = 114 words
    ({"B": 4096 - 114}, NONE), ({"B": 4096 - 113}, SPAD_RANGE),
    # tb = 1: B spans (N-1)*ldb + K = 3*10 + 12 = 42 words
    ({"tb": 1, "B": 4096 - 42}, NONE), ({"tb": 1, "B": 4096 - 41}, SPAD_RANGE),
    # the output spans (M-1)*ldc + N = 3*10 + 4 = 34 words
    ({"dst": 4096 - 34}, NONE), ({"dst": 4096 - 33}, SPAD_RANGE),
    # strides of 0 (one row read again, every row written over the same words)
    ({"lda": 0, "ldc": 0, "A": 4096 - 12, "dst": 3000}, NONE),
    ({"lda": 0, "ldc": 0, "A": 3000, "dst": 4096 - 4}, NONE),
    ({"lda": 0, "ldc": 0, "A": 3000, "dst": 4096 - 3}, SPAD_RANGE),
])
def test_mm_spans(change, expected):
    assert code_of("MM", **{**_MM, **change}) is expected


# --------------------------------------------------------------------------- check(): overlap


@pytest.mark.parametrize(("change", "expected"), [
    ({"dst": 50}, OVERLAP),            # A is words 0..50: dst on its last word
    ({"dst": 51}, NONE),               # just after A
    ({"dst": 1000 - 34}, NONE),        # the output (34 words) ends just before B
    ({"dst": 1000 - 33}, OVERLAP),     # its last word is B's first
    ({"dst": 1000 + 113}, OVERLAP),    # tb = 0: B is words 1000..1113
    ({"dst": 1000 + 114}, NONE),
    ({"dst": 1000 + 41, "tb": 1}, OVERLAP),  # tb = 1: B is words 1000..1041
    ({"dst": 1000 + 42, "tb": 1}, NONE),
    ({"dst": 1000 + 42, "tb": 0}, OVERLAP),  # the same dst overlaps the tb = 0 span
    ({"dst": 0}, OVERLAP),             # in place is never allowed for MM
])
def test_mm_overlap(change, expected):
    assert code_of("MM", **{**_MM, **change}) is expected


@pytest.mark.parametrize(("dst", "expected"), [
    (100, NONE),        # in place: dst == src
    (101, OVERLAP), (99, OVERLAP), (100 + 9, OVERLAP), (100 - 9, OVERLAP),  # partial overlap
    (110, NONE), (90, NONE),            # adjacent, len = 10
])
def test_rq_in_place_allowed_partial_overlap_refused(dst, expected):
    assert code_of("RQ", dst=dst, src=100, len=10, m=1, s=1, relu=0) is expected


@pytest.mark.parametrize(("dst", "src1", "src2", "expected"), [
    (100, 100, 200, NONE),       # in place on the first operand
    (200, 100, 200, NONE),       # in place on the second
    (100, 100, 100, NONE),       # both
    (100, 100, 105, OVERLAP),    # in place on one, partial overlap with the other
    (101, 100, 200, OVERLAP),
    (195, 100, 200, OVERLAP),
    (300, 100, 200, NONE),
])
def test_vadd_overlap(dst, src1, src2, expected):
    assert code_of("VADD", dst=dst, src1=src1, src2=src2, len=10) is expected


def test_in_place_refused_where_not_allowed():
    assert code_of("SM", dst=100, src=100, len=10) is OVERLAP
    assert code_of("SM", dst=110, src=100, len=10) is NONE
    assert code_of("UNPACK", dst=100, src=100, len=1) is OVERLAP
    assert code_of("AMAX", dst=100, src=100, len=10) is OVERLAP


def test_amax_and_unpack_regions():
    assert code_of("AMAX", dst=109, src=100, len=10) is OVERLAP     # the index lands on the row
    assert code_of("AMAX", dst=110, src=100, len=10) is NONE
    assert code_of("AMAX", dst=4095, src=0, len=10) is NONE
    # UNPACK writes 8*len words: src = 0, len = 2, output 2..17 clear of 0..1; from 1 it overlaps
    assert code_of("UNPACK", dst=2, src=0, len=2) is NONE
    assert code_of("UNPACK", dst=1, src=0, len=2) is OVERLAP
    assert code_of("UNPACK", dst=4080, src=0, len=2) is NONE        # 4080..4095
    assert code_of("UNPACK", dst=4081, src=0, len=2) is SPAD_RANGE
    assert code_of("UNPACK", dst=0, src=16, len=2) is NONE          # output 0..15 ends before src


def test_ld_and_st_regions_never_overlap():
    # the two regions of LD and ST are in different memories
    assert code_of("LD", dst=0, src=0, len=100) is NONE
    assert code_of("ST", src=0, dst=0, len=100) is NONE


def test_overlap_message_names_both_regions():
    code, detail = check(spec.BY_NAME["RQ"], {"dst": 101, "src": 100, "len": 10, "m": 1, "s": 1, "relu": 0},
                         DEFAULT)
    assert code is OVERLAP
    assert detail == "RQ dst=101 (words 101..110) overlaps src=100 (words 100..109)"


def test_int_arithmetic():
    a = spec.INT
    assert a.max(3, 5) == 5 and a.max(5, 3) == 5
    assert a.select(1, 7, 8) == 7 and a.select(0, 7, 8) == 8
    assert [a.ceil_div(n, 4) for n in range(10)] == [0, 1, 1, 1, 1, 2, 2, 2, 2, 3]
    assert a.const("MM_OVERHEAD") == spec.MM_OVERHEAD


def test_instruction_and_region_methods_evaluate_on_ints():
    mm = spec.BY_NAME["MM"]
    f = {"dst": 0, "A": 0, "B": 0, "M": 2, "K": 3, "N": 4, "tb": 1, "lda": 5, "ldb": 6, "ldc": 7}
    assert mm.latency(f, DEFAULT) == 3 + 2 + 3 + spec.MM_OVERHEAD == latency(mm, f, params=DEFAULT)
    assert [r.extent(f) for r in mm.regions] == [1 * 5 + 3, 3 * 6 + 3, 1 * 7 + 4]


def test_the_check_codes_and_the_machine_faults_split_the_error_codes():
    assert spec.MACHINE_FAULTS == (ErrorCode.STALL,)
    assert set(spec.CHECK_CODES) | set(spec.DATA_ERRORS) | set(spec.MACHINE_FAULTS) | {ErrorCode.NONE} \
        == set(ErrorCode)
    assert not set(spec.CHECK_CODES) & set(spec.MACHINE_FAULTS)
    assert not set(spec.CHECK_CODES) & set(spec.DATA_ERRORS)
    assert list(spec.CHECK_CODES) == sorted(spec.CHECK_CODES)
