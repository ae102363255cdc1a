"""The ``headstats`` command line (:mod:`headstats.cli.main`)."""

from headstats.cli.main import app

__all__ = ["app"]
