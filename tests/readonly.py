"""A folder the command under test cannot write, for the tests of read-only outputs.

Root writes anywhere whatever the mode bits say, so as root the command runs under ``setpriv``
without the capabilities that override file permissions (CAP_DAC_OVERRIDE,
CAP_DAC_READ_SEARCH); as another user the mode bits are enough. The test is skipped when
neither works (root without ``setpriv``).
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest


def unprivileged(command: Sequence[str]) -> list[str]:
    """``command``, run so that file mode bits bind it (see the module docstring)."""
    if os.geteuid() != 0:
        return list(command)
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: a read-only folder cannot be made")
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search", *command]


@contextmanager
def read_only(folder: Path) -> Iterator[Path]:
    """``folder`` and everything in it without write permission, restored afterwards."""
    paths = [folder, *folder.rglob("*")]
    modes = {p: p.stat().st_mode for p in paths if not p.is_symlink()}
    for p, mode in modes.items():
        p.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        yield folder
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


def run_unprivileged(command: Sequence[str], **options) -> subprocess.CompletedProcess:
    """subprocess.run of ``command`` as :func:`unprivileged` makes it, text output captured."""
    return subprocess.run(unprivileged(command), capture_output=True, text=True, **options)
