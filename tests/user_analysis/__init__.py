"""A user's analysis, written outside the headstats package: it registers itself from its own folder and runs
through :func:`headstats.testing.check_analysis` and a protocol (``tests/test_testing.py``)."""
