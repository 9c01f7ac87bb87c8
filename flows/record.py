"""Records of measured figures that the documentation quotes (docs/soc.json): a JSON object of
sections, each written by the command that measures it, dated and with the tool versions;
tests/docs/test_quoted_figures.py compares the pages with them."""

from __future__ import annotations

import datetime
import json
from pathlib import Path


def update(path: Path, section: str, figures: dict, command: str, versions: dict[str, str]) -> dict:
    """Write ``figures`` as ``section`` of the record at ``path`` (made if missing), with today's
    date, the command that measured them and the versions; the other sections stay as they were.
    Returns the section written.

    Raises:
        OSError: the record cannot be read or written.
        ValueError: the file is not a JSON object (json.JSONDecodeError is one).
    """
    record = json.loads(path.read_text()) if path.exists() else {}
    if not isinstance(record, dict):
        raise ValueError(f"{path}: a record is a JSON object of sections, not {type(record).__name__}")
    entry = {"date": datetime.date.today().isoformat(), "command": command, **figures, "versions": versions}
    record[section] = entry
    path.write_text(json.dumps(record, indent=2) + "\n")
    return entry
