"""compiler/testing/capacity.py: what fits the default machine, with streaming and without,
against sizes worked by hand."""

from compiler.testing import capacity
from sim.spec import DEFAULT, Params


def test_a_64_by_64_weight_needs_streaming_on_the_default_machine():
    assert capacity.fits((64, 32, 10), 16, DEFAULT) and capacity.fits((64, 32, 10), 16, DEFAULT, stream=False)
    assert capacity.fits((64, 64, 10), 16, DEFAULT)
    assert not capacity.fits((64, 64, 10), 16, DEFAULT, stream=False)
    assert capacity.refusal((64, 64, 10), 16, stream=False, params=DEFAULT).startswith(
        "scratchpad is full: cannot place a buffer of 4096 words")


SEED_MACHINE = Params(EXT_WORDS=8192)
"""The seed's external memory (the default before issue 14 made it 65,536 words)."""


def test_external_memory_bounds_the_batch_and_the_depth():
    """64-64-10 on the seed's 8,192 words: 64 b input words + 4,096 + 640 weight words + 10 b
    output words <= 8,192, so b <= 46; a second 64 x 64 layer needs 16 x 64 + 2 x 4,096 + ... >
    8,192. With 65,536 words the scratchpad bounds the batch (51: the results stay there) and
    15 layers of 64 x 64 fit at a batch of 16 one weight a word, 60 packed four to a word (the
    default packs when the weights do not fit otherwise)."""
    assert capacity.largest_batch((64, 64, 10), SEED_MACHINE, stream=True, limit=64, pack=False) == 46
    assert capacity.deepest(64, SEED_MACHINE, stream=True, pack=False) == 1
    refused = capacity.refusal((64, 64, 64, 10), 16, SEED_MACHINE, pack=False)
    assert refused.startswith("external memory is full")
    assert capacity.largest_batch((64, 64, 10), DEFAULT, stream=True, limit=64) == 51
    assert capacity.deepest(64, DEFAULT, stream=True, pack=False) == 15
    assert capacity.deepest(64, DEFAULT, stream=True) == 60   # packed; then the program is too long:
    assert capacity.refusal((64,) * 63 + (10,), 16, DEFAULT).startswith(
        "the instruction memory is full at node 185")


def test_the_report_names_both_compilers():
    lines = capacity.report(SEED_MACHINE)
    assert "  every weight whole (the seed compiler):" in lines and "  streaming (Capra):" in lines
    assert "    most weights, two layers: 64-64-10" in lines
    # Capra packs the weights when they do not fit 8,192 words otherwise: the scratchpad bounds
    # the batch at 51 as on the default machine (46 one weight a word, above)
    assert "    largest batch of 64-64-10: 51" in lines
    assert "    packed, four a word (LD fmt=1): 64-96-96-96-10 (25,834 parameters); 64-112-112-112-10 is " \
           "refused: external memory is full: node 10 (weight 'w3') would end at word 8408, past the 8192 " \
           "words the machine has" in lines


def test_packing_moves_the_external_limit():
    """On the seed's 8,192 words, 64-64-64-10 at batch 16 needs 1,024 + 2 x 4,096 + 640 + 160 =
    10,016 words one weight a word, but 1,024 + 2 x 1,024 + 160 + 160 = 3,392 packed: the
    default (pack only when needed) compiles it. The largest biased 64-h-h-h-10 at batch 1,
    where the external memory is the limit (65,536 words; the input and output take 74, the
    biases 3h + 10): one weight a word h = 160 (63,530 parameters, 63,604 words; h = 176 needs
    75,588); packed h = 336 (250,656 weights in 5,376 + 2 x 28,224 + 840 words, 1,018 biases:
    63,756 words, 251,674 parameters); h = 352 needs 5,632 + 2 x 30,976 + 880 > 65,536."""
    assert capacity.fits((64, 64, 64, 10), 16, SEED_MACHINE)
    assert not capacity.fits((64, 64, 64, 10), 16, SEED_MACHINE, pack=False)
    assert capacity.largest_model(DEFAULT, pack=False) == (63_530, (64, 160, 160, 160, 10))
    assert capacity.largest_model(DEFAULT, pack=True) == (251_674, (64, 336, 336, 336, 10))
