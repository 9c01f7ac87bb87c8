"""cosim/campaign.py: a stress campaign's folder, its records, and what --resume accepts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cosim import campaign
from cosim.batch import Failure
from cosim.campaign import Campaign
from cosim.errors import CosimError
from cosim.pool import ChunkResult
from cosim.verilog import ROOT

WHAT = {"seed": 1, "n": 300, "sim": "icarus", "verilog": "v", "verilog_sha256": "a", "generator_sha256": "b",
        "options": []}


def test_records_round_trip_and_a_new_campaign_starts_empty(tmp_path):
    result = ChunkResult("icarus", 2, 200, count=100, failed=1, cycles=5, waited=6, seconds=1.5,
                         sim_seconds=1.0, rtl_cycles=[1, 2], info={"programs": 100, "coverage": None},
                         failures=[Failure(250, "seed 251", ["ext: x"])])
    with Campaign(tmp_path / "c", WHAT, resume=False) as camp:
        camp.record(result)
        assert camp.done() == [result]
    with Campaign(tmp_path / "c", WHAT, resume=True) as camp:
        assert camp.done() == [result]
    with Campaign(tmp_path / "c", WHAT, resume=False) as camp:
        assert camp.done() == []
    assert json.loads((tmp_path / "c" / "campaign.json").read_text()) == WHAT


def test_resume_refuses_another_campaign_naming_what_differs(tmp_path):
    missing = r"--resume: no campaign to resume in .* \(run without --resume to start it\)"
    with pytest.raises(CosimError, match=missing):
        Campaign(tmp_path / "c", WHAT, resume=True).__enter__()
    with Campaign(tmp_path / "c", WHAT, resume=False):
        pass
    other = {**WHAT, "n": 400, "verilog_sha256": "c"}
    with pytest.raises(CosimError, match=r"was made differently \(n 300 then, 400 now; verilog_sha256 'a' "
                                         r"then, 'c' now\); run without --resume to start it afresh"):
        Campaign(tmp_path / "c", other, resume=True).__enter__()


def test_one_run_per_folder(tmp_path):
    with Campaign(tmp_path / "c", WHAT, resume=False), \
            pytest.raises(CosimError, match="is in use by another run"):
        Campaign(tmp_path / "c", WHAT, resume=True).__enter__()


def test_the_default_folder_names_the_run():
    assert campaign.default_folder(1, 10000, "verilator") == campaign.STRESS_ROOT / "seed1-n10000-verilator"
    assert campaign.default_folder(5, 6, "icarus", "rq-round").name == "seed5-n6-icarus-rq-round"
    assert campaign.default_folder(1, 9, "icarus", None, campaign.VERILOG).name == "seed1-n9-icarus"
    one, two = (campaign.default_folder(1, 9, "icarus", None, Path(f"/m/{k}/ga2_simtop.v")) for k in (1, 2))
    assert one.name.startswith("seed1-n9-icarus-") and one != two
    t8 = campaign.BUILD / "machines" / "T8-LANES8" / "ga2_simtop.v"       # make stress PARAMS=t8
    folder = campaign.default_folder(1, 9, "icarus", None, t8)
    assert folder == t8.resolve().parent / "stress" / "seed1-n9-icarus"


@pytest.mark.rtl
def test_a_resumed_campaign_runs_only_what_is_missing(icarus, tmp_path):
    command = [sys.executable, "-m", "cosim", "stress", "--n", "12", "--seed", "3", "--sim", icarus,
               "--campaign", str(tmp_path / "c")]
    first = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert first.returncode == 0, first.stdout + first.stderr
    record = tmp_path / "c" / "chunks" / f"{icarus}-000000.json"
    stamp = record.stat().st_mtime_ns
    again = subprocess.run([*command, "--resume"], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert again.returncode == 0, again.stdout + again.stderr
    assert record.stat().st_mtime_ns == stamp                  # not run again
    assert again.stdout.splitlines()[:10] == first.stdout.splitlines()[:10]   # verdict and coverage
