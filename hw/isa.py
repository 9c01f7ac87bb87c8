"""The ISA as the hardware sees it, derived from :mod:`sim.spec` (nothing typed twice).

An instruction is INSTR_BITS wide: the opcode in the low OPCODE_BITS, then the fields of
its kind packed upwards in the spec's order. :func:`fields_layout` gives, per instruction,
an Amaranth struct layout over the bits above the opcode, so that a unit reads its operands
by name: ``fields_view("MM", instr.fields).lda``.
"""

from __future__ import annotations

from collections.abc import Iterable

from amaranth.hdl import Value
from amaranth.lib import data

from sim import spec

from .lanes import any_of

FIELD_BITS = spec.INSTR_BITS - spec.OPCODE_BITS
"""Bits above the opcode: what every unit receives as ``fields``."""


def fields_layout(name: str) -> data.StructLayout:
    """The operand fields of instruction ``name`` as a struct over the FIELD_BITS above the opcode.

    Raises:
        KeyError: unknown mnemonic.
    """
    ispec = spec.BY_NAME[name]
    members: dict[str, int] = {}
    for f in ispec.fields:
        members[f.name] = f.width
    used = sum(members.values())
    if used < FIELD_BITS:
        members["_reserved"] = FIELD_BITS - used  # ignored by the machine
    return data.StructLayout(members)


def fields_view(name: str, bits: Value) -> data.View:
    """View FIELD_BITS of raw instruction bits as the named fields of ``name``."""
    return data.View(fields_layout(name), bits)


def opcode(name: str) -> int:
    """The opcode of instruction ``name``."""
    return int(spec.BY_NAME[name].opcode)


def is_one_of(op: Value, names: Iterable[str]) -> Value:
    """1 when ``op`` is the opcode of one of the named instructions (a 1-bit 0 for none)."""
    return any_of(op == opcode(name) for name in names)


def _check_layout_matches_spec() -> None:
    for ispec in spec.INSTRUCTIONS:
        layout = fields_layout(ispec.name)
        for fname, (lsb, width) in ispec.field_offsets().items():
            member = layout[fname]
            assert member.offset + spec.OPCODE_BITS == lsb and member.width == width, (ispec.name, fname)


_check_layout_matches_spec()
