"""A pipelined restoring divider: one quotient per cycle, ``digit_bits`` quotient bits per stage.

Each stage shifts the partial remainder left by ``digit_bits`` dividend bits, compares it with
every multiple j*D (j = 1 .. 2**digit_bits - 1) in parallel, and keeps the largest j that fits.
The comparisons form a thermometer code, so the new remainder is picked by a binary tree of
2:1 multiplexers whose selects are the comparators' sign bits themselves (radix 4: one LUT and
one multiplexer level after the subtractors). A stage is one subtractor deep plus that tree.

The divisor travels down the pipeline with its dividend (the classic pipelined divider), so
every stage reads its own registered copy: no register fans out to the whole divider. The odd
multiples (3D, and 5D, 7D for radix 8) are formed with one adder from shifts of D, in a stage
before the first that needs them, and travel along too.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib.wiring import In, Out

from .component import Checked


def _naf(j: int) -> list[tuple[int, int]]:
    """j as a sum of signed powers of two, no two adjacent (non-adjacent form): [(sign, shift)].

    3 = 4 - 1, 5 = 4 + 1, 7 = 8 - 1: one adder for every odd multiple a radix-8 stage needs.
    """
    terms = []
    shift = 0
    while j:
        if j & 1:
            digit = 2 - (j & 3)  # +1 or -1
            terms.append((digit, shift))
            j -= digit
        j >>= 1
        shift += 1
    return terms


def _odd_part(j: int) -> tuple[int, int]:
    """j = odd * 2**shift: (odd, shift)."""
    shift = (j & -j).bit_length() - 1
    return j >> shift, shift


def _choose(ge: dict[int, Value], values: dict[int, Value], lo: int, hi: int) -> Value:
    """values[j] for the largest j in lo..hi with ge[j] (else lo): a tree of 2:1 multiplexers
    whose selects are the comparators' results, log2 levels deep."""
    if lo == hi:
        return values[lo]
    mid = (lo + hi + 1) // 2
    return Mux(ge[mid], _choose(ge, values, mid, hi), _choose(ge, values, lo, mid - 1))


class Divider(Checked):
    """q = floor(N / D), or floor(N / D + 1/2) when ``rounded``, for a stream of (N, D) pairs.

    Parameters:
        divisor_bits: width of D (unsigned, D >= 1).
        max_quotient: the largest floor(N / D) a caller presents (the caller guarantees it);
            it sets the quotient width and the number of stages. The dividend width follows:
            enough for (max_quotient + 1) * D - 1 at the largest D.
        digit_bits: quotient bits retired per stage (radix 2**digit_bits), 1 to 3.
        rounded: compute floor(N / D + 1/2) instead. The divider forms floor(2N / D), one more
            quotient bit, and its last stage adds one and halves, folded into that stage's
            multiplexer (no extra stage).

    Members:
        dividend In(dividend_bits), unsigned: N, a new one every cycle.
        divisor In(divisor_bits), unsigned: D, presented with its dividend.
        quotient Out(quotient_bits), unsigned: the result for the pair presented ``latency``
            cycles earlier (registered).

    Latency: ``latency`` cycles = ceil(raw quotient bits / digit_bits), where the raw quotient
    has bit_length(max_quotient) bits, one more when rounded; the top stage takes the leftover
    bits. One more cycle (a stage that only forms the odd multiples) when the top stage's
    largest digit is 3 or more, which the bound max_quotient decides.

    Raises:
        ValueError: a parameter is out of range; the message names it and shows the value.
    """

    @classmethod
    def check(cls, *, divisor_bits: int, max_quotient: int, digit_bits: int = 2,
              rounded: bool = False) -> None:
        """ValueError naming the first parameter out of range."""
        def refuse(message: str) -> None:
            raise ValueError(f"Divider: {message}")

        if not isinstance(divisor_bits, int) or divisor_bits < 1:
            refuse(f"divisor_bits={divisor_bits!r} must be a positive int")
        if not isinstance(max_quotient, int) or max_quotient < 1:
            refuse(f"max_quotient={max_quotient!r} must be a positive int")
        if not isinstance(digit_bits, int) or not 1 <= digit_bits <= 3:
            refuse(f"digit_bits={digit_bits!r} must be an int from 1 to 3")
        if not isinstance(rounded, bool):
            refuse(f"rounded={rounded!r} must be a bool")

    def __init__(self, *, divisor_bits: int, max_quotient: int, digit_bits: int = 2, rounded: bool = False):
        self.divisor_bits = divisor_bits
        self.max_quotient = max_quotient
        self.digit_bits = digit_bits
        self.rounded = rounded

        self.dividend_bits = ((max_quotient + 1) * ((1 << divisor_bits) - 1) - 1).bit_length()
        self.quotient_bits = (max_quotient + 1 if rounded else max_quotient).bit_length()
        # the raw quotient floor(N' / D), N' = 2N when rounded
        self.raw_max = 2 * max_quotient + 1 if rounded else max_quotient
        self.raw_bits = self.raw_max.bit_length()
        stages = -(-self.raw_bits // digit_bits)
        self.stage_bits = [self.raw_bits - digit_bits * (stages - 1)] + [digit_bits] * (stages - 1)
        """Quotient bits retired by each stage, top stage first."""
        self.stage_digits = [self.raw_max >> (self.raw_bits - self.stage_bits[0])]
        self.stage_digits += [(1 << digit_bits) - 1] * (stages - 1)
        """The largest digit of each stage (the top stage's follows from max_quotient)."""
        self.prestage = any(_odd_part(j)[0] > 1 for j in range(1, self.stage_digits[0] + 1))
        """True when the top stage needs an odd multiple, formed in a stage of its own."""
        self.latency = stages + self.prestage

        super().__init__({
            "dividend": In(self.dividend_bits),
            "divisor": In(divisor_bits),
            "quotient": Out(self.quotient_bits),
        })

    def elaborate(self, platform):
        m = Module()
        db = self.divisor_bits
        odd_factors = sorted({_odd_part(j)[0] for j in range(3, max(self.stage_digits) + 1)} - {1})

        def odd_multiples(d: Value) -> dict[int, Value]:
            out = {}
            for j in odd_factors:
                total = None
                for sign, shift in _naf(j):
                    term = d << shift
                    if total is None:
                        total = term if sign > 0 else -term
                    else:
                        total = total + term if sign > 0 else total - term
                out[j] = total
            return out

        # the dividend, doubled when rounding; the remainder starts as its bits above the quotient
        numer = Cat(Const(0, 1), self.dividend) if self.rounded else self.dividend
        rem = numer[self.raw_bits:][:db]  # < D by the caller's guarantee
        rest = numer[:self.raw_bits]      # dividend bits not yet shifted in
        quot = Const(0, 1)                # quotient bits so far (a leading 0 keeps a width)
        d = self.divisor
        odd: dict[int, Value] = {}
        rest_bits = self.raw_bits

        def register(name: str, value: Value, width: int) -> Signal:
            reg = Signal(width, name=name)
            m.d.sync += reg.eq(value)
            return reg

        if self.prestage:
            odd = {j: register(f"pre_x{j}", v, db + j.bit_length()) for j, v in odd_multiples(d).items()}
            rem = register("pre_rem", rem, db)
            rest = register("pre_rest", rest, self.raw_bits)
            d = register("pre_divisor", d, db)

        last_stage = len(self.stage_bits) - 1
        for s, (w, digits) in enumerate(zip(self.stage_bits, self.stage_digits, strict=True)):
            rest_bits -= w
            shifted = Cat(rest[rest_bits:rest_bits + w], rem)  # (rem << w) | next w bits

            # one subtractor per digit value; ge[j] = shifted >= j*D, a thermometer code
            cand = {0: shifted[:db]}
            ge = {}
            for j in range(1, digits + 1):
                factor, shift = _odd_part(j)
                diff = Signal(db + w + 1, name=f"s{s}_diff{j}")
                m.d.comb += diff.eq(shifted - ((d if factor == 1 else odd[factor]) << shift))
                cand[j] = diff[:db]
                ge[j] = ~diff[-1]
            new_rem = _choose(ge, cand, 0, digits)
            digit = _choose(ge, {j: Const(j, w) for j in range(digits + 1)}, 0, digits)

            if s < last_stage:
                next_odd = odd
                if not odd and odd_factors:  # formed here, first needed by the next stage
                    next_odd = odd_multiples(d)
                odd = {j: register(f"s{s}_x{j}", v, db + j.bit_length()) for j, v in next_odd.items()}
                rem = register(f"s{s}_rem", new_rem, db)
                quot = register(f"s{s}_quot", Cat(digit, quot), len(quot) + w)
                rest = register(f"s{s}_rest", rest[:rest_bits], max(rest_bits, 1))
                d = register(f"s{s}_divisor", d, db)
            elif self.rounded:
                # (quot * 2**w + digit + 1) >> 1: the carry reaches quot only when digit is all ones
                plain = Cat((digit + 1)[1:w], quot)
                carried = (quot + 1) << (w - 1)
                m.d.sync += self.quotient.eq(Mux(digit == (1 << w) - 1, carried, plain))
            else:
                m.d.sync += self.quotient.eq(Cat(digit, quot))
        return m
