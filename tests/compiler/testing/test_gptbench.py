"""compiler/testing/gptbench.py: a small GPT's cycles per kernel kind, the sums checked against the
reference machine's counter, the row costs worked by hand."""

import numpy as np

from compiler.frontend.decode import Decoder
from compiler.ops import Op
from compiler.testing import gptbench
from compiler.timeline import serial_timeline
from sim.spec import DEFAULT


def decoder() -> Decoder:
    return Decoder(gptbench.random_weights(), gptbench.CONFIG,
                   np.random.default_rng(1).integers(0, gptbench.CONFIG.vocab, (2, 32)), DEFAULT)


def test_every_cycle_goes_to_one_kernel():
    """The kernels' cycles and the control's (HALT) add up to the last span's end, which is the
    reference machine's cycle counter on the serial default machine; every kind has cycles."""
    dec = decoder()
    program = dec.program(5, 1)
    kinds = gptbench.kernel_cycles(program)
    spans = serial_timeline(program.code, program.machine)
    assert sum(kinds.values()) == sum(s.end - s.start for s in spans)
    assert spans[-1].end == program.run(dec.sample(0, 5, 1), warn=False).counters.cycles
    assert set(kinds) == {*gptbench.KINDS, "control"} and all(kinds[k] > 0 for k in gptbench.KINDS)


def test_kinds_of_the_nodes():
    """The layernorms are LayerNorm, the GATHER's embedding and its position add embedding, the
    GELU table MLP, the softmaxes attention, the argmax head; residual adds are those reading x."""
    program = decoder().program(3, 1)
    g, memo = program.graph, {}
    kinds = {n.id: gptbench.kernel_of(g, n.id, memo) for n in g.nodes}
    by_op = {op: {kinds[n.id] for n in g.nodes if n.op == op} for op in (Op.LAYERNORM, Op.EMBEDDING, Op.TABLE,
                                                                           Op.SOFTMAX, Op.ARGMAX)}
    assert by_op == {Op.LAYERNORM: {"layernorm"}, Op.EMBEDDING: {"embedding"}, Op.TABLE: {"mlp"},
                     Op.SOFTMAX: {"attention"}, Op.ARGMAX: {"head"}}
    adds = [kinds[n.id] for n in g.nodes if n.op == Op.ADD]
    # per layer: 3 adds of the 4 heads' projections, 2 residual adds; one embedding add
    assert sorted(adds) == sorted(["embedding"] + 2 * (3 * ["attention"] + 2 * ["residual"]))


def test_row_costs_against_two_n_plus_fifty():
    """LN of N = 64 on 4 lanes: 2 * 16 + 65 = 97 cycles (docs/guide/transformer.md); softmax of
    N = 32: 3 passes of 8 beats + 15 = 39 (sim/spec.py's SM latency, by hand); both under 2N + 50."""
    ln, sm = gptbench.row_costs(DEFAULT)
    assert ln == {"op": "LN", "N": 64, "cycles": 97, "2N + 50": 178}
    assert sm == {"op": "SM", "N": 32, "cycles": 39, "2N + 50": 114}


def test_the_rows_add_up_and_the_bench_prints_them():
    """Each step's kernel cycles per token sum to at most its cycles per token (the rest is the
    launch's control), decode costs more per token than prefill (every weight moves for one
    token), and the printed table carries the same numbers."""
    found = gptbench.rows(DEFAULT, cached=(4,), prompt=4)
    prefill, decode = found
    for r in found:
        assert 0 < sum(r[k] for k in gptbench.KINDS) <= r["per token"]
    assert prefill["tokens"] == 4 and decode["tokens"] == 1 and decode["per token"] > prefill["per token"]
    text = gptbench.bench(DEFAULT, (4,), prompt=4)
    assert f"{decode['cycles']:8d} {decode['per token']:9d}" in text
    assert "LN row of N = 64: 97 cycles (2N + 50 = 178)" in text
