"""Signatures shared by GA-2's units: memory ports and the execute-stage interface.

All signatures are written from the side of the unit that *drives* requests (a unit, or the
DMA towards external memory); the memory side uses ``.flip()``.

Conventions (hw/README.md gives the full timing contract):

* A memory access moves LANES consecutive 32-bit words starting at any word address; lane i
  is the word at ``addr + i``. Reads return ``data`` SPAD_READ_LATENCY (3) cycles after
  ``en``; writes take effect at the end of the cycle in which ``en`` is high, for the lanes
  whose ``mask`` bit is set.
* Only one instruction executes at a time, and an idle unit drives every output to 0, so the
  GA-2 top combines the units' requests to a shared port with an OR.
"""

from __future__ import annotations

from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from sim import spec

WORD = spec.WORD_BITS
SPAD_READ_LATENCY = spec.SPAD_READ_LATENCY
EXT_READ_LATENCY = spec.EXT_READ_LATENCY


def words(lanes: int) -> data.ArrayLayout:
    """LANES 32-bit words side by side: lane i is the word at address + i."""
    return data.ArrayLayout(WORD, lanes)


def addr_bits(depth_words: int) -> int:
    """Address width for a memory of depth_words words (a power of two)."""
    return max(1, (depth_words - 1).bit_length())


class ReadPort(wiring.Signature):
    """A LANES-wide read request. Members: en Out(1), addr Out(addr_width), data In(words)."""

    def __init__(self, addr_width: int, lanes: int):
        super().__init__({
            "en": Out(1),
            "addr": Out(addr_width),
            "data": In(words(lanes)),
        })


class WritePort(wiring.Signature):
    """A LANES-wide masked write. Members: en, addr, mask (one bit per lane), data; all Out."""

    def __init__(self, addr_width: int, lanes: int):
        super().__init__({
            "en": Out(1),
            "addr": Out(addr_width),
            "mask": Out(lanes),
            "data": Out(words(lanes)),
        })


class ExtPort(wiring.Signature):
    """The DMA's external-memory bus: one LANES-wide access per cycle, read or write.

    Members: addr Out(ext addr width), rd_en Out(1), rd_data In(words) valid
    EXT_READ_LATENCY cycles after rd_en, wr_en Out(1), wr_mask Out(lanes), wr_data Out(words).
    """

    def __init__(self, addr_width: int, lanes: int):
        super().__init__({
            "addr": Out(addr_width),
            "rd_en": Out(1),
            "rd_data": In(words(lanes)),
            "wr_en": Out(1),
            "wr_mask": Out(lanes),
            "wr_data": Out(words(lanes)),
        })


def unit_members(params: spec.Params, *, n_read: int, write: bool = True, ext: bool = False) -> dict:
    """The members every GA-2 unit declares, for ``wiring.Component.__init__`` (or annotations).

    Control (from the execute stage):
        start In(1): high for one cycle, the dispatch cycle d of an instruction for this unit.
        opcode In(OPCODE_BITS): the executing instruction's opcode, held from d to done.
        fields In(FIELD_BITS): its fields, held from d to done (view them with
            ``hw.isa.fields_view(name, fields)``).
        done Out(1): high in exactly one cycle, d + L - 1, where L is the instruction's
            ``sim.spec`` latency; every write of the instruction is issued by then.
    Memory (requests to the shared scratchpad, and to external memory for the DMA):
        rd0, rd1 Out(ReadPort) (as many as n_read), wr Out(WritePort), ext Out(ExtPort).
    An idle unit drives every output to 0.
    """
    spad_bits = addr_bits(params.SPAD_WORDS)
    members = {
        "start": In(1),
        "opcode": In(spec.OPCODE_BITS),
        "fields": In(spec.INSTR_BITS - spec.OPCODE_BITS),
        "done": Out(1),
    }
    for k in range(n_read):
        members[f"rd{k}"] = Out(ReadPort(spad_bits, params.LANES))
    if write:
        members["wr"] = Out(WritePort(spad_bits, params.LANES))
    if ext:
        members["ext"] = Out(ExtPort(addr_bits(params.EXT_WORDS), params.LANES))
    return members
