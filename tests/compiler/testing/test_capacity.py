"""compiler/testing/capacity.py: what fits the default machine, with streaming and without,
against sizes worked by hand."""

from compiler.testing import capacity
from sim.spec import DEFAULT, Params


def test_a_64_by_64_weight_needs_streaming_on_the_default_machine():
    assert capacity.fits((64, 32, 10), 16) and capacity.fits((64, 32, 10), 16, stream=False)
    assert capacity.fits((64, 64, 10), 16) and not capacity.fits((64, 64, 10), 16, stream=False)
    assert capacity.refusal((64, 64, 10), 16, stream=False).startswith(
        "scratchpad is full: cannot place a buffer of 4096 words")


SEED_MACHINE = Params(EXT_WORDS=8192)
"""The seed's external memory (the default before issue 14 made it 65,536 words)."""


def test_external_memory_bounds_the_batch_and_the_depth():
    """64-64-10 on the seed's 8,192 words: 64 b input words + 4,096 + 640 weight words + 10 b
    output words <= 8,192, so b <= 46; a second 64 x 64 layer needs 16 x 64 + 2 x 4,096 + ... >
    8,192. With 65,536 words the scratchpad bounds the batch (51: the results stay there) and
    15 layers of 64 x 64 fit at a batch of 16."""
    assert capacity.largest_batch((64, 64, 10), SEED_MACHINE, stream=True, limit=64) == 46
    assert capacity.deepest(64, SEED_MACHINE, stream=True) == 1
    assert capacity.refusal((64, 64, 64, 10), 16, SEED_MACHINE).startswith("external memory is full")
    assert capacity.largest_batch((64, 64, 10), DEFAULT, stream=True, limit=64) == 51
    assert capacity.deepest(64, DEFAULT, stream=True) == 15


def test_the_report_names_both_compilers():
    lines = capacity.report(SEED_MACHINE)
    assert "  every weight whole (the seed compiler):" in lines and "  streaming (Capra):" in lines
    assert "    most weights, two layers: 64-64-10" in lines
    assert "    largest batch of 64-64-10: 46" in lines
