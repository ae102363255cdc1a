"""Dependency heads (Clark et al. 2019, section 4.2, Table 1): the accuracy of every head at finding each
word's dependency head, against fixed offsets.

The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import register_analysis
from headstats.analyses.dependency.options import DependencyOptions
from headstats.analyses.dependency.tables import DECLARED

register_analysis(
    "dependency", "headstats.analyses.dependency.collect:DependencyAccuracy",
    options=DependencyOptions,
    finish="headstats.analyses.dependency.finish:finish_dependency",
    claims="headstats.analyses.dependency.claims",
    section="headstats.analyses.dependency.section:dependency_section",
    tables=DECLARED,
    description="accuracy of every head at finding each word's dependency head, against fixed offsets (Clark et al. "
                "2019, Table 1)",
)
