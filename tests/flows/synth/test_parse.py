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
