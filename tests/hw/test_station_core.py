"""The OVERLAP = 2 core (hw/station.py) against the reference machine (GA2.md section 7,
``sim.spec.Decoupled``): every memory word, the stop, all seven counters and ``timing_fault``,
on the hand-worked programs of tests/sim/test_decoupled.py and on random programs."""

from __future__ import annotations

import pytest
from amaranth.hdl import Const

from sim.asm import assemble
from sim.bench import random_image, random_program
from sim.spec import ErrorCode, Params

from .corebench import case, reference
from .test_core import run_core

DECOUPLED = Params(SPAD_WORDS=1024, EXT_WORDS=1024, OVERLAP=2)
MM_44 = "MM dst={dst} A={A} B={B} M=4 K=4 N=4 tb=0 lda=4 ldb=4 ldc=4"

HAND = {
    "passes one that waits": f"LD dst=32 src=0 len=64\n{MM_44.format(dst=100, A=32, B=48)}\n"
                             "VADD dst=300 src1=400 src2=500 len=8\nHALT",
    "war waits for the reads": f"{MM_44.format(dst=100, A=32, B=48)}\nLD dst=48 src=0 len=16\nHALT",
    "waw": f"{MM_44.format(dst=100, A=32, B=48)}\nLD dst=110 src=0 len=4\nHALT",
    "hazard on a queued one": "LD dst=0 src=0 len=64\nLD dst=500 src=0 len=4\n"
                              "VADD dst=100 src1=500 src2=40 len=4\nHALT",
    "oldest first": "LD dst=0 src=0 len=16\nVADD dst=100 src1=0 src2=40 len=4\nST src=200 dst=0 len=4\nHALT",
    "oldest first, swapped": "LD dst=0 src=0 len=16\nST src=200 dst=0 len=4\n"
                             "VADD dst=100 src1=0 src2=40 len=4\nHALT",
    "later reader first": f"LD dst=0 src=0 len=64\n{MM_44.format(dst=100, A=0, B=48)}\n"
                          "SM dst=600 src=500 len=64\nHALT",
    "full queue": "\n".join(f"LD dst={64 * k} src=0 len=64" for k in range(5))
                  + "\nVADD dst=1000 src1=900 src2=950 len=8\nHALT",
    "acc": "MM dst=100 A=32 B=48 M=4 K=4 N=4 tb=0 lda=4 ldb=4 ldc=4 acc=1\nST src=300 dst=0 len=4\n"
           "LD dst=100 src=0 len=4\nHALT",
    "halt": "HALT",
    "drain": "LD dst=0 src=0 len=64\nLD dst=100 src=0 len=4\nHALT",
    "error": "LD dst=0 src=0 len=64\nMM dst=100 A=32 B=48 M=0 K=4 N=4 tb=0 lda=4 ldb=4 ldc=4\nHALT",
    "gather fence": "GATHER dst=100 src=0 len=8 idx=50 rows=4\nVADD dst=300 src1=400 src2=500 len=8\nHALT",
    "gather holds the port": f"{MM_44.format(dst=100, A=32, B=48)}\n"
                             "GATHER dst=200 src=0 len=16 idx=50 rows=4\nLD dst=300 src=0 len=8\nHALT",
    "gather out of its table": f"LD dst=700 src=40 len=1\n{MM_44.format(dst=100, A=32, B=48)}\n"
                               "VADD dst=300 src1=100 src2=500 len=4\n"
                               "GATHER dst=200 src=0 len=4 idx=700 rows=4\nLD dst=400 src=0 len=4\nHALT",
    "gather in its table": "LD dst=700 src=2 len=1\nGATHER dst=200 src=0 len=5 idx=700 rows=4\n"
                           "VADD dst=300 src1=200 src2=500 len=4\nHALT",
    "ln and per-channel rq": "LD dst=900 src=0 len=8\nLD dst=500 src=0 len=16\n"
                             "RQ dst=600 src=500 len=16 m=0 s=0 relu=0 pc=1 tab=900 C=4\n"
                             "LN dst=700 src=600 len=16 bias=800 eps=3\nLD dst=900 src=100 len=4\n"
                             "RQ dst=620 src=700 len=16 m=0 s=0 relu=1 pc=1 tab=900 C=8\nHALT",
}


def test_hand_worked_programs():
    run_core([case(name, assemble(text, params=DECOUPLED, strict=False), ext=list(range(1, 513)))
              for name, text in HAND.items()], DECOUPLED)


@pytest.mark.parametrize("seed", [0, *(pytest.param(s, marks=pytest.mark.slow) for s in range(1, 5))])
def test_random_programs(seed):
    """Random programs of 25 instructions: make test runs one (seed 0's; CI's make cosim and make
    stress at OVERLAP = 2 run the station's Verilog on hundreds more), make test-all three of each
    of seeds 1 to 4 too."""
    run_core([case(f"random {seed}.{k}", [*random_program(25, seed=100 * seed + k, params=DECOUPLED)],
                   ext=random_image(DECOUPLED, seed=seed))
              for k in range(1 if seed == 0 else 3)], DECOUPLED)


def test_the_watchdog_stops_a_station_that_never_dispatches(monkeypatch):
    """A broken station (an MM's dependences never met), in the RTL and in the reference alike:
    both stop with STALL at the first MM, WATCHDOG_CYCLES after the last LD ended, the LDs run."""
    import hw.station
    from sim import spec

    mxu = spec.ENGINES.index("mxu")
    deps_met = hw.station.deps_met
    monkeypatch.setattr(hw.station, "deps_met",
                        lambda head, e, *a: Const(0, 1) if e == mxu else deps_met(head, e, *a))
    dispatch_time = spec._Station._dispatch_time

    def never_an_mm(self, i):
        t = dispatch_time(self, i)
        return (spec.NEVER, t[1], spec.NEVER) if self.engine[i] == "mxu" else t
    monkeypatch.setattr(spec._Station, "_dispatch_time", never_an_mm)
    text = f"LD dst=0 src=0 len=16\n{MM_44.format(dst=100, A=200, B=300)}\nLD dst=20 src=0 len=4\nHALT"
    program = assemble(text, params=DECOUPLED, strict=False)
    want = reference(case("stall", program), DECOUPLED)
    assert (want.code, want.pc) == (ErrorCode.STALL, 1)
    assert want.counters[0] == 21 + spec.WATCHDOG_CYCLES + spec.STOP_CYCLES
    run_core([case("stall", program, ext=list(range(1, 513)))], DECOUPLED)
