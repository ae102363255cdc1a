"""Coreference (Clark et al. 2019, section 4.3): antecedent selection accuracy of every head against the
nearest-mention and same-head-word baselines.

The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import register_analysis
from headstats.analyses.coreference.tables import DECLARED

register_analysis(
    "coreference", "headstats.analyses.coreference.collect:AntecedentSelection",
    finish="headstats.analyses.coreference.finish:finish_coreference",
    claims="headstats.analyses.coreference.claims",
    section="headstats.analyses.coreference.section:coreference_section",
    tables=DECLARED,
    description="antecedent selection accuracy of every head against nearest-mention and same-head-word baselines "
                "(Clark et al. 2019)",
)
