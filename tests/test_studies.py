"""docs/studies.md (examples/studies.py, make studies): the page is what a run gives today,
and its figures agree with what is known independently of the study's code."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from filelock import FileLock

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))

import studies  # noqa: E402  (examples/ is not a package)

from compiler import compile_graph  # noqa: E402
from sim import spec  # noqa: E402
from sim.spec import DEFAULT  # noqa: E402

# the record of sections 1-4 takes half a minute to compute (once: the fixture below)
pytestmark = pytest.mark.xdist_group("studies")

MODELS = ("cnn", "gpt")
"""The record's sections 5 and 6 (the MLPerf Tiny models, the GPT): twelve minutes of compiling
and running at a load of 4, so make test takes them from the stored record and the slow
test_the_models_sections_are_up_to_date (make test-all) computes them again; make test checks
their cycles against the pins of tests/compiler/workloads/test_mlperf_tiny.py."""


@pytest.fixture(scope="session")
def record(tmp_path_factory, worker_id) -> dict:
    # computed once for the whole run: make test's --dist loadgroup keeps this module's tests on
    # one worker, and should they be spread (pytest 9.2 broke the grouping: pyproject.toml pins
    # below it), the first worker writes it beside the workers' temporary folders (xdist's
    # documented recipe) and the others wait for it
    def computed() -> str:
        return json.dumps(studies.run(DEFAULT, digits=True, models=False))

    if worker_id == "master":
        return json.loads(computed())
    shared = tmp_path_factory.getbasetemp().parent / "studies-record.json"
    with FileLock(f"{shared}.lock"):
        if not shared.is_file():
            shared.write_text(computed())
        return json.loads(shared.read_text())


def test_the_page_and_its_record_are_up_to_date(record):
    """The record holds cycles, counts and bounds, exact integers on every machine, and a digest
    of the programs' exact parts only (studies.programs_entry: instructions without their
    requantization multipliers and shifts, the external images' sizes): the weights, inputs and
    scales come from floating-point training and calibration whose last bits differ between
    CPUs, and a digest of them failed this test on another machine (issue 24, defect 1)."""
    stored = json.loads(studies.RECORD.read_text())
    rtl = stored.pop("rtl", None)               # written only by a run on the simulators
    models = {k: stored.pop(k) for k in MODELS}
    assert stored == record, "docs/studies.json is stale: make studies"
    assert rtl is not None, "docs/studies.json has no RTL run: make studies (it runs them: RTL=both)"
    assert {k: rtl[k] for k in record["programs"]} == record["programs"], \
        "the RTL run of docs/studies.json was of other programs: make studies"
    assert rtl["simulators"] == ["icarus", "verilator"]
    assert studies.PAGE.read_text() == studies.page(record | models | {"rtl": rtl}), \
        "docs/studies.md is stale: make studies"


def test_the_models_rows_are_the_pinned_cycles():
    """Section 5's cycles per image are those tests/compiler/workloads/test_mlperf_tiny.py pins
    (DS-CNN at T = 8 measured there in make test, the others in make test-all)."""
    from tests.compiler.workloads.test_mlperf_tiny import CYCLES, DECOUPLED, LAUNCHES, OVERLAPPED
    rows = json.loads(studies.RECORD.read_text())["cnn"]
    serial = {(r["model"], f"t{r['T']}"): (r["cycles"], r["launches"]) for r in rows if not r["OVERLAP"]}
    assert serial == {k: (CYCLES[k], LAUNCHES[k]) for k in CYCLES}
    assert [(r["model"], r["T"], r["OVERLAP"], r["cycles"]) for r in rows if r["OVERLAP"]] == [
        ("resnet8", 8, 1, OVERLAPPED), ("resnet8", 8, 2, DECOUPLED)]


@pytest.mark.slow
def test_the_models_sections_are_up_to_date():
    """Sections 5 and 6 as a run computes them today (make test-all: ResNet-8 six ways)."""
    stored = json.loads(studies.RECORD.read_text())
    today = {"cnn": studies.cnn_study(), "gpt": studies.gpt_study()}
    assert {k: stored[k] for k in MODELS} == json.loads(json.dumps(today)), \
        "docs/studies.json's sections 5 and 6 are stale: make studies"


def test_the_record_counts_every_program_the_studies_run(record):
    """Study 1: 12 seeds and 8 other programs under 7 option sets (the digits MLP included);
    study 2: 7 token counts on 2 machines; study 3: the block on 2."""
    assert record["programs"]["programs"] == (12 + 8) * len(studies.OPTIONS) + 7 * 2 + 2
    option_cycles = sum(row[label] for row in record["options"] for label in studies.OPTIONS)
    ffn = sum(r["cycles"] + r["cycles (overlap)"] for r in record["decode_prefill"])
    block = record["block"]["cycles serial"] + record["block"]["cycles overlapped"]
    assert record["programs"]["cycles"] == option_cycles + ffn + block


def test_the_serial_default_is_the_default_compiler(record):
    rows = {r["program"]: r for r in record["options"]}
    assert rows["seeds 100-111"]["serial default"] == 4940          # make bench's headline (README)
    assert rows["example A"]["serial default"] == 164
    for row in record["options"]:                         # no option makes a program slower
        assert row["serial default"] <= min(row["+ CSE"], row["+ fusion"]) <= row["nothing"]
        assert row["all"] <= row["+ scheduling"] <= row["+ overlap"]
        assert row["+ scheduling (2)"] <= row["decoupled"]     # the schedule is kept only when it saves


def test_all_on_the_overlapping_machine_is_its_default_compiler(record):
    import dataclasses
    case = studies.attention_step_network()
    program = compile_graph(case[0], case[1], params=dataclasses.replace(DEFAULT, OVERLAP=1))
    rows = {r["program"]: r for r in record["options"]}
    assert rows["example A"]["all"] == program.run(case[2]).counters.cycles


def test_an_unfused_relu_costs_one_rq_over_its_tensor(record):
    # the FFN of study 2 at 1 token: one relu over a 1 x 256 hidden tensor
    graph = studies.ffn_graph(1)
    calibration = studies._gaussian_case(graph, 1)[1]
    fused = compile_graph(graph, calibration)
    unfused = compile_graph(graph, calibration, fuse=False)
    rq = spec.latency(spec.BY_NAME["RQ"], {"len": 256}, params=DEFAULT)
    assert len(unfused.code) == len(fused.code) + 1
    test = calibration[0]
    assert unfused.run(test).counters.cycles - fused.run(test).counters.cycles == rq


def test_decode_moves_every_weight_word_once_and_prefill_amortises_it(record):
    rows = record["decode_prefill"]
    assert [r["tokens"] for r in rows] == [1, 2, 4, 8, 16, 32, 64]
    for r in rows:
        assert r["weight words loaded"] == 2 * 64 * 256     # W1 and W2, each word once
        macs = r["tokens"] * 2 * 64 * 256
        assert r["MXU util %"] == round(100 * macs / (16 * r["cycles"]), 1)   # T = 4
        assert r["padded MACs"] == 0
        assert r["cycles (overlap)"] <= r["cycles"]
    per_token = [r["per token"] for r in rows]
    assert per_token == sorted(per_token, reverse=True)
    assert rows[0]["DMA busy %"] > 40 > rows[-1]["DMA busy %"] * 5


def test_the_blocks_engines_and_waits_add_up_to_its_counters(record):
    import dataclasses
    case = studies._gaussian_case(studies.block_graph(**studies.BLOCK), 6)
    serial = studies.checked_run("block", case, DEFAULT)[1].counters
    block, run = studies.checked_run("block", case, dataclasses.replace(DEFAULT, OVERLAP=1))
    counters = run.counters
    kinds = {r["kernel"]: r for r in record["block"]["kinds"]}
    assert record["block"]["cycles serial"] == serial.cycles
    assert record["block"]["cycles overlapped"] == counters.cycles < serial.cycles
    spans = sum(r["sum of spans"] for r in kinds.values())
    assert spans == counters.dma + counters.mxu + counters.vpu + counters.sfu   # every span is an engine's
    assert sum(r["MXU"] for r in kinds.values()) == counters.mxu == serial.mxu == kinds["matmul"]["MXU"]
    assert sum(r["softmax"] for r in kinds.values()) == counters.sfu == kinds["softmax"]["softmax"]
    assert sum(r["waited on a hazard"] for r in kinds.values()) == counters.hazard
    assert sum(r["waited on a port"] for r in kinds.values()) == counters.port
    assert sum(r["instructions"] for r in kinds.values()) == len(block.code) - 1   # HALT has no span


def test_a_program_that_disagrees_with_the_interpreter_stops_the_study(monkeypatch):
    from compiler import interpret as interpreter

    def off_by_one(program, inputs):
        return {k: v + 1 for k, v in interpreter.interpret(program, inputs).items()}

    monkeypatch.setattr(studies, "interpret", off_by_one)
    with pytest.raises(studies.StudyError, match=r"example A \{\}: output 'out' differs"):
        studies.checked_run("example A", studies.attention_step_network(), DEFAULT)


def test_the_targets_agree_with_the_other_studies_and_their_bounds_hold(record):
    """Section 4's cycles are those of study 1's default columns on each machine and study 2's runs;
    no bound exceeds the cycles; one token of decode keeps the DMA busy 90% of the cycles on the
    machines whose engines overlap (issue 15's target: the LDs share the write port beat by beat,
    the weights stream in panels)."""
    rows = {(r["program"], r["OVERLAP"]): r for r in record["targets"]}
    assert {m for _, m in rows} == set(studies.MACHINES) == {0, 1, 2}
    options = {r["program"]: r for r in record["options"]}
    for overlap, column in ((0, "serial default"), (1, "all"), (2, "all (2)")):
        assert rows["seeds 100-111", overlap]["cycles"] == options["seeds 100-111"][column]
        assert rows["example B w48", overlap]["cycles"] == options["example B w48"][column]
    first = record["decode_prefill"][0]
    assert rows["decode, 1 token", 0]["cycles"] == first["cycles"]
    assert rows["decode, 1 token", 1]["cycles"] == first["cycles (overlap)"]
    for row in record["targets"]:
        if row["OVERLAP"]:
            bounds = [row[k] for k in ("engine", "read port", "issue", "dependences", "MXU roof", "DMA roof")]
            assert max(bounds) <= row["best bound"] <= row["cycles"], row["program"]
        else:
            assert max(row["MXU roof"], row["DMA roof"]) <= row["best bound"] == row["cycles"]
    for overlap in (1, 2):
        one = rows["decode, 1 token", overlap]
        assert one["DMA busy"] >= 0.9 * one["cycles"]
    assert record["decode_prefill"][0]["DMA busy % (overlap)"] >= 90


def test_the_decoupled_figures_are_the_benches(record):
    """On the decoupled machine (OVERLAP = 2) section 4's seeds are make bench's (the seed table's
    compile, compiler.workloads.seedtable), its digits MLP mlpbench's, and section 5's ResNet-8 at
    T = 8 lies between its launches' bounds and the serial machine's cycles."""
    import dataclasses

    from compiler.testing import mlpbench
    from compiler.workloads.seedtable import compile_seed

    decoupled = dataclasses.replace(DEFAULT, OVERLAP=2)
    rows = {(r["program"], r["OVERLAP"]): r for r in record["targets"]}
    seeds = sum(compile_seed(s, decoupled).outcome.counters.cycles for s in studies.TABLE_SEEDS)
    assert rows["seeds 100-111", 2]["cycles"] == seeds
    mlp = mlpbench.measure(8, decoupled)
    digits = rows["digits MLP, batch 8", 2]
    assert (digits["cycles"], digits["macs"]) == (mlp.cycles, mlp.macs)
    stored = json.loads(studies.RECORD.read_text())["cnn"]     # section 5: see MODELS
    resnet = {r["OVERLAP"]: r for r in stored if r["model"] == "resnet8" and r["T"] == 8}
    assert resnet[2]["best bound"] <= resnet[2]["cycles"] < resnet[0]["cycles"]
    assert resnet[0]["best bound"] is None


def test_the_programs_digest_is_of_their_exact_parts():
    """Another CPU's calibration moves requantizer fields and external data, never the
    program's places, sizes and modes: the digest ignores the first and sees the second."""
    import dataclasses

    from cosim.jobs import Job
    from sim.asm import build, decode_program

    program, _ = studies.checked_run("example A", studies.attention_step_network(), DEFAULT)
    job = Job.of_program(program, studies.attention_step_network()[2], "example A")
    base = studies.programs_entry([job])["digest"]

    def digest(**changes) -> str:
        return studies.programs_entry([dataclasses.replace(job, **changes)])["digest"]

    code = decode_program(job.words)
    k = next(i for i, ins in enumerate(code) if ins.op == "RQ")
    fields = code[k].fields
    for name, value in (("m", fields["m"] ^ 1), ("s", fields["s"] % 63 + 1), ("dst", fields["dst"] + 1)):
        moved = [*code[:k], build("RQ", params=DEFAULT, **(fields | {name: value})), *code[k + 1:]]
        assert (digest(program=moved) == base) is (name != "dst"), name
    ext = np.array(job.ext, copy=True)
    ext[0] ^= 1
    assert digest(ext=ext) == base
    name, entry = next(iter(program.ext.items()))
    shifted = {**program.ext, name: dataclasses.replace(entry, addr=entry.addr + 1)}
    assert digest(compiled=dataclasses.replace(program, ext=shifted)) != base


def test_make_tests_loadgroup_keeps_this_module_on_one_worker(request):
    """make test's --dist loadgroup sends this module's tests to one worker as a unit (xdist marks
    them by a suffix of their node ids), so the record is computed while the other worker works.
    pytest 9.2 broke the suffix (pytest-dev/pytest-xdist#1386): the tests then spread over both
    workers and one waited half a minute on the other's computation. Outside such a run there is
    nothing to check."""
    config = request.config
    if getattr(config, "workerinput", None) is None or config.getoption("dist", "no") != "no" \
            or not config.getoption("loadgroup", False):
        pytest.skip("not a worker of pytest -n N --dist loadgroup")
    assert request.node.nodeid.endswith("@studies"), (
        f"{request.node.nodeid}: xdist's loadgroup did not group it (pytest-xdist#1386): "
        "install the pytest pyproject.toml pins (make setup)")
