"""cosim/edges.py: the edge programs are legal (or illegal) as intended and hit the edge they aim at,
checked against the reference machine and the exact arithmetic of sim/arith.py."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from cosim import edges, stress, stressprogram
from sim import arith, spec
from sim.asm import build, decode, decode_program
from sim.machine import s8, s32
from sim.spec import DEFAULT, ErrorCode, Mem, Params

P = DEFAULT
SEEDS = range(2, 2 + 3 * 60, 3)
"""Sixty edge seeds: every strategy with every ending."""


@pytest.fixture(scope="module")
def programs() -> list[stress.StressProgram]:
    return [edges.program(seed, DEFAULT) for seed in SEEDS]


def built(strategy: str, seed: int) -> edges.Builder:
    b = edges.Builder(random.Random(seed), P)
    edges.STRATEGIES[strategy](b)
    return b


def loaded(b: edges.Builder, spad_start: int, n: int) -> np.ndarray:
    """The words an LD of the body put at spad_start .. +n (the image's words it copied)."""
    ld = next(i for i in b.body if i.op == "LD" and i.dst == spad_start and i.len == n)
    return b.ext[ld.src:ld.src + n]


def test_only_every_third_seed_is_an_edge_program():
    assert [s for s in range(12) if edges.is_edge(s)] == [2, 5, 8, 11]
    assert edges.program(3, DEFAULT) is None
    drawn = stress.generate(1, 6, DEFAULT)
    assert [p.job.name for p in drawn] == ["seed 1", "seed 2 (edge: rq_ties)", "seed 3",
                                           "seed 4", "seed 5 (edge: softmax_rows)", "seed 6"]



def test_each_strategy_meets_every_ending_and_the_graded_seeds_keep_theirs():
    """Strategy and ending once shared their period (each strategy met one ending): now every
    strategy meets every ending within 1,500 seeds, and the seeds below 150 (the RTL mutants'
    stress 1..140) keep the strategy of q % 10."""
    names, endings = list(edges.STRATEGIES), set(stressprogram.ENDINGS)
    met = {name: set() for name in names}
    for seed in range(edges.EDGE_REMAINDER, 1500, edges.EDGE_EVERY):
        met[edges.strategy_of(seed)].add(stressprogram.ENDINGS[seed % len(stressprogram.ENDINGS)])
    assert all(found == endings for found in met.values()), met
    assert all(edges.strategy_of(seed) == names[(seed // 3) % len(names)]
               for seed in range(2, 150, 3))
    assert edges.strategy_of(152) == names[(50 + 1) % len(names)]
    assert edges.program(152, DEFAULT).job.name == f"seed 152 (edge: {names[1]})"


def test_each_ends_as_its_stress_seed_says_and_runs_legal_code_before(programs):
    strategies = set()
    for prog in programs:
        want = ErrorCode.NONE if prog.ending == stress.HALT else ErrorCode[prog.ending]
        stop = prog.job.expected(DEFAULT)
        assert stop.error_code is want, (prog.job.name, stop.detail)
        code = decode_program(prog.job.words[:spec.INSTR_WORDS * stop.error_pc])
        for ins in code:
            assert spec.check(ins.spec, ins.fields, P)[0] is ErrorCode.NONE, (prog.job.name, ins)
        strategies.add(prog.job.name.split("edge: ")[1].rstrip(")"))
    assert strategies == set(edges.STRATEGIES)


def test_rq_ties_are_exact_ties_of_both_signs_and_reach_127_5():
    signs, at_127_5 = set(), []
    for seed in range(20):
        b = built("rq_ties", seed)
        for rq in (i for i in b.body if i.op == "RQ"):
            a = s32(loaded(b, rq.src, rq.len))
            for value in (Fraction(int(x) * rq.m, 1 << rq.s) for x in a):
                if value.denominator == 2:                      # an exact tie at the shift
                    signs.add(value > 0)
            for x in a:
                if abs(Fraction(int(x) * rq.m, 1 << rq.s)) == Fraction(255, 2):
                    at_127_5.append((int(x), rq.m, rq.s))
    assert signs == {True, False}
    assert at_127_5
    for x, m, s in at_127_5:                                    # 127.5 rounds to 128, saturates
        assert arith.requant(x, m, s) == (127 if x > 0 else -127)


def test_tie_pair_gives_a_tie_for_every_odd_multiple():
    rng = random.Random(1)
    for s in (1, 2, 16, 31, 46):
        for q in edges.TIE_ODD_PARTS:
            pair = edges.tie_pair(rng, s, q)
            if pair is None:
                assert s > 16, (s, q)        # only large shifts leave no room for big q
                continue
            m, u = pair
            assert m < 1 << arith.MANTISSA_BITS and 255 * u <= edges.INT32_MAX
            for k in (1, 3, 255 // q):
                p = k * u * m
                assert p % (1 << s) == 1 << (s - 1)            # exactly half way
                assert arith.requant(k * u, m, s) == -arith.requant(-k * u, m, s)   # symmetric


def test_softmax_rows_hit_negative_spread_and_4k_plus_1():
    lengths, negative, spread = set(), 0, 0
    for seed in range(10):
        b = built("softmax_rows", seed)
        for sm in (i for i in b.body if i.op == "SM"):
            row = [int(v) for v in s8(loaded(b, sm.src, sm.len))]
            lengths.add(sm.len)
            negative += max(row) < 0
            if max(row) - min(row) == 255:
                spread += 1
                assert arith.softmax_fixed(row)[row.index(-128)] == 0     # exp(-255/16) in Q16 is 0
    assert {1, P.SM_MAX_LEN} <= lengths
    assert len({n for n in lengths if n % 4 == 1 and 1 < n < P.SM_MAX_LEN}) >= 3
    assert negative and spread


def test_vector_edges_saturate_and_tie():
    b = built("vector_edges", 3)
    vadd = next(i for i in b.body if i.op == "VADD")
    x = s8(loaded(b, vadd.src1, vadd.len))
    y = s8(loaded(b, vadd.src2, vadd.len))
    sums = set(arith.sat_add_array(x, y).tolist())
    assert {127, -127, -1} <= sums                     # 127+127, -128+-128, 127+-128
    assert vadd.len % 4 == 1
    amax = [i for i in b.body if i.op == "AMAX"]
    assert all(i.len % 4 == 1 for i in amax)


def test_mm_extremes_reach_k_max_of_minus_128_squared():
    b = built("mm_extremes", 5)
    mm = [i for i in b.body if i.op == "MM"]
    assert all(i.M == P.T and i.N == P.T for i in mm)
    first = mm[0]
    assert first.K == P.K_MAX
    assert set(s8(loaded(b, first.A, (first.M - 1) * first.lda + first.K)).tolist()) == {-128}
    assert P.K_MAX * 128 * 128 == 1 << 20


def test_field_limits_end_regions_on_the_last_word():
    b = built("field_limits", 7)
    ends = {Mem.SPAD: set(), Mem.EXT: set()}
    for ins in b.body:
        assert spec.check(ins.spec, ins.fields, P)[0] is ErrorCode.NONE
        for r in ins.spec.regions:
            ends[r.mem].add(ins.fields[r.start] + r.extent(ins.fields))
    assert P.SPAD_WORDS in ends[Mem.SPAD] and P.EXT_WORDS in ends[Mem.EXT]
    rq = [i for i in b.body if i.op == "RQ"]
    assert {i.s for i in rq} == {1, 63} and {0, (1 << 24) - 1} <= {i.m for i in rq}


def _fault(prog: stress.StressProgram):
    stop = prog.job.expected(DEFAULT)
    words = prog.job.words[spec.INSTR_WORDS * stop.error_pc:spec.INSTR_WORDS * (stop.error_pc + 1)]
    return stop, decode_program(words)[0]


@pytest.mark.parametrize("code", [ErrorCode.BAD_FIELD, ErrorCode.SPAD_RANGE, ErrorCode.EXT_RANGE,
                                  ErrorCode.OVERLAP])
def test_faults_sit_one_past_the_limit(programs, code):
    found = 0
    for prog in (p for p in programs if p.ending == code.name):
        _, ins = _fault(prog)
        f, found = ins.fields, found + 1
        if code is ErrorCode.BAD_FIELD:
            bad = [fl for fl in ins.spec.fields if fl.name in spec.field_errors(ins.spec, f, P)]
            broken = [rule for rule in ins.spec.field_rules if rule.holds(f, P)]
            assert any(f[fl.name] in (fl.legal_range(P)[0] - 1, fl.legal_range(P)[1] + 1) for fl in bad) or \
                any(rule.breaking(P).items() <= f.items() for rule in broken), (prog.job.name, ins)
        elif code is ErrorCode.OVERLAP:
            w = next(r for r in ins.spec.regions if r.writes)
            reads = [r for r in ins.spec.regions if not r.writes and r.mem is Mem.SPAD]
            shared = [len(set(range(f[w.start], f[w.start] + w.extent(f)))
                          & set(range(f[r.start], f[r.start] + r.extent(f)))) for r in reads]
            assert 1 in shared, (prog.job.name, ins)
        else:
            mem, size = (Mem.SPAD, P.SPAD_WORDS) if code is ErrorCode.SPAD_RANGE else (Mem.EXT, P.EXT_WORDS)
            assert any(f[r.start] + r.extent(f) == size + 1 for r in ins.spec.regions if r.mem is mem)
    assert found >= 5


def test_two_faults_in_one_instruction_report_the_first_code(programs):
    doubles = 0
    for prog in (p for p in programs if p.ending == "BAD_FIELD"):
        stop, ins = _fault(prog)
        repaired = dict(ins.fields)
        for fl in ins.spec.fields:
            lo, hi = fl.legal_range(P)
            repaired[fl.name] = min(max(repaired[fl.name], lo), hi)
        second = spec.check(ins.spec, repaired, P)[0]
        if any(rule.holds(repaired, P) for rule in ins.spec.field_rules):
            continue                            # a rule across fields broken: no range to repair
        if second is not ErrorCode.NONE:
            doubles += 1
            assert second > ErrorCode.BAD_FIELD and stop.error_code is ErrorCode.BAD_FIELD
    assert doubles >= 1
    unknown = [p for p in programs if p.ending == "BAD_OPCODE"]
    assert unknown
    for prog in unknown:                       # the fields under the unknown opcode are bad too
        stop = prog.job.expected(DEFAULT)
        words = [int(w) for w in prog.job.words[spec.INSTR_WORDS * stop.error_pc:][:spec.INSTR_WORDS]]
        assert stop.error_code is ErrorCode.BAD_OPCODE and (words[0] & 0xF) in spec.bad_opcodes(DEFAULT)
        as_known = []
        for opcode, ispec in spec.BY_OPCODE.items():
            if ispec.fields:
                ins = decode_program([(words[0] & ~0xF) | opcode, *words[1:]])[0]
                as_known.append(spec.check(ins.spec, ins.fields, P)[0])
        assert any(code is not ErrorCode.NONE for code in as_known)


@pytest.mark.parametrize("machine", ["T=1", "t2", "t8", "t16", "t16 SPAD_WORDS=2048"])
def test_every_strategy_fits_the_machines_the_generator_builds(machine):
    """make stress PARAMS=...: the edge programs of another array size and scratchpad are made
    for it (T = 8's four MM extremes need more than 4096 words: as many as fit are made; T = 1
    has no row strides) and stop as their seed says on the reference machine of that size."""
    from sim import machines

    params = machines.parse(machine)
    for seed in SEEDS[:len(edges.STRATEGIES) * 2]:
        prog = edges.program(seed, params)
        want = ErrorCode.NONE if prog.ending == stress.HALT else ErrorCode[prog.ending]
        assert prog.job.expected(params).error_code is want, (machine, prog.job.name)


def test_issue_14s_instructions_at_their_edges():
    """LD fmt=1 of 1-5 values and to the last external word; MM acc=1 onto words next to the
    int32 extremes, whose sums wrap (worked here in Python integers modulo 2^32); LUT on -128
    and 127, in place and onto its own table."""
    b = built("field_limits", 4)
    packed = [i for i in b.body if i.op == "LD" and i.fmt == 1]
    assert {1, 2, 3, 4, 5} <= {i.len for i in packed}
    assert any(i.src + -(-i.len // spec.INT8_PER_WORD) == P.EXT_WORDS for i in packed)
    b = built("mm_extremes", 4)
    (mm,) = [i for i in b.body if i.op == "MM" and i.acc == 1]
    start = s32(loaded(b, mm.dst, mm.M * mm.N)).tolist()
    product = mm.K * -128 * int(s8(loaded(b, mm.B, mm.K * mm.N))[0])
    wrapped = [((x + product + (1 << 31)) % (1 << 32)) - (1 << 31) for x in start]
    assert any(w != x + product for w, x in zip(wrapped, start, strict=True))   # a sum wraps
    b = built("vector_edges", 4)
    luts = [i for i in b.body if i.op == "LUT"]
    assert {-128, 127} <= set(s8(loaded(b, luts[0].src, luts[0].len)).tolist())
    assert luts[1].dst == luts[1].src and luts[2].dst == luts[2].table


CRASHED_BEFORE = (2255, 3335, 5495, 5795, 6575, 7355, 7655, 7955, 8435, 8735, 9035, 10895, 13835, 14435,
                  14915, 15995, 16295, 17375, 18455, 19535, 21695, 23075, 24155, 24635, 26795, 27395,
                  28955, 29555)
"""The seeds of 1-30,000 whose edge program could not be drawn (issue 24, defect 2): a BAD_FIELD
with a second fault, VADD's len set to 0 after its region had been moved past the end, so that
the repaired len of 1 lost the second fault in each of the 100 draws."""


@pytest.mark.parametrize("seed", CRASHED_BEFORE[:6])
def test_the_seeds_that_crashed_the_generator_give_their_program(seed):
    prog = edges.program(seed, DEFAULT)
    assert prog is not None and prog.ending == "BAD_FIELD"
    stop, ins = _fault(prog)
    assert stop.error_code is ErrorCode.BAD_FIELD
    repaired = spec.check(ins.spec, edges.nearest_legal(ins.spec, ins.fields, P), P)[0]
    assert repaired in (ErrorCode.SPAD_RANGE, ErrorCode.OVERLAP), (seed, ins)


def test_a_double_bad_field_keeps_its_second_fault_once_repaired():
    """Every odd turn (the ones with two faults) over 2 x 6 turns, so every kind both ways, 40
    draws each: the field one past its limit, repaired to that limit, leaves the second fault
    in place (the second fault is made with the field at its limit)."""
    rng, kinds = random.Random(24), set()
    for turn in range(1, 4 * len(edges.SPAD_KINDS), 2):
        for _ in range(40):
            words, _ = edges.faulty(edges.Builder(rng, P), ErrorCode.BAD_FIELD, turn)
            ins = decode_program(words)[0]
            assert spec.check(ins.spec, ins.fields, P)[0] is ErrorCode.BAD_FIELD
            repaired = spec.check(ins.spec, edges.nearest_legal(ins.spec, ins.fields, P), P)[0]
            assert repaired in (ErrorCode.SPAD_RANGE, ErrorCode.OVERLAP), ins
            kinds.add(ins.op)
    assert kinds == set(edges.SPAD_KINDS)


@pytest.mark.slow
def test_every_seed_up_to_30000_gives_a_program():
    """Issue 24, defect 2: any campaign from seed 1 meets every one of these seeds."""
    for seed in range(2, 30_001, edges.EDGE_EVERY):
        assert edges.program(seed, DEFAULT) is not None, seed


def _radix4_quotient(e: int, z: int, flip_rest: int | None = None) -> int:
    """round(e * 65536 / z) digit by digit, as hw/divider.py's softmax dividers do it (18 raw
    quotient bits, 2 per stage, the digit the largest j in 0..3 with j * z <= the partial
    remainder, then (raw + 1) >> 1); at the stage that starts with ``flip_rest`` numerator bits
    left, 3z has bit 2 inverted when its bit 1 is 1 (the RTL mutant m12 of 2026-12-06)."""
    numer, rest, raw = e << 17, 18, 0
    rem = numer >> rest                 # the dividend bits above the quotient's: e // 2 < z
    while rest:
        x3 = 3 * z
        if rest == flip_rest and x3 & 2:
            x3 ^= 4
        shifted = rem * 4 + ((numer >> (rest - 2)) & 3)
        digit = max(j for j, mult in enumerate((0, z, 2 * z, x3)) if shifted >= mult)
        rem, raw, rest = shifted - (0, z, 2 * z, x3)[digit], raw * 4 + digit, rest - 2
    return (raw + 1) >> 1


def test_divider_grazes_show_a_wrong_low_bit_of_3z():
    """Each row of divider_grazes changes an element's quotient when 3z's bit 2 is inverted (bit
    1 being set) at one stage, by the model above (independent of cosim.edges's), which agrees
    with sim/arith.py unmutated; the rows of three programs cover each lane at the stage of
    mutant m12 (3z from stage 2's register, the stage that starts with 12 bits left)."""
    stages = [rest for rest, _ in edges._divider_stages(P)]
    assert stages == list(range(16, 0, -2))
    covered = set()
    for seed in range(3):
        b = built("softmax_rows", seed)
        after = b.features["edge: SM one unit below a rounding step"]     # divider_steps's rows
        after += b.features["edge: SM certain in one lane"]                # and divider_certain's
        sms = [i for i in b.body if i.op == "SM"][:-after]
        rows = sms[-b.features["edge: SM grazing 3z"]:]
        assert len(rows) >= 3 * P.LANES
        for sm in rows:
            row = [int(v) for v in s8(loaded(b, sm.src, sm.len))]
            e = [arith.EXP_LUT[max(row) - x] for x in row]
            z, want = sum(e), arith.softmax_fixed(row)
            assert sm.len == P.LANES + 2 and [_radix4_quotient(v, z) for v in e] == want
            hits = {(rest, i % P.LANES) for rest in stages for i, v in enumerate(e)
                    if _radix4_quotient(v, z, rest) != want[i]}
            assert hits, row
            covered |= hits
    assert {(12, lane) for lane in range(P.LANES)} <= covered


def test_the_cheap_graze_test_is_the_same_on_numpy_arrays_as_on_ints():
    """graze_row runs edges.near_a_graze on all 65,536 pairs of a row at once; on each pair it
    must say what it says on Python ints."""
    rng = random.Random(5)
    e = [rng.choice(arith.EXP_LUT[:128]) for _ in range(4000)]
    z = [v + rng.randint(1, 9 * 65536) for v in e]
    said = []
    for rest, _ in edges._divider_stages(P):
        on_arrays = edges.near_a_graze(np.array(e, dtype=np.int64), np.array(z, dtype=np.int64), rest)
        on_ints = [bool(edges.near_a_graze(v, zz, rest)) for v, zz in zip(e, z, strict=True)]
        assert on_arrays.tolist() == on_ints, rest
        said += on_ints
    assert 0 < sum(said) < len(said)


def test_divider_steps_put_an_element_one_numerator_unit_below_a_rounding_step_in_every_lane():
    """Hand-worked: beside two elements of 127, -61 has e = EXP_LUT[188] = 1 and z = 2 * 65536 +
    1, so p = round(65536 / 131073) = 0; the dividers' numerator e << 17 = 131072 is one below
    the step 2z - z = 131073, so one more unit (any bit of the dividers' rest set: mutant m11's
    is 8) makes it 1."""
    assert arith.EXP_LUT[188] == 1 and arith.EXP_LUT[255] == 0
    b = built("softmax_rows", 0)
    sms = [i for i in b.body if i.op == "SM"][:-b.features["edge: SM certain in one lane"]]
    rows = sms[-b.features["edge: SM one unit below a rounding step"]:]
    assert len(rows) == P.LANES
    for lane, sm in enumerate(rows):
        row = [int(v) for v in s8(loaded(b, sm.src, sm.len))]
        assert row[lane] == -61 and sorted(row)[-2:] == [127, 127] and set(row) <= {-128, -61, 127}
        assert arith.softmax_fixed(row)[lane] == 0
        z = 2 * 65536 + 1
        assert [((2 ** 17 + d) // z + 1) >> 1 for d in (0, 1, 8)] == [0, 1, 1]


def test_divider_certain_rows_make_every_lane_s_top_divider_stage_pick_its_digit_2():
    """Hand-worked: 127 among -128s gives e = 65536 there and EXP_LUT[255] = 0 elsewhere, so z =
    65536 and p = 65536; the dividers' numerator e << 17 = 2**33 over z is the raw quotient 2**17
    = 2 * 4**8: the top stage (two bits, 16 left) picks digit 2 with a remainder of 0, and the
    other eight digits are 0. A remainder of 2**18 there instead (m11: bit 18 of s0_diff2
    inverted) is 4z, more than the rest of the quotient can absorb: p changes."""
    b = built("softmax_rows", 0)
    rows = [i for i in b.body if i.op == "SM"][-b.features["edge: SM certain in one lane"]:]
    assert len(rows) == P.LANES
    for lane, sm in enumerate(rows):
        row = [int(v) for v in s8(loaded(b, sm.src, sm.len))]
        assert row == [127 if i == lane else -128 for i in range(P.LANES)]
        assert arith.softmax_fixed(row) == [65536 if i == lane else 0 for i in range(P.LANES)]
        e = [arith.EXP_LUT[max(row) - x] for x in row]
        assert divmod((e[lane] << 17) // sum(e), 4 ** 8) == (2, 0)      # the top digit 2, nothing below
        assert _radix4_quotient(e[lane], sum(e)) == 65536


def test_a_table_is_rewritten_behind_a_waiting_rq_whose_words_carry_spare_bits():
    """table_rewritten_behind on the decoupled machine, by the reference's timeline: when the LD
    that rewrites the table enters, the RQ is the second waiting entry of the vector unit (a
    VADD runs, one waits), and the LD waits for the RQ's reads; the table's start has bit 5
    clear and the RQ's words have every bit from 116 (its last field's end) set."""
    decoupled = Params(OVERLAP=2)
    seed = next(s for s in SEEDS if edges.strategy_of(s) == "rq_per_channel")
    prog = edges.program(seed, decoupled)
    assert prog.features["edge: RQ's table rewritten behind it"] == 1
    words = [int(w) for w in prog.job.program]
    code = [decode(words[k:k + 4]) for k in range(0, 4 * 6, 4)]
    assert [i.op for i in code] == ["LD", "LD", "VADD", "VADD", "RQ", "LD"]
    rq, ld = code[4], code[5]
    assert rq.pc == 1 and ld.dst == rq.tab and ld.len == rq.C and not rq.tab & 32
    assert sum(w << (32 * i) for i, w in enumerate(words[16:20])) >> 116 == (1 << 12) - 1
    t = prog.job.expected(decoupled).timeline
    assert t[2].start < t[5].entered < t[2].end and t[3].entered < t[4].entered < t[5].entered < t[3].start
    assert t[5].start >= t[4].start + spec.reads(rq.spec, rq.fields, decoupled) and t[5].hazard > 0


def test_layernorm_rows_reach_every_count_of_leading_zero_pairs_from_5_to_17():
    """The rows (0, 1) of layernorm_every_k: D's width from 9 to 33, so k (the even shift's half,
    sim/arith.ln_solve) takes every value 5..17, each on a row whose results are not 0."""
    b = built("layernorm_rows", 7)
    ks = set()
    for ln in (i for i in b.body if i.op == "LN" and i.len == 2):
        row = s8(loaded(b, ln.src, 2)).tolist()
        if row != [0, 1]:
            continue
        sol = arith.ln_solve(row, ln.eps)
        assert 1 << 8 <= sol.d < 1 << 33 and 0 <= ln.eps < 1 << 32
        assert all(y != 0 for y in arith.layernorm_fixed(row, ln.eps))
        ks.add(sol.k)
    assert ks == set(range(5, 18))



def test_running_neighbours_enter_while_their_long_instruction_runs():
    """On the decoupled machine (OVERLAP = 2) each round of running_neighbours starts after a fence
    (a GATHER): its long instruction is dispatched at once, one or two short ones of its engine
    follow, and every short one of another engine after them enters the station at least
    ENTER_CYCLES into its run and before its end (the reference machine's timeline), each the
    only one of its engine in the round."""
    from sim.machine import Machine

    p = Params(OVERLAP=2)
    b = edges.Builder(random.Random(5), p)
    edges.touching_regions(b)
    run = Machine(p).run([*b.body, build("HALT", params=p)], b.ext)
    timeline = {placed.pc: placed for placed in run.timeline}
    rounds = 0
    strided = _strided_instructions(b)               # strided_neighbours's rounds come after
    for k in range(1, len(b.body) - 1 - strided):
        ins, engine = b.body[k], spec.BY_NAME[b.body[k].op].counter
        if b.body[k - 1].op != "GATHER" or ins.op != edges.NEIGHBOUR_PRODUCERS.get(engine):
            continue
        rounds += 1
        producer = timeline[k]
        assert producer.start <= producer.entered + 2 * spec.ENTER_DISPATCH_CYCLES
        j = k + 1
        while timeline[j].engine == producer.engine:        # one or two spacers of its own engine
            j += 1
        assert 1 <= j - k - 1 <= 2
        engines = []
        while b.body[j].op != "GATHER":
            assert producer.start + spec.ENTER_CYCLES <= timeline[j].entered < producer.end, (k, j)
            engines.append(timeline[j].engine)
            j += 1
        assert len(set(engines)) == len(engines) >= 2 and producer.engine not in engines  # one each
    assert rounds == len(edges.NEIGHBOUR_PRODUCERS) * len(edges.ROUND_PLACEMENTS)


def test_running_neighbours_sit_over_and_beside_each_engines_long_instruction():
    """touching_regions ends with running_neighbours: for each engine a long instruction, and after
    it short ones of other engines whose reads cover its destination's first or last word (a
    hazard: spec.conflict) or end where it starts, start where it ends (no hazard)."""
    b = built("touching_regions", 3)
    seen = set()
    for k, ins in enumerate(b.body):
        producer = spec.BY_NAME[ins.op]
        if ins.op != edges.NEIGHBOUR_PRODUCERS.get(producer.counter) or k + 1 >= len(b.body):
            continue
        write = next(r for r in producer.regions if r.writes)
        start = ins.fields[write.start]
        end = start + write.extent(ins.fields)
        for other in b.body[k + 1:k + 7]:
            o = spec.BY_NAME[other.op]
            if other.op == "GATHER":
                break
            if o.counter == producer.counter:           # a spacer
                continue
            reads = [(other.fields[r.start], other.fields[r.start] + r.extent(other.fields))
                     for r in o.regions if r.mem is Mem.SPAD and not r.writes and r.extent(other.fields)]
            hit = spec.conflict(spec.spad_accesses(o, other.fields), spec.spad_accesses(producer, ins.fields))
            if any(s <= start < e for s, e in reads) and hit:
                seen.add((producer.counter, "first"))
            if any(s <= end - 1 < e for s, e in reads) and hit:
                seen.add((producer.counter, "last"))
            if any(e == start for s, e in reads):
                seen.add((producer.counter, "before"))
            if any(s == end for s, e in reads):
                seen.add((producer.counter, "after"))
    assert seen == {(e, at) for e in edges.NEIGHBOUR_PRODUCERS for at in edges.PLACEMENTS}


def _strided_rounds(b: edges.Builder) -> int:
    return sum(n for name, n in b.features.items() if "strided" in name)


def _strided_instructions(b: edges.Builder) -> int:
    """strided_neighbours's instructions: 3 a round, 4 with a blocker (a waiting round)."""
    return sum(n * (4 if "waiting" in name else 3) for name, n in b.features.items() if "strided" in name)


def test_strided_neighbours_put_one_word_over_and_one_beside_each_strided_region_s_end():
    """touching_regions ends with strided_neighbours. On the decoupled machine (the reference's
    timeline), for MM and MMRQ, A, B (tb = 0 and 1) and the output, running or waiting behind a
    long MM: the tested stride is all ones (2**w - 1, w >= 7, so bit 6 is set: m20 flipped bit 0
    of MMRQ's ldb in the checker's (K - 1) * ldb where bit 6 was 1, which only a waiting MMRQ
    shows), K >= 2 (a product that moves the end); the one-word VADD over the region's last word
    waits for the instruction (spec.conflict says so too) and the one on the word after it does
    not; the instruction runs when the VADD enters, or waits then; every round ends with a
    fence."""
    from sim.machine import Machine

    p = Params(OVERLAP=2)
    b = edges.Builder(random.Random(5), p)
    edges.touching_regions(b)
    run = Machine(p).run([*b.body, build("HALT", params=p)], b.ext)
    timeline = {placed.pc: placed for placed in run.timeline}
    rounds = _strided_rounds(b)
    assert rounds == 2 * len(edges.STRIDED_ROUNDS) * 2 * 2
    stride_of = {"A": "lda", "B": "ldb", "dst": "ldc"}
    seen = set()
    k = len(b.body) - _strided_instructions(b)
    while k < len(b.body):
        waiting = b.body[k].op == "MM" and b.body[k + 1].op in ("MM", "MMRQ")
        k += waiting
        ins, neighbour, fence = b.body[k:k + 3]
        assert fence.op == "GATHER" and neighbour.op == "VADD" and neighbour.len == 1
        assert ins.op in ("MM", "MMRQ") and ins.K >= 2 and ins.acc == 0
        ispec = spec.BY_NAME[ins.op]
        ends = {r.start: (r, ins.fields[r.start] + r.extent(ins.fields)) for r in ispec.regions}
        words = {neighbour.dst, neighbour.src1}
        [(target, end)] = [(r, e) for name, (r, e) in ends.items()
                           if name in stride_of and words & {e - 1, e}]
        stride = ins.fields[stride_of[target.start]]
        assert stride & (stride + 1) == 0 and stride >= 127, (ins, target.start)
        word = neighbour.src1 if target.writes else neighbour.dst
        placement = "last" if word == end - 1 else "after"
        hit = spec.conflict(spec.spad_accesses(spec.BY_NAME["VADD"], neighbour.fields),
                            spec.spad_accesses(ispec, ins.fields))
        assert hit == (timeline[k + 1].hazard > 0) == (placement == "last"), (ins, neighbour)
        assert (timeline[k].start > timeline[k + 1].entered) == waiting, (timeline[k], timeline[k + 1])
        seen.add((ins.op, target.start, ins.tb if target.start == "B" else 0, placement, waiting))
        k += 3
    assert seen == {(kind, region, tb, at, waiting) for kind in ("MM", "MMRQ")
                    for region, tb in edges.STRIDED_ROUNDS for at in ("last", "after")
                    for waiting in (False, True)}


@pytest.mark.parametrize("params", [Params(OVERLAP=2), Params(T=8, LANES=8, OVERLAP=2)], ids=["t4", "t8"])
def test_mmrq_every_shift_puts_each_shifts_products_through_the_chained_requantizer(params):
    """At OVERLAP = 2, rq_every_shift also runs its products through MMRQ (acc = 1, A = 0): the
    reference machine's int8 results are sim.arith.requant of the loaded words, shift by shift,
    for every shift 1..63 that has products."""
    from sim.machine import Machine

    b = edges.Builder(random.Random(3), params)
    edges.rq_every_shift(b)
    run = Machine(params).run([*b.body, build("HALT", params=params)], b.ext)
    assert run.steps == len(b.body) + 1

    def loaded_word(addr: int) -> int:       # what the LDs put at a scratchpad address
        ld = next(i for i in b.body if i.op == "LD" and i.dst <= addr < i.dst + i.len)
        return int(b.ext[ld.src + addr - ld.dst])

    shifts, t = set(), params.T
    for mmrq in (i for i in b.body if i.op == "MMRQ"):
        m, s = arith.unpack_rq_pair(loaded_word(mmrq.tab))
        shifts.add(s)
        region = range(mmrq.dst, mmrq.dst + mmrq.M * t)
        expected = [arith.requant(int(s32(np.uint32(loaded_word(a)))), m, s) for a in region]
        assert [int(s32(run.spad[a])) for a in region] == expected, f"shift {s}"
    assert shifts == {s for s in range(1, 64) if edges.shift_products(s)[1]}


def test_long_regions_end_with_a_lut_of_more_than_512_beats_and_gather_rows_with_a_row_over_2048_words():
    """The two edges a draw of RTL mutants asked for (docs/guide/verification.md): on the default
    machine a LUT in place over the scratchpad but its table, 3,840 words in 960 beats (bit 9 of
    the unit's beat counter set), and the GATHER of the second of two rows of more than 2,048
    words (bit 11 of words per row set, the row's address past the first row)."""
    b = built("field_limits", 0)
    lut = [i for i in b.body if i.op == "LUT"][-1]
    table = spec.LUT_TABLE_WORDS
    assert (lut.dst, lut.src, lut.table, lut.len) == (table, table, 0, P.SPAD_WORDS - table)
    assert -(-lut.len // P.LANES) >= 512
    b = built("gather_rows", 0)
    long = [i for i in b.body if i.op == "GATHER" and i.len > 2048]
    assert len(long) == 1 and long[0].rows == 2 and long[0].fmt == 0
    assert loaded(b, long[0].idx, 1).tolist() == [1]
