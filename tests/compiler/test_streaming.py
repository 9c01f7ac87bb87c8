"""compiler/streaming.py: layers larger than the scratchpad compile, run bit-exact against the
integer interpreter, cost the cycles the ranking says, and are refused by name when no
blocking fits."""

from itertools import pairwise

import numpy as np
import pytest

from compiler import CompileError, Graph, compile_graph
from compiler.allocator import AllocEvent
from compiler.interpret import interpret
from compiler.layout import panel_major
from sim.spec import BY_NAME, DEFAULT, FRONTEND_CYCLES, STOP_CYCLES, Params, latency


def mlp(widths, batch, seed=0, transposed=()):
    """x (batch, widths[0]) through one matmul per layer (relu between), output "y"; the
    layers in ``transposed`` store their weight (out, in) and read it transposed."""
    rng = np.random.default_rng(seed)
    g = Graph()
    h = g.input("x", (batch, widths[0]))
    for i, (fan_in, fan_out) in enumerate(pairwise(widths)):
        values = rng.normal(0, 1 / np.sqrt(fan_in), (fan_in, fan_out))
        if i in transposed:
            h = g.matmul(h, g.weight(f"w{i}", values.T), transpose_b=True)
        else:
            h = g.matmul(h, g.weight(f"w{i}", values))
        if i < len(widths) - 2:
            h = g.relu(h)
    g.output(h, "y")
    return g


def samples(graph, count=12, seed=1):
    rng = np.random.default_rng(seed)
    return [{n.name: rng.normal(size=n.shape) for n in graph.inputs()} for _ in range(count)]


def run_exact(program, graph, seed=99):
    """Run on the reference machine; assert every output equals the interpreter's."""
    test = samples(graph, 1, seed)[0]
    outcome = program.run(test, warn=False)
    ints = interpret(program, test)
    for name, value in outcome.outputs.items():
        assert np.array_equal(value.ints, ints[program.ext[name].node]), name
    return outcome


@pytest.fixture(scope="module")
def big_mlp():
    graph = mlp((64, 48, 64, 10), 16)
    return graph, compile_graph(graph, samples(graph), check_contracts=True)


def test_an_mlp_whose_weights_exceed_the_scratchpad_compiles_and_runs_bit_exact(big_mlp):
    graph, program = big_mlp
    assert sum(n.words for n in graph.nodes if n.op == "weight") == 6784 > 4096
    assert [b.describe() for b in program.blockings.values()] == [
        "1 x 2 blocks of 16 x 24 (A whole, B streams in panels, 2 loads)",
        "1 x 2 blocks of 16 x 32 (A whole, B streams in panels, 2 loads, sums in the output's rows)",
        "1 x 1 block of 16 x 10 (A whole, B whole)"]
    assert {name: e.panel for name, e in program.ext.items() if e.panel} == {"w0": 24, "w1": 32}
    assert program.spad_high <= 4096
    run_exact(program, graph)


def test_the_ranked_cycles_are_the_machines(big_mlp):
    """Every instruction but the ST and HALT belongs to a matmul's step, so the machine's
    cycles are the front end, the steps' cycles as ranked, the ST and the HALT."""
    graph, program = big_mlp
    outcome = run_exact(program, graph)
    (store,) = [ins for ins in program.code if ins.op == "ST"]
    steps = sum(b.cycles for b in program.blockings.values())
    stored = latency(store.spec, store.fields, params=DEFAULT)
    assert outcome.counters.cycles == FRONTEND_CYCLES + steps + stored + STOP_CYCLES
    loaded = sum(ins.len for ins in program.code if ins.op == "LD")
    assert loaded == sum(b.moved for b in program.blockings.values()) == 64 * 16 + 6784


def test_a_graph_that_fits_whole_compiles_to_the_same_program_either_way():
    graph = mlp((32, 16, 8), 4)
    streamed = compile_graph(graph, samples(graph))
    whole = compile_graph(graph, samples(graph), stream=False)
    assert streamed.listing() == whole.listing()
    assert all(b.whole for b in streamed.blockings.values())
    assert not any(e.panel for e in streamed.ext.values())


def test_without_streaming_the_seeds_refusal_stands(big_mlp):
    graph, _ = big_mlp
    with pytest.raises(CompileError, match=r"^scratchpad is full: cannot place a buffer of 768 words"):
        compile_graph(graph, samples(graph), stream=False)
    with pytest.raises(CompileError, match="stream = 'yes'"):
        compile_graph(graph, samples(graph), stream="yes")


def test_panel_major_by_hand():
    values = np.arange(12).reshape(2, 6)
    assert panel_major(values, 4).tolist() == [0, 1, 2, 3, 6, 7, 8, 9, 4, 5, 10, 11]
    assert panel_major(values, 6).tolist() == list(range(12))


def test_the_host_writes_a_panel_stored_weight_panel_by_panel(big_mlp):
    graph, program = big_mlp
    entry = program.ext["w0"]
    image = program.ext_image(samples(graph, 1)[0])
    levels = program.quantized_weight(entry.node) & 0xFFFFFFFF
    region = image[entry.addr:entry.addr + entry.words]
    assert region.tolist() == panel_major(levels, 24).tolist() != levels.ravel().tolist()


def test_a_large_input_streams_in_row_blocks():
    graph = mlp((32, 8, 4), 32)                    # x alone fills a 1024-word scratchpad
    program = compile_graph(graph, samples(graph), params=Params(SPAD_WORDS=1024), reuse=False)
    first = program.blockings[2]
    assert first.stream_a and first.row_blocks > 1
    outcome = run_exact(program, graph)
    with pytest.raises(ValueError, match=r"node 0 \(input 'x'\) was never placed in the scratchpad"):
        program.read_tensor(outcome, 0)


def test_transposed_and_shared_weights_stream():
    """A transposed weight streams in runs of its stored rows (no panels); a weight two layers
    read is stored row by row and gathered."""
    g = Graph()
    rng = np.random.default_rng(3)
    x = g.input("x", (8, 48))
    first = g.matmul(x, g.weight("wt", rng.normal(0, 0.15, (40, 48))), transpose_b=True)
    shared = g.weight("ws", rng.normal(0, 0.15, (40, 40)))
    g.output(g.matmul(g.relu(g.matmul(first, shared)), shared), "y")
    program = compile_graph(g, samples(g), params=Params(SPAD_WORDS=1024))
    transposed, shared = program.blockings[2], [program.blockings[4], program.blockings[6]]
    assert transposed.stream_b and transposed.b_how == "" and transposed.col_blocks > 1
    assert "gathered row by row" in [b.b_how for b in shared]
    assert not any(e.panel for e in program.ext.values())
    run_exact(program, g)


def test_no_reuse_blocks_differently_and_agrees():
    graph = mlp((48, 40, 40, 8), 8)
    calibration = samples(graph)
    params = Params(SPAD_WORDS=2048)
    reused = compile_graph(graph, calibration, params=params)
    kept = compile_graph(graph, calibration, reuse=False, params=params)
    described = [[b.describe() for b in p.blockings.values()] for p in (reused, kept)]
    assert described[0] != described[1]
    test = samples(graph, 1, 7)[0]
    assert np.array_equal(reused.run(test).outputs["y"].ints, kept.run(test).outputs["y"].ints)
    run_exact(kept, graph, 7)


def test_a_step_no_blocking_fits_is_refused_with_the_words_its_smallest_needs():
    g = Graph()
    weight = g.weight("w", np.full((16, 64), 0.01))
    g.output(g.matmul(g.input("x", (64, 16)), weight), "y")
    with pytest.raises(CompileError) as info:
        compile_graph(g, [{"x": np.ones((64, 16))}])
    assert info.value.node == 2
    assert info.value.problem == (
        "scratchpad is full at node 2 (matmul), the 64 x 16 by 16 x 64 product of node 1 (input 'x') and "
        "node 0 (weight 'w'): its smallest blocking, 16 x 16 blocks of 4 x 4 (A streams, B streams in "
        "panels, 256 loads, sums in the output's rows), needs 4224 words; 4096 of the 4096 words are free "
        "at this step (in 1 piece)")   # the 4,096-word result (holding the sums) + 4 x 16 A + 16 x 4 B
    assert info.value.fix.startswith("use a smaller batch or narrower layers (its result alone takes 4096")


def test_an_int4_weight_does_not_stream_and_the_refusal_says_so():
    g = Graph()
    weight = g.weight("w", np.full((64, 64), 0.01), bits=4)
    g.output(g.matmul(g.input("x", (8, 64)), weight), "y")
    with pytest.raises(CompileError) as info:
        compile_graph(g, [{"x": np.ones((8, 64))}])
    assert "an int4 weight is unpacked whole: with bits=8 it could stream" in info.value.fix
    compile_graph(Graph.parse(g.text().replace(" bits=4", ""), {"w": np.full((64, 64), 0.01)}),
                  [{"x": np.ones((8, 64))}])


def test_a_failed_try_leaves_no_trace_in_the_allocators_events(big_mlp):
    graph, program = big_mlp
    events: list[AllocEvent] = []
    again = compile_graph(graph, samples(graph), events=events)
    assert again.listing() == program.listing()
    live: dict[int, int] = {}
    for e in events:
        if e.kind == "alloc":
            assert all(e.addr + e.words <= a or a + w <= e.addr for a, w in live.items()), e
            live[e.addr] = e.words
        else:
            assert live.pop(e.addr) == e.words, e
    assert max(e.addr + e.words for e in events) == again.spad_high


def test_the_latency_of_a_load_is_the_specs():
    assert latency(BY_NAME["LD"], {"dst": 0, "src": 0, "len": 1536}, params=DEFAULT) == 384 + 2


@pytest.mark.rtl
@pytest.mark.slow
def test_a_streamed_program_is_bit_exact_on_the_rtl():
    """An input in row blocks and a weight in panels loaded again per row block, on the default
    machine: the Verilog under Icarus leaves the reference's memory and counters."""
    cosim = pytest.importorskip("cosim.api")
    graph = mlp((64, 40, 8), 48, transposed=(1,))
    program = compile_graph(graph, samples(graph))
    assert program.blockings[2].stream_a and program.blockings[2].b_loads > program.blockings[2].col_blocks
    jobs = [(program.code, program.ext_image(samples(graph, 1, 9)[0]), "streamed")]
    (run,) = cosim.run_programs(jobs, "icarus")
    assert cosim.compare(jobs[0], run) == []
