"""Attention probes (Clark et al. 2019, section 5): attention-only and attention-and-words dependency
probes over all heads, against the right-branching and distance-plus-words baselines.

The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import register_analysis
from headstats.analyses.probing.options import ProbingOptions
from headstats.analyses.probing.tables import DECLARED

register_analysis(
    "probing", "headstats.analyses.probing.collect:ProbeFeatures",
    options=ProbingOptions,
    finish=("headstats.analyses.probing.collect:train_probes", "headstats.analyses.probing.finish:finish_probes"),
    claims="headstats.analyses.probing.claims",
    section="headstats.analyses.probing.section:probing_section",
    tables=DECLARED,
    description="attention-only and attention-and-words dependency probes over all heads, against right-branching and "
                "distance-plus-words baselines (Clark et al. 2019, section 5)",
)
