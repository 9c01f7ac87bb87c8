"""compiler/testing/capacity.py: what fits the default machine, with streaming and without,
against sizes worked by hand."""

from compiler.testing import capacity
from sim.spec import DEFAULT


def test_a_64_by_64_weight_needs_streaming_on_the_default_machine():
    assert capacity.fits((64, 32, 10), 16) and capacity.fits((64, 32, 10), 16, stream=False)
    assert capacity.fits((64, 64, 10), 16) and not capacity.fits((64, 64, 10), 16, stream=False)
    assert capacity.refusal((64, 64, 10), 16, stream=False).startswith(
        "scratchpad is full: cannot place a buffer of 4096 words")


def test_external_memory_bounds_the_batch_and_the_depth():
    """64-64-10: 64 b input words + 4,096 + 640 weight words + 10 b output words <= 8,192, so
    b <= 46; a second 64 x 64 layer needs 16 x 64 + 2 x 4,096 + ... > 8,192."""
    assert capacity.largest_batch((64, 64, 10), DEFAULT, stream=True, limit=64) == 46
    assert capacity.deepest(64, DEFAULT, stream=True) == 1
    assert capacity.refusal((64, 64, 64, 10), 16).startswith("external memory is full")


def test_the_report_names_both_compilers():
    lines = capacity.report(DEFAULT)
    assert "  every weight whole (the seed compiler):" in lines and "  streaming (Capra):" in lines
    assert "    most weights, two layers: 64-64-10" in lines
    assert "    largest batch of 64-64-10: 46" in lines
