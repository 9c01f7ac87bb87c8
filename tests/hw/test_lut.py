"""hw/lut.py: LUT against the reference machine and the spec's latency: every length up to a
few beats, every alignment of src, dst and table, in place (dst == src, dst == table), back to
back with different tables. The words hold random upper bits: the unit must read only the low
byte of the inputs and of the table entries."""

from __future__ import annotations

import random

import pytest

from hw.lut import TableUnit
from sim.asm import build
from sim.spec import Params

from .harness import check_idle_outputs, check_unit

P = Params(SPAD_WORDS=2048)
TABLES = 1024
"""Tables live from here (two of 256 words, at odd alignments); sources and results below."""


def _word(rng: random.Random, low_byte: int) -> int:
    return (rng.getrandbits(24) << 8) | (low_byte & 0xFF)


def _spad(seed: int) -> list[int]:
    rng = random.Random(seed)
    return [_word(rng, rng.randrange(-128, 128)) for _ in range(P.SPAD_WORDS)]


def test_lut_every_length_and_alignment_back_to_back():
    program = []
    for n in range(1, 14):
        src, dst, table = 8 * n + n % 4, 300 + 8 * n + (n // 2) % 4, TABLES + (n % 3) * 300 + n % 4
        program.append(build("LUT", dst=dst, src=src, len=n, table=table, params=P))
    _check(program, _spad(1))


def test_lut_every_input_value():
    """The inputs -128..127 each once: every entry of the table is looked up."""
    spad = _spad(2)
    rng = random.Random(3)
    for i, x in enumerate(range(-128, 128)):
        spad[i] = _word(rng, x)
    _check([build("LUT", dst=512, src=0, len=256, table=TABLES + 3, params=P)], spad)


@pytest.mark.parametrize("where", ["src", "table"])
def test_lut_in_place(where):
    program = [build("LUT", dst=40 if where == "src" else TABLES + 1, src=40, len=37, table=TABLES + 1,
                     params=P),
               build("LUT", dst=700, src=40, len=9, table=TABLES + 1, params=P)]   # reads what was written
    _check(program, _spad(4))


def test_lut_idle_outputs_are_zero():
    check_idle_outputs(lambda: TableUnit(P), [build("LUT", dst=100, src=0, len=6, table=TABLES, params=P)],
                       _spad(5), params=P)


def _check(program, spad) -> None:
    check_unit(lambda: TableUnit(P), program, spad, params=P)


@pytest.mark.parametrize("lanes", [8, 16])
def test_lut_every_input_value_on_a_wider_machine(lanes):
    """LANES = 8 reads one table memory through 8 ports; LANES = 16 gives every lane a memory
    of its own (hw/lut.py, SHARED_TABLE_PORTS): the same values, every entry looked up."""
    params = Params(T=4, LANES=lanes, SPAD_WORDS=2048)
    spad = _spad(6)
    rng = random.Random(7)
    for i, x in enumerate(range(-128, 128)):
        spad[i] = _word(rng, x)
    program = [build("LUT", dst=512, src=0, len=256, table=TABLES, params=params),
               build("LUT", dst=800, src=3, len=21, table=TABLES + 300, params=params)]
    check_unit(lambda: TableUnit(params), program, spad, params=params)
