#!/usr/bin/env python3
"""What two machine changes not built would buy the decoupled machine (OVERLAP = 2): the issue
rule of ``sim.spec.Decoupled`` changed in one place each, run on the same programs.

* **rows**: a read after write is released when its producer writes its first row (its write
  window starts: dispatch + latency - writes), not at its end, plus ``--after`` cycles (at its
  end at the latest); a
  generous form of hazards on rows, since a real rule would also have to keep the consumer's
  reads of each row behind the producer's write of it (issue 27 item 2's finer grain).
* **engines**: an engine takes its next instruction before the one before it ends, as a
  pipeline does: the matrix unit, the vector unit and the softmax unit once it has read its
  operands and starts its write window (dispatch + max(reads, latency - writes)), the matrix
  unit's next tile entering as the last rows drain; the DMA, which moves a beat a cycle, once it
  has moved its last beat (its end less its overhead: latency - max(reads, writes)); never sooner
  than DISPATCH_CYCLES after it.
* **both** together.

Everything else (the station's entries, the ports, the dispatch pace, the write windows) is the
machine's rule; "machine" is the rule unchanged and gives the reference machine's cycles. The
programs are seeds 100-111 and running example B at width 48, compiled for OVERLAP = 2 as the
studies compile them (docs/studies.md section 4), and with ``--resnet8`` MLPerf Tiny's ResNet-8 at
T = 8 (section 5); their instructions do not change, so this is
what the machine would give, not what a compiler that knew it would. Neither change is built:
docs/guide/performance.md says why and what they would cost.

Usage: python examples/what_if.py [--after N] [--resnet8]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import warnings
from collections.abc import Sequence

from studies import example_b_case  # examples/studies.py

from compiler import compile_graph
from compiler.workloads.seedtable import TABLE_SEEDS, compile_seed
from sim import spec
from sim.asm import Instruction
from sim.machines import PRESETS
from sim.spec import Params

VARIANTS = ("machine", "rows", "engines", "both")
DECOUPLED = Params(OVERLAP=2)


def _raw_only(new: list[spec.Access], older: list[spec.Access]) -> bool:
    """``new`` reads words ``older`` writes and writes none that ``older`` reads or writes (a read
    after write and nothing else: the one hazard rows could release early)."""
    reads = [(s, e, True, False) for s, e, r, _ in new if r]
    writes = [(s, e, False, True) for s, e, _, w in new if w]
    return spec.conflict(reads, older) and not spec.conflict(writes, older)


class _Station(spec._Station):
    """The machine's station with the dispatch time of one variant (the rule's own code, with
    the engine's and the read after write's release changed)."""

    rows = engines = False
    after = 0

    def _dispatch_time(self, i: int) -> tuple[int, int, int]:
        e = self.engine[i]
        base = self.entered[i] + spec.ENTER_DISPATCH_CYCLES
        if self.head[e]:
            k = self.queue[e][self.head[e] - 1]
            if not self.engines:
                free = self.end[k]
            elif e == spec.SHARED_WRITER:         # its last beat moved
                free = max(self.start[k] + spec.DISPATCH_CYCLES,
                           self.end[k] - (self.length[k] - max(self.reads[k], self.writes[k])))
            else:                                 # read, and writing its last rows
                drains = self.length[k] - self.writes[k]
                free = self.start[k] + max(spec.DISPATCH_CYCLES, self.reads[k], drains)
            base = max(base, free)
        hazard = base
        for j, war in self.deps[i]:
            if self.start[j] is None:
                return spec.NEVER, base, spec.NEVER
            if war:
                ready = self.start[j] + max(self.reads[j], spec.DISPATCH_CYCLES)
            elif self.rows and _raw_only(self.access[i], self.access[j]):    # never after its end
                ready = min(self.end[j], self.start[j] + self.length[j] - self.writes[j] + self.after)
            else:
                ready = self.end[j]
            hazard = max(hazard, ready)
        t = hazard
        if self.reads[i]:
            t = max(t, self.rule.reads_until)
        if self.writes[i] and not self.shares[i]:
            t = max(t, self.rule.writes_until - (self.length[i] - self.writes[i]))
        if self.last_dispatch is not None:
            t = max(t, self.last_dispatch + spec.DISPATCH_CYCLES)
        return t, base, hazard


def cycles(code: Sequence[Instruction], variant: str, after: int = 0, params: Params = DECOUPLED) -> int:
    """The ``cycles`` counter of a legal program (ending in HALT) on the decoupled machine
    ``params`` (OVERLAP = 2) with the rule of ``variant`` (:data:`VARIANTS`; ``after``: the cycles
    after the first written row for "rows" and "both")."""
    if variant not in VARIANTS:
        raise ValueError(f"variant {variant!r} is not one of {VARIANTS}")
    station = type("Station", (_Station,), {"rows": variant in ("rows", "both"),
                                            "engines": variant in ("engines", "both"), "after": after})
    rule = spec.Decoupled(params)
    for pc, ins in enumerate(code):
        if ins.op == "HALT":
            break
        rule.place(pc, ins.spec, ins.fields)
    return station(rule).run() + spec.STOP_CYCLES


RESNET8 = dataclasses.replace(PRESETS["t8"], OVERLAP=2)
"""The machine of issue 27's ResNet-8 target: T = 8, LANES = 8, the default sizes, decoupled."""


def programs(resnet8: bool = False) -> dict[str, tuple[Params, list[list[Instruction]]]]:
    """The programs and their machine: the twelve seeds, and example B at width 48
    (examples/studies.py's case); with ``resnet8``, MLPerf Tiny's ResNet-8 too, one image's two
    launches on :data:`RESNET8` (compiler/workloads/mlperf_tiny.py; needs PyTorch)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seeds = [compile_seed(s, DECOUPLED).program.code for s in TABLE_SEEDS]
        graph, calibration, _ = example_b_case(48)
        b48 = [compile_graph(graph, calibration, params=DECOUPLED).code]
        found = {"seeds 100-111": (DECOUPLED, seeds), "example B w48": (DECOUPLED, b48)}
        if resnet8:
            from compiler.workloads.mlperf_tiny import measure

            found["ResNet-8 T8"] = (RESNET8, measure("resnet8", RESNET8).program.launches())
    return found


def table(after: int = 0, resnet8: bool = False) -> list[tuple[str, dict[str, int]]]:
    """(program, variant -> cycles summed over its programs), for every program and variant."""
    return [(name, {v: sum(cycles(code, v, after, params) for code in codes) for v in VARIANTS})
            for name, (params, codes) in programs(resnet8).items()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="What hazards on rows and engines that overlap their "
                                     "own instructions would buy the decoupled machine (rules changed, "
                                     "not built).")
    parser.add_argument("--after", type=int, default=0, metavar="N",
                        help="rows: release a read after write N cycles after the producer's first "
                             "written row, at its end at the latest (default 0)")
    parser.add_argument("--resnet8", action="store_true",
                        help="also MLPerf Tiny's ResNet-8 at T = 8, one image (needs PyTorch; a few "
                             "seconds more)")
    args = parser.parse_args(argv)
    if args.after < 0:
        parser.error(f"--after {args.after}: a number of cycles, 0 or more")
    if args.resnet8:
        try:
            import torch  # noqa: F401
        except ImportError:
            parser.error("--resnet8 needs PyTorch: pip install -e .[torch]")
    print(f"| program | {' | '.join(VARIANTS)} |")
    print(f"|---|{'---:|' * len(VARIANTS)}")
    for name, row in table(args.after, args.resnet8):
        print(f"| {name} | {' | '.join(f'{row[v]:,}' for v in VARIANTS)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
