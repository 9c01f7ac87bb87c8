"""Yosys's runs for the RTL mutants, with Yosys replaced by stand-ins.

The netlist's cached files are made once, under a lock, when workers ask for them at once.

CI's run of 2026-12-06 failed: two pytest workers prepared the same netlist, the second removed
and rewrote ``base.il`` while the first's Yosys was reading it ("Parser error in line 97").
Here Yosys is replaced by a slow stand-in that writes what the real script would, and two
threads ask at the same moment: the script runs once and both see the finished files. A proof
Yosys refuses for a memory is reported as such.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from cosim.mutants_rtl import yosys


def _slow_yosys(calls: list[str]):
    def run(script: str, cwd: Path, name: str, timeout: float | None = None) -> str:
        calls.append(name)
        time.sleep(0.2)                 # long enough for the other thread to arrive meanwhile
        for line in script.splitlines():
            words = line.split()
            for k, word in enumerate(words):
                if word in ("-o", "write_rtlil", "write_json"):
                    target = cwd / words[k + 1]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text("mutate -mode inv\n" if word == "-o" else "whole\n")
            if words and words[0] == "write_verilog":
                (cwd / words[-1]).write_text("module m; endmodule\n")
        return ""
    return run


def _both(job) -> list:
    results, start = [None, None], threading.Barrier(2)

    def worker(k: int) -> None:
        start.wait()
        results[k] = job()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_two_workers_prepare_one_netlist_once(tmp_path, monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(yosys, "run", _slow_yosys(calls))
    verilog = tmp_path / "ga2_simtop.v"
    verilog.write_text("module ga2_simtop; endmodule\n")
    nets = _both(lambda: yosys.prepare(verilog, tmp_path / "root"))
    assert nets[0] == nets[1]
    assert len(calls) == 1, calls
    base = nets[0].root / nets[0].rtlil
    assert base.read_text() == "whole\n" and nets[0].none.is_file()


def test_two_workers_list_once_and_read_the_whole_listing(tmp_path, monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(yosys, "run", _slow_yosys(calls))
    verilog = tmp_path / "ga2_simtop.v"
    verilog.write_text("module ga2_simtop; endmodule\n")
    net = yosys.prepare(verilog, tmp_path / "root")
    lists = _both(lambda: yosys.listing(net, 10, 1))
    assert lists == [["mutate -mode inv"], ["mutate -mode inv"]]
    assert len(calls) == 2, calls       # prepare's, then one listing


def test_a_proof_refused_for_a_memory_says_so_when_the_error_s_tail_does_not(tmp_path, monkeypatch):
    """Yosys names the memories after its assertion, so the log's last lines (the error's text)
    may hold only the list: the log is read too (m46 of 2026-12-06 was reported as a failure)."""
    from cosim.mutants_rtl import draw, verdicts

    def refuses(script: str, cwd: Path, name: str, timeout: float | None = None) -> str:
        log = cwd / f"{name}.log"
        log.write_text("ERROR: Assertion failed: selection is not empty: t:$mem_v2 t:$mem\n"
                       + "".join(f"miter/gold.spad.bank{k}\n" for k in range(20)))
        raise yosys.YosysError(f"Yosys failed on {name}.ys (exit 1); the log: {log}\n"
                               "    miter/gold.spad.bank19")
    monkeypatch.setattr(yosys, "run", refuses)
    net = yosys.Netlist(tmp_path, "netlist-0", "0")
    m = draw.parse("mutate -mode const1 -module ga2_simtop.core -cell $procmux$1 -port S -portbit 0")
    assert verdicts.prove(net, m, "m46") == ("skipped", "module ga2_simtop.core holds a memory")
