"""compiler.explain: the account of running example A, against the seed chapter's figures
(its pass-by-pass walkthrough) and the reference machine."""

import pytest

from compiler import compile_graph
from compiler.bounds import bounds
from compiler.explain import account, explain, run_checks, tile_plans
from compiler.workloads.seedtable import attention_step_network, compile_seed
from sim.machine import Machine
from sim.spec import DEFAULT, Params

KEYS = ["graph", "ranges", "scales", "requantizers", "tiles", "allocation", "listing", "checks"]


@pytest.fixture(scope="module")
def example_a():
    graph, calibration, test = attention_step_network()
    events = []
    program = compile_graph(graph, calibration, events=events)
    return program, test, events


def section(sections, key):
    return next(s for s in sections if s.key == key)


def test_the_sections_in_pass_order(example_a):
    program, test, _ = example_a
    assert [s.key for s in account(program, test)] == KEYS
    assert [s.key for s in account(program)] == KEYS[:-1]  # no inputs, no checks


def test_scales_pins_and_groups(example_a):
    program, _, _ = example_a
    rows = {row[0]: row for row in section(account(program), "scales").table.rows}
    assert rows["%4"][2] == 1 / 16 and rows["%4"][4].startswith("pinned: softmax input")
    assert rows["%5"][2] == 1 / 127 and rows["%5"][4].startswith("pinned: softmax output")
    assert rows["%2"][4] == "group of %1, %2, %3"
    assert (
        round(rows["%2"][2], 5) == 0.02484 and round(rows["%2"][3], 4) == 0.0224
    )  # seed: kn 0.0224 vs 0.0248


def test_requantizer_pairs(example_a):
    program, _, _ = example_a
    rows = section(account(program), "requantizers").table.rows
    assert rows[0][:4] == ("node 4", "%4 matmul", 12345120, 32)  # the seed's (12345120, 32)


def test_tiles_name_their_mm(example_a):
    program, _, _ = example_a
    plans = tile_plans(program)
    assert [(p.node, [(t[0], t[1], t[2], t[3]) for t in p.tiles]) for p in plans] == [
        (4, [(0, 0, 1, 4), (0, 4, 1, 2)]),
        (9, [(0, 0, 1, 4), (0, 4, 1, 4)]),
    ]
    for plan in plans:
        for _row, _col, rows, cols, pc in plan.tiles:
            mm = program.code[pc]
            assert mm.op == "MM" and (mm.fields["M"], mm.fields["N"]) == (rows, cols)


def test_allocation_events_carry_their_pc(example_a):
    program, _, events = example_a
    assert program.events == events
    allocs = [e.words for e in program.events if e.kind == "alloc"]
    assert allocs[:4] == [48, 8, 6, 6]  # seed: the key buffer, the query, the scores, the accumulator
    pcs = [e.pc for e in program.events]
    assert pcs == sorted(pcs) and pcs[0] >= 0 and pcs[-1] <= len(program.code)
    first_mm = next(pc for pc, ins in enumerate(program.code) if ins.op == "MM")
    accumulator = next(e for e in program.events if e.what == "accumulator of node 4" and e.kind == "alloc")
    assert accumulator.pc == first_mm  # allocated just before the MM that writes it
    notes = section(account(program), "allocation").notes
    assert notes[0] == "high-water mark: 70 words of 4096"
    assert "buffer of %3 (48 words at 0) holds %1 input rows 0-4; %2 input rows 5-5" in notes


def test_listing_cycles_end_at_the_machines_count(example_a):
    program, test, _ = example_a
    rows = section(account(program), "listing").table.rows
    counters = Machine(DEFAULT).run(program.code, program.ext_image(test)).counters
    assert rows[-1][2] == counters.cycles == 164
    assert rows[0][:4] == (0, 8, 20, 12)


def test_checks(example_a):
    program, test, _ = example_a
    checks = run_checks(program, test)
    assert checks.same and checks.problems == [] and checks.passed
    assert f"{100 * checks.error:.2f}" == "2.36"  # the seed's 2.36%


def test_explain_text(example_a):
    program, test, _ = example_a
    text = program.explain(test, samples=20)
    assert text == explain(program, test, samples=20)
    for title in (
        "== pass 0: the graph, as written",
        "== pass 1: calibration on 20 samples",
        "== pass 2: scales",
        "== pass 5: allocation",
        "== pass 6: the program",
        "== checks",
    ):
        assert title in text
    assert "12345120" in text and "no problems" in text


def test_explain_on_a_seed_with_an_add_rescale():
    run = compile_seed(100, params=DEFAULT)
    rows = section(account(run.program), "requantizers").table.rows
    assert any("rescaled" in row[1] for row in rows)


def test_the_listing_marks_the_longest_chain_on_the_decoupled_machine():
    """At OVERLAP = 2 the listing has a column with the longest chain of compiler.bounds (each of
    its instructions with what it waits for on the one before), and notes the bounds against the
    run's cycles (the reference machine's); the serial machine's listing has neither."""
    graph, calibration, test = attention_step_network()
    decoupled = Params(OVERLAP=2)
    program = compile_graph(graph, calibration, params=decoupled)
    listing = section(account(program), "listing")
    assert listing.table.headers[-1] == "longest chain" and "OVERLAP = 2" in listing.lead
    marked = tuple((row[0], row[-1]) for row in listing.table.rows if row[-1])
    b = bounds(program.code, decoupled)
    assert marked == b.path and marked[0][1] == "front end" and len(marked) > 1
    cycles = Machine(decoupled).run(program.code, program.ext_image(test)).counters.cycles
    assert listing.table.rows[-1][2] == cycles
    assert f"the best is {b.best:,} ({b.limit}): the run's {cycles:,} cycles" in listing.notes[1]
    assert f"({len(b.path)} instructions, the column): {b.dependences:,} cycles" in listing.notes[2]
    serial = section(account(compile_graph(graph, calibration)), "listing")
    assert len(serial.table.headers) == 6 and len(serial.notes) == 1
