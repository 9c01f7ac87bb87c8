"""The OVERLAP = 1 core (hw/overlap.py) against the reference machine (GA2.md section 7): every
memory word, the stop, all seven counters and ``timing_fault``, on the hand-worked programs of
tests/sim/test_overlap.py and on random programs, whose instructions collide on hazards and
ports."""

from __future__ import annotations

import pytest

from sim.asm import assemble
from sim.bench import random_image, random_program
from sim.spec import Params
from tests.sim.test_overlap import GATHER_STEP

from .corebench import case
from .test_core import run_core

OVERLAP = Params(SPAD_WORDS=1024, EXT_WORDS=1024, OVERLAP=1)
MM_44 = "MM dst={dst} A={A} B={B} M=4 K=4 N=4 tb=0 lda=4 ldb=4 ldc=4"

HAND = {
    "independent": f"LD dst=0 src=0 len=16\n{MM_44.format(dst=100, A=32, B=48)}\nHALT",
    "raw": f"LD dst=32 src=0 len=16\n{MM_44.format(dst=100, A=32, B=48)}\nHALT",
    "war": f"{MM_44.format(dst=100, A=32, B=48)}\nLD dst=48 src=0 len=16\nHALT",
    "waw": f"{MM_44.format(dst=100, A=32, B=48)}\nLD dst=110 src=0 len=4\nHALT",
    "acc": "MM dst=100 A=32 B=48 M=4 K=4 N=4 tb=0 lda=4 ldb=4 ldc=4 acc=1\nST src=300 dst=0 len=4\n"
           "LD dst=100 src=0 len=4\nHALT",
    "write port": "VADD dst=0 src1=100 src2=200 len=64\nLD dst=300 src=0 len=64\nHALT",
    "read port": "VADD dst=0 src1=100 src2=200 len=64\nSM dst=400 src=500 len=4\nHALT",
    "ld yields to an mm row": "LD dst=0 src=0 len=64\nMM dst=100 A=200 B=300 M=1 K=4 N=4 tb=0 lda=4 ldb=4 "
                              "ldc=4\nHALT",
    "mm window before an ld": f"{MM_44.format(dst=100, A=200, B=300)}\nLD dst=0 src=0 len=64\nHALT",
    "rq inside an ld, a wait on its end": "LD dst=0 src=0 len=64\nRQ dst=300 src=400 len=16 m=1 s=1 relu=0\n"
                                          "SM dst=500 src=60 len=4\nLD dst=600 src=0 len=4\nHALT",
    "other engines in turn": "RQ dst=0 src=100 len=64 m=1 s=1 relu=0\nMM dst=300 A=400 B=500 M=4 K=1 N=4 "
                             "tb=0 lda=4 ldb=4 ldc=4\nHALT",
    "halt": "HALT",
    "drain": "LD dst=0 src=0 len=64\nSM dst=400 src=500 len=4\nHALT",
    "error": "LD dst=0 src=0 len=64\nMM dst=100 A=32 B=48 M=0 K=4 N=4 tb=0 lda=4 ldb=4 ldc=4\nHALT",
    # issue 26: a GATHER is a fence; its row number out of the table stops the machine at its end
    "gather fence": GATHER_STEP.format(row=0),
    "gather out of its table": GATHER_STEP.format(row=5),
}


def test_hand_worked_programs():
    run_core([case(name, assemble(text, params=OVERLAP, strict=False), ext=list(range(1, 513)))
              for name, text in HAND.items()], OVERLAP)


@pytest.mark.parametrize("seed", [0, *(pytest.param(s, marks=pytest.mark.slow) for s in range(1, 4))])
def test_random_programs(seed):
    run_core([case(f"random {seed}.{k}", [*random_program(25, seed=100 * seed + k, params=OVERLAP)],
                   ext=random_image(OVERLAP, seed=seed))
              for k in range(3)], OVERLAP)
