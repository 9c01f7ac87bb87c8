"""compiler/testing/mlpbench.py: the digits MLP's figures, the bounds worked by hand."""

from compiler.testing import mlpbench
from sim.spec import DEFAULT


def test_batch_one_on_the_default_machine():
    """Batch 1: the MXU bound is the sum of K over the MMs: 64 tiles of K = 64 (layer 1), 32 tiles
    of K = 256 cut into four MMs (layer 2), 3 tiles of K = 128 (layer 3): 4,096 + 8,192 + 384 =
    12,672 steps. The DMA moves every weight once (16,384 + 32,768 + 1,280), the biases once
    (256 + 128 + 10), the input (64) and the logits (10): 50,900 words."""
    row = mlpbench.measure(1, DEFAULT)
    assert row.machine == DEFAULT
    assert row.mxu_bound == 12_672 and row.dma_words == 50_900
    assert row.macs == 64 * 256 + 256 * 128 + 128 * 10
    assert max(row.mxu_bound, -(-row.dma_words // 4)) <= row.cycles
    assert 0 < row.weight_cycles < row.cycles


def test_batch_8_fits_the_default_scratchpad_and_64_takes_a_larger_one():
    """Batch 8: the 8 x 256 hidden layer (2,048 words) stays in the scratchpad while layer 2's
    8 x 128 output (1,024) takes its int32 sums in place and W1 streams in 16-column panels in
    pieces of 64 rows (1,024 words): it fits 4,096 words, and each weight moves once (the words
    of batch 1 plus 7 more inputs, logits and bias rows: 50,900 + 7 x (64 + 10 + 394)).
    Batch 64's hidden layer alone is 16,384 words: 32,768 is the smallest that holds it."""
    row = mlpbench.measure(8, DEFAULT)
    assert row.machine == DEFAULT and row.mxu_bound == 2 * 12_672   # two row tiles of 4 images
    assert row.dma_words == 50_900 + 7 * (64 + 10 + 394)
    assert row.cycles == 43_821
    assert mlpbench.measure(64, DEFAULT).machine.SPAD_WORDS == 32_768
    lines = mlpbench.report(DEFAULT, [1])
    assert lines[1].split() == ["batch", "cycles/img", "DMA", "words", "MXU", "util", "weights", "MXU",
                                "bound", "DMA", "bound", "vs", "bound"]
    assert lines[2].split()[0] == "1" and lines[2].split()[5] == "12,672.0"
