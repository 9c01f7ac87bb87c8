"""flows/synth/parse.py: which Yosys failures are the ABC9 bug the flow works around."""

from __future__ import annotations

from flows import synth


def test_abc9_failures_are_recognised_and_nothing_else():
    head = "2.46. Executing ABC9 pass.\n2.46.14.4. Executing ABC9_EXE pass (technology mapping).\n"
    assert synth.abc9_bug(head + "Running ABC command: yosys-abc\n") == \
        "Yosys ended in its ABC9_EXE pass with no message"
    reintegrate = ("2.46.15. Executing ABC_OPS_REINTEGRATE pass.\n"
                   "ERROR: Assert `x' failed in kernel/rtlil.cc:1\n")
    assert synth.abc9_bug(head + reintegrate).startswith("ERROR: Assert")
    assert synth.abc9_bug(head + "2.47. Executing STAT pass.\nERROR: out of memory\n") is None
    assert synth.abc9_bug(head + "2.47. Executing ABC9 pass.\nEnd of script.\n") is None
    assert synth.abc9_bug("") is None


PACKED = ("Info: Device utilisation:\n"
          "Info: \t          TRELLIS_IO:       0/    365     0%\n"
          "Info: \t              DP16KD:      48/    208    23%\n"
          "Info: \t          MULT18X18D:     153/    156    98%\n"
          "Info: \t          TRELLIS_FF:   35921/  83640    42%\n"
          "Info: \t        TRELLIS_COMB:   85740/  83640   102%\n"
          "\n"
          "Info: Placed 0 cells based on constraints.\n"
          "Info: Device utilisation:\n"
          "Info: \t        TRELLIS_COMB:       1/  83640     0%\n"
          "ERROR: Unable to find legal placement for all cells, design is probably at utilisation limit.\n")
"""nextpnr-ecp5's log of the T = 8, OVERLAP = 2 machine (2026-12-07), some kinds left out; a second
table made up, which the reader must not take."""


def test_what_nextpnr_packed_is_read_from_its_log():
    assert synth.packed_utilisation(PACKED) == {
        "DP16KD": {"used": 48, "available": 208}, "MULT18X18D": {"used": 153, "available": 156},
        "TRELLIS_FF": {"used": 35921, "available": 83640},
        "TRELLIS_COMB": {"used": 85740, "available": 83640}}
    assert synth.packed_utilisation("Info: Packing IOs..\nERROR: no such file\n") == {}
