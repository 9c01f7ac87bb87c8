"""The figures the README and the guide quote match their source of record.

Each entry of :data:`FIGURES` is a page, a phrase with ``{}`` where the figure stands, and the
function that computes the figure from its source: the records that ``make studies`` and
``make sweep`` write (docs/studies.json, docs/sweep.json), the SoC's record (docs/soc.json:
``python -m flows.axi_units`` and ``make soc-bitstream``), the lists the mutation checks run,
the fault sweep's programs, a compiled program, the test suite's own collection. The page must
contain the phrase with today's figure (spaces and line breaks count as one space), so a
figure that moves fails here until the text follows it, and a phrase that was reworded fails
until its entry does.

The tables of ``make bench`` on docs/guide/performance.md are checked row by row against its
output (test_quoted_bench.py). Not covered (no record in the repository to check them against):
times (they depend on the load, and are given with it), synthesis results that are not in
docs/sweep.json (the OVERLAP = 1 machine's Fmax and its history, the SoC's first ULX3S build),
the RTL mutants' score
(build/mutants-rtl/report.json is not committed), stress and co-simulation counts of past
campaigns, accuracies that need training (the digits MLP's 98.7%), the capacity figures of
``python -m compiler.testing.capacity`` (minutes to compute), and the figures of the pages that
their own generators write and their own tests check (docs/studies.md, docs/sweep.md,
docs/isa.md, docs/change-the-machine.md, docs/add-an-instruction.md).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from typing import NamedTuple

import pytest

from sim.spec import DEFAULT
from tests.conftest import SUITE_COUNTS

from .quoted import ROOT


class Figure(NamedTuple):
    page: str
    phrase: str
    value: Callable[[], object]
    source: str

    def __str__(self) -> str:
        return f"{self.page}: {self.phrase}"


@cache
def studies() -> dict:
    return json.loads((ROOT / "docs" / "studies.json").read_text())


@cache
def soc_record() -> dict:
    return json.loads((ROOT / "docs" / "soc.json").read_text())


def unit_row(unit: str) -> tuple:
    """docs/soc.json, units: a unit's LUT4, PFUMX, L6MUX21, carry cells and flip-flops."""
    cells = soc_record()["units"]["cells"][unit]
    return tuple(cells[c] for c in ("LUT4", "PFUMX", "L6MUX21", "CCU2C", "TRELLIS_FF"))


def units_total() -> tuple:
    """docs/soc.json, units: the LUT4 and flip-flops of all three, and the LUT4 against the core's
    (docs/sweep.json, t4), in percent."""
    cells = soc_record()["units"]["cells"].values()
    luts, ffs = sum(c["LUT4"] for c in cells), sum(c["TRELLIS_FF"] for c in cells)
    return luts, ffs, round(100 * luts / synth("t4", "LUT4")), synth("t4", "LUT4")


def ulx3s(key: str):
    """docs/soc.json, ulx3s: a figure of the last ``make soc-bitstream --record``."""
    return soc_record()["ulx3s"][key]


def ulx3s_used(resource: str) -> tuple[int, int, int]:
    """docs/soc.json, ulx3s: a resource's use, its total on the part, the use in percent."""
    used = ulx3s("used")[resource]
    return used["used"], used["available"], round(100 * used["used"] / used["available"])


def ulx3s_clock() -> tuple[str, int, str]:
    fmax, target = ulx3s("fmax_mhz"), ulx3s("target_mhz")
    return mhz(fmax), round(target), "met" if fmax >= target else "NOT met"


def ulx3s_path() -> tuple[float, int, int]:
    path, fmax, target = ulx3s("critical_path"), ulx3s("fmax_mhz"), ulx3s("target_mhz")
    return path["delay_ns"], path["logic_levels"], round(100 * (fmax - target) / target)


@cache
def sweep() -> dict:
    return {row["machine"]: row for row in json.loads((ROOT / "docs" / "sweep.json").read_text())["figures"]}


def option(program: str, column: str) -> int:
    """docs/studies.json, section 1: the cycles of a program with a set of options."""
    return next(row[column] for row in studies()["options"] if row["program"] == program)


def decode(column: str):
    """docs/studies.json, section 2: the decode row (1 token)."""
    return next(row[column] for row in studies()["decode_prefill"] if row["tokens"] == 1)


def synth(machine: str, key: str):
    return sweep()[machine]["synth"][key]


def _names(names: list[str]) -> str:
    return " and ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " and " + names[-1]


def synthesised() -> str:
    """The sweep's machines with synthesis figures of the current sources and their Fmax, as
    "t4 at 101.3 MHz and t8 at 68.0 MHz"; one that was not placed, as "t8 OVERLAP=2 (does not
    fit the part)" or "t16 (Yosys only)"."""
    def said(name: str, synth: dict) -> str:
        if synth["Fmax"] is not None:
            return f"{name} at {mhz(synth['Fmax'])} MHz"
        return f"{name} ({'does not fit the part' if synth['overfull'] else 'Yosys only'})"
    return _names([said(name, row["synth"]) for name, row in sweep().items() if row["synth"].get("LUT4")])


def unsynthesised() -> str:
    """The sweep's machines with no synthesis figures of the current sources, as "t2 and t16"."""
    return _names([name for name, row in sweep().items() if not row["synth"].get("LUT4")])


def mhz(value: float) -> str:
    return f"{value:.1f}"


def compiler_mutants(name: str = "MUTANTS") -> int:
    from compiler.testing import mutants
    return len(getattr(mutants, name))


def issue_rule_mutants() -> int:
    sys.path.insert(0, str(ROOT / "tests" / "sim"))
    try:
        import issue_mutant
    finally:
        sys.path.remove(str(ROOT / "tests" / "sim"))
    return len(issue_mutant.MUTANTS)


def fault_programs() -> int:
    from cosim import faults
    return len(faults.jobs(DEFAULT))


def example_a_instructions() -> int:
    from compiler import compile_graph
    from compiler.workloads.seedtable import attention_step_network
    graph, calibration, _inputs = attention_step_network()
    return len(compile_graph(graph, calibration).code)


def example_a_decoupled() -> tuple[int, int, int, int]:
    """Running example A compiled for OVERLAP = 2: its cycles on the reference machine, its best
    bound, and its longest chain's cycles of hazards and of an engine's queue."""
    from compiler import compile_graph
    from compiler.bounds import bounds
    from compiler.workloads.seedtable import attention_step_network
    from sim.spec import Params
    graph, calibration, inputs = attention_step_network()
    decoupled = Params(OVERLAP=2)
    program = compile_graph(graph, calibration, params=decoupled)
    b = bounds(program.code, decoupled)
    chain = dict(b.chain)
    return program.run(inputs, warn=False).counters.cycles, b.best, chain["hazard"], chain["engine"]


@cache
def what_if_rows() -> dict[str, tuple[int, ...]]:
    """examples/what_if.py's table: program -> its cycles with each variant of the rule."""
    sys.path.insert(0, str(ROOT / "examples"))
    import what_if
    return {name: tuple(row[v] for v in what_if.VARIANTS) for name, row in what_if.table()}


SESSION_COUNTS: dict[str, int] = {}
"""The running session's count of the whole suite, when it collected all of it (tests/conftest.py's
SUITE_COUNTS; set by the test that reads the counts)."""


@cache
def collected() -> dict[str, int]:
    """The test suite's own count: ``{"fast": tests make test runs, "slow": the rest}``: the running
    session's when it collected the whole suite, else one ``pytest --collect-only`` (about 15 s)."""
    if SESSION_COUNTS:
        return dict(SESSION_COUNTS)
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "-m", "slow"], cwd=ROOT, capture_output=True, text=True, check=False).stdout
    counts = re.search(r"(\d+)/(\d+) tests collected \((\d+) deselected\)", out)
    assert counts, f"pytest's collection ended without its count:\n{out[-2000:]}"
    slow, total = int(counts.group(1)), int(counts.group(2))
    return {"fast": total - slow, "slow": slow}


def about(count: Callable[[], int], quoted: int, within: float = 0.1) -> Callable[[], object]:
    """An "about N" figure: N itself while the count stays within ``within`` of it (the suite
    grows with every change: a quoted round figure holds for a while, then must follow)."""
    def check() -> object:
        actual = count()
        if abs(actual - quoted) <= within * actual:
            return f"{quoted:,}"
        return f"{actual:,} (quoted: about {quoted:,})"
    return check


SERIAL, OVERLAPPED, DECOUPLED = "serial default", "all", "all (2)"
SEEDS, EXAMPLE_A = "seeds 100-111", "example A"
README, START, PERF = "README.md", "docs/guide/start.md", "docs/guide/performance.md"
MAKE, FPGA, SOC = "docs/reference/make.md", "docs/guide/fpga.md", "docs/guide/soc.md"
TRANSFORMER, INSPECT = "docs/guide/transformer.md", "docs/guide/inspect.md"
STUDIES, SWEEP, MUTANTS = "docs/studies.json", "docs/sweep.json", "compiler/testing/mutants.py"
SOC_RECORD = "docs/soc.json"
FAST_TESTS = about(lambda: collected()["fast"], 2500)


def fmax(machine: str) -> str:
    return mhz(synth(machine, "Fmax"))


def seeds_both() -> tuple[int, int]:
    return option(SEEDS, SERIAL), option(SEEDS, OVERLAPPED)


def decoupled_chain(program: str) -> dict[str, int]:
    """docs/studies.json, section 4: the longest chains' cycles by kind of link (compiler.bounds
    Bounds.chain) of a program on the decoupled machine."""
    return next(r["chain"] for r in studies()["targets"] if r["program"] == program and r["OVERLAP"] == 2)


def seeds_chain() -> tuple:
    c = decoupled_chain(SEEDS)
    total = sum(c.values())
    share = {kind: round(100 * n / total) for kind, n in c.items()}
    return (total, c["engine"], share["engine"], c["hazard"], share["hazard"], c["read window"],
            c["front end"] + c["last"])


def example_b_engine_share() -> int:
    c = decoupled_chain("example B w48")
    return round(100 * c["engine"] / sum(c.values()))


def decode_overlapped() -> tuple[int, float]:
    return decode("cycles (overlap)"), decode("DMA busy % (overlap)")


def studies_on_the_rtl() -> tuple[int, int]:
    return studies()["rtl"]["programs"], studies()["rtl"]["cycles"]


def ln_cycles(n: int = 64) -> int:
    """sim/spec.py: LN's latency for a row of n int8 values on the default machine."""
    from sim import spec
    return spec.latency(spec.BY_NAME["LN"], {"dst": 0, "src": 0, "len": n, "bias": 0, "eps": 0}, spec.DEFAULT)


def gather_cycles(n: int = 64) -> int:
    """sim/spec.py: GATHER's latency for a row of n words on the default machine."""
    from sim import spec
    fields = {"dst": 0, "src": 0, "len": n, "fmt": 0, "idx": 0, "rows": 1}
    return spec.latency(spec.BY_NAME["GATHER"], fields, spec.DEFAULT)


def block_cycles() -> int:
    """examples/transformer_block.py: the pre-norm block's cycles at T = 8 on the default machine."""
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import transformer_block
    finally:
        sys.path.remove(str(ROOT / "examples"))
    _, lowered, program, x = transformer_block.compiled(False, 8)
    return program.run(lowered.feed(x), warn=False).counters.cycles


def streaming_mutants() -> str:
    count = compiler_mutants("STREAMING_MUTANTS")
    return "Five" if count == 5 else str(count)


FIGURES = [
    Figure(README, "| {:,} (the seed's chip: 17,022) |", lambda: option(SEEDS, SERIAL),
           f"{STUDIES}: options, seeds 100-111, serial default"),
    Figure(README, "| the same with the engines side by side | {:,} |", lambda: option(SEEDS, OVERLAPPED),
           f"{STUDIES}: options, seeds 100-111, all"),
    Figure(README, "| the same with the engines decoupled | {:,} |", lambda: option(SEEDS, DECOUPLED),
           f"{STUDIES}: options, seeds 100-111, all (2)"),
    Figure(README, "| {} MHz, {:,} LUT4 | `OVERLAP=2`",
           lambda: (fmax("t4 OVERLAP=2"), synth("t4 OVERLAP=2", "LUT4")), f"{SWEEP}: t4 OVERLAP=2"),
    Figure(README, "| {:,} cycles, DMA busy {}% |", decode_overlapped, f"{STUDIES}: decode, 1 token"),
    Figure(README, "| {:,} programs, {:,} cycles, bit-exact |", studies_on_the_rtl, f"{STUDIES}: rtl"),
    Figure(README, "| {} MHz, {:,} LUT4 | default machine", lambda: (fmax("t4"), synth("t4", "LUT4")),
           f"{SWEEP}: t4"),
    Figure(README, "| broken compilers the battery catches | {0} of {0} |", compiler_mutants,
           f"{MUTANTS}: MUTANTS"),
    Figure(README, "its {} instructions on GA-2's engines", example_a_instructions, "example A compiled"),
    Figure(README, "`make test` runs about {} tests", FAST_TESTS, "pytest --collect-only, not slow"),
    Figure(README, "| about {} tests;", FAST_TESTS, "pytest --collect-only, not slow"),
    Figure(START, "`make test` runs about {} tests", FAST_TESTS, "pytest --collect-only, not slow"),
    Figure(START, "The about {} slow tests", about(lambda: collected()["slow"], 130, 0.2),
           "pytest --collect-only -m slow"),
    Figure(PERF, "it needs {:,} cycles where the seed's", lambda: option(SEEDS, SERIAL),
           f"{STUDIES}: options, seeds 100-111, serial default"),
    Figure(PERF, "example A {} {} 484", lambda: (example_a_instructions(), option(EXAMPLE_A, SERIAL)),
           f"example A compiled; {STUDIES}"),
    Figure(PERF, "seeds 100-111: {} cycles (seed chip 17022", lambda: option(SEEDS, SERIAL),
           f"{STUDIES}: options, seeds 100-111, serial default"),
    Figure(PERF, "| seeds 100-111 (total) | {:,} | {:,} |", seeds_both, f"{STUDIES}: options, seeds 100-111"),
    Figure(PERF, "| example A | {} | {} |",
           lambda: (option(EXAMPLE_A, SERIAL), option(EXAMPLE_A, OVERLAPPED)),
           f"{STUDIES}: options, example A"),
    Figure(PERF, "of the seeds' {:,} cycles, {:,} ({}%) are instructions the next one on the same engine "
           "waits for (the matrix unit's tiles one after another, the vector unit's passes: an engine runs "
           "one instruction at a time), {:,} ({}%) hazards (a read after write or a write after write, "
           "waiting for the whole instruction's end), {} read windows, and {} the front end", seeds_chain,
           f"{STUDIES}: targets, seeds 100-111, OVERLAP = 2, chain"),
    Figure(INSPECT, "Running example A at OVERLAP = 2 runs in {} cycles against a best bound of {}, its "
           "chain {} cycles of hazards and {} of an engine's queue", example_a_decoupled,
           "example A compiled for OVERLAP = 2, compiler.bounds"),
    Figure(PERF, "| seeds 100-111 | {:,} | {:,} | {:,} | {:,} |", lambda: what_if_rows()[SEEDS],
           "python examples/what_if.py"),
    Figure(PERF, "| example B w48 | {:,} | {:,} | {:,} | {:,} |", lambda: what_if_rows()["example B w48"],
           "python examples/what_if.py"),
    Figure(PERF, "example B at width 48 is {}% engine", example_b_engine_share,
           f"{STUDIES}: targets, example B w48, OVERLAP = 2, chain"),
    Figure(PERF, "one token: {:,} cycles, the DMA busy {}%", decode_overlapped,
           f"{STUDIES}: decode, 1 token"),
    Figure(MAKE, "({0} of {0} today, {1} of them broken schedulers for `OVERLAP=1`, {2} broken blocking cost "
           "models and {3} broken LayerNorm",
           lambda: tuple(map(compiler_mutants, ("MUTANTS", "SCHEDULE_MUTANTS", "COST_MUTANTS",
                                                "TRANSFORMER_MUTANTS"))), MUTANTS),
    Figure(MAKE, "which the battery's tiny GPT steps catch, and {} broken convolutions",
           lambda: compiler_mutants("CONV_MUTANTS"), MUTANTS),
    Figure(MAKE, "and {} broken schedulers and blocking rankings for `OVERLAP=2`",
           lambda: compiler_mutants("DECOUPLED_MUTANTS"), MUTANTS),
    Figure(MAKE, "then {} broken issue rules of the reference machine", issue_rule_mutants,
           "tests/sim/issue_mutant.py: MUTANTS"),
    Figure(MAKE, "every one of the {} programs on the RTL", lambda: studies()["rtl"]["programs"],
           f"{STUDIES}: rtl"),
    Figure(MAKE, "(utilisation, Fmax {} MHz", lambda: fmax("t4"), f"{SWEEP}: t4"),
    Figure(MAKE, "current sources only: {}; not synthesised since their sources changed: {}",
           lambda: (synthesised(), unsynthesised()), SWEEP),
    Figure(FPGA, "| LUT4 (logic cells, carry halves included) | {:,} | 83,640 |", lambda: synth("t4", "LUT4"),
           f"{SWEEP}: t4"),
    Figure(FPGA, "| flip-flops | {:,} | 83,640 |", lambda: synth("t4", "FF"), f"{SWEEP}: t4"),
    Figure(FPGA, "| DSP multipliers (MULT18X18D) | {} | 156 |", lambda: synth("t4", "DSP"), f"{SWEEP}: t4"),
    Figure(FPGA, "| block RAM (DP16KD, PDPW16KD) | {} | 208 |", lambda: synth("t4", "DP16KD"),
           f"{SWEEP}: t4"),
    Figure(FPGA, "**Fmax {} MHz** against the 100 MHz target", lambda: fmax("t4"), f"{SWEEP}: t4"),
    *(Figure(SOC, f"| `{unit}` ({what}) | {{:,}} | {{:,}} / {{:,}} | {{:,}} | {{:,}} |",
             lambda unit=unit: unit_row(unit), f"{SOC_RECORD}: units") for unit, what in (
        ("AxiReader", "AR, R, the 4-word buffer, the cut to the DMA's beats"),
        ("AxiWriter", "the rotation to the bus's lanes, the W and AW queues, B"),
        ("AxiLiteRegs", "the decode and the read multiplexer of 20 registers"))),
    Figure(SOC, "{:,} LUT4 and {:,} flip-flops, {}% more logic than the core's {:,} LUT4", units_total,
           f"{SOC_RECORD}: units; {SWEEP}: t4"),
    Figure(SOC, "its Fmax (`make synth`: {} MHz) are unchanged", lambda: fmax("t4"), f"{SWEEP}: t4"),
    Figure(SOC, "**System clock: {} MHz after routing, {} MHz asked: {}.**", ulx3s_clock,
           f"{SOC_RECORD}: ulx3s"),
    Figure(SOC, "LFE5U-85F, speed grade {},", lambda: ulx3s("speed"), f"{SOC_RECORD}: ulx3s"),
    Figure(SOC, "nextpnr seed {};", lambda: ulx3s("seed"), f"{SOC_RECORD}: ulx3s"),
    Figure(SOC, "The critical path ({} ns, {} logic levels)", lambda: ulx3s_path()[:2],
           f"{SOC_RECORD}: ulx3s"),
    Figure(SOC, "The margin is {}%;", lambda: ulx3s_path()[2], f"{SOC_RECORD}: ulx3s"),
    *(Figure(SOC, f"| {label} (`{name}`) | {{:,}} | {{:,}} ({{}}%) |", lambda name=name: ulx3s_used(name),
             f"{SOC_RECORD}: ulx3s") for label, name in (
        ("LUT4", "TRELLIS_COMB"), ("flip-flops", "TRELLIS_FF"), ("block RAM", "DP16KD"),
        ("DSP", "MULT18X18D"), ("distributed RAM", "TRELLIS_RAMW"))),
    Figure(README, "the SoC on the ULX3S 85F: {} MHz after routing ({} asked), {:,} LUT4",
           lambda: (mhz(ulx3s("fmax_mhz")), round(ulx3s("target_mhz")), ulx3s_used("TRELLIS_COMB")[0]),
           f"{SOC_RECORD}: ulx3s"),
    Figure("docs/guide/verification.md", "sweeps them one short program each ({} on the default machine",
           fault_programs, "cosim/faults.py: jobs()"),
    Figure(README, "| LayerNorm of a row of 64 int8 values (LN) | {} cycles", ln_cycles,
           "sim/spec.py: LN's latency, N = 64"),
    Figure(TRANSFORMER, "**LN takes {} cycles for a row of N = 64**", ln_cycles,
           "sim/spec.py: LN's latency, N = 64"),
    Figure(TRANSFORMER, "Latency `ceil(len/LANES) + 8` ({} for a row of 64)", gather_cycles,
           "sim/spec.py: GATHER's latency, len = 64"),
    Figure(TRANSFORMER, "the same program, {:,} cycles on the default machine", block_cycles,
           "examples/transformer_block.py, T = 8"),
    Figure("docs/index.md", "{} more mutants break the streaming", streaming_mutants,
           f"{MUTANTS}: STREAMING_MUTANTS"),
]


def _text(page: str) -> str:
    return " ".join((ROOT / page).read_text().split())


def _phrase(figure: Figure) -> str:
    value = figure.value()
    return figure.phrase.format(*value) if isinstance(value, tuple) else figure.phrase.format(value)


def figure_problem(figure: Figure) -> str | None:
    expected = _phrase(figure)
    if expected in _text(figure.page):
        return None
    return (f"{figure.page} should say {expected!r} ({figure.source}); if the text was reworded, "
            "update its entry in tests/docs/test_quoted_figures.py")


@pytest.mark.parametrize("page", sorted({f.page for f in FIGURES}))
def test_the_quoted_figures_match_their_sources(page):
    problems = [figure_problem(f) for f in FIGURES if f.page == page and "tests" not in f.phrase]
    assert [p for p in problems if p] == []


def test_the_quoted_test_counts_are_current(pytestconfig):
    """The four phrases that count tests, against the running session's count of the suite (make
    test's) or, when it ran only part of it, one collection of the whole."""
    SESSION_COUNTS.update(pytestconfig.stash.get(SUITE_COUNTS, {}))
    problems = [figure_problem(f) for f in FIGURES if "tests" in f.phrase]
    assert [p for p in problems if p] == []


@pytest.mark.slow
def test_the_session_counts_the_suite_as_a_collection_does(pytestconfig):
    """tests/conftest.py's count of a whole-suite session equals pytest --collect-only's (run the
    whole suite, make test-all, for the session's count to exist)."""
    counts = pytestconfig.stash.get(SUITE_COUNTS, None)
    if counts is None:
        pytest.skip("this session did not collect the whole suite")
    SESSION_COUNTS.clear()
    collected.cache_clear()
    assert collected() == counts


def test_a_moved_figure_fails():
    moved = Figure("README.md", "| the same with the engines side by side | {:,} |", lambda: 4465, "a test")
    assert figure_problem(moved).startswith(
        "README.md should say '| the same with the engines side by side | 4,465 |' (a test)")
    assert about(lambda: 2100, 1800)() == "2,100 (quoted: about 1,800)"
    assert about(lambda: 1950, 1800)() == "1,800"
