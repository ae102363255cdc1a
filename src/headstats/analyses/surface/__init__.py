"""Surface patterns of attention (Clark et al. 2019, section 3): attention to the previous, same and next
token, [CLS], [SEP], punctuation and entropy per head and input, with one-sided tests of declared hypotheses.

The package's files: see :mod:`headstats.analyses`."""

from __future__ import annotations

from headstats.analyses import register_analysis
from headstats.analyses.surface.options import SurfaceOptions
from headstats.analyses.surface.tables import DECLARED

register_analysis(
    "surface", "headstats.analyses.surface.collect:SurfacePatterns",
    options=SurfaceOptions,
    claims="headstats.analyses.surface.claims",
    section="headstats.analyses.surface.section:surface_section",
    requires=("entropy",),
    tables=DECLARED,
    description="attention to previous/same/next token, [CLS], [SEP], punctuation, and entropy per head, per input, "
                "with one-sided tests of declared hypotheses (Clark et al. 2019)",
)
