"""The report pages in a real browser: headless Chromium loads the page of seed 100, of running
example A and of the digits MLP; the DOM it builds holds every section, its console stays
silent, and a screenshot is not blank.

Chromium is Debian's ``chromium`` package, which ``make test`` installs (apt-get) where it is
missing. Without it these tests fail with a message saying so, unless GA2_SKIP_BROWSER=1.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from report import SECTION_IDS, write_report
from report.sources import example_a_subject, seed_subject

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--enable-logging=stderr",
    "--v=0",
]
CONSOLE = re.compile(r":CONSOLE[:(]\d*\)?\]? ?(.*)")
"""A line Chromium logs for each console message (an error, a warning, a failed load)."""


@pytest.fixture(scope="module")
def chromium():
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("GA2_SKIP_BROWSER") == "1":
            pytest.skip("GA2_SKIP_BROWSER=1: the browser tests are skipped")
        pytest.fail(
            "chromium is not installed: `make test` installs it (apt-get install chromium); set "
            "GA2_SKIP_BROWSER=1 to skip the browser tests"
        )
    return found


def browse(chromium: str, page: Path, *mode: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [chromium, *FLAGS, f"--user-data-dir={profile}", *mode, page.resolve().as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
        )


def check_page(chromium: str, page: Path, expected: tuple[str, ...]) -> None:
    dom = browse(chromium, page, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    ids = re.findall(r'<section id="([a-z-]+)"', dom.stdout)
    assert set(expected) <= set(ids), f"missing sections: {set(expected) - set(ids)}"
    assert dom.stdout.count("<svg") >= 6
    shot = page.with_suffix(".png")
    done = browse(chromium, page, f"--screenshot={shot}", "--window-size=1280,2000", "--hide-scrollbars")
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    console = [m.group(1) for m in map(CONSOLE.search, (dom.stderr + done.stderr).splitlines()) if m]
    assert console == [], console
    pixels = imread(shot)[..., :3].reshape(-1, 3)
    colours, counts = np.unique(np.round(pixels * 255).astype(np.uint8), axis=0, return_counts=True)
    assert len(colours) > 200, f"only {len(colours)} colours: a blank page?"
    commonest = counts.max() / len(pixels)
    assert commonest < 0.9, f"{100 * commonest:.0f}% of the screenshot is one colour"


def test_seed_100(chromium, tmp_path):
    page = write_report(tmp_path / "seed-100.html", seed_subject(100))
    check_page(chromium, page, (*SECTION_IDS, "checks"))


@pytest.mark.slow
def test_running_example_a(chromium, tmp_path):
    page = write_report(tmp_path / "example-a.html", example_a_subject())
    check_page(chromium, page, (*SECTION_IDS, "checks"))


@pytest.mark.torch
@pytest.mark.slow
def test_digits_mlp(chromium, tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    page = tmp_path / "digits.html"
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "digits.py"), "--quick", "--epochs", "2", "--report", str(page)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    check_page(chromium, page, (*SECTION_IDS, "checks"))


def test_a_console_error_is_caught(chromium, tmp_path):
    """The console check sees what a broken page logs (here: a script error and a missing file)."""
    page = tmp_path / "broken.html"
    page.write_text('<html><body><img src="missing.png"><script>undefinedFunction();</script></body></html>')
    done = browse(chromium, page, "--dump-dom")
    console = [m.group(1) for m in map(CONSOLE.search, done.stderr.splitlines()) if m]
    assert any("undefinedFunction" in line for line in console), done.stderr[-2000:]
