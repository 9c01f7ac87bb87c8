"""cosim/harness.py: the Verilog harness around ga2_simtop, generated from its ga2_ports.json."""

from __future__ import annotations

import re

from cosim import harness, verilog
from hw.top import TIMING_CHECK_DELAY
from sim.spec import DEFAULT


def _text() -> str:
    return harness.render(verilog.describe(verilog.fresh_verilog(params=DEFAULT)))


def test_the_steps_of_a_program_in_order():
    text = _text()
    loop = text[text.index("forever begin"):]
    steps = ["read_job", "reset_core", "load_memories", "load_through_port", "run_program", "dump_state"]
    assert [s for s in re.findall(r"^\s+(?:if \(port != 0\) )?(\w+);$", loop, re.M) if s in steps] == steps
    assert "      if (port != 0) load_through_port;" in loop
    for step in steps:
        assert f"task {step};" in text


def test_reset_checks_that_every_cleared_output_is_0_before_the_program_loads():
    """reset_core, after rst falls and before load_memories: one flag per output of CLEARED (the
    stop, busy, every counter: docs/GA2.md section 2), written as the state line's last field."""
    text = _text()
    reset = text[text.index("task reset_core;"):text.index("end endtask", text.index("task reset_core;"))]
    body = reset[reset.index("rst = 1'b0;"):]
    flags = re.findall(r"if \((\w+) !== 0\) unreset\[(\d+)\] = 1'b1;", body)
    assert flags == [(name, str(k)) for k, name in enumerate(harness.CLEARED)]
    assert "count_cycles" in harness.CLEARED and harness.STATE_FIELDS[-1] == "unreset"


def test_only_the_handshake_is_public_under_verilator():
    text = _text()
    public = re.findall(r"reg \[31:0\] (\w+) /\*verilator public_flat_rw\*/", text)
    assert tuple(public) == harness.PUBLIC == ("request", "served")
    assert text.count("verilator public") == 2


def test_every_memory_word_goes_through_a_file_or_is_zeroed():
    """Loaded and dumped through files; the instruction memory's stale rows zeroed; the
    scratchpad never written by the harness (reset does not clear it: docs/GA2.md section 2)."""
    description = verilog.describe(verilog.fresh_verilog(params=DEFAULT))
    text = harness.render(description, binary=False)
    for memory, direction in (("imem", "readmemh"), ("ext", "readmemh"), ("spad", "writememh"),
                              ("ext", "writememh")):
        for b, path in enumerate(description.memories[memory]["arrays"]):
            name = harness.bank_file(memory, b, dumped=direction == "writememh")
            assert re.search(rf'\${direction}\("{name}", dut\.{re.escape(path)}, 0, ', text), (memory, b)
    configure = text[text.index("task configure;"):]
    configure = configure[:configure.index("end endtask")]
    for path in description.memories["spad"]["arrays"]:            # zeroed once, at time 0
        assert len(re.findall(rf"dut\.{re.escape(path)}\[[^\]]*\] *=", text)) == 1
        assert f"dut.{path}[row] = 32'd0;" in configure
    assert text.index("    configure;") < text.index("forever begin")
    for path in description.memories["imem"]["arrays"]:
        assert f"dut.{path}[row] = 32'd0;" in text       # the rows of a longer program before


def test_ports_from_the_description():
    description = verilog.describe(verilog.fresh_verilog(params=DEFAULT))
    text = _text()
    for port in description.ports:
        assert f".{port['name']}(" in text
    assert ".imem_we(imem_we)" in text and ".imem_wdata(imem_wdata)" in text
    assert ".count_cycles(count_cycles)" in text and "wire [31:0] count_cycles;" in text
    state = re.search(r'\$fwrite\(fd, "[^"]*", (.*)\);', text)[1]
    assert tuple(state.split(", ")) == harness.STATE_FIELDS


def test_timing_fault_is_read_once_it_has_judged_the_done_cycle():
    """The harness waits hw.top.TIMING_CHECK_DELAY edges after done (cosim does not import
    Amaranth, so it keeps its own copy)."""
    assert harness.FAULT_SETTLE_CYCLES == TIMING_CHECK_DELAY
    assert f"repeat ({TIMING_CHECK_DELAY}) @(posedge clk);" in _text()


def test_binary_files_under_verilator():
    """Verilator (two-state) moves memories as binary files: $fread per bank, $fwrite %u per
    memory in word order (bank 0 .. LANES-1 of each row)."""
    assert harness.BINARY == {"icarus": False, "verilator": True}
    description = verilog.describe(verilog.fresh_verilog(params=DEFAULT))
    text = harness.render(description, binary=True)
    assert "$readmemh(\"ext" not in text and "$writememh" not in text
    for b, path in enumerate(description.memories["ext"]["arrays"]):
        assert f'fd = $fopen("ext{b}.bin", "rb");' in text
        assert f"got = $fread(dut.{path}, fd, 0, {description.memories['ext']['depth']});" in text
    for memory in harness.DUMPED:
        banks = ", ".join(f"dut.{p}[row]" for p in description.memories[memory]["arrays"])
        assert f'$fwrite(fd, "{"%u" * len(description.memories[memory]["arrays"])}", {banks});' in text


def test_a_program_through_the_port_is_written_word_by_word():
    """Word w goes to imem_waddr w with the harness's copy of bank w % 4, row w / 4; the write
    enable falls after the last word; the copies are loaded from the same files as the banks."""
    description = verilog.describe(verilog.fresh_verilog(params=DEFAULT))
    text = harness.render(description, binary=False)
    task = text[text.index("task load_through_port;"):]
    task = task[:task.index("end endtask")]
    banks = len(description.memories["imem"]["arrays"])
    assert f"for (word = 0; word < rows * {banks}; word = word + 1) begin" in task
    assert "imem_we = 1'b1;" in task and "imem_waddr = word;" in task
    for b in range(banks):
        assert f"{b}: imem_wdata = hostprog{b}[word / {banks}];" in task
        assert f'$readmemh("{harness.bank_file("imem", b)}", hostprog{b}, 0, rows - 1);' in text
    assert task.rstrip().endswith("@(negedge clk) imem_we = 1'b0;")
