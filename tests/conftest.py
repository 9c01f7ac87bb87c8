"""Settings for every test: Hypothesis's timing checks are off.

The suite runs on a shared 2-core machine next to simulators and synthesis; a draw or an
example that takes longer there says nothing about the code under test, so the
``too_slow`` health check and the per-example deadline would only make CI flaky. Every
property still runs its full number of examples, and a failure prints its reproduction blob.
"""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ga2", deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ga2")


SUITE_COUNTS = pytest.StashKey[dict[str, int]]()
"""The whole suite's test count, ``{"fast": what make test runs, "slow": the rest}``, kept by
:func:`pytest_collection_modifyitems` when this session collected the whole suite (read by
tests/docs/test_quoted_figures.py, which otherwise collects the suite again in a subprocess)."""


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Count the collected tests before ``-m`` or ``-k`` deselects any (this hook runs first), if
    the session was asked for the whole of tests/ with nothing ignored."""
    tests = Path(__file__).resolve().parent
    asked = {Path(config.rootpath, arg.split("::")[0]).resolve() for arg in config.args}
    if asked == {tests} and not (config.getoption("ignore") or config.getoption("ignore_glob")):
        slow = sum(1 for item in items if item.get_closest_marker("slow"))
        config.stash[SUITE_COUNTS] = {"fast": len(items) - slow, "slow": slow}
