#!/usr/bin/env python3
"""The back-end studies of seed 004 on GA-2 (``make studies``): what each of Capra's options is
worth, decode against prefill, and where a transformer block spends its time.

Every figure is a run: each program is compiled with Capra, run on the reference machine
(whose five counters the RTL matches exactly: ``make cosim``), and its outputs are checked
against the integer interpreter (the same integers, or the study stops with the difference).

1. **Options.** Cycles with nothing (``cse=False, fuse=False``), with CSE alone, with relu
   fusion alone, and with both (Capra's default), on seeds 100-111, running example A, running
   example B at hidden widths 8/16/32/48, one attention-plus-feed-forward block and the digits
   MLP (examples/digits.py; ``--no-digits`` leaves it out: it trains a PyTorch model).
   The same on the machine whose engines run side by side (OVERLAP = 1, issue 15) and on the
   decoupled one (OVERLAP = 2, issue 27): the engines alone, with the list scheduler, everything.
2. **Decode and prefill.** A feed-forward network 64 -> 256 -> 64 (relu between) for 1, 2,
   4, ... 64 tokens: cycles, cycles per token, useful MXU utilisation (the multiply-adds of the
   network, padding excluded, over T*T*cycles), the DMA's share of the cycles, and the weight
   words loaded (scratchpad words the LDs of the two weights write).
3. **Where a block spends its time.** The block of (1) per kernel kind (the graph operation
   whose step wrote each instruction: ``Program.owners``): instructions, busy cycles per
   engine, and the sum of their spans.
4. **The speed targets.** Issue 15's and issue 27's programs on the three machines against the
   lower bounds of compiler/bounds.py: met, or by how much missed and which bound holds them.
5. **Convolutional networks.** MLPerf Tiny's ResNet-8 and DS-CNN from PyTorch on the default
   machine and on T = 8 (compiler.testing.cnnbench, also ``make bench``): cycles per image,
   per-layer MXU utilisation, time per image at each machine's Fmax beside the Cortex-M4's
   222 ms (needs PyTorch: left out with ``--no-digits``).
6. **A small GPT.** examples/char_gpt.py's GPT by its shapes on the default machine and on
   T = 8 (compiler.testing.gptbench, also ``make bench``): cycles per prompt token in prefill
   and per token in decode, per kernel kind, and a LayerNorm and a softmax row against 2N + 50
   (left out with ``--no-digits`` too).

``--write`` stores the run in docs/studies.json and writes docs/studies.md;
``tests/test_studies.py`` fails when the page is stale.

Usage: python examples/studies.py [--write] [--no-digits] [--param t8]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import itertools
import json
import math
import random
import sys
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
from _cli import add_machine, machine  # examples/_cli.py

from compiler import Graph, compile_graph
from compiler.bounds import bounds
from compiler.interpret import interpret
from compiler.program import Program, RunOutcome
from compiler.scales import ZeroRangeWarning
from compiler.testing.perf import useful_macs
from compiler.timeline import UNIT_NAMES
from compiler.workloads.random_graph import random_graph, sample_inputs
from compiler.workloads.seedtable import CALIBRATION_SAMPLES, TABLE_SEEDS, attention_step_network
from sim.asm import decode_program
from sim.machines import PRESETS
from sim.machines import describe as describe_machine
from sim.spec import COUNTERS, DEFAULT, Params

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "docs" / "studies.json"
PAGE = ROOT / "docs" / "studies.md"
OPTIONS = {"nothing": (0, {"cse": False, "fuse": False}),
           "+ CSE": (0, {"cse": True, "fuse": False}),
           "+ fusion": (0, {"cse": False, "fuse": True}),
           "serial default": (0, {"cse": True, "fuse": True}),
           "+ overlap": (1, {"cse": False, "fuse": False, "reorder": False}),
           "+ scheduling": (1, {"cse": False, "fuse": False, "reorder": True}),
           "all": (1, {"cse": True, "fuse": True, "reorder": True}),
           "decoupled": (2, {"cse": False, "fuse": False, "reorder": False}),
           "+ scheduling (2)": (2, {"cse": False, "fuse": False, "reorder": True}),
           "all (2)": (2, {"cse": True, "fuse": True, "reorder": True})}
"""The option sets of study 1: the machine's OVERLAP and compile_graph's keyword arguments.
'serial default' is Capra's default on the serial machine, 'all' its default on the machine
whose engines overlap (GA2.md section 7), 'all (2)' its default on the decoupled machine
(OVERLAP = 2, GA2.md section 7)."""
MACHINES = (0, 1, 2)
"""The machines the studies show side by side, by OVERLAP: serial, engines side by side, decoupled."""
WIDTHS = (8, 16, 32, 48)
TOKENS = (1, 2, 4, 8, 16, 32, 64)
FFN = (64, 256, 64)
"""Study 2's network: d_model, hidden width, d_model."""
FFN_SPAD_WORDS = 32768
"""Study 2's scratchpad (at least): 64 tokens' hidden activations are 64 x 256 = 16,384 words
beside their int32 accumulator, more than the default 4,096 (a computed tensor stays in the
scratchpad; only inputs and weights stream)."""
BLOCK = {"tokens": 8, "dim": 16, "hidden": 32}
"""Study 3's block: 8 tokens of width 16, a feed-forward hidden width of 32."""

Sample = dict[str, np.ndarray]
Case = tuple[Graph, list[Sample], Sample]


class StudyError(RuntimeError):
    """A program's outputs differ from the integer interpreter's (a compiler bug): the study
    stops and names the program, the options and the output."""


# --------------------------------------------------------------------------- the programs

def _gauss(rng: np.random.Generator, rows: int, cols: int, sd: float) -> np.ndarray:
    return rng.normal(0.0, sd, size=(rows, cols))


def block_graph(tokens: int, dim: int, hidden: int, seed: int = 4) -> Graph:
    """One attention-plus-feed-forward block (one head, no normalisation):
    a = softmax(q k^T / sqrt(dim)) v Wo + x; y = relu(a W1) W2 + a, with q, k, v = x Wq, x Wk,
    x Wv. Weights N(0, 1/fan_in) from numpy's generator ``seed``."""
    rng = np.random.default_rng(seed)
    g = Graph()
    x = g.input("x", (tokens, dim))

    def weight(name: str, fan_in: int, fan_out: int) -> int:
        return g.weight(name, _gauss(rng, fan_in, fan_out, 1 / math.sqrt(fan_in)))

    q, k, v = (g.matmul(x, weight(n, dim, dim)) for n in ("wq", "wk", "wv"))
    scores = g.softmax(g.matmul(q, k, transpose_b=True, scale=1 / math.sqrt(dim)))
    attended = g.add(g.matmul(g.matmul(scores, v), weight("wo", dim, dim)), x)
    up = g.relu(g.matmul(attended, weight("w1", dim, hidden)))
    g.output(g.add(g.matmul(up, weight("w2", hidden, dim)), attended), "y")
    return g


def shared_kv_graph(tokens: int = 8, dim: int = 16, heads: int = 2, seed: int = 7) -> Graph:
    """Multi-query attention written head by head, as a model often is: every head computes
    its own q but the same k = x Wk and v = x Wv (repeats that CSE computes once); the heads'
    outputs, each through its own projection, are summed onto x."""
    rng = np.random.default_rng(seed)
    g = Graph()
    x = g.input("x", (tokens, dim))

    def weight(name: str) -> int:
        return g.weight(name, _gauss(rng, dim, dim, 1 / math.sqrt(dim)))

    wk, wv = weight("wk"), weight("wv")
    total = x
    for h in range(heads):
        q = g.matmul(x, weight(f"wq{h}"))
        k, v = g.matmul(x, wk), g.matmul(x, wv)
        scores = g.softmax(g.matmul(q, k, transpose_b=True, scale=1 / math.sqrt(dim)))
        total = g.add(total, g.matmul(g.matmul(scores, v), weight(f"wo{h}")))
    g.output(total, "y")
    return g


def ffn_graph(tokens: int, seed: int = 5) -> Graph:
    """Study 2's network: relu(x W1) W2 for ``tokens`` rows of width 64, hidden width 256."""
    d_in, hidden, d_out = FFN
    rng = np.random.default_rng(seed)
    g = Graph()
    x = g.input("x", (tokens, d_in))
    w1 = g.weight("w1", _gauss(rng, d_in, hidden, 1 / math.sqrt(d_in)))
    w2 = g.weight("w2", _gauss(rng, hidden, d_out, 1 / math.sqrt(hidden)))
    g.output(g.matmul(g.relu(g.matmul(x, w1)), w2), "y")
    return g


def _gaussian_case(graph: Graph, seed: int, samples: int = 16) -> Case:
    rng = np.random.default_rng(seed)
    draw = [{n.name: rng.normal(size=n.shape) for n in graph.inputs()} for _ in range(samples + 1)]
    return graph, draw[:-1], draw[-1]


def seed_case(seed: int) -> Case:
    """A graph of the seed table, calibrated and tested as compiler.workloads.seedtable does."""
    graph, names = random_graph(seed)
    rng = random.Random(seed)
    calibration = [sample_inputs(names, rng) for _ in range(CALIBRATION_SAMPLES)]
    return graph, calibration, sample_inputs(names, rng)


def example_b_case(width: int) -> Case:
    """Running example B (examples/own_graph.py) at a hidden width, as its sweep draws it."""
    import own_graph

    graph, shapes = own_graph.build(hidden=width)
    rng = random.Random(width)
    calibration = [own_graph.draw_inputs(shapes, rng) for _ in range(30)]
    return graph, calibration, own_graph.draw_inputs(shapes, rng)


def digits_case(epochs: int = 60) -> Case:
    """The digits MLP as examples/sweep.py trains and lowers it (batches of 8)."""
    import sweep

    lowered, calibration, feed = sweep.digits_model(epochs)
    return lowered.graph, calibration, feed


# --------------------------------------------------------------------------- running one

RTL_JOBS: list | None = None
"""During :func:`run`: every program a study runs, as a cosim job (cosim.jobs.Job.of_program),
for the record's digest of the programs and, with ``--rtl``, to run on the RTL of its machine
after the studies (:func:`rtl_check`); None outside a run."""


def checked_run(name: str, case: Case, params: Params, **options: bool) -> tuple[Program, RunOutcome]:
    """Compile and run one program; its outputs must equal the integer interpreter's.

    Returns:
        the program and its run.

    Raises:
        StudyError: an output differs from the interpreter (names program, options, output).
    """
    graph, calibration, test = case
    with warnings.catch_warnings():   # seed 104's zero ranges are the seed's (compiler.workloads.seedtable)
        warnings.simplefilter("ignore", ZeroRangeWarning)
        program = compile_graph(graph, calibration, params=params, **options)
    outcome = program.run(test, warn=False)
    ints = interpret(program, test)
    for out, value in outcome.outputs.items():
        if not np.array_equal(value.ints, ints[program.ext[out].node]):
            raise StudyError(f"{name} {options}: output {out!r} differs from the integer interpreter")
    if RTL_JOBS is not None:
        from cosim.jobs import Job
        shown = ", ".join([f"OVERLAP={params.OVERLAP}", *(f"{k}={v}" for k, v in options.items())])
        RTL_JOBS.append(Job.of_program(program, test, f"{name} ({shown})"))
    return program, outcome


def rtl_check(jobs: list, simulators: tuple[str, ...]) -> dict:
    """Run the studies' programs on the RTL (each on its machine's Verilog: cosim builds it)
    under each simulator and compare every memory word, counter and stop with the reference
    machine (report.rtl.run_rtl, cosim.api.compare).

    Returns:
        the record's ``rtl`` entry: programs, machines, simulators, cycles in total.

    Raises:
        StudyError: a simulator could not run, or a program differs (names it and what differs).
    """
    from report.rtl import run_rtl

    machines: dict[Params, list] = {}
    for job in jobs:
        machines.setdefault(job.machine, []).append(job)
    for params, group in machines.items():
        print(f"  {len(group)} programs on {describe_machine(params)}", flush=True)
        for result in run_rtl(group, simulators):
            print(f"    {result.simulator:9s}: {result.verdict}: {result.summary()}", flush=True)
            if not result.passed:
                first = min(result.differences, default=None)
                what = result.failure or "; ".join(result.differences[first][:2])
                name = group[first].name if first is not None else "the build"
                raise StudyError(f"RTL {result.simulator}: {name}: {what}")
    return {"simulators": list(simulators), "machines": len(machines), **programs_entry(jobs)}


def programs_entry(jobs: list) -> dict:
    """What identifies the programs of a run: how many, their cycles in all (the reference
    machine's), and a digest of what is exact in them: each program's machine, its
    instructions without their data fields (``sim.spec.Field.data``: the requantization
    multipliers and shifts) and its external-memory layout (each tensor's name, address, size
    and format), not the words in it. The
    rest (weights, inputs, scales) comes from floating-point training and calibration whose
    last bits differ between CPUs (issue 24, defect 1): digesting it made the record another
    machine's stale. A record whose ``rtl`` entry has another digest is stale."""
    digest = hashlib.sha256()
    for job in jobs:
        digest.update(repr(job.machine).encode())
        for ins in decode_program(job.words):
            exact = [(f.name, ins.fields[f.name]) for f in ins.spec.fields if not f.data]
            digest.update(repr((ins.op, exact)).encode())
        layout = sorted((e.name, e.addr, e.words, e.fmt) for e in job.compiled.ext.values())
        digest.update(repr(layout).encode())
    return {"programs": len(jobs), "cycles": sum(job.expected(job.machine).counters.cycles for job in jobs),
            "digest": digest.hexdigest()[:16]}


# --------------------------------------------------------------------------- study 1: options

def options_study(params: Params, digits: bool) -> list[dict]:
    """One row per program: its cycles under each option set."""
    cases: list[tuple[str, Callable[[], list[Case]]]] = [
        ("seeds 100-111", lambda: [seed_case(s) for s in TABLE_SEEDS]),
        ("example A", lambda: [attention_step_network()]),
        *((f"example B w{w}", lambda w=w: [example_b_case(w)]) for w in WIDTHS),
        ("attention + FFN block", lambda: [_gaussian_case(block_graph(**BLOCK), 6)]),
        ("2-head attention, shared k, v", lambda: [_gaussian_case(shared_kv_graph(), 8)]),
    ]
    if digits:
        cases.append(("digits MLP (batch 8)", lambda: [digits_case()]))
    rows = []
    for name, make in cases:
        programs = make()
        row = {"program": name}
        for label, (overlap, options) in OPTIONS.items():
            machine = dataclasses.replace(params, OVERLAP=overlap)
            row[label] = sum(checked_run(name, case, machine, **options)[1].counters.cycles
                             for case in programs)
        rows.append(row)
        print(f"  {name}: " + ", ".join(f"{k} {row[k]}" for k in OPTIONS), flush=True)
    return rows


# --------------------------------------------------------------------------- study 2: decode/prefill

def weight_words_loaded(program: Program) -> int:
    """Scratchpad words written by the LDs that read a weight's external region."""
    regions = [(e.addr, e.addr + e.words) for e in program.ext.values() if e.kind == "weight"]
    return sum(ins.fields["len"] for ins in program.code
               if ins.op == "LD" and any(lo <= ins.fields["src"] < hi for lo, hi in regions))


def decode_prefill_study(params: Params) -> list[dict]:
    """One row per token count."""
    d_in, hidden, d_out = FFN
    params = dataclasses.replace(params, SPAD_WORDS=max(params.SPAD_WORDS, FFN_SPAD_WORDS))
    rows = []
    for tokens in TOKENS:
        case = _gaussian_case(ffn_graph(tokens), tokens)
        macs = tokens * (d_in * hidden + hidden * d_out)
        row: dict = {"tokens": tokens}
        for tag, overlap in (("", 0), (" (overlap)", 1)):
            machine = dataclasses.replace(params, OVERLAP=overlap)
            program, outcome = checked_run(f"FFN x{tokens}", case, machine)
            c = outcome.counters
            row |= {f"cycles{tag}": c.cycles, f"per token{tag}": round(c.cycles / tokens, 1),
                    f"MXU util %{tag}": round(100 * macs / (params.T ** 2 * c.cycles), 1),
                    f"MXU busy %{tag}": round(100 * c.mxu / c.cycles, 1),
                    f"DMA busy %{tag}": round(100 * c.dma / c.cycles, 1)}
        row |= {"weight words loaded": weight_words_loaded(program),
                "padded MACs": useful_macs(program.code) - macs}
        rows.append(row)
    return rows


def knee(rows: list[dict]) -> str:
    """Where doubling the tokens stops paying (serially): the first doubling that cuts the
    cycles per token by less than a quarter."""
    for before, after in itertools.pairwise(rows):
        if after["per token"] > 0.75 * before["per token"]:
            return (f"from {before['tokens']} to {after['tokens']} tokens the cycles per token fall "
                    f"only from {before['per token']} to {after['per token']} (less than a quarter)")
    return "every doubling cuts the cycles per token by a quarter or more"


# --------------------------------------------------------------------------- study 3: the block

def block_study(params: Params) -> dict:
    """The block on the machine whose engines overlap: per kernel kind, instructions, busy
    cycles per engine, the cycles its instructions waited on a hazard and on a port, the sum
    of their spans (from the reference machine's timeline); and the cycles on both machines."""
    case = _gaussian_case(block_graph(**BLOCK), 6)
    serial = checked_run("block", case, dataclasses.replace(params, OVERLAP=0))[1].counters
    program, run = checked_run("block", case, dataclasses.replace(params, OVERLAP=1))
    kinds: dict[str, dict] = {}
    for placed in run.state.timeline:
        owner = program.owners[placed.pc]
        kind = str(program.graph.nodes[owner].op)
        row = kinds.setdefault(kind, {"kernel": kind, "instructions": 0,
                                      **{UNIT_NAMES[u]: 0 for u in COUNTERS[1:]},
                                      "waited on a hazard": 0, "waited on a port": 0, "sum of spans": 0})
        row["instructions"] += 1
        row[UNIT_NAMES[placed.engine]] += placed.end - placed.start
        row["waited on a hazard"] += placed.hazard
        row["waited on a port"] += placed.port
        row["sum of spans"] += placed.end - placed.start
    c = run.counters
    waits = [sum(r[key] for r in kinds.values()) for key in ("waited on a hazard", "waited on a port")]
    if waits != [c.hazard, c.port]:
        raise StudyError("block: the waits of the timeline do not add up to the hazard and port counters")
    return {"kinds": sorted(kinds.values(), key=lambda r: -r["sum of spans"]), "cycles serial": serial.cycles,
            "cycles overlapped": c.cycles, "busiest engine": max(c.dma, c.mxu, c.vpu, c.sfu)}


# --------------------------------------------------------------------------- study 4: the targets

TARGETS = {"seeds": 3200, "example B ratio": 1.3, "decode DMA busy %": 90, "digits MXU util %": 80,
           "resnet8 MXU util %": 75}
"""The speed targets: issue 15's (seeds 100-111 in at most 3,200 cycles; example B at width 48
within 1.3x of max(MXU roof, DMA roof); one token of decode with the DMA busy 90% of the cycles)
and issue 27's for the decoupled machine (the same two first; the digits MLP at batch 8 at 80%
MXU utilisation or more; ResNet-8 at T = 8 at 75%, section 5)."""
BOUND_KEYS = {"engine": "engine", "read port": "read_port", "issue": "issue", "dependences": "dependences",
              "MXU roof": "mxu_roof", "DMA roof": "dma_roof", "best bound": "best"}
"""Section 4's bound columns and the compiler.bounds.Bounds attribute of each."""


def _bound_row(name: str, cases: list[Case], params: Params) -> dict:
    """A program (or a sum of programs) compiled with Capra's defaults for the machine ``params``:
    its cycles, DMA and MXU busy cycles and, on a machine whose engines overlap, its lower bounds
    (compiler/bounds.py; a sum's best is the sum of each program's best; at OVERLAP = 2 the
    longest chains' cycles by kind of link, summed, ``Bounds.chain``). On the serial machine
    the cycles are the latencies' sum: only the roofs are shown."""
    row: dict = {"program": name, "OVERLAP": params.OVERLAP, "T": params.T, "cycles": 0,
                 **dict.fromkeys(BOUND_KEYS, 0), "DMA busy": 0, "MXU busy": 0, "macs": 0, "limits": [],
                 "chain": {}}
    for graph, calibration, test in cases:
        program = compile_graph(graph, calibration, params=params)
        c = program.run(test, warn=False).counters
        b = bounds(program.code, params)
        for key, attr in BOUND_KEYS.items():
            row[key] += getattr(b, attr)
        row |= {"cycles": row["cycles"] + c.cycles, "DMA busy": row["DMA busy"] + c.dma,
                "MXU busy": row["MXU busy"] + c.mxu, "macs": row["macs"] + useful_macs(program.code)}
        row["limits"].append(b.limit)
        for kind, n in b.chain:
            row["chain"][kind] = row["chain"].get(kind, 0) + n
    row["limits"] = ", ".join(f"{k} {row['limits'].count(k)}" if len(cases) > 1 else k
                              for k in dict.fromkeys(row["limits"]))
    if not params.OVERLAP:
        row |= {k: "-" for k in ("engine", "read port", "issue", "dependences")}
        row |= {"best bound": row["cycles"], "limits": "serial: the sum of the latencies"}
    return row


def mlp_case(batch: int = 8) -> Case:
    """The digits MLP 64-256-128-10 of ``make bench`` (compiler.testing.mlpbench) at a batch, its
    calibration and test inputs as the bench draws them."""
    from compiler.testing import mlpbench

    calibration = [{"x": np.random.default_rng(k).normal(size=(batch, mlpbench.WIDTHS[0]))} for k in range(4)]
    return mlpbench.mlp(batch), calibration, {"x": np.random.default_rng(99).normal(size=(batch, 64))}


def targets_study(params: Params, digits: bool) -> list[dict]:
    """The targets' programs on the three machines (:data:`MACHINES`): cycles against every lower
    bound; the digits MLP (issue 27) with ``digits``."""
    rows = []
    for overlap in MACHINES:
        machine = dataclasses.replace(params, OVERLAP=overlap)
        decode = dataclasses.replace(machine, SPAD_WORDS=max(params.SPAD_WORDS, FFN_SPAD_WORDS))
        rows += [_bound_row("seeds 100-111", [seed_case(s) for s in TABLE_SEEDS], machine),
                 _bound_row("example B w48", [example_b_case(48)], machine),
                 _bound_row("decode, 1 token", [_gaussian_case(ffn_graph(1), 1)], decode)]
        if digits:
            rows.append(_bound_row("digits MLP, batch 8", [mlp_case()], machine))
    return rows


def _targets_lines(rows: list[dict], cnn: list[dict] | None) -> list[str]:
    head = ["program", "OVERLAP", "cycles", *BOUND_KEYS, "limits"]
    side = []
    for name in dict.fromkeys(r["program"] for r in rows):
        by = {r["OVERLAP"]: r for r in rows if r["program"] == name}
        side.append({"program": name, **{f"OVERLAP = {m}": by[m]["cycles"] for m in MACHINES},
                     "best bound (2)": by[2]["best bound"], "limits (2)": by[2]["limits"]})
    return [
        "## 4. The speed targets, and what limits them",
        "",
        "Each program compiled with Capra's defaults for each machine (OVERLAP = 0 serial, 1 the "
        "engines side by side, 2 decoupled: docs/GA2.md section 7) and run on it:",
        "",
        *_table(side),
        "",
        "Against lower bounds that no order of the same instructions can beat on that machine "
        "(compiler/bounds.py): the busiest engine, the scratchpad's read port (one reading "
        "instruction at a time), the issue rule's pace (three cycles between dispatches; at "
        "OVERLAP = 2 each instruction's earliest entry and dispatch), the longest chain of "
        "instructions each conflicting with the one before (a hazard: it waits for its end; at "
        "OVERLAP = 2 a write after read waits for the reads only, and an engine's queue is in order), "
        "and the roofline's MXU and DMA roofs; best bound is the largest (summed per program for the "
        "seeds), limits names it. On the serial machine the cycles are the sum of the latencies.",
        "",
        *_table(rows, head),
        "",
        *_target_notes(rows, cnn),
        "",
    ]


def _target_notes(rows: list[dict], cnn: list[dict] | None) -> list[str]:
    """One paragraph per target, on the decoupled machine (OVERLAP = 2): met or by how much it is
    missed, and the bound that holds it."""
    at = {r["program"]: r for r in rows if r["OVERLAP"] == 2}
    seeds, b48, one = at["seeds 100-111"], at["example B w48"], at["decode, 1 token"]
    roof = max(b48["MXU roof"], b48["DMA roof"])
    goal = TARGETS["seeds"]
    notes = [
        f"On the decoupled machine (OVERLAP = 2). Seeds 100-111: {seeds['cycles']:,} cycles against the "
        f"target of {goal:,} ({_missed(seeds['cycles'], goal)}); these instructions cannot run in fewer "
        f"than {seeds['best bound']:,} on this machine, however ordered ({seeds['limits']})"
        + (f": the bound is {seeds['best bound'] - goal:,} above the target, so it needs shorter dependence "
           f"chains, not another order. {_chain_note(seeds)}" if seeds["best bound"] > goal else "."),
        f"Example B at width 48: {b48['cycles']:,} cycles, {b48['cycles'] / roof:.2f}x max(MXU roof "
        f"{b48['MXU roof']:,}, DMA roof {b48['DMA roof']:,}) where {TARGETS['example B ratio']}x "
        f"({math.floor(TARGETS['example B ratio'] * roof):,} cycles) is asked"
        f" ({_missed(b48['cycles'], math.floor(TARGETS['example B ratio'] * roof))}); its best bound is "
        f"{b48['best bound']:,} ({b48['limits']}, {b48['best bound'] / roof:.2f}x). {_chain_note(b48)}",
        f"Decode, one token: the DMA busy {100 * one['DMA busy'] / one['cycles']:.1f}% of {one['cycles']:,} "
        f"cycles (issue 15's target {TARGETS['decode DMA busy %']}%).",
    ]
    if "digits MLP, batch 8" in at:
        mlp = at["digits MLP, batch 8"]
        util = 100 * mlp["macs"] / (mlp["T"] ** 2 * mlp["cycles"])
        need = math.floor(100 * mlp["macs"] / (mlp["T"] ** 2 * TARGETS["digits MXU util %"]))
        notes.append(f"The digits MLP at batch 8: {mlp['cycles']:,} cycles, MXU utilisation {util:.1f}% "
                     f"(target {TARGETS['digits MXU util %']}%: at most {need:,} cycles, "
                     f"{_missed(mlp['cycles'], need)}; best bound {mlp['best bound']:,}, {mlp['limits']}).")
    resnet = [r for r in cnn or () if r["model"] == "resnet8" and r["T"] == 8 and r["OVERLAP"] == 2]
    for r in resnet:
        need = math.floor(100 * r["macs"] / (r["T"] ** 2 * TARGETS["resnet8 MXU util %"]))
        best = r["best bound"]
        notes.append(f"ResNet-8 at T = 8 (section 5): {r['cycles']:,} cycles, MXU utilisation "
                     f"{r['utilisation %']}% (target {TARGETS['resnet8 MXU util %']}%: at most {need:,} "
                     "cycles, "
                     f"{_missed(r['cycles'], need)}); its launches' best bounds add up to {best:,} "
                     f"({r['limits']}: {100 * r['macs'] / (r['T'] ** 2 * best):.1f}% at best)."
                     + _engine_note(r, need))
    return [" ".join(notes)]


def _engine_note(row: dict, need: int) -> str:
    """What the matrix unit's own instructions allow a model's row (section 5's record)."""
    busy = row.get("MXU busy")
    if busy is None:
        return ""
    ceiling = 100 * row["macs"] / (row["T"] ** 2 * busy)
    return (f" The matrix unit's instructions alone take {busy:,} cycles: {ceiling:.1f}% of the array were "
            "it never idle, since each MM carries its rows' skew and pipeline beside its K taps (K + M + "
            "MM_OVERHEAD cycles, one more with acc, and K = k_w x C = 48 at 16 channels); the target "
            f"leaves it {max(0, need - busy):,} idle cycles, and it is idle {row['cycles'] - busy:,}.")


def _chain_note(row: dict) -> str:
    """What the longest chains of a row's programs are made of (compiler.bounds.CHAIN_LINKS),
    and so what a machine that ran them faster would change."""
    chain = row["chain"]
    total = sum(chain.values())
    what = {"engine": "instructions the next one on the same engine waits for (its queue runs one at a time)",
            "hazard": "instructions a conflicting one waits for to end (a hazard on whole regions)",
            "read window": "read windows a write after read waits for",
            "front end": "the front end", "last": "the last instruction and the stop"}
    parts = [f"{n:,} ({100 * n / total:.0f}%) {what[kind]}" for kind, n in chain.items()]
    return (f"Those chains' {total:,} cycles: {'; '.join(parts)}. Hazards on rows could shorten only the "
            "hazards; the engine's part needs engines that start their next instruction while the last "
            "one drains (docs/guide/performance.md).")


def _missed(cycles: int, goal: int) -> str:
    """'met' or 'missed by N cycles, X%'."""
    if cycles <= goal:
        return f"met, {goal - cycles:,} cycles to spare"
    return f"missed by {cycles - goal:,} cycles, {100 * (cycles - goal) / goal:.1f}%"


# --------------------------------------------------------------------------- the page

def run(params: Params, digits: bool, rtl: tuple[str, ...] = (), models: bool = True) -> dict:
    """The studies' record: sections 1-4 on ``params`` (the digits MLP among study 1's programs if
    ``digits``), then, if ``digits`` and ``models``, sections 5 and 6 (the MLPerf Tiny models and
    the GPT on their own machines: most of the run's time, since ResNet-8 is compiled six ways);
    ``rtl`` names the simulators that run every program of sections 1-4. Raises StudyError when a
    program's outputs differ from the integer interpreter's."""
    global RTL_JOBS
    RTL_JOBS = []
    print("== 1. options", flush=True)
    options = options_study(params, digits)
    print("== 2. decode and prefill", flush=True)
    ffn = decode_prefill_study(params)
    print("== 3. where the block spends its time", flush=True)
    block = block_study(params)
    print("== 4. the speed targets", flush=True)
    targets = targets_study(params, digits)
    record = {"params": {k: v for k, v in vars(params).items()}, "options": options, "decode_prefill": ffn,
              "knee": knee(ffn), "block": block, "targets": targets, "programs": programs_entry(RTL_JOBS)}
    if digits and models:
        print("== 5. convolutional networks (MLPerf Tiny)", flush=True)
        record["cnn"] = cnn_study()
        print("== 6. a small GPT: cycles per token", flush=True)
        record["gpt"] = gpt_study()
    if rtl:
        print(f"== every program on the RTL ({' and '.join(rtl)})", flush=True)
        record["rtl"] = rtl_check(RTL_JOBS, rtl)
    RTL_JOBS = None
    return record


def cnn_study() -> list[dict]:
    """ResNet-8 and DS-CNN on the default machine and on T = 8 (both of the default sizes), and
    ResNet-8 on T = 8 with its engines side by side (OVERLAP = 1) and decoupled (2); every run equal to the
    integer interpreter (else the study stops)."""
    from compiler.testing.cnnbench import rows

    found = [row for machine in (PRESETS["t4"], PRESETS["t8"]) for row in rows(machine)]
    found += [row for overlap in MACHINES[1:]
              for row in rows(dataclasses.replace(PRESETS["t8"], OVERLAP=overlap), ("resnet8",))]
    for row in found:
        if not row["equal to the interpreter"]:
            raise StudyError(f"{row['model']} at T={row['T']}: its logits differ from the integer "
                             "interpreter")
    return found


def _cnn_lines(rows: list[dict] | None) -> list[str]:
    """Section 5 of the page."""
    if not rows:
        return []
    head = ["model", "T", "OVERLAP", "cycles per image", "launches", "MXU util %", "depthwise util %",
            "best bound", "limits", "Fmax MHz", "ms per image", "Cortex-M4 ms"]
    shown = [{h: ("-" if r.get(k) is None else r[k]) for h, k in zip(head, ["model", "T", "OVERLAP", "cycles",
              "launches", "utilisation %", "depthwise utilisation %", "best bound", "limits", "Fmax MHz",
              "ms per image", "Cortex-M4 ms"], strict=True)} for r in rows]
    lines = ["## 5. Convolutional networks: MLPerf Tiny's ResNet-8 and DS-CNN", "",
             "Written in PyTorch as the benchmark's Keras models are (compiler/workloads/mlperf_tiny.py; "
             "seeded weights, BatchNorm statistics drawn to look trained), lowered unchanged by "
             "`from_torch(model, (C, H, W), batch=1, per_channel=True)` and compiled for the default "
             "machine (T = 4) and for T = 8, LANES = 8, both of the default sizes (a 4,096-word "
             "scratchpad, 65,536 external words, 4,096 instructions; both fit the ECP5-85F: "
             "docs/sweep.md); OVERLAP 0 is the serial machine, 1 the one whose engines run side by "
             "side, 2 the decoupled one (docs/GA2.md section 7; their Fmax at T = 8 is unmeasured; on them "
             "best bound is the sum of each launch's largest lower bound, compiler/bounds.py, and limits "
             "names it). Activations that outgrow "
             "the scratchpad live in external memory and stream in bands of output rows "
             "(compiler/spill.py, compiler/convstep.py; a deep layer's bands run kernel row by kernel "
             "row, its weights streamed in chunks of K_MAX x T: compiler/convtaps.py; a residual "
             "add's rows are done by the bands of the convolution before it: compiler/residual.py); "
             "a program longer than the instruction memory runs as launches (Program.launches). One image, "
             "equal to the integer interpreter and within 10% of PyTorch; MXU utilisation is useful "
             "multiply-adds over T x T x cycles; the time at the machine's Fmax on the ECP5-85F "
             "(docs/sweep.md, place and route), beside the Cortex-M4 at 120 MHz of MLPerf Tiny v1.1 "
             "for ResNet-8. ResNet-8's two launches at T = 8 run bit-exact on Verilator "
             "(tests/test_examples.py::test_resnet8_on_verilator); these programs are not in the "
             "RTL run of sections 1-4.", "", *_table(shown, head), ""]
    for model in ("resnet8", "ds_cnn"):
        by_t = {r["T"]: r for r in rows if r["model"] == model and not r.get("OVERLAP")}
        layer_rows = [{"node": a["node"], "layer": a["layer"], "MACs": a["macs"], "T=4 cycles": a["cycles"],
                       "T=4 util %": a["utilisation %"], "T=8 cycles": b["cycles"],
                       "T=8 util %": b["utilisation %"]}
                      for a, b in zip(by_t[4]["layers"], by_t[8]["layers"], strict=True)]
        lines += [f"{model} per layer (one image, the serial machines; a node's cycles are the latencies of "
                  "the instructions its step wrote; the launches' front ends and HALTs are the rest):", "",
                  *_table(layer_rows), ""]
    return lines


def gpt_study() -> list[dict]:
    """examples/char_gpt.py's GPT by its shapes (compiler.testing.gptbench, also ``make bench``)
    on the default machine and on T = 8: per step the cycles per token and per kernel kind, and
    one LayerNorm and one softmax row against 2N + 50."""
    from compiler.testing import gptbench

    out = []
    for preset in (PRESETS["t4"], PRESETS["t8"]):
        out += [{"T": preset.T, **row} for row in gptbench.rows(preset)]
        out += [{"T": preset.T, "step": f"{c['op']} row of N = {c['N']}", "per token": c["cycles"],
                 "2N + 50": c["2N + 50"]} for c in gptbench.row_costs(preset)]
    return out


def _gpt_lines(rows: list[dict] | None) -> list[str]:
    """Section 6 of the page."""
    if not rows:
        return []
    from compiler.testing.gptbench import CONFIG, KINDS

    steps = [{"T": r["T"], "step": r["step"], "cycles": r["cycles"], "cycles per token": r["per token"],
              **{k: r[k] for k in KINDS}} for r in rows if "cycles" in r]
    units = [{"T": r["T"], "row": r["step"], "cycles": r["per token"], "2N + 50": r["2N + 50"]}
             for r in rows if "cycles" not in r]
    decode = [r for r in steps if r["step"].startswith("decode")]
    prompt = next(r["tokens"] for r in rows if r["step"].startswith("prefill"))
    heaviest = max(KINDS, key=lambda k: sum(r[k] for r in decode))
    return [f"## 6. A small GPT: cycles per token ({CONFIG.layers} layers, d_model {CONFIG.width}, "
            f"{CONFIG.heads} heads, context {CONFIG.context})", "",
            "examples/char_gpt.py's GPT by its shapes, with weights drawn at random (a program's cycles "
            "depend on its shapes only), compiled as `make generate` compiles it "
            f"(compiler/frontend/decode.py: a prefill of {prompt} prompt tokens in the chunks the scratchpad "
            "takes, then one program per cache length, the KV cache in external memory) and run on "
            "the reference machine (`python -m compiler.testing.gptbench`, part of `make bench`). "
            "A kernel's cycles per token are the serial spans of the instructions its node's step "
            "wrote (embedding: the GATHER and the position add; attention: q, k, v, the scores, "
            "softmax, P V, the cache's stores, the projection; mlp: both Linears and the GELU "
            "table); the rest of a step's cycles is the launch's front end and HALT.", "",
            *_table(steps), "",
            f"In decode, {heaviest} takes the most of a step's cycles: for one token every weight "
            "word is loaded and each MXU tile has one useful row in T (section 2); attention grows "
            "with the cache (its scores, softmax and P V are as long as the cache). One "
            "row of each of the integer-only units, from the spec's latencies, against issue 26's "
            "2N + 50:", "", *_table(units), ""]


def _table(rows: list[Mapping], head: list[str] | None = None) -> list[str]:
    head = head or list(rows[0])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append("| " + " | ".join(f"{r[h]:,}" if isinstance(r[h], int) else str(r[h]) for h in head)
                     + " |")
    return lines


def page(record: dict) -> str:
    """docs/studies.md from a run."""
    params = Params(**record["params"])
    machine_text = "the default machine" if params == DEFAULT else f"the machine {params}"
    ffn = record["decode_prefill"]
    block = record["block"]
    one, last = ffn[0], ffn[-1]
    seeds = next(r for r in record["options"] if r["program"] == "seeds 100-111")
    lines = [
        "# Back-end studies on GA-2",
        "",
        "<!-- Written by `python examples/studies.py --write` (make studies). Do not edit by hand. -->",
        "",
        f"Every figure is a run on the reference machine ({machine_text}: serial, OVERLAP = 0; with its "
        "engines side by side, OVERLAP = 1; decoupled, OVERLAP = 2: docs/GA2.md section 7; the RTL's "
        "counters are the same, `make cosim`), each program checked against the integer interpreter. "
        "Seed 004 asks these questions of a back end.",
        "",
        *_rtl_note(record.get("rtl"), record["programs"]),
        "## 1. What each option is worth (cycles)",
        "",
        "On the serial machine: nothing (`compile_graph(..., cse=False, fuse=False)`); + CSE, "
        "common-subexpression elimination alone (compiler/cse.py); + fusion, each relu the relu "
        "flag of the RQ or VADD before it instead of an identity RQ of its own; serial default, "
        "both. On the machine whose engines overlap: + overlap, nothing but the engines side by "
        "side (the instructions in emission order); + scheduling, the list scheduler of "
        "compiler/schedule.py reorders them so that loads run beside the compute (what double "
        "buffering buys on GA-2: the hardware checks every hazard, so any order the dependences "
        "allow is safe); all, everything (Capra's default there). On the decoupled machine "
        "(OVERLAP = 2: each engine has its own queue, and an instruction starts as soon as its own "
        "hazards clear): decoupled, nothing but that machine (the emission order; the station "
        "reorders in hardware); + scheduling (2), the same list scheduler, its order kept only when the "
        "decoupled rule says it saves cycles; all (2), everything (Capra's default there: blockings "
        "ranked by their cycles on that machine, compiler/blocking.py). Seeds 100-111 are summed.",
        "",
        *_table(record["options"]),
        "",
        _cse_note(record["options"]) + f" Seeds 100-111: {seeds['nothing']:,} cycles with nothing, "
        f"{seeds['serial default']:,} on the serial machine, {seeds['all']:,} with everything "
        f"({seeds['nothing'] / seeds['all']:.2f}x fewer), {seeds['all (2)']:,} with everything on the "
        f"decoupled machine ({seeds['nothing'] / seeds['all (2)']:.2f}x).",
        "",
        f"## 2. Decode and prefill: a feed-forward network {FFN[0]} -> {FFN[1]} -> {FFN[2]}",
        "",
        f"On the machine with a scratchpad of {FFN_SPAD_WORDS:,} words (64 tokens' hidden "
        "activations, 16,384 words, and their accumulator outgrow the default 4,096), serial and "
        "overlapped (Capra's defaults). Useful MXU utilisation counts the network's multiply-adds "
        "(tokens x 2 x 64 x 256) over T x T x cycles; padded MACs are the MM instructions' "
        "multiply-adds beyond those (none: the sizes are multiples of T). Weight words loaded: "
        "the scratchpad words the LDs of W1 and W2 write.",
        "",
        *_table(ffn),
        "",
        f"The knee (serial): {record['knee']}. One token moves all {one['weight words loaded']:,} "
        f"weight words for as many multiply-adds: serially the DMA is busy {one['DMA busy %']}% of "
        f"the cycles and the MXU {one['MXU busy %']}%, but the MXU's useful utilisation is only "
        f"{one['MXU util %']}% (each output tile has one useful row of T). "
        + _overlap_note(one) +
        f" At {last['tokens']} tokens the same loads serve {last['tokens']} rows: the DMA's "
        f"share falls to {last['DMA busy % (overlap)']}% and the MXU's utilisation reaches "
        f"{last['MXU util % (overlap)']}%: prefill is bound by the MXU.",
        "",
        f"## 3. Where a block spends its time ({BLOCK['tokens']} tokens, width {BLOCK['dim']}, "
        f"feed-forward {BLOCK['hidden']})",
        "",
        f"{block['cycles serial']:,} cycles serially, {block['cycles overlapped']:,} with the engines "
        f"side by side (the busiest engine alone needs {block['busiest engine']:,}). Per kernel kind "
        "(the graph operation whose step wrote each instruction; loads count for the first step "
        "that reads them), on the overlapping machine: busy cycles per engine, the cycles its "
        "instructions waited on a hazard (an instruction in flight on another engine writing what "
        "they read, or reading what they write) and on a scratchpad port, and the sum of spans.",
        "",
        *_table(block["kinds"]),
        "",
        *_targets_lines(record["targets"], record.get("cnn")),
        "",
        *_cnn_lines(record.get("cnn")),
        *_gpt_lines(record.get("gpt")),
    ]
    return "\n".join(lines)


def _overlap_note(one: dict) -> str:
    """What overlapping the engines did for one token."""
    saved = one["cycles"] - one["cycles (overlap)"]
    if one["DMA busy % (overlap)"] >= 80:
        return (f"With the engines overlapped one token takes {one['cycles (overlap)']:,} cycles, "
                f"{saved:,} fewer: the DMA is busy {one['DMA busy % (overlap)']}% of them and the MXU "
                f"{one['MXU busy % (overlap)']}%. The loads run beside the products: an LD's writes "
                "share the scratchpad's write port with the MXU's beat by beat (docs/GA2.md section "
                "7), and a weight larger than a piece of load streams in T-wide panels, each in a "
                "place of its own, so that each MM waits for its panel only (compiler/streaming.py). "
                "Decode is bound by moving the weights and by the MXU's one useful row in T alike.")
    return (f"With the engines overlapped one token takes {one['cycles (overlap)']:,} cycles, only "
            f"{saved:,} fewer, the DMA busy {one['DMA busy % (overlap)']}%: the loads and the products "
            "overlap little.")


def _rtl_note(rtl: dict | None, programs: dict) -> list[str]:
    if not rtl or any(rtl[k] != programs[k] for k in programs):
        return ["The programs of this run were not run on the RTL (`python examples/studies.py --rtl both` "
                "does it).", ""]
    sims = " and ".join({"icarus": "Icarus", "verilator": "Verilator"}[s] for s in rtl["simulators"])
    return [f"Every program of sections 1-4 ran on the RTL of its machine ({rtl['programs']} programs on "
            f"{rtl['machines']} machines, {rtl['cycles']:,} cycles in all) under {sims}: the same memory, "
            "word for word, the same counters and the same stop as the reference machine "
            "(`python examples/studies.py --rtl both`, cosim).", ""]


def _cse_note(rows: list[dict]) -> str:
    gains = [f"{r['program']} ({r['nothing'] - r['+ CSE']:,} cycles)" for r in rows
             if r["+ CSE"] < r["nothing"]]
    fused = [r for r in rows if r["+ fusion"] < r["nothing"]]
    cse = (f"CSE pays where a graph computes one tensor twice: {', '.join(gains)}; the other graphs "
           "repeat nothing.") if gains else "CSE changes none of these programs: none repeats a subgraph."
    return (f"{cse} Fusion saves one RQ pass over each relu's tensor ({len(fused)} of {len(rows)} "
            "programs have a relu).")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Seed 004's back-end studies on GA-2: options, decode "
                                     "against prefill, where a block spends its time (every figure a run).")
    parser.add_argument("--write", action="store_true",
                        help=f"store the run in {RECORD.relative_to(ROOT)}, write {PAGE.relative_to(ROOT)}")
    parser.add_argument("--no-digits", action="store_true", help="leave out the digits MLP (no PyTorch)")
    parser.add_argument("--rtl", choices=("both", "icarus", "verilator", "none"), default="none",
                        help="also run every program of the studies on the RTL of its machine under these "
                             "simulators (cosim: every memory word, counter and stop; builds the machines' "
                             "Verilog; about 10 minutes for both) and record it on the page (default: none)")
    add_machine(parser)
    args = parser.parse_args(argv)
    params = machine(parser, args)
    try:
        from report.rtl import simulators
        record = run(params, digits=not args.no_digits, rtl=simulators(args.rtl))
    except StudyError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    text = page(record)
    print()
    print(text)
    if args.write:
        RECORD.write_text(json.dumps(record, indent=1) + "\n")
        PAGE.write_text(text)
        print(f"wrote {RECORD} and {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
