"""compiler/testing/cnnbench.py on a machine where a model does not fit: ``make bench
PARAMS="OVERLAP=2"`` (or 1) reaches its fourth part, whose models need launches (the serial
machine's only); each model's row says why it was not compiled, and the bench ends normally."""

import pytest

from compiler.testing import cnnbench


@pytest.mark.torch
def test_models_that_need_launches_are_refused_by_name_at_overlap(capsys):
    pytest.importorskip("torch")
    assert cnnbench.main(["--param", "OVERLAP=2"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:]]
    assert [row[:2] for row in rows] == [["resnet8", "4"], ["ds_cnn", "4"]]
    for row in rows:
        line = " ".join(row)
        assert "not compiled for this machine" in line and "more than the 4096" in line, line
        assert line.endswith("(launches run on the serial machine only, not at OVERLAP = 2)"), line
