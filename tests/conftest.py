"""Settings for every test: Hypothesis's timing checks are off.

The suite runs on a shared 2-core machine next to simulators and synthesis; a draw or an
example that takes longer there says nothing about the code under test, so the
``too_slow`` health check and the per-example deadline would only make CI flaky. Every
property still runs its full number of examples, and a failure prints its reproduction blob.
"""

from hypothesis import HealthCheck, settings

settings.register_profile("ga2", deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ga2")
