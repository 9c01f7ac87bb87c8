"""sim/machines.py: the one parser of PARAMS / --param, the presets, the build folders."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from sim import machines
from sim.machines import MachineError, describe, machine_dir, machine_tag, parse
from sim.spec import DEFAULT, Params


def test_items_split_on_spaces_and_commas():
    assert machines.items("t8 SPAD_WORDS=16384") == ["t8", "SPAD_WORDS=16384"]
    assert machines.items(["T=8,LANES=8", " ", "K_MAX=32"]) == ["T=8", "LANES=8", "K_MAX=32"]
    assert machines.items("") == []


def test_parse_applies_items_left_to_right():
    assert parse("") == DEFAULT
    assert parse("t8") == Params(T=8, LANES=8)
    assert parse("T=8 LANES=8") == parse("t8") == parse(["T=8", "LANES=8"])
    assert parse("t8 SPAD_WORDS=16384") == Params(T=8, LANES=8, SPAD_WORDS=16384)
    assert parse("SPAD_WORDS=16384 t8") == Params(T=8, LANES=8)      # a preset sets the whole machine
    assert parse("t16 T=12") == Params(T=12, LANES=16)
    assert parse("t4") == parse("default") == DEFAULT


@pytest.mark.parametrize(("text", "message"), [
    ("T=0", "Params.T = 0: must be a positive int (machine: T=0)"),
    ("T=8", "Params.LANES = 4: must be at least T = 8"),
    ("t8 LANES=4", "Params.LANES = 4: must be at least T = 8"),
    ("LANES=5", "Params.LANES = 5: must be one of 4, 8, 16"),
    ("SPAD_WORDS=3000", "Params.SPAD_WORDS = 3000: must be a power of two from LANES = 4 to 65536"),
    ("EXT_WORDS=131072", "Params.EXT_WORDS = 131072: must be a power of two from LANES = 4 to 65536"),
    ("K_MAX=300", "Params.K_MAX = 300: must be 1..255"),
    ("t9", "machine item 't9' is neither NAME=VALUE with NAME one of T, K_MAX"),
    ("TEE=4", "machine item 'TEE=4' is neither"),
    ("T=four", "machine item 'T=four' is neither"),
])
def test_bad_machines_are_refused_naming_the_parameter(text, message):
    with pytest.raises(MachineError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse(text)


def test_every_preset_is_a_machine_the_generator_builds():
    for name, params in machines.PRESETS.items():
        assert params.T <= params.LANES, name
    assert [p.T for p in (machines.PRESETS[n] for n in ("t2", "t4", "t8", "t16"))] == [2, 4, 8, 16]


def test_tags_and_folders_keep_machines_apart():
    assert machine_tag(DEFAULT) == "default" and describe(DEFAULT) == "default"
    t8 = Params(T=8, LANES=8)
    assert machine_tag(t8) == "T8-LANES8" and describe(t8) == "T=8 LANES=8"
    assert machine_dir("build", DEFAULT) == Path("build")
    assert machine_dir("build", t8) == Path("build/machines/T8-LANES8")
    others = [Params(T=8, LANES=16), Params(T=8, LANES=8, SPAD_WORDS=16384), Params(SPAD_WORDS=2048)]
    tags = {machine_tag(p) for p in [DEFAULT, t8, *others]}
    assert len(tags) == 5


def test_command_line_argument():
    parser = argparse.ArgumentParser()
    machines.add_argument(parser)
    assert machines.from_args(parser.parse_args([])) == DEFAULT
    args = parser.parse_args(["--param", "t8", "--param", "SPAD_WORDS=2048 K_MAX=32"])
    assert machines.from_args(args) == Params(T=8, LANES=8, SPAD_WORDS=2048, K_MAX=32)
    with pytest.raises(SystemExit):
        parser.parse_args(["--param", "nope"])


def test_main_shows_the_machine_or_why_not(capsys):
    assert machines.main(["t8"]) == 0
    out = capsys.readouterr().out
    assert "machine: T=8 LANES=8 (preset t8)" in out and "build folder: build/machines/T8-LANES8" in out
    assert machines.main(["--dir", "t2"]) == 0
    assert capsys.readouterr().out.strip() == "build/machines/T2"
    assert machines.main(["T=3", "LANES=2"]) == 1
    assert "Params.LANES = 2: must be one of 4, 8, 16" in capsys.readouterr().err
