"""The Verilog test harness around ``ga2_simtop``: the clock, the program's steps, the files.

The harness (module :data:`TOP`, generated from the simulation top's ports and memories in its
``ga2_ports.json``) instantiates ``ga2_simtop`` and runs the clock itself, so that the simulator
runs a whole program without waking Python. The test bench (:mod:`cosim.tb`) writes a program's
files into the simulator's working folder, raises ``request`` and waits for ``served`` to
follow it; the harness then, as named tasks:

1. ``read_job``: prog_len, the cycle limit, the rows, how to load the program and its name
   from :data:`JOB_FILE`; ``program_index`` counts the program (1, 2, .. in a launch) and
   ``program_name`` holds its name (ASCII, :data:`NAME_CHARS` characters): markers in a
   waveform;
2. ``reset_core``: ``rst`` high for :data:`RESET_CYCLES` rising edges (inputs change on falling
   edges; ``rst`` rises after time 0, as Icarus needs: flows/memmap.py), then ``unreset``
   records the outputs that reset left nonzero (:data:`CLEARED`);
3. ``load_memories``: the program and the external memory, one file per bank (:func:`bank_file`,
   :func:`binary_file`). The program goes into the instruction memory's arrays (a backdoor;
   the rows the previous program filled beyond this one's are zeroed, so the rest of the
   instruction memory is always zero, as at time 0), or, for a job loaded through the port,
   into the harness's own copy of the banks (``hostprog0`` ..);
4. ``load_through_port`` (a job loaded through the port only): the program word by word
   through the host's instruction-memory write port (``imem_we``, ``imem_waddr``,
   ``imem_wdata``), one word per cycle, as a user's SoC loads it (cycles no counter sees);
5. ``run_program``: ``start`` high for one cycle (its time, ``started``, goes to the state
   line), then the cycles until ``done`` or the cycle limit, whichever comes first
   (``program_running`` is high meanwhile), then :data:`FAULT_SETTLE_CYCLES` more, so that
   ``timing_fault`` has judged every cycle up to the one where ``done`` rose;
6. ``dump_state``: the scratchpad and the external memory (one file per bank with ``$writememh``,
   or one file per memory) and one line in :data:`STATE_FILE`: finished, cycles waited, error,
   error_code, error_pc, timing_fault, the counters (``sim.spec.ALL_COUNTERS``: hazard and port
   read 0 on a machine without OVERLAP), ``started``, ``drift`` and ``unreset``, in hex
   (``x`` or ``z`` where a bit is unknown: never guessed).

Between 5 and 6, ``watch_hold`` watches the outputs that must hold after a stop (:data:`HELD`)
for :data:`HOLD_CYCLES` more cycles: ``drift`` has bit i set when ``HELD[i]`` changed, so that
an output that is right in the cycle the harness reads it but moves after (a counter that does
not freeze, an ``error_pc`` that toggles) is a difference too.

The scratchpad is not touched between programs: reset does not clear it (docs/GA2.md section 2),
so a program starts from the words the previous one left, and the host gives the reference
machine that scratchpad (:attr:`cosim.jobs.RtlRun.spad_before`). Once, at time 0, ``configure``
sets every scratchpad word to 0, as the bitstream does after configuration: the Verilog that
Amaranth exports holds those initial values itself, but a netlist Yosys writes back may not
(cosim/mutants_rtl drops them to save Yosys minutes).

Memories move as text (``$readmemh``/``$writememh``) under Icarus and as binary files under
Verilator (:data:`BINARY`).

A harness for a waveform build (``engines`` given to :func:`render`) also derives each
engine's ``busy_<engine>`` (from the cycle of its ``start`` to the cycle of its ``done``,
read through hierarchical names): what :mod:`cosim.waves` puts in the GTKWave save file.

Under Verilator only ``request`` and ``served`` are public (``/*verilator public_flat_rw*/``):
the rest of the design is compiled without VPI access, which is what makes it fast.
"""

from __future__ import annotations

from collections.abc import Sequence

from flows.memmap import SIMTOP
from sim import spec

from .verilog import Description

TOP = "ga2_cosim"
"""The harness module, the simulator's top level."""
PERIOD_NS = 10
"""Clock period of the simulation (any value works: the design is cycle-based)."""
RESET_CYCLES = 2
"""Rising edges with ``rst`` high (flows/memmap.py: hold it for two clock edges)."""
FAULT_SETTLE_CYCLES = 2
"""Rising edges waited after ``done`` rose before anything is read: ``hw.top.TIMING_CHECK_DELAY``
(not imported: cosim's test bench stays free of Amaranth; a test compares them), so that
``timing_fault`` has judged every cycle up to the first one with ``done`` high."""
HOLD_CYCLES = 3
"""Cycles ``watch_hold`` watches the outputs after the stop (odd and even: a bit that toggles
every cycle shows in one)."""
OVERHEAD_CYCLES = RESET_CYCLES + FAULT_SETTLE_CYCLES + HOLD_CYCLES + 4
"""Cycles of a program's steps besides its run (reset, start, settle), for the test bench's
time-out."""
JOB_FILE = "job.hex"
"""Four words: prog_len (instructions), the cycle limit, the rows of each instruction-memory
bank the program fills (its files hold those rows only), and 1 to load the program through the
host's write port (0: by backdoor); then the program's name (:func:`name_words`)."""
NAME_CHARS = 32
"""Characters of a program's name the harness holds in ``program_name`` (a waveform shows it
as ASCII); a longer name is cut, a shorter one padded with spaces."""
JOB_WORDS = 4 + NAME_CHARS // 4
"""Words of :data:`JOB_FILE`."""
HOST_PORT = ("imem_we", "imem_waddr", "imem_wdata")
"""The simulation top's instruction-memory write port, which the harness drives for a job
loaded through the port."""
STATE_FILE = "state.out"
"""The stop, the counters and the cycles waited, one line (:data:`STATE_FIELDS`)."""
STATE_FIELDS = ("finished", "waited", "error", "error_code", "error_pc", "timing_fault",
                *(f"count_{name}" for name in spec.ALL_COUNTERS), "started", "drift", "unreset")
"""The fields of :data:`STATE_FILE`, in order (``started``: the simulation time, in ns, at which
``start`` rose; ``drift``: see :data:`HELD`; ``unreset``: see :data:`CLEARED`)."""
HELD = ("done", "busy", "error", "error_code", "error_pc", *(f"count_{name}" for name in spec.ALL_COUNTERS))
"""The outputs that hold from a stop until the next reset (hw/README.md: ``done`` and ``error``
stay high, the counters freeze, the machine is idle); bit i of ``drift`` is ``HELD[i]``."""
CLEARED = HELD
"""The outputs that reset clears (docs/GA2.md section 2: reset clears the registers and the
counters; no stop, no error, the machine idle): bit i of ``unreset`` is set when ``CLEARED[i]``
is not 0 in the cycle after ``rst`` falls, before the program is loaded and started."""
LOADED = ("imem", "ext")
DUMPED = ("spad", "ext")
PUBLIC = ("request", "served")
"""The harness's signals the test bench touches (public under Verilator)."""


BINARY = {"icarus": False, "verilator": True}
"""How a simulator's harness moves the memories. Binary (Verilator): ``$fread`` loads each bank
(big-endian words) and ``$fwrite`` ``%u`` dumps each memory in word order (native byte order),
two to three times faster than text, and Verilator is two-state, so there is no unknown bit to
keep. Text (Icarus): ``$readmemh``/``$writememh``, whose dumps carry x and z digits (Icarus reads
and writes text faster than binary, too)."""


def name_words(name: str) -> list[int]:
    """A program's name as the :data:`NAME_CHARS` characters ``program_name`` holds, four to a
    word, the first character in the top byte (ASCII; anything else becomes ``?``)."""
    text = name.encode("ascii", "replace")[:NAME_CHARS].ljust(NAME_CHARS, b" ")
    return [int.from_bytes(text[k:k + 4], "big") for k in range(0, NAME_CHARS, 4)]


def bank_file(memory: str, bank: int, dumped: bool = False) -> str:
    """The text file of one bank: ``ext0.hex`` loaded, ``ext0.out`` dumped."""
    return f"{memory}{bank}.{'out' if dumped else 'hex'}"


def binary_file(memory: str, bank: int | None = None) -> str:
    """A binary file: one bank loaded (``ext0.bin``), or a whole memory dumped (``ext.out.bin``)."""
    return f"{memory}.out.bin" if bank is None else f"{memory}{bank}.bin"


def _vector(width: int) -> str:
    return f"[{width - 1}:0] " if width > 1 else ""


def _instance(description: Description) -> list[str]:
    """``ga2_simtop dut (...)``: clock and harness registers in, tied-off inputs, wires out."""
    driven = {"clk", "rst", "start", "prog_len", *HOST_PORT}
    lines, connections = [], []
    for port in description.ports:
        name, width = port["name"], int(port["width"])
        vector = _vector(width)
        if port["dir"] == "output":
            lines.append(f"  wire {vector}{name};")
            connections.append(f".{name}({name})")
        elif name in driven:
            connections.append(f".{name}({name})")
        else:
            connections.append(f".{name}({width}'d0)")
    lines.append(f"  {SIMTOP} dut (")
    lines.append(",\n".join(f"    {c}" for c in connections))
    lines.append("  );")
    # a counter this machine does not have (hazard and port without OVERLAP) reads 0, as the
    # reference machine counts it there
    names = {port["name"] for port in description.ports}
    lines += [f"  wire [{spec.COUNTER_BITS - 1}:0] count_{name} = {spec.COUNTER_BITS}'d0;"
              for name in spec.ALL_COUNTERS if f"count_{name}" not in names]
    return lines



def _banks(description: Description, memory: str) -> list[str]:
    return [f"dut.{path}" for path in description.memories[memory]["arrays"]]


def _rows(description: Description, memory: str) -> int:
    return int(description.memories[memory]["depth"])


def _load_bank(memory: str, b: int, path: str, rows: str, binary: bool) -> list[str]:
    """Load rows 0 .. ``rows`` - 1 of one bank (explicit: Amaranth declares the arrays
    [depth-1:0], whose default direction the Verilog standards disagree on; Icarus warns on every
    ``$readmemh`` without them)."""
    if not binary:
        return [f'$readmemh("{bank_file(memory, b)}", {path}, 0, {rows} - 1);']
    return [f'fd = $fopen("{binary_file(memory, b)}", "rb");', f"got = $fread({path}, fd, 0, {rows});",
            "$fclose(fd);"]


def _host_copies(description: Description) -> list[str]:
    """The harness's copy of each instruction-memory bank, for a program loaded through the port."""
    return [f"hostprog{b}" for b in range(len(description.memories["imem"]["arrays"]))]


def _load(description: Description, binary: bool) -> list[str]:
    imem = _banks(description, "imem")
    return ["    if (port != 0) begin",
            "      if (rows > 0) begin",
            *[f"        {line}" for b, path in enumerate(_host_copies(description))
              for line in _load_bank("imem", b, path, "rows", binary)],
            "      end",
            "      if (rows > loaded) loaded = rows;",
            "    end else begin",
            "      if (rows > 0) begin",
            *[f"        {line}" for b, path in enumerate(imem)
              for line in _load_bank("imem", b, path, "rows", binary)],
            "      end",
            "      for (row = rows; row < loaded; row = row + 1) begin",
            *[f"        {path}[row] = 32'd0;" for path in imem],
            "      end",
            "      loaded = rows;",
            "    end",
            *[f"    {line}" for b, path in enumerate(_banks(description, "ext"))
              for line in _load_bank("ext", b, path, str(_rows(description, "ext")), binary)]]


def _dump(description: Description, binary: bool) -> list[str]:
    if not binary:
        return [f'    $writememh("{bank_file(m, b, True)}", {path}, 0, {_rows(description, m) - 1});'
                for m in DUMPED for b, path in enumerate(_banks(description, m))]
    out = []
    for m in DUMPED:
        banks = _banks(description, m)
        out += [f'    fd = $fopen("{binary_file(m)}", "wb");',
                f"    for (row = 0; row < {_rows(description, m)}; row = row + 1)",
                f'      $fwrite(fd, "{"%u" * len(banks)}", {", ".join(f"{p}[row]" for p in banks)});',
                "    $fclose(fd);"]
    return out


def _through_port(description: Description) -> list[str]:
    """Word w of the program (bank w % B, row w / B of the harness's copies) written through the
    port in the cycle after the falling edge that sets it; ``imem_we`` falls after the last."""
    copies = _host_copies(description)
    banks = len(copies)
    return [f"    for (word = 0; word < rows * {banks}; word = word + 1) begin",
            "      @(negedge clk);",
            "      imem_we = 1'b1;",
            "      imem_waddr = word;",
            f"      case (word % {banks})",
            *[f"        {b}: imem_wdata = {copy}[word / {banks}];" for b, copy in enumerate(copies)],
            "      endcase",
            "    end",
            "    @(negedge clk) imem_we = 1'b0;"]


def _tasks(description: Description, prog_len: int, binary: bool) -> list[str]:
    fields = ", ".join(STATE_FIELDS)
    return [
        "  task read_job; begin",
        f'    $readmemh("{JOB_FILE}", job);',
        f"    prog_len = job[0][{prog_len - 1}:0];",
        "    limit = job[1];",
        "    rows = job[2];",
        "    port = job[3];",
        f"    program_name = {{{', '.join(f'job[{k}]' for k in range(4, JOB_WORDS))}}};",
        "    program_index = program_index + 1;",
        "  end endtask",
        "  task reset_core; begin",
        "    @(negedge clk) rst = 1'b1;",
        f"    repeat ({RESET_CYCLES}) @(posedge clk);",
        "    @(negedge clk) rst = 1'b0;",
        "    unreset = 0;",
        *[f"    if ({name} !== 0) unreset[{k}] = 1'b1;" for k, name in enumerate(CLEARED)],
        "  end endtask",
        "  task load_memories; begin", *_load(description, binary), "  end endtask",
        "  task load_through_port; begin", *_through_port(description), "  end endtask",
        "  task configure; begin",
        f"    for (row = 0; row < {_rows(description, 'spad')}; row = row + 1) begin",
        *[f"      {path}[row] = 32'd0;" for path in _banks(description, "spad")],
        "    end",
        "  end endtask",
        "  task run_program; begin",
        "    started = $time;",
        "    program_running = 1'b1;",
        "    start = 1'b1;",
        "    @(negedge clk) start = 1'b0;",
        "    waited = 0;",
        "    while (done !== 1'b1 && waited < limit) begin",
        "      @(negedge clk);",
        "      waited = waited + 1;",
        "    end",
        "    finished = done === 1'b1;",
        "    program_running = 1'b0;",
        f"    repeat ({FAULT_SETTLE_CYCLES}) @(posedge clk);",
        "    @(negedge clk);",
        "  end endtask",
        "  task watch_hold; begin",
        "    drift = 0;",
        *[f"    held_{name} = {name};" for name in HELD],
        f"    repeat ({HOLD_CYCLES}) begin",
        "      @(negedge clk);",
        *[f"      if ({name} !== held_{name}) drift[{k}] = 1'b1;" for k, name in enumerate(HELD)],
        "    end",
        "  end endtask",
        "  task dump_state; begin", *_dump(description, binary),
        f'    fd = $fopen("{STATE_FILE}", "w");',
        f'    $fwrite(fd, "{" ".join(["%h"] * len(STATE_FIELDS))}\\n", {fields});',
        "    $fclose(fd);",
        "  end endtask",
    ]


def busy_signal(engine: str) -> str:
    """The harness's wire that is high while ``engine`` works (waveform builds)."""
    return f"busy_{engine}"


def _busy(engines: Sequence[str]) -> list[str]:
    """Per engine: a register set by the cycle of its ``start`` and cleared by that of its
    ``done``, and the wire ``busy_<engine>`` = start | that register (high from the start cycle
    to the done cycle, both included)."""
    out = []
    for e in engines:
        unit = f"dut.core.{e}"
        out += [f"  reg {busy_signal(e)}_q = 1'b0;",
                f"  always @(posedge clk) {busy_signal(e)}_q <= !rst && ({unit}.start || {busy_signal(e)}_q)"
                f" && !{unit}.done;",
                f"  wire {busy_signal(e)} = {unit}.start || {busy_signal(e)}_q;"]
    return out


def render(description: Description, binary: bool = False, engines: Sequence[str] = ()) -> str:
    """The harness's Verilog for a simulation top (its ``ga2_ports.json``: :class:`Description`),
    moving the memories as binary files or as text (:data:`BINARY`); ``engines`` (units of
    ``ga2_simtop.core`` with a ``start`` and a ``done``, :func:`cosim.waves.engines`): derive
    their ``busy_<engine>`` for a waveform."""
    width = {f"count_{name}": spec.COUNTER_BITS for name in spec.ALL_COUNTERS}
    width |= {p["name"]: int(p["width"]) for p in description.ports}
    prog_len, waddr = width["prog_len"], width["imem_waddr"]
    imem_rows = _rows(description, "imem")
    lines = [
        f"// {TOP}: cosim's test harness around {SIMTOP}, generated by cosim/harness.py from the",
        "// ports and memories in ga2_ports.json (do not edit). The steps of a program are the tasks",
        "// below; the test bench (cosim/tb.py) raises request, the harness sets served when done.",
        f"module {TOP};",
        "  reg clk = 1'b0;",
        f"  always #{PERIOD_NS // 2} clk = ~clk;",
        "  reg [31:0] request /*verilator public_flat_rw*/ = 32'd0;",
        "  reg [31:0] served /*verilator public_flat_rw*/ = 32'd0;",
        "  reg rst = 1'b0;",
        "  reg start = 1'b0;",
        f"  reg [{prog_len - 1}:0] prog_len = {prog_len}'d0;",
        "  reg imem_we = 1'b0;",
        f"  reg [{waddr - 1}:0] imem_waddr = {waddr}'d0;",
        "  reg [31:0] imem_wdata = 32'd0;",
        *[f"  reg [31:0] {copy} [0:{imem_rows - 1}];" for copy in _host_copies(description)],
        *_instance(description),
        f"  reg [31:0] job [0:{JOB_WORDS - 1}];",
        "  reg [31:0] program_index = 32'd0;",
        f"  reg [{8 * NAME_CHARS - 1}:0] program_name = {8 * NAME_CHARS}'d0;",
        "  reg program_running = 1'b0;",
        "  reg [63:0] started = 64'd0;",
        f"  reg [{len(HELD) - 1}:0] drift = {len(HELD)}'d0;",
        f"  reg [{len(CLEARED) - 1}:0] unreset = {len(CLEARED)}'d0;",
        *[f"  reg {_vector(width[name])}held_{name};" for name in HELD],
        *_busy(engines),
        "  reg finished = 1'b0;",
        "  integer limit = 0, waited = 0, rows = 0, port = 0, loaded = 0;",
        "  integer row = 0, word = 0, fd = 0, got = 0;",
        *_tasks(description, prog_len, binary),
        "  initial begin",
        "    configure;",
        "    forever begin",
        "      wait (request != served);",
        "      read_job;",
        "      reset_core;",
        "      load_memories;",
        "      if (port != 0) load_through_port;",
        "      run_program;",
        "      watch_hold;",
        "      dump_state;",
        "      served = request;",
        "    end",
        "  end",
        "endmodule",
    ]
    return "\n".join(lines) + "\n"
