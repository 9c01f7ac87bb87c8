"""cosim/verilog.py: the default Verilog is fresh by content hash, and cosim reads its parameters,
ports and memories from the ga2_ports.json beside it (and refuses a Verilog without one)."""

from __future__ import annotations

import json
import os
import sys

import pytest

from cosim import verilog
from cosim.errors import CosimError
from flows.memmap import PORTS_JSON, SIMTOP
from sim.spec import DEFAULT, Params
from tests.readonly import read_only, run_unprivileged


def _tree(root):
    for folder in verilog.GENERATOR_SOURCES:
        (root / folder).mkdir(parents=True)
        (root / folder / "a.py").write_text(f"# {folder}\n")
    return root


def test_the_sources_digest_follows_content_not_file_times(tmp_path):
    root = _tree(tmp_path)
    before = verilog.sources_digest(root)
    os.utime(root / "hw" / "a.py", (1, 1))                 # touched: same content
    assert verilog.sources_digest(root) == before
    (root / "hw" / "a.py").write_text("# hw, changed\n")
    changed = verilog.sources_digest(root)
    assert changed != before
    (root / "sim" / "b.py").write_text("")                  # a new file counts too
    assert verilog.sources_digest(root) != changed


@pytest.fixture
def build_dir(tmp_path, monkeypatch):
    """verilog.py's paths moved into tmp_path, with an exported Verilog recorded as fresh."""
    root = _tree(tmp_path / "root")
    build = tmp_path / "build"
    build.mkdir()
    monkeypatch.setattr(verilog, "ROOT", root)
    monkeypatch.setattr(verilog, "BUILD", build)
    monkeypatch.setattr(verilog, "VERILOG", build / f"{SIMTOP}.v")
    monkeypatch.setattr(verilog, "STAMP", build / "cosim" / "verilog.json")
    (build / f"{SIMTOP}.v").write_text("module ga2_simtop; endmodule\n")
    (build / PORTS_JSON).write_text("{}")
    verilog.STAMP.parent.mkdir()
    verilog.STAMP.write_text(json.dumps(verilog._record()))
    return root, build


def test_fresh_unless_a_source_or_the_export_changed(build_dir):
    root, build = build_dir
    assert verilog._stale_reason(DEFAULT) is None
    os.utime(root / "flows" / "a.py", None)                 # newer, same content: still fresh
    assert verilog._stale_reason(DEFAULT) is None
    (root / "flows" / "a.py").write_text("# changed\n")
    assert verilog._stale_reason(DEFAULT) == "the sources in hw/, sim/ or flows/ changed since its export"
    verilog.STAMP.write_text(json.dumps(verilog._record()))
    (build / PORTS_JSON).write_text('{"params": {}}')
    assert verilog._stale_reason(DEFAULT) == "rewritten since cosim exported it"
    verilog.STAMP.write_text(json.dumps(verilog._record()))
    text = verilog.VERILOG.read_text()
    verilog.VERILOG.write_text(text[:len(text) // 2])       # truncated, newer than every source
    assert verilog._stale_reason(DEFAULT) == "rewritten since cosim exported it"
    (build / PORTS_JSON).unlink()
    assert verilog._stale_reason(DEFAULT) == "missing"


def test_describe_reads_ports_json_and_refuses_a_verilog_without_one(tmp_path):
    source = tmp_path / f"{SIMTOP}.v"
    source.write_text("")
    with pytest.raises(CosimError, match=rf"no {PORTS_JSON} beside .*: cosim reads the machine's parameters"):
        verilog.describe(source)
    (tmp_path / PORTS_JSON).write_text("{}")
    with pytest.raises(CosimError, match=rf"does not describe {SIMTOP} \(KeyError"):
        verilog.describe(source)
    real = json.loads(verilog.fresh_verilog(params=DEFAULT).with_name(PORTS_JSON).read_text())
    real["params"] = {"SPAD_WORDS": 2048, "EXT_WORDS": 4096}
    (tmp_path / PORTS_JSON).write_text(json.dumps(real))
    described = verilog.describe(source)
    assert described.params == Params(SPAD_WORDS=2048, EXT_WORDS=4096) != DEFAULT
    assert described.memories["spad"]["arrays"][0] == "core.spad.bank0"
    assert verilog.verilog_params(source) == described.params


def test_missing_verilog(tmp_path):
    with pytest.raises(CosimError, match="no Verilog file"):
        verilog.fresh_verilog(tmp_path / "none.v", params=DEFAULT)


def test_each_machine_has_its_own_verilog_and_record(build_dir):
    """Another machine's Verilog lives in build/machines/<tag>/ with its own verilog.json: the
    default machine's files are never taken for it, nor its record for the default's."""
    _, build = build_dir
    t2 = Params(T=2)
    source, stamp = verilog._places(t2)
    assert source == build / "machines" / "T2" / f"{SIMTOP}.v" and stamp == source.with_name("verilog.json")
    assert verilog._places(DEFAULT) == (verilog.VERILOG, verilog.STAMP)
    assert verilog._lock(source) == source.with_name("verilog.lock")      # one export lock per machine
    assert verilog._lock(build / "elsewhere" / f"{SIMTOP}.v") is None
    assert verilog._stale_reason(t2) == "missing"          # the default machine's export is not T=2's
    source.parent.mkdir(parents=True)
    source.write_text("module ga2_simtop; /* T=2 */ endmodule\n")
    source.with_name(PORTS_JSON).write_text('{"params": {"T": 2}}')
    stamp.write_text(json.dumps(verilog._record(source)))
    assert verilog._stale_reason(t2) is None and verilog._stale_reason(DEFAULT) is None
    source.with_name(PORTS_JSON).write_text('{"params": {"T": 8}}')
    assert verilog._stale_reason(t2) == "rewritten since cosim exported it"
    assert verilog._stale_reason(DEFAULT) is None          # one machine's change leaves the other alone
    verilog.STAMP.write_text(json.dumps(verilog._record(source)))   # the default's record, T=2's files
    assert verilog._stale_reason(DEFAULT) == "rewritten since cosim exported it"


def test_a_read_only_build_folder_is_one_line_not_a_traceback(tmp_path):
    """cosim's first write under build/ is a lock file (the export's, then each build's): in a
    read-only folder it is a CosimError naming the folder, which the command line prints as its
    ERROR line (checked by hand: python -m cosim seeds 100 with build/ read-only prints
    "icarus ERROR: cannot write .../build/cosim: Permission denied; ..." and exits with 2)."""
    build = tmp_path / "build"
    build.mkdir()
    code = ("import sys; from pathlib import Path; from cosim.verilog import flock\n"
            "try:\n"
            f"    with flock(Path({str(build)!r}) / 'cosim' / 'verilog.lock', True): pass\n"
            "except Exception as e: print(type(e).__name__, e); sys.exit(3)\n")
    with read_only(build):
        done = run_unprivileged([sys.executable, "-c", code], cwd=verilog.ROOT)
    assert done.returncode == 3, done.stderr
    want = (f"CosimError cannot write {build / 'cosim'}: Permission denied; cosim keeps the exported "
            "Verilog, the simulators' builds and each launch's files under ")
    assert done.stdout.startswith(want), done.stdout
    assert "Traceback" not in done.stderr


def test_a_corrupt_or_mismatched_ports_json_is_refused_by_name(tmp_path):
    """Beside a given Verilog (the default one is exported again when either file changed: see
    above): a ga2_ports.json that is not JSON, and one whose memories are another machine's
    (the scratchpad's banks 512 words deep beside a Verilog whose banks are 1024)."""
    fresh = verilog.fresh_verilog(params=DEFAULT)
    source = tmp_path / f"{SIMTOP}.v"
    source.write_bytes(fresh.read_bytes())
    (tmp_path / PORTS_JSON).write_text('{"params": ')
    with pytest.raises(CosimError, match=rf"{PORTS_JSON} is not JSON \(Expecting value"):
        verilog.describe(source)
    real = json.loads(fresh.with_name(PORTS_JSON).read_text())
    (tmp_path / PORTS_JSON).write_text(json.dumps(real))
    assert verilog.describe(source).params == DEFAULT
    real["tops"][SIMTOP]["memories"]["spad"]["depth"] = 512
    (tmp_path / PORTS_JSON).write_text(json.dumps(real))
    mismatch = (rf"{PORTS_JSON} does not match .*{SIMTOP}\.v: it describes spad array core\.spad\.bank0 "
                r"of 512 words, which the Verilog does not declare")
    with pytest.raises(CosimError, match=mismatch):
        verilog.describe(source)
