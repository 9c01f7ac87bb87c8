"""Golden text: what scale planning, placement and emission decide for small graphs, refusals
included, pinned word for word in tests/compiler/golden/ (compiler/testing/golden.py).

A difference fails with the diff. After a deliberate change, regenerate the files with
``python -m compiler.testing.golden --update`` and read the diff before committing it.
"""

import pytest

from compiler import Graph
from compiler.testing import golden

CASES = {case.name: case for case in golden.CASES}


@pytest.mark.parametrize("name", CASES)
def test_the_compiler_still_gives_the_golden_text(name):
    diff = golden.difference(CASES[name])
    assert not diff, (f"the compiler's decisions for '{name}' changed; if that is intended, run "
                      f"python -m compiler.testing.golden --update\n{diff}")


@pytest.mark.parametrize("name", CASES)
def test_the_golden_graph_reads_back_as_the_case_graph(name):
    graph, _ = CASES[name].build()
    text = (golden.GOLDEN_DIR / f"{name}.txt").read_text()
    weights = {n.name: n.array for n in graph.nodes if n.op == "weight"}
    assert Graph.parse(golden.graph_section(text), weights) == graph


def test_every_golden_file_has_a_case():
    assert {path.stem for path in golden.GOLDEN_DIR.glob("*.txt")} == set(CASES)


def test_refusals_name_the_pass_and_the_rest_compile():
    refused = {name for name in CASES if "## refusal" in (golden.GOLDEN_DIR / f"{name}.txt").read_text()}
    assert refused == {name for name in CASES if name.startswith("refused_")}
    passes = {line.split()[3] for name in refused
              for line in (golden.GOLDEN_DIR / f"{name}.txt").read_text().splitlines()
              if line.startswith("refused by pass")}
    assert passes == {"limits", "fusion", "placement", "scales", "emission"}


def test_a_changed_decision_shows_as_a_diff(tmp_path):
    case = CASES["attention_step"]
    changed = golden.render(case).replace("m=13272975 s=32", "m=13272976 s=32")
    (tmp_path / "attention_step.txt").write_text(changed)
    diff = golden.difference(case, tmp_path)
    assert "-4: m=13272976 s=32" in diff and "+4: m=13272975 s=32" in diff


def test_the_script_checks_and_updates(tmp_path, capsys):
    assert golden.main(["--dir", str(tmp_path)]) == 1
    assert "differ; rerun with --update" in capsys.readouterr().out
    assert golden.main(["--dir", str(tmp_path), "--update"]) == 0
    assert golden.main(["--dir", str(tmp_path)]) == 0
    assert (tmp_path / "int4.txt").read_text() == (golden.GOLDEN_DIR / "int4.txt").read_text()
