"""docs/change-the-machine.md: its generated blocks (listings at T = 4 and 8, the T = 8 cosim
verdict, the sweep's tables) are what examples/change_the_machine.py computes now."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))

import change_the_machine as guide  # noqa: E402  (examples/ is not a package)


def test_the_guide_is_up_to_date():
    text = guide.GUIDE.read_text()
    _, stale = guide.refreshed(text)
    assert not stale, f"stale {stale} in {guide.GUIDE}: run python examples/change_the_machine.py --write"


def test_the_listings_tile_for_the_machine():
    """At T = 4 every MM of example B is N = 4 wide, at T = 8 N = 8, with half as many; the
    requantizer pairs are the same (they come from the scales, not the machine)."""
    t4, t8 = guide.listing("t4"), guide.listing("t8")
    mm4 = [line for line in t4.splitlines() if " MM " in line]
    mm8 = [line for line in t8.splitlines() if " MM " in line]
    assert mm4 and all("N=4 " in line for line in mm4) and all("N=8 " in line for line in mm8)
    assert len(mm4) == 2 * len(mm8)
    rq = [[line.split("RQ")[1] for line in text.splitlines() if " RQ " in line] for text in (t4, t8)]
    assert rq[0] == rq[1] and rq[0]


def test_the_sweep_record_has_the_compilers_cycles():
    """docs/sweep.json (which the guide quotes) against the compiler of today: the seeds' cycles
    at T = 4 and T = 8 (a change of the compiler or the latencies makes it stale)."""
    record = json.loads(guide.sweep.RECORD.read_text())
    cycles = {f["machine"]: f["seeds_cycles"] for f in record["figures"]}
    assert cycles["t4"] == guide.seed_cycles("t4") and cycles["t8"] == guide.seed_cycles("t8"), \
        "docs/sweep.json is stale: python examples/sweep.py --synth-reports --write"


def test_unknown_or_missing_blocks_are_named():
    with pytest.raises(ValueError, match=r"unknown \['nope'\], missing \['cosim-t8', 'listing-t4', "):
        guide.refreshed("<!-- generated: nope -->\nx\n<!-- end: nope -->\n")
