"""compiler/pipeline.py: the passes as data (order, contracts, the structural prefix) and what
compile_graph passes through."""

import numpy as np
import pytest

from compiler import CompileError, Graph, Program, compile_graph
from compiler.allocator import AllocEvent
from sim.spec import DEFAULT, Params

from .conftest import single_matmul


def test_a_bad_graph_is_refused_before_its_calibration_data_is_looked_at():
    g = Graph()
    g.output(g.relu(g.input("x", (2, 2))), "y")
    with pytest.raises(CompileError, match="relu node 1"):
        compile_graph(g, [])


def test_compiling_twice_gives_the_same_program():
    g = single_matmul(3, 5, 6)
    calibration = [{"x": np.arange(15.0).reshape(3, 5)}]
    first, second = compile_graph(g, calibration), compile_graph(g, calibration)
    assert isinstance(first, Program) and first.code == second.code and first.scales == second.scales


def test_events_params_and_ranges_pass_through():
    g = single_matmul(2, 3, 2)
    g.tag(0, "x")
    events: list[AllocEvent] = []
    machine = Params(T=2)
    program = compile_graph(g, [{"x": np.ones((2, 3))}], ranges={"x": 12.7}, params=machine, events=events)
    assert program.machine is machine and program.scales[0] == 12.7 / 127
    assert sum(e.kind == "alloc" for e in events) == 4          # x, w, y, accumulator
    assert sum(i.op == "MM" for i in program.code) == 1          # one 2 x 2 tile


@pytest.mark.parametrize("kwargs, words", [
    ({"graph": None}, "graph = None (a NoneType) is not a compiler.Graph"),
    ({"graph": "g"}, "graph = 'g' (a str) is not a compiler.Graph"),
    ({"params": "x"}, "params = 'x' (a str) is not a sim.spec.Params"),
    ({"ranges": [("h", 1.0)]}, "ranges = [('h', 1.0)] (a list) is not a dict"),
    ({"ranges": {0: 1.0}}, "ranges has the key 0 (an int), not a tag name"),
    ({"reuse": "no"}, "reuse = 'no' (a str) is not True or False"),
    ({"events": ()}, "events = () (a tuple) is not a list"),
])
def test_arguments_of_the_wrong_type_are_refused_by_name(kwargs, words):
    g = single_matmul(2, 3, 2)
    g.tag(2, "h")
    arguments = {"graph": g, "calibration": [{"x": np.ones((2, 3))}], **kwargs}
    with pytest.raises(CompileError) as info:
        compile_graph(**arguments)
    assert info.value.problem == f"compile_graph: {words}"
    assert info.value.fix


def test_a_numpy_bool_is_a_good_reuse():
    program = compile_graph(single_matmul(2, 3, 2), [{"x": np.ones((2, 3))}], reuse=np.bool_(False))
    assert program.reuse is False


def test_ranges_on_a_tensor_that_is_also_an_output_gives_a_note_naming_the_tag():
    g = Graph()
    m = g.matmul(g.input("x", (2, 2)), g.weight("w", np.eye(2)))
    g.tag(m, "h")
    g.output(m, "y")
    program = compile_graph(g, [{"x": [[3.0, 0.0], [0.0, -1.0]]}], ranges={"h": 0.5})
    assert program.plan.ranges[m] == 0.5 and program.scales[m] * 127 == 3.0
    assert len(program.notes) == 1
    assert program.notes[0].startswith("ranges['h'] = 0.5 does not set the scale of node 2 (matmul)")
    assert "node 3 (output 'y'), whose calibrated range 3 is larger" in program.notes[0]


# ----------------------------------------------------------------------------- the pipeline as data

def test_the_passes_in_order_and_the_structural_prefix():
    from compiler.pipeline import PASSES, structural_passes
    assert [p.name for p in PASSES] == ["limits", "cse", "fusion", "placement", "lifetimes", "layout",
                                        "calibration", "scales", "emission", "scheduling"]
    assert [p.name for p in structural_passes()] == ["limits", "cse", "fusion", "placement", "lifetimes",
                                                     "layout"]
    written = {"graph", "params", "calibration", "fixed_ranges", "reuse", "events", "stream", "pack"}
    for p in PASSES:   # every pass reads only what the arguments or an earlier pass give
        assert set(p.reads) <= written, p.name
        written |= set(p.writes)
        assert p.before and p.after


@pytest.mark.parametrize("wbits", [8, 4])
def test_every_contract_holds_on_the_battery_graphs(wbits):
    import random

    from compiler.testing.random_graphs import random_slice_graph
    from compiler.workloads.random_graph import random_graph, sample_inputs
    for build in (random_graph, random_slice_graph):
        for seed in range(60):
            graph, names = build(seed, wbits)
            rng = random.Random(seed)
            calibration = [sample_inputs(names, rng) for _ in range(4)]
            for reuse in (True, False):
                compile_graph(graph, calibration, reuse=reuse, check_contracts=True)


def test_a_pass_that_breaks_its_contract_is_named():
    from compiler.compilation import Compilation
    from compiler.contracts import ContractError
    from compiler.pipeline import PASSES, run_passes
    g = single_matmul(3, 4, 2)
    state = Compilation(graph=g, params=DEFAULT)
    placement = next(p for p in PASSES if p.name == "placement")
    run_passes(state, PASSES[:PASSES.index(placement) + 1], check=True)
    state.placement.buffers[0].words -= 1          # the output no longer fits its buffer
    broken = r"pass placement: node 2 \(matmul\) ends at word 6 of buffer 0, which has 5"
    with pytest.raises(ContractError, match=broken):
        placement.check(state)


def test_a_pass_run_before_what_it_reads_is_named():
    from compiler.compilation import Compilation
    from compiler.contracts import ContractError
    from compiler.pipeline import PASSES, run_passes
    with pytest.raises(ContractError, match="pass placement: needs 'consumers', which no earlier pass set"):
        placement = [p for p in PASSES if p.name == "placement"]
        run_passes(Compilation(graph=single_matmul(2, 2, 2), params=DEFAULT), placement, check=True)


def test_check_structure_refuses_without_calibration_data():
    from compiler.pipeline import check_structure
    g = Graph()
    g.output(g.relu(g.input("x", (2, 2))), "y")
    with pytest.raises(CompileError, match="relu node 1 reads node 0"):
        check_structure(g, params=DEFAULT)
    check_structure(single_matmul(2, 3, 4), Params(T=2))


# ----------------------------------------------------------------------------- passes by name


def _relu_layer() -> Graph:
    g = Graph()
    x = g.input("x", (2, 3))
    g.output(g.relu(g.matmul(x, g.weight("w", [[1.0, -1.0], [0.5, 2.0], [-1.5, 1.0]]))), "y")
    return g


def test_a_pass_switched_off_by_name_is_the_same_as_its_keyword():
    """disable={"fusion"}, passes= without fusion and fuse=False give one program: the matmul's
    RQ without the relu flag, then an identity RQ with relu = 1 (7 instructions, not 6)."""
    g, calibration = _relu_layer(), [{"x": [[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]]}]
    fused = compile_graph(g, calibration)
    listings = {compile_graph(g, calibration, disable={"fusion"}).listing(),
                compile_graph(g, calibration, disable="fusion").listing(),
                compile_graph(g, calibration, fuse=False).listing(),
                compile_graph(g, calibration, passes="limits,cse,placement,lifetimes,layout,calibration,"
                                                     "scales,emission,scheduling").listing()}
    assert len(listings) == 1
    unfused = listings.pop()
    assert len(fused.code) == 6 and unfused.count(" RQ ") == 2 and unfused.count("relu=1") == 1
    everything = "limits,cse,fusion,placement,lifetimes,layout,calibration,scales,emission,scheduling"
    assert compile_graph(g, calibration, passes=everything).listing() == fused.listing()


@pytest.mark.parametrize("arguments, problem, fix", [
    ({"disable": {"fusoin"}}, "disable= names 'fusoin', which is not a pass of the pipeline",
     "name passes of compiler.pipeline.PASSES: limits, cse, fusion, placement"),
    ({"disable": {"placement"}}, "disable= names the pass 'placement', which cannot be switched off: the "
     "pass 'lifetimes' reads the placement it writes", "switch off only cse, fusion, scheduling"),
    ({"disable": "limits"}, "the pass 'limits', which cannot be switched off: it checks the graph",
     "switch off only cse, fusion, scheduling"),
    ({"passes": "limits,fusion,cse"}, "passes= lists limits, fusion, cse, not in the pipeline's order",
     "list them as the pipeline runs them: limits, cse, fusion"),
    ({"passes": ["limits", "cse", "fusion"]}, "passes= leaves out the pass 'placement', which cannot be "
     "switched off", "switch off only"),
    ({"disable": ["cse", "cse"]}, "disable= names the pass 'cse' twice", "name it once"),
    ({"disable": {"cse"}, "passes": "limits"}, "both disable= and passes= are given", "not both"),
    ({"disable": 3}, "disable = 3 (an int) is not a list of pass names", 'disable="cse,fusion"'),
])
def test_an_unknown_or_needed_pass_is_refused_by_name(arguments, problem, fix):
    with pytest.raises(CompileError) as caught:
        compile_graph(_relu_layer(), [{"x": np.ones((2, 3))}], **arguments)
    assert problem in caught.value.problem and fix in caught.value.fix


def test_the_compilation_is_built_by_keyword_only():
    from compiler.compilation import Compilation
    with pytest.raises(TypeError):
        Compilation(single_matmul(2, 2, 2), DEFAULT)   # the positional form is what is refused
