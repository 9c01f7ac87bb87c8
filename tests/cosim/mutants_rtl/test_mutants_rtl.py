"""cosim/mutants_rtl (make mutants-rtl): Yosys's mutations of the hardware, graded end to end.

Three mutants of the cycle counter, made with Yosys's own ``mutate`` on the netlist's
count_cycles register (found by its name, not by a cell name, which changes with every export):
bit 3 tied to 1 (seed 100 catches it: its 263 cycles have bit 3 clear), bit 11 tied to 0 (the
seed programs all stop before 2,048 cycles, so only a program as long as the edge programs'
long regions shows it) and bit 25 tied to 0 (equivalent: no legal program counts 2**23
cycles). The rest checks the pieces: the listing's parsing, the draw's spread over every unit,
the score line, the plan of steps, the counter bound.
"""

from __future__ import annotations

import math
import re

import pytest

from cosim import edges, runner
from cosim.mutants_rtl import aimed, bus, draw, grade, report, verdicts, yosys
from sim import arith, spec
from sim.spec import DEFAULT

LINE = ("mutate -mode cnot1 -module ga2_simtop.core.vector -cell $or$x.v:12$3 -port B -portbit 5 -ctrlbit 2 "
        "-wire \\$7 -wirebit 5 -src x.v:12.3-12.9 -src /w/hw/vector.py:186")


def test_a_listing_line_parses_and_applies_without_its_notes():
    m = draw.parse(LINE)
    assert (m.mode, m.module, m.cell, m.port, m.portbit, m.ctrlbit, m.wire, m.wirebit) == (
        "cnot1", "ga2_simtop.core.vector", "$or$x.v:12$3", "B", 5, 2, "$7", 5)
    assert yosys.apply_command(LINE) == ("mutate -mode cnot1 -module ga2_simtop.core.vector "
                                         "-cell $or$x.v:12$3 -port B -portbit 5 -ctrlbit 2")
    assert m.where == "core.vector $or$3.B[5,2]"
    with pytest.raises(ValueError, match="missing portbit"):
        draw.parse("mutate -mode inv -module a -cell b -port A")


def test_only_all_zero_memory_inits_are_dropped():
    text = ("module m;\n  initial begin\n    mem[0] = 32'd0;\n    mem[1] = 32'd0;\n  end\n"
            "  initial begin\n    rom[0] = 32'd7;\n  end\nendmodule\n")
    out, n = yosys.strip_zero_inits(text)
    assert n == 1 and "mem[0]" not in out and "rom[0] = 32'd7;" in out


def test_the_plan_doubles_its_stress_chunks():
    assert [s.name for s in grade.plan("100-111", 140, 1)] == [
        "seeds 100-111", "faults", "stress 1..20", "stress 21..60", "stress 61..140"]
    assert grade.plan("", 5, 7, faults=False)[0].argv == ("stress", "--seed", "7", "--n", "5")


def test_score_line():
    assert report.Score(caught=47, equivalent=3, gaps=2, errors=0).line() == (
        "RTL mutants: 47 of 49 non-equivalent caught (95.9%); 3 equivalent; 0 tool errors")
    assert report.Score(1, 0, 0, 1).line().endswith("0 equivalent; 1 tool error")


def test_counters_reach_23_bits():
    # the longest instruction: LUT over the whole scratchpad, ceil(256 / 4) table beats, then
    # ceil(4096 / 4) beats + LUT_OVERHEAD
    longest = math.ceil(256 / 4) + math.ceil(DEFAULT.SPAD_WORDS / 4) + spec.LUT_OVERHEAD
    assert verdicts.longest_latency(DEFAULT) == longest == 1095
    assert (8 + 4096 * 1095 + 1).bit_length() == verdicts.counter_reach(DEFAULT) == 23


@pytest.fixture(scope="module")
def netlist():
    try:
        yosys.command()
    except yosys.YosysError as e:
        pytest.skip(str(e))
    verilog = runner.fresh_verilog(params=DEFAULT)
    net = yosys.prepare(verilog, runner.BUILD / "mutants-rtl")
    return verilog, net, draw.Netlist(net.json)


@pytest.fixture(scope="module")
def listed(netlist):
    _, net, graph = netlist
    return [graph.attribute(draw.parse(line)) for line in yosys.listing(net, 4000, 1)]


@pytest.mark.slow
def test_the_draw_takes_every_unit_and_depends_on_its_seed(listed):
    picked = draw.draw(listed, 48, 1)
    units, core = {m.unit for m in picked}, set(draw.UNITS) - set(bus.UNITS)   # the bus's: drawn_bus
    assert units == core, core ^ units
    assert all(sum(m.unit == u for m in picked) >= 48 // len(core) for u in units)
    assert len({m.key for m in picked}) == 48
    assert [m.line for m in draw.draw(listed, 48, 1)] == [m.line for m in picked]
    assert [m.line for m in draw.draw(listed, 48, 2)] != [m.line for m in picked]
    assert all(re.fullmatch(r"hw/\w+\.py:\d+", m.src) for m in picked)


@pytest.mark.slow
def test_constant_bits_are_recognised(netlist, listed):
    _, _, graph = netlist
    same = [m for m in listed if verdicts.unchanged_in(graph.modules, m)]
    assert same and all(m.mode in ("const0", "const1", "cnot0", "cnot1") for m in same)


def _counter_register(graph: draw.Netlist) -> str:
    """The flip-flop cell whose Q is count_cycles."""
    control = graph.modules["ga2_simtop.core.control"]
    bits = control["netnames"]["count_cycles"]["bits"]
    return next(name for name, cell in control["cells"].items()
                if cell["type"] in ("$dff", "$sdff") and cell["connections"]["Q"] == bits)


def _counter_mutation(graph: draw.Netlist, mode: str, bit: int) -> draw.Mutation:
    line = (f"mutate -mode {mode} -module ga2_simtop.core.control -cell {_counter_register(graph)} "
            f"-port Q -portbit {bit}")
    return graph.attribute(draw.parse(line))


@pytest.mark.rtl
@pytest.mark.slow
def test_three_mutants_end_to_end(netlist, icarus, tmp_path):
    verilog, net, graph = netlist
    seen = _counter_mutation(graph, "const1", 3)
    edge_only = _counter_mutation(graph, "const0", 11)
    never = _counter_mutation(graph, "const0", 25)
    assert seen.unit == edge_only.unit == "counters" and seen.signal == "count_cycles"
    paths = yosys.write_mutants(net, [("seen", seen.line), ("edge", edge_only.line)], verilog,
                                runner.COSIM_BUILD / "mutants-rtl-test")

    caught = grade.grade(paths["seen"], grade.plan("100", 0, 1, faults=False), icarus, timeout=600)
    assert caught.status == grade.CAUGHT and caught.step == "seeds 100", caught
    assert "counter cycles" in " ".join(caught.detail)

    # seeds 100-111 all stop before 2**11 cycles: bit 11 never rises there
    long_seed = next(s for s in range(2, 3000, 3)
                     if edges.program(s, DEFAULT).job.expected(DEFAULT).counters.cycles & (1 << 11))
    steps = [*grade.plan("100-111", 0, 1, faults=False), *grade.plan("", 1, long_seed, faults=False)]
    found = grade.grade(paths["edge"], steps, icarus, timeout=900)
    assert found.status == grade.CAUGHT and found.steps == [s.name for s in steps], found
    assert "(edge: " in " ".join(found.detail)

    verdict = verdicts.judge(net, graph.modules, never, "never", params=DEFAULT, proofs=False)
    assert verdict.equivalent and "never 1" in verdict.why
    for path in paths.values():
        grade.clean(path)


def _register_of(graph: draw.Netlist, module: str, signal: str) -> str:
    mod = graph.modules[module]
    bits = mod["netnames"][signal]["bits"]
    return next(name for name, cell in mod["cells"].items()
                if cell["type"] in ("$dff", "$sdff") and cell["connections"]["Q"] == bits)


@pytest.mark.slow
def test_a_note_covers_only_the_bits_out_of_reach(netlist):
    _, net, graph = netlist
    # the divider's 3*D: D <= 64 entries of EXP_LUT[0] = 65536 = 2**22, so 3*D < 2**24
    assert verdicts.DIVISOR_MAX == DEFAULT.SM_MAX_LEN * max(arith.EXP_LUT) == 1 << 22
    module = "ga2_simtop.core.softmax.div1"
    cell = _register_of(graph, module, "s0_x3")

    def verdict(ctrl: int) -> verdicts.Verdict:
        line = f"mutate -mode cnot1 -module {module} -cell {cell} -port Q -portbit 11 -ctrlbit {ctrl}"
        return verdicts.judge(net, graph.modules, graph.attribute(draw.parse(line)), "note",
                          params=DEFAULT, proofs=False)

    assert verdict(24).equivalent and "bits from 24 up are 0" in verdict(24).why
    assert not verdict(23).equivalent and verdict(23).why.startswith("no note")


def test_every_aim_names_one_line_of_its_file():
    """A refactor that moves or rewrites an aimed line fails here, with the aim to update."""
    names = [aim.name for aim in aimed.AIMS]
    assert len(set(names)) == len(names) >= 5
    for aim in aimed.AIMS:
        line = aim.line()
        assert aim.marker in (runner.ROOT / aim.file).read_text().splitlines()[line - 1]
    with pytest.raises(ValueError, match=r"update cosim/mutants_rtl/aimed\.py"):
        aimed.Aim("gone", "hw/vector.py", "no such text", "$and", "Y", "inv", "").line()


def test_the_aims_land_on_their_features(netlist):
    """Each aimed mutation sits on its line and kind of cell; the packed-LD multiplexer is the
    one selected by the LD's fmt field (a bit of ``fields``), not the write enable's."""
    _, net, graph = netlist
    mine = aimed.aims_for(DEFAULT)          # the netlist is the default machine's: no MMRQ path
    assert [aim.name for aim in aimed.AIMS if aim not in mine] == \
        ["MMRQ entries read", "MMRQ per channel", "MMRQ row address"]
    picked = aimed.pick_all(net, graph, 1, mine)
    assert [aim.name for aim, _ in picked] == [aim.name for aim in mine]
    for aim, m in picked:
        assert m.src == f"{aim.file}:{aim.line()}", aim.name
        assert m.cell.startswith(aim.cell + "$") and (m.port, m.mode) == (aim.port, aim.mode)
        assert not verdicts.unchanged_in(graph.modules, m)
    fmt = dict(picked)[next(a for a in aimed.AIMS if a.select)]
    assert "fields" in aimed._select_wires(graph.modules[fmt.module], fmt.cell)
    assert [m.line for _, m in aimed.pick_all(net, graph, 1, mine)] == [m.line for _, m in picked]


def _error_pc_hold(graph: draw.Netlist) -> str:
    """The multiplexer that keeps error_pc (A) unless a stop writes stop_pc (B)."""
    control = graph.modules["ga2_simtop.core.control"]
    nets = control["netnames"]
    return next(name for name, cell in control["cells"].items()
                if cell["type"] == "$mux" and cell["connections"]["A"] == nets["error_pc"]["bits"]
                and cell["connections"]["B"] == nets["stop_pc"]["bits"])


@pytest.mark.rtl
@pytest.mark.slow
def test_an_output_that_moves_after_the_stop_is_caught(netlist, icarus):
    """error_pc's hold path with bit 14 XORed with the inverse of bit 5: right in the cycle of the
    stop, then toggling every cycle while bit 5 is 0 (seed 100 stops at pc 19): the harness reads
    it an even number of cycles later, so only the hold watch (cosim/harness.py) sees it."""
    verilog, net, graph = netlist
    line = (f"mutate -mode cnot0 -module ga2_simtop.core.control -cell {_error_pc_hold(graph)} -port A "
            "-portbit 14 -ctrlbit 5")
    paths = yosys.write_mutants(net, [("toggle", line)], verilog, runner.COSIM_BUILD / "mutants-rtl-test")
    caught = grade.grade(paths["toggle"], grade.plan("100", 0, 1, faults=False), icarus, timeout=600)
    grade.clean(paths["toggle"])
    assert caught.status == grade.CAUGHT, caught
    assert "outputs that moved after the stop: error_pc" in " ".join(caught.detail), caught.detail


def test_notes_judge_survivors_by_where_they_are(netlist):
    """The stop's countdown tied to 0 (always 0 when STOP_CYCLES = 1) and a bank's read register
    changed while its port is idle are equivalent; error_pc's hold path is not (no note: the
    harness's hold watch catches it, test_an_output_that_moves_after_the_stop_is_caught)."""
    _, net, graph = netlist
    control = graph.modules["ga2_simtop.core.control"]
    stop_left = control["netnames"]["stop_left"]["bits"]
    dff = next(name for name, cell in control["cells"].items()
               if cell["type"] in ("$dff", "$sdff") and cell["connections"]["Q"] == stop_left)
    m = graph.attribute(draw.parse(f"mutate -mode const0 -module ga2_simtop.core.control -cell {dff} "
                                   "-port Q -portbit 0"))
    assert spec.STOP_CYCLES == 1
    verdict = verdicts.judge(net, graph.modules, m, "stop", params=DEFAULT, proofs=False)
    assert verdict.equivalent and verdict.method == "note" and "STOP_CYCLES = 1" in verdict.why
    toggle = graph.attribute(draw.parse(f"mutate -mode cnot0 -module ga2_simtop.core.control "
                                        f"-cell {_error_pc_hold(graph)} -port A -portbit 14 -ctrlbit 5"))
    assert not verdicts.judge(net, graph.modules, toggle, "toggle", params=DEFAULT, proofs=False).equivalent


def _judge(net, graph: draw.Netlist, line: str) -> verdicts.Verdict:
    return verdicts.judge(net, graph.modules, graph.attribute(draw.parse(line)), "note",
                          params=DEFAULT, proofs=False)


def _reset_mux(graph: draw.Netlist, module: str, signal: str) -> str:
    """The multiplexer on rst in front of a register's D (its B: the reset value)."""
    mod = graph.modules[module]
    d = mod["cells"][_register_of(graph, module, signal)]["connections"]["D"]
    return next(name for name, cell in mod["cells"].items() if cell["type"] == "$mux"
                and cell["connections"]["Y"] == d and "rst" in mod["netnames"]
                and cell["connections"]["S"] == mod["netnames"]["rst"]["bits"])


def test_a_bit_that_reaches_no_output_is_equivalent_and_a_read_one_is_not(netlist):
    """At LANES = 4 the vector unit reads lane 1's operand register a1 by its low byte only (VADD,
    AMAX) and UNPACK reads lane 0's whole word: a1's bit 21 reaches nothing, a1's bit 3 and a0's
    bit 21 do."""
    _, net, graph = netlist
    module = "ga2_simtop.core.vector"
    assert DEFAULT.LANES == 4

    def line(signal: str, bit: int) -> str:
        return (f"mutate -mode const1 -module {module} -cell {_register_of(graph, module, signal)} "
                f"-port Q -portbit {bit}")

    dead = _judge(net, graph, line("a1", 21))
    assert dead.equivalent and dead.method == "note" and "reaches no output port" in dead.why
    assert not _judge(net, graph, line("a1", 3)).equivalent
    assert not _judge(net, graph, line("a0", 21)).equivalent


def test_a_memory_write_data_while_not_written_is_equivalent(netlist):
    """Bank 1's write data multiplexer (en ? data : x): its idle input A is never written, its B
    (the data written) is."""
    _, net, graph = netlist
    spad = graph.modules["ga2_simtop.core.spad"]
    data = spad["cells"]["bank1"]["connections"]["WR_DATA"]
    mux = next(name for name, cell in spad["cells"].items()
               if cell["type"] == "$mux" and cell["connections"]["Y"] == data)
    line = f"mutate -mode inv -module ga2_simtop.core.spad -cell {mux} -port {{}} -portbit 12"
    idle = _judge(net, graph, line.format("A"))
    assert idle.equivalent and "write port is idle" in idle.why
    assert not _judge(net, graph, line.format("B")).equivalent


def test_the_divider_rest_registers_are_zero(netlist):
    """The softmax's dividend is e << 16, doubled for the rounding: the 10 bits of stage 3's rest
    are 0, so a cnot on them or const0 changes nothing; inverting one does."""
    _, net, graph = netlist
    module = "ga2_simtop.core.softmax.div2"
    cell = _register_of(graph, module, "s3_rest")
    assert len(graph.modules[module]["netnames"]["s3_rest"]["bits"]) == 10
    line = f"mutate -mode {{}} -module {module} -cell {cell} -port Q -portbit 0"
    zero = _judge(net, graph, line.format("cnot1") + " -ctrlbit 9")
    assert zero.equivalent and "dividend is e << 16" in zero.why
    assert not _judge(net, graph, line.format("inv")).equivalent


def test_the_checker_latency_registers_and_their_legal_bound(netlist):
    """The checker's registers holding LD's latency (found by elaborating the checker): a legal LD
    takes at most ceil(4096 / 4) + 2 = 1,026 cycles, so bit 11 of its latency is never 1 and bit
    10 may be."""
    _, net, graph = netlist
    assert verdicts.longest_latency_of("LD", params=DEFAULT) == 4096 // 4 + spec.LD_OVERHEAD == 1026
    # per output channel (pc = 1) the table's read adds RQ_PC_CYCLES (an upper bound: the table's
    # C >= LANES words leave len a little short of 4096 in a legal RQ)
    assert verdicts.longest_latency_of("RQ", params=DEFAULT) == \
        4096 // 4 + spec.RQ_OVERHEAD + spec.RQ_PC_CYCLES == 1036
    found = verdicts.checker_latencies(DEFAULT)
    assert {kind for kind, _ in found.values()} == {s.name for s in spec.instructions(DEFAULT) if s.counter}
    module = "ga2_simtop.core.control.checks"
    ld = [name for name, (kind, width) in found.items() if kind == "LD" and width > 12]
    assert ld, found
    cell = _register_of(graph, module, ld[0])

    def verdict(ctrl: int) -> verdicts.Verdict:
        return _judge(net, graph, f"mutate -mode cnot1 -module {module} -cell {cell} -port Q -portbit 12 "
                                  f"-ctrlbit {ctrl}")

    assert verdict(11).equivalent and "a legal LD, whose latency is at most 1026" in verdict(11).why
    assert not verdict(10).equivalent



@pytest.mark.parametrize("kind", ["LN", "MM"])
def test_the_chosen_latency_above_its_kind_s_longest_is_equivalent(netlist, kind):
    """The OR that picks the latency of the opcode's kind (hw/checker._select_value) reads each
    kind's latency through Mux(op == kind, latency, 0): a legal LN takes at most 2 * 256 +
    LN_OVERHEAD = 577 cycles (bits 0..9), a legal MM 77 (bits 0..6; Yosys keeps MM's opcode 3 as a
    2-bit constant in the comparison), so a cnot1 under the first bit above changes nothing, under
    the last bit within it may."""
    _, net, graph = netlist
    module = "ga2_simtop.core.control.checks"
    mod = graph.modules[module]
    assert verdicts.longest_latency_of("LN", DEFAULT) == 2 * 1024 // 4 + spec.LN_OVERHEAD == 577
    longest = verdicts.longest_latency_of(kind, DEFAULT)
    top = longest.bit_length()
    mine = {name for name, (k, _) in verdicts.checker_latencies(DEFAULT).items() if k == kind}
    mine_bits = [mod["netnames"][n]["bits"] for n in mine]
    gate = next(c for c in mod["cells"].values() if c["type"] == "$mux"
                and set(c["connections"]["A"]) == {"0"} and c["connections"]["B"] in mine_bits)
    y = gate["connections"]["Y"]
    name, port = next((n, port) for n, c in mod["cells"].items() if c["type"] == "$or"
                      for port, bits in c["connections"].items() if port in ("A", "B") and y[top] in bits)
    bits = mod["cells"][name]["connections"][port]

    def verdict(ctrl: int) -> verdicts.Verdict:
        return _judge(net, graph, f"mutate -mode cnot1 -module {module} -cell {name} -port {port} "
                                  f"-portbit 3 -ctrlbit {ctrl}")

    above = verdict(bits.index(y[top]))
    assert above.equivalent and f"past the longest legal {kind}'s {longest} cycles" in above.why
    assert not verdict(bits.index(y[top - 1])).equivalent


def test_the_notes_see_the_machine_graded(netlist, monkeypatch):
    """The checker's register names differ between machines (the same extent_r<k> holds another
    value at OVERLAP = 2), so judge hands each note the machine of the netlist it judges."""
    _, net, graph = netlist
    decoupled = spec.Params(OVERLAP=2)
    assert verdicts.checker_latencies(DEFAULT) != verdicts.checker_latencies(decoupled)
    seen = []
    monkeypatch.setattr(verdicts, "NOTES", (lambda at: seen.append(at.params),))
    m = graph.attribute(draw.parse(f"mutate -mode const1 -module ga2_simtop.core.mxu.array "
                                   f"-cell {_register_of(graph, 'ga2_simtop.core.mxu.array', 'rows1')} "
                                   "-port Q -portbit 0"))
    verdicts.judge_all(net, graph.modules, [("a", m)], params=decoupled, proofs=False)
    verdicts.judge(net, graph.modules, m, "b", params=DEFAULT, proofs=False)
    assert seen == [decoupled, DEFAULT]


def test_timing_fault_held_clear_is_equivalent_and_set_is_not(netlist):
    """The sticky self-check's clearing multiplexer (start & ~busy ? 0 : ...) with its select
    held at 1 only keeps timing_fault at 0, which the original always is (cosim demands it); the
    register's bit held at 1 is a difference on every run."""
    _, net, graph = netlist
    core = graph.modules["ga2_simtop.core"]
    q = core["netnames"][verdicts.TIMING_FAULT]["bits"]
    dff = next(c for c in core["cells"].values() if c["type"] == "$dff" and c["connections"]["Q"] == q)
    by_y = {tuple(c["connections"]["Y"]): n for n, c in core["cells"].items() if c["type"] == "$mux"}
    clear, todo = None, [tuple(dff["connections"]["D"])]
    while todo and clear is None:          # back from D through the multiplexers to the one taking 0
        name = by_y.get(todo.pop())
        if name is None:
            continue
        conn = core["cells"][name]["connections"]
        if set(conn["B"]) == {"0"} and "rst" not in [n for n, net_ in core["netnames"].items()
                                                    if net_["bits"] == conn["S"]]:
            clear = name
        todo += [tuple(conn["A"]), tuple(conn["B"])]
    assert clear is not None
    held = _judge(net, graph, f"mutate -mode const1 -module ga2_simtop.core -cell {clear} -port S -portbit 0")
    assert held.equivalent and "timing_fault" in held.why
    register = _register_of(graph, "ga2_simtop.core", verdicts.TIMING_FAULT)
    assert not _judge(net, graph, f"mutate -mode const1 -module ga2_simtop.core -cell {register} -port Q "
                                  "-portbit 0").equivalent


def test_reset_values_overwritten_before_any_read(netlist):
    """lut_out<k> and the DMA's row_addr load every cycle, acc_old<j> before each read: their reset
    values (B of the multiplexer on rst) are equivalent (row_addr's bit 15: m15 of the OVERLAP = 2
    draw of a netlist not kept, 2026-12-07; LN's ln_y3, bit 14: m27 of the late evening's draw);
    the value they load (A) is not."""
    _, net, graph = netlist
    for module, signal in (("ga2_simtop.core.lut", "lut_out2"), ("ga2_simtop.core.mxu", "acc_old3"),
                           ("ga2_simtop.core.dma", "row_addr"), ("ga2_simtop.core.layernorm", "ln_y3")):
        mux = _reset_mux(graph, module, signal)
        reset = _judge(net, graph, f"mutate -mode const1 -module {module} -cell {mux} -port B -portbit 9")
        assert reset.equivalent and f"the value {signal} takes during reset" in reset.why
        assert not _judge(net, graph, f"mutate -mode const1 -module {module} -cell {mux} -port A "
                                      "-portbit 9").equivalent


def _write_address(graph: draw.Netlist, module: str) -> str:
    """write_beats's address register in ``module`` (found by its source line in hw/lanes.py)."""
    lines = (runner.ROOT / "hw/lanes.py").read_text().splitlines()
    line = next(i + 1 for i, text in enumerate(lines) if verdicts.WRITE_ADDRESS_LINE in text)
    return next(name for name, net in graph.modules[module]["netnames"].items()
                if net.get("attributes", {}).get("src", "").endswith(f"hw/lanes.py:{line}"))


def test_the_write_address_reset_value_is_never_read(netlist):
    """write_beats's address (the LUT's and LN's) is loaded with dst at each start and read only
    through Mux(write, addr, 0) and its own increment: its reset value (B of the multiplexer on
    rst) is equivalent (m24 of the draw of 2026-12-06), the value it loads (A) is not, and a
    register read without a gate (the DMA's spad_q) fails the netlist check."""
    _, net, graph = netlist
    for module in ("ga2_simtop.core.lut", "ga2_simtop.core.layernorm"):
        signal = _write_address(graph, module)
        mux = _reset_mux(graph, module, signal)
        reset = _judge(net, graph, f"mutate -mode inv -module {module} -cell {mux} -port B -portbit 4")
        assert reset.equivalent and "write address" in reset.why and signal in reset.why
        assert not _judge(net, graph, f"mutate -mode inv -module {module} -cell {mux} -port A "
                                      "-portbit 4").equivalent
    dma = graph.modules["ga2_simtop.core.dma"]
    at = verdicts.Site(draw.parse(f"mutate -mode inv -module ga2_simtop.core.dma -cell "
                                  f"{_reset_mux(graph, 'ga2_simtop.core.dma', 'spad_q')} -port B -portbit 4"),
                       "$mux", (), DEFAULT, dma)
    assert verdicts._read_only_gated(at, "spad_q") is False


def test_the_dma_scratchpad_address_stays_below_2_to_13(netlist):
    """The DMA's spad_q is a beat's scratchpad address plus LANES, at most 4095 + 4 = 4099 on a
    legal program: bits 13..15 are 0 (m13 of the draw of 2026-12-06 forced bit 15 to 0), bit 12
    is not (an access ending at 4096 leaves 4096..4099 there)."""
    _, net, graph = netlist
    assert verdicts.dma_spad_bound(DEFAULT) == 4099
    module = "ga2_simtop.core.dma"
    mux = _reset_mux(graph, module, "spad_q")
    line = f"mutate -module {module} -cell {mux} -port Y"
    high = _judge(net, graph, f"{line} -mode const0 -portbit 15")
    assert high.equivalent and "spad_q" in high.why and "bits from 13 up are 0" in high.why
    assert _judge(net, graph, f"{line} -mode cnot1 -portbit 2 -ctrlbit 13").equivalent
    assert not _judge(net, graph, f"{line} -mode const0 -portbit 12").equivalent
    assert not _judge(net, graph, f"{line} -mode cnot1 -portbit 2 -ctrlbit 12").equivalent


def test_a_reserved_instruction_bit_reaches_nothing_across_the_hierarchy(netlist):
    """Bit 127 of the checker's instruction register lies in no field of any instruction (the
    machine ignores it: hw/isa.py's _reserved): followed from the checker into the control unit
    and every unit's fields it reaches no output of the core. Bit 5 (every kind's dst) does."""
    _, net, graph = netlist
    module = "ga2_simtop.core.control.checks"
    used = max(lo + width for ispec in spec.instructions(DEFAULT)
               for lo, width in ispec.field_offsets().values())
    assert used <= 127 < spec.INSTR_BITS
    register = _register_of(graph, module, "r_instr")
    line = f"mutate -mode const1 -module {module} -cell {register} -port Q -portbit {{}}"
    dead = _judge(net, graph, line.format(127))
    assert dead.equivalent and dead.method == "note" and "across module boundaries" in dead.why
    assert not _judge(net, graph, line.format(5)).equivalent


def test_the_array_accumulator_hold_input_is_never_read(netlist):
    """The multiplexer that loads acc[0][0] when p_step0 (hw/systolic.py): its hold input A is
    never read (the steps of an MM are consecutive, the first loads the product alone, acc is read
    in the cycle after a row's last step); its input B (the sum) is."""
    _, net, graph = netlist
    module = "ga2_simtop.core.mxu.array"
    mod = graph.modules[module]
    step0, acc = mod["netnames"]["p_step0"]["bits"], mod["netnames"]["acc"]["bits"]
    mux = next(name for name, cell in mod["cells"].items() if cell["type"] == "$mux"
               and cell["connections"]["S"] == step0 and cell["connections"]["A"][0] == acc[0])
    line = f"mutate -mode cnot0 -module {module} -cell {mux} -port {{}} -portbit 7 -ctrlbit 11"
    hold = _judge(net, graph, line.format("A"))
    assert hold.equivalent and "never read nor added to" in hold.why
    assert not _judge(net, graph, line.format("B")).equivalent


def test_the_lowest_levels_of_the_layernorm_count_only_matter_when_every_x_is_the_mean(netlist):
    """hw/layernorm.leading_zero_pairs: a level reading only D's bits 0..3 is taken when D < 16,
    which needs N*S2 - S1^2 = 0 (D >= 256 otherwise: the row (0, 1) with eps = 0 has D = 256), and
    then every y_i is 0 for any k; a level reading D up to bit 11 (taken for D < 4096) is not
    judged equivalent."""
    _, net, graph = netlist
    assert arith.ln_solve([0, 1], 0).d == verdicts.LN_SMALL_D
    assert arith.layernorm_fixed([-7] * 5, 15) == [0] * 5
    module = "ga2_simtop.core.layernorm"
    mod = graph.modules[module]
    levels = {}
    for name in (n for n, cell in mod["cells"].items() if cell["type"] == "$mux"):
        line = f"mutate -mode const0 -module {module} -cell {name} -port Y -portbit 0"
        m = graph.attribute(draw.parse(line))
        at = verdicts.site(graph.modules, m, DEFAULT)
        if verdicts.LN_COUNT_LINE in verdicts._source_line(m):
            top = max(b for reg, b in verdicts._cone_back(at, name) if reg == "d")
            levels.setdefault(top, name)
    assert {3, 11} <= set(levels)
    line = f"mutate -mode const0 -module {module} -cell {{}} -port Y -portbit 0"
    low = _judge(net, graph, line.format(levels[3]))
    assert low.equivalent and "D < 16" in low.why
    assert not _judge(net, graph, line.format(levels[11])).equivalent


@pytest.fixture(scope="module")
def decoupled_netlist(netlist):
    """The OVERLAP = 2 machine's netlist, prepared where make mutants-rtl PARAMS="OVERLAP=2" keeps
    it (``netlist`` first: it skips without Yosys)."""
    decoupled = spec.Params(OVERLAP=2)
    verilog = runner.fresh_verilog(params=decoupled)
    net = yosys.prepare(verilog, runner.BUILD / "machines" / "OVERLAP2" / "mutants-rtl")
    return net, draw.Netlist(net.json), decoupled


@pytest.mark.slow  # the OVERLAP = 2 netlist: a CI step of its own, after its cosim
def test_a_station_comparison_on_a_read_region_its_engine_never_fills_is_equivalent(decoupled_netlist):
    """hw/station._pairs: a write after read is (head writes) & r<k>v & (the two bounds of the
    overlap). The DMA's instructions read one scratchpad region at most (ST's source, GATHER's
    row number), the vector and special-function units' two, the matrix unit's three (MMRQ), so
    the bounds against read regions 1 and 2 of the DMA's entries and region 2 of the vector and
    special-function units' ones never count: 4 such (engine, region) pairs, 4 entries each (the
    running one and STATION_SLOTS - 1 waiting), 2 front-end slots, 2 bounds = 64 comparisons, and
    no other (m38 of the OVERLAP = 2 draw of 2026-12-07 inverted the bound reading wvpu_1.r2s)."""
    net, graph, decoupled = decoupled_netlist
    assert {e: verdicts.read_slots_of(e, decoupled) for e in spec.ENGINES} == \
        {"dma": 1, "mxu": 3, "vpu": 2, "sfu": 2}
    module = "ga2_simtop.core.control"
    mod = graph.modules[module]
    judged = {}
    for name, cell in mod["cells"].items():
        if cell["type"] != "$lt":
            continue
        line = f"mutate -mode inv -module {module} -cell {name} -port Y -portbit 0"
        m = graph.attribute(draw.parse(line))
        if verdicts.STATION_OVERLAP_LINE not in verdicts._source_line(m):
            continue
        at = verdicts.site(graph.modules, m, decoupled)
        entries = {n for b in (*cell["connections"]["A"], *cell["connections"]["B"])
                   for n in verdicts.wiring(mod).names.get(b, ())
                   if re.fullmatch(r"(w[a-z]+_\d|r_[a-z]+)\.\w+", n)}
        judged[name] = (entries, verdicts._station_unused_read_slot(at))
    equivalent = {name: entries for name, (entries, why) in judged.items() if why}
    assert len(equivalent) == 4 * spec.STATION_SLOTS * 2 * 2
    read = {field for entries in equivalent.values() for field in entries}
    assert {f.split(".")[1] for f in read} == {"r1s", "r1e", "r2s", "r2e"}
    assert all(f.split(".")[1][1] == "2" or f.startswith(("wdma", "r_dma")) for f in read)
    assert not any(why for entries, why in judged.values() if entries & {"wmxu_1.r2s", "wvpu_1.r1s"})
    m38 = next(name for name, (entries, _) in judged.items() if "wvpu_1.r2s" in entries)
    line = f"mutate -mode inv -module {module} -cell {m38} -port Y -portbit 0"
    verdict = verdicts.judge(net, graph.modules, graph.attribute(draw.parse(line)), "note",
                             params=decoupled, proofs=False)
    assert verdict.equivalent and verdict.method == "note" and "wvpu_1.r2v" in verdict.why


def test_more_loads_of_a_lane_s_copy_of_the_layernorm_scale_are_equivalent(netlist):
    """hw/layernorm.py _scale: lane i's copy of A = N*R loads when sums_at or on its pass 2 beats
    (the same A: an enable of its own, so that Yosys keeps the copies apart). Its enable forced to
    1, or its pass 2 term to 0, changes no result (m27 of the OVERLAP = 2 draw of 2026-12-07 forced
    lane 2's pass 2 term to 1); its sums_at term forced to 0 is not judged equivalent."""
    _, net, graph = netlist
    module = "ga2_simtop.core.layernorm"
    mod = graph.modules[module]
    found = {}
    for name, cell in mod["cells"].items():
        if cell["type"] not in ("$or", "$and"):
            continue
        line = f"mutate -mode const1 -module {module} -cell {name} -port Y -portbit 0"
        m = graph.attribute(draw.parse(line))
        if verdicts.LN_A_LOAD_LINE in verdicts._source_line(m):
            found.setdefault(cell["type"], []).append((name, cell))
    assert len(found["$or"]) == len(found["$and"]) == DEFAULT.LANES
    line = f"mutate -module {module} -cell {{}} -mode {{}} -port {{}} -portbit 0"
    names = verdicts.wiring(mod).names
    for name, cell in found["$or"]:
        ports = {("sums_at" if any(n.startswith("ln_scale_sum") for n in names[cell["connections"][port][0]])
                  else "pass 2"): port for port in ("A", "B")}
        assert set(ports) == {"sums_at", "pass 2"}
        for mode, port in (("const1", "Y"), ("const1", ports["sums_at"]), ("const0", ports["pass 2"])):
            verdict = _judge(net, graph, line.format(name, mode, port))
            assert verdict.equivalent and verdict.method == "note" and "sums_at (t0 + 53)" in verdict.why
        assert not _judge(net, graph, line.format(name, "const0", ports["sums_at"])).equivalent
        assert not _judge(net, graph, line.format(name, "const0", "Y")).equivalent
    for name, _ in found["$and"]:
        assert _judge(net, graph, line.format(name, "const0", "Y")).equivalent


def test_a_countdown_that_reaches_zero_in_the_same_cycle_is_equivalent(netlist):
    """hw/layernorm.py _reads: the gap between LN's passes counts down from 55 and pass 2 starts
    at 0. m25 of the OVERLAP = 2 draw of 2026-12-07 flipped bit 4 of its next value when bit 1 was
    1: 55 -> 39 -> 54 -> 53 -> 52 -> 35 -> ... -> 2 -> 1 -> 0, by hand the same 55 cycles (each
    value with bit 1 set has bit 4 flipped, and stays nonzero). Not equivalent: bit 4 inverted
    (0 becomes 16, so the count does not stay at 0), bit 0 flipped when bit 1 is (55 -> 54 -> 53
    -> 52 -> 50: 0 after 41 cycles), bit 5 forced to 1 (never 0)."""
    _, net, graph = netlist
    module = "ga2_simtop.core.layernorm"
    cell = _register_cell(graph, module, "gap")
    line = f"mutate -mode {{}} -module {module} -cell {cell} -port D -portbit {{}}{{}}"
    m25 = graph.attribute(draw.parse(line.format("cnot1", 4, " -ctrlbit 1")))
    steps = verdicts._countdown_steps(m25, spec.LN_GAP_CYCLES, 57)
    assert [u for _, u in steps[:6]] == [39, 54, 53, 52, 35, 50]
    assert [k for k, (_, u) in enumerate(steps) if u == 0] == [55, 56]
    verdict = _judge(net, graph, line.format("cnot1", 4, " -ctrlbit 1"))
    assert verdict.equivalent and verdict.method == "note" and "loaded into it (0, 55)" in verdict.why
    for mode, bit, ctrl in (("inv", 4, ""), ("cnot1", 0, " -ctrlbit 1"), ("const1", 5, "")):
        assert not _judge(net, graph, line.format(mode, bit, ctrl)).equivalent, (mode, bit)


def _muxes_reading(graph: draw.Netlist, module: str, signal: str, port: str) -> list[str]:
    """The multiplexers whose input ``port`` is register ``signal``'s whole Q."""
    mod = graph.modules[module]
    bits = mod["netnames"][signal]["bits"]
    return [name for name, cell in mod["cells"].items()
            if cell["type"] == "$mux" and cell["connections"][port] == bits]


def test_a_register_read_only_the_cycle_after_its_load_keeps_no_held_value_that_matters(netlist):
    """hw/lut.py: a table beat is registered in tbl_data when back.table, and written to the
    table memory the next cycle, on tbl_write (a register of back.table), through a multiplexer
    that gives x otherwise; so tbl_data's hold input is never read (m31 of the default machine's
    draw of 2026-12-07 forced its bit 8 to 0). The LUT's tbl_addr, read while in_table (not a
    register of its load's select), is not judged by this note."""
    _, net, graph = netlist
    module = "ga2_simtop.core.lut"
    [hold] = [name for name in _muxes_reading(graph, module, "tbl_data", "A")
              if "lut_back_2.table" in verdicts.wiring(graph.modules[module]).names.get(
                  graph.modules[module]["cells"][name]["connections"]["S"][0], [])]
    for mode, bit in (("const0", 8), ("const1", 0), ("inv", 31)):
        line = f"mutate -mode {mode} -module {module} -cell {hold} -port A -portbit {bit}"
        verdict = _judge(net, graph, line)
        assert verdict.equivalent and verdict.method == "note" and "tbl_data" in verdict.why, mode
    for other in _muxes_reading(graph, module, "tbl_addr", "A"):
        at = verdicts.site(graph.modules, graph.attribute(draw.parse(
            f"mutate -mode inv -module {module} -cell {other} -port A -portbit 0")), DEFAULT)
        assert verdicts._read_only_after_load(at) is None


def test_a_checker_stage_register_s_value_in_a_flush_cycle_is_never_read(netlist):
    """hw/checker.py _stage: a flush clears the stage's valid and holds its other registers; only
    a load sets valid again, loading them too, and the core reads the checker only with
    out_valid. c_ext_range_LD's flush hold inverted (m08 of the default machine's draw of
    2026-12-07) is equivalent; its load input, and the valid bits' flush inputs (a constant 0),
    are not judged by this note."""
    _, net, graph = netlist
    module = verdicts.CHECKS
    mod = graph.modules[module]
    names = verdicts.wiring(mod).names
    [hold] = [n for n in _muxes_reading(graph, module, "c_ext_range_LD", "B")
              if "flush" in names.get(mod["cells"][n]["connections"]["S"][0], [])]
    verdict = _judge(net, graph, f"mutate -mode inv -module {module} -cell {hold} -port B -portbit 0")
    assert verdict.equivalent and verdict.method == "note" and "c_valid" in verdict.why
    at = verdicts.site(graph.modules, graph.attribute(draw.parse(
        f"mutate -mode inv -module {module} -cell {hold} -port A -portbit 0")), DEFAULT)
    assert verdicts._checker_flushed_stage(at) is None
    valid_flush = [n for n, c in mod["cells"].items()
                   if c["type"] == "$mux" and c["connections"]["B"] == ["0"]
                   and "flush" in names.get(c["connections"]["S"][0], [])]
    from hw import checker
    assert len(valid_flush) == 2 + checker.END_STAGES          # r_valid, e<k>_valid, c_valid
    for name in valid_flush:
        at = verdicts.site(graph.modules, graph.attribute(draw.parse(
            f"mutate -mode inv -module {module} -cell {name} -port B -portbit 0")), DEFAULT)
        assert verdicts._checker_flushed_stage(at) is None


def test_an_and_s_bits_above_its_narrow_unsigned_operand_are_zero(netlist):
    """hw/lanes.carry_save in the softmax's sum tree: the carries of the last level AND a 22-bit
    partial sum with e_3 (17 bits: e <= 65536), which Yosys zero-extends, so the carry's bits 17
    and up are 0 (m26 of the default machine's draw of 2026-12-07 forced bit 18 to 0); bit 16,
    within both operands, is not judged by this note, nor is const1 on bit 18."""
    _, net, graph = netlist
    module = "ga2_simtop.core.softmax"
    mod = graph.modules[module]
    ands = [name for name, c in mod["cells"].items() if c["type"] == "$and"
            and {int(c["parameters"]["A_WIDTH"], 2), int(c["parameters"]["B_WIDTH"], 2)} == {22, 17}]
    assert ands
    line = f"mutate -mode {{}} -module {module} -cell {{}} -port Y -portbit {{}}"
    for name in ands:
        for bit in (17, 18, 21):
            verdict = _judge(net, graph, line.format("const0", name, bit))
            assert verdict.equivalent and "17 bits" in verdict.why, (name, bit)
        for mode, bit in (("const0", 16), ("const1", 18)):
            m = graph.attribute(draw.parse(line.format(mode, name, bit)))
            assert verdicts._and_above_narrow_operand(verdicts.site(graph.modules, m, DEFAULT)) is None


def test_the_mm_old_row_register_s_hold_is_never_read(netlist):
    """hw/mxu.py _read_old_rows: MM acc = 1 reads acc_old<j> only the cycle after each load (m35
    of the default machine's draw of 2026-12-07 XORed its hold's bit 2 with bit 22). Checked by
    hand on 2026-12-07: with the hold replaced by 0x5A5A5A5A, tests/hw/test_mxu.py (six acc = 1
    cases) and stress 1..60 on Icarus (MM acc = 1 among the cases) pass. Its load input and its
    reset value are not judged by this note."""
    _, net, graph = netlist
    module = "ga2_simtop.core.mxu"
    for j in range(DEFAULT.T):
        [hold] = _muxes_reading(graph, module, f"acc_old{j}", "A")
        verdict = _judge(net, graph, f"mutate -mode cnot1 -module {module} -cell {hold} -port A -portbit 2 "
                                     "-ctrlbit 22")
        assert verdict.equivalent and f"acc_old{j}" in verdict.why
        for port in ("B", "S"):
            line = f"mutate -mode inv -module {module} -cell {hold} -port {port} -portbit 0"
            m = graph.attribute(draw.parse(line))
            assert verdicts._mxu_old_row_hold(verdicts.site(graph.modules, m, DEFAULT)) is None


def _register_cell(graph: draw.Netlist, module: str, signal: str) -> str:
    mod = graph.modules[module]
    bits = mod["netnames"][signal]["bits"]
    return next(name for name, cell in mod["cells"].items()
                if cell["type"] in ("$dff", "$sdff") and cell["connections"]["Q"] == bits)


@pytest.mark.slow  # the OVERLAP = 2 netlist: a CI step of its own, after its cosim
def test_an_engine_s_busy_counter_has_a_bound_of_its_own(decoupled_netlist):
    """count_mxu counts the matrix unit's busy cycles: at most 4,096 instructions of MMRQ's 84
    cycles, 344,064 < 2**19 (m01 of the OVERLAP = 2 draw of a netlist not kept, 2026-12-07, flipped
    its bit 25 when bit 20 was 1). Bit 18 is within reach; the DMA's (its LDs' spans grow) and the
    cycle counter keep the bound of the whole run, 23 bits."""
    net, graph, decoupled = decoupled_netlist
    longest = verdicts.longest_latency_of
    assert longest("MMRQ", decoupled) == 84 >= longest("MM", decoupled)
    assert verdicts.engine_counter_reach("mxu", decoupled) == (4096 * 84).bit_length() == 19
    assert verdicts.engine_counter_reach("dma", decoupled) is None
    module = "ga2_simtop.core.control"

    def judged(signal, mode, bit, ctrl=""):
        line = (f"mutate -mode {mode} -module {module} -cell {_register_cell(graph, module, signal)} "
                f"-port Q -portbit {bit}{ctrl}")
        m = graph.attribute(draw.parse(line))
        return verdicts.judge(net, graph.modules, m, "n", params=decoupled, proofs=False)

    far = judged("count_mxu", "cnot1", 25, " -ctrlbit 20")
    assert far.equivalent and "count_mxu" in far.why and "2**19, so its bit 20 is 0" in far.why
    assert judged("count_mxu", "const0", 19).equivalent
    assert not judged("count_mxu", "const0", 18).equivalent
    assert not judged("count_dma", "const0", 19).equivalent
    assert not judged("count_cycles", "const0", 19).equivalent
    assert judged("count_cycles", "const0", 23).equivalent
    assert not judged("count_hazard", "const0", 23).equivalent


@pytest.mark.slow  # the OVERLAP = 2 netlist: a CI step of its own, after its cosim
def test_a_unit_that_is_its_whole_engine_takes_whatever_its_engine_issues(decoupled_netlist):
    """At OVERLAP = 2 the matrix unit executes both of its engine's instructions (MM, MMRQ) and
    the DMA unit all three of its engine's: a compare of their take forced to 1 is equivalent
    (m24 of the OVERLAP = 2 draw of a netlist not kept, 2026-12-07: mxu_take's MM compare); the vector
    engine's units (requant, vector, lut) share it, so theirs are not."""
    net, graph, decoupled = decoupled_netlist
    module = "ga2_simtop.core"
    verdict = {}
    for name, cell in graph.modules[module]["cells"].items():
        if cell["type"] != "$eq":
            continue
        line = f"mutate -mode const1 -module {module} -cell {name} -port Y -portbit 0"
        m = graph.attribute(draw.parse(line))
        if verdicts.OPCODE_COMPARE_LINE in verdicts._source_line(m):
            verdict.setdefault(m.signal, []).append(
                verdicts.judge(net, graph.modules, m, "n", params=decoupled, proofs=False))
    assert {"mxu_take", "dma_take", "requant_take", "vector_take", "lut_take"} <= set(verdict)
    assert len(verdict["mxu_take"]) == 2 and len(verdict["dma_take"]) == 3
    for signal, found in verdict.items():
        sole = signal in ("mxu_take", "dma_take")
        assert all(v.equivalent == sole for v in found), signal
    assert "MM, MMRQ" in verdict["mxu_take"][0].why
