"""Testing the tests: break the compiler on purpose and see whether the battery notices.

Each mutant is one small textual edit (anchor -> replacement) to one file of this package,
mirroring one of the seed's 27 broken compilers (chapter 11, "Testing the tests"). For each,
the package is copied to a temporary folder, the edit applied, and the battery (the five
refusals, the cancellation case, then the 60 random graphs, stopping at the first
problem) runs in a subprocess that imports the broken copy. A mutant is caught when the
battery reports a problem, crashes, or runs out of time. One edit is equivalent in effect
(the allocator skipping a hole of exactly the right size) and should survive.

Every anchor must occur exactly once in its file; otherwise nothing runs. The unbroken copy
runs first and must pass. Usage: ``python -m compiler.testing.mutants [--jobs N]``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
ROOT = PACKAGE.parent
TIMEOUT_SECONDS = 600
PROBLEM_EXIT = 2  # compiler.testing.battery.MUTATION_EXIT (not imported: the parent stays light)


@dataclass(frozen=True)
class Mutant:
    """One deliberate bug: in ``file`` (relative to the package), ``anchor`` becomes ``replacement``."""

    label: str
    file: str
    anchor: str
    replacement: str


MUTANTS = (
    Mutant("tiling: partial tiles at the edges are issued full size", "emit.py",
           "tile_rows, tile_cols = min(t, rows - i0), min(t, cols - j0)", "tile_rows, tile_cols = t, t"),
    Mutant("tiling: moving down one tile of A skips T words instead of T rows", "emit.py",
           "A=a_addr + i0 * k,", "A=a_addr + i0,"),
    Mutant("tiling: the next tile of a transposed B starts T words on, not T rows", "emit.py",
           "b_tile = b_addr + (j0 * k if transpose else j0)", "b_tile = b_addr + j0"),
    Mutant("tiling: a transposed B is read with the output row length as its stride", "emit.py",
           "ldb=(k if transpose else n)", "ldb=n"),
    Mutant("tiling: MM never gets tb=1", "emit.py", "tb=int(transpose)", "tb=0"),
    Mutant("tiling: accumulator rows are written T words apart", "emit.py", "ldc=n)", "ldc=self.params.T)"),
    Mutant("requantizers: a matmul's scale= factor is left out", "emit.py",
           "factor = node.factor * self.scales[a_id]", "factor = self.scales[a_id]"),
    Mutant("requantizers: the A operand's scale is used for B as well", "emit.py",
           "self.scales[a_id] * self.scales[b_id]", "self.scales[a_id] * self.scales[a_id]"),
    Mutant("requantizers: a fused relu never sets the RQ relu flag", "emit.py",
           "relu=int(node.id in self.fused)", "relu=0"),
    Mutant("requantizers: Q16 probabilities are brought to int8 with 1/65536 instead of 127/65536", "emit.py",
           "factor = SM_OUTPUT_UNIT / self.scales[node.id]", "factor = SM_OUTPUT_UNIT"),
    Mutant("scales: the softmax input is pinned to 1/8 (Q3.5 would be needed) instead of 1/16", "scales.py",
           "SOFTMAX_IN_SCALE = 1 / 16", "SOFTMAX_IN_SCALE = 1 / 8"),
    Mutant("scales: a tensor's range is its smallest per-sample maximum", "calibrate.py",
           "ranges[nid] = float(per_sample.max())", "ranges[nid] = float(per_sample.min())"),
    Mutant("scales: the second part of a concatenation keeps a scale of its own", "scales.py",
           "            groups.union(node.ins[1], node.id)\n", ""),
    Mutant("scales: an add's scale is chosen from the sum only", "scales.py",
           "group_range[root] = max(group_range[root], ranges[operand])", "pass"),
    Mutant("emission: every SM reads row 0", "emit.py",
           'self.put("SM", dst=tmp + r * cols, src=operands[0] + r * cols, len=cols)',
           'self.put("SM", dst=tmp + r * cols, src=operands[0], len=cols)'),
    Mutant("emission: every AMAX writes its index to the same word", "emit.py",
           'self.put("AMAX", dst=out + r,', 'self.put("AMAX", dst=out,'),
    Mutant("emission: an add operand is rescaled by sum/operand instead of operand/sum", "emit.py",
           "ratio = self.scales[operand] / self.scales[node.id]",
           "ratio = self.scales[node.id] / self.scales[operand]"),
    Mutant("emission: add operands are never rescaled", "emit.py",
           "if abs(ratio - 1) < ADD_SAME_SCALE:", "if True:"),
    Mutant("placement: both parts of a concatenation start at its first row", "placement.py",
           "loc[part] = (buf, row + (0 if k == 0 else nodes[node.ins[0]].shape[0]))",
           "loc[part] = (buf, row)"),
    Mutant("emission: LD brings in one row of a tensor", "emit.py",
           'self.put("LD", dst=dst, src=entry.addr, len=node.shape[0] * node.shape[1])',
           'self.put("LD", dst=dst, src=entry.addr, len=node.shape[1])'),
    Mutant("emission: ST leaves out the last row of an output", "emit.py",
           'self.put("ST", src=operands[0], dst=entry.addr, len=node.shape[0] * node.shape[1])',
           'self.put("ST", src=operands[0], dst=entry.addr, len=max(1, node.shape[0] * node.shape[1] - '
           'node.shape[1]))'),
    Mutant("layout: external regions advance by rows, not words, so they overlap", "layout.py",
           "top += words", "top += node.shape[0]"),
    Mutant("lifetimes: a buffer is freed at the step before its last reader", "emit.py",
           "for buf_id in self.schedule.get(step, []):",
           "for buf_id in self.schedule.get(step, []) + self.schedule.get(step + 1, []):"),
    Mutant("allocator: freed pieces merge with a neighbour even across a gap", "allocator.py",
           "if merged and merged[-1][0] + merged[-1][1] == begin:",
           "if merged and merged[-1][0] + merged[-1][1] <= begin:"),
    Mutant("limits: K is checked against 10 x K_MAX", "limits.py",
           "if k > params.K_MAX:", "if k > 10 * params.K_MAX:"),
    Mutant("fusion: a relu is fused although its matmul has other readers", "fusion.py",
           "        if others:\n", "        if False:\n"),
    Mutant("placement: a tensor may be a view in two concatenations", "placement.py",
           "    if part.id in loc:\n", "    if False:\n"),
)

EQUIVALENT = (
    Mutant("allocator: a free piece of exactly the requested size is passed over (a later, larger "
           "piece serves; it matters only when the scratchpad is all but full)", "allocator.py",
           "if piece >= words:", "if piece > words:"),
)


@dataclass
class Verdict:
    mutant: Mutant
    caught: bool
    how: str
    seconds: float


def check_anchors(mutants: tuple[Mutant, ...]) -> list[str]:
    """Anchors that do not occur exactly once in their file (empty: all good)."""
    bad = []
    for m in mutants:
        count = (PACKAGE / m.file).read_text().count(m.anchor)
        if count != 1:
            bad.append(f"{m.label}: the anchor {m.anchor!r} occurs {count} times in {m.file}")
    return bad


def run_one(mutant: Mutant | None) -> Verdict:
    """Run the battery on a copy of the package with the mutant applied (None: unbroken)."""
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="capra_mutant_") as tmp:
        copy = Path(tmp) / "compiler"
        shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
        if mutant is not None:
            path = copy / mutant.file
            path.write_text(path.read_text().replace(mutant.anchor, mutant.replacement))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([tmp, str(ROOT)]), PYTHONDONTWRITEBYTECODE="1")
        script = ("import sys, compiler; "
                  "assert compiler.__file__.startswith(sys.argv[1]), compiler.__file__; "
                  "from compiler.testing.battery import main; sys.exit(main(['--mutation']))")
        try:
            done = subprocess.run([sys.executable, "-c", script, tmp], cwd=tmp, env=env, capture_output=True,
                                  text=True, timeout=TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            return Verdict(mutant, True, f"timed out after {TIMEOUT_SECONDS} s", time.monotonic() - start)
    seconds = time.monotonic() - start
    lines = (done.stdout + done.stderr).strip().splitlines()
    last = lines[-1] if lines else ""
    if "AssertionError" in done.stderr and "compiler.__file__" in done.stderr:
        raise RuntimeError(f"the subprocess did not import the mutated copy: {done.stderr}")
    if done.returncode == 0:
        return Verdict(mutant, False, "the battery passed", seconds)
    if done.returncode == PROBLEM_EXIT:
        return Verdict(mutant, True, last, seconds)
    return Verdict(mutant, True, f"crashed: {last}", seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="mutants run in parallel (default 2)")
    args = parser.parse_args(argv)
    bad = check_anchors(MUTANTS + EQUIVALENT)
    if bad:
        print("\n".join(bad), file=sys.stderr)
        return 2
    start = time.monotonic()
    print("This breaks copies of the compiler on purpose; 'caught' is what we want to see.")
    baseline = run_one(None)
    if baseline.caught:
        print(f"the UNBROKEN compiler fails the battery: {baseline.how}", file=sys.stderr)
        return 2
    print(f"unbroken compiler: the battery passes ({baseline.seconds:.1f} s)")
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_one, m) for m in MUTANTS + EQUIVALENT]
        verdicts = []
        for future in futures:
            v = future.result()
            verdicts.append(v)
            state = "caught" if v.caught else "NOT CAUGHT"
            print(f"  {v.mutant.label}: {state} ({v.seconds:.1f} s) -- {v.how}", flush=True)
    caught = sum(v.caught for v in verdicts[:len(MUTANTS)])
    print(f"\ncompiler: {caught} of {len(MUTANTS)} broken compilers caught")
    equivalent = verdicts[len(MUTANTS):]
    for v in equivalent:
        verdict = "not caught, as expected" if not v.caught else f"CAUGHT (unexpected: {v.how})"
        print(f"equivalent in effect: {v.mutant.label}: {verdict}")
    print(f"wall time {time.monotonic() - start:.1f} s with {args.jobs} jobs")
    return 0 if caught == len(MUTANTS) and not any(v.caught for v in equivalent) else 1


if __name__ == "__main__":
    sys.exit(main())
