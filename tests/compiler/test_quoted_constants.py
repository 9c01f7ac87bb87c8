"""Constants the compiler's docstrings quote are the code's: each quote is rebuilt here from
the constant it names, so changing the constant without the prose (or the prose without the
constant) fails."""

import numpy as np
import pytest

from compiler import int4, layout, lowering, ops, placement, requant, scales, text
from compiler.ir import Graph
from compiler.testing import battery, bench, mutants, perf
from compiler.workloads import seedtable
from sim.arith import INT8_MAX, MANTISSA_BITS, Q16_ONE


def quotes():
    eight = {8: "eight"}[int4.INT4_PER_WORD]
    per_word = int4.INT4_PER_WORD
    tiny = scales.SMALLEST_NORMAL
    seeds = len(battery.BATTERY_SEEDS)
    return [
        (int4, f"{eight} signed {int4.INT4_BITS}-bit values to a 32-bit word"),
        (int4, f"levels -{int4.INT4_MAX}..{int4.INT4_MAX}"),
        (layout, f"ceil(elements / {int4.INT4_PER_WORD}) packed words"),
        (placement, f"a multiple of {per_word} words, because UNPACK writes {per_word} values"),
        (scales, f"input group gets 1/{round(1 / ops.SOFTMAX_IN_SCALE)}"),
        (scales, f"its output group 1/{round(1 / ops.PROBABILITY_SCALE)}"),
        (scales, f"range / {int4.INT4_MAX}"),
        (scales, f"largest range / {INT8_MAX}"),
        (scales, f"about {tiny:.1e}, a range under about {tiny * INT8_MAX:.1e}"),
        (requant, f"to {MANTISSA_BITS} significant bits"),
        (requant, f"units of 1/{Q16_ONE}"),
        (lowering, f"one RQ to the 1/{round(1 / ops.PROBABILITY_SCALE)} scale"),
        (ops, f"({INT8_MAX}; {int4.INT4_MAX} for an int4 weight)"),
        (battery, f"({battery.BOUND}: twice the worst error"),
        (battery, f"on the {seeds} battery graphs"),
        (mutants, f"the {seeds} random graphs"),
        (mutants, f"the first {len(mutants.SEED_MUTANTS)} mutants mirrors one of the seed's "
                  f"{len(mutants.SEED_MUTANTS) + 1} broken compilers"),
        (mutants, f"; {len(mutants.WIDE_MUTANTS)} more break biases and the cutting of K"),
        (mutants, f"; {len(mutants.STREAMING_MUTANTS)} more break the streaming"),
        (bench, f"over the {seeds} battery graphs, for compile ({battery.CALIBRATION_SAMPLES} calibration "
                "samples)"),
        (bench, "chains of " + ", ".join(f"{n:,}" for n in bench.CHAIN_SIZES[:-1])
         + f" and {bench.CHAIN_SIZES[-1]:,}"),
        (bench, f"IMEM_WORDS = {bench.CHAIN_IMEM_WORDS}"),
        (perf, f"(seed chip {sum(perf.SEED_CHIP_CYCLES.values())},"),
        (perf, f"seeds {min(seedtable.TABLE_SEEDS)}-{max(seedtable.TABLE_SEEDS)} of the chapter-11 table"),
        (seedtable, f"then draws {seedtable.CALIBRATION_SAMPLES}"),
    ]


@pytest.mark.parametrize("module, quote", quotes(), ids=[f"{m.__name__}: {q}" for m, q in quotes()])
def test_the_docstring_quotes_the_constant(module, quote):
    assert quote in " ".join(module.__doc__.split()), f"{module.__name__} no longer says {quote!r}"


def test_the_text_form_example_in_the_docstring_parses():
    example = "\n".join(line for line in text.__doc__.splitlines() if line.strip().startswith("%"))
    graph = Graph.parse(example, {"w": np.ones((8, 6))})
    assert graph.text() == "\n".join(line.strip() for line in example.splitlines())
