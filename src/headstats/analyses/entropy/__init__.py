"""Attention entropy per head (Clark et al. 2019, section 3.3): a running mean and spread.

The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import register_analysis
from headstats.analyses.entropy.tables import DECLARED

register_analysis(
    "entropy", "headstats.analyses.entropy.collect:AttentionEntropy",
    section="headstats.analyses.entropy.section:entropy_section",
    tables=DECLARED,
    description="mean attention entropy per head, with the uniform reference (Clark et al. 2019)",
)
